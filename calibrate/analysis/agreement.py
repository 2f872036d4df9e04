"""Judge-versus-human statistics for a campaign: agreement with intervals, curves, thresholds.

For each metric, the case universe is the set of cases with a human reference. Bootstrap resample
``r`` of that universe is the same for every judge (seeded by ``(seed, r)``), so differences between
judges can later be bootstrapped pairwise; each judge's statistic uses the cases of the resample it
rated. Point estimates are computed by the reference libraries (scipy, scikit-learn, krippendorff) and
checked against the vectorised engine of :mod:`calibrate.stats.paired`, which computes the resamples.
"""

from __future__ import annotations

import gc
import math
import numbers
from collections.abc import Callable, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

from calibrate.analysis.annotators import annotator_agreement
from calibrate.analysis.current import check_current, current_thresholds, unmatched
from calibrate.analysis.figures import estimate, from_interval, undefined
from calibrate.analysis.verdicts import judge_verdict, metric_verdict
from calibrate.base.errors import ParameterText
from calibrate.base.manifest import build_manifest
from calibrate.base.params import checked
from calibrate.base.results import Result
from calibrate.campaign import Campaign, Metric
from calibrate.campaign.reference import HumanReference, Pairing, computed_once, human_reference, judge_scores, pair
from calibrate.campaign.summary import rating_provenance
from calibrate.campaign.weights import DesignWeights, design_weights, kish_effective_n
from calibrate.stats import N_BOOT, library
from calibrate.stats.bootstrap import bca_interval, case_counts, percentile_interval, resample_indices
from calibrate.stats.intervals import (
    bonett_wright_se,
    clopper_pearson_upper,
    fieller_kendall_se,
    fisher_z_interval,
    wilson_interval,
)
from calibrate.stats.paired import PairedScores, Summary, summarize_together
from calibrate.stats.thresholds import DEEPEVAL_DEFAULT_THRESHOLD, NO_THRESHOLD, constraint_rule, cost_rule

__all__ = [
    "DEEPEVAL_DEFAULT_THRESHOLD",
    "MIN_TRUSTED_LABELS",
    "Rule",
    "compute_stats",
    "default_rule",
    "recommend_thresholds",
    "recommended_threshold",
    "stats_and_recommendations",
    "thresholds",
]

MIN_TRUSTED_LABELS = 50

#: Below this many cases, rank correlations take Fisher's z interval instead of BCa (README table).
SMALL_N = 50
ProgressCallback = Callable[[int, int, str], None]
#: Table cells computed at once (rows x cells): bounds the memory of one step of the bootstrap.
ROW_BUDGET = 4_000_000


RULE_KINDS = ("constraint", "cost", "fixed", "default")


@dataclass(frozen=True)
class Rule:
    """A threshold rule: ``constraint`` (ceiling on the false-pass rate), ``cost``, ``fixed``, or the
    ``default`` of a metric that declares none (:func:`default_rule`).

    Parameters
    ----------
    kind : {"constraint", "cost", "fixed", "default"}
    max_false_pass : float
        ``constraint``: the ceiling on the false-pass rate; the most lenient threshold under it is chosen.
    confidence : float, optional
        ``constraint``: keep the one-sided Clopper-Pearson upper bound, not the estimate, under the ceiling
        (from 0.5 to below 1).
    cost_false_pass, cost_false_fail : float
        ``cost``: the costs of the two errors; the threshold of least expected cost is chosen.
    prevalence : float, optional
        ``cost``: the expected production share of human passes (default: the labels' own).
    threshold : float
        ``fixed``: the threshold itself.
    human_pass, binary
        ``default`` (:func:`default_rule`): the metric's human pass level and whether it is binary.

    Examples
    --------
    >>> Rule("constraint", max_false_pass=0.1).describe()
    'most lenient threshold with false-pass rate <= 0.1'
    >>> Rule("constrain", max_false_pass=0.1)
    Traceback (most recent call last):
    ...
    ValueError: Rule kind 'constrain' is not one of constraint, cost, fixed, default
    """

    kind: str
    max_false_pass: float | None = None
    confidence: float | None = None
    cost_false_pass: float | None = None
    cost_false_fail: float | None = None
    prevalence: float | None = None
    threshold: float | None = None
    #: the default rule's metric: its human pass level, and whether it is binary
    human_pass: float | None = None
    binary: bool | None = None

    def __post_init__(self) -> None:
        """Check the rule where it is made: a kind it knows, the settings that kind needs, in range."""
        if self.kind not in RULE_KINDS:
            raise ValueError(f"Rule kind {self.kind!r} is not one of {', '.join(RULE_KINDS)}")
        needs = {
            "constraint": ("max_false_pass",),
            "cost": ("cost_false_pass", "cost_false_fail"),
            "fixed": ("threshold",),
            "default": ("human_pass", "binary"),
        }[self.kind]
        allowed = set(needs) | {"constraint": {"confidence"}, "cost": {"prevalence"}}.get(self.kind, set())
        given = {
            k
            for k in (
                "max_false_pass",
                "confidence",
                "cost_false_pass",
                "cost_false_fail",
                "prevalence",
                "threshold",
                "human_pass",
                "binary",
            )
            if getattr(self, k) is not None
        }
        missing, extra = [k for k in needs if k not in given], sorted(given - allowed)
        if missing:
            raise ValueError(f"a {self.kind} Rule needs {' and '.join(missing)}")
        if extra:
            raise ValueError(f"a {self.kind} Rule takes no {' or '.join(extra)}")
        ranges = {
            "max_false_pass": (0, 1, False),
            "confidence": (0, 1, True),
            "prevalence": (0, 1, False),
            "cost_false_pass": (0, math.inf, True),
            "cost_false_fail": (0, math.inf, True),
            "threshold": (-math.inf, math.inf, False),
            "human_pass": (-math.inf, math.inf, False),
        }
        for key in given & set(ranges):
            low, high, open_low = ranges[key]
            value = getattr(self, key)
            number = isinstance(value, numbers.Real) and not isinstance(value, bool)
            if not number or not math.isfinite(value) or value > high or value < low or (open_low and value == low):
                where = (f"above {low:g}" if open_low else f"from {low:g}") + (
                    f" to {high:g}" if high < math.inf else ""
                )
                raise ValueError(
                    f"Rule {key} must be a finite number{'' if low == -math.inf else ' ' + where}, not {value!r}"
                )
        if self.confidence is not None and not 0.5 <= self.confidence < 1:
            # below 0.5 the one-sided "upper" bound lies under the estimate: a rule on it would keep a
            # threshold whose false-pass rate is past the ceiling
            raise ValueError(
                f"Rule confidence must be from 0.5 to below 1 (below 0.5 the one-sided upper bound "
                f"lies under the estimate itself), not {self.confidence!r}"
            )

    def describe(self) -> str:
        if self.kind == "constraint":
            text = f"most lenient threshold with false-pass rate <= {self.max_false_pass:g}"
            if self.confidence is not None:
                text += f" at {self.confidence:.0%} confidence (one-sided Clopper-Pearson upper bound)"
            return text
        if self.kind == "cost":
            text = f"minimise {self.cost_false_pass:g} x false passes + {self.cost_false_fail:g} x false fails"
            if self.prevalence is not None:
                text += f" at a production pass prevalence of {self.prevalence:g}"
            return text
        if self.kind == "default":
            return (
                f"no rule declared: a judge on the metric's scale passes at its human pass level "
                f"{self.human_pass:g}; "
                + (
                    "another, scoring from 0 to 1, at DeepEval's 0.5"
                    if self.binary
                    else "another gets no threshold (declare max_false_pass or costs)"
                )
            )
        return f"fixed threshold {self.threshold:g}"

    def fixed_threshold(self, *, on_scale: bool, zero_to_one: bool) -> float | None:
        """The threshold a fixed or default rule gives a judge without any label: the fixed one; the
        metric's human pass level for a judge on its scale; DeepEval's 0.5 for a judge scoring from 0 to
        1 on a binary metric; else none."""
        if self.kind == "fixed":
            return self.threshold
        if self.kind != "default":
            return None
        if on_scale:
            return self.human_pass
        return DEEPEVAL_DEFAULT_THRESHOLD if self.binary and zero_to_one else None

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if v is not None} | {"description": self.describe()}


def default_rule(metric: Metric) -> Rule:
    """The metric's configured rule: its false-pass ceiling, else its costs, else the ``default`` rule:
    a judge on the metric's scale is read at the metric's ``human_pass``, a judge scoring from 0 to 1
    on a binary metric at DeepEval's 0.5, and any other judge gets no threshold (no silent 0.5 on an
    ordinal or continuous metric).

    Parameters
    ----------
    metric : Metric

    Returns
    -------
    Rule

    Examples
    --------
    >>> from calibrate.campaign import Metric
    >>> rule = default_rule(Metric("relevance", "ordinal", human_pass=2, levels=(0, 1, 2, 3)))
    >>> rule.fixed_threshold(on_scale=True, zero_to_one=False), rule.fixed_threshold(on_scale=False, zero_to_one=True)
    (2, None)
    """
    if metric.max_false_pass is not None:
        return Rule("constraint", max_false_pass=metric.max_false_pass)
    if metric.cost_false_pass is not None:
        return Rule("cost", cost_false_pass=metric.cost_false_pass, cost_false_fail=metric.cost_false_fail)
    return Rule("default", human_pass=metric.human_pass, binary=metric.scale == "binary")


# ------------------------------------------------------------------------------------ estimates
@contextmanager
def _collector_paused():
    """Pause Python's cyclic garbage collector while many acyclic objects are made (it would rescan
    them again and again); restore its previous state after."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _floats(values: np.ndarray) -> list[float | None]:
    """A float array as a JSON-ready list, NaN as None."""
    values = np.asarray(values, dtype=float)
    return [None if np.isnan(v) else v for v in values.tolist()] if np.isnan(values).any() else values.tolist()


def _rate(
    k: float, n: float, confidence: float, *, scale: float | None = None, n_cases: int | None = None
) -> dict[str, Any]:
    """A rate ``k / n`` with its Wilson interval. Weighted counts (``scale`` given) take the interval
    at their Kish effective size: ``k * scale`` of ``n * scale``."""
    if n == 0:
        return undefined("no case in the denominator")
    if scale is None:
        low, high = wilson_interval(k, n, confidence=confidence)
        return estimate(k / n, float(low), float(high), "Wilson score") | {"k": int(k), "n": int(n)}
    low, high = wilson_interval(k * scale, n * scale, confidence=confidence)
    return estimate(k / n, float(low), float(high), "Wilson score at the Kish effective size") | {
        "n": n_cases,
        "effective_n": float(n * scale),
        "weighted": True,
    }


# ------------------------------------------------------------------------------------- one judge
class JudgeRun:
    """One judge on one case universe: its paired table, its bootstrap replicates, its results."""

    def __init__(self, pairing: Pairing, rule: Rule):
        self.pairing, self.rule = pairing, rule
        self.judge, self.ref = judge, ref = pairing.judge, pairing.reference
        metric = ref.metric
        self.case_ids, self.positions, self.n_unreferenced = pairing.case_ids, pairing.positions, pairing.n_unreferenced
        self.human, self.score, self.n = pairing.human, pairing.oriented, pairing.n
        # each case's design weight, scaled to mean 1 over the cases this judge rated (None: unweighted)
        self.weights = pairing.weights
        w = np.ones(self.n) if self.weights is None else self.weights
        passes = self.human >= metric.human_pass
        self.w = w
        self.effective_n = kish_effective_n(w)
        # weighted counts of each class, times these factors, are on the scale of their effective size
        self.effective_scale = {
            cls: (kish_effective_n(w[mask]) / w[mask].sum() if mask.any() else 1.0)
            for cls, mask in (("pass", passes), ("fail", ~passes))
        }
        self.paired = None
        if self.n >= 2:
            self.paired = PairedScores(
                self.human,
                self.score,
                human_pass=metric.human_pass,
                levels=metric.levels if judge.rater.higher_is_better else None,
                weights=self.weights,
            )
            self.on_scale = self.paired.on_scale or (
                metric.scale == "continuous" and judge.rater.on_metric_scale and judge.rater.higher_is_better
            )
            self.rule_index = self._rule_index(self.paired.summarize(self.paired.full))[0]
            self.replicates: dict[str, list[np.ndarray]] = {}

    # thresholds ------------------------------------------------------------------------------
    def _rule_index(self, summary: Summary) -> np.ndarray:
        rule = self.rule
        if rule.kind == "constraint":
            scale = self.effective_scale["fail"]
            return constraint_rule(
                summary.cum_fails * scale,
                summary.cum_fails[:, -1] * scale,
                max_false_pass=rule.max_false_pass,
                confidence=rule.confidence,
                whole=self.weights is None,
            )
        if rule.kind == "cost":
            return cost_rule(
                summary.cum_passes,
                summary.cum_fails,
                cost_false_pass=rule.cost_false_pass,
                cost_false_fail=rule.cost_false_fail,
                prevalence=rule.prevalence,
            )
        scores = self.judge.sign * self.paired.j_values
        threshold = rule.fixed_threshold(
            on_scale=self.on_scale, zero_to_one=bool(scores.min() >= 0 and scores.max() <= 1)
        )
        return np.full(summary.n.shape, NO_THRESHOLD if threshold is None else self.index_of(threshold))

    def index_of(self, threshold: float) -> int:
        """Threshold index of a threshold given in the judge's own units."""
        return int(np.searchsorted(self.paired.j_values, self.judge.sign * threshold, side="left"))

    def threshold_value(self, index: int) -> float | None:
        """The threshold of an index in the judge's own units (``None``: fail every case)."""
        if index == NO_THRESHOLD or index >= self.paired.m:
            return None
        return float(self.judge.sign * self.paired.j_values[index])

    def rate(self, k: float, n: float, confidence: float, among: str | None = None) -> dict[str, Any]:
        """``k / n`` with its Wilson interval, among the human passes, fails, or (``None``) all cases."""
        if self.weights is None:
            return _rate(k, n, confidence)
        if among is None:
            return _rate(k, n, confidence, scale=self.effective_n / self.n, n_cases=self.n)
        passes = self.human >= self.ref.metric.human_pass
        return _rate(
            k,
            n,
            confidence,
            scale=self.effective_scale[among],
            n_cases=int(passes.sum() if among == "pass" else (~passes).sum()),
        )

    def accuracy_at(self, index: int, confidence: float) -> dict[str, Any]:
        """The share of cases whose pass/fail verdict at threshold index ``index`` matches the humans',
        with its Wilson interval."""
        decision = self.paired.decision_stats(self.paired.full, index)
        return self.rate(float(decision["n_agree"][0]), float(decision["n"][0]), confidence)

    # replicates ------------------------------------------------------------------------------
    def statistics(self, T: np.ndarray | Summary) -> dict[str, np.ndarray]:
        """Every statistic of each row of ``T`` (count tables, or their summary), in row chunks that
        bound the memory."""
        p = self.paired
        step = max(1, ROW_BUDGET // max(p.C, p.m, p.K))
        if isinstance(T, Summary) or T.shape[0] <= step:
            return self._statistics(T)
        parts = [self._statistics(T[i : i + step]) for i in range(0, T.shape[0], step)]
        return {key: np.concatenate([part[key] for part in parts]) for key in parts[0]}

    def _statistics(self, T: np.ndarray | Summary) -> dict[str, np.ndarray]:
        p, metric = self.paired, self.ref.metric
        s = p.summarize(T)
        out = {"spearman": p.spearman(s), "kendall": p.kendall(s), "auc": p.auc(s)}
        if self.on_scale and metric.scale != "continuous":
            out["kappa"] = p.kappa(T)
            if metric.scale == "ordinal":
                out["kappa_quadratic"] = p.kappa(T, "quadratic")
        if self.on_scale:
            out["alpha"] = p.alpha(T, metric.alpha_level)
        if self.rule_index != NO_THRESHOLD:
            decision = p.decision_stats(s, self.rule_index)
            out["pass_kappa"] = decision["kappa"]
            out["balanced_accuracy"] = decision["balanced_accuracy"]
            # the error rates at the full sample's threshold (the gate as deployed), per resample
            t = int(self.rule_index)
            n_pass, n_fail = s.cum_passes[:, -1].astype(float), s.cum_fails[:, -1].astype(float)
            false_fail = s.cum_passes[:, t - 1].astype(float) if t > 0 else np.zeros_like(n_pass)
            false_pass = n_fail - (s.cum_fails[:, t - 1].astype(float) if t > 0 else 0.0)
            with np.errstate(invalid="ignore", divide="ignore"):
                out["false_pass_rate"] = false_pass / n_fail
                out["false_fail_rate"] = false_fail / n_pass
        index = self._rule_index(s)
        values = np.where((index == NO_THRESHOLD) | (index >= p.m), np.nan, p.j_values[np.clip(index, 0, p.m - 1)])
        out["threshold"] = values * self.judge.sign
        return out

    def add_resamples(self, counts: np.ndarray) -> None:
        """Statistics of a batch of resamples, given as counts of each universe case. Kappa and alpha
        read the cell tables; the other statistics only need the kernel's sums."""
        if self.on_scale:
            source = self.paired.tables(counts, self.positions)
        else:
            source = self.paired.summarize_counts(counts, self.positions)
        self.add_summary(source)

    def add_summary(self, source: np.ndarray | Summary) -> None:
        """Statistics of a batch of resamples, given as their count tables or their summary (with the
        tables, on the scale: kappa and alpha read cells)."""
        for key, values in self.statistics(source).items():
            self.replicates.setdefault(key, []).append(values)

    # results ---------------------------------------------------------------------------------
    def result(
        self, confidence: float, seed: int, n_listed: int, full: bool = True, curves: bool = True
    ) -> dict[str, Any]:
        judge, metric = self.judge, self.ref.metric
        out: dict[str, Any] = {
            "judge": judge.name,
            "rater": judge.rater.name,
            "run_id": judge.run_id or None,
            "family": judge.rater.family,
            "model": judge.rater.model,
            "higher_is_better": judge.rater.higher_is_better,
            "pass_rule": "score >= threshold" if judge.rater.higher_is_better else "score <= threshold",
            "n": int(self.n),
            "n_ratings": int(judge.case_ids.size + len(judge.errors)),
            "n_errors": len(judge.errors),
            "n_without_reference": self.n_unreferenced,
            "n_human_pass": int((self.human >= metric.human_pass).sum()) if self.n else 0,
        }
        if self.weights is not None:
            out["weighted"] = True
            out["effective_n"] = self.effective_n
        out["n_human_fail"] = out["n"] - out["n_human_pass"]
        if self.paired is None:
            reason = f"only {self.n} case(s) rated by both the judge and the humans (need 2)"
            for key in (
                "spearman",
                "kendall",
                "kappa",
                "kappa_quadratic",
                "alpha",
                "pass_kappa",
                "auc",
                "accuracy",
                "balanced_accuracy",
            ):
                out[key] = undefined(reason)
            out["curve"] = []
            return out
        full_stats = self.statistics(self.paired.full)
        boot = {k: np.concatenate(v) for k, v in self.replicates.items()}
        jack_summary, jack_weights = self.paired.jackknife(seed=seed, tables=self.on_scale)
        jack = self.statistics(jack_summary)
        reference = library.point_estimates(
            self.human,
            self.score,
            metric,
            self.on_scale,
            self.threshold_value(self.rule_index) if self.rule_index != NO_THRESHOLD else None,
            judge.sign,
            weights=self.weights,
        )
        library.check_engine(reference, {k: float(v[0]) for k, v in full_stats.items()}, judge.name)

        def bca(key: str) -> dict[str, Any]:
            value = reference.get(key, float(full_stats[key][0]))
            if not np.isfinite(value):
                return undefined(self._reason(key))
            figure = from_interval(
                value,
                bca_interval(
                    float(full_stats[key][0]),
                    boot.get(key, np.empty(0)),
                    jack[key],
                    jack_weights,
                    confidence=confidence,
                ),
            )
            if figure["ci_low"] is not None and figure["ci_low"] == figure["ci_high"]:
                # every resample gave the same value (agreement on every case, say): that is no interval
                return estimate(
                    value,
                    None,
                    None,
                    figure["ci_method"],
                    f"every resample of the {self.n} cases gives {value:.3g}: the bootstrap cannot "
                    "estimate an interval here (the gate reads a bound that holds: lower_bound)",
                )
            return figure

        # rank correlations: BCa from SMALL_N cases, Fisher's z below (README, "How the intervals were chosen");
        # weighted cases count at their Kish effective size there
        n_eff = self.effective_n
        for key, min_n, standard_error, name in (
            ("spearman", 4, lambda r: bonett_wright_se(r, n_eff), "Bonett-Wright"),
            ("kendall", 5, lambda r: fieller_kendall_se(n_eff), "Fieller"),
        ):
            value = reference.get(key, float(full_stats[key][0]))
            if not np.isfinite(value):
                out[key] = undefined(self._reason(key))
            elif self.n >= SMALL_N:
                out[key] = bca(key)
            elif n_eff < min_n:
                out[key] = estimate(value, None, None, "Fisher z", f"too few cases ({n_eff:.3g}) for an interval")
            elif abs(value) >= 1 - 1e-12:
                out[key] = estimate(
                    value,
                    None,
                    None,
                    "Fisher z",
                    f"a perfect rank agreement on {self.n} cases: Fisher's z is infinite, so no interval",
                )
            else:
                low, high = fisher_z_interval(value, standard_error(value), confidence=confidence)
                out[key] = estimate(
                    value,
                    low,
                    high,
                    f"Fisher z, {name} SE" + (", Kish effective size" if self.weights is not None else ""),
                )
        for key in ("kappa", "kappa_quadratic", "alpha", "auc"):
            out[key] = bca(key) if key in full_stats else undefined(self._reason(key))
        if self.rule_index == NO_THRESHOLD or self.rule_index >= self.paired.m:
            reason = (
                f"no pass threshold: the judge is not on the metric's scale and {self.rule.describe()}"
                if self.rule.kind == "default"
                else f"the metric's rule ({self.rule.describe()}) found no threshold short of failing every case"
            )
            out["pass_kappa"] = out["balanced_accuracy"] = out["accuracy"] = undefined(reason)
        else:
            out["pass_kappa"] = bca("pass_kappa")
            out["balanced_accuracy"] = bca("balanced_accuracy")
            out["accuracy"] = self.accuracy_at(self.rule_index, confidence)
        out["pass_threshold"] = {"threshold": self.threshold_value(self.rule_index), "rule": self.rule.to_dict()}
        out["pass_kappa"] = {
            **out["pass_kappa"],
            "threshold": out["pass_threshold"]["threshold"],
            "rule": self.rule.describe(),
        }
        self._gate_bounds(out, confidence, seed)
        if full:
            if curves:
                out["curve"] = self.curve(confidence)
            out["bottom_decile"] = self.bottom_decile(confidence, n_listed)
            out["worst_misses"] = self.worst_misses(n_listed)
        return out

    def _gate_bounds(self, out: dict[str, Any], confidence: float, seed: int) -> None:
        """Add the one-sided bounds a gate decides on, which keep their level at small n (README, "The
        CI gate"): ``lower_bound`` of Spearman's rho (the lower of its interval's end and Fisher's z
        with the Bonett-Wright SE) and of kappa and pass/fail kappa (the lower of its interval's end and
        ``1 - D / (1 - p_e)`` with D the Clopper-Pearson upper bound of the disagreement rate, which
        holds at zero disagreements), and ``chance_p``, the one-sided Mann-Whitney p-value of the AUC
        against 0.5 (by permutation while the smaller class has fewer than 20 cases; unweighted)."""
        level = (1 + confidence) / 2
        n_eff = self.effective_n
        rho = out["spearman"]
        if rho.get("estimate") is not None:
            if abs(rho["estimate"]) >= 1 - 1e-12:
                rho.update(
                    lower_bound=None,
                    lower_bound_reason=f"a perfect rank agreement on {self.n} cases: no "
                    "interval keeps its level there (a kappa floor reads the disagreements instead)",
                )
            else:
                fisher = (
                    fisher_z_interval(
                        rho["estimate"], bonett_wright_se(rho["estimate"], n_eff), confidence=2 * level - 1
                    )[0]
                    if n_eff > 3
                    else -1.0
                )
                low = min(fisher, rho["ci_low"]) if rho.get("ci_low") is not None else fisher
                rho.update(
                    lower_bound=float(low),
                    lower_bound_method="the lower of the interval's end and Fisher's z (Bonett-Wright SE)",
                )
        passes = self.human >= self.ref.metric.human_pass
        categories = {"kappa": (self.human, self.score)}
        if self.rule_index != NO_THRESHOLD and self.rule_index < self.paired.m:
            categories["pass_kappa"] = (passes, self.score >= self.paired.j_values[self.rule_index])
        for key, (human, judged) in categories.items():
            stat = out.get(key) or {}
            if stat.get("estimate") is None:
                continue
            total = self.w.sum()
            disagree = self.w[human != judged].sum() * n_eff / total
            chance = sum(self.w[human == c].sum() * self.w[judged == c].sum() for c in np.unique(human)) / total**2
            exact = (
                1 - float(clopper_pearson_upper(disagree, n_eff, confidence=level)) / (1 - chance)
                if chance < 1
                else -1.0
            )
            low = min(exact, stat["ci_low"]) if stat.get("ci_low") is not None else exact
            stat.update(
                lower_bound=float(low),
                lower_bound_method=f"the lower of the interval's end and 1 - D / (1 - p_e), "
                f"D the Clopper-Pearson bound on {disagree:.3g} disagreement(s) in {n_eff:.3g}",
            )
        if out["auc"].get("estimate") is not None:
            out["auc"]["chance_p"] = self.separation(seed)["chance_p"]

    def separation(self, seed: int) -> dict[str, Any]:
        """How far the judge's scores separate the human passes from the fails, unweighted: the AUC
        (``U / (n_pass n_fail)``) and ``chance_p``, the one-sided Mann-Whitney p-value against 0.5 (by
        permutation while the smaller class has fewer than 20 cases). Computed once per seed."""
        cached = getattr(self, "_separation", {})
        if seed not in cached:
            cached[seed] = library.separation(self.score, self.human >= self.ref.metric.human_pass, seed=seed)
            self._separation = cached
        return cached[seed]

    def _reason(self, key: str) -> str:
        metric, rater = self.ref.metric, self.judge.rater
        if key in ("kappa", "kappa_quadratic", "alpha"):
            if key == "kappa_quadratic" and metric.scale != "ordinal":
                return "quadratic weighting applies to ordinal scales only"
            if key != "alpha" and metric.scale == "continuous":
                return "kappa needs categories; this metric's human scale is continuous (see alpha)"
            if not rater.higher_is_better:
                return "the judge's scores run opposite to the human scale (higher_is_better = false)"
            if not self.on_scale:
                if metric.scale == "continuous":
                    return (
                        "the judge is not declared to rate on the metric's scale "
                        "(set on_metric_scale = true for the rater)"
                    )
                return f"the judge's scores do not all lie on the metric's scale ({metric.scale_text()})"
            return "undefined: both raters put every case in the same category"
        if key == "auc":
            return "every case has the same human verdict (all pass or all fail): AUC needs both"
        if key in ("spearman", "kendall"):
            return "constant scores: the judge or the human reference gives every case the same value"
        return "undefined on this sample"

    def curve(self, confidence: float) -> list[dict[str, Any]]:
        counts = self.paired.error_counts(self.paired.full)
        fp, ff = counts["false_pass"][0, :-1], counts["false_fail"][0, :-1]
        n_pass, n_fail = counts["n_pass"][0], counts["n_fail"][0]
        s_pass, s_fail = self.effective_scale["pass"], self.effective_scale["fail"]  # 1 when unweighted
        fp_low, fp_high = wilson_interval(fp * s_fail, np.full_like(fp, n_fail * s_fail), confidence=confidence)
        ff_low, ff_high = wilson_interval(ff * s_pass, np.full_like(ff, n_pass * s_pass), confidence=confidence)
        with np.errstate(invalid="ignore", divide="ignore"):
            fp_rate, ff_rate = fp / n_fail, ff / n_pass
        # the number of cases behind each rate (weighted rates count cases of different weights)
        passes = self.human >= self.ref.metric.human_pass
        cases_fp = (~passes).sum() - np.searchsorted(np.sort(self.score[~passes]), self.paired.j_values, "left")
        cases_ff = np.searchsorted(np.sort(self.score[passes]), self.paired.j_values, "left")
        columns = zip(
            (self.judge.sign * self.paired.j_values).tolist(),
            _floats(fp_rate),
            _floats(ff_rate),
            cases_fp.tolist(),
            cases_ff.tolist(),
            _floats(fp_low),
            _floats(fp_high),
            _floats(ff_low),
            _floats(ff_high),
        )
        with _collector_paused():  # one point per distinct score: up to one per case, no cycles among them
            return [
                {
                    "threshold": t,
                    "false_pass_rate": fpr,
                    "false_fail_rate": ffr,
                    "n_false_pass": nfp,
                    "n_false_fail": nff,
                    "false_pass_rate_ci": [fpl, fph],
                    "false_fail_rate_ci": [ffl, ffh],
                }
                for t, fpr, ffr, nfp, nff, fpl, fph, ffl, ffh in columns
            ]

    def bottom_decile(self, confidence: float, n_listed: int) -> dict[str, Any]:
        order = np.lexsort((self.case_ids, self.score))
        # the lowest-scored tenth of the cases (of the population, when cases are weighted)
        size = (
            max(1, math.ceil(0.1 * self.n))
            if self.weights is None
            else int(np.searchsorted(np.cumsum(self.w[order]), 0.1 * self.n - 1e-9) + 1)
        )
        lowest = order[:size]
        passes = self.human[lowest] >= self.ref.metric.human_pass
        score_cut = float(self.judge.sign * self.score[lowest[-1]])
        w = self.w[lowest]
        rate = (
            _rate(float(passes.sum()), float(size), confidence)
            if self.weights is None
            else _rate(
                float(w[passes].sum()), float(w.sum()), confidence, scale=kish_effective_n(w) / w.sum(), n_cases=size
            )
        )
        return {
            "n": int(size),
            "score_at_most" if self.judge.sign > 0 else "score_at_least": score_cut,
            "human_pass_rate": rate,
            "mean_human_value": float(np.average(self.human[lowest], weights=w)),
            "cases": [self._case_row(i) for i in lowest[:n_listed]],
        }

    def worst_misses(self, n_listed: int) -> dict[str, Any]:
        """False passes with the highest scores and false fails with the lowest, at the pass threshold;
        none listed where there is no pass threshold (every case would be a "miss" of failing everything)."""
        index = self.rule_index
        if index == NO_THRESHOLD or index >= self.paired.m:
            human_pass = self.human >= self.ref.metric.human_pass
            return {
                "threshold": None,
                "n_false_pass": 0,
                "n_false_fail": int(human_pass.sum()),
                "false_passes": [],
                "false_fails": [],
                "reason": (
                    f"no pass threshold ({self.rule.describe()}"
                    + (": none short of failing every case" if self.rule.kind != "default" else "")
                    + "): no miss to list, since every case fails"
                ),
            }
        cut = self.paired.j_values[index] if index != NO_THRESHOLD and index < self.paired.m else np.inf
        human_pass = self.human >= self.ref.metric.human_pass
        judged_pass = self.score >= cut
        false_pass = np.flatnonzero(judged_pass & ~human_pass)
        false_fail = np.flatnonzero(~judged_pass & human_pass)
        false_pass = false_pass[
            np.lexsort((self.case_ids[false_pass], self.human[false_pass], -self.score[false_pass]))
        ]
        false_fail = false_fail[
            np.lexsort((self.case_ids[false_fail], -self.human[false_fail], self.score[false_fail]))
        ]
        return {
            "threshold": self.threshold_value(index),
            "n_false_pass": int(false_pass.size),
            "n_false_fail": int(false_fail.size),
            "false_passes": [self._case_row(i) for i in false_pass[:n_listed]],
            "false_fails": [self._case_row(i) for i in false_fail[:n_listed]],
        }

    def _case_row(self, i: int) -> dict[str, Any]:
        return {
            "case_id": str(self.case_ids[i]),
            "score": float(self.judge.sign * self.score[i]),
            "human": float(self.human[i]),
        }


def ref_values_at(ref: HumanReference, case_ids: np.ndarray) -> np.ndarray:
    index = np.searchsorted(ref.case_ids, case_ids)
    return ref.values[index]


# --------------------------------------------------------------------------------- the campaign
def bootstrap_runs(
    runs: list[JudgeRun],
    design: DesignWeights,
    *,
    n_boot: int,
    seed: int,
    progress: ProgressCallback | None,
    label: str,
    slices: list[tuple[list[JudgeRun], DesignWeights]] = (),
) -> None:
    """Resample the cases of a metric once (within the design's strata) and give every judge run its
    replicates of every statistic on the same resamples, so that differences between judges pair up.

    ``slices`` (the runs and design of each slice's case universe) are resampled along: each universe
    from its own seeded resamples, as if bootstrapped alone, but every judge of every universe in the same
    kernel launches (a few per batch of resamples, the batches as large as :data:`ROW_BUDGET` allows).
    """
    groups = [([r for r in group if r.paired is not None], d) for group, d in [(runs, design), *slices]]
    groups = [(group, d) for group, d in groups if group and d.strata.size]
    if not groups:
        return
    sizes = [d.strata.size for _, d in groups]
    offsets = np.r_[0, np.cumsum(sizes)]
    batch = int(np.clip(ROW_BUDGET // max(int(offsets[-1]), 1), 1, max(n_boot, 1)))
    weighted = any(d.weights is not None for _, d in groups)
    active = [(run, offsets[g] + run.positions) for g, (group, _) in enumerate(groups) for run in group]
    launches = _launches(active, batch)
    done = 0
    for parts in zip(
        *(resample_indices(d.strata.size, n_boot, seed=seed, batch_size=batch, strata=d.strata) for _, d in groups)
    ):
        dtype = np.int32 if offsets[-1] < 2**31 else np.int64
        indices = (
            np.concatenate([(part + offset).astype(dtype, copy=False) for part, offset in zip(parts, offsets)], axis=1)
            if len(parts) > 1
            else parts[0]
        )
        counts = case_counts(indices, int(offsets[-1]))
        if weighted:  # weighted sums of counts are not whole: accumulate in float64
            counts = counts.astype(np.float64)
        for launch in launches:
            summaries = summarize_together(
                [run.paired for run, _ in launch],
                counts,
                [positions for _, positions in launch],
                tables=[run.on_scale for run, _ in launch],
            )
            for (run, _), summary in zip(launch, summaries):
                run.add_summary(summary)
        done += parts[0].shape[0]
        if progress:
            progress(done, n_boot, f"bootstrap {label}")


def _launches(active: list[tuple[JudgeRun, np.ndarray]], batch: int) -> list[list[tuple[JudgeRun, np.ndarray]]]:
    """The runs in groups whose kernel outputs for ``batch`` resamples stay within :data:`ROW_BUDGET`
    values (all of them in one group, unless their tables are large)."""
    groups: list[list[tuple[JudgeRun, np.ndarray]]] = [[]]
    size = 0
    for run, positions in active:
        p = run.paired
        cost = batch * (2 * p.m + p.K + (p.C if run.on_scale else 0))
        if groups[-1] and size + cost > ROW_BUDGET:
            groups.append([])
            size = 0
        groups[-1].append((run, positions))
        size += cost
    return groups


def _judge_runs(
    campaign: Campaign, metric: str, judges: list[str] | None, rule: Rule, case_filter: set[str] | None = None
) -> tuple[HumanReference, np.ndarray, DesignWeights, list[JudgeRun]]:
    ref = human_reference(campaign, metric)
    universe = ref.case_ids if case_filter is None else ref.case_ids[np.isin(ref.case_ids, list(case_filter))]
    design = design_weights(campaign, universe)
    selected = [
        j for j in judge_scores(campaign, metric) if judges is None or j.name in judges or j.rater.name in judges
    ]
    return (
        ref,
        universe,
        design,
        [JudgeRun(pair(campaign, metric, j, reference=ref, universe=universe, design=design), rule) for j in selected],
    )


def _warnings(
    campaign: Campaign, metric: str, ref: HumanReference, runs: list[JudgeRun], results: list[dict]
) -> list[str]:
    """The metric's warnings; each about cases names them (the first ten)."""
    notes = []
    n_ref = ref.case_ids.size
    if n_ref < MIN_TRUSTED_LABELS:
        notes.append(
            f"only {n_ref} human-labelled cases: under {MIN_TRUSTED_LABELS}, no judge figure or "
            "threshold here is trustworthy yet"
        )
    if ref.n_ties:
        notes.append(
            f"{ref.n_ties} case(s) with a tied human panel took the lower label (a pass needs a "
            f"strict majority): {_listed(ref.tied_cases)}"
        )
    if ref.n_failed_ratings:
        notes.append(
            f"{ref.n_failed_ratings} human rating(s) recorded as failed (an error, no value): "
            + _listed(ref.failed_rating_cases)
        )
    adjusted = [a for a in campaign.adjustments if a.metric == metric]
    if adjusted:
        what = ", ".join(
            f"{a.rater}/{a.case_id}: {a.value:g}" + (f" -> {a.new_value:g}" if a.new_value is not None else "")
            for a in adjusted[:10]
        )
        notes.append(
            f"{len(adjusted)} out-of-scale value(s) {adjusted[0].action} (out_of_scale "
            f"{campaign.out_of_scale}): {what}" + (" ..." if len(adjusted) > 10 else "")
        )
    if campaign.set_aside_note(metric):
        notes.append(campaign.set_aside_note(metric))
    if campaign.shown_judge:
        notes.append(
            f"the annotators saw judge {campaign.shown_judge}'s scores as pre-annotations in Label Studio: "
            "their labels may be anchored on it, so every judge's agreement with humans (that judge's "
            "most of all) may be overstated; label blind to measure a judge"
        )
    for run, r in zip(runs, results):
        if r["n_errors"]:
            failed = sorted(set(run.judge.errors["case_id"].astype(str)))
            notes.append(
                f"judge {r['judge']}: {r['n_errors']} failed rating(s) (errors, excluded from the figures): "
                + _listed(failed)
            )
        same = _same_family_cases(campaign, r)
        if same:
            every = len(same) == len(campaign.cases or {})
            notes.append(
                f"judge {r['judge']} is of the {r['family']} family, as the generator of "
                + (
                    f"every case ({len(same)}): a judge may favour its own family's answers; rate them "
                    "with a judge of another family to compare"
                    if every
                    else f"{len(same)} case(s): a judge may favour its own family's answers: {_listed(same)}"
                )
            )
    return notes


def _listed(case_ids, shown: int = 10) -> str:
    """The first ``shown`` case ids, and how many more.

    >>> _listed([f"c{i}" for i in range(12)], shown=3)
    'c0, c1, c2 and 9 more'
    """
    ids = list(case_ids)
    return ", ".join(ids[:shown]) + (f" and {len(ids) - shown} more" if len(ids) > shown else "")


def _same_family_cases(campaign: Campaign, result: dict) -> list[str]:
    """The cases whose answer a generator of the judge's own family wrote."""
    family = result.get("family")
    if not family or not campaign.cases:
        return []
    return sorted(
        case_id
        for case_id, c in campaign.cases.items()
        if str((c.get("metadata") or {}).get("generator_family", "")).lower() == family.lower()
    )


@checked("confidence", "n_boot", "seed")
def compute_stats(
    campaign: Campaign,
    *,
    metrics: list[str] | None = None,
    judges: list[str] | None = None,
    by: str | None = None,
    seed: int = 0,
    n_boot: int = N_BOOT,
    confidence: float = 0.95,
    n_listed: int = 10,
    curves: bool = True,
    progress: ProgressCallback | None = None,
    current: float | Mapping[str, float] | None = None,
) -> Result:
    """Every judge against the human reference, per metric (and per slice with ``by``).

    :func:`stats_and_recommendations` gives this document together with the threshold
    recommendations under each metric's declared rule, from the same bootstrap.

    Parameters
    ----------
    campaign : Campaign
    metrics, judges : list of str, optional
        Restrict to these metrics / judges (a judge name or ``rater@run_id``).
    by : str, optional
        A ``metadata`` key of the cases: every statistic is also computed per value of it.
    seed, n_boot : int
        Bootstrap seed and number of resamples (of cases; the same resamples for every judge).
    confidence : float
        Two-sided confidence level of every interval.
    n_listed : int
        Cases listed per judge among its worst misses and its bottom decile.
    curves : bool
        Include the false-pass / false-fail curve of each judge (one point per distinct score).
    progress : callable, optional
        Called as ``progress(done, total, label)`` while the bootstrap runs.
    current : float or dict, optional
        The threshold you run each judge at today (a number for every judge, or ``{judge: number}``):
        each judge's verdict gives its rates there. Without it, a DeepEval judge's is read from its
        settings or an imported run (:mod:`calibrate.analysis.current`).

    Returns
    -------
    Result
        The ``calibrate stats --json`` document: ``{"metrics": [...], "manifest": {...}, "provenance":
        [...]}`` (``provenance``: where the ratings came from,
        :func:`~calibrate.campaign.summary.rating_provenance`); every
        statistic is ``{"estimate", "ci_low", "ci_high", "ci_method", "ci_width"}`` or
        ``{"estimate": None, "reason": ...}``. ``.to_frame()`` gives one row per metric x judge x
        (slice) x statistic.

    Examples
    --------
    >>> import calibrate
    >>> c = calibrate.load_campaign(calibrate.demo_campaign_path())
    >>> doc = calibrate.compute_stats(c, judges=["Olz-gpt4o"], n_boot=200)
    >>> round(doc["metrics"][0]["judges"][0]["spearman"]["estimate"], 3)
    0.511
    >>> table = doc.to_frame()
    >>> table.query("statistic == 'kappa'")[["estimate", "ci_low", "ci_high"]].round(3).values.tolist()
    [[0.262, 0.239, 0.281]]
    >>> int(table["n"].iloc[0]), table["method"].iloc[0]
    (4423, 'BCa bootstrap (200 resamples of cases)')
    """
    return _analyse(
        campaign,
        metrics=metrics,
        judges=judges,
        by=by,
        seed=seed,
        n_boot=n_boot,
        confidence=confidence,
        n_listed=n_listed,
        curves=curves,
        progress=progress,
        current=current,
    )[0]


@checked("confidence", "n_boot", "seed")
def stats_and_recommendations(
    campaign: Campaign,
    *,
    metrics: list[str] | None = None,
    judges: list[str] | None = None,
    by: str | None = None,
    seed: int = 0,
    n_boot: int = N_BOOT,
    confidence: float = 0.95,
    n_listed: int = 10,
    curves: bool = True,
    progress: ProgressCallback | None = None,
    current: float | Mapping[str, float] | None = None,
) -> tuple[Result, list[dict[str, Any]]]:
    """The :func:`compute_stats` document and the recommendations :func:`recommend_thresholds` gives
    under each metric's declared rule (:func:`default_rule`), from one bootstrap per metric.

    Parameters
    ----------
    campaign, metrics, judges, by, seed, n_boot, confidence, n_listed, curves, progress, current
        As for :func:`compute_stats`.

    Returns
    -------
    (Result, list of dict)
        The statistics document, and every metric's recommendations in metric order: each equal,
        figure for figure, to what ``recommend_thresholds(campaign, metric=M, rule=default_rule(...))``
        returns with the same seed, resamples and confidence.

    Examples
    --------
    >>> import calibrate
    >>> c = calibrate.load_campaign(calibrate.demo_campaign_path())
    >>> doc, recs = stats_and_recommendations(c, judges=["Olz-gpt4o"], n_boot=200)
    >>> recs[0]["threshold"], recs[0]["rule"]["kind"]
    (3.0, 'constraint')
    """
    return _analyse(
        campaign,
        metrics=metrics,
        judges=judges,
        by=by,
        seed=seed,
        n_boot=n_boot,
        confidence=confidence,
        n_listed=n_listed,
        curves=curves,
        progress=progress,
        current=current,
    )


@computed_once()
def _analyse(
    campaign: Campaign,
    *,
    metrics: list[str] | None,
    judges: list[str] | None,
    by: str | None,
    seed: int,
    n_boot: int,
    confidence: float,
    n_listed: int,
    curves: bool,
    progress: ProgressCallback | None,
    current: float | Mapping[str, float] | None = None,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be between 0 and 1, not {confidence}")
    chosen = campaign.metric_names(metrics)
    given = check_current(current)
    unmatched(given, _chosen_judges(campaign, chosen, judges))
    recommendations: list[dict[str, Any]] = []
    if by is not None and not campaign.cases:
        raise ValueError(ParameterText("{by}: slicing needs cases.jsonl with a metadata object per case", by=by))
    out = []
    for metric in chosen:
        spec = campaign.metrics[metric]
        rule = default_rule(spec)
        ref, universe, design, runs = _judge_runs(campaign, metric, judges, rule)
        slices = _slice_runs(campaign, metric, judges, rule, by) if by is not None else []
        # every slice resampled along with the metric's cases: one set of kernel launches per batch
        bootstrap_runs(
            runs,
            design,
            n_boot=n_boot,
            seed=seed,
            progress=progress,
            label=metric,
            slices=[(s[4], s[3]) for s in slices],
        )
        recommendations += [
            _recommendation(run, metric, rule, confidence, seed, current_thresholds(campaign, metric, run.judge, given))
            for run in runs
        ]
        results = [r.result(confidence, seed, n_listed, curves=curves) for r in runs]
        entry = {
            "metric": metric,
            "scale": spec.scale,
            "human_pass": spec.human_pass,
            "levels": list(spec.levels) if spec.levels else None,
            "n_cases": int(universe.size),
            "n_human_raters": len(ref.raters),
            "n_multiply_labelled": ref.n_multiply_labelled,
            "n_adjudicated": ref.n_adjudicated,
            "n_human_pass": int(ref.passes.sum()),
            "default_rule": rule.to_dict(),
            "judges": results,
            "warnings": _warnings(campaign, metric, ref, runs, results),
        }
        entry["sample_designs"] = design.designs
        entry["weighted"] = design.weights is not None
        passes = ref_values_at(ref, universe) >= spec.human_pass
        w = np.ones(universe.size) if design.weights is None else design.weights
        entry["human_pass_rate"] = (
            _rate(float(w[passes].sum()), float(w.sum()), confidence)
            if design.weights is None
            else _rate(
                float(w[passes].sum()),
                float(w.sum()),
                confidence,
                scale=kish_effective_n(w) / w.sum(),
                n_cases=int(universe.size),
            )
        )
        if design.weights is not None and design.n_outside:
            entry["warnings"].append(
                f"{design.n_outside} labelled case(s) came from no recorded sample: they are "
                "taken as a uniform random sample of the campaign's cases: " + _listed(design.outside_cases)
            )
        if len(ref.raters) > 1:  # the human ceiling
            entry["annotators"] = annotator_agreement(campaign, metric, n_boot=n_boot, seed=seed, confidence=confidence)
        entry["verdict"] = metric_verdict(
            metric, [r for r in recommendations if r["metric"] == metric], entry.get("annotators")
        )
        if by is not None:
            entry["slices"] = [
                {
                    "key": by,
                    "value": value,
                    "n_cases": int(universe.size),
                    "n_human_pass": int((ref_values_at(ref, universe) >= ref.metric.human_pass).sum()),
                    "judges": [r.result(confidence, seed, 0, full=False) for r in runs],
                }
                for value, ref, universe, _, runs in slices
            ]
        out.append(entry)
    manifest = build_manifest(
        campaign,
        command="stats",
        seed=seed,
        n_boot=n_boot,
        confidence=confidence,
        by=by,
        judges=judges,
        metrics=chosen,
        **_given_current(given),
    )
    return Result(
        {
            "campaign": campaign.name,
            "metrics": out,
            "manifest": manifest,
            "provenance": rating_provenance(campaign),
            # the ratings of metrics campaign.toml no longer declares: no metric above to note them under
            "set_aside_note": campaign.set_aside_note(why="metric"),
        }
    ), recommendations


def _slice_runs(
    campaign: Campaign, metric: str, judges: list[str] | None, rule: Rule, by: str
) -> list[tuple[str, HumanReference, np.ndarray, DesignWeights, list[JudgeRun]]]:
    """Per value of the ``metadata`` key ``by`` (sorted; ``(missing)`` for cases without it): the value
    and the human reference, case universe, design and judge runs of its cases."""
    groups: dict[str, set[str]] = {}
    for case_id, case in campaign.cases.items():
        value = (case.get("metadata") or {}).get(by)
        groups.setdefault("(missing)" if value is None else str(value), set()).add(case_id)
    return [(value, *_judge_runs(campaign, metric, judges, rule, groups[value])) for value in sorted(groups)]


# --------------------------------------------------------------------------- recommendations
@checked("confidence", "n_boot", "seed")
def recommend_thresholds(
    campaign: Campaign,
    *,
    metric: str,
    rule: Rule,
    judges: list[str] | None = None,
    seed: int = 0,
    n_boot: int = N_BOOT,
    confidence: float = 0.95,
    progress: ProgressCallback | None = None,
    cases: set[str] | None = None,
    current: float | Mapping[str, float] | None = None,
) -> Result:
    """Recommend a threshold per judge of ``metric`` under ``rule``, with its uncertainty.

    Every recommendation carries the false-pass and false-fail rates it yields with Wilson
    intervals, a percentile bootstrap interval for the threshold itself, DeepEval's default 0.5 with
    what it would cost, and warnings: under 50 human labels, or no threshold short of failing
    every case.

    Parameters
    ----------
    campaign : Campaign
    metric : str
    rule : Rule
        The rule that picks the threshold (a metric's own: :func:`default_rule`).
    judges : list of str, optional
        Only these judges.
    seed, n_boot, confidence, progress
        As for :func:`compute_stats`.
    cases : set of str, optional
        Only these cases' labels (those the threshold was chosen on, before a stream a monitor watches).
    current : float or dict, optional
        As for :func:`compute_stats`: each recommendation's ``current`` gives the rates there.

    Returns
    -------
    Result
        ``{"campaign", "recommendations": [one per judge], "manifest"}``; ``.to_frame()`` gives the
        threshold and the false-pass and false-fail rates of each judge, with their intervals.

    Examples
    --------
    >>> import calibrate
    >>> c = calibrate.load_campaign(calibrate.demo_campaign_path())
    >>> doc = calibrate.recommend_thresholds(c, metric="relevance", judges=["Olz-gpt4o"],
    ...     rule=calibrate.Rule("constraint", max_false_pass=0.1), n_boot=200)
    >>> doc["recommendations"][0]["threshold"]
    3.0
    """
    campaign.metric_names([metric])
    given = check_current(current)
    _ref, _universe, design, runs = _judge_runs(campaign, metric, judges, rule, cases)
    unmatched(given, [run.judge for run in runs])
    bootstrap_runs(runs, design, n_boot=n_boot, seed=seed, progress=progress, label=metric)
    recs = [
        _recommendation(run, metric, rule, confidence, seed, current_thresholds(campaign, metric, run.judge, given))
        for run in runs
    ]
    manifest = build_manifest(
        campaign,
        command="thresholds",
        seed=seed,
        n_boot=n_boot,
        confidence=confidence,
        rule=rule.to_dict(),
        judges=judges,
        metrics=[metric],
        **_given_current(given),
    )
    return Result({"campaign": campaign.name, "recommendations": recs, "manifest": manifest})


def recommended_threshold(
    campaign: Campaign, metric: str, judge: str, *, cases: set[str] | None = None
) -> float | None:
    """The threshold the metric's own rule (:func:`default_rule`) recommends for one judge, on all the
    labels or on ``cases``' alone; None when the rule gives none.

    Examples
    --------
    >>> import calibrate
    >>> recommended_threshold(calibrate.load_campaign(calibrate.demo_campaign_path()), "relevance", "Olz-gpt4o")
    3.0
    """
    recs = recommend_thresholds(
        campaign, metric=metric, rule=default_rule(campaign.metrics[metric]), judges=[judge], n_boot=0, cases=cases
    )["recommendations"]
    return recs[0]["threshold"] if recs else None


@computed_once()
@checked("n_boot", "seed")
def thresholds(
    campaign: Campaign,
    *,
    metrics: list[str] | None = None,
    rule: Rule | None = None,
    judges: list[str] | None = None,
    seed: int = 0,
    n_boot: int = N_BOOT,
    progress: ProgressCallback | None = None,
    current: float | Mapping[str, float] | None = None,
) -> Result:
    """The ``calibrate thresholds`` command: :func:`recommend_thresholds` for every metric, under the
    rule given or, with none, under each metric's own rule (:func:`default_rule`).

    Parameters
    ----------
    campaign : Campaign
    metrics : list of str, optional
        Only these metrics (default: every metric of the campaign).
    rule : Rule, optional
        One rule for every metric; by default each metric's declared rule.
    judges, seed, n_boot, progress, current
        As for :func:`recommend_thresholds`.

    Returns
    -------
    Result
        The ``calibrate thresholds --json`` document: ``{"campaign", "recommendations", "manifest"}``
        (the manifest of the first metric's run).

    Examples
    --------
    >>> import calibrate
    >>> c = calibrate.load_campaign(calibrate.demo_campaign_path())
    >>> doc = calibrate.thresholds(c, judges=["Olz-gpt4o"], n_boot=0)
    >>> doc.to_frame().query("statistic == 'false_pass_rate'")[["judge", "estimate"]].round(3).values.tolist()
    [['Olz-gpt4o', 0.04]]
    """
    chosen = campaign.metric_names(metrics)
    given = check_current(current)
    unmatched(given, _chosen_judges(campaign, chosen, judges))

    def of(metric: str) -> dict[str | None, float]:  # the thresholds given for this metric's judges
        names = {n for j in _chosen_judges(campaign, [metric], judges) for n in (j.name, j.rater.name)}
        return {k: v for k, v in given.items() if k is None or k in names}

    docs = [
        recommend_thresholds(
            campaign,
            metric=metric,
            rule=rule or default_rule(campaign.metrics[metric]),
            judges=judges,
            seed=seed,
            n_boot=n_boot,
            progress=progress,
            current=of(metric),
        )
        for metric in chosen
    ]
    verdicts = [
        metric_verdict(
            metric,
            doc["recommendations"],
            annotator_agreement(campaign, metric, n_boot=n_boot, seed=seed)
            if len(human_reference(campaign, metric).raters) > 1
            else None,
        )
        for metric, doc in zip(chosen, docs)
    ]
    return Result(
        {
            "campaign": campaign.name,
            "verdicts": verdicts,
            "recommendations": [r for doc in docs for r in doc["recommendations"]],
            "manifest": docs[0]["manifest"] if docs else {},
        }
    )


def _chosen_judges(campaign: Campaign, metrics: list[str], judges: list[str] | None) -> list:
    """The judges of ``metrics`` a command reads (those named in ``judges``, or all)."""
    return [
        j
        for m in metrics
        for j in judge_scores(campaign, m)
        if judges is None or j.name in judges or j.rater.name in judges
    ]


def _given_current(given: dict[str | None, float]) -> dict[str, Any]:
    """The thresholds given with ``current``, for the manifest (``*``: every judge not named)."""
    return {"current": {"*" if k is None else k: v for k, v in given.items()}} if given else {}


def _recommendation(
    run: JudgeRun, metric: str, rule: Rule, confidence: float, seed: int, current: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """One judge's recommendation under ``rule``, with its rates at the thresholds the user runs today
    (``current``: :func:`calibrate.analysis.current.current_thresholds`) and its verdict
    (:func:`calibrate.analysis.verdicts.judge_verdict`)."""
    rec = _recommended(run, metric, rule, confidence, seed, current or [])
    rec["verdict"] = judge_verdict(rec, confidence=confidence, min_labels=MIN_TRUSTED_LABELS)
    return rec


def _recommended(
    run: JudgeRun, metric: str, rule: Rule, confidence: float, seed: int, current: list[dict[str, Any]]
) -> dict[str, Any]:
    rec: dict[str, Any] = {
        "metric": metric,
        "judge": run.judge.name,
        "rule": rule.to_dict(),
        "pass_rule": "score >= threshold" if run.judge.sign > 0 else "score <= threshold",
        "n": run.n,
        "warnings": [],
    }
    if run.paired is None:
        reason = f"only {run.n} case(s) rated by both the judge and the humans (need 2)"
        rec.update(
            threshold=None,
            n_human_pass=int((run.human >= run.ref.metric.human_pass).sum()),
            n_human_fail=int((run.human < run.ref.metric.human_pass).sum()),
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
            {
                **c,
                "pass_rule": rec["pass_rule"],
                "false_pass_rate": undefined(reason),
                "false_fail_rate": undefined(reason),
            }
            for c in current
        ]
        rec["warnings"].append(reason + ": no recommendation")
        return rec
    counts = run.paired.error_counts(run.paired.full)
    n_pass, n_fail = float(counts["n_pass"][0]), float(counts["n_fail"][0])
    passes = run.human >= run.ref.metric.human_pass
    rec.update(n_human_pass=int(passes.sum()), n_human_fail=int((~passes).sum()))
    if run.weights is not None:
        rec.update(weighted=True, effective_n=run.effective_n)
    if n_pass > 0 and n_fail > 0:
        rec["separation"] = run.separation(seed)

    def at(index: int) -> dict[str, Any]:
        return {
            "false_pass_rate": run.rate(float(counts["false_pass"][0, index]), n_fail, confidence, "fail"),
            "false_fail_rate": run.rate(float(counts["false_fail"][0, index]), n_pass, confidence, "pass"),
        }

    index = int(run.rule_index)
    usable = index != NO_THRESHOLD and index < run.paired.m
    rec["threshold"] = run.threshold_value(index) if usable else None
    if usable:
        rates = at(index)
        fp = rates["false_pass_rate"]
        if rule.kind == "constraint" and rule.confidence is not None and fp.get("estimate") is not None:
            # the rule kept the one-sided Clopper-Pearson bound under the ceiling: that is the bound shown
            k, n = (
                (fp["k"], fp["n"])
                if not fp.get("weighted")
                else (fp["estimate"] * fp["effective_n"], fp["effective_n"])
            )
            rates["false_pass_rate"] = {
                **fp,
                "ci_low": 0.0,
                "ci_high": float(clopper_pearson_upper(k, n, confidence=rule.confidence)),
                "ci_method": f"one-sided {rule.confidence:.0%} Clopper-Pearson "
                "upper bound (the bound the rule kept under its ceiling)",
            }
            rates["false_pass_rate"]["ci_width"] = rates["false_pass_rate"]["ci_high"]
        for key in ("false_pass_rate", "false_fail_rate"):
            rec[key] = rates[key].get("estimate")
            rec[key + "_ci"] = [rates[key].get("ci_low"), rates[key].get("ci_high")]
            rec[key + "_detail"] = rates[key]
        rec["accuracy"] = run.accuracy_at(index, confidence)
        if rule.kind == "constraint" and rule.confidence is None:
            # the rule kept the estimate under the ceiling; the most lenient threshold whose interval stays
            # under it too is the one a reviewer can defend (the verdict offers it)
            scale = run.effective_scale["fail"]
            upper = wilson_interval(
                counts["false_pass"][0, index : run.paired.m] * scale,
                np.full(run.paired.m - index, n_fail * scale),
                confidence=confidence,
            )[1]
            under = np.flatnonzero(upper <= rule.max_false_pass + 1e-12)
            if under.size and under[0] > 0:
                t = index + int(under[0])
                rec["defensible_alternative"] = {
                    "threshold": run.threshold_value(t),
                    **at(t),
                    "accuracy": run.accuracy_at(t, confidence),
                }
        if rule.kind == "constraint" and n_fail > 0:
            # the fewest false passes short of failing every case: what more labels could defend (the verdict)
            rec["lowest_false_pass"] = {
                "rate": float(counts["false_pass"][0, run.paired.m - 1] / n_fail),
                "threshold": run.threshold_value(run.paired.m - 1),
            }
    else:
        for key in ("false_pass_rate", "false_fail_rate"):
            rec[key] = None
            rec[key + "_ci"] = [None, None]
        if n_fail == 0 or n_pass == 0:
            rec["warnings"].append(
                "every human label is a "
                + ("pass" if n_fail == 0 else "fail")
                + ": the rule needs both human passes and human fails"
            )
        else:
            lowest = float(counts["false_pass"][0, run.paired.m - 1] / n_fail)
            rec["lowest_false_pass"] = {"rate": lowest, "threshold": run.threshold_value(run.paired.m - 1)}
            rec["warnings"].append(
                f"no threshold meets the rule ({rule.describe()}) except failing every case: this judge "
                f"cannot serve the gate (lowest false-pass rate short of failing everything: {lowest:.3f} "
                f"at threshold {run.threshold_value(run.paired.m - 1):g})"
            )
    thresholds = np.concatenate(run.replicates.get("threshold", [np.array([])]))
    finite = thresholds[np.isfinite(thresholds)]
    interval = percentile_interval(finite, confidence=confidence, discrete=True)
    rec["threshold_ci"] = [interval.low, interval.high]
    rec["threshold_ci_method"] = interval.method
    rec["threshold_ci_resamples_without_threshold"] = int(thresholds.size - finite.size)
    if thresholds.size and finite.size < thresholds.size:
        rec["warnings"].append(
            f"in {thresholds.size - finite.size} of {thresholds.size} bootstrap resamples no threshold met the rule"
        )
    if run.n < MIN_TRUSTED_LABELS:
        rec["warnings"].append(
            f"only {run.n} human-labelled cases: under {MIN_TRUSTED_LABELS}, this recommendation is not yet trustworthy"
        )
    default_index = run.index_of(DEEPEVAL_DEFAULT_THRESHOLD)
    rec["deepeval_default"] = {"threshold": DEEPEVAL_DEFAULT_THRESHOLD, **at(min(default_index, run.paired.m))}
    # the thresholds the user runs today: where the verdict starts
    rec["current"] = [
        {**c, "pass_rule": rec["pass_rule"], **at(min(run.index_of(c["threshold"]), run.paired.m))} for c in current
    ]
    return rec
