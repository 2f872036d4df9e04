"""Decisions with exit codes: audit, gate."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import click
from rich.table import Table

from calibrate.cli.console import (
    FiniteRange,
    confidence_option,
    json_option,
    load,
    n_boot_option,
    out,
    out_of_scale_option,
    print_json,
    seed_option,
    styled,
    with_progress,
)
from calibrate.report.format import fmt_interval, fmt_number

if TYPE_CHECKING:
    pass


AUDIT_STATISTIC_NAMES = ("spearman", "kendall", "auc", "kappa", "kappa_quadratic", "alpha", "pass_kappa",
                         "balanced_accuracy", "false_pass_rate", "false_fail_rate")


@click.command()
@click.argument("campaign", type=click.Path(file_okay=False))
@click.option("--metric", required=True, help="The metric both judges scored.")
@click.option("--old", "old", required=True, help="The judge in use: a rater, or rater@run_id for one run.")
@click.option("--new", "new", required=True, help="The candidate: a rater, or rater@run_id for one run.")
@click.option("--margin", type=FiniteRange(0), default=0.05, show_default=True,
              help="The largest loss in --statistic that still counts as at least as close to humans.")
@click.option("--statistic", type=click.Choice(list(AUDIT_STATISTIC_NAMES)), default="spearman", show_default=True,
              help="The statistic the decision rests on.")
@seed_option
@n_boot_option
@confidence_option
@out_of_scale_option
@json_option
def audit(campaign, metric, old, new, margin, statistic, seed, n_boot, confidence, out_of_scale, as_json) -> None:
    """Is the NEW judge at least as close to humans as the OLD one? Exit code 0: non-inferior; 1:
    inferior or inconclusive."""
    from calibrate.review.audit import audit_judges

    c = load(campaign, out_of_scale)
    doc = with_progress(audit_judges, not as_json, c, metric=metric, old=old, new=new, margin=margin,
                         statistic=statistic, seed=seed, n_boot=n_boot, confidence=confidence)
    if as_json:
        print_json(doc)
    else:
        print_audit(doc)
    sys.exit(doc["decision"]["exit_code"])


def print_audit(doc: dict) -> None:
    decision = doc["decision"]
    out.print(styled("bold", f"{doc['metric']}: {doc.get('new', {}).get('judge', '?')} (new) vs "
                  f"{doc.get('old', {}).get('judge', '?')} (old) on {doc['n']} labelled cases both rated"))
    if "changes" in doc:
        manifest = doc.get("manifest") or {}
        table = Table(title="change, new minus old, with a paired bootstrap interval",
                      caption=f"{manifest.get('confidence', 0.95):.0%} paired BCa intervals, {manifest.get('n_boot')} "
                              "resamples of cases, the same for both judges")
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
        out.print(f"score drift on {drift['n_cases']} cases: mean {drift['old']['mean']:.3f} -> "
                  f"{drift['new']['mean']:.3f}, "
                  f"KS {drift['ks_statistic']:.3f}, rank correlation {fmt_number(drift['rank_correlation'])}")
        keep = drift.get("keep_false_pass_rate")
        if keep:
            out.print(f"to keep the old false-pass rate ({keep['old_false_pass_rate']:.3f}) use the new judge at "
                      f"threshold {fmt_number(keep['new_threshold'])}; to keep the old pass rate "
                      f"({drift['keep_pass_rate']['old_pass_rate']:.3f}): "
                      f"{fmt_number(drift['keep_pass_rate']['new_threshold'])}")
    colour = "green" if decision["decision"] == "non-inferior" else "red"
    out.print(styled(f"bold {colour}", decision["decision"], f": {decision['reason']}"))


@click.command()
@click.argument("campaign", type=click.Path(file_okay=False))
@click.option("--metric", "metrics", multiple=True, help="Only this metric (repeatable).")
@click.option("--judge", "judges", multiple=True, help="Only this judge (repeatable): the judge the pipeline uses.")
@click.option("--min-labels", type=click.IntRange(min=1), default=50, show_default=True,
              help="Fewest human-labelled cases a judge may be trusted on.")
@click.option("--min-spearman", type=FiniteRange(-1, 1),
              help="Floor on Spearman's rho (its interval's lower bound).")
@click.option("--min-kappa", type=FiniteRange(-1, 1),
              help="Floor on kappa, on the metric's scale where defined, else of pass/fail (lower bound).")
@click.option("--max-false-pass", type=FiniteRange(0, 1),
              help="Ceiling on the false-pass rate at the judge's threshold (its interval's upper bound).")
@click.option("--forbid-self-eval", is_flag=True, help="Refuse a judge of the generator's own model family.")
@seed_option
@n_boot_option
@confidence_option
@out_of_scale_option
@json_option
def gate(campaign, metrics, judges, min_labels, min_spearman, min_kappa, max_false_pass, forbid_self_eval, seed,
         n_boot, confidence, out_of_scale, as_json) -> None:
    """Exit non-zero, listing every reason, when a judge's agreement with humans is not established."""
    from calibrate.review.gate import GateRules, run_gate

    c = load(campaign, out_of_scale)
    rules = GateRules(min_labels=min_labels, min_spearman=min_spearman, min_kappa=min_kappa,
                      max_false_pass=max_false_pass, forbid_self_eval=forbid_self_eval)
    doc = with_progress(run_gate, not as_json, c, rules, metrics=list(metrics) or None, judges=list(judges) or None,
                         seed=seed, n_boot=n_boot, confidence=confidence)
    if as_json:
        print_json(doc)
    else:
        out.print("gate rules: " + "; ".join(doc["rules"]))
        out.print(f"bounds one-sided at {(1 + doc['confidence']) / 2:.1%}; {doc['n_boot']} bootstrap resamples")
        for note in doc["defaults"]:
            out.print(styled("yellow", "default: ", note))
        for check in doc["checks"]:
            mark = ("green", "pass") if check["passed"] else ("red", "FAIL")
            out.print(styled(*mark, f" {check['metric']} / {check['judge']}"))
            for reason in check["reasons"]:
                out.print(f"    - {reason}")
        out.print(styled("bold green", "gate passed") if doc["passed"] else styled("bold red", "gate failed"))
    sys.exit(0 if doc["passed"] else 1)


#: the commands this module adds to ``calibrate``
COMMANDS = [audit, gate]
