"""The typed threshold recommendations: one judge's (:class:`Recommendation`, made by
:func:`calibrate.analysis.judge_recommendation.recommendation`) and the document that holds them
(:class:`ThresholdsResult`: :func:`calibrate.analysis.recommendations.recommend_thresholds`, and
``calibrate thresholds --json`` with every metric's verdict).

A recommendation's rates are :class:`~calibrate.base.estimates.Estimate` fields; DeepEval's default, the
defensible alternative, the thresholds run today, the lowest false-pass rate and the separation are small
typed parts (:mod:`calibrate.analysis.recommendation_parts`); the verdict a
:class:`~calibrate.analysis.verdict_results.JudgeVerdict`; the rule is its dict. ``to_dict()`` writes the
document byte for byte as before (a recommendation writes each rate three times: its estimate, its interval as a pair, and
the figure as ``<rate>_detail``); read as a mapping, a recommendation is that dict.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from calibrate.analysis.recommendation_parts import RATES, CurrentRates, LowestFalsePass, RatesAt, Separation
from calibrate.analysis.verdict_results import JudgeVerdict, MetricVerdict
from calibrate.base.estimates import Estimate
from calibrate.base.results import DictView, Document, FigureAt, statistics_rows

__all__ = [
    "KEYS",
    "TOO_FEW_ORDER",
    "Recommendation",
    "ThresholdsResult",
    "recommendation_dicts",
]

#: The order a judge rated with the humans on fewer than two cases writes its (empty) recommendation in.
TOO_FEW_ORDER = (
    "metric",
    "judge",
    "rule",
    "pass_rule",
    "n",
    "warnings",
    "threshold",
    "n_human_pass",
    "n_human_fail",
    "threshold_ci",
    "threshold_ci_method",
    "deepeval_default",
    *(f"{rate}{suffix}" for rate in RATES for suffix in ("", "_ci", "_detail")),
    "current",
    "verdict",
)

#: Every key a recommendation may write: those of :data:`TOO_FEW_ORDER`, and those of a judge compared.
KEYS = (
    *TOO_FEW_ORDER,
    "weighted",
    "effective_n",
    "separation",
    "accuracy",
    "defensible_alternative",
    "lowest_false_pass",
    "threshold_ci_resamples_without_threshold",
)


@dataclass(frozen=True)
class Recommendation(DictView):
    """One judge's threshold recommendation on one metric under a rule, and its verdict.

    ``false_pass_rate`` and ``false_fail_rate`` are the rates at ``threshold`` (None when no threshold meets
    the rule), ``accuracy`` the share of cases whose verdict there is the humans'; ``threshold_ci`` is the
    threshold's percentile bootstrap interval. ``weighted`` and ``effective_n`` are those of a weighted
    sample design; ``separation`` is absent when every human label is a pass (or every one a fail);
    ``defensible_alternative`` is the most lenient threshold whose false-pass interval stays under the
    ceiling too; ``threshold_ci_resamples_without_threshold`` is None for a judge with too few cases.
    ``verdict`` (:func:`calibrate.analysis.verdicts.judge_verdict`) is None before it is judged, and then
    left out of the dict. ``order`` is the order the dict writes its keys in: by default that of a judge
    compared on two cases or more (:data:`TOO_FEW_ORDER` for one with fewer).

    Read as a mapping (``rec["false_pass_rate"]``), a recommendation is its :meth:`to_dict`, where a rate is
    its estimate alone; by attribute (``rec.false_pass_rate.ci_high``) it is the figure.

    Examples
    --------
    >>> import calibrate
    >>> c = calibrate.load_campaign(calibrate.demo_campaign_path())
    >>> rec = calibrate.compute_stats(c, judges=["Olz-gpt4o"], n_boot=0).recommendations[0]
    >>> rec.threshold, round(rec.false_pass_rate.value, 3), rec.false_pass_rate.method
    (3.0, 0.04, 'Wilson score')
    >>> rec["false_pass_rate"] == rec.false_pass_rate.value, Recommendation.from_dict(rec.to_dict()) == rec
    (True, True)
    """

    metric: str
    judge: str
    rule: dict[str, Any]
    pass_rule: str
    n: int
    n_human_pass: int
    n_human_fail: int
    threshold: float | None
    threshold_ci: tuple[float | None, float | None]
    threshold_ci_method: str | None
    deepeval_default: RatesAt
    false_pass_rate: Estimate | None = None
    false_fail_rate: Estimate | None = None
    accuracy: Estimate | None = None
    warnings: tuple[str, ...] = ()
    weighted: bool = False
    effective_n: float | None = None
    separation: Separation | None = None
    defensible_alternative: RatesAt | None = None
    lowest_false_pass: LowestFalsePass | None = None
    threshold_ci_resamples_without_threshold: int | None = None
    current: tuple[CurrentRates, ...] = ()
    verdict: JudgeVerdict | None = None
    order: tuple[str, ...] = field(default=(), compare=False)

    @classmethod
    def __get_pydantic_json_schema__(cls, core_schema: Any, handler: Any) -> dict[str, Any]:
        """The JSON schema of the dict :meth:`to_dict` writes: each rate as its estimate, its interval and
        its figure (``_detail``), without ``order``."""
        schema = handler.resolve_ref_schema(handler(core_schema))
        props = schema["properties"]
        props.pop("order")
        pair = {"type": "array", "items": {"type": ["number", "null"]}, "minItems": 2, "maxItems": 2}
        for rate in RATES:
            props[f"{rate}_detail"] = props[rate]
            props[rate] = {"type": ["number", "null"]}
            props[f"{rate}_ci"] = pair
        props["threshold_ci"] = pair
        # what every recommendation writes (a judge with too few cases writes no more)
        schema["required"] = [k for k in TOO_FEW_ORDER if not k.endswith("_detail")]
        return schema

    @classmethod
    def from_dict(cls, rec: Mapping[str, Any]) -> Recommendation:
        """The recommendation of a stored document (one of its ``recommendations``), its order kept.

        Raises
        ------
        ValueError
            A key no recommendation writes, naming it.
        """
        unknown = [k for k in rec if k not in KEYS]
        if unknown:
            raise ValueError(f"{', '.join(unknown)}: not a key of a recommendation (its keys: {', '.join(KEYS)})")

        def part(key: str, read: Any) -> Any:
            return None if rec.get(key) is None else read(rec[key])

        return cls(
            metric=rec["metric"],
            judge=rec["judge"],
            rule=copy.deepcopy(rec["rule"]),
            pass_rule=rec["pass_rule"],
            n=rec["n"],
            n_human_pass=rec["n_human_pass"],
            n_human_fail=rec["n_human_fail"],
            threshold=rec["threshold"],
            threshold_ci=(rec["threshold_ci"][0], rec["threshold_ci"][1]),
            threshold_ci_method=rec["threshold_ci_method"],
            deepeval_default=RatesAt.from_dict(rec["deepeval_default"]),
            false_pass_rate=part("false_pass_rate_detail", Estimate.from_dict),
            false_fail_rate=part("false_fail_rate_detail", Estimate.from_dict),
            accuracy=part("accuracy", Estimate.from_dict),
            warnings=tuple(rec["warnings"]),
            weighted=bool(rec.get("weighted", False)),
            effective_n=rec.get("effective_n"),
            separation=part("separation", Separation.from_dict),
            defensible_alternative=part("defensible_alternative", RatesAt.from_dict),
            lowest_false_pass=part("lowest_false_pass", LowestFalsePass.from_dict),
            threshold_ci_resamples_without_threshold=rec.get("threshold_ci_resamples_without_threshold"),
            current=tuple(CurrentRates.from_dict(c) for c in rec.get("current") or ()),
            verdict=part("verdict", JudgeVerdict.from_dict),
            order=tuple(rec),
        )

    def _keys(self) -> tuple[str, ...]:
        """The keys :meth:`to_dict` writes, in order: ``order``, or that of a judge compared on two cases or
        more (the parts it holds); ``verdict`` only once judged."""
        keys = list(self.order) or self._compared_order()
        return tuple(k for k in keys if k != "verdict" or self.verdict is not None)

    def _compared_order(self) -> list[str]:
        keys = ["metric", "judge", "rule", "pass_rule", "n", "warnings", "n_human_pass", "n_human_fail"]
        keys += ["weighted", "effective_n"] if self.weighted else []
        keys += ["separation"] if self.separation is not None else []
        keys.append("threshold")
        for rate in RATES:
            keys += [rate, f"{rate}_ci"] + ([f"{rate}_detail"] if getattr(self, rate) is not None else [])
        keys += [k for k in ("accuracy", "defensible_alternative", "lowest_false_pass") if getattr(self, k) is not None]
        keys += ["threshold_ci", "threshold_ci_method"]
        if self.threshold_ci_resamples_without_threshold is not None:
            keys.append("threshold_ci_resamples_without_threshold")
        return keys + ["deepeval_default", "current", "verdict"]

    def _written(self, key: str) -> Any:
        rate = key.removesuffix("_ci").removesuffix("_detail")
        if rate in RATES:
            figure: Estimate | None = getattr(self, rate)
            if key.endswith("_detail"):
                return None if figure is None else figure.to_dict()
            if key.endswith("_ci"):
                return [None, None] if figure is None else [figure.ci_low, figure.ci_high]
            return None if figure is None else figure.value
        value = getattr(self, key)
        if key in ("warnings", "threshold_ci"):
            return list(value)
        if key == "current":
            return [c.to_dict() for c in value]
        if key == "rule":
            return copy.deepcopy(value)
        typed = (Estimate, RatesAt, Separation, LowestFalsePass, JudgeVerdict)
        return value.to_dict() if isinstance(value, typed) else value

    def to_dict(self) -> dict[str, Any]:
        """The recommendation as its documents write it (a fresh copy each call)."""
        return {key: self._written(key) for key in self._keys()}

    def threshold_figure(self) -> Estimate | None:
        """The threshold with its bootstrap interval, as a figure (None when there is no threshold)."""
        if self.threshold is None:
            return None
        low, high = self.threshold_ci
        return Estimate(
            self.threshold, low, high, self.threshold_ci_method, keys=("estimate", "ci_low", "ci_high", "ci_method")
        )

    def figures(self) -> Iterator[FigureAt]:
        """The threshold, the rates and accuracy there, then those of the defensible alternative, of
        DeepEval's default and of each threshold run today (each resting on the judge's ``n`` when the
        figure does not say)."""
        metric, judge, n = self.metric, self.judge, self.n
        threshold = self.threshold_figure()
        if threshold is not None:
            yield FigureAt(metric, judge, None, "threshold", threshold, n)
        for name in (*RATES, "accuracy"):
            figure = getattr(self, name)
            if figure is not None:
                yield FigureAt(metric, judge, None, name, figure, n)
        if self.defensible_alternative is not None:
            yield from self.defensible_alternative.figures(metric, judge, "defensible_alternative", n)
        yield from self.deepeval_default.figures(metric, judge, "deepeval_default", n)
        for current in self.current:
            for name in RATES:
                yield FigureAt(metric, judge, None, f"current.{name}", getattr(current, name), n)


@dataclass(frozen=True)
class ThresholdsResult(Document):
    """The threshold recommendations of a campaign's judges: of one metric
    (:func:`calibrate.analysis.recommendations.recommend_thresholds`: ``verdicts`` None, left out of the
    document), or of every metric with each metric's verdict (``calibrate thresholds --json``:
    :func:`calibrate.analysis.recommendations.thresholds`). ``verdicts`` are those of
    :func:`calibrate.analysis.metric_verdicts.metric_verdict`; ``manifest`` is that of the first metric's run.

    Examples
    --------
    >>> import calibrate
    >>> c = calibrate.load_campaign(calibrate.demo_campaign_path())
    >>> doc = calibrate.thresholds(c, judges=["Olz-gpt4o"], n_boot=0)
    >>> list(doc.to_dict()), doc.recommendations[0].threshold == doc["recommendations"][0]["threshold"]
    (['schema_version', 'campaign', 'verdicts', 'recommendations', 'manifest'], True)
    """

    campaign: str
    recommendations: tuple[Recommendation, ...]
    manifest: dict[str, Any]
    verdicts: tuple[MetricVerdict, ...] | None = None

    @classmethod
    def __get_pydantic_json_schema__(cls, core_schema: Any, handler: Any) -> dict[str, Any]:
        """The JSON schema of the document :meth:`body` writes: ``verdicts`` a list when there, never null."""
        schema = handler.resolve_ref_schema(handler(core_schema))
        listed = next(s for s in schema["properties"]["verdicts"]["anyOf"] if s.get("type") == "array")
        schema["properties"]["verdicts"] = {
            "description": "every metric's verdict (calibrate thresholds); absent from recommend_thresholds'",
            "type": "array",
            "items": listed["items"],
        }
        return schema

    def recommendation(self, metric: str, judge: str) -> Recommendation:
        """The recommendation for ``judge`` on ``metric``."""
        for rec in self.recommendations:
            if (rec.metric, rec.judge) == (metric, judge):
                return rec
        there = ", ".join(f"{r.metric}/{r.judge}" for r in self.recommendations) or "none"
        raise KeyError(f"no recommendation for {judge!r} on {metric!r}; there are: {there}")

    def body(self) -> dict[str, Any]:
        out: dict[str, Any] = {"campaign": self.campaign}
        if self.verdicts is not None:
            out["verdicts"] = [v.to_dict() for v in self.verdicts]
        out["recommendations"] = [r.to_dict() for r in self.recommendations]
        out["manifest"] = copy.deepcopy(self.manifest)
        return out

    def figures(self) -> Iterator[FigureAt]:
        """Every recommendation's figures (:meth:`Recommendation.figures`)."""
        for rec in self.recommendations:
            yield from rec.figures()

    def rows(self) -> Iterator[dict[str, Any]]:
        """The rows of the table: the verdicts' (the human ceiling's agreement among them), then the
        recommendations' figures."""
        if self.verdicts:
            yield from statistics_rows({"verdicts": [v.to_dict() for v in self.verdicts]})
        yield from (f.row() for f in self.figures())


def recommendation_dicts(recs: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Recommendations as their documents write them (what the report's templates index): a
    :class:`Recommendation`'s :meth:`~Recommendation.to_dict`, any other (a dict read from a document) as it is.

    Examples
    --------
    >>> recommendation_dicts([{"metric": "m", "judge": "j"}])
    [{'metric': 'm', 'judge': 'j'}]
    """
    return [r.to_dict() if isinstance(r, Recommendation) else dict(r) for r in recs]
