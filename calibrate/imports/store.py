"""The campaign's record of imported ratings: every revision kept, the current ones exported.

One SQLite file per campaign (``imports.sqlite``, WAL), kept as the Label Studio store keeps pulled
labels. A rating is the same rating from one import to the next when its origin (the tool's store:
an MLflow experiment; for files, the tool), case, metric and rater are. An imported rating that is
new, or differs from the current revision (value, error, reason or what the source says of it), is
appended as a new revision; nothing is updated or deleted. A rating an import does not bring is not a
deletion, unless the import read the whole origin (a whole MLflow experiment): then it is withdrawn,
by a row of its own, and comes back if the source has it again, or when the withdrawal is undone
(:meth:`ImportStore.reinstate`: the rating appended again as it was). A whole read withdraws on its own
at most :data:`WITHDRAW_LIMIT` of what the origin held: more looks like a partial reply (a page lost, a
list cut short), and is kept until an import is told to withdraw it (``allow_withdraw``).

A rating of a metric no longer declared in campaign.toml stays in the store and in the exported file
(``load_campaign`` sets it aside), and an import that still brings it stores it as any other: nothing
is lost while the metric is away, and nothing of it is withdrawn.

:meth:`ImportStore.export_texts` gives the current rating of every (origin, case, metric, rater) as
``imported_ratings.csv`` (read by ``load_campaign`` beside the user's own ratings; its ``source`` and
``source_id`` columns say where each came from) and what the sources said of their raters as
``imported_ratings.json``.

An import of files keeps a receipt (:meth:`ImportStore.add_receipt`): the hash of what it read (the
files' bytes and the options: :func:`~calibrate.imports.receipts.source_key`), the state it left the
campaign in, and the result a second import of the same would give. The same files imported again into
a campaign still in that state do nothing (:func:`~calibrate.imports.receipts.unchanged`).
"""

from __future__ import annotations

import csv
import io
import json
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from calibrate.base.sqlite_store import now, open_store
from calibrate.campaign import IMPORTED_META_FILE, IMPORTED_RATINGS_FILE
from calibrate.campaign.judge_specs import infer_family
from calibrate.imports.records import ImportedRating, SourceBatch

__all__ = ["EXPORT_COLUMNS", "STORE_NAME", "WITHDRAW_LIMIT", "ImportStore", "withdraw_limit"]

STORE_NAME = "imports.sqlite"
EXPORT_COLUMNS = ["case_id", "metric", "rater", "rater_kind", "value", "error", "reason", "source", "source_id"]
MIGRATIONS = [
    """CREATE TABLE imports (
        import_id TEXT PRIMARY KEY,
        kind TEXT NOT NULL,
        origin TEXT NOT NULL,
        source TEXT NOT NULL,
        whole INTEGER NOT NULL,
        imported TEXT NOT NULL,
        counts TEXT NOT NULL,
        skipped TEXT NOT NULL
    )""",
    """CREATE TABLE ratings (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        import_id TEXT NOT NULL,
        origin TEXT NOT NULL,
        case_id TEXT NOT NULL,
        metric TEXT NOT NULL,
        rater TEXT NOT NULL,
        rater_kind TEXT NOT NULL,
        value REAL,
        error TEXT,
        reason TEXT,
        source_id TEXT NOT NULL,
        facts TEXT NOT NULL,
        source_updated TEXT,
        imported TEXT NOT NULL
    )""",
    "CREATE INDEX ratings_key ON ratings (origin, case_id, metric, rater)",
    """CREATE TABLE withdrawals (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        import_id TEXT NOT NULL,
        rating_id INTEGER NOT NULL,
        withdrawn TEXT NOT NULL
    )""",
    "CREATE INDEX withdrawals_rating ON withdrawals (rating_id)",
    """CREATE TABLE receipts (
        import_id TEXT PRIMARY KEY,
        source_key TEXT NOT NULL,
        state TEXT NOT NULL,
        result TEXT NOT NULL
    )""",
    "CREATE INDEX receipts_key ON receipts (source_key)",
]
#: a whole read withdraws on its own at most this many ratings, or this share of those the origin held
#: (the larger); more is kept, and said, until an import is given ``allow_withdraw``
WITHDRAW_LIMIT = (5, 0.10)
_CURRENT_COLUMNS = (
    "id",
    "origin",
    "case_id",
    "metric",
    "rater",
    "rater_kind",
    "value",
    "error",
    "reason",
    "source_id",
    "facts",
    "withdrawn",
)


def withdraw_limit(held: int) -> int:
    """How many of the ``held`` ratings of an origin a whole read withdraws on its own (:data:`WITHDRAW_LIMIT`).

    >>> withdraw_limit(20), withdraw_limit(1000)
    (5, 100)
    """
    return max(WITHDRAW_LIMIT[0], int(held * WITHDRAW_LIMIT[1]))


class ImportStore:
    """The campaign's import store (``STORE_NAME`` in the campaign folder, or ``path``); ``read_only``
    opens an existing one without writing to it (no migration: a store of an older calibrate may lack
    the receipts)."""

    def __init__(self, folder: str | Path, *, path: str | Path | None = None, read_only: bool = False):
        self.folder = Path(folder)
        where = Path(path) if path is not None else self.folder / STORE_NAME
        self._db = open_store(where, MIGRATIONS, read_only=read_only)

    def close(self) -> None:
        self._db.close()

    @contextmanager
    def transaction(self, *, keep: bool) -> Iterator[None]:
        """One transaction: committed when the block ends well and ``keep``, else rolled back."""
        self._db.execute("BEGIN")
        try:
            yield
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT" if keep else "ROLLBACK")

    def current(self, origin: str | None = None) -> list[dict[str, Any]]:
        """The latest revision of each (origin, case, metric, rater), with when it was withdrawn (None
        when it is not), oldest first."""
        where = "WHERE origin = ?" if origin is not None else ""
        rows = self._db.execute(
            "SELECT id, origin, case_id, metric, rater, rater_kind, value, error, reason, source_id, facts, "
            "(SELECT MAX(withdrawn) FROM withdrawals WHERE rating_id = ratings.id) FROM ratings WHERE id IN "
            f"(SELECT MAX(id) FROM ratings {where} GROUP BY origin, case_id, metric, rater) ORDER BY id",
            (origin,) if origin is not None else (),
        )
        return [dict(zip(_CURRENT_COLUMNS, row)) for row in rows]

    def add(
        self,
        import_id: str,
        batch: SourceBatch,
        ratings: list[tuple[str, ImportedRating]],
        *,
        metrics: list[str],
        skipped: list[dict[str, str]],
        allow_withdraw: bool = False,
    ) -> dict[str, int]:
        """Append what is new or changed in ``ratings`` (campaign metric, rating) since the origin's
        last import; withdraw what a ``whole`` read no longer holds among ``metrics`` (the declared
        ones), unless that is more than :func:`withdraw_limit` and not ``allow_withdraw``: then they are
        kept and counted as ``absent_held``. Call it inside :meth:`transaction`."""
        current = {(r["case_id"], r["metric"], r["rater"]): r for r in self.current(batch.origin)}
        counts = Counter(
            {"new": 0, "changed": 0, "unchanged": 0, "restored": 0, "withdrawn": 0, "absent_kept": 0, "absent_held": 0}
        )
        stamp = now()
        seen = set()
        for metric, rating in ratings:
            key = (rating.case_id, metric, rating.rater)
            seen.add(key)
            facts = json.dumps(dict(rating.facts), sort_keys=True, default=str)
            before = current.get(key)
            same = before is not None and (
                before["value"],
                before["error"],
                before["reason"],
                before["facts"],
                before["rater_kind"],
            ) == (rating.value, rating.error, rating.reason, facts, rating.rater_kind)
            if same and not before["withdrawn"]:
                counts["unchanged"] += 1
                continue
            counts["new" if before is None else "restored" if same else "changed"] += 1
            self._insert_rating(import_id, batch.origin, metric, rating, facts, stamp)
        absent = [
            r["id"] for key, r in current.items() if key not in seen and not r["withdrawn"] and r["metric"] in metrics
        ]
        held = sum(1 for r in current.values() if not r["withdrawn"] and r["metric"] in metrics)
        withdraw = batch.whole and (allow_withdraw or len(absent) <= withdraw_limit(held))
        if withdraw:
            for rating_id in absent:
                self._db.execute(
                    "INSERT INTO withdrawals (import_id, rating_id, withdrawn) VALUES (?, ?, ?)",
                    (import_id, rating_id, stamp),
                )
        counts["withdrawn" if withdraw else "absent_held" if batch.whole else "absent_kept"] = len(absent)
        self._db.execute(
            "INSERT INTO imports (import_id, kind, origin, source, whole, imported, counts, skipped) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                import_id,
                batch.kind,
                batch.origin,
                batch.source,
                int(batch.whole),
                stamp,
                json.dumps(dict(counts)),
                json.dumps(skipped),
            ),
        )
        return dict(counts)

    def _insert_rating(
        self, import_id: str, origin: str, metric: str, rating: ImportedRating, facts: str, stamp: str
    ) -> None:
        """Store a new revision of ``rating`` (on the campaign's ``metric``; ``facts`` as JSON text)."""
        self._db.execute(
            "INSERT INTO ratings (import_id, origin, case_id, metric, rater, rater_kind, value, error, reason, "
            "source_id, facts, source_updated, imported) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                import_id,
                origin,
                rating.case_id,
                metric,
                rating.rater,
                rating.rater_kind,
                rating.value,
                rating.error,
                rating.reason,
                rating.source_id,
                facts,
                rating.updated,
                stamp,
            ),
        )

    def marker(self) -> str:
        """Where the store's history stands: its last rating revision and last withdrawal (an import
        that changes nothing leaves it as it was)."""
        ratings = self._db.execute("SELECT MAX(id) FROM ratings").fetchone()[0]
        withdrawals = self._db.execute("SELECT MAX(id) FROM withdrawals").fetchone()[0]
        return f"ratings {ratings or 0}, withdrawals {withdrawals or 0}"

    def add_receipt(self, import_id: str, source_key: str, state: str, result: dict[str, Any]) -> None:
        """Record that ``import_id`` read what ``source_key`` hashes and left the campaign in ``state``;
        ``result`` is what importing the same again into that state gives. Call it inside
        :meth:`transaction`."""
        self._db.execute(
            "INSERT INTO receipts (import_id, source_key, state, result) VALUES (?, ?, ?, ?)",
            (import_id, source_key, state, json.dumps(result, sort_keys=True)),
        )

    def receipt(self, source_key: str) -> dict[str, Any] | None:
        """The latest receipt of ``source_key`` (``import_id``, ``state``, ``result``), or None (none, or
        a store that has no receipts yet)."""
        has = self._db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'receipts'").fetchone()
        row = (
            has
            and self._db.execute(
                "SELECT import_id, state, result FROM receipts WHERE source_key = ? ORDER BY rowid DESC LIMIT 1",
                (source_key,),
            ).fetchone()
        )
        if not row:
            return None
        return {"import_id": row[0], "state": row[1], "result": json.loads(row[2])}

    def withdrawn_by(self, import_id: str) -> list[dict[str, Any]]:
        """The ratings an import withdrew: (origin, case_id, metric, rater, value, source_id), in order."""
        keys = ("origin", "case_id", "metric", "rater", "value", "source_id")
        rows = self._db.execute(
            f"SELECT {', '.join('r.' + k for k in keys)} FROM withdrawals w JOIN ratings r ON r.id = w.rating_id "
            "WHERE w.import_id = ? ORDER BY r.case_id, r.metric, r.rater, r.origin",
            (import_id,),
        )
        return [dict(zip(keys, row)) for row in rows]

    def reinstate(self, import_id: str, by: str) -> int:
        """Undo the withdrawals of ``import_id``: each rating it withdrew that is still the current one
        of its (origin, case, metric, rater), and still withdrawn, is appended again as it was, under the
        import ``by`` (nothing is deleted: the withdrawal stays in the history). Returns how many came
        back. Call it inside :meth:`transaction`."""
        rows = self._db.execute(
            "SELECT r.id FROM withdrawals w JOIN ratings r ON r.id = w.rating_id WHERE w.import_id = ? AND r.id IN "
            "(SELECT MAX(id) FROM ratings GROUP BY origin, case_id, metric, rater) ORDER BY r.id",
            (import_id,),
        ).fetchall()
        stamp = now()
        for (rating_id,) in rows:
            self._db.execute(
                "INSERT INTO ratings (import_id, origin, case_id, metric, rater, rater_kind, value, error, reason, "
                "source_id, facts, source_updated, imported) SELECT ?, origin, case_id, metric, rater, rater_kind, "
                "value, error, reason, source_id, facts, source_updated, ? FROM ratings WHERE id = ?",
                (by, stamp, rating_id),
            )
        return len(rows)

    def history(self, case_id: str | None = None) -> list[dict[str, Any]]:
        """Every stored revision, oldest first, with the import that brought it."""
        keys = (
            "id",
            "import_id",
            "origin",
            "case_id",
            "metric",
            "rater",
            "rater_kind",
            "value",
            "error",
            "reason",
            "source_id",
            "facts",
            "source_updated",
            "imported",
        )
        rows = self._db.execute(
            f"SELECT {', '.join(keys)} FROM ratings" + (" WHERE case_id = ?" if case_id else "") + " ORDER BY id",
            (case_id,) if case_id else (),
        )
        return [{**dict(zip(keys, row)), "facts": json.loads(row[11])} for row in rows]

    def imports(self) -> list[dict[str, Any]]:
        """Every import so far, oldest first: what it read and what it counted and skipped."""
        keys = ("import_id", "kind", "origin", "source", "whole", "imported", "counts", "skipped")
        rows = self._db.execute(f"SELECT {', '.join(keys)} FROM imports ORDER BY imported, import_id")
        return [
            {**dict(zip(keys, row)), "whole": bool(row[4]), "counts": json.loads(row[6]), "skipped": json.loads(row[7])}
            for row in rows
        ]

    def export_texts(self) -> dict[str, str]:
        """The current ratings as the text of ``imported_ratings.csv``, and what their sources said of
        their raters as that of ``imported_ratings.json`` (file name -> text)."""
        rows = [r for r in self.current() if not r["withdrawn"]]
        table = io.StringIO()
        writer = csv.writer(table, lineterminator="\n")
        # text is data: a bare \r in a reason is kept, in a quoted field (the writer quotes only what its
        # line terminator holds, so a row with a \r is quoted whole)
        quoting = csv.writer(table, lineterminator="\n", quoting=csv.QUOTE_ALL)
        writer.writerow(EXPORT_COLUMNS)
        for r in sorted(rows, key=lambda r: (r["case_id"], r["metric"], r["rater"], r["origin"])):
            row = [
                r["case_id"],
                r["metric"],
                r["rater"],
                r["rater_kind"],
                "" if r["value"] is None else repr(r["value"]),
                r["error"] or "",
                r["reason"] or "",
                r["origin"],
                r["source_id"],
            ]
            (quoting if any("\r" in str(v) for v in row) else writer).writerow(row)
        raters: dict[str, dict[str, Any]] = {}
        for r in rows:
            facts = json.loads(r["facts"])
            entry = raters.setdefault(
                r["rater"],
                {
                    "kind": r["rater_kind"],
                    "models": Counter(),
                    "origins": set(),
                    "thresholds": {},
                    "source_types": set(),
                    "ratings": 0,
                },
            )
            entry["ratings"] += 1
            entry["origins"].add(r["origin"])
            if facts.get("model"):
                entry["models"][facts["model"]] += 1
            if facts.get("threshold") is not None:
                entry["thresholds"].setdefault(r["metric"], set()).add(facts["threshold"])
            if facts.get("source_type"):
                entry["source_types"].add(facts["source_type"])
        # no clock in it: an import that changes nothing writes the same bytes (when is in the store's history)
        document = {"raters": {}, "origins": sorted({r["origin"] for r in rows})}
        for name, entry in sorted(raters.items()):
            model = entry["models"].most_common(1)[0][0] if entry["models"] else None
            document["raters"][name] = {
                "kind": entry["kind"],
                "model": model,
                "family": infer_family(model or name) if entry["kind"] == "judge" else None,
                "models": sorted(entry["models"]),
                "origins": sorted(entry["origins"]),
                "thresholds": {m: sorted(t) for m, t in sorted(entry["thresholds"].items())},
                "source_types": sorted(entry["source_types"]),
                "ratings": entry["ratings"],
            }
        return {IMPORTED_RATINGS_FILE: table.getvalue(), IMPORTED_META_FILE: json.dumps(document, indent=2) + "\n"}
