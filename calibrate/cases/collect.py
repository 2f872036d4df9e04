"""Collecting cases from a live RAG service: each golden's question sent, the reply stored, cases written.

Every reply is stored in ``collect.sqlite`` in the campaign folder as soon as it arrives, with its HTTP
status, latency and the run it belongs to; ``cases.jsonl`` is then written from each golden's latest
successful reply (cases that did not come from the service are kept as they are; a case id already
there with other content and no collected reply is an error: nothing is overwritten silently). A
re-run asks only for the goldens without a successful reply; ``refresh=True`` asks for every golden
again, in a new run, keeping the earlier replies. Calls go out concurrently under a limit, with
retries and backoff on 429, 5xx, timeouts and dropped connections (honouring ``Retry-After``). A reply
that is not JSON, lacks the answer, or has contexts of the wrong type is that golden's error: the run
goes on and the summary counts them.

The requests go through :mod:`calibrate.base.http`: a redirect to another server is refused (the
service's headers, which may carry a token, and the goldens go only to the URL declared), each request
has a total deadline (``timeout_s``, the whole reply included) and a size cap. The values of the
``${VAR}`` headers (each variable's value, and the whole header) are registered as secrets, and
nothing the service sent back is stored with them: the raw reply and every error are redacted
(:func:`~calibrate.base.secrets.redact`), and the answer, contexts and context ids, which become
``cases.jsonl``, have every known credential replaced by ``[redacted]``
(:func:`~calibrate.base.secrets.redact_known`: only the credentials themselves, so that an answer that
speaks of tokens or keys is kept as the service gave it). A service that echoes its token into its
answer is a fault to fix in the service; calibrate never writes the token down.
"""

from __future__ import annotations

import asyncio
import datetime as _dt
import inspect
import json
import os
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import JsonValue

from calibrate.base.documents import Schema, check, read_json_lines
from calibrate.base.errors import CampaignError, Problem
from calibrate.base.files import replacing, writes_campaign
from calibrate.base.results import Result, records_frame
from calibrate.base.secrets import clip, redact, redact_known, remember
from calibrate.base.sqlite_store import now, open_store
from calibrate.campaign import CASES_FILE
from calibrate.campaign.service import ENV, ContractError, ServiceContract
from calibrate.cases.datasets import case_content

__all__ = ["STORE_NAME", "CollectStore", "ServiceFunction", "collect", "dry_run"]

STORE_NAME = "collect.sqlite"
#: ``question -> (answer, contexts)`` or ``(answer, contexts, context_ids)``; a coroutine function too.
ServiceFunction = Callable[[str], Any]
MIGRATIONS = [
    """CREATE TABLE replies (
    id INTEGER PRIMARY KEY, run_id TEXT NOT NULL, case_id TEXT NOT NULL, golden TEXT NOT NULL,
    status INTEGER, latency_s REAL, reply TEXT, answer TEXT, contexts TEXT, context_ids TEXT, error TEXT,
    created TEXT NOT NULL)""",
    "CREATE INDEX replies_case ON replies (case_id, id)",
]


class CollectStore:
    """``collect.sqlite``: every reply of every run, never updated in place."""

    def __init__(self, path: Path):
        self.db = open_store(path, MIGRATIONS)

    def add(
        self,
        run_id: str,
        golden: dict,
        *,
        status: int | None,
        latency_s: float | None,
        reply: str | None,
        answer: str | None = None,
        contexts: list[str] | None = None,
        context_ids: list[str] | None = None,
        error: str | None = None,
    ) -> None:
        """Store one reply: the raw reply redacted, the answer, contexts and ids with every known
        credential replaced (see the module docstring)."""
        reply = None if reply is None else redact(reply)
        answer = None if answer is None else redact_known(answer)
        contexts = None if contexts is None else [redact_known(c) for c in contexts]
        context_ids = None if context_ids is None else [redact_known(c) for c in context_ids]
        self.db.execute(
            "INSERT INTO replies (run_id, case_id, golden, status, latency_s, reply, answer, contexts, "
            "context_ids, error, created) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                run_id,
                golden["case_id"],
                json.dumps(golden, ensure_ascii=False),
                status,
                latency_s,
                reply,
                answer,
                None if contexts is None else json.dumps(contexts, ensure_ascii=False),
                None if context_ids is None else json.dumps(context_ids),
                None if error is None else redact(error),
                now(),
            ),
        )

    def collected(self) -> set[str]:
        return {r[0] for r in self.db.execute("SELECT DISTINCT case_id FROM replies WHERE error IS NULL")}

    def latest_successes(self) -> dict[str, dict[str, Any]]:
        rows = self.db.execute(
            "SELECT case_id, golden, status, latency_s, answer, contexts, context_ids, run_id "
            "FROM replies WHERE id IN (SELECT MAX(id) FROM replies WHERE error IS NULL "
            "GROUP BY case_id)"
        )
        return {
            r[0]: {
                "golden": json.loads(r[1]),
                "status": r[2],
                "latency_s": r[3],
                "answer": r[4],
                "contexts": json.loads(r[5]),
                "context_ids": None if r[6] is None else json.loads(r[6]),
                "run_id": r[7],
            }
            for r in rows
        }

    def counts(self, run_id: str) -> dict[str, int]:
        ok, failed = self.db.execute(
            "SELECT SUM(error IS NULL), SUM(error IS NOT NULL) FROM replies WHERE run_id = ?", (run_id,)
        ).fetchone()
        return {"collected": ok or 0, "failed": failed or 0}

    def errors(self, run_id: str) -> list[dict[str, Any]]:
        return [
            {"case_id": c, "status": s, "error": e}
            for c, s, e in self.db.execute(
                "SELECT case_id, status, error FROM replies WHERE run_id = ? AND error IS NOT NULL ORDER BY id",
                (run_id,),
            )
        ]

    def close(self) -> None:
        self.db.close()


def _case(golden: dict, reply: dict) -> dict[str, Any]:
    metadata = {
        **(golden.get("metadata") or {}),
        "service": {"run_id": reply["run_id"], "status": reply["status"], "latency_s": reply["latency_s"]},
    }
    if reply["context_ids"] is not None:
        metadata["context_ids"] = reply["context_ids"]
    case = {k: v for k, v in golden.items() if k != "metadata"}
    return {**case, "actual_output": reply["answer"], "retrieval_context": reply["contexts"], "metadata": metadata}


class _Service(Schema):
    run_id: str | None = None


class _Metadata(Schema):
    service: _Service | None = None


class KeptCase(Schema):
    """What collect reads of a case already in ``cases.jsonl``: its id, and the collection run that
    wrote it (``metadata.service.run_id``; none for a case from elsewhere). The case is kept whole."""

    case_id: str | int | None = None
    metadata: _Metadata | None = None


def _existing(folder: Path) -> list[dict]:
    """The cases of ``cases.jsonl``, each line read through :func:`~calibrate.base.documents.read_json_lines`
    (a line ends at ``\n`` only) and checked as a :class:`KeptCase`; every line that is not is listed in
    one error naming the file, the line and the field."""
    path = folder / CASES_FILE
    if not path.is_file():
        return []
    expected = "a case of cases.jsonl: a JSON object with case_id"
    rows = read_json_lines(path, dict[str, JsonValue], expected=expected)
    problems = [
        p for line, case in rows for p in check(case, KeptCase, source=str(path), expected=expected, line=line)[1]
    ]
    if problems:
        raise CampaignError(problems)
    return [case for _, case in rows]


def _foreign(cases: list[dict], ids: set[str], store: CollectStore) -> list[Problem]:
    """Cases of ``cases.jsonl`` with one of ``ids`` that no collection run wrote: collecting them would
    overwrite what a user gave."""
    runs = {(c, r) for c, r in store.db.execute("SELECT DISTINCT case_id, run_id FROM replies WHERE error IS NULL")}
    return [
        Problem(
            CASES_FILE,
            f"case {c['case_id']} is already in cases.jsonl and did not come from the service: "
            "collecting would replace it; give the golden another id",
            field="case_id",
            value=c["case_id"],
        )
        for c in cases
        if c.get("case_id") in ids
        and (c["case_id"], ((c.get("metadata") or {}).get("service") or {}).get("run_id")) not in runs
    ]


@writes_campaign("calibrate collect")
def write_cases(folder: Path, store: CollectStore) -> int:
    """``cases.jsonl`` from each golden's latest successful reply, beside the cases from elsewhere."""
    collected = {c: _case(r["golden"], r) for c, r in store.latest_successes().items()}
    existing = _existing(folder)
    conflicts = [
        p
        for p in _foreign(existing, set(collected), store)
        if case_content(next(c for c in existing if c.get("case_id") == p.value)) != case_content(collected[p.value])
    ]
    # (the same content is no conflict: a case imported once and then collected unchanged)
    if conflicts:
        raise CampaignError(conflicts)
    kept = [c for c in existing if c.get("case_id") not in collected]
    with replacing(folder / CASES_FILE) as handle:
        for case in kept + [collected[c] for c in sorted(collected)]:
            handle.write(json.dumps(case, ensure_ascii=False) + "\n")
    return len(collected)


def _header_values(contract: ServiceContract) -> dict[str, str]:
    """The service's headers with ``${VAR}`` expanded, each expanded value registered as a secret (the
    whole header, and each variable's value in it)."""
    values = contract.header_values()
    for name, declared in contract.masked_headers().items():
        if "${" in declared:
            remember(values[name])
            for variable in ENV.findall(declared):
                remember(os.environ.get(variable))
    return values


def _service_http(contract: ServiceContract, connections: int = 0):
    from calibrate.base.http import AsyncHttp, HttpPolicy

    return AsyncHttp(
        name="the service",
        policy=HttpPolicy(timeout_s=contract.timeout_s),
        connections=connections,
        secret_headers=tuple(n for n, v in contract.masked_headers().items() if "${" in v),
    )


async def _http_call(http, contract: ServiceContract, headers: dict[str, str], golden: dict):
    """One request to the service: the reply (any status below 500 but 429; those raise to be retried)
    and its latency."""
    payload = contract.render(golden)
    start = time.perf_counter()
    if contract.method == "GET":
        params = {k: v if isinstance(v, str) else json.dumps(v) for k, v in (payload or {}).items()}
        reply = await http.request("GET", contract.url, params=params, headers=headers)
    else:
        reply = await http.request(
            "POST",
            contract.url,
            headers={**headers, "Content-Type": "application/json"},
            data=json.dumps(payload, ensure_ascii=False).encode("utf-8"),
        )
    if reply.status == 429 or reply.status >= 500:
        raise reply.status_error()
    return reply, time.perf_counter() - start


def _reply_json(reply) -> Any:
    """The service's reply as JSON (read with the depth and size limits of every document)."""
    from pydantic import JsonValue

    from calibrate.base.http import HttpError

    try:
        return reply.json(JsonValue, expected="the service's JSON reply")
    except HttpError as exc:
        why = "" if exc.kind == "encoding" else f" ({exc.problems[0].message})" if exc.problems else ""
        raise ContractError(f"the reply is not JSON: {reply.excerpt()!r}{why}") from None


async def _run(
    goldens: list[dict],
    contract: ServiceContract | None,
    function: ServiceFunction | None,
    store: CollectStore,
    run_id: str,
    policy,
    progress,
) -> None:
    from calibrate.judges.calls import JudgeCallError

    headers = _header_values(contract) if contract else {}
    http = _service_http(contract) if contract else None
    done = 0

    async def one(golden: dict) -> None:
        nonlocal done
        status = latency = text = None
        try:
            if function is not None:
                start = time.perf_counter()
                result = await policy.call("function", lambda: _call_function(function, golden["input"]))
                latency = time.perf_counter() - start
                answer, contexts, ids = _function_result(result)
                store.add(
                    run_id,
                    golden,
                    status=None,
                    latency_s=latency,
                    reply=None,
                    answer=answer,
                    contexts=contexts,
                    context_ids=ids,
                )
            else:
                reply, latency = await policy.call(contract.url, lambda: _http_call(http, contract, headers, golden))
                status, text = reply.status, reply.excerpt(limit=len(reply.body))
                if status >= 400:
                    raise ContractError(f"HTTP {status} from the service: {clip(text, 200)}")
                answer, contexts, ids = contract.extract(_reply_json(reply))
                store.add(
                    run_id,
                    golden,
                    status=status,
                    latency_s=latency,
                    reply=text,
                    answer=answer,
                    contexts=contexts,
                    context_ids=ids,
                )
        except (ContractError, JudgeCallError) as exc:
            store.add(
                run_id, golden, status=status, latency_s=latency, reply=text, error=f"golden {golden['case_id']}: {exc}"
            )
        done += 1
        if progress:
            progress(done, len(goldens), "collecting answers")

    try:
        await asyncio.gather(*(one(g) for g in goldens))
    finally:
        if http is not None:
            await http.close()


async def _call_function(function: ServiceFunction, question: str) -> Any:
    if inspect.iscoroutinefunction(function):
        return await function(question)
    return await asyncio.to_thread(function, question)


def _function_result(result: Any) -> tuple[str, list[str], list[str] | None]:
    if not isinstance(result, tuple) or len(result) not in (2, 3):
        raise ContractError(
            f"the function returned {type(result).__name__}: expected (answer, contexts) or "
            "(answer, contexts, context_ids)"
        )
    answer, contexts = result[0], result[1]
    if not isinstance(answer, str):
        raise ContractError(f"the function's answer is a {type(answer).__name__}, not a string")
    if not isinstance(contexts, list) or not all(isinstance(c, str) for c in contexts):
        raise ContractError("the function's contexts are not a list of strings")
    ids = [str(i) for i in result[2]] if len(result) == 3 and result[2] is not None else None
    return answer, contexts, ids


@writes_campaign("calibrate collect")
def collect(
    folder: str | Path,
    goldens: list[dict],
    *,
    contract: ServiceContract | None = None,
    function: ServiceFunction | None = None,
    refresh: bool = False,
    policy=None,
    progress=None,
) -> Result:
    """Send each golden's question to the service (``contract``) or to ``function``, store the replies,
    write ``cases.jsonl``; see the module docstring.

    Parameters
    ----------
    folder : str or Path
        The campaign folder (its ``[service]`` table describes the service).
    goldens : list of dict
        The questions (:func:`~calibrate.cases.datasets.read_external_cases` reads them from a file).
    contract : ServiceContract, optional
        How to call the service and read its reply (default: the folder's ``[service]``).
    function : callable, optional
        A Python function (or coroutine) to call instead of a service: question -> answer and contexts.
    refresh : bool
        Ask again for every golden (the earlier replies are kept as a run).
    policy : CallPolicy, optional
        Requests in flight, retries and pace.
    progress : callable, optional

    Returns
    -------
    Result
        ``{"run_id", "asked", "collected", "failed", "already_collected", "errors": [...], "cases"}``.

    Examples
    --------
    >>> import calibrate
    >>> goldens = calibrate.read_external_cases("goldens.jsonl")        # doctest: +SKIP
    >>> calibrate.collect_cases("my-campaign", goldens)["collected"]      # doctest: +SKIP
    """
    from calibrate.judges.calls import CallPolicy

    if (contract is None) == (function is None):
        raise ValueError("collect needs either the campaign's [service] contract or a function")
    folder = Path(folder)
    store = CollectStore(folder / STORE_NAME)
    try:
        conflicts = _foreign(_existing(folder), {g["case_id"] for g in goldens}, store)
        if conflicts:  # checked before any call: nothing a user gave is overwritten
            raise CampaignError(conflicts)
        done = set() if refresh else store.collected()
        todo = [g for g in goldens if g["case_id"] not in done]
        policy = policy or CallPolicy(concurrency=8, timeout_s=contract.timeout_s if contract else 60.0)
        run_id = _dt.datetime.now(_dt.UTC).strftime("%Y%m%dT%H%M%SZ-") + uuid.uuid4().hex[:6]
        if todo:
            asyncio.run(_run(todo, contract, function, store, run_id, policy, progress))
        counts = store.counts(run_id)
        cases = write_cases(folder, store)
        return Result(
            {
                "run_id": run_id,
                "asked": len(todo),
                **counts,
                "already_collected": len(goldens) - len(todo),
                "errors": store.errors(run_id),
                "cases": cases,
            },
            records_frame("errors"),
        )
    finally:
        store.close()


def dry_run(contract: ServiceContract, golden: dict) -> dict[str, Any]:
    """The rendered request for ``golden`` (headers as declared, secrets unexpanded) and, after one call,
    the reply and what the contract extracts from it (or the error). Stores nothing."""
    from calibrate.base.http import HttpError

    request = {
        "method": contract.method,
        "url": contract.url,
        "headers": contract.masked_headers(),
        "body": contract.render(golden),
    }

    async def call():
        http = _service_http(contract)
        try:
            return await _http_call(http, contract, _header_values(contract), golden)
        finally:
            await http.close()

    out: dict[str, Any] = {"golden": golden["case_id"], "request": request}
    try:
        reply, latency = asyncio.run(call())
    except HttpError as exc:
        return out | {"error": str(exc)}
    except Exception as exc:  # noqa: BLE001 - shown to the user, who is checking the contract
        return out | {"error": redact(f"{type(exc).__name__}: {exc}")}
    out |= {"status": reply.status, "latency_s": latency, "reply": redact(reply.excerpt(limit=4000))}
    try:
        answer, contexts, ids = contract.extract(_reply_json(reply))
        out["extracted"] = {"answer": answer, "contexts": contexts, "context_ids": ids}
    except ContractError as exc:
        out["error"] = redact(str(exc))
    return out
