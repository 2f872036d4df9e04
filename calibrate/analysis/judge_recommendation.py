"""One judge's threshold recommendation under a rule: the threshold, the false-pass and false-fail
rates there with their intervals, the threshold's own bootstrap interval, DeepEval's default 0.5 and
the thresholds run today with what they cost, the warnings, and the verdict
(:func:`calibrate.analysis.verdicts.judge_verdict`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from calibrate.analysis.figures import undefined
from calibrate.analysis.judge_comparison import JudgeComparison, TooFewCases
from calibrate.analysis.metric_warnings import MIN_TRUSTED_LABELS
from calibrate.analysis.rules import Rule
from calibrate.analysis.verdicts import judge_verdict
from calibrate.stats.bootstrap import percentile_interval
from calibrate.stats.intervals import clopper_pearson_upper, wilson_interval
from calibrate.stats.thresholds import DEEPEVAL_DEFAULT_THRESHOLD

__all__ = ["recommendation"]

#: the false-pass and false-fail rates at a threshold index
RatesAt = Callable[[int], dict[str, Any]]


def recommendation(
    judge: JudgeComparison | TooFewCases,
    metric: str,
    rule: Rule,
    confidence: float,
    seed: int,
    current: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """One judge's recommendation under ``rule``, with its rates at the thresholds the user runs today
    (``current``: :func:`calibrate.analysis.current.current_thresholds`) and its verdict
    (:func:`calibrate.analysis.verdicts.judge_verdict`)."""
    rec: dict[str, Any] = {
        "metric": metric,
        "judge": judge.judge.name,
        "rule": rule.to_dict(),
        "pass_rule": "score >= threshold" if judge.judge.sign > 0 else "score <= threshold",
        "n": judge.n,
        "warnings": [],
    }
    if isinstance(judge, TooFewCases):
        too_few_recommendation(rec, judge, current or [])
    else:
        recommended(rec, judge, rule, confidence, seed, current or [])
    rec["verdict"] = judge_verdict(rec, confidence=confidence, min_labels=MIN_TRUSTED_LABELS).to_dict()
    return rec


def too_few_recommendation(rec: dict[str, Any], judge: TooFewCases, current: list[dict[str, Any]]) -> None:
    """No recommendation for a judge rated with the humans on fewer than two cases: every rate undefined."""
    reason = judge.reason
    passes = judge.pairing.passes
    rec.update(
        threshold=None,
        n_human_pass=int(passes.sum()),
        n_human_fail=int((~passes).sum()),
        threshold_ci=[None, None],
        threshold_ci_method=None,
        deepeval_default={
            "threshold": DEEPEVAL_DEFAULT_THRESHOLD,
            "false_pass_rate": undefined(reason),
            "false_fail_rate": undefined(reason),
        },
    )
    for key in ("false_pass_rate", "false_fail_rate"):
        rec.update({key: None, key + "_ci": [None, None], key + "_detail": undefined(reason)})
    rec["current"] = [
        {**c, "pass_rule": rec["pass_rule"], "false_pass_rate": undefined(reason), "false_fail_rate": undefined(reason)}
        for c in current
    ]
    rec["warnings"].append(reason + ": no recommendation")


def recommended(
    rec: dict[str, Any], c: JudgeComparison, rule: Rule, confidence: float, seed: int, current: list[dict[str, Any]]
) -> None:
    """Fill ``rec`` with the recommendation of a judge compared on two cases or more."""
    counts = c.paired.error_counts(c.paired.full)
    n_pass, n_fail = float(counts["n_pass"][0]), float(counts["n_fail"][0])
    rec.update(n_human_pass=int(c.passes.sum()), n_human_fail=int((~c.passes).sum()))
    if c.weights is not None:
        rec.update(weighted=True, effective_n=c.effective_n)
    if n_pass > 0 and n_fail > 0:
        rec["separation"] = c.separation(seed)

    def at(index: int) -> dict[str, Any]:
        return {
            "false_pass_rate": c.rate(float(counts["false_pass"][0, index]), n_fail, confidence, "fail"),
            "false_fail_rate": c.rate(float(counts["false_fail"][0, index]), n_pass, confidence, "pass"),
        }

    rec["threshold"] = c.threshold_value(c.rule_index) if c.has_threshold else None
    if c.has_threshold:
        at_threshold(rec, c, rule, confidence, counts, at)
    else:
        without_threshold(rec, c, rule, counts)
    threshold_interval(rec, c, confidence)
    if c.n < MIN_TRUSTED_LABELS:
        rec["warnings"].append(
            f"only {c.n} human-labelled cases: under {MIN_TRUSTED_LABELS}, this recommendation is not yet trustworthy"
        )
    default_index = c.index_of(DEEPEVAL_DEFAULT_THRESHOLD)
    rec["deepeval_default"] = {"threshold": DEEPEVAL_DEFAULT_THRESHOLD, **at(min(default_index, c.paired.m))}
    # the thresholds the user runs today: where the verdict starts
    rec["current"] = [
        {**cur, "pass_rule": rec["pass_rule"], **at(min(c.index_of(cur["threshold"]), c.paired.m))} for cur in current
    ]


def at_threshold(
    rec: dict[str, Any],
    c: JudgeComparison,
    rule: Rule,
    confidence: float,
    counts: dict[str, np.ndarray],
    at: RatesAt,
) -> None:
    """The rates and accuracy at the rule's threshold, and what a constraint rule adds: the threshold a
    reviewer can defend (its interval under the ceiling too) and the fewest false passes short of failing
    every case."""
    index = int(c.rule_index)
    rates = at(index)
    if rule.kind == "constraint" and rule.confidence is not None:
        rates["false_pass_rate"] = bound_kept(rates["false_pass_rate"], rule.confidence)
    for key in ("false_pass_rate", "false_fail_rate"):
        rec[key] = rates[key].get("estimate")
        rec[key + "_ci"] = [rates[key].get("ci_low"), rates[key].get("ci_high")]
        rec[key + "_detail"] = rates[key]
    rec["accuracy"] = c.accuracy_at(index, confidence)
    n_fail = float(counts["n_fail"][0])
    if rule.kind == "constraint" and rule.confidence is None:
        # the rule kept the estimate under the ceiling; the most lenient threshold whose interval stays
        # under it too is the one a reviewer can defend (the verdict offers it)
        scale = c.effective_scale["fail"]
        upper = wilson_interval(
            counts["false_pass"][0, index : c.paired.m] * scale,
            np.full(c.paired.m - index, n_fail * scale),
            confidence=confidence,
        )[1]
        under = np.flatnonzero(upper <= rule.max_false_pass + 1e-12)
        if under.size and under[0] > 0:
            t = index + int(under[0])
            rec["defensible_alternative"] = {
                "threshold": c.threshold_value(t),
                **at(t),
                "accuracy": c.accuracy_at(t, confidence),
            }
    if rule.kind == "constraint" and n_fail > 0:
        # the fewest false passes short of failing every case: what more labels could defend (the verdict)
        rec["lowest_false_pass"] = {
            "rate": float(counts["false_pass"][0, c.paired.m - 1] / n_fail),
            "threshold": c.threshold_value(c.paired.m - 1),
        }


def bound_kept(fp: dict[str, Any], confidence: float) -> dict[str, Any]:
    """The false-pass rate with the bound a constraint rule with ``confidence`` kept under its ceiling:
    its one-sided Clopper-Pearson upper bound."""
    if fp.get("estimate") is None:
        return fp
    k, n = (fp["k"], fp["n"]) if not fp.get("weighted") else (fp["estimate"] * fp["effective_n"], fp["effective_n"])
    ci_high = float(clopper_pearson_upper(k, n, confidence=confidence))
    return {
        **fp,
        "ci_low": 0.0,
        "ci_high": ci_high,
        "ci_method": f"one-sided {confidence:.0%} Clopper-Pearson "
        "upper bound (the bound the rule kept under its ceiling)",
        "ci_width": ci_high,
    }


def without_threshold(rec: dict[str, Any], c: JudgeComparison, rule: Rule, counts: dict[str, np.ndarray]) -> None:
    """No threshold short of failing every case: no rates, and the warning that says why."""
    n_pass, n_fail = float(counts["n_pass"][0]), float(counts["n_fail"][0])
    for key in ("false_pass_rate", "false_fail_rate"):
        rec[key] = None
        rec[key + "_ci"] = [None, None]
    if n_fail == 0 or n_pass == 0:
        rec["warnings"].append(
            "every human label is a "
            + ("pass" if n_fail == 0 else "fail")
            + ": the rule needs both human passes and human fails"
        )
        return
    lowest = float(counts["false_pass"][0, c.paired.m - 1] / n_fail)
    rec["lowest_false_pass"] = {"rate": lowest, "threshold": c.threshold_value(c.paired.m - 1)}
    rec["warnings"].append(
        f"no threshold meets the rule ({rule.describe()}) except failing every case: this judge "
        f"cannot serve the gate (lowest false-pass rate short of failing everything: {lowest:.3f} "
        f"at threshold {c.threshold_value(c.paired.m - 1):g})"
    )


def threshold_interval(rec: dict[str, Any], c: JudgeComparison, confidence: float) -> None:
    """The threshold's percentile bootstrap interval, and how many resamples found no threshold."""
    thresholds = np.concatenate(c.replicates.get("threshold", [np.array([])]))
    finite = thresholds[np.isfinite(thresholds)]
    interval = percentile_interval(finite, confidence=confidence, discrete=True)
    rec["threshold_ci"] = [interval.low, interval.high]
    rec["threshold_ci_method"] = interval.method
    rec["threshold_ci_resamples_without_threshold"] = int(thresholds.size - finite.size)
    if thresholds.size and finite.size < thresholds.size:
        rec["warnings"].append(
            f"in {thresholds.size - finite.size} of {thresholds.size} bootstrap resamples no threshold met the rule"
        )
