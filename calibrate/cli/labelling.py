"""Cases and human labels: cases import, collect, sample, plan, adjudicate, labelstudio push / pull."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich.table import Table

from calibrate.cli import (
    FiniteRange,
    _fail,
    _load,
    _print_json,
    _progress,
    confidence_option,
    err,
    json_option,
    main,
    out,
    out_of_scale_option,
    styled,
)
from calibrate.errors import CampaignError

if TYPE_CHECKING:
    pass


@main.group()
def cases() -> None:
    """The campaign's cases (cases.jsonl)."""


@cases.command("import")
@click.argument("campaign", type=click.Path(file_okay=False))
@click.argument("source_file", type=click.Path(dir_okay=False, exists=True))
@click.option("--source", type=click.Choice(["auto", "deepeval", "ragas"]), default="auto", show_default=True,
              help="The library that wrote the file (auto: from its field names).")
@click.option("--list-separator", default="|", show_default=True,
              help="How DeepEval's CSV and JSONL files join the chunks of a context.")
def cases_import(campaign, source_file, source, list_separator) -> None:
    """Add the cases of a DeepEval dataset (goldens / test cases) or a RAGAS dataset to cases.jsonl."""
    from calibrate.cases_import import merge_cases, read_external_cases

    Path(campaign).mkdir(parents=True, exist_ok=True)
    try:
        found = read_external_cases(source_file, source=source, list_separator=list_separator)
        counts = merge_cases(campaign, found)
    except CampaignError as exc:
        _fail(str(exc))
    out.print(f"{counts['added']} case(s) added to {Path(campaign) / 'cases.jsonl'}, "
              f"{counts['unchanged']} already there")




@main.command("collect")
@click.argument("campaign", type=click.Path(file_okay=False, exists=True))
@click.option("--goldens", type=click.Path(dir_okay=False, exists=True), required=True,
              help="The questions: JSONL, CSV or a DeepEval goldens file (input, optional expected_output, metadata).")
@click.option("--refresh", is_flag=True, help="Ask again for every golden (the earlier replies are kept as a run).")
@click.option("--dry-run", is_flag=True, help="Show the first rendered request and, for one golden, the reply and "
                                              "what the contract extracts; store nothing.")
@click.option("--concurrency", type=click.IntRange(min=1), default=8, show_default=True,
              help="Requests in flight at once.")
@click.option("--retries", type=click.IntRange(min=0), default=4, show_default=True,
              help="Retries of a request after a 429, a 5xx, a timeout or a dropped connection.")
@click.option("--rpm", type=FiniteRange(min=0, min_open=True), help="Requests per minute, at most.")
@json_option
def collect_command(campaign, goldens, refresh, dry_run, concurrency, retries, rpm, as_json) -> None:
    """Send the goldens to the RAG service of [service] and keep its answers and retrieved chunks as the
    campaign's cases."""
    from calibrate.cases_import import read_external_cases
    from calibrate.collect.contract import load_contract
    from calibrate.collect.runner import collect
    from calibrate.collect.runner import dry_run as check_contract
    from calibrate.judges.calls import CallPolicy

    try:
        contract = load_contract(campaign)
        golden_cases = read_external_cases(goldens)
    except CampaignError as exc:
        err.print(str(exc))
        sys.exit(2)
    if not golden_cases:
        _fail(f"{goldens}: no golden")
    try:
        if dry_run:
            doc = check_contract(contract, golden_cases[0])
        else:
            with _progress(not as_json) as progress:
                doc = collect(campaign, golden_cases, contract=contract, refresh=refresh,
                              policy=CallPolicy(concurrency=concurrency, timeout_s=contract.timeout_s,
                                                retries=retries, requests_per_minute=rpm), progress=progress)
    except (ValueError, CampaignError) as exc:
        _fail(str(exc))
    if as_json or dry_run:
        _print_json(doc)
        if dry_run and "error" in doc:
            sys.exit(1)
        return
    out.print(f"asked {doc['asked']} golden(s): {doc['collected']} collected, {doc['failed']} failed; "
              f"{doc['already_collected']} already collected; {doc['cases']} case(s) in cases.jsonl "
              f"(run {doc['run_id']})")
    for e in doc["errors"][:20]:
        out.print(styled("red", "  error ", str(e["error"])))
    if len(doc["errors"]) > 20:
        out.print(f"  ... and {len(doc['errors']) - 20} more (calibrate collect --json lists them all)")


@main.command()
@click.argument("campaign", type=click.Path(file_okay=False))
@click.option("--n", "n", type=click.IntRange(min=1), required=True, help="Cases to sample.")
@click.option("--strategy", type=click.Choice(["random", "stratified", "threshold", "disagreement", "neyman"]),
              default="random", show_default=True,
              help="random: uniform; stratified: per value of --by; threshold: focus on judge scores near the "
                   "threshold; disagreement: focus where judges disagree; neyman: a pilot over a judge's score "
                   "strata, then labels where human verdicts vary most.")
@click.option("--by", help="The metadata key to stratify by (stratified).")
@click.option("--allocation", type=click.Choice(["proportional", "equal"]), default="proportional",
              show_default=True, help="stratified: cases per value of --by in proportion to its size, or equal.")
@click.option("--metric", help="The metric whose judge scores the design reads (threshold, disagreement, neyman).")
@click.option("--judge", "judges", multiple=True,
              help="The judge (threshold, neyman: one; disagreement: two or more, default every judge).")
@click.option("--threshold", type=FiniteRange(), help="threshold: in the judge's units (default: its recommended threshold).")
@click.option("--focus", type=FiniteRange(0, 1, min_open=True, max_open=True), default=0.5, show_default=True,
              help="threshold, disagreement: the share of the labels for the focus stratum.")
@click.option("--band", type=FiniteRange(0, 1, min_open=True, max_open=True), default=0.2, show_default=True,
              help="threshold, disagreement: the share of the cases in the focus stratum (nearest the threshold, "
                   "most disagreement).")
@click.option("--strata", "n_strata", type=click.IntRange(min=2), default=5, show_default=True,
              help="neyman: strata by quantile of the judge's score.")
@click.option("--seed", type=int, default=0, show_default=True, help="Sampling seed.")
@click.option("--name", help="The sample's name: samples/NAME.csv (default: STRATEGY-SEED).")
@click.option("--include-labelled", is_flag=True, help="Also sample cases humans already labelled.")
@out_of_scale_option
@json_option
def sample(campaign, n, strategy, by, allocation, metric, judges, threshold, focus, band, n_strata, seed, name,
           include_labelled, out_of_scale, as_json) -> None:
    """Choose which cases humans should label; each records its inclusion probability, which the
    statistics weight by."""
    from calibrate.sampling import draw_sample, write_sample

    c = _load(campaign, out_of_scale)
    if strategy != "disagreement" and len(judges) > 1:
        _fail(f"--strategy {strategy} reads one judge: --judge was given {len(judges)} times")
    try:
        drawn = draw_sample(c, n, strategy=strategy, by=by, seed=seed, include_labelled=include_labelled,
                            allocation=allocation, metric=metric, judge=judges[0] if judges else None,
                            judges=list(judges) or None, threshold=threshold, focus=focus, band=band,
                            n_strata=n_strata)
        default_name = f"{strategy}-{drawn.design.get('phase', '')}-{seed}" if strategy == "neyman" \
            else f"{strategy}-{seed}"
        path = write_sample(Path(campaign), drawn, name or default_name.replace("--", "-"))
    except (ValueError, FileExistsError) as exc:
        _fail(str(exc))
    if as_json:
        _print_json({"file": str(path), "design": drawn.design, "case_ids": drawn.case_ids})
        return
    table = Table(title=f"{len(drawn.case_ids)} case(s) sampled ({strategy}) into {path}")
    for col in ("stratum", "cases", "sampled", "inclusion probability"):
        table.add_column(col)
    for stratum, facts in drawn.design["strata"].items():
        table.add_row(stratum, str(facts["size"]), str(facts["sampled"])
                      + (f" (+{facts['drawn_before']} before)" if facts.get("drawn_before") else ""),
                      f"{facts['inclusion_probability']:.3f}")
    out.print(table)
    if drawn.design.get("phase") == "pilot":
        out.print("a Neyman pilot: once humans labelled it, run the neyman strategy again to allocate the next "
                  "labels where human verdicts vary most")


@main.command()
@click.argument("campaign", type=click.Path(file_okay=False))
@click.option("--metric", help="The metric to plan for (needed when the campaign has several).")
@click.option("--judge", help="The judge whose scores stratify the designs and whose threshold the error rates use.")
@click.option("--width", type=FiniteRange(0, 2, min_open=True, max_open=True), default=0.1, show_default=True,
              help="The full width of the confidence interval wanted (0.1 is +-0.05).")
@confidence_option
@click.option("--strata", "n_strata", type=click.IntRange(min=2), default=5, show_default=True,
              help="Strata of the judge's score for the stratified and Neyman designs.")
@click.option("--threshold", type=FiniteRange(), help="The judge's pass threshold (default: its recommended one).")
@click.option("--pass-rate", type=FiniteRange(0, 1), help="Assume this human pass rate instead of the campaign's.")
@click.option("--false-pass-rate", type=FiniteRange(0, 1), help="Assume this false-pass rate instead of the campaign's.")
@click.option("--kappa", type=FiniteRange(-1, 1), help="Assume this pass/fail kappa instead of the campaign's.")
@out_of_scale_option
@json_option
def plan(campaign, metric, judge, width, confidence, n_strata, threshold, pass_rate, false_pass_rate, kappa,
         out_of_scale, as_json) -> None:
    """How many human labels a confidence interval of a given width needs, and how many a judge's
    scores save under each sample design."""
    from calibrate.planning import plan_labels

    c = _load(campaign, out_of_scale)
    try:
        doc = plan_labels(c, metric=metric, judge=judge, width=width, confidence=confidence, n_strata=n_strata,
                          threshold=threshold, pass_rate=pass_rate, false_pass_rate=false_pass_rate, kappa=kappa)
    except ValueError as exc:
        _fail(str(exc))
    if as_json:
        _print_json(doc)
        return
    title = (f"{doc['metric']}: labels for a {confidence:.0%} interval {width:g} wide"
             + (f", judge {doc['judge']}" if doc["judge"] else ""))
    table = Table(title=title)
    for col in ("statistic", "value", "random", "stratified by score", "neyman", "saved", "labelled", "more needed"):
        table.add_column(col)

    def cell(v):
        return "-" if v is None else str(v)

    for r in doc["statistics"]:
        table.add_row(r["statistic"] + (f" ({r['note']})" if r.get("note") else ""),
                      f"{r['value']:.3f} ({r['source']})", cell(r["labels"]["random"]), cell(r["labels"]["stratified"]),
                      cell(r["labels"]["neyman"]), cell(r["labels_saved"]), str(r["labelled"]),
                      cell(r["more_needed"]) + (f" ({r['more_human_fails_needed']} more human fails)"
                                                if r.get("more_human_fails_needed") else ""))
    out.print(table)
    for note in doc["notes"]:
        out.print(f"note: {note}")


@main.command()
@click.argument("campaign", type=click.Path(file_okay=False))
@click.option("--metric", help="Only this metric.")
@click.option("--template", "template", type=click.Path(dir_okay=False),
              help="Write the disagreements to this CSV for the adjudicator to fill (decision, adjudicator).")
@click.option("--decisions", type=click.Path(dir_okay=False, exists=True),
              help="Record the decisions of a filled template: each becomes the case's reference label.")
@out_of_scale_option
@json_option
def adjudicate(campaign, metric, template, decisions, out_of_scale, as_json) -> None:
    """List the cases annotators disagree on; record an adjudicator's decisions (history kept)."""
    from calibrate.adjudication import disagreements, record_decisions, write_template

    c = _load(campaign, out_of_scale)
    if metric is not None and metric not in c.metrics:
        _fail(f"unknown metric {metric}: the campaign declares {', '.join(sorted(c.metrics))}")
    if decisions:
        try:
            counts = record_decisions(c, decisions)
        except CampaignError as exc:
            _fail(str(exc))
        if as_json:
            _print_json(counts)
        else:
            out.print(f"decisions: {counts['new']} new, {counts['changed']} changed (earlier ones kept), "
                      f"{counts['unchanged']} unchanged, {counts['blank']} row(s) left blank; the current ones are "
                      "in adjudications.csv")
        return
    found = disagreements(c, metric)
    if template:
        write_template(c, template, metric)
    if as_json:
        _print_json({"disagreements": found})
        return
    table = Table(title=f"{len(found)} case(s) where annotators disagree")
    for col in ("case", "metric", "labels", "decision"):
        table.add_column(col)
    for d in found:
        table.add_row(d["case_id"], d["metric"], "; ".join(f"{k}={v:g}" for k, v in d["labels"].items()),
                      "-" if d["decision"] is None else f"{d['decision']:g}")
    out.print(table)
    if template:
        out.print(f"written to {template}: fill decision and adjudicator, then run calibrate adjudicate "
                  f"{campaign} --decisions {template}")


@main.group()
def labelstudio() -> None:
    """Human labels through Label Studio: push the cases, pull the annotations."""


url_option = click.option("--url", envvar="LABEL_STUDIO_URL", help="Label Studio's address [env LABEL_STUDIO_URL].")
key_option = click.option("--api-key", envvar="LABEL_STUDIO_API_KEY",
                          help="A legacy token or a personal access token [env LABEL_STUDIO_API_KEY]; never stored.")


@labelstudio.command("push")
@click.argument("campaign", type=click.Path(file_okay=False))
@url_option
@key_option
@click.option("--metric", "metrics", multiple=True, help="Label only this metric (repeatable; default: all).")
@click.option("--overlap", type=FiniteRange(0, 1), default=0.0, show_default=True,
              help="Share of tasks that go to several annotators.")
@click.option("--annotators", type=click.IntRange(min=2), default=2, show_default=True,
              help="Annotators per overlapping task.")
@click.option("--sample", "sample_file", type=click.Path(dir_okay=False, exists=True),
              help="Push only the cases of this sample (calibrate sample writes samples/NAME.csv).")
@click.option("--show-judge", help="Pre-fill the new tasks with this judge's ratings (not blind: the report then "
                                   "warns that the labels may be anchored on it).")
@click.option("--show-threshold", type=FiniteRange(), default=0.5, show_default=True,
              help="With --show-judge, the score from which a binary metric is pre-filled as pass.")
@out_of_scale_option
@json_option
def labelstudio_push(campaign, url, api_key, metrics, overlap, annotators, sample_file, show_judge, show_threshold,
                     out_of_scale, as_json) -> None:
    """Create (or update) the campaign's project and add the cases it lacks; judge scores stay hidden."""
    from calibrate.labelstudio.client import LabelStudioError, push
    from calibrate.labelstudio.interface import InterfaceError
    from calibrate.sampling import read_sample_ids

    c = _load(campaign, out_of_scale)
    try:
        case_ids = read_sample_ids(sample_file, c) if sample_file else None
        doc = push(c, url=url, api_key=api_key, metrics=list(metrics) or None, overlap=overlap,
                   annotators_per_overlap=annotators, show_judge=show_judge, show_threshold=show_threshold,
                   case_ids=case_ids)
    except (LabelStudioError, InterfaceError, ValueError) as exc:
        _fail(str(exc))
    if as_json:
        _print_json(doc)
        return
    out.print(f"project {doc['project_id']} on {doc['url']} ({'created' if doc['created'] else 'updated'}; metrics "
              f"{', '.join(doc['metrics'])}): {doc['tasks_added']} task(s) added, {doc['tasks_already_there']} "
              "already there")
    if doc["shown_judge"]:
        out.print(styled("yellow", "not blind: ", f"{doc['pre_annotated']} new task(s) pre-filled with judge "
                         f"{doc['shown_judge']}'s ratings" + (f" (not for {', '.join(doc['not_pre_annotated_metrics'])})"
                                                              if doc["not_pre_annotated_metrics"] else "")
                         + "; statistics on these labels will warn of anchoring"))


@labelstudio.command("pull")
@click.argument("campaign", type=click.Path(file_okay=False))
@url_option
@key_option
@click.option("--file", "export_file", type=click.Path(dir_okay=False, exists=True),
              help="Read a Label Studio JSON export instead of the API.")
@click.option("--adjudicator", "adjudicators", multiple=True,
              help="This annotator's labels are decisions on disagreements, not ratings (repeatable).")
@out_of_scale_option
@json_option
def labelstudio_pull(campaign, url, api_key, export_file, adjudicators, out_of_scale, as_json) -> None:
    """Read every annotation back as human ratings (labelstudio_ratings.csv), keeping each revision."""
    from calibrate.labelstudio.client import LabelStudioError, pull, pull_file
    from calibrate.labelstudio.interface import InterfaceError
    from calibrate.labelstudio.labels import LabelError

    c = _load(campaign, out_of_scale)
    try:
        doc = (pull_file(c, export_file, url=url, adjudicators=list(adjudicators)) if export_file
               else pull(c, url=url, api_key=api_key, adjudicators=list(adjudicators)))
    except (LabelStudioError, InterfaceError, LabelError) as exc:
        _fail(str(exc))
    if as_json:
        _print_json(doc)
        return
    out.print(f"{doc['annotations']} annotation(s) of {doc['tasks']} task(s): {doc['labels']} label(s), "
              f"{doc['new']} new, {doc['changed']} changed (a new revision each), {doc['unchanged']} unchanged"
              + (f", {doc['restored']} back after a withdrawal" if doc["restored"] else "")
              + f"; skipped {doc['cancelled']} cancelled annotation(s) and {doc['drafts']} draft(s); "
              f"{doc['ratings_written']} rating(s) in labelstudio_ratings.csv")
    if doc["withdrawn"]:
        out.print(f"withdrawn: {doc['withdrawn']} label(s) pulled before are no longer in the project (deleted in "
                  "Label Studio): out of the statistics, kept in the history")
    if doc["deleted_since"]:
        out.print(f"left out: {doc['deleted_since']} label(s) of this file were deleted in Label Studio after it "
                  "was exported (a pull through the API found them gone)")
    if doc["absent_kept"]:
        out.print(f"kept: {doc['absent_kept']} label(s) pulled before are not in this export file; a file may hold "
                  "part of a project, so they stay (a pull through the API withdraws labels deleted in Label "
                  "Studio)")
    if doc["decisions"]:
        d = doc["decisions"]
        out.print(f"adjudicators' decisions: {d['new']} new, {d['changed']} changed, {d['unchanged']} unchanged "
                  "(in adjudications.csv)")
