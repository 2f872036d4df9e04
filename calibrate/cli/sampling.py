"""Which cases to label and how many: sample, plan."""

from __future__ import annotations

import click
from rich.table import Table

from calibrate.cli.console import (
    FiniteRange,
    confidence_option,
    fail,
    file_name,
    json_option,
    judge_option,
    load,
    metric_option,
    out,
    out_of_scale_option,
    print_json,
    writing,
)


@click.command()
@click.argument("campaign", type=click.Path(file_okay=False))
@click.option("--n", "n", type=click.IntRange(min=1), required=True, help="Cases to sample.")
@click.option(
    "--strategy",
    type=click.Choice(["random", "stratified", "threshold", "disagreement", "neyman"]),
    default="random",
    show_default=True,
    help="random: uniform; stratified: per value of --by; threshold: focus on judge scores near the "
    "threshold; disagreement: focus where judges disagree; neyman: a pilot over a judge's score "
    "strata, then labels where human verdicts vary most.",
)
@click.option("--by", help="The metadata key to stratify by (stratified).")
@click.option(
    "--allocation",
    type=click.Choice(["proportional", "equal"]),
    default="proportional",
    show_default=True,
    help="stratified: cases per value of --by in proportion to its size, or equal.",
)
@metric_option(help="The metric whose judge scores the design reads (threshold, disagreement, neyman).")
@judge_option(
    multiple=True,
    help="The judge (threshold, neyman: one; disagreement: two or more, default every judge).",
)
@click.option(
    "--threshold", type=FiniteRange(), help="threshold: in the judge's units (default: its recommended threshold)."
)
@click.option(
    "--focus",
    type=FiniteRange(0, 1, min_open=True, max_open=True),
    default=0.5,
    show_default=True,
    help="threshold, disagreement: the share of the labels for the focus stratum.",
)
@click.option(
    "--band",
    type=FiniteRange(0, 1, min_open=True, max_open=True),
    default=0.2,
    show_default=True,
    help="threshold, disagreement: the share of the cases in the focus stratum (nearest the threshold, "
    "most disagreement).",
)
@click.option(
    "--strata",
    "n_strata",
    type=click.IntRange(min=2),
    default=5,
    show_default=True,
    help="neyman: strata by quantile of the judge's score.",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Sampling seed.")
@click.option(
    "--name",
    callback=lambda ctx, param, value: file_name(value, "sample name"),
    help="The sample's name: samples/NAME.csv (default: STRATEGY-SEED); letters, digits, . _ - @ + : "
    "and spaces between them.",
)
@click.option("--include-labelled", is_flag=True, help="Also sample cases humans already labelled.")
@out_of_scale_option
@json_option
def sample(
    campaign,
    n,
    strategy,
    by,
    allocation,
    metric,
    judges,
    threshold,
    focus,
    band,
    n_strata,
    seed,
    name,
    include_labelled,
    out_of_scale,
    as_json,
) -> None:
    """Choose which cases humans should label; each records its inclusion probability, which the
    statistics weight by."""
    from calibrate.sampling.designs import sample_cases

    if strategy != "disagreement" and len(judges) > 1:
        fail(f"--strategy {strategy} reads one judge: --judge was given {len(judges)} times")
    with writing(campaign, "calibrate sample", out_of_scale) as c:
        try:
            drawn = sample_cases(
                c,
                n,
                name=name,
                strategy=strategy,
                by=by,
                seed=seed,
                include_labelled=include_labelled,
                allocation=allocation,
                metric=metric,
                judge=judges[0] if judges else None,
                judges=list(judges) or None,
                threshold=threshold,
                focus=focus,
                band=band,
                n_strata=n_strata,
            )
        except (ValueError, FileExistsError) as exc:
            fail(exc)
    path = drawn["file"]
    if as_json:
        print_json(drawn)
        return
    table = Table(title=f"{len(drawn['case_ids'])} case(s) sampled ({strategy}) into {path}")
    for col in ("stratum", "cases", "sampled", "inclusion probability"):
        table.add_column(col)
    for stratum, facts in drawn["design"]["strata"].items():
        table.add_row(
            stratum,
            str(facts["size"]),
            str(facts["sampled"]) + (f" (+{facts['drawn_before']} before)" if facts.get("drawn_before") else ""),
            f"{facts['inclusion_probability']:.3f}",
        )
    out.print(table)
    if drawn["design"].get("phase") == "pilot":
        out.print(
            "a Neyman pilot: once humans labelled it, run the neyman strategy again to allocate the next "
            "labels where human verdicts vary most"
        )


@click.command()
@click.argument("campaign", type=click.Path(file_okay=False))
@metric_option(help="The metric to plan for (needed when the campaign has several).")
@judge_option(help="The judge whose scores stratify the designs and whose threshold the error rates use.")
@click.option(
    "--width",
    type=FiniteRange(0, 2, min_open=True, max_open=True),
    default=0.1,
    show_default=True,
    help="The full width of the confidence interval wanted (0.1 is +-0.05).",
)
@confidence_option
@click.option(
    "--strata",
    "n_strata",
    type=click.IntRange(min=2),
    default=5,
    show_default=True,
    help="Strata of the judge's score for the stratified and Neyman designs.",
)
@click.option("--threshold", type=FiniteRange(), help="The judge's pass threshold (default: its recommended one).")
@click.option("--pass-rate", type=FiniteRange(0, 1), help="Assume this human pass rate instead of the campaign's.")
@click.option(
    "--false-pass-rate", type=FiniteRange(0, 1), help="Assume this false-pass rate instead of the campaign's."
)
@click.option("--kappa", type=FiniteRange(-1, 1), help="Assume this pass/fail kappa instead of the campaign's.")
@out_of_scale_option
@json_option
def plan(
    campaign,
    metric,
    judge,
    width,
    confidence,
    n_strata,
    threshold,
    pass_rate,
    false_pass_rate,
    kappa,
    out_of_scale,
    as_json,
) -> None:
    """How many human labels a confidence interval of a given width needs, and how many a judge's
    scores save under each sample design."""
    from calibrate.sampling.planning import plan_labels

    c = load(campaign, out_of_scale)
    try:
        doc = plan_labels(
            c,
            metric=metric,
            judge=judge,
            width=width,
            confidence=confidence,
            n_strata=n_strata,
            threshold=threshold,
            pass_rate=pass_rate,
            false_pass_rate=false_pass_rate,
            kappa=kappa,
        )
    except ValueError as exc:
        fail(exc)
    if as_json:
        print_json(doc)
        return
    title = f"{doc['metric']}: labels for a {confidence:.0%} interval {width:g} wide" + (
        f", judge {doc['judge']}" if doc["judge"] else ""
    )
    table = Table(title=title)
    for col in ("statistic", "value", "random", "stratified by score", "neyman", "saved", "labelled", "more needed"):
        table.add_column(col)

    def cell(v):
        return "-" if v is None else str(v)

    for r in doc["statistics"]:
        table.add_row(
            r["statistic"] + (f" ({r['note']})" if r.get("note") else ""),
            f"{r['value']:.3f} ({r['source']})",
            cell(r["labels"]["random"]),
            cell(r["labels"]["stratified"]),
            cell(r["labels"]["neyman"]),
            cell(r["labels_saved"]),
            str(r["labelled"]),
            cell(r["more_needed"])
            + (f" ({r['more_human_fails_needed']} more human fails)" if r.get("more_human_fails_needed") else ""),
        )
    out.print(table)
    for note in doc["notes"]:
        out.print(f"note: {note}")


#: the commands this module adds to ``calibrate``
COMMANDS = [sample, plan]
