"""The verdict block of one metric: every judge's verdict (:func:`calibrate.analysis.verdicts.judge_verdict`),
the best judge by the metric's rule, the human ceiling beside it (:func:`metric_verdict`), and the block as
plain lines (:func:`verdict_lines`)."""

from __future__ import annotations

from typing import Any

from calibrate.analysis.verdict_statuses import DEFENSIBLE, NEEDS_LABELS, STRICTER
from calibrate.analysis.verdict_text import MOST, pass_rule_text, rate_text

__all__ = ["metric_verdict", "verdict_lines"]


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
        f"human ceiling: {annotators['n_annotators']} annotators agree on {rate_text(agree)} of the "
        f"{annotators['n_items_multiply_labelled']} cases labelled twice or more ("
    )
    if kappa.get("estimate") is not None:
        text += f"{'Cohen' if kappa_key == 'cohen_kappa' else 'Fleiss'} κ {rate_text(kappa)}; "
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
        agrees = f"; it agrees with the human verdict on {rate_text(accuracy)} of cases" if accuracy else ""
        best["text"] = f"best by the rule: {chosen['judge']} at {pass_rule_text(chosen)} ({why}){agrees}"
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
