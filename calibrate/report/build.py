"""Everything the threshold-selection report shows, computed once from a campaign: the statistics and
the recommendations from one bootstrap per metric, the audits asked for, judge-versus-judge matrices,
calibration maps and what the judge runs cost."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from calibrate.analysis.agreement import compute_stats
from calibrate.analysis.calibration import calibration_maps
from calibrate.analysis.metric_comparisons import ProgressCallback
from calibrate.analysis.versus import judge_matrix
from calibrate.base.params import checked
from calibrate.campaign import Campaign, load_campaign
from calibrate.campaign.reference import computed_once, judge_scores
from calibrate.demo import DEMO_AUDIT, DEMO_OUT_OF_SCALE, DEMO_SLICE_KEY, demo_campaign_path
from calibrate.judges.store import STORE_NAME, JudgeStore
from calibrate.judges.versions import find_version
from calibrate.report import write_report
from calibrate.report.documents import ReportDocuments
from calibrate.review.audit import audit_judges
from calibrate.review.fingerprint import latest_fingerprint
from calibrate.review.monitor import NotWatchable, case_times, monitor_judge
from calibrate.stats import N_BOOT


def _rated(campaign: Campaign, metric: str, judge: str) -> bool:
    try:  # current ratings, or a version the judge store keeps (JUDGE@MODEL, JUDGE@RUN_ID)
        find_version(campaign, metric, judge)
    except ValueError:
        return False
    return True


@computed_once()
@checked("n_boot", "seed")
def report_documents(
    campaign: Campaign,
    *,
    by: str | None = None,
    seed: int = 0,
    n_boot: int = N_BOOT,
    audits: Sequence[tuple[str, str]] = (),
    progress: ProgressCallback | None = None,
    current: float | Mapping[str, float] | None = None,
) -> ReportDocuments:
    """The documents of the report, as :func:`~calibrate.report.write_report` takes them.

    Parameters
    ----------
    campaign : Campaign
    by : str, optional
        A ``metadata`` key of the cases to slice every statistic by.
    seed, n_boot : int
        Bootstrap seed and resamples, for the statistics, the recommendations and the audits.
    audits : sequence of (old, new)
        Judge-upgrade audits to add: each pair on every metric both judges rated.
    progress : callable, optional
        ``progress(done, total, label)`` while resampling.
    current : float or dict, optional
        The threshold each judge runs at today (:func:`~calibrate.analysis.agreement.compute_stats`):
        each verdict gives its rates there.

    Returns
    -------
    ReportDocuments
        ``stats``, ``recommendations`` (under each metric's declared rule, from the statistics'
        own bootstrap), ``audits``, ``versus``, ``calibrations``, ``judge_runs``, ``cases`` and
        ``since`` (:func:`since_threshold`).

    Examples
    --------
    >>> import calibrate
    >>> c = calibrate.load_campaign(calibrate.demo_campaign_path())
    >>> docs = report_documents(c, n_boot=100)
    >>> len(docs.recommendations), len(docs.stats.metrics[0].judges)
    (9, 9)
    """
    stats = compute_stats(campaign, by=by, seed=seed, n_boot=n_boot, progress=progress, current=current)
    audit_docs = []
    for old, new in audits:  # every metric both judges rated
        metrics = [m for m in sorted(campaign.metrics) if _rated(campaign, m, old) and _rated(campaign, m, new)]
        if not metrics:
            raise ValueError(f"audit of {new} against {old}: no metric was rated by both judges")
        audit_docs += [  # nested in report.json: the body, without a schema_version of its own
            audit_judges(campaign, metric=m, old=old, new=new, seed=seed, n_boot=n_boot, progress=progress).to_dict(
                schema_version=False
            )
            for m in metrics
        ]
    judge_runs = None
    if campaign.path is not None and (campaign.path / STORE_NAME).is_file():
        store = JudgeStore(campaign.path / STORE_NAME, read_only=True)
        judge_runs = store.summary()
        store.close()
    judged = campaign.ratings.loc[campaign.ratings["rater_kind"] == "judge"]
    versus = [
        judge_matrix(campaign, metric=m)
        for m in sorted(campaign.metrics)
        if judged.loc[judged["metric"] == m, "rater"].nunique() >= 2
    ]
    return ReportDocuments(
        stats,
        stats.recommendations,
        cases=campaign.cases,
        judge_runs=judge_runs or (),
        audits=audit_docs,
        calibrations=calibration_maps(campaign, seed=seed),
        versus=versus,
        since=since_threshold(campaign),
    )


def since_threshold(campaign: Campaign) -> dict[str, Any] | None:
    """The report's "Since the threshold was chosen": a monitor of every judge of every metric when
    cases carry a time (or why one cannot run: ``not_monitored``, each with the ``reason`` that holds for
    any judge, and the judges of each reason together in ``not_watched``), and every declared judge's latest
    fingerprint; None when there is neither.

    Examples
    --------
    >>> import calibrate
    >>> since_threshold(calibrate.load_campaign(calibrate.demo_campaign_path())) is None
    True
    """
    monitors, not_monitored = [], []
    if case_times(campaign):
        for metric in sorted(campaign.metrics):
            for judge in [j.name for j in judge_scores(campaign, metric)]:
                try:
                    doc = monitor_judge(campaign, metric=metric, judge=judge)
                except NotWatchable as exc:
                    not_monitored.append({"metric": metric, "judge": judge, "reason": exc.reason, "message": str(exc)})
                    continue
                except ValueError as exc:
                    not_monitored.append({"metric": metric, "judge": judge, "reason": str(exc), "message": str(exc)})
                    continue
                monitors.append({k: v for k, v in doc.items() if k != "manifest"})
    fingerprints = [
        found | {"judge": name}
        for name in sorted(campaign.judges)
        if (found := latest_fingerprint(campaign, name)) is not None
    ]
    if not monitors and not not_monitored and not fingerprints:
        return None
    grouped: dict[str, list[str]] = {}
    for n in not_monitored:  # one line per reason, with every judge it holds for
        grouped.setdefault(n["reason"], []).append(f"{n['metric']} / {n['judge']}")
    return {
        "monitors": monitors,
        "not_monitored": not_monitored,
        "not_watched": [{"reason": reason, "judges": judges} for reason, judges in grouped.items()],
        "fingerprints": [
            {k: f.get(k) for k in ("judge", "metric", "verdict", "created", "reasons", "threshold", "file")}
            for f in fingerprints
        ],
    }


def build_report(campaign: Campaign, out_dir: str | Path, **options: Any) -> tuple[ReportDocuments, dict[str, Path]]:
    """Compute the report's documents (:func:`report_documents`, with its ``options``) and write
    ``report.html``, ``report.md`` and ``report.json`` into ``out_dir``.

    Returns
    -------
    (ReportDocuments, dict)
        The documents, and ``{"html": path, "md": path, "json": path}``.

    Parameters
    ----------
    campaign : Campaign
    out_dir : str or Path
        Where the report goes (made if missing; earlier files are replaced whole, never half-written).
    **options
        ``by``, ``seed``, ``n_boot``, ``audits``, ``progress`` and ``current``, as :func:`report_documents`
        takes them.

    Examples
    --------
    >>> import calibrate, tempfile
    >>> c = calibrate.load_campaign(calibrate.demo_campaign_path())
    >>> documents, paths = calibrate.build_report(c, tempfile.mkdtemp(), n_boot=0)
    >>> sorted(paths), len(documents.recommendations)
    (['html', 'json', 'md'], 9)
    """
    documents = report_documents(campaign, **options)
    return documents, write_report(documents, out_dir)


@checked("n_boot", "seed")
def demo_report(
    out_dir: str | Path = "calibrate-demo",
    *,
    seed: int = 0,
    n_boot: int = N_BOOT,
    progress: ProgressCallback | None = None,
) -> tuple[ReportDocuments, dict[str, Path]]:
    """The ``calibrate demo`` command: :func:`build_report` on the embedded demo campaign (TREC DL
    2023: NIST assessors and nine LLM judges), sliced by question type, with its judge-upgrade audit.

    Parameters
    ----------
    out_dir : str or Path
        Where the report goes.
    seed, n_boot, progress
        As for :func:`report_documents`.

    Returns
    -------
    (ReportDocuments, dict)
        The documents, and ``{"html": path, "md": path, "json": path}``.

    Examples
    --------
    >>> import calibrate, tempfile
    >>> documents, paths = calibrate.demo_report(tempfile.mkdtemp(), n_boot=0)
    >>> sorted(paths), [(a["old"]["judge"], a["new"]["judge"]) for a in documents.audits]
    (['html', 'json', 'md'], [('RMITIR-llama70B', 'RMITIR-GPT4o')])
    """
    campaign = load_campaign(demo_campaign_path(), out_of_scale=DEMO_OUT_OF_SCALE)
    return build_report(
        campaign, out_dir, by=DEMO_SLICE_KEY, seed=seed, n_boot=n_boot, audits=(DEMO_AUDIT,), progress=progress
    )
