"""Running judges: judge, cache clear, probe."""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING

import click
from rich import box
from rich.measure import Measurement
from rich.table import Table

from calibrate.cli.console import (
    FiniteRange,
    fail,
    json_option,
    judge_option,
    load,
    out,
    out_of_scale_option,
    print_json,
    progress,
    seed_option,
    styled,
    writing,
)

if TYPE_CHECKING:
    from calibrate.campaign import Campaign


@click.command()
@click.argument("campaign", type=click.Path(file_okay=False))
@judge_option(multiple=True, help="Only this judge (repeatable); the others keep their ratings.")
@click.option(
    "--concurrency",
    type=click.IntRange(min=1),
    default=16,
    show_default=True,
    help="Model calls in flight at once, over all judges.",
)
@click.option("--per-provider", type=click.IntRange(min=1), help="Model calls in flight at once per endpoint.")
@click.option("--rpm", type=FiniteRange(min=0, min_open=True), help="Requests per minute, at most.")
@click.option(
    "--timeout", type=FiniteRange(min=0, min_open=True), default=60.0, show_default=True, help="Seconds per model call."
)
@click.option(
    "--retries",
    type=click.IntRange(min=0),
    default=4,
    show_default=True,
    help="Retries of a call after a 429, a 5xx, a timeout or a dropped connection.",
)
@click.option(
    "--repeats",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Score each case this many times per judge (distinct cache entries; a run_id per repeat).",
)
@click.option("--no-cache", is_flag=True, help="Score again what the store already holds (kept as new attempts).")
@click.option("--skip-incomplete", is_flag=True, help="Score the cases that have the fields; record the others.")
@click.option("--forbid-self-eval", is_flag=True, help="Refuse a judge of the generator's own model family.")
@click.option("--strict", is_flag=True, help="Stop at the first failed rating.")
@click.option(
    "--stop-after",
    type=click.IntRange(min=0),
    default=5,
    show_default=True,
    help="Stop calling an endpoint after this many consecutive ratings that could not reach it "
    "(0: never); the rest stays unscored for the next run.",
)
@out_of_scale_option
@json_option
def judge(
    campaign,
    judges,
    concurrency,
    per_provider,
    rpm,
    timeout,
    retries,
    repeats,
    no_cache,
    skip_incomplete,
    forbid_self_eval,
    strict,
    stop_after,
    out_of_scale,
    as_json,
) -> None:
    """Score the campaign's cases with its [judges]; ratings land in judge_ratings.csv.

    A judge whose model or settings changed in campaign.toml is scored again under the same name: its
    earlier ratings stay in the store, named JUDGE@MODEL or JUDGE@RUN_ID, and the summary prints the
    audit that compares them. Exit code 1 when a judge failed on every rating it tried, or an endpoint
    could not be reached."""
    from calibrate.judges.calls import CallPolicy
    from calibrate.judges.runner import JudgeSetupError, run_judges

    policy = CallPolicy(
        concurrency=concurrency, per_provider=per_provider, requests_per_minute=rpm, timeout_s=timeout, retries=retries
    )
    with writing(campaign, "calibrate judge", out_of_scale) as c:
        try:
            with progress() as bar:
                doc = run_judges(
                    c,
                    judges=list(judges) or None,
                    policy=policy,
                    repeats=repeats,
                    use_cache=not no_cache,
                    skip_incomplete=skip_incomplete,
                    forbid_self_eval=forbid_self_eval,
                    strict=strict,
                    stop_after=stop_after,
                    progress=bar,
                )
        except JudgeSetupError as exc:
            fail(exc)
    failed_all = [j for j in doc["judges"] if j["failed"] and not j["scored"]]
    if as_json:
        print_json(doc)
    else:
        print_run(doc, campaign)
        print_case_verdicts(doc, campaign, out_of_scale)
    problems = [f"judge {j['judge']} failed on all {j['failed']} rating(s) it tried" for j in failed_all]
    problems += [
        f"stopped calling {s['endpoint']} after {s['after']} consecutive ratings that could not reach it "
        f"({s['error']}); {sum(s['unscored'].values())} rating(s) left unscored for the next run"
        for s in doc["stopped"]
    ]
    if problems:
        fail("; ".join(problems), code=1)


#: the summary's columns: (header, what it shows, shown even when every judge has 0 there)
RUN_COLUMNS = (
    ("judge", "judge", True),
    ("model", "model", True),
    ("scored", "scored", True),
    ("failed", "failed", False),
    ("cached", "from_cache", True),
    ("unscored", "unscored", False),
    ("skipped", "skipped", False),
    ("own family", "self_eval", False),
    ("calls", "calls", False),
    ("tokens", "tokens", False),
    ("cost (USD)", "cost", False),
    ("time (s)", "seconds", False),
)


def _cost(judge: dict) -> str:
    if judge["cost"] is not None:
        return f"{judge['cost']:.4f}"
    return "0" if not judge["calls"] else "unknown"


def _cell(judge: dict, key: str) -> str:
    if key == "cost":
        return _cost(judge)
    if key == "seconds":
        return f"{judge['seconds']:.1f}"
    if key in ("tokens", "calls"):
        return f"{judge[key]:,}"
    return str(judge[key])


def print_run(doc: dict, campaign: str | None = None) -> None:
    """The ``calibrate judge`` summary: one row per judge (the columns where every judge has 0 left out,
    and one line per judge where the table would not fit the terminal: no name or header is cut), its
    failures grouped, and, for a judge whose model or settings changed, how its earlier ratings stay
    reachable (the audit to run, on ``campaign`` as typed)."""
    judges = doc["judges"]
    shown = [
        (header, key)
        for header, key, always in RUN_COLUMNS
        if always
        or any(j.get(key) not in (0, 0.0, None) for j in judges)
        or (key == "cost" and any(j["calls"] for j in judges))
    ]
    title = f"judge run {doc['run_id']} ({doc['seconds']:.1f} s)"
    table = Table(title=title, box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True, title_justify="left")
    for header, key in shown:
        widest = max([len(header)] + [len(_cell(j, key)) for j in judges])
        table.add_column(
            header, no_wrap=True, min_width=widest, justify="left" if key in ("judge", "model") else "right"
        )
    for j in judges:
        table.add_row(*(_cell(j, key) for header, key in shown))
    natural = Measurement.get(out, out.options.update(max_width=10**6), table).maximum  # unclamped
    if natural <= out.width:
        out.print(table)
    else:  # one line per judge: every name and figure whole, however narrow the terminal
        out.print(title)
        for j in judges:
            figures = ", ".join(f"{header} {_cell(j, key)}" for header, key in shown[2:])
            out.print(f"{j['judge']} (model {j['model']}): {figures}", soft_wrap=True)
    notes = []
    if not any(j["calls"] for j in judges):
        notes.append("every rating came from the store: no model call, nothing spent")
    if any(j["cost"] is None and j["calls"] for j in judges):
        notes.append(
            "cost unknown: the replies reported none and the model declares no price (price = "
            "{ input_per_mtok = ..., output_per_mtok = ... } in US dollars)"
        )
    if any(j["self_eval"] for j in judges):
        notes.append("own family: cases whose generator is of the judge's own model family")
    if any(j["seconds"] for j in judges):
        notes.append("time: the model's seconds summed over the ratings (calls run at once)")
    for note in notes:
        out.print(note, soft_wrap=True)
    for j in judges:
        for group in j["errors"][:10]:
            out.print(
                styled("yellow", "failed: ", f"{j['judge']}: {group['count']} rating(s): {group['error']}"),
                soft_wrap=True,
            )
        if len(j["errors"]) > 10:
            out.print(f"... and {len(j['errors']) - 10} more kinds of failure of {j['judge']} (see --json)")
        if j["rescored_suspect"]:
            out.print(
                f"note: {j['judge']}: {j['rescored_suspect']} stored rating(s) were made when judges on one "
                "endpoint all called the first judge's model (calibrate 0.1.0); they are kept in the store "
                "but were scored again"
            )
    exported = doc["exported"]
    out.print(
        f"judge_ratings.csv: {sum(exported.values())} current rating(s) of {len(exported)} judge(s)"
        + (f" ({', '.join(f'{k}: {v}' for k, v in sorted(exported.items()))})" if exported else ""),
        soft_wrap=True,
    )
    for j in judges:
        _print_versions(j, campaign)


def print_case_verdicts(doc: dict, campaign: str, out_of_scale: str | None = None) -> None:
    """For each judge the run scored with repeats, how many cases its repeats pass, fail or leave undecided
    on each metric (:func:`calibrate.analysis.case_verdicts.verdict_counts`); terminal only, so the
    ``--json`` document stays the run's (``calibrate case-verdicts --json`` gives the verdicts)."""
    repeated = sorted({r["judge"] for r in doc["ratings"] if r["repeat"] > 0})
    if not repeated:
        return
    from calibrate.analysis.case_verdicts import verdict_counts

    lines = verdict_counts(load(campaign, out_of_scale), repeated)
    if not lines:
        return
    out.print("per-case verdicts over the repeats (pass/fail: the interval of the pass rate on one side of 1/2):")
    for line in lines:
        where = f"  {line['metric']}: "
        if line["counts"] is None:
            out.print(styled("yellow", where, f"{line['judge']}: no verdicts: {line['text']}"), soft_wrap=True)
        else:
            out.print(styled("", where, line["text"]), soft_wrap=True)
    first = lines[0]
    command = ["calibrate", "case-verdicts", campaign, "--metric", first["metric"], "--judge", first["judge"]]
    out.print(styled("", "each case: ", " ".join(shlex.quote(part) for part in command)), soft_wrap=True)


def _print_versions(judge: dict, campaign: str | None) -> None:
    """A judge's change of model or settings, and the earlier versions the store keeps, by name."""
    changed = judge.get("changed")
    if changed:
        audit = changed["audit"]
        command = " ".join(
            shlex.quote(str(part))
            for part in (
                "calibrate",
                "audit",
                campaign or "CAMPAIGN",
                "--metric",
                audit["metric"],
                "--old",
                audit["old"],
                "--new",
                audit["new"],
            )
        )
        out.print(
            styled(
                "bold yellow",
                f"{judge['judge']} changed since run {changed['last_run']}: ",
                "; ".join(changed["changes"]),
            ),
            soft_wrap=True,
        )
        out.print(
            f"  judge_ratings.csv and every statistic now hold its new ratings only; its {changed['ratings']} "
            f"earlier rating(s) stay in the store as {changed['from']}. Compare them with the humans' labels:",
            soft_wrap=True,
        )
        out.print(f"  {command}", soft_wrap=True)
    earlier = [e for e in judge.get("earlier") or [] if not changed or e["name"] != changed["from"]]
    if earlier:
        listed = "; ".join(
            f"{e['name']} (model {e['model']}, {e['ratings']} rating(s), last run {e['runs'][-1]})" for e in earlier
        )
        out.print(
            f"{judge['judge']}: earlier versions kept in the store (name them in calibrate audit): {listed}",
            soft_wrap=True,
        )


def print_versions_overview(campaign: Campaign) -> None:
    """For ``validate`` and ``stats``: the earlier versions of judges the store keeps, by the name that
    reaches them, and the judges whose settings in campaign.toml have not been run yet."""
    from calibrate.judges.versions import versions_overview

    doc = versions_overview(campaign)
    if doc["problem"]:
        out.print(
            styled("yellow", "note: ", f"the judge store could not be read for earlier versions: {doc['problem']}"),
            soft_wrap=True,
        )
    for v in doc["stale"]:
        out.print(
            styled(
                "yellow",
                "warning: ",
                f"judge {v['judge']}: campaign.toml declares other settings than its "
                f"latest run (model {v['model']}, run {v['runs'][-1]}), whose ratings judge_ratings.csv "
                "still holds and every statistic shows under its name: run calibrate judge",
            ),
            soft_wrap=True,
        )
    if doc["earlier"]:
        listed = "; ".join(
            f"{v['name']} (model {v['model']}, {v['ratings']} rating(s) of the present cases, last run {v['runs'][-1]})"
            for v in doc["earlier"]
        )
        out.print(
            f"earlier judge versions kept in the store, out of every statistic (compare one with calibrate "
            f"audit --old NAME): {listed}",
            soft_wrap=True,
        )


@click.group()
def cache() -> None:
    """The store of judge ratings (judge_ratings.sqlite in the campaign)."""


@cache.command("clear")
@click.argument("campaign", type=click.Path(file_okay=False, exists=True))
@click.option(
    "--yes",
    is_flag=True,
    help="Delete the stored attempts (they were paid for): without it, nothing is "
    "deleted and the command lists what would be.",
)
def cache_clear(campaign, yes) -> None:
    """Delete every stored judge attempt of the campaign (the next run scores everything again), with
    --yes; without it, list what would be deleted and delete nothing (exit code 1).

    To remove a judge or a metric, there is no need: take it out of campaign.toml, and its ratings are
    set aside, kept for when it comes back. A damaged store is moved aside (kept beside it, renamed),
    not deleted."""
    from calibrate.judges.store import clear_judge_cache

    doc = clear_judge_cache(campaign, confirm=yes)
    if doc["refused"]:
        would = doc["would_delete"]
        cost = f", which cost {would['cost']:.4f}" if would["cost"] else ""
        out.print(f"{doc['store']} holds {would['attempts']} stored attempt(s){cost}:")
        for j in would["judges"]:
            out.print(
                f"  {j['judge']}: {j['attempts']} attempt(s) ({j['scored']} scored, {j['failed']} failed) in "
                f"{j['runs']} run(s)" + (f", cost {j['cost']:.4f}" if j["cost"] else ""),
                soft_wrap=True,
            )
        fail(
            "nothing was deleted: give --yes to delete these paid attempts (to remove a judge or a metric, take it "
            "out of campaign.toml instead: its ratings are set aside and kept)",
            code=1,
        )
    if doc["moved_to"]:
        out.print(
            f"the store {doc['store']} is damaged ({doc['problem']}): moved it to {doc['moved_to']} (kept, not "
            "deleted); the next judge run starts a new store"
        )
    elif doc["deleted"] is None:
        out.print(f"no store at {doc['store']}: nothing to clear")
    else:
        out.print(f"deleted {doc['deleted']} stored attempt(s) from {doc['store']}")


@click.command()
@click.argument("campaign", type=click.Path(file_okay=False))
@click.option(
    "--probe",
    type=click.Choice(["order", "padding"]),
    required=True,
    help="order: the retrieved contexts reversed; padding: an irrelevant sentence added to the answer.",
)
@judge_option(multiple=True, help="Only this judge of [judges] (repeatable).")
@click.option("--n", "n", type=click.IntRange(min=2), default=50, show_default=True, help="Cases sampled.")
@seed_option
@click.option(
    "--concurrency", type=click.IntRange(min=1), default=16, show_default=True, help="Model calls in flight at once."
)
@click.option(
    "--timeout", type=FiniteRange(min=0, min_open=True), default=60.0, show_default=True, help="Seconds per model call."
)
@out_of_scale_option
@json_option
def probe(campaign, probe, judges, n, seed, concurrency, timeout, out_of_scale, as_json) -> None:
    """Re-run judges on perturbed copies of sampled cases: does the score move when it should not, or
    stay when it should move?"""
    from calibrate.judges.calls import CallPolicy
    from calibrate.judges.probes import run_probe
    from calibrate.judges.runner import JudgeSetupError

    with writing(campaign, "calibrate probe", out_of_scale) as c:
        try:
            with progress(not as_json) as bar:
                doc = run_probe(
                    c,
                    probe=probe,
                    judges=list(judges) or None,
                    n=n,
                    seed=seed,
                    policy=CallPolicy(concurrency=concurrency, timeout_s=timeout),
                    progress=bar,
                )
        except (ValueError, JudgeSetupError) as exc:
            fail(exc)
    if as_json:
        print_json(doc)
        return
    table = Table(title=f"{probe} probe on {doc['n_cases']} cases (scores and store in {doc['folder']})")
    for col in ("judge", "metric", "pairs", "mean change [95% CI]", "changed", "verdict flips at 0.5", "finding"):
        table.add_column(col)
    for j in doc["judges"]:
        if "mean_change" not in j:
            table.add_row(j["judge"], j["library_metric"], str(j["n_pairs"]), "-", "-", "-", j.get("reason", ""))
            continue
        ch = j["mean_change"]
        table.add_row(
            j["judge"],
            j["library_metric"],
            str(j["n_pairs"]),
            f"{ch['estimate']:+.3f} [{ch['ci_low']:+.3f}, {ch['ci_high']:+.3f}]",
            f"{j['share_changed']:.0%}",
            f"{j['verdict_flips']['share']:.0%}",
            j["finding"] or "-",
        )
    out.print(table)


#: the commands this module adds to ``calibrate``
COMMANDS = [judge, cache, probe]
