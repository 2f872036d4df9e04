"""Threshold recommendations: per judge of a metric under a rule (:func:`recommend_thresholds`), for
every metric (:func:`thresholds`, the ``calibrate thresholds`` command), or one judge's threshold alone
(:func:`recommended_threshold`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from calibrate.analysis.annotators import annotator_agreement
from calibrate.analysis.current import check_current, current_thresholds, unmatched
from calibrate.analysis.judge_recommendation import recommendation
from calibrate.analysis.metric_comparisons import ProgressCallback, bootstrap_runs, chosen_judges, judge_comparisons
from calibrate.analysis.recommendation_results import ThresholdsResult
from calibrate.analysis.rules import Rule, default_rule
from calibrate.analysis.verdicts import metric_verdict
from calibrate.base.manifest import build_manifest
from calibrate.base.params import checked
from calibrate.campaign import Campaign
from calibrate.campaign.reference import computed_once, human_reference
from calibrate.stats import N_BOOT

__all__ = ["given_current", "recommend_thresholds", "recommended_threshold", "thresholds"]


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
) -> ThresholdsResult:
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
        The rule that picks the threshold (a metric's own: :func:`~calibrate.analysis.rules.default_rule`).
    judges : list of str, optional
        Only these judges.
    seed, n_boot, confidence, progress
        As for :func:`~calibrate.analysis.agreement.compute_stats`.
    cases : set of str, optional
        Only these cases' labels (those the threshold was chosen on, before a stream a monitor watches).
    current : float or dict, optional
        As for :func:`~calibrate.analysis.agreement.compute_stats`: each recommendation's ``current``
        gives the rates there.

    Returns
    -------
    ThresholdsResult
        ``{"campaign", "recommendations": [one per judge], "manifest"}``: ``.recommendations`` holds a
        :class:`~calibrate.analysis.recommendation_results.Recommendation` per judge; ``.to_frame()``
        gives the threshold and the false-pass and false-fail rates of each judge, with their intervals.

    Examples
    --------
    >>> import calibrate
    >>> c = calibrate.load_campaign(calibrate.demo_campaign_path())
    >>> doc = calibrate.recommend_thresholds(c, metric="relevance", judges=["Olz-gpt4o"],
    ...     rule=calibrate.Rule("constraint", max_false_pass=0.1), n_boot=200)
    >>> rec = doc.recommendations[0]
    >>> rec.threshold, rec.threshold_ci, round(rec.false_pass_rate.ci_high, 3)
    (3.0, (2.0, 3.0), 0.047)
    """
    campaign.metric_names([metric])
    given = check_current(current)
    compared = judge_comparisons(campaign, metric, judges, rule, cases)
    unmatched(given, [j.judge for j in compared.judges])
    bootstrap_runs(compared.comparisons, compared.design, n_boot=n_boot, seed=seed, progress=progress, label=metric)
    recs = [
        recommendation(j, metric, rule, confidence, seed, current_thresholds(campaign, metric, j.judge, given))
        for j in compared.judges
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
        **given_current(given),
    )
    return ThresholdsResult(campaign=campaign.name, recommendations=tuple(recs), manifest=manifest)


def recommended_threshold(
    campaign: Campaign, metric: str, judge: str, *, cases: set[str] | None = None
) -> float | None:
    """The threshold the metric's own rule (:func:`~calibrate.analysis.rules.default_rule`) recommends
    for one judge, on all the labels or on ``cases``' alone; None when the rule gives none.

    Examples
    --------
    >>> import calibrate
    >>> recommended_threshold(calibrate.load_campaign(calibrate.demo_campaign_path()), "relevance", "Olz-gpt4o")
    3.0
    """
    recs = recommend_thresholds(
        campaign, metric=metric, rule=default_rule(campaign.metrics[metric]), judges=[judge], n_boot=0, cases=cases
    ).recommendations
    return recs[0].threshold if recs else None


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
) -> ThresholdsResult:
    """The ``calibrate thresholds`` command: :func:`recommend_thresholds` for every metric, under the
    rule given or, with none, under each metric's own rule (:func:`~calibrate.analysis.rules.default_rule`).

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
    ThresholdsResult
        The ``calibrate thresholds --json`` document: ``{"campaign", "verdicts", "recommendations",
        "manifest"}`` (a verdict per metric; the manifest of the first metric's run).

    Examples
    --------
    >>> import calibrate
    >>> c = calibrate.load_campaign(calibrate.demo_campaign_path())
    >>> doc = calibrate.thresholds(c, judges=["Olz-gpt4o"], n_boot=0)
    >>> doc.to_frame().query("statistic == 'false_pass_rate'")[["judge", "estimate"]].round(3).values.tolist()
    [['Olz-gpt4o', 0.04]]
    >>> doc.recommendation("relevance", "Olz-gpt4o").false_pass_rate.n, doc.verdicts[0].best.judge
    (3238, 'Olz-gpt4o')
    """
    chosen = campaign.metric_names(metrics)
    given = check_current(current)
    unmatched(given, chosen_judges(campaign, chosen, judges))

    def of(metric: str) -> dict[str | None, float]:  # the thresholds given for this metric's judges
        names = {n for j in chosen_judges(campaign, [metric], judges) for n in (j.name, j.rater.name)}
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
            [r.to_dict() for r in doc.recommendations],
            annotator_agreement(campaign, metric, n_boot=n_boot, seed=seed)
            if len(human_reference(campaign, metric).raters) > 1
            else None,
        )
        for metric, doc in zip(chosen, docs)
    ]
    return ThresholdsResult(
        campaign=campaign.name,
        recommendations=tuple(r for doc in docs for r in doc.recommendations),
        manifest=docs[0].manifest if docs else {},
        verdicts=tuple(verdicts),
    )


def given_current(given: dict[str | None, float]) -> dict[str, Any]:
    """The thresholds given with ``current``, for the manifest (``*``: every judge not named)."""
    return {"current": {"*" if k is None else k: v for k, v in given.items()}} if given else {}
