"""Issue 26: a parameter named without a value reads well in both forms — the library's (``threshold``) and
the command line's (``--threshold``): no "give --threshold None", no "give one with threshold"."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from calibrate import load_campaign
from calibrate.base.errors import NO_VALUE, ParameterText
from calibrate.cli.console import command_line_text
from tests.conftest import run_cli, write_campaign

TOML = """
name = "o"
[metrics.relevance]
scale = "ordinal"
levels = [0, 1, 2, 3]
human_pass = 2
[judges.rel-gpt]
library = "deepeval"
metric = "answer_relevancy"
into = "relevance"
model = { provider = "openai", name = "gpt-4o-mini", base_url = "http://127.0.0.1:9" }
"""


@pytest.fixture
def no_threshold(tmp_path):
    """An ordinal metric that declares no rule, and a judge scoring from 0 to 1: the rule gives it no threshold."""
    rng = np.random.default_rng(0)
    ids = [f"c{i:02d}" for i in range(40)]
    rows = pd.DataFrame(
        {
            "case_id": ids * 2,
            "metric": "relevance",
            "rater": ["ann"] * 40 + ["rel-gpt"] * 40,
            "rater_kind": ["human"] * 40 + ["judge"] * 40,
            "value": np.r_[rng.integers(0, 4, 40), rng.random(40)],
        }
    )
    cases = [{"case_id": c, "input": f"question {c}?", "actual_output": f"answer {c}."} for c in ids]
    return write_campaign(tmp_path / "c", TOML, rows, cases)


def _both(exc: BaseException) -> tuple[str, str]:
    return str(exc), command_line_text(exc)


def test_a_fingerprint_without_a_threshold_asks_for_one_by_name(no_threshold):
    from calibrate.review.fingerprint import fingerprint_judge

    with pytest.raises(ValueError) as caught:
        fingerprint_judge(load_campaign(no_threshold), judge="rel-gpt", anchors=8)
    library, command_line = _both(caught.value)
    assert library.startswith("judge rel-gpt has no threshold under the metric's rule (no rule declared")
    assert library.endswith("give the one it runs at (threshold)") and "None" not in library
    assert command_line.endswith("give the one it runs at (--threshold)") and "None" not in command_line
    run = run_cli("fingerprint", no_threshold, "--judge", "rel-gpt")
    assert run.returncode == 2 and "give the one it runs at (--threshold)" in run.stderr
    assert "--threshold None" not in run.stderr and "Traceback" not in run.stderr


def test_a_fingerprint_with_a_threshold_that_is_no_number_says_so(no_threshold):
    from calibrate.review.fingerprint import fingerprint_judge

    with pytest.raises(ValueError) as caught:
        fingerprint_judge(load_campaign(no_threshold), judge="rel-gpt", anchors=8, threshold=float("nan"))
    assert _both(caught.value) == (
        "threshold=nan: expected a finite number",
        "--threshold nan: expected a finite number",
    )


def test_a_threshold_design_without_a_threshold_asks_for_one_by_name(no_threshold):
    from calibrate.sampling.designs import recommended_threshold

    with pytest.raises(ValueError) as caught:
        recommended_threshold(load_campaign(no_threshold), "relevance", "rel-gpt")
    library, command_line = _both(caught.value)
    assert library.endswith("; give the judge's pass threshold (threshold)") and "one with" not in library
    assert command_line.endswith("; give the judge's pass threshold (--threshold)")


def test_no_message_ends_on_a_bare_parameter_after_with_or_give():
    """Every ParameterText template in calibrate/: read in the library's form, a one-word parameter after "with"
    or "give" at the end of a clause ("give one with threshold", "give metrics") reads as a noun, the ambiguity
    the issue found (``pass_rate`` or ``out_dir`` read as names)."""
    import re
    from pathlib import Path

    import calibrate

    found = []
    for path in Path(calibrate.__file__).parent.rglob("*.py"):
        text = path.read_text()
        for template in re.findall(r'ParameterText\(\s*"((?:[^"\\]|\\.)*)"', text):
            if re.search(r"\b(?:with|give)\s+(?:one\s+with\s+)?\{[a-z][a-z]*\}(?:$|[;,.:])", template):
                found.append(f"{path.name}: {template}")
    assert found == [], found
    # the form both read well in: the parameter in parentheses
    text = ParameterText("give the one it runs at ({threshold})", threshold=NO_VALUE)
    assert (str(text), text.for_command_line()) == (
        "give the one it runs at (threshold)",
        "give the one it runs at (--threshold)",
    )
