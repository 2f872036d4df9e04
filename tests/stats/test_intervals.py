import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from calibrate.stats.bootstrap import bca_interval, percentile_interval, resample_indices
from calibrate.stats.intervals import bonett_wright_se, clopper_pearson_upper, fisher_z_interval, wilson_interval


@settings(max_examples=200, deadline=None)
@given(
    st.integers(1, 500).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))),
    st.sampled_from([0.8, 0.9, 0.95, 0.99]),
)
def test_wilson_matches_scipy(kn, confidence):
    k, n = kn
    expected = stats.binomtest(k, n).proportion_ci(confidence_level=confidence, method="wilson")
    low, high = wilson_interval(k, n, confidence=confidence)
    assert low == pytest.approx(expected.low, abs=1e-12)
    assert high == pytest.approx(expected.high, abs=1e-12)
    assert low <= k / n <= high


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 300).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))), st.sampled_from([0.9, 0.95]))
def test_clopper_pearson_upper_matches_scipy(kn, confidence):
    k, n = kn
    expected = stats.binomtest(k, n, alternative="less").proportion_ci(confidence_level=confidence, method="exact")
    assert clopper_pearson_upper(k, n, confidence=confidence) == pytest.approx(expected.high, abs=1e-10)


def test_wilson_vectorised_and_empty():
    low, high = wilson_interval(np.array([0, 5, 10]), np.array([10, 10, 10]))
    assert low[0] == 0 and high[2] == 1 and np.all(low <= high)
    low, high = wilson_interval(0, 0)
    assert np.isnan(low) and np.isnan(high)


def test_fisher_z_interval_contains_estimate_and_narrows_with_n():
    wide = fisher_z_interval(0.4, bonett_wright_se(0.4, 20))
    narrow = fisher_z_interval(0.4, bonett_wright_se(0.4, 200))
    assert wide[0] < narrow[0] < 0.4 < narrow[1] < wide[1]


def test_resamples_do_not_depend_on_batch_size():
    a = np.concatenate(list(resample_indices(50, 10, seed=3, batch_size=3)))
    b = np.concatenate(list(resample_indices(50, 10, seed=3, batch_size=10)))
    c = np.concatenate(list(resample_indices(50, 10, seed=4, batch_size=10)))
    assert (a == b).all() and not (a == c).all()


def test_bca_close_to_scipy_for_a_mean():
    rng = np.random.default_rng(1)
    x = rng.exponential(size=120)
    boot = np.array([x[idx].mean() for idx in np.concatenate(list(resample_indices(x.size, 4000, seed=1)))])
    jack = (x.sum() - x) / (x.size - 1)
    ours = bca_interval(x.mean(), boot, jack)
    ref = stats.bootstrap((x,), np.mean, n_resamples=4000, method="BCa", random_state=1).confidence_interval
    assert ours.low == pytest.approx(ref.low, abs=0.03) and ours.high == pytest.approx(ref.high, abs=0.03)


def test_bootstrap_drops_undefined_replicates_and_says_so():
    boot = np.r_[np.linspace(0, 1, 300), [np.nan] * 20]
    iv = percentile_interval(boot)
    assert iv.n_dropped == 20 and iv.n_valid == 300
    none = percentile_interval([np.nan] * 500)
    assert none.low is None and "resamples" in none.reason
