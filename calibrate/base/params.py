"""The public functions' common parameters, checked where they enter, by one declared mechanism (in the
manner of scikit-learn's ``@validate_params``): a function declares the constraint of each such parameter
with :func:`checked`, and a value outside it is a ``ValueError`` naming the parameter and what was expected
(a :class:`~calibrate.base.errors.ParameterText`, so the command line names the flag), before any work.

The common parameters (:data:`CHECKED`) are declared by name; any other parameter by its own constraint,
a scalar's :class:`Constraint` or an array's :class:`Array` (its dimensions, its length against another
parameter's, finite or non-negative values): the array-level statistics of :mod:`calibrate.stats` declare
theirs so.

``tests/base/test_params.py`` walks the public API: every public function that takes ``confidence``,
``n_boot`` or ``seed`` declares it, and refuses a value outside it.
"""

from __future__ import annotations

import functools
import inspect
import math
import numbers
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ParamSpec, Protocol, TypeVar

from calibrate.base.errors import NO_VALUE, ParameterText

__all__ = [
    "CHECKED",
    "LEVEL",
    "PROBABILITY",
    "RESAMPLES",
    "SEED",
    "Array",
    "Check",
    "Constraint",
    "OneOf",
    "checked",
]

P = ParamSpec("P")
R = TypeVar("R")


@dataclass(frozen=True)
class Constraint:
    """What a parameter accepts: a test of a value, and the words that say what was expected."""

    expected: str
    accepts: Callable[[Any], bool]

    def problem(self, name: str, value: Any, given: dict[str, Any]) -> ParameterText | None:
        """Why ``value`` of parameter ``name`` is refused (``None``: it is accepted)."""
        if self.accepts(value):
            return None
        return ParameterText(f"{{{name}}}: expected {self.expected}", **{name: value})


class Check(Protocol):
    """What :func:`checked` asks of a constraint: why a given value is refused, or ``None``."""

    def problem(self, name: str, value: Any, given: dict[str, Any]) -> ParameterText | None: ...


def OneOf(*choices: str) -> Constraint:
    """One of a few words (a ``Literal`` parameter).

    >>> OneOf("nominal", "ordinal").problem("level", "ratio", {})
    "level='ratio': expected one of 'nominal', 'ordinal'"
    """
    return Constraint("one of " + ", ".join(repr(c) for c in choices), lambda v: isinstance(v, str) and v in choices)


@dataclass(frozen=True)
class Array:
    """What an array parameter accepts: its number of dimensions, its length (the first axis) against
    another parameter's, and its values.

    Parameters
    ----------
    what : str
        The values, in words ("human verdicts", "scores").
    ndim : int, optional
        The number of dimensions; any when ``None`` (a scalar or an array that broadcasts).
    length_of : str, optional
        The parameter whose length (first axis) this one's must equal, when both are given.
    broadcasts_with : str, optional
        The parameter this one must broadcast against, when both are given.
    at_most : str, optional
        The parameter whose values bound this one's, element by element (successes and trials).
    missing : bool
        ``nan`` is accepted (a missing label); else every value is finite.
    finite : bool
        ``False``: any value is accepted, ``nan`` and infinities too (bootstrap replicates, where an
        undefined one is dropped and counted).
    nonnegative, binary, nonempty, optional : bool
        Values ``>= 0``; values 0 or 1 (or ``bool``); at least one element; ``None`` accepted.

    Examples
    --------
    >>> weights = Array("weights", length_of="score", nonnegative=True, optional=True)
    >>> print(weights.problem("sample_weight", [1, -2], {"score": [0.1, 0.2]}))
    sample_weight: expected weights, a 1-d array of finite values >= 0; it has a negative value
    >>> print(weights.problem("sample_weight", [1, 2, 3], {"score": [0.1, 0.2]}))
    sample_weight: expected weights, a 1-d array of finite values >= 0, one per element of score (2); it has 3
    """

    what: str
    ndim: int | None = 1
    length_of: str | None = None
    broadcasts_with: str | None = None
    at_most: str | None = None
    missing: bool = False
    finite: bool = True
    nonnegative: bool = False
    binary: bool = False
    nonempty: bool = True
    optional: bool = False

    @property
    def expected(self) -> str:
        """The accepted arrays, in words."""
        shape = "an array" if self.ndim is None else f"a {self.ndim}-d array"
        values = "0 or 1" if self.binary else "finite values" if self.finite and not self.missing else "values"
        if self.nonnegative and not self.binary:
            values += " >= 0"
        if self.missing:
            values += " (nan where missing)"
        return f"{self.what}, {shape} of {values}"

    def _refused(self, name: str, found: str, requirement: str = "") -> ParameterText:
        return ParameterText(f"{{{name}}}: expected {self.expected}{requirement}; {found}", **{name: NO_VALUE})

    def problem(self, name: str, value: Any, given: dict[str, Any]) -> ParameterText | None:
        """Why ``value`` of parameter ``name`` is refused (``None``: it is accepted), with the other
        parameters ``given`` for the relations."""
        import numpy as np

        if value is None and self.optional:
            return None
        raw = _numbers(value)
        if raw is None:
            return self._refused(name, f"got {type(value).__name__} {str(value)[:40]!r}")
        shape = raw.shape
        if self.ndim is not None and len(shape) != self.ndim:
            return self._refused(name, f"it has shape {shape}")
        if self.nonempty and raw.size == 0:
            return self._refused(name, "it is empty")
        other = _numbers(given.get(self.length_of)) if self.length_of else None
        if other is not None and other.ndim and shape and shape[0] != other.shape[0]:
            per = "row" if other.ndim > 1 else "element"
            return self._refused(name, f"it has {shape[0]}", f", one per {per} of {self.length_of} ({other.shape[0]})")
        partner = _numbers(given.get(self.broadcasts_with)) if self.broadcasts_with else None
        if partner is not None and not _broadcast(shape, partner.shape):
            return self._refused(name, f"shape {shape} against {partner.shape}", f" matching {self.broadcasts_with}")
        array = raw.astype(float, copy=False)
        finite = np.isfinite(array)
        if self.finite and not finite.all() and (not self.missing or np.isinf(array).any()):
            return self._refused(name, "it has an infinite value" if self.missing else "it has a nan or infinite value")
        present = array if finite.all() else array[finite]
        if self.binary and not ((present == 0) | (present == 1)).all():
            return self._refused(name, "it has a value other than 0 and 1")
        if self.nonnegative and (present < 0).any():
            return self._refused(name, "it has a negative value")
        bound = _numbers(given.get(self.at_most)) if self.at_most else None
        if bound is not None and (array > bound * (1 + 1e-9) + 1e-12).any():  # nan compares False
            return self._refused(name, f"it is above {self.at_most}", f", at most {self.at_most}")
        return None


def _numbers(value: Any) -> Any:
    """``value`` as a numpy array of numbers (booleans included), or ``None`` when it is not one (a ragged
    list, a string, ``None``)."""
    import numpy as np  # here, not on import: base/ stays light for the command line's start

    if value is None or isinstance(value, str | bytes):
        return None
    try:
        array = np.asarray(value)
    except (ValueError, TypeError):
        return None
    return array if array.dtype.kind in "biuf" else None


def _broadcast(a: tuple[int, ...], b: tuple[int, ...]) -> bool:
    """Whether arrays of shapes ``a`` and ``b`` broadcast against each other."""
    return all(x == y or x == 1 or y == 1 for x, y in zip(a[::-1], b[::-1]))


def _whole(value: Any) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _real(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)


#: a two-sided confidence level
LEVEL = Constraint("a confidence level between 0 and 1 (both excluded)", lambda v: _real(v) and 0 < v < 1)
#: a number of bootstrap resamples (0: no interval)
RESAMPLES = Constraint("a whole number of bootstrap resamples, 0 or more", lambda v: _whole(v) and v >= 0)
#: a random seed
SEED = Constraint("a whole number, 0 or more (the random seed)", lambda v: _whole(v) and v >= 0)
#: a probability of a false alarm (a test's level)
PROBABILITY = Constraint("a probability between 0 and 1 (both excluded)", lambda v: _real(v) and 0 < v < 1)

#: the constraint of each common parameter, by its name
CHECKED = {"confidence": LEVEL, "n_boot": RESAMPLES, "seed": SEED}


def checked(*names: str, **constraints: Check) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Check the parameters ``names`` (keys of :data:`CHECKED`) and those of ``constraints`` (a parameter's
    own :class:`Constraint` or :class:`Array`) of the decorated function on every call: a value given
    outside its constraint raises ``ValueError`` naming it; a default is not checked.

    Examples
    --------
    >>> @checked("confidence")
    ... def interval(values, confidence=0.95):
    ...     return confidence
    >>> interval([1], confidence=0.9)
    0.9
    >>> interval([1], confidence=1.5)
    Traceback (most recent call last):
    ...
    ValueError: confidence=1.5: expected a confidence level between 0 and 1 (both excluded)
    >>> @checked(values=Array("values"))
    ... def total(values):
    ...     return sum(values)
    >>> total([1.0, float("nan")])
    Traceback (most recent call last):
    ...
    ValueError: values: expected values, a 1-d array of finite values; it has a nan or infinite value
    """
    constraints = {name: CHECKED[name] for name in names} | constraints

    def wrap(function: Callable[P, R]) -> Callable[P, R]:
        signature = inspect.signature(function)
        missing = set(constraints) - set(signature.parameters)
        if missing:
            raise TypeError(f"{function.__qualname__} has no parameter {sorted(missing)}")

        @functools.wraps(function)
        def checking(*args: P.args, **kwargs: P.kwargs) -> R:
            try:
                given = signature.bind_partial(*args, **kwargs).arguments
            except TypeError:  # a call the function itself refuses: its own error says why
                return function(*args, **kwargs)
            for name, constraint in constraints.items():
                if name in given:
                    problem = constraint.problem(name, given[name], given)
                    if problem is not None:
                        raise ValueError(problem)
            return function(*args, **kwargs)

        checking.__checked__ = constraints  # type: ignore[attr-defined]
        return checking

    return wrap
