"""The campaign's record of imported ratings: every revision kept, the current ones exported.

One SQLite file per campaign (``imports.sqlite``, WAL), kept as the Label Studio store keeps pulled
labels. A rating is the same rating from one import to the next when its origin (the tool's store:
an MLflow experiment; for files, the tool), case, metric and rater are. An imported rating that is
new, or differs from the current revision (value, error, reason or what the source says of it), is
appended as a new revision; nothing is updated or deleted. A rating an import does not bring is not a
deletion, unless the import read the whole origin (a whole MLflow experiment): then it is withdrawn,
by a row of its own, and comes back if the source has it again.

:meth:`ImportStore.export_texts` gives the current rating of every (origin, case, metric, rater) as
``imported_ratings.csv`` (read by ``load_campaign`` beside the user's own ratings; its ``source`` and
``source_id`` columns say where each came from) and what the sources said of their raters as
``imported_ratings.json``.
"""

from __future__ import annotations

import csv
import io
import json
from collections import Counter
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from calibrate.base.sqlite_store import now, open_store
from calibrate.campaign import IMPORTED_META_FILE, IMPORTED_RATINGS_FILE
from calibrate.campaign.judge_settings import infer_family
from calibrate.imports.records import ImportedRating, SourceBatch

__all__ = ["ImportStore", "STORE_NAME", "EXPORT_COLUMNS"]

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
]
_CURRENT_COLUMNS = ("id", "origin", "case_id", "metric", "rater", "rater_kind", "value", "error", "reason",
                    "source_id", "facts", "withdrawn")


class ImportStore:
    """The campaign's import store (``STORE_NAME`` in the campaign folder, or ``path``)."""

    def __init__(self, folder: str | Path, *, path: str | Path | None = None):
        self.folder = Path(folder)
        self._db = open_store(Path(path) if path is not None else self.folder / STORE_NAME, MIGRATIONS)

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
            (origin,) if origin is not None else ())
        return [dict(zip(_CURRENT_COLUMNS, row)) for row in rows]

    def add(self, import_id: str, batch: SourceBatch, ratings: list[tuple[str, ImportedRating]], *,
            metrics: list[str], skipped: list[dict[str, str]]) -> dict[str, int]:
        """Append what is new or changed in ``ratings`` (campaign metric, rating) since the origin's
        last import; withdraw what a ``whole`` read no longer holds among ``metrics``. Call it inside
        :meth:`transaction`."""
        current = {(r["case_id"], r["metric"], r["rater"]): r for r in self.current(batch.origin)}
        counts = Counter({"new": 0, "changed": 0, "unchanged": 0, "restored": 0, "withdrawn": 0, "absent_kept": 0})
        stamp = now()
        seen = set()
        for metric, rating in ratings:
            key = (rating.case_id, metric, rating.rater)
            seen.add(key)
            facts = json.dumps(dict(rating.facts), sort_keys=True, default=str)
            before = current.get(key)
            same = before is not None and (before["value"], before["error"], before["reason"], before["facts"],
                                           before["rater_kind"]) == (rating.value, rating.error, rating.reason,
                                                                     facts, rating.rater_kind)
            if same and not before["withdrawn"]:
                counts["unchanged"] += 1
                continue
            counts["new" if before is None else "restored" if same else "changed"] += 1
            self._db.execute(
                "INSERT INTO ratings (import_id, origin, case_id, metric, rater, rater_kind, value, error, reason, "
                "source_id, facts, source_updated, imported) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (import_id, batch.origin, rating.case_id, metric, rating.rater, rating.rater_kind, rating.value,
                 rating.error, rating.reason, rating.source_id, facts, rating.updated, stamp))
        absent = [r["id"] for key, r in current.items() if key not in seen and not r["withdrawn"]
                  and r["metric"] in metrics]
        if batch.whole:
            for rating_id in absent:
                self._db.execute("INSERT INTO withdrawals (import_id, rating_id, withdrawn) VALUES (?, ?, ?)",
                                 (import_id, rating_id, stamp))
        counts["withdrawn" if batch.whole else "absent_kept"] = len(absent)
        self._db.execute("INSERT INTO imports (import_id, kind, origin, source, whole, imported, counts, skipped) "
                         "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                         (import_id, batch.kind, batch.origin, batch.source, int(batch.whole), stamp,
                          json.dumps(dict(counts)), json.dumps(skipped)))
        return dict(counts)

    def history(self, case_id: str | None = None) -> list[dict[str, Any]]:
        """Every stored revision, oldest first, with the import that brought it."""
        keys = ("id", "import_id", "origin", "case_id", "metric", "rater", "rater_kind", "value", "error", "reason",
                "source_id", "facts", "source_updated", "imported")
        rows = self._db.execute(f"SELECT {', '.join(keys)} FROM ratings" + (" WHERE case_id = ?" if case_id else "")
                                + " ORDER BY id", (case_id,) if case_id else ())
        return [{**dict(zip(keys, row)), "facts": json.loads(row[11])} for row in rows]

    def imports(self) -> list[dict[str, Any]]:
        """Every import so far, oldest first: what it read and what it counted and skipped."""
        keys = ("import_id", "kind", "origin", "source", "whole", "imported", "counts", "skipped")
        rows = self._db.execute(f"SELECT {', '.join(keys)} FROM imports ORDER BY imported, import_id")
        return [{**dict(zip(keys, row)), "whole": bool(row[4]), "counts": json.loads(row[6]),
                 "skipped": json.loads(row[7])} for row in rows]

    def export_texts(self) -> dict[str, str]:
        """The current ratings as the text of ``imported_ratings.csv``, and what their sources said of
        their raters as that of ``imported_ratings.json`` (file name -> text)."""
        rows = [r for r in self.current() if not r["withdrawn"]]
        table = io.StringIO()
        writer = csv.writer(table, lineterminator="\n")
        writer.writerow(EXPORT_COLUMNS)
        for r in sorted(rows, key=lambda r: (r["case_id"], r["metric"], r["rater"], r["origin"])):
            writer.writerow([r["case_id"], r["metric"], r["rater"], r["rater_kind"],
                             "" if r["value"] is None else repr(r["value"]), r["error"] or "", r["reason"] or "",
                             r["origin"], r["source_id"]])
        raters: dict[str, dict[str, Any]] = {}
        for r in rows:
            facts = json.loads(r["facts"])
            entry = raters.setdefault(r["rater"], {"kind": r["rater_kind"], "models": Counter(), "origins": set(),
                                                   "thresholds": {}, "source_types": set(), "ratings": 0})
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
                "kind": entry["kind"], "model": model,
                "family": infer_family(model or name) if entry["kind"] == "judge" else None,
                "models": sorted(entry["models"]), "origins": sorted(entry["origins"]),
                "thresholds": {m: sorted(t) for m, t in sorted(entry["thresholds"].items())},
                "source_types": sorted(entry["source_types"]), "ratings": entry["ratings"]}
        return {IMPORTED_RATINGS_FILE: table.getvalue(), IMPORTED_META_FILE: json.dumps(document, indent=2) + "\n"}
