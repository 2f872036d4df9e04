"""The small typed parts of a threshold recommendation
(:class:`~calibrate.analysis.recommendation_results.Recommendation`): the rates at one threshold
(:class:`RatesAt`: DeepEval's default, or the defensible alternative), at a threshold the user runs today
(:class:`CurrentRates`), the lowest false-pass rate (:class:`LowestFalsePass`) and the separation of the
judge's scores (:class:`Separation`); and the counts a rate rests on (:func:`rate_counts`). Each part's
``to_dict()`` is the entry its recommendation writes, and ``from_dict`` reads it back.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from calibrate.base.estimates import Estimate
from calibrate.base.results import FigureAt

__all__ = ["RATES", "CurrentRates", "LowestFalsePass", "RatesAt", "Separation", "rate_counts"]

#: The two rates of a recommendation, each written as ``<rate>``, ``<rate>_ci`` and ``<rate>_detail``.
RATES = ("false_pass_rate", "false_fail_rate")


def rate_counts(rate: Estimate) -> tuple[float, float]:
    """The count and the denominator a rate of a recommendation rests on (``k`` of ``n``), or, weighted, its
    share of the Kish effective size: what a one-sided bound on it is computed from.

    Examples
    --------
    >>> rate_counts(Estimate.from_dict({"estimate": 0.25, "k": 2, "n": 8}))
    (2, 8)
    >>> rate_counts(Estimate.from_dict({"estimate": 0.25, "n": 8, "effective_n": 4.0, "weighted": True}))
    (1.0, 4.0)
    """
    if rate.value is not None and rate.extra.get("weighted"):
        effective: float = rate.extra["effective_n"]
        return rate.value * effective, effective
    if rate.value is None or rate.n is None:
        raise ValueError(f"a rate without its counts: {rate.to_dict()}")
    return rate.extra["k"], rate.n


@dataclass(frozen=True)
class Separation:
    """How far a judge's scores separate the human passes from the fails, unweighted
    (:func:`calibrate.stats.library.separation`): the AUC and the one-sided Mann-Whitney p-value against 0.5."""

    auc: float
    chance_p: float
    n_pass: int
    n_fail: int

    @classmethod
    def from_dict(cls, separation: Mapping[str, Any]) -> Separation:
        return cls(separation["auc"], separation["chance_p"], separation["n_pass"], separation["n_fail"])

    def to_dict(self) -> dict[str, Any]:
        return {"auc": self.auc, "chance_p": self.chance_p, "n_pass": self.n_pass, "n_fail": self.n_fail}


@dataclass(frozen=True)
class LowestFalsePass:
    """The fewest false passes short of failing every case, and the threshold that gives them."""

    rate: float
    threshold: float | None

    @classmethod
    def from_dict(cls, lowest: Mapping[str, Any]) -> LowestFalsePass:
        return cls(lowest["rate"], lowest["threshold"])

    def to_dict(self) -> dict[str, Any]:
        return {"rate": self.rate, "threshold": self.threshold}


@dataclass(frozen=True)
class RatesAt:
    """The false-pass and false-fail rates at one threshold: DeepEval's default 0.5, or the defensible
    alternative (which adds its ``accuracy``: the share of cases whose verdict there is the humans')."""

    threshold: float | None
    false_pass_rate: Estimate
    false_fail_rate: Estimate
    accuracy: Estimate | None = None

    @classmethod
    def from_dict(cls, rates: Mapping[str, Any]) -> RatesAt:
        accuracy = rates.get("accuracy")
        return cls(
            rates["threshold"],
            Estimate.from_dict(rates["false_pass_rate"]),
            Estimate.from_dict(rates["false_fail_rate"]),
            None if accuracy is None else Estimate.from_dict(accuracy),
        )

    def to_dict(self) -> dict[str, Any]:
        out = {
            "threshold": self.threshold,
            "false_pass_rate": self.false_pass_rate.to_dict(),
            "false_fail_rate": self.false_fail_rate.to_dict(),
        }
        if self.accuracy is not None:
            out["accuracy"] = self.accuracy.to_dict()
        return out

    def figures(self, metric: str, judge: str, where: str, n: int) -> Iterator[FigureAt]:
        """The rates (and accuracy), named ``<where>.<rate>``."""
        for name in (*RATES, "accuracy"):
            figure = getattr(self, name)
            if figure is not None:
                yield FigureAt(metric, judge, None, f"{where}.{name}", figure, n)


@dataclass(frozen=True)
class CurrentRates:
    """The rates at a threshold the user runs today (:func:`calibrate.analysis.current.current_thresholds`
    says which and where it comes from), under the judge's ``pass_rule``."""

    threshold: float
    source: str
    source_text: str
    pass_rule: str
    false_pass_rate: Estimate
    false_fail_rate: Estimate

    @classmethod
    def from_dict(cls, current: Mapping[str, Any]) -> CurrentRates:
        return cls(
            current["threshold"],
            current["source"],
            current["source_text"],
            current["pass_rule"],
            Estimate.from_dict(current["false_pass_rate"]),
            Estimate.from_dict(current["false_fail_rate"]),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "threshold": self.threshold,
            "source": self.source,
            "source_text": self.source_text,
            "pass_rule": self.pass_rule,
            "false_pass_rate": self.false_pass_rate.to_dict(),
            "false_fail_rate": self.false_fail_rate.to_dict(),
        }
