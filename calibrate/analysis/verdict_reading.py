"""What every step of a judge's verdict (:func:`calibrate.analysis.verdicts.judge_verdict`) reads of its
recommendation (:class:`VerdictReading`), what a constraint rule still lacks (:class:`Shortfall`), and the
labels that would settle it (:func:`labels_to_settle`), in human fails and in cases at the campaign's share
of fails.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from calibrate.analysis.verdict_results import ChanceLabels, CurrentLine, JudgeVerdict, LabelsNeeded
from calibrate.analysis.verdict_text import current_text, pass_rule_text, rates_text
from calibrate.stats.thresholds import MOST_FAILS_SEARCHED, fails_for_ceiling

__all__ = ["Shortfall", "VerdictReading", "beyond_reach_text", "labels_to_settle"]


def beyond_reach_text(ceiling: float) -> str:
    """Why a ceiling above 0, but tiny, cannot be defended in practice."""
    return (
        f"a {ceiling:g} ceiling needs more than {MOST_FAILS_SEARCHED:,} human fails even with no false pass; "
        "declare a ceiling labels can show"
    )


def labels_to_settle(n_fails_more: float, fail_share: float | None, n_cases_more: int = 0) -> LabelsNeeded:
    """More labels, of the kind the shortfall is in: human fails, and the cases that takes at the
    campaign's share of fails (at least ``n_cases_more`` cases)."""
    fails = max(0, math.ceil(n_fails_more - 1e-9))
    cases = math.ceil(fails / fail_share - 1e-9) if fails and fail_share else 0
    return LabelsNeeded(human_fails=fails, cases=max(cases, n_cases_more), fail_share=fail_share)


@dataclass(frozen=True)
class VerdictReading:
    """What every step of a verdict reads of the recommendation: the rule (``ceiling`` NaN under a rule
    without one), the labels, the level the false-pass bound is at, the rates as words (``at``), the
    lines of the thresholds run today and, once the test against chance has spoken, its shortfall
    (``chance``: labels would show it)."""

    rec: Mapping[str, Any]
    judge: str
    kind: str
    ceiling: float
    n: int
    n_pass: int
    n_fail: int
    fail_share: float | None
    fp: Mapping[str, Any]
    fail_n: float
    one_sided: bool
    level: float
    at: str
    current: tuple[CurrentLine, ...]
    min_labels: int
    chance: Mapping[str, Any] | None = None

    @classmethod
    def of(cls, rec: Mapping[str, Any], confidence: float, min_labels: int) -> VerdictReading:
        rule = rec["rule"]
        n, n_fail = rec.get("n", 0), rec.get("n_human_fail", 0)
        fp = rec.get("false_pass_rate_detail") or {}
        one_sided = rule["kind"] == "constraint" and rule.get("confidence") is not None
        return cls(
            rec=rec,
            judge=rec["judge"],
            kind=rule["kind"],
            ceiling=rule.get("max_false_pass", math.nan),
            n=n,
            n_pass=rec.get("n_human_pass", 0),
            n_fail=n_fail,
            fail_share=n_fail / n if n else None,
            fp=fp,
            fail_n=fp.get("effective_n", n_fail),  # weighted rates: the fails' Kish effective size
            one_sided=one_sided,
            level=rule.get("confidence") if one_sided else confidence,
            at=f"at {pass_rule_text(rec)} {rates_text(rec)}" if rec.get("threshold") is not None else "no threshold",
            current=tuple(
                CurrentLine(c["threshold"], c.get("source"), current_text(c, rule)) for c in rec.get("current") or []
            ),
            min_labels=min_labels,
        )

    def fails_needed(self, rate: float) -> int | None:
        """The human fails a false-pass rate of ``rate`` needs for its bound to come under the ceiling."""
        return fails_for_ceiling(rate, self.ceiling, confidence=self.level, one_sided=self.one_sided)

    def verdict(self, status: str, text: str, *reasons: str, **fields: Any) -> JudgeVerdict:
        """The verdict, its ``reasons`` after the chance shortfall's (and its labels) when there is one."""
        chance = self.chance
        given: dict[str, Any] = {
            "threshold": self.rec.get("threshold"),
            "reasons": ((chance["text"],) if chance else ()) + reasons,
            "chance": ChanceLabels.from_dict(chance) if chance else None,
            "current": self.current,
        }
        return JudgeVerdict(judge=self.judge, status=status, text=f"{self.judge}: {text}", **given | fields)


class Shortfall(NamedTuple):
    """What a constraint rule still lacks: the lines that say so, and the human fails more that would
    settle it."""

    texts: tuple[str, ...] = ()
    more_fails: float = 0.0
