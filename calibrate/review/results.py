"""The typed documents of the review commands: the CI gate's (:func:`calibrate.review.gate.run_gate`)
and the judge-upgrade audit's (:func:`calibrate.review.audit.audit_judges`).

Each is a :class:`~calibrate.base.results.Document`: its fields are the document's parts, its figures
:class:`~calibrate.base.estimates.Estimate`, ``to_dict()`` the ``--json`` document (``schema_version``
first, the rest byte for byte as before), ``to_frame()`` one row per figure, named by where it sits.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from calibrate.base.estimates import Estimate
from calibrate.base.results import Document, FigureAt

__all__ = ["AuditResult", "AuditSide", "BottomDecile", "GateCheck", "GateResult"]


@dataclass(frozen=True)
class BottomDecile:
    """The lowest-scored tenth of a judge's labelled cases (the cases themselves left out).

    ``score_cut`` is the highest score among them (``score_at_most``), or the lowest for a judge whose
    lower scores are better (``score_at_least``).
    """

    n: int
    score_cut: float
    higher_is_better: bool
    human_pass_rate: Estimate
    mean_human_value: float

    @classmethod
    def __get_pydantic_json_schema__(cls, core_schema: Any, handler: Any) -> dict[str, Any]:
        """The JSON schema of the dict :meth:`to_dict` writes (``scripts/write_schemas.py``)."""
        schema = handler(core_schema)
        schema = handler.resolve_ref_schema(schema)
        props = schema["properties"]
        cut = props.pop("score_cut")
        props.pop("higher_is_better")
        props["score_at_most"] = props["score_at_least"] = cut
        schema["required"] = ["n", "human_pass_rate", "mean_human_value"]
        return schema

    @classmethod
    def from_dict(cls, decile: Mapping[str, Any]) -> BottomDecile:
        """The ``bottom_decile`` of a judge of the statistics document."""
        return cls(
            n=decile["n"],
            score_cut=decile["score_at_most"] if "score_at_most" in decile else decile["score_at_least"],
            higher_is_better="score_at_most" in decile,
            human_pass_rate=Estimate.from_dict(decile["human_pass_rate"]),
            mean_human_value=decile["mean_human_value"],
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "score_at_most" if self.higher_is_better else "score_at_least": self.score_cut,
            "human_pass_rate": self.human_pass_rate.to_dict(),
            "mean_human_value": self.mean_human_value,
        }


@dataclass(frozen=True)
class GateCheck:
    """One (metric, judge) the gate checked: whether it passed, every reason it did not, and the figures
    it decided on. A check that failed before any statistic (a judge named that scores none of the
    metrics, a metric no judge scores) has ``n`` None and no figures.
    """

    metric: str | None
    judge: str | None
    passed: bool
    reasons: tuple[str, ...]
    n: int | None = None
    auc: Estimate | None = None
    spearman: Estimate | None = None
    kappa: Estimate | None = None
    false_pass_ceiling: float | None = None
    threshold: float | None = None
    false_pass_rate: Estimate | None = None
    bottom_decile: BottomDecile | None = None

    def to_dict(self) -> dict[str, Any]:
        head = {"metric": self.metric, "judge": self.judge}
        if self.n is None:
            return {**head, "passed": self.passed, "reasons": list(self.reasons)}
        return {
            **head,
            "n": self.n,
            "passed": self.passed,
            "reasons": list(self.reasons),
            "auc": _figure(self.auc),
            "spearman": _figure(self.spearman),
            "kappa": _figure(self.kappa),
            "false_pass_ceiling": self.false_pass_ceiling,
            "threshold": self.threshold,
            "false_pass_rate": None if self.false_pass_rate is None else self.false_pass_rate.to_dict(),
            "bottom_decile": {} if self.bottom_decile is None else self.bottom_decile.to_dict(),
        }

    def figures(self) -> Iterator[FigureAt]:
        for statistic in ("auc", "spearman", "kappa", "false_pass_rate"):
            figure = getattr(self, statistic)
            if figure is not None:
                yield FigureAt(self.metric, self.judge, None, statistic, figure, self.n)
        if self.bottom_decile is not None:
            decile = self.bottom_decile
            yield FigureAt(
                self.metric, self.judge, None, "bottom_decile.human_pass_rate", decile.human_pass_rate, decile.n
            )


def _figure(figure: Estimate | None) -> dict[str, Any]:
    return {} if figure is None else figure.to_dict()


@dataclass(frozen=True)
class GateResult(Document):
    """The ``calibrate gate --json`` document: ``passed`` is what the exit code says.

    Examples
    --------
    >>> check = GateCheck("m", "j", False, ("no judge scores on m",))
    >>> doc = GateResult("c", False, ("at least 50 human labels",), (), (check,), 0.95, 200, {})
    >>> list(doc.to_dict())[:3], doc["checks"][0]["reasons"]
    (['schema_version', 'campaign', 'passed'], ['no judge scores on m'])
    """

    campaign: str
    passed: bool
    rules: tuple[str, ...]
    defaults: tuple[str, ...]
    checks: tuple[GateCheck, ...]
    confidence: float
    n_boot: int
    manifest: dict[str, Any] = field(default_factory=dict)

    def body(self) -> dict[str, Any]:
        return {
            "campaign": self.campaign,
            "passed": self.passed,
            "rules": list(self.rules),
            "defaults": list(self.defaults),
            "checks": [c.to_dict() for c in self.checks],
            "confidence": self.confidence,
            "n_boot": self.n_boot,
            "manifest": _copy(self.manifest),
        }

    def figures(self) -> Iterator[FigureAt]:
        for check in self.checks:
            yield from check.figures()


def _copy(value: Any) -> Any:
    return copy.deepcopy(value)


#: The identity of a judge in an audit, in the order the document writes it.
_SIDE_KEYS = ("judge", "rater", "run_id", "family", "model", "n", "pass_threshold")


@dataclass(frozen=True)
class AuditSide:
    """One judge of an audit (``old`` or ``new``): who it is, its labelled cases, the threshold its rule
    chose, and its statistics on the cases both judges rated."""

    judge: str
    rater: str
    run_id: str | None
    family: str | None
    model: str | None
    n: int
    pass_threshold: dict[str, Any]
    statistics: dict[str, Estimate]

    @classmethod
    def __get_pydantic_json_schema__(cls, core_schema: Any, handler: Any) -> dict[str, Any]:
        """The JSON schema of the dict :meth:`to_dict` writes: the statistics beside the identity."""
        schema = handler.resolve_ref_schema(handler(core_schema))
        statistics = schema["properties"].pop("statistics")
        schema["required"] = [k for k in schema.get("required", []) if k != "statistics"]
        schema["additionalProperties"] = statistics["additionalProperties"]
        return schema

    @classmethod
    def from_result(cls, result: Mapping[str, Any], statistics: tuple[str, ...]) -> AuditSide:
        """The side of a judge's statistics (``judge_figures.judge_result``), with the ``statistics`` it has of those named."""
        return cls(
            **{k: result[k] for k in _SIDE_KEYS},
            statistics={k: Estimate.from_dict(result[k]) for k in statistics if k in result},
        )

    def to_dict(self) -> dict[str, Any]:
        side = {k: getattr(self, k) for k in _SIDE_KEYS}
        side["pass_threshold"] = _copy(self.pass_threshold)
        return side | {k: v.to_dict() for k, v in self.statistics.items()}


@dataclass(frozen=True)
class AuditResult(Document):
    """The ``calibrate audit --json`` document: the decision on a new judge against an old one.

    With fewer than two labelled cases both judges rated, only the decision is given (``old``, ``new``
    and the comparisons None, and left out of the document). ``changes`` holds each statistic's change
    (new minus old) with its paired interval; ``mcnemar``, ``flips``, ``drift``, ``others``, ``decision``
    and ``versions`` are as :func:`calibrate.review.audit.audit_judges` documents them.
    """

    campaign: str
    metric: str
    statistic: str
    margin: float
    n: int
    weighted: bool
    rule: dict[str, Any]
    decision: dict[str, Any]
    old: AuditSide | None = None
    new: AuditSide | None = None
    changes: dict[str, Estimate] | None = None
    mcnemar: dict[str, Any] | None = None
    flips: dict[str, Any] | None = None
    drift: dict[str, Any] | None = None
    others: dict[str, Any] | None = None
    versions: dict[str, Any] | None = None
    manifest: dict[str, Any] | None = None

    @property
    def exit_code(self) -> int:
        """0 when the upgrade passes, 1 otherwise."""
        return int(self.decision["exit_code"])

    def body(self) -> dict[str, Any]:
        head = {
            "campaign": self.campaign,
            "metric": self.metric,
            "statistic": self.statistic,
            "margin": self.margin,
            "n": self.n,
            "weighted": self.weighted,
            "rule": _copy(self.rule),
        }
        if self.old is None or self.new is None or self.changes is None:
            return {**head, "decision": _copy(self.decision)}
        return {
            **head,
            "old": self.old.to_dict(),
            "new": self.new.to_dict(),
            "changes": {k: v.to_dict() for k, v in self.changes.items()},
            "mcnemar": _copy(self.mcnemar),
            "flips": _copy(self.flips),
            "drift": _copy(self.drift),
            "others": _copy(self.others),
            "decision": _copy(self.decision),
            "versions": _copy(self.versions),
            "manifest": _copy(self.manifest),
        }

    def figures(self) -> Iterator[FigureAt]:
        if self.old is None or self.new is None or self.changes is None:
            return
        for side in (self.old, self.new):
            for statistic, figure in side.statistics.items():
                yield FigureAt(self.metric, side.judge, None, statistic, figure, side.n)
        versus = f"{self.new.judge} vs {self.old.judge}"
        for statistic, figure in self.changes.items():
            yield FigureAt(self.metric, versus, None, f"changes.{statistic}", figure, self.n)
