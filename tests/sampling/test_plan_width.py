"""calibrate plan at narrow widths: never a plan that is not enough.

The reproduction: ``plan --width 0.003`` (and 0.001, 1e-9) on a campaign of 80 labels planned 50 labels
for a random design, "saved -3,008,359" and "more needed 0" -- the Wilson search stopped at 200,000
trials and took "none found" for one trial. Now the count is exact up to a billion labels, and a width
needing more is refused, naming the labels it would take.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from calibrate.campaign import Campaign, campaign_from_frames
from calibrate.sampling.planning import MAX_PLANNED_LABELS, plan_labels, trials_for_rate
from calibrate.stats.intervals import wilson_interval


def width_at(rate: float, n: int, confidence: float = 0.95) -> float:
    low, high = wilson_interval(rate * n, n, confidence=confidence)
    return float(high) - float(low)


@pytest.fixture(scope="module")
def campaign() -> Campaign:
    """80 labelled cases (a third of them fails) and a judge whose scores follow them loosely."""
    rng = np.random.default_rng(2)
    passes = [int(i % 3 != 0) for i in range(80)]
    rows = [
        {"case_id": f"c{i:03d}", "metric": "f", "rater": "ann", "rater_kind": "human", "value": p}
        for i, p in enumerate(passes)
    ]
    rows += [
        {
            "case_id": f"c{i:03d}",
            "metric": "f",
            "rater": "j",
            "rater_kind": "judge",
            "value": float(np.clip(0.6 * p + rng.normal(0.2, 0.25), 0, 1)),
        }
        for i, p in enumerate(passes)
    ]
    return campaign_from_frames(
        {"name": "n", "metrics": {"f": {"scale": "binary", "max_false_pass": 0.2}}}, pd.DataFrame(rows)
    )


@settings(max_examples=200, deadline=None)
@given(rate=st.floats(0, 1), width=st.floats(1e-4, 0.99))
def test_attack_the_trials_for_a_rate_are_the_fewest_that_reach_the_width(rate, width):
    n = trials_for_rate(rate, width)
    assert width_at(rate, n) <= width
    assert n == 1 or width_at(rate, n - 1) > width


@settings(max_examples=60, deadline=None)
@given(width=st.one_of(st.floats(1e-300, 0.02), st.sampled_from([0.003, 0.002, 0.001, 1e-9, 5e-324])))
def test_attack_a_narrow_width_is_planned_in_full_or_refused_never_short(campaign, width):
    try:
        doc = plan_labels(campaign, judge="j", width=width)
    except ValueError as exc:
        assert "an interval that narrow needs" in str(exc) and "ask for a wider interval" in str(exc)
        assert f"{MAX_PLANNED_LABELS:,}" in str(exc)
        return
    rate = next(s for s in doc["statistics"] if s["statistic"] == "human pass rate")
    assert width_at(rate["value"], rate["labels"]["random"]) <= width  # the plan reaches the width
    for statistic in doc["statistics"]:
        labels = [v for v in statistic["labels"].values() if v is not None]
        assert all(50 <= v <= MAX_PLANNED_LABELS for v in labels)
        assert statistic["more_needed"] == min(labels) - 80 > 0  # 80 labels are far from enough
        if statistic["labels_saved"] is not None:  # what stratifying saves is a share of the random plan
            assert abs(statistic["labels_saved"]) < statistic["labels"]["random"]


def test_the_reproduction_on_the_command_line(tmp_path):
    from calibrate.cli import main
    from tests.conftest import write_campaign

    rows = ["case_id,metric,rater,rater_kind,value"]
    for i in range(80):
        rows += [f"c{i:03d},f,ann,human,{int(i % 3 != 0)}", f"c{i:03d},f,j,judge,{(i * 37 % 80) / 80}"]
    folder = write_campaign(
        tmp_path / "dc", 'name = "d"\n[metrics.f]\nscale = "binary"\nmax_false_pass = 0.2\n', "\n".join(rows) + "\n"
    )
    runner = CliRunner()
    done = runner.invoke(main, ["plan", str(folder), "--judge", "j", "--width", "0.001", "--json"])
    assert done.exit_code == 0, done.output
    import json

    rate = json.loads(done.output)["statistics"][0]
    assert rate["labels"]["random"] > 3_000_000 and rate["more_needed"] > 3_000_000
    refused = runner.invoke(main, ["plan", str(folder), "--judge", "j", "--width", "1e-9"])
    assert refused.exit_code != 0 and "--width 1e-09: an interval that narrow needs about" in refused.output
    assert "Traceback" not in refused.output
