"""Judges against judges and against the gate: audit, gate, pass-rate, calibration, compare, bias."""

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
    _with_progress,
    confidence_option,
    json_option,
    main,
    n_boot_option,
    out,
    out_of_scale_option,
    seed_option,
    styled,
)
from calibrate.report.format import fmt_estimate, fmt_interval, fmt_number

if TYPE_CHECKING:
    pass

AUDIT_STATISTIC_NAMES = ("spearman", "kendall", "auc", "kappa", "kappa_quadratic", "alpha", "pass_kappa",
                         "balanced_accuracy", "false_pass_rate", "false_fail_rate")


@main.command()
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
    from calibrate.audit import audit_judges

    c = _load(campaign, out_of_scale)
    doc = _with_progress(audit_judges, not as_json, c, metric=metric, old=old, new=new, margin=margin,
                         statistic=statistic, seed=seed, n_boot=n_boot, confidence=confidence)
    if as_json:
        _print_json(doc)
    else:
        _print_audit(doc)
    sys.exit(doc["decision"]["exit_code"])


def _print_audit(doc: dict) -> None:
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


@main.command()
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


@main.command("pass-rate")
@click.argument("campaign", type=click.Path(file_okay=False))
@click.option("--metric", required=True, help="The metric.")
@click.option("--judge", required=True, help="The judge whose scores cover the cases without a human label.")
@click.option("--by", help="A metadata key of the cases: an estimate per value of it too.")
@click.option("--strata", "n_strata", type=click.IntRange(min=1), default=5, show_default=True,
              help="Strata of the judge's score for the stratified estimate.")
@confidence_option
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
@click.option("--score", "scores", type=FiniteRange(), multiple=True, help="Print the calibrated probability of this score.")
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
                raise ValueError(f"{scores_file}, line {row + 2}, field 'score': {table['score'][row]!r} is not "
                                 "a number")
    except ValueError as exc:
        _fail(str(exc))
    cmap = fit["map"]
    if save:
        cmap.save(save)
    if table is not None:
        table["calibrated_probability"] = cmap.predict(values)
        from calibrate.files import replacing

        with replacing(out_file) as handle:
            table.to_csv(handle, index=False)
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


@main.command()
@click.argument("campaign", type=click.Path(file_okay=False))
@click.option("--metric", "metrics", multiple=True, help="Only this metric (repeatable).")
@click.option("--judge", "judges", multiple=True, help="Only these judges (repeatable; juries included).")
@click.option("--listed", type=click.IntRange(min=0), default=5, show_default=True,
              help="Cases listed per pair of judges: those they rank furthest apart.")
@confidence_option
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


@main.command()
@click.argument("campaign", type=click.Path(file_okay=False))
@click.option("--metric", required=True, help="The metric.")
@click.option("--judge", "judges", multiple=True, help="Only this judge (repeatable).")
@click.option("--by", help="A metadata key of the cases: agreement and excess per value of it.")
@confidence_option
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
