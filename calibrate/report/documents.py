"""The report's input, typed: everything the threshold-selection report shows, gathered once
(:func:`calibrate.report.build.report_documents` gathers it from a campaign) and written by
:func:`calibrate.report.write_report`."""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from calibrate.analysis.recommendation_results import Recommendation, recommendation_dicts
from calibrate.analysis.results import StatsResult
from calibrate.base.results import nested
from calibrate.report.format import case_texts

__all__ = ["ReportDocuments"]


@dataclass(frozen=True)
class ReportDocuments:
    """What the report shows: the statistics and recommendations, and the sections a campaign adds.

    Read the parts as attributes (``documents.stats``); :meth:`to_dict` is ``report.json``.

    Parameters
    ----------
    stats : StatsResult
        The statistics of :func:`calibrate.compute_stats`: every metric's judges, their verdicts, the
        annotator agreement and the manifest.
    recommendations : sequence of Recommendation
        Threshold recommendations (any metrics, any judges): ``stats.recommendations`` (under each
        metric's declared rule) or those of :func:`calibrate.recommend_thresholds`; empty for none. A
        recommendation's dict (read from a document) is read back as its :class:`Recommendation`.
    cases : mapping, optional
        :attr:`Campaign.cases`, so that the worst misses show their text.
    judge_runs : sequence of mapping
        What each judge's runs cost (``JudgeStore.summary()``), shown in a section of its own.
    audits : sequence of mapping
        Judge-upgrade audits (:func:`calibrate.review.audit.audit_judges`), each in a section of its own.
    calibrations : sequence of mapping
        Calibration maps (:func:`calibrate.analysis.calibration.calibration_maps`), a section per metric.
    versus : sequence of mapping
        Judge-versus-judge matrices (:func:`calibrate.analysis.versus.judge_matrix`), a section per metric.
    since : mapping, optional
        What happened since the threshold was chosen (:func:`calibrate.report.build.since_threshold`):
        ``monitors``, ``not_monitored`` and ``fingerprints``, in a section of its own.

    Examples
    --------
    >>> import calibrate
    >>> c = calibrate.load_campaign(calibrate.demo_campaign_path())
    >>> stats = calibrate.compute_stats(c, judges=["Olz-gpt4o"], n_boot=0)
    >>> documents = ReportDocuments(stats, stats.recommendations, cases=c.cases)
    >>> documents.manifest["campaign"], len(documents.recommendations), sorted(documents.to_dict())[:3]
    ('trec-dl-2023-llmjudge', 1, ['audits', 'calibrations', 'judge_runs'])
    """

    stats: StatsResult
    recommendations: Sequence[Recommendation]
    cases: dict[str, dict[str, Any]] | None = None
    judge_runs: Sequence[Mapping[str, Any]] = ()
    audits: Sequence[Mapping[str, Any]] = ()
    calibrations: Sequence[Mapping[str, Any]] = ()
    versus: Sequence[Mapping[str, Any]] = ()
    since: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.stats, StatsResult):
            raise TypeError(
                f"stats: expected the StatsResult of calibrate.compute_stats, not {type(self.stats).__name__}"
            )
        recs = tuple(r if isinstance(r, Recommendation) else Recommendation.from_dict(r) for r in self.recommendations)
        object.__setattr__(self, "recommendations", recs)
        for name in ("judge_runs", "audits", "calibrations", "versus"):
            object.__setattr__(self, name, tuple(getattr(self, name) or ()))

    @property
    def manifest(self) -> dict[str, Any]:
        """The statistics' manifest: everything the figures depend on."""
        return self.stats.manifest

    @functools.cached_property
    def stats_document(self) -> dict[str, Any]:
        """The statistics as plain dicts and lists, without a ``schema_version`` of their own: what the
        templates index and ``report.json`` holds (made once)."""
        return self.stats.to_dict(schema_version=False)

    def listed_cases(self) -> Iterator[str]:
        """The id of every case a worst-miss table lists (a case may come more than once)."""
        for metric in self.stats.metrics:
            for judge in metric.judges:
                misses = judge.extra.get("worst_misses") or {}
                for key in ("false_passes", "false_fails"):
                    yield from (row["case_id"] for row in misses.get(key, []))

    def to_dict(self) -> dict[str, Any]:
        """``report.json``: every document as plain dicts and lists, and the whole text of the cases the
        worst misses list (``report.html`` clips it)."""
        return {
            "stats": self.stats_document,
            "recommendations": recommendation_dicts(self.recommendations),
            "manifest": self.stats_document["manifest"],
            "judge_runs": list(self.judge_runs),
            "audits": [nested(a) for a in self.audits],
            "calibrations": list(self.calibrations),
            "versus": list(self.versus),
            "since": self.since or {},
            "worst_miss_cases": case_texts(self.listed_cases(), self.cases),
        }
