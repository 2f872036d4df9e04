"""Judge-versus-human statistics on weighted contingency tables, vectorised over resamples.

Every statistic of a judge against the human reference (Spearman, Kendall tau-b, Cohen's kappa,
Krippendorff's alpha, ROC AUC, error rates at a threshold) depends on the cases only through the
table of counts of (human value, judge value) pairs. A bootstrap resample or a jackknife deletion
only changes those counts, so each is computed here from a batch of count tables of shape
``(batch, cells)`` at once. None of scipy, scikit-learn or krippendorff computes a statistic for
many weightings of one sample in one call, which is why this module exists; its full-sample values
are checked against those libraries in the tests and at run time (:mod:`calibrate.analysis`).

Conventions: the judge score is oriented so that higher means better (a pass is
``score >= threshold``); threshold index ``t`` passes the judge's ``t``-th smallest distinct score
and everything above it, and ``t == m`` (one past the last) fails every case.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from scipy import sparse

__all__ = ["PairedScores", "DENSE_LIMIT", "EXACT_JACKKNIFE_LIMIT"]

#: Kendall's tau-b needs the dense (human level x judge value) table; above this many cells per
#: resample it is not bootstrapped (its interval then comes from Fisher's z).
DENSE_LIMIT = 400_000
#: Up to this many occupied cells the jackknife leaves out each case exactly; above it, groups.
EXACT_JACKKNIFE_LIMIT = 2_000
JACKKNIFE_GROUPS = 200


def _one_hot(rows: np.ndarray, n_cols: int, mask: np.ndarray | None = None) -> sparse.csr_array:
    data = np.ones(rows.size) if mask is None else mask.astype(float)
    return sparse.csr_array((data, (np.arange(rows.size), rows)), shape=(rows.size, n_cols))


def _midranks(marginal: np.ndarray) -> np.ndarray:
    """Average ranks (1-based) of each distinct value given its count, per row."""
    return np.cumsum(marginal, axis=1) - (marginal - 1) / 2


def _kappa_from_confusion(conf: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Cohen's kappa of a batch of square confusion tables, with a disagreement-weight matrix."""
    total = conf.sum(axis=(1, 2))
    with np.errstate(invalid="ignore", divide="ignore"):
        observed = np.einsum("bij,ij->b", conf, weights) / total
        rows, cols = conf.sum(axis=2), conf.sum(axis=1)
        expected = np.einsum("bi,bj,ij->b", rows, cols, weights) / total**2
        return np.where(expected > 0, 1 - observed / expected, np.nan)


class PairedScores:
    """A human reference and a judge's scores on the same cases, encoded as contingency cells.

    Parameters
    ----------
    human : array_like of float
        The human reference value of each case.
    judge : array_like of float
        The judge's score of each case, oriented so that higher means better.
    human_pass : float
        A human value ``>= human_pass`` is a pass.
    levels : sequence of float, optional
        The metric's scale levels (binary, ordinal). When given and every judge score lies on them,
        kappa and alpha are defined on the scale.

    Examples
    --------
    >>> p = PairedScores([0, 1, 1, 0, 1], [0.1, 0.9, 0.6, 0.7, 0.8], human_pass=1)
    >>> float(p.spearman(p.full)[0]) == float(round(p.spearman(p.full)[0], 12))
    True
    >>> p.m
    5
    """

    def __init__(self, human, judge, *, human_pass: float, levels=None):
        human = np.asarray(human, dtype=float)
        judge = np.asarray(judge, dtype=float)
        if human.shape != judge.shape or human.ndim != 1:
            raise ValueError("human and judge must be 1-d arrays of the same length")
        self.n = human.size
        self.h_values, h_index = np.unique(human, return_inverse=True)
        self.j_values, j_index = np.unique(judge, return_inverse=True)
        self.K, self.m = self.h_values.size, self.j_values.size
        codes, self.case_cell = np.unique(h_index.astype(np.int64) * self.m + j_index, return_inverse=True)
        self.cell_h, self.cell_j = codes // self.m, codes % self.m
        self.C = codes.size
        self.full = np.bincount(self.case_cell, minlength=self.C)[None, :].astype(float)
        self.h_pass = self.h_values >= human_pass
        cell_pass = self.h_pass[self.cell_h]
        self._to_h = _one_hot(self.cell_h, self.K)
        self._to_j = _one_hot(self.cell_j, self.m)
        self._to_j_pass = _one_hot(self.cell_j, self.m, cell_pass)
        self._to_j_fail = _one_hot(self.cell_j, self.m, ~cell_pass)
        self.levels = None if levels is None else np.asarray(sorted(levels), dtype=float)
        self.on_scale = bool(self.levels is not None and np.isin(self.j_values, self.levels).all()
                             and np.isin(self.h_values, self.levels).all())
        if self.on_scale:
            L = self.levels.size
            self._conf_code = (np.searchsorted(self.levels, self.h_values[self.cell_h]) * L
                               + np.searchsorted(self.levels, self.j_values[self.cell_j]))

    # ----------------------------------------------------------------- tables
    def tables(self, universe_cell: np.ndarray, indices: np.ndarray) -> np.ndarray:
        """Count tables ``(batch, C)`` of resamples given as indices into a case universe.

        ``universe_cell[i]`` is the cell of universe case ``i``, or ``C`` when the judge did not
        rate it (such cases fall into a discarded extra cell).
        """
        batch = indices.shape[0]
        codes = universe_cell[indices] + (np.arange(batch, dtype=np.int64) * (self.C + 1))[:, None]
        counts = np.bincount(codes.ravel(), minlength=batch * (self.C + 1))
        return counts.reshape(batch, self.C + 1)[:, : self.C].astype(float)

    def jackknife_tables(self, *, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """Leave-one-out tables and how many cases each stands for.

        Cases in one cell give the same leave-one-out table, so each occupied cell is left out once
        and weighted by its count. With more than ``EXACT_JACKKNIFE_LIMIT`` cells, cases are split
        into ``JACKKNIFE_GROUPS`` random groups and each group is left out (a grouped jackknife,
        which estimates the same acceleration).
        """
        if self.C <= EXACT_JACKKNIFE_LIMIT:
            return self.full - np.eye(self.C), self.full[0].copy()
        groups = np.random.default_rng([seed, 2**31 - 1]).permutation(self.n) % JACKKNIFE_GROUPS
        left_out = np.zeros((JACKKNIFE_GROUPS, self.C))
        np.add.at(left_out, (groups, self.case_cell), 1.0)
        return self.full - left_out, np.ones(JACKKNIFE_GROUPS)

    # -------------------------------------------------------------- marginals
    def pass_fail_by_score(self, T: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Counts of human passes and human fails at each distinct judge score, ``(batch, m)`` each."""
        return np.asarray(T @ self._to_j_pass), np.asarray(T @ self._to_j_fail)

    # ------------------------------------------------------------- statistics
    def spearman(self, T: np.ndarray) -> np.ndarray:
        """Spearman's rho with midranks for ties (scipy.stats.spearmanr's definition)."""
        hm, jm = np.asarray(T @ self._to_h), np.asarray(T @ self._to_j)
        rh, rj = _midranks(hm), _midranks(jm)
        n = T.sum(axis=1)
        mean = (n + 1) / 2
        cross = np.einsum("bc,bc,bc->b", T, rh[:, self.cell_h], rj[:, self.cell_j])
        var_h = np.einsum("bk,bk->b", hm, rh**2) / n - mean**2
        var_j = np.einsum("bk,bk->b", jm, rj**2) / n - mean**2
        with np.errstate(invalid="ignore", divide="ignore"):
            rho = (cross / n - mean**2) / np.sqrt(var_h * var_j)
        return np.where((var_h > 1e-12 * mean**2) & (var_j > 1e-12 * mean**2), np.clip(rho, -1, 1), np.nan)

    @property
    def kendall_feasible(self) -> bool:
        return self.K * self.m <= DENSE_LIMIT

    def kendall(self, T: np.ndarray) -> np.ndarray:
        """Kendall's tau-b (scipy.stats.kendalltau's default) from the dense table."""
        out = np.empty(T.shape[0])
        step = max(1, DENSE_LIMIT * 8 // (self.K * self.m))
        for start in range(0, T.shape[0], step):
            out[start:start + step] = self._kendall_dense(T[start:start + step])
        return out

    def _kendall_dense(self, T: np.ndarray) -> np.ndarray:
        b = T.shape[0]
        dense = np.zeros((b, self.K * self.m))
        dense[:, self.cell_h * self.m + self.cell_j] = T
        dense = dense.reshape(b, self.K, self.m)
        below = np.cumsum(dense, axis=2) - dense           # same human level, lower judge score
        rows = dense.sum(axis=2, keepdims=True)
        above = rows - below - dense                       # same human level, higher judge score
        # for a case at (k, j): pairs with a lower human level and lower / higher judge score
        lower_lower = np.cumsum(below, axis=1) - below
        lower_higher = np.cumsum(above, axis=1) - above
        s = np.einsum("bkj,bkj->b", dense, lower_lower - lower_higher)
        n = T.sum(axis=1)
        cols = dense.sum(axis=1)
        n0 = n * (n - 1) / 2
        n1 = (rows[..., 0] * (rows[..., 0] - 1) / 2).sum(axis=1)
        n2 = (cols * (cols - 1) / 2).sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            tau = s / np.sqrt((n0 - n1) * (n0 - n2))
        return np.where((n0 - n1 > 0) & (n0 - n2 > 0), np.clip(tau, -1, 1), np.nan)

    def auc(self, T: np.ndarray) -> np.ndarray:
        """ROC AUC of the judge score for the human pass (ties count one half)."""
        passes, fails = self.pass_fail_by_score(T)
        fails_below = np.cumsum(fails, axis=1) - fails
        with np.errstate(invalid="ignore", divide="ignore"):
            auc = (np.einsum("bj,bj->b", passes, fails_below + fails / 2)
                   / (passes.sum(axis=1) * fails.sum(axis=1)))
        return auc

    def kappa(self, T: np.ndarray, weights: Literal["none", "quadratic"] = "none") -> np.ndarray:
        """Cohen's kappa on the metric's scale (quadratic weights use level positions)."""
        L = self.levels.size
        conf = np.zeros((T.shape[0], L * L))
        conf[:, self._conf_code] = T
        i, j = np.indices((L, L))
        w = (i != j).astype(float) if weights == "none" else (i - j) ** 2 / max(1, (L - 1) ** 2)
        return _kappa_from_confusion(conf.reshape(-1, L, L), w)

    def alpha(self, T: np.ndarray, level: Literal["nominal", "ordinal", "interval"]) -> np.ndarray:
        """Krippendorff's alpha of the two raters (human reference, judge), no missing values."""
        if level == "interval":
            h, j = self.h_values[self.cell_h], self.j_values[self.cell_j]
            n_values = 2 * T.sum(axis=1)
            observed = 2 * (T @ (h - j) ** 2)                  # sum over coincidences of delta^2
            total = T @ (h + j)
            squares = T @ (h**2 + j**2)
            expected = 2 * n_values * squares - 2 * total**2   # sum over value pairs of delta^2
            with np.errstate(invalid="ignore", divide="ignore"):
                return np.where(expected > 0, 1 - (n_values - 1) * observed / expected, np.nan)
        L = self.levels.size
        conf = np.zeros((T.shape[0], L * L))
        conf[:, self._conf_code] = T
        conf = conf.reshape(-1, L, L)
        coincidence = conf + conf.transpose(0, 2, 1)
        n_c = coincidence.sum(axis=2)
        n_values = n_c.sum(axis=1)
        i, j = np.indices((L, L))
        if level == "nominal":
            delta = np.broadcast_to((i != j).astype(float), coincidence.shape)
        else:
            cum = np.cumsum(n_c, axis=1)
            lo, hi = np.minimum(i, j), np.maximum(i, j)
            between = cum[:, hi] - cum[:, lo] + n_c[:, lo]  # sum of n_g for g from lo to hi
            delta = (between - (n_c[:, i] + n_c[:, j]) / 2) ** 2
        observed = np.einsum("bij,bij->b", coincidence, delta)
        expected = np.einsum("bi,bj,bij->b", n_c, n_c, delta)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(expected > 0, 1 - (n_values - 1) * observed / expected, np.nan)

    # -------------------------------------------------------- decision rates
    def error_counts(self, T: np.ndarray) -> dict[str, np.ndarray]:
        """False passes / false fails at every threshold index ``0..m``, ``(batch, m + 1)`` each."""
        passes, fails = self.pass_fail_by_score(T)
        zero = np.zeros((T.shape[0], 1))
        false_fail = np.concatenate([zero, np.cumsum(passes, axis=1)], axis=1)
        fails_total = fails.sum(axis=1, keepdims=True)
        false_pass = fails_total - np.concatenate([zero, np.cumsum(fails, axis=1)], axis=1)
        return {"false_pass": false_pass, "false_fail": false_fail,
                "n_pass": passes.sum(axis=1), "n_fail": fails_total[:, 0]}

    def decision_stats(self, T: np.ndarray, t: int) -> dict[str, np.ndarray]:
        """Pass/fail agreement at threshold index ``t``: accuracy, balanced accuracy, kappa."""
        counts = self.error_counts(T)
        fp, ff = counts["false_pass"][:, t], counts["false_fail"][:, t]
        n_pass, n_fail = counts["n_pass"], counts["n_fail"]
        tp, tn = n_pass - ff, n_fail - fp
        conf = np.stack([np.stack([tn, fp], 1), np.stack([ff, tp], 1)], 1)  # rows: human fail/pass
        n = n_pass + n_fail
        with np.errstate(invalid="ignore", divide="ignore"):
            balanced = np.where((n_pass > 0) & (n_fail > 0), (tp / n_pass + tn / n_fail) / 2, np.nan)
            accuracy = (tp + tn) / n
        return {"accuracy": accuracy, "balanced_accuracy": balanced,
                "kappa": _kappa_from_confusion(conf, 1.0 - np.eye(2)),
                "n_agree": tp + tn, "n": n}
