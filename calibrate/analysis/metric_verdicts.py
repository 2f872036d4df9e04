"""The verdict block of one metric: every judge's verdict (:func:`calibrate.analysis.verdicts.judge_verdict`),
the best judge by the metric's rule, the human ceiling beside it (:func:`metric_verdict`), and the block as
plain lines (:func:`verdict_lines`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from calibrate.analysis.verdict_results import BestJudge, HumanCeiling, JudgeVerdict, LabelsNeeded, MetricVerdict
from calibrate.analysis.verdict_statuses import DEFENSIBLE, NEEDS_LABELS, STRICTER
from calibrate.analysis.verdict_text import MOST, pass_rule_text, rate_text
from calibrate.base.estimates import Estimate

__all__ = ["metric_verdict", "verdict_lines"]


def _verdict(rec: Mapping[str, Any]) -> JudgeVerdict:
    """A recommendation's verdict, typed (a recommendation document holds it as a dict)."""
    verdict = rec["verdict"]
    return verdict if isinstance(verdict, JudgeVerdict) else JudgeVerdict.from_dict(verdict)


def _defended(rec: Mapping[str, Any], verdict: JudgeVerdict) -> Mapping[str, Any]:
    """The recommendation at the threshold its verdict defends: the rule's, or the stricter alternative's."""
    alternative = rec.get("defensible_alternative")
    if verdict.status != STRICTER or not alternative:
        return rec
    return {
        **rec,
        "threshold": alternative["threshold"],
        "accuracy": alternative.get("accuracy"),
        "false_pass_rate": alternative["false_pass_rate"]["estimate"],
        "false_fail_rate": alternative["false_fail_rate"]["estimate"],
    }


def _cost(rec: Mapping[str, Any]) -> float:
    """Expected cost per case of a recommendation under its cost rule."""
    rule = rec["rule"]
    share = rule.get("prevalence")
    if share is None:
        share = rec["n_human_pass"] / rec["n"]
    return (
        rule["cost_false_pass"] * (1 - share) * rec["false_pass_rate"]
        + rule["cost_false_fail"] * share * rec["false_fail_rate"]
    )


def _ceiling(annotators: Mapping[str, Any] | None) -> HumanCeiling:
    """The human ceiling: how far the annotators agree with each other, or why there is none."""
    if not annotators or annotators.get("n_annotators", 0) < 2:
        return HumanCeiling("no human ceiling: one annotator (label some cases twice to measure it)")
    if "percent_agreement" not in annotators:
        return HumanCeiling(f"no human ceiling: {annotators.get('reason', 'too few cases labelled twice')}")
    agree = annotators["percent_agreement"]
    kappa_key = "cohen_kappa" if "cohen_kappa" in annotators else "fleiss_kappa"
    kappa = annotators.get(kappa_key) or {}
    text = (
        f"human ceiling: {annotators['n_annotators']} annotators agree on {rate_text(agree)} of the "
        f"{annotators['n_items_multiply_labelled']} cases labelled twice or more ("
    )
    if kappa.get("estimate") is not None:
        text += f"{'Cohen' if kappa_key == 'cohen_kappa' else 'Fleiss'} κ {rate_text(kappa)}; "
    text += f"on {annotators.get('basis', 'the labels')})"
    return HumanCeiling(text, Estimate.from_dict(agree), Estimate.from_dict(kappa) if kappa else None)


def metric_verdict(
    metric: str, recs: Sequence[Mapping[str, Any]], annotators: Mapping[str, Any] | None = None
) -> MetricVerdict:
    """The verdict block of one metric: every judge's verdict, the best judge by the rule, the human ceiling.

    Parameters
    ----------
    metric : str
    recs : sequence of mapping
        The metric's recommendations, each with its ``verdict``
        (:func:`~calibrate.analysis.verdicts.judge_verdict`: typed, or as its dict).
    annotators : mapping, optional
        :func:`calibrate.analysis.annotators.annotator_agreement` of the metric.

    Returns
    -------
    MetricVerdict
        ``metric``, ``rule``, ``judges`` (their verdicts), ``best`` (``best.judge`` None when no judge is
        defensible) and ``ceiling``; ``to_dict()`` is the block the documents hold.

    Examples
    --------
    >>> v = metric_verdict("m", [])
    >>> v.best.text
    'no judge rated this metric'
    """
    verdicts = tuple(_verdict(r) for r in recs)
    rule = recs[0]["rule"] if recs else {}
    return MetricVerdict(metric, rule, verdicts, _best(rule, recs, verdicts), _ceiling(annotators))


def _best(rule: Mapping[str, Any], recs: Sequence[Mapping[str, Any]], verdicts: tuple[JudgeVerdict, ...]) -> BestJudge:
    """The best judge by the rule, or why there is none."""
    if not recs:
        return BestJudge(None, "no judge rated this metric")
    if rule.get("kind") in ("fixed", "default"):
        return BestJudge(None, "no best judge: the metric declares no rule to rank the judges by")
    ok = [_defended(r, v) for r, v in zip(recs, verdicts) if v.status in (DEFENSIBLE, STRICTER)]
    return _chosen(rule, ok) if ok else _closest(verdicts)


def _closest(verdicts: tuple[JudgeVerdict, ...]) -> BestJudge:
    """No judge defensible: the one closest to it, the one whose labels needed are fewest (if any)."""
    text = "no judge is defensible yet"
    waiting: list[tuple[JudgeVerdict, LabelsNeeded]] = [
        (v, v.labels_needed) for v in verdicts if v.status == NEEDS_LABELS and v.labels_needed is not None
    ]
    if not waiting:
        return BestJudge(None, text)
    closest, needed = min(waiting, key=lambda w: (w[1].cases, w[1].human_fails, w[0].judge))
    if needed.human_fails and not needed.fail_share:  # no fail found: the cases are unknown
        text += (
            f"; closest: {closest.judge}, once at least {needed.human_fails} human fails "
            "are labelled (none found yet: label cases the judges score low)"
            + (f", among at least {needed.cases} more labelled cases" if needed.cases else "")
        )
    elif needed.cases:
        text += f"; closest: {closest.judge}, with about {needed.cases} more labelled cases"
    else:
        text += f"; closest: {closest.judge}"
    return BestJudge(None, text, closest=closest.judge)


def _chosen(rule: Mapping[str, Any], ok: list[Mapping[str, Any]]) -> BestJudge:
    """The best of the defensible judges: least expected cost, or fewest false fails under the ceiling."""
    if rule["kind"] == "cost":
        chosen = min(ok, key=lambda r: (_cost(r), r["judge"]))
        why = f"the least expected cost per case, {_cost(chosen):.3g}"
    else:
        chosen = min(ok, key=lambda r: (r["false_fail_rate"], r["false_pass_rate"], r["judge"]))
        why = f"the fewest false fails under the {rule['max_false_pass']:g} ceiling"
    accuracy = chosen.get("accuracy")
    agrees = f"; it agrees with the human verdict on {rate_text(accuracy)} of cases" if accuracy else ""
    text = f"best by the rule: {chosen['judge']} at {pass_rule_text(chosen)} ({why}){agrees}"
    if chosen["false_fail_rate"] is not None and chosen["false_fail_rate"] > MOST:
        text += f"; even so, it fails {chosen['false_fail_rate']:.0%} of the answers the annotators passed"
    return BestJudge(chosen["judge"], text, threshold=chosen["threshold"])


def verdict_lines(verdict: MetricVerdict) -> list[str]:
    """The block as plain lines: the rule; one line per judge, each followed by a line per threshold the user
    runs today (indented under it); the best judge; the human ceiling.

    Examples
    --------
    >>> verdict_lines(metric_verdict("m", []))
    ['m: no rule', '  no judge rated this metric', '  no human ceiling: one annotator (label some cases twice to measure it)']
    """
    head = f"{verdict.metric}: " + (verdict.rule.get("description") or "no rule")
    judges = [line for v in verdict.judges for line in (f"  {v.text}", *(f"    {c.text}" for c in v.current))]
    return [head, *judges, f"  {verdict.best.text}", f"  {verdict.ceiling.text}"]
