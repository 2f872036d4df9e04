"""`calibrate plan` says every choice it needs in one run (it said one a run: the metric, then the judge,
then the pass rate to assume)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from calibrate import load_campaign
from calibrate.sampling.planning import plan_labels
from tests.conftest import run_cli, write_campaign

TOML = """name = "plan"
[metrics.faithfulness]
scale = "binary"
[metrics.answer_relevancy]
scale = "binary"
"""


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """Two metrics, two judges on each, no human label yet."""
    rng = np.random.default_rng(0)
    ids = [f"c{i:03d}" for i in range(80)]
    frame = pd.concat(
        [
            pd.DataFrame(
                {
                    "case_id": ids,
                    "metric": metric,
                    "rater": judge,
                    "rater_kind": "judge",
                    "value": rng.random(len(ids)).round(3),
                }
            )
            for metric in ("faithfulness", "answer_relevancy")
            for judge in ("ja", "jb")
        ]
    )
    return write_campaign(
        tmp_path_factory.mktemp("plan") / "campaign", TOML, frame, [{"case_id": c, "input": "q"} for c in ids]
    )


def test_every_missing_choice_at_once(folder):
    c = load_campaign(folder)
    with pytest.raises(ValueError) as caught:
        plan_labels(c)
    assert str(caught.value) == (
        "the plan needs 3 choices: (1) a metric, with metric (answer_relevancy, faithfulness); (2) a judge, with "
        "judge (on answer_relevancy: ja, jb; on faithfulness: ja, jb); (3) the human pass rate to assume, with "
        "pass_rate: no human has labelled answer_relevancy, faithfulness yet"
    )
    with pytest.raises(ValueError, match=r"^the plan needs 2 choices: \(1\) a judge, with judge \(ja, jb\); \(2\) "):
        plan_labels(c, metric="faithfulness")
    with pytest.raises(ValueError, match=r"^the plan needs the human pass rate to assume, with pass_rate"):
        plan_labels(c, metric="faithfulness", judge="ja")
    doc = plan_labels(c, metric="faithfulness", judge="ja", pass_rate=0.6)  # all given: a plan
    assert doc["judge"] == "ja" and doc["statistics"][0]["source"] == "assumed"


def test_the_command_line_names_its_flags(folder):
    result = run_cli("plan", str(folder))
    assert result.returncode == 2
    message = " ".join(result.stderr.split())
    assert "(1) a metric, with --metric (answer_relevancy, faithfulness)" in message
    assert "(2) a judge, with --judge (on answer_relevancy: ja, jb; on faithfulness: ja, jb)" in message
    assert "(3) the human pass rate to assume, with --pass-rate" in message
    ok = run_cli("plan", str(folder), "--metric", "faithfulness", "--judge", "jb", "--pass-rate", "0.6")
    assert ok.returncode == 0 and "human pass rate" in ok.stdout
