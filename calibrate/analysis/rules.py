"""Threshold rules: how a judge's pass threshold is chosen (a ceiling on the false-pass rate, the costs
of the two errors, a fixed threshold), and the rule of a metric that declares none (:func:`default_rule`)."""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Any

from calibrate.campaign import Metric
from calibrate.stats.thresholds import DEEPEVAL_DEFAULT_THRESHOLD

__all__ = ["RULE_KINDS", "Rule", "default_rule"]

RULE_KINDS = ("constraint", "cost", "fixed", "default")

#: the settings each kind of rule needs
NEEDS = {
    "constraint": ("max_false_pass",),
    "cost": ("cost_false_pass", "cost_false_fail"),
    "fixed": ("threshold",),
    "default": ("human_pass", "binary"),
}
#: the settings each kind of rule may take besides those it needs
OPTIONAL = {"constraint": {"confidence"}, "cost": {"prevalence"}}
#: each numeric setting's range: (low, high, whether low itself is excluded)
RANGES = {
    "max_false_pass": (0, 1, False),
    "confidence": (0, 1, True),
    "prevalence": (0, 1, False),
    "cost_false_pass": (0, math.inf, True),
    "cost_false_fail": (0, math.inf, True),
    "threshold": (-math.inf, math.inf, False),
    "human_pass": (-math.inf, math.inf, False),
}
SETTINGS = (
    "max_false_pass",
    "confidence",
    "cost_false_pass",
    "cost_false_fail",
    "prevalence",
    "threshold",
    "human_pass",
    "binary",
)


@dataclass(frozen=True)
class Rule:
    """A threshold rule: ``constraint`` (ceiling on the false-pass rate), ``cost``, ``fixed``, or the
    ``default`` of a metric that declares none (:func:`default_rule`).

    Parameters
    ----------
    kind : {"constraint", "cost", "fixed", "default"}
    max_false_pass : float
        ``constraint``: the ceiling on the false-pass rate; the most lenient threshold under it is chosen.
    confidence : float, optional
        ``constraint``: keep the one-sided Clopper-Pearson upper bound, not the estimate, under the ceiling
        (from 0.5 to below 1).
    cost_false_pass, cost_false_fail : float
        ``cost``: the costs of the two errors; the threshold of least expected cost is chosen.
    prevalence : float, optional
        ``cost``: the expected production share of human passes (default: the labels' own).
    threshold : float
        ``fixed``: the threshold itself.
    human_pass, binary
        ``default`` (:func:`default_rule`): the metric's human pass level and whether it is binary.

    Examples
    --------
    >>> Rule("constraint", max_false_pass=0.1).describe()
    'most lenient threshold with false-pass rate <= 0.1'
    >>> Rule("constrain", max_false_pass=0.1)
    Traceback (most recent call last):
    ...
    ValueError: Rule kind 'constrain' is not one of constraint, cost, fixed, default
    """

    kind: str
    max_false_pass: float | None = None
    confidence: float | None = None
    cost_false_pass: float | None = None
    cost_false_fail: float | None = None
    prevalence: float | None = None
    threshold: float | None = None
    #: the default rule's metric: its human pass level, and whether it is binary
    human_pass: float | None = None
    binary: bool | None = None

    def __post_init__(self) -> None:
        """Check the rule where it is made: a kind it knows, the settings that kind needs, in range."""
        if self.kind not in RULE_KINDS:
            raise ValueError(f"Rule kind {self.kind!r} is not one of {', '.join(RULE_KINDS)}")
        needs = NEEDS[self.kind]
        allowed = set(needs) | OPTIONAL.get(self.kind, set())
        given = {k for k in SETTINGS if getattr(self, k) is not None}
        missing, extra = [k for k in needs if k not in given], sorted(given - allowed)
        if missing:
            raise ValueError(f"a {self.kind} Rule needs {' and '.join(missing)}")
        if extra:
            raise ValueError(f"a {self.kind} Rule takes no {' or '.join(extra)}")
        for key in given & set(RANGES):
            self._check_range(key)
        if self.confidence is not None and not 0.5 <= self.confidence < 1:
            # below 0.5 the one-sided "upper" bound lies under the estimate: a rule on it would keep a
            # threshold whose false-pass rate is past the ceiling
            raise ValueError(
                f"Rule confidence must be from 0.5 to below 1 (below 0.5 the one-sided upper bound "
                f"lies under the estimate itself), not {self.confidence!r}"
            )

    def _check_range(self, key: str) -> None:
        """A numeric setting must be a finite real number in its range (:data:`RANGES`)."""
        low, high, open_low = RANGES[key]
        value = getattr(self, key)
        number = isinstance(value, numbers.Real) and not isinstance(value, bool)
        if not number or not math.isfinite(value) or value > high or value < low or (open_low and value == low):
            where = (f"above {low:g}" if open_low else f"from {low:g}") + (f" to {high:g}" if high < math.inf else "")
            raise ValueError(
                f"Rule {key} must be a finite number{'' if low == -math.inf else ' ' + where}, not {value!r}"
            )

    def describe(self) -> str:
        """The rule in words, as the documents and the reports show it."""
        if self.kind == "constraint":
            text = f"most lenient threshold with false-pass rate <= {self.max_false_pass:g}"
            if self.confidence is not None:
                text += f" at {self.confidence:.0%} confidence (one-sided Clopper-Pearson upper bound)"
            return text
        if self.kind == "cost":
            text = f"minimise {self.cost_false_pass:g} x false passes + {self.cost_false_fail:g} x false fails"
            if self.prevalence is not None:
                text += f" at a production pass prevalence of {self.prevalence:g}"
            return text
        if self.kind == "default":
            return (
                f"no rule declared: a judge on the metric's scale passes at its human pass level "
                f"{self.human_pass:g}; "
                + (
                    "another, scoring from 0 to 1, at DeepEval's 0.5"
                    if self.binary
                    else "another gets no threshold (declare max_false_pass or costs)"
                )
            )
        return f"fixed threshold {self.threshold:g}"

    def fixed_threshold(self, *, on_scale: bool, zero_to_one: bool) -> float | None:
        """The threshold a fixed or default rule gives a judge without any label: the fixed one; the
        metric's human pass level for a judge on its scale; DeepEval's 0.5 for a judge scoring from 0 to
        1 on a binary metric; else none."""
        if self.kind == "fixed":
            return self.threshold
        if self.kind != "default":
            return None
        if on_scale:
            return self.human_pass
        return DEEPEVAL_DEFAULT_THRESHOLD if self.binary and zero_to_one else None

    def to_dict(self) -> dict[str, Any]:
        """The settings given, and the rule in words (``description``)."""
        return {k: v for k, v in self.__dict__.items() if v is not None} | {"description": self.describe()}


def default_rule(metric: Metric) -> Rule:
    """The metric's configured rule: its false-pass ceiling, else its costs, else the ``default`` rule:
    a judge on the metric's scale is read at the metric's ``human_pass``, a judge scoring from 0 to 1
    on a binary metric at DeepEval's 0.5, and any other judge gets no threshold (no silent 0.5 on an
    ordinal or continuous metric).

    Parameters
    ----------
    metric : Metric

    Returns
    -------
    Rule

    Examples
    --------
    >>> from calibrate.campaign import Metric
    >>> rule = default_rule(Metric("relevance", "ordinal", human_pass=2, levels=(0, 1, 2, 3)))
    >>> rule.fixed_threshold(on_scale=True, zero_to_one=False), rule.fixed_threshold(on_scale=False, zero_to_one=True)
    (2, None)
    """
    if metric.max_false_pass is not None:
        return Rule("constraint", max_false_pass=metric.max_false_pass)
    if metric.cost_false_pass is not None:
        return Rule("cost", cost_false_pass=metric.cost_false_pass, cost_false_fail=metric.cost_false_fail)
    return Rule("default", human_pass=metric.human_pass, binary=metric.scale == "binary")
