"""Running judges: judge, cache clear, probe."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click
from rich.table import Table

from calibrate.cli.console import (
    FiniteRange,
    fail,
    json_option,
    out,
    out_of_scale_option,
    print_json,
    progress,
    seed_option,
    styled,
    writing,
)

if TYPE_CHECKING:
    pass


@click.command()
@click.argument("campaign", type=click.Path(file_okay=False))
@click.option("--judge", "judges", multiple=True, help="Only this judge (repeatable); the others keep their ratings.")
@click.option("--concurrency", type=click.IntRange(min=1), default=16, show_default=True,
              help="Model calls in flight at once, over all judges.")
@click.option("--per-provider", type=click.IntRange(min=1), help="Model calls in flight at once per endpoint.")
@click.option("--rpm", type=FiniteRange(min=0, min_open=True), help="Requests per minute, at most.")
@click.option("--timeout", type=FiniteRange(min=0, min_open=True), default=60.0, show_default=True,
              help="Seconds per model call.")
@click.option("--retries", type=click.IntRange(min=0), default=4, show_default=True,
              help="Retries of a call after a 429, a 5xx, a timeout or a dropped connection.")
@click.option("--repeats", type=click.IntRange(min=1), default=1, show_default=True,
              help="Score each case this many times per judge (distinct cache entries; a run_id per repeat).")
@click.option("--no-cache", is_flag=True, help="Score again what the store already holds (kept as new attempts).")
@click.option("--skip-incomplete", is_flag=True, help="Score the cases that have the fields; record the others.")
@click.option("--forbid-self-eval", is_flag=True, help="Refuse a judge of the generator's own model family.")
@click.option("--strict", is_flag=True, help="Stop at the first failed rating.")
@click.option("--stop-after", type=click.IntRange(min=0), default=5, show_default=True,
              help="Stop calling an endpoint after this many consecutive ratings that could not reach it "
                   "(0: never); the rest stays unscored for the next run.")
@out_of_scale_option
@json_option
def judge(campaign, judges, concurrency, per_provider, rpm, timeout, retries, repeats, no_cache, skip_incomplete,
          forbid_self_eval, strict, stop_after, out_of_scale, as_json) -> None:
    """Score the campaign's cases with its [judges]; ratings land in judge_ratings.csv.

    Exit code 1 when a judge failed on every rating it tried, or an endpoint could not be reached."""
    from calibrate.judges.calls import CallPolicy
    from calibrate.judges.runner import JudgeSetupError, run_judges

    policy = CallPolicy(concurrency=concurrency, per_provider=per_provider, requests_per_minute=rpm,
                        timeout_s=timeout, retries=retries)
    with writing(campaign, "calibrate judge", out_of_scale) as c:
        try:
            with progress() as bar:
                doc = run_judges(c, judges=list(judges) or None, policy=policy, repeats=repeats,
                                 use_cache=not no_cache, skip_incomplete=skip_incomplete,
                                 forbid_self_eval=forbid_self_eval, strict=strict, stop_after=stop_after,
                                 progress=bar)
        except JudgeSetupError as exc:
            fail(exc)
    failed_all = [j for j in doc["judges"] if j["failed"] and not j["scored"]]
    if as_json:
        print_json(doc)
    else:
        _print_run(doc)
    problems = [f"judge {j['judge']} failed on all {j['failed']} rating(s) it tried" for j in failed_all]
    problems += [f"stopped calling {s['endpoint']} after {s['after']} consecutive ratings that could not reach it "
                 f"({s['error']}); {sum(s['unscored'].values())} rating(s) left unscored for the next run"
                 for s in doc["stopped"]]
    if problems:
        fail("; ".join(problems), code=1)


def _print_run(doc: dict) -> None:
    table = Table(title=f"judge run {doc['run_id']} ({doc['seconds']:.1f} s)")
    for col in ("judge", "model", "scored", "failed", "from cache", "unscored", "skipped", "same family as generator",
                "calls", "tokens", "cost", "time (s, summed over ratings)"):
        table.add_column(col, no_wrap=col == "judge")
    for j in doc["judges"]:
        table.add_row(j["judge"], j["model"], str(j["scored"]), str(j["failed"]), str(j["from_cache"]),
                      str(j["unscored"]), str(j["skipped"]), str(j["self_eval"]), str(j["calls"]), str(j["tokens"]),
                      "-" if j["cost"] is None else f"{j['cost']:.4f}", f"{j['seconds']:.1f}")
    out.print(table)
    for j in doc["judges"]:
        for group in j["errors"][:10]:
            out.print(styled("yellow", "failed: ", f"{j['judge']}: {group['count']} rating(s): {group['error']}"),
                      soft_wrap=True)
        if len(j["errors"]) > 10:
            out.print(f"... and {len(j['errors']) - 10} more kinds of failure of {j['judge']} (see --json)")
        if j["rescored_suspect"]:
            out.print(f"note: {j['judge']}: {j['rescored_suspect']} stored rating(s) were made when judges on one "
                      "endpoint all called the first judge's model (calibrate 0.1.0); they are kept in the store "
                      "but were scored again")
    exported = doc["exported"]
    out.print(f"judge_ratings.csv: {sum(exported.values())} current rating(s) of {len(exported)} judge(s)"
              + (f" ({', '.join(f'{k}: {v}' for k, v in sorted(exported.items()))})" if exported else ""), soft_wrap=True)


@click.group()
def cache() -> None:
    """The store of judge ratings (judge_ratings.sqlite in the campaign)."""


@cache.command("clear")
@click.argument("campaign", type=click.Path(file_okay=False, exists=True))
@click.option("--yes", is_flag=True, help="Delete the stored attempts (they were paid for): without it, nothing is "
                                          "deleted and the command lists what would be.")
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
            out.print(f"  {j['judge']}: {j['attempts']} attempt(s) ({j['scored']} scored, {j['failed']} failed) in "
                      f"{j['runs']} run(s)" + (f", cost {j['cost']:.4f}" if j["cost"] else ""), soft_wrap=True)
        fail("nothing was deleted: give --yes to delete these paid attempts (to remove a judge or a metric, take it "
             "out of campaign.toml instead: its ratings are set aside and kept)", code=1)
    if doc["moved_to"]:
        out.print(f"the store {doc['store']} is damaged ({doc['problem']}): moved it to {doc['moved_to']} (kept, not "
                  "deleted); the next judge run starts a new store")
    elif doc["deleted"] is None:
        out.print(f"no store at {doc['store']}: nothing to clear")
    else:
        out.print(f"deleted {doc['deleted']} stored attempt(s) from {doc['store']}")


@click.command()
@click.argument("campaign", type=click.Path(file_okay=False))
@click.option("--probe", type=click.Choice(["order", "padding"]), required=True,
              help="order: the retrieved contexts reversed; padding: an irrelevant sentence added to the answer.")
@click.option("--judge", "judges", multiple=True, help="Only this judge of [judges] (repeatable).")
@click.option("--n", "n", type=click.IntRange(min=2), default=50, show_default=True, help="Cases sampled.")
@seed_option
@click.option("--concurrency", type=click.IntRange(min=1), default=16, show_default=True,
              help="Model calls in flight at once.")
@click.option("--timeout", type=FiniteRange(min=0, min_open=True), default=60.0, show_default=True,
              help="Seconds per model call.")
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
                doc = run_probe(c, probe=probe, judges=list(judges) or None, n=n, seed=seed,
                                policy=CallPolicy(concurrency=concurrency, timeout_s=timeout), progress=bar)
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
        table.add_row(j["judge"], j["library_metric"], str(j["n_pairs"]),
                      f"{ch['estimate']:+.3f} [{ch['ci_low']:+.3f}, {ch['ci_high']:+.3f}]",
                      f"{j['share_changed']:.0%}", f"{j['verdict_flips']['share']:.0%}", j["finding"] or "-")
    out.print(table)


#: the commands this module adds to ``calibrate``
COMMANDS = [judge, cache, probe]
