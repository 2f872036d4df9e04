"""The campaign's record of Label Studio labels: every revision kept, the current ones exported.

One SQLite file per campaign (``labelstudio.sqlite``, WAL). A pulled label that is new, or differs
from the last pulled revision of the same annotation and metric, is appended as a new revision;
nothing is updated or deleted. A label that a pull does not bring is not a deletion: an export file
may hold part of a project, so the label stays. Only a pull that read the whole project (through the
API) *withdraws* the labels it no longer finds — deleted in Label Studio — and a withdrawal is a row
of its own, so the label stays in the history (and comes back if the annotation does).

After each pull, the current label of every (case, metric, annotator) from every pull so far, less
the withdrawn ones and those of adjudicators, is written to ``labelstudio_ratings.csv``, which
``load_campaign`` reads beside the user's own ratings. Where one annotator has several annotations
of a case (another pull, another export), the one Label Studio updated last wins. The project each
Label Studio server holds for the campaign is recorded too (never the API key).
"""

from __future__ import annotations

import csv
import datetime as _dt
import json
from pathlib import Path
from typing import Any, NamedTuple

from pydantic import JsonValue

from calibrate.base.documents import parse_json
from calibrate.base.files import replacing
from calibrate.base.sqlite_store import now, open_store
from calibrate.base.times import latest_first
from calibrate.campaign import LABELSTUDIO_META_FILE, LABELSTUDIO_RATINGS_FILE
from calibrate.humans.labelstudio.interface import Interface, read_interface_record
from calibrate.humans.labelstudio.labels import Label

__all__ = ["RATINGS_FILE", "STORE_NAME", "LabelStore"]

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
    # a label a whole-project pull no longer found (deleted in Label Studio): out of the statistics, in the history
    """CREATE TABLE withdrawals (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        pull_id TEXT NOT NULL,
        label_id INTEGER NOT NULL,
        withdrawn TEXT NOT NULL
    )""",
    "CREATE INDEX withdrawals_label ON withdrawals (label_id)",
    # what each source (a project, an export) showed its annotators, and whose labels there are decisions
    """CREATE TABLE sources (
        source TEXT PRIMARY KEY,
        shown_judge TEXT,
        adjudicators TEXT NOT NULL DEFAULT '[]',
        pulled TEXT NOT NULL
    )""",
    # the interface (metrics and controls) a project was pushed with, and a source last read with: a metric
    # removed from campaign.toml since is still read from it, its labels kept and set aside
    "ALTER TABLE projects ADD COLUMN interface TEXT",
    "ALTER TABLE sources ADD COLUMN interface TEXT",
]


def _moment(updated: str | None) -> _dt.datetime:
    """When Label Studio last updated an annotation, read by :func:`calibrate.base.times.latest_first` (a
    time a pull stored before times were checked, and that does not read as one, is the earliest)."""
    try:
        return latest_first(updated)
    except ValueError:
        return latest_first(None)


def _later(updated: str | None, than: str | None) -> bool:
    """Whether Label Studio's ``updated`` time of an annotation is after the time ``than`` (ISO 8601)."""
    return _moment(updated) > _moment(than)


class Project(NamedTuple):
    project_id: int
    metrics: list[str]
    shown_judge: str | None
    #: the interface calibrate pushed (:meth:`Interface.record`), None for a project pushed before it was kept
    interface: str | None = None


def _outcome(label: Label, before: tuple | None, details: str | None, whole: bool) -> str:
    """What a pulled label is against the revision stored (``before``): the count it adds to."""
    if before is not None and before[9] and not whole and not _later(label.updated_at, before[9]):
        return "deleted_since"  # an older file: the project has deleted it since
    if before is not None and (before[6], before[7]) == (label.value, details) and not before[9]:
        return "unchanged"
    if before is not None and not before[9] and _later(before[8], label.updated_at):
        return "older_kept"  # an older file: Label Studio updated the annotation since
    return "new" if before is None else "restored" if before[9] else "changed"


class LabelStore:
    """The campaign's label store (``STORE_NAME`` in the campaign folder)."""

    def __init__(self, folder: str | Path):
        self.folder = Path(folder)
        self._db = open_store(self.folder / STORE_NAME, MIGRATIONS)

    def close(self) -> None:
        self._db.close()

    def _json(self, text: str, schema: Any, column: str) -> Any:
        """A JSON column of the store read through its declared type (a store a person edited by hand is
        a clear error naming the store and the column, never a traceback)."""
        return parse_json(
            text,
            schema,
            source=f"{self.folder / STORE_NAME}: {column}",
            expected="what calibrate labelstudio pull writes",
        )

    def project(self, url: str) -> Project | None:
        """The project pushed to the server at ``url``: its id, the metrics it labels, and the judge
        it shows as pre-annotations (None when blind)."""
        row = self._db.execute(
            "SELECT project_id, metrics, shown_judge, interface FROM projects WHERE url = ?", (url,)
        ).fetchone()
        return Project(row[0], self._json(row[1], list[str], "projects.metrics"), row[2], row[3]) if row else None

    def set_project(
        self,
        url: str,
        project_id: int,
        metrics: list[str],
        shown_judge: str | None = None,
        interface: Interface | None = None,
    ) -> None:
        self._db.execute(
            "INSERT OR REPLACE INTO projects (url, project_id, metrics, created, shown_judge, interface) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (
                url,
                project_id,
                json.dumps(sorted(metrics)),
                now(),
                shown_judge,
                interface.record() if interface else None,
            ),
        )

    def project_of(self, project_id: int) -> tuple[str, Project] | None:
        """The server and project of a project id, when exactly one pushed project has it."""
        rows = self._db.execute(
            "SELECT url, project_id, metrics, shown_judge, interface FROM projects WHERE project_id = ?", (project_id,)
        ).fetchall()
        return (
            (
                rows[0][0],
                Project(rows[0][1], self._json(rows[0][2], list[str], "projects.metrics"), rows[0][3], rows[0][4]),
            )
            if len(rows) == 1
            else None
        )

    def interfaces(self, source: str, project: Project | None = None) -> list[Interface]:
        """The interfaces ``source`` had: the one it was last pulled with, and the one its ``project`` was
        pushed with (each read through its declared record; a store edited by hand is a clear error)."""
        row = self._db.execute("SELECT interface FROM sources WHERE source = ?", (source,)).fetchone()
        found = [
            (row[0] if row else None, "sources.interface"),
            (project.interface if project else None, "projects.interface"),
        ]
        return [
            read_interface_record(text, source=f"{self.folder / STORE_NAME}: {column}")
            for text, column in found
            if text
        ]

    def _current(self, source: str | None = None) -> list[tuple]:
        """The latest revision of each (source, task, annotation, metric), with when it was withdrawn (None
        when it is not): (id, source, annotation_id, metric, case_id, annotator, value, details,
        annotation_updated, withdrawn, task_id). An annotation is known by its task and its id: an export
        holding one id on two tasks holds two annotations (each kept), not one."""
        where = "WHERE source = ?" if source is not None else ""
        return self._db.execute(
            "SELECT id, source, annotation_id, metric, case_id, annotator, value, details, annotation_updated, "
            "(SELECT MAX(withdrawn) FROM withdrawals WHERE label_id = labels.id), task_id FROM labels WHERE id IN "
            f"(SELECT MAX(id) FROM labels {where} GROUP BY source, task_id, annotation_id, metric) ORDER BY id",
            (source,) if source is not None else (),
        )

    def add_pull(
        self,
        pull_id: str,
        source: str,
        labels: list[Label],
        *,
        metrics: list[str],
        whole: bool,
        shown_judge: str | None = None,
        adjudicators: set[str] | None = None,
        interface: Interface | None = None,
    ) -> dict[str, int]:
        """Append what is new or changed since the last pull from ``source``; one transaction.

        The labels of ``metrics`` pulled from ``source`` before and absent now are withdrawn when the
        pull read the ``whole`` project, and kept (counted as ``absent_kept``) when it did not. A label
        older than the revision stored (Label Studio updated the annotation since: an older export file)
        does not replace it (counted as ``older_kept``). The
        ``interface`` the pull read with is recorded for the source (see :meth:`interfaces`)."""
        current = {(row[10], row[2], row[3]): row for row in self._current(source)}
        counts = {
            "new": 0,
            "changed": 0,
            "unchanged": 0,
            "restored": 0,
            "withdrawn": 0,
            "absent_kept": 0,
            "deleted_since": 0,
            "older_kept": 0,
        }
        stamp = now()
        seen = set()
        self._db.execute("BEGIN")
        for label in labels:
            details = json.dumps(label.details, sort_keys=True) if label.details else None
            key = (label.task_id, label.annotation_id, label.metric)
            before = current.get(key)
            seen.add(key)
            outcome = _outcome(label, before, details, whole)
            counts[outcome] += 1
            if outcome in ("new", "restored", "changed"):
                self._insert_label(pull_id, source, label, before, details, stamp)
        absent = [row[0] for key, row in current.items() if key not in seen and not row[9] and row[3] in metrics]
        if whole:
            for label_id in absent:
                self._db.execute(
                    "INSERT INTO withdrawals (pull_id, label_id, withdrawn) VALUES (?, ?, ?)",
                    (pull_id, label_id, stamp),
                )
        counts["withdrawn" if whole else "absent_kept"] = len(absent)
        self._record_source(source, shown_judge, adjudicators, interface, stamp)
        self._db.execute("COMMIT")
        return counts

    def _insert_label(
        self, pull_id: str, source: str, label: Label, before: tuple | None, details: str | None, stamp: str
    ) -> None:
        """Store a new revision of ``label`` (``before``: the current one, if any)."""
        # an export file names annotators by id only: keep the name an API pull gave the annotation
        annotator = before[5] if before is not None and label.annotator.startswith("ls-user-") else label.annotator
        self._db.execute(
            "INSERT INTO labels (pull_id, source, task_id, annotation_id, case_id, metric, annotator, value, "
            "details, annotation_updated, pulled) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                pull_id,
                source,
                label.task_id,
                label.annotation_id,
                label.case_id,
                label.metric,
                annotator,
                label.value,
                details,
                label.updated_at,
                stamp,
            ),
        )

    def _record_source(
        self,
        source: str,
        shown_judge: str | None,
        adjudicators: set[str] | None,
        interface: Interface | None,
        stamp: str,
    ) -> None:
        """Record a pull of ``source``: the judge it showed, its adjudicators (with the earlier ones), its interface."""
        known = self._db.execute("SELECT adjudicators, interface FROM sources WHERE source = ?", (source,)).fetchone()
        deciders = sorted(
            set(self._json(known[0], list[str], "sources.adjudicators") if known else []) | set(adjudicators or ())
        )
        self._db.execute(
            "INSERT OR REPLACE INTO sources (source, shown_judge, adjudicators, pulled, interface) VALUES "
            "(?, ?, ?, ?, ?)",
            (
                source,
                shown_judge,
                json.dumps(deciders),
                stamp,
                interface.record() if interface else known[1] if known else None,
            ),
        )

    def history(self, case_id: str | None = None) -> list[dict[str, Any]]:
        """Every stored revision, oldest first."""
        query = (
            "SELECT id, pull_id, source, task_id, annotation_id, case_id, metric, annotator, value, details, "
            "annotation_updated, pulled FROM labels" + (" WHERE case_id = ?" if case_id else "") + " ORDER BY id"
        )
        keys = (
            "id",
            "pull_id",
            "source",
            "task_id",
            "annotation_id",
            "case_id",
            "metric",
            "annotator",
            "value",
            "details",
            "annotation_updated",
            "pulled",
        )
        rows = self._db.execute(query, (case_id,) if case_id else ()).fetchall()
        return [
            {
                **dict(zip(keys, row)),
                "details": self._json(row[9], dict[str, JsonValue], "labels.details") if row[9] else None,
            }
            for row in rows
        ]

    def export(self) -> int:
        """Write the current label of every (case, metric, annotator) to ``RATINGS_FILE`` (atomically;
        see the module docstring), and what the annotators saw to ``META_FILE`` (the judge shown as
        pre-annotations, if any); returns the rows written."""
        sources = {
            row[0]: (row[1], set(self._json(row[2], list[str], "sources.adjudicators")))
            for row in self._db.execute("SELECT source, shown_judge, adjudicators FROM sources")
        }
        chosen: dict[tuple[str, str, str], tuple] = {}
        for row in self._current():
            label_id, source, _, metric, case_id, annotator, _value, _, updated, withdrawn, _ = row
            if withdrawn or annotator in sources.get(source, (None, set()))[1]:
                continue  # deleted in Label Studio, or a decision (adjudications.csv), not a rating
            key = (case_id, metric, annotator)
            if key not in chosen or (_moment(updated), label_id) > (_moment(chosen[key][8]), chosen[key][0]):
                chosen[key] = row
        with replacing(self.folder / RATINGS_FILE) as handle:
            writer = csv.writer(handle)
            writer.writerow(["case_id", "metric", "rater", "rater_kind", "value"])
            for (case_id, metric, annotator), row in sorted(chosen.items()):
                writer.writerow([case_id, metric, annotator, "human", repr(row[6])])
        shown = sorted({sources[row[1]][0] for row in chosen.values() if sources.get(row[1], (None,))[0]})
        with replacing(self.folder / META_FILE) as handle:
            handle.write(
                json.dumps(
                    {
                        "sources": sorted({row[1] for row in chosen.values()}),
                        "shown_judge": shown[0] if shown else None,
                        "exported": now(),
                    },
                    indent=2,
                )
                + "\n"
            )
        return len(chosen)
