"""The threshold rules of calibrate/stats/thresholds.py against exhaustive search, and against their first,
full-array computation on the running counts of resampled tables."""

import tracemalloc
from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from calibrate.stats import thresholds
from calibrate.stats.bootstrap import case_counts
from calibrate.stats.paired import PairedScores
from calibrate.stats.thresholds import NO_THRESHOLD, constraint_rule, cost_rule, max_admissible_false_passes


def exhaustive(fails_at_score, ceiling, confidence):
    """Smallest t whose false-pass rate (or its exact upper bound) is at most the ceiling."""
    n_fail = sum(fails_at_score)
    if n_fail == 0:
        return NO_THRESHOLD
    for t in range(len(fails_at_score) + 1):
        fp = sum(fails_at_score[t:])
        if confidence is None:
            bound = fp / n_fail
        else:
            bound = stats.binomtest(fp, n_fail, alternative="less").proportion_ci(confidence, method="exact").high
        if bound <= ceiling + 1e-12:
            return t
    return NO_THRESHOLD


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(0, 30), min_size=1, max_size=25), st.floats(0, 0.5), st.sampled_from([None, 0.8, 0.95]))
def test_constraint_rule_is_the_exhaustive_search(fails_at_score, ceiling, confidence):
    cum_fails = np.cumsum(fails_at_score, dtype=float)[None, :]
    got = constraint_rule(cum_fails, cum_fails[:, -1], max_false_pass=ceiling, confidence=confidence)[0]
    assert got == exhaustive(fails_at_score, ceiling, confidence)


@pytest.mark.parametrize("confidence", [None, 0.5, 0.95])
def test_a_ceiling_below_one_never_admits_every_fail_passing(confidence):
    # hypothesis found it: a ceiling one unit in the last place below 1 admitted 80 false passes of 80
    # (a rate of 1), the rule picked that threshold and the gate then refused it
    ceiling = np.nextafter(1.0, 0.0)
    admitted = max_admissible_false_passes(np.array([80.0]), max_false_pass=ceiling, confidence=confidence)
    assert admitted.tolist() == [79.0]
    assert max_admissible_false_passes(np.array([80.0]), max_false_pass=1.0, confidence=confidence).tolist() == [80.0]
    assert max_admissible_false_passes(np.array([10.0]), max_false_pass=0.3).tolist() == [
        3.0
    ]  # 0.3 x 10 rounds below 3


# ------------------------------------------------- the rules against their full-array computation
def full_array_constraint(cum_fails, n_fail, *, max_false_pass, confidence=None, whole=True, scale=None):
    """The constraint rule as it was first written: every count compared, the first reaching found by argmax."""
    if scale is not None:
        cum_fails, n_fail = cum_fails * scale, n_fail * scale
    n = np.asarray(n_fail, dtype=float)
    allowed = max_admissible_false_passes(n, max_false_pass=max_false_pass, confidence=confidence, whole=whole)
    reached = cum_fails >= (n - allowed)[:, None] - (0 if whole else 1e-9 * n[:, None])
    first = np.where(n <= allowed, 0, np.argmax(reached, axis=1) + 1)
    return np.where((n > 0) & (allowed >= 0), first, NO_THRESHOLD)


def full_array_cost(cum_passes, cum_fails, *, cost_false_pass, cost_false_fail, prevalence=None):
    """The cost rule as it was first written: the cost at every threshold index at once, then argmin."""
    zero = np.zeros((cum_fails.shape[0], 1))
    n_pass, n_fail = cum_passes[:, -1].astype(float), cum_fails[:, -1].astype(float)
    false_pass = n_fail[:, None] - np.concatenate([zero, cum_fails], axis=1)
    false_fail = np.concatenate([zero, cum_passes], axis=1)
    if prevalence is None:
        cost = cost_false_pass * false_pass + cost_false_fail * false_fail
        defined = np.ones(cum_fails.shape[0], dtype=bool)
    else:
        with np.errstate(invalid="ignore", divide="ignore"):
            cost = (
                cost_false_pass * (1 - prevalence) * false_pass / n_fail[:, None]
                + cost_false_fail * prevalence * false_fail / n_pass[:, None]
            )
        defined = (n_fail > 0) & (n_pass > 0)
    best = np.argmin(np.where(np.isfinite(cost), cost, np.inf), axis=1)
    return np.where(defined, best, NO_THRESHOLD)


@st.composite
def resampled_tables(draw):
    """The running counts of one (human, judge) table on a batch of resamples, as the bootstrap reads them:
    scores with ties (few distinct values) or without, now and then a single distinct score or no human
    fail (or pass) at all, weighted or not."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    n = draw(st.integers(2, 80))
    kind = draw(st.sampled_from(["ties", "continuous", "one score", "no fail", "no pass"]))
    human = rng.integers(0, 4, n).astype(float)
    if kind == "no fail":
        human = np.maximum(human, 2.0)
    elif kind == "no pass":
        human = np.minimum(human, 1.0)
    judge = {"ties": rng.integers(0, 4, n).astype(float), "one score": np.full(n, 0.5)}.get(kind, rng.random(n))
    weights = rng.choice([0.3, 1.0, 2.5], n) if draw(st.booleans()) else None
    pairs = PairedScores(human, judge, human_pass=2, weights=weights)
    counts = case_counts(rng.integers(0, n, size=(draw(st.integers(1, 12)), n)), n)
    return pairs.summarize_counts(counts if weights is None else counts.astype(np.float64)), weights is None


@settings(max_examples=200, deadline=None)
@given(
    resampled_tables(),
    st.floats(0, 1),
    st.sampled_from([None, 0.8, 0.95]),
    st.sampled_from([None, 1.0, np.float64(0.37), 2.0 / 3.0]),
)
def test_the_bisected_constraint_rule_is_the_full_array_rule(table, ceiling, confidence, scale):
    summary, whole = table
    whole = whole and scale in (None, 1.0)  # counts on an effective-size scale are not whole
    n_fail = summary.cum_fails[:, -1]
    args = {"max_false_pass": ceiling, "confidence": confidence, "whole": whole, "scale": scale}
    got = constraint_rule(summary.cum_fails, n_fail, **args)
    assert np.array_equal(got, full_array_constraint(summary.cum_fails, n_fail, **args))


@settings(max_examples=200, deadline=None)
@given(
    resampled_tables(),
    st.sampled_from([1, 5, 0.3, 2.0 / 3.0]),
    st.sampled_from([1, 3, 0.1]),
    st.sampled_from([None, 0.05, 0.5, 0.9]),
    st.sampled_from([1, 2, 7, None]),
)
def test_the_chunked_cost_rule_is_the_full_array_rule(table, cfp, cff, prevalence, chunk):
    summary, _ = table
    args = {"cost_false_pass": cfp, "cost_false_fail": cff, "prevalence": prevalence}
    with mock.patch.object(thresholds, "COST_CHUNK", chunk or thresholds.COST_CHUNK):  # chunk edges, or one chunk
        got = cost_rule(summary.cum_passes, summary.cum_fails, **args)
    assert np.array_equal(got, full_array_cost(summary.cum_passes, summary.cum_fails, **args))


def test_the_rules_read_a_batch_without_a_copy_per_distinct_score():
    # 8 resamples x 200,000 distinct scores: the full-array cost rule held about 80 MB of temporaries
    rng = np.random.default_rng(0)
    cum_fails = np.cumsum(rng.integers(0, 2, (8, 200_000)), axis=1).astype(np.float32)
    cum_passes = np.cumsum(rng.integers(0, 2, (8, 200_000)), axis=1).astype(np.float32)
    tracemalloc.start()
    try:
        cost = cost_rule(cum_passes, cum_fails, cost_false_pass=5, cost_false_fail=1)
        constraint = constraint_rule(cum_fails, cum_fails[:, -1], max_false_pass=0.1, scale=np.float64(0.5))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 * thresholds.COST_CHUNK * 8  # a few chunks of float64, not (8, 200,001) of them
    assert np.array_equal(cost, full_array_cost(cum_passes, cum_fails, cost_false_pass=5, cost_false_fail=1))
    assert np.array_equal(
        constraint, full_array_constraint(cum_fails, cum_fails[:, -1], max_false_pass=0.1, scale=np.float64(0.5))
    )
