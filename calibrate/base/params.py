"""The public functions' common parameters, checked where they enter, by one declared mechanism (in the
manner of scikit-learn's ``@validate_params``): a function declares the constraint of each such parameter
with :func:`checked`, and a value outside it is a ``ValueError`` naming the parameter and what was expected
(a :class:`~calibrate.base.errors.ParameterText`, so the command line names the flag), before any work.

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
from typing import Any, ParamSpec, TypeVar

from calibrate.base.errors import ParameterText

__all__ = ["CHECKED", "LEVEL", "RESAMPLES", "SEED", "Constraint", "checked"]

P = ParamSpec("P")
R = TypeVar("R")


@dataclass(frozen=True)
class Constraint:
    """What a parameter accepts: a test of a value, and the words that say what was expected."""

    expected: str
    accepts: Callable[[Any], bool]


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

#: the constraint of each common parameter, by its name
CHECKED = {"confidence": LEVEL, "n_boot": RESAMPLES, "seed": SEED}


def checked(*names: str) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Check the parameters ``names`` (keys of :data:`CHECKED`) of the decorated function on every call:
    a value given outside its constraint raises ``ValueError`` naming it; a default is not checked.

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
    """
    constraints = {name: CHECKED[name] for name in names}

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
                if name in given and not constraint.accepts(given[name]):
                    raise ValueError(
                        ParameterText(f"{{{name}}}: expected {constraint.expected}", **{name: given[name]})
                    )
            return function(*args, **kwargs)

        checking.__checked__ = constraints  # type: ignore[attr-defined]
        return checking

    return wrap
