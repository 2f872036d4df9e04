"""The cases behind a judge's figures: its false-pass / false-fail curve (each rate counted by hand here),
its bottom decile, its worst misses at the pass threshold (none without one), and a case as listed."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from calibrate.analysis.judge_cases import bottom_decile, case_row, curve, floats, worst_misses
from calibrate.analysis.metric_comparisons import judge_comparisons
from calibrate.analysis.rules import Rule
from calibrate.campaign import campaign_from_frames

IDS = [f"c{i}" for i in range(10)]
HUMAN = np.array([0, 0, 0, 1, 0, 1, 0, 1, 1, 1])
SCORES = np.array([0.1, 0.2, 0.3, 0.35, 0.6, 0.4, 0.8, 0.7, 0.9, 0.95])


def compared(rule: Rule, scores=SCORES, raters: dict | None = None, judge: str = "j"):
    rows = [(c, "h", "human", int(h)) for c, h in zip(IDS, HUMAN)]
    rows += [(c, judge, "judge", float(s)) for c, s in zip(IDS, scores)]
    frame = pd.DataFrame(rows, columns=["case_id", "rater", "rater_kind", "value"]).assign(metric="m")
    config = {"name": "t", "metrics": {"m": {"scale": "binary"}}, "raters": raters or {}}
    (c,) = judge_comparisons(campaign_from_frames(config, frame), "m", None, rule).comparisons
    return c


FIXED = Rule("fixed", threshold=0.5)


def test_floats_are_json_ready():
    assert floats(np.array([0.5, np.nan])) == [0.5, None] and floats(np.array([1.0])) == [1.0]


def test_the_curve_has_each_rate_at_each_score_as_counted_by_hand():
    points = curve(compared(FIXED), 0.95)
    assert [p["threshold"] for p in points] == sorted(SCORES.tolist())
    fails, passes = (HUMAN == 0).sum(), (HUMAN == 1).sum()
    for p in points:
        judged_pass = SCORES >= p["threshold"] - 1e-12
        n_fp, n_ff = int((judged_pass & (HUMAN == 0)).sum()), int((~judged_pass & (HUMAN == 1)).sum())
        assert (p["n_false_pass"], p["n_false_fail"]) == (n_fp, n_ff)
        assert p["false_pass_rate"] == pytest.approx(n_fp / fails) and p["false_fail_rate"] == pytest.approx(
            n_ff / passes
        )
        low, high = p["false_pass_rate_ci"]
        assert 0 <= low <= p["false_pass_rate"] <= high <= 1


def test_the_bottom_decile_is_the_lowest_tenth():
    decile = bottom_decile(compared(FIXED), 0.95, n_listed=5)
    assert decile["n"] == 1 and decile["score_at_most"] == pytest.approx(0.1) and decile["mean_human_value"] == 0.0
    assert decile["human_pass_rate"]["estimate"] == 0.0 and decile["cases"] == [
        {"case_id": "c0", "score": 0.1, "human": 0.0}
    ]


def test_the_bottom_decile_of_a_lower_is_better_judge_is_its_highest_scores():
    c = compared(FIXED, scores=1 - SCORES, raters={"j": {"higher_is_better": False}})
    decile = bottom_decile(c, 0.95, n_listed=0)
    assert "score_at_most" not in decile and decile["score_at_least"] == pytest.approx(0.9) and decile["cases"] == []


def test_the_worst_misses_at_the_threshold():
    misses = worst_misses(compared(FIXED), n_listed=10)
    assert misses["threshold"] == pytest.approx(0.6)  # the lowest score at or above 0.5
    assert (misses["n_false_pass"], misses["n_false_fail"]) == (2, 2)
    assert [r["case_id"] for r in misses["false_passes"]] == ["c6", "c4"]  # highest score first
    assert [r["case_id"] for r in misses["false_fails"]] == ["c3", "c5"]  # lowest score first
    assert len(worst_misses(compared(FIXED), n_listed=1)["false_passes"]) == 1


def test_no_threshold_no_misses_listed():
    c = compared(Rule("default", human_pass=1, binary=True), scores=SCORES * 10)  # 0-10 scores: no default
    misses = worst_misses(c, n_listed=10)
    assert misses["threshold"] is None and misses["false_passes"] == misses["false_fails"] == []
    assert misses["n_false_fail"] == int(HUMAN.sum())
    assert misses["reason"] == (f"no pass threshold ({c.rule.describe()}): no miss to list, since every case fails")


def test_a_case_row_is_in_the_judges_own_units():
    c = compared(FIXED, scores=1 - SCORES, raters={"j": {"higher_is_better": False}})
    i = int(np.flatnonzero(c.case_ids == "c9")[0])
    assert case_row(c, i) == {"case_id": "c9", "score": pytest.approx(0.05), "human": 1.0}
