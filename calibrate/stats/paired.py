"""Judge-versus-human statistics on weighted contingency tables, vectorised over resamples.

Every statistic of a judge against the human reference (Spearman, Kendall tau-b, Cohen's kappa,
Krippendorff's alpha, ROC AUC, error rates at a threshold) depends on the cases only through the
table of counts of (human value, judge value) pairs. A bootstrap resample or a jackknife deletion
only changes those counts, so each is computed here from a batch of count tables of shape
``(batch, cells)`` at once; the rank sums come from one fused pass per table
(:mod:`calibrate.stats.kernel`). None of scipy, scikit-learn or krippendorff computes a statistic for
many weightings of one sample in one call, which is why this module exists; its full-sample values
are checked against those libraries in the tests and at run time (:mod:`calibrate.analysis.agreement`).

Conventions: the judge score is oriented so that higher means better (a pass is
``score >= threshold``); threshold index ``t`` passes the judge's ``t``-th smallest distinct score
and everything above it, and ``t == m`` (one past the last) fails every case.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

import numpy as np

from calibrate.stats import kernel
from calibrate.stats.curves import threshold_errors

__all__ = ["EXACT_JACKKNIFE_LIMIT", "PairedScores", "Summary", "Together", "summarize_together", "together"]

#: Up to this many occupied cells the jackknife leaves out each case exactly; above it, groups.
EXACT_JACKKNIFE_LIMIT = 2_000
JACKKNIFE_GROUPS = 200


def _cell_table(T: np.ndarray | Summary) -> np.ndarray:
    """The count tables themselves (kappa and alpha read cells), without running the rank kernel."""
    table = T.T if isinstance(T, Summary) else T
    if table is None:
        raise ValueError("kappa and alpha need the cell tables: summarize tables, not case counts")
    return np.asarray(table, dtype=float)


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


@dataclass(frozen=True)
class Summary:
    """What the statistics read from a batch of count tables ``T`` ``(batch, cells)``.

    ``by_human`` ``(batch, K)`` counts each human value; ``cum_passes`` / ``cum_fails`` ``(batch, m)``
    count the human passes / fails with a judge score at most the j-th; ``sums`` holds the rank sums
    of :func:`calibrate.stats.kernel.rank_sums`.
    """

    T: np.ndarray | None
    n: np.ndarray
    by_human: np.ndarray
    cum_passes: np.ndarray
    cum_fails: np.ndarray
    sums: np.ndarray


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
    weights : array_like of float, optional
        A weight per case (its inverse inclusion probability under a sample design, scaled to mean
        1). The tables then hold sums of weights instead of counts: each case stands for ``weight``
        cases (frequency weights), and every statistic estimates its value on the population the
        sample was drawn from. ``None`` (or all ones) gives the unweighted statistics.

    Examples
    --------
    >>> p = PairedScores([0, 1, 1, 0, 1], [0.1, 0.9, 0.6, 0.7, 0.8], human_pass=1)
    >>> round(float(p.auc(p.full)[0]), 4)       # 5 of the 6 (pass, fail) pairs are ordered right
    0.8333
    >>> from calibrate.stats.bootstrap import case_counts
    >>> idx = np.array([[0, 0, 1, 2, 3]])       # a resample (indices into the cases); scipy agrees
    >>> round(float(p.spearman(p.tables(case_counts(idx, 5)))[0]), 4)
    0.5923
    >>> w = PairedScores([0, 1, 1, 0, 1], [0.1, 0.9, 0.6, 0.7, 0.8], human_pass=1, weights=[1, 1, 1, 2, 1])
    >>> round(float(w.auc(w.full)[0]), 4)       # the fail scored 0.7 counts twice: 7 of 9 pairs
    0.7778
    """

    def __init__(self, human, judge, *, human_pass: float, levels=None, weights=None):
        human = np.asarray(human, dtype=float)
        judge = np.asarray(judge, dtype=float)
        if human.shape != judge.shape or human.ndim != 1:
            raise ValueError("human and judge must be 1-d arrays of the same length")
        self.n = human.size
        self.weights = None
        if weights is not None:
            weights = np.asarray(weights, dtype=float)
            if weights.shape != human.shape or not np.all(np.isfinite(weights) & (weights > 0)):
                raise ValueError("weights must be positive and finite, one per case")
            if not np.all(weights == 1.0):
                self.weights = weights
        self.h_values, h_index = np.unique(human, return_inverse=True)
        self.j_values, j_index = np.unique(judge, return_inverse=True)
        self.K, self.m = self.h_values.size, self.j_values.size
        # cells ordered by judge score, then human value: each judge score is one contiguous run
        codes, self.case_cell = np.unique(j_index.astype(np.int64) * self.K + h_index, return_inverse=True)
        self.cell_j, self.cell_h = codes // self.K, codes % self.K
        self.C = codes.size
        self.full = np.bincount(self.case_cell, weights=self.weights, minlength=self.C)[None, :].astype(float)
        self.h_pass = self.h_values >= human_pass
        self._cell_pass = self.h_pass[self.cell_h].astype(float)
        self._cells = np.arange(self.C)
        self._run_starts = np.searchsorted(self.cell_j, np.arange(self.m + 1))  # cells of each score
        self._cell_order = np.argsort(self.case_cell, kind="stable")
        self._cell_starts = np.flatnonzero(np.r_[True, np.diff(self.case_cell[self._cell_order]) != 0])
        self._scale = None if self.weights is None else np.ascontiguousarray(self.weights[self._cell_order])
        self.levels = None if levels is None else np.asarray(sorted(levels), dtype=float)
        self.on_scale = bool(
            self.levels is not None
            and np.isin(self.j_values, self.levels).all()
            and np.isin(self.h_values, self.levels).all()
        )
        if self.on_scale:
            L = self.levels.size
            self._conf_code = np.searchsorted(self.levels, self.h_values[self.cell_h]) * L + np.searchsorted(
                self.levels, self.j_values[self.cell_j]
            )
        self._full_summary: Summary | None = None

    # ----------------------------------------------------------------- tables
    def tables(self, case_counts: np.ndarray, positions: np.ndarray | None = None) -> np.ndarray:
        """Count tables ``(batch, C)`` from how often each case appears in each resample.

        Parameters
        ----------
        case_counts : ndarray, shape (batch, n_universe)
            Resample counts of the cases of a universe (see :func:`calibrate.stats.bootstrap.case_counts`).
        positions : ndarray of int, optional
            Where this object's cases sit in that universe (default: the universe is these cases).
        """
        positions = np.arange(self.n) if positions is None else np.asarray(positions)
        return kernel.cell_tables(case_counts, positions[self._cell_order], self._cell_starts, self._scale)

    def jackknife(
        self, *, seed: int = 0, tables: bool = False, case_groups: bool = False
    ) -> tuple[Summary, np.ndarray]:
        """Leave-one-out summaries and how many cases each stands for.

        Cases in one cell (and of one weight) give the same leave-one-out table, so each occupied cell
        is left out once per weight and counted as often as it occurs. With more than
        ``EXACT_JACKKNIFE_LIMIT`` of those, or with ``case_groups=True``, cases are split into (up to)
        ``JACKKNIFE_GROUPS`` random groups and each group is left out (a grouped jackknife, which
        estimates the same acceleration). The groups depend only on the number of cases and the seed,
        so two judges scored on the same cases leave out the same cases: ``case_groups=True`` gives
        a paired jackknife. ``tables=True`` keeps the cell tables in the summary (kappa and alpha
        read them). All the summaries at once: :meth:`jackknife_batches` gives them a few at a time.
        """
        batches, weights = self.jackknife_batches(seed=seed, tables=tables, case_groups=case_groups)
        return next(batches), weights

    def jackknife_batches(
        self, *, seed: int = 0, tables: bool = False, case_groups: bool = False, rows: int = JACKKNIFE_GROUPS
    ) -> tuple[Iterator[Summary], np.ndarray]:
        """:meth:`jackknife`'s summaries in batches of at most ``rows`` leave-out samples of a grouped
        jackknife (the exact one, of at most ``EXACT_JACKKNIFE_LIMIT`` cells, comes in one batch), and how
        many cases each sample stands for. A grouped jackknife of ``n`` cases reads a ``(groups, n)``
        array of counts and gives running sums ``(groups, scores)``: a batch holds ``rows`` of each.

        Examples
        --------
        >>> rng = np.random.default_rng(0)
        >>> p = PairedScores(rng.integers(0, 4, 3000), rng.random(3000), human_pass=2)
        >>> batches, weights = p.jackknife_batches(rows=64)
        >>> [b.n.size for b in batches], weights.size
        ([64, 64, 64, 8], 200)
        """
        if not case_groups:
            if self.weights is None and self.C <= EXACT_JACKKNIFE_LIMIT:
                return iter([self.summarize(self.full - np.eye(self.C))]), self.full[0].copy()
            if self.weights is not None:
                units, inverse = np.unique(
                    np.stack([self.case_cell.astype(float), self.weights]), axis=1, return_inverse=True
                )
                if units.shape[1] <= EXACT_JACKKNIFE_LIMIT:
                    left_out = np.zeros((units.shape[1], self.C))
                    left_out[np.arange(units.shape[1]), units[0].astype(np.int64)] = units[1]
                    return (
                        iter([self.summarize(self.full - left_out)]),
                        np.bincount(inverse.ravel(), minlength=units.shape[1]).astype(float),
                    )
        n_groups = min(self.n, JACKKNIFE_GROUPS)
        return self._grouped_jackknife(seed, tables, n_groups, max(1, rows)), np.ones(n_groups)

    def _grouped_jackknife(self, seed: int, tables: bool, n_groups: int, rows: int) -> Iterator[Summary]:
        groups = np.random.default_rng([seed, 2**31 - 1]).permutation(self.n) % n_groups
        # the cases of each group, group by group: a batch of groups leaves out one run of them
        order = np.argsort(groups, kind="stable")
        bounds = np.searchsorted(groups[order], np.arange(n_groups + 1))
        # weighted sums of kept counts are not whole: accumulated in float64, as the bootstrap's are
        dtype = np.float32 if self.weights is None else np.float64
        for first in range(0, n_groups, rows):
            last = min(n_groups, first + rows)
            kept = np.ones((last - first, self.n), dtype=dtype)
            left_out = order[bounds[first] : bounds[last]]
            kept[groups[left_out] - first, left_out] = 0.0
            yield self.summarize(self.tables(kept)) if tables else self.summarize_counts(kept)

    # -------------------------------------------------------------- marginals
    def summarize(self, T: np.ndarray | Summary) -> Summary:
        """The marginals, running sums and rank sums every statistic reads, once per batch."""
        if isinstance(T, Summary):
            return T
        if T is self.full:  # read by every figure of the full sample: summarized once
            if self._full_summary is None:
                self._full_summary = self._summary(self.full, self._cells, self._cells, self.full)
            return self._full_summary
        T = np.ascontiguousarray(T)
        return self._summary(T, self._cells, self._cells, T)

    def cells_of(self, positions: np.ndarray | None = None) -> tuple:
        """This table's cells as :func:`calibrate.stats.kernel.layout` takes them, reading the case counts
        at ``positions`` (where this object's cases sit in the universe; default: the universe is these
        cases)."""
        positions = np.arange(self.n) if positions is None else np.asarray(positions)
        return (
            positions[self._cell_order],
            self._cell_starts,
            self.cell_h,
            self._cell_pass,
            self._run_starts,
            self.K,
            self._scale,
        )

    def summarize_counts(self, case_counts: np.ndarray, positions: np.ndarray | None = None) -> Summary:
        """:meth:`summarize` straight from per-case resample counts (as :meth:`tables` takes them),
        without materialising the cell tables (``Summary.T`` is then ``None``)."""
        return summarize_together([self], case_counts, [positions])[0]

    def _summary(
        self,
        values: np.ndarray,
        gather: np.ndarray,
        starts: np.ndarray,
        T: np.ndarray | None,
        scale: np.ndarray | None = None,
    ) -> Summary:
        by_human, cum_passes, cum_fails, sums = kernel.rank_sums(
            values, gather, starts, self.cell_h, self._run_starts, self.K, self._cell_pass, scale
        )
        return Summary(
            T=T, n=by_human.sum(axis=1), by_human=by_human, cum_passes=cum_passes, cum_fails=cum_fails, sums=sums
        )

    # ------------------------------------------------------------- statistics
    def spearman(self, T: np.ndarray | Summary) -> np.ndarray:
        """Spearman's rho with midranks for ties (scipy.stats.spearmanr's definition)."""
        s = self.summarize(T)
        rh = _midranks(s.by_human)
        mean = (s.n + 1) / 2
        var_h = np.einsum("bk,bk->b", s.by_human, rh**2) / s.n - mean**2
        var_j = s.sums[:, kernel.SCORE_RANK2] / s.n - mean**2
        with np.errstate(invalid="ignore", divide="ignore"):
            rho = (s.sums[:, kernel.CROSS] / s.n - mean**2) / np.sqrt(var_h * var_j)
        return np.where((var_h > 1e-12 * mean**2) & (var_j > 1e-12 * mean**2), np.clip(rho, -1, 1), np.nan)

    def kendall(self, T: np.ndarray | Summary) -> np.ndarray:
        """Kendall's tau-b (scipy.stats.kendalltau's default)."""
        s = self.summarize(T)
        n0 = s.n * (s.n - 1) / 2
        n1 = (s.by_human * (s.by_human - 1) / 2).sum(axis=1)
        n2 = s.sums[:, kernel.SCORE_TIES]
        with np.errstate(invalid="ignore", divide="ignore"):
            tau = s.sums[:, kernel.CONCORDANCE] / np.sqrt((n0 - n1) * (n0 - n2))
        return np.where((n0 - n1 > 0) & (n0 - n2 > 0), np.clip(tau, -1, 1), np.nan)

    def auc(self, T: np.ndarray | Summary) -> np.ndarray:
        """ROC AUC of the judge score for the human pass (ties count one half)."""
        s = self.summarize(T)
        with np.errstate(invalid="ignore", divide="ignore"):
            return s.sums[:, kernel.AUC_NUMERATOR] / (s.cum_passes[:, -1].astype(float) * s.cum_fails[:, -1])

    def kappa(self, T: np.ndarray, weights: Literal["none", "quadratic"] = "none") -> np.ndarray:
        """Cohen's kappa on the metric's scale (quadratic weights use level positions)."""
        T = _cell_table(T)
        L = self.levels.size
        conf = np.zeros((T.shape[0], L * L))
        conf[:, self._conf_code] = T
        i, j = np.indices((L, L))
        w = (i != j).astype(float) if weights == "none" else (i - j) ** 2 / max(1, (L - 1) ** 2)
        return _kappa_from_confusion(conf.reshape(-1, L, L), w)

    def alpha(self, T: np.ndarray, level: Literal["nominal", "ordinal", "interval"]) -> np.ndarray:
        """Krippendorff's alpha of the two raters (human reference, judge), no missing values."""
        T = _cell_table(T)
        if level == "interval":
            h, j = self.h_values[self.cell_h], self.j_values[self.cell_j]
            n_values = 2 * T.sum(axis=1)
            observed = 2 * (T @ (h - j) ** 2)  # sum over coincidences of delta^2
            total = T @ (h + j)
            squares = T @ (h**2 + j**2)
            expected = 2 * n_values * squares - 2 * total**2  # sum over value pairs of delta^2
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
    def error_counts(self, T: np.ndarray | Summary) -> dict[str, np.ndarray]:
        """False passes / false fails at every threshold index ``0..m``, ``(batch, m + 1)`` each: the
        batched form of :func:`calibrate.stats.curves.error_curve` (which has the first ``m``, on one
        sample), counted by the same :func:`~calibrate.stats.curves.threshold_errors`."""
        s = self.summarize(T)
        false_pass, false_fail = threshold_errors(s.cum_passes, s.cum_fails)
        return {
            "false_pass": false_pass,
            "false_fail": false_fail,
            "n_pass": s.cum_passes[:, -1].astype(float),
            "n_fail": s.cum_fails[:, -1].astype(float),
        }

    def decision_stats(self, T: np.ndarray | Summary, t: int) -> dict[str, np.ndarray]:
        """Pass/fail agreement at threshold index ``t``: accuracy, balanced accuracy, kappa, and the
        errors they rest on (``false_pass``, ``false_fail`` of ``n_fail``, ``n_pass``), counted as
        :meth:`error_counts` counts them."""
        s = self.summarize(T)
        n_pass, n_fail = s.cum_passes[:, -1].astype(float), s.cum_fails[:, -1].astype(float)
        fp, ff = threshold_errors(s.cum_passes, s.cum_fails, int(t))
        tp, tn = n_pass - ff, n_fail - fp
        conf = np.stack([np.stack([tn, fp], 1), np.stack([ff, tp], 1)], 1)  # rows: human fail/pass
        n = n_pass + n_fail
        with np.errstate(invalid="ignore", divide="ignore"):
            balanced = np.where((n_pass > 0) & (n_fail > 0), (tp / n_pass + tn / n_fail) / 2, np.nan)
            accuracy = (tp + tn) / n
        return {
            "accuracy": accuracy,
            "balanced_accuracy": balanced,
            "kappa": _kappa_from_confusion(conf, 1.0 - np.eye(2)),
            "n_agree": tp + tn,
            "n": n,
            "false_pass": fp,
            "false_fail": ff,
            "n_pass": n_pass,
            "n_fail": n_fail,
        }


@dataclass(frozen=True)
class Together:
    """Several tables read on the same resamples, laid out for the kernels once (for a whole bootstrap):
    :meth:`summarize` gives each table's :class:`Summary` of a batch of case counts. Made by
    :func:`together`."""

    lay: kernel.Layout
    #: the layout of the tables whose cell tables are kept, and their indices among all
    part: kernel.Layout | None
    wanted: tuple[int, ...]

    def summarize(self, case_counts: np.ndarray) -> list[Summary]:
        """Every table's summary of the resamples ``case_counts`` ``(batch, n_universe)``, in one kernel
        launch, and the kept cell tables in one more."""
        lay = self.lay
        if lay.scale is not None:  # weighted sums of counts are not whole: accumulated in float64
            case_counts = case_counts.astype(np.float64, copy=False)
        by_human, cum_passes, cum_fails, sums = kernel.rank_sums_many(case_counts, lay)
        cell_tables: dict[int, np.ndarray] = {}
        part = self.part
        if part is not None:
            found = kernel.cell_tables(case_counts, part.gather, part.starts, part.scale)
            cell_tables = {k: found[:, part.cell_at[i] : part.cell_at[i + 1]] for i, k in enumerate(self.wanted)}
        out = []
        for k in range(lay.n_tables):
            levels = by_human[:, lay.level_at[k] : lay.level_at[k + 1]]
            scores = slice(lay.score_at[k], lay.score_at[k + 1])
            out.append(
                Summary(
                    T=cell_tables.get(k),
                    n=levels.sum(axis=1),
                    by_human=levels,
                    cum_passes=cum_passes[:, scores],
                    cum_fails=cum_fails[:, scores],
                    sums=sums[:, k, :],
                )
            )
        return out


def together(
    pairs: list[PairedScores], positions: list[np.ndarray | None], *, tables: list[bool] | None = None
) -> Together:
    """The tables of ``pairs``, whose cases sit at ``positions`` in a universe, laid out once to be
    summarized on many batches of resamples (:meth:`Together.summarize`); ``tables[k]``: keep table
    ``k``'s cell tables (kappa and alpha read them). See :func:`summarize_together`."""
    cells = [p.cells_of(pos) for p, pos in zip(pairs, positions)]
    wanted = tuple(k for k in range(len(pairs)) if tables is not None and tables[k])
    part = kernel.layout([cells[k] for k in wanted]) if wanted else None
    return Together(kernel.layout(cells), part, wanted)


def summarize_together(
    pairs: list[PairedScores],
    case_counts: np.ndarray,
    positions: list[np.ndarray | None],
    *,
    tables: list[bool] | None = None,
) -> list[Summary]:
    """:meth:`PairedScores.summarize_counts` of several tables on the same resamples, in one kernel launch
    (and their cell tables, where ``tables[k]`` asks for them, in one more): every judge of every slice of
    a metric at once. A bootstrap lays the tables out once with :func:`together` and summarizes each
    batch with :meth:`Together.summarize`; this does both for one batch.

    Parameters
    ----------
    pairs : list of PairedScores
    case_counts : ndarray, shape (batch, n_universe)
        Resample counts of the cases of a universe (the slices' universes side by side).
    positions : list of ndarray
        Where each table's cases sit in that universe.
    tables : list of bool, optional
        Whose summaries keep their cell tables (kappa and alpha read them).

    Examples
    --------
    >>> from calibrate.stats.bootstrap import case_counts
    >>> a = PairedScores([0, 1, 1, 0], [0.2, 0.9, 0.4, 0.3], human_pass=1)
    >>> b = PairedScores([1, 0, 1], [3, 1, 2], human_pass=1, levels=[0, 1, 2, 3])   # cells by score: 1, 2, 3
    >>> counts = case_counts(np.array([[0, 0, 1, 2, 4, 5, 6], [1, 2, 3, 3, 4, 4, 6]]), 7)
    >>> sa, sb = summarize_together([a, b], counts, [np.arange(4), np.arange(4, 7)], tables=[False, True])
    >>> bool(np.array_equal(sa.sums, a.summarize_counts(counts, np.arange(4)).sums)), sb.T.tolist()
    (True, [[1.0, 1.0, 1.0], [0.0, 1.0, 2.0]])
    """
    return together(pairs, positions, tables=tables).summarize(case_counts)
