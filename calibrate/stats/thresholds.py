"""Threshold rules on cumulative pass / fail counts, vectorised over resamples.

Threshold index ``t`` passes every case whose judge score is at least the ``t``-th smallest distinct
score; ``t == m`` fails every case. With ``cum_fails[:, j]`` the human fails scored at most the j-th
score, the false passes at ``t`` are ``n_fail - cum_fails[:, t - 1]`` (all human fails at ``t = 0``)
and the false fails ``cum_passes[:, t - 1]``. False passes fall and false fails rise with ``t``, so
"the most lenient threshold" is the smallest admissible index.
"""

from __future__ import annotations

import numpy as np

from calibrate.stats.intervals import clopper_pearson_upper, wilson_interval

__all__ = [
    "DEEPEVAL_DEFAULT_THRESHOLD",
    "NO_THRESHOLD",
    "constraint_rule",
    "cost_rule",
    "fails_for_ceiling",
    "max_admissible_false_passes",
    "within_ceiling",
]

#: DeepEval's pass threshold when a metric is given none
DEEPEVAL_DEFAULT_THRESHOLD = 0.5
#: Returned where no threshold satisfies the rule (or the rule is undefined on that sample).
NO_THRESHOLD = -1


def within_ceiling(bound: np.ndarray | float, ceiling: float) -> np.ndarray:
    """Whether an upper bound on a false-pass rate is at most ``ceiling``, allowing 1e-12 for rounding
    (a bound computed as 0.1000000000000001 for a ceiling of 0.1), except for a bound of exactly 1 (every
    fail passing), which is within a ceiling only at 1. The rule that picks a threshold and the gate that
    checks it both ask this, so they cannot disagree.

    Examples
    --------
    >>> within_ceiling(np.array([0.1 + 1e-15, 0.2, 1.0]), 0.1).tolist()
    [True, False, False]
    >>> bool(within_ceiling(1.0, 0.9999999999999999)), bool(within_ceiling(1.0, 1.0))
    (False, True)
    """
    bound = np.asarray(bound, dtype=float)
    return (bound <= ceiling) | ((bound < 1) & (bound <= ceiling + 1e-12))


def max_admissible_false_passes(
    n_fail: np.ndarray, *, max_false_pass: float, confidence: float | None = None, whole: bool = True
) -> np.ndarray:
    """The most false passes out of ``n_fail`` human fails that the ceiling admits, per sample.

    Without ``confidence``: ``floor(max_false_pass * n_fail)``. With it: the largest ``k`` whose
    one-sided Clopper-Pearson upper bound at ``confidence`` is at most the ceiling (``-1`` where even
    0 false passes is not enough), found by bisection since the bound grows with ``k``. With
    ``whole=False`` (weighted counts, scaled to their effective sample size) ``k`` is any real number:
    ``max_false_pass * n_fail``, or the bound solved by bisection.

    Examples
    --------
    >>> max_admissible_false_passes(np.array([100, 40]), max_false_pass=0.1).tolist()
    [10.0, 4.0]
    >>> max_admissible_false_passes(np.array([100, 20]), max_false_pass=0.1, confidence=0.95).tolist()
    [4.0, -1.0]
    """
    n = np.asarray(n_fail, dtype=float)
    if confidence is None:
        if not whole:
            return max_false_pass * n
        # the slack keeps 0.3 x 10 (2.9999999999999996) at 3; a count whose rate is not within the ceiling
        # (80 of 80 for a ceiling one unit below 1.0 in the last place) is never admitted
        admitted = np.floor(max_false_pass * n + 1e-9)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where((n > 0) & ~within_ceiling(admitted / n, max_false_pass), admitted - 1, admitted)
    if not whole:
        low, high = np.zeros(n.shape), n.copy()
        nothing = ~within_ceiling(clopper_pearson_upper(low, n, confidence=confidence), max_false_pass)
        for _ in range(60):  # bisection on a real k: 2**-60 of n is far below any count's resolution
            mid = (low + high) / 2
            ok = within_ceiling(clopper_pearson_upper(mid, n, confidence=confidence), max_false_pass)
            low, high = np.where(ok, mid, low), np.where(ok, high, mid)
        return np.where(nothing, -1.0, low)
    low = np.full(n.shape, -1.0)  # admissible (or -1: nothing is)
    high = n.copy() + 1  # not admissible
    while np.any(high - low > 1):
        mid = np.floor((low + high) / 2)
        # a sample already settled (high = low + 1 = 0) would ask about -1 false passes: its answer is unused
        ok = within_ceiling(clopper_pearson_upper(np.maximum(mid, 0), n, confidence=confidence), max_false_pass)
        low = np.where(ok & (high - low > 1), mid, low)
        high = np.where(~ok & (high - low > 1), mid, high)
    return low


def constraint_rule(
    cum_fails: np.ndarray,
    n_fail: np.ndarray,
    *,
    max_false_pass: float,
    confidence: float | None = None,
    whole: bool = True,
    scale: float | None = None,
) -> np.ndarray:
    """The most lenient threshold index whose false-pass rate is at most ``max_false_pass``.

    Parameters
    ----------
    cum_fails : ndarray, shape (batch, m)
        Human fails with a judge score at most each distinct score: running counts, which never fall
        along a row (the rule bisects each row, reading about ``log2(m)`` of its counts).
    n_fail : ndarray, shape (batch,)
        Human fails in each sample.
    max_false_pass : float
        The ceiling on the false-pass rate.
    confidence : float, optional
        When given, the one-sided Clopper-Pearson upper bound of the false-pass rate at this
        confidence must stay under the ceiling (conservative), instead of the rate itself.
    whole : bool
        ``False`` for weighted counts (see :func:`max_admissible_false_passes`).
    scale : float, optional
        A factor for ``cum_fails`` and ``n_fail`` (weighted counts put on the scale of their effective
        size): the same index as passing ``cum_fails * scale`` and ``n_fail * scale``, without a scaled
        copy of ``cum_fails``.

    Returns
    -------
    ndarray of int, shape (batch,)
        The index, or ``NO_THRESHOLD`` where none qualifies or the sample has no human fail.

    Examples
    --------
    >>> cum_fails = np.array([[0., 2, 3, 4]])      # false passes 4, 4, 2, 1, 0 at t = 0..4
    >>> constraint_rule(cum_fails, np.array([4]), max_false_pass=0.3).tolist()
    [3]
    >>> constraint_rule(cum_fails, np.array([4]), max_false_pass=0.3, confidence=0.95).tolist()
    [-1]
    """
    n = np.asarray(n_fail if scale is None else np.asarray(n_fail) * scale, dtype=float)
    allowed = max_admissible_false_passes(n, max_false_pass=max_false_pass, confidence=confidence, whole=whole)
    # admissible at t >= 1 when n - cum_fails[t - 1] <= allowed; at t = 0 when n <= allowed
    target = (n - allowed) - (0 if whole else 1e-9 * n)
    first = np.where(n <= allowed, 0, _first_reaching(cum_fails, target, scale) + 1)
    return np.where((n > 0) & (allowed >= 0), first, NO_THRESHOLD)


def _first_reaching(cum_fails: np.ndarray, target: np.ndarray, scale: float | None) -> np.ndarray:
    """Per row ``r``, the first column ``j`` with ``cum_fails[r, j] * scale >= target[r]``, by bisection: a
    row of running counts that reaches the target at ``j`` reaches it at every later column. Each probe
    reads one count per row and compares it as the whole array would be compared (``cum_fails * scale``:
    the same dtype, the same rounding). ``m`` where no column does, which a row whose last count is its
    ``n_fail`` never gives (its target is at most that count)."""
    rows, m = np.arange(cum_fails.shape[0]), cum_fails.shape[1]
    # the first reaching column lies in low..high (m: none)
    low: np.ndarray = np.zeros(rows.size, dtype=np.int64)
    high: np.ndarray = np.full(rows.size, m, dtype=np.int64)
    while np.any(low < high):
        middle = (low + high) // 2
        value = cum_fails[rows, np.minimum(middle, m - 1)]  # a settled row at m reads a column it ignores
        reached = (value if scale is None else value * scale) >= target
        searching = low < high
        high = np.where(searching & reached, middle, high)
        low = np.where(searching & ~reached, middle + 1, low)
    return low


#: Values of each temporary the cost rule computes at once (rows x threshold indices): a few MB however
#: many rows (a bootstrap batch, a jackknife) and distinct scores it reads.
COST_CHUNK = 1 << 18


def cost_rule(
    cum_passes: np.ndarray,
    cum_fails: np.ndarray,
    *,
    cost_false_pass: float,
    cost_false_fail: float,
    prevalence: float | None = None,
) -> np.ndarray:
    """The threshold index minimising ``cost_false_pass * FP + cost_false_fail * FN``.

    With ``prevalence`` (the expected production share of human passes) the rates are weighted by
    it instead of by the sample's share: ``cfp * (1 - P) * FPR + cff * P * FFR``. Ties go to the
    most lenient threshold. The costs are computed for :data:`COST_CHUNK` values at a time, so its
    memory does not grow with the number of distinct scores.

    Examples
    --------
    >>> cum_passes, cum_fails = np.array([[0., 1, 6]]), np.array([[2., 3, 4]])
    >>> cost_rule(cum_passes, cum_fails, cost_false_pass=5, cost_false_fail=1).tolist()
    [2]
    """
    rows, m = cum_fails.shape
    n_pass, n_fail = cum_passes[:, -1].astype(float), cum_fails[:, -1].astype(float)
    best = np.zeros(rows, dtype=np.int64)
    lowest = np.full(rows, np.inf)
    step = max(1, COST_CHUNK // max(rows, 1))
    for start in range(0, m + 1, step):
        stop = min(start + step, m + 1)
        false_pass = n_fail[:, None] - _at_indices(cum_fails, start, stop)
        false_fail = _at_indices(cum_passes, start, stop)
        if prevalence is None:
            cost = cost_false_pass * false_pass + cost_false_fail * false_fail
        else:
            with np.errstate(invalid="ignore", divide="ignore"):
                cost = (
                    cost_false_pass * (1 - prevalence) * false_pass / n_fail[:, None]
                    + cost_false_fail * prevalence * false_fail / n_pass[:, None]
                )
        cost = np.where(np.isfinite(cost), cost, np.inf)
        at = np.argmin(cost, axis=1)
        least = cost[np.arange(rows), at]
        better = least < lowest  # strictly: a tie keeps the earlier, more lenient index
        best, lowest = np.where(better, start + at, best), np.where(better, least, lowest)
    defined = np.ones(rows, dtype=bool) if prevalence is None else (n_fail > 0) & (n_pass > 0)
    return np.where(defined, best, NO_THRESHOLD)


def _at_indices(cum: np.ndarray, start: int, stop: int) -> np.ndarray:
    """The running counts read at threshold indices ``start..stop - 1`` (index ``t`` reads column ``t - 1``,
    index 0 reads 0), as float."""
    part = cum[:, max(start - 1, 0) : stop - 1].astype(float)
    if start == 0:
        part = np.concatenate([np.zeros((cum.shape[0], 1)), part], axis=1)
    return part


#: Beyond this many human fails a ceiling is called out of reach (the rate sits at or next to it).
MOST_FAILS_SEARCHED = 1_000_000


def fails_for_ceiling(
    false_pass_rate: float, ceiling: float, *, confidence: float = 0.95, one_sided: bool = False
) -> int | None:
    """The fewest human fails at which a false-pass rate of ``false_pass_rate`` has an upper bound at
    most ``ceiling``: the two-sided Wilson interval's (as the rates are shown), or with ``one_sided``
    the one-sided Clopper-Pearson bound at ``confidence`` (as a constraint rule with a confidence
    keeps it). ``None`` when no number up to a million reaches it (a rate at or above the ceiling).

    Examples
    --------
    >>> fails_for_ceiling(0.0, 0.10)          # no false pass at all: 0 of 35 has an upper bound of 0.099
    35
    >>> fails_for_ceiling(0.0, 0.10, one_sided=True)
    29
    >>> fails_for_ceiling(0.06, 0.10)
    217
    >>> fails_for_ceiling(0.10, 0.10) is None
    True
    """
    if not 0 <= false_pass_rate < ceiling:
        return None

    def under(n: np.ndarray) -> np.ndarray:
        k = false_pass_rate * n
        bound = (
            clopper_pearson_upper(k, n, confidence=confidence)
            if one_sided
            else wilson_interval(k, n, confidence=confidence)[1]
        )
        return within_ceiling(bound, ceiling)

    # the bound falls with n at a fixed rate: find the first n where it is under, by doubling then bisection
    high = 1
    while not under(np.array([high]))[0]:
        high *= 2
        if high > MOST_FAILS_SEARCHED:
            return None
    low = high // 2  # not under (or 0)
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (low, mid) if under(np.array([mid]))[0] else (mid, high)
    return int(high)
