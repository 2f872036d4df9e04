"""The shape of every figure in a statistics document: an estimate with its interval, how it was made
and, when it has none, why; or no estimate and the reason."""

from __future__ import annotations

from typing import Any

__all__ = ["estimate", "finite_or_none", "from_interval", "interval_estimate", "undefined"]

from calibrate.base.estimates import Estimate, finite_or_none
from calibrate.stats.bootstrap import Interval


def undefined(reason: str) -> dict[str, Any]:
    """A statistic that has no value here, and why.

    Examples
    --------
    >>> undefined("one class only")
    {'estimate': None, 'reason': 'one class only'}
    """
    return Estimate.undefined(reason).to_dict()


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
    return Estimate.interval(value, low, high, method, ci_reason).to_dict()


def interval_estimate(value: float, interval: Interval) -> Estimate:
    """A statistic with its bootstrap interval, typed (:func:`from_interval` is its figure dict)."""
    out = Estimate.interval(value, interval.low, interval.high, interval.method, interval.reason)
    return out.with_keys(ci_dropped_resamples=interval.n_dropped) if interval.n_dropped else out


def from_interval(value: float, interval: Interval) -> dict[str, Any]:
    """A statistic with its bootstrap interval, in the shape every figure of the statistics document has."""
    return interval_estimate(value, interval).to_dict()
