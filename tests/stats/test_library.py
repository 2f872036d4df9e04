"""The reference implementations' point estimates and the check that the engine reproduces them
(calibrate/stats/library.py)."""

import numpy as np
import pytest
from scipy import stats
from sklearn.metrics import cohen_kappa_score, roc_auc_score

from calibrate.campaign import Metric
from calibrate.stats.library import (
    EngineMismatch,
    check_engine,
    point_estimates,
    separation,
    weighted_midranks,
    weighted_spearman,
)

ORDINAL = Metric("relevance", "ordinal", human_pass=2, levels=(0, 1, 2, 3))


def test_separation_is_the_auc_with_a_one_sided_p_value():
    rng = np.random.default_rng(0)
    passes = rng.random(80) < 0.5
    score = passes * 0.3 + rng.random(80)
    r = separation(score, passes)
    assert r["auc"] == pytest.approx(roc_auc_score(passes, score))
    assert (r["n_pass"], r["n_fail"]) == (passes.sum(), (~passes).sum())
    assert r["chance_p"] == pytest.approx(
        stats.mannwhitneyu(score[passes], score[~passes], alternative="greater").pvalue
    )
    # a small class: by permutation, seeded; a judge that cannot tell the classes apart is not significant
    few = np.array([True, True, True, False, False, False, False])
    assert separation(np.arange(7.0)[::-1], few)["chance_p"] < 0.05
    assert separation(np.arange(7.0), few, seed=1) == separation(np.arange(7.0), few, seed=1)
    assert separation(np.arange(7.0), few)["chance_p"] > 0.9


def test_integer_weights_rank_as_repeated_cases():
    values, weights = np.array([2.0, 5.0, 2.0, 1.0]), np.array([1, 3, 2, 1])
    repeated = np.repeat(values, weights)
    ranks = stats.rankdata(repeated)
    expected = [ranks[repeated == v].mean() for v in values]
    assert weighted_midranks(values, weights.astype(float)).tolist() == expected
    other = np.array([0.1, 0.9, 0.4, 0.2])
    assert weighted_spearman(values, other, weights.astype(float)) == pytest.approx(
        stats.spearmanr(repeated, np.repeat(other, weights)).statistic
    )


def test_point_estimates_are_the_libraries_values():
    rng = np.random.default_rng(1)
    human = rng.integers(0, 4, 60).astype(float)
    score = np.clip(human + rng.integers(-1, 2, 60), 0, 3).astype(float)
    got = point_estimates(human, score, ORDINAL, True, 2.0, 1.0)
    assert got["spearman"] == pytest.approx(stats.spearmanr(human, score).statistic)
    assert got["kendall"] == pytest.approx(stats.kendalltau(human, score).statistic)
    assert got["kappa"] == pytest.approx(cohen_kappa_score(human, score))
    assert got["kappa_quadratic"] == pytest.approx(cohen_kappa_score(human, score, weights="quadratic"))
    assert got["auc"] == pytest.approx(roc_auc_score(human >= 2, score))
    assert got["pass_kappa"] == pytest.approx(cohen_kappa_score(human >= 2, score >= 2))
    assert -1 <= got["alpha"] <= 1
    # off the metric's scale: no kappa or alpha; no threshold: no pass/fail figures
    off = point_estimates(human, score / 3, ORDINAL, False, None, 1.0)
    assert set(off) == {"spearman", "kendall", "auc"}


def test_weighted_point_estimates_equal_the_repeated_cases():
    rng = np.random.default_rng(2)
    human = rng.integers(0, 4, 40).astype(float)
    score = np.clip(human + rng.integers(-1, 2, 40), 0, 3).astype(float)
    weights = rng.integers(1, 4, 40)
    got = point_estimates(human, score, ORDINAL, True, 2.0, 1.0, weights=weights.astype(float))
    repeated = point_estimates(np.repeat(human, weights), np.repeat(score, weights), ORDINAL, True, 2.0, 1.0)
    assert set(got) == {"spearman", "auc", "kappa", "kappa_quadratic", "pass_kappa", "balanced_accuracy"}
    for key, value in got.items():
        assert value == pytest.approx(repeated[key]), key


def test_the_engine_check_names_the_figure_and_the_judge():
    check_engine({"kappa": 0.5, "auc": float("nan"), "alpha": 0.2}, {"kappa": 0.5 + 1e-12, "auc": float("nan")}, "j")
    with pytest.raises(
        EngineMismatch, match=r"kappa of judge gpt-4o: the reference library gives 0\.5, the resampling engine 0\.6"
    ):
        check_engine({"kappa": 0.5}, {"kappa": 0.6}, "gpt-4o")
    with pytest.raises(EngineMismatch, match=r"internal check failed for alpha of ann and bea:"):
        check_engine({"alpha": 0.5}, {"alpha": float("nan")}, "ann and bea", subject="")
