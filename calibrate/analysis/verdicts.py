"""The answer first: one verdict per judge of a metric, the best judge by the metric's rule, and the
human ceiling beside it.

A judge's recommendation is *defensible* when a reviewer can hold it to the campaign's rule:

- a **constraint** rule (a false-pass ceiling): the judge has a threshold under it, and the upper end of
  that threshold's false-pass interval (the two-sided Wilson interval the rates are shown with, or the
  one-sided Clopper-Pearson bound a rule with a confidence keeps) is at most the ceiling;
- a **cost** rule: the judge has a threshold of least expected cost;

and, under either, its scores separate human passes from human fails better than chance (the one-sided
Mann-Whitney test the CI gate reads, at ``p <`` :func:`chance_level`, ``(1 - confidence) / 2`` and never
above 0.025) and it rests on at least ``MIN_TRUSTED_LABELS`` human labels. A defensible threshold that
fails most human passes says so beside the word (``fails_most_passes``).

A judge not shown better than chance is one of three things (:func:`labels_to_beat_chance`):

- **not shown better than chance yet** (``NEEDS_LABELS``): its separation so far is at least one standard
  error from none, and at that AUC about N labels in all would bring p under the level: the line says how
  many more, and how many of them human fails at the campaign's share of fails;
- **not shown** (``NOT_SHOWN``): on fewer than ``min_labels`` labels, its separation is under one standard
  error from none: no count of labels can be projected from it (at an AUC of 0.5 none would do), so the
  line gives none;
- **not defensible** (``NOT_DEFENSIBLE``): the same on ``min_labels`` labels or more, or a sign so weak there
  that showing it would take more than :data:`MOST_LABELS_RATIO` times the labels so far.

A ceiling of 0 is never defensible, whatever the judge: the upper bound of a false-pass rate measured on
finitely many human fails is above 0, so no number of labels shows it; the verdict says so, and what
ceiling to declare. Otherwise the verdict says why, and when more labels would settle it, how many and of
which kind: the human fails a ceiling needs (:func:`fails_for_ceiling`), and the labelled cases that takes
at the campaign's share of human fails. A ``fixed`` rule, or a metric that declares no rule, gives no
verdict to defend: the lines say so (defaults fail closed).

Beside each judge's verdict, a line for each threshold the user runs today (the recommendation's
``current``: given, recorded in an imported run, or DeepEval's for a DeepEval judge;
:mod:`calibrate.analysis.current`): its false-pass and false-fail rates, as counts of the annotators'
verdicts, with their intervals.

Everything here reads the recommendation documents (:func:`calibrate.analysis.recommendations.thresholds`),
so the report, ``calibrate thresholds`` and ``calibrate stats`` print the same lines.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, NamedTuple

from calibrate.analysis.chance import (
    LOOSEST_CHANCE_LEVEL,
    MOST_LABELS_RATIO,
    SIGN_Z,
    chance_level,
    chance_shortfall,
    labels_to_beat_chance,
)
from calibrate.analysis.metric_verdicts import metric_verdict, verdict_lines
from calibrate.analysis.verdict_results import ChanceLabels, CurrentLine, JudgeVerdict, LabelsNeeded
from calibrate.analysis.verdict_statuses import (
    DEFENSIBLE,
    NEEDS_LABELS,
    NO_CRITERION,
    NOT_DEFENSIBLE,
    NOT_SHOWN,
    STATUSES,
    STRICTER,
)
from calibrate.analysis.verdict_text import (
    current_text,
    fails_most_text,
    number_text,
    pass_rule_text,
    rate_text,
    rates_text,
    zero_ceiling_text,
)
from calibrate.stats.thresholds import MOST_FAILS_SEARCHED, fails_for_ceiling

__all__ = [
    "DEFENSIBLE",
    "LOOSEST_CHANCE_LEVEL",
    "MOST_LABELS_RATIO",
    "NEEDS_LABELS",
    "NOT_DEFENSIBLE",
    "NOT_SHOWN",
    "NO_CRITERION",
    "SIGN_Z",
    "STATUSES",
    "STRICTER",
    "chance_level",
    "current_text",
    "judge_verdict",
    "labels_to_beat_chance",
    "metric_verdict",
    "verdict_lines",
    "zero_ceiling_text",
]


def _beyond_reach(ceiling: float) -> str:
    """Why a ceiling above 0, but tiny, cannot be defended in practice."""
    return (
        f"a {ceiling:g} ceiling needs more than {MOST_FAILS_SEARCHED:,} human fails even with no false pass; "
        "declare a ceiling labels can show"
    )


def _labels(n_fails_more: float, fail_share: float | None, n_cases_more: int = 0) -> LabelsNeeded:
    """More labels, of the kind the shortfall is in: human fails, and the cases that takes at the
    campaign's share of fails (at least ``n_cases_more`` cases)."""
    fails = max(0, math.ceil(n_fails_more - 1e-9))
    cases = math.ceil(fails / fail_share - 1e-9) if fails and fail_share else 0
    return LabelsNeeded(human_fails=fails, cases=max(cases, n_cases_more), fail_share=fail_share)


@dataclass(frozen=True)
class _Reading:
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
    def of(cls, rec: Mapping[str, Any], confidence: float, min_labels: int) -> _Reading:
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


class _Shortfall(NamedTuple):
    """What a constraint rule still lacks: the lines that say so, and the human fails more that would
    settle it."""

    texts: tuple[str, ...] = ()
    more_fails: float = 0.0


def judge_verdict(rec: Mapping[str, Any], *, confidence: float = 0.95, min_labels: int = 50) -> JudgeVerdict:
    """The verdict on one judge's recommendation (one entry of a ``thresholds`` document).

    Parameters
    ----------
    rec : mapping
        A recommendation: ``judge``, ``rule``, ``threshold``, ``pass_rule``, ``n``, ``n_human_pass``,
        ``n_human_fail``, ``false_pass_rate_detail``, ``false_fail_rate_detail`` and ``separation``
        (``auc``, ``chance_p``, ``n_pass``, ``n_fail``); optionally ``current`` (the thresholds the user
        runs today, each with its rates).
    confidence : float
        The level of the rates' intervals; the test against chance is at :func:`chance_level`
        (``(1 - confidence) / 2``, never above 0.025).
    min_labels : int
        Fewer human labels than this is not yet defensible.

    Returns
    -------
    JudgeVerdict
        ``status`` one of :data:`STATUSES`; ``text`` the one-line verdict; ``labels_needed`` (``human_fails``,
        ``cases``) when more labels would settle it (``chance``: the labels that would settle the test
        against chance alone); ``warnings`` (a defensible threshold that fails most human passes);
        ``current`` a line per threshold the user runs today. ``to_dict()`` is the recommendation's
        ``verdict``.

    Examples
    --------
    >>> rec = {"judge": "j", "rule": {"kind": "constraint", "max_false_pass": 0.1}, "threshold": 0.7,
    ...        "pass_rule": "score >= threshold", "n": 40, "n_human_pass": 24, "n_human_fail": 16,
    ...        "false_pass_rate_detail": {"estimate": 0.0, "ci_low": 0.0, "ci_high": 0.19, "n": 16},
    ...        "false_fail_rate_detail": {"estimate": 0.25, "ci_low": 0.12, "ci_high": 0.45, "n": 24},
    ...        "separation": {"auc": 0.9, "chance_p": 0.001, "n_pass": 24, "n_fail": 16}}
    >>> judge_verdict(rec).text  # doctest: +NORMALIZE_WHITESPACE
    'j: not defensible yet: at score ≥ 0.7 false passes 0 [0, 0.19], false fails 0.25 [0.12, 0.45];
     16 human fails: a 0.1 ceiling needs at least 35; only 40 human labels (under 50): label at least 48
     more cases (19 more human fails at the 40% share of fails)'
    >>> rec["separation"] = {"auc": 0.68, "chance_p": 0.031, "n_pass": 24, "n_fail": 16}
    >>> v = judge_verdict(rec)
    >>> v.status, v.text[:90]
    ('needs labels', 'j: not shown better than chance yet: about 5 more labels (2 human fails) would settle it (')
    """
    r = _Reading.of(rec, confidence, min_labels)
    if r.kind in ("fixed", "default"):
        return _no_criterion(r)
    if r.kind == "constraint" and r.ceiling == 0:
        return _zero_ceiling(r)
    if r.n < 2 or r.n_pass == 0 or r.n_fail == 0:
        return _one_class(r)
    chance = chance_shortfall(rec, confidence, min_labels)
    if chance and chance["status"] != NEEDS_LABELS:
        return _not_separating(r, chance)
    r = replace(r, chance=chance or None)  # a sign, not yet shown: the checks below may ask for more labels
    found = _ceiling_checks(r) if r.kind == "constraint" else _Shortfall()
    if isinstance(found, JudgeVerdict):
        return found
    return _more_labels(r, found) or _defended(r)


def _no_criterion(r: _Reading) -> JudgeVerdict:
    """A fixed threshold, or no rule declared: nothing to defend."""
    why = (
        "the campaign fixes the threshold"
        if r.kind == "fixed"
        else "the metric declares no false-pass ceiling or costs (max_false_pass, or cost_false_pass and "
        "cost_false_fail, in campaign.toml)"
    )
    return r.verdict(NO_CRITERION, f"no recommendation to defend: {why}; {r.at}", why)


def _zero_ceiling(r: _Reading) -> JudgeVerdict:
    """A ceiling of 0: whatever the judge and the labels, no finite sample shows a rate of 0 (more labels
    never help)."""
    why = zero_ceiling_text()
    return r.verdict(NOT_DEFENSIBLE, f"not defensible: {why}; {r.at}", why)


def _one_class(r: _Reading) -> JudgeVerdict:
    """Under two labelled cases, or every human label a pass or every one a fail: the labels the rule needs."""
    n, n_fail = r.n, r.n_fail
    missing = "human labels" if n < 2 else "human fails" if n_fail == 0 else "human passes"
    why = (
        f"only {n} case(s) rated by both the judge and the humans"
        if n < 2
        else f"every one of the {n} human labels is a " + ("pass" if n_fail == 0 else "fail")
    )
    if r.kind == "constraint" and n_fail == 0:
        return _no_fail_found(r, why)
    needed = LabelsNeeded(human_fails=0, cases=max(2 - n, r.min_labels - n, 0), fail_share=r.fail_share)
    return r.verdict(NEEDS_LABELS, f"not defensible yet: {why}; the rule needs {missing}", why, labels_needed=needed)


def _no_fail_found(r: _Reading, why: str) -> JudgeVerdict:
    """A ceiling, and no human fail: the fails it needs, or (a ceiling too low to reach) not defensible."""
    needed = r.fails_needed(0.0)
    if needed is None:  # a ceiling so low that no count of fails we search reaches it
        why += f"; {_beyond_reach(r.ceiling)}"
        return r.verdict(NOT_DEFENSIBLE, f"not defensible: {why}", why)
    return r.verdict(
        NEEDS_LABELS,
        f"not defensible yet: {why}, so no human fail was found and nothing shows "
        f"how often the judge passes a failing answer; a {r.ceiling:g} ceiling needs "
        f"at least {needed} human fails: label cases the judge scores low to find "
        "them",
        why,
        labels_needed=_labels(needed, None, max(0, r.min_labels - r.n)),
    )


def _not_separating(r: _Reading, chance: Mapping[str, Any]) -> JudgeVerdict:
    """No sign of separating passes from fails: no count of labels to give (few labels), or none would help
    (many)."""
    text = chance["text"] if chance["status"] == NOT_SHOWN else f"not defensible: {chance['text']}"
    return r.verdict(chance["status"], text, chance["text"])


def _ceiling_checks(r: _Reading) -> JudgeVerdict | _Shortfall:
    """A constraint rule's checks: a threshold under the ceiling at all, and its false-pass bound under it."""
    if r.rec.get("threshold") is None:
        return _no_threshold(r)
    if r.fp.get("ci_high") is not None and r.fp["ci_high"] > r.ceiling + 1e-12:
        return _past_ceiling(r)
    return _Shortfall()


def _no_threshold(r: _Reading) -> JudgeVerdict | _Shortfall:
    """No threshold under the ceiling short of failing every case: too few human fails to tell, or not
    defensible (with the fewest false passes found)."""
    needed = r.fails_needed(0.0)
    if needed is not None and r.fail_n < needed:
        text = f"{r.n_fail} human fails: a {r.ceiling:g} ceiling needs at least {needed} even with no false pass"
        return _Shortfall((text,), needed - r.fail_n)
    lowest = r.rec.get("lowest_false_pass") or {}
    where = (
        f" (lowest: {number_text(lowest['rate'])} at {pass_rule_text({**r.rec, 'threshold': lowest['threshold']})})"
        if lowest.get("rate") is not None
        else ""
    )
    why = f"no threshold keeps false passes at or under {r.ceiling:g} short of failing every case{where}"
    return r.verdict(NOT_DEFENSIBLE, f"not defensible: {why}", why)


def _past_ceiling(r: _Reading) -> JudgeVerdict | _Shortfall:
    """The rule's threshold has a false-pass bound past the ceiling: a stricter threshold that stays under
    it, or the human fails that would bring the bound under, or not defensible."""
    needed = r.fails_needed(r.fp["estimate"])
    alternative = r.rec.get("defensible_alternative")
    if alternative and r.n >= r.min_labels and not r.chance:
        return _stricter(r, alternative, needed)
    lowest = (r.rec.get("lowest_false_pass") or {}).get("rate")
    if needed is None and lowest is not None and (stricter := r.fails_needed(lowest)) is not None:
        return _stricter_on_more_labels(r, lowest, stricter)
    if needed is None:
        return _at_ceiling(r)
    return _more_fails(r, needed)


def _stricter(r: _Reading, alternative: Mapping[str, Any], needed: int | None) -> JudgeVerdict:
    """A stricter threshold's interval stays under the ceiling: that is the defensible one (and the labels
    that would keep the rule's, while they are few)."""
    rec, fp = r.rec, r.fp
    shown = {**rec, "threshold": alternative["threshold"]}
    most = fails_most_text(alternative["false_fail_rate"])
    warnings = (f"it fails most human passes: false fails {rate_text(alternative['false_fail_rate'])}",) if most else ()
    text = (
        f"defensible at a stricter threshold{', though it fails most human passes' if most else ''}: "
        f"pass at {pass_rule_text(shown)}; "
        f"{rates_text(alternative['false_pass_rate'], alternative['false_fail_rate'])} (the rule's "
        f"{pass_rule_text(rec)} has false passes {rate_text(fp)}, past the {r.ceiling:g} ceiling"
    )
    labels = None
    if needed is not None and needed - r.fail_n <= r.fail_n:  # labels help only while they are few
        labels = _labels(needed - r.fail_n, r.fail_share)
        text += f"; keeping {pass_rule_text(rec)} needs about {labels.cases} more labelled cases"
    return r.verdict(
        STRICTER,
        text + ")" + most,
        f"the rule's threshold has false passes {rate_text(fp)}, past the ceiling",
        threshold=alternative["threshold"],
        rule_threshold=rec["threshold"],
        labels_needed=labels,
        warnings=warnings,
    )


def _stricter_on_more_labels(r: _Reading, lowest: float, stricter: int) -> _Shortfall:
    """This threshold's rate sits at the ceiling, but a stricter one has fewer false passes: on more labels
    its bound comes under the ceiling (a perfect judge on too few labels, say)."""
    strictest = pass_rule_text({**r.rec, "threshold": r.rec["lowest_false_pass"]["threshold"]})
    text = (
        f"at {pass_rule_text(r.rec)} false passes {rate_text(r.fp)} sit at the {r.ceiling:g} ceiling; a "
        f"stricter threshold (false passes {number_text(lowest)} at {strictest}) needs at least "
        f"{stricter} human fails, {r.n_fail} labelled"
    )
    return _Shortfall((text,), max(stricter - r.fail_n, 1))


def _at_ceiling(r: _Reading) -> JudgeVerdict | _Shortfall:
    """No number of fails brings the bound under the ceiling: not defensible, or, on too few labels, one
    more thing the rule lacks."""
    fp, ceiling = r.fp, r.ceiling
    why = f"at {pass_rule_text(r.rec)} false passes {rate_text(fp)}: " + (
        _beyond_reach(ceiling)
        if fp["estimate"] < ceiling and r.fails_needed(0.0) is None
        else f"the rate sits at the {ceiling:g} ceiling, so no number of labels brings its upper bound under it"
    )
    if r.n >= r.min_labels:
        return r.verdict(NOT_DEFENSIBLE, f"not defensible: {why}", why)
    return _Shortfall((why,))


def _more_fails(r: _Reading, needed: int) -> _Shortfall:
    """The human fails that would bring the bound under the ceiling: at least those a threshold with no false
    pass needs; more at the rule's threshold's rate."""
    least = r.fails_needed(0.0) or needed
    estimate = r.fp["estimate"]
    text = f"{r.n_fail} human fails: a {r.ceiling:g} ceiling needs at least {least}" + (
        "" if estimate == 0 else f" ({needed} at this rate of {number_text(estimate)})"
    )
    # enough fails for a threshold without false passes, but none has one: keep this threshold
    # (at least one more fail: the bound shown is past the ceiling)
    return _Shortfall((text,), max((least if least > r.fail_n else needed) - r.fail_n, 1))


def _more_labels(r: _Reading, shortfall: _Shortfall) -> JudgeVerdict | None:
    """What the rule lacks (and the test against chance, and ``min_labels``), with the labels that would
    settle it all; None when nothing is lacking."""
    texts = list(shortfall.texts)
    more_cases = max(0, r.min_labels - r.n)
    if more_cases:
        texts.append(f"only {r.n} human labels (under {r.min_labels})")
    chance = r.chance
    if not texts and not chance:
        return None
    needed = _labels(shortfall.more_fails, r.fail_share, more_cases)
    if chance:  # the labels the test against chance needs, as it counted them
        needed = replace(
            needed,
            human_fails=max(needed.human_fails, chance["human_fails"]),
            cases=max(needed.cases, chance["labels"]),
        )
    if chance and not texts:  # the test against chance is all that is missing
        return r.verdict(NEEDS_LABELS, f"{chance['text']}; {r.at}", labels_needed=needed)
    how = f"label at least {needed.cases} more cases"
    if needed.human_fails:
        how += f" ({needed.human_fails} more human fails at the {r.fail_share:.0%} share of fails)"
    head = f"{chance['text']}; and the rule needs more" if chance else "not defensible yet"
    return r.verdict(NEEDS_LABELS, f"{head}: {r.at}; {'; '.join(texts)}: {how}", *texts, labels_needed=needed)


def _defended(r: _Reading) -> JudgeVerdict:
    """Nothing lacking: defensible at the rule's threshold; or, a cost rule whose least cost is to fail every
    case, not defensible."""
    rec = r.rec
    if rec.get("threshold") is None:
        why = "its least expected cost is to fail every case: at these costs the judge's scores add nothing"
        return r.verdict(NOT_DEFENSIBLE, f"not defensible: {why}", why)
    least = " (least expected cost)" if r.kind == "cost" else ""
    most = fails_most_text(rec.get("false_fail_rate_detail"))
    warnings = (f"it fails most human passes: false fails {rate_text(rec['false_fail_rate_detail'])}",) if most else ()
    return r.verdict(
        DEFENSIBLE,
        f"defensible{', though it fails most human passes' if most else ''}: pass at {pass_rule_text(rec)}"
        f"{least}; {rates_text(rec)}{most}",
        warnings=warnings,
    )
