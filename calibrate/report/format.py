"""Numbers as people read them: an estimate with its interval, or why there is none."""

from __future__ import annotations

from typing import Any

__all__ = ["fmt_number", "fmt_estimate", "fmt_rate", "fmt_interval"]


def fmt_number(value: Any, digits: int = 3) -> str:
    """
    >>> fmt_number(0.12345), fmt_number(None), fmt_number(3.0)
    ('0.123', '—', '3')
    """
    if value is None:
        return "—"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return f"{value:.{digits}f}" if isinstance(value, float) else str(value)


def fmt_interval(pair: Any, digits: int = 3) -> str:
    if not pair or pair[0] is None:
        return "—"
    return f"[{fmt_number(pair[0], digits)}, {fmt_number(pair[1], digits)}]"


def fmt_estimate(stat: dict | None, digits: int = 3) -> str:
    """An estimate with its interval, or a dash and the reason it is undefined.

    >>> fmt_estimate({"estimate": 0.5, "ci_low": 0.4, "ci_high": 0.61})
    '0.500 [0.400, 0.610]'
    >>> fmt_estimate({"estimate": None, "reason": "one class only"})
    '— (one class only)'
    """
    if not stat:
        return "—"
    if stat.get("estimate") is None:
        return f"— ({stat.get('reason', 'undefined')})"
    text = f"{stat['estimate']:.{digits}f}"
    if stat.get("ci_low") is not None:
        text += f" [{stat['ci_low']:.{digits}f}, {stat['ci_high']:.{digits}f}]"
    return text


def fmt_rate(stat: dict | None) -> str:
    """A rate with its counts and interval.

    >>> fmt_rate({"estimate": 0.25, "ci_low": 0.1, "ci_high": 0.5, "k": 2, "n": 8})
    '0.250 (2/8) [0.100, 0.500]'
    """
    if not stat or stat.get("estimate") is None:
        return fmt_estimate(stat)
    return (f"{stat['estimate']:.3f} ({stat['k']}/{stat['n']}) [{stat['ci_low']:.3f}, {stat['ci_high']:.3f}]")
