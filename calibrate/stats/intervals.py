"""Closed-form confidence intervals: score intervals for rates, Fisher z for rank correlations.

Which method serves which statistic was measured by simulation (see the README, "How the intervals
were chosen"): a Wilson score interval for every rate at every sample size, Clopper-Pearson where at
least the nominal coverage must be guaranteed, and Fisher's z transform for rank correlations at small n.
"""

from __future__ import annotations

import numpy as np
from scipy import special, stats

__all__ = [
    "bonett_wright_se",
    "clopper_pearson_upper",
    "fieller_kendall_se",
    "fisher_z_interval",
    "normal_quantile",
    "spearman_with_interval",
    "wilson_interval",
]


def wilson_interval(successes, trials, *, confidence: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Wilson score interval of a binomial proportion, vectorised.

    Written out because scipy offers it only one proportion at a time
    (``scipy.stats.binomtest(...).proportion_ci(method="wilson")``, against which it is tested).

    Parameters
    ----------
    successes, trials : array_like
        Counts; ``trials == 0`` gives ``nan`` bounds.
    confidence : float, keyword-only
        Two-sided confidence level.

    Returns
    -------
    low, high : ndarray

    Examples
    --------
    >>> low, high = wilson_interval(3, 10)
    >>> round(float(low), 4), round(float(high), 4)
    (0.1078, 0.6032)
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


def clopper_pearson_upper(successes, trials, *, confidence: float = 0.95) -> np.ndarray:
    """One-sided Clopper-Pearson (exact) upper bound of a binomial proportion.

    Guarantees at least ``confidence`` coverage, so it serves conservative rules such as
    "the false-pass rate is at most A with 95% confidence".

    Examples
    --------
    >>> round(float(clopper_pearson_upper(0, 30)), 4)
    0.095
    """
    k = np.asarray(successes, dtype=float)
    n = np.asarray(trials, dtype=float)
    with np.errstate(invalid="ignore"):
        upper = stats.beta.ppf(confidence, k + 1, n - k)
    upper = np.where(k >= n, 1.0, upper)
    return np.where(n > 0, upper, np.nan)


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
