"""The campaign's record of Label Studio labels: every revision kept, the current ones exported.

One SQLite file per campaign (``labelstudio.sqlite``, WAL). A pulled label that is new, or differs
from the last pulled revision of the same annotation and metric, is appended as a new revision;
nothing is updated or deleted. After each pull, the current label of every (case, metric, annotator)
still in Label Studio is written to ``labelstudio_ratings.csv``, which ``load_campaign`` reads beside
the user's own ratings. The project each Label Studio server holds for the campaign is recorded too
(never the API key).
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any, NamedTuple

from calibrate.campaign import LABELSTUDIO_META_FILE, LABELSTUDIO_RATINGS_FILE
from calibrate.files import replacing
from calibrate.sqlite_store import now, open_store
from calibrate.labelstudio.labels import Label

__all__ = ["LabelStore", "STORE_NAME", "RATINGS_FILE"]

STORE_NAME = "labelstudio.sqlite"
RATINGS_FILE = LABELSTUDIO_RATINGS_FILE
META_FILE = LABELSTUDIO_META_FILE
MIGRATIONS = [
    """CREATE TABLE projects (
        url TEXT PRIMARY KEY,
        project_id INTEGER NOT NULL,
        metrics TEXT NOT NULL,
        created TEXT NOT NULL
    )""",
    """CREATE TABLE labels (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        pull_id TEXT NOT NULL,
        source TEXT NOT NULL,
        task_id INTEGER NOT NULL,
        annotation_id INTEGER NOT NULL,
        case_id TEXT NOT NULL,
        metric TEXT NOT NULL,
        annotator TEXT NOT NULL,
        value REAL NOT NULL,
        details TEXT,
        annotation_updated TEXT,
        pulled TEXT NOT NULL
    )""",
    "CREATE INDEX labels_annotation ON labels (source, annotation_id, metric)",
    # the judge whose scores the project showed as pre-annotations (anchoring), if any
    "ALTER TABLE projects ADD COLUMN shown_judge TEXT",
]


class Project(NamedTuple):
    project_id: int
    metrics: list[str]
    shown_judge: str | None


class LabelStore:
    """The campaign's label store (``STORE_NAME`` in the campaign folder)."""

    def __init__(self, folder: str | Path):
        self.folder = Path(folder)
        self._db = open_store(self.folder / STORE_NAME, MIGRATIONS)

    def close(self) -> None:
        self._db.close()

    def project(self, url: str) -> Project | None:
        """The project pushed to the server at ``url``: its id, the metrics it labels, and the judge
        it shows as pre-annotations (None when blind)."""
        row = self._db.execute("SELECT project_id, metrics, shown_judge FROM projects WHERE url = ?",
                               (url,)).fetchone()
        return Project(row[0], json.loads(row[1]), row[2]) if row else None

    def set_project(self, url: str, project_id: int, metrics: list[str], shown_judge: str | None = None) -> None:
        self._db.execute("INSERT OR REPLACE INTO projects (url, project_id, metrics, created, shown_judge) "
                         "VALUES (?, ?, ?, ?, ?)", (url, project_id, json.dumps(sorted(metrics)), now(), shown_judge))

    def add_pull(self, pull_id: str, source: str, labels: list[Label]) -> dict[str, int]:
        """Append what is new or changed since the last pull from ``source``; one transaction."""
        current = {(row[0], row[1]): (row[2], row[3]) for row in self._db.execute(
            "SELECT annotation_id, metric, value, details FROM labels WHERE id IN (SELECT MAX(id) FROM labels "
            "WHERE source = ? GROUP BY annotation_id, metric)", (source,))}
        counts = {"new": 0, "changed": 0, "unchanged": 0}
        stamp = now()
        self._db.execute("BEGIN")
        for label in labels:
            details = json.dumps(label.details, sort_keys=True) if label.details else None
            before = current.get((label.annotation_id, label.metric))
            if before == (label.value, details):
                counts["unchanged"] += 1
                continue
            counts["new" if before is None else "changed"] += 1
            self._db.execute(
                "INSERT INTO labels (pull_id, source, task_id, annotation_id, case_id, metric, annotator, value, "
                "details, annotation_updated, pulled) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (pull_id, source, label.task_id, label.annotation_id, label.case_id, label.metric, label.annotator,
                 label.value, details, label.updated_at, stamp))
        self._db.execute("COMMIT")
        return counts

    def history(self, case_id: str | None = None) -> list[dict[str, Any]]:
        """Every stored revision, oldest first."""
        query = ("SELECT id, pull_id, source, task_id, annotation_id, case_id, metric, annotator, value, details, "
                 "annotation_updated, pulled FROM labels" + (" WHERE case_id = ?" if case_id else "") + " ORDER BY id")
        keys = ("id", "pull_id", "source", "task_id", "annotation_id", "case_id", "metric", "annotator", "value",
                "details", "annotation_updated", "pulled")
        rows = self._db.execute(query, (case_id,) if case_id else ()).fetchall()
        return [{**dict(zip(keys, row)), "details": json.loads(row[9]) if row[9] else None} for row in rows]

    def export(self, source: str, present: set[tuple[int, str]], *, shown_judge: str | None = None) -> int:
        """Write the current revision of each label whose annotation is still ``present`` in the
        source to ``RATINGS_FILE`` (atomically), and what the annotators saw to ``META_FILE`` (the
        judge shown as pre-annotations, if any); returns the rows written."""
        rows = self._db.execute(
            "SELECT annotation_id, metric, case_id, annotator, value FROM labels WHERE id IN (SELECT MAX(id) "
            "FROM labels WHERE source = ? GROUP BY annotation_id, metric) ORDER BY case_id, metric, annotator",
            (source,)).fetchall()
        written = 0
        with replacing(self.folder / RATINGS_FILE) as handle:
            writer = csv.writer(handle)
            writer.writerow(["case_id", "metric", "rater", "rater_kind", "value"])
            for annotation_id, metric, case_id, annotator, value in rows:
                if (annotation_id, metric) in present:
                    writer.writerow([case_id, metric, annotator, "human", repr(value)])
                    written += 1
        with replacing(self.folder / META_FILE) as handle:
            handle.write(json.dumps({"source": source, "shown_judge": shown_judge, "exported": now()}, indent=2)
                         + "\n")
        return written
