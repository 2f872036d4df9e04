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
from typing import Any

from calibrate.analysis.chance import (
    LOOSEST_CHANCE_LEVEL,
    MOST_LABELS_RATIO,
    SIGN_Z,
    chance_level,
    chance_shortfall,
    labels_to_beat_chance,
)
from calibrate.analysis.metric_verdicts import metric_verdict, verdict_lines
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


def _labels(n_fails_more: float, fail_share: float | None, n_cases_more: int = 0) -> dict[str, Any]:
    """More labels, of the kind the shortfall is in: human fails, and the cases that takes at the
    campaign's share of fails (at least ``n_cases_more`` cases)."""
    fails = max(0, math.ceil(n_fails_more - 1e-9))
    cases = math.ceil(fails / fail_share - 1e-9) if fails and fail_share else 0
    return {"human_fails": fails, "cases": max(cases, n_cases_more), "fail_share": fail_share}


def judge_verdict(rec: dict[str, Any], *, confidence: float = 0.95, min_labels: int = 50) -> dict[str, Any]:
    """The verdict on one judge's recommendation (one entry of a ``thresholds`` document).

    Parameters
    ----------
    rec : dict
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
    dict
        ``{"judge", "status", "threshold", "text", "reasons", "labels_needed", "chance", "warnings",
        "current"}``: ``status`` one of :data:`STATUSES`; ``text`` the one-line verdict;
        ``labels_needed`` (``human_fails``, ``cases``) when more labels would settle it (``chance``: the
        labels that would settle the test against chance alone); ``warnings`` (a defensible threshold
        that fails most human passes); ``current`` one ``{"threshold", "source", "text"}`` per threshold
        the user runs today.

    Examples
    --------
    >>> rec = {"judge": "j", "rule": {"kind": "constraint", "max_false_pass": 0.1}, "threshold": 0.7,
    ...        "pass_rule": "score >= threshold", "n": 40, "n_human_pass": 24, "n_human_fail": 16,
    ...        "false_pass_rate_detail": {"estimate": 0.0, "ci_low": 0.0, "ci_high": 0.19, "n": 16},
    ...        "false_fail_rate_detail": {"estimate": 0.25, "ci_low": 0.12, "ci_high": 0.45, "n": 24},
    ...        "separation": {"auc": 0.9, "chance_p": 0.001, "n_pass": 24, "n_fail": 16}}
    >>> judge_verdict(rec)["text"]  # doctest: +NORMALIZE_WHITESPACE
    'j: not defensible yet: at score ≥ 0.7 false passes 0 [0, 0.19], false fails 0.25 [0.12, 0.45];
     16 human fails: a 0.1 ceiling needs at least 35; only 40 human labels (under 50): label at least 48
     more cases (19 more human fails at the 40% share of fails)'
    >>> rec["separation"] = {"auc": 0.68, "chance_p": 0.031, "n_pass": 24, "n_fail": 16}
    >>> v = judge_verdict(rec)
    >>> v["status"], v["text"][:90]
    ('needs labels', 'j: not shown better than chance yet: about 5 more labels (2 human fails) would settle it (')
    """
    rule, judge = rec["rule"], rec["judge"]
    n, n_pass, n_fail = rec.get("n", 0), rec.get("n_human_pass", 0), rec.get("n_human_fail", 0)
    fail_share = n_fail / n if n else None
    out: dict[str, Any] = {
        "judge": judge,
        "threshold": rec.get("threshold"),
        "reasons": [],
        "labels_needed": None,
        "chance": None,
        "warnings": [],
        "current": [
            {"threshold": c["threshold"], "source": c.get("source"), "text": current_text(c, rule)}
            for c in rec.get("current") or []
        ],
    }
    kind = rule["kind"]

    def done(status: str, text: str) -> dict[str, Any]:
        out["status"] = status
        out["text"] = f"{judge}: {text}"
        return out

    at = f"at {pass_rule_text(rec)} {rates_text(rec)}" if rec.get("threshold") is not None else "no threshold"
    if kind in ("fixed", "default"):
        why = (
            "the campaign fixes the threshold"
            if kind == "fixed"
            else "the metric declares no false-pass ceiling or costs (max_false_pass, or cost_false_pass and "
            "cost_false_fail, in campaign.toml)"
        )
        out["reasons"].append(why)
        return done(NO_CRITERION, f"no recommendation to defend: {why}; {at}")
    ceiling = rule.get("max_false_pass")
    if kind == "constraint" and ceiling == 0:
        # whatever the judge and the labels: no finite sample shows a rate of 0 (more labels never help)
        why = zero_ceiling_text()
        out["reasons"].append(why)
        return done(NOT_DEFENSIBLE, f"not defensible: {why}; {at}")
    one_sided = kind == "constraint" and rule.get("confidence") is not None
    level = rule.get("confidence") if one_sided else confidence

    def fails_needed(rate: float) -> int | None:
        return fails_for_ceiling(rate, ceiling, confidence=level, one_sided=one_sided)

    if n < 2 or n_pass == 0 or n_fail == 0:
        missing = "human labels" if n < 2 else "human fails" if n_fail == 0 else "human passes"
        why = (
            f"only {n} case(s) rated by both the judge and the humans"
            if n < 2
            else f"every one of the {n} human labels is a " + ("pass" if n_fail == 0 else "fail")
        )
        out["reasons"].append(why)
        if kind == "constraint" and n_fail == 0:
            needed = fails_needed(0.0)
            if needed is None:  # a ceiling so low that no count of fails we search reaches it
                why += f"; {_beyond_reach(ceiling)}"
                out["reasons"][-1] = why
                return done(NOT_DEFENSIBLE, f"not defensible: {why}")
            out["labels_needed"] = _labels(needed, None, max(0, min_labels - n))
            return done(
                NEEDS_LABELS,
                f"not defensible yet: {why}, so no human fail was found and nothing shows "
                f"how often the judge passes a failing answer; a {ceiling:g} ceiling needs "
                f"at least {needed} human fails: label cases the judge scores low to find "
                "them",
            )
        out["labels_needed"] = {"human_fails": 0, "cases": max(2 - n, min_labels - n, 0), "fail_share": fail_share}
        return done(NEEDS_LABELS, f"not defensible yet: {why}; the rule needs {missing}")
    chance = chance_shortfall(rec, confidence, min_labels)
    if chance and chance["status"] != NEEDS_LABELS:
        # no sign of separating: no count of labels to give (few labels), or none would help (many)
        out["reasons"].append(chance["text"])
        return done(
            chance["status"], chance["text"] if chance["status"] == NOT_SHOWN else f"not defensible: {chance['text']}"
        )
    if chance:  # a sign, not yet shown: the labels at its AUC; the other checks may ask for more
        out["chance"] = {k: chance[k] for k in ("labels", "human_fails", "total")}
        out["reasons"].append(chance["text"])
    fp = rec.get("false_pass_rate_detail") or {}
    fail_n = fp.get("effective_n", n_fail)  # weighted rates: the fails' Kish effective size
    texts, more_fails = [], 0.0
    if kind == "constraint":
        if rec.get("threshold") is None:
            needed = fails_needed(0.0)
            if needed is not None and fail_n < needed:
                texts.append(
                    f"{n_fail} human fails: a {ceiling:g} ceiling needs at least {needed} even with no false pass"
                )
                more_fails = needed - fail_n
            else:
                lowest = rec.get("lowest_false_pass") or {}
                where = (
                    f" (lowest: {number_text(lowest['rate'])} at {pass_rule_text({**rec, 'threshold': lowest['threshold']})})"
                    if lowest.get("rate") is not None
                    else ""
                )
                why = f"no threshold keeps false passes at or under {ceiling:g} short of failing every case{where}"
                out["reasons"].append(why)
                return done(NOT_DEFENSIBLE, f"not defensible: {why}")
        elif fp.get("ci_high") is not None and fp["ci_high"] > ceiling + 1e-12:
            needed = fails_needed(fp["estimate"])
            alternative = rec.get("defensible_alternative")
            keep = f"keeping {pass_rule_text(rec)} needs about"
            if alternative and n >= min_labels and not chance:
                # a stricter threshold's interval stays under the ceiling: that is the defensible one
                out.update(threshold=alternative["threshold"], rule_threshold=rec["threshold"])
                shown = {**rec, "threshold": alternative["threshold"]}
                most = fails_most_text(alternative["false_fail_rate"])
                if most:
                    out["warnings"].append(
                        f"it fails most human passes: false fails {rate_text(alternative['false_fail_rate'])}"
                    )
                text = (
                    f"defensible at a stricter threshold{', though it fails most human passes' if most else ''}: "
                    f"pass at {pass_rule_text(shown)}; "
                    f"{rates_text(alternative['false_pass_rate'], alternative['false_fail_rate'])} (the rule's "
                    f"{pass_rule_text(rec)} has false passes {rate_text(fp)}, past the {ceiling:g} ceiling"
                )
                if needed is not None and needed - fail_n <= fail_n:  # labels help only while they are few
                    out["labels_needed"] = _labels(needed - fail_n, fail_share)
                    text += f"; {keep} {out['labels_needed']['cases']} more labelled cases"
                out["reasons"].append(f"the rule's threshold has false passes {rate_text(fp)}, past the ceiling")
                return done(STRICTER, text + ")" + most)
            lowest = (rec.get("lowest_false_pass") or {}).get("rate")
            stricter = fails_needed(lowest) if needed is None and lowest is not None else None
            if needed is None and stricter is not None:
                # this threshold's rate sits at the ceiling, but a stricter one has fewer false passes: on
                # more labels its bound comes under the ceiling (a perfect judge on too few labels, say)
                strictest = pass_rule_text({**rec, "threshold": rec["lowest_false_pass"]["threshold"]})
                texts.append(
                    f"at {pass_rule_text(rec)} false passes {rate_text(fp)} sit at the {ceiling:g} ceiling; a "
                    f"stricter threshold (false passes {number_text(lowest)} at {strictest}) needs at least "
                    f"{stricter} human fails, {n_fail} labelled"
                )
                more_fails = max(stricter - fail_n, 1)
            elif needed is None:
                why = f"at {pass_rule_text(rec)} false passes {rate_text(fp)}: " + (
                    _beyond_reach(ceiling)
                    if fp["estimate"] < ceiling and fails_needed(0.0) is None
                    else f"the rate sits at the {ceiling:g} ceiling, so no number of labels brings its upper bound "
                    "under it"
                )
                if n >= min_labels:
                    out["reasons"].append(why)
                    return done(NOT_DEFENSIBLE, f"not defensible: {why}")
                texts.append(why)
            else:
                # at least: the fails a threshold with no false pass needs; more at the rule's threshold's rate
                least = fails_needed(0.0) or needed
                texts.append(
                    f"{n_fail} human fails: a {ceiling:g} ceiling needs at least {least}"
                    + ("" if fp["estimate"] == 0 else f" ({needed} at this rate of {number_text(fp['estimate'])})")
                )
                # enough fails for a threshold without false passes, but none has one: keep this threshold
                # (at least one more fail: the bound shown is past the ceiling)
                more_fails = max((least if least > fail_n else needed) - fail_n, 1)
    more_cases = max(0, min_labels - n)
    if more_cases:
        texts.append(f"only {n} human labels (under {min_labels})")
    if texts or chance:
        out["reasons"] += texts
        needed = _labels(more_fails, fail_share, more_cases)
        if chance:  # the labels the test against chance needs, as it counted them
            needed.update(
                human_fails=max(needed["human_fails"], chance["human_fails"]),
                cases=max(needed["cases"], chance["labels"]),
            )
        out["labels_needed"] = needed
        if not texts:  # the test against chance is all that is missing
            return done(NEEDS_LABELS, f"{chance['text']}; {at}")
        how = f"label at least {needed['cases']} more cases"
        if needed["human_fails"]:
            how += f" ({needed['human_fails']} more human fails at the {fail_share:.0%} share of fails)"
        head = f"{chance['text']}; and the rule needs more" if chance else "not defensible yet"
        return done(NEEDS_LABELS, f"{head}: {at}; {'; '.join(texts)}: {how}")
    if rec.get("threshold") is None:  # a cost rule whose least cost is to fail every case
        why = "its least expected cost is to fail every case: at these costs the judge's scores add nothing"
        out["reasons"].append(why)
        return done(NOT_DEFENSIBLE, f"not defensible: {why}")
    least = " (least expected cost)" if kind == "cost" else ""
    most = fails_most_text(rec.get("false_fail_rate_detail"))
    if most:
        out["warnings"].append(f"it fails most human passes: false fails {rate_text(rec['false_fail_rate_detail'])}")
    return done(
        DEFENSIBLE,
        f"defensible{', though it fails most human passes' if most else ''}: pass at {pass_rule_text(rec)}"
        f"{least}; {rates_text(rec)}{most}",
    )
