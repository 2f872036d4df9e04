"""Full-sample point estimates from the reference implementations, and the check that the
vectorised engine (:mod:`calibrate.stats.paired`) reproduces them on the user's own data."""

from __future__ import annotations

import warnings

import krippendorff
import numpy as np
from scipy import stats
from sklearn.metrics import balanced_accuracy_score, cohen_kappa_score, roc_auc_score

__all__ = ["point_estimates", "check_engine", "EngineMismatch"]

#: krippendorff builds a (values x values) coincidence matrix; past this many distinct values the
#: engine's moment formula for interval alpha stands alone (it is cross-checked in the tests).
MAX_ALPHA_VALUES = 500


class EngineMismatch(RuntimeError):
    """The vectorised engine and a reference implementation disagree: a bug, never a result."""


def point_estimates(human: np.ndarray, score: np.ndarray, metric, on_scale: bool,
                    pass_threshold: float | None, sign: float) -> dict[str, float]:
    """Statistics of (human reference, oriented judge score) from scipy, scikit-learn, krippendorff."""
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
            out["alpha"] = float(krippendorff.alpha(reliability_data=np.vstack([human, score]),
                                                    level_of_measurement=metric.alpha_level,
                                                    value_domain=levels))
        if pass_threshold is not None:
            judged = score >= sign * pass_threshold
            out["pass_kappa"] = float(cohen_kappa_score(passes, judged, labels=[False, True]))
            out["balanced_accuracy"] = (float(balanced_accuracy_score(passes, judged)) if both_classes
                                        else float("nan"))
    return out


def check_engine(reference: dict[str, float], engine: dict[str, float], judge: str) -> None:
    """Raise :class:`EngineMismatch` where the engine's full-sample value differs from the library's."""
    for key, expected in reference.items():
        got = engine.get(key)
        if got is None:
            continue
        if np.isnan(expected) and np.isnan(got):
            continue
        if not np.isclose(expected, got, rtol=1e-9, atol=1e-9):
            raise EngineMismatch(f"internal check failed for {key} of judge {judge}: the reference library "
                                 f"gives {expected!r}, the resampling engine {got!r}; please report this")
