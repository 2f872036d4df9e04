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

Everything here reads the recommendation documents (:func:`calibrate.analysis.agreement.thresholds`),
so the report, ``calibrate thresholds`` and ``calibrate stats`` print the same lines.
"""

from __future__ import annotations

import math
from typing import Any

from scipy.stats import norm

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

#: a reviewer can hold the recommendation to the rule
DEFENSIBLE = "defensible"
#: not yet: more human labels (``labels_needed``) would settle it
NEEDS_LABELS = "needs labels"
#: not shown better than chance on fewer than ``min_labels`` labels, with no sign of separating: no label count
NOT_SHOWN = "not shown"
#: defensible at a threshold stricter than the rule's (whose interval reaches past the ceiling)
STRICTER = "defensible if stricter"
#: no number of labels makes it defensible as the judge scores now
NOT_DEFENSIBLE = "not defensible"
#: the rule (fixed, or none declared) gives nothing to defend
NO_CRITERION = "no criterion"
#: every status, from the best to the one with nothing to defend
STATUSES = (DEFENSIBLE, STRICTER, NEEDS_LABELS, NOT_SHOWN, NOT_DEFENSIBLE, NO_CRITERION)

#: a separation from which a label count is projected: its one-sided z (the normal quantile of its p) is at
#: least this, one standard error from none; under it the AUC seen is as much noise as signal
SIGN_Z = 1.0
#: on ``min_labels`` labels or more, a judge whose separation so far would need more than this many times its
#: labels to be shown is too weak to gate on: labels help only while they are few (as for a stricter threshold)
MOST_LABELS_RATIO = 2
#: a false-fail rate above this is "most human passes"
MOST = 0.5


#: the chance test never runs looser than this, whatever the confidence asked for: a judge no better than
#: chance gets through it at most once in 40 samples
LOOSEST_CHANCE_LEVEL = 0.025


def chance_level(confidence: float) -> float:
    """The level of the one-sided test against chance that a decision at ``confidence`` reads:
    ``(1 - confidence) / 2``, to 12 significant digits (0.025, not 0.025000000000000022, so that p =
    0.025 is not below it; and about 5e-13 at a confidence of 1 - 1e-12, not 0), and never above
    :data:`LOOSEST_CHANCE_LEVEL` (at a confidence of 0.3 a coin-flip judge would get through one time
    in three).

    Examples
    --------
    >>> chance_level(0.95), chance_level(0.999), chance_level(0.3), chance_level(1e-9)
    (0.025, 0.0005, 0.025, 0.025)
    """
    return min(LOOSEST_CHANCE_LEVEL, float(f"{(1 - confidence) / 2:.12g}"))


def labels_to_beat_chance(chance_p: float, n: int, *, level: float) -> int | None:
    """The labels at which a judge's separation, as seen so far, would be shown better than chance: the
    smallest total ``N`` at which the one-sided Mann-Whitney test reaches ``p < level`` if the AUC and the
    shares of human passes and fails stay what they are on the ``n`` labels. None when the separation seen is
    under one standard error from none (its z, ``norm.isf(chance_p)``, below :data:`SIGN_Z`): the AUC seen is
    then as much noise as effect, and at no effect no number of labels would do.

    How: with the AUC fixed, the test's z grows with the labels as U's null standard deviation shrinks
    relative to its distance from ``n_pass n_fail / 2``; scaling both classes by ``c`` multiplies z by
    ``c sqrt((n + 1) / (c n + 1))``. ``N = c n`` for the ``c`` that brings z to ``norm.isf(level)`` (the
    positive root of ``c**2 (n + 1) = r**2 (c n + 1)``, ``r`` the ratio of the two z's). The observed p is
    the test's own (by permutation on small classes), so ``N > n`` exactly when ``p >= level``.

    Parameters
    ----------
    chance_p : float
        The one-sided Mann-Whitney p-value on ``n`` labels.
    n : int
        The labels it was computed on (human passes and fails).
    level : float
        The level the test must get under (:func:`chance_level`).

    Returns
    -------
    int or None
        The total labels (``n`` itself when ``chance_p`` is already under ``level``).

    Examples
    --------
    >>> labels_to_beat_chance(0.031, 50, level=0.025)    # just short: a few more labels at this AUC
    56
    >>> labels_to_beat_chance(0.10, 30, level=0.025)     # z = 1.28: about twice as many
    69
    >>> labels_to_beat_chance(0.40, 400, level=0.025) is None   # z = 0.25: no sign to project from
    True
    >>> labels_to_beat_chance(0.025, 400, level=0.025)   # at the level itself, not under it: one more at least
    401
    """
    z, target = float(norm.isf(chance_p)), float(norm.isf(level))
    if not z >= SIGN_Z:  # NaN included
        return None
    if chance_p < level:
        return int(n)
    r2 = (target / z) ** 2
    c = (r2 * n + math.sqrt(r2**2 * n**2 + 4 * (n + 1) * r2)) / (2 * (n + 1))
    return max(int(n) + 1, math.ceil(c * n - 1e-9))


def zero_ceiling_text() -> str:
    """Why a false-pass ceiling of 0 (``max_false_pass = 0``) can never be shown, and what to give instead.

    Examples
    --------
    >>> zero_ceiling_text()[:44]
    'a false-pass ceiling of 0 can never be shown'
    """
    return (
        "a false-pass ceiling of 0 can never be shown: on any finite number of human fails, even with no false "
        "pass, the false-pass rate's upper bound is above 0, so no judge and no number of labels meets it; "
        "give a ceiling above 0 (at 95% confidence, 0.05 takes about 73 human fails with no false pass, "
        "0.01 about 380)"
    )


def _num(x: float | None) -> str:
    """A rate or threshold, short: two decimals, three below 0.01, as given when whole."""
    if x is None:
        return "-"
    if float(x).is_integer():
        return f"{x:.0f}"
    return f"{x:.3f}" if 0 < abs(x) < 0.005 else f"{x:.2f}"


def _threshold(x: float) -> str:
    """A threshold to at most three decimals (report.json has it whole): ``3``, ``0.7``, ``0.896``."""
    return f"{x:.3f}".rstrip("0").rstrip(".")


def _rate_text(detail: dict[str, Any] | None) -> str:
    """``0.06 [0.04, 0.09]``, or ``0.06`` without an interval, or ``-``."""
    if not detail or detail.get("estimate") is None:
        return "-"
    text = _num(detail["estimate"])
    if detail.get("ci_low") is not None:
        text += f" [{_num(detail['ci_low'])}, {_num(detail['ci_high'])}]"
    return text


def _at(rec: dict[str, Any]) -> str:
    """``score >= 0.7`` (``<=`` for a judge whose lower scores are better)."""
    return rec["pass_rule"].replace("threshold", _threshold(rec["threshold"])).replace(">=", "≥").replace("<=", "≤")


def _rates(rec_or_fp: dict[str, Any], ff: dict[str, Any] | None = None) -> str:
    """``false passes 0.06 [0.04, 0.09], false fails ...`` of a recommendation, or of two rate figures."""
    fp = rec_or_fp if ff is not None else rec_or_fp.get("false_pass_rate_detail")
    ff = ff if ff is not None else rec_or_fp.get("false_fail_rate_detail")
    return f"false passes {_rate_text(fp)}, false fails {_rate_text(ff)}"


def _separation_text(sep: dict[str, Any], alpha: float) -> str:
    """``AUC 0.71, one-sided Mann-Whitney p = 0.031 on 40 passes and 10 fails; needs p < 0.025``."""
    return (
        f"AUC {sep['auc']:.2f}, one-sided Mann-Whitney p = {sep['chance_p']:.2g} on {sep['n_pass']} passes and "
        f"{sep['n_fail']} fails; needs p < {alpha:g}"
    )


def _chance(rec: dict[str, Any], confidence: float, min_labels: int) -> dict[str, Any] | None:
    """Why the judge's scores are not shown to separate passes from fails, or None: ``{"status", "text"}``
    and, when labels would settle it (``NEEDS_LABELS``), ``labels`` (more labels), ``human_fails`` (of them)
    and ``total`` (:func:`labels_to_beat_chance`)."""
    sep = rec.get("separation")
    if not sep:
        return None
    alpha = chance_level(confidence)
    if sep["chance_p"] < alpha:
        return None
    n, detail = sep["n_pass"] + sep["n_fail"], _separation_text(sep, alpha)
    total = labels_to_beat_chance(sep["chance_p"], n, level=alpha)
    if total is None:
        backwards = ""
        if sep["auc"] < 0.5 and 1 - sep["chance_p"] < alpha:  # the other tail: the scores run the wrong way
            backwards = (
                "; its scores rank human fails above passes: do its higher scores mean worse answers? "
                "(higher_is_better = false for the rater)"
            )
        if n >= min_labels:
            return {
                "status": NOT_DEFENSIBLE,
                "text": (
                    f"its scores separate human passes from fails no better than chance ({detail}): on {n} labels "
                    f"their separation is under one standard error from none, so more labels would not show one"
                    f"{backwards}"
                ),
            }
        return {
            "status": NOT_SHOWN,
            "text": (
                f"not shown better than chance; its scores show no sign of separating human passes from fails "
                f"({detail}): a separation under one standard error from none gives no count of labels that would "
                f"settle it (on {min_labels} labels or more, still without a sign, it is not defensible){backwards}"
            ),
        }
    if n >= min_labels and total > MOST_LABELS_RATIO * n:  # a sign too weak to gate on: labels help little
        return {
            "status": NOT_DEFENSIBLE,
            "text": (
                f"its scores separate human passes from fails no better than chance ({detail}): at this AUC it would "
                f"take about {total} labels to show, over {MOST_LABELS_RATIO} times the {n} so far: a separation this "
                f"weak is no gate"
            ),
        }
    more = total - n
    fails = max(1, math.ceil(more * sep["n_fail"] / n - 1e-9))
    return {
        "status": NEEDS_LABELS,
        "labels": more,
        "human_fails": fails,
        "total": total,
        "text": (
            f"not shown better than chance yet: about {more} more label{'s' * (more != 1)} ({fails} human "
            f"fail{'s' * (fails != 1)}) would settle it "
            f"({detail}; at this AUC, p falls under {alpha:g} at about {total} labels)"
        ),
    }


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


def _count(detail: dict[str, Any], whose: str) -> str:
    """``21 of 27 answers the annotators failed (0.78 [0.59, 0.89])``; weighted rates give their share."""
    if detail.get("k") is not None and not detail.get("weighted"):
        return f"{detail['k']} of {detail['n']} answers {whose} ({_rate_text(detail)})"
    cases = f", {detail['n']} cases" if detail.get("n") is not None else ""
    return f"{_rate_text(detail)} of the answers {whose} (weighted{cases})"


def current_text(current: dict[str, Any], rule: dict[str, Any]) -> str:
    """The line for a threshold the user runs today: its false passes and false fails as counts of the
    annotators' verdicts, with their intervals, and where it stands against a false-pass ceiling.

    Examples
    --------
    >>> cur = {"threshold": 0.5, "source_text": "DeepEval's default", "pass_rule": "score >= threshold",
    ...        "false_pass_rate": {"estimate": 21 / 27, "ci_low": 0.59, "ci_high": 0.89, "k": 21, "n": 27},
    ...        "false_fail_rate": {"estimate": 3 / 33, "ci_low": 0.03, "ci_high": 0.24, "k": 3, "n": 33}}
    >>> current_text(cur, {"kind": "constraint", "max_false_pass": 0.1})  # doctest: +NORMALIZE_WHITESPACE
    "at your current threshold 0.5 (DeepEval's default): passes 21 of 27 answers the annotators failed
     (0.78 [0.59, 0.89]) and fails 3 of 33 answers they passed (0.09 [0.03, 0.24]); past the 0.1 ceiling"
    """
    shown = (
        current["pass_rule"]
        .replace("threshold", _threshold(current["threshold"]))
        .replace(">=", "≥")
        .replace("<=", "≤")
    )
    where = _threshold(current["threshold"]) if current["pass_rule"] == "score >= threshold" else shown
    head = f"at your current threshold {where} ({current['source_text']})"
    fp, ff = current.get("false_pass_rate") or {}, current.get("false_fail_rate") or {}
    parts = []
    if fp.get("estimate") is not None:
        parts.append("passes " + _count(fp, "the annotators failed"))
    if ff.get("estimate") is not None:
        parts.append("fails " + _count(ff, "they passed" if parts else "the annotators passed"))
    if not parts:
        return f"{head}: no rates ({fp.get('reason') or ff.get('reason') or 'no labelled case'})"
    text = f"{head}: {' and '.join(parts)}"
    ceiling = rule.get("max_false_pass") if rule.get("kind") == "constraint" else None
    if ceiling is not None and fp.get("estimate") is not None:
        if fp["estimate"] > ceiling + 1e-12:
            text += f"; past the {ceiling:g} ceiling"
        elif fp.get("ci_high") is not None and fp["ci_high"] > ceiling + 1e-12:
            text += f"; its interval reaches past the {ceiling:g} ceiling"
        else:
            text += f"; within the {ceiling:g} ceiling"
    if ff.get("estimate") is not None and ff["estimate"] > MOST:
        text += "; it fails most human passes"
    return text


def _fails_most(ff: dict[str, Any] | None) -> str:
    """``: a gate there blocks 78% of the answers the annotators passed``, or empty (it fails few)."""
    if not ff or ff.get("estimate") is None or ff["estimate"] <= MOST:
        return ""
    return f": a gate there blocks {ff['estimate']:.0%} of the answers the annotators passed"


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

    at = f"at {_at(rec)} {_rates(rec)}" if rec.get("threshold") is not None else "no threshold"
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
    chance = _chance(rec, confidence, min_labels)
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
                    f" (lowest: {_num(lowest['rate'])} at {_at({**rec, 'threshold': lowest['threshold']})})"
                    if lowest.get("rate") is not None
                    else ""
                )
                why = f"no threshold keeps false passes at or under {ceiling:g} short of failing every case{where}"
                out["reasons"].append(why)
                return done(NOT_DEFENSIBLE, f"not defensible: {why}")
        elif fp.get("ci_high") is not None and fp["ci_high"] > ceiling + 1e-12:
            needed = fails_needed(fp["estimate"])
            alternative = rec.get("defensible_alternative")
            keep = f"keeping {_at(rec)} needs about"
            if alternative and n >= min_labels and not chance:
                # a stricter threshold's interval stays under the ceiling: that is the defensible one
                out.update(threshold=alternative["threshold"], rule_threshold=rec["threshold"])
                shown = {**rec, "threshold": alternative["threshold"]}
                most = _fails_most(alternative["false_fail_rate"])
                if most:
                    out["warnings"].append(
                        f"it fails most human passes: false fails {_rate_text(alternative['false_fail_rate'])}"
                    )
                text = (
                    f"defensible at a stricter threshold{', though it fails most human passes' if most else ''}: "
                    f"pass at {_at(shown)}; "
                    f"{_rates(alternative['false_pass_rate'], alternative['false_fail_rate'])} (the rule's "
                    f"{_at(rec)} has false passes {_rate_text(fp)}, past the {ceiling:g} ceiling"
                )
                if needed is not None and needed - fail_n <= fail_n:  # labels help only while they are few
                    out["labels_needed"] = _labels(needed - fail_n, fail_share)
                    text += f"; {keep} {out['labels_needed']['cases']} more labelled cases"
                out["reasons"].append(f"the rule's threshold has false passes {_rate_text(fp)}, past the ceiling")
                return done(STRICTER, text + ")" + most)
            lowest = (rec.get("lowest_false_pass") or {}).get("rate")
            stricter = fails_needed(lowest) if needed is None and lowest is not None else None
            if needed is None and stricter is not None:
                # this threshold's rate sits at the ceiling, but a stricter one has fewer false passes: on
                # more labels its bound comes under the ceiling (a perfect judge on too few labels, say)
                strictest = _at({**rec, "threshold": rec["lowest_false_pass"]["threshold"]})
                texts.append(
                    f"at {_at(rec)} false passes {_rate_text(fp)} sit at the {ceiling:g} ceiling; a "
                    f"stricter threshold (false passes {_num(lowest)} at {strictest}) needs at least "
                    f"{stricter} human fails, {n_fail} labelled"
                )
                more_fails = max(stricter - fail_n, 1)
            elif needed is None:
                why = f"at {_at(rec)} false passes {_rate_text(fp)}: " + (
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
                    + ("" if fp["estimate"] == 0 else f" ({needed} at this rate of {_num(fp['estimate'])})")
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
    most = _fails_most(rec.get("false_fail_rate_detail"))
    if most:
        out["warnings"].append(f"it fails most human passes: false fails {_rate_text(rec['false_fail_rate_detail'])}")
    return done(
        DEFENSIBLE,
        f"defensible{', though it fails most human passes' if most else ''}: pass at {_at(rec)}"
        f"{least}; {_rates(rec)}{most}",
    )


def _defended(rec: dict[str, Any]) -> dict[str, Any]:
    """The recommendation at the threshold its verdict defends: the rule's, or the stricter alternative's."""
    alternative = rec.get("defensible_alternative")
    if rec["verdict"]["status"] != STRICTER or not alternative:
        return rec
    return {
        **rec,
        "threshold": alternative["threshold"],
        "accuracy": alternative.get("accuracy"),
        "false_pass_rate": alternative["false_pass_rate"]["estimate"],
        "false_fail_rate": alternative["false_fail_rate"]["estimate"],
    }


def _cost(rec: dict[str, Any]) -> float:
    """Expected cost per case of a recommendation under its cost rule."""
    rule = rec["rule"]
    share = rule.get("prevalence")
    if share is None:
        share = rec["n_human_pass"] / rec["n"]
    return (
        rule["cost_false_pass"] * (1 - share) * rec["false_pass_rate"]
        + rule["cost_false_fail"] * share * rec["false_fail_rate"]
    )


def _ceiling(annotators: dict[str, Any] | None) -> dict[str, Any]:
    """The human ceiling: how far the annotators agree with each other, or why there is none."""
    if not annotators or annotators.get("n_annotators", 0) < 2:
        return {"text": "no human ceiling: one annotator (label some cases twice to measure it)"}
    if "percent_agreement" not in annotators:
        return {"text": f"no human ceiling: {annotators.get('reason', 'too few cases labelled twice')}"}
    agree = annotators["percent_agreement"]
    kappa_key = "cohen_kappa" if "cohen_kappa" in annotators else "fleiss_kappa"
    kappa = annotators.get(kappa_key) or {}
    text = (
        f"human ceiling: {annotators['n_annotators']} annotators agree on {_rate_text(agree)} of the "
        f"{annotators['n_items_multiply_labelled']} cases labelled twice or more ("
    )
    if kappa.get("estimate") is not None:
        text += f"{'Cohen' if kappa_key == 'cohen_kappa' else 'Fleiss'} κ {_rate_text(kappa)}; "
    return {"text": text + f"on {annotators.get('basis', 'the labels')})", "agreement": agree, "kappa": kappa}


def metric_verdict(metric: str, recs: list[dict[str, Any]], annotators: dict[str, Any] | None = None) -> dict[str, Any]:
    """The verdict block of one metric: every judge's verdict, the best judge by the rule, the human ceiling.

    Parameters
    ----------
    metric : str
    recs : list of dict
        The metric's recommendations, each with its ``verdict`` (:func:`judge_verdict`).
    annotators : dict, optional
        :func:`calibrate.analysis.annotators.annotator_agreement` of the metric.

    Returns
    -------
    dict
        ``{"metric", "rule", "judges": [verdicts], "best": {"judge", "text"}, "ceiling": {"text", ...}}``;
        ``best["judge"]`` is None when no judge is defensible.

    Examples
    --------
    >>> v = metric_verdict("m", [])
    >>> v["best"]["text"]
    'no judge rated this metric'
    """
    verdicts = [r["verdict"] for r in recs]
    rule = recs[0]["rule"] if recs else {}
    ok = [_defended(r) for r in recs if r["verdict"]["status"] in (DEFENSIBLE, STRICTER)]
    best: dict[str, Any] = {"judge": None}
    if not recs:
        best["text"] = "no judge rated this metric"
    elif rule.get("kind") in ("fixed", "default"):
        best["text"] = "no best judge: the metric declares no rule to rank the judges by"
    elif not ok:
        waiting = [r["verdict"] for r in recs if r["verdict"]["status"] == NEEDS_LABELS]
        best["text"] = "no judge is defensible yet"
        if waiting:
            closest = min(
                waiting, key=lambda v: (v["labels_needed"]["cases"], v["labels_needed"]["human_fails"], v["judge"])
            )
            best["closest"] = closest["judge"]
            needed = closest["labels_needed"]
            if needed["human_fails"] and not needed.get("fail_share"):  # no fail found: the cases are unknown
                best["text"] += (
                    f"; closest: {closest['judge']}, once at least {needed['human_fails']} human fails "
                    "are labelled (none found yet: label cases the judges score low)"
                    + (f", among at least {needed['cases']} more labelled cases" if needed["cases"] else "")
                )
            elif needed["cases"]:
                best["text"] += f"; closest: {closest['judge']}, with about {needed['cases']} more labelled cases"
            else:
                best["text"] += f"; closest: {closest['judge']}"
    else:
        if rule["kind"] == "cost":
            chosen = min(ok, key=lambda r: (_cost(r), r["judge"]))
            why = f"the least expected cost per case, {_cost(chosen):.3g}"
        else:
            chosen = min(ok, key=lambda r: (r["false_fail_rate"], r["false_pass_rate"], r["judge"]))
            why = f"the fewest false fails under the {rule['max_false_pass']:g} ceiling"
        best.update(judge=chosen["judge"], threshold=chosen["threshold"])
        accuracy = chosen.get("accuracy")
        agrees = f"; it agrees with the human verdict on {_rate_text(accuracy)} of cases" if accuracy else ""
        best["text"] = f"best by the rule: {chosen['judge']} at {_at(chosen)} ({why}){agrees}"
        if chosen["false_fail_rate"] is not None and chosen["false_fail_rate"] > MOST:
            best["text"] += f"; even so, it fails {chosen['false_fail_rate']:.0%} of the answers the annotators passed"
    return {"metric": metric, "rule": rule, "judges": verdicts, "best": best, "ceiling": _ceiling(annotators)}


def verdict_lines(verdict: dict[str, Any]) -> list[str]:
    """The block as plain lines: the rule; one line per judge, each followed by a line per threshold the user
    runs today (indented under it); the best judge; the human ceiling.

    Examples
    --------
    >>> verdict_lines(metric_verdict("m", []))
    ['m: no rule', '  no judge rated this metric', '  no human ceiling: one annotator (label some cases twice to measure it)']
    """
    head = f"{verdict['metric']}: " + (verdict["rule"].get("description") or "no rule")
    judges = [
        line
        for v in verdict["judges"]
        for line in (f"  {v['text']}", *(f"    {c['text']}" for c in v.get("current") or []))
    ]
    return [head, *judges, f"  {verdict['best']['text']}", f"  {verdict['ceiling']['text']}"]
