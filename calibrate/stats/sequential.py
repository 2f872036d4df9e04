"""Anytime-valid monitoring of a rate over a stream: a change detector and confidence sequences.

A monitored rate (a judge's false-pass rate at its threshold, its false-fail rate, the human pass rate)
is watched through one bounded **increment** per case, in time order, whose mean is at most 0 while the
rate stays in its accepted range. For the false-pass rate at a ceiling ``p0``, a case audited with
probability ``pi`` gives ``z = (audited / pi) * human_fail * (judge_pass - p0)``; a case nobody audited
gives 0 and no evidence. Each increment's smallest possible value (``-p0 / pi`` here) is known before the
case is seen, which bounds the bets.

**The change detector** (:func:`e_detector`) is an e-detector in the sense of Shin, Ramdas and Rinaldo
("E-detectors: a nonparametric framework for sequential change detection", 2024): for every step ``j`` at
which the change may have happened, the betting e-process ``prod_{i >= j} (1 + lambda_k z_i)`` (averaged
over a grid of bets ``lambda_k``) grows when the rate has left its range since ``j``. Here they are mixed
over the change point with weights ``w_j`` summing to 1, a weighted Shiryaev-Roberts statistic::

    R_t = e_t * (R_{t-1} + w_t),      Q_t = R_t + (1 - sum_{j <= t} w_j)

``Q_t`` is a nonnegative supermartingale with ``Q_0 = 1`` while no change happens (each term is an
e-process that is 1 until its change point), so by Ville's inequality the detector alarms (``Q_t >= 1 /
alpha``) **at any time at all** with probability at most ``alpha``: looking every day, or after every
case, does not inflate false alarms, and no horizon is needed for the guarantee. Unlike an average over
the whole stream, it is quick after a late change: the e-process started near the change does not carry
the evidence of the cases before it. The weights ``w_j = T / ((T + j - 1)(T + j))`` spread about half
the mass over the first ``T`` steps (the scale of the stream: the campaign's length), and the rest
over later ones.

**A range that allows nothing** (a false-pass ceiling of 0: ``lower`` is 0, so no increment can be
negative): while the rate stays in it every increment is 0, so a positive one cannot happen unless the
rate has left it. Such a step is certain evidence: its e-value is infinite (the limit of ``1 + lambda z``
as the bet grows without bound, which keeps its expectation under the range: the step is 0 there), and
the detector alarms at the first such step, whatever ``alpha``. Without it the bets, sized by ``-1 /
lower``, would be 0 and the detector could never alarm.

**Confidence sequences** (:func:`confidence_sequence`) of a rate: the values ``theta`` not rejected by
two-sided betting e-processes for "the rate is theta" (Waudby-Smith and Ramdas, "Estimating means of
bounded random variables by betting", 2024), which hold at every step at once with probability at least
``1 - alpha``; restarted after an alarm, they describe the current rate.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from calibrate.base.params import PROBABILITY, Array, checked

__all__ = [
    "BET_FRACTIONS",
    "Detection",
    "change_point_weights",
    "confidence_sequence",
    "detector_statistic",
    "e_detector",
    "rate_increments",
]

#: the bets mixed in every e-process, as fractions of the largest bet that keeps ``1 + lambda z`` positive
BET_FRACTIONS = (0.05, 0.1, 0.2, 0.35, 0.5)
#: steps a confidence sequence computes at once (steps x bets x grid values in memory)
CHUNK = 512
#: the first stretch of steps the detector computes before it looks for an alarm (each next one twice as long,
#: up to 64 times): after an alarm, the monitor restarts it, and its next alarm costs the steps up to it only
WINDOW = 4096


def change_point_weights(n: int, scale: int) -> np.ndarray:
    """The weight of each step as the change point, ``w_j = T / ((T + j - 1)(T + j))`` for ``j = 1..n``
    (``T = scale``): they sum to ``n / (T + n)`` over ``n`` steps and to 1 over all steps.

    >>> w = change_point_weights(4, 2)
    >>> w.round(4).tolist(), round(float(w.sum()), 4)
    ([0.3333, 0.1667, 0.1, 0.0667], 0.6667)
    """
    if scale < 1:
        raise ValueError(f"scale={scale}: the scale of the stream must be at least 1 step")
    return _weights(0, n, scale)


@dataclass(frozen=True)
class Detection:
    """What :func:`e_detector` found.

    Attributes
    ----------
    statistic : ndarray of shape (n_steps,), or (alarm + 1,) after an alarm
        ``Q_t`` after each step up to the alarm (the detector alarms when it reaches ``1 / alpha``).
    alarm : int or None
        The first step (0-based) at which it alarmed.
    change : int or None
        The most likely change point before that alarm (0-based): the start of the e-process that carries
        the most weighted evidence; on certain evidence (a range that allows nothing), the alarm's step.
    evidence : float or None
        The e-value of that e-process at the alarm (from the change point on, without its weight);
        ``inf`` on certain evidence.
    """

    statistic: np.ndarray
    alarm: int | None
    change: int | None
    evidence: float | None


def _bets(lower: np.ndarray, fractions: tuple[float, ...]) -> np.ndarray:
    """Bets (... x steps x fractions) that keep ``1 + lambda z >= 1 - fraction`` for ``z >= lower``."""
    reach = np.where(lower < 0, -lower, np.inf)
    return np.asarray(fractions) / reach[..., None]


def _log_evidence(increments, lower, fractions) -> np.ndarray:
    """log(1 + lambda_k z_t) for each step and bet (... x steps x bets), checked."""
    z = np.asarray(increments, dtype=float)
    low = np.broadcast_to(np.asarray(lower, dtype=float), z.shape)
    if z.ndim < 1 or z.shape[-1] == 0:
        raise ValueError("increments: one value a step, at least one step")
    if np.any(z < low - 1e-12):
        raise ValueError("increments below their lower bound: the bound must hold for every step")
    return np.log1p(_bets(low, fractions) * z[..., None])


def detector_statistic(
    increments, lower, *, scale: int | None = None, fractions: tuple[float, ...] = BET_FRACTIONS
) -> np.ndarray:
    """``Q_t`` of :func:`e_detector` after every step, for one stream or many (the last axis is time).

    Computed in logs: ``log R_t = L_t + logcumsumexp_j(log w_j - L_{j-1})``, ``L_t`` the log-product of
    the e-values up to ``t``. From the first step that is certain evidence (a positive increment whose
    lower bound is 0: see the module docstring) on, ``Q_t`` is infinite.

    >>> detector_statistic(np.zeros((2, 3)), -np.ones((2, 3))).round(6).tolist()
    [[1.0, 1.0, 1.0], [1.0, 1.0, 1.0]]
    >>> detector_statistic([0.0, 0.0, 1.0, 0.0], np.zeros(4)).tolist()   # a range that allows nothing
    [1.0, 1.0, inf, inf]
    """
    logs = _log_evidence(increments, lower, fractions)  # ... x n x k
    n = logs.shape[-2]
    weights = change_point_weights(n, scale or n)
    total = np.cumsum(logs, axis=-2)
    before = total - logs  # L_{j-1}
    log_r = total + np.logaddexp.accumulate(np.log(weights)[:, None] - before, axis=-2)
    statistic = np.exp(log_r).mean(axis=-1) + (1 - np.cumsum(weights))
    return np.where(np.logical_or.accumulate(_certain(increments, lower), axis=-1), np.inf, statistic)


def _certain(increments, lower) -> np.ndarray:
    """The steps whose increment is positive though it could not be negative: impossible while the rate
    stays in its range (every increment is 0 there), so certain evidence that it left it."""
    z = np.asarray(increments, dtype=float)
    return (np.broadcast_to(np.asarray(lower, dtype=float), z.shape) >= 0) & (z > 0)


@checked(
    increments=Array("increments, one a step"),
    lower=Array("lower bounds of the increments", ndim=None, broadcasts_with="increments"),
    alpha=PROBABILITY,
)
def e_detector(
    increments: ArrayLike,
    lower: ArrayLike,
    *,
    alpha: float = 0.05,
    scale: int | None = None,
    fractions: tuple[float, ...] = BET_FRACTIONS,
) -> Detection:
    """The weighted Shiryaev-Roberts e-detector of a change that lifts the mean of ``increments`` above 0.

    Parameters
    ----------
    increments : array_like of float of shape (n_steps,)
        One increment a step, in time order; its mean is at most 0 while nothing changed (0 for a step
        that brings no evidence, such as a case nobody audited).
    lower : float or array_like of float of shape (n_steps,)
        The smallest value each increment could have taken, known before it was seen (``<= 0``).
    alpha : float, default=0.05
        The probability of a false alarm, at any time, while nothing changes.
    scale : int, optional
        The scale of the stream in steps (the change-point weights put about half their mass on the
        first ``scale`` steps); the number of steps by default.
    fractions : tuple of float
        The bets mixed, as fractions (below 1) of the largest bet ``-1 / lower``.

    Returns
    -------
    Detection

    Examples
    --------
    A false-pass rate at its ceiling of 0.05 for 300 audited failing cases, then 0.3:

    >>> rng = np.random.default_rng(1)
    >>> passes = np.r_[rng.random(300) < 0.05, rng.random(300) < 0.3].astype(float)
    >>> found = e_detector(passes - 0.05, np.full(600, -0.05), alpha=0.05)
    >>> found.alarm > 300, found.alarm < 400, 280 < found.change < 330
    (True, True, True)
    >>> e_detector(np.zeros(50), np.full(50, -1.0)).alarm is None
    True

    A ceiling of 0 (increments ``judge_pass - 0``, never negative): the first false pass alarms, at any
    ``alpha``:

    >>> found = e_detector(np.r_[np.zeros(30), 1.0, np.zeros(5)], np.zeros(36), alpha=1e-9)
    >>> found.alarm, found.change, found.evidence
    (30, 30, inf)
    """
    z = np.asarray(increments, dtype=float)
    low = np.broadcast_to(np.asarray(lower, dtype=float), z.shape)
    _log_evidence(z[:1], low[:1], fractions)  # an empty stream is refused
    if np.any(z < low - 1e-12):  # every step is checked, those after the alarm too
        raise ValueError("increments below their lower bound: the bound must hold for every step")
    statistic = _until_alarm(z, low, scale or z.size, fractions, 1 / alpha)
    if not statistic[-1] >= 1 / alpha:
        return Detection(statistic, None, None, None)
    alarm = statistic.size - 1
    if _certain(z[alarm], low[alarm]):
        return Detection(statistic, alarm, alarm, float("inf"))
    logs = _log_evidence(z[: alarm + 1], low[: alarm + 1], fractions)
    tails = np.exp(np.cumsum(logs[::-1], axis=0)[::-1]).mean(axis=1)  # each change point's e-value at the alarm
    weights = change_point_weights(z.size, scale or z.size)[: alarm + 1]
    change = int(np.argmax(weights * tails))
    return Detection(statistic, alarm, change, float(tails[change]))


def _until_alarm(z: np.ndarray, low: np.ndarray, scale: int, fractions, threshold: float) -> np.ndarray:
    """:func:`detector_statistic` of one stream up to its first step at or above ``threshold`` (every step
    if none is), computed a stretch of steps at a time (:data:`WINDOW`, then longer): an early alarm costs
    the steps before it only. Each running sum and maximum enters the next stretch as its first term, so the
    numbers are those of one pass over the stream, to the last bit."""
    pieces: list[np.ndarray] = []
    total: np.ndarray = np.zeros((1, len(fractions)))
    reached: np.ndarray = np.zeros((1, len(fractions)))
    mass, certain = 0.0, False
    begin, size = 0, WINDOW
    while begin < z.size:
        stop = min(z.size, begin + size)
        logs = np.log1p(_bets(low[begin:stop], fractions) * z[begin:stop, None])  # steps x bets
        weights = _weights(begin, stop, scale)
        if begin == 0:  # nothing carried over
            running = np.cumsum(logs, axis=0)
            spread = np.logaddexp.accumulate(np.log(weights)[:, None] - (running - logs), axis=0)
            mass_now = np.cumsum(weights)
            certain_now = np.logical_or.accumulate(_certain(z[begin:stop], low[begin:stop]))
        else:
            running = np.cumsum(np.vstack([total, logs]), axis=0)[1:]
            spread = np.logaddexp.accumulate(np.vstack([reached, np.log(weights)[:, None] - (running - logs)]), 0)[1:]
            mass_now = np.cumsum(np.r_[mass, weights])[1:]
            certain_now = np.logical_or.accumulate(np.r_[certain, _certain(z[begin:stop], low[begin:stop])])[1:]
        statistic = np.exp(running + spread).mean(axis=-1) + (1 - mass_now)
        statistic = np.where(certain_now, np.inf, statistic)
        crossed = np.flatnonzero(statistic >= threshold)
        if crossed.size:
            pieces.append(statistic[: crossed[0] + 1])
            break
        pieces.append(statistic)
        total, reached, mass, certain = running[-1:], spread[-1:], mass_now[-1], certain_now[-1]
        begin, size = stop, min(2 * size, 64 * WINDOW)
    return np.concatenate(pieces)


def _weights(begin: int, stop: int, scale: int) -> np.ndarray:
    """:func:`change_point_weights` of steps ``begin + 1`` to ``stop`` (the same numbers)."""
    j = np.arange(begin + 1, stop + 1, dtype=float)
    return scale / ((scale + j - 1) * (scale + j))


def rate_increments(
    outcome, counted, audited, inclusion, bound: float, *, above: bool = True, smallest: float | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """The increments and their lower bounds that watch a rate ``P(outcome | counted)`` against ``bound``.

    Parameters
    ----------
    outcome, counted : array_like of bool
        Per case: the event whose rate is watched (the judge passes) and the cases it is a rate of (the
        human fails); only the audited cases' values are read.
    audited : array_like of bool
        Whether a human labelled the case.
    inclusion : array_like of float
        The probability that the case was audited (its sample design's), in (0, 1]. The bets are sized
        by the smallest of them (the last axis: a stream), never by a case's own.
    bound : float
        The edge of the accepted range.
    above : bool
        Watch for the rate rising above ``bound`` (else falling below it).
    smallest : float, optional
        The design's smallest inclusion probability, which sizes the bets, when the design knows one
        smaller than any case of ``inclusion`` has (a stratum none of these cases fell in); by default
        the smallest of ``inclusion`` (the last axis: a stream).

    Returns
    -------
    increments, lower : ndarray

    Examples
    --------
    >>> z, low = rate_increments([1, 0, 1], [1, 1, 0], [1, 1, 1], [0.5, 0.5, 0.5], 0.1)
    >>> z.tolist(), low.tolist()
    ([1.8, -0.2, 0.0], [-0.2, -0.2, -0.2])
    """
    outcome, counted, audited = (np.asarray(a, dtype=bool) for a in (outcome, counted, audited))
    pi = np.asarray(inclusion, dtype=float)
    if np.any(~(pi > 0)) or np.any(pi > 1):
        raise ValueError("inclusion: every case's probability of an audit must be in (0, 1]")
    sign = 1.0 if above else -1.0
    z = np.where(audited & counted, sign * (outcome.astype(float) - bound) / pi, 0.0)
    # one bound for every step, from the smallest inclusion probability of the design: a bet sized by this
    # case's own probability would depend on what the design targets (the judge's verdict), and favour it
    floor = pi.min(axis=-1, keepdims=True) if smallest is None else np.minimum(smallest, pi.min(axis=-1, keepdims=True))
    low = -(bound if above else 1 - bound) / floor
    return z, np.broadcast_to(low, z.shape).astype(float)


@checked(
    values=Array("the cases' values, one a step"),
    weights=Array("weights, one a step", length_of="values", nonnegative=True),
    alpha=PROBABILITY,
)
def confidence_sequence(
    values: ArrayLike,
    weights: ArrayLike,
    *,
    alpha: float = 0.05,
    max_weight: float | None = None,
    value_range: tuple[float, float] = (0.0, 1.0),
    grid: int = 201,
    fractions: tuple[float, ...] = BET_FRACTIONS,
    at: ArrayLike | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """A confidence sequence for a rate: after each step, the rates ``theta`` in [0, 1] that two-sided
    betting e-processes do not reject at ``alpha``.

    The rate is ``sum(weights * values) / sum(weights)`` in the long run: ``values`` are the outcomes
    of the cases the rate counts, ``weights`` their inverse inclusion probabilities (0 for a case that
    brings nothing: not audited, or not counted); or ``values`` are unbiased estimates of the rate
    itself, one a case, with weights 1 (a prediction-powered estimate, whose ``value_range`` is wider
    than [0, 1]). It holds at every step at once.

    Parameters
    ----------
    values : array_like of float of shape (n_steps,)
        In ``value_range``, in time order.
    weights : array_like of float of shape (n_steps,)
        Non-negative; the increment for ``theta`` is ``weights * (values - theta)``.
    alpha : float, default=0.05
        The probability that the sequence ever misses the rate.
    max_weight : float, optional
        The largest weight the design gives (one over its smallest inclusion probability), which sizes
        every bet; the largest of ``weights`` by default. A bet sized by a case's own weight would
        undo the weighting where the design targets what the rate counts.
    value_range : (float, float), default=(0.0, 1.0)
        The smallest and the largest value ``values`` can take (known in advance), around [0, 1].
    grid : int, default=201
        The number of rates tried in [0, 1]: the bounds are on this grid.
    fractions : tuple of float
        The bets mixed, as fractions (below 1) of the largest bet that keeps every e-process positive.
    at : array_like of int, optional
        The steps (0-based) after which the bounds are wanted; every step by default. The cost follows
        the weighted steps (a step of weight 0 moves nothing) and the steps asked for, not the stream.

    Returns
    -------
    low, high : ndarray of shape (n_steps,), or of the shape of ``at``
        After each step; ``nan`` before the first weighted case (every rate is possible).

    Examples
    --------
    >>> rng = np.random.default_rng(2)
    >>> x = (rng.random(2000) < 0.3).astype(float)
    >>> low, high = confidence_sequence(x, np.ones(2000))
    >>> bool(low[-1] < 0.3 < high[-1]), round(float(high[-1] - low[-1]), 2)
    (True, 0.07)
    >>> [b.tolist() for b in confidence_sequence(x, np.ones(2000), at=[999, 1999])] == [[low[999], low[-1]],
    ...                                                                               [high[999], high[-1]]]
    True
    """
    x = np.asarray(values, dtype=float)
    w = np.asarray(weights, dtype=float)
    lowest, highest = value_range
    if not lowest <= 0 <= 1 <= highest:
        raise ValueError(f"value_range={value_range}: it must hold [0, 1]")
    if np.any(w < 0) or np.any((x < lowest - 1e-12) | (x > highest + 1e-12)):
        raise ValueError(f"values in {list(value_range)} and nonnegative weights, one of each a step")
    top = float(max_weight if max_weight is not None else (w.max() if w.size else 1.0))
    if np.any(w > top * (1 + 1e-9)):
        raise ValueError(f"max_weight={top}: a weight is larger")
    steps = _steps(at, x.size)
    theta = np.linspace(0, 1, grid)
    f = np.asarray(fractions)[:, None]
    # the largest bets that keep 1 + lambda z >= 1 - f: z >= -w (theta - lowest) (up), z <= w (highest - theta)
    # (down); a floor on the reach keeps them finite at the ends, and no larger than they may be
    up = f / (top * np.maximum(theta - lowest, 1e-3))  # bets x grid
    down = f / (top * np.maximum(highest - theta, 1e-3))
    # a step of weight 0 moves no e-process (its increment is 0 for every theta, its log e-value exactly 0):
    # each step's bounds are those after the last weighted step up to it (nan before the first), so only the
    # weighted steps are summed, and the bounds are computed after those that end a step asked for
    weighted = np.flatnonzero(w > 0)
    last = np.searchsorted(weighted, steps, side="right") - 1  # -1: no weighted step yet
    ends = np.unique(last[last >= 0])
    bounds = np.full((2, ends.size), np.nan)
    if ends.size:
        summed = weighted[: ends[-1] + 1]
        for index, sums in _log_processes(x[summed], w[summed], summed, ends, theta, (up, down)):
            bounds[:, index] = _bounds(sums, theta, np.log(1 / alpha))
    low, high = np.full(steps.size, np.nan), np.full(steps.size, np.nan)
    low[last >= 0], high[last >= 0] = bounds[:, np.searchsorted(ends, last[last >= 0])]
    return low, high


def _steps(at: ArrayLike | None, n: int) -> np.ndarray:
    """The steps asked for (0-based, each in ``range(n)``), every step by default."""
    if at is None:
        return np.arange(n)
    steps = np.asarray(at)
    if steps.ndim != 1 or not np.issubdtype(steps.dtype, np.integer) or np.any((steps < 0) | (steps >= n)):
        raise ValueError(f"at: steps from 0 to {n - 1}, integers in one dimension")
    return steps


def _log_processes(x, w, positions, ends, theta, bets) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """The log e-processes (ends x 2 directions x bets x grid) after each weighted step of ``ends``
    (indices into ``x`` and ``w``, the weighted steps, whose places in the stream are ``positions``), a
    chunk of ends at a time: ``(index into ends, their sums)``.

    They are summed step by step, in the chunks of :data:`CHUNK` steps of the stream that the computation
    of every step sums (the same numbers, to the last bit); or, when a few pairs of value and weight recur
    over many steps between the ends (a judge's scores on a scale), as each pair's log e-value times the
    number of its steps (the same sums, to float rounding)."""
    if ends.size * 4 < x.size:
        pairs, code = _pairs(x, w)
        if pairs.shape[0] * ends.size * 4 < x.size:
            yield from _counted(pairs, code, ends, theta, bets)
            return
    signed = np.stack([bets[0], -bets[1]])  # 2 x bets x grid: up, and down (its increment negated)
    carry = np.zeros(signed.size)
    chunk = positions // CHUNK
    cuts = np.r_[0, np.flatnonzero(np.diff(chunk)) + 1, x.size]
    for begin, stop in itertools.pairwise(cuts):
        z = w[begin:stop, None] * (x[begin:stop, None] - theta[None, :])  # steps x grid
        logs = np.log1p(signed[None] * z[:, None, None, :]).reshape(stop - begin, -1)
        index = np.flatnonzero((ends >= begin) & (ends < stop))
        local = _running_sums(logs, np.r_[ends[index] - begin, stop - begin - 1])
        if index.size:
            yield index, (local[:-1] + carry).reshape(index.size, *signed.shape)
        carry = local[-1] + carry


def _running_sums(logs: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """``np.cumsum(logs, axis=0)[rows]`` (``rows`` increasing), the same numbers: a sum over the first axis
    adds its rows one after the other as a cumulative sum does, and numpy's sum is far quicker than its
    cumulative sum along that axis."""
    out = np.empty((rows.size, logs.shape[1]))
    before = None
    for i, (first, last) in enumerate(zip(np.r_[0, rows[:-1] + 1], rows + 1)):
        if last > first:
            if before is not None:
                logs[first] += before  # (sum so far) + row: addition commutes exactly
            before = logs[first:last].sum(axis=0)
        out[i] = before
    return out


def _pairs(x: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct pairs of value and weight (pairs x 2), and each step's (its index into them)."""
    values, of_value = np.unique(x, return_inverse=True)
    weights, of_weight = np.unique(w, return_inverse=True)
    kinds, code = np.unique(of_value * weights.size + of_weight, return_inverse=True)
    return np.column_stack([values[kinds // weights.size], weights[kinds % weights.size]]), code


def _counted(pairs, code, ends, theta, bets) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """:func:`_log_processes` from the log e-value of each pair of value and weight, times its steps."""
    z = (pairs[:, 1, None] * (pairs[:, 0, None] - theta[None, :]))[:, None, :]
    table = np.stack([np.log1p(sign * bet[None] * z) for sign, bet in zip((1, -1), bets)], 1)
    flat = table.reshape(len(pairs), -1)
    interval = np.searchsorted(ends, np.arange(code.size))  # the end that closes each step's stretch
    carry = np.zeros(flat.shape[1])
    for begin in range(0, ends.size, CHUNK):
        stop = min(begin + CHUNK, ends.size)
        first, after = np.searchsorted(interval, [begin, stop])
        counts = np.bincount(
            (interval[first:after] - begin) * len(pairs) + code[first:after], minlength=(stop - begin) * len(pairs)
        ).reshape(stop - begin, len(pairs))
        sums = np.cumsum(counts @ flat, axis=0) + carry
        carry = sums[-1]
        yield np.arange(begin, stop), sums.reshape(stop - begin, *table.shape[1:])


def _bounds(sums: np.ndarray, theta: np.ndarray, threshold: float) -> tuple[np.ndarray, np.ndarray]:
    """The smallest and largest rate of the grid not rejected after each step (nan: none is)."""
    k = np.logaddexp(_logmean(sums[:, 0]), _logmean(sums[:, 1])) - np.log(2)  # steps x grid
    kept = k < threshold
    has = kept.any(axis=1)
    first = np.argmax(kept, axis=1)
    last = theta.size - 1 - np.argmax(kept[:, ::-1], axis=1)
    return np.where(has, theta[first], np.nan), np.where(has, theta[last], np.nan)


def _logmean(logs: np.ndarray) -> np.ndarray:
    """log of the mean over the bets (the second axis) of exp(logs)."""
    top = logs.max(axis=1, keepdims=True)
    return (top + np.log(np.mean(np.exp(logs - top), axis=1, keepdims=True)))[:, 0]
