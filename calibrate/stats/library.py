"""Full-sample point estimates from the reference implementations, and the check that the
vectorised engine (:mod:`calibrate.stats.paired`) reproduces them on the user's own data.

With case weights (a targeted sample design), scikit-learn's ``sample_weight`` gives the reference
kappa, AUC and balanced accuracy, and Spearman's rho is the weighted Pearson correlation of weighted
midranks (numpy); neither scipy nor krippendorff takes weights, so Kendall's tau and alpha on weighted
cases rest on the engine alone (the tests check both against the libraries on repeated cases)."""

from __future__ import annotations

import warnings

import krippendorff
import numpy as np
from scipy import stats
from sklearn.metrics import balanced_accuracy_score, cohen_kappa_score, roc_auc_score

__all__ = ["EngineMismatch", "check_engine", "point_estimates", "separation", "weighted_midranks", "weighted_spearman"]

#: krippendorff builds a (values x values) coincidence matrix; past this many distinct values the
#: engine's moment formula for interval alpha stands alone (it is cross-checked in the tests).
MAX_ALPHA_VALUES = 500


class EngineMismatch(RuntimeError):
    """The vectorised engine and a reference implementation disagree: a bug, never a result."""


def separation(score: np.ndarray, passes: np.ndarray, *, seed: int = 0) -> dict[str, float | int]:
    """How far scores separate the human passes from the fails: the AUC (``U / (n_pass n_fail)``) and
    ``chance_p``, the one-sided Mann-Whitney p-value against 0.5 (scipy), by permutation while the smaller
    class has fewer than 20 cases, where the normal approximation is not to be trusted.

    >>> r = separation(np.array([0.9, 0.8, 0.3, 0.1]), np.array([True, True, False, False]))
    >>> r["auc"], r["n_pass"], r["chance_p"] < 0.2
    (1.0, 2, True)
    """
    passes = np.asarray(passes, dtype=bool)
    n_pass, n_fail = int(passes.sum()), int((~passes).sum())
    smaller = min(n_pass, n_fail)
    method = (
        "exact"
        if smaller < 2
        else stats.PermutationMethod(n_resamples=4999, random_state=seed)
        if smaller < 20
        else "asymptotic"
    )
    test = stats.mannwhitneyu(score[passes], score[~passes], alternative="greater", method=method)
    return {
        "auc": float(test.statistic) / (n_pass * n_fail),
        "chance_p": float(test.pvalue),
        "n_pass": n_pass,
        "n_fail": n_fail,
    }


def weighted_midranks(values: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Midranks where case ``i`` counts ``weights[i]`` times: the weight of the values below, plus half
    the weight of the ties, plus one half.

    Examples
    --------
    >>> weighted_midranks(np.array([3.0, 1.0, 3.0]), np.ones(3)).tolist()   # scipy's rankdata
    [2.5, 1.0, 2.5]
    >>> weighted_midranks(np.array([3.0, 1.0]), np.array([1.0, 2.0])).tolist()
    [3.0, 1.5]
    """
    distinct, inverse = np.unique(values, return_inverse=True)
    mass = np.bincount(inverse, weights=weights, minlength=distinct.size)
    return (np.cumsum(mass) - mass + (mass + 1) / 2)[inverse]


def weighted_spearman(x: np.ndarray, y: np.ndarray, weights: np.ndarray) -> float:
    """Spearman's rho with frequency weights: the weighted Pearson correlation of weighted midranks."""
    with np.errstate(invalid="ignore", divide="ignore"):
        c = np.cov(weighted_midranks(x, weights), weighted_midranks(y, weights), aweights=weights)
        return float(c[0, 1] / np.sqrt(c[0, 0] * c[1, 1]))


def point_estimates(
    human: np.ndarray,
    score: np.ndarray,
    metric,
    on_scale: bool,
    pass_threshold: float | None,
    sign: float,
    weights: np.ndarray | None = None,
) -> dict[str, float]:
    """Statistics of (human reference, oriented judge score) from scipy, scikit-learn, krippendorff."""
    if weights is not None:
        return _weighted_point_estimates(human, score, metric, on_scale, pass_threshold, sign, weights)
    out: dict[str, float] = {}
    passes = human >= metric.human_pass
    both_classes = 0 < passes.sum() < passes.size
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out["spearman"] = float(stats.spearmanr(human, score).statistic)
        out["kendall"] = float(stats.kendalltau(human, score).statistic)
        out["auc"] = float(roc_auc_score(passes, score)) if both_classes else float("nan")
        levels = list(metric.levels) if metric.levels else None
        if on_scale and metric.scale != "continuous":
            # level positions 0..L-1: the same kappa (quadratic weights use positions anyway), and
            # scikit-learn skips its per-element relabelling
            positions = np.arange(len(levels))
            h, s = np.searchsorted(levels, human), np.searchsorted(levels, score)
            out["kappa"] = float(cohen_kappa_score(h, s, labels=positions))
            if metric.scale == "ordinal":
                out["kappa_quadratic"] = float(cohen_kappa_score(h, s, labels=positions, weights="quadratic"))
        if on_scale and (levels or np.unique(np.concatenate([human, score])).size <= MAX_ALPHA_VALUES):
            out["alpha"] = float(
                krippendorff.alpha(
                    reliability_data=np.vstack([human, score]),
                    level_of_measurement=metric.alpha_level,
                    value_domain=levels,
                )
            )
        if pass_threshold is not None:
            judged = score >= sign * pass_threshold
            out["pass_kappa"] = float(cohen_kappa_score(passes, judged, labels=[False, True]))
            out["balanced_accuracy"] = float(balanced_accuracy_score(passes, judged)) if both_classes else float("nan")
    return out


def _weighted_point_estimates(human, score, metric, on_scale, pass_threshold, sign, weights) -> dict[str, float]:
    out: dict[str, float] = {}
    passes = human >= metric.human_pass
    both_classes = 0 < passes.sum() < passes.size
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out["spearman"] = weighted_spearman(human, score, weights)
        out["auc"] = float(roc_auc_score(passes, score, sample_weight=weights)) if both_classes else float("nan")
        if on_scale and metric.scale != "continuous":
            positions = np.arange(len(metric.levels))
            h, s = np.searchsorted(metric.levels, human), np.searchsorted(metric.levels, score)
            out["kappa"] = float(cohen_kappa_score(h, s, labels=positions, sample_weight=weights))
            if metric.scale == "ordinal":
                out["kappa_quadratic"] = float(
                    cohen_kappa_score(h, s, labels=positions, weights="quadratic", sample_weight=weights)
                )
        if pass_threshold is not None:
            judged = score >= sign * pass_threshold
            out["pass_kappa"] = float(cohen_kappa_score(passes, judged, labels=[False, True], sample_weight=weights))
            out["balanced_accuracy"] = (
                float(balanced_accuracy_score(passes, judged, sample_weight=weights)) if both_classes else float("nan")
            )
    return out


def check_engine(reference: dict[str, float], engine: dict[str, float], judge: str, *, subject: str = "judge") -> None:
    """Raise :class:`EngineMismatch` where the engine's full-sample value differs from the library's
    (``subject``: what ``judge`` names, in the message; empty: ``judge`` says it all)."""
    for key, expected in reference.items():
        got = engine.get(key)
        if got is None:
            continue
        if np.isnan(expected) and np.isnan(got):
            continue
        if not np.isclose(expected, got, rtol=1e-9, atol=1e-9):
            who = f"{subject} {judge}" if subject else judge
            raise EngineMismatch(
                f"internal check failed for {key} of {who}: the reference library "
                f"gives {expected!r}, the resampling engine {got!r}; please report this"
            )
