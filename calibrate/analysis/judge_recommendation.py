"""One judge's threshold recommendation under a rule: the threshold, the false-pass and false-fail
rates there with their intervals, the threshold's own bootstrap interval, DeepEval's default 0.5 and
the thresholds run today with what they cost, the warnings, and the verdict
(:func:`calibrate.analysis.verdicts.judge_verdict`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np

from calibrate.analysis.judge_comparison import JudgeComparison, TooFewCases
from calibrate.analysis.metric_warnings import MIN_TRUSTED_LABELS
from calibrate.analysis.recommendation_parts import CurrentRates, LowestFalsePass, RatesAt, Separation, rate_counts
from calibrate.analysis.recommendation_results import TOO_FEW_ORDER, Recommendation
from calibrate.analysis.rules import Rule
from calibrate.analysis.verdicts import judge_verdict
from calibrate.base.estimates import Estimate
from calibrate.stats.bootstrap import percentile_interval
from calibrate.stats.intervals import clopper_pearson_upper, wilson_interval
from calibrate.stats.thresholds import DEEPEVAL_DEFAULT_THRESHOLD

__all__ = ["recommendation"]

#: the false-pass and false-fail rates at a threshold index
RatesAtIndex = Callable[[int], tuple[Estimate, Estimate]]


def recommendation(
    judge: JudgeComparison | TooFewCases,
    metric: str,
    rule: Rule,
    confidence: float,
    seed: int,
    current: list[dict[str, Any]] | None = None,
) -> Recommendation:
    """One judge's recommendation under ``rule``, with its rates at the thresholds the user runs today
    (``current``: :func:`calibrate.analysis.current.current_thresholds`) and its verdict
    (:func:`calibrate.analysis.verdicts.judge_verdict`, which reads the recommendation's dict)."""
    head: dict[str, Any] = {
        "metric": metric,
        "judge": judge.judge.name,
        "rule": rule.to_dict(),
        "pass_rule": "score >= threshold" if judge.judge.sign > 0 else "score <= threshold",
        "n": judge.n,
    }
    if isinstance(judge, TooFewCases):
        rec = too_few_recommendation(head, judge, current or [])
    else:
        rec = recommended(head, judge, rule, confidence, seed, current or [])
    return replace(rec, verdict=judge_verdict(rec.to_dict(), confidence=confidence, min_labels=MIN_TRUSTED_LABELS))


def too_few_recommendation(head: dict[str, Any], judge: TooFewCases, current: list[dict[str, Any]]) -> Recommendation:
    """No recommendation for a judge rated with the humans on fewer than two cases: every rate undefined."""
    none = Estimate.undefined(judge.reason)
    passes = judge.pairing.passes
    return Recommendation(
        **head,
        warnings=(judge.reason + ": no recommendation",),
        threshold=None,
        n_human_pass=int(passes.sum()),
        n_human_fail=int((~passes).sum()),
        threshold_ci=(None, None),
        threshold_ci_method=None,
        deepeval_default=RatesAt(DEEPEVAL_DEFAULT_THRESHOLD, none, none),
        false_pass_rate=none,
        false_fail_rate=none,
        current=tuple(_current(c, head["pass_rule"], (none, none)) for c in current),
        order=TOO_FEW_ORDER,
    )


def _current(given: dict[str, Any], pass_rule: str, rates: tuple[Estimate, Estimate]) -> CurrentRates:
    """The rates at a threshold run today (``given``: one of :func:`~calibrate.analysis.current.current_thresholds`)."""
    return CurrentRates(given["threshold"], given["source"], given["source_text"], pass_rule, *rates)


def recommended(
    head: dict[str, Any], c: JudgeComparison, rule: Rule, confidence: float, seed: int, current: list[dict[str, Any]]
) -> Recommendation:
    """The recommendation of a judge compared on two cases or more (``head``: its metric, judge, rule,
    pass rule and ``n``)."""
    counts = c.paired.error_counts(c.paired.full)
    n_pass, n_fail = float(counts["n_pass"][0]), float(counts["n_fail"][0])
    warnings: list[str] = []
    parts: dict[str, Any] = {}
    if c.weights is not None:
        parts.update(weighted=True, effective_n=c.effective_n)
    if n_pass > 0 and n_fail > 0:
        parts["separation"] = Separation.from_dict(c.separation(seed))

    def at(index: int) -> tuple[Estimate, Estimate]:
        return (
            Estimate.from_dict(c.rate(float(counts["false_pass"][0, index]), n_fail, confidence, "fail")),
            Estimate.from_dict(c.rate(float(counts["false_fail"][0, index]), n_pass, confidence, "pass")),
        )

    if c.has_threshold:
        parts |= at_threshold(c, rule, confidence, counts, at)
    else:
        parts |= without_threshold(c, rule, counts, warnings)
    parts |= threshold_interval(c, confidence, warnings)
    if c.n < MIN_TRUSTED_LABELS:
        warnings.append(
            f"only {c.n} human-labelled cases: under {MIN_TRUSTED_LABELS}, this recommendation is not yet trustworthy"
        )
    default_index = c.index_of(DEEPEVAL_DEFAULT_THRESHOLD)
    # the thresholds the user runs today: where the verdict starts
    runs = (_current(cur, head["pass_rule"], at(min(c.index_of(cur["threshold"]), c.paired.m))) for cur in current)
    return Recommendation(
        **head,
        n_human_pass=int(c.passes.sum()),
        n_human_fail=int((~c.passes).sum()),
        threshold=c.threshold_value(c.rule_index) if c.has_threshold else None,
        warnings=tuple(warnings),
        deepeval_default=RatesAt(DEEPEVAL_DEFAULT_THRESHOLD, *at(min(default_index, c.paired.m))),
        current=tuple(runs),
        **parts,
    )


def at_threshold(
    c: JudgeComparison, rule: Rule, confidence: float, counts: dict[str, np.ndarray], at: RatesAtIndex
) -> dict[str, Any]:
    """The rates and accuracy at the rule's threshold, and what a constraint rule adds: the threshold a
    reviewer can defend (its interval under the ceiling too) and the fewest false passes short of failing
    every case (as :class:`Recommendation` fields)."""
    index = int(c.rule_index)
    false_pass, false_fail = at(index)
    if rule.kind == "constraint" and rule.confidence is not None:
        false_pass = bound_kept(false_pass, rule.confidence)
    parts: dict[str, Any] = {
        "false_pass_rate": false_pass,
        "false_fail_rate": false_fail,
        "accuracy": Estimate.from_dict(c.accuracy_at(index, confidence)),
    }
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
            accuracy = Estimate.from_dict(c.accuracy_at(t, confidence))
            parts["defensible_alternative"] = RatesAt(c.threshold_value(t), *at(t), accuracy=accuracy)
    if rule.kind == "constraint" and n_fail > 0:
        # the fewest false passes short of failing every case: what more labels could defend (the verdict)
        parts["lowest_false_pass"] = LowestFalsePass(
            float(counts["false_pass"][0, c.paired.m - 1] / n_fail), c.threshold_value(c.paired.m - 1)
        )
    return parts


def bound_kept(fp: Estimate, confidence: float) -> Estimate:
    """The false-pass rate with the bound a constraint rule with ``confidence`` kept under its ceiling:
    its one-sided Clopper-Pearson upper bound."""
    if fp.value is None:
        return fp
    ci_high = float(clopper_pearson_upper(*rate_counts(fp), confidence=confidence))
    added = tuple(key for key in ("ci_low", "ci_high", "ci_method", "ci_width") if key not in fp.keys)
    return replace(
        fp,
        ci_low=0.0,
        ci_high=ci_high,
        method=f"one-sided {confidence:.0%} Clopper-Pearson upper bound (the bound the rule kept under its ceiling)",
        extra={**fp.extra, "ci_width": ci_high},
        keys=fp.keys + added,
    )


def without_threshold(
    c: JudgeComparison, rule: Rule, counts: dict[str, np.ndarray], warnings: list[str]
) -> dict[str, Any]:
    """No threshold short of failing every case: no rates, the lowest false-pass rate when there are
    human fails, and the warning that says why (added to ``warnings``)."""
    n_pass, n_fail = float(counts["n_pass"][0]), float(counts["n_fail"][0])
    if n_fail == 0 or n_pass == 0:
        warnings.append(
            "every human label is a "
            + ("pass" if n_fail == 0 else "fail")
            + ": the rule needs both human passes and human fails"
        )
        return {}
    lowest = float(counts["false_pass"][0, c.paired.m - 1] / n_fail)
    warnings.append(
        f"no threshold meets the rule ({rule.describe()}) except failing every case: this judge "
        f"cannot serve the gate (lowest false-pass rate short of failing everything: {lowest:.3f} "
        f"at threshold {c.threshold_value(c.paired.m - 1):g})"
    )
    return {"lowest_false_pass": LowestFalsePass(lowest, c.threshold_value(c.paired.m - 1))}


def threshold_interval(c: JudgeComparison, confidence: float, warnings: list[str]) -> dict[str, Any]:
    """The threshold's percentile bootstrap interval and how many resamples found no threshold (as
    :class:`Recommendation` fields), with a warning when some did not."""
    thresholds = np.concatenate(c.replicates.get("threshold", [np.array([])]))
    finite = thresholds[np.isfinite(thresholds)]
    interval = percentile_interval(finite, confidence=confidence, discrete=True)
    if thresholds.size and finite.size < thresholds.size:
        warnings.append(
            f"in {thresholds.size - finite.size} of {thresholds.size} bootstrap resamples no threshold met the rule"
        )
    return {
        "threshold_ci": (interval.low, interval.high),
        "threshold_ci_method": interval.method,
        "threshold_ci_resamples_without_threshold": int(thresholds.size - finite.size),
    }
