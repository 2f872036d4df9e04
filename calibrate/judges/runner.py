"""``calibrate judge``: score the campaign's cases with its declared judges, concurrently and durably.

Before any call every judge checks that each case has the fields its metric reads, and flags cases
whose generator is of the judge's own family. Ratings already in the store under an unchanged cache
key cost no call; the others are scored concurrently, each attempt committed to the store at once.
Cases that share their content share a key: one call rates them all, and each is listed (``"ratings"``)
and exported under its own id.
Every judge calls its own model: judges on one endpoint share its HTTP session, never a request body.

One run at a time holds the campaign folder (a second one refuses, naming the first). A run stops
calling an endpoint after a run of consecutive ratings that could not reach it (the rest stays
unscored, so the next run tries it), and groups its failures by what went wrong.

After the run, the current rating of every declared judge, repeat and case in the store — whatever
subset this run scored — is exported to ``judge_ratings.csv``, which ``load_campaign`` reads beside
the user's own ratings file: one version of each judge, its present settings'. The ratings of its
earlier versions (another model, other settings) stay in the store, named ``JUDGE@MODEL`` or
``JUDGE@RUN_ID`` (:mod:`calibrate.judges.versions`); each run's manifest records every judge's key
template, and its summary says, for a judge whose model or settings changed since its previous run,
what changed and the name that reaches the earlier ratings (``"changed"``, ``"earlier"``).
"""

from __future__ import annotations

import asyncio
import csv
import datetime as _dt
import functools
import importlib.util
import json
import os
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

from calibrate.base.errors import ParameterText
from calibrate.base.files import holding, replacing, writes_campaign
from calibrate.base.manifest import package_version
from calibrate.base.names import inside, path_component
from calibrate.base.results import Result
from calibrate.base.secrets import clip
from calibrate.campaign import JUDGE_RATINGS_FILE, Campaign
from calibrate.campaign.judge_specs import JudgeSpec
from calibrate.campaign.metadata import generator_family
from calibrate.judges.calls import (
    CallPolicy,
    ClientPool,
    JudgeCallError,
    Usage,
    endpoint_name,
    usage,
)
from calibrate.judges.replies import JudgeReplyError, notes, sent_modes, settle_modes
from calibrate.judges.store import STORE_NAME, Attempt, JudgeStore
from calibrate.judges.structured import chain, expected_mode
from calibrate.judges.versions import (
    counted,
    judge_versions,
    rating_key,
    rating_template,
    settings_changes,
)

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["JUDGE_RATINGS_FILE", "RATING_COLUMNS", "STOP_AFTER", "JudgeSetupError", "ratings_frame", "run_judges"]

ProgressCallback = Callable[[int, int, str], None]
#: consecutive ratings that could not reach an endpoint after which a run stops calling it
STOP_AFTER = 5


class JudgeSetupError(ValueError):
    """Something to fix before any model call (missing case fields, self-evaluation, no judges)."""


@dataclass
class _Task:
    spec: JudgeSpec
    case_id: str
    repeat: int
    key: str
    self_eval: bool
    #: the structured-output mode its key was made with (:mod:`calibrate.judges.structured`)
    mode: str = "json_schema"


def _missing_fields(spec: JudgeSpec, case: dict[str, Any]) -> list[str]:
    return [f for f in spec.fields if case.get(f) in (None, "", [])]


def _adapter(spec: JudgeSpec):
    """The library adapter of a judge; a clear error when the library is not installed."""
    return _library_adapter(spec.library, spec.name)


#: library -> (the module of its adapter, the library's name as messages say it); a library not here is
#: refused (campaign.toml's judges are checked against these names where they are read)
ADAPTERS = {
    "deepeval": ("calibrate.judges.deepeval_adapter", "DeepEval"),
    "ragas": ("calibrate.judges.ragas_adapter", "RAGAS"),
}


@functools.cache
def _library_adapter(library: str, judge: str):
    if library not in ADAPTERS:
        raise JudgeSetupError(f"judge {judge}: no adapter for library {library!r}; expected one of {sorted(ADAPTERS)}")
    module, name = ADAPTERS[library]
    try:
        adapter = importlib.import_module(module)
        adapter.library_version()
        if importlib.util.find_spec(library) is None:  # metadata left behind by an uninstalled package
            raise ImportError(library)
    except (ImportError, metadata.PackageNotFoundError):
        raise JudgeSetupError(
            f"judge {judge} needs {name}: pip install 'calibrate-judges[{library}]' (or [judges], for both libraries)"
        ) from None
    return adapter


def _self_eval(spec: JudgeSpec, case: dict[str, Any]) -> bool:
    return bool(spec.family) and generator_family(case) == spec.family.lower()


def _keyed(campaign: Campaign, spec: JudgeSpec, repeats: int, mode: str | None = None) -> list[_Task]:
    """The ratings of ``spec`` on every case that has the fields it reads, with their cache keys under
    structured-output ``mode`` (by default the first its model tries)."""
    mode = mode or chain(spec.model)[0]
    template = _template(spec, mode)
    tasks = []
    for cid, case in sorted((campaign.cases or {}).items()):
        if _missing_fields(spec, case):
            continue
        for repeat in range(repeats):
            tasks.append(
                _Task(spec, cid, repeat, rating_key(template, spec.fields, case, repeat), _self_eval(spec, case), mode)
            )
    return tasks


def _template(spec: JudgeSpec, mode: str) -> dict[str, Any]:
    """The judge's cache key but for the case and the repeat (:func:`calibrate.judges.versions.rating_template`),
    with the structured-output mode its ratings are made under."""
    adapter = _adapter(spec)
    return {
        **rating_template(spec.public(), adapter.library_version(), adapter.model_versions(spec)),
        "structured_output": mode,
    }


def _expected_modes(specs: list[JudgeSpec], store: JudgeStore) -> dict[str, str]:
    """judge -> the structured-output mode its ratings are keyed by before the run calls its model."""
    manifests = [text for _, _, text in store.run_manifests()]
    return {spec.name: expected_mode(spec.model, manifests) for spec in specs}


def plan(
    campaign: Campaign, specs: list[JudgeSpec], *, repeats: int, skip_incomplete: bool, forbid_self_eval: bool
) -> tuple[list[_Task], dict[str, list[str]]]:
    """The ratings to produce, their cache keys, and the cases skipped per judge."""
    if not campaign.cases:
        raise JudgeSetupError("the campaign has no cases.jsonl: judges score cases")
    tasks, skipped, problems = [], {}, []
    for spec in specs:
        if spec.model.api_key_env and not os.environ.get(spec.model.api_key_env):
            problems.append(
                f"judge {spec.name}: the environment variable {spec.model.api_key_env} that its model "
                "names for the API key is not set"
            )
        problems += _adapter(spec).check(spec)
        incomplete = {cid: _missing_fields(spec, case) for cid, case in sorted(campaign.cases.items())}
        incomplete = {cid: fields for cid, fields in incomplete.items() if fields}
        if incomplete and not skip_incomplete:
            listed = "; ".join(f"{cid}: {', '.join(fields)}" for cid, fields in list(incomplete.items())[:20])
            more = f" (and {len(incomplete) - 20} more)" if len(incomplete) > 20 else ""
            problems.append(
                ParameterText(
                    "{_head}. Use {skip_incomplete} to score the others",
                    skip_incomplete=True,
                    _head=f"judge {spec.name} ({spec.library} {spec.metric}) needs {', '.join(spec.fields)}; "
                    f"{len(incomplete)} case(s) lack some: {listed}{more}",
                )
            )
        skipped[spec.name] = sorted(incomplete)
        mine = _keyed(campaign, spec, repeats)
        same_family = sorted({t.case_id for t in mine if t.self_eval})
        if same_family and forbid_self_eval:
            problems.append(
                ParameterText(
                    "judge {_name} is of the {_family} family, as the generator of {_n} case(s): {_cases} "
                    "({forbid_self_eval})",
                    _name=spec.name,
                    _family=spec.family,
                    _n=len(same_family),
                    _cases=", ".join(same_family[:20])
                    + (f" and {len(same_family) - 20} more" if len(same_family) > 20 else ""),
                    forbid_self_eval=True,
                )
            )
        tasks += mine
    if problems:
        raise JudgeSetupError(ParameterText.join("\n", problems))
    return tasks, skipped


@dataclass
class _Outcome:
    """A finished rating, and what failed (the exception) when it did."""

    attempt: Attempt
    failure: BaseException | None = None
    sent: Counter = field(default_factory=Counter)  # its calls answered, per structured-output mode


def _cause(exc: BaseException, kind: type) -> Any:
    """The first exception of ``kind`` in ``exc``'s chain (a library may wrap calibrate's own)."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, kind):
            return exc
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return None


def _summary(exc: BaseException) -> str:
    """What went wrong, without what differs from case to case."""
    own = _cause(exc, JudgeCallError) or _cause(exc, JudgeReplyError)
    return own.summary if own is not None else f"{type(exc).__name__}: {clip(exc, 160)}"


async def _score(
    task: _Task, case: dict[str, Any], model, store: JudgeStore, run_id: str, pool: ClientPool | None = None
) -> _Outcome:
    spent, said = Usage(), {}
    tokens = usage.set(spent), notes.set(said)
    start = time.perf_counter()
    value = reason = error = failure = None
    try:
        value, reason = await _adapter(task.spec).score_case(task.spec, model, case)
    except Exception as exc:  # noqa: BLE001 - failures are data: recorded with what happened
        error, failure = f"{type(exc).__name__}: {exc}"[:2000], exc
    finally:
        usage.reset(tokens[0])
        notes.reset(tokens[1])
    # the modes its calls were sent in (details), and the mode of its schema calls (a rating that asked for
    # no schema: the mode its model settled in, which made what it shares, such as G-Eval's steps); a mode
    # other than its key's gives it that mode's key
    learnt = pool.modes(task.spec.model) if pool is not None else None
    sent = sent_modes(said)
    keyed = settle_modes(said, learnt.settled if learnt is not None and learnt.settled else task.mode)
    key = task.key
    if keyed != task.mode:
        key = rating_key(_template(task.spec, keyed), task.spec.fields, case, task.repeat)
    attempt = Attempt(
        key,
        task.spec.name,
        task.spec.into,
        task.case_id,
        task.repeat,
        value=value,
        error=error,
        reason=reason,
        calls=spent.calls,
        prompt_tokens=spent.prompt_tokens,
        completion_tokens=spent.completion_tokens,
        cost=spent.cost,
        latency_s=time.perf_counter() - start,
        self_eval=task.self_eval,
        details=said or None,
        error_summary=_summary(failure) if failure is not None else None,
    )
    store.add(attempt, run_id=run_id)
    return _Outcome(attempt, failure, sent)


def _endpoints(spec: JudgeSpec) -> set[str]:
    """The endpoints a judge calls (its model's, and its embeddings' unless they run on this machine)."""
    models = [spec.model] + ([spec.embeddings] if spec.embeddings and spec.embeddings.provider != "local" else [])
    return {endpoint_name(m) for m in models}


@dataclass
class _Stop:
    """An endpoint the run stopped calling: after how many unreachable ratings, and why."""

    endpoint: str
    after: int
    error: str
    unscored: Counter


@dataclass
class _Learnt:
    """What a run learnt of each judge's structured output: the mode its ratings were made under, the modes
    its endpoint refused, the keys of ratings made under another mode than the one they were planned in,
    and its calls answered per mode (a judge whose calls carry no schema, such as G-Eval's logprob call
    with steps given, sends none in the mode that keys it)."""

    modes: dict[str, str]
    refused: dict[str, dict[str, str]]
    rekeyed: dict[str, str]
    sent: dict[str, Counter]


def _models(tasks: list[_Task], pool: ClientPool, policy: CallPolicy) -> dict[str, Any]:
    """One model per judge of the tasks, its calls made through ``pool``."""
    models = {}
    for task in tasks:
        if task.spec.name not in models:
            models[task.spec.name] = _adapter(task.spec).make_model(task.spec, pool, policy)
    return models


def _count_unreachable(
    outcome: _Outcome, mine: set[str], unreachable: Counter, stopped: dict[str, _Stop], stop_after: int
) -> bool:
    """Count a rating that could not reach its endpoint (or reset its endpoints' counts when it could);
    whether the endpoint is stopped now, after ``stop_after`` in a row."""
    reached = _cause(outcome.failure, JudgeCallError) if outcome.failure is not None else None
    if reached is None or not reached.connection:
        for endpoint in mine:
            unreachable[endpoint] = 0
        return False
    endpoint = reached.endpoint if reached.endpoint in mine else sorted(mine)[0]
    unreachable[endpoint] += 1
    if stop_after and unreachable[endpoint] >= stop_after and endpoint not in stopped:
        stopped[endpoint] = _Stop(endpoint, unreachable[endpoint], outcome.attempt.error_summary or "", Counter())
        return True
    return False


def _strict_failure(attempt: Attempt) -> JudgeSetupError:
    """The error that ends a ``strict`` run at its first failed rating."""
    return JudgeSetupError(
        ParameterText(
            "{strict}: judge {_judge} failed on case {_case}: {_error}",
            strict=True,
            _judge=attempt.judge,
            _case=attempt.case_id,
            _error=attempt.error,
        )
    )


def _learn_modes(pool: ClientPool, tasks: list[_Task], learnt: _Learnt) -> None:
    """Record in ``learnt`` the structured-output mode each judge's endpoint settled on, and those it refused."""
    for task in tasks:
        found = pool.modes(task.spec.model)
        if found is not None:
            if found.settled:
                learnt.modes[task.spec.name] = found.settled
            learnt.refused[task.spec.name] = dict(found.refused)


async def _run(
    campaign: Campaign,
    tasks: list[_Task],
    store: JudgeStore,
    run_id: str,
    policy: CallPolicy,
    strict: bool,
    progress: ProgressCallback | None,
    stop_after: int,
    learnt: _Learnt,
) -> tuple[list[Attempt], dict[str, _Stop]]:
    pool = ClientPool()
    models = _models(tasks, pool, policy)
    endpoints = {task.spec.name: _endpoints(task.spec) for task in tasks}
    done: list[Attempt] = []
    per_judge, judged = Counter(t.spec.name for t in tasks), Counter()  # each judge's bar: its total, its done
    unreachable: Counter = Counter()  # endpoint -> consecutive ratings that could not reach it
    stopped: dict[str, _Stop] = {}
    # Ratings in progress at once: enough to keep every call slot busy while each rating waits on its
    # own sequence of calls, few enough that the first calls start at once rather than after every
    # rating has been set up, and that ratings finish in order.
    window = max(8, 2 * policy.concurrency)
    queue = iter(tasks)
    running: dict[asyncio.Future, _Task] = {}

    def blocked(task: _Task) -> _Stop | None:
        return next((stopped[e] for e in sorted(endpoints[task.spec.name]) if e in stopped), None)

    def start_next(count: int) -> None:
        while count > 0:
            task = next(queue, None)
            if task is None:
                return
            stop = blocked(task)
            if stop is not None:  # left unscored: the next run tries it
                stop.unscored[task.spec.name] += 1
                continue
            future = asyncio.ensure_future(
                _score(task, campaign.cases[task.case_id], models[task.spec.name], store, run_id, pool)
            )
            running[future] = task
            count -= 1

    def note(outcome: _Outcome) -> None:
        """Count the ratings that could not reach their endpoint; stop calling one after ``stop_after``."""
        if _count_unreachable(outcome, endpoints[outcome.attempt.judge], unreachable, stopped, stop_after):
            for future, task in list(running.items()):
                if blocked(task) is not None:
                    future.cancel()

    try:
        start_next(window)
        while running:
            finished, _ = await asyncio.wait(list(running), return_when=asyncio.FIRST_COMPLETED)
            for future in finished:
                task = running.pop(future)
                if future.cancelled():
                    blocked(task).unscored[task.spec.name] += 1
                    continue
                outcome = future.result()  # a store that cannot be written ends the run here
                done.append(outcome.attempt)
                if outcome.attempt.cache_key != task.key:
                    learnt.rekeyed[task.key] = outcome.attempt.cache_key
                learnt.sent.setdefault(task.spec.name, Counter()).update(outcome.sent)
                note(outcome)
                if progress:  # one bar per judge
                    name = outcome.attempt.judge
                    judged[name] += 1
                    progress(judged[name], per_judge[name], f"judging {name}")
                if strict and outcome.attempt.error:
                    raise _strict_failure(outcome.attempt)
            start_next(len(finished))
    finally:
        for future in running:  # the ratings in flight when the run ends early stay unscored
            future.cancel()
        await asyncio.gather(*running, return_exceptions=True)
        await pool.close()
        _learn_modes(pool, tasks, learnt)
    return done, stopped


def export_ratings(
    campaign: Campaign, store: JudgeStore, repeats: dict[str, int] | None = None, modes: dict[str, str] | None = None
) -> dict[str, int]:
    """Write the current rating of every declared judge, repeat and case in the store to
    ``judge_ratings.csv`` (atomically: a crash leaves the previous file whole), whatever subset a run
    scored: the latest attempt under the key the judge's present settings and the case's present
    fields give. ``repeats`` (judge -> count) adds the repeats a run just asked for to those the store
    holds; ``modes`` (judge -> structured-output mode) the modes a run just made its ratings in (else each
    judge's :func:`~calibrate.judges.structured.expected_mode`). A judge scored with repeats gets one
    ``run_id`` per repeat (``repeat-0``, ``repeat-1``,
    ...), so each repeat is analysed as a run. A judge whose library is not installed here keeps the
    rows the file had, and so does a judge no longer declared in campaign.toml (its ratings are set
    aside while it is away, and back when it is declared again). Returns the rows written per declared
    judge."""
    path = campaign.path / JUDGE_RATINGS_FILE
    counts = {**store.repeats()}
    for judge, n in (repeats or {}).items():
        counts[judge] = max(counts.get(judge, 0), n)
    keys: dict[tuple, str] = {}
    kept: set[str] = set()
    repeated = set()
    # the modes a run did not just give: from the stored manifests, read only when some judge needs them
    unknown = [s for name, s in campaign.judges.items() if counts.get(name) and name not in (modes or {})]
    known = (_expected_modes(unknown, store) if unknown else {}) | (modes or {})
    for name, spec in sorted(campaign.judges.items()):
        if not counts.get(name):
            continue
        try:
            mode = known[name]
            keys |= {
                (name, t.spec.into, t.case_id, t.repeat): t.key for t in _keyed(campaign, spec, counts[name], mode)
            }
        except JudgeSetupError:
            kept.add(name)
        if counts[name] > 1:
            repeated.add(name)
    previous = []
    if path.is_file():
        with path.open(newline="", encoding="utf-8") as handle:
            previous = [row for row in csv.reader(handle)][1:]
    latest = store.latest(sorted(set(keys.values())))
    written: Counter = Counter()
    with replacing(path) as handle:
        writer = csv.writer(handle)
        writer.writerow(["case_id", "metric", "rater", "rater_kind", "value", "error", "reason", "run_id"])
        for (judge, metric, case_id, repeat), key in sorted(keys.items()):
            attempt = latest.get(key)
            if attempt is None:
                continue
            writer.writerow(
                [
                    case_id,
                    metric,
                    judge,
                    "judge",
                    "" if attempt.value is None else repr(attempt.value),
                    attempt.error or "",
                    attempt.reason or "",
                    f"repeat-{repeat}" if judge in repeated else "",
                ]
            )
            written[judge] += 1
        for row in previous:
            if len(row) > 2 and (row[2] in kept or row[2] not in campaign.judges):  # kept, or set aside
                writer.writerow(row)
                if row[2] in kept:
                    written[row[2]] += 1
    return dict(written)


MANIFEST_FOLDER = "judge_runs"


def write_manifest(folder: Path, run: dict[str, Any]) -> Path:
    """The run's manifest as ``judge_runs/RUN_ID.json`` beside the ratings (atomically)."""
    path = inside(folder, MANIFEST_FOLDER, path_component(run["run_id"], what="run id") + ".json")
    path.parent.mkdir(exist_ok=True)
    with replacing(path) as handle:
        handle.write(json.dumps(run, indent=2, sort_keys=True, default=str) + "\n")
    return path


def _errors(attempts: list[Attempt]) -> list[dict[str, Any]]:
    """A run's failures grouped by what went wrong, the most frequent first."""
    groups = Counter(a.error_summary or a.error for a in attempts if a.error)
    return [{"error": error, "count": count} for error, count in sorted(groups.items(), key=lambda g: (-g[1], g[0]))]


@dataclass
class _Rated:
    """One rating of a run (a case, judge and repeat), the attempt that gives it, and whether the cache did."""

    task: _Task
    attempt: Attempt
    from_cache: bool


def _ratings(
    tasks: list[_Task], attempts: list[Attempt], cached: dict[str, Attempt], rekeyed: dict[str, str] | None = None
) -> list[_Rated]:
    """Every rating of the run that was scored now or served from the cache, once, in the order of the
    plan (judge, case, repeat). Each case gets the attempt of its key, whichever case it was made for:
    cases that share their content share it, as they share their row's value in the exported file.
    ``rekeyed`` maps the planned key of a rating made under another structured-output mode to its key."""
    fresh = {a.cache_key: a for a in attempts}
    rated = []
    for task in tasks:
        attempt = fresh.get((rekeyed or {}).get(task.key, task.key)) or cached.get(task.key)
        if attempt is not None:
            rated.append(
                _Rated(
                    task,
                    replace(
                        attempt, judge=task.spec.name, metric=task.spec.into, case_id=task.case_id, repeat=task.repeat
                    ),
                    task.key not in fresh,
                )
            )
    return rated


def _count_unscored(tasks: list[_Task], rated: set[str], stopped: dict[str, _Stop]) -> None:
    """Count, under the first stopped endpoint of its judge, every rating the run left unscored (each case
    of a key it did not score, not just the key)."""
    for stop in stopped.values():
        stop.unscored.clear()
    for task in tasks:
        stop = next((stopped[e] for e in sorted(_endpoints(task.spec)) if e in stopped), None)
        if task.key not in rated and stop is not None:
            stop.unscored[task.spec.name] += 1


#: the columns of a judge run's ``.to_frame()``: one row per rating, as ``"ratings"`` lists them
RATING_COLUMNS = ("case_id", "metric", "judge", "repeat", "value", "error", "reason", "details", "from_cache")


def ratings_frame(document: dict[str, Any]) -> pd.DataFrame:
    """A judge run's ratings as a table (:meth:`Result.to_frame` of :func:`run_judges`): one row per
    (case, metric, judge, repeat), ``value`` NaN where the rating failed (its ``error`` says why).

    Examples
    --------
    >>> ratings_frame({"ratings": [{"case_id": "c1", "metric": "faithfulness", "judge": "j", "repeat": 0,
    ...     "value": 0.5, "error": None, "reason": None, "details": None, "from_cache": True}]}).values.tolist()
    [['c1', 'faithfulness', 'j', 0, 0.5, None, None, None, True]]
    """
    import pandas as pd

    frame = pd.DataFrame(list(document.get("ratings") or []), columns=list(RATING_COLUMNS))
    frame["value"] = frame["value"].astype(float)
    frame["repeat"] = frame["repeat"].astype(int)
    for column in ("error", "reason", "details"):
        frame[column] = frame[column].astype(object).where(frame[column].notna(), None)
    return frame


def _versions(campaign: Campaign, store: JudgeStore, run_id: str, summary: list[dict[str, Any]]) -> None:
    """Add to each judge's summary the earlier versions the store keeps (``"earlier"``: how to name them)
    and, when its model or settings changed since its previous run, what changed (``"changed"``)."""
    versions = judge_versions(campaign, store=store)
    order = {r: i for i, (r, _, _) in enumerate(store.run_manifests())}
    for entry in summary:
        listed = versions.get(entry["judge"], [])
        earlier = [v for v in listed if run_id not in v.runs]
        entry["earlier"] = [counted(campaign, v, store=store) for v in reversed(earlier)]
        entry["changed"] = None
        now = next((v for v in listed if run_id in v.runs), None)
        before = sorted(
            ((order[r], v) for v in listed for r in v.runs if order[r] < order[run_id]), key=lambda found: found[0]
        )  # the judge's earlier runs, with their versions
        if now is None or not before or before[-1][1].version == now.version:
            continue
        then = before[-1][1]
        family = (
            [f"family: {then.entry.family or 'none'} -> {now.entry.family or 'none'}"]
            if then.entry.family != now.entry.family
            else []
        )
        entry["changed"] = {
            "from": then.name,
            "model": then.model,
            "last_run": then.last_run,
            "changes": settings_changes(then.template, now.template) + family,
            "ratings": next(e["ratings"] for e in entry["earlier"] if e["name"] == then.name),
            "audit": {"metric": now.metric, "old": then.name, "new": now.name},
        }


@writes_campaign("calibrate judge")
def run_judges(
    campaign: Campaign,
    *,
    judges: list[str] | None = None,
    policy: CallPolicy | None = None,
    repeats: int = 1,
    use_cache: bool = True,
    skip_incomplete: bool = False,
    forbid_self_eval: bool = False,
    strict: bool = False,
    stop_after: int = STOP_AFTER,
    progress: ProgressCallback | None = None,
) -> Result:
    """Score the campaign's cases with its declared judges; see the module docstring.

    Parameters
    ----------
    campaign : Campaign
        A campaign loaded from its folder (:func:`~calibrate.load_campaign`), with ``cases.jsonl``.
    judges : list of str, optional
        Only these judges of ``[judges]`` (all by default). The others keep their ratings.
    policy : CallPolicy, optional
        Calls in flight, per-endpoint limits, pace, timeout and retries.
    repeats : int
        Score each case this many times per judge (distinct cache entries).
    use_cache : bool
        False scores again what the store holds (kept as new attempts).
    skip_incomplete, forbid_self_eval, strict : bool
        Score the cases that have the fields (else refuse); refuse a judge of a generator's own family;
        stop at the first failed rating.
    stop_after : int
        Stop calling an endpoint after this many consecutive ratings that could not reach it (0: never);
        its remaining ratings stay unscored, so the next run tries them.

    Returns
    -------
    Result
        The ``calibrate judge --json`` document: ``{"run_id", "seconds", "judges": [{"judge",
        "scored", "failed", "from_cache", "skipped", "unscored", "rescored_suspect", "errors", "calls",
        "tokens", "cost", "seconds", "earlier", "changed"}], "stopped": [{"endpoint", "after", "error", "unscored"}],
        "exported": {judge: rows}, "ratings": [{"case_id", "metric", "judge", "repeat", "value", "error",
        "reason", "details", "from_cache"}]}``. ``"ratings"`` holds every (case, metric, judge, repeat)
        of the run scored now or served from the cache, once, as ``judge_ratings.csv`` has it — cases
        that share their content too (one call rates them all: they share a cache key); ``scored``,
        ``failed``, ``from_cache`` and ``unscored`` count those ratings, ``calls``, ``tokens`` and
        ``cost`` what was paid (US dollars). ``earlier`` lists the judge's earlier versions the store
        keeps, by the name that reaches them (``{"name", "model", "ratings", "runs", ...}``);
        ``changed`` is None, or, when the judge's model or settings changed since its previous run,
        ``{"from", "model", "last_run", "changes", "ratings", "audit": {"metric", "old", "new"}}``.
        ``.to_frame()`` is ``"ratings"`` as a table (:func:`ratings_frame`).

    Raises
    ------
    JudgeSetupError
        What to fix before any call.
    calibrate.base.errors.FolderInUse
        Another writer (a run, an import, ...) still holds the campaign folder after the wait
        (``CALIBRATE_LOCK_TIMEOUT``, 60 s by default).
    calibrate.base.errors.StoreError
        The store is damaged, locked, read-only or on a full disk.

    Examples
    --------
    >>> import calibrate
    >>> c = calibrate.load_campaign("my-campaign")     # [judges] and [models] in its campaign.toml  # doctest: +SKIP
    >>> run = calibrate.run_judges(c)                                                  # doctest: +SKIP
    >>> run.to_frame()[["case_id", "judge", "value", "error"]]                         # doctest: +SKIP
    >>> [(j["judge"], j["scored"], j["failed"], j["from_cache"]) for j in run["judges"]]  # doctest: +SKIP
    """
    if campaign.path is None:
        raise JudgeSetupError("judging needs a campaign folder (load_campaign), where the ratings are stored")
    unknown = sorted(set(judges or ()) - set(campaign.judges))
    if unknown:
        raise JudgeSetupError(
            f"no judge {', '.join(unknown)} in campaign.toml (its judges: "
            f"{', '.join(sorted(campaign.judges)) or 'none'})"
        )
    specs = [s for name, s in sorted(campaign.judges.items()) if judges is None or name in judges]
    if not specs:
        raise JudgeSetupError("no judge to run: declare [judges.NAME] in campaign.toml")
    tasks, skipped = plan(
        campaign, specs, repeats=repeats, skip_incomplete=skip_incomplete, forbid_self_eval=forbid_self_eval
    )
    policy = policy or CallPolicy()
    inside(campaign.path, MANIFEST_FOLDER)  # a link that leads the manifest out is refused before any call
    with holding(campaign.path, "calibrate judge"):
        store = JudgeStore(campaign.path / STORE_NAME)
        try:
            tasks = _rekey(campaign, specs, tasks, _expected_modes(specs, store), repeats)
            return _judge(
                store,
                campaign,
                specs,
                tasks,
                skipped,
                policy=policy,
                repeats=repeats,
                use_cache=use_cache,
                strict=strict,
                stop_after=stop_after,
                progress=progress,
            )
        finally:
            store.close()


def _rekey(
    campaign: Campaign, specs: list[JudgeSpec], tasks: list[_Task], modes: dict[str, str], repeats: int
) -> list[_Task]:
    """The tasks, those of a judge whose expected structured-output mode is not the one they were keyed
    with keyed again with it."""
    again = {
        spec.name: spec for spec in specs if any(t.spec.name == spec.name and t.mode != modes[spec.name] for t in tasks)
    }
    if not again:
        return tasks
    redone = {name: iter(_keyed(campaign, spec, repeats, modes[name])) for name, spec in again.items()}
    return [next(redone[t.spec.name]) if t.spec.name in again else t for t in tasks]


def _run_manifest(
    campaign: Campaign,
    specs: list[JudgeSpec],
    run_id: str,
    modes: dict[str, str],
    *,
    policy: CallPolicy,
    repeats: int,
    use_cache: bool,
) -> dict[str, Any]:
    """The manifest a run starts with: its judges, the library versions, its settings."""
    versions = {"calibrate-judges": package_version("calibrate-judges"), "aiohttp": package_version("aiohttp")}
    for spec in specs:
        versions |= {spec.library: _adapter(spec).library_version(), **_adapter(spec).model_versions(spec)}
    # each judge's key template and the fields it reads: what names its version (calibrate.judges.versions)
    return {
        "run_id": run_id,
        "campaign": campaign.name,
        "data_hash": campaign.data_hash,
        "judges": [s.public() | {"key_template": _template(s, modes[s.name]), "fields": list(s.fields)} for s in specs],
        "library_versions": versions,
        "repeats": repeats,
        "use_cache": use_cache,
        "policy": {k: v for k, v in policy.__dict__.items() if not k.startswith("_")},
    }


def _one_per_key(pending: list[_Task]) -> list[_Task]:
    """The first task of each key among ``pending``."""
    # cases that share their content share a key: one call rates them all (the file gives them all the
    # key's latest attempt, so a second call would be paid for and never shown)
    first: dict[str, _Task] = {}
    for task in pending:
        first.setdefault(task.key, task)
    return list(first.values())


def _judge_summary(
    spec: JudgeSpec,
    tasks: list[_Task],
    pending: list[_Task],
    ratings: list[_Rated],
    attempts: list[Attempt],
    *,
    skipped: dict[str, list[str]],
    stopped: dict[str, _Stop],
    suspect: set[str],
) -> dict[str, Any]:
    """What a run did for one judge: ratings scored, failed, from the cache, skipped; calls and their cost."""
    mine = [r.attempt for r in ratings if r.task.spec.name == spec.name and not r.from_cache]
    spent = [a for a in attempts if a.judge == spec.name]  # the calls its model made (once per key)
    summary = {
        "judge": spec.name,
        "model": spec.model.name,
        "scored": sum(a.error is None for a in mine),
        "failed": sum(a.error is not None for a in mine),
        "from_cache": sum(r.from_cache for r in ratings if r.task.spec.name == spec.name),
        "skipped": len(skipped[spec.name]),
        "unscored": sum(stop.unscored[spec.name] for stop in stopped.values()),
        "rescored_suspect": sum(t.key in suspect for t in pending if t.spec.name == spec.name),
        "self_eval": sum(t.self_eval for t in tasks if t.spec.name == spec.name),
        "errors": _errors(mine),
        "calls": sum(a.calls for a in spent),
        "tokens": sum((a.prompt_tokens or 0) + (a.completion_tokens or 0) for a in spent),
        "cost": (sum(a.cost for a in spent if a.cost is not None) if any(a.cost is not None for a in spent) else None),
        "seconds": round(sum(a.latency_s or 0 for a in spent), 3),
    }
    if spec.metric == "g_eval":  # weighting by logprobs changes the number: say how many were
        summary["logprob_weighted"] = sum(bool((a.details or {}).get("logprob_weighted")) for a in mine)
    return summary


def _finish_manifest(
    manifest: dict[str, Any],
    specs: list[JudgeSpec],
    modes: dict[str, str],
    learnt: _Learnt,
    *,
    seconds: float,
    summary: list[dict[str, Any]],
    stops: list[dict[str, Any]],
) -> None:
    """Add to a run's manifest what the run did: the modes its ratings were made under, its summary, its counts."""
    for entry in manifest["judges"]:  # the mode each judge's ratings were made under: what keys them
        entry["key_template"] = {**entry["key_template"], "structured_output": modes[entry["name"]]}
    manifest |= {
        "seconds": seconds,
        "judges_summary": summary,
        "stopped": stops,
        "structured_output": {
            s.name: {
                "setting": s.model.structured_output,
                "mode": modes[s.name],
                "refused": learnt.refused.get(s.name, {}),
                "sent": dict(sorted(learnt.sent.get(s.name, {}).items())),
            }
            for s in specs
        },
        "counts": {
            "calls": sum(j["calls"] for j in summary),
            "failures": sum(j["failed"] for j in summary),
            "cache_hits": sum(j["from_cache"] for j in summary),
        },
    }


def _listed(ratings: list[_Rated]) -> list[dict[str, Any]]:
    """Every rating of the run, from the cache or scored, as the result lists it."""
    return [
        {
            "case_id": r.task.case_id,
            "metric": r.task.spec.into,
            "judge": r.task.spec.name,
            "repeat": r.task.repeat,
            "value": r.attempt.value,
            "error": r.attempt.error,
            "reason": r.attempt.reason,
            "details": r.attempt.details,
            "from_cache": r.from_cache,
        }
        for r in ratings
    ]


def _judge(
    store: JudgeStore,
    campaign: Campaign,
    specs: list[JudgeSpec],
    tasks: list[_Task],
    skipped: dict[str, list[str]],
    *,
    policy: CallPolicy,
    repeats: int,
    use_cache: bool,
    strict: bool,
    stop_after: int,
    progress: ProgressCallback | None,
) -> dict[str, Any]:
    run_id = _dt.datetime.now(_dt.UTC).strftime("%Y%m%dT%H%M%SZ-") + uuid.uuid4().hex[:6]
    planned = {t.spec.name: t.mode for t in tasks}
    modes = {s.name: planned.get(s.name) or chain(s.model)[0] for s in specs}
    manifest = _run_manifest(campaign, specs, run_id, modes, policy=policy, repeats=repeats, use_cache=use_cache)
    store.start_run(run_id, manifest)
    start = time.perf_counter()
    # the cache: a key whose latest attempt is a success (the attempt the file exports; a failure since is
    # tried again, as every failed rating is)
    cached = {key: a for key, a in store.latest([t.key for t in tasks]).items() if a.error is None} if use_cache else {}
    pending = [t for t in tasks if t.key not in cached]
    to_score = _one_per_key(pending)
    suspect = store.suspect_keys([t.key for t in to_score]) if use_cache else set()
    attempts, stopped = [], {}
    learnt = _Learnt({}, {}, {}, {})
    try:
        if to_score:
            attempts, stopped = asyncio.run(
                _run(campaign, to_score, store, run_id, policy, strict, progress, stop_after, learnt)
            )
    finally:
        modes |= learnt.modes
        exported = export_ratings(campaign, store, {spec.name: repeats for spec in specs}, modes)
    seconds = time.perf_counter() - start
    ratings = _ratings(tasks, attempts, cached, learnt.rekeyed)
    _count_unscored(tasks, {r.task.key for r in ratings}, stopped)
    summary = [
        _judge_summary(spec, tasks, pending, ratings, attempts, skipped=skipped, stopped=stopped, suspect=suspect)
        for spec in specs
    ]
    _versions(campaign, store, run_id, summary)
    stops = [
        {"endpoint": s.endpoint, "after": s.after, "error": s.error, "unscored": dict(s.unscored)}
        for s in stopped.values()
    ]
    _finish_manifest(manifest, specs, modes, learnt, seconds=seconds, summary=summary, stops=stops)
    store.finish_run(run_id, manifest)
    write_manifest(campaign.path, store.run(run_id))
    return Result(
        {
            "run_id": run_id,
            "seconds": seconds,
            "judges": summary,
            "stopped": stops,
            "exported": exported,
            "ratings": _listed(ratings),
        },
        ratings_frame,
    )
