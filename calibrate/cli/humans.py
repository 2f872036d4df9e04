"""Human labels: labelstudio push / pull, adjudicate."""

from __future__ import annotations

from contextlib import nullcontext

import click
from rich.table import Table

from calibrate.base.errors import CampaignError
from calibrate.cli.console import (
    FiniteRange,
    case_label,
    fail,
    hold_outputs,
    json_option,
    load,
    metric_option,
    out,
    out_of_scale_option,
    print_json,
    styled,
    writing,
)


@click.command()
@click.argument("campaign", type=click.Path(file_okay=False))
@metric_option()
@click.option(
    "--template",
    "template",
    type=click.Path(dir_okay=False),
    help="Write the disagreements to this CSV for the adjudicator to fill (decision, adjudicator).",
)
@click.option(
    "--decisions",
    type=click.Path(dir_okay=False, exists=True),
    help="Record the decisions of a filled template: each becomes the case's reference label.",
)
@out_of_scale_option
@json_option
def adjudicate(campaign, metric, template, decisions, out_of_scale, as_json) -> None:
    """List the cases annotators disagree on; record an adjudicator's decisions (history kept)."""
    from calibrate.humans.adjudication import adjudicate as adjudicate_cases

    # a template written into the campaign is a write of it (held); one a planted link leads outside, refused
    template_held = hold_outputs(campaign, "calibrate adjudicate", template=template)
    with (
        nullcontext() if decisions else template_held,
        writing(campaign, "calibrate adjudicate", out_of_scale)
        if decisions
        else nullcontext(load(campaign, out_of_scale)) as c,
    ):
        try:
            doc = adjudicate_cases(c, metric=metric, template=template, decisions=decisions)
        except (CampaignError, ValueError, FileExistsError) as exc:
            fail(exc)
    if as_json:
        print_json(doc)
        return
    if decisions:
        out.print(
            f"decisions: {doc['new']} new, {doc['changed']} changed (earlier ones kept), "
            f"{doc['unchanged']} unchanged, {doc['blank']} row(s) left blank; the current ones are "
            "in adjudications.csv"
        )
        return
    found = doc["disagreements"]
    table = Table(title=f"{len(found)} case(s) where annotators disagree")
    for col in ("case", "metric", "labels", "decision"):
        table.add_column(col)
    for d in found:
        table.add_row(
            case_label(d["case_id"], c.cases),
            d["metric"],
            "; ".join(f"{k}={v:g}" for k, v in d["labels"].items()),
            "-" if d["decision"] is None else f"{d['decision']:g}",
        )
    out.print(table)
    if template:
        out.print(
            f"written to {template}: fill decision and adjudicator, then run calibrate adjudicate "
            f"{campaign} --decisions {template}"
        )


@click.group()
def labelstudio() -> None:
    """Human labels through Label Studio: push the cases, pull the annotations."""


url_option = click.option("--url", envvar="LABEL_STUDIO_URL", help="Label Studio's address [env LABEL_STUDIO_URL].")


key_option = click.option(
    "--api-key",
    envvar="LABEL_STUDIO_API_KEY",
    help="A legacy token or a personal access token [env LABEL_STUDIO_API_KEY]; never stored.",
)


@labelstudio.command("push")
@click.argument("campaign", type=click.Path(file_okay=False))
@url_option
@key_option
@metric_option(multiple=True, help="Label only this metric (repeatable; default: all).")
@click.option(
    "--overlap",
    type=FiniteRange(0, 1),
    default=0.0,
    show_default=True,
    help="Share of tasks that go to several annotators.",
)
@click.option(
    "--annotators", type=click.IntRange(min=2), default=2, show_default=True, help="Annotators per overlapping task."
)
@click.option(
    "--sample",
    "sample_file",
    type=click.Path(dir_okay=False),
    help="Push only the cases of this sample: samples/NAME.csv of the campaign (as calibrate sample "
    "prints it), its NAME, or a CSV file with a case_id column.",
)
@click.option(
    "--show-judge",
    help="Pre-fill the new tasks with this judge's ratings (not blind: the report then "
    "warns that the labels may be anchored on it).",
)
@click.option(
    "--show-threshold",
    type=FiniteRange(),
    default=0.5,
    show_default=True,
    help="With --show-judge, the score from which a binary metric is pre-filled as pass.",
)
@out_of_scale_option
@json_option
def labelstudio_push(
    campaign, url, api_key, metrics, overlap, annotators, sample_file, show_judge, show_threshold, out_of_scale, as_json
) -> None:
    """Create (or update) the campaign's project and add the cases it lacks; judge scores stay hidden."""
    from calibrate.humans.labelstudio.client import LabelStudioError, push
    from calibrate.humans.labelstudio.interface import InterfaceError
    from calibrate.sampling.designs import read_sample_ids

    with writing(campaign, "calibrate labelstudio push", out_of_scale) as c:
        try:
            case_ids = read_sample_ids(sample_file, c) if sample_file else None
            doc = push(
                c,
                url=url,
                api_key=api_key,
                metrics=list(metrics) or None,
                overlap=overlap,
                annotators_per_overlap=annotators,
                show_judge=show_judge,
                show_threshold=show_threshold,
                case_ids=case_ids,
            )
        except (LabelStudioError, InterfaceError, ValueError) as exc:
            fail(exc)
    if as_json:
        print_json(doc)
        return
    out.print(
        f"project {doc['project_id']} on {doc['url']} ({'created' if doc['created'] else 'updated'}; metrics "
        f"{', '.join(doc['metrics'])}): {doc['tasks_added']} task(s) added, {doc['tasks_already_there']} "
        "already there"
    )
    if doc["shown_judge"]:
        out.print(
            styled(
                "yellow",
                "not blind: ",
                f"{doc['pre_annotated']} new task(s) pre-filled with judge "
                f"{doc['shown_judge']}'s ratings"
                + (
                    f" (not for {', '.join(doc['not_pre_annotated_metrics'])})"
                    if doc["not_pre_annotated_metrics"]
                    else ""
                )
                + "; statistics on these labels will warn of anchoring",
            )
        )


@labelstudio.command("pull")
@click.argument("campaign", type=click.Path(file_okay=False))
@url_option
@key_option
@click.option(
    "--file",
    "export_file",
    type=click.Path(dir_okay=False, exists=True),
    help="Read a Label Studio JSON export instead of the API.",
)
@click.option(
    "--adjudicator",
    "adjudicators",
    multiple=True,
    help="This annotator's labels are decisions on disagreements, not ratings (repeatable).",
)
@out_of_scale_option
@json_option
def labelstudio_pull(campaign, url, api_key, export_file, adjudicators, out_of_scale, as_json) -> None:
    """Read every annotation back as human ratings (labelstudio_ratings.csv), keeping each revision."""
    from calibrate.humans.labelstudio.client import LabelStudioError, pull, pull_file
    from calibrate.humans.labelstudio.interface import InterfaceError
    from calibrate.humans.labelstudio.labels import LabelError

    with writing(campaign, "calibrate labelstudio pull", out_of_scale) as c:
        try:
            doc = (
                pull_file(c, export_file, url=url, adjudicators=list(adjudicators))
                if export_file
                else pull(c, url=url, api_key=api_key, adjudicators=list(adjudicators))
            )
        except (LabelStudioError, InterfaceError, LabelError, CampaignError) as exc:  # a damaged store too
            fail(exc)
    if as_json:
        print_json(doc)
        return
    out.print(
        f"{doc['annotations']} annotation(s) of {doc['tasks']} task(s): {doc['labels']} label(s), "
        f"{doc['new']} new, {doc['changed']} changed (a new revision each), {doc['unchanged']} unchanged"
        + (f", {doc['restored']} back after a withdrawal" if doc["restored"] else "")
        + f"; skipped {doc['cancelled']} cancelled annotation(s) and {doc['drafts']} draft(s); "
        f"{doc['ratings_written']} rating(s) in labelstudio_ratings.csv"
    )
    if doc["withdrawn"]:
        out.print(
            f"withdrawn: {doc['withdrawn']} label(s) pulled before are no longer in the project (deleted in "
            "Label Studio): out of the statistics, kept in the history"
        )
    if doc["deleted_since"]:
        out.print(
            f"left out: {doc['deleted_since']} label(s) of this file were deleted in Label Studio after it "
            "was exported (a pull through the API found them gone)"
        )
    if doc.get("older_kept"):
        out.print(
            f"kept the newer: {doc['older_kept']} label(s) of this source are older than the revision pulled "
            "before (Label Studio updated those annotations since): the newer revision stays"
        )
    if doc["absent_kept"]:
        out.print(
            f"kept: {doc['absent_kept']} label(s) pulled before are not in this export file; a file may hold "
            "part of a project, so they stay (a pull through the API withdraws labels deleted in Label "
            "Studio)"
        )
    if doc["set_aside"]["labels"]:
        out.print(
            f"set aside: {doc['set_aside']['labels']} label(s) of {', '.join(doc['set_aside']['metrics'])}, "
            "no longer declared in campaign.toml: stored and in labelstudio_ratings.csv, left out of the "
            "statistics until it is declared again"
        )
    if doc["decisions"]:
        d = doc["decisions"]
        out.print(
            f"adjudicators' decisions: {d['new']} new, {d['changed']} changed, {d['unchanged']} unchanged "
            "(in adjudications.csv)"
        )


#: the commands this module adds to ``calibrate``
COMMANDS = [adjudicate, labelstudio]
