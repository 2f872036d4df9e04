"""Where cases come from: cases import, collect."""

from __future__ import annotations

import sys
from contextlib import nullcontext

import click

from calibrate.base.errors import CampaignError
from calibrate.cli.console import (
    FiniteRange,
    command_line_text,
    err,
    fail,
    hold,
    json_option,
    out,
    print_json,
    progress,
    styled,
    with_snippets,
)


@click.group()
def cases() -> None:
    """The campaign's cases (cases.jsonl)."""


@cases.command("import")
@click.argument("campaign", type=click.Path(file_okay=False))
@click.argument("source_file", type=click.Path(dir_okay=False, exists=True))
@click.option(
    "--source",
    type=click.Choice(["auto", "deepeval", "ragas"]),
    default="auto",
    show_default=True,
    help="The library that wrote the file (auto: from its field names).",
)
@click.option(
    "--list-separator",
    default="|",
    show_default=True,
    help="How DeepEval's CSV and JSONL files join the chunks of a context.",
)
@click.option(
    "--id-from",
    metavar="FIELD",
    help="The field holding each case's id: a field of the records (name, ticket_id) or a key of an "
    "object field (additional_metadata.ticket) [default: case_id, id or name, else a hash of the "
    "case's content].",
)
def cases_import(campaign, source_file, source, list_separator, id_from) -> None:
    """Add the cases of a DeepEval dataset (goldens / test cases) or a RAGAS dataset to cases.jsonl."""
    from calibrate.cases.datasets import import_cases, read_cases_file

    try:
        counts = import_cases(campaign, source_file, source=source, list_separator=list_separator, id_from=id_from)
    except (CampaignError, ValueError) as exc:
        fail(exc)
    out.print(f"{counts['added']} case(s) added to {counts['cases_file']}, {counts['unchanged']} already there")
    cases = read_cases_file(campaign) if counts["warnings"] else {}
    for warning in counts["warnings"]:
        out.print(styled("yellow", "warning: ", with_snippets(command_line_text(warning), cases)), soft_wrap=True)


@click.command("collect")
@click.argument("campaign", type=click.Path(file_okay=False, exists=True))
@click.option(
    "--goldens",
    type=click.Path(dir_okay=False, exists=True),
    required=True,
    help="The questions: JSONL, CSV or a DeepEval goldens file (input, optional expected_output, metadata).",
)
@click.option("--refresh", is_flag=True, help="Ask again for every golden (the earlier replies are kept as a run).")
@click.option(
    "--dry-run",
    is_flag=True,
    help="Show the first rendered request and, for one golden, the reply and "
    "what the contract extracts; store nothing.",
)
@click.option(
    "--concurrency", type=click.IntRange(min=1), default=8, show_default=True, help="Requests in flight at once."
)
@click.option(
    "--retries",
    type=click.IntRange(min=0),
    default=4,
    show_default=True,
    help="Retries of a request after a 429, a 5xx, a timeout or a dropped connection.",
)
@click.option("--rpm", type=FiniteRange(min=0, min_open=True), help="Requests per minute, at most.")
@json_option
def collect_command(campaign, goldens, refresh, dry_run, concurrency, retries, rpm, as_json) -> None:
    """Send the goldens to the RAG service of [service] and keep its answers and retrieved chunks as the
    campaign's cases."""
    from calibrate.campaign.service import load_contract
    from calibrate.cases.collect import collect
    from calibrate.cases.collect import dry_run as check_contract
    from calibrate.cases.datasets import read_external_cases
    from calibrate.judges.calls import CallPolicy

    with nullcontext() if dry_run else hold(campaign, "calibrate collect"):  # the contract read under it too
        try:
            contract = load_contract(campaign)
            golden_cases = read_external_cases(goldens)
        except CampaignError as exc:
            err.print(str(exc))
            sys.exit(2)
        if not golden_cases:
            fail(f"{goldens}: no golden")
        try:
            if dry_run:
                doc = check_contract(contract, golden_cases[0])
            else:
                with progress(not as_json) as bar:
                    doc = collect(
                        campaign,
                        golden_cases,
                        contract=contract,
                        refresh=refresh,
                        policy=CallPolicy(
                            concurrency=concurrency,
                            timeout_s=contract.timeout_s,
                            retries=retries,
                            requests_per_minute=rpm,
                        ),
                        progress=bar,
                    )
        except (ValueError, CampaignError) as exc:
            fail(exc)
    if as_json or dry_run:
        print_json(doc)
        if dry_run and "error" in doc:
            sys.exit(1)
        return
    out.print(
        f"asked {doc['asked']} golden(s): {doc['collected']} collected, {doc['failed']} failed; "
        f"{doc['already_collected']} already collected; {doc['cases']} case(s) in cases.jsonl "
        f"(run {doc['run_id']})"
    )
    for e in doc["errors"][:20]:
        out.print(styled("red", "  error ", str(e["error"])))
    if len(doc["errors"]) > 20:
        out.print(f"  ... and {len(doc['errors']) - 20} more (calibrate collect --json lists them all)")


#: the commands this module adds to ``calibrate``
COMMANDS = [cases, collect_command]
