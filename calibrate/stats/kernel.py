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


def case_major(values: np.ndarray) -> np.ndarray:
    """The counts ``(batch, cases)`` as the kernels read them: ``(cases, batch)``, C-contiguous, so that the
    counts of one case on every resample of a batch lie side by side. Free for counts made in Fortran order
    (:func:`calibrate.stats.bootstrap.case_counts` with ``order="F"``), a copy otherwise.

    Examples
    --------
    >>> case_major(np.array([[1.0, 2.0], [3.0, 4.0]])).tolist()
    [[1.0, 3.0], [2.0, 4.0]]
    """
    return np.ascontiguousarray(values.T)


def _block(batch: int, units: int, serial: bool) -> int:
    """The resamples one task reads at once: the whole batch, unless there are fewer units of work
    (tables, cells) than threads, when the batch is split so that every thread has a share."""
    if serial or batch <= 1:
        return max(batch, 1)
    per_unit = -(-numba.get_num_threads() // max(units, 1))
    return max(1, -(-batch // per_unit))


@numba.njit(cache=True, inline="always", error_model="numpy")
def _cell_counts(by_case, r0, b, gather, first, end, scale, out):  # pragma: no cover - compiled
    """``out[i]``: the count of the cell gathering ``gather[first:end]`` on resample ``r0 + i``, for the
    ``b`` resamples from ``r0``. The cases are read in order once for the whole block (the counts of a
    case on those resamples lie side by side in ``by_case``), each resample's sum taken in that order."""
    for i in range(b):
        out[i] = 0.0
    if scale is None:
        for q in range(first, end):
            row = gather[q]
            for i in range(b):
                out[i] += by_case[row, r0 + i]
    else:
        for q in range(first, end):
            row = gather[q]
            weight = scale[q]
            for i in range(b):
                out[i] += by_case[row, r0 + i] * weight


@numba.njit(cache=True, inline="always", error_model="numpy")
def _cell_task(by_case, gather, starts, scale, t, block, out, count):  # pragma: no cover - compiled
    """Task ``t`` of :func:`cell_tables`: one cell on one block of resamples."""
    n_cells = starts.size
    c = t % n_cells
    r0 = (t // n_cells) * block
    b = min(block, by_case.shape[1] - r0)
    end = starts[c + 1] if c + 1 < n_cells else gather.size
    _cell_counts(by_case, r0, b, gather, starts[c], end, scale, count)
    for i in range(b):
        out[r0 + i, c] = count[i]


@numba.njit(cache=True, parallel=True, error_model="numpy")
def _cell_tables_parallel(by_case, gather, starts, scale, block, n_chunks):  # pragma: no cover - compiled
    batch = by_case.shape[1]
    out = np.zeros((batch, starts.size), dtype=by_case.dtype)
    n_tasks = starts.size * ((batch + block - 1) // block)
    # the tasks in a few chunks per thread, each with its own scratch row (a cell is often one case)
    n_chunks = min(n_tasks, n_chunks)
    for chunk in numba.prange(n_chunks):
        count = np.empty(block)
        for t in range(chunk * n_tasks // n_chunks, (chunk + 1) * n_tasks // n_chunks):
            _cell_task(by_case, gather, starts, scale, t, block, out, count)
    return out


@numba.njit(cache=True, error_model="numpy")
def _cell_tables_serial(by_case, gather, starts, scale, block, n_chunks):  # pragma: no cover - compiled
    batch = by_case.shape[1]
    out = np.zeros((batch, starts.size), dtype=by_case.dtype)
    count = np.empty(block)
    for t in range(starts.size * ((batch + block - 1) // block)):
        _cell_task(by_case, gather, starts, scale, t, block, out, count)
    return out


def cell_tables(
    values: np.ndarray, gather: np.ndarray, starts: np.ndarray, scale: np.ndarray | None = None
) -> np.ndarray:
    """Cell counts ``(batch, cells)``: cell ``c`` sums ``values[r, gather[starts[c]:starts[c + 1]]]``,
    each term multiplied by ``scale[q]`` (a case weight, aligned with ``gather``) when a scale is given.
    Several tables' cells can be computed in one launch by concatenating their gathers (and shifting
    their starts). The counts are read case-major (:func:`case_major`): counts in Fortran order are read
    in place, others copied once.

    Examples
    --------
    >>> counts = np.array([[1, 0, 2], [0, 3, 1]], dtype=np.float32)
    >>> cell_tables(counts, np.array([0, 2, 1]), np.array([0, 2])).tolist()
    [[3.0, 0.0], [1.0, 3.0]]
    """
    serial = values.shape[0] * gather.size < SERIAL_WORK
    block = _block(values.shape[0], starts.size, serial)
    kernel = _cell_tables_serial if serial else _cell_tables_parallel
    with launching():
        return kernel(case_major(values), gather, starts, scale, block, 8 * numba.get_num_threads())


@numba.njit(cache=True, inline="always", error_model="numpy")
def _below_level(tree, lower, i, level, small):  # pragma: no cover - compiled
    """The running sum of resample ``i`` over the levels below ``level``: read directly, or from its
    Fenwick tree."""
    if small:
        return lower[i, level]
    prefix = 0.0
    at = level
    while at > 0:
        prefix += tree[i, at]
        at -= at & (-at)
    return prefix


@numba.njit(cache=True, inline="always", error_model="numpy")
def _add_above_level(tree, lower, i, level, n_levels, amount, small):  # pragma: no cover - compiled
    """Add ``amount`` to the running sums of resample ``i`` of the levels above ``level``."""
    if small:  # a fixed-length loop without branches: predictable
        for above in range(n_levels):
            lower[i, above] += amount * (above > level)
    else:
        at = level + 1
        while at <= n_levels:
            tree[i, at] += amount
            at += at & (-at)


@numba.njit(cache=True, inline="always", error_model="numpy")
def _by_level(by_human, r, h0, n_levels, score_rank_by_level, i, concordance):  # pragma: no cover - compiled
    """The cross sum of human and judge midranks, and the concordance less each level's cases times the
    cases of the levels below it (the "all" part of the Kendall sum), of resample ``r`` (row ``i`` of
    the block)."""
    cross = 0.0
    below = 0.0
    for level in range(n_levels):
        human = by_human[r, h0 + level]
        human_rank = below + (human + 1.0) / 2.0
        cross += human_rank * score_rank_by_level[i, level]
        concordance -= human * below
        below += human
    return cross, concordance


@numba.njit(cache=True, inline="always", error_model="numpy")
def _one_table(
    by_case,
    k,
    r0,
    b,
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
    """The sums of table ``k`` on the ``b`` resamples from ``r0`` (see :func:`rank_sums`), its cells read
    once, in score order, for the whole block: each resample's sums are taken in the same order, with
    the same operations, as if it were read alone."""
    g_end = gather_at[k + 1]
    c0 = cell_at[k]
    n_cells = cell_at[k + 1] - c0
    h0 = level_at[k]
    n_levels = level_at[k + 1] - h0
    m0 = score_at[k]
    n_scores = score_at[k + 1] - m0
    j0 = run_at[k]
    small = n_levels <= SMALL_LEVELS
    # Kendall: a case at (level k, score j) is concordant with lower-level cases of lower scores and
    # discordant with lower-level cases of higher scores: over lower levels k' that is
    # 2 x below(k') + same_score(k') - all(k'). The running sums hold 2 x below over lower levels
    # (a Fenwick tree when there are many levels); the cases at the same score come from earlier
    # cells of the run; the "all" part is subtracted at the end, once the level totals are known.
    # One row per resample of the block:
    tree = np.zeros((b, n_levels + 1))
    lower = np.zeros((b, n_levels))
    score_rank_by_level = np.zeros((b, n_levels))  # sum over cases of judge midrank, per human level
    run = np.zeros((b, n_levels))  # the counts of the cells of the current score
    count = np.zeros(b)
    at_score = np.zeros(b)
    passes = np.zeros(b)
    # running sums over the scores
    cum_score = np.zeros(b)
    cum_pass = np.zeros(b)
    cum_fail = np.zeros(b)
    score_rank2 = np.zeros(b)
    concordance = np.zeros(b)
    ties = np.zeros(b)
    auc = np.zeros(b)
    for j in range(n_scores):
        first = run_starts[j0 + j]
        last = run_starts[j0 + j + 1]
        for i in range(b):
            at_score[i] = 0.0
            passes[i] = 0.0
        for c in range(first, last):
            cell = c0 + c
            end = starts[cell + 1] if c + 1 < n_cells else g_end
            _cell_counts(by_case, r0, b, gather, starts[cell], end, scale, count)
            level = cell_h[cell]
            is_pass = cell_pass[cell]
            for i in range(b):
                prefix = _below_level(tree, lower, i, level, small)
                concordance[i] += count[i] * (prefix + at_score[i])  # at_score: this score's lower levels so far
                at_score[i] += count[i]
                passes[i] += count[i] * is_pass
                run[i, c - first] = count[i]
        for i in range(b):
            fails = at_score[i] - passes[i]
            score_rank = cum_score[i] + (at_score[i] + 1.0) / 2.0
            score_rank2[i] += at_score[i] * score_rank * score_rank
            ties[i] += at_score[i] * (at_score[i] - 1.0) / 2.0
            auc[i] += passes[i] * (cum_fail[i] + fails / 2.0)
            for c in range(first, last):
                level = cell_h[c0 + c]
                n_at = run[i, c - first]
                score_rank_by_level[i, level] += n_at * score_rank
                by_human[r0 + i, h0 + level] += n_at
                _add_above_level(tree, lower, i, level, n_levels, 2.0 * n_at, small)
            cum_score[i] += at_score[i]
            cum_pass[i] += passes[i]
            cum_fail[i] += fails
            cum_passes[r0 + i, m0 + j] = cum_pass[i]
            cum_fails[r0 + i, m0 + j] = cum_fail[i]
    for i in range(b):
        r = r0 + i
        cross, kendall = _by_level(by_human, r, h0, n_levels, score_rank_by_level, i, concordance[i])
        sums[r, k, CROSS] = cross
        sums[r, k, SCORE_RANK2] = score_rank2[i]
        sums[r, k, CONCORDANCE] = kendall
        sums[r, k, SCORE_TIES] = ties[i]
        sums[r, k, AUC_NUMERATOR] = auc[i]


@numba.njit(cache=True, inline="always", error_model="numpy")
def _outputs(by_case, n_tables, score_at, level_at):  # pragma: no cover - compiled
    b = by_case.shape[1]
    # running counts of unweighted resamples are whole numbers: stored in the counts' own dtype (float32
    # halves the writes; weighted resamples pass float64 counts)
    return (
        np.zeros((b, level_at[n_tables])),
        np.zeros((b, score_at[n_tables]), dtype=by_case.dtype),
        np.zeros((b, score_at[n_tables]), dtype=by_case.dtype),
        np.zeros((b, n_tables, N_RANK_SUMS)),
    )


@numba.njit(cache=True, inline="always", error_model="numpy")
def _table_task(
    by_case,
    t,
    block,
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
    """Task ``t``: one table on one block of resamples."""
    n_tables = gather_at.size - 1
    r0 = (t // n_tables) * block
    _one_table(
        by_case,
        t % n_tables,
        r0,
        min(block, by_case.shape[1] - r0),
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


@numba.njit(cache=True, parallel=True, error_model="numpy")
def _rank_sums_parallel(
    by_case, gather, gather_at, starts, cell_at, cell_h, cell_pass, run_starts, run_at, score_at, level_at, scale, block
):  # pragma: no cover - compiled
    n_tables = gather_at.size - 1
    by_human, cum_passes, cum_fails, sums = _outputs(by_case, n_tables, score_at, level_at)
    n_tasks = n_tables * ((by_case.shape[1] + block - 1) // block)
    for t in numba.prange(n_tasks):
        _table_task(
            by_case,
            t,
            block,
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
    by_case, gather, gather_at, starts, cell_at, cell_h, cell_pass, run_starts, run_at, score_at, level_at, scale, block
):  # pragma: no cover - compiled
    n_tables = gather_at.size - 1
    by_human, cum_passes, cum_fails, sums = _outputs(by_case, n_tables, score_at, level_at)
    n_tasks = n_tables * ((by_case.shape[1] + block - 1) // block)
    for t in range(n_tasks):
        _table_task(
            by_case,
            t,
            block,
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
    serial = values.shape[0] * lay.gather.size < SERIAL_WORK
    block = _block(values.shape[0], lay.n_tables, serial)
    kernel = _rank_sums_serial if serial else _rank_sums_parallel
    with launching():
        return kernel(
            case_major(values),
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
            block,
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
