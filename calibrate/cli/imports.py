"""Ratings other tools hold: import deepeval / ragas / mlflow / phoenix."""

from __future__ import annotations

import functools

import click

from calibrate.base.errors import CampaignError
from calibrate.cli.console import fail, json_option, out, print_json, styled

SHOWN = 3


@click.group("import")
def import_group() -> None:
    """Bring the cases, human labels and judge scores another tool holds into a campaign.

    Each source's metric names are matched to the campaign's (case and punctuation aside; --map for
    the others), raters keep the source's ids, and each rating keeps its source and id. Importing again
    changes nothing; a changed value becomes a new revision (every revision is kept in imports.sqlite);
    --dry-run writes nothing.
    """


def import_options(command):
    """The options every import takes: --map, --dry-run, --json."""
    @click.option("--map", "maps", multiple=True, metavar="NAME=METRIC",
                  help="Import the source's metric NAME as the campaign's METRIC (repeatable).")
    @click.option("--dry-run", is_flag=True, help="Check everything and say what the import would do; write nothing.")
    @json_option
    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        return command(*args, **kwargs)
    return wrapper


def run_import(campaign: str, maps: tuple[str, ...], as_json: bool, read, **options) -> None:
    """Match the --map options to the campaign, call the import, print what it did."""
    from calibrate.campaign import load_campaign
    from calibrate.imports.apply import import_batch
    from calibrate.imports.records import parse_map

    try:
        metrics = list(load_campaign(campaign).metrics)   # the campaign first: a mistyped one asks no server
        mapping = parse_map(maps, metrics) if maps else {}
        doc = import_batch(campaign, read(), metric_map=mapping, **options)
    except (CampaignError, ValueError) as exc:
        fail(exc)
    if as_json:
        print_json(doc)
        return
    print_import(doc)


def print_import(doc: dict) -> None:
    """What an import did (or would do), in a few lines."""
    c, r = doc["cases"], doc["ratings"]
    head = "dry run, nothing written: would import" if doc["dry_run"] else "imported"
    out.print(f"{head} from {doc['source']} ({doc['kind']})")
    out.print(f"  cases: {c['added']} added, {c['unchanged']} already there"
              + (f", {c['completed']} completed with fields the source added since" if c["completed"] else ""))
    out.print(f"  ratings: {r['new']} new, {r['changed']} changed (a new revision each), {r['unchanged']} unchanged"
              + (f", {r['restored']} back after a withdrawal" if r["restored"] else ""))
    for metric, kinds in sorted(doc["by_metric"].items()):
        out.print(f"    {metric}: {kinds['human']} human, {kinds['judge']} judge rating(s)")
    for name, rater in doc["raters"].items():
        model = f", model {rater['model']}" if rater.get("model") and rater["model"] != name else ""
        out.print(f"    {rater['kind']} {name}{model}: {rater['ratings']} rating(s) of {', '.join(rater['metrics'])}")
    if r["withdrawn"]:
        out.print(f"  withdrawn: {r['withdrawn']} rating(s) imported before are no longer in the source (deleted "
                  "there): out of the statistics, kept in the history")
    if r["absent_kept"]:
        out.print(f"  kept: {r['absent_kept']} rating(s) imported before from this tool are not in this source; a "
                  "file may hold part of what the tool has, so they stay")
    skipped = doc["skipped_by_reason"]
    if skipped:
        out.print(styled("yellow", "  skipped ", f"{sum(g['count'] for g in skipped)} item(s):"))
        for group in skipped:
            examples = ", ".join(group["examples"][:SHOWN]) + (" ..." if group["count"] > SHOWN else "")
            out.print(f"    {group['count']} × {group['reason']} ({examples})")


@import_group.command("deepeval")
@click.argument("campaign", type=click.Path(file_okay=False))
@click.argument("test_run", type=click.Path(dir_okay=False, exists=True))
@click.option("--rater", help="The judge's name in the campaign, instead of DeepEval's evaluation model.")
@import_options
def import_deepeval(campaign, test_run, rater, maps, dry_run, as_json) -> None:
    """A DeepEval test run (test_run_*.json in DEEPEVAL_RESULTS_FOLDER, or .deepeval/.latest_run_full.json):
    each metric's scores become judge ratings by the evaluation model, with its threshold."""
    from calibrate.imports.deepeval_runs import read_deepeval_run

    run_import(campaign, maps, as_json, lambda: read_deepeval_run(test_run), rater=rater, dry_run=dry_run)


@import_group.command("ragas")
@click.argument("campaign", type=click.Path(file_okay=False))
@click.argument("result", type=click.Path(dir_okay=False, exists=True))
@click.option("--rater", required=True, help="The judge's name in the campaign (RAGAS does not record it).")
@click.option("--model", help="The judge's model, recorded with each rating (and its family told from it).")
@import_options
def import_ragas(campaign, result, rater, model, maps, dry_run, as_json) -> None:
    """A RAGAS result (EvaluationResult.to_pandas() saved as CSV or Parquet): each metric column becomes
    judge ratings; a NaN is a failed rating."""
    from calibrate.imports.ragas_results import read_ragas_result

    run_import(campaign, maps, as_json, lambda: read_ragas_result(result, rater=rater, model=model), dry_run=dry_run)


@import_group.command("mlflow")
@click.argument("campaign", type=click.Path(file_okay=False))
@click.option("--tracking-uri", envvar="MLFLOW_TRACKING_URI", required=True,
              help="The MLflow tracking server (default: $MLFLOW_TRACKING_URI).")
@click.option("--experiment", required=True, help="The experiment whose traces to import.")
@import_options
def import_mlflow(campaign, tracking_uri, experiment, maps, dry_run, as_json) -> None:
    """An MLflow experiment: each trace a case (request, response, retrieved documents, expected response),
    each HUMAN feedback a human rating, each LLM_JUDGE or CODE feedback a judge rating."""
    from calibrate.imports.mlflow_traces import MlflowError, read_mlflow_experiment

    try:
        run_import(campaign, maps, as_json, lambda: read_mlflow_experiment(tracking_uri, experiment), dry_run=dry_run)
    except MlflowError as exc:
        fail(exc)


@import_group.command("phoenix")
@click.argument("campaign", type=click.Path(file_okay=False))
@click.option("--endpoint", envvar="PHOENIX_COLLECTOR_ENDPOINT", required=True,
              help="The Phoenix server (default: $PHOENIX_COLLECTOR_ENDPOINT).")
@click.option("--project", required=True, help="The project whose traces to import.")
@import_options
def import_phoenix(campaign, endpoint, project, maps, dry_run, as_json) -> None:
    """A Phoenix project: each trace a case (its root span's input and output, its retriever's documents),
    each HUMAN annotation a human rating, each LLM or CODE annotation a judge rating."""
    from calibrate.imports.phoenix_spans import PhoenixError, read_phoenix_project

    try:
        run_import(campaign, maps, as_json, lambda: read_phoenix_project(endpoint, project), dry_run=dry_run)
    except PhoenixError as exc:
        fail(exc)


#: the commands this module adds to ``calibrate``
COMMANDS = [import_group]
