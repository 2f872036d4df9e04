"""The campaign's record of imported ratings: every revision kept, withdrawals and their undoing, the
current ratings exported (calibrate/imports/store.py)."""

import csv
import io
import json

import pytest

from calibrate.imports.records import ImportedRating, SourceBatch
from calibrate.imports.store import EXPORT_COLUMNS, STORE_NAME, ImportStore, withdraw_limit


def rating(case, value, *, rater="gpt-4o", **kw):
    return "faithful", ImportedRating(case, "Faithfulness", rater, "judge", value, f"{case}-{rater}", **kw)


def batch(whole=False):
    return SourceBatch("mlflow", "mlflow:http://h#1", "http://h experiment 1", whole=whole)


@pytest.fixture
def store(tmp_path):
    s = ImportStore(tmp_path)
    yield s
    s.close()


def add(store, import_id, ratings, *, whole=False, allow_withdraw=False):
    with store.transaction(keep=True):
        return store.add(
            import_id, batch(whole), ratings, metrics=["faithful"], skipped=[], allow_withdraw=allow_withdraw
        )


def test_new_changed_and_unchanged_ratings_are_counted_and_every_revision_kept(store, tmp_path):
    assert (tmp_path / STORE_NAME).is_file()
    assert add(store, "i1", [rating("c1", 1.0, facts={"model": "gpt-4o"}), rating("c2", 0.0)])["new"] == 2
    counts = add(
        store, "i2", [rating("c1", 1.0, facts={"model": "gpt-4o"}), rating("c2", 1.0, reason="changed its mind")]
    )
    assert (counts["unchanged"], counts["changed"], counts["new"], counts["absent_kept"]) == (1, 1, 0, 0)
    assert [(h["import_id"], h["value"]) for h in store.history("c2")] == [("i1", 0.0), ("i2", 1.0)]
    assert [r["value"] for r in store.current()] == [1.0, 1.0]
    assert [i["import_id"] for i in store.imports()] == ["i1", "i2"] and store.imports()[1]["counts"]["changed"] == 1


def test_a_transaction_not_kept_leaves_nothing(store):
    with store.transaction(keep=False):
        store.add("i1", batch(), [rating("c1", 1.0)], metrics=["faithful"], skipped=[])
    assert store.current() == [] and store.imports() == []
    with pytest.raises(RuntimeError), store.transaction(keep=True):
        store.add("i2", batch(), [rating("c1", 1.0)], metrics=["faithful"], skipped=[])
        raise RuntimeError("the import failed after storing")
    assert store.current() == []


def test_a_whole_read_withdraws_what_the_origin_no_longer_holds_and_the_withdrawal_can_be_undone(store):
    add(store, "i1", [rating(f"c{i}", 1.0) for i in range(10)], whole=True)
    counts = add(store, "i2", [rating(f"c{i}", 1.0) for i in range(1, 10)], whole=True)
    assert counts["withdrawn"] == 1 and [r["case_id"] for r in store.withdrawn_by("i2")] == ["c0"]
    assert "c0" not in store.export_texts()["imported_ratings.csv"]
    with store.transaction(keep=True):
        assert store.reinstate("i2", by="undo-1") == 1
    assert "c0," in store.export_texts()["imported_ratings.csv"]
    assert [h["import_id"] for h in store.history("c0")] == ["i1", "undo-1"]


def test_a_read_missing_too_much_keeps_it_until_told(store):
    add(store, "i1", [rating(f"c{i}", 1.0) for i in range(10)], whole=True)
    held = add(store, "i2", [rating("c0", 1.0)], whole=True)
    assert held["absent_held"] == 9 and held["withdrawn"] == 0
    assert add(store, "i3", [rating("c0", 1.0)], whole=True, allow_withdraw=True)["withdrawn"] == 9
    assert add(store, "i4", [rating("c0", 1.0)])["absent_kept"] == 0  # a partial read withdraws nothing
    assert (withdraw_limit(20), withdraw_limit(1000)) == (5, 100)


def test_the_export_is_the_current_ratings_and_what_the_sources_said_of_their_raters(store):
    add(
        store,
        "i1",
        [
            rating("c2", 1.0, facts={"model": "gpt-4o", "threshold": 0.5}),
            rating("c1", None, error="timeout\rretried"),
            rating("c1", 0.0, rater="alice", facts={"source_type": "HUMAN"}),
        ],
    )
    texts = store.export_texts()
    rows = list(csv.reader(io.StringIO(texts["imported_ratings.csv"], newline="")))
    assert rows[0] == EXPORT_COLUMNS
    assert [(r[0], r[2], r[4], r[5]) for r in rows[1:]] == [
        ("c1", "alice", "0.0", ""),
        ("c1", "gpt-4o", "", "timeout\rretried"),
        ("c2", "gpt-4o", "1.0", ""),
    ]
    meta = json.loads(texts["imported_ratings.json"])
    assert meta["origins"] == ["mlflow:http://h#1"]
    assert meta["raters"]["gpt-4o"] == {
        "kind": "judge",
        "model": "gpt-4o",
        "family": "gpt",
        "models": ["gpt-4o"],
        "origins": ["mlflow:http://h#1"],
        "thresholds": {"faithful": [0.5]},
        "source_types": [],
        "ratings": 2,
    }
    assert meta["raters"]["alice"]["family"] is None and meta["raters"]["alice"]["source_types"] == ["HUMAN"]
    assert store.export_texts() == texts  # no clock in it: the same ratings, the same bytes
