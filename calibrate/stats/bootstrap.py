"""Seeded case resampling and bootstrap intervals (BCa and percentile).

Resample ``r`` of a set of ``n`` cases is drawn from its own generator, seeded with ``(seed, r)``, so
the resamples are the same whatever the batch size, and the same for every judge scored on one case
set: differences between judges can then be bootstrapped pairwise.

Replicates where a statistic is undefined (a resample with one class only, say) are dropped and
counted, as the simulation in the README recommends; ``scipy.stats.bootstrap`` instead returns no
interval at all in that situation, which is why the interval itself is computed here.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy import special

from calibrate.base.params import Array, Constraint, checked
from calibrate.stats.kernel import SERIAL_WORK
from calibrate.stats.threads import launching, numba

__all__ = ["Interval", "bca_interval", "case_counts", "percentile_interval", "resample_indices"]


def resample_indices(
    n_cases: int, n_boot: int, *, seed: int, batch_size: int = 64, strata: np.ndarray | None = None
) -> Iterator[np.ndarray]:
    """Yield batches of bootstrap resamples as index arrays of shape ``(batch, n_cases)``.

    Parameters
    ----------
    n_cases : int
        Size of the case set; every resample draws ``n_cases`` cases with replacement.
    n_boot : int
        Total number of resamples.
    seed : int, keyword-only
        Resample ``r`` uses ``numpy.random.default_rng([seed, r])``.
    batch_size : int, keyword-only
        Resamples per yielded batch (memory only: results do not depend on it).
    strata : ndarray of int, optional
        A stratum per case: each resample then draws as many cases from each stratum as it holds,
        with replacement within the stratum (as a stratified sample design drew them). One stratum
        gives the same resamples as none.

    Examples
    --------
    >>> batches = list(resample_indices(5, 3, seed=1, batch_size=2))
    >>> [b.shape for b in batches]
    [(2, 5), (1, 5)]
    >>> bool((next(resample_indices(5, 1, seed=1))[0] == batches[0][0]).all())
    True
    >>> strata = np.array([1, 0, 1, 0, 0, 2])
    >>> s = np.concatenate(list(resample_indices(6, 50, seed=1, strata=strata)))
    >>> bool((np.sort(strata[s], axis=1) == np.sort(strata)).all())   # each stratum keeps its size
    True
    """
    dtype = np.int32 if n_cases < 2**31 else np.int64
    groups = None
    if strata is not None and np.unique(strata).size > 1:
        order = np.argsort(strata, kind="stable")
        groups = np.split(order.astype(dtype), np.flatnonzero(np.diff(np.asarray(strata)[order])) + 1)
    for start in range(0, n_boot, batch_size):
        stop = min(n_boot, start + batch_size)
        batch = np.empty((stop - start, n_cases), dtype=dtype)
        for row, r in enumerate(range(start, stop)):
            rng = np.random.default_rng([seed, r])
            if groups is None:
                batch[row] = rng.integers(0, n_cases, n_cases, dtype=dtype)
            else:
                batch[row] = np.concatenate([g[rng.integers(0, g.size, g.size)] for g in groups])
        yield batch


def case_counts(indices: np.ndarray, n_cases: int) -> np.ndarray:
    """How often each case appears in each resample, ``(batch, n_cases)``.

    Stored as float32 while every count and every rank derived from it is exact in float32 (whole
    and half numbers below 2**23); the statistics accumulate their products in float64.

    Examples
    --------
    >>> case_counts(np.array([[0, 0, 2], [1, 2, 2]]), 3).tolist()
    [[2.0, 0.0, 1.0], [0.0, 1.0, 2.0]]
    """
    dtype = np.float32 if n_cases < 2**22 else np.float64
    # a small batch is counted on the calling thread (waking the workers would cost more)
    count = _count_rows if indices.size >= SERIAL_WORK else _count_rows_serial
    with launching():
        return count(indices, n_cases, np.zeros(0, dtype=dtype))


@numba.njit(cache=True, parallel=True)
def _count_rows(indices, n_cases, like):  # pragma: no cover - compiled
    counts = np.zeros((indices.shape[0], n_cases), dtype=like.dtype)
    for r in numba.prange(indices.shape[0]):
        for i in range(indices.shape[1]):
            counts[r, indices[r, i]] += 1
    return counts


@numba.njit(cache=True)
def _count_rows_serial(indices, n_cases, like):  # pragma: no cover - compiled
    counts = np.zeros((indices.shape[0], n_cases), dtype=like.dtype)
    for r in range(indices.shape[0]):
        for i in range(indices.shape[1]):
            counts[r, indices[r, i]] += 1
    return counts


@dataclass(frozen=True)
class Interval:
    """A bootstrap interval and the number of resamples it rests on.

    Attributes
    ----------
    low, high : float or None
        The bounds; ``None`` when too few resamples defined the statistic (``reason`` says so).
    method : str
        How it was made, with the number of resamples it rests on.
    n_valid, n_dropped : int
        The resamples that defined the statistic, and those dropped because they did not.
    reason : str or None
        Why there is no interval.
    """

    low: float | None
    high: float | None
    method: str
    n_valid: int
    n_dropped: int
    reason: str | None = None


def _usable(replicates, method: str, min_valid: int) -> tuple[np.ndarray, int, str, Interval | None]:
    """The defined replicates, how many were dropped, the method's name, and the interval to return
    at once when too few resamples defined the statistic."""
    replicates = np.asarray(replicates, dtype=float)
    boot = replicates[np.isfinite(replicates)]
    dropped = int(replicates.size - boot.size)
    method = f"{method} ({boot.size} resamples of cases)"
    if boot.size < min_valid:
        return (
            boot,
            dropped,
            method,
            Interval(
                None,
                None,
                method,
                boot.size,
                dropped,
                f"only {boot.size} resamples defined the statistic (need {min_valid})",
            ),
        )
    return boot, dropped, method, None


#: a statistic's value on each resample: an undefined one (``nan``, ``inf``) is dropped and counted
_REPLICATES = Array("replicates of the statistic", finite=False, nonempty=False)
#: at least one defined replicate
_MIN_VALID = Constraint(
    "a whole number of resamples, 1 or more", lambda v: bool(isinstance(v, int | np.integer) and v >= 1)
)


@checked("confidence", replicates=_REPLICATES, min_valid=_MIN_VALID)
def percentile_interval(
    replicates: ArrayLike, *, confidence: float = 0.95, min_valid: int = 100, discrete: bool = False
) -> Interval:
    """Percentile bootstrap interval, dropping undefined replicates.

    With ``discrete=True`` the bounds are replicate values themselves (inverted CDF), which suits a
    statistic such as a chosen threshold that can only take the judge's observed scores.

    Parameters
    ----------
    replicates : array_like of float of shape (n_resamples,)
        The statistic on each bootstrap resample; ``nan`` and infinite values are dropped and counted.
    confidence : float, default=0.95
        Two-sided confidence level, in (0, 1).
    min_valid : int, default=100
        Fewer defined replicates give no interval (``low`` and ``high`` ``None``, with a ``reason``).
    discrete : bool, default=False
        Bounds taken among the replicates (``numpy.quantile``'s ``inverted_cdf``), else interpolated.

    Returns
    -------
    Interval

    Examples
    --------
    >>> iv = percentile_interval(np.arange(1000.0))
    >>> round(iv.low, 1), round(iv.high, 1)
    (25.0, 974.0)
    >>> percentile_interval([0.5, np.nan], min_valid=2).reason
    'only 1 resamples defined the statistic (need 2)'
    """
    boot, dropped, method, too_few = _usable(replicates, "percentile bootstrap", min_valid)
    if too_few:
        return too_few
    alpha = (1 - confidence) / 2
    low, high = np.quantile(boot, [alpha, 1 - alpha], method="inverted_cdf" if discrete else "linear")
    return Interval(float(low), float(high), method, boot.size, dropped)


@checked(
    "confidence",
    replicates=_REPLICATES,
    jackknife=Array("leave-one-out values of the statistic", finite=False),
    jackknife_weights=Array(
        "how many cases each leave-one-out value stands for", length_of="jackknife", nonnegative=True, optional=True
    ),
    min_valid=_MIN_VALID,
)
def bca_interval(
    estimate: float,
    replicates: ArrayLike,
    jackknife: ArrayLike,
    jackknife_weights: ArrayLike | None = None,
    *,
    confidence: float = 0.95,
    min_valid: int = 100,
) -> Interval:
    """Bias-corrected and accelerated (BCa) bootstrap interval (Efron 1987).

    Parameters
    ----------
    estimate : float
        The statistic on the full sample.
    replicates : array_like of float of shape (n_resamples,)
        The statistic on each bootstrap resample; ``nan`` and infinite values are dropped and counted.
    jackknife : array_like of float of shape (n_jackknife,)
        The statistic with one case (or one group of cases) left out, for the acceleration; undefined
        values are left out of it.
    jackknife_weights : array_like of float of shape (n_jackknife,), optional
        How many cases each jackknife value stands for (cases sharing a cell of the contingency
        table give the same leave-one-out value, so each distinct value is computed once); 1 each
        by default. A value of weight ``k`` counts as ``k`` repeated values.
    confidence : float, default=0.95
        Two-sided confidence level, in (0, 1).
    min_valid : int, default=100
        Fewer defined replicates give no interval (``low`` and ``high`` ``None``, with a ``reason``).

    Returns
    -------
    Interval
        When every replicate is equal, the interval is that one value.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> x = rng.exponential(size=200)
    >>> boot = [rng.choice(x, x.size).mean() for _ in range(2000)]
    >>> jack = (x.sum() - x) / (x.size - 1)
    >>> iv = bca_interval(x.mean(), boot, jack)
    >>> bool(iv.low < x.mean() < iv.high), iv.method
    (True, 'BCa bootstrap (2000 resamples of cases)')
    """
    boot, dropped, method, too_few = _usable(replicates, "BCa bootstrap", min_valid)
    if too_few:
        return too_few
    if np.all(boot == boot[0]):
        return Interval(float(boot[0]), float(boot[0]), method, boot.size, dropped)
    # bias correction: the share of replicates below the estimate (ties count half)
    below = (np.sum(boot < estimate) + 0.5 * np.sum(boot == estimate)) / boot.size
    below = np.clip(below, 1 / (2 * boot.size), 1 - 1 / (2 * boot.size))
    z0 = special.ndtri(below)
    jack = np.asarray(jackknife, dtype=float)
    weights = np.ones_like(jack) if jackknife_weights is None else np.asarray(jackknife_weights, float)
    keep = np.isfinite(jack) & (weights > 0)
    jack, weights = jack[keep], weights[keep]
    acceleration = 0.0
    if jack.size > 1:
        d = np.average(jack, weights=weights) - jack
        denom = 6.0 * np.sum(weights * d**2) ** 1.5
        if denom > 0:
            acceleration = float(np.sum(weights * d**3) / denom)
    alpha = (1 - confidence) / 2
    z = special.ndtri([alpha, 1 - alpha])
    adjusted = special.ndtr(z0 + (z0 + z) / (1 - acceleration * (z0 + z)))
    low, high = np.quantile(boot, adjusted)
    return Interval(float(low), float(high), method, boot.size, dropped)
