"""Opening the campaign's SQLite stores: WAL, autocommit, and ordered migrations (one shared way).

Every SQLite failure leaves as a :class:`~calibrate.base.errors.StoreError` that names the file, says what
is wrong with it (damaged, locked by another program, read-only, disk full) and what to do; a store is
never deleted or rewritten to get past one.
"""

from __future__ import annotations

import datetime as _dt
import os
import sqlite3
from pathlib import Path
from typing import Any

from calibrate.base.errors import StoreError

__all__ = ["Store", "now", "open_store", "store_error"]

#: seconds a write waits for another connection's transaction before the store counts as locked
BUSY_TIMEOUT_S = 10.0


def now() -> str:
    """The current UTC time, ISO 8601 to the millisecond."""
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="milliseconds")


def store_error(path: str | Path, exc: sqlite3.Error, damaged_todo: str) -> StoreError:
    """What a SQLite failure on the store at ``path`` means for its user.

    Examples
    --------
    >>> str(store_error("s.sqlite", sqlite3.DatabaseError("file is not a database"), "move it aside"))
    's.sqlite: damaged: not a readable SQLite store (file is not a database); move it aside'
    """
    text = str(exc).lower()
    if "not a database" in text or "malformed" in text or "encrypted" in text:
        return StoreError(path, "damaged", f"damaged: not a readable SQLite store ({exc})", damaged_todo)
    if "locked" in text or "busy" in text:
        return StoreError(
            path,
            "locked",
            f"locked by another program ({exc})",
            "close the program that holds it (a database browser, another calibrate) and run again",
        )
    if "readonly" in text or "read-only" in text or "unable to open" in text or "permission" in text:
        return StoreError(
            path,
            "read-only",
            f"cannot be opened for writing ({exc})",
            "make the campaign folder writable, or run where it is (commands that only read, such "
            "as stats and report, work on a read-only campaign)",
        )
    if "full" in text or "disk i/o" in text:
        return StoreError(
            path,
            "full",
            f"the disk is full or failing ({exc})",
            "free some space and run again: what the store held is intact",
        )
    return StoreError(path, "unreadable", f"SQLite failed ({exc})", damaged_todo)


class _Rows(list):
    """The rows of a query, read at once (so that a damaged page fails here, not later)."""

    def fetchone(self) -> Any:
        return self[0] if self else None

    def fetchall(self) -> list:
        return list(self)


class Store:
    """A SQLite connection whose failures name the store: ``execute`` returns the rows read."""

    def __init__(self, db: sqlite3.Connection, path: Path, damaged_todo: str):
        self._db, self.path, self.damaged_todo = db, path, damaged_todo

    def execute(self, sql: str, parameters: tuple | list = ()) -> _Rows:
        try:
            return _Rows(self._db.execute(sql, parameters).fetchall())
        except sqlite3.Error as exc:
            raise store_error(self.path, exc, self.damaged_todo) from None

    def close(self) -> None:
        self._db.close()


def _open_read_only(path: Path, damaged_todo: str) -> Store:
    """The store read as it is. In a folder that cannot be written, where SQLite cannot make the
    shared-memory file a WAL reader needs, the file is read as immutable (what a clean close left)."""
    if not path.is_file():
        raise StoreError(path, "unreadable", "no such store", "run the command that writes it first")

    def connect(query: str) -> Store:
        store = Store(
            sqlite3.connect(path.resolve().as_uri() + query, uri=True, check_same_thread=False), path, damaged_todo
        )
        try:
            store.execute("PRAGMA user_version")  # a file that is not a store fails here
        except StoreError:
            store.close()
            raise
        return store

    try:
        return connect("?mode=ro")
    except StoreError as exc:
        if exc.kind != "read-only":
            raise
    return connect("?mode=ro&immutable=1")


DAMAGED_TODO = "move it aside (rename it) and run again: calibrate starts a new store"


def open_store(
    path: str | Path, migrations: list[str], *, read_only: bool = False, damaged_todo: str = DAMAGED_TODO
) -> Store:
    """A connection to the store at ``path`` (made if absent) in WAL mode, with every migration it
    lacks applied in order (``PRAGMA user_version`` counts those applied), each in a transaction.

    ``read_only``: open an existing store without writing anything to it or beside it (no migration),
    for the commands that only read, so that they work on a read-only campaign.

    Examples
    --------
    >>> import tempfile
    >>> db = open_store(Path(tempfile.mkdtemp()) / "s.sqlite", ["CREATE TABLE t (x)", "ALTER TABLE t ADD y"])
    >>> db.execute("PRAGMA user_version").fetchone()[0]
    2
    """
    path = Path(path)
    links = [
        p for p in (path, *(path.with_name(path.name + s) for s in ("-wal", "-shm", "-journal"))) if p.is_symlink()
    ]
    if links and not read_only:  # a store is a file of its folder: a link would take its writes elsewhere
        raise StoreError(
            links[0],
            "damaged",
            f"is a symbolic link (to {os.readlink(links[0])}): calibrate writes no "
            "store through a link, which could lead out of the campaign folder",
            "remove the link, and put the store itself there if it is yours",
        )
    try:
        if read_only:
            return _open_read_only(path, damaged_todo)
        path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=BUSY_TIMEOUT_S)
    except sqlite3.Error as exc:
        raise store_error(path, exc, damaged_todo) from None
    except OSError as exc:
        raise StoreError(
            path, "read-only", f"cannot be made ({exc.strerror})", "make the campaign folder writable"
        ) from None
    store = Store(db, path, damaged_todo)
    store.execute("PRAGMA journal_mode=WAL")
    store.execute("PRAGMA synchronous=NORMAL")  # durable in WAL across process crashes
    version = store.execute("PRAGMA user_version").fetchone()[0]
    for number, statement in enumerate(migrations[version:], start=version + 1):
        store.execute("BEGIN")
        store.execute(statement)
        store.execute(f"PRAGMA user_version = {number}")
        store.execute("COMMIT")
    return store
