"""The ``calibrate`` command line: parse arguments, make one library call, print.

Exit codes: 0 success, 2 a campaign or usage error (every problem is listed on stderr).
"""

from __future__ import annotations

import json
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from calibrate.errors import CampaignError
from calibrate.report.format import fmt_estimate, fmt_interval, fmt_number, fmt_rate

AUDIT_STATISTIC_NAMES = ("spearman", "kendall", "auc", "kappa", "kappa_quadratic", "alpha", "pass_kappa",
                         "balanced_accuracy", "false_pass_rate", "false_fail_rate")

if TYPE_CHECKING:
    from calibrate.campaign import Campaign

# The statistics (scipy, scikit-learn, numba) and pandas are imported inside the commands that use
# them, so that `calibrate --help` answers at once.

# a pipe or a file gets a wide table rather than rich's 80 columns
out = Console(highlight=False, width=None if sys.stdout.isatty() else 160)
err = Console(stderr=True, highlight=False)

out_of_scale_option = click.option(
    "--out-of-scale", type=click.Choice(["error", "clip", "drop"]), default="error", show_default=True,
    help="What to do with a value outside the metric's scale: report an error, clip it, or drop it.")
seed_option = click.option("--seed", type=int, default=0, show_default=True, help="Bootstrap seed.")
n_boot_option = click.option("--n-boot", type=click.IntRange(min=0), default=1000, show_default=True,
                             help="Bootstrap resamples of cases.")
json_option = click.option("--json", "as_json", is_flag=True, help="Print one JSON document instead of tables.")


def _load(path: str, out_of_scale: str) -> Campaign:
    from calibrate.campaign import load_campaign

    try:
        return load_campaign(path, out_of_scale=out_of_scale)
    except CampaignError as exc:
        err.print(f"[bold red]error:[/] {exc}", markup=True, soft_wrap=True)
        sys.exit(2)


@contextmanager
def _progress(enabled: bool = True):
    """A rich progress bar on stderr, fed by the library's ``progress(done, total, label)`` callback."""
    if not enabled:
        yield None
        return
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=err, transient=True) as bar:
        tasks: dict[str, int] = {}

        def update(done: int, total: int, label: str) -> None:
            if label not in tasks:
                tasks[label] = bar.add_task(f"bootstrap {label}", total=total)
            bar.update(tasks[label], completed=done)

        yield update


def _fail(message: str) -> None:
    err.print(f"[bold red]error:[/] {message}", markup=True, soft_wrap=True)
    sys.exit(2)


def _with_progress(compute, show: bool, *args, **kwargs) -> dict:
    """``compute(*args, progress=..., **kwargs)`` under a progress bar; a ValueError is a usage error."""
    try:
        with _progress(show) as progress:
            return compute(*args, progress=progress, **kwargs)
    except ValueError as exc:
        _fail(str(exc))


def _print_json(document: dict) -> None:
    sys.stdout.write(json.dumps(document, allow_nan=False) + "\n")
    sys.stdout.flush()


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="calibrate-judges")
def main() -> None:
    """Calibrate LLM judges against human labels: agreement, error-rate curves, thresholds, reports."""


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


STAT_COLUMNS = {"spearman": "Spearman rho", "kappa": "kappa", "kappa_quadratic": "kappa quadratic",
                "alpha": "alpha", "auc": "AUC", "pass_kappa": "pass kappa"}


def _print_stats(metric: dict) -> None:
    """One table per metric (estimates with 95% intervals); undefined statistics are listed below it
    with their reasons."""
    table = Table(title=f"{metric['metric']} ({metric['scale']}, pass >= {fmt_number(metric['human_pass'])}): "
                        f"{metric['n_cases']} cases with a human label, {metric['n_human_pass']} passes")
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
@click.option("--confidence", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=0.95,
              show_default=True, help="Confidence level of every interval.")
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
        _print_stats(metric)
        if metric.get("weighted"):
            designs = "; ".join(f"{d['labelled']} from {d['sample']} ({d['strategy']}, "
                                f"{d['weight_share']:.0%} of the weight)" for d in metric["sample_designs"])
            out.print(f"  weighted by inverse inclusion probability: {designs}")
        for w in metric["warnings"]:
            out.print(f"[yellow]warning:[/] {w}", markup=True)
        for s in metric.get("slices", []):
            _print_stats({**metric, **s, "metric": f"{metric['metric']} | {s['key']} = {s['value']}"})


def _recommendations_table(recs: list[dict]) -> Table:
    table = Table(title="threshold recommendations")
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
@click.option("--metric", required=True, help="The metric to recommend a threshold for.")
@click.option("--judge", "judges", multiple=True, help="Only this judge (repeatable).")
@click.option("--max-false-pass", type=click.FloatRange(0, 1), help="Constraint rule: ceiling on the false-pass rate.")
@click.option("--confidence", type=click.FloatRange(0, 1, min_open=True, max_open=True),
              help="With --max-false-pass: the upper confidence bound must stay under the ceiling.")
@click.option("--cost-false-pass", type=click.FloatRange(0, min_open=True), help="Cost rule: cost of a false pass.")
@click.option("--cost-false-fail", type=click.FloatRange(0, min_open=True), help="Cost rule: cost of a false fail.")
@click.option("--prevalence", type=click.FloatRange(0, 1), help="Cost rule: expected production share of human passes.")
@seed_option
@n_boot_option
@out_of_scale_option
@json_option
def thresholds(campaign, metric, judges, max_false_pass, confidence, cost_false_pass, cost_false_fail,
               prevalence, seed, n_boot, out_of_scale, as_json) -> None:
    """Recommend a pass threshold per judge, by a false-pass ceiling or by costs."""
    from calibrate import analysis

    costs = (cost_false_pass, cost_false_fail)
    if (max_false_pass is None) == (cost_false_pass is None and cost_false_fail is None):
        _fail("give either --max-false-pass A or both --cost-false-pass X and --cost-false-fail Y")
    if max_false_pass is not None:
        if prevalence is not None:
            _fail("--prevalence goes with the cost rule")
        rule = analysis.Rule("constraint", max_false_pass=max_false_pass, confidence=confidence)
    else:
        if None in costs:
            _fail("the cost rule needs both --cost-false-pass and --cost-false-fail")
        if confidence is not None:
            _fail("--confidence goes with --max-false-pass")
        rule = analysis.Rule("cost", cost_false_pass=cost_false_pass, cost_false_fail=cost_false_fail,
                             prevalence=prevalence)
    c = _load(campaign, out_of_scale)
    try:
        with _progress() as progress:
            doc = analysis.recommend_thresholds(c, metric=metric, rule=rule, judges=list(judges) or None,
                                                seed=seed, n_boot=n_boot, progress=progress)
    except ValueError as exc:
        _fail(str(exc))
    if as_json:
        _print_json(doc)
        return
    out.print(f"rule: {rule.describe()}")
    out.print(_recommendations_table(doc["recommendations"]))
    for r in doc["recommendations"]:
        for w in r["warnings"]:
            out.print(f"[yellow]warning:[/] {r['judge']}: {w}", markup=True)


def _rated(c: Campaign, metric: str, judge: str) -> bool:
    from calibrate.audit import find_judge

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
        store = JudgeStore(c.path / STORE_NAME)
        judge_runs = store.summary()
        store.close()
    with err.status("writing the report"):
        versus = [judge_matrix(c, metric=m) for m in sorted(c.metrics)
                  if len({j for j in c.ratings.loc[(c.ratings["metric"] == m) & (c.ratings["rater_kind"] == "judge"),
                                                   "rater"]}) >= 2]
        paths = write_report(doc, recs, out_dir, cases=c.cases, judge_runs=judge_runs, audits=audit_docs,
                             calibrations=calibration_maps(c, seed=seed), versus=versus)
    for metric in doc["metrics"]:
        _print_stats(metric)
        for w in metric["warnings"]:
            out.print(f"[yellow]warning:[/] {w}", markup=True)
    out.print(_recommendations_table(recs))
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
@click.argument("campaign", type=click.Path(file_okay=False))
@click.option("--judge", "judges", multiple=True, help="Only this judge (repeatable).")
@click.option("--concurrency", type=click.IntRange(min=1), default=16, show_default=True,
              help="Model calls in flight at once, over all judges.")
@click.option("--per-provider", type=click.IntRange(min=1), help="Model calls in flight at once per endpoint.")
@click.option("--rpm", type=click.FloatRange(min=0, min_open=True), help="Requests per minute, at most.")
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), default=60.0, show_default=True,
              help="Seconds per model call.")
@click.option("--retries", type=click.IntRange(min=0), default=4, show_default=True,
              help="Retries of a call after a 429, a 5xx, a timeout or a dropped connection.")
@click.option("--repeats", type=click.IntRange(min=1), default=1, show_default=True,
              help="Score each case this many times per judge (distinct cache entries; a run_id per repeat).")
@click.option("--no-cache", is_flag=True, help="Score again what the store already holds (kept as new attempts).")
@click.option("--skip-incomplete", is_flag=True, help="Score the cases that have the fields; record the others.")
@click.option("--forbid-self-eval", is_flag=True, help="Refuse a judge of the generator's own model family.")
@click.option("--strict", is_flag=True, help="Stop at the first failed rating.")
@out_of_scale_option
@json_option
def judge(campaign, judges, concurrency, per_provider, rpm, timeout, retries, repeats, no_cache, skip_incomplete,
          forbid_self_eval, strict, out_of_scale, as_json) -> None:
    """Score the campaign's cases with its [judges]; ratings land in judge_ratings.csv."""
    from calibrate.judges.calls import CallPolicy
    from calibrate.judges.runner import JudgeSetupError, run_judges

    c = _load(campaign, out_of_scale)
    policy = CallPolicy(concurrency=concurrency, per_provider=per_provider, requests_per_minute=rpm,
                        timeout_s=timeout, retries=retries)
    try:
        with _progress() as progress:
            doc = run_judges(c, judges=list(judges) or None, policy=policy, repeats=repeats, use_cache=not no_cache,
                             skip_incomplete=skip_incomplete, forbid_self_eval=forbid_self_eval, strict=strict,
                             progress=progress)
    except JudgeSetupError as exc:
        _fail(str(exc))
    if as_json:
        _print_json(doc)
        return
    table = Table(title=f"judge run {doc['run_id']} ({doc['seconds']:.1f} s)")
    for col in ("judge", "scored", "failed", "from cache", "skipped", "same family as generator", "calls",
                "tokens", "cost", "time (s, summed over ratings)"):
        table.add_column(col)
    for j in doc["judges"]:
        table.add_row(j["judge"], str(j["scored"]), str(j["failed"]), str(j["from_cache"]), str(j["skipped"]),
                      str(j["self_eval"]), str(j["calls"]), str(j["tokens"]),
                      "-" if j["cost"] is None else f"{j['cost']:.4f}", f"{j['seconds']:.1f}")
    out.print(table)
    failures = [r for r in doc["ratings"] if r["error"]]
    for r in failures[:10]:
        out.print(f"[yellow]failed:[/] {r['judge']} on case {r['case_id']}: {r['error']}", markup=True)
    if len(failures) > 10:
        out.print(f"... and {len(failures) - 10} more failures (see --json)")


@main.group()
def cache() -> None:
    """The store of judge ratings (judge_ratings.sqlite in the campaign)."""


@cache.command("clear")
@click.argument("campaign", type=click.Path(file_okay=False, exists=True))
def cache_clear(campaign) -> None:
    """Delete every stored judge attempt of the campaign (the next run scores everything again)."""
    from calibrate.judges.store import STORE_NAME, JudgeStore

    path = Path(campaign) / STORE_NAME
    if not path.is_file():
        out.print(f"no store at {path}: nothing to clear")
        return
    store = JudgeStore(path)
    count = store.clear()
    store.close()
    out.print(f"deleted {count} stored attempt(s) from {path}")



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
@click.option("--threshold", type=float, help="threshold: in the judge's units (default: its recommended threshold).")
@click.option("--focus", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=0.5, show_default=True,
              help="threshold, disagreement: the share of the labels for the focus stratum.")
@click.option("--band", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=0.2, show_default=True,
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
@click.option("--metric", required=True, help="The metric both judges scored.")
@click.option("--old", "old", required=True, help="The judge in use: a rater, or rater@run_id for one run.")
@click.option("--new", "new", required=True, help="The candidate: a rater, or rater@run_id for one run.")
@click.option("--margin", type=click.FloatRange(0), default=0.05, show_default=True,
              help="The largest loss in --statistic that still counts as at least as close to humans.")
@click.option("--statistic", type=click.Choice(list(AUDIT_STATISTIC_NAMES)), default="spearman", show_default=True,
              help="The statistic the decision rests on.")
@seed_option
@click.option("--n-boot", type=click.IntRange(min=0), default=2000, show_default=True,
              help="Paired bootstrap resamples of cases (the same for both judges).")
@click.option("--confidence", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=0.95,
              show_default=True)
@out_of_scale_option
@json_option
def audit(campaign, metric, old, new, margin, statistic, seed, n_boot, confidence, out_of_scale, as_json) -> None:
    """Is the NEW judge at least as close to humans as the OLD one? Exit code 0: non-inferior; 1:
    inferior or inconclusive."""
    from calibrate.audit import audit_judges

    c = _load(campaign, out_of_scale)
    doc = _with_progress(audit_judges, not as_json, c, metric=metric, old=old, new=new, margin=margin,
                         statistic=statistic, seed=seed, n_boot=n_boot, confidence=confidence)
    if as_json:
        _print_json(doc)
    else:
        _print_audit(doc)
    sys.exit(doc["decision"]["exit_code"])


@main.command()
@click.argument("campaign", type=click.Path(file_okay=False))
@click.option("--metric", "metrics", multiple=True, help="Only this metric (repeatable).")
@click.option("--judge", "judges", multiple=True, help="Only this judge (repeatable): the judge the pipeline uses.")
@click.option("--min-labels", type=click.IntRange(min=1), default=50, show_default=True,
              help="Fewest human-labelled cases a judge may be trusted on.")
@click.option("--min-spearman", type=click.FloatRange(-1, 1), help="Floor on Spearman's rho (its interval's lower bound).")
@click.option("--min-kappa", type=click.FloatRange(-1, 1),
              help="Floor on kappa, on the metric's scale where defined, else of pass/fail (lower bound).")
@click.option("--max-false-pass", type=click.FloatRange(0, 1),
              help="Ceiling on the false-pass rate at the judge's threshold (its interval's upper bound).")
@click.option("--forbid-self-eval", is_flag=True, help="Refuse a judge of the generator's own model family.")
@seed_option
@n_boot_option
@click.option("--confidence", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=0.95,
              show_default=True)
@out_of_scale_option
@json_option
def gate(campaign, metrics, judges, min_labels, min_spearman, min_kappa, max_false_pass, forbid_self_eval, seed,
         n_boot, confidence, out_of_scale, as_json) -> None:
    """Exit non-zero, listing every reason, when a judge's agreement with humans is not established."""
    from calibrate.gate import GateRules, run_gate

    c = _load(campaign, out_of_scale)
    rules = GateRules(min_labels=min_labels, min_spearman=min_spearman, min_kappa=min_kappa,
                      max_false_pass=max_false_pass, forbid_self_eval=forbid_self_eval)
    doc = _with_progress(run_gate, not as_json, c, rules, metrics=list(metrics) or None, judges=list(judges) or None,
                         seed=seed, n_boot=n_boot, confidence=confidence)
    if as_json:
        _print_json(doc)
    else:
        out.print("gate rules: " + "; ".join(doc["rules"]))
        for check in doc["checks"]:
            mark = "[green]pass[/]" if check["passed"] else "[red]FAIL[/]"
            out.print(f"{mark} {check['metric']} / {check['judge']}", markup=True)
            for reason in check["reasons"]:
                out.print(f"    - {reason}")
        out.print("[bold green]gate passed[/]" if doc["passed"] else "[bold red]gate failed[/]", markup=True)
    sys.exit(0 if doc["passed"] else 1)


@main.command("pass-rate")
@click.argument("campaign", type=click.Path(file_okay=False))
@click.option("--metric", required=True, help="The metric.")
@click.option("--judge", required=True, help="The judge whose scores cover the cases without a human label.")
@click.option("--by", help="A metadata key of the cases: an estimate per value of it too.")
@click.option("--strata", "n_strata", type=click.IntRange(min=1), default=5, show_default=True,
              help="Strata of the judge's score for the stratified estimate.")
@click.option("--confidence", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=0.95,
              show_default=True)
@out_of_scale_option
@json_option
def pass_rate(campaign, metric, judge, by, n_strata, confidence, out_of_scale, as_json) -> None:
    """The human pass rate of every case the judge scored, from the human labels and the judge's
    scores: humans only, prediction-powered (PPI++), stratified by score, and the judge alone."""
    from calibrate.pass_rate import estimate_pass_rate

    c = _load(campaign, out_of_scale)
    try:
        doc = estimate_pass_rate(c, metric=metric, judge=judge, by=by, confidence=confidence, n_strata=n_strata)
    except ValueError as exc:
        _fail(str(exc))
    if as_json:
        _print_json(doc)
        return
    table = Table(title=f"human pass rate of {doc['metric']}, judge {doc['judge']}"
                  + (" (weighted by the sample designs)" if doc["weighted"] else ""))
    for col in ("cases", "labelled", "unlabelled", "humans only", "PPI++", "stratified by score", "judge alone",
                "labels saved (PPI++ / stratified)"):
        table.add_column(col)
    for label, part in [("all", doc["overall"])] + [(f"{s['key']} = {s['value']}", s) for s in doc.get("slices", [])]:
        saved = " / ".join(fmt_number(part[k].get("labels_saved")) for k in ("ppi", "stratified"))
        table.add_row(label, str(part["n_labelled"]), str(part["n_unlabelled"]), fmt_estimate(part["humans_only"]),
                      fmt_estimate(part["ppi"]), fmt_estimate(part["stratified"]), fmt_estimate(part["judge_only"]),
                      saved)
    out.print(table)


@main.command()
@click.argument("campaign", type=click.Path(file_okay=False))
@click.option("--metric", required=True, help="The metric.")
@click.option("--judge", required=True, help="The judge whose scores are mapped.")
@click.option("--score", "scores", type=float, multiple=True, help="Print the calibrated probability of this score.")
@click.option("--scores", "scores_file", type=click.Path(dir_okay=False, exists=True),
              help="A CSV with a 'score' column: write it back to --out with a calibrated_probability column.")
@click.option("--out", "out_file", type=click.Path(dir_okay=False), help="Where --scores goes (never replaced).")
@click.option("--save", type=click.Path(dir_okay=False), help="Write the map as JSON (CalibrationMap.load reads it).")
@click.option("--folds", type=click.IntRange(min=2), default=5, show_default=True,
              help="Cross-validation folds for the Brier score and calibration error.")
@seed_option
@out_of_scale_option
@json_option
def calibration(campaign, metric, judge, scores, scores_file, out_file, save, folds, seed, out_of_scale,
                as_json) -> None:
    """Map a judge's score to the probability that a human passes the case (isotonic regression), with
    its cross-validated Brier score and calibration error."""
    import numpy as np
    import pandas as pd

    from calibrate.calibration import fit_calibration

    c = _load(campaign, out_of_scale)
    if scores_file and not out_file:
        _fail("--scores needs --out: the file to write the probabilities to")
    if out_file and Path(out_file).exists():
        _fail(f"--out {out_file} exists: choose another file (nothing is overwritten)")
    try:
        fit = fit_calibration(c, metric=metric, judge=judge, n_folds=folds, seed=seed)
        table = None
        if scores_file:
            table = pd.read_csv(scores_file)
            if "score" not in table.columns:
                raise ValueError(f"{scores_file}: no 'score' column (found {', '.join(map(str, table.columns))})")
            values = pd.to_numeric(table["score"], errors="coerce")
            bad = values.isna() & table["score"].notna()
            if bad.any():
                row = int(np.flatnonzero(bad)[0])
                raise ValueError(f"{scores_file}, line {row + 2}, field 'score': {table['score'][row]!r} is not a number")
    except ValueError as exc:
        _fail(str(exc))
    cmap = fit["map"]
    if save:
        cmap.save(save)
    if table is not None:
        table["calibrated_probability"] = cmap.predict(values)
        table.to_csv(out_file, index=False)
    doc = fit | {"map": cmap.to_dict(), "scores": [{"score": v, "probability": float(p)}
                                                    for v, p in zip(scores, cmap.predict(list(scores)))]}
    if as_json:
        _print_json(doc)
        return
    cv = fit["cross_validated"]
    out.print(f"{metric} / {fit['judge']}: {fit['n']} labelled cases, human pass rate {fit['base_rate']:.3f}")
    out.print(f"calibrated ({cv['folds']}-fold cross-validated): Brier {cv['brier']:.4f}, ECE {cv['ece']:.4f}"
              + (f"; the raw score as a probability: Brier {fit['raw_score']['brier']:.4f}, ECE "
                 f"{fit['raw_score']['ece']:.4f}" if fit["raw_score"] else ""))
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


@main.command()
@click.argument("campaign", type=click.Path(file_okay=False))
@click.option("--metric", "metrics", multiple=True, help="Only this metric (repeatable).")
@click.option("--judge", "judges", multiple=True, help="Only these judges (repeatable; juries included).")
@click.option("--listed", type=click.IntRange(min=0), default=5, show_default=True,
              help="Cases listed per pair of judges: those they rank furthest apart.")
@click.option("--confidence", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=0.95,
              show_default=True)
@out_of_scale_option
@json_option
def compare(campaign, metrics, judges, listed, confidence, out_of_scale, as_json) -> None:
    """Judge versus judge: Spearman's rho between every pair of a metric's judges, beside each judge's
    agreement with the humans, and the cases two judges rank furthest apart."""
    from calibrate.versus import judge_matrix

    c = _load(campaign, out_of_scale)
    try:
        docs = [judge_matrix(c, metric=m, judges=list(judges) or None, n_listed=listed, confidence=confidence)
                for m in (list(metrics) or sorted(c.metrics))]
    except ValueError as exc:
        _fail(str(exc))
    if as_json:
        _print_json({"campaign": c.name, "metrics": docs})
        return
    for doc in docs:
        names = doc["judges"]
        rho = {(p["a"], p["b"]): p["spearman"].get("estimate") for p in doc["pairs"]}
        table = Table(title=f"{doc['metric']}: Spearman's rho between judges, and with the humans")
        table.add_column("judge")
        table.add_column("humans")
        for name in names:
            table.add_column(name, overflow="fold")
        for row, human in zip(names, doc["with_humans"]):
            cells = [fmt_number(rho.get((row, col), rho.get((col, row)))) if row != col else "1"
                     for col in names]
            table.add_row(row, fmt_number(human["spearman"].get("estimate")), *cells)
        out.print(table)
        for label in doc["least_agreeing"]:
            pair = next(p for p in doc["pairs"] if f"{p['a']} vs {p['b']}" == label)
            out.print(f"  {label} (rho {fmt_number(pair['spearman'].get('estimate'))}): furthest apart on "
                      + ", ".join(f"{x['case_id']} ({x['score_a']:g} vs {x['score_b']:g}, human "
                                  f"{fmt_number(x['human'])})" for x in pair["most_apart"]))


@main.command("repeatability")
@click.argument("campaign", type=click.Path(file_okay=False))
@click.option("--metric", "metrics", multiple=True, help="Only this metric (repeatable).")
@click.option("--judge", "judges", multiple=True, help="Only this judge (repeatable).")
@seed_option
@n_boot_option
@click.option("--confidence", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=0.95,
              show_default=True)
@out_of_scale_option
@json_option
def repeatability_command(campaign, metrics, judges, seed, n_boot, confidence, out_of_scale, as_json) -> None:
    """Test-retest agreement of judges scored with repeats (calibrate judge --repeats K): alpha across
    repeats, the share of verdicts that flip, the mean difference."""
    from calibrate.repeatability import repeatability

    c = _load(campaign, out_of_scale)
    try:
        doc = repeatability(c, metrics=list(metrics) or None, judges=list(judges) or None, n_boot=n_boot, seed=seed,
                            confidence=confidence)
    except ValueError as exc:
        _fail(str(exc))
    if as_json:
        _print_json(doc)
        return
    if not doc["judges"]:
        out.print("no judge was scored with repeats: run calibrate judge --repeats K")
        return
    table = Table(title="repeatability: each judge against itself")
    for col in ("metric", "judge", "repeats", "cases", "alpha across repeats", "verdict flips", "mean |difference|"):
        table.add_column(col)
    for r in doc["judges"]:
        flips = r["flip_share"]
        table.add_row(r["metric"], r["judge"], str(len(r["repeats"])), str(r["n_cases"]), fmt_estimate(r["alpha"]),
                      fmt_rate(flips) if flips.get("estimate") is not None else flips.get("reason", "-"),
                      fmt_number(r["mean_absolute_difference"]))
    out.print(table)


@main.command()
@click.argument("campaign", type=click.Path(file_okay=False))
@click.option("--probe", type=click.Choice(["order", "padding"]), required=True,
              help="order: the retrieved contexts reversed; padding: an irrelevant sentence added to the answer.")
@click.option("--judge", "judges", multiple=True, help="Only this judge of [judges] (repeatable).")
@click.option("--n", "n", type=click.IntRange(min=2), default=50, show_default=True, help="Cases sampled.")
@seed_option
@click.option("--concurrency", type=click.IntRange(min=1), default=16, show_default=True,
              help="Model calls in flight at once.")
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), default=60.0, show_default=True,
              help="Seconds per model call.")
@out_of_scale_option
@json_option
def probe(campaign, probe, judges, n, seed, concurrency, timeout, out_of_scale, as_json) -> None:
    """Re-run judges on perturbed copies of sampled cases: does the score move when it should not, or
    stay when it should move?"""
    from calibrate.judges.calls import CallPolicy
    from calibrate.judges.runner import JudgeSetupError
    from calibrate.probes import run_probe

    c = _load(campaign, out_of_scale)
    try:
        with _progress(not as_json) as progress:
            doc = run_probe(c, probe=probe, judges=list(judges) or None, n=n, seed=seed,
                            policy=CallPolicy(concurrency=concurrency, timeout_s=timeout), progress=progress)
    except (ValueError, JudgeSetupError) as exc:
        _fail(str(exc))
    if as_json:
        _print_json(doc)
        return
    table = Table(title=f"{probe} probe on {doc['n_cases']} cases (scores and store in {doc['folder']})")
    for col in ("judge", "metric", "pairs", "mean change [95% CI]", "changed", "verdict flips at 0.5", "finding"):
        table.add_column(col)
    for j in doc["judges"]:
        if "mean_change" not in j:
            table.add_row(j["judge"], j["library_metric"], str(j["n_pairs"]), "-", "-", "-", j.get("reason", ""))
            continue
        ch = j["mean_change"]
        table.add_row(j["judge"], j["library_metric"], str(j["n_pairs"]),
                      f"{ch['estimate']:+.3f} [{ch['ci_low']:+.3f}, {ch['ci_high']:+.3f}]",
                      f"{j['share_changed']:.0%}", f"{j['verdict_flips']['share']:.0%}", j["finding"] or "-")
    out.print(table)


@main.command()
@click.argument("campaign", type=click.Path(file_okay=False))
@click.option("--metric", required=True, help="The metric.")
@click.option("--judge", "judges", multiple=True, help="Only this judge (repeatable).")
@click.option("--by", help="A metadata key of the cases: agreement and excess per value of it.")
@click.option("--confidence", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=0.95,
              show_default=True)
@out_of_scale_option
@json_option
def bias(campaign, metric, judges, by, confidence, out_of_scale, as_json) -> None:
    """Bias probes from the labels: verbosity (answer length), self-preference (the generator's family),
    slices."""
    from calibrate.bias import bias_probes

    c = _load(campaign, out_of_scale)
    try:
        doc = bias_probes(c, metric=metric, judges=list(judges) or None, by=by, confidence=confidence)
    except ValueError as exc:
        _fail(str(exc))
    if as_json:
        _print_json(doc)
        return

    def figure(f: dict) -> str:
        if f.get("estimate") is None:
            return f.get("reason", "-")
        return f"{f['estimate']:+.3f} [{f['ci_low']:+.3f}, {f['ci_high']:+.3f}]"

    table = Table(title=f"{metric}: where each judge departs from the humans (excess: the judge's percentile rank "
                        "minus the humans')")
    for col in ("judge", "cases", "verbosity: rho(length, excess)", "self-preference: excess own - other family"):
        table.add_column(col, overflow="fold")
    for j in doc["judges"]:
        table.add_row(j["judge"], str(j["n"]), figure(j.get("verbosity", {})), figure(j.get("self_preference", {})))
    out.print(table)
    for j in doc["judges"]:
        for sl in j.get("slices", []):
            out.print(f"  {j['judge']} | {sl['key']} = {sl['value']}: {sl['n']} cases, Spearman "
                      f"{fmt_number(sl['spearman'].get('estimate'))}, mean excess {fmt_number(sl['mean_excess'])}")


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
@click.option("--rpm", type=click.FloatRange(min=0, min_open=True), help="Requests per minute, at most.")
@json_option
def collect_command(campaign, goldens, refresh, dry_run, concurrency, retries, rpm, as_json) -> None:
    """Send the goldens to the RAG service of [service] and keep its answers and retrieved chunks as the
    campaign's cases."""
    from calibrate.cases_import import read_external_cases
    from calibrate.collect.contract import load_contract
    from calibrate.collect.runner import collect, dry_run as check_contract
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
              f"{doc['already_collected']} already collected; {doc['cases']} case(s) in cases.jsonl (run {doc['run_id']})")
    for e in doc["errors"][:20]:
        out.print(f"  [red]error[/] {e['error']}", markup=True)
    if len(doc["errors"]) > 20:
        out.print(f"  ... and {len(doc['errors']) - 20} more (calibrate collect --json lists them all)")


def _print_audit(doc: dict) -> None:
    decision = doc["decision"]
    out.print(f"[bold]{doc['metric']}: {doc.get('new', {}).get('judge', '?')} (new) vs "
              f"{doc.get('old', {}).get('judge', '?')} (old) on {doc['n']} labelled cases both rated[/]", markup=True)
    if "changes" in doc:
        table = Table(title="change, new minus old, with a paired bootstrap interval")
        for col in ("statistic", "old", "new", "change", "interval", "better"):
            table.add_column(col)
        for key, ch in doc["changes"].items():
            if ch.get("estimate") is None:
                table.add_row(key, fmt_number(ch.get("old")), fmt_number(ch.get("new")), "-", ch.get("reason", ""), "")
            else:
                table.add_row(key, fmt_number(ch["old"]), fmt_number(ch["new"]), f"{ch['change']:+.3f}",
                              fmt_interval([ch.get("ci_low"), ch.get("ci_high")]), ch["better"])
        out.print(table)
        mc, flips = doc["mcnemar"], doc["flips"]
        if mc.get("p_value") is not None:
            out.print(f"McNemar ({mc['method']}): only the old judge right on {mc['only_old_right']} case(s), only "
                      f"the new one on {mc['only_new_right']}; p = {mc['p_value']:.3g}")
            out.print(f"verdict flips: {flips['n_flips']} ({flips['n_toward_human']} toward the human label, "
                      f"{flips['n_away_from_human']} away from it)")
        drift = doc["drift"]
        out.print(f"score drift on {drift['n_cases']} cases: mean {drift['old']['mean']:.3f} -> {drift['new']['mean']:.3f}, "
                  f"KS {drift['ks_statistic']:.3f}, rank correlation {fmt_number(drift['rank_correlation'])}")
        keep = drift.get("keep_false_pass_rate")
        if keep:
            out.print(f"to keep the old false-pass rate ({keep['old_false_pass_rate']:.3f}) use the new judge at "
                      f"threshold {fmt_number(keep['new_threshold'])}; to keep the old pass rate "
                      f"({drift['keep_pass_rate']['old_pass_rate']:.3f}): {fmt_number(drift['keep_pass_rate']['new_threshold'])}")
    colour = "green" if decision["decision"] == "non-inferior" else "red"
    out.print(f"[bold {colour}]{decision['decision']}[/]: {decision['reason']}", markup=True)


@main.command()
@click.argument("campaign", type=click.Path(file_okay=False))
@click.option("--metric", help="The metric to plan for (needed when the campaign has several).")
@click.option("--judge", help="The judge whose scores stratify the designs and whose threshold the error rates use.")
@click.option("--width", type=click.FloatRange(0, 2, min_open=True, max_open=True), default=0.1, show_default=True,
              help="The full width of the confidence interval wanted (0.1 is +-0.05).")
@click.option("--confidence", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=0.95,
              show_default=True)
@click.option("--strata", "n_strata", type=click.IntRange(min=2), default=5, show_default=True,
              help="Strata of the judge's score for the stratified and Neyman designs.")
@click.option("--threshold", type=float, help="The judge's pass threshold (default: its recommended one).")
@click.option("--pass-rate", type=float, help="Assume this human pass rate instead of the campaign's.")
@click.option("--false-pass-rate", type=float, help="Assume this false-pass rate instead of the campaign's.")
@click.option("--kappa", type=float, help="Assume this pass/fail kappa instead of the campaign's.")
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
                      cell(r["labels"]["neyman"]), cell(r["labels_saved"]), str(r["labelled"]), cell(r["more_needed"]))
    out.print(table)
    for note in doc["notes"]:
        out.print(f"note: {note}")


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
@click.option("--overlap", type=click.FloatRange(0, 1), default=0.0, show_default=True,
              help="Share of tasks that go to several annotators.")
@click.option("--annotators", type=click.IntRange(min=2), default=2, show_default=True,
              help="Annotators per overlapping task.")
@click.option("--sample", "sample_file", type=click.Path(dir_okay=False, exists=True),
              help="Push only the cases of this sample (calibrate sample writes samples/NAME.csv).")
@click.option("--show-judge", help="Pre-fill the new tasks with this judge's ratings (not blind: the report then "
                                   "warns that the labels may be anchored on it).")
@click.option("--show-threshold", type=float, default=0.5, show_default=True,
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
        out.print(f"[yellow]not blind:[/] {doc['pre_annotated']} new task(s) pre-filled with judge "
                  f"{doc['shown_judge']}'s ratings" + (f" (not for {', '.join(doc['not_pre_annotated_metrics'])})"
                                                       if doc["not_pre_annotated_metrics"] else "")
                  + "; statistics on these labels will warn of anchoring", markup=True)


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
              f"{doc['new']} new, {doc['changed']} changed (a new revision each), {doc['unchanged']} unchanged; "
              f"skipped {doc['cancelled']} cancelled annotation(s) and {doc['drafts']} draft(s); "
              f"{doc['ratings_written']} rating(s) in labelstudio_ratings.csv")
    if doc["decisions"]:
        d = doc["decisions"]
        out.print(f"adjudicators' decisions: {d['new']} new, {d['changed']} changed, {d['unchanged']} unchanged "
                  "(in adjudications.csv)")
@main.command()
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default="calibrate-demo", show_default=True)
@seed_option
@n_boot_option
def demo(out_dir, seed, n_boot) -> None:
    """The whole job on the embedded TREC DL 2023 campaign (NIST assessors vs nine LLM judges), offline."""
    from calibrate.demo import DEMO_AUDIT, DEMO_OUT_OF_SCALE, DEMO_SLICE_KEY, demo_campaign_path

    out.print(f"demo campaign: {demo_campaign_path()} (out-of-scale values: {DEMO_OUT_OF_SCALE}; "
              f"slices by {DEMO_SLICE_KEY})")
    c = _load(str(demo_campaign_path()), DEMO_OUT_OF_SCALE)
    _report(c, Path(out_dir), by=DEMO_SLICE_KEY, seed=seed, n_boot=n_boot, audits=(DEMO_AUDIT,))


if __name__ == "__main__":  # pragma: no cover
    main()
