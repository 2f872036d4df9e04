"""calibrate.testing.assert_gate_passes: the gate as a pytest assertion that fails with its reasons."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from calibrate import load_campaign
from calibrate.testing import assert_gate_passes, gate_failure_text
from tests.testing.story import support_bot


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return support_bot(tmp_path_factory.mktemp("helper") / "campaign")


def test_a_passing_gate_returns_its_document(folder):
    doc = assert_gate_passes(folder, judge="faithfulness-gpt4o", min_kappa=0.5, n_boot=200)
    assert doc["passed"] and [c["judge"] for c in doc["checks"]] == ["faithfulness-gpt4o"]
    # a campaign already read, and a list of judges, are taken as well
    assert assert_gate_passes(load_campaign(folder), judge=["faithfulness-gpt4o"], n_boot=0)["passed"]


def test_a_failing_gate_raises_with_every_reason_a_line(folder):
    with pytest.raises(AssertionError) as failed:
        assert_gate_passes(folder, min_labels=200, n_boot=200)
    message = str(failed.value)
    lines = message.splitlines()
    assert lines[0] == "calibrate gate failed on campaign support-bot:"
    assert "  FAIL faithfulness / faithfulness-gpt4o" in lines and "  FAIL answer_relevancy / relevancy-llama" in lines
    reasons = [line for line in lines if line.startswith("    - ")]
    assert "    - 150 human-labelled cases, fewer than the minimum 200" in reasons
    assert any("not shown better than chance" in r for r in reasons)
    assert any(line.startswith("rules: at least 200 human labels") for line in lines)


def test_names_and_rules_that_are_not_a_verdict_are_errors(folder):
    with pytest.raises(TypeError, match="judge=5: expected a name"):
        assert_gate_passes(folder, judge=5)
    with pytest.raises(ValueError, match="max_false_pass=0"):
        assert_gate_passes(folder, max_false_pass=0)
    with pytest.raises(ValueError, match="no rater of the campaign has this name"):
        assert_gate_passes(folder, judge="nobody")


def test_no_check_is_no_pass():
    text = gate_failure_text({"campaign": "c", "passed": False, "rules": [], "defaults": [], "checks": []})
    assert "no check" in text and "fails closed" in text


def test_pytest_shows_the_reasons_at_the_test_line(folder, tmp_path):
    test_file = tmp_path / "test_gate_here.py"
    test_file.write_text(
        textwrap.dedent(f"""
        from calibrate.testing import assert_gate_passes

        def test_gate():
            assert_gate_passes({str(folder)!r}, judge="relevancy-llama", n_boot=100)
        """)
    )
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(test_file)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
        env={"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "PATH": "/usr/bin:/bin"},
    )
    assert result.returncode == 1, result.stdout
    assert "E       AssertionError: calibrate gate failed on campaign support-bot:" in result.stdout
    assert "E         FAIL answer_relevancy / relevancy-llama" in result.stdout
    assert "not shown better than chance" in result.stdout
    assert "__tracebackhide__" not in result.stdout and "raise AssertionError" not in result.stdout
