"""The answer first: one verdict per judge of a metric, the best judge by the metric's rule, and the
human ceiling beside it.

A judge's recommendation is *defensible* when a reviewer can hold it to the campaign's rule:

- a **constraint** rule (a false-pass ceiling): the judge has a threshold under it, and the upper end of
  that threshold's false-pass interval (the two-sided Wilson interval the rates are shown with, or the
  one-sided Clopper-Pearson bound a rule with a confidence keeps) is at most the ceiling;
- a **cost** rule: the judge has a threshold of least expected cost;

and, under either, its scores separate human passes from human fails better than chance (the one-sided
Mann-Whitney test the CI gate reads, at ``p <`` :func:`chance_level`, ``(1 - confidence) / 2`` and never
above 0.025) and it rests on at least ``MIN_TRUSTED_LABELS`` human labels. A ceiling of 0 is never
defensible, whatever the judge: the upper bound of a false-pass rate measured on finitely many human
fails is above 0, so no number of labels shows it; the verdict says so, and what ceiling to declare.
Otherwise the verdict says why, and when more labels would settle it, how many and of which kind: the human fails a ceiling needs (:func:`fails_for_ceiling`), and the
labelled cases that takes at the campaign's share of human fails. A ``fixed`` rule, or a metric that
declares no rule, gives no verdict to defend: the lines say so (defaults fail closed).

Everything here reads the recommendation documents (:func:`calibrate.analysis.agreement.thresholds`),
so the report, ``calibrate thresholds`` and ``calibrate stats`` print the same lines.
"""

from __future__ import annotations

import math
from typing import Any

from calibrate.stats.thresholds import MOST_FAILS_SEARCHED, fails_for_ceiling

__all__ = ["DEFENSIBLE", "NEEDS_LABELS", "NOT_DEFENSIBLE", "NO_CRITERION", "STRICTER", "judge_verdict", "metric_verdict",
           "verdict_lines", "chance_level", "LOOSEST_CHANCE_LEVEL", "zero_ceiling_text"]

#: a reviewer can hold the recommendation to the rule
DEFENSIBLE = "defensible"
#: not yet: more human labels (``labels_needed``) would settle it
NEEDS_LABELS = "needs labels"
#: defensible at a threshold stricter than the rule's (whose interval reaches past the ceiling)
STRICTER = "defensible if stricter"
#: no number of labels makes it defensible as the judge scores now
NOT_DEFENSIBLE = "not defensible"
#: the rule (fixed, or none declared) gives nothing to defend
NO_CRITERION = "no criterion"


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


def zero_ceiling_text() -> str:
    """Why a false-pass ceiling of 0 (``max_false_pass = 0``) can never be shown, and what to give instead.

    Examples
    --------
    >>> zero_ceiling_text()[:44]
    'a false-pass ceiling of 0 can never be shown'
    """
    return ("a false-pass ceiling of 0 can never be shown: on any finite number of human fails, even with no false "
            "pass, the false-pass rate's upper bound is above 0, so no judge and no number of labels meets it; "
            "give a ceiling above 0 (at 95% confidence, 0.05 takes about 73 human fails with no false pass, "
            "0.01 about 380)")


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


def _chance(rec: dict[str, Any], confidence: float) -> str | None:
    """Why the judge's scores are not shown to separate passes from fails, or None."""
    sep = rec.get("separation")
    if not sep:
        return None
    alpha = chance_level(confidence)
    if sep["chance_p"] < alpha:
        return None
    return (f"its scores separate human passes from fails no better than chance (AUC {sep['auc']:.2f}, one-sided "
            f"Mann-Whitney p = {sep['chance_p']:.2g} on {sep['n_pass']} passes and {sep['n_fail']} fails; "
            f"needs p < {alpha:g})")


def _beyond_reach(ceiling: float) -> str:
    """Why a ceiling above 0, but tiny, cannot be defended in practice."""
    return (f"a {ceiling:g} ceiling needs more than {MOST_FAILS_SEARCHED:,} human fails even with no false pass; "
            "declare a ceiling labels can show")


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
        (``auc``, ``chance_p``, ``n_pass``, ``n_fail``).
    confidence : float
        The level of the rates' intervals; the test against chance is at :func:`chance_level`
        (``(1 - confidence) / 2``, never above 0.025).
    min_labels : int
        Fewer human labels than this is not yet defensible.

    Returns
    -------
    dict
        ``{"judge", "status", "threshold", "text", "reasons", "labels_needed"}``: ``status`` one of
        ``DEFENSIBLE``, ``NEEDS_LABELS``, ``NOT_DEFENSIBLE``, ``NO_CRITERION``; ``text`` the one-line
        verdict; ``labels_needed`` (``human_fails``, ``cases``) when more labels would settle it.

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
    """
    rule, judge = rec["rule"], rec["judge"]
    n, n_pass, n_fail = rec.get("n", 0), rec.get("n_human_pass", 0), rec.get("n_human_fail", 0)
    fail_share = n_fail / n if n else None
    out: dict[str, Any] = {"judge": judge, "threshold": rec.get("threshold"), "reasons": [],
                           "labels_needed": None}
    kind = rule["kind"]

    def done(status: str, text: str) -> dict[str, Any]:
        out["status"] = status
        out["text"] = f"{judge}: {text}"
        return out

    at = f"at {_at(rec)} {_rates(rec)}" if rec.get("threshold") is not None else "no threshold"
    if kind in ("fixed", "default"):
        why = ("the campaign fixes the threshold" if kind == "fixed" else
               "the metric declares no false-pass ceiling or costs (max_false_pass, or cost_false_pass and "
               "cost_false_fail, in campaign.toml)")
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
        why = (f"only {n} case(s) rated by both the judge and the humans" if n < 2 else
               f"every one of the {n} human labels is a " + ("pass" if n_fail == 0 else "fail"))
        out["reasons"].append(why)
        if kind == "constraint" and n_fail == 0:
            needed = fails_needed(0.0)
            if needed is None:   # a ceiling so low that no count of fails we search reaches it
                why += f"; {_beyond_reach(ceiling)}"
                out["reasons"][-1] = why
                return done(NOT_DEFENSIBLE, f"not defensible: {why}")
            out["labels_needed"] = _labels(needed, None, max(0, min_labels - n))
            return done(NEEDS_LABELS, f"not defensible yet: {why}; a {ceiling:g} ceiling needs at least {needed} "
                                      "human fails (label cases the judge scores low to find them)")
        out["labels_needed"] = {"human_fails": 0, "cases": max(2 - n, min_labels - n, 0), "fail_share": fail_share}
        return done(NEEDS_LABELS, f"not defensible yet: {why}; the rule needs {missing}")
    chance = _chance(rec, confidence)
    if chance:
        out["reasons"].append(chance)
        return done(NOT_DEFENSIBLE, f"not defensible: {chance}")
    fp = rec.get("false_pass_rate_detail") or {}
    fail_n = fp.get("effective_n", n_fail)     # weighted rates: the fails' Kish effective size
    texts, more_fails = [], 0.0
    if kind == "constraint":
        if rec.get("threshold") is None:
            needed = fails_needed(0.0)
            if needed is not None and fail_n < needed:
                texts.append(f"{n_fail} human fails: a {ceiling:g} ceiling needs at least {needed} even with no "
                             "false pass")
                more_fails = needed - fail_n
            else:
                lowest = rec.get("lowest_false_pass") or {}
                where = (f" (lowest: {_num(lowest['rate'])} at {_at({**rec, 'threshold': lowest['threshold']})})"
                         if lowest.get("rate") is not None else "")
                why = f"no threshold keeps false passes at or under {ceiling:g} short of failing every case{where}"
                out["reasons"].append(why)
                return done(NOT_DEFENSIBLE, f"not defensible: {why}")
        elif fp.get("ci_high") is not None and fp["ci_high"] > ceiling + 1e-12:
            needed = fails_needed(fp["estimate"])
            alternative = rec.get("defensible_alternative")
            keep = f"keeping {_at(rec)} needs about"
            if alternative and n >= min_labels:
                # a stricter threshold's interval stays under the ceiling: that is the defensible one
                out.update(threshold=alternative["threshold"], rule_threshold=rec["threshold"])
                shown = {**rec, "threshold": alternative["threshold"]}
                text = (f"defensible at a stricter threshold: pass at {_at(shown)}; "
                        f"{_rates(alternative['false_pass_rate'], alternative['false_fail_rate'])} (the rule's "
                        f"{_at(rec)} has false passes {_rate_text(fp)}, past the {ceiling:g} ceiling")
                if needed is not None and needed - fail_n <= fail_n:   # labels help only while they are few
                    out["labels_needed"] = _labels(needed - fail_n, fail_share)
                    text += f"; {keep} {out['labels_needed']['cases']} more labelled cases"
                out["reasons"].append(f"the rule's threshold has false passes {_rate_text(fp)}, past the ceiling")
                return done(STRICTER, text + ")")
            lowest = (rec.get("lowest_false_pass") or {}).get("rate")
            stricter = fails_needed(lowest) if needed is None and lowest is not None else None
            if needed is None and stricter is not None:
                # this threshold's rate sits at the ceiling, but a stricter one has fewer false passes: on
                # more labels its bound comes under the ceiling (a perfect judge on too few labels, say)
                strictest = _at({**rec, "threshold": rec["lowest_false_pass"]["threshold"]})
                texts.append(f"at {_at(rec)} false passes {_rate_text(fp)} sit at the {ceiling:g} ceiling; a "
                             f"stricter threshold (false passes {_num(lowest)} at {strictest}) needs at least "
                             f"{stricter} human fails, {n_fail} labelled")
                more_fails = max(stricter - fail_n, 1)
            elif needed is None:
                why = (f"at {_at(rec)} false passes {_rate_text(fp)}: " + (
                    _beyond_reach(ceiling) if fp["estimate"] < ceiling and fails_needed(0.0) is None else
                    f"the rate sits at the {ceiling:g} ceiling, so no number of labels brings its upper bound "
                    "under it"))
                if n >= min_labels:
                    out["reasons"].append(why)
                    return done(NOT_DEFENSIBLE, f"not defensible: {why}")
                texts.append(why)
            else:
                # at least: the fails a threshold with no false pass needs; more at the rule's threshold's rate
                least = fails_needed(0.0) or needed
                texts.append(f"{n_fail} human fails: a {ceiling:g} ceiling needs at least {least}"
                             + ("" if fp["estimate"] == 0 else
                                f" ({needed} at this rate of {_num(fp['estimate'])})"))
                # enough fails for a threshold without false passes, but none has one: keep this threshold
                # (at least one more fail: the bound shown is past the ceiling)
                more_fails = max((least if least > fail_n else needed) - fail_n, 1)
    more_cases = max(0, min_labels - n)
    if more_cases:
        texts.append(f"only {n} human labels (under {min_labels})")
    if texts:
        out["reasons"] += texts
        needed = _labels(more_fails, fail_share, more_cases)
        out["labels_needed"] = needed
        how = f"label at least {needed['cases']} more cases"
        if needed["human_fails"]:
            how += f" ({needed['human_fails']} more human fails at the {fail_share:.0%} share of fails)"
        return done(NEEDS_LABELS, f"not defensible yet: {at}; {'; '.join(texts)}: {how}")
    if rec.get("threshold") is None:   # a cost rule whose least cost is to fail every case
        why = "its least expected cost is to fail every case: at these costs the judge's scores add nothing"
        out["reasons"].append(why)
        return done(NOT_DEFENSIBLE, f"not defensible: {why}")
    least = " (least expected cost)" if kind == "cost" else ""
    return done(DEFENSIBLE, f"defensible: pass at {_at(rec)}{least}; {_rates(rec)}")


def _defended(rec: dict[str, Any]) -> dict[str, Any]:
    """The recommendation at the threshold its verdict defends: the rule's, or the stricter alternative's."""
    alternative = rec.get("defensible_alternative")
    if rec["verdict"]["status"] != STRICTER or not alternative:
        return rec
    return {**rec, "threshold": alternative["threshold"], "accuracy": alternative.get("accuracy"),
            "false_pass_rate": alternative["false_pass_rate"]["estimate"],
            "false_fail_rate": alternative["false_fail_rate"]["estimate"]}


def _cost(rec: dict[str, Any]) -> float:
    """Expected cost per case of a recommendation under its cost rule."""
    rule = rec["rule"]
    share = rule.get("prevalence")
    if share is None:
        share = rec["n_human_pass"] / rec["n"]
    return (rule["cost_false_pass"] * (1 - share) * rec["false_pass_rate"]
            + rule["cost_false_fail"] * share * rec["false_fail_rate"])


def _ceiling(annotators: dict[str, Any] | None) -> dict[str, Any]:
    """The human ceiling: how far the annotators agree with each other, or why there is none."""
    if not annotators or annotators.get("n_annotators", 0) < 2:
        return {"text": "no human ceiling: one annotator (label some cases twice to measure it)"}
    if "percent_agreement" not in annotators:
        return {"text": f"no human ceiling: {annotators.get('reason', 'too few cases labelled twice')}"}
    agree = annotators["percent_agreement"]
    kappa_key = "cohen_kappa" if "cohen_kappa" in annotators else "fleiss_kappa"
    kappa = annotators.get(kappa_key) or {}
    text = (f"human ceiling: {annotators['n_annotators']} annotators agree on {_rate_text(agree)} of the "
            f"{annotators['n_items_multiply_labelled']} cases labelled twice or more (")
    if kappa.get("estimate") is not None:
        text += f"{'Cohen' if kappa_key == 'cohen_kappa' else 'Fleiss'} κ {_rate_text(kappa)}; "
    return {"text": text + f"on {annotators.get('basis', 'the labels')})", "agreement": agree, "kappa": kappa}


def metric_verdict(metric: str, recs: list[dict[str, Any]], annotators: dict[str, Any] | None = None
                   ) -> dict[str, Any]:
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
            closest = min(waiting, key=lambda v: (v["labels_needed"]["cases"], v["labels_needed"]["human_fails"],
                                                  v["judge"]))
            best["closest"] = closest["judge"]
            best["text"] += (f"; closest: {closest['judge']}, with about {closest['labels_needed']['cases']} more "
                             "labelled cases")
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
    return {"metric": metric, "rule": rule, "judges": verdicts, "best": best, "ceiling": _ceiling(annotators)}


def verdict_lines(verdict: dict[str, Any]) -> list[str]:
    """The block as plain lines: the rule, one line per judge, the best judge, the human ceiling.

    Examples
    --------
    >>> verdict_lines(metric_verdict("m", []))
    ['m: no rule', '  no judge rated this metric', '  no human ceiling: one annotator (label some cases twice to measure it)']
    """
    head = f"{verdict['metric']}: " + (verdict["rule"].get("description") or "no rule")
    return [head, *(f"  {v['text']}" for v in verdict["judges"]), f"  {verdict['best']['text']}",
            f"  {verdict['ceiling']['text']}"]
