"""Agreement between human annotators: the ceiling a judge can be held to.

Pure functions on a label matrix of shape (items, annotators), NaN where an annotator did not label
an item. Only items labelled by at least two annotators carry information about agreement, and only
those are used (and resampled). Point estimates come from scikit-learn (Cohen's kappa) and
krippendorff (alpha); Fleiss' kappa, in its form for a varying number of annotators per item
(Fleiss 1971, with each item's agreement over its own pairs), and percent agreement are written here:
no installed library computes them on incomplete data.

Every statistic takes optional item weights (inverse inclusion probabilities of a targeted sample
design): an item of weight 2 counts as two items. Krippendorff's alpha with weights is computed here
from the weighted coincidence matrix (the package takes none); without weights the package computes it.
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


def percent_agreement(matrix: np.ndarray, weights: np.ndarray | None = None) -> float:
    """The (weighted) mean over items with two labels or more of the share of their annotator pairs
    that agree.

    Examples
    --------
    >>> percent_agreement(np.array([[1, 1, np.nan], [1, 0, 0], [0, np.nan, np.nan]]))
    0.6666666666666666
    """
    shares, kept = [], []
    for i, row in enumerate(matrix):
        labels = row[~np.isnan(row)]
        if labels.size < 2:
            continue
        _, counts = np.unique(labels, return_counts=True)
        shares.append(np.sum(counts * (counts - 1)) / (labels.size * (labels.size - 1)))
        kept.append(i)
    if not shares:
        return float("nan")
    return float(np.average(shares, weights=None if weights is None else np.asarray(weights)[kept]))


def fleiss_kappa(matrix: np.ndarray, weights: np.ndarray | None = None) -> float:
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
    w = np.ones(matrix.shape[0]) if weights is None else np.asarray(weights, dtype=float)[keep]
    categories = np.unique(matrix[~np.isnan(matrix)])
    counts = np.stack([np.sum(matrix == c, axis=1) for c in categories], axis=1).astype(float)  # items x categories
    n = counts.sum(axis=1)
    observed = np.average(np.sum(counts * (counts - 1), axis=1) / (n * (n - 1)), weights=w)
    shares = (w @ counts) / (w @ n)
    expected = float(np.sum(shares**2))
    return float("nan") if expected == 1 else float((observed - expected) / (1 - expected))


def cohen_kappa(a: np.ndarray, b: np.ndarray, *, weights: str | None = None,
                sample_weight: np.ndarray | None = None) -> float:
    """Cohen's kappa between two label vectors on the items both labelled (scikit-learn); ``weights``
    weighs disagreements (``quadratic``), ``sample_weight`` the items."""
    from sklearn.metrics import cohen_kappa_score

    both = ~np.isnan(a) & ~np.isnan(b)
    if both.sum() < 2 or np.unique(np.concatenate([a[both], b[both]])).size < 2:
        return float("nan")
    with np.errstate(divide="ignore", invalid="ignore"):
        value = cohen_kappa_score(a[both], b[both], weights=weights,
                                  sample_weight=None if sample_weight is None else np.asarray(sample_weight)[both])
    return float(value)


def krippendorff_alpha(matrix: np.ndarray, level: str, weights: np.ndarray | None = None) -> float:
    """Krippendorff's alpha at the level of measurement (``nominal``, ``ordinal``, ``interval``);
    missing labels allowed (the ``krippendorff`` package; with item weights, the weighted coincidences).

    Examples
    --------
    >>> m = np.array([[1, 1], [0, 0], [1, 0], [0, 0]], dtype=float)
    >>> round(krippendorff_alpha(m, "nominal"), 4), round(krippendorff_alpha(m, "nominal", np.ones(4)), 4)
    (0.5333, 0.5333)
    """
    import krippendorff

    keep = _pairs(matrix) >= 2
    data = matrix[keep]
    if data.shape[0] < 1 or np.unique(data[~np.isnan(data)]).size < 2:
        return float("nan")
    if level == "interval":   # a closed form, linear in the labels (the package's value matrix is quadratic)
        return _interval_alpha(data, None if weights is None else np.asarray(weights, dtype=float)[keep])
    if weights is not None:
        return _weighted_alpha(data, level, np.asarray(weights, dtype=float)[keep])
    try:
        with np.errstate(divide="ignore", invalid="ignore"):
            return float(krippendorff.alpha(reliability_data=data.T, level_of_measurement=level))
    except (ValueError, ZeroDivisionError):
        return float("nan")


def _interval_alpha(data: np.ndarray, weights: np.ndarray | None) -> float:
    """Interval alpha from sums: within each unit the ordered pairs' squared differences are
    ``2 m S2 - 2 S1^2`` (``S1``, ``S2`` the sum and sum of squares of its ``m`` labels); over all pairable
    values the same with the weighted totals. ``1 - (n - 1) * observed / expected`` as in
    :func:`_weighted_alpha`, without its values-by-values matrix."""
    present = ~np.isnan(data)
    w = np.ones(data.shape[0]) if weights is None else weights
    x = np.where(present, data, 0.0)
    m = present.sum(axis=1).astype(float)
    s1, s2 = x.sum(axis=1), (x**2).sum(axis=1)
    observed = float(np.sum(w * (2 * m * s2 - 2 * s1**2) / (m - 1)))
    n, n1, n2 = float(w @ m), float(w @ s1), float(w @ s2)
    expected = 2 * n * n2 - 2 * n1**2
    return float("nan") if expected <= 0 else float(1 - (n - 1) * observed / expected)


def _weighted_alpha(data: np.ndarray, level: str, weights: np.ndarray) -> float:
    """Alpha from the coincidence matrix ``o_ck = sum_u w_u (n_uc n_uk - [c = k] n_uc) / (m_u - 1)``."""
    values = np.unique(data[~np.isnan(data)])
    counts = np.stack([np.sum(data == v, axis=1) for v in values], axis=1).astype(float)   # units x values
    m = counts.sum(axis=1)
    scaled = counts * (weights / (m - 1))[:, None]
    coincidence = scaled.T @ counts - np.diag(scaled.sum(axis=0))
    n_c = coincidence.sum(axis=1)
    n = n_c.sum()
    i, j = np.indices((values.size, values.size))
    if level == "nominal":
        delta = (i != j).astype(float)
    elif level == "interval":
        delta = (values[i] - values[j]) ** 2
    else:   # ordinal: the squared count of values between (halves at the ends)
        cum = np.cumsum(n_c)
        lo, hi = np.minimum(i, j), np.maximum(i, j)
        delta = (cum[hi] - cum[lo] + n_c[lo] - (n_c[i] + n_c[j]) / 2) ** 2
    expected = float(n_c @ delta @ n_c)
    return float("nan") if expected == 0 else float(1 - (n - 1) * np.sum(coincidence * delta) / expected)


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


def agreement_with_interval(statistic: Callable[[np.ndarray, np.ndarray | None], float], matrix: np.ndarray, *,
                            n_boot: int, seed: int, confidence: float = 0.95, weights: np.ndarray | None = None,
                            strata: np.ndarray | None = None) -> Agreement:
    """``statistic(matrix, weights)`` of the items with two labels or more, with a bootstrap interval
    over those items (BCa up to :data:`BCA_MAX_ITEMS` items, percentile beyond; undefined resamples
    dropped). With item ``weights`` and sample-design ``strata``, items are resampled within strata."""
    keep = _pairs(matrix) >= 2
    matrix = matrix[keep]
    weights = None if weights is None else np.asarray(weights, dtype=float)[keep]
    strata = None if strata is None else np.asarray(strata)[keep]
    n = matrix.shape[0]
    value = statistic(matrix, weights) if n else float("nan")
    if not np.isfinite(value) or n_boot == 0:
        return Agreement(value, n, None)
    replicates = np.array([statistic(matrix[rows], None if weights is None else weights[rows])
                           for batch in resample_indices(n, n_boot, seed=seed, strata=strata) for rows in batch])
    min_valid = min(100, max(1, n_boot // 2))
    if n <= BCA_MAX_ITEMS:
        jackknife = np.array([statistic(np.delete(matrix, i, axis=0), None if weights is None
                                        else np.delete(weights, i)) for i in range(n)])
        interval = bca_interval(value, replicates, jackknife, confidence=confidence, min_valid=min_valid)
    else:
        interval = percentile_interval(replicates, confidence=confidence, min_valid=min_valid)
    return Agreement(value, n, interval)
