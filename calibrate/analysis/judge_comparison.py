"""One judge against the human reference on one case universe: the engine behind every judge figure.

A :class:`JudgeComparison` holds the judge's paired table (:class:`~calibrate.stats.paired.PairedScores`),
the threshold its rule picks, and its bootstrap replicates of every statistic, which the vectorised
engine of :mod:`calibrate.stats.paired` computes for the resamples of
:func:`calibrate.analysis.metric_comparisons.bootstrap_runs`. The point estimates of the documents come
from the reference libraries, checked against the engine (:mod:`calibrate.analysis.judge_figures`).

A judge rated with the humans on fewer than two cases has no figure: it is :class:`TooFewCases` instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from calibrate.analysis.figures import estimate, undefined
from calibrate.analysis.rules import Rule
from calibrate.campaign.reference import JudgeScores, Pairing
from calibrate.campaign.weights import kish_effective_n
from calibrate.stats import library
from calibrate.stats.intervals import wilson_interval
from calibrate.stats.paired import PairedScores, Summary
from calibrate.stats.thresholds import NO_THRESHOLD, constraint_rule, cost_rule

__all__ = [
    "ROW_BUDGET",
    "JudgeComparison",
    "TooFewCases",
    "pass_share",
    "wilson_rate",
]

#: Table cells computed at once (rows x cells): bounds the memory of one step of the bootstrap (a batch
#: of resamples holds its case indices and case counts, 8 bytes a cell). At 100,000 cases, 20 resamples
#: a batch: 30 to 40 MB less at the peak of `calibrate stats` than with 4 million (70 MB with ten judges),
#: in the same CPU time; at half a million the launches cost a second more.
ROW_BUDGET = 2_000_000


def wilson_rate(
    k: float, n: float, confidence: float, *, scale: float | None = None, n_cases: int | None = None
) -> dict[str, Any]:
    """A rate ``k / n`` with its Wilson interval. Weighted counts (``scale`` given) take the interval
    at their Kish effective size: ``k * scale`` of ``n * scale``.

    >>> wilson_rate(3, 4, 0.95)["k"], wilson_rate(0, 0, 0.95)["reason"]
    (3, 'no case in the denominator')
    """
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


def pass_share(passes: np.ndarray, weights: np.ndarray | None, confidence: float) -> dict[str, Any]:
    """The share of human passes among cases (weighted by ``weights``, at their Kish effective size),
    with its Wilson interval."""
    if weights is None:
        return wilson_rate(float(passes.sum()), float(passes.size), confidence)
    total = float(weights.sum())
    return wilson_rate(
        float(weights[passes].sum()),
        total,
        confidence,
        scale=kish_effective_n(weights) / weights.sum(),
        n_cases=int(passes.size),
    )


@dataclass(frozen=True)
class TooFewCases:
    """A judge rated with the humans on fewer than two cases of the universe: none of its figures is
    defined (the documents give :attr:`reason` instead)."""

    pairing: Pairing

    @property
    def judge(self) -> JudgeScores:
        return self.pairing.judge

    @property
    def n(self) -> int:
        return self.pairing.n

    @property
    def reason(self) -> str:
        return f"only {self.n} case(s) rated by both the judge and the humans (need 2)"


class JudgeComparison:
    """One judge against the human reference on one case universe, on two cases or more: its paired
    table, the threshold index its rule picks, its bootstrap replicates of every statistic.

    Parameters
    ----------
    pairing : Pairing
        The judge and the human reference on the cases both rated (two or more).
    rule : Rule
        The rule that picks the judge's pass threshold.
    """

    def __init__(self, pairing: Pairing, rule: Rule):
        if pairing.n < 2:
            raise ValueError(f"judge {pairing.judge.name}: {TooFewCases(pairing).reason}")
        self.pairing, self.rule = pairing, rule
        self.judge, self.ref = judge, ref = pairing.judge, pairing.reference
        metric = ref.metric
        self.case_ids, self.positions, self.n_unreferenced = pairing.case_ids, pairing.positions, pairing.n_unreferenced
        self.human, self.score, self.n = pairing.human, pairing.oriented, pairing.n
        #: the human verdict of each case
        self.passes = pairing.passes
        # each case's design weight, scaled to mean 1 over the cases this judge rated (None: unweighted)
        self.weights = pairing.weights
        self.w = w = np.ones(self.n) if self.weights is None else self.weights
        self.effective_n = kish_effective_n(w)
        # weighted counts of each class, times these factors, are on the scale of their effective size
        self.effective_scale = {
            cls: (kish_effective_n(w[mask]) / w[mask].sum() if mask.any() else 1.0)
            for cls, mask in (("pass", self.passes), ("fail", ~self.passes))
        }
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
        self.rule_index = self.rule_indices(self.paired.summarize(self.paired.full))[0]
        self.replicates: dict[str, list[np.ndarray]] = {}
        self._separation: dict[int, dict[str, Any]] = {}

    # thresholds ------------------------------------------------------------------------------
    def rule_indices(self, summary: Summary) -> np.ndarray:
        """The threshold index the rule picks in each row of ``summary``."""
        rule = self.rule
        if rule.kind == "constraint":
            return constraint_rule(
                summary.cum_fails,
                summary.cum_fails[:, -1],
                max_false_pass=rule.max_false_pass,
                confidence=rule.confidence,
                whole=self.weights is None,
                scale=self.effective_scale["fail"],
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

    @property
    def has_threshold(self) -> bool:
        """Whether the rule found a pass threshold short of failing every case."""
        return bool(self.rule_index != NO_THRESHOLD and self.rule_index < self.paired.m)

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
            return wilson_rate(k, n, confidence)
        if among is None:
            return wilson_rate(k, n, confidence, scale=self.effective_n / self.n, n_cases=self.n)
        return wilson_rate(
            k,
            n,
            confidence,
            scale=self.effective_scale[among],
            n_cases=int(self.passes.sum() if among == "pass" else (~self.passes).sum()),
        )

    def accuracy_at(self, index: int, confidence: float) -> dict[str, Any]:
        """The share of cases whose pass/fail verdict at threshold index ``index`` matches the humans',
        with its Wilson interval."""
        decision = self.paired.decision_stats(self.paired.full, index)
        return self.rate(float(decision["n_agree"][0]), float(decision["n"][0]), confidence)

    def separation(self, seed: int) -> dict[str, Any]:
        """How far the judge's scores separate the human passes from the fails, unweighted: the AUC
        (``U / (n_pass n_fail)``) and ``chance_p``, the one-sided Mann-Whitney p-value against 0.5 (by
        permutation while the smaller class has fewer than 20 cases). Computed once per seed."""
        if seed not in self._separation:
            self._separation[seed] = library.separation(self.score, self.passes, seed=seed)
        return self._separation[seed]

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

    def jackknife(self, seed: int, *, case_groups: bool = False) -> tuple[dict[str, np.ndarray], np.ndarray]:
        """Every statistic on each leave-out sample of the paired table's jackknife
        (:meth:`~calibrate.stats.paired.PairedScores.jackknife`), and how many cases each stands for.
        A grouped jackknife is summarized a few groups at a time, within :data:`ROW_BUDGET` (at a
        million cases, its 200 samples' running sums at once held gigabytes)."""
        p = self.paired
        batches, weights = p.jackknife_batches(
            seed=seed,
            tables=self.on_scale,
            case_groups=case_groups,
            rows=ROW_BUDGET // max(p.n, p.C, p.m, p.K),
        )
        parts = [self.statistics(batch) for batch in batches]
        return {key: np.concatenate([part[key] for part in parts]) for key in parts[0]}, weights

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
            out |= self._decision_statistics(s)
        index = self.rule_indices(s)
        values = np.where((index == NO_THRESHOLD) | (index >= p.m), np.nan, p.j_values[np.clip(index, 0, p.m - 1)])
        out["threshold"] = values * self.judge.sign
        return out

    def _decision_statistics(self, s: Summary) -> dict[str, np.ndarray]:
        """The pass/fail statistics at the full sample's threshold (the gate as deployed), per row."""
        decision = self.paired.decision_stats(s, self.rule_index)
        out = {"pass_kappa": decision["kappa"], "balanced_accuracy": decision["balanced_accuracy"]}
        with np.errstate(invalid="ignore", divide="ignore"):  # counted once, by decision_stats
            out["false_pass_rate"] = decision["false_pass"] / decision["n_fail"]
            out["false_fail_rate"] = decision["false_fail"] / decision["n_pass"]
        return out

    def add_resamples(self, counts: np.ndarray) -> None:
        """Statistics of a batch of resamples, given as counts of each universe case. Kappa and alpha
        read the cell tables; the other statistics only need the kernel's sums."""
        if self.on_scale:
            source: np.ndarray | Summary = self.paired.tables(counts, self.positions)
        else:
            source = self.paired.summarize_counts(counts, self.positions)
        self.add_summary(source)

    def add_summary(self, source: np.ndarray | Summary) -> None:
        """Statistics of a batch of resamples, given as their count tables or their summary (with the
        tables, on the scale: kappa and alpha read cells)."""
        for key, values in self.statistics(source).items():
            self.replicates.setdefault(key, []).append(values)
