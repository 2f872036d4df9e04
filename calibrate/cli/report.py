"""The threshold-selection report: report, demo, export mlflow."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from calibrate.cli.analysis import current_option, print_recommendations, print_stats, print_verdict
from calibrate.cli.console import (
    err,
    fail,
    hold_outputs,
    json_option,
    load,
    n_boot_option,
    out,
    out_of_scale_option,
    print_json,
    progress,
    seed_option,
    styled,
    with_snippets,
)
from calibrate.cli.review import print_audit

if TYPE_CHECKING:
    from calibrate.report.documents import ReportDocuments


def _print_report(docs: ReportDocuments, paths: dict) -> None:
    """What ``report`` and ``demo`` print of the documents they wrote: each metric's verdict, statistics
    and warnings, the recommendations, the audits, and the files."""
    cases, manifest = docs.cases, docs.manifest
    for metric in docs.stats_document["metrics"]:  # the statistics as the stats command prints them
        print_verdict(docs.stats.metric(metric["metric"]).verdict)
        print_stats(metric, manifest)
        for w in metric["warnings"]:
            out.print(styled("yellow", "warning: ", with_snippets(w, cases)))
    print_recommendations(docs.recommendations, manifest, cases)
    for a in docs.audits:
        print_audit(dict(a))
    for path in paths.values():
        out.print(f"wrote {path}")


@click.command()
@click.argument("campaign", type=click.Path(file_okay=False))
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default="calibrate-report", show_default=True)
@click.option("--by", help="A metadata key of the cases to slice by.")
@click.option(
    "--audit",
    "audits",
    nargs=2,
    multiple=True,
    metavar="OLD NEW",
    help="Add a judge-upgrade audit of NEW against OLD (margin 0.05 on Spearman's rho; see "
    "calibrate audit) for every metric both rated; repeatable.",
)
@seed_option
@n_boot_option
@current_option
@out_of_scale_option
def report(campaign, out_dir, by, audits, seed, n_boot, current, out_of_scale) -> None:
    """Write the threshold-selection report: report.html, report.md and report.json."""
    # a report written into the campaign folder is a write of it: held, like every other; a --out under
    # the campaign that a planted link leads elsewhere is refused
    with hold_outputs(campaign, "calibrate report", out=out_dir):
        from calibrate.report.build import build_report

        c = load(campaign, out_of_scale)
        try:
            with progress() as bar:
                docs, paths = build_report(
                    c, Path(out_dir), by=by, seed=seed, n_boot=n_boot, audits=audits, progress=bar, current=current
                )
        except ValueError as exc:
            fail(exc)
    _print_report(docs, paths)


@click.command()
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default="calibrate-demo", show_default=True)
@seed_option
@n_boot_option
def demo(out_dir, seed, n_boot) -> None:
    """The whole job on the embedded TREC DL 2023 campaign (NIST assessors vs nine LLM judges), offline."""
    from calibrate.demo import DEMO_OUT_OF_SCALE, DEMO_SLICE_KEY, demo_campaign_path
    from calibrate.report.build import demo_report

    out.print(
        f"demo campaign: {demo_campaign_path()} (out-of-scale values: {DEMO_OUT_OF_SCALE}; slices by {DEMO_SLICE_KEY})"
    )
    with progress() as bar:
        docs, paths = demo_report(Path(out_dir), seed=seed, n_boot=n_boot, progress=bar)
    _print_report(docs, paths)


@click.group("export")
def export_group() -> None:
    """Log a campaign's statistics, thresholds and report where a team already looks."""


@export_group.command("mlflow")
@click.argument("campaign", type=click.Path(file_okay=False))
@click.option(
    "--tracking-uri",
    envvar="MLFLOW_TRACKING_URI",
    required=True,
    help="The MLflow tracking server (default: $MLFLOW_TRACKING_URI).",
)
@click.option("--experiment", required=True, help="The experiment to log the run in (made when missing).")
@click.option("--run-name", help="The run's name (default: calibrate CAMPAIGN).")
@click.option("--by", help="A metadata key of the cases to slice the report by.")
@seed_option
@n_boot_option
@out_of_scale_option
@json_option
def export_mlflow(campaign, tracking_uri, experiment, run_name, by, seed, n_boot, out_of_scale, as_json) -> None:
    """One MLflow run: agreement statistics and recommended thresholds as metrics (METRIC/JUDGE/STATISTIC),
    the rules and settings as params, verdicts as tags, the report as artifacts."""
    from calibrate.imports.mlflow_traces import MlflowError
    from calibrate.report.mlflow_run import export_to_mlflow

    c = load(campaign, out_of_scale)
    try:
        with err.status("computing and logging the run"):
            doc = export_to_mlflow(c, tracking_uri, experiment, run_name=run_name, seed=seed, n_boot=n_boot, by=by)
    except (MlflowError, ValueError) as exc:
        fail(exc)
    if as_json:
        print_json(doc)
        return
    out.print(
        f"logged run {doc['run_id']} in experiment {doc['experiment_id']} at {doc['tracking_uri']}: "
        f"{doc['metrics']} metric(s), {doc['params']} param(s), {doc['tags']} tag(s)"
        + (f", artifacts {', '.join(doc['artifacts'])}" if doc["artifacts"] else "")
    )
    if doc["artifacts_note"]:
        out.print(styled("yellow", "note: ", doc["artifacts_note"]))


#: the commands this module adds to ``calibrate``
COMMANDS = [report, demo, export_group]
