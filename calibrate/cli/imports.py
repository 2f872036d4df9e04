"""Ratings other tools hold: import deepeval / ragas / mlflow / phoenix / promptfoo / inspect / langfuse / langsmith."""

from __future__ import annotations

import functools
from functools import partial

import click

from calibrate.base.errors import CampaignError
from calibrate.cli.console import case_label, fail, json_option, out, print_json, styled

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

    @click.option(
        "--map",
        "maps",
        multiple=True,
        metavar="NAME=METRIC",
        help="Import the source's metric NAME as the campaign's METRIC (repeatable).",
    )
    @click.option("--dry-run", is_flag=True, help="Check everything and say what the import would do; write nothing.")
    @json_option
    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        return command(*args, **kwargs)

    return wrapper


def run_import(campaign: str, maps: tuple[str, ...], as_json: bool, importer) -> None:
    """Match the --map options to the campaign, call the source's import function (``importer``, the
    library's own with the command's other options, given ``metric_map=``), print what it did. The
    campaign is loaded once, by the import (as it would leave it): here only campaign.toml is read."""
    from calibrate.imports.apply import declared_metrics
    from calibrate.imports.records import parse_map

    try:
        metrics = declared_metrics(campaign)  # the campaign first: a mistyped one asks no server
        mapping = parse_map(maps, metrics) if maps else {}
        doc = importer(metric_map=mapping)
    except (CampaignError, ValueError) as exc:
        fail(exc)
    if as_json:
        print_json(doc)
        return
    if doc.get("withdrawn"):  # the cases are read only to label the withdrawn ratings' cases
        from calibrate.cases.datasets import read_cases_file

        print_import(doc, read_cases_file(campaign))
    else:
        print_import(doc)


def print_import(doc: dict, cases: dict[str, dict] | None = None) -> None:
    """What an import did (or would do), in a few lines."""
    c, r = doc["cases"], doc["ratings"]
    if doc.get("unchanged_since"):
        out.print(
            f"unchanged, nothing to do: {doc['source']} ({doc['kind']}) was imported as it is by "
            f"{doc['unchanged_since']}, and the campaign is as that import left it"
        )
        out.print(f"  cases: {c['unchanged']} already there; ratings: {r['unchanged']} unchanged")
        return
    head = "dry run, nothing written: would import" if doc["dry_run"] else "imported"
    out.print(f"{head} from {doc['source']} ({doc['kind']})")
    out.print(
        f"  cases: {c['added']} added, {c['unchanged']} already there"
        + (f", {c['completed']} completed with fields the source added since" if c["completed"] else "")
    )
    out.print(
        f"  ratings: {r['new']} new, {r['changed']} changed (a new revision each), {r['unchanged']} unchanged"
        + (f", {r['restored']} back after a withdrawal" if r["restored"] else "")
    )
    for metric, kinds in sorted(doc["by_metric"].items()):
        out.print(f"    {metric}: {kinds['human']} human, {kinds['judge']} judge rating(s)")
    for name, rater in doc["raters"].items():
        model = f", model {rater['model']}" if rater.get("model") and rater["model"] != name else ""
        out.print(f"    {rater['kind']} {name}{model}: {rater['ratings']} rating(s) of {', '.join(rater['metrics'])}")
    if r["withdrawn"]:
        out.print(
            f"  withdrawn: {r['withdrawn']} rating(s) imported before are no longer in the source (deleted "
            "there): out of the statistics, kept in the history; calibrate import undo-withdrawals "
            f"{doc['import_id']} brings them back"
        )
        for w in doc.get("withdrawn", [])[: SHOWN * 3]:
            out.print(f"    {w['rater']} on {w['metric']} of case {case_label(w['case_id'], cases)} ({w['source_id']})")
        if len(doc.get("withdrawn", [])) > SHOWN * 3:
            out.print(f"    ... and {len(doc['withdrawn']) - SHOWN * 3} more (--json lists them all)")
    if r.get("absent_held"):
        out.print(
            styled(
                "yellow",
                "  kept: ",
                f"{r['absent_held']} rating(s) imported before are not in this read "
                f"of the source: more than the {doc.get('withdraw_limit')} a read withdraws on its own (a "
                "partial reply?), so none was withdrawn; if they were deleted there, import again with "
                "--allow-withdraw",
            )
        )
    if doc.get("set_aside", {}).get("ratings"):
        out.print(
            f"  set aside: {doc['set_aside']['ratings']} rating(s) of {', '.join(doc['set_aside']['metrics'])}, "
            "no longer declared in campaign.toml: stored, left out of the statistics until it is declared again"
        )
    if r["absent_kept"]:
        out.print(
            f"  kept: {r['absent_kept']} rating(s) imported before from this tool are not in this source; a "
            "file may hold part of what the tool has, so they stay"
        )
    skipped = doc["skipped_by_reason"]
    if skipped:
        out.print(styled("yellow", "  skipped ", f"{sum(g['count'] for g in skipped)} item(s):"))
        for group in skipped:
            examples = ", ".join(group["examples"][:SHOWN]) + (" ..." if group["count"] > SHOWN else "")
            out.print(f"    {group['count']} × {group['reason']} ({examples})")


@import_group.command("undo-withdrawals")
@click.argument("campaign", type=click.Path(file_okay=False))
@click.argument("import_id")
@json_option
def import_undo_withdrawals(campaign, import_id, as_json) -> None:
    """Bring back the ratings the import IMPORT_ID withdrew as deleted in their source (each appended
    again as it was; the withdrawal stays in the history)."""
    from calibrate.imports.apply import undo_withdrawals

    try:
        doc = undo_withdrawals(campaign, import_id)
    except (CampaignError, ValueError) as exc:
        fail(exc)
    if as_json:
        print_json(doc)
        return
    out.print(f"brought back {doc['reinstated']} rating(s) that import {import_id} withdrew")


@import_group.command("deepeval")
@click.argument("campaign", type=click.Path(file_okay=False))
@click.argument("test_run", type=click.Path(dir_okay=False, exists=True))
@click.option("--rater", help="The judge's name in the campaign, instead of DeepEval's evaluation model.")
@import_options
def import_deepeval(campaign, test_run, rater, maps, dry_run, as_json) -> None:
    """A DeepEval test run (test_run_*.json in DEEPEVAL_RESULTS_FOLDER, or .deepeval/.latest_run_full.json):
    each metric's scores become judge ratings by the evaluation model, with its threshold."""
    from calibrate.imports.deepeval_runs import import_deepeval_run

    run_import(campaign, maps, as_json, partial(import_deepeval_run, campaign, test_run, rater=rater, dry_run=dry_run))


@import_group.command("ragas")
@click.argument("campaign", type=click.Path(file_okay=False))
@click.argument("result", type=click.Path(dir_okay=False, exists=True))
@click.option("--rater", required=True, help="The judge's name in the campaign (RAGAS does not record it).")
@click.option("--model", help="The judge's model, recorded with each rating (and its family told from it).")
@import_options
def import_ragas(campaign, result, rater, model, maps, dry_run, as_json) -> None:
    """A RAGAS result (EvaluationResult.to_pandas() saved as CSV or Parquet): each metric column becomes
    judge ratings; a NaN is a failed rating."""
    from calibrate.imports.ragas_results import import_ragas_result

    run_import(
        campaign,
        maps,
        as_json,
        partial(import_ragas_result, campaign, result, rater=rater, model=model, dry_run=dry_run),
    )


@import_group.command("mlflow")
@click.argument("campaign", type=click.Path(file_okay=False))
@click.option(
    "--tracking-uri",
    envvar="MLFLOW_TRACKING_URI",
    required=True,
    help="The MLflow tracking server (default: $MLFLOW_TRACKING_URI).",
)
@click.option("--experiment", required=True, help="The experiment whose traces to import.")
@click.option(
    "--allow-withdraw",
    is_flag=True,
    help="Withdraw every rating the experiment no longer holds, however "
    "many (without it, at most 5 or a tenth: a partial reply is no "
    "deletion).",
)
@click.option(
    "--rater", help="The judge's name in the campaign, for an experiment of one judge (instead of its source id)."
)
@import_options
def import_mlflow(campaign, tracking_uri, experiment, allow_withdraw, rater, maps, dry_run, as_json) -> None:
    """An MLflow experiment: each trace a case (request, response, retrieved documents, expected response),
    each HUMAN feedback a human rating, each LLM_JUDGE or CODE feedback a judge rating."""
    from calibrate.imports.mlflow_traces import MlflowError, import_mlflow

    try:
        run_import(
            campaign,
            maps,
            as_json,
            partial(
                import_mlflow,
                campaign,
                tracking_uri,
                experiment,
                dry_run=dry_run,
                allow_withdraw=allow_withdraw,
                rater=rater,
            ),
        )
    except MlflowError as exc:
        fail(exc)


@import_group.command("phoenix")
@click.argument("campaign", type=click.Path(file_okay=False))
@click.option(
    "--endpoint",
    envvar="PHOENIX_COLLECTOR_ENDPOINT",
    required=True,
    help="The Phoenix server (default: $PHOENIX_COLLECTOR_ENDPOINT).",
)
@click.option("--project", required=True, help="The project whose traces to import.")
@click.option(
    "--allow-withdraw",
    is_flag=True,
    help="Withdraw every rating the project no longer holds, however "
    "many (without it, at most 5 or a tenth: a partial reply is no "
    "deletion).",
)
@click.option(
    "--rater", help="The judge's name in the campaign, for a project of one judge (instead of its identifier or model)."
)
@import_options
def import_phoenix(campaign, endpoint, project, allow_withdraw, rater, maps, dry_run, as_json) -> None:
    """A Phoenix project: each trace a case (its root span's input and output, its retriever's documents),
    each HUMAN annotation a human rating, each LLM or CODE annotation a judge rating."""
    from calibrate.imports.phoenix_spans import PhoenixError, import_phoenix

    try:
        run_import(
            campaign,
            maps,
            as_json,
            partial(
                import_phoenix, campaign, endpoint, project, dry_run=dry_run, allow_withdraw=allow_withdraw, rater=rater
            ),
        )
    except PhoenixError as exc:
        fail(exc)


@import_group.command("promptfoo")
@click.argument("campaign", type=click.Path(file_okay=False))
@click.argument("results", type=click.Path(dir_okay=False, exists=True))
@click.option(
    "--input-var",
    help="The test var holding the question (default: question, query, input, ... or the "
    "only var; else the rendered prompt).",
)
@click.option("--context-var", help="The test var holding the retrieved context (default: context, contexts, ...).")
@click.option(
    "--expected-var",
    help="The test var holding the expected answer (default: expected_output, reference, expected, ...).",
)
@click.option(
    "--human-rater",
    default="promptfoo-viewer",
    show_default=True,
    help="Whoever rated in promptfoo's viewer (promptfoo does not record it).",
)
@click.option("--rater", help="The judge's name in the campaign, for a file whose grader promptfoo chose by itself.")
@import_options
def import_promptfoo(
    campaign, results, input_var, context_var, expected_var, human_rater, rater, maps, dry_run, as_json
) -> None:
    """A promptfoo eval (promptfoo eval -o results.json, or promptfoo export eval ID): each result a case,
    each model-graded assertion (llm-rubric, g-eval, ...) a judge rating by its grader, each manual
    rating of the viewer a human rating of the metric 'human' (--map human=METRIC), other assertions
    judge ratings by code (promptfoo:TYPE)."""
    from calibrate.imports.promptfoo_results import import_promptfoo

    run_import(
        campaign,
        maps,
        as_json,
        partial(
            import_promptfoo,
            campaign,
            results,
            input_var=input_var,
            context_var=context_var,
            expected_var=expected_var,
            human_rater=human_rater,
            rater=rater,
            dry_run=dry_run,
        ),
    )


@import_group.command("inspect")
@click.argument("campaign", type=click.Path(file_okay=False))
@click.argument("log", type=click.Path(dir_okay=False, exists=True))
@click.option(
    "--context-key",
    help="The sample metadata key holding the retrieved context (default: retrieval_context, contexts, context, ...).",
)
@click.option("--rater", help="The judge's name in the campaign, for a log of one grader.")
@import_options
def import_inspect(campaign, log, context_key, rater, maps, dry_run, as_json) -> None:
    """An Inspect AI eval log (.eval or .json): each sample a case, each score a judge rating by its
    scorer's grader model (a scorer without one: inspect:SCORER), each score edit a human rating by its
    author. Metrics are the scorers' names (--map model_graded_qa=METRIC)."""
    from calibrate.imports.inspect_logs import import_inspect

    run_import(
        campaign,
        maps,
        as_json,
        partial(import_inspect, campaign, log, context_key=context_key, rater=rater, dry_run=dry_run),
    )


API_KIND = click.Choice(["human", "judge"])


@import_group.command("langfuse")
@click.argument("campaign", type=click.Path(file_okay=False))
@click.option(
    "--traces",
    required=True,
    type=click.Path(dir_okay=False, exists=True),
    help="Observations (v2 API) or traces saved from Langfuse's API, as JSON or JSON Lines.",
)
@click.option(
    "--scores",
    type=click.Path(dir_okay=False, exists=True),
    help="Scores (v3 or v2 API) saved as JSON or JSON Lines (default: those the traces embed).",
)
@click.option(
    "--api-scores",
    type=API_KIND,
    help="Import the scores of source API as human or judge ratings "
    "(skipped otherwise: they are whatever an application sent).",
)
@click.option("--rater", help="The judge's name in the campaign, for files of one judge.")
@import_options
def import_langfuse(campaign, traces, scores, api_scores, rater, maps, dry_run, as_json) -> None:
    """Langfuse traces and scores saved from its API: each trace a case, each ANNOTATION score a human
    rating by its author, each EVAL score a judge rating (API scores as --api-scores says)."""
    from calibrate.imports.langfuse_scores import import_langfuse

    run_import(
        campaign,
        maps,
        as_json,
        partial(import_langfuse, campaign, traces, scores, api_scores=api_scores, rater=rater, dry_run=dry_run),
    )


@import_group.command("langsmith")
@click.argument("campaign", type=click.Path(file_okay=False))
@click.option(
    "--runs",
    required=True,
    type=click.Path(dir_okay=False, exists=True),
    help="Runs saved from Client.list_runs, as JSON or JSON Lines.",
)
@click.option(
    "--feedback",
    required=True,
    type=click.Path(dir_okay=False, exists=True),
    help="Feedback saved from Client.list_feedback, as JSON or JSON Lines.",
)
@click.option(
    "--examples",
    type=click.Path(dir_okay=False, exists=True),
    help="The dataset's examples (Client.list_examples): their outputs are the expected outputs.",
)
@click.option(
    "--api-feedback",
    type=API_KIND,
    help="Import feedback of source type api as human or judge ratings "
    "(skipped otherwise: it is whatever an application sent).",
)
@click.option("--rater", help="The judge's name in the campaign, for files of one judge.")
@import_options
def import_langsmith(campaign, runs, feedback, examples, api_feedback, rater, maps, dry_run, as_json) -> None:
    """LangSmith runs and feedback saved from its SDK: each root run a case, feedback from the app (annotation
    queues) a human rating, from a model or online evaluator a judge rating (api feedback as --api-feedback says)."""
    from calibrate.imports.langsmith_feedback import import_langsmith

    run_import(
        campaign,
        maps,
        as_json,
        partial(
            import_langsmith,
            campaign,
            runs,
            feedback,
            examples=examples,
            api_feedback=api_feedback,
            rater=rater,
            dry_run=dry_run,
        ),
    )


#: the commands this module adds to ``calibrate``
COMMANDS = [import_group]
