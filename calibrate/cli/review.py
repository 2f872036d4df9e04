"""Decisions with exit codes: audit, gate, monitor, fingerprint."""

from __future__ import annotations

import sys

import click
from rich.table import Table

from calibrate.cli.console import (
    FiniteRange,
    case_label,
    check_judges,
    confidence_option,
    fail,
    json_option,
    judge_option,
    load,
    metric_option,
    n_boot_option,
    out,
    out_of_scale_option,
    print_json,
    seed_option,
    styled,
    with_progress,
    with_snippets,
    writing,
)
from calibrate.report.format import RATE_NAMES, fmt_interval, fmt_number

AUDIT_STATISTIC_NAMES = (
    "spearman",
    "kendall",
    "auc",
    "kappa",
    "kappa_quadratic",
    "alpha",
    "pass_kappa",
    "balanced_accuracy",
    "false_pass_rate",
    "false_fail_rate",
)


@click.command()
@click.argument("campaign", type=click.Path(file_okay=False))
@metric_option(required=True, help="The metric both judges scored.")
@click.option(
    "--old",
    "old",
    required=True,
    help="The judge in use: a judge's current ratings (JUDGE), a run (JUDGE@RUN_ID), or an earlier "
    "version the store keeps (JUDGE@MODEL, as calibrate judge names it).",
)
@click.option("--new", "new", required=True, help="The candidate, named as --old.")
@click.option(
    "--margin",
    type=FiniteRange(0),
    default=0.05,
    show_default=True,
    help="The largest loss in --statistic that still counts as at least as close to humans.",
)
@click.option(
    "--statistic",
    type=click.Choice(list(AUDIT_STATISTIC_NAMES)),
    default="spearman",
    show_default=True,
    help="The statistic the decision rests on.",
)
@seed_option
@n_boot_option
@confidence_option
@out_of_scale_option
@json_option
def audit(campaign, metric, old, new, margin, statistic, seed, n_boot, confidence, out_of_scale, as_json) -> None:
    """Is the NEW judge at least as close to humans as the OLD one? Exit code 0: non-inferior on
    --statistic, no other statistic perhaps worse beyond the margin, and better than chance; 1 otherwise."""
    from calibrate.review.audit import audit_judges

    c = load(campaign, out_of_scale)
    doc = with_progress(
        audit_judges,
        not as_json,
        c,
        metric=metric,
        old=old,
        new=new,
        margin=margin,
        statistic=statistic,
        seed=seed,
        n_boot=n_boot,
        confidence=confidence,
    )
    if as_json:
        print_json(doc)
    else:
        print_audit(doc)
    sys.exit(doc["decision"]["exit_code"])


def print_audit(doc: dict) -> None:
    decision = doc["decision"]
    out.print(
        styled(
            "bold",
            f"{doc['metric']}: {doc.get('new', {}).get('judge', '?')} (new) vs "
            f"{doc.get('old', {}).get('judge', '?')} (old) on {doc['n']} labelled cases both rated",
        )
    )
    for side, version in (doc.get("versions") or {}).items():  # a version of a judge the store keeps
        state = "the current version" if version["current"] else "an earlier version"
        out.print(
            f"{side}: {version['name']} is {state} of judge {version['judge']}: model {version['model']}, "
            f"{version['library']} {version['library_version']}, last run {version['runs'][-1]}",
            soft_wrap=True,
        )
    if "changes" in doc:
        manifest = doc.get("manifest") or {}
        table = Table(
            title="change, new minus old, with a paired bootstrap interval",
            caption=f"{manifest.get('confidence', 0.95):.0%} paired BCa intervals, {manifest.get('n_boot')} "
            "resamples of cases, the same for both judges",
        )
        for col in ("statistic", "old", "new", "change", "interval", "better"):
            table.add_column(col)
        for key, ch in doc["changes"].items():
            if ch.get("estimate") is None:
                table.add_row(key, fmt_number(ch.get("old")), fmt_number(ch.get("new")), "-", ch.get("reason", ""), "")
            else:
                table.add_row(
                    key,
                    fmt_number(ch["old"]),
                    fmt_number(ch["new"]),
                    f"{ch['change']:+.3f}",
                    fmt_interval([ch.get("ci_low"), ch.get("ci_high")]),
                    ch["better"],
                )
        out.print(table)
        mc, flips = doc["mcnemar"], doc["flips"]
        if mc.get("p_value") is not None:
            out.print(
                f"McNemar ({mc['method']}): only the old judge right on {mc['only_old_right']} case(s), only "
                f"the new one on {mc['only_new_right']}; p = {mc['p_value']:.3g}"
            )
            out.print(
                f"verdict flips: {flips['n_flips']} ({flips['n_toward_human']} toward the human label, "
                f"{flips['n_away_from_human']} away from it)"
            )
        drift = doc["drift"]
        out.print(
            f"score drift on {drift['n_cases']} cases: mean {drift['old']['mean']:.3f} -> "
            f"{drift['new']['mean']:.3f}, "
            f"KS {drift['ks_statistic']:.3f}, rank correlation {fmt_number(drift['rank_correlation'])}"
        )
        keep = drift.get("keep_false_pass_rate")
        if keep:
            out.print(
                f"to keep the old false-pass rate ({keep['old_false_pass_rate']:.3f}) use the new judge at "
                f"threshold {fmt_number(keep['new_threshold'])}; to keep the old pass rate "
                f"({drift['keep_pass_rate']['old_pass_rate']:.3f}): "
                f"{fmt_number(drift['keep_pass_rate']['new_threshold'])}"
            )
    colour = "red" if decision["exit_code"] else "yellow" if decision.get("worse") else "green"
    out.print(styled(f"bold {colour}", decision["decision"], f": {decision['reason']}"), soft_wrap=True)


@click.command()
@click.argument("campaign", type=click.Path(file_okay=False))
@metric_option(multiple=True)
@judge_option(
    multiple=True,
    help="Only this judge (repeatable; a rater or rater@run_id): the judge the pipeline uses. Without "
    "--metric, the gate checks the metrics it scores.",
)
@click.option(
    "--min-labels",
    type=click.IntRange(min=1),
    default=50,
    show_default=True,
    help="Fewest human-labelled cases a judge may be trusted on.",
)
@click.option("--min-spearman", type=FiniteRange(-1, 1), help="Floor on Spearman's rho (its interval's lower bound).")
@click.option(
    "--min-kappa",
    type=FiniteRange(-1, 1),
    help="Floor on kappa, on the metric's scale where defined, else of pass/fail (lower bound).",
)
@click.option(
    "--max-false-pass",
    type=FiniteRange(0, 1),
    help="Ceiling on the false-pass rate at the judge's threshold (its interval's upper bound).",
)
@click.option("--forbid-self-eval", is_flag=True, help="Refuse a judge of the generator's own model family.")
@click.option(
    "--require-fingerprint",
    is_flag=True,
    help="Refuse a judge whose latest fingerprint (calibrate fingerprint) is not SAME, or that has none.",
)
@seed_option
@n_boot_option
@confidence_option
@out_of_scale_option
@json_option
def gate(
    campaign,
    metrics,
    judges,
    min_labels,
    min_spearman,
    min_kappa,
    max_false_pass,
    forbid_self_eval,
    require_fingerprint,
    seed,
    n_boot,
    confidence,
    out_of_scale,
    as_json,
) -> None:
    """Exit non-zero, listing every reason, when a judge's agreement with humans is not established."""
    from calibrate.review.gate import GateRules, run_gate

    try:  # a setting no judge could meet (a ceiling of 0, a floor of 1) is refused, naming the option
        rules = GateRules(
            min_labels=min_labels,
            min_spearman=min_spearman,
            min_kappa=min_kappa,
            max_false_pass=max_false_pass,
            forbid_self_eval=forbid_self_eval,
            require_fingerprint=require_fingerprint,
        )
    except ValueError as exc:
        fail(exc)
    c = load(campaign, out_of_scale)
    doc = with_progress(
        run_gate,
        not as_json,
        c,
        rules,
        metrics=list(metrics) or None,
        judges=check_judges(c, judges),
        seed=seed,
        n_boot=n_boot,
        confidence=confidence,
    )
    if as_json:
        print_json(doc)
    else:
        out.print("gate rules: " + "; ".join(doc["rules"]))
        out.print(f"bounds one-sided at {(1 + doc['confidence']) / 2:.1%}; {doc['n_boot']} bootstrap resamples")
        for note in doc["defaults"]:
            out.print(styled("yellow", "default: ", note))
        for check in doc["checks"]:
            mark = ("green", "pass") if check["passed"] else ("red", "FAIL")
            out.print(styled(*mark, f" {check_name(check)}"))
            for reason in check["reasons"]:
                out.print(f"    - {with_snippets(reason, c.cases)}")
        out.print(styled("bold green", "gate passed") if doc["passed"] else styled("bold red", "gate failed"))
    sys.exit(0 if doc["passed"] else 1)


def check_name(check: dict) -> str:
    """A gate check as its line names it: ``metric / judge``, or what it lacks.

    >>> check_name({"metric": "faithfulness", "judge": None}), check_name({"metric": None, "judge": "j"})
    ('faithfulness / (no judge)', 'j (no metric checked)')
    """
    if check.get("metric") is None:
        return f"{check['judge']} (no metric checked)"
    return f"{check['metric']} / {check['judge'] if check.get('judge') is not None else '(no judge)'}"


@click.command()
@click.argument("campaign", type=click.Path(file_okay=False))
@metric_option(required=True, help="The metric the judge scores in production.")
@judge_option(required=True, help="The judge: a rater, or rater@run_id for one run.")
@click.option(
    "--threshold",
    type=FiniteRange(),
    help="The judge's pass threshold in production [default: the one "
    "the metric's rule recommends on the baseline's labels].",
)
@click.option(
    "--alpha",
    type=FiniteRange(0, 1, min_open=True, max_open=True),
    default=0.05,
    show_default=True,
    help="The chance the monitor ever alarms while every rate stays in its range.",
)
@click.option(
    "--since",
    help="When the threshold was chosen (ISO 8601): the stream starts there [default: every "
    "case with a metadata.time; the baseline is the labelled cases without one].",
)
@click.option(
    "--tolerance",
    type=FiniteRange(0, 1, max_open=True),
    default=0.05,
    show_default=True,
    help="How far a rate may move from the baseline's before it has left its range.",
)
@out_of_scale_option
@json_option
def monitor(campaign, metric, judge, threshold, alpha, since, tolerance, out_of_scale, as_json) -> None:
    """Watch a judge in production: its false-pass and false-fail rates at its threshold and the human pass
    rate, over the cases in time order, with an anytime-valid change detector. Exit code 0: no alarm; 1:
    a rate left its accepted range, or the judge is not shown better than chance on the baseline."""
    from calibrate.base.errors import CampaignError
    from calibrate.review.monitor import monitor_judge

    c = load(campaign, out_of_scale)
    try:
        doc = monitor_judge(
            c, metric=metric, judge=judge, threshold=threshold, alpha=alpha, since=since, tolerance=tolerance
        )
    except (ValueError, CampaignError) as exc:
        fail(exc)
    if as_json:
        print_json(doc)
    else:
        print_monitor(doc, c.cases)
    sys.exit(0 if doc["passed"] else 1)


def print_monitor(doc: dict, cases: dict[str, dict] | None = None) -> None:
    stream, base, threshold = doc["stream"], doc["baseline"], doc["threshold"]
    out.print(
        styled(
            "bold",
            f"{doc['metric']} / {doc['judge']}: {stream['n_cases']} cases from {stream['first']} to "
            f"{stream['last']}, {stream['n_audited']} audited ({stream['audit']})",
        )
    )
    out.print(
        f"threshold {fmt_number(threshold['value'])} ({threshold['source']}); baseline: {base['n_labelled']} "
        "labelled case(s)"
    )
    table = Table(title="rates watched", caption=doc["guarantee"])
    for col in ("rate", "accepted", "now (confidence sequence)", "since", "alarms"):
        table.add_column(col, overflow="fold")
    for rate in doc["rates"]:
        current = rate["current"] or {}
        accepted = f"<= {rate['bound']:.3f}" if rate["watch"] == "above" else f">= {rate['bound']:.3f}"
        table.add_row(
            RATE_NAMES[rate["rate"]],
            accepted,
            f"{fmt_number(current.get('estimate'))} {fmt_interval([current.get('low'), current.get('high')])}",
            f"{current.get('since', '')[:19]} ({current.get('cases', 0)} cases)",
            str(len(rate["alarms"])),
        )
    out.print(table)
    for rate in doc["not_watched"]:
        out.print(styled("yellow", "not watched: ", f"{RATE_NAMES[rate['rate']]}: {rate['reason']}"))
    if not doc["baseline_fitness"]["better_than_chance"]:
        out.print(styled("bold red", "REFUSED ", doc["baseline_fitness"]["reason"]))
    for rate in doc["rates"]:
        for alarm in rate["alarms"]:
            change = (
                f"it changed around {alarm['change_time']} (case {case_label(alarm['change_case_id'], cases)}); "
                f"{alarm['cases_since_change']} cases and {alarm['audited_since_change']} audited labels since"
                if alarm.get("change_time")
                else alarm.get("no_change", "no change found")
            )
            out.print(
                styled(
                    "bold red",
                    "ALARM ",
                    f"{RATE_NAMES[rate['rate']]} {rate['watch']} {rate['bound']:.3f} "
                    f"({rate['basis']}) at {alarm['time']} "
                    f"(case {case_label(alarm['case_id'], cases)}): {change}, evidence "
                    + (
                        "certain (its range allows no such case)"
                        if alarm.get("certain")
                        else (f"{alarm['evidence']:.3g}" if alarm["evidence"] is not None else "beyond 1e308")
                        + " against the range"
                    ),
                )
            )
    if doc["passed"]:
        out.print(styled("green", "no alarm"))
    elif doc["alarmed"] and not any(a.get("change_time") for r in doc["rates"] for a in r["alarms"]):
        out.print(
            "What to do: the threshold never kept the rate in its range, not even on the baseline: choose it "
            "again under the metric's rule (calibrate thresholds), or declare the range it can keep."
        )
    elif doc["alarmed"]:
        out.print(
            "What to do: read the audited cases from the change on (the alarm names where it starts), label "
            "more of the cases since then, and choose the threshold again on labels from after the change "
            "(calibrate thresholds); if the judge's model changed under its alias, audit it (calibrate audit)."
        )


@click.command()
@click.argument("campaign", type=click.Path(file_okay=False))
@judge_option(required=True, help="A judge of [judges] in campaign.toml.")
@click.option(
    "--anchors",
    type=click.IntRange(min=4),
    default=24,
    show_default=True,
    help="How many anchor cases to choose the first time (later fingerprints use the stored ones).",
)
@click.option(
    "--repeats",
    type=click.IntRange(min=2),
    default=3,
    show_default=True,
    help="How many times each anchor is scored now.",
)
@click.option(
    "--threshold",
    type=FiniteRange(),
    help="The judge's threshold, the first time [default: the one the metric's rule recommends].",
)
@out_of_scale_option
@json_option
def fingerprint(campaign, judge, anchors, repeats, threshold, out_of_scale, as_json) -> None:
    """Has the judge changed since its threshold was chosen? Re-score its anchor cases and say SAME,
    CHANGED or FLAKY, with the evidence. Exit code 0: SAME; 1: CHANGED, FLAKY, or too many failed calls."""
    from calibrate.base.errors import CampaignError
    from calibrate.judges.runner import JudgeSetupError
    from calibrate.review.fingerprint import fingerprint_judge

    with writing(campaign, "calibrate fingerprint", out_of_scale) as c:
        try:
            doc = with_progress(
                fingerprint_judge, not as_json, c, judge=judge, anchors=anchors, repeats=repeats, threshold=threshold
            )
        except (JudgeSetupError, CampaignError) as exc:
            fail(exc)
    if as_json:
        print_json(doc)
    else:
        print_fingerprint(doc, c.cases)
    sys.exit(0 if doc["verdict"] == "SAME" else 1)


def print_fingerprint(doc: dict, cases: dict[str, dict] | None = None) -> None:
    out.print(
        styled(
            "bold",
            f"{doc['judge']} ({doc['metric']}): {len(doc['anchors'])} anchors chosen "
            f"{doc['anchors_chosen'][:10]}, threshold {fmt_number(doc['threshold'])}, "
            f"{doc['repeats']} repeats now (run {doc['run']})",
        )
    )
    table = Table(title="anchors: the score stored when they were chosen, and now")
    for col in ("case", "stored", "now", "verdict then", "verdict now", ""):
        table.add_column(col, overflow="fold")
    for a in doc["anchors"]:
        mark = (
            "straddles"
            if a["straddles"]
            else ("changed" if a["now_pass"] is not None and a["now_pass"] != a["stored_pass"] else "")
        )
        table.add_row(
            case_label(a["case_id"], cases),
            fmt_number(a["stored"]),
            ", ".join(fmt_number(v) for v in a["now"]),
            "pass" if a["stored_pass"] else "fail",
            "-" if a["now_pass"] is None else ("pass" if a["now_pass"] else "fail"),
            mark,
        )
    out.print(table)
    colour = {"SAME": "green", "CHANGED": "red", "FLAKY": "yellow"}.get(doc["verdict"], "red")
    out.print(styled(f"bold {colour}", doc["verdict"]))
    for reason in doc["reasons"]:
        out.print(f"  - {reason}")
    out.print(f"written to {doc['file']}")


#: the commands this module adds to ``calibrate``
COMMANDS = [audit, gate, monitor, fingerprint]
