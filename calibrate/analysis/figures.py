"""The shape of every figure in a statistics document: an estimate with its interval, how it was made
and, when it has none, why; or no estimate and the reason."""

from __future__ import annotations

import math
from typing import Any

from calibrate.stats.bootstrap import Interval


def finite_or_none(value: float | None) -> float | None:
    """``value`` as a float, or None when it is missing or not finite."""
    return None if value is None or not math.isfinite(value) else float(value)


def undefined(reason: str) -> dict[str, Any]:
    """A statistic that has no value here, and why.

    Examples
    --------
    >>> undefined("one class only")
    {'estimate': None, 'reason': 'one class only'}
    """
    return {"estimate": None, "reason": reason}


def estimate(
    value: float, low: float | None, high: float | None, method: str, ci_reason: str | None = None
) -> dict[str, Any]:
    """A statistic with its interval and the method that made it; with no interval, the reason.

    Examples
    --------
    >>> estimate(0.5, 0.25, 0.75, "Wilson score")["ci_width"]
    0.5
    >>> estimate(1.0, None, None, "BCa", "every resample gives 1")["ci_reason"]
    'every resample gives 1'
    """
    low, high = finite_or_none(low), finite_or_none(high)
    out = {
        "estimate": float(value),
        "ci_low": low,
        "ci_high": high,
        "ci_method": method,
        "ci_width": None if low is None or high is None else high - low,
    }
    if low is None:
        out["ci_reason"] = ci_reason or "no interval"
    return out


def from_interval(value: float, interval: Interval) -> dict[str, Any]:
    """A statistic with its bootstrap interval, in the shape every figure of the statistics document has."""
    out = estimate(value, interval.low, interval.high, interval.method, interval.reason)
    if interval.n_dropped:
        out["ci_dropped_resamples"] = interval.n_dropped
    return out
