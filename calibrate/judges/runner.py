"""``calibrate judge``: score the campaign's cases with its declared judges, concurrently and durably.

Before any call every judge checks that each case has the fields its metric reads, and flags cases
whose generator is of the judge's own family. Ratings already in the store under an unchanged cache
key cost no call; the others are scored concurrently, each attempt committed to the store at once.
After the run, the current rating of every (judge, case) is exported to ``judge_ratings.csv``, which
``load_campaign`` reads beside the user's own ratings file.
"""

from __future__ import annotations

import asyncio
import csv
import datetime as _dt
import functools
import itertools
import json
import os
import time
import uuid
from collections.abc import Callable
from importlib import metadata
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from calibrate.campaign import JUDGE_RATINGS_FILE, Campaign
from calibrate.files import replacing
from calibrate.manifest import package_version
from calibrate.judges.calls import CallPolicy, Usage, make_client, usage
from calibrate.judges.config import JudgeSpec, ModelSpec
from calibrate.judges.replies import notes
from calibrate.judges.store import STORE_NAME, Attempt, JudgeStore, cache_key

__all__ = ["run_judges", "JudgeSetupError", "JUDGE_RATINGS_FILE"]

ProgressCallback = Callable[[int, int, str], None]


class JudgeSetupError(ValueError):
    """Something to fix before any model call (missing case fields, self-evaluation, no judges)."""


@dataclass
class _Task:
    spec: JudgeSpec
    case_id: str
    repeat: int
    key: str
    self_eval: bool


def _cache_settings(spec: JudgeSpec) -> dict[str, Any]:
    """The settings that determine a rating: a DAG's tree, not the name of its file."""
    if spec.dag is None:
        return spec.settings
    return {**{k: v for k, v in spec.settings.items() if k != "dag"}, "dag_tree": spec.dag_tree}


def _cache_fields(model: ModelSpec) -> dict[str, Any]:
    """What of a model determines its output: not the variable that holds its key, nor its price."""
    return {k: v for k, v in model.public().items() if k not in ("api_key_env", "price")}


def _missing_fields(spec: JudgeSpec, case: dict[str, Any]) -> list[str]:
    return [f for f in spec.fields if case.get(f) in (None, "", [])]


def _adapter(spec: JudgeSpec):
    """The library adapter of a judge; a clear error when the library is not installed."""
    return _library_adapter(spec.library, spec.name)


@functools.lru_cache(maxsize=None)
def _library_adapter(library: str, judge: str):
    try:
        if library == "ragas":
            from calibrate.judges import ragas_adapter as adapter
        else:
            from calibrate.judges import deepeval_adapter as adapter
        adapter.library_version()
    except (ImportError, metadata.PackageNotFoundError):
        names = {"ragas": "RAGAS", "deepeval": "DeepEval"}
        raise JudgeSetupError(f"judge {judge} needs {names[library]}: pip install "
                              "'calibrate-judges[judges]'") from None
    return adapter


def plan(campaign: Campaign, specs: list[JudgeSpec], *, repeats: int, skip_incomplete: bool,
         forbid_self_eval: bool) -> tuple[list[_Task], dict[str, list[str]]]:
    """The ratings to produce, their cache keys, and the cases skipped per judge."""
    if not campaign.cases:
        raise JudgeSetupError("the campaign has no cases.jsonl: judges score cases")
    tasks, skipped, problems = [], {}, []
    for spec in specs:
        if spec.model.api_key_env and not os.environ.get(spec.model.api_key_env):
            problems.append(f"judge {spec.name}: the environment variable {spec.model.api_key_env} that its model "
                            "names for the API key is not set")
        adapter = _adapter(spec)
        problems += adapter.check(spec)
        version = adapter.library_version()
        versions = adapter.model_versions(spec)
        incomplete = {cid: _missing_fields(spec, case) for cid, case in sorted(campaign.cases.items())}
        incomplete = {cid: fields for cid, fields in incomplete.items() if fields}
        if incomplete and not skip_incomplete:
            listed = "; ".join(f"{cid}: {', '.join(fields)}" for cid, fields in list(incomplete.items())[:20])
            more = f" (and {len(incomplete) - 20} more)" if len(incomplete) > 20 else ""
            problems.append(f"judge {spec.name} ({spec.library} {spec.metric}) needs {', '.join(spec.fields)}; "
                            f"{len(incomplete)} case(s) lack some: {listed}{more}. Use --skip-incomplete to "
                            "score the others")
        skipped[spec.name] = sorted(incomplete)
        same_family = []
        for cid, case in sorted(campaign.cases.items()):
            if cid in incomplete:
                continue
            generator = str((case.get("metadata") or {}).get("generator_family", "")).lower()
            self_eval = bool(spec.family) and generator == spec.family.lower()
            if self_eval:
                same_family.append(cid)
            for repeat in range(repeats):
                payload = {"library": spec.library, "library_version": version, "metric": spec.metric,
                           "settings": _cache_settings(spec), "model": _cache_fields(spec.model),
                           "case": {f: case.get(f) for f in spec.fields}, "repeat": repeat}
                if spec.embeddings is not None:  # absent otherwise, so the keys of earlier runs still hold
                    payload["embeddings"] = {**_cache_fields(spec.embeddings), "versions": versions}
                tasks.append(_Task(spec, cid, repeat, cache_key(payload), self_eval))
        if same_family and forbid_self_eval:
            problems.append(f"judge {spec.name} is of the {spec.family} family, as the generator of "
                            f"{len(same_family)} case(s): {', '.join(same_family[:20])} (--forbid-self-eval)")
    if problems:
        raise JudgeSetupError("\n".join(problems))
    return tasks, skipped


async def _score(task: _Task, case: dict[str, Any], model, store: JudgeStore, run_id: str) -> Attempt:
    spent, said = Usage(), {}
    tokens = usage.set(spent), notes.set(said)
    start = time.perf_counter()
    value = reason = error = None
    try:
        value, reason = await _adapter(task.spec).score_case(task.spec, model, case)
    except Exception as exc:  # noqa: BLE001 - failures are data: recorded with what happened
        error = f"{type(exc).__name__}: {exc}"[:2000]
    finally:
        usage.reset(tokens[0])
        notes.reset(tokens[1])
    attempt = Attempt(task.key, task.spec.name, task.spec.into, task.case_id, task.repeat, value=value, error=error,
                      reason=reason, calls=spent.calls, prompt_tokens=spent.prompt_tokens,
                      completion_tokens=spent.completion_tokens, cost=spent.cost,
                      latency_s=time.perf_counter() - start, self_eval=task.self_eval, details=said or None)
    store.add(attempt, run_id=run_id)
    return attempt


async def _run(campaign: Campaign, tasks: list[_Task], store: JudgeStore, run_id: str, policy: CallPolicy,
               strict: bool, progress: ProgressCallback | None) -> list[Attempt]:
    clients: dict[tuple, Any] = {}

    def client_for(model: ModelSpec):
        """One shared client per endpoint (and key) for the whole run."""
        endpoint = (model.provider, model.base_url, model.api_key_env)
        if endpoint not in clients:
            clients[endpoint] = make_client(model)
        return clients[endpoint]

    models = {}
    for task in tasks:
        if task.spec.name not in models:
            models[task.spec.name] = _adapter(task.spec).make_model(task.spec, client_for, policy)
    done: list[Attempt] = []
    # Ratings in progress at once: enough to keep every call slot busy while each rating waits on its
    # own sequence of calls, few enough that the first calls start at once rather than after every
    # rating has been set up, and that ratings finish in order.
    window = max(8, 2 * policy.concurrency)
    queue = iter(tasks)

    def start(task: _Task) -> asyncio.Future:
        return asyncio.ensure_future(_score(task, campaign.cases[task.case_id], models[task.spec.name], store,
                                            run_id))

    try:
        pending = {start(t) for t in itertools.islice(queue, window)}
        while pending:
            finished, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            pending |= {start(t) for t in itertools.islice(queue, len(finished))}
            for future in finished:
                attempt = future.result()
                done.append(attempt)
                if progress:
                    progress(len(done), len(tasks), "judging")
                if strict and attempt.error:
                    for other in pending:
                        other.cancel()
                    await asyncio.gather(*pending, return_exceptions=True)
                    raise JudgeSetupError(f"--strict: judge {attempt.judge} failed on case {attempt.case_id}: "
                                          f"{attempt.error}")
    finally:
        for client in clients.values():
            await client.close()
    return done


def export_ratings(folder: Path, store: JudgeStore, keys_by_rating: dict[tuple, str]) -> int:
    """Write the current rating of every (judge, metric, case, repeat) to ``judge_ratings.csv``
    (atomically: a crash leaves the previous file whole). A judge scored with repeats gets one
    ``run_id`` per repeat (``repeat-0``, ``repeat-1``, ...), so each repeat is analysed as a run."""
    latest = store.latest(sorted(set(keys_by_rating.values())))
    repeated = {judge for (judge, _, _, repeat) in keys_by_rating if repeat > 0}
    rows = 0
    with replacing(folder / JUDGE_RATINGS_FILE) as handle:
        writer = csv.writer(handle)
        writer.writerow(["case_id", "metric", "rater", "rater_kind", "value", "error", "reason", "run_id"])
        for (judge, metric, case_id, repeat), key in sorted(keys_by_rating.items()):
            attempt = latest.get(key)
            if attempt is None:
                continue
            writer.writerow([case_id, metric, judge, "judge", "" if attempt.value is None else repr(attempt.value),
                             attempt.error or "", (attempt.reason or "").replace("\r", " "),
                             f"repeat-{repeat}" if judge in repeated else ""])
            rows += 1
    return rows


MANIFEST_FOLDER = "judge_runs"


def write_manifest(folder: Path, run: dict[str, Any]) -> Path:
    """The run's manifest as ``judge_runs/RUN_ID.json`` beside the ratings (atomically)."""
    path = folder / MANIFEST_FOLDER / f"{run['run_id']}.json"
    path.parent.mkdir(exist_ok=True)
    with replacing(path) as handle:
        handle.write(json.dumps(run, indent=2, sort_keys=True, default=str) + "\n")
    return path


def run_judges(campaign: Campaign, *, judges: list[str] | None = None, policy: CallPolicy | None = None,
               repeats: int = 1, use_cache: bool = True, skip_incomplete: bool = False,
               forbid_self_eval: bool = False, strict: bool = False,
               progress: ProgressCallback | None = None) -> dict[str, Any]:
    """Score the campaign's cases with its declared judges; see the module docstring.

    Returns the ``calibrate judge --json`` document: ``{"run_id", "judges": [{"judge", "scored",
    "failed", "from_cache", "skipped", "calls", "tokens", "cost", "seconds"}], "ratings": [...]}``.
    """
    if campaign.path is None:
        raise JudgeSetupError("judging needs a campaign folder (load_campaign), where the ratings are stored")
    specs = [s for name, s in sorted(campaign.judges.items()) if judges is None or name in judges]
    if not specs:
        raise JudgeSetupError("no judge to run: declare [judges.NAME] in campaign.toml"
                              + (f" (asked for {', '.join(judges)})" if judges else ""))
    tasks, skipped = plan(campaign, specs, repeats=repeats, skip_incomplete=skip_incomplete,
                          forbid_self_eval=forbid_self_eval)
    policy = policy or CallPolicy()
    store = JudgeStore(campaign.path / STORE_NAME)
    run_id = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ-") + uuid.uuid4().hex[:6]
    versions = {"calibrate-judges": package_version("calibrate-judges"), "aiohttp": package_version("aiohttp")}
    for spec in specs:
        versions |= {spec.library: _adapter(spec).library_version(), **_adapter(spec).model_versions(spec)}
    manifest: dict[str, Any] = {"run_id": run_id, "campaign": campaign.name, "data_hash": campaign.data_hash,
                                "judges": [s.public() for s in specs], "library_versions": versions,
                                "repeats": repeats, "use_cache": use_cache,
                                "policy": {k: v for k, v in policy.__dict__.items() if not k.startswith("_")}}
    store.start_run(run_id, manifest)
    start = time.perf_counter()
    cached = store.successes([t.key for t in tasks]) if use_cache else {}
    to_score = [t for t in tasks if t.key not in cached]
    try:
        attempts = asyncio.run(_run(campaign, to_score, store, run_id, policy, strict, progress)) if to_score else []
    finally:
        keys = {(t.spec.name, t.spec.into, t.case_id, t.repeat): t.key for t in tasks}
        export_ratings(campaign.path, store, keys)
    seconds = time.perf_counter() - start
    summary = []
    for spec in specs:
        mine = [a for a in attempts if a.judge == spec.name]
        hits = [t for t in tasks if t.spec.name == spec.name and t.key in cached]
        summary.append({"judge": spec.name, "scored": sum(a.error is None for a in mine),
                        "failed": sum(a.error is not None for a in mine), "from_cache": len(hits),
                        "skipped": len(skipped[spec.name]), "self_eval": sum(t.self_eval for t in tasks
                                                                              if t.spec.name == spec.name),
                        "calls": sum(a.calls for a in mine),
                        "tokens": sum((a.prompt_tokens or 0) + (a.completion_tokens or 0) for a in mine),
                        "cost": (sum(a.cost for a in mine if a.cost is not None)
                                 if any(a.cost is not None for a in mine) else None),
                        "seconds": round(sum(a.latency_s or 0 for a in mine), 3)})
        if spec.metric == "g_eval":  # weighting by logprobs changes the number: say how many were
            summary[-1]["logprob_weighted"] = sum(bool((a.details or {}).get("logprob_weighted")) for a in mine)
    manifest |= {"seconds": seconds, "judges_summary": summary,
                 "counts": {"calls": sum(j["calls"] for j in summary), "failures": sum(j["failed"] for j in summary),
                            "cache_hits": sum(j["from_cache"] for j in summary)}}
    store.finish_run(run_id, manifest)
    write_manifest(campaign.path, store.run(run_id))
    ratings = [{"case_id": a.case_id, "metric": a.metric, "judge": a.judge, "repeat": a.repeat, "value": a.value,
                "error": a.error, "reason": a.reason, "details": a.details, "from_cache": from_cache}
               for from_cache, found in ((False, attempts), (True, cached.values())) for a in found]
    store.close()
    return {"run_id": run_id, "seconds": seconds, "judges": summary, "ratings": ratings}
