"""Judge-versus-human statistics for a campaign: every judge's agreement with the human reference,
with intervals, per metric and per slice, and each metric's threshold recommendations from the same
bootstrap (:func:`compute_stats`: a :class:`~calibrate.analysis.results.StatsResult`).

The engine is :mod:`calibrate.analysis.judge_comparison`, resampled by :mod:`calibrate.analysis.metric_comparisons`; a judge's entry is written by
:mod:`calibrate.analysis.judge_figures`, its recommendation by :mod:`calibrate.analysis.judge_recommendation`,
a metric's warnings by :mod:`calibrate.analysis.metric_warnings`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from calibrate.analysis.annotators import annotator_agreement
from calibrate.analysis.current import check_current, current_thresholds, unmatched
from calibrate.analysis.judge_comparison import pass_share
from calibrate.analysis.judge_figures import judge_entry
from calibrate.analysis.judge_recommendation import recommendation
from calibrate.analysis.metric_comparisons import (
    MetricComparisons,
    ProgressCallback,
    bootstrap_runs,
    chosen_judges,
    judge_comparisons,
)
from calibrate.analysis.metric_warnings import metric_warnings
from calibrate.analysis.recommendation_results import Recommendation
from calibrate.analysis.recommendations import given_current
from calibrate.analysis.results import MetricAgreement, SliceAgreement, StatsResult
from calibrate.analysis.rules import Rule, default_rule
from calibrate.analysis.verdicts import metric_verdict
from calibrate.base.estimates import Estimate
from calibrate.base.manifest import build_manifest
from calibrate.base.params import checked
from calibrate.campaign import Campaign
from calibrate.campaign.metadata import require_cases, slices
from calibrate.campaign.reference import HumanReference, computed_once
from calibrate.campaign.summary import rating_provenance
from calibrate.stats import N_BOOT

__all__ = ["compute_stats"]


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
) -> StatsResult:
    """Every judge against the human reference, per metric (and per slice with ``by``), and the
    threshold recommendations under each metric's declared rule, from the same bootstrap.

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
    StatsResult
        The ``calibrate stats --json`` document: ``{"metrics": [...], "manifest": {...}, "provenance":
        [...]}`` (``provenance``: where the ratings came from,
        :func:`~calibrate.campaign.summary.rating_provenance`); every
        statistic is ``{"estimate", "ci_low", "ci_high", "ci_method", "ci_width"}`` or
        ``{"estimate": None, "reason": ...}``, typed as :class:`~calibrate.base.estimates.Estimate`
        (``doc.metrics[0].judges[0].auc``). ``.to_frame()`` gives one row per metric x judge x
        (slice) x statistic. ``.recommendations`` (not in the document) holds every metric's
        recommendations in metric order (each a
        :class:`~calibrate.analysis.recommendation_results.Recommendation`): each equal, figure for figure, to what
        ``recommend_thresholds(campaign, metric=M, rule=default_rule(...))`` returns with the same
        seed, resamples and confidence.

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
    >>> doc.recommendations[0].threshold, doc.recommendations[0].rule["kind"]
    (3.0, 'constraint')
    """
    return analyse(
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


@dataclass(frozen=True)
class Settings:
    """What a statistics command asked for, beside the campaign and its metrics."""

    judges: list[str] | None
    by: str | None
    seed: int
    n_boot: int
    confidence: float
    n_listed: int
    curves: bool
    progress: ProgressCallback | None
    #: the thresholds run today (:func:`calibrate.analysis.current.check_current`)
    given: dict[str | None, float]


@computed_once()
def analyse(
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
) -> StatsResult:
    """The statistics document of :func:`compute_stats`, with the recommendations of every metric's judges
    under the metric's own rule, from one bootstrap per metric."""
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be between 0 and 1, not {confidence}")
    chosen = campaign.metric_names(metrics)
    given = check_current(current)
    unmatched(given, chosen_judges(campaign, chosen, judges))
    require_cases(campaign, by)
    settings = Settings(judges, by, seed, n_boot, confidence, n_listed, curves, progress, given)
    out, recommendations = [], []
    for metric in chosen:
        entry, recs = metric_entry(campaign, metric, settings)
        out.append(entry)
        recommendations += recs
    manifest = build_manifest(
        campaign,
        command="stats",
        seed=seed,
        n_boot=n_boot,
        confidence=confidence,
        by=by,
        judges=judges,
        metrics=chosen,
        **given_current(given),
    )
    return StatsResult(
        campaign=campaign.name,
        metrics=tuple(out),
        manifest=manifest,
        provenance=tuple(rating_provenance(campaign)),
        # the ratings of metrics campaign.toml no longer declares: no metric above to note them under
        set_aside_note=campaign.set_aside_note(why="metric"),
        recommendations=tuple(recommendations),
    )


def metric_entry(campaign: Campaign, metric: str, s: Settings) -> tuple[MetricAgreement, list[Recommendation]]:
    """One metric's entry in the statistics document, and its judges' recommendations under its rule."""
    spec = campaign.metrics[metric]
    rule = default_rule(spec)
    compared = judge_comparisons(campaign, metric, s.judges, rule)
    ref, universe, design = compared.reference, compared.universe, compared.design
    slices = slice_comparisons(campaign, metric, s.judges, rule, s.by) if s.by is not None else []
    # every slice resampled along with the metric's cases: one set of kernel launches per batch
    bootstrap_runs(
        compared.comparisons,
        design,
        n_boot=s.n_boot,
        seed=s.seed,
        progress=s.progress,
        label=metric,
        slices=[(sliced.comparisons, sliced.design) for _, sliced in slices],
    )
    recs = [
        recommendation(j, metric, rule, s.confidence, s.seed, current_thresholds(campaign, metric, j.judge, s.given))
        for j in compared.judges
    ]
    judges = tuple(judge_entry(j, s.confidence, s.seed, s.n_listed, curves=s.curves) for j in compared.judges)
    annotators = (  # the human ceiling
        dict(annotator_agreement(campaign, metric, n_boot=s.n_boot, seed=s.seed, confidence=s.confidence))
        if len(ref.raters) > 1
        else None
    )
    entry = MetricAgreement(
        metric=metric,
        scale=spec.scale,
        human_pass=spec.human_pass,
        levels=list(spec.levels) if spec.levels else None,
        n_cases=int(universe.size),
        n_human_raters=len(ref.raters),
        n_multiply_labelled=ref.n_multiply_labelled,
        n_adjudicated=ref.n_adjudicated,
        n_human_pass=int(ref.passes.sum()),
        default_rule=rule.to_dict(),
        judges=judges,
        warnings=tuple(metric_warnings(campaign, metric, compared)),
        sample_designs=tuple(design.designs),
        weighted=design.weights is not None,
        human_pass_rate=Estimate.from_dict(pass_share(universe_passes(ref, universe), design.weights, s.confidence)),
        annotators=annotators,
        verdict=metric_verdict(metric, [r.to_dict() for r in recs], annotators),
        slices=tuple(slice_entry(s.by, value, sliced, s) for value, sliced in slices) if s.by is not None else None,
    )
    return entry, recs


def slice_entry(by: str, value: str, sliced: MetricComparisons, s: Settings) -> SliceAgreement:
    """The entry of one slice of a metric's cases: its judges' figures without curve or cases."""
    return SliceAgreement(
        key=by,
        value=value,
        n_cases=int(sliced.universe.size),
        n_human_pass=int(universe_passes(sliced.reference, sliced.universe).sum()),
        judges=tuple(judge_entry(j, s.confidence, s.seed, 0, full=False) for j in sliced.judges),
    )


def slice_comparisons(
    campaign: Campaign, metric: str, judges: list[str] | None, rule: Rule, by: str
) -> list[tuple[str, MetricComparisons]]:
    """Per value of the ``metadata`` key ``by`` (sorted; ``(missing)`` for cases without it): the value
    and the judges' comparisons on its cases."""
    return [
        (value, judge_comparisons(campaign, metric, judges, rule, cases))
        for value, cases in slices(campaign, by).items()
    ]


def universe_passes(ref: HumanReference, universe: np.ndarray) -> np.ndarray:
    """The human verdict of each case of ``universe`` (sorted case ids, all in the reference)."""
    return ref.values[np.searchsorted(ref.case_ids, universe)] >= ref.metric.human_pass
