"""The durable record of judge ratings: one SQLite file per campaign, in WAL mode.

Every finished attempt (a score, or a failure with its error) is appended and committed at once,
so a crash or ``kill -9`` loses at most the calls in flight; nothing is ever updated or deleted
except by ``calibrate cache clear``. A rating's *cache key* is a hash of what determines the result
(library and version, metric and settings, model, the case fields the metric reads, repeat index)
and of nothing else (concurrency, retries, timeouts): a rerun reuses every successful attempt whose
key is unchanged and scores the rest.

Attempts written before calibrate gave every model its own client (store schema 5, the ``client``
column) may hold another judge's model's answers: in such a run, judges of different models on one
endpoint all sent the first judge's model name. Those attempts (of judges that shared an endpoint
with another model in their run, read from the run's manifest) are kept but never served from the
cache nor exported; the next run scores them again.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from calibrate.base.files import writes_campaign
from calibrate.base.results import Result, single_row
from calibrate.base.secrets import redact, redact_any
from calibrate.base.sqlite_store import now, open_store

__all__ = ["STORE_NAME", "Attempt", "JudgeStore", "cache_key", "clear_judge_cache", "move_aside"]

STORE_NAME = "judge_ratings.sqlite"
KEY_VERSION = "v1"
#: written in each attempt's ``client`` column: 2 = every model its own request body
CLIENT_VERSION = 2
DAMAGED_TODO = (
    "run calibrate cache clear on the campaign: it moves the damaged store aside (kept beside it, "
    "not deleted) and the next judge run starts a new one"
)
MIGRATIONS = [
    """CREATE TABLE attempts (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        cache_key TEXT NOT NULL,
        run_id TEXT NOT NULL,
        judge TEXT NOT NULL,
        metric TEXT NOT NULL,
        case_id TEXT NOT NULL,
        repeat INTEGER NOT NULL,
        value REAL,
        error TEXT,
        reason TEXT,
        calls INTEGER NOT NULL DEFAULT 0,
        prompt_tokens INTEGER,
        completion_tokens INTEGER,
        cost REAL,
        latency_s REAL,
        self_eval INTEGER NOT NULL DEFAULT 0,
        created TEXT NOT NULL,
        CHECK ((value IS NULL) != (error IS NULL))
    )""",
    "CREATE INDEX attempts_key ON attempts (cache_key)",
    """CREATE TABLE runs (
        run_id TEXT PRIMARY KEY,
        started TEXT NOT NULL,
        finished TEXT,
        manifest TEXT NOT NULL
    )""",
    # how a score was made, as JSON (G-Eval: weighted by logprobs or not, the evaluation steps used)
    "ALTER TABLE attempts ADD COLUMN details TEXT",
    # which client wrote the attempt: NULL before each model had its own (see the module docstring)
    "ALTER TABLE attempts ADD COLUMN client INTEGER",
]


def cache_key(payload: dict[str, Any]) -> str:
    """A versioned hash of canonical JSON (sorted keys, no spaces).

    Examples
    --------
    >>> cache_key({"b": 1, "a": [1, 2]}) == cache_key({"a": [1, 2], "b": 1})
    True
    >>> cache_key({"a": 1})[:3]
    'v1:'
    """
    canonical = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return f"{KEY_VERSION}:" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Attempt:
    """A finished attempt at one rating: ``value`` or ``error``, never both."""

    cache_key: str
    judge: str
    metric: str
    case_id: str
    repeat: int
    value: float | None = None
    error: str | None = None
    reason: str | None = None
    calls: int = 0
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cost: float | None = None
    latency_s: float | None = None
    self_eval: bool = False
    details: dict[str, Any] | None = None
    #: what went wrong, without what differs from case to case (for grouping a run's failures; not stored)
    error_summary: str | None = None

    def __post_init__(self) -> None:
        # a credential a server echoed into an error, or a model into its reason, is never written or
        # shown: judge_ratings.sqlite and judge_ratings.csv are written from attempts (calibrate.base.secrets)
        for name in ("error", "reason", "error_summary"):
            text = getattr(self, name)
            if isinstance(text, str):
                object.__setattr__(self, name, redact(text))
        if self.details:
            object.__setattr__(self, "details", redact_any(self.details))


def _shared_endpoint_judges(manifest: dict[str, Any]) -> set[str]:
    """The judges of a run whose model (or embeddings model) shared an endpoint with a different model."""
    specs: dict[tuple, set[str]] = {}
    users: dict[tuple, set[str]] = {}
    for judge in manifest.get("judges") or []:
        for model in (judge.get("model"), judge.get("embeddings")):
            if isinstance(model, dict) and model.get("provider") != "local":
                endpoint = (model.get("provider"), model.get("base_url"), model.get("api_key_env"))
                specs.setdefault(endpoint, set()).add(json.dumps(model, sort_keys=True))
                users.setdefault(endpoint, set()).add(judge.get("name"))
    return {name for endpoint, names in users.items() if len(specs[endpoint]) > 1 for name in names}


class JudgeStore:
    """The campaign's judge store (``STORE_NAME`` in the campaign folder).

    Examples
    --------
    >>> import tempfile
    >>> store = JudgeStore(Path(tempfile.mkdtemp()) / STORE_NAME)
    >>> store.add(Attempt("k1", "j", "faithfulness", "c1", 0, value=0.5), run_id="r1")
    >>> store.successes(["k1", "k2"])["k1"].value
    0.5
    """

    def __init__(self, path: str | Path, *, read_only: bool = False):
        self.path = Path(path)
        self._db = open_store(self.path, MIGRATIONS, read_only=read_only, damaged_todo=DAMAGED_TODO)
        self._client_column = read_only is False or "client" in {
            row[1] for row in self._db.execute("PRAGMA table_info(attempts)")
        }
        self.suspect = self._suspect()

    def _suspect(self) -> set[tuple[str, str]]:
        """(run, judge) of the attempts written under the shared-client defect."""
        legacy = "client IS NULL" if self._client_column else "1 = 1"
        runs: dict[str, set[str]] = {}
        for run_id, judge in self._db.execute(f"SELECT DISTINCT run_id, judge FROM attempts WHERE {legacy}"):
            runs.setdefault(run_id, set()).add(judge)
        found = set()
        for run_id, judges in runs.items():
            row = self._db.execute("SELECT manifest FROM runs WHERE run_id = ?", (run_id,)).fetchone()
            try:
                shared = _shared_endpoint_judges(json.loads(row[0])) if row else judges
            except (ValueError, TypeError, AttributeError):
                shared = judges  # no readable manifest: nothing says the run was safe
            found |= {(run_id, judge) for judge in judges & shared}
        return found

    def close(self) -> None:
        self._db.close()

    def start_run(self, run_id: str, manifest: dict[str, Any]) -> None:
        self._db.execute(
            "INSERT INTO runs (run_id, started, manifest) VALUES (?, ?, ?)",
            (run_id, now(), json.dumps(manifest, sort_keys=True, default=str)),
        )

    def finish_run(self, run_id: str, manifest: dict[str, Any]) -> None:
        self._db.execute(
            "UPDATE runs SET finished = ?, manifest = ? WHERE run_id = ?",
            (now(), json.dumps(manifest, sort_keys=True, default=str), run_id),
        )

    def run_manifests(self) -> list[tuple[str, str, str]]:
        """Every run as ``(run_id, started, manifest)``, the manifest as the JSON text stored, in the
        order the runs started (:mod:`calibrate.judges.versions` reads them through a schema)."""
        return [tuple(row) for row in self._db.execute("SELECT run_id, started, manifest FROM runs ORDER BY rowid")]

    def run(self, run_id: str) -> dict[str, Any]:
        """A run's manifest with its start and end times."""
        started, finished, manifest = self._db.execute(
            "SELECT started, finished, manifest FROM runs WHERE run_id = ?", (run_id,)
        ).fetchone()
        return {**json.loads(manifest), "started": started, "finished": finished}

    def add(self, attempt: Attempt, *, run_id: str) -> None:
        """Append one finished attempt and commit it at once."""
        a = attempt
        self._db.execute(
            "INSERT INTO attempts (cache_key, run_id, judge, metric, case_id, repeat, value, error, reason, calls, "
            "prompt_tokens, completion_tokens, cost, latency_s, self_eval, details, created, client) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                a.cache_key,
                run_id,
                a.judge,
                a.metric,
                a.case_id,
                a.repeat,
                a.value,
                a.error,
                a.reason,
                a.calls,
                a.prompt_tokens,
                a.completion_tokens,
                a.cost,
                a.latency_s,
                int(a.self_eval),
                json.dumps(a.details, sort_keys=True) if a.details else None,
                now(),
                CLIENT_VERSION,
            ),
        )

    def _latest(self, keys: list[str], condition: str) -> dict[str, Attempt]:
        found: dict[str, Attempt] = {}
        columns = (
            "cache_key, judge, metric, case_id, repeat, value, error, reason, calls, prompt_tokens, "
            "completion_tokens, cost, latency_s, self_eval, details, run_id, "
            + ("client" if self._client_column else "NULL")
        )
        for start in range(0, len(keys), 500):
            chunk = keys[start : start + 500]
            rows = self._db.execute(
                f"SELECT {columns} FROM attempts WHERE {condition} AND cache_key IN "
                f"({','.join('?' * len(chunk))}) ORDER BY id",
                chunk,
            ).fetchall()
            for row in rows:  # ordered by id: the latest attempt of a key wins
                if row[16] is None and (row[15], row[1]) in self.suspect:
                    continue  # another model's answer, perhaps: kept, never served
                found[row[0]] = Attempt(
                    *row[:13], self_eval=bool(row[13]), details=json.loads(row[14]) if row[14] else None
                )
        return found

    def successes(self, keys: list[str]) -> dict[str, Attempt]:
        """The latest successful attempt of each key that has one (the cache)."""
        return self._latest(keys, "value IS NOT NULL")

    def latest(self, keys: list[str]) -> dict[str, Attempt]:
        """The latest attempt of each key, success or failure."""
        return self._latest(keys, "1 = 1")

    def suspect_keys(self, keys: list[str]) -> set[str]:
        """The keys that have a success written under the shared-client defect (never served)."""
        held: set[str] = set()
        if not self.suspect:
            return held
        legacy = " AND client IS NULL" if self._client_column else ""
        for start in range(0, len(keys), 500):
            chunk = keys[start : start + 500]
            held |= {
                key
                for key, run_id, judge in self._db.execute(
                    "SELECT cache_key, run_id, judge FROM attempts WHERE value IS NOT NULL AND cache_key IN "
                    f"({','.join('?' * len(chunk))}){legacy}",
                    chunk,
                )
                if (run_id, judge) in self.suspect
            }
        return held

    def repeats(self) -> dict[str, int]:
        """Per judge, how many repeats the store holds (the highest repeat index plus one)."""
        return {
            judge: top + 1 for judge, top in self._db.execute("SELECT judge, MAX(repeat) FROM attempts GROUP BY judge")
        }

    def summary(self) -> list[dict[str, Any]]:
        """Per judge, over every stored attempt: ratings, failures, calls, tokens, time and runs."""
        rows = self._db.execute(
            "SELECT judge, COUNT(*), SUM(value IS NOT NULL), SUM(error IS NOT NULL), SUM(calls), "
            "SUM(prompt_tokens), SUM(completion_tokens), SUM(cost), SUM(latency_s), COUNT(DISTINCT run_id), "
            "SUM(self_eval) FROM attempts GROUP BY judge ORDER BY judge"
        ).fetchall()
        keys = (
            "judge",
            "attempts",
            "scored",
            "failed",
            "calls",
            "prompt_tokens",
            "completion_tokens",
            "cost",
            "seconds",
            "runs",
            "self_eval",
        )
        return [dict(zip(keys, row)) for row in rows]

    def count(self) -> int:
        return self._db.execute("SELECT COUNT(*) FROM attempts").fetchone()[0]

    def clear(self) -> int:
        """Delete every attempt and run (``calibrate cache clear``); returns how many attempts."""
        count = self.count()
        self._db.execute("DELETE FROM attempts")
        self._db.execute("DELETE FROM runs")
        return count


def move_aside(path: str | Path) -> Path:
    """Rename a damaged store (and its WAL files) to ``NAME.damaged-TIME``, kept beside it; returns the new path."""
    path = Path(path)
    stamp = now().replace(":", "").replace("-", "").split(".")[0]
    target = path.with_name(f"{path.name}.damaged-{stamp}")
    for suffix in ("", "-wal", "-shm"):
        source = path.with_name(path.name + suffix)
        if source.exists():
            source.rename(target.with_name(target.name + suffix))
    return target


@writes_campaign("calibrate cache clear")
def clear_judge_cache(campaign_folder: str | Path, *, confirm: bool = False) -> Result:
    """The ``calibrate cache clear`` command: delete every stored judge attempt of the campaign, so the
    next run scores everything again — only when ``confirm``: the attempts were paid for, so without it
    nothing is deleted and the result lists what would be. A damaged store is moved aside (kept beside
    it, renamed), not deleted, confirmed or not.

    There is no need to clear the store to remove a judge or a metric: take it out of campaign.toml,
    and its ratings are set aside (:class:`~calibrate.campaign.model.SetAside`), kept for when it
    comes back.

    Parameters
    ----------
    campaign_folder : str or Path
    confirm : bool, keyword-only
        Delete the attempts listed in ``would_delete`` (``--yes``).

    Returns
    -------
    Result
        ``{"store", "deleted", "moved_to", "problem", "would_delete", "refused"}``: ``deleted`` is None
        when there was no store, it was moved aside (``moved_to``, with the ``problem`` found), or
        nothing was deleted for want of ``confirm`` (``refused``); ``would_delete`` is
        ``{"attempts", "cost", "judges": [{"judge", "attempts", "scored", "failed", "cost", "runs", ...}]}``.

    Examples
    --------
    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> clear_judge_cache(folder)["deleted"] is None
    True
    >>> store = JudgeStore(folder / STORE_NAME)
    >>> store.add(Attempt("k1", "j", "faithfulness", "c1", 0, value=0.5, cost=0.02), run_id="r1")
    >>> store.close()
    >>> doc = clear_judge_cache(folder)
    >>> doc["refused"], doc["deleted"], doc["would_delete"]["attempts"], doc["would_delete"]["cost"]
    (True, None, 1, 0.02)
    >>> clear_judge_cache(folder, confirm=True)["deleted"]
    1
    """
    from calibrate.base.errors import StoreError
    from calibrate.base.files import holding

    path = Path(campaign_folder) / STORE_NAME
    doc: dict[str, Any] = {
        "store": str(path),
        "deleted": None,
        "moved_to": None,
        "problem": None,
        "would_delete": None,
        "refused": False,
    }
    if not path.is_file():
        return Result(doc, single_row)
    with holding(campaign_folder, "calibrate cache clear"):
        try:
            store = JudgeStore(path)
        except StoreError as exc:
            if exc.kind not in ("damaged", "unreadable"):
                raise
            return Result(doc | {"moved_to": str(move_aside(path)), "problem": exc.problem}, single_row)
        try:
            judges = store.summary()
            costs = [j["cost"] for j in judges if j["cost"] is not None]
            doc["would_delete"] = {
                "attempts": sum(j["attempts"] for j in judges),
                "cost": round(sum(costs), 6) if costs else None,
                "judges": judges,
            }
            if confirm:
                doc["deleted"] = store.clear()
            else:
                doc["refused"] = doc["would_delete"]["attempts"] > 0
                doc["deleted"] = None if doc["refused"] else 0
        finally:
            store.close()
    return Result(doc, single_row)
