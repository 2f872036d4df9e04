"""Per-case verdicts under judge noise (calibrate.stats.repeat_verdicts): the Clopper-Pearson interval and the
verdict against scipy's exact binomial test, their symmetry and monotonicity, the one-repeat behaviour, and the
guarantee itself, computed exactly over the binomial distribution."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from scipy import stats

from calibrate.stats.intervals import clopper_pearson_interval
from calibrate.stats.repeat_verdicts import (
    VERDICTS,
    majority_share,
    min_repeats_to_decide,
    repeat_verdicts,
)

CONFIDENCES = (0.5, 0.8, 0.9, 0.95, 0.99)
counts = st.integers(1, 60).flatmap(lambda m: st.tuples(st.integers(0, m), st.just(m)))
levels = st.floats(0.05, 0.995)


def _all_counts(most: int) -> tuple[np.ndarray, np.ndarray]:
    pairs = [(k, m) for m in range(1, most + 1) for k in range(m + 1)]
    return np.array([k for k, _ in pairs]), np.array([m for _, m in pairs])


@pytest.mark.parametrize("confidence", CONFIDENCES)
def test_the_interval_is_scipys_exact_interval(confidence):
    k, m = _all_counts(25)
    low, high = clopper_pearson_interval(k, m, confidence=confidence)
    for i in range(k.size):
        ci = stats.binomtest(int(k[i]), int(m[i])).proportion_ci(confidence_level=confidence, method="exact")
        assert low[i] == pytest.approx(ci.low, abs=1e-9) and high[i] == pytest.approx(ci.high, abs=1e-9)


@settings(max_examples=300, deadline=None)
@given(counts, levels)
def test_the_verdict_is_the_exact_binomial_test_of_a_coin_flip(case, confidence):
    k, m = case
    tail = (1 - confidence) / 2
    greater = stats.binomtest(k, m, 0.5, alternative="greater").pvalue
    less = stats.binomtest(k, m, 0.5, alternative="less").pvalue
    assume(abs(greater - tail) > 1e-9 and abs(less - tail) > 1e-9)  # not on the edge, where rounding decides
    expected = "pass" if greater < tail else "fail" if less < tail else "undecided"
    got = repeat_verdicts([k], [m], confidence=confidence)
    assert got.verdict[0] == expected
    # the same as: the two-sided test of p = 1/2 rejects at 1 - confidence exactly when the case is decided
    assert (expected == "undecided") == (stats.binomtest(k, m, 0.5).pvalue >= 1 - confidence)
    # and as: the interval lies above (below) 1/2
    assert (got.low[0] > 0.5) == (expected == "pass") and (got.high[0] < 0.5) == (expected == "fail")


@settings(max_examples=200, deadline=None)
@given(counts, levels)
def test_verdicts_and_intervals_are_symmetric(case, confidence):
    k, m = case
    v = repeat_verdicts([k, m - k], [m, m], confidence=confidence)
    mirror = {"pass": "fail", "fail": "pass", "undecided": "undecided"}
    assert v.verdict[1] == mirror[v.verdict[0]]
    assert v.low[1] == pytest.approx(1 - v.high[0], abs=1e-9) and v.high[1] == pytest.approx(1 - v.low[0], abs=1e-9)
    assert majority_share([k], [m])[0] == majority_share([m - k], [m])[0]


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 80), levels)
def test_more_passes_never_give_a_worse_verdict_or_a_lower_interval(m, confidence):
    k = np.arange(m + 1)
    v = repeat_verdicts(k, np.full(m + 1, m), confidence=confidence)
    rank = np.array([VERDICTS.index(x) for x in v.verdict])
    assert (np.diff(rank) >= 0).all()
    assert (np.diff(v.low) >= 0).all() and (np.diff(v.high) >= 0).all()
    assert ((v.low <= v.pass_rate) & (v.pass_rate <= v.high)).all()  # the interval holds the rate


@settings(max_examples=100, deadline=None)
@given(st.floats(0.001, 0.999))
def test_one_repeat_never_decides_a_case(confidence):
    assert repeat_verdicts([0, 1], [1, 1], confidence=confidence).verdict.tolist() == ["undecided", "undecided"]
    assert min_repeats_to_decide(confidence=confidence) >= 2


@pytest.mark.parametrize("confidence", CONFIDENCES)
def test_a_case_is_decided_from_min_repeats_to_decide_on_and_never_before(confidence):
    fewest = min_repeats_to_decide(confidence=confidence)
    k, m = _all_counts(fewest - 1)
    assert set(repeat_verdicts(k, m, confidence=confidence).verdict) == {"undecided"}
    assert repeat_verdicts([0, fewest], [fewest, fewest], confidence=confidence).verdict.tolist() == ["fail", "pass"]


@pytest.mark.parametrize("m", [1, 3, 6, 10, 25])
@pytest.mark.parametrize("confidence", [0.8, 0.95])
def test_a_decided_verdict_is_wrong_with_probability_below_half_alpha(m, confidence):
    """The guarantee, exactly: for every pass rate at or below 1/2, the probability that the case is called
    pass (summed over the binomial distribution of its passes) is below (1 - confidence) / 2."""
    k = np.arange(m + 1)
    called_pass = repeat_verdicts(k, np.full(m + 1, m), confidence=confidence).verdict == "pass"
    for p in np.linspace(0, 0.5, 51):
        assert stats.binom.pmf(k, m, p)[called_pass].sum() < (1 - confidence) / 2
    # and it is not empty where it can decide: with many repeats, a judge passing 90% of the time is called pass
    if m >= min_repeats_to_decide(confidence=confidence) + 4:
        assert stats.binom.pmf(k, m, 0.9)[called_pass].sum() > 0.5


def test_the_worked_example_of_deepeval_3110():
    """0.62, 0.58 and 0.61 against 0.6: two passes of three, undecided at any usual confidence; the
    interval says how little three repeats tell."""
    v = repeat_verdicts([2], [3])
    assert v.verdict.tolist() == ["undecided"] and v.pass_rate[0] == pytest.approx(2 / 3)
    assert (round(float(v.low[0]), 4), round(float(v.high[0]), 4)) == (0.0943, 0.9916)


def test_majority_share_is_the_share_on_the_majority_side():
    share = majority_share([0, 1, 2, 3, 5, 0], [3, 3, 3, 3, 10, 0])
    assert share[:5].tolist() == [1.0, 2 / 3, 2 / 3, 1.0, 0.5] and np.isnan(share[5])


@settings(max_examples=100, deadline=None)
@given(counts)
def test_majority_share_is_between_one_half_and_one_and_one_only_when_every_repeat_agrees(case):
    k, m = case
    share = majority_share([k], [m])[0]
    assert 0.5 <= share <= 1 and (share == 1) == (k in (0, m))


@pytest.mark.parametrize(
    ("passes", "repeats", "message"),
    [
        ([4], [3], "passes: expected counts of passing repeats.*above repeats"),
        ([1.5], [3], "passes: expected whole counts"),
        ([0], [0], "repeats: expected at least 1 repeat"),
        ([1, 2], [3], "passes: expected .* one per element of repeats"),
        ([-1], [3], "negative"),
    ],
)
def test_bad_counts_are_refused_by_name(passes, repeats, message):
    with pytest.raises(ValueError, match=message):
        repeat_verdicts(passes, repeats)


def test_counts_are_in_the_order_of_the_verdicts():
    assert list(repeat_verdicts([0, 6, 6, 3], [6, 6, 6, 6]).counts().items()) == [
        ("fail", 1),
        ("undecided", 1),
        ("pass", 2),
    ]
