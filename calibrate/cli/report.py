"""The threshold-selection report: report, demo."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from calibrate.cli.analysis import print_stats, recommendations_table
from calibrate.cli.console import (
    err,
    fail,
    load,
    n_boot_option,
    out,
    out_of_scale_option,
    progress,
    seed_option,
    styled,
)
from calibrate.cli.review import print_audit

if TYPE_CHECKING:
    from calibrate.campaign import Campaign


def _rated(c: Campaign, metric: str, judge: str) -> bool:
    from calibrate.campaign.reference import find_judge

    try:
        find_judge(c, metric, judge)
    except ValueError:
        return False
    return True


def _report(c: Campaign, out_dir: Path, *, by: str | None, seed: int, n_boot: int,
            audits: tuple[tuple[str, str], ...] = ()) -> dict:
    from calibrate.analysis import agreement as analysis
    from calibrate.analysis.calibration import calibration_maps
    from calibrate.analysis.versus import judge_matrix
    from calibrate.report import write_report
    from calibrate.review.audit import audit_judges

    with progress() as bar:
        doc = analysis.compute_stats(c, by=by, seed=seed, n_boot=n_boot, progress=bar)
        recs = []
        for metric in doc["metrics"]:
            rule = analysis.default_rule(c.metrics[metric["metric"]])
            recs += analysis.recommend_thresholds(c, metric=metric["metric"], rule=rule, seed=seed, n_boot=n_boot,
                                                  progress=bar)["recommendations"]
        audit_docs = []
        for old, new in audits:   # every metric both judges rated
            metrics = [m for m in sorted(c.metrics) if _rated(c, m, old) and _rated(c, m, new)]
            if not metrics:
                raise ValueError(f"--audit {old} {new}: no metric was rated by both judges")
            audit_docs += [audit_judges(c, metric=m, old=old, new=new, seed=seed, n_boot=n_boot, progress=bar)
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
        print_stats(metric, doc["manifest"])
        for w in metric["warnings"]:
            out.print(styled("yellow", "warning: ", w))
    out.print(recommendations_table(recs, doc["manifest"]))
    for a in audit_docs:
        print_audit(a)
    for path in paths.values():
        out.print(f"wrote {path}")
    return paths


@click.command()
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
    c = load(campaign, out_of_scale)
    try:
        _report(c, Path(out_dir), by=by, seed=seed, n_boot=n_boot, audits=audits)
    except ValueError as exc:
        fail(str(exc))


@click.command()
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
    c = load(str(demo_campaign_path()), DEMO_OUT_OF_SCALE)
    _report(c, Path(out_dir), by=DEMO_SLICE_KEY, seed=seed, n_boot=n_boot, audits=(DEMO_AUDIT,))


#: the commands this module adds to ``calibrate``
COMMANDS = [report, demo]
