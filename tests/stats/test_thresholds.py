"""The threshold rules of calibrate/stats/thresholds.py against exhaustive search."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from calibrate.stats.thresholds import NO_THRESHOLD, constraint_rule, max_admissible_false_passes


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
