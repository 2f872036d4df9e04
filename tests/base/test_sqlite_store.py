"""The campaign's SQLite stores: WAL, ordered migrations, read-only opening, and failures that name the
store and what to do (calibrate/base/sqlite_store.py)."""

import datetime as dt
import sqlite3

import pytest

from calibrate.base.errors import StoreError
from calibrate.base.sqlite_store import DAMAGED_TODO, now, open_store, store_error

MIGRATIONS = ["CREATE TABLE t (x)", "ALTER TABLE t ADD y"]


def test_migrations_apply_once_in_order_and_later_ones_are_added(tmp_path):
    path = tmp_path / "deep" / "s.sqlite"
    db = open_store(path, MIGRATIONS[:1])
    assert db.execute("PRAGMA user_version").fetchone()[0] == 1
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    db.execute("INSERT INTO t VALUES (1)")
    db.close()
    db = open_store(path, MIGRATIONS)  # the first is not run again; the second is
    assert db.execute("PRAGMA user_version").fetchone()[0] == 2
    db.execute("INSERT INTO t VALUES (2, 'b')")
    assert db.execute("SELECT x, y FROM t ORDER BY x").fetchall() == [(1, None), (2, "b")]
    db.close()


def test_a_read_only_opening_writes_nothing_and_needs_the_store(tmp_path):
    path = tmp_path / "s.sqlite"
    open_store(path, MIGRATIONS).close()
    db = open_store(path, MIGRATIONS + ["CREATE TABLE u (z)"], read_only=True)
    assert db.execute("PRAGMA user_version").fetchone()[0] == 2  # no migration
    with pytest.raises(StoreError) as refused:
        db.execute("INSERT INTO t VALUES (1, 2)")
    assert refused.value.kind == "read-only" and str(path) in str(refused.value)
    db.close()
    with pytest.raises(StoreError, match="no such store; run the command that writes it first"):
        open_store(tmp_path / "absent.sqlite", MIGRATIONS, read_only=True)


def test_a_file_that_is_no_store_is_damaged_and_kept(tmp_path):
    path = tmp_path / "s.sqlite"
    path.write_bytes(b"not sqlite at all" * 100)
    for read_only in (False, True):
        with pytest.raises(StoreError) as damaged:
            open_store(path, MIGRATIONS, read_only=read_only)
        assert damaged.value.kind == "damaged" and damaged.value.todo == DAMAGED_TODO
    assert path.read_bytes() == b"not sqlite at all" * 100


def test_a_link_is_never_written_through(tmp_path):
    target = tmp_path / "elsewhere.sqlite"
    open_store(target, MIGRATIONS).close()
    (tmp_path / "s.sqlite").symlink_to(target)
    with pytest.raises(StoreError, match="is a symbolic link") as refused:
        open_store(tmp_path / "s.sqlite", MIGRATIONS)
    assert refused.value.kind == "damaged"


@pytest.mark.parametrize(
    ("message", "kind"),
    [
        ("file is not a database", "damaged"),
        ("database disk image is malformed", "damaged"),
        ("database is locked", "locked"),
        ("attempt to write a readonly database", "read-only"),
        ("unable to open database file", "read-only"),
        ("database or disk is full", "full"),
        ("disk I/O error", "full"),
        ("something else", "unreadable"),
    ],
)
def test_each_sqlite_failure_says_what_it_means(message, kind):
    error = store_error("c/s.sqlite", sqlite3.OperationalError(message), "do this")
    assert error.kind == kind and error.path == "c/s.sqlite" and message in error.problem
    assert (error.todo == "do this") == (kind in ("damaged", "unreadable"))


def test_now_is_utc_to_the_millisecond():
    stamp = now()
    parsed = dt.datetime.fromisoformat(stamp)
    assert parsed.utcoffset() == dt.timedelta(0) and len(stamp.split(".")[1]) == len("123+00:00")
