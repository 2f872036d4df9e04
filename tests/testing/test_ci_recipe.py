"""The CI recipe of the README runs as written: every `run:` step of docs/ci/judge-gate.yml, in a
checkout holding the campaign and docs/ci/test_judge_gate.py, passes on a judge that agrees with the
humans and fails, with the gate's reasons, on one that does not."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

from tests.testing.story import support_bot

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / "docs" / "ci" / "judge-gate.yml"
TEST_FILE = ROOT / "docs" / "ci" / "test_judge_gate.py"
BIN = Path(sys.executable).parent


def run_steps() -> list[str]:
    workflow = yaml.safe_load(WORKFLOW.read_text())
    steps = [step for job in workflow["jobs"].values() for step in job["steps"]]
    return [step["run"] for step in steps if "run" in step]


def checkout(tmp_path: Path, faithful_judge: str) -> Path:
    """The repository a workflow runs in: the campaign at eval/campaign and the test file in tests/."""
    repo = tmp_path / faithful_judge
    support_bot(repo / "eval" / "campaign", faithful_judge=faithful_judge)
    (repo / "tests").mkdir()
    shutil.copy(TEST_FILE, repo / "tests" / TEST_FILE.name)
    return repo


def run(command: str, repo: Path) -> subprocess.CompletedProcess:
    """A step as GitHub Actions runs it on ubuntu (``bash -e``), with this environment's calibrate and
    pytest first on the PATH, and no pytest plugin but pytest's own (a user's CI has none of DeepEval's)."""
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}", "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    return subprocess.run(["bash", "-e", "-c", command], cwd=repo, env=env, capture_output=True, text=True, timeout=600)


def test_the_workflow_installs_this_package():
    """The install step (not run here: this environment has the package) names the package pyproject
    declares, and pytest."""
    name = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["name"]
    installs = [step for step in run_steps() if step.startswith("pip install")]
    assert installs and installs[0].split()[2:] == [name, "pytest"]


def test_the_readme_shows_the_workflow_as_tested():
    readme = (ROOT / "docs" / "gate.md").read_text()
    assert WORKFLOW.read_text() in readme
    assert TEST_FILE.read_text().split('"""', 2)[2].strip() in readme


@pytest.mark.slow
def test_every_step_passes_on_a_trusted_judge(tmp_path):
    """The relevancy judge is a coin flip: the gate on the faithfulness judge passes all the same."""
    repo = checkout(tmp_path, "good")
    steps = [step for step in run_steps() if not step.startswith("pip install")]
    assert len(steps) == 2
    for step in steps:
        result = run(step, repo)
        assert result.returncode == 0, (step, result.stdout[-3000:], result.stderr[-3000:])
    gate = run(steps[0], repo)
    assert "pass faithfulness / faithfulness-gpt4o" in gate.stdout and "answer_relevancy /" not in gate.stdout
    assert (
        "default: only the metric(s) the judges named score: faithfulness; not checked: answer_relevancy" in gate.stdout
    )


@pytest.mark.slow
def test_every_step_fails_with_the_reasons_on_a_coin_flip_judge(tmp_path):
    repo = checkout(tmp_path, "coin")
    gate_step, test_step = [step for step in run_steps() if not step.startswith("pip install")]
    gate = run(gate_step, repo)
    assert gate.returncode == 1 and "FAIL faithfulness / faithfulness-gpt4o" in gate.stdout, gate.stdout
    reasons = [line.strip()[2:] for line in gate.stdout.splitlines() if line.strip().startswith("- ")]
    assert any("not shown better than chance" in r for r in reasons), reasons
    tested = run(test_step, repo)
    assert tested.returncode == 1, tested.stdout[-3000:]
    # the failing test says what the gate said, one reason a line, and not from inside calibrate
    assert "FAIL faithfulness / faithfulness-gpt4o" in tested.stdout
    for reason in reasons:
        assert re.search(re.escape(reason[:60]), tested.stdout), reason
    assert "calibrate/testing/gate.py" not in tested.stdout
