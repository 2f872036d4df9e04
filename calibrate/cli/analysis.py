"""Statistics of a campaign: stats, thresholds, repeatability, pass-rate, escalate, compare-systems, calibration,
compare, bias."""

from __future__ import annotations

import math
from collections.abc import Sequence
from contextlib import nullcontext
from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich import box
from rich.table import Table
from rich.text import Text

from calibrate.base.errors import CampaignError, FileError
from calibrate.cli.console import (
    FiniteRange,
    case_label,
    check_judges,
    confidence_option,
    err,
    fail,
    file_name,
    hold,
    hold_outputs,
    json_option,
    judge_option,
    load,
    metric_option,
    n_boot_option,
    out,
    out_of_scale_option,
    print_json,
    progress,
    seed_option,
    styled,
    with_snippets,
)
from calibrate.report.format import fmt_estimate, fmt_interval, fmt_number, fmt_rate

if TYPE_CHECKING:
    from calibrate.analysis.recommendation_results import Recommendation
    from calibrate.analysis.verdict_results import MetricVerdict
    from calibrate.base.estimates import Estimate

#: the statistics of `stats` in the terminal: the main table, then a second one beside the family
STAT_COLUMNS = {"spearman": "Spearman rho", "kappa": "kappa", "auc": "AUC", "pass_kappa": "pass kappa"}
SECONDARY_COLUMNS = {"kappa_quadratic": "kappa quadratic", "alpha": "alpha"}


def _intervals_note(manifest: dict) -> str:
    """How the intervals beside the figures were made (printed with every table of them)."""
    return (
        f"{manifest.get('confidence', 0.95):.0%} intervals: BCa bootstrap, {manifest.get('n_boot')} resamples "
        "of cases (rank correlations on fewer than 50 cases: Fisher's z); rates: Wilson score"
    )


#: how each verdict status is coloured (the words themselves say it too)
VERDICT_STYLES = {
    "defensible": "bold green",
    "defensible if stricter": "green",
    "needs labels": "yellow",
    "not shown": "yellow",
    "not defensible": "red",
    "no criterion": "dim",
}


def print_verdict(verdict: MetricVerdict) -> None:
    """The verdict block of a metric (:func:`calibrate.analysis.verdicts.verdict_lines`): the rule, one
    line per judge (the judge's name in its status' colour) and under it a line per threshold the user runs
    today, the best judge and the human ceiling."""
    from rich.padding import Padding

    from calibrate.analysis.verdicts import verdict_lines

    lines = verdict_lines(verdict)
    head, best, ceiling = lines[0], lines[-2], lines[-1]

    def indented(text, by: int = 2) -> None:  # a line that wraps keeps its indent (a pipe gets it whole)
        out.print(Padding(text, (0, 0, 0, by)) if out.is_terminal else Text(" " * by) + text)

    out.print(styled("bold", head))
    for v in verdict.judges:
        name = f"{v.judge}:"
        indented(styled(VERDICT_STYLES.get(v.status, ""), name, v.text[len(name) :]))
        for current in v.current:  # the threshold the user runs today, under its judge
            indented(styled("", current.text), 4)
    indented(styled("bold", best.strip()))
    indented(styled("", ceiling.strip()))  # styled: shown, not rich's Text, which drops a \r silently


def current_option(function):
    """``--current VALUE`` or ``--current JUDGE=VALUE`` (repeatable): the threshold each judge runs at
    today, read by :func:`calibrate.analysis.current.parse_current` into ``current``."""

    def parsed(context, parameter, values):
        from calibrate.analysis.current import parse_current

        try:
            return parse_current(values) or None
        except ValueError as exc:
            raise click.BadParameter(str(exc)) from None

    return click.option(
        "--current",
        multiple=True,
        callback=parsed,
        metavar="[JUDGE=]VALUE",
        help="The threshold a judge runs at today (VALUE for every judge, or JUDGE=VALUE; "
        "repeatable): its verdict gives the false-pass and false-fail rates there. Without "
        "it, a DeepEval judge's own (its settings, DeepEval's 0.5, an imported run's).",
    )(function)


def _figure(stat: dict) -> str:
    """An estimate over its interval (two lines, so that a column is as narrow as its interval)."""
    if stat.get("estimate") is None:
        return "-"
    return fmt_estimate(stat).replace(" [", "\n[", 1)


def _stat_table(judges: list[dict], columns: dict[str, str], *, family: bool, **options) -> Table | None:
    """A table of the ``columns`` some judge has a value of (None if none has), the judge's name whole."""
    shown = {key: label for key, label in columns.items() if any(j[key].get("estimate") is not None for j in judges)}
    if not shown:
        return None
    table = Table(box=box.SIMPLE_HEAD, collapse_padding=True, pad_edge=False, **options)
    table.add_column("judge", no_wrap=True, min_width=max([len("judge")] + [len(j["judge"]) for j in judges]))
    if family:
        table.add_column("family", overflow="fold")
    else:
        table.add_column("n", justify="right")
    for label in shown.values():
        table.add_column(label, overflow="fold", min_width=5)
    for j in judges:
        table.add_row(j["judge"], (j["family"] or "-") if family else str(j["n"]), *(_figure(j[k]) for k in shown))
    return table


def print_stats(metric: dict, manifest: dict) -> None:
    """A metric's statistics in two tables that fit 100 columns: the main figures, then the secondary
    ones beside each judge's family; each figure over its interval. A statistic undefined for every
    judge is left out, with one line saying why; those undefined for some judges are listed below with
    their reasons. Judge names are never cut (the verdict lines above give each judge's threshold)."""
    judges = metric["judges"]
    title = (
        f"{metric['metric']} ({metric['scale']}, pass >= {fmt_number(metric['human_pass'])}): "
        f"{metric['n_cases']} cases with a human label, {metric['n_human_pass']} passes"
    )
    main = _stat_table(judges, STAT_COLUMNS, family=False, title=title)
    secondary = _stat_table(judges, SECONDARY_COLUMNS, family=True)
    if main is None:
        out.print(title)
    for table in (main, secondary):
        if table is not None:
            out.print(table)
    out.print(_intervals_note(manifest))
    reasons: dict[tuple[str, str], list[str]] = {}
    for j in judges:
        for key, label in (STAT_COLUMNS | SECONDARY_COLUMNS).items():
            if j[key].get("estimate") is None:
                reasons.setdefault((label, j[key]["reason"]), []).append(j["judge"])
    for (label, reason), names in reasons.items():
        whom = "every judge" if len(names) == len(judges) and len(judges) > 1 else ", ".join(names)
        out.print(f"  {label} undefined for {whom}: {reason}")
    annotators = metric.get("annotators")
    if annotators and "alpha" in annotators:  # the human ceiling beside the judges
        figures = "; ".join(
            f"{label} {fmt_estimate(annotators[key])}"
            for key, label in (
                ("percent_agreement", "agreement"),
                ("alpha", "Krippendorff's alpha"),
                ("cohen_kappa", "Cohen's kappa"),
            )
            if key in annotators
        )
        out.print(
            f"  humans with each other ({annotators['n_annotators']} annotators, "
            f"{annotators['n_items_multiply_labelled']} cases labelled by two or more): {figures}"
        )


@click.command()
@click.argument("campaign", type=click.Path(file_okay=False))
@metric_option(multiple=True)
@judge_option(multiple=True, help="Only this judge (repeatable; a rater or rater@run_id).")
@click.option("--by", help="A metadata key of the cases: every statistic also per value of it.")
@seed_option
@n_boot_option
@confidence_option
@current_option
@out_of_scale_option
@json_option
def stats(campaign, metrics, judges, by, seed, n_boot, confidence, current, out_of_scale, as_json) -> None:
    """Agreement of every judge with the human reference, with confidence intervals."""
    from calibrate.analysis.agreement import compute_stats

    c = load(campaign, out_of_scale)
    try:
        with progress() as bar:
            # the terminal tables show no curve: only the JSON document carries it
            doc = compute_stats(
                c,
                metrics=list(metrics) or None,
                judges=check_judges(c, judges),
                by=by,
                seed=seed,
                n_boot=n_boot,
                confidence=confidence,
                curves=as_json,
                progress=bar,
                current=current,
            )
    except ValueError as exc:
        fail(exc)
    if as_json:
        print_json(doc)
        return
    for metric in doc["metrics"]:
        print_verdict(doc.metric(metric["metric"]).verdict)
        print_stats(metric, doc["manifest"])
        if metric.get("weighted"):
            designs = "; ".join(
                f"{d['labelled']} from {d['sample']} ({d['strategy']}, {d['weight_share']:.0%} of the weight)"
                for d in metric["sample_designs"]
            )
            out.print(f"  weighted by inverse inclusion probability: {designs}")
        for w in metric["warnings"]:
            out.print(styled("yellow", "warning: ", with_snippets(w, c.cases)))
        for s in metric.get("slices", []):
            print_stats({**metric, **s, "metric": f"{metric['metric']} | {s['key']} = {s['value']}"}, doc["manifest"])
    if doc.get("set_aside_note"):
        out.print("note: " + doc["set_aside_note"], soft_wrap=True)
    from calibrate.cli.judges import print_versions_overview

    print_versions_overview(c)  # earlier judge versions the store keeps, by name (calibrate audit)


def _rate_lines(rate: Estimate | None) -> str:
    """A rate on three lines (estimate, counts, interval), so that its column stays narrow."""
    if rate is None or rate.value is None:
        return "-"
    text = fmt_rate(rate.to_dict())
    return text.replace(" (", "\n(", 1).replace(") [", ")\n[", 1)


def print_recommendations(recs: Sequence[Recommendation], manifest: dict, cases: dict | None = None) -> None:
    """One table of threshold recommendations per metric, the judge's name whole, each figure over
    its counts and interval; then every recommendation's warnings (a content-hash case id in them with
    the start of its input, from ``cases``)."""
    for metric in dict.fromkeys(r.metric for r in recs):
        rows = [r for r in recs if r.metric == metric]
        table = Table(
            title=f"{metric}: threshold recommendations", box=box.SIMPLE_HEAD, collapse_padding=True, pad_edge=False
        )
        table.add_column("judge", no_wrap=True, min_width=max(len(r.judge) for r in rows))
        table.add_column("threshold", overflow="fold", min_width=10)
        for col in ("false-pass rate", "false-fail rate", "at 0.5: false pass", "at 0.5: false fail"):
            table.add_column(col, overflow="fold", min_width=len("[0.000, 0.000]"))
        for r in rows:
            default = r.deepeval_default
            threshold = "none" if r.threshold is None else r.pass_rule.replace("threshold", fmt_number(r.threshold))
            table.add_row(
                r.judge,
                f"{threshold}\n{fmt_interval(r.threshold_ci)}",
                _rate_lines(r.false_pass_rate),
                _rate_lines(r.false_fail_rate),
                _rate_lines(default.false_pass_rate),
                _rate_lines(default.false_fail_rate),
            )
        out.print(table)
    out.print(
        f"threshold interval (under the threshold): percentile bootstrap, {manifest.get('n_boot')} resamples "
        "of cases; rates: Wilson score, or the one-sided bound a rule with --confidence used"
    )
    for r in recs:
        for w in r.warnings:
            out.print(styled("yellow", "warning: ", with_snippets(f"{r.judge}: {w}", cases)))


@click.command()
@click.argument("campaign", type=click.Path(file_okay=False))
@metric_option(multiple=True, help="Only this metric (repeatable; default: every metric).")
@judge_option(multiple=True)
@click.option("--max-false-pass", type=FiniteRange(0, 1), help="Constraint rule: ceiling on the false-pass rate.")
@click.option(
    "--confidence",
    type=FiniteRange(0.5, 1, max_open=True),
    help="With --max-false-pass: the one-sided upper confidence bound must stay under the ceiling "
    "(from 0.5: below it the bound lies under the estimate).",
)
@click.option("--cost-false-pass", type=FiniteRange(0, min_open=True), help="Cost rule: cost of a false pass.")
@click.option("--cost-false-fail", type=FiniteRange(0, min_open=True), help="Cost rule: cost of a false fail.")
@click.option("--prevalence", type=FiniteRange(0, 1), help="Cost rule: expected production share of human passes.")
@click.option(
    "--by",
    help="A metadata key of the cases: a threshold per value of it too, whether each slice needs its own "
    "(Holm-adjusted), and the cost of one threshold against one per slice.",
)
@click.option(
    "--write-overrides",
    type=click.Path(dir_okay=False),
    help="With --by and one --judge: write the per-slice thresholds a DeepEval test reads to this JSON file "
    "(never over an existing file).",
)
@seed_option
@n_boot_option
@current_option
@out_of_scale_option
@json_option
def thresholds(
    campaign,
    metrics,
    judges,
    max_false_pass,
    confidence,
    cost_false_pass,
    cost_false_fail,
    prevalence,
    by,
    write_overrides,
    seed,
    n_boot,
    current,
    out_of_scale,
    as_json,
) -> None:
    """Recommend a pass threshold per metric and judge: under each metric's rule in campaign.toml, or
    under the rule given (a false-pass ceiling, or costs); with --by, per slice too."""
    from calibrate.analysis import recommendations, rules

    rule = None
    if max_false_pass is not None and (cost_false_pass is not None or cost_false_fail is not None):
        fail("give either --max-false-pass A or both --cost-false-pass X and --cost-false-fail Y, not both")
    if max_false_pass is not None:
        if prevalence is not None:
            fail("--prevalence goes with the cost rule")
        rule = rules.Rule("constraint", max_false_pass=max_false_pass, confidence=confidence)
    elif cost_false_pass is not None or cost_false_fail is not None:
        if None in (cost_false_pass, cost_false_fail):
            fail("the cost rule needs both --cost-false-pass and --cost-false-fail")
        if confidence is not None:
            fail("--confidence goes with --max-false-pass")
        rule = rules.Rule(
            "cost", cost_false_pass=cost_false_pass, cost_false_fail=cost_false_fail, prevalence=prevalence
        )
    elif confidence is not None or prevalence is not None:
        fail("--confidence goes with --max-false-pass, --prevalence with the cost rule")
    c = load(campaign, out_of_scale)
    if by is not None or write_overrides is not None:
        _slice_thresholds(c, metrics, judges, rule, by, write_overrides, seed, n_boot, current, as_json)
        return
    try:
        with progress() as bar:
            doc = recommendations.thresholds(
                c,
                metrics=list(metrics) or None,
                rule=rule,
                judges=check_judges(c, judges),
                seed=seed,
                n_boot=n_boot,
                progress=bar,
                current=current,
            )
    except ValueError as exc:
        fail(exc)
    if as_json:
        print_json(doc)
        return
    for verdict in doc.verdicts or ():
        print_verdict(verdict)
    out.print(f"rules from {'the command line' if rule else 'campaign.toml'}")
    print_recommendations(doc.recommendations, doc.manifest, c.cases)


def _slice_thresholds(c, metrics, judges, rule, by, write_overrides, seed, n_boot, current, as_json) -> None:
    """``thresholds --by KEY``: the per-slice document, and the overrides file with ``--write-overrides``."""
    from calibrate.analysis import slice_thresholds as st

    if by is None:
        fail("--write-overrides goes with --by KEY")
    if current:
        fail("--current does not go with --by")
    chosen = list(metrics) or list(c.metrics)
    if len(chosen) != 1:
        fail(f"--by needs one --metric (the campaign has {', '.join(c.metrics)})")
    try:
        with progress() as bar:
            doc = st.slice_thresholds(
                c,
                metric=chosen[0],
                by=by,
                rule=rule,
                judges=check_judges(c, judges),
                seed=seed,
                n_boot=n_boot,
                progress=bar,
            )
        if write_overrides is not None:
            if len(doc["judges"]) != 1:
                fail(f"--write-overrides writes one judge's thresholds: name one --judge (of {len(doc['judges'])})")
            written = st.write_overrides(write_overrides, st.overrides(doc, doc["judges"][0]["judge"]))
    except (ValueError, FileExistsError) as exc:
        fail(exc)
    if as_json:
        print_json(doc)
    else:
        _print_slices(doc)
    if write_overrides is not None:
        (err if as_json else out).print(Text(f"wrote {written}"))


def _print_slices(doc) -> None:
    """Per judge: a table of the slices' thresholds and tests, the totals, and the mapping."""
    out.print(f"{doc['metric']} by {doc['key']}: {doc['rule']['description']}")
    for j in doc["judges"]:
        table = Table(title=f"{j['judge']}: thresholds per {doc['key']}", box=box.SIMPLE_HEAD, pad_edge=False)
        for col in ("slice", "labels", "threshold [interval]", "p (Holm)", "own threshold?"):
            table.add_column(col, overflow="fold")
        for s in [j["overall"], *j["slices"]]:
            threshold = "none" if s["threshold"] is None else fmt_number(s["threshold"])
            if "test" in s:
                test = f"{fmt_number(s['test']['p_value'])} ({fmt_number(s['p_value_holm'])})"
                needs = "yes" if s["needs_own_threshold"] else "no"
            else:
                test, needs = "", "" if s["value"] == "(all)" else s.get("not_tested", "")
            table.add_row(
                Text(s["value"]), str(s["n"]), f"{threshold} {fmt_interval(s['threshold_ci'])}", test, Text(needs)
            )
        out.print(table)
        for name, label in (("one_threshold", "one threshold"), ("per_slice", "one per slice"), ("mapping", "mapping")):
            t = j["totals"][name]
            cost = f", cost per case {fmt_number(t['cost_per_case'])}" if t.get("cost_per_case") is not None else ""
            out.print(f"  {label}: {t['false_passes']} false passes, {t['false_fails']} false fails{cost}")
        out.print(f"  ({j['totals']['note']})")
        overrides = ", ".join(f"{k}: {fmt_number(v)}" for k, v in j["overrides"].items()) or "none"
        out.print(Text(f"  default {fmt_number(j['default'])}; overrides: {overrides}"))
        if j["without_threshold"]:
            out.print(Text(f"  need their own but no threshold meets the rule: {', '.join(j['without_threshold'])}"))
    out.print(f"test: {doc['test']}; level {fmt_number(doc['level'])}")


@click.command("repeatability")
@click.argument("campaign", type=click.Path(file_okay=False))
@metric_option(multiple=True)
@judge_option(multiple=True)
@seed_option
@n_boot_option
@confidence_option
@out_of_scale_option
@json_option
def repeatability_command(campaign, metrics, judges, seed, n_boot, confidence, out_of_scale, as_json) -> None:
    """Test-retest agreement of judges scored with repeats (calibrate judge --repeats K): alpha across
    repeats, the share of verdicts that flip, the mean difference."""
    from calibrate.analysis.repeatability import repeatability

    c = load(campaign, out_of_scale)
    try:
        doc = repeatability(
            c,
            metrics=list(metrics) or None,
            judges=check_judges(c, judges),
            n_boot=n_boot,
            seed=seed,
            confidence=confidence,
        )
    except ValueError as exc:
        fail(exc)
    if as_json:
        print_json(doc)
        return
    table = Table(title="repeatability: each judge against itself")
    for col in ("metric", "judge", "repeats", "cases", "alpha across repeats", "verdict flips", "mean |difference|"):
        table.add_column(col)
    for r in doc["judges"]:
        flips = r["flip_share"]
        table.add_row(
            r["metric"],
            r["judge"],
            str(len(r["repeats"])),
            str(r["n_cases"]),
            fmt_estimate(r["alpha"]),
            fmt_rate(flips) if flips.get("estimate") is not None else flips.get("reason", "-"),
            fmt_number(r["mean_absolute_difference"]),
        )
    out.print(table)


@click.command("pass-rate")
@click.argument("campaign", type=click.Path(file_okay=False))
@metric_option(required=True)
@judge_option(required=True, help="The judge whose scores cover the cases without a human label.")
@click.option("--by", help="A metadata key of the cases: an estimate per value of it too.")
@click.option(
    "--strata",
    "n_strata",
    type=click.IntRange(min=1),
    default=5,
    show_default=True,
    help="Strata of the judge's score for the stratified estimate.",
)
@confidence_option
@out_of_scale_option
@json_option
def pass_rate(campaign, metric, judge, by, n_strata, confidence, out_of_scale, as_json) -> None:
    """The human pass rate of every case the judge scored, from the human labels and the judge's
    scores: humans only, prediction-powered (PPI++), stratified by score, and the judge alone."""
    from calibrate.analysis.pass_rate import estimate_pass_rate

    c = load(campaign, out_of_scale)
    try:
        doc = estimate_pass_rate(c, metric=metric, judge=judge, by=by, confidence=confidence, n_strata=n_strata)
    except ValueError as exc:
        fail(exc)
    if as_json:
        print_json(doc)
        return
    table = Table(
        title=f"human pass rate of {doc['metric']}, judge {doc['judge']}"
        + (" (weighted by the sample designs)" if doc["weighted"] else "")
    )
    for col in (
        "cases",
        "labelled",
        "unlabelled",
        "humans only",
        "PPI++",
        "stratified by score",
        "judge alone",
        "labels saved (PPI++ / stratified)",
    ):
        table.add_column(col)
    for label, part in [("all", doc["overall"])] + [(f"{s['key']} = {s['value']}", s) for s in doc.get("slices", [])]:
        saved = " / ".join(fmt_number(part[k].get("labels_saved")) for k in ("ppi", "stratified"))
        table.add_row(
            label,
            str(part["n_labelled"]),
            str(part["n_unlabelled"]),
            fmt_estimate(part["humans_only"]),
            fmt_estimate(part["ppi"]),
            fmt_estimate(part["stratified"]),
            fmt_estimate(part["judge_only"]),
            saved,
        )
    out.print(table)


@click.command("compare-systems")
@click.argument("campaign", type=click.Path(file_okay=False))
@metric_option(required=True)
@judge_option(required=True, help="The judge whose scores cover the cases without a human label.")
@click.option("--by", required=True, help="The metadata key naming each case's version of the application.")
@click.option("--a", "a", required=True, help="The first version (the one in use): its value of --by.")
@click.option("--b", "b", required=True, help="The second version (the candidate): its value of --by.")
@click.option("--slice", "slice_by", help="A metadata key: the difference per value of it too, Holm-corrected.")
@click.option(
    "--width",
    type=FiniteRange(0, 1, min_open=True, max_open=True),
    default=0.1,
    show_default=True,
    help="The full width of the difference's interval to plan the labels for.",
)
@confidence_option
@out_of_scale_option
@json_option
def compare_systems_command(
    campaign, metric, judge, by, a, b, slice_by, width, confidence, out_of_scale, as_json
) -> None:
    """Does version B of the application pass more answers than version A? The difference in the human
    pass rate, from the judge's score on every case and human labels on a few (PPI++, design-weighted),
    per slice with Holm's correction, and the labels a given width needs."""
    from calibrate.analysis.systems import compare_systems

    c = load(campaign, out_of_scale)
    try:
        doc = compare_systems(
            c, metric=metric, judge=judge, by=by, a=a, b=b, slice_by=slice_by, width=width, confidence=confidence
        )
    except ValueError as exc:
        fail(exc)
    if as_json:
        print_json(doc)
        return
    table = Table(
        title=f"human pass rate of {doc['metric']}: {by} = {b} minus {by} = {a}, judge {doc['judge']}"
        + (" (weighted by the sample designs)" if doc["weighted"] else ""),
        caption=f"{confidence:.0%} normal intervals" + (f"; {doc['multiplicity']}" if slice_by else ""),
    )
    for col in (
        "cases",
        f"{a}: labelled / all",
        f"{b}: labelled / all",
        f"{a} (PPI++)",
        f"{b} (PPI++)",
        f"{b} - {a} (PPI++)",
        "humans only",
        "judge alone",
    ) + (("p (Holm)",) if slice_by else ()):
        table.add_column(col, overflow="fold")
    reasons: dict[str, list[str]] = {}

    def shown(figure: dict, label: str) -> str:  # an undefined figure: a dash, its reason once below
        if figure.get("estimate") is None:
            reasons.setdefault(figure.get("reason") or "undefined", []).append(label)
            return "—"
        return fmt_estimate(figure)

    for label, part in [("all", doc["overall"])] + [(f"{s['key']} = {s['value']}", s) for s in doc.get("slices", [])]:
        counts = [f"{part[v]['n_labelled']} / {part[v]['n_labelled'] + part[v]['n_unlabelled']}" for v in ("a", "b")]
        diff = part["difference"]
        row = [
            label,
            *counts,
            shown(part["a"]["ppi"], label),
            shown(part["b"]["ppi"], label),
            shown(diff, label),
            shown(part["humans_only_difference"], label),
            fmt_number(part["judge_only_difference"].get("estimate")),
        ]
        if slice_by:
            row.append("" if label == "all" else fmt_number(diff.get("p_value_holm")))
        table.add_row(*row)
    out.print(table)
    for reason, labels in reasons.items():
        out.print(styled("yellow", "— ", f"{reason}: {', '.join(sorted(set(labels)))}"))
    labels = doc["overall"]["labels"]
    if labels["with_the_judge"] is not None:
        out.print(
            f"for an interval {width:g} wide on the difference: {labels['with_the_judge']} labels per version "
            f"with the judge, {labels['humans_only']} with humans alone"
        )
    else:
        out.print(f"for an interval {width:g} wide on the difference: {labels['reason']}")


@click.command()
@click.argument("campaign", type=click.Path(file_okay=False))
@metric_option(required=True)
@judge_option(required=True, help="The judge whose scores are mapped.")
@click.option(
    "--score", "scores", type=FiniteRange(), multiple=True, help="Print the calibrated probability of this score."
)
@click.option(
    "--scores",
    "scores_file",
    type=click.Path(dir_okay=False, exists=True),
    help="A CSV with a 'score' column: write it back to --out with a calibrated_probability column.",
)
@click.option("--out", "out_file", type=click.Path(dir_okay=False), help="Where --scores goes (never replaced).")
@click.option("--save", type=click.Path(dir_okay=False), help="Write the map as JSON (CalibrationMap.load reads it).")
@click.option(
    "--folds",
    type=click.IntRange(min=2),
    default=5,
    show_default=True,
    help="Cross-validation folds for the Brier score and calibration error.",
)
@seed_option
@out_of_scale_option
@json_option
def calibration(
    campaign, metric, judge, scores, scores_file, out_file, save, folds, seed, out_of_scale, as_json
) -> None:
    """Map a judge's score to the probability that a human passes the case (isotonic regression), with
    its cross-validated Brier score and calibration error."""
    if scores_file and not out_file:
        fail("--scores needs --out: the file to write the probabilities to")

    # a file written into the campaign folder is a write of it: held, like every other; one under the
    # campaign that a planted link leads elsewhere is refused
    with hold_outputs(campaign, "calibrate calibration", save=save, out=out_file):
        _calibration(campaign, metric, judge, scores, scores_file, out_file, save, folds, seed, out_of_scale, as_json)


def _calibration(
    campaign, metric, judge, scores, scores_file, out_file, save, folds, seed, out_of_scale, as_json
) -> None:
    import numpy as np
    import pandas as pd

    from calibrate.analysis.calibration import fit_calibration

    c = load(campaign, out_of_scale)
    if out_file and Path(out_file).exists():
        fail(f"--out {out_file} exists: choose another file (nothing is overwritten)")
    try:
        fit = fit_calibration(c, metric=metric, judge=judge, n_folds=folds, seed=seed, scores=scores)
        table = None
        if scores_file:
            table = pd.read_csv(scores_file)
            if "score" not in table.columns:
                raise ValueError(f"{scores_file}: no 'score' column (found {', '.join(map(str, table.columns))})")
            values = pd.to_numeric(table["score"], errors="coerce")
            bad = values.isna() & table["score"].notna()
            if bad.any():
                row = int(np.flatnonzero(bad)[0])
                raise ValueError(
                    f"{scores_file}, line {row + 2}, field 'score': {table['score'][row]!r} is not a number"
                )
    except ValueError as exc:
        fail(exc)
    cmap = fit.map
    if save:
        cmap.save(save)
    if table is not None:
        table["calibrated_probability"] = cmap.predict(values)
        from calibrate.base.files import replacing

        with replacing(out_file) as handle:
            table.to_csv(handle, index=False)
    doc = fit
    if as_json:
        print_json(doc)
        return
    cv = fit["cross_validated"]
    out.print(f"{metric} / {fit['judge']}: {fit['n']} labelled cases, human pass rate {fit['base_rate']:.3f}")
    out.print(
        f"calibrated ({cv['folds']}-fold cross-validated): Brier {cv['brier']:.4f}, ECE {cv['ece']:.4f}"
        + (
            f"; the raw score as a probability: Brier {fit['raw_score']['brier']:.4f}, ECE "
            f"{fit['raw_score']['ece']:.4f}"
            if fit["raw_score"]
            else ""
        )
    )
    for warning in fit["warnings"]:
        out.print(styled("yellow", "warning: ", warning))
    mapping = Table(title="score -> probability of a human pass")
    mapping.add_column("score")
    mapping.add_column("probability")
    sign = 1 if cmap.higher_is_better else -1
    for x, p in zip(cmap.scores, cmap.probabilities):
        mapping.add_row(fmt_number(sign * x), f"{p:.3f}")
    out.print(mapping)
    for item in doc["scores"]:
        out.print(f"score {item['score']:g}: probability of a human pass {item['probability']:.3f}")
    for path in (save, out_file):
        if path:
            out.print(f"wrote {path}")


@click.command()
@click.argument("campaign", type=click.Path(file_okay=False))
@metric_option(multiple=True)
@judge_option(multiple=True, help="Only these judges (repeatable; juries included).")
@click.option(
    "--listed",
    type=click.IntRange(min=0),
    default=5,
    show_default=True,
    help="Cases listed per pair of judges: those they rank furthest apart.",
)
@confidence_option
@out_of_scale_option
@json_option
def compare(campaign, metrics, judges, listed, confidence, out_of_scale, as_json) -> None:
    """Judge versus judge: Spearman's rho between every pair of a metric's judges, beside each judge's
    agreement with the humans, and the cases two judges rank furthest apart."""
    from calibrate.analysis.versus import compare_judges

    c = load(campaign, out_of_scale)
    try:
        compared = compare_judges(
            c, metrics=list(metrics) or None, judges=check_judges(c, judges), n_listed=listed, confidence=confidence
        )
    except ValueError as exc:
        fail(exc)
    if as_json:
        print_json(compared)
        return
    for doc in compared["metrics"]:
        names = doc["judges"]
        rho = {(p["a"], p["b"]): p["spearman"].get("estimate") for p in doc["pairs"]}
        table = Table(title=f"{doc['metric']}: Spearman's rho between judges, and with the humans")
        table.add_column("judge")
        table.add_column("humans")
        for name in names:
            table.add_column(name, overflow="fold")
        for row, human in zip(names, doc["with_humans"]):
            cells = [fmt_number(rho.get((row, col), rho.get((col, row)))) if row != col else "1" for col in names]
            table.add_row(row, fmt_number(human["spearman"].get("estimate")), *cells)
        out.print(table)
        for label in doc["least_agreeing"]:
            pair = next(p for p in doc["pairs"] if f"{p['a']} vs {p['b']}" == label)
            out.print(
                f"  {label} (rho {fmt_number(pair['spearman'].get('estimate'))}): furthest apart on "
                + ", ".join(
                    f"{case_label(x['case_id'], c.cases)} ({x['score_a']:g} vs {x['score_b']:g}, human "
                    f"{fmt_number(x['human'])})"
                    for x in pair["most_apart"]
                )
            )


@click.command()
@click.argument("campaign", type=click.Path(file_okay=False))
@metric_option(required=True)
@judge_option(multiple=True)
@click.option("--by", help="A metadata key of the cases: agreement and excess per value of it.")
@confidence_option
@out_of_scale_option
@json_option
def bias(campaign, metric, judges, by, confidence, out_of_scale, as_json) -> None:
    """Bias probes from the labels: verbosity (answer length), self-preference (the generator's family),
    slices."""
    from calibrate.analysis.bias import bias_probes

    c = load(campaign, out_of_scale)
    try:
        doc = bias_probes(c, metric=metric, judges=check_judges(c, judges), by=by, confidence=confidence)
    except ValueError as exc:
        fail(exc)
    if as_json:
        print_json(doc)
        return

    def figure(f: dict) -> str:
        if f.get("estimate") is None:
            return f.get("reason", "-")
        return f"{f['estimate']:+.3f} [{f['ci_low']:+.3f}, {f['ci_high']:+.3f}]"

    table = Table(
        title=f"{metric}: where each judge departs from the humans (excess: the judge's percentile rank "
        "minus the humans')"
    )
    for col in ("judge", "cases", "verbosity: rho(length, excess)", "self-preference: excess own - other family"):
        table.add_column(col, overflow="fold")
    for j in doc["judges"]:
        table.add_row(j["judge"], str(j["n"]), figure(j.get("verbosity", {})), figure(j.get("self_preference", {})))
    out.print(table)
    for j in doc["judges"]:
        for sl in j.get("slices", []):
            out.print(
                f"  {j['judge']} | {sl['key']} = {sl['value']}: {sl['n']} cases, Spearman "
                f"{fmt_number(sl['spearman'].get('estimate'))}, mean excess {fmt_number(sl['mean_excess'])}"
            )


@click.command("escalate")
@click.argument("campaign", type=click.Path(file_okay=False))
@metric_option(required=True)
@judge_option(required=True, help="The judge that decides the cases in its band.")
@click.option(
    "--agreement",
    type=FiniteRange(0, 1, min_open=True, max_open=True),
    help="The target: the share of the cases the judge decides on which it agrees with the humans "
    "(needed unless --since applies a stored band).",
)
@click.option(
    "--confidence",
    type=FiniteRange(0, 1, min_open=True, max_open=True),
    help="The probability that the band chosen reaches the target.  [default: 0.95]",
)
@click.option(
    "--threshold",
    type=FiniteRange(-math.inf, math.inf),
    help="The judge's pass threshold, chosen without these labels [default: the one it runs at, else the "
    "metric's pass level on its scale].",
)
@click.option(
    "--save-band",
    callback=lambda ctx, param, value: file_name(value, "band name"),
    help="Store the band chosen as bands/NAME.json, for --since to apply to the cases the judge scores later.",
)
@click.option(
    "--since",
    callback=lambda ctx, param, value: file_name(value, "band name"),
    help="Apply the band stored as bands/NAME.json (by --save-band) to the cases the judge scored since it was "
    "chosen, instead of choosing one: how many the judge decides and how many go to people.",
)
@click.option(
    "--all-cases", is_flag=True, help="With --since: every case the judge scored, not only those scored since."
)
@click.option(
    "--sample",
    callback=lambda ctx, param, value: file_name(value, "sample name"),
    help="Write the cases the band sends to people and humans have not labelled on the metric as the "
    "campaign's sample NAME (samples/NAME.csv), with their inclusion probabilities, for labelstudio push.",
)
@click.option(
    "--max-cases",
    type=click.IntRange(min=1),
    help="With --sample: at most this many of those cases, drawn uniformly (inclusion probability K / N).",
)
@click.option("--seed", type=int, default=0, show_default=True, help="The seed of the --max-cases draw.")
@click.option(
    "--signal",
    type=click.Choice(["score", "repeats", "jury", "all"]),
    help="Order the candidate bands by this confidence: the score's distance from the threshold (score, the "
    "default), the share of the judge's repeats on the majority side (repeats), the share of judges of other "
    "families that agree with it (jury); all: each available one at a Bonferroni-split error budget, the "
    "one deciding the most cases kept.",
)
@out_of_scale_option
@json_option
def escalate_command(
    campaign, metric, judge, agreement, confidence, threshold, save_band, since, all_cases, sample, max_cases, seed,
    signal, out_of_scale, as_json,
) -> None:  # fmt: skip
    """The band of scores in which the judge decides alone, with its agreement with the humans on the cases
    it decides at least --agreement with probability --confidence (fixed-sequence testing); the cases
    between go to people. --save-band stores it, --sample writes the cases it sends to people as a sample
    to label, and --since applies a stored band to the cases the judge scored later."""
    _escalate_options(agreement, confidence, threshold, save_band, since, all_cases, sample, max_cases)
    if signal is not None and (since, sample, save_band) != (None, None, None):
        fail("--since, --sample and --save-band store or apply a band of scores: give them without --signal")
    queue_options = {"sample": sample, "max_cases": max_cases, "seed": seed}
    writes = sample is not None or save_band is not None
    with hold(campaign, "calibrate escalate") if writes else nullcontext():
        c = load(campaign, out_of_scale)
        if since is not None:
            _apply_band(c, since, metric, judge, all_cases, queue_options, as_json)
        else:
            options = {"agreement": agreement, "confidence": 0.95 if confidence is None else confidence}
            if signal is not None:
                options["signal"] = signal
            _choose_band(c, metric, judge, options | {"threshold": threshold}, save_band, queue_options, as_json)


def _escalate_options(agreement, confidence, threshold, save_band, since, all_cases, sample, max_cases) -> None:
    """The options that go together: a band chosen (--agreement) or a band applied (--since)."""
    if since is not None:
        given = [f for f, v in (("--agreement", agreement), ("--confidence", confidence), ("--threshold", threshold),
                                ("--save-band", save_band)) if v is not None]  # fmt: skip
        if given:
            fail(f"--since applies a stored band: {', '.join(given)} choose(s) a new one; give one or the other")
    elif agreement is None:
        fail("give --agreement A to choose a band, or --since BAND to apply a stored one")
    elif all_cases:
        fail("--all-cases goes with --since (a band chosen now is reported on every case the judge scored)")
    if max_cases is not None and sample is None:
        fail("--max-cases caps the queue that --sample writes: give --sample NAME")


def _written_queue(c, queue, sample: str | None):
    """The queue written as sample ``sample`` (its facts, with the file), or only described (None)."""
    from calibrate.sampling.escalated import queue_facts, write_queue

    if queue is None or sample is None:
        return None if queue is None else queue_facts(queue, None)
    try:
        return queue_facts(queue, write_queue(c, queue, sample))
    except (ValueError, FileExistsError) as exc:
        fail(exc)


def _choose_band(c, metric, judge, options, save_band, queue_options, as_json) -> None:
    from calibrate.analysis.escalate import escalate
    from calibrate.analysis.escalate_signals import escalate_by_signal
    from calibrate.sampling.escalated import check_free, fresh_queue
    from calibrate.sampling.escalated import save_band as store

    sample, queue, band_file = queue_options["sample"], None, None
    try:
        choose = escalate_by_signal if "signal" in options else escalate
        doc = choose(c, metric=metric, judge=judge, **options)
        if sample is not None or save_band is not None:
            check_free(c, sample=sample, band=save_band)  # both names free before anything is written
        if sample is not None:
            queue = fresh_queue(
                c, doc, max_cases=queue_options["max_cases"], seed=queue_options["seed"], band=save_band
            )
        if save_band is not None:
            band_file = store(c, doc, save_band)
    except (ValueError, FileExistsError) as exc:
        fail(exc)
    facts = _written_queue(c, queue, sample)
    if as_json:
        extra = {"band_file": None if band_file is None else str(band_file), "queue": facts}
        print_json(doc.to_dict() | ({k: v for k, v in extra.items() if v is not None}))
        return
    _print_band(doc)
    if band_file is not None:
        out.print(styled("", f"  band stored as {band_file} (apply it later: --since {save_band})"))
    _print_queue(facts)


def _apply_band(c, since, metric, judge, all_cases, queue_options, as_json) -> None:
    from calibrate.sampling.escalated import apply_band, check_free

    sample = queue_options["sample"]
    try:
        if sample is not None:
            check_free(c, sample=sample)
        doc, queue = apply_band(
            c, since, metric=metric, judge=judge, all_cases=all_cases,
            max_cases=queue_options["max_cases"], seed=queue_options["seed"],
        )  # fmt: skip
    except (ValueError, FileExistsError, CampaignError, FileError) as exc:
        fail(exc)
    if sample is not None and queue is None:
        fail(f"{doc['text']}: no case without a human label goes to people; nothing written")
    doc["queue"] = _written_queue(c, queue, sample)
    if as_json:
        print_json(doc)
        return
    out.print(styled("bold", doc["text"]))
    band = doc["band"]
    line = (
        f"  band chosen {band['created']} on {band['judge']} ({doc['judge_check']}): {band['fail_below']} / "
        f"{band['pass_at']} (fail below / pass at), target {band['target']:g} at confidence {band['confidence']:g} "
        f"from {band['n_labels']} labels"
    )
    if doc["applied_to"] == "new":
        line += f"; {doc['seen_before']} case(s) it was chosen on left out (--all-cases counts them)"
    out.print(styled("", line))
    _print_queue(doc["queue"])


def _print_queue(facts) -> None:
    if facts is None:
        return
    where = f"written to {facts['file']}" if facts["file"] else "not written (--sample NAME writes it)"
    out.print(
        styled(
            "",
            f"  queue: {facts['cases']} of the {facts['escalated_unlabelled']} case(s) sent to people without a "
            f"human label, inclusion probability {facts['inclusion_probability']:.4g}; {where}",
        )
    )


def _print_band(doc) -> None:
    out.print(styled("bold", doc.text))
    agreed = doc.agreement
    lines = [
        f"band: {doc.pass_rule}",
        f"coverage: {fmt_estimate(doc.coverage.to_dict())} of the {doc.n_scored} cases the judge scored",
        "agreement on the labelled cases it decides: "
        + (
            f"{fmt_number(agreed.value)} ({agreed.n} cases; lower bound {fmt_number(agreed.lower_bound)})"
            if agreed.value is not None
            else str(agreed.reason)
        ),
        f"target {doc.target:g} at confidence {doc.confidence:g}; {doc.n_labels} labelled cases; {doc.method}",
        f"the judge's threshold: {fmt_number(doc.threshold)}, {doc.threshold_source}",
        f"human ceiling: {doc.human_ceiling.text}",
        f"to widen the band: {doc.more_labels.text}",
    ]
    lines += _signal_lines(doc)
    for line in lines:
        out.print(styled("", "  " + line))
    by_signal = doc.signal is not None and doc.signal["name"] != "score"
    title = (
        "candidate bands by the signal, most confident first" if by_signal else "candidate bands, most confident first"
    )
    edges = ("signal at least",) if by_signal else ("pass at", "fail below")
    table = Table(title=title, box=box.SIMPLE)
    for col in (*edges, "coverage", "labelled", "disagree", "agreement", "upper bound", "test"):
        table.add_column(col)
    for cand in doc.candidates:
        if cand.tested:
            at = (cand.signal_at,) if by_signal else (cand.pass_at, cand.fail_below)
            table.add_row(
                *(fmt_number(x) for x in at),
                f"{cand.coverage:.1%}",
                str(cand.n_labelled),
                str(cand.disagreements),
                fmt_number(cand.agreement),
                fmt_number(cand.disagreement_upper_bound),
                "passed" if cand.passed else "failed",
            )
    out.print(table)


def _signal_lines(doc) -> list[str]:
    """The confidence signal's lines (--signal), and with --signal all each signal's coverage."""
    if doc.signal is None:
        return []
    lines = [f"signal: {doc.signal['name']}, {doc.signal['note']}"]
    if "multiplicity" in doc.signal:
        lines.append(f"multiplicity: {doc.signal['multiplicity']}")
    for each in doc.signals or []:
        if each["available"]:
            mark = " (kept)" if each["chosen"] else ""
            lines.append(f"  {each['name']}: decides {each['n_decided']} cases ({each['coverage']:.1%}){mark}")
        else:
            lines.append(f"  {each['name']}: not available: {each['reason']}")
    return lines


#: the commands this module adds to ``calibrate``
COMMANDS = [
    stats,
    thresholds,
    repeatability_command,
    pass_rate,
    escalate_command,
    compare_systems_command,
    calibration,
    compare,
    bias,
]


#: at most this many undecided cases are listed in the terminal (every case is in --json)
SHOWN_UNDECIDED = 20


@click.command("case-verdicts")
@click.argument("campaign", type=click.Path(file_okay=False))
@metric_option(required=True)
@judge_option(required=True, help="A judge scored with repeats (calibrate judge --repeats K).")
@click.option(
    "--threshold",
    type=FiniteRange(-math.inf, math.inf),
    help="The judge's pass threshold [default: the one it runs at, else the metric's pass level on its scale].",
)
@confidence_option
@out_of_scale_option
@json_option
def case_verdicts_command(campaign, metric, judge, threshold, confidence, out_of_scale, as_json) -> None:
    """Each case's pass rate over the judge's repeats, its exact (Clopper-Pearson) interval and its verdict:
    pass or fail when the interval lies on one side of 1/2, undecided when the repeats are what a coin flip
    could give."""
    from calibrate.analysis.case_verdicts import case_verdicts

    c = load(campaign, out_of_scale)
    try:
        doc = case_verdicts(c, metric=metric, judge=judge, threshold=threshold, confidence=confidence)
    except ValueError as exc:
        fail(exc)
    if as_json:
        print_json(doc)
        return
    out.print(styled("bold", doc["text"]), soft_wrap=True)
    out.print(f"  {doc['pass_rule']}; the threshold: {doc['threshold_source']}", soft_wrap=True)
    out.print(f"  repeats: {', '.join(doc['runs'])}", soft_wrap=True)
    if doc["n_failed_ratings"]:
        out.print(f"  {doc['n_failed_ratings']} failed rating(s) are not counted as repeats")
    undecided = [case for case in doc["cases"] if case["verdict"] == "undecided"]
    if not undecided:
        return
    undecided.sort(key=lambda case: (case["majority_share"], case["case_id"]))
    table = Table(title="undecided cases, the most split first", box=box.SIMPLE)
    for col in ("case", "passes", "pass rate", f"{doc['confidence']:.0%} interval"):
        table.add_column(col)
    for case in undecided[:SHOWN_UNDECIDED]:
        table.add_row(
            case["case_id"],
            f"{case['passes']} of {case['repeats']}",
            fmt_number(case["pass_rate"]),
            fmt_interval((case["low"], case["high"])),
        )
    out.print(table)
    if len(undecided) > SHOWN_UNDECIDED:
        out.print(f"... and {len(undecided) - SHOWN_UNDECIDED} more (see --json)")


COMMANDS.append(case_verdicts_command)
