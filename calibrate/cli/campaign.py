"""Starting and checking a campaign folder: init, validate."""

from __future__ import annotations

import click
from rich.table import Table

from calibrate.base.errors import CampaignError
from calibrate.cli.console import (
    case_label,
    fail,
    json_option,
    load,
    metric_option,
    out,
    out_of_scale_option,
    print_json,
    styled,
    with_snippets,
)


@click.command()
@click.argument("campaign", type=click.Path(file_okay=False))
@out_of_scale_option
@json_option
def validate(campaign: str, out_of_scale: str, as_json: bool) -> None:
    """Check a campaign folder; list every problem with its file, line and field."""
    from calibrate.campaign.summary import validate_campaign

    c = load(campaign, out_of_scale)
    doc = validate_campaign(c)
    if as_json:
        print_json(doc)
        return
    table = Table(title=f"campaign {doc['campaign']}: valid")
    for col in (
        "metric",
        "scale",
        "human ratings",
        "judge ratings",
        "failed",
        "cases with a human label",
        "judges with ratings",
        "[judges] declared",
    ):
        table.add_column(col)
    for m in doc["metrics"]:
        table.add_row(
            m["metric"],
            m["scale"],
            str(m["human_ratings"]),
            str(m["judge_ratings"]),
            str(m["failed"]),
            str(m["labelled_cases"]),
            str(m["judges"]),
            str(len(m["judges_declared"])),
        )
    out.print(table)
    out.print(f"{doc['cases'] if doc['cases'] is not None else 'no'} cases in cases.jsonl; data {doc['data_hash']}")
    for j in doc["judges"]:  # whether each of [judges] can run here: no model is called
        head = (
            f"judge {j['judge']} ({j['library']} {j['metric']} into {j['into']}, model {j['model']}; reads "
            f"{', '.join(j['reads'])}; {j['ratings']} rating(s) so far)"
        )
        out.print(
            styled("green", "ready", f": {head}: {j['cases_ready']} case(s) to score")
            if j["ready"]
            else styled("yellow", "not ready", f": {head}"),
            soft_wrap=True,
        )
        for problem in j["problems"]:
            out.print(f"  - {with_snippets(problem, c.cases)}", soft_wrap=True)
    if not doc["judges"]:
        out.print(
            "no [judges] in campaign.toml: calibrate judge has nothing to run (ratings can come from files, "
            "Label Studio or calibrate import)"
        )
    for row in doc["provenance"]:
        names = ", ".join(row["rater_names"]) + (" ..." if row["raters"] > len(row["rater_names"]) else "")
        failed = f", {row['failed']} failed" if row["failed"] else ""
        out.print(
            f"from {row['origin']}: {row['ratings']} {row['kind']} rating(s) by {row['raters']} rater(s) "
            f"({names}){failed}"
        )
    for a in doc["adjustments"]:
        out.print(
            f"{a['action']}: {a['file']} line {a['line']}: {a['rater']} rated case {case_label(a['case_id'], c.cases)} "
            f"{a['value']:g}" + (f" -> {a['new_value']:g}" if a["new_value"] is not None else "")
        )
    if doc["set_aside_note"]:
        out.print("note: " + doc["set_aside_note"], soft_wrap=True)
    groups: dict[tuple, int] = {}
    for s in doc["set_aside"]:  # every rating set aside, counted by file, reason, metric and rater
        key = (s["file"].rsplit("/", 1)[-1], s["why"], s["metric"], s["rater"])
        groups[key] = groups.get(key, 0) + 1
    whys = {
        "case": "its case left cases.jsonl",
        "metric": "metric no longer declared",
        "judge": "judge no longer declared",
    }
    for (file, why, metric, rater), count in sorted(groups.items()):
        out.print(f"set aside: {file}: {count} rating(s) of metric {metric} by {rater} ({whys[why]})", soft_wrap=True)
    from calibrate.cli.judges import print_versions_overview

    print_versions_overview(c)  # earlier judge versions the store keeps, by name (calibrate audit)


@click.command()
@click.argument("folder", type=click.Path(file_okay=False))
@metric_option(
    multiple=True,
    required=True,
    metavar="NAME[:SCALE[:VALUES]]",
    help="A metric (repeatable): binary by default; relevance:ordinal:0,1,2,3 lists an ordinal "
    "metric's levels, helpfulness:continuous:1,5 a continuous one's range.",
)
@click.option("--name", help="The campaign's name [default: the folder's].")
def init(folder: str, metrics: tuple[str, ...], name: str | None) -> None:
    """Start a campaign: a new FOLDER with a commented campaign.toml for its metrics (a folder that
    exists is refused)."""
    from calibrate.campaign.starter import init_campaign

    try:
        path = init_campaign(folder, list(metrics), name=name)
    except (CampaignError, ValueError) as exc:
        fail(exc)
    out.print(
        f"wrote {path} (check the lines marked CHECK) and an empty {path.parent / 'ratings.csv'}; next: "
        f"calibrate cases import {folder} FILE, or calibrate collect {folder} --goldens FILE"
    )


#: the commands this module adds to ``calibrate``
COMMANDS = [init, validate]
