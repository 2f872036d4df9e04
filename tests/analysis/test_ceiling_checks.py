"""A constraint rule's checks (calibrate/analysis/ceiling_checks.py): a bound under the ceiling lacks
nothing; too few human fails say how many more, at no false pass or at the rate seen; a stricter threshold
under the ceiling is the defensible one; a rate at the ceiling, or no threshold under it, is not defensible."""

from __future__ import annotations

from calibrate.analysis.ceiling_checks import ceiling_checks
from calibrate.analysis.verdict_reading import Shortfall, VerdictReading
from calibrate.analysis.verdict_statuses import NOT_DEFENSIBLE, STRICTER
from calibrate.stats.intervals import wilson_interval


def _reading(k_fp: int, n_fail: int, n_pass: int, *, threshold: float | None = 0.5, **extra) -> VerdictReading:
    low, high = wilson_interval(k_fp, n_fail)
    rec = {
        "judge": "j",
        "rule": {"kind": "constraint", "max_false_pass": 0.1},
        "threshold": threshold,
        "pass_rule": "score >= threshold",
        "n": n_fail + n_pass,
        "n_human_pass": n_pass,
        "n_human_fail": n_fail,
        "false_pass_rate_detail": {"estimate": k_fp / n_fail, "ci_low": float(low), "ci_high": float(high)},
        "false_fail_rate_detail": {"estimate": 0.1, "ci_low": 0.05, "ci_high": 0.2},
    }
    return VerdictReading.of(rec | extra, 0.95, 50)


def test_a_bound_under_the_ceiling_lacks_nothing():
    assert ceiling_checks(_reading(2, 100, 100)) == Shortfall()


def test_too_few_human_fails_say_how_many_more():
    # 16 human fails: even no false pass has a Wilson upper bound of 0.19; a 0.1 ceiling needs 35
    assert ceiling_checks(_reading(0, 16, 24, threshold=None)) == Shortfall(
        ("16 human fails: a 0.1 ceiling needs at least 35 even with no false pass",), 19
    )
    assert ceiling_checks(_reading(0, 16, 24)) == Shortfall(("16 human fails: a 0.1 ceiling needs at least 35",), 19)


def test_enough_fails_for_no_false_pass_but_a_rate_near_the_ceiling_counts_the_fails_at_that_rate():
    found = ceiling_checks(_reading(9, 100, 100))
    assert found == Shortfall(("100 human fails: a 0.1 ceiling needs at least 35 (3458 at this rate of 0.09)",), 3358)


def test_a_stricter_threshold_under_the_ceiling_is_the_defensible_one():
    alternative = {
        "threshold": 0.7,
        "false_pass_rate": {"estimate": 0.01, "ci_low": 0.0, "ci_high": 0.05},
        "false_fail_rate": {"estimate": 0.2, "ci_low": 0.1, "ci_high": 0.3},
    }
    verdict = ceiling_checks(_reading(9, 100, 100, defensible_alternative=alternative))
    assert (verdict.status, verdict.threshold, verdict.rule_threshold) == (STRICTER, 0.7, 0.5)
    assert verdict.text.startswith("j: defensible at a stricter threshold: pass at score ≥ 0.7; false passes 0.01")


def test_a_rate_at_the_ceiling_or_no_threshold_under_it_is_not_defensible():
    at = ceiling_checks(_reading(10, 100, 100))
    assert at.status == NOT_DEFENSIBLE and "the rate sits at the 0.1 ceiling, so no number of labels" in at.text
    none = ceiling_checks(_reading(30, 100, 100, threshold=None, lowest_false_pass={"rate": 0.3, "threshold": 0.9}))
    assert none.status == NOT_DEFENSIBLE and none.text == (
        "j: not defensible: no threshold keeps false passes at or under 0.1 short of failing every case "
        "(lowest: 0.30 at score ≥ 0.9)"
    )
