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

Intervals: :func:`agreement_intervals` resamples the items once for several statistics and computes
each on every resample from the counts of label patterns (:mod:`calibrate.stats.label_tables`), the
full-sample value coming from the functions above and checked against that engine's.
:func:`agreement_with_interval` calls a statistic once per resample instead (any statistic: slow).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Literal, cast

import numpy as np
from numpy.typing import ArrayLike

from calibrate.base.params import Array, OneOf, checked
from calibrate.stats.bootstrap import Interval, bca_interval, case_counts, percentile_interval, resample_indices
from calibrate.stats.label_tables import LabelTables, Statistic

__all__ = [
    "BCA_MAX_ITEMS",
    "Agreement",
    "AlphaLevel",
    "agreement_intervals",
    "agreement_with_interval",
    "cohen_kappa",
    "fleiss_kappa",
    "krippendorff_alpha",
    "others_reference",
    "percent_agreement",
    "reference_value",
]

#: up to this many items the interval is BCa (measured to cover best for kappa up to n = 100; all
#: methods agree beyond), above it a percentile bootstrap, which needs no leave-one-out pass
BCA_MAX_ITEMS = 200
#: Item counts held at once while resampling (resamples x items): bounds the memory of a batch.
ROW_BUDGET = 4_000_000
#: A resample's figure this close to the estimate (relative, from 1) may be a tie with it (see
#: :func:`agreement_intervals`); distinct figures on up to BCA_MAX_ITEMS items lie much further apart.
TIE_TOLERANCE = 1e-9


def _pairs(matrix: np.ndarray) -> np.ndarray:
    return np.sum(~np.isnan(matrix), axis=1)


#: the levels of measurement of Krippendorff's alpha
AlphaLevel = Literal["nominal", "ordinal", "interval"]
#: a label matrix: items by annotators, nan where an annotator did not label the item
_MATRIX = Array("labels, items by annotators", ndim=2, missing=True, nonempty=False)
#: a weight per item
_ITEM_WEIGHTS = Array("item weights", length_of="matrix", nonnegative=True, optional=True, nonempty=False)


@checked(matrix=_MATRIX, weights=_ITEM_WEIGHTS)
def percent_agreement(matrix: ArrayLike, weights: ArrayLike | None = None) -> float:
    """The (weighted) mean over items with two labels or more of the share of their annotator pairs
    that agree.

    Parameters
    ----------
    matrix : array_like of float of shape (n_items, n_annotators)
        The labels, ``nan`` where an annotator did not label the item; items with fewer than two
        labels are left out.
    weights : array_like of float of shape (n_items,), optional
        A non-negative weight per item (an item of weight 2 counts as two items); 1 each by default.

    Returns
    -------
    float
        In [0, 1]; ``nan`` without an item of two labels.

    Examples
    --------
    >>> percent_agreement(np.array([[1, 1, np.nan], [1, 0, 0], [0, np.nan, np.nan]]))
    0.6666666666666666
    """
    matrix = np.asarray(matrix, dtype=float)
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


@checked(matrix=_MATRIX, weights=_ITEM_WEIGHTS)
def fleiss_kappa(matrix: ArrayLike, weights: ArrayLike | None = None) -> float:
    """Fleiss' kappa for a varying number of annotators per item (items with fewer than two labels
    left out); nominal categories.

    Each item's agreement is over its own pairs of labels (Fleiss 1971, for a varying number of
    annotators per item); the chance agreement is from the (weighted) shares of the categories.

    Parameters
    ----------
    matrix : array_like of float of shape (n_items, n_annotators)
        The labels, ``nan`` where an annotator did not label the item.
    weights : array_like of float of shape (n_items,), optional
        A non-negative weight per item (an item of weight 2 counts as two items); 1 each by default.

    Returns
    -------
    float
        At most 1 (every item unanimous); ``nan`` without an item of two labels, or with one category.

    Examples
    --------
    >>> m = np.array([[1, 1, 1], [0, 0, 0], [1, 0, 1], [0, 0, 1]], dtype=float)
    >>> round(fleiss_kappa(m), 4)
    0.3333
    >>> round(fleiss_kappa(m, weights=[2, 1, 1, 1]), 4)     # the first item counted twice
    0.4444
    """
    matrix = np.asarray(matrix, dtype=float)
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


def cohen_kappa(
    a: np.ndarray, b: np.ndarray, *, weights: str | None = None, sample_weight: np.ndarray | None = None
) -> float:
    """Cohen's kappa between two label vectors on the items both labelled (scikit-learn); ``weights``
    weighs disagreements (``quadratic``), ``sample_weight`` the items."""
    from sklearn.metrics import cohen_kappa_score

    both = ~np.isnan(a) & ~np.isnan(b)
    if both.sum() < 2 or np.unique(np.concatenate([a[both], b[both]])).size < 2:
        return float("nan")
    with np.errstate(divide="ignore", invalid="ignore"):
        value = cohen_kappa_score(
            a[both],
            b[both],
            weights=weights,
            sample_weight=None if sample_weight is None else np.asarray(sample_weight)[both],
        )
    return float(value)


@checked(matrix=_MATRIX, level=OneOf("nominal", "ordinal", "interval"), weights=_ITEM_WEIGHTS)
def krippendorff_alpha(matrix: ArrayLike, level: AlphaLevel, weights: ArrayLike | None = None) -> float:
    """Krippendorff's alpha at the level of measurement; missing labels allowed.

    Without weights the ``krippendorff`` package computes it (the interval level in closed form); with
    item weights, the weighted coincidence matrix here.

    Parameters
    ----------
    matrix : array_like of float of shape (n_items, n_annotators)
        The labels, ``nan`` where an annotator did not label the item; items with fewer than two
        labels carry no pair and are left out.
    level : {"nominal", "ordinal", "interval"}
        The level of measurement: which differences between two labels count, and how much.
    weights : array_like of float of shape (n_items,), optional
        A non-negative weight per item (an item of weight 2 counts as two items); 1 each by default.

    Returns
    -------
    float
        At most 1 (perfect agreement); ``nan`` without an item of two labels, or with one value.

    Examples
    --------
    >>> m = np.array([[1, 1], [0, 0], [1, 0], [0, 0]], dtype=float)
    >>> round(krippendorff_alpha(m, "nominal"), 4), round(krippendorff_alpha(m, "nominal", np.ones(4)), 4)
    (0.5333, 0.5333)
    >>> round(krippendorff_alpha(m, "interval", weights=[1, 1, 1, 2]), 4)
    0.5714
    """
    import krippendorff

    matrix = np.asarray(matrix, dtype=float)
    keep = _pairs(matrix) >= 2
    data = matrix[keep]
    if data.shape[0] < 1 or np.unique(data[~np.isnan(data)]).size < 2:
        return float("nan")
    if level == "interval":  # a closed form, linear in the labels (the package's value matrix is quadratic)
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
    counts = np.stack([np.sum(data == v, axis=1) for v in values], axis=1).astype(float)  # units x values
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
    else:  # ordinal: the squared count of values between (halves at the ends)
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


def agreement_with_interval(
    statistic: Callable[[np.ndarray, np.ndarray | None], float],
    matrix: np.ndarray,
    *,
    n_boot: int,
    seed: int,
    confidence: float = 0.95,
    weights: np.ndarray | None = None,
    strata: np.ndarray | None = None,
) -> Agreement:
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
    replicates = np.array(
        [
            statistic(matrix[rows], None if weights is None else weights[rows])
            for batch in resample_indices(n, n_boot, seed=seed, strata=strata)
            for rows in batch
        ]
    )
    min_valid = min(100, max(1, n_boot // 2))
    if n <= BCA_MAX_ITEMS:
        jackknife = np.array(
            [
                statistic(np.delete(matrix, i, axis=0), None if weights is None else np.delete(weights, i))
                for i in range(n)
            ]
        )
        interval = bca_interval(value, replicates, jackknife, confidence=confidence, min_valid=min_valid)
    else:
        interval = percentile_interval(replicates, confidence=confidence, min_valid=min_valid)
    return Agreement(value, n, interval)


def reference_value(tables: LabelTables, name: Statistic, rows: np.ndarray | None = None) -> float:
    """Statistic ``name`` of :meth:`LabelTables.statistic <calibrate.stats.label_tables.LabelTables.statistic>`
    on the tables' own items (or on the items ``rows``, a resample of them), from the reference:
    scikit-learn's ``cohen_kappa_score``, the ``krippendorff`` package (or, with item weights or at the
    interval level, the coincidence formulas above), and this module's percent agreement and Fleiss' kappa.

    Examples
    --------
    >>> t = LabelTables([[1, 1], [0, 0], [1, 0], [0, 0]])
    >>> reference_value(t, "cohen_kappa"), reference_value(t, "percent_agreement")
    (0.5, 0.75)
    >>> reference_value(t, "percent_agreement", rows=np.array([0, 0, 2]))
    0.6666666666666666
    """
    m, w = tables.matrix, tables.weights
    if rows is not None:
        m, w = m[rows], None if w is None else w[rows]
    if name.startswith("cohen_kappa"):
        return cohen_kappa(
            m[:, 0], m[:, 1], weights="quadratic" if name.endswith("quadratic") else None, sample_weight=w
        )
    if name.startswith("alpha_"):
        return krippendorff_alpha(m, cast(AlphaLevel, name.removeprefix("alpha_")), w)
    return {"percent_agreement": percent_agreement, "fleiss_kappa": fleiss_kappa}[name](m, w)


def agreement_intervals(
    statistics: Mapping[str, tuple[LabelTables, Statistic]],
    *,
    n_boot: int,
    seed: int,
    confidence: float = 0.95,
    strata: np.ndarray | None = None,
    subject: str = "annotators",
) -> dict[str, Agreement]:
    """Several agreement statistics of one set of items, each with its bootstrap interval over the items,
    all from one resample of them.

    Each statistic is computed on every resample from its tables' pattern counts (no library call per
    resample); its full-sample value comes from the reference (:func:`reference_value`), which must agree
    with the engine's (:class:`calibrate.stats.library.EngineMismatch` otherwise). Intervals are BCa up
    to :data:`BCA_MAX_ITEMS` items and percentile beyond; undefined resamples are dropped and counted.
    The same seed gives the same figures as :func:`agreement_with_interval` with the reference statistic,
    to floating-point rounding.

    Parameters
    ----------
    statistics : mapping
        ``{key: (tables, name)}``: the statistic ``name`` of ``tables``. Every tables object must hold the
        same items in the same order (a label matrix and its pass/fail reading, say).
    n_boot, seed : int
        Resamples of the items, and their seed (resample ``r`` as :func:`resample_indices` draws it).
    confidence : float
        Two-sided level of the intervals.
    strata : ndarray, optional
        A stratum per item: items are resampled within strata (a stratified sample design).
    subject : str
        What the statistics describe, for the message of a failed check.

    Returns
    -------
    dict
        ``{key: Agreement}``.

    Examples
    --------
    >>> t = LabelTables([[1, 1], [0, 0], [1, 0], [0, 0], [1, 1], [0, 1], [1, 1], [0, 0]])
    >>> found = agreement_intervals({"agreement": (t, "percent_agreement"), "kappa": (t, "cohen_kappa")},
    ...                             n_boot=500, seed=1)
    >>> found["kappa"].estimate, found["kappa"].n_items, found["kappa"].interval.method
    (0.5, 8, 'BCa bootstrap (500 resamples of cases)')
    """
    from calibrate.stats.library import check_engine

    items = {id(tables): tables for tables, _ in statistics.values()}
    sizes = {tables.n for tables in items.values()}
    if len(sizes) > 1:
        raise ValueError(f"the statistics' tables hold different numbers of items: {sorted(sizes)}")
    n = sizes.pop() if sizes else 0
    values = {key: reference_value(tables, name) if n else float("nan") for key, (tables, name) in statistics.items()}
    if n:
        engine = {key: float(tables.statistic(name, tables.full)[0]) for key, (tables, name) in statistics.items()}
        check_engine(values, engine, subject, subject="")
    out = {key: Agreement(value, n, None) for key, value in values.items()}
    wanted = [key for key, value in values.items() if np.isfinite(value)]
    if not wanted or n_boot == 0:
        return out
    replicates: dict[str, list[np.ndarray]] = {key: [] for key in wanted}
    drawn = []
    batch = int(np.clip(ROW_BUDGET // n, 1, n_boot))
    for indices in resample_indices(n, n_boot, seed=seed, batch_size=batch, strata=strata):
        counts = case_counts(indices, n)
        tables_of = {key: tables.tables(counts) for key, tables in items.items()}
        for key in wanted:
            tables, name = statistics[key]
            replicates[key].append(tables.statistic(name, tables_of[id(tables)]))
        if n <= BCA_MAX_ITEMS:
            drawn.append(indices)
    min_valid = min(100, max(1, n_boot // 2))
    jackknifed = {key: tables.jackknife() for key, tables in items.items()} if n <= BCA_MAX_ITEMS else {}
    for key in wanted:
        tables, name = statistics[key]
        boot = np.concatenate(replicates[key])
        if n <= BCA_MAX_ITEMS:
            # BCa counts the replicates equal to the estimate half: a replicate within rounding of it is
            # taken from the reference's own arithmetic, so that ties are what they always were
            near = np.flatnonzero(np.abs(boot - values[key]) <= TIE_TOLERANCE * max(1.0, abs(values[key])))
            if near.size:
                rows = np.concatenate(drawn)[near]
                boot[near] = [reference_value(tables, name, r) for r in rows]
            jackknife = tables.statistic(name, jackknifed[id(tables)], n_items=n - 1)
            interval = bca_interval(values[key], boot, jackknife, confidence=confidence, min_valid=min_valid)
        else:
            interval = percentile_interval(boot, confidence=confidence, min_valid=min_valid)
        out[key] = Agreement(values[key], n, interval)
    return out
