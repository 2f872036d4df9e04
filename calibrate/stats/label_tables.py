"""Agreement between annotators on the counts of label patterns, vectorised over resamples.

Every statistic of annotator agreement (percent agreement, Fleiss' kappa, Cohen's kappa of two
annotators, Krippendorff's alpha) depends on the items only through how many items (or how much item
weight) carry each distinct row of labels, its *pattern*: with three annotators labelling 0/1, at most
26 patterns however many items. A bootstrap resample or a leave-one-out deletion only changes those
counts, so each statistic is computed here from a batch of pattern-count tables ``(batch, patterns)``
at once; the tables are gathered from per-item resample counts by the kernel that gathers the judges'
contingency cells (:func:`calibrate.stats.kernel.cell_tables`). Calling scikit-learn or krippendorff
once per resample did the same work a thousand times over; their full-sample values are checked
against this engine's on every run (:func:`calibrate.stats.annotators.agreement_intervals`).

The statistics reproduce what those references compute on the resampled items themselves: Cohen's
kappa as ``sklearn.metrics.cohen_kappa_score`` without ``labels`` (quadratic weights by the position
among the categories present in the resample), alpha as ``krippendorff.alpha`` (with item weights, the
weighted coincidences), and every statistic undefined (NaN) where a resample holds fewer than two
categories, as the references are.
"""

from __future__ import annotations

from functools import partial
from typing import Literal

import numpy as np

from calibrate.stats import kernel

__all__ = ["STATISTICS", "LabelTables", "multiply_labelled"]

#: The statistics :meth:`LabelTables.statistic` computes.
STATISTICS = (
    "percent_agreement",
    "fleiss_kappa",
    "cohen_kappa",
    "cohen_kappa_quadratic",
    "alpha_nominal",
    "alpha_ordinal",
    "alpha_interval",
)
Statistic = Literal[
    "percent_agreement",
    "fleiss_kappa",
    "cohen_kappa",
    "cohen_kappa_quadratic",
    "alpha_nominal",
    "alpha_ordinal",
    "alpha_interval",
]
#: Values held at once while computing a statistic (rows x patterns or categories squared): bounds memory.
ROW_BUDGET = 4_000_000


def multiply_labelled(matrix: np.ndarray) -> np.ndarray:
    """Which items (rows) carry two labels or more: the only ones agreement can be measured on.

    >>> multiply_labelled(np.array([[1, 0], [1, np.nan]])).tolist()
    [True, False]
    """
    return np.sum(~np.isnan(np.asarray(matrix, dtype=float)), axis=1) >= 2


class LabelTables:
    """A label matrix (items x annotators, NaN where an annotator gave no label) as counts of its
    distinct rows, and agreement statistics of any reweighting of its items.

    Parameters
    ----------
    matrix : array_like, shape (items, annotators)
        Labels; every item must carry two labels or more (:func:`multiply_labelled`).
    weights : array_like, optional
        A weight per item (a sample design's inverse inclusion probability): an item of weight 2 counts
        as two items.

    Examples
    --------
    >>> t = LabelTables([[1, 1], [0, 0], [1, 0], [0, 0]])
    >>> t.n_patterns, t.full.tolist()                        # (0, 0) twice, (1, 0) and (1, 1) once
    (3, [[2.0, 1.0, 1.0]])
    >>> float(t.statistic("percent_agreement", t.full)[0]), float(t.statistic("cohen_kappa", t.full)[0])
    (0.75, 0.5)
    >>> t.statistic("cohen_kappa", np.array([[4.0, 0.0, 0.0]])).tolist()   # one category only: undefined
    [nan]
    """

    def __init__(self, matrix, weights=None):
        matrix = np.asarray(matrix, dtype=float)
        if matrix.ndim != 2:
            raise ValueError(f"a label matrix has two dimensions (items x annotators), not {matrix.ndim}")
        if not multiply_labelled(matrix).all():
            raise ValueError("every item of a label matrix must carry two labels or more")
        self.matrix = matrix
        self.n, self.n_annotators = matrix.shape
        self.weights = None
        if weights is not None:
            weights = np.asarray(weights, dtype=float)
            if weights.shape != (self.n,) or not np.all(np.isfinite(weights) & (weights > 0)):
                raise ValueError("weights must be positive and finite, one per item")
            self.weights = weights
        present = ~np.isnan(matrix)
        self.values = np.unique(matrix[present])
        codes = np.full(matrix.shape, -1, dtype=np.int64)
        codes[present] = np.searchsorted(self.values, matrix[present])
        if self.n:
            self.patterns, inverse = np.unique(codes, axis=0, return_inverse=True)
        else:
            self.patterns, inverse = codes, np.zeros(0, dtype=np.int64)
        self.item_pattern = np.asarray(inverse).reshape(-1)
        self.n_patterns = self.patterns.shape[0]
        V = self.values.size
        # how many labels of each value each pattern holds, and its number of labels
        self.value_counts = np.zeros((self.n_patterns, V))
        for column in self.patterns.T:
            rows = np.flatnonzero(column >= 0)
            np.add.at(self.value_counts, (rows, column[rows]), 1.0)
        self.m = self.value_counts.sum(axis=1)
        self._order = np.argsort(self.item_pattern, kind="stable")
        self._starts = (
            np.flatnonzero(np.r_[True, np.diff(self.item_pattern[self._order]) != 0])
            if self.n
            else np.zeros(0, dtype=np.int64)
        )
        self._scale = None if self.weights is None else np.ascontiguousarray(self.weights[self._order])
        self.full = np.bincount(self.item_pattern, weights=self.weights, minlength=self.n_patterns)[None, :].astype(
            float
        )

    # ----------------------------------------------------------------- tables
    def tables(self, case_counts: np.ndarray) -> np.ndarray:
        """Pattern-count tables ``(batch, patterns)`` from how often each item appears in each resample
        (:func:`calibrate.stats.bootstrap.case_counts`), weighted by the items' weights."""
        if self._scale is not None:  # weighted sums of counts are not whole: accumulated in float64
            case_counts = case_counts.astype(np.float64, copy=False)
        return kernel.cell_tables(case_counts, self._order, self._starts, self._scale).astype(float, copy=False)

    def jackknife(self) -> np.ndarray:
        """The tables with each item left out in turn, ``(items, patterns)``."""
        out = np.repeat(self.full, self.n, axis=0)
        out[np.arange(self.n), self.item_pattern] -= 1.0 if self.weights is None else self.weights
        return out

    # ------------------------------------------------------------- statistics
    def statistic(self, name: Statistic, T: np.ndarray, *, n_items: int | None = None) -> np.ndarray:
        """Statistic ``name`` (one of :data:`STATISTICS`) of each row of ``T``, NaN where undefined.
        ``n_items``: how many items each row counts (default: the tables' own number; a leave-one-out
        table one fewer), for Cohen's kappa, which scikit-learn leaves undefined on fewer than two."""
        if name not in STATISTICS:
            raise ValueError(f"statistic {name!r} is not one of {', '.join(STATISTICS)}")
        if name.startswith("cohen") and self.n_annotators != 2:
            raise ValueError(f"Cohen's kappa compares two annotators, not {self.n_annotators}")
        T = np.atleast_2d(np.asarray(T, dtype=float))
        if not self.values.size:  # no label at all: nothing agrees or disagrees
            return np.full(T.shape[0], np.nan)
        width = max(self.n_patterns, self.values.size**2 if name != "alpha_interval" else self.values.size, 1)
        step = max(1, ROW_BUDGET // width)
        compute = {
            "percent_agreement": self._percent_agreement,
            "fleiss_kappa": self._fleiss_kappa,
            "cohen_kappa": self._cohen_kappa,
            "cohen_kappa_quadratic": partial(self._cohen_kappa, quadratic=True),
            "alpha_nominal": partial(self._alpha, level="nominal"),
            "alpha_ordinal": partial(self._alpha, level="ordinal"),
            "alpha_interval": partial(self._alpha, level="interval"),
        }[name]
        if name.startswith("cohen") and (self.n if n_items is None else n_items) < 2:
            return np.full(T.shape[0], np.nan)
        with np.errstate(invalid="ignore", divide="ignore"):
            return (
                np.concatenate([compute(T[i : i + step]) for i in range(0, T.shape[0], step)])
                if T.shape[0]
                else np.zeros(0)
            )

    def _by_value(self, T: np.ndarray) -> np.ndarray:
        """Labels of each value per row, ``(batch, values)``."""
        return T @ self.value_counts

    def _percent_agreement(self, T: np.ndarray) -> np.ndarray:
        counts, m = self.value_counts, self.m
        share = np.sum(counts * (counts - 1), axis=1) / (m * (m - 1))  # of each pattern's pairs that agree
        return (T @ share) / T.sum(axis=1)

    def _fleiss_kappa(self, T: np.ndarray) -> np.ndarray:
        observed = self._percent_agreement(T)
        by_value = self._by_value(T)
        shares = by_value / by_value.sum(axis=1, keepdims=True)
        expected = np.sum(shares**2, axis=1)
        return np.where(np.sum(by_value > 0, axis=1) >= 2, (observed - expected) / (1 - expected), np.nan)

    def _cohen_kappa(self, T: np.ndarray, quadratic: bool = False) -> np.ndarray:
        V = self.values.size
        conf = np.zeros((T.shape[0], V * V))
        conf[:, self.patterns[:, 0] * V + self.patterns[:, 1]] = T  # distinct patterns: distinct cells
        conf = conf.reshape(-1, V, V)
        rows, cols = conf.sum(axis=2), conf.sum(axis=1)  # the first annotator's labels, the second's
        present = (rows + cols) > 0
        if quadratic:  # scikit-learn's weights: squared distances between positions of the present categories
            position = np.cumsum(present, axis=1) - 1.0
            w = (position[:, :, None] - position[:, None, :]) ** 2
        else:
            w = np.broadcast_to(1.0 - np.eye(V), conf.shape)
        observed = np.einsum("bij,bij->b", w, conf)
        expected = np.einsum("bij,bi,bj->b", w, cols, rows) / rows.sum(axis=1)
        return np.where((present.sum(axis=1) >= 2) & (expected > 0), 1 - observed / expected, np.nan)

    def _alpha(self, T: np.ndarray, level: str) -> np.ndarray:
        counts, m = self.value_counts, self.m
        defined = np.sum(self._by_value(T) > 0, axis=1) >= 2
        if level == "interval":  # in closed form: the coincidences' squared differences from sums
            s1, s2 = counts @ self.values, counts @ self.values**2
            observed = T @ ((2 * m * s2 - 2 * s1**2) / (m - 1))
            n, n1, n2 = T @ m, T @ s1, T @ s2
            expected = 2 * n * n2 - 2 * n1**2
            return np.where(defined & (expected > 0), 1 - (n - 1) * observed / expected, np.nan)
        V = self.values.size
        # each pattern's coincidences: (n_c n_k - [c = k] n_c) / (m - 1)
        per_pattern = (counts[:, :, None] * counts[:, None, :] - np.eye(V) * counts[:, :, None]) / (m - 1)[
            :, None, None
        ]
        coincidence = (T @ per_pattern.reshape(-1, V * V)).reshape(-1, V, V)
        n_c = coincidence.sum(axis=2)
        n = n_c.sum(axis=1)
        i, j = np.indices((V, V))
        if level == "nominal":
            delta = np.broadcast_to((i != j).astype(float), coincidence.shape)
        else:  # ordinal: the squared count of values between (halves at the ends)
            cum = np.cumsum(n_c, axis=1)
            lo, hi = np.minimum(i, j), np.maximum(i, j)
            delta = (cum[:, hi] - cum[:, lo] + n_c[:, lo] - (n_c[:, i] + n_c[:, j]) / 2) ** 2
        observed = np.einsum("bij,bij->b", coincidence, delta)
        expected = np.einsum("bi,bj,bij->b", n_c, n_c, delta)
        return np.where(defined & (expected > 0), 1 - (n - 1) * observed / expected, np.nan)
