"""Resamples of cases, their counts, and the percentile and BCa intervals (calibrate/stats/bootstrap.py)."""

import numpy as np
import pytest

from calibrate.stats.bootstrap import bca_interval, case_counts, percentile_interval, resample_indices
from calibrate.stats.kernel import SERIAL_WORK


def all_resamples(n_cases, n_boot, **kw):
    return np.concatenate(list(resample_indices(n_cases, n_boot, **kw)))


def test_resamples_do_not_depend_on_the_batch_size():
    one = all_resamples(17, 40, seed=3, batch_size=1)
    many = all_resamples(17, 40, seed=3, batch_size=64)
    assert one.shape == (40, 17) and (one == many).all()
    assert one.min() >= 0 and one.max() < 17
    assert not (all_resamples(17, 40, seed=4) == one).all()  # another seed, other resamples


def test_a_stratified_resample_keeps_each_stratum_and_one_stratum_is_none():
    strata = np.array([2, 0, 2, 1, 0, 2, 2])
    s = all_resamples(7, 30, seed=1, strata=strata)
    assert (np.sort(strata[s], axis=1) == np.sort(strata)).all()
    one = all_resamples(7, 30, seed=1, strata=np.zeros(7, int))
    assert (one == all_resamples(7, 30, seed=1)).all()


@pytest.mark.parametrize("rows", [3, SERIAL_WORK // 50 + 1])  # on the calling thread, and in parallel
def test_case_counts_are_each_resamples_bincount(rows):
    indices = np.random.default_rng(0).integers(0, 50, size=(rows, 50)).astype(np.int32)
    counts = case_counts(indices, 50)
    assert counts.shape == (rows, 50) and counts.dtype == np.float32
    assert (counts == np.array([np.bincount(row, minlength=50) for row in indices])).all()


def test_percentile_interval_is_the_quantiles_of_the_defined_replicates():
    replicates = np.r_[np.arange(200.0), [np.nan, np.inf]]
    iv = percentile_interval(replicates, confidence=0.9)
    assert (iv.low, iv.high) == pytest.approx(tuple(np.quantile(np.arange(200.0), [0.05, 0.95])))
    assert iv.n_valid == 200 and iv.n_dropped == 2 and iv.reason is None
    assert iv.method == "percentile bootstrap (200 resamples of cases)"
    discrete = percentile_interval(np.arange(200.0) / 2, discrete=True)
    assert discrete.low in np.arange(200.0) / 2 and discrete.high in np.arange(200.0) / 2


@pytest.mark.parametrize("interval", [percentile_interval, lambda r, **kw: bca_interval(0.5, r, [0.4, 0.6], **kw)])
def test_too_few_defined_resamples_give_no_interval_and_say_why(interval):
    iv = interval(np.r_[np.ones(40), np.full(80, np.nan)], min_valid=50)
    assert iv.low is None and iv.high is None and (iv.n_valid, iv.n_dropped) == (40, 80)
    assert iv.reason == "only 40 resamples defined the statistic (need 50)"


def test_bca_without_bias_or_acceleration_is_the_percentile_interval():
    replicates = np.linspace(-3, 3, 1001)  # median 0 = the estimate: no bias correction
    jackknife = np.array([-1.0, 0.0, 1.0])  # symmetric: no acceleration
    bca = bca_interval(0.0, replicates, jackknife)
    pct = percentile_interval(replicates)
    assert (bca.low, bca.high) == pytest.approx((pct.low, pct.high))
    assert bca.method == "BCa bootstrap (1001 resamples of cases)"


def test_bca_follows_the_bias_and_skew_of_the_resamples():
    replicates = np.linspace(-3, 3, 1001)
    centred = bca_interval(0.0, replicates, [-1.0, 0.0, 1.0])
    biased = bca_interval(0.5, replicates, [-1.0, 0.0, 1.0])  # most replicates below the estimate
    assert biased.low > centred.low and biased.high > centred.high
    skewed = bca_interval(0.0, replicates, [-3.0, 0.0, 0.0, 0.0, 1.0])
    weighted = bca_interval(0.0, replicates, [-3.0, 0.0, 1.0], jackknife_weights=[1, 3, 1])
    assert (skewed.low, skewed.high) == pytest.approx((weighted.low, weighted.high))  # a weight repeats a value
    assert (skewed.low, skewed.high) != pytest.approx((centred.low, centred.high))


def test_bca_of_a_constant_statistic_is_that_constant():
    iv = bca_interval(0.7, np.full(150, 0.7), [0.7, 0.7])
    assert (iv.low, iv.high, iv.n_valid) == (0.7, 0.7, 150)
