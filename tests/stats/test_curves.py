"""error_curve against scikit-learn's det_curve, and the batched counts of PairedScores against it."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import det_curve

from calibrate.stats import error_curve
from calibrate.stats.bootstrap import case_counts
from calibrate.stats.paired import PairedScores


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("seed", range(6))
def test_error_curve_is_det_curve_on_the_thresholds_det_curve_keeps(seed, weighted):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 300))
    human_pass = rng.random(n) < rng.uniform(0.2, 0.8)
    human_pass[:2] = [True, False]  # det_curve needs both classes
    score = np.round(rng.normal(human_pass * rng.uniform(0, 2), 1), int(rng.integers(0, 3)))  # ties too
    weights = rng.uniform(0.1, 5, n) if weighted else None
    curve = error_curve(human_pass, score, sample_weight=weights)
    fp_rate, ff_rate = curve.rates()
    fpr, fnr, thresholds = det_curve(human_pass, score, sample_weight=weights)
    finite = np.isfinite(thresholds)
    at = np.searchsorted(curve.thresholds, thresholds[finite])
    np.testing.assert_array_equal(curve.thresholds[at], thresholds[finite])
    np.testing.assert_allclose(fp_rate[at], fpr[finite], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(ff_rate[at], fnr[finite], rtol=1e-12, atol=1e-12)
    # the point det_curve adds at inf (it fails every case) is the curve's end beyond its last threshold
    assert [fpr[~finite].tolist(), fnr[~finite].tolist()] in ([[], []], [[0.0], [1.0]])
    # outside the thresholds det_curve keeps, one rate is at its end: every pass passes, or every fail fails
    first, last = at.min(), at.max()
    assert np.all(ff_rate[:first] == 0) and np.all(fp_rate[last + 1 :] == 0)
    assert curve.n_pass == pytest.approx(np.sum(human_pass * (weights if weighted else 1)))


def test_det_curve_orientation_matches():
    """det_curve's docstring example: fpr decreasing, fnr increasing, thresholds increasing (as here)."""
    human_pass, score = np.array([0, 0, 1, 1]), np.array([0.1, 0.4, 0.35, 0.8])
    fpr, fnr, thresholds = det_curve(human_pass, score)
    curve = error_curve(human_pass, score)
    assert thresholds.tolist() == [0.35, 0.4, 0.8] and curve.thresholds.tolist() == [0.1, 0.35, 0.4, 0.8]
    fp_rate, ff_rate = curve.rates()
    assert fp_rate[1:].tolist() == fpr.tolist() and ff_rate[1:].tolist() == fnr.tolist()
    assert (fp_rate[0], ff_rate[0]) == (1.0, 0.0)  # the lowest score passes everything: dropped by det_curve


def test_zero_weights_leave_cases_out_as_sklearn_does():
    human_pass, score = np.array([1, 0, 1, 0]), np.array([0.9, 0.2, 0.5, 0.7])
    curve = error_curve(human_pass, score, sample_weight=[1, 0, 1, 1])
    alone = error_curve(human_pass[[0, 2, 3]], score[[0, 2, 3]])
    assert curve.thresholds.tolist() == alone.thresholds.tolist() == [0.5, 0.7, 0.9]
    assert curve.false_pass.tolist() == alone.false_pass.tolist()
    assert curve.false_fail.tolist() == alone.false_fail.tolist()
    empty = error_curve([1, 0], [0.3, 0.4], sample_weight=[0, 0])
    assert empty.thresholds.size == 0 and (empty.n_pass, empty.n_fail) == (0.0, 0.0)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.booleans(), st.integers(0, 6), st.integers(1, 3)), min_size=2, max_size=40),
    st.integers(0, 2**16),
)
def test_paired_scores_count_what_error_curve_counts(cases, seed):
    """The batched counts of PairedScores (full sample and a resample) are error_curve's, plus the index
    that fails every case."""
    human = np.array([c[0] for c in cases], dtype=float)
    score = np.array([c[1] for c in cases], dtype=float) / 2
    weights = np.array([c[2] for c in cases], dtype=float)
    for w in (None, weights):
        paired = PairedScores(human, score, human_pass=1, weights=w)
        counts = paired.error_counts(paired.full)
        curve = error_curve(human == 1, score, sample_weight=w)
        np.testing.assert_allclose(counts["false_pass"][0], [*curve.false_pass, 0.0])
        np.testing.assert_allclose(counts["false_fail"][0], [*curve.false_fail, curve.n_pass])
        resample = np.random.default_rng(seed).integers(0, human.size, (1, human.size))
        drawn = case_counts(resample, human.size)[0]
        counts = paired.error_counts(paired.tables(drawn[None, :]))
        repeated = error_curve(human == 1, score, sample_weight=drawn * (1 if w is None else w))
        at = np.searchsorted(paired.j_values, repeated.thresholds)
        np.testing.assert_allclose(counts["false_pass"][0, at], repeated.false_pass, atol=1e-9)
        np.testing.assert_allclose(counts["false_fail"][0, at], repeated.false_fail, atol=1e-9)
        false_pass, false_fail = [*curve.false_pass, 0.0], [*curve.false_fail, curve.n_pass]
        for t in range(paired.m + 1):
            decision = paired.decision_stats(paired.full, t)
            assert decision["false_pass"][0] == pytest.approx(false_pass[t])
            assert decision["false_fail"][0] == pytest.approx(false_fail[t])
            agree = curve.n_pass + curve.n_fail - false_pass[t] - false_fail[t]
            assert decision["n_agree"][0] == pytest.approx(agree)
