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
which kind: the human fails a ceiling needs (:func:`~calibrate.stats.thresholds.fails_for_ceiling`), and
the labelled cases that takes at the campaign's share of human fails. A ``fixed`` rule, or a metric that
declares no rule, gives no verdict to defend: the lines say so (defaults fail closed). A constraint rule's
checks are :func:`calibrate.analysis.ceiling_checks.ceiling_checks`.

Beside each judge's verdict, a line for each threshold the user runs today (the recommendation's
``current``: given, recorded in an imported run, or DeepEval's for a DeepEval judge;
:mod:`calibrate.analysis.current`): its false-pass and false-fail rates, as counts of the annotators'
verdicts, with their intervals.

Everything here reads the recommendation documents (:func:`calibrate.analysis.recommendations.thresholds`),
so the report, ``calibrate thresholds`` and ``calibrate stats`` print the same lines.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from calibrate.analysis.ceiling_checks import ceiling_checks
from calibrate.analysis.chance import (
    LOOSEST_CHANCE_LEVEL,
    MOST_LABELS_RATIO,
    SIGN_Z,
    chance_level,
    chance_shortfall,
    labels_to_beat_chance,
)
from calibrate.analysis.metric_verdicts import metric_verdict, verdict_lines
from calibrate.analysis.verdict_reading import Shortfall, VerdictReading, beyond_reach_text, labels_to_settle
from calibrate.analysis.verdict_results import JudgeVerdict, LabelsNeeded
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
    pass_rule_text,
    rate_text,
    rates_text,
    zero_ceiling_text,
)

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
    r = VerdictReading.of(rec, confidence, min_labels)
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
    found = ceiling_checks(r) if r.kind == "constraint" else Shortfall()
    if isinstance(found, JudgeVerdict):
        return found
    return _more_labels(r, found) or _defended(r)


def _no_criterion(r: VerdictReading) -> JudgeVerdict:
    """A fixed threshold, or no rule declared: nothing to defend."""
    why = (
        "the campaign fixes the threshold"
        if r.kind == "fixed"
        else "the metric declares no false-pass ceiling or costs (max_false_pass, or cost_false_pass and "
        "cost_false_fail, in campaign.toml)"
    )
    return r.verdict(NO_CRITERION, f"no recommendation to defend: {why}; {r.at}", why)


def _zero_ceiling(r: VerdictReading) -> JudgeVerdict:
    """A ceiling of 0: whatever the judge and the labels, no finite sample shows a rate of 0 (more labels
    never help)."""
    why = zero_ceiling_text()
    return r.verdict(NOT_DEFENSIBLE, f"not defensible: {why}; {r.at}", why)


def _one_class(r: VerdictReading) -> JudgeVerdict:
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


def _no_fail_found(r: VerdictReading, why: str) -> JudgeVerdict:
    """A ceiling, and no human fail: the fails it needs, or (a ceiling too low to reach) not defensible."""
    needed = r.fails_needed(0.0)
    if needed is None:  # a ceiling so low that no count of fails we search reaches it
        why += f"; {beyond_reach_text(r.ceiling)}"
        return r.verdict(NOT_DEFENSIBLE, f"not defensible: {why}", why)
    return r.verdict(
        NEEDS_LABELS,
        f"not defensible yet: {why}, so no human fail was found and nothing shows "
        f"how often the judge passes a failing answer; a {r.ceiling:g} ceiling needs "
        f"at least {needed} human fails: label cases the judge scores low to find "
        "them",
        why,
        labels_needed=labels_to_settle(needed, None, max(0, r.min_labels - r.n)),
    )


def _not_separating(r: VerdictReading, chance: Mapping[str, Any]) -> JudgeVerdict:
    """No sign of separating passes from fails: no count of labels to give (few labels), or none would help
    (many)."""
    text = chance["text"] if chance["status"] == NOT_SHOWN else f"not defensible: {chance['text']}"
    return r.verdict(chance["status"], text, chance["text"])


def _more_labels(r: VerdictReading, shortfall: Shortfall) -> JudgeVerdict | None:
    """What the rule lacks (and the test against chance, and ``min_labels``), with the labels that would
    settle it all; None when nothing is lacking."""
    texts = list(shortfall.texts)
    more_cases = max(0, r.min_labels - r.n)
    if more_cases:
        texts.append(f"only {r.n} human labels (under {r.min_labels})")
    chance = r.chance
    if not texts and not chance:
        return None
    needed = labels_to_settle(shortfall.more_fails, r.fail_share, more_cases)
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


def _defended(r: VerdictReading) -> JudgeVerdict:
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
