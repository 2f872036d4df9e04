"""The threshold rules of calibrate/stats/thresholds.py against exhaustive search."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from calibrate.stats.thresholds import NO_THRESHOLD, constraint_rule


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
