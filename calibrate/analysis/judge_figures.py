"""A judge's entry in the statistics document, from its :class:`~calibrate.analysis.judge_comparison.JudgeComparison`:
a :class:`~calibrate.analysis.results.JudgeAgreement` with each statistic an
:class:`~calibrate.base.estimates.Estimate` (its interval, or the reason it has none) and the one-sided
bounds a gate decides on; its curve, bottom decile and worst misses come from
:mod:`calibrate.analysis.judge_cases`.

Point estimates are computed by the reference libraries (scipy, scikit-learn, krippendorff) and
checked against the engine's full-sample figures, whose bootstrap and jackknife give the intervals.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from calibrate.analysis.figures import interval_estimate
from calibrate.analysis.judge_cases import bottom_decile, curve, worst_misses
from calibrate.analysis.judge_comparison import JudgeComparison, TooFewCases
from calibrate.analysis.results import STATISTICS, JudgeAgreement
from calibrate.base.estimates import Estimate
from calibrate.campaign.reference import Pairing
from calibrate.campaign.weights import kish_effective_n
from calibrate.stats import library
from calibrate.stats.bootstrap import bca_interval
from calibrate.stats.intervals import (
    bonett_wright_se,
    clopper_pearson_upper,
    fieller_kendall_se,
    fisher_z_interval,
)
from calibrate.stats.thresholds import NO_THRESHOLD

__all__ = ["SMALL_N", "STATISTICS", "judge_entry", "judge_result", "too_few_result", "undefined_reason"]

#: Below this many cases, rank correlations take Fisher's z interval instead of BCa (README table).
SMALL_N = 50


# ------------------------------------------------------------------------------ the judge entry
def judge_agreement(pairing: Pairing, statistics: dict[str, Estimate], parts: dict[str, Any]) -> JudgeAgreement:
    """A judge's entry: who the judge is and its cases, its ``statistics`` (every one of
    :data:`STATISTICS`, in the order the entry writes them), then its other ``parts`` (``pass_threshold``,
    ``curve``, ``bottom_decile``, ``worst_misses``) in theirs."""
    judge, rater = pairing.judge, pairing.judge.rater
    n_human_pass = int(pairing.passes.sum())
    counts: dict[str, Any] = {
        "pass_rule": "score >= threshold" if rater.higher_is_better else "score <= threshold",
        "n_ratings": int(judge.case_ids.size + len(judge.errors)),
        "n_errors": len(judge.errors),
        "n_without_reference": pairing.n_unreferenced,
    }
    weights = (
        {"weighted": True, "effective_n": kish_effective_n(pairing.weights)} if pairing.weights is not None else {}
    )
    rest = {k: v for k, v in parts.items() if k != "bottom_decile"}
    head = ("judge", "rater", "run_id", "family", "model", "higher_is_better", "pass_rule", "n", "n_ratings")
    return JudgeAgreement(
        judge=judge.name,
        rater=rater.name,
        run_id=judge.run_id or None,
        family=rater.family,
        model=rater.model,
        higher_is_better=rater.higher_is_better,
        n=pairing.n,
        n_human_pass=n_human_pass,
        n_human_fail=pairing.n - n_human_pass,
        spearman=statistics["spearman"],
        kendall=statistics["kendall"],
        kappa=statistics["kappa"],
        kappa_quadratic=statistics["kappa_quadratic"],
        alpha=statistics["alpha"],
        auc=statistics["auc"],
        pass_kappa=statistics["pass_kappa"],
        balanced_accuracy=statistics["balanced_accuracy"],
        accuracy=statistics["accuracy"],
        bottom_decile=parts.get("bottom_decile"),
        extra=counts | weights | rest,
        keys=(
            *head,
            "n_errors",
            "n_without_reference",
            "n_human_pass",
            *weights,
            "n_human_fail",
            *statistics,
            *parts,
        ),
    )


def too_few_result(judge: TooFewCases) -> JudgeAgreement:
    """The entry of a judge rated with the humans on fewer than two cases: every statistic undefined."""
    none = Estimate.undefined(judge.reason)
    return judge_agreement(judge.pairing, dict.fromkeys(STATISTICS, none), {"curve": []})


def judge_result(
    c: JudgeComparison, confidence: float, seed: int, n_listed: int, full: bool = True, curves: bool = True
) -> JudgeAgreement:
    """A judge's entry: every statistic with its interval, the pass threshold, the gate's bounds, and
    (``full``) its curve (``curves``), its bottom decile and its worst misses (``n_listed`` cases each)."""
    figures = Resampled.of(c, seed, confidence)
    stats: dict[str, Estimate] = {}
    for key, min_n, standard_error, name in (
        ("spearman", 4, lambda r: bonett_wright_se(r, c.effective_n), "Bonett-Wright"),
        ("kendall", 5, lambda r: fieller_kendall_se(c.effective_n), "Fieller"),
    ):
        stats[key] = rank_correlation(c, figures, key, min_n, standard_error, name)
    for key in ("kappa", "kappa_quadratic", "alpha", "auc"):
        stats[key] = figures.bca(key) if key in figures.full else Estimate.undefined(undefined_reason(c, key))
    stats |= pass_figures(c, figures)
    threshold = c.threshold_value(c.rule_index)
    stats["pass_kappa"] = stats["pass_kappa"].with_keys(threshold=threshold, rule=c.rule.describe())
    stats |= gate_bounds(c, stats, confidence, seed)
    parts: dict[str, Any] = {"pass_threshold": {"threshold": threshold, "rule": c.rule.to_dict()}}
    if full:
        if curves:
            parts["curve"] = curve(c, confidence)
        parts["bottom_decile"] = bottom_decile(c, confidence, n_listed)
        parts["worst_misses"] = worst_misses(c, n_listed)
    return judge_agreement(c.pairing, stats, parts)


def judge_entry(
    judge: JudgeComparison | TooFewCases,
    confidence: float,
    seed: int,
    n_listed: int,
    full: bool = True,
    curves: bool = True,
) -> JudgeAgreement:
    """A judge's entry (:func:`judge_result`), or :func:`too_few_result` for a judge without figures."""
    if isinstance(judge, TooFewCases):
        return too_few_result(judge)
    return judge_result(judge, confidence, seed, n_listed, full=full, curves=curves)


@dataclass(frozen=True)
class Resampled:
    """A comparison's statistics on the full sample, on its bootstrap resamples and on its jackknife,
    and the reference libraries' point estimates (checked against the full sample's): what every BCa
    figure of its entry reads."""

    comparison: JudgeComparison
    confidence: float
    full: dict[str, np.ndarray]
    boot: dict[str, np.ndarray]
    jack: dict[str, np.ndarray]
    jack_weights: np.ndarray
    reference: dict[str, float]

    @classmethod
    def of(cls, c: JudgeComparison, seed: int, confidence: float) -> Resampled:
        full = c.statistics(c.paired.full)
        boot = {k: np.concatenate(v) for k, v in c.replicates.items()}
        jack, jack_weights = c.jackknife(seed)
        reference = library.point_estimates(
            c.human,
            c.score,
            c.ref.metric,
            c.on_scale,
            c.threshold_value(c.rule_index) if c.rule_index != NO_THRESHOLD else None,
            c.judge.sign,
            weights=c.weights,
        )
        library.check_engine(reference, {k: float(v[0]) for k, v in full.items()}, c.judge.name)
        return cls(c, confidence, full, boot, jack, jack_weights, reference)

    def value(self, key: str) -> float:
        """The statistic's point estimate: the reference library's, else the engine's."""
        return self.reference.get(key, float(self.full[key][0]))

    def bca(self, key: str) -> Estimate:
        """The statistic with its BCa interval, or the reason it is undefined or has no interval."""
        value = self.value(key)
        if not np.isfinite(value):
            return Estimate.undefined(undefined_reason(self.comparison, key))
        figure = interval_estimate(
            value,
            bca_interval(
                float(self.full[key][0]),
                self.boot.get(key, np.empty(0)),
                self.jack[key],
                self.jack_weights,
                confidence=self.confidence,
            ),
        )
        if figure.ci_low is not None and figure.ci_low == figure.ci_high:
            # every resample gave the same value (agreement on every case, say): that is no interval
            return Estimate.interval(
                value,
                None,
                None,
                figure.method or "",
                f"every resample of the {self.comparison.n} cases gives {value:.3g}: the bootstrap cannot "
                "estimate an interval here (the gate reads a bound that holds: lower_bound)",
            )
        return figure


def rank_correlation(
    c: JudgeComparison, figures: Resampled, key: str, min_n: int, standard_error: Callable[[float], float], name: str
) -> Estimate:
    """Spearman's rho or Kendall's tau-b: BCa from :data:`SMALL_N` cases, Fisher's z below (README, "How
    the intervals were chosen"), weighted cases counted at their Kish effective size there."""
    value, n_eff = figures.value(key), c.effective_n
    if not np.isfinite(value):
        return Estimate.undefined(undefined_reason(c, key))
    if c.n >= SMALL_N:
        return figures.bca(key)
    if n_eff < min_n:
        return Estimate.interval(value, None, None, "Fisher z", f"too few cases ({n_eff:.3g}) for an interval")
    if abs(value) >= 1 - 1e-12:
        return Estimate.interval(
            value,
            None,
            None,
            "Fisher z",
            f"a perfect rank agreement on {c.n} cases: Fisher's z is infinite, so no interval",
        )
    low, high = fisher_z_interval(value, standard_error(value), confidence=figures.confidence)
    return Estimate.interval(
        value, low, high, f"Fisher z, {name} SE" + (", Kish effective size" if c.weights is not None else "")
    )


def pass_figures(c: JudgeComparison, figures: Resampled) -> dict[str, Estimate]:
    """Pass/fail kappa, balanced accuracy and accuracy at the rule's threshold; undefined without one."""
    if not c.has_threshold:
        reason = (
            f"no pass threshold: the judge is not on the metric's scale and {c.rule.describe()}"
            if c.rule.kind == "default"
            else f"the metric's rule ({c.rule.describe()}) found no threshold short of failing every case"
        )
        none = Estimate.undefined(reason)
        return {"pass_kappa": none, "balanced_accuracy": none, "accuracy": none}
    return {
        "pass_kappa": figures.bca("pass_kappa"),
        "balanced_accuracy": figures.bca("balanced_accuracy"),
        "accuracy": Estimate.from_dict(c.accuracy_at(c.rule_index, figures.confidence)),
    }


def undefined_reason(c: JudgeComparison, key: str) -> str:
    """Why the statistic ``key`` of a comparison has no value."""
    metric, rater = c.ref.metric, c.judge.rater
    if key in ("kappa", "kappa_quadratic", "alpha"):
        if key == "kappa_quadratic" and metric.scale != "ordinal":
            return "quadratic weighting applies to ordinal scales only"
        if key != "alpha" and metric.scale == "continuous":
            return "kappa needs categories; this metric's human scale is continuous (see alpha)"
        if not rater.higher_is_better:
            return "the judge's scores run opposite to the human scale (higher_is_better = false)"
        if not c.on_scale:
            if metric.scale == "continuous":
                return (
                    "the judge is not declared to rate on the metric's scale (set on_metric_scale = true for the rater)"
                )
            return f"the judge's scores do not all lie on the metric's scale ({metric.scale_text()})"
        return "undefined: both raters put every case in the same category"
    if key == "auc":
        return "every case has the same human verdict (all pass or all fail): AUC needs both"
    if key in ("spearman", "kendall"):
        return "constant scores: the judge or the human reference gives every case the same value"
    return "undefined on this sample"


# ------------------------------------------------------------------------------ the gate's bounds
def gate_bounds(c: JudgeComparison, stats: dict[str, Estimate], confidence: float, seed: int) -> dict[str, Estimate]:
    """The statistics a gate decides on, with the one-sided bounds that keep their level at small n
    (README, "The CI gate"): ``lower_bound`` of Spearman's rho (:func:`rho_bound`) and of kappa and
    pass/fail kappa (:func:`kappa_bound`), and ``chance_p`` of the AUC, the one-sided Mann-Whitney
    p-value against 0.5 (by permutation while the smaller class has fewer than 20 cases; unweighted)."""
    level = (1 + confidence) / 2
    out = {"spearman": rho_bound(c, stats["spearman"], level)}
    categories = {"kappa": (c.human, c.score)}
    if c.has_threshold:
        categories["pass_kappa"] = (c.passes, c.score >= c.paired.j_values[c.rule_index])
    for key, (human, judged) in categories.items():
        if stats[key].value is not None:
            out[key] = kappa_bound(c, stats[key], human, judged, level)
    if stats["auc"].value is not None:
        out["auc"] = stats["auc"].with_keys(chance_p=c.separation(seed)["chance_p"])
    return out


def rho_bound(c: JudgeComparison, rho: Estimate, level: float) -> Estimate:
    """Spearman's rho with its ``lower_bound``: the lower of its interval's end and Fisher's z with the
    Bonett-Wright SE, at the one-sided ``level``; none for a perfect rank agreement (and none added to
    an undefined rho)."""
    if rho.value is None:
        return rho
    if abs(rho.value) >= 1 - 1e-12:
        return rho.with_keys(
            lower_bound=None,
            lower_bound_reason=f"a perfect rank agreement on {c.n} cases: no "
            "interval keeps its level there (a kappa floor reads the disagreements instead)",
        )
    n_eff = c.effective_n
    fisher = (
        fisher_z_interval(rho.value, bonett_wright_se(rho.value, n_eff), confidence=2 * level - 1)[0]
        if n_eff > 3
        else -1.0
    )
    low = min(fisher, rho.ci_low) if rho.ci_low is not None else fisher
    return rho.with_keys(
        lower_bound=float(low),
        lower_bound_method="the lower of the interval's end and Fisher's z (Bonett-Wright SE)",
    )


def kappa_bound(c: JudgeComparison, stat: Estimate, human: np.ndarray, judged: np.ndarray, level: float) -> Estimate:
    """A kappa with its ``lower_bound``: the lower of its interval's end and ``1 - D / (1 - p_e)``, D the
    Clopper-Pearson upper bound of the disagreement rate at the one-sided ``level`` (which holds at zero
    disagreements), counted at the Kish effective size."""
    n_eff, w = c.effective_n, c.w
    total = w.sum()
    disagree = w[human != judged].sum() * n_eff / total
    chance = sum(w[human == cat].sum() * w[judged == cat].sum() for cat in np.unique(human)) / total**2
    exact = 1 - float(clopper_pearson_upper(disagree, n_eff, confidence=level)) / (1 - chance) if chance < 1 else -1.0
    low = min(exact, stat.ci_low) if stat.ci_low is not None else exact
    return stat.with_keys(
        lower_bound=float(low),
        lower_bound_method=f"the lower of the interval's end and 1 - D / (1 - p_e), "
        f"D the Clopper-Pearson bound on {disagree:.3g} disagreement(s) in {n_eff:.3g}",
    )
