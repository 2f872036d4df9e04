"""Closed-form confidence intervals: score intervals for rates, Fisher z for rank correlations.

Which method serves which statistic was measured by simulation (see the README, "How the intervals
were chosen"): a Wilson score interval for every rate at every sample size, Clopper-Pearson where at
least the nominal coverage must be guaranteed, and Fisher's z transform for rank correlations at small n.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike
from scipy import special, stats

from calibrate.base.params import Array, checked

__all__ = [
    "bonett_wright_se",
    "clopper_pearson_interval",
    "clopper_pearson_upper",
    "fieller_kendall_se",
    "fisher_z_interval",
    "normal_quantile",
    "spearman_with_interval",
    "wilson_interval",
]


#: counts of successes and of trials, as the rates take them (weighted counts need not be whole)
_SUCCESSES = Array(
    "counts of successes", ndim=None, broadcasts_with="trials", at_most="trials", missing=True, nonnegative=True
)
_TRIALS = Array("counts of trials", ndim=None, missing=True, nonnegative=True)


@checked("confidence", successes=_SUCCESSES, trials=_TRIALS)
def wilson_interval(
    successes: ArrayLike, trials: ArrayLike, *, confidence: float = 0.95
) -> tuple[np.ndarray, np.ndarray]:
    """Wilson score interval of a binomial proportion, vectorised.

    Written out because scipy offers it only one proportion at a time
    (``scipy.stats.binomtest(...).proportion_ci(method="wilson")``, against which it is tested).

    Parameters
    ----------
    successes : float or array_like of shape (n_rates,)
        The number of successes of each rate, ``0 <= successes <= trials``; not necessarily whole (a
        weighted count at its effective size).
    trials : float or array_like of shape (n_rates,)
        The number of trials of each rate (broadcast against ``successes``); ``trials == 0`` gives
        ``nan`` bounds, and so does a ``nan`` count.
    confidence : float, default=0.95
        Two-sided confidence level, in (0, 1).

    Returns
    -------
    low, high : ndarray of shape (n_rates,)
        The bounds, in [0, 1] (0-d arrays for scalar counts).

    Examples
    --------
    >>> low, high = wilson_interval(3, 10)
    >>> round(float(low), 4), round(float(high), 4)
    (0.1078, 0.6032)
    >>> [b.round(3).tolist() for b in wilson_interval([0, 5], [20, 5], confidence=0.9)]
    [[0.0, 0.649], [0.119, 1.0]]
    """
    k = np.asarray(successes, dtype=float)
    n = np.asarray(trials, dtype=float)
    z = normal_quantile(confidence)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = k / n
        denom = 1 + z**2 / n
        centre = (p + z**2 / (2 * n)) / denom
        half = z * np.sqrt(p * (1 - p) / n + z**2 / (4 * n**2)) / denom
        # the exact ends: 0 successes start at 0, n successes end at 1
        low = np.where(k == 0, 0.0, np.clip(centre - half, 0.0, 1.0))
        high = np.where(k == n, 1.0, np.clip(centre + half, 0.0, 1.0))
    low = np.where(n > 0, low, np.nan)
    high = np.where(n > 0, high, np.nan)
    return np.asarray(low, dtype=float), np.asarray(high, dtype=float)


@checked("confidence", successes=_SUCCESSES, trials=_TRIALS)
def clopper_pearson_upper(successes: ArrayLike, trials: ArrayLike, *, confidence: float = 0.95) -> np.ndarray:
    """One-sided Clopper-Pearson (exact) upper bound of a binomial proportion, vectorised.

    Guarantees at least ``confidence`` coverage, so it serves conservative rules such as
    "the false-pass rate is at most A with 95% confidence".

    Parameters
    ----------
    successes : float or array_like of shape (n_rates,)
        The number of successes of each rate, ``0 <= successes <= trials`` (not necessarily whole).
    trials : float or array_like of shape (n_rates,)
        The number of trials of each rate (broadcast against ``successes``); ``trials == 0`` gives ``nan``.
    confidence : float, default=0.95
        One-sided confidence level, in (0, 1).

    Returns
    -------
    upper : ndarray of shape (n_rates,)
        The upper bound, in [0, 1]; 1 when every trial succeeded.

    Examples
    --------
    >>> round(float(clopper_pearson_upper(0, 30)), 4)
    0.095
    >>> clopper_pearson_upper([0, 3], [10, 3], confidence=0.9).round(4).tolist()
    [0.2057, 1.0]
    """
    k = np.asarray(successes, dtype=float)
    n = np.asarray(trials, dtype=float)
    with np.errstate(invalid="ignore"):
        upper = stats.beta.ppf(confidence, k + 1, n - k)
    upper = np.where(k >= n, 1.0, upper)
    return np.where(n > 0, upper, np.nan)


@checked(
    "confidence",
    successes=Array("counts of successes", ndim=None, broadcasts_with="trials", at_most="trials", nonnegative=True),
    trials=Array("counts of trials", ndim=None, nonnegative=True),
)
def clopper_pearson_interval(
    successes: ArrayLike, trials: ArrayLike, *, confidence: float = 0.95
) -> tuple[np.ndarray, np.ndarray]:
    """Two-sided Clopper-Pearson (exact) interval of a binomial proportion, vectorised.

    Written out because scipy gives it one proportion at a time
    (``scipy.stats.binomtest(k, n).proportion_ci(method="exact")``, against which it is tested).

    Parameters
    ----------
    successes, trials : array_like
        Whole counts, ``0 <= successes <= trials`` (broadcast); ``trials == 0`` gives ``nan`` bounds.
    confidence : float, default=0.95
        Two-sided confidence level, in (0, 1): each tail holds at most ``(1 - confidence) / 2``.

    Returns
    -------
    low, high : ndarray
        The bounds, in [0, 1]: ``low`` 0 when no trial succeeded, ``high`` 1 when every one did.

    Examples
    --------
    >>> [b.round(4).tolist() for b in clopper_pearson_interval([0, 3, 2], [3, 3, 3])]
    [[0.0, 0.2924, 0.0943], [0.7076, 1.0, 0.9916]]
    """
    k = np.asarray(successes, dtype=float)
    n = np.asarray(trials, dtype=float)
    tail = (1 - confidence) / 2
    with np.errstate(invalid="ignore"):
        low = np.where(k > 0, stats.beta.ppf(tail, k, n - k + 1), 0.0)
    return np.where(n > 0, low, np.nan), clopper_pearson_upper(k, n, confidence=1 - tail)


def bonett_wright_se(rho: float, n: int) -> float:
    """Standard error of Fisher's z of a Spearman correlation (Bonett & Wright 2000)."""
    return float(np.sqrt((1 + rho**2 / 2) / (n - 3)))


def fieller_kendall_se(n: int) -> float:
    """Standard error of Fisher's z of a Kendall tau (Fieller, Hartley & Pearson 1957)."""
    return float(np.sqrt(0.437 / (n - 4)))


def fisher_z_interval(r: float, se: float, *, confidence: float = 0.95) -> tuple[float, float]:
    """Interval for a correlation from Fisher's z transform with a given standard error.

    Examples
    --------
    >>> low, high = fisher_z_interval(0.5, bonett_wright_se(0.5, 40))
    >>> round(low, 3), round(high, 3)
    (0.205, 0.712)
    """
    z = np.arctanh(np.clip(r, -1 + 1e-12, 1 - 1e-12))
    q = special.ndtri(0.5 + confidence / 2)
    return float(np.tanh(z - q * se)), float(np.tanh(z + q * se))


def spearman_with_interval(a: np.ndarray, b: np.ndarray, *, confidence: float = 0.95) -> dict:
    """Spearman's rho of two samples (scipy) with its Fisher z interval (Bonett-Wright SE), as a
    statistics-document figure; ``{"estimate": None, "reason"}`` under 4 cases or for constant values.

    Examples
    --------
    >>> r = spearman_with_interval(np.arange(10.0), np.array([0, 2, 1, 3, 4, 5, 7, 6, 8, 9.0]))
    >>> round(r["estimate"], 3), round(r["ci_low"], 3), round(r["ci_high"], 3)
    (0.976, 0.862, 0.996)
    """
    n = int(np.asarray(a).size)
    if n < 4 or np.ptp(a) == 0 or np.ptp(b) == 0:
        return {
            "estimate": None,
            "n": n,
            "reason": "fewer than 4 cases" if n < 4 else "constant values: no rank correlation",
        }
    rho = float(np.clip(stats.spearmanr(a, b).statistic, -1, 1))
    if abs(rho) >= 1 - 1e-12:  # a perfect rank correlation: Fisher's z is infinite, and no interval holds
        return {
            "estimate": rho,
            "ci_low": None,
            "ci_high": None,
            "ci_method": "Fisher z, Bonett-Wright SE",
            "ci_reason": f"a perfect rank agreement on {n} cases: no interval",
            "n": n,
        }
    low, high = fisher_z_interval(rho, bonett_wright_se(rho, n), confidence=confidence)
    return {
        "estimate": rho,
        "ci_low": float(low),
        "ci_high": float(high),
        "ci_method": "Fisher z, Bonett-Wright SE",
        "n": n,
    }


def normal_quantile(confidence: float) -> float:
    """The standard normal quantile of a two-sided interval at ``confidence``.

    >>> round(normal_quantile(0.95), 4)
    1.96
    """
    return float(stats.norm.ppf(0.5 + confidence / 2))
