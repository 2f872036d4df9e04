"""Thresholds per slice (``calibrate thresholds --by KEY``): a threshold per value of a metadata key, whether
a slice needs its own at all, what one threshold for every case costs against one per slice, and the
mapping a DeepEval test reads (:func:`overrides`).

Per slice, each judge's threshold is the metric's rule run on the slice's labelled cases alone, with the
same interval as the whole-metric recommendation (:func:`~calibrate.analysis.recommendations.recommend_thresholds`
with ``cases``). Whether a slice needs its own threshold is tested per slice, then Holm-adjusted over the
slices tested (a slice needs one when its adjusted p-value is under ``1 - confidence``):

- **cost rule**: is the slice's own threshold cheaper than the one threshold for every case? Cross-fitted
  (:func:`calibrate.stats.slice_tests.cross_fitted_gain`, 5 folds): each threshold is chosen without
  the fold it is scored on, so the slice's own is not flattered by being chosen on the cases it is judged
  on; a one-sided t-test on the held-out per-case differences of cost, over five random splits into
  folds whose p-values are aggregated as twice their median.
- **constraint rule** (a false-pass ceiling): does the one threshold break the ceiling on the slice? The
  exact one-sided binomial test of the slice's false passes at that threshold against the ceiling
  (:func:`calibrate.stats.slice_tests.ceiling_excess_p`). A slice that could pass more under its own
  threshold while keeping the ceiling is not flagged: the ceiling holds there already.

A slice with fewer than :data:`MIN_SLICE_LABELS` labelled cases, or fewer than :data:`MIN_SLICE_EACH` human
passes or fails, is reported as too small and not tested; so is every slice of a weighted sample design
(the tests count cases as a uniform sample).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from calibrate.analysis.metric_comparisons import ProgressCallback, judge_comparisons
from calibrate.analysis.recommendation_results import Recommendation
from calibrate.analysis.recommendations import recommend_thresholds
from calibrate.analysis.rules import Rule, default_rule
from calibrate.base.params import checked
from calibrate.base.results import Result
from calibrate.campaign import Campaign
from calibrate.campaign.metadata import metadata_values, require_cases, slices
from calibrate.stats import N_BOOT
from calibrate.stats.slice_tests import Pick, ceiling_excess_p, cross_fitted_gain, holm, loss_at
from calibrate.stats.thresholds import constraint_rule, cost_rule

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "FOLDS",
    "MIN_SLICE_EACH",
    "MIN_SLICE_LABELS",
    "REPEATS",
    "check_key",
    "overrides",
    "slice_frame",
    "slice_thresholds",
    "write_overrides",
]

#: the fewest labelled cases a slice is tested on
MIN_SLICE_LABELS = 20
#: the fewest human passes, and the fewest human fails, a slice is tested on
MIN_SLICE_EACH = 5
#: the folds of the cross-fitted test of the cost rule
FOLDS = 5

#: the repeated random splits into folds whose p-values the cost rule's test aggregates
REPEATS = 5

COST_TEST = (
    f"cross-fitted ({FOLDS} folds, {REPEATS} random splits): each threshold chosen without the fold it is scored "
    "on; one-sided t-test that the slice's own threshold costs less per case than the one for every case, the "
    "p-value twice the median over the splits; Holm over the slices tested"
)
CEILING_TEST = (
    "exact one-sided binomial test that the slice's false-pass rate at the one threshold for every case is "
    "above the ceiling; Holm over the slices tested"
)


def check_key(campaign: Campaign, by: str) -> None:
    """Raise ``ValueError`` naming ``by`` and the metadata keys the cases have, when no case has ``by``.

    Examples
    --------
    >>> import calibrate
    >>> check_key(calibrate.load_campaign(calibrate.demo_campaign_path()), "doc_type")
    Traceback (most recent call last):
    ...
    ValueError: metadata key 'doc_type': no case has it; the cases' metadata keys: passage_id, query_id, question_type
    """
    require_cases(campaign, by)
    keys = {k for case in (campaign.cases or {}).values() for k in ((case or {}).get("metadata") or {})}
    if by not in keys:
        raise ValueError(
            f"metadata key {by!r}: no case has it; the cases' metadata keys: {', '.join(sorted(keys)) or 'none'}"
        )


def rule_pick(rule: Rule) -> Pick:
    """The rule on cumulative counts (unweighted): what :func:`~calibrate.stats.slice_tests.cut_by_rule` runs."""
    if rule.kind == "cost":
        cost_false_pass, cost_false_fail = rule.cost_false_pass, rule.cost_false_fail
        assert cost_false_pass is not None and cost_false_fail is not None  # a cost Rule checks it has both

        def pick(cum_passes: np.ndarray, cum_fails: np.ndarray) -> np.ndarray:
            return cost_rule(
                cum_passes,
                cum_fails,
                cost_false_pass=cost_false_pass,
                cost_false_fail=cost_false_fail,
                prevalence=rule.prevalence,
            )

        return pick
    ceiling = rule.max_false_pass
    assert ceiling is not None  # a constraint Rule checks it has one

    def under(cum_passes: np.ndarray, cum_fails: np.ndarray) -> np.ndarray:
        return constraint_rule(cum_fails, cum_fails[:, -1], max_false_pass=ceiling, confidence=rule.confidence)

    return under


def case_costs(rule: Rule, passes: np.ndarray) -> tuple[float, float]:
    """The cost of a false pass and of a false fail per case, so that the mean over ``passes``' cases is the
    rule's expected cost (the cost rule's; with a prevalence, each error weighted to it); a constraint rule
    counts each error as 1."""
    if rule.kind != "cost":
        return 1.0, 1.0
    assert rule.cost_false_pass is not None and rule.cost_false_fail is not None
    if rule.prevalence is None:
        return rule.cost_false_pass, rule.cost_false_fail
    n, n_pass = passes.size, int(passes.sum())
    fp = rule.cost_false_pass * (1 - rule.prevalence) * n / max(n - n_pass, 1)
    return fp, rule.cost_false_fail * rule.prevalence * n / max(n_pass, 1)


def _cut(rec: Recommendation | None, sign: int) -> float:
    """The recommendation's threshold on the oriented scores (``inf``: no threshold, every case fails)."""
    return float("inf") if rec is None or rec.threshold is None else sign * rec.threshold


def _rate(figure: Any) -> dict[str, Any] | None:
    return None if figure is None else figure.to_dict()


def _slice_entry(value: str, rec: Recommendation) -> dict[str, Any]:
    return {
        "value": value,
        "n": rec.n,
        "n_human_pass": rec.n_human_pass,
        "n_human_fail": rec.n_human_fail,
        "threshold": rec.threshold,
        "threshold_ci": list(rec.threshold_ci),
        "threshold_ci_method": rec.threshold_ci_method,
        "false_pass_rate": _rate(rec.false_pass_rate),
        "false_fail_rate": _rate(rec.false_fail_rate),
        "warnings": list(rec.warnings),
    }


def _test(
    rule: Rule, arrays: tuple[np.ndarray, np.ndarray, np.ndarray], in_slice: np.ndarray, common: float, seed: int
) -> dict[str, Any]:
    """The test of one slice (large enough, unweighted): its p-value and what it rests on."""
    score, passes, _ = arrays
    if rule.kind == "cost":
        r = cross_fitted_gain(
            score,
            passes,
            in_slice,
            rule_pick(rule),
            case_costs(rule, passes[in_slice]),
            folds=FOLDS,
            repeats=REPEATS,
            seed=seed,
        )
        return {
            "p_value": r.p_value,
            "cost_own": r.own,
            "cost_common": r.common,
            "gain": r.gain,
            "gain_se": r.se,
        }
    fails = in_slice & ~passes
    false_passes = int((score[fails] >= common).sum())
    n_fail = int(fails.sum())
    return {
        "p_value": ceiling_excess_p(false_passes, n_fail, float(rule.max_false_pass or 0.0)),
        "false_passes_common": false_passes,
        "n_human_fail": n_fail,
        "false_pass_rate_common": false_passes / n_fail,
    }


def _untested(entry: dict[str, Any], weighted: bool) -> str | None:
    if weighted:
        return "a weighted sample design: the test counts cases as a uniform sample"
    if entry["n"] < MIN_SLICE_LABELS:
        return f"too small: {entry['n']} labelled cases (the test needs {MIN_SLICE_LABELS})"
    if min(entry["n_human_pass"], entry["n_human_fail"]) < MIN_SLICE_EACH:
        return (
            f"too small: {entry['n_human_pass']} human passes and {entry['n_human_fail']} fails "
            f"(the test needs {MIN_SLICE_EACH} of each)"
        )
    return None


def _totals(rule: Rule, arrays: tuple[np.ndarray, np.ndarray, np.ndarray], cuts: np.ndarray) -> dict[str, Any]:
    """False passes and false fails on every labelled case at each case's cut (and the cost rule's expected
    cost per case)."""
    score, passes, _ = arrays
    judged = score >= cuts
    out: dict[str, Any] = {
        "false_passes": int((judged & ~passes).sum()),
        "false_fails": int((~judged & passes).sum()),
    }
    if rule.kind == "cost":
        out["cost_per_case"] = (
            float(loss_at(score, passes, cuts, case_costs(rule, passes)).mean()) if score.size else None
        )
    return out


def _judge_slices(
    campaign: Campaign,
    judge: Any,
    rule: Rule,
    overall: Recommendation,
    per_slice: dict[str, Recommendation],
    by: str,
    confidence: float,
    seed: int,
) -> dict[str, Any]:
    """One judge's document: its overall threshold, each slice's with its test, the totals, the mapping."""
    sign = judge.judge.sign
    labels = metadata_values(campaign, judge.case_ids, by)
    arrays = (np.asarray(judge.score, dtype=float), np.asarray(judge.passes, dtype=bool), labels)
    common = _cut(overall, sign)
    entries = []
    for i, (value, rec) in enumerate(per_slice.items()):
        entry = _slice_entry(value, rec)
        reason = _untested(entry, judge.weights is not None)
        if reason is None:
            entry["test"] = _test(rule, arrays, labels == value, common, seed + i)
        else:
            entry["not_tested"] = reason
        entries.append(entry)
    adjusted = holm([e["test"]["p_value"] if "test" in e else None for e in entries])
    for entry, p in zip(entries, adjusted):
        entry["p_value_holm"] = p
        entry["needs_own_threshold"] = p is not None and p < 1 - confidence
    flagged = [e for e in entries if e["needs_own_threshold"]]
    own = {v: _cut(r, sign) for v, r in per_slice.items()}
    mapped = {e["value"]: own[e["value"]] for e in flagged if e["threshold"] is not None}  # as the file has it
    return {
        "judge": overall.judge,
        "pass_rule": overall.pass_rule,
        "overall": _slice_entry("(all)", overall),
        "slices": entries,
        "totals": {
            "one_threshold": _totals(rule, arrays, np.full(labels.size, common)),
            "per_slice": _totals(rule, arrays, np.array([own.get(v, common) for v in labels], dtype=float)),
            "mapping": _totals(rule, arrays, np.array([mapped.get(v, common) for v in labels], dtype=float)),
            "note": "on the labelled cases the thresholds were chosen on: optimistic for per_slice",
        },
        "default": overall.threshold,
        "overrides": {e["value"]: e["threshold"] for e in flagged if e["threshold"] is not None},
        "without_threshold": [e["value"] for e in flagged if e["threshold"] is None],
    }


def learned_rule(campaign: Campaign, metric: str, by: str, rule: Rule | None) -> Rule:
    """The rule given, else the metric's own, once the metric and the key are checked; refused unless it is
    chosen from the labels (a ceiling or costs)."""
    campaign.metric_names([metric])
    check_key(campaign, by)
    rule = rule or default_rule(campaign.metrics[metric])
    if rule.kind not in ("cost", "constraint"):
        raise ValueError(
            f"thresholds per slice need a rule chosen from the labels (a false-pass ceiling or costs); "
            f"{metric!r} has {rule.describe()!r}: give --max-false-pass or --cost-false-pass and --cost-false-fail"
        )
    return rule


@checked("confidence", "n_boot", "seed")
def slice_thresholds(
    campaign: Campaign,
    *,
    metric: str,
    by: str,
    rule: Rule | None = None,
    judges: list[str] | None = None,
    seed: int = 0,
    n_boot: int = N_BOOT,
    confidence: float = 0.95,
    progress: ProgressCallback | None = None,
) -> Result:
    """A threshold per value of the metadata key ``by`` for each judge of ``metric``, whether each slice
    needs its own (Holm-adjusted), and the cost of one threshold for all against one per slice (see the
    module docstring for the tests).

    Parameters
    ----------
    campaign : Campaign
    metric : str
    by : str
        A metadata key of the cases (``cases.jsonl``).
    rule : Rule, optional
        A constraint or cost rule; by default the metric's own (:func:`~calibrate.analysis.rules.default_rule`).
    judges : list of str, optional
        Only these judges.
    seed, n_boot, confidence, progress
        As for :func:`~calibrate.analysis.recommendations.recommend_thresholds`; ``confidence`` also sets
        the test's level (``1 - confidence``).

    Returns
    -------
    Result
        ``{"campaign", "metric", "key", "rule", "test", "min_labels", "judges": [...], "manifest"}``: per
        judge its ``overall`` recommendation, its ``slices`` (each with ``threshold``, ``threshold_ci``, its
        rates, and ``test`` or ``not_tested``, ``p_value_holm``, ``needs_own_threshold``), the ``totals``
        under one threshold, one per slice and the mapping, and the mapping (``default``, ``overrides``).
        ``.to_frame()``: one row per judge and slice (:func:`slice_frame`).

    Raises
    ------
    ValueError
        A key no case has (naming the keys there are), or a rule that does not learn from labels.

    Examples
    --------
    >>> import calibrate
    >>> c = calibrate.load_campaign(calibrate.demo_campaign_path())
    >>> doc = slice_thresholds(c, metric="relevance", by="question_type", judges=["willia-umbrela1"], n_boot=0)
    >>> j = doc["judges"][0]
    >>> j["default"], j["overrides"], [(s["value"], s["threshold"]) for s in j["slices"]][:3]
    (2.0, {'how': 3.0}, [('how', 3.0), ('other', 2.0), ('what', 3.0)])
    """
    rule = learned_rule(campaign, metric, by, rule)
    options: dict[str, Any] = dict(metric=metric, rule=rule, judges=judges, seed=seed, n_boot=n_boot)
    whole = recommend_thresholds(campaign, confidence=confidence, progress=progress, **options)
    groups = slices(campaign, by)
    per_slice = {
        value: recommend_thresholds(campaign, confidence=confidence, cases=set(ids), **options)
        for value, ids in groups.items()
    }
    docs = []
    for j in judge_comparisons(campaign, metric, judges, rule, None).comparisons:
        mine = {v: doc.recommendation(metric, j.judge.name) for v, doc in per_slice.items()}
        docs.append(
            _judge_slices(campaign, j, rule, whole.recommendation(metric, j.judge.name), mine, by, confidence, seed)
        )
    head = {"campaign": campaign.name, "metric": metric, "key": by, "rule": rule.to_dict()}
    return Result(
        head
        | {
            "test": COST_TEST if rule.kind == "cost" else CEILING_TEST,
            "level": round(1 - confidence, 12),
            "min_labels": {"cases": MIN_SLICE_LABELS, "each_verdict": MIN_SLICE_EACH},
            "judges": docs,
            "manifest": whole.manifest | {"by": by},
        },
        slice_frame,
    )


def slice_frame(doc: dict[str, Any]) -> pd.DataFrame:
    """One row per judge and slice (``(all)`` first): its threshold and interval, labels, the test's p-values."""
    import pandas as pd

    rows = []
    for j in doc["judges"]:
        for s in [j["overall"], *j["slices"]]:
            rows.append(
                {
                    "metric": doc["metric"],
                    "judge": j["judge"],
                    "key": doc["key"],
                    "slice": s["value"],
                    "n": s["n"],
                    "threshold": s["threshold"],
                    "ci_low": s["threshold_ci"][0],
                    "ci_high": s["threshold_ci"][1],
                    "p_value": s.get("test", {}).get("p_value"),
                    "p_value_holm": s.get("p_value_holm"),
                    "needs_own_threshold": s.get("needs_own_threshold"),
                    "not_tested": s.get("not_tested"),
                }
            )
    return pd.DataFrame(rows)


def overrides(doc: dict[str, Any], judge: str) -> dict[str, Any]:
    """The mapping a DeepEval test reads, for ``judge`` of a :func:`slice_thresholds` document: the one
    threshold (``default``), the thresholds of the slices that need their own (``overrides``, by the
    value of ``metadata[key]``), and the slices that need their own but have none that meets the rule
    (``no_threshold``: the judge is not to be trusted there).

    Raises
    ------
    KeyError
        A judge not in the document, naming those that are.
    """
    for j in doc["judges"]:
        if j["judge"] == judge:
            return {
                "metric": doc["metric"],
                "judge": judge,
                "key": doc["key"],
                "pass_rule": j["pass_rule"],
                "default": j["default"],
                "overrides": dict(j["overrides"]),
                "no_threshold": list(j["without_threshold"]),
                "rule": doc["rule"]["description"],
            }
    there = ", ".join(j["judge"] for j in doc["judges"]) or "none"
    raise KeyError(f"no judge {judge!r} in the per-slice thresholds; there are: {there}")


def write_overrides(path: str | Path, mapping: dict[str, Any], *, overwrite: bool = False) -> Path:
    """Write ``mapping`` (:func:`overrides`) as JSON to ``path``; an existing file only with ``overwrite``.

    Raises
    ------
    FileExistsError
        ``path`` exists and ``overwrite`` is false.
    """
    target = Path(path)
    try:  # "x": created here, or refused, in one step (no file slips in between a check and the write)
        with target.open("w" if overwrite else "x", encoding="utf-8") as f:
            f.write(json.dumps(mapping, indent=2, ensure_ascii=False) + "\n")
    except FileExistsError:
        raise FileExistsError(f"{target}: already exists; not overwritten (remove it, or name another file)") from None
    return target
