"""Selective evaluation (calibrate.stats.selective): the candidate bands, the exact binomial and betting tests,
fixed-sequence testing, and the guarantee itself, simulated over many calibration/test splits."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from calibrate.stats.selective import (
    BET_FRACTIONS,
    betting_log_evidence,
    betting_upper_bound,
    candidate_bands,
    labels_to_pass,
    select_band,
)


def _judge(rng, n, kind):
    """Scores from 0 to 1 (verdict pass at 0.5) and human verdicts: a good judge (the humans pass with a
    probability rising steeply with the score), a coin flip (the humans ignore the score), a perfect one."""
    score = rng.random(n)
    if kind == "good":
        human = rng.random(n) < 1 / (1 + np.exp(-12 * (score - 0.5)))
    elif kind == "coin":
        human = rng.random(n) < 0.5
    else:
        human = score >= 0.5
    return score, human


# ---------------------------------------------------------------------------------------- the bands
def test_the_bands_on_an_ordinal_scale_are_symmetric_about_the_boundary():
    b = candidate_bands([0, 0, 1, 2, 2, 3], 2)
    assert b.boundary == 1.5
    assert b.pass_at.tolist() == [3, 2] and b.fail_below.tolist() == [1, 2] and b.n_decided.tolist() == [3, 6]


def test_a_continuous_score_gives_at_most_about_max_bands_nested_bands():
    rng = np.random.default_rng(1)
    b = candidate_bands(rng.random(5000), 0.5, max_bands=50)
    assert 10 < b.cut.size <= 51
    assert np.all(np.diff(b.pass_at) <= 0) and np.all(np.diff(b.fail_below) >= 0)
    assert b.n_decided[-1] == 5000 and b.pass_at[-1] == b.fail_below[-1]


def test_bands_need_scores():
    with pytest.raises(ValueError, match="scores"):
        candidate_bands([], 0.5)
    with pytest.raises(ValueError, match="scores"):
        candidate_bands([0.1, np.nan], 0.5)


# ---------------------------------------------------------------------------------------- the tests
def test_a_perfect_judge_decides_every_case():
    score, human = _judge(np.random.default_rng(2), 300, "perfect")
    for weights in (None, np.random.default_rng(3).uniform(1, 3, 300)):
        found = select_band(score, human, score, 0.5, agreement=0.9, weights=weights)
        assert found.chosen == found.bands.cut.size - 1
        assert found.bands.n_decided[found.chosen] == 300 and found.disagreements[found.chosen] == 0


@pytest.mark.parametrize("weighted", [False, True])
def test_a_coin_flip_judge_gets_no_band(weighted):
    rng = np.random.default_rng(4)
    score, human = _judge(rng, 1000, "coin")
    weights = rng.uniform(1, 4, 1000) if weighted else None
    found = select_band(score, human, score, 0.5, agreement=0.8, weights=weights)
    assert found.chosen == -1 and not found.passed.any()


def test_clopper_pearson_bounds_are_scipys():
    rng = np.random.default_rng(5)
    score, human = _judge(rng, 400, "good")
    found = select_band(score, human, score, 0.5, agreement=0.85, confidence=0.9)
    tested = np.flatnonzero(found.tested)
    assert tested.size
    for j in tested:
        k, n = int(found.disagreements[j]), int(found.n_labelled[j])
        expected = stats.beta.ppf(0.9, k + 1, n - k) if k < n else 1.0
        assert found.upper[j] == pytest.approx(expected, rel=1e-12)
        # the bound under 1 - A is the binomial test's p-value under 1 - C
        p_value = stats.binomtest(k, n, 0.15, alternative="less").pvalue
        assert bool(found.passed[j]) == (p_value <= 0.1 + 1e-12)


def test_the_betting_e_value_is_the_product_it_says():
    rng = np.random.default_rng(6)
    x, r = (rng.random(30) < 0.2).astype(float), rng.uniform(0.2, 1, 30)
    logs = betting_log_evidence(x, r, 0.25)
    for f, got in zip(BET_FRACTIONS, logs, strict=True):
        lam = f / 0.75  # f / (w_max (1 - theta)), ratios w / w_max
        assert got == pytest.approx(np.log(np.prod(1 + lam * r * (0.25 - x))))


def test_the_betting_bound_is_the_smallest_rate_it_rejects_and_covers():
    x, r = np.r_[np.zeros(190), np.ones(10)], np.ones(200)
    upper = betting_upper_bound(x, r, confidence=0.95)
    mix = lambda theta: np.log(np.mean(np.exp(betting_log_evidence(x, r, theta))))  # noqa: E731
    assert mix(upper) >= np.log(20) > mix(upper - 1e-6)
    assert 0.05 < upper < 0.15  # looser than Clopper-Pearson's, not absurdly
    assert upper >= stats.beta.ppf(0.95, 11, 190) - 0.02


def test_labels_to_pass_is_the_smallest_scale_that_passes():
    x = np.r_[np.zeros(57), np.ones(3)]
    s = labels_to_pass(x, np.ones(60), agreement=0.9)
    bound = lambda t: stats.beta.ppf(0.95, 3 * t + 1, 60 * t - 3 * t)  # noqa: E731
    assert bound(s) <= 0.1 < bound(s * 0.999)
    assert labels_to_pass(np.r_[np.zeros(8), np.ones(2)], np.ones(10), agreement=0.9) is None
    weighted = labels_to_pass(x, np.ones(60), agreement=0.9, weighted=True)
    assert weighted > s  # the betting test needs more


def test_bad_targets_are_refused():
    with pytest.raises(ValueError, match=r"agreement=1\.2"):
        select_band([0.2], [True], [0.2], 0.5, agreement=1.2)
    with pytest.raises(ValueError, match="confidence=0"):
        select_band([0.2], [True], [0.2], 0.5, agreement=0.9, confidence=0)
    with pytest.raises(ValueError, match="weights"):
        select_band([0.2], [True], [0.2], 0.5, agreement=0.9, weights=[0.0])


@settings(max_examples=60, deadline=None)
@given(
    scores=st.lists(st.sampled_from([0.0, 0.1, 0.25, 0.5, 0.5, 0.7, 0.9, 1.0, 3.0, -2.0]), min_size=1, max_size=80),
    extra=st.lists(st.floats(-5, 5, allow_nan=False), max_size=40),
    seed=st.integers(0, 2**16),
    agreement=st.floats(0.01, 0.99),
    confidence=st.floats(0.01, 0.99),
    threshold=st.floats(-3, 3, allow_nan=False),
    weighted=st.booleans(),
    max_bands=st.integers(1, 20),
)
def test_random_inputs_give_nested_bands_and_coverage_in_range(
    scores, extra, seed, agreement, confidence, threshold, weighted, max_bands
):
    rng = np.random.default_rng(seed)
    labelled = np.asarray(scores)
    every = np.r_[labelled, extra]
    human = rng.random(labelled.size) < 0.5
    weights = rng.uniform(0.5, 3, labelled.size) if weighted else None
    found = select_band(
        labelled,
        human,
        every,
        threshold,
        agreement=agreement,
        confidence=confidence,
        weights=weights,
        max_bands=max_bands,
    )
    b = found.bands
    coverage = b.n_decided / b.n_cases
    assert np.all((coverage >= 0) & (coverage <= 1)) and coverage[-1] == 1
    assert np.all(np.diff(b.pass_at) <= 0) and np.all(np.diff(b.fail_below) >= 0)
    assert np.all(b.fail_below <= threshold) and np.all(b.pass_at >= threshold)
    for j in range(b.cut.size):  # the edges decide the cases the distances do
        assert b.decided(every, j).sum() == b.n_decided[j]
        assert b.decided(labelled, j).sum() == found.n_labelled[j]
    assert -1 <= found.chosen < b.cut.size
    if found.chosen >= 0:
        assert found.passed[found.start : found.chosen + 1].all()
    assert not found.passed[~found.tested].any()
    tested = found.upper[found.tested]
    assert np.all((tested >= 0) & (tested <= 1))


# ---------------------------------------------------------------------------------------- the guarantee
#: (labels, design, judge) simulated; each over SPLITS calibration/test splits
SPLITS = 1000
TEST_CASES = 4000
POOL = 3  # the judge-scored cases: POOL times the labels


def _targeted(rng, score, n):
    """A stratified sample of ``n`` of the pool: the cases within 0.15 of the threshold drawn at 4 times the
    rate of the others; their inclusion probabilities."""
    near = np.abs(score - 0.5) < 0.15
    n_near = min(int(round(n * 4 * near.mean() / (4 * near.mean() + (1 - near.mean())))), int(near.sum()))
    chosen = np.r_[
        rng.choice(np.flatnonzero(near), n_near, replace=False),
        rng.choice(np.flatnonzero(~near), n - n_near, replace=False),
    ]
    pi = np.where(near, n_near / near.sum(), (n - n_near) / (~near).sum())
    return chosen, pi[chosen]


def _one_split(rng, n, design, kind, agreement, confidence):
    """The realised agreement on fresh test cases of the band chosen on one calibration sample (None: no
    band, or a band deciding no test case), and the share of the test cases it decides."""
    score, human = _judge(rng, POOL * n, kind)
    if design == "uniform":
        chosen, weights = rng.choice(score.size, n, replace=False), None
    else:
        chosen, pi = _targeted(rng, score, n)
        weights = 1 / pi
    found = select_band(
        score[chosen],
        human[chosen],
        score,
        0.5,
        agreement=agreement,
        confidence=confidence,
        weights=weights,
        bounds=False,
    )
    if found.chosen < 0:
        return None, 0.0
    test_score, test_human = _judge(rng, TEST_CASES, kind)
    decided = found.bands.decided(test_score, found.chosen)
    if not decided.any():
        return None, 0.0
    agree = (test_score[decided] >= 0.5) == test_human[decided]
    return float(agree.mean()), float(decided.mean())


@pytest.mark.slow
@pytest.mark.parametrize("design", ["uniform", "targeted"])
@pytest.mark.parametrize("kind", ["good", "coin"])
@pytest.mark.parametrize("n", [100, 300, 1000])
def test_the_band_reaches_the_target_in_at_least_c_of_the_splits(n, design, kind):
    """Trust or Escalate's guarantee, simulated: the realised agreement on the test cases the band decides
    is at least A in at least C of 1,000 splits (a band that decides nothing cannot miss)."""
    agreement, confidence = 0.9, 0.9
    rng = np.random.default_rng([n, len(design), len(kind)])
    results = [_one_split(rng, n, design, kind, agreement, confidence) for _ in range(SPLITS)]
    realised = np.array([np.nan if a is None else a for a, _ in results])
    met = np.isnan(realised) | (realised >= agreement)
    assert met.mean() >= confidence, (met.mean(), np.nanmean(realised))
    coverage = np.array([c for _, c in results])
    if kind == "coin":
        assert np.isnan(realised).mean() >= confidence  # no band, almost always
    elif n >= 300:
        assert np.median(coverage) > 0.3  # and a good judge decides a good share


def test_bands_of_one_inclusion_probability_take_the_exact_test():
    """Labels uniform where the judge is sure, and over-sampled near its boundary (the cases a band escalated):
    the leading bands that decide only uniformly sampled cases are tested as if unweighted."""
    rng = np.random.default_rng(11)
    score, human = _judge(rng, 4000, "good")
    boundary = np.abs(score - 0.5) < 0.15
    labelled = rng.random(4000) < np.where(boundary, 0.6, 0.2)
    weights = np.where(boundary, 0.2 / 0.6, 1.0)[labelled]
    plain = select_band(score[labelled], human[labelled], score, 0.5, agreement=0.9)
    mixed = select_band(
        score[labelled], human[labelled], score, 0.5, agreement=0.9, weights=weights, equal_probability=~boundary
    )
    betting = select_band(score[labelled], human[labelled], score, 0.5, agreement=0.9, weights=weights)
    lead = int(mixed.bands.first_band(score[boundary]).min())
    assert 0 < lead < mixed.bands.cut.size and "exact binomial on the first" in mixed.method
    np.testing.assert_array_equal(mixed.passed[:lead], plain.passed[:lead])
    np.testing.assert_allclose(mixed.upper[:lead], plain.upper[:lead])
    assert mixed.chosen >= betting.chosen
    with pytest.raises(ValueError, match="weigh unalike"):
        select_band(
            score[labelled],
            human[labelled],
            score,
            0.5,
            agreement=0.9,
            weights=weights * 0 + rng.uniform(1, 2, weights.size),
            equal_probability=~boundary,
        )
