"""One fused pass per resample over the cells of a (human value, judge score) count table.

numpy needs a dozen separate passes (marginals, running sums, ranks, products) to get the rank
statistics of one resample; each pass is cheap, but a bootstrap of 1,000 resamples of 100,000 cases
makes them the whole cost. This numba kernel reads each resample once, keeps the running sums in
registers, and runs the resamples on every core (``prange``). It computes sums of counts and ranks
only; the statistics are assembled from those sums in :mod:`calibrate.stats.paired`, whose results
are checked against scipy and scikit-learn in the tests.
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["rank_sums", "cell_tables", "N_RANK_SUMS", "CROSS", "SCORE_RANK2", "CONCORDANCE", "SCORE_TIES",
           "AUC_NUMERATOR"]

# the columns of rank_sums' per-resample output
CROSS, SCORE_RANK2, CONCORDANCE, SCORE_TIES, AUC_NUMERATOR = range(5)
N_RANK_SUMS = 5
#: Up to this many human levels, the running sums over lower levels are updated level by level without
#: branches (fast and predictable); above it, a Fenwick tree keeps each update logarithmic.
SMALL_LEVELS = 16


@numba.njit(cache=True, inline="always", error_model="numpy")
def _cell_count(values, r, gather, starts, c, total, scale):  # pragma: no cover - compiled
    end = starts[c + 1] if c + 1 < starts.size else total
    count = 0.0
    if scale is None:
        for q in range(starts[c], end):
            count += values[r, gather[q]]
    else:
        for q in range(starts[c], end):
            count += values[r, gather[q]] * scale[q]
    return count


@numba.njit(cache=True, parallel=True, error_model="numpy")
def cell_tables(values, gather, starts, scale=None):  # pragma: no cover - compiled
    """Cell counts ``(batch, cells)``: cell ``c`` sums ``values[r, gather[starts[c]:starts[c + 1]]]``,
    each term multiplied by ``scale[q]`` when a scale (a case weight, aligned with ``gather``) is given."""
    b = values.shape[0]
    n_cells = starts.size
    out = np.zeros((b, n_cells), dtype=values.dtype)
    for r in numba.prange(b):
        for c in range(n_cells):
            out[r, c] = _cell_count(values, r, gather, starts, c, gather.size, scale)
    return out


@numba.njit(cache=True, parallel=True, error_model="numpy")
def rank_sums(values, gather, starts, cell_h, run_starts, n_levels, cell_pass,
              scale=None):  # pragma: no cover - compiled
    """Per resample: the sums behind Spearman, Kendall tau-b and ROC AUC.

    Cell ``c`` of resample ``r`` counts ``values[r, gather[starts[c]:starts[c + 1]]]`` (per-case resample
    counts gathered into cells; pass ``gather = starts = arange(cells)`` for ready cell tables), each
    count multiplied by ``scale[q]`` (a case weight aligned with ``gather``) when a scale is given. Cells
    are ordered by judge score, then by human value index ``cell_h``; the cells of the j-th distinct
    score are ``run_starts[j]:run_starts[j + 1]``. Returns ``by_human`` ``(batch, n_levels)``,
    ``cum_passes`` and ``cum_fails`` ``(batch, n_scores)`` (human passes / fails scored at most the j-th
    score) and ``sums`` ``(batch, N_RANK_SUMS)``: the sum of human midrank x judge midrank, of judge
    midrank squared, Kendall's S (concordant minus discordant pairs), the ties in the judge score
    (sum of count * (count - 1) / 2 per score), and the Mann-Whitney numerator of the AUC.
    """
    b = values.shape[0]
    n_cells = starts.size
    n_scores = run_starts.size - 1
    total = gather.size
    one_case_per_cell = total == n_cells
    small = n_levels <= SMALL_LEVELS
    by_human = np.zeros((b, n_levels))
    # running counts of unweighted resamples are whole numbers: stored in the counts' own dtype (float32
    # halves the writes; weighted resamples pass float64 counts)
    cum_passes = np.zeros((b, n_scores), dtype=values.dtype)
    cum_fails = np.zeros((b, n_scores), dtype=values.dtype)
    sums = np.zeros((b, N_RANK_SUMS))
    for r in numba.prange(b):
        # Kendall: a case at (level k, score j) is concordant with lower-level cases of lower scores and
        # discordant with lower-level cases of higher scores: over lower levels k' that is
        # 2 x below(k') + same_score(k') - all(k'). The running sums hold 2 x below over lower levels
        # (a Fenwick tree when there are many levels); the cases at the same score come from earlier
        # cells of the run; the "all" part is subtracted at the end, once the level totals are known.
        tree = np.zeros(n_levels + 1)
        lower = np.zeros(n_levels)
        score_rank_by_level = np.zeros(n_levels)   # sum over cases of judge midrank, per human level
        run = np.zeros(n_levels)                   # the counts of the cells of the current score
        cum_score = 0.0
        cum_pass = 0.0
        cum_fail = 0.0
        score_rank2 = 0.0
        concordance = 0.0
        ties = 0.0
        auc = 0.0
        for j in range(n_scores):
            first = run_starts[j]
            last = run_starts[j + 1]
            at_score = 0.0
            passes = 0.0
            for c in range(first, last):
                if one_case_per_cell:
                    count = np.float64(values[r, gather[c]])
                    if scale is not None:
                        count *= scale[c]
                else:
                    count = _cell_count(values, r, gather, starts, c, total, scale)
                k = cell_h[c]
                if small:
                    prefix = lower[k]
                else:
                    prefix = 0.0
                    i = k
                    while i > 0:
                        prefix += tree[i]
                        i -= i & (-i)
                concordance += count * (prefix + at_score)  # at_score: this score's lower levels so far
                at_score += count
                passes += count * cell_pass[c]
                run[c - first] = count
            fails = at_score - passes
            score_rank = cum_score + (at_score + 1.0) / 2.0
            score_rank2 += at_score * score_rank * score_rank
            ties += at_score * (at_score - 1.0) / 2.0
            auc += passes * (cum_fail + fails / 2.0)
            for c in range(first, last):
                k = cell_h[c]
                count = run[c - first]
                score_rank_by_level[k] += count * score_rank
                by_human[r, k] += count
                if small:  # a fixed-length loop without branches: predictable
                    for above in range(n_levels):
                        lower[above] += 2.0 * count * (above > k)
                else:
                    i = k + 1
                    while i <= n_levels:
                        tree[i] += 2.0 * count
                        i += i & (-i)
            cum_score += at_score
            cum_pass += passes
            cum_fail += fails
            cum_passes[r, j] = cum_pass
            cum_fails[r, j] = cum_fail
        cross = 0.0
        below = 0.0
        for k in range(n_levels):
            human_rank = below + (by_human[r, k] + 1.0) / 2.0
            cross += human_rank * score_rank_by_level[k]
            concordance -= by_human[r, k] * below
            below += by_human[r, k]
        sums[r, CROSS] = cross
        sums[r, SCORE_RANK2] = score_rank2
        sums[r, CONCORDANCE] = concordance
        sums[r, SCORE_TIES] = ties
        sums[r, AUC_NUMERATOR] = auc
    return by_human, cum_passes, cum_fails, sums
