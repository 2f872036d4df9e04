"""Agreement between human annotators: the ceiling a judge can be held to.

Pure functions on a label matrix of shape (items, annotators), NaN where an annotator did not label
an item. Only items labelled by at least two annotators carry information about agreement, and only
those are used (and resampled). Point estimates come from scikit-learn (Cohen's kappa) and
krippendorff (alpha); Fleiss' kappa, in its form for a varying number of annotators per item
(Fleiss 1971, with each item's agreement over its own pairs), and percent agreement are written here:
no installed library computes them on incomplete data.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from calibrate.stats.bootstrap import Interval, bca_interval, percentile_interval, resample_indices

__all__ = ["percent_agreement", "fleiss_kappa", "cohen_kappa", "krippendorff_alpha", "others_reference",
           "Agreement", "agreement_with_interval", "BCA_MAX_ITEMS"]

#: up to this many items the interval is BCa (measured to cover best for kappa up to n = 100; all
#: methods agree beyond), above it a percentile bootstrap, which needs no leave-one-out pass
BCA_MAX_ITEMS = 200


def _pairs(matrix: np.ndarray) -> np.ndarray:
    return np.sum(~np.isnan(matrix), axis=1)


def percent_agreement(matrix: np.ndarray) -> float:
    """The mean over items (with two labels or more) of the share of their annotator pairs that agree.

    Examples
    --------
    >>> percent_agreement(np.array([[1, 1, np.nan], [1, 0, 0], [0, np.nan, np.nan]]))
    0.6666666666666666
    """
    shares = []
    for row in matrix:
        labels = row[~np.isnan(row)]
        if labels.size < 2:
            continue
        _, counts = np.unique(labels, return_counts=True)
        shares.append(np.sum(counts * (counts - 1)) / (labels.size * (labels.size - 1)))
    return float(np.mean(shares)) if shares else float("nan")


def fleiss_kappa(matrix: np.ndarray) -> float:
    """Fleiss' kappa for a varying number of annotators per item (items with fewer than two labels
    left out); nominal categories.

    Examples
    --------
    >>> m = np.array([[1, 1, 1], [0, 0, 0], [1, 0, 1], [0, 0, 1]], dtype=float)
    >>> round(fleiss_kappa(m), 4)
    0.3333
    """
    keep = _pairs(matrix) >= 2
    matrix = matrix[keep]
    if not matrix.size:
        return float("nan")
    categories = np.unique(matrix[~np.isnan(matrix)])
    counts = np.stack([np.sum(matrix == c, axis=1) for c in categories], axis=1).astype(float)  # items x categories
    n = counts.sum(axis=1)
    observed = np.mean(np.sum(counts * (counts - 1), axis=1) / (n * (n - 1)))
    shares = counts.sum(axis=0) / n.sum()
    expected = float(np.sum(shares**2))
    return float("nan") if expected == 1 else float((observed - expected) / (1 - expected))


def cohen_kappa(a: np.ndarray, b: np.ndarray, *, weights: str | None = None) -> float:
    """Cohen's kappa between two label vectors on the items both labelled (scikit-learn)."""
    from sklearn.metrics import cohen_kappa_score

    both = ~np.isnan(a) & ~np.isnan(b)
    if both.sum() < 2 or np.unique(np.concatenate([a[both], b[both]])).size < 2:
        return float("nan")
    with np.errstate(divide="ignore", invalid="ignore"):
        value = cohen_kappa_score(a[both], b[both], weights=weights)
    return float(value)


def krippendorff_alpha(matrix: np.ndarray, level: str) -> float:
    """Krippendorff's alpha at the level of measurement (``nominal``, ``ordinal``, ``interval``);
    missing labels allowed (the ``krippendorff`` package)."""
    import krippendorff

    keep = _pairs(matrix) >= 2
    data = matrix[keep]
    if data.shape[0] < 1 or np.unique(data[~np.isnan(data)]).size < 2:
        return float("nan")
    try:
        with np.errstate(divide="ignore", invalid="ignore"):
            return float(krippendorff.alpha(reliability_data=data.T, level_of_measurement=level))
    except (ValueError, ZeroDivisionError):
        return float("nan")


def others_reference(matrix: np.ndarray, column: int, *, mean: bool) -> np.ndarray:
    """Per item, the reference of the *other* annotators (their mean, or their low median, which is
    the majority for 0/1 labels with a tie resolving to the lower label); NaN without any other label.

    Examples
    --------
    >>> others_reference(np.array([[1, 1, 0], [0, 1, np.nan], [1, np.nan, np.nan]]), 0, mean=False).tolist()
    [0.0, 1.0, nan]
    """
    others = np.delete(matrix, column, axis=1)
    out = np.full(matrix.shape[0], np.nan)
    for i, row in enumerate(others):
        labels = np.sort(row[~np.isnan(row)])
        if labels.size:
            out[i] = labels.mean() if mean else labels[(labels.size - 1) // 2]
    return out


@dataclass(frozen=True)
class Agreement:
    """A statistic on the items, with its bootstrap interval over items."""

    estimate: float
    n_items: int
    interval: Interval | None


def agreement_with_interval(statistic: Callable[[np.ndarray], float], matrix: np.ndarray, *, n_boot: int,
                            seed: int, confidence: float = 0.95) -> Agreement:
    """``statistic`` of the items with two labels or more, with a bootstrap interval over those items
    (BCa up to :data:`BCA_MAX_ITEMS` items, percentile beyond; undefined resamples dropped)."""
    matrix = matrix[_pairs(matrix) >= 2]
    n = matrix.shape[0]
    value = statistic(matrix) if n else float("nan")
    if not np.isfinite(value) or n_boot == 0:
        return Agreement(value, n, None)
    replicates = np.array([statistic(matrix[rows]) for batch in resample_indices(n, n_boot, seed=seed)
                           for rows in batch])
    min_valid = min(100, max(1, n_boot // 2))
    if n <= BCA_MAX_ITEMS:
        jackknife = np.array([statistic(np.delete(matrix, i, axis=0)) for i in range(n)])
        interval = bca_interval(value, replicates, jackknife, confidence=confidence, min_valid=min_valid)
    else:
        interval = percentile_interval(replicates, confidence=confidence, min_valid=min_valid)
    return Agreement(value, n, interval)
