"""thresholds when every human label is a pass: the verdict says no human fail was found and what to do.

The reproduction: 80 human labels, all passes, and the verdict read "a 0.2 ceiling needs at least 16
human fails ... closest: j, with about 0 more labelled cases" -- zero more cases, for a shortfall no
count of random labels is known to fill.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from calibrate.analysis.recommendations import thresholds
from calibrate.campaign import Campaign, campaign_from_frames


def campaign(n: int, seed: int, ceiling: float) -> Campaign:
    rng = np.random.default_rng(seed)
    rows = [
        {"case_id": f"c{i:03d}", "metric": "f", "rater": "ann", "rater_kind": "human", "value": 1} for i in range(n)
    ]
    rows += [
        {"case_id": f"c{i:03d}", "metric": "f", "rater": judge, "rater_kind": "judge", "value": float(rng.random())}
        for i in range(n)
        for judge in ("j", "k")
    ]
    return campaign_from_frames(
        {"name": "n", "metrics": {"f": {"scale": "binary", "max_false_pass": ceiling}}}, pd.DataFrame(rows)
    )


@settings(max_examples=30, deadline=None)
@given(n=st.integers(2, 120), seed=st.integers(0, 1000), ceiling=st.sampled_from([0.05, 0.1, 0.2, 0.3]))
def test_attack_no_human_fail_is_said_plainly_never_zero_more_cases(n, seed, ceiling):
    doc = thresholds(campaign(n, seed, ceiling), n_boot=0)
    [verdict] = doc["verdicts"]
    best = verdict["best"]["text"]
    assert "about 0 more" not in best
    assert best.startswith("no judge is defensible yet; closest: ")
    assert "human fails are labelled (none found yet" in best
    for judge in verdict["judges"]:
        assert "no human fail was found" in judge["text"] and "label cases the judge scores low" in judge["text"]


def test_the_reproduction_80_passes():
    doc = thresholds(campaign(80, 2, 0.2), n_boot=0)
    best = doc["verdicts"][0]["best"]["text"]
    assert best == (
        "no judge is defensible yet; closest: j, once at least 16 human fails are labelled (none found "
        "yet: label cases the judges score low)"
    )
