"""Opening the campaign's SQLite stores: WAL, autocommit, and ordered migrations (one shared way)."""

from __future__ import annotations

import datetime as _dt
import sqlite3
from pathlib import Path

__all__ = ["open_store", "now"]


def now() -> str:
    """The current UTC time, ISO 8601 to the millisecond."""
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="milliseconds")


def open_store(path: str | Path, migrations: list[str]) -> sqlite3.Connection:
    """A connection to the store at ``path`` (made if absent) in WAL mode, with every migration it
    lacks applied in order (``PRAGMA user_version`` counts those applied), each in a transaction.

    Examples
    --------
    >>> import tempfile
    >>> db = open_store(Path(tempfile.mkdtemp()) / "s.sqlite", ["CREATE TABLE t (x)", "ALTER TABLE t ADD y"])
    >>> db.execute("PRAGMA user_version").fetchone()[0]
    2
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")  # durable in WAL across process crashes
    version = db.execute("PRAGMA user_version").fetchone()[0]
    for number, statement in enumerate(migrations[version:], start=version + 1):
        db.execute("BEGIN")
        db.execute(statement)
        db.execute(f"PRAGMA user_version = {number}")
        db.execute("COMMIT")
    return db
