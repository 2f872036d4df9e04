"""Campaign checks, statistics, thresholds and the report: validate, stats, thresholds, report, demo."""

from __future__ import annotations

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
    n_boot_option,
    out,
    out_of_scale_option,
    seed_option,
    styled,
)
from calibrate.report.format import fmt_estimate, fmt_interval, fmt_number, fmt_rate

if TYPE_CHECKING:
    from calibrate.campaign import Campaign


@main.command()
@click.argument("campaign", type=click.Path(file_okay=False))
@out_of_scale_option
def validate(campaign: str, out_of_scale: str) -> None:
    """Check a campaign folder; list every problem with its file, line and field."""
    c = _load(campaign, out_of_scale)
    table = Table(title=f"campaign {c.name}: valid")
    for col in ("metric", "scale", "human ratings", "judge ratings", "failed", "cases with a human label",
                "judges"):
        table.add_column(col)
    for name, metric in sorted(c.metrics.items()):
        rows = c.ratings[c.ratings["metric"] == name]
        human, judge = rows[rows["rater_kind"] == "human"], rows[rows["rater_kind"] == "judge"]
        table.add_row(name, metric.scale, str(len(human)), str(len(judge)), str(int(rows["value"].isna().sum())),
                      str(human.loc[human["value"].notna(), "case_id"].nunique()), str(judge["rater"].nunique()))
    out.print(table)
    out.print(f"{len(c.cases) if c.cases is not None else 'no'} cases in cases.jsonl; data {c.data_hash}")
    for a in c.adjustments:
        out.print(f"{a.action}: {a.file} line {a.line}: {a.rater} rated case {a.case_id} {a.value:g}"
                  + (f" -> {a.new_value:g}" if a.new_value is not None else ""))
    if c.set_aside:
        out.print("note: " + c.set_aside_note())


STAT_COLUMNS = {"spearman": "Spearman rho", "kappa": "kappa", "kappa_quadratic": "kappa quadratic",
                "alpha": "alpha", "auc": "AUC", "pass_kappa": "pass kappa"}


def _intervals_note(manifest: dict) -> str:
    """How the intervals beside the figures were made (printed with every table of them)."""
    return (f"{manifest.get('confidence', 0.95):.0%} intervals: BCa bootstrap, {manifest.get('n_boot')} resamples "
            "of cases (rank correlations on fewer than 50 cases: Fisher's z); rates: Wilson score")


def _print_stats(metric: dict, manifest: dict) -> None:
    """One table per metric (estimates with their intervals, and how they were made); undefined
    statistics are listed below it with their reasons."""
    table = Table(title=f"{metric['metric']} ({metric['scale']}, pass >= {fmt_number(metric['human_pass'])}): "
                        f"{metric['n_cases']} cases with a human label, {metric['n_human_pass']} passes",
                  caption=_intervals_note(manifest))
    for col in ("judge", "family", "n", *STAT_COLUMNS.values(), "at threshold"):
        table.add_column(col, no_wrap=col == "judge")
    reasons: dict[tuple[str, str], list[str]] = {}
    for j in metric["judges"]:
        cells = []
        for key, label in STAT_COLUMNS.items():
            stat = j[key]
            if stat.get("estimate") is None:
                reasons.setdefault((label, stat["reason"]), []).append(j["judge"])
                cells.append("-")
            else:
                cells.append(fmt_estimate(stat))
        threshold = (j.get("pass_threshold") or {}).get("threshold")
        table.add_row(j["judge"], j["family"] or "-", str(j["n"]), *cells, fmt_number(threshold))
    out.print(table)
    for (label, reason), names in reasons.items():
        out.print(f"  {label} undefined for {', '.join(names)}: {reason}")


@main.command()
@click.argument("campaign", type=click.Path(file_okay=False))
@click.option("--metric", "metrics", multiple=True, help="Only this metric (repeatable).")
@click.option("--judge", "judges", multiple=True, help="Only this judge (repeatable; a rater or rater@run_id).")
@click.option("--by", help="A metadata key of the cases: every statistic also per value of it.")
@seed_option
@n_boot_option
@confidence_option
@out_of_scale_option
@json_option
def stats(campaign, metrics, judges, by, seed, n_boot, confidence, out_of_scale, as_json) -> None:
    """Agreement of every judge with the human reference, with confidence intervals."""
    from calibrate import analysis

    c = _load(campaign, out_of_scale)
    try:
        with _progress() as progress:
            # the terminal tables show no curve: only the JSON document carries it
            doc = analysis.compute_stats(c, metrics=list(metrics) or None, judges=list(judges) or None, by=by,
                                         seed=seed, n_boot=n_boot, confidence=confidence, curves=as_json,
                                         progress=progress)
    except ValueError as exc:
        _fail(str(exc))
    if as_json:
        _print_json(doc)
        return
    for metric in doc["metrics"]:
        _print_stats(metric, doc["manifest"])
        if metric.get("weighted"):
            designs = "; ".join(f"{d['labelled']} from {d['sample']} ({d['strategy']}, "
                                f"{d['weight_share']:.0%} of the weight)" for d in metric["sample_designs"])
            out.print(f"  weighted by inverse inclusion probability: {designs}")
        for w in metric["warnings"]:
            out.print(styled("yellow", "warning: ", w))
        for s in metric.get("slices", []):
            _print_stats({**metric, **s, "metric": f"{metric['metric']} | {s['key']} = {s['value']}"},
                         doc["manifest"])


def _recommendations_table(recs: list[dict], manifest: dict) -> Table:
    table = Table(title="threshold recommendations",
                  caption=f"threshold interval: percentile bootstrap, {manifest.get('n_boot')} resamples of cases; "
                          "rates: Wilson score, or the one-sided bound a rule with --confidence used")
    for col in ("metric", "judge", "threshold", "threshold 95% interval", "false-pass rate", "false-fail rate",
                "at 0.5: false pass", "at 0.5: false fail"):
        table.add_column(col, overflow="fold")
    for r in recs:
        default = r.get("deepeval_default", {})
        table.add_row(r["metric"], r["judge"],
                      "none" if r["threshold"] is None else r["pass_rule"].replace("threshold", fmt_number(r["threshold"])),
                      fmt_interval(r.get("threshold_ci")), fmt_rate(r.get("false_pass_rate_detail")),
                      fmt_rate(r.get("false_fail_rate_detail")), fmt_rate(default.get("false_pass_rate")),
                      fmt_rate(default.get("false_fail_rate")))
    return table


@main.command()
@click.argument("campaign", type=click.Path(file_okay=False))
@click.option("--metric", "metrics", multiple=True, help="Only this metric (repeatable; default: every metric).")
@click.option("--judge", "judges", multiple=True, help="Only this judge (repeatable).")
@click.option("--max-false-pass", type=FiniteRange(0, 1), help="Constraint rule: ceiling on the false-pass rate.")
@click.option("--confidence", type=FiniteRange(0, 1, min_open=True, max_open=True),
              help="With --max-false-pass: the one-sided upper confidence bound must stay under the ceiling.")
@click.option("--cost-false-pass", type=FiniteRange(0, min_open=True), help="Cost rule: cost of a false pass.")
@click.option("--cost-false-fail", type=FiniteRange(0, min_open=True), help="Cost rule: cost of a false fail.")
@click.option("--prevalence", type=FiniteRange(0, 1), help="Cost rule: expected production share of human passes.")
@seed_option
@n_boot_option
@out_of_scale_option
@json_option
def thresholds(campaign, metrics, judges, max_false_pass, confidence, cost_false_pass, cost_false_fail,
               prevalence, seed, n_boot, out_of_scale, as_json) -> None:
    """Recommend a pass threshold per metric and judge: under each metric's rule in campaign.toml, or
    under the rule given (a false-pass ceiling, or costs)."""
    from calibrate import analysis

    rule = None
    if max_false_pass is not None and (cost_false_pass is not None or cost_false_fail is not None):
        _fail("give either --max-false-pass A or both --cost-false-pass X and --cost-false-fail Y, not both")
    if max_false_pass is not None:
        if prevalence is not None:
            _fail("--prevalence goes with the cost rule")
        rule = analysis.Rule("constraint", max_false_pass=max_false_pass, confidence=confidence)
    elif cost_false_pass is not None or cost_false_fail is not None:
        if None in (cost_false_pass, cost_false_fail):
            _fail("the cost rule needs both --cost-false-pass and --cost-false-fail")
        if confidence is not None:
            _fail("--confidence goes with --max-false-pass")
        rule = analysis.Rule("cost", cost_false_pass=cost_false_pass, cost_false_fail=cost_false_fail,
                             prevalence=prevalence)
    elif confidence is not None or prevalence is not None:
        _fail("--confidence goes with --max-false-pass, --prevalence with the cost rule")
    c = _load(campaign, out_of_scale)
    chosen = list(metrics) or sorted(c.metrics)
    docs = []
    try:
        with _progress() as progress:
            for metric in chosen:
                docs.append(analysis.recommend_thresholds(
                    c, metric=metric, rule=rule or analysis.default_rule(c.metrics[metric]),
                    judges=list(judges) or None, seed=seed, n_boot=n_boot, progress=progress))
    except ValueError as exc:
        _fail(str(exc))
    recs = [r for doc in docs for r in doc["recommendations"]]
    if as_json:
        _print_json({"campaign": c.name, "recommendations": recs, "manifest": docs[0]["manifest"] if docs else {}})
        return
    for metric, doc in zip(chosen, docs):
        source = "given" if rule else "campaign.toml"
        described = doc["recommendations"][0]["rule"]["description"] if doc["recommendations"] else "-"
        out.print(f"{metric}: rule ({source}): {described}")
    out.print(_recommendations_table(recs, docs[0]["manifest"] if docs else {}))
    for r in recs:
        for w in r["warnings"]:
            out.print(styled("yellow", "warning: ", f"{r['judge']}: {w}"))


def _rated(c: Campaign, metric: str, judge: str) -> bool:
    from calibrate.reference import find_judge

    try:
        find_judge(c, metric, judge)
    except ValueError:
        return False
    return True


def _report(c: Campaign, out_dir: Path, *, by: str | None, seed: int, n_boot: int,
            audits: tuple[tuple[str, str], ...] = ()) -> dict:
    from calibrate import analysis
    from calibrate.audit import audit_judges
    from calibrate.calibration import calibration_maps
    from calibrate.cli.review import _print_audit
    from calibrate.report import write_report
    from calibrate.versus import judge_matrix

    with _progress() as progress:
        doc = analysis.compute_stats(c, by=by, seed=seed, n_boot=n_boot, progress=progress)
        recs = []
        for metric in doc["metrics"]:
            rule = analysis.default_rule(c.metrics[metric["metric"]])
            recs += analysis.recommend_thresholds(c, metric=metric["metric"], rule=rule, seed=seed, n_boot=n_boot,
                                                  progress=progress)["recommendations"]
        audit_docs = []
        for old, new in audits:   # every metric both judges rated
            metrics = [m for m in sorted(c.metrics) if _rated(c, m, old) and _rated(c, m, new)]
            if not metrics:
                raise ValueError(f"--audit {old} {new}: no metric was rated by both judges")
            audit_docs += [audit_judges(c, metric=m, old=old, new=new, seed=seed, n_boot=n_boot, progress=progress)
                           for m in metrics]
    from calibrate.judges.store import STORE_NAME, JudgeStore

    judge_runs = None
    if c.path is not None and (c.path / STORE_NAME).is_file():
        store = JudgeStore(c.path / STORE_NAME, read_only=True)
        judge_runs = store.summary()
        store.close()
    with err.status("writing the report"):
        versus = [judge_matrix(c, metric=m) for m in sorted(c.metrics)
                  if len({j for j in c.ratings.loc[(c.ratings["metric"] == m) & (c.ratings["rater_kind"] == "judge"),
                                                   "rater"]}) >= 2]
        paths = write_report(doc, recs, out_dir, cases=c.cases, judge_runs=judge_runs, audits=audit_docs,
                             calibrations=calibration_maps(c, seed=seed), versus=versus)
    for metric in doc["metrics"]:
        _print_stats(metric, doc["manifest"])
        for w in metric["warnings"]:
            out.print(styled("yellow", "warning: ", w))
    out.print(_recommendations_table(recs, doc["manifest"]))
    for a in audit_docs:
        _print_audit(a)
    for path in paths.values():
        out.print(f"wrote {path}")
    return paths


@main.command()
@click.argument("campaign", type=click.Path(file_okay=False))
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default="calibrate-report", show_default=True)
@click.option("--by", help="A metadata key of the cases to slice by.")
@click.option("--audit", "audits", nargs=2, multiple=True, metavar="OLD NEW",
              help="Add a judge-upgrade audit of NEW against OLD (margin 0.05 on Spearman's rho; see "
                   "calibrate audit) for every metric both rated; repeatable.")
@seed_option
@n_boot_option
@out_of_scale_option
def report(campaign, out_dir, by, audits, seed, n_boot, out_of_scale) -> None:
    """Write the threshold-selection report: report.html, report.md and report.json."""
    c = _load(campaign, out_of_scale)
    try:
        _report(c, Path(out_dir), by=by, seed=seed, n_boot=n_boot, audits=audits)
    except ValueError as exc:
        _fail(str(exc))


@main.command()
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default="calibrate-demo", show_default=True)
@seed_option
@n_boot_option
def demo(out_dir, seed, n_boot) -> None:
    """The whole job on the embedded TREC DL 2023 campaign (NIST assessors vs nine LLM judges), offline."""
    from calibrate.demo import (
        DEMO_AUDIT,
        DEMO_OUT_OF_SCALE,
        DEMO_SLICE_KEY,
        demo_campaign_path,
    )

    out.print(f"demo campaign: {demo_campaign_path()} (out-of-scale values: {DEMO_OUT_OF_SCALE}; "
              f"slices by {DEMO_SLICE_KEY})")
    c = _load(str(demo_campaign_path()), DEMO_OUT_OF_SCALE)
    _report(c, Path(out_dir), by=DEMO_SLICE_KEY, seed=seed, n_boot=n_boot, audits=(DEMO_AUDIT,))


if __name__ == "__main__":  # pragma: no cover
    main()
