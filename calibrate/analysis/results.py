"""The typed statistics document (:func:`calibrate.analysis.agreement.compute_stats`): every judge's
agreement with the human reference, per metric and per slice.

A :class:`StatsResult` is a :class:`~calibrate.base.results.Document`: its ``to_dict()`` is the
``calibrate stats --json`` document (``schema_version`` first, the rest byte for byte as before), its
``to_frame()`` one row per figure, named by where it sits. The judges' figures are
:class:`~calibrate.base.estimates.Estimate` fields, a metric's verdict a
:class:`~calibrate.analysis.verdict_results.MetricVerdict`; the parts still written as dicts (a judge's
curve, bottom decile and worst misses, a metric's annotator agreement) are named fields or, for a judge's
irregular keys, its ``extra``.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from calibrate.analysis.recommendation_results import Recommendation
from calibrate.analysis.verdict_results import MetricVerdict
from calibrate.base.estimates import Estimate
from calibrate.base.results import Deferred, Document, FigureAt, statistics_rows

__all__ = ["STATISTICS", "JudgeAgreement", "MetricAgreement", "SliceAgreement", "StatsResult"]

#: The statistics every judge has, defined or not (:mod:`calibrate.analysis.judge_figures` computes them).
STATISTICS = (
    "spearman",
    "kendall",
    "kappa",
    "kappa_quadratic",
    "alpha",
    "pass_kappa",
    "auc",
    "accuracy",
    "balanced_accuracy",
)

#: A judge's typed keys beside its statistics.
_JUDGE_HEAD = ("judge", "rater", "run_id", "family", "model", "higher_is_better", "n", "n_human_pass", "n_human_fail")


@dataclass(frozen=True)
class JudgeAgreement:
    """One judge against the human reference on one metric (or one slice of it): who it is, its
    labelled cases, and every statistic with its interval (:mod:`calibrate.analysis.judge_figures`).

    ``bottom_decile`` is the lowest-scored tenth of its cases (absent from a slice's judges and from a
    judge with too few cases); ``extra`` holds the other keys (``pass_rule``, ``n_ratings``,
    ``pass_threshold``, ``curve``, ``worst_misses``, ``weighted``, ...) and ``keys`` the order the
    document writes them in.
    """

    judge: str
    rater: str
    run_id: str | None
    family: str | None
    model: str | None
    higher_is_better: bool
    n: int
    n_human_pass: int
    n_human_fail: int
    spearman: Estimate
    kendall: Estimate
    kappa: Estimate
    kappa_quadratic: Estimate
    alpha: Estimate
    auc: Estimate
    pass_kappa: Estimate
    balanced_accuracy: Estimate
    accuracy: Estimate
    bottom_decile: dict[str, Any] | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    keys: tuple[str, ...] = ()

    @classmethod
    def __get_pydantic_json_schema__(cls, core_schema: Any, handler: Any) -> dict[str, Any]:
        """The JSON schema of the dict :meth:`to_dict` writes: ``extra``'s keys beside the typed ones."""
        schema = handler.resolve_ref_schema(handler(core_schema))
        for name in ("extra", "keys"):
            schema["properties"].pop(name)
        schema["additionalProperties"] = True
        return schema

    @classmethod
    def from_dict(cls, entry: Mapping[str, Any]) -> JudgeAgreement:
        """The judge of a judge entry read back from a statistics document (the entry
        ``JudgeAgreement.to_dict`` wrote; :func:`calibrate.analysis.judge_figures.judge_entry` builds it).

        Examples
        --------
        >>> none = Estimate.undefined("too few cases").to_dict()
        >>> entry = {"judge": "j", "rater": "j", "run_id": None, "family": None, "model": None,
        ...          "higher_is_better": True, "n": 1, "n_human_pass": 1, "n_human_fail": 0,
        ...          **{k: none for k in STATISTICS}, "curve": []}
        >>> judge = JudgeAgreement.from_dict(entry)
        >>> judge.auc.reason, judge.extra, judge.to_dict() == entry
        ('too few cases', {'curve': []}, True)
        """
        typed = {*_JUDGE_HEAD, *STATISTICS, "bottom_decile"}
        fields: dict[str, Any] = {k: entry[k] for k in _JUDGE_HEAD}
        fields |= {k: Estimate.from_dict(entry[k]) for k in STATISTICS}
        return cls(
            **fields,
            bottom_decile=copy.deepcopy(entry.get("bottom_decile")),
            extra={k: copy.deepcopy(v) for k, v in entry.items() if k not in typed},
            keys=tuple(entry),
        )

    def statistic(self, name: str) -> Estimate:
        """The statistic ``name`` (one of :data:`STATISTICS`)."""
        if name not in STATISTICS:
            raise KeyError(f"{name!r} is not a statistic of a judge: expected one of {', '.join(STATISTICS)}")
        figure: Estimate = getattr(self, name)
        return figure

    def to_dict(self, *, deferred: bool = False) -> dict[str, Any]:
        """The judge's entry, its keys in the order it was read in; its curve a list of points, or
        (``deferred``) as it is held, a :class:`~calibrate.base.results.Deferred` list."""
        out: dict[str, Any] = {}
        for key in self.keys:
            value = self.extra[key] if key in self.extra else getattr(self, key)
            if isinstance(value, Deferred):
                out[key] = value if deferred else value.to_list()
            else:
                out[key] = value.to_dict() if isinstance(value, Estimate) else copy.deepcopy(value)
        return out

    def figures(self, metric: str, slice_name: str | None) -> Iterator[FigureAt]:
        """Every statistic in the order the entry writes them, then the bottom decile's human pass rate
        (on the decile's cases)."""
        for name in (k for k in self.keys if k in STATISTICS):
            yield FigureAt(metric, self.judge, slice_name, name, self.statistic(name), self.n)
        decile = self.bottom_decile
        if decile is not None:
            rate = Estimate.from_dict(decile["human_pass_rate"])
            yield FigureAt(metric, self.judge, slice_name, "bottom_decile.human_pass_rate", rate, decile["n"])


@dataclass(frozen=True)
class SliceAgreement:
    """The judges of one slice of a metric's cases: those whose ``metadata[key]`` is ``value``."""

    key: str
    value: str
    n_cases: int
    n_human_pass: int
    judges: tuple[JudgeAgreement, ...]

    @property
    def name(self) -> str:
        """The slice as the table names it: ``key=value``."""
        return f"{self.key}={self.value}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "value": self.value,
            "n_cases": self.n_cases,
            "n_human_pass": self.n_human_pass,
            "judges": [j.to_dict() for j in self.judges],
        }


@dataclass(frozen=True)
class MetricAgreement:
    """One metric of the statistics document: its scale and human labels, its judges, the warnings and
    verdict of their recommendations under its declared rule, its human pass rate and, when asked for,
    its slices. ``annotators`` (with more than one human rater) is the annotator agreement document of
    :func:`calibrate.analysis.annotators.annotator_agreement`.
    """

    metric: str
    scale: str
    human_pass: float
    levels: list[float] | None
    n_cases: int
    n_human_raters: int
    n_multiply_labelled: int
    n_adjudicated: int
    n_human_pass: int
    default_rule: dict[str, Any]
    judges: tuple[JudgeAgreement, ...]
    warnings: tuple[str, ...]
    sample_designs: tuple[dict[str, Any], ...]
    weighted: bool
    human_pass_rate: Estimate
    verdict: MetricVerdict
    annotators: dict[str, Any] | None = None
    slices: tuple[SliceAgreement, ...] | None = None

    def judge(self, name: str) -> JudgeAgreement:
        """The judge named ``name``."""
        for judge in self.judges:
            if judge.judge == name:
                return judge
        raise KeyError(f"{self.metric}: no judge {name!r}; judges: {', '.join(j.judge for j in self.judges)}")

    def to_dict(self, *, deferred: bool = False) -> dict[str, Any]:
        """The metric's entry; its judges' curves :class:`~calibrate.base.results.Deferred` lists with
        ``deferred`` (:meth:`JudgeAgreement.to_dict`)."""
        out: dict[str, Any] = {
            "metric": self.metric,
            "scale": self.scale,
            "human_pass": self.human_pass,
            "levels": None if self.levels is None else list(self.levels),
            "n_cases": self.n_cases,
            "n_human_raters": self.n_human_raters,
            "n_multiply_labelled": self.n_multiply_labelled,
            "n_adjudicated": self.n_adjudicated,
            "n_human_pass": self.n_human_pass,
            "default_rule": copy.deepcopy(self.default_rule),
            "judges": [j.to_dict(deferred=deferred) for j in self.judges],
            "warnings": list(self.warnings),
            "sample_designs": copy.deepcopy(list(self.sample_designs)),
            "weighted": self.weighted,
            "human_pass_rate": self.human_pass_rate.to_dict(),
        }
        if self.annotators is not None:
            out["annotators"] = copy.deepcopy(self.annotators)
        out["verdict"] = self.verdict.to_dict()
        if self.slices is not None:
            out["slices"] = [s.to_dict() for s in self.slices]
        return out

    def figures(self) -> Iterator[FigureAt]:
        """The metric's figures: its judges' and its human pass rate, then its slices' judges'."""
        yield from self._whole()
        yield from self._sliced()

    def rows(self) -> Iterator[dict[str, Any]]:
        """The metric's rows of the table, in the document's order: its figures, with the annotator
        agreement's (a document of its own, untyped: walked by key names) before the slices'."""
        yield from (f.row() for f in self._whole())
        if self.annotators is not None:
            yield from statistics_rows(self.annotators, {"metric": self.metric, "n": self.n_cases}, "annotators")
        yield from (f.row() for f in self._sliced())

    def _whole(self) -> Iterator[FigureAt]:
        for judge in self.judges:
            yield from judge.figures(self.metric, None)
        yield FigureAt(self.metric, None, None, "human_pass_rate", self.human_pass_rate, self.n_cases)

    def _sliced(self) -> Iterator[FigureAt]:
        for piece in self.slices or ():
            for judge in piece.judges:
                yield from judge.figures(self.metric, piece.name)


@dataclass(frozen=True)
class StatsResult(Document):
    """The ``calibrate stats --json`` document, and the threshold recommendations of every metric's
    judges under its declared rule from the same bootstrap (``recommendations``: not part of the
    document; each a :class:`~calibrate.analysis.recommendation_results.Recommendation`, as
    :func:`calibrate.analysis.recommendations.recommend_thresholds` gives it).

    Examples
    --------
    >>> import calibrate
    >>> c = calibrate.load_campaign(calibrate.demo_campaign_path())
    >>> doc = calibrate.compute_stats(c, judges=["Olz-gpt4o"], n_boot=50)
    >>> judge = doc.metrics[0].judges[0]
    >>> judge.auc.value == doc["metrics"][0]["judges"][0]["auc"]["estimate"], list(doc.to_dict())[:2]
    (True, ['schema_version', 'campaign'])
    >>> doc.recommendations[0].judge, "recommendations" in doc
    ('Olz-gpt4o', False)
    """

    campaign: str
    metrics: tuple[MetricAgreement, ...]
    manifest: dict[str, Any]
    provenance: tuple[dict[str, Any], ...]
    set_aside_note: str | None
    recommendations: tuple[Recommendation, ...] = field(default=(), compare=False)

    @classmethod
    def __get_pydantic_json_schema__(cls, core_schema: Any, handler: Any) -> dict[str, Any]:
        """The JSON schema of the document :meth:`body` writes: without ``recommendations``."""
        schema = handler.resolve_ref_schema(handler(core_schema))
        schema["properties"].pop("recommendations")
        return schema

    def metric(self, name: str) -> MetricAgreement:
        """The metric named ``name``."""
        for metric in self.metrics:
            if metric.metric == name:
                return metric
        raise KeyError(f"no metric {name!r} in the statistics; metrics: {', '.join(m.metric for m in self.metrics)}")

    def body(self, *, deferred: bool = False) -> dict[str, Any]:
        return {
            "campaign": self.campaign,
            "metrics": [m.to_dict(deferred=deferred) for m in self.metrics],
            "manifest": copy.deepcopy(self.manifest),
            "provenance": copy.deepcopy(list(self.provenance)),
            "set_aside_note": self.set_aside_note,
        }

    def json_document(self) -> dict[str, Any]:
        """The document, its judges' curves left :class:`~calibrate.base.results.Deferred` (up to a point
        per case each: written a chunk at a time by :func:`~calibrate.base.results.json_text`)."""
        return {"schema_version": self.SCHEMA_VERSION, **self.body(deferred=True)}

    def figures(self) -> Iterator[FigureAt]:
        """The typed figures of every metric (:meth:`MetricAgreement.figures`)."""
        for metric in self.metrics:
            yield from metric.figures()

    def rows(self) -> Iterator[dict[str, Any]]:
        """The rows of every metric (:meth:`MetricAgreement.rows`: with the annotator agreement's)."""
        for metric in self.metrics:
            yield from metric.rows()
