"""One fused pass per resample over the cells of a (human value, judge score) count table.

numpy needs a dozen separate passes (marginals, running sums, ranks, products) to get the rank
statistics of one resample; each pass is cheap, but a bootstrap of 1,000 resamples of 100,000 cases
makes them the whole cost. This numba kernel reads each resample once, keeps the running sums in
registers, and runs the resamples on every core. It computes sums of counts and ranks only; the
statistics are assembled from those sums in :mod:`calibrate.stats.paired`, whose results are checked
against scipy and scikit-learn in the tests.

Granularity: one launch computes many tables at once (:func:`rank_sums_many`: every judge of every
slice of a metric on a batch of resamples), since each launch is a rendezvous of the worker threads,
and on a busy machine a rendezvous waits for the slowest thread to be scheduled again. Launches too
small to share out (a full sample, a jackknife of a few cells) run on the calling thread alone
(:data:`SERIAL_WORK`). The threading layer is chosen in :mod:`calibrate.stats.threads`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from calibrate.stats.threads import launching, numba

__all__ = [
    "AUC_NUMERATOR",
    "CONCORDANCE",
    "CROSS",
    "N_RANK_SUMS",
    "SCORE_RANK2",
    "SCORE_TIES",
    "SERIAL_WORK",
    "Layout",
    "cell_tables",
    "layout",
    "rank_sums",
    "rank_sums_many",
]

# the columns of rank_sums' per-resample output
CROSS, SCORE_RANK2, CONCORDANCE, SCORE_TIES, AUC_NUMERATOR = range(5)
N_RANK_SUMS = 5
#: Up to this many human levels, the running sums over lower levels are updated level by level without
#: branches (fast and predictable); above it, a Fenwick tree keeps each update logarithmic.
SMALL_LEVELS = 16
#: Below this many counts read per launch (resamples x cases or cells), a kernel runs on the calling
#: thread: waking the workers would cost more than it saves.
SERIAL_WORK = 200_000


@dataclass(frozen=True)
class Layout:
    """Where each table's cells, scores and levels lie in the flat arrays :func:`rank_sums_many` reads.

    Table ``k`` gathers the columns ``gather[gather_at[k]:gather_at[k + 1]]`` of the counts; its cells are
    ``cell_at[k]:cell_at[k + 1]`` (cell ``c`` sums the gathered columns from ``starts[c]`` to the next
    cell's start, or to the end of the table's gather), each with its human value index ``cell_h`` and
    whether that value is a pass ``cell_pass``; its distinct scores are ``score_at[k]:score_at[k + 1]``
    (the columns of the running sums), the cells of its ``j``-th score ``run_starts[run_at[k] + j]`` to
    ``run_starts[run_at[k] + j + 1]`` (counted from its first cell); its human values are the columns
    ``level_at[k]:level_at[k + 1]`` of ``by_human``. ``scale`` (aligned with ``gather``) weighs each
    gathered count, or is None."""

    gather: np.ndarray
    gather_at: np.ndarray
    starts: np.ndarray
    cell_at: np.ndarray
    cell_h: np.ndarray
    cell_pass: np.ndarray
    run_starts: np.ndarray
    run_at: np.ndarray
    score_at: np.ndarray
    level_at: np.ndarray
    scale: np.ndarray | None

    @property
    def n_tables(self) -> int:
        return self.gather_at.size - 1


def layout(
    tables: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, int, np.ndarray | None]],
) -> Layout:
    """The :class:`Layout` of several tables, each given as ``(gather, starts, cell_h, cell_pass, run_starts,
    n_levels, scale)`` in its own numbering (``starts`` into its ``gather``, ``run_starts`` into its cells):
    the arguments :func:`rank_sums` takes for one table. Beside weighted tables, a table without a scale
    counts each case once (a scale of ones: the same sums).

    Examples
    --------
    >>> one = (np.array([0, 1, 2]), np.array([0, 2]), np.array([0, 1]), np.array([0.0, 1.0]), np.array([0, 1, 2]),
    ...        2, None)
    >>> lay = layout([one, one])
    >>> lay.starts.tolist(), lay.gather_at.tolist(), lay.level_at.tolist()
    ([0, 2, 3, 5], [0, 3, 6], [0, 2, 4])
    """
    weighted = any(t[6] is not None for t in tables)
    if weighted:
        tables = [t if t[6] is not None else (*t[:6], np.ones(len(t[0]))) for t in tables]
    sizes = np.array([len(t[0]) for t in tables], dtype=np.int64)
    cells = np.array([len(t[1]) for t in tables], dtype=np.int64)
    scores = np.array([len(t[4]) - 1 for t in tables], dtype=np.int64)
    levels = np.array([t[5] for t in tables], dtype=np.int64)
    gather_at = np.r_[0, np.cumsum(sizes)]

    def flat(i: int, dtype, shift=None) -> np.ndarray:
        parts = [np.asarray(t[i], dtype=dtype) + (0 if shift is None else shift[k]) for k, t in enumerate(tables)]
        return np.ascontiguousarray(np.concatenate(parts) if parts else np.zeros(0, dtype=dtype))

    return Layout(
        gather=flat(0, np.int64),
        gather_at=gather_at,
        starts=flat(1, np.int64, gather_at),
        cell_at=np.r_[0, np.cumsum(cells)],
        cell_h=flat(2, np.int64),
        cell_pass=flat(3, np.float64),
        run_starts=flat(4, np.int64),
        run_at=np.r_[0, np.cumsum(scores + 1)],
        score_at=np.r_[0, np.cumsum(scores)],
        level_at=np.r_[0, np.cumsum(levels)],
        scale=flat(6, np.float64) if weighted else None,
    )


@numba.njit(cache=True, inline="always", error_model="numpy")
def _summed(values, r, gather, first, end, scale):  # pragma: no cover - compiled
    count = 0.0
    if scale is None:
        for q in range(first, end):
            count += values[r, gather[q]]
    else:
        for q in range(first, end):
            count += values[r, gather[q]] * scale[q]
    return count


@numba.njit(cache=True, inline="always", error_model="numpy")
def _cell_count(values, r, gather, starts, c, total, scale):  # pragma: no cover - compiled
    end = starts[c + 1] if c + 1 < starts.size else total
    return _summed(values, r, gather, starts[c], end, scale)


@numba.njit(cache=True, inline="always", error_model="numpy")
def _cell_row(values, r, gather, starts, scale, out):  # pragma: no cover - compiled
    for c in range(starts.size):
        out[r, c] = _cell_count(values, r, gather, starts, c, gather.size, scale)


@numba.njit(cache=True, parallel=True, error_model="numpy")
def _cell_tables_parallel(values, gather, starts, scale):  # pragma: no cover - compiled
    out = np.zeros((values.shape[0], starts.size), dtype=values.dtype)
    for r in numba.prange(values.shape[0]):
        _cell_row(values, r, gather, starts, scale, out)
    return out


@numba.njit(cache=True, error_model="numpy")
def _cell_tables_serial(values, gather, starts, scale):  # pragma: no cover - compiled
    out = np.zeros((values.shape[0], starts.size), dtype=values.dtype)
    for r in range(values.shape[0]):
        _cell_row(values, r, gather, starts, scale, out)
    return out


def cell_tables(
    values: np.ndarray, gather: np.ndarray, starts: np.ndarray, scale: np.ndarray | None = None
) -> np.ndarray:
    """Cell counts ``(batch, cells)``: cell ``c`` sums ``values[r, gather[starts[c]:starts[c + 1]]]``,
    each term multiplied by ``scale[q]`` (a case weight, aligned with ``gather``) when a scale is given.
    Several tables' cells can be computed in one launch by concatenating their gathers (and shifting
    their starts).

    Examples
    --------
    >>> counts = np.array([[1, 0, 2], [0, 3, 1]], dtype=np.float32)
    >>> cell_tables(counts, np.array([0, 2, 1]), np.array([0, 2])).tolist()
    [[3.0, 0.0], [1.0, 3.0]]
    """
    kernel = _cell_tables_serial if values.shape[0] * gather.size < SERIAL_WORK else _cell_tables_parallel
    with launching():
        return kernel(values, gather, starts, scale)


@numba.njit(cache=True, inline="always", error_model="numpy")
def _table_cell_count(
    values, r, gather, starts, cell, not_last, g_end, scale, one_case_per_cell
):  # pragma: no cover - compiled
    """The count of one cell on resample ``r``: its one column, or the sum of its columns (the last cell's
    up to the end of the table's gather, ``g_end``)."""
    if one_case_per_cell:
        q = starts[cell]
        count = np.float64(values[r, gather[q]])
        if scale is not None:
            count *= scale[q]
        return count
    end = starts[cell + 1] if not_last else g_end
    return _summed(values, r, gather, starts[cell], end, scale)


@numba.njit(cache=True, inline="always", error_model="numpy")
def _below_level(tree, lower, level, small):  # pragma: no cover - compiled
    """The running sum over the levels below ``level``: read directly, or from the Fenwick tree."""
    if small:
        return lower[level]
    prefix = 0.0
    i = level
    while i > 0:
        prefix += tree[i]
        i -= i & (-i)
    return prefix


@numba.njit(cache=True, inline="always", error_model="numpy")
def _add_above_level(tree, lower, level, n_levels, amount, small):  # pragma: no cover - compiled
    """Add ``amount`` to the running sums of the levels above ``level``."""
    if small:  # a fixed-length loop without branches: predictable
        for above in range(n_levels):
            lower[above] += amount * (above > level)
    else:
        i = level + 1
        while i <= n_levels:
            tree[i] += amount
            i += i & (-i)


@numba.njit(cache=True, inline="always", error_model="numpy")
def _by_level(by_human, r, h0, n_levels, score_rank_by_level, concordance):  # pragma: no cover - compiled
    """The cross sum of human and judge midranks, and the concordance less each level's cases times the
    cases of the levels below it (the "all" part of the Kendall sum)."""
    cross = 0.0
    below = 0.0
    for level in range(n_levels):
        human = by_human[r, h0 + level]
        human_rank = below + (human + 1.0) / 2.0
        cross += human_rank * score_rank_by_level[level]
        concordance -= human * below
        below += human
    return cross, concordance


@numba.njit(cache=True, inline="always", error_model="numpy")
def _one_table(
    values,
    r,
    k,
    gather,
    gather_at,
    starts,
    cell_at,
    cell_h,
    cell_pass,
    run_starts,
    run_at,
    score_at,
    level_at,
    scale,
    by_human,
    cum_passes,
    cum_fails,
    sums,
):  # pragma: no cover - compiled
    """The sums of table ``k`` on resample ``r`` (see :func:`rank_sums`)."""
    g_end = gather_at[k + 1]
    c0 = cell_at[k]
    n_cells = cell_at[k + 1] - c0
    h0 = level_at[k]
    n_levels = level_at[k + 1] - h0
    m0 = score_at[k]
    n_scores = score_at[k + 1] - m0
    j0 = run_at[k]
    one_case_per_cell = g_end - gather_at[k] == n_cells
    small = n_levels <= SMALL_LEVELS
    # Kendall: a case at (level k, score j) is concordant with lower-level cases of lower scores and
    # discordant with lower-level cases of higher scores: over lower levels k' that is
    # 2 x below(k') + same_score(k') - all(k'). The running sums hold 2 x below over lower levels
    # (a Fenwick tree when there are many levels); the cases at the same score come from earlier
    # cells of the run; the "all" part is subtracted at the end, once the level totals are known.
    tree = np.zeros(n_levels + 1)
    lower = np.zeros(n_levels)
    score_rank_by_level = np.zeros(n_levels)  # sum over cases of judge midrank, per human level
    run = np.zeros(n_levels)  # the counts of the cells of the current score
    cum_score = cum_pass = cum_fail = score_rank2 = concordance = ties = auc = 0.0  # running sums over the scores
    for j in range(n_scores):
        first = run_starts[j0 + j]
        last = run_starts[j0 + j + 1]
        at_score = 0.0
        passes = 0.0
        for c in range(first, last):
            cell = c0 + c
            count = _table_cell_count(values, r, gather, starts, cell, c + 1 < n_cells, g_end, scale, one_case_per_cell)
            level = cell_h[cell]
            prefix = _below_level(tree, lower, level, small)
            concordance += count * (prefix + at_score)  # at_score: this score's lower levels so far
            at_score += count
            passes += count * cell_pass[cell]
            run[c - first] = count
        fails = at_score - passes
        score_rank = cum_score + (at_score + 1.0) / 2.0
        score_rank2 += at_score * score_rank * score_rank
        ties += at_score * (at_score - 1.0) / 2.0
        auc += passes * (cum_fail + fails / 2.0)
        for c in range(first, last):
            level = cell_h[c0 + c]
            count = run[c - first]
            score_rank_by_level[level] += count * score_rank
            by_human[r, h0 + level] += count
            _add_above_level(tree, lower, level, n_levels, 2.0 * count, small)
        cum_score += at_score
        cum_pass += passes
        cum_fail += fails
        cum_passes[r, m0 + j] = cum_pass
        cum_fails[r, m0 + j] = cum_fail
    cross, concordance = _by_level(by_human, r, h0, n_levels, score_rank_by_level, concordance)
    sums[r, k, CROSS] = cross
    sums[r, k, SCORE_RANK2] = score_rank2
    sums[r, k, CONCORDANCE] = concordance
    sums[r, k, SCORE_TIES] = ties
    sums[r, k, AUC_NUMERATOR] = auc


@numba.njit(cache=True, inline="always", error_model="numpy")
def _outputs(values, n_tables, score_at, level_at):  # pragma: no cover - compiled
    b = values.shape[0]
    # running counts of unweighted resamples are whole numbers: stored in the counts' own dtype (float32
    # halves the writes; weighted resamples pass float64 counts)
    return (
        np.zeros((b, level_at[n_tables])),
        np.zeros((b, score_at[n_tables]), dtype=values.dtype),
        np.zeros((b, score_at[n_tables]), dtype=values.dtype),
        np.zeros((b, n_tables, N_RANK_SUMS)),
    )


@numba.njit(cache=True, parallel=True, error_model="numpy")
def _rank_sums_parallel(
    values, gather, gather_at, starts, cell_at, cell_h, cell_pass, run_starts, run_at, score_at, level_at, scale
):  # pragma: no cover - compiled
    n_tables = gather_at.size - 1
    by_human, cum_passes, cum_fails, sums = _outputs(values, n_tables, score_at, level_at)
    for t in numba.prange(values.shape[0] * n_tables):
        _one_table(
            values,
            t // n_tables,
            t % n_tables,
            gather,
            gather_at,
            starts,
            cell_at,
            cell_h,
            cell_pass,
            run_starts,
            run_at,
            score_at,
            level_at,
            scale,
            by_human,
            cum_passes,
            cum_fails,
            sums,
        )
    return by_human, cum_passes, cum_fails, sums


@numba.njit(cache=True, error_model="numpy")
def _rank_sums_serial(
    values, gather, gather_at, starts, cell_at, cell_h, cell_pass, run_starts, run_at, score_at, level_at, scale
):  # pragma: no cover - compiled
    n_tables = gather_at.size - 1
    by_human, cum_passes, cum_fails, sums = _outputs(values, n_tables, score_at, level_at)
    for t in range(values.shape[0] * n_tables):
        _one_table(
            values,
            t // n_tables,
            t % n_tables,
            gather,
            gather_at,
            starts,
            cell_at,
            cell_h,
            cell_pass,
            run_starts,
            run_at,
            score_at,
            level_at,
            scale,
            by_human,
            cum_passes,
            cum_fails,
            sums,
        )
    return by_human, cum_passes, cum_fails, sums


def rank_sums_many(values: np.ndarray, lay: Layout) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """:func:`rank_sums` of every table of a :class:`Layout` on every resample of ``values``, in one launch.

    Returns ``by_human`` ``(batch, level_at[-1])``, ``cum_passes`` and ``cum_fails`` ``(batch, score_at[-1])``
    (table ``k``'s columns are its slice of the layout's offsets) and ``sums`` ``(batch, tables, N_RANK_SUMS)``.
    """
    kernel = _rank_sums_serial if values.shape[0] * lay.gather.size < SERIAL_WORK else _rank_sums_parallel
    with launching():
        return kernel(
            values,
            lay.gather,
            lay.gather_at,
            lay.starts,
            lay.cell_at,
            lay.cell_h,
            lay.cell_pass,
            lay.run_starts,
            lay.run_at,
            lay.score_at,
            lay.level_at,
            lay.scale,
        )


def rank_sums(
    values: np.ndarray,
    gather: np.ndarray,
    starts: np.ndarray,
    cell_h: np.ndarray,
    run_starts: np.ndarray,
    n_levels: int,
    cell_pass: np.ndarray,
    scale: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per resample: the sums behind Spearman, Kendall tau-b and ROC AUC, for one table.

    Cell ``c`` of resample ``r`` counts ``values[r, gather[starts[c]:starts[c + 1]]]`` (per-case resample
    counts gathered into cells; pass ``gather = starts = arange(cells)`` for ready cell tables), each
    count multiplied by ``scale[q]`` (a case weight aligned with ``gather``) when a scale is given. Cells
    are ordered by judge score, then by human value index ``cell_h``; the cells of the j-th distinct
    score are ``run_starts[j]:run_starts[j + 1]``. Returns ``by_human`` ``(batch, n_levels)``,
    ``cum_passes`` and ``cum_fails`` ``(batch, n_scores)`` (human passes / fails scored at most the j-th
    score) and ``sums`` ``(batch, N_RANK_SUMS)``: the sum of human midrank x judge midrank, of judge
    midrank squared, Kendall's S (concordant minus discordant pairs), the ties in the judge score
    (sum of count * (count - 1) / 2 per score), and the Mann-Whitney numerator of the AUC.

    Examples
    --------
    >>> # three cases, one per cell: (human 0, score 0), (human 1, score 1), (human 1, score 2)
    >>> cells = np.arange(3)
    >>> by_human, cum_passes, cum_fails, sums = rank_sums(np.ones((1, 3)), cells, cells, np.array([0, 1, 1]),
    ...                                                   np.arange(4), 2, np.array([0.0, 1.0, 1.0]))
    >>> by_human.tolist(), cum_passes.tolist(), float(sums[0, AUC_NUMERATOR])   # both passes above the fail
    ([[1.0, 2.0]], [[0.0, 1.0, 2.0]], 2.0)
    """
    by_human, cum_passes, cum_fails, sums = rank_sums_many(
        values, layout([(gather, starts, cell_h, cell_pass, run_starts, n_levels, scale)])
    )
    return by_human, cum_passes, cum_fails, sums[:, 0, :]
