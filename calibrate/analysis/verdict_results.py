"""The verdicts, typed: one judge's (:class:`JudgeVerdict`, from
:func:`calibrate.analysis.verdicts.judge_verdict`) and one metric's block (:class:`MetricVerdict`, from
:func:`calibrate.analysis.metric_verdicts.metric_verdict`).

Each is a frozen dataclass whose ``to_dict()`` writes the dict the documents hold, byte for byte: its keys
in the order they always had, and a key that is written only in some cases (a judge's ``rule_threshold``,
the best judge's ``threshold`` and ``closest``, the ceiling's figures) left out where it was left out. The
human ceiling's figures are :class:`~calibrate.base.estimates.Estimate`. ``from_dict`` reads such a dict
back (a ``thresholds`` document's verdicts, say), so that ``from_dict(d).to_dict() == d``.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from calibrate.analysis.verdict_statuses import STATUSES
from calibrate.base.estimates import Estimate

__all__ = ["BestJudge", "ChanceLabels", "CurrentLine", "HumanCeiling", "JudgeVerdict", "LabelsNeeded", "MetricVerdict"]


@dataclass(frozen=True)
class LabelsNeeded:
    """The more labels that would settle a verdict: ``human_fails`` of them, in ``cases`` labelled cases in
    all, at the campaign's share of human fails (``fail_share``; None when no human fail was found yet).

    Examples
    --------
    >>> LabelsNeeded(human_fails=19, cases=48, fail_share=0.4).to_dict()
    {'human_fails': 19, 'cases': 48, 'fail_share': 0.4}
    """

    human_fails: int
    cases: int
    fail_share: float | None

    @classmethod
    def from_dict(cls, needed: Mapping[str, Any]) -> LabelsNeeded:
        return cls(needed["human_fails"], needed["cases"], needed["fail_share"])

    def to_dict(self) -> dict[str, Any]:
        return {"human_fails": self.human_fails, "cases": self.cases, "fail_share": self.fail_share}


@dataclass(frozen=True)
class ChanceLabels:
    """The labels the test against chance alone needs: ``labels`` more (``human_fails`` of them), ``total``
    in all (:func:`calibrate.analysis.chance.labels_to_beat_chance`)."""

    labels: int
    human_fails: int
    total: int

    @classmethod
    def from_dict(cls, chance: Mapping[str, Any]) -> ChanceLabels:
        """The labels of a chance shortfall (:func:`calibrate.analysis.chance.chance_shortfall`) or of a
        stored verdict: its other keys (``status``, ``text``) left out."""
        return cls(chance["labels"], chance["human_fails"], chance["total"])

    def to_dict(self) -> dict[str, Any]:
        return {"labels": self.labels, "human_fails": self.human_fails, "total": self.total}


@dataclass(frozen=True)
class CurrentLine:
    """A threshold the user runs today, where it came from (``source``), and its line
    (:func:`calibrate.analysis.verdict_text.current_text`)."""

    threshold: float
    source: str | None
    text: str

    @classmethod
    def from_dict(cls, line: Mapping[str, Any]) -> CurrentLine:
        return cls(line["threshold"], line["source"], line["text"])

    def to_dict(self) -> dict[str, Any]:
        return {"threshold": self.threshold, "source": self.source, "text": self.text}


@dataclass(frozen=True)
class JudgeVerdict:
    """The verdict on one judge's recommendation.

    ``status`` is one of :data:`calibrate.analysis.verdict_statuses.STATUSES`, ``text`` the one line (the
    judge's name first), ``threshold`` the one it defends (a stricter one than the rule's under
    ``"defensible if stricter"``, which keeps the rule's in ``rule_threshold``), ``reasons`` why it is not
    simply defensible, ``labels_needed`` the labels that would settle it, ``chance`` those the test against
    chance alone needs, ``warnings`` (a threshold that fails most human passes) and ``current`` a line per
    threshold the user runs today.

    Examples
    --------
    >>> v = JudgeVerdict("j", "defensible", "j: defensible", threshold=0.7)
    >>> list(v.to_dict())
    ['judge', 'threshold', 'reasons', 'labels_needed', 'chance', 'warnings', 'current', 'status', 'text']
    >>> JudgeVerdict.from_dict(v.to_dict()) == v
    True
    """

    judge: str
    status: str
    text: str
    threshold: float | None = None
    reasons: tuple[str, ...] = ()
    labels_needed: LabelsNeeded | None = None
    chance: ChanceLabels | None = None
    warnings: tuple[str, ...] = ()
    current: tuple[CurrentLine, ...] = ()
    rule_threshold: float | None = None

    @classmethod
    def __get_pydantic_json_schema__(cls, core_schema: Any, handler: Any) -> dict[str, Any]:
        """The JSON schema of the dict :meth:`to_dict` writes: every key but ``rule_threshold`` always there,
        ``status`` one of the statuses."""
        schema = handler.resolve_ref_schema(handler(core_schema))
        schema["properties"]["status"]["enum"] = list(STATUSES)
        schema["required"] = [k for k in schema["properties"] if k != "rule_threshold"]
        return schema

    @classmethod
    def from_dict(cls, verdict: Mapping[str, Any]) -> JudgeVerdict:
        """The verdict of a stored document (a recommendation's ``verdict``)."""
        needed, chance = verdict["labels_needed"], verdict["chance"]
        return cls(
            judge=verdict["judge"],
            status=verdict["status"],
            text=verdict["text"],
            threshold=verdict["threshold"],
            reasons=tuple(verdict["reasons"]),
            labels_needed=None if needed is None else LabelsNeeded.from_dict(needed),
            chance=None if chance is None else ChanceLabels.from_dict(chance),
            warnings=tuple(verdict["warnings"]),
            current=tuple(CurrentLine.from_dict(c) for c in verdict["current"]),
            rule_threshold=verdict.get("rule_threshold"),
        )

    def to_dict(self) -> dict[str, Any]:
        """The verdict's dict: ``rule_threshold`` (after ``current``) only where the threshold is stricter
        than the rule's; ``status`` and ``text`` last."""
        out: dict[str, Any] = {
            "judge": self.judge,
            "threshold": self.threshold,
            "reasons": list(self.reasons),
            "labels_needed": None if self.labels_needed is None else self.labels_needed.to_dict(),
            "chance": None if self.chance is None else self.chance.to_dict(),
            "warnings": list(self.warnings),
            "current": [c.to_dict() for c in self.current],
        }
        if self.rule_threshold is not None:
            out["rule_threshold"] = self.rule_threshold
        return out | {"status": self.status, "text": self.text}


@dataclass(frozen=True)
class BestJudge:
    """The best judge of a metric by its rule, at the ``threshold`` its verdict defends; or none
    (``judge`` None) and, when some judge needs labels, the ``closest`` to defensible. ``text`` says which
    and why."""

    judge: str | None
    text: str
    threshold: float | None = None
    closest: str | None = None

    @classmethod
    def from_dict(cls, best: Mapping[str, Any]) -> BestJudge:
        return cls(best["judge"], best["text"], best.get("threshold"), best.get("closest"))

    def to_dict(self) -> dict[str, Any]:
        """``{"judge", "threshold", "text"}`` with a best judge; ``{"judge", "text"}`` and maybe ``closest``
        without."""
        if self.judge is not None:
            return {"judge": self.judge, "threshold": self.threshold, "text": self.text}
        out: dict[str, Any] = {"judge": None, "text": self.text}
        if self.closest is not None:
            out["closest"] = self.closest
        return out


@dataclass(frozen=True)
class HumanCeiling:
    """How far the annotators agree with each other (``agreement``, their percent agreement, and
    ``kappa``), or, with neither, why there is no ceiling; ``text`` says it. A ceiling with an agreement but
    no kappa writes ``kappa`` as ``{}``."""

    text: str
    agreement: Estimate | None = None
    kappa: Estimate | None = None

    @classmethod
    def __get_pydantic_json_schema__(cls, core_schema: Any, handler: Any) -> dict[str, Any]:
        """The JSON schema of the dict :meth:`to_dict` writes: the figures, when there, together; ``kappa``
        may be ``{}``."""
        schema = handler.resolve_ref_schema(handler(core_schema))
        props = schema["properties"]
        figure = next(option for option in props["agreement"]["anyOf"] if "$ref" in option)
        props["agreement"] = figure
        props["kappa"] = {"anyOf": [figure, {"type": "object", "maxProperties": 0}]}
        schema["dependentRequired"] = {"agreement": ["kappa"], "kappa": ["agreement"]}
        return schema

    @classmethod
    def from_dict(cls, ceiling: Mapping[str, Any]) -> HumanCeiling:
        if "agreement" not in ceiling:
            return cls(ceiling["text"])
        kappa = ceiling["kappa"]
        return cls(
            ceiling["text"], Estimate.from_dict(ceiling["agreement"]), Estimate.from_dict(kappa) if kappa else None
        )

    def to_dict(self) -> dict[str, Any]:
        if self.agreement is None:
            return {"text": self.text}
        kappa = {} if self.kappa is None else self.kappa.to_dict()
        return {"text": self.text, "agreement": self.agreement.to_dict(), "kappa": kappa}


@dataclass(frozen=True)
class MetricVerdict:
    """The verdict block of one metric: its rule (as the recommendations give it; ``{}`` with no judge),
    every judge's verdict, the best judge by the rule and the human ceiling.

    Examples
    --------
    >>> v = MetricVerdict("m", {}, (), BestJudge(None, "no judge rated this metric"), HumanCeiling("no human ceiling"))
    >>> v.to_dict()
    {'metric': 'm', 'rule': {}, 'judges': [], 'best': {'judge': None, 'text': 'no judge rated this metric'}, 'ceiling': {'text': 'no human ceiling'}}
    >>> MetricVerdict.from_dict(v.to_dict()) == v
    True
    """

    metric: str
    rule: dict[str, Any]
    judges: tuple[JudgeVerdict, ...]
    best: BestJudge
    ceiling: HumanCeiling

    @classmethod
    def from_dict(cls, verdict: Mapping[str, Any]) -> MetricVerdict:
        """The block of a stored document (a ``thresholds`` document's ``verdicts``, a metric's ``verdict``)."""
        return cls(
            metric=verdict["metric"],
            rule=copy.deepcopy(dict(verdict["rule"])),
            judges=tuple(JudgeVerdict.from_dict(v) for v in verdict["judges"]),
            best=BestJudge.from_dict(verdict["best"]),
            ceiling=HumanCeiling.from_dict(verdict["ceiling"]),
        )

    def judge(self, name: str) -> JudgeVerdict:
        """The verdict on the judge named ``name``."""
        for verdict in self.judges:
            if verdict.judge == name:
                return verdict
        raise KeyError(
            f"{self.metric}: no verdict on a judge {name!r}; judges: {', '.join(v.judge for v in self.judges)}"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "rule": copy.deepcopy(self.rule),
            "judges": [v.to_dict() for v in self.judges],
            "best": self.best.to_dict(),
            "ceiling": self.ceiling.to_dict(),
        }
