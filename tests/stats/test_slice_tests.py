"""The statistics of a threshold per slice (calibrate/stats/slice_tests.py), against scipy and statsmodels;
the command that uses them is tested in tests/analysis/test_slice_thresholds.py."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from calibrate.stats.slice_tests import ceiling_excess_p, holm, loss_at


@settings(max_examples=20, deadline=None)
@given(st.lists(st.one_of(st.none(), st.floats(0, 1)), max_size=12))
def test_holm_is_statsmodels_holm(p_values):
    from statsmodels.stats.multitest import multipletests

    known = [p for p in p_values if p is not None]
    expected = iter(multipletests(known, method="holm")[1].tolist() if known else [])
    ours = holm(p_values)
    assert [q is None for q in ours] == [p is None for p in p_values]
    assert [q for q in ours if q is not None] == pytest.approx(list(expected))


@settings(max_examples=50, deadline=None)
@given(n_fail=st.integers(1, 200), data=st.data(), ceiling=st.floats(0.01, 0.99))
def test_ceiling_excess_p_is_the_exact_one_sided_binomial_test(n_fail, data, ceiling):
    false_passes = data.draw(st.integers(0, n_fail))
    expected = stats.binomtest(false_passes, n_fail, ceiling, alternative="greater").pvalue if false_passes else 1.0
    assert ceiling_excess_p(false_passes, n_fail, ceiling) == pytest.approx(expected, rel=1e-9, abs=1e-12)


@settings(max_examples=50, deadline=None)
@given(
    seed=st.integers(0, 2**31 - 1), n=st.integers(1, 50), cut=st.floats(0, 1), fp=st.floats(0, 10), ff=st.floats(0, 10)
)
def test_loss_at_charges_each_disagreement_its_cost(seed, n, cut, fp, ff):
    rng = np.random.default_rng(seed)
    score, passes = rng.random(n), rng.random(n) < 0.5
    expected = [fp if s >= cut and not p else ff if s < cut and p else 0.0 for s, p in zip(score, passes)]
    assert loss_at(score, passes, cut, (fp, ff)).tolist() == expected
