"""One figure of a statistics document, typed: an estimate with its interval, how it was made and,
when it has none, why (scipy's ``ConfidenceInterval`` shape, plus calibrate's ``reason``).

An :class:`Estimate` writes the figure dict every ``--json`` document holds, byte for byte:
``{"estimate", "ci_low", "ci_high", "ci_method", "ci_width"}`` (and ``ci_reason`` when it has no
interval), or ``{"estimate": None, "reason"}`` when it has no value; the keys a figure carries beside
those (``chance_p``, ``k``, ``threshold``, ``upper_bound``, ...) travel in ``extra``, and the order
the keys were read in (``keys``) is the order they are written in.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Estimate", "finite_or_none", "is_figure"]

#: The keys a figure dict holds for the typed fields of :class:`Estimate`.
_TYPED = ("estimate", "ci_low", "ci_high", "ci_method", "reason", "ci_reason", "n", "lower_bound", "lower_bound_method")


def is_figure(value: Any) -> bool:
    """Whether ``value`` is a figure dict: a dict with a plain ``estimate`` (a number or None).

    Examples
    --------
    >>> is_figure({"estimate": None, "reason": "one class only"}), is_figure({"estimate": {"a": 1}})
    (True, False)
    """
    return isinstance(value, Mapping) and "estimate" in value and not isinstance(value["estimate"], (dict, list))


def finite_or_none(value: float | None) -> float | None:
    """``value`` as a float, or None when it is missing or not finite."""
    return None if value is None or not math.isfinite(value) else float(value)


@dataclass(frozen=True)
class Estimate:
    """A statistic's value with its interval, or no value and the reason.

    Parameters
    ----------
    value : float or None
        The estimate (``"estimate"``); None when undefined, and ``reason`` says why.
    ci_low, ci_high : float, optional
        The interval's ends (``"ci_low"``, ``"ci_high"``); None when there is none.
    method : str, optional
        How the interval was made (``"ci_method"``).
    reason : str, optional
        Why there is no value (``"reason"``), or, with a value, why there is no interval (``"ci_reason"``).
    n : int, optional
        The cases (or labels) it rests on, when the figure says (``"n"``).
    lower_bound, lower_bound_method : optional
        The one-sided lower bound a gate reads, and how it was made.
    extra : dict
        The figure's other keys (``ci_width``, ``chance_p``, ``k``, ``threshold``, ...), as written.
    keys : tuple of str
        The figure's keys in the order they are written; by default the order
        :func:`calibrate.analysis.figures.estimate` writes: the value and interval first, then ``n``, the
        bound and ``extra``.

    Examples
    --------
    >>> e = Estimate.interval(0.5, 0.25, 0.75, "Wilson score")
    >>> e.to_dict()
    {'estimate': 0.5, 'ci_low': 0.25, 'ci_high': 0.75, 'ci_method': 'Wilson score', 'ci_width': 0.5}
    >>> Estimate.from_dict(e.to_dict()) == e, Estimate.undefined("one class only").to_dict()
    (True, {'estimate': None, 'reason': 'one class only'})
    """

    value: float | None
    ci_low: float | None = None
    ci_high: float | None = None
    method: str | None = None
    reason: str | None = None
    n: int | None = None
    lower_bound: float | None = None
    lower_bound_method: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    keys: tuple[str, ...] = ()

    @classmethod
    def __get_pydantic_json_schema__(cls, core_schema: Any, handler: Any) -> dict[str, Any]:
        """The JSON schema of the figure dict :meth:`to_dict` writes (not of the fields): for
        ``scripts/write_schemas.py``, through pydantic's ``TypeAdapter``."""
        number, text = {"type": ["number", "null"]}, {"type": ["string", "null"]}
        return {
            "title": "Estimate",
            "description": "A figure: an estimate with its interval, or no estimate and the reason; other keys "
            "(chance_p, k, threshold, upper_bound, ...) may follow.",
            "type": "object",
            "properties": {
                "estimate": number,
                "reason": text,
                "ci_low": number,
                "ci_high": number,
                "ci_method": text,
                "ci_width": number,
                "ci_reason": text,
                "n": {"type": ["integer", "null"]},
                "lower_bound": number,
                "lower_bound_method": text,
            },
            "required": ["estimate"],
        }

    @classmethod
    def undefined(cls, reason: str) -> Estimate:
        """A statistic that has no value here, and why."""
        return cls(None, reason=reason, keys=("estimate", "reason"))

    @classmethod
    def interval(
        cls, value: float, low: float | None, high: float | None, method: str, ci_reason: str | None = None
    ) -> Estimate:
        """A statistic with its interval (non-finite ends read as none) and the method that made it; with no
        interval, the reason (``"no interval"`` unless given)."""
        low, high = finite_or_none(low), finite_or_none(high)
        width = None if low is None or high is None else high - low
        keys = ("estimate", "ci_low", "ci_high", "ci_method", "ci_width")
        if low is None:
            return cls(
                float(value),
                low,
                high,
                method,
                ci_reason or "no interval",
                extra={"ci_width": width},
                keys=(*keys, "ci_reason"),
            )
        return cls(float(value), low, high, method, extra={"ci_width": width}, keys=keys)

    def __post_init__(self) -> None:
        if not self.keys:  # the order figures.estimate writes; set once, so equal figures compare equal
            object.__setattr__(self, "keys", self._order())
        missing = [k for k in self.extra if k not in self.keys]
        if missing:
            raise ValueError(f"Estimate: extra keys {missing} are not among keys {list(self.keys)}")

    def with_keys(self, **added: Any) -> Estimate:
        """This figure with keys added after its own (those of the typed fields set them)."""
        typed = {k: v for k, v in added.items() if k in ("n", "lower_bound", "lower_bound_method")}
        extra = {**self.extra, **{k: v for k, v in added.items() if k not in typed}}
        keys = self.keys + tuple(k for k in added if k not in self.keys)
        return Estimate(**{**self._fields(), **typed, "extra": extra, "keys": keys})

    @property
    def ci_reason(self) -> str | None:
        """Why a value has no interval: the figure's ``ci_reason``, or None."""
        return self._get("ci_reason") if "ci_reason" in self.keys else None

    def _fields(self) -> dict[str, Any]:
        return {
            "value": self.value,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
            "method": self.method,
            "reason": self.reason,
            "n": self.n,
            "lower_bound": self.lower_bound,
            "lower_bound_method": self.lower_bound_method,
        }

    def _order(self) -> tuple[str, ...]:
        if self.keys:
            return self.keys
        head: tuple[str, ...] = (
            ("estimate", "reason") if self.value is None else ("estimate", "ci_low", "ci_high", "ci_method")
        )
        if self.value is not None and self.reason is not None:
            head += ("ci_reason",)
        tail = tuple(k for k in ("n", "lower_bound", "lower_bound_method") if getattr(self, k) is not None)
        return head + tail + tuple(k for k in self.extra if k not in head + tail)

    def _get(self, key: str) -> Any:
        if key == "estimate":
            return self.value
        if key == "ci_method":
            return self.method
        if key in ("reason", "ci_reason") and key not in self.extra:
            return self.reason
        if key in ("ci_low", "ci_high", "n", "lower_bound", "lower_bound_method"):
            return getattr(self, key)
        return self.extra[key]

    def to_dict(self) -> dict[str, Any]:
        """The figure dict of the ``--json`` documents, its keys in the order read (or written).

        Examples
        --------
        >>> Estimate(0.7, 0.6, 0.8, "BCa", n=40, lower_bound=0.62, lower_bound_method="Fisher").to_dict()["lower_bound"]
        0.62
        """
        return {key: self._get(key) for key in self.keys}

    @classmethod
    def from_dict(cls, figure: Mapping[str, Any]) -> Estimate:
        """The figure of a stored document (a dict with ``estimate``).

        A figure holds ``reason`` (no value) or ``ci_reason`` (no interval) as ``reason``; holding both,
        ``ci_reason`` stays in ``extra``.

        Examples
        --------
        >>> Estimate.from_dict({"estimate": 0.4, "ci_low": None, "ci_high": None, "ci_method": "BCa",
        ...                     "ci_width": None, "ci_reason": "every resample gives 0.4", "chance_p": 0.2}).reason
        'every resample gives 0.4'
        """
        keys = tuple(figure)
        reason_key = "reason" if "reason" in figure else "ci_reason" if "ci_reason" in figure else None
        typed = {k for k in _TYPED if k in figure and (k not in ("reason", "ci_reason") or k == reason_key)}
        value = figure.get("estimate")
        return cls(
            value=None if value is None else value,
            ci_low=figure.get("ci_low"),
            ci_high=figure.get("ci_high"),
            method=figure.get("ci_method"),
            reason=figure.get(reason_key) if reason_key else None,
            n=figure.get("n"),
            lower_bound=figure.get("lower_bound"),
            lower_bound_method=figure.get("lower_bound_method"),
            extra={k: v for k, v in figure.items() if k not in typed},
            keys=keys,
        )
