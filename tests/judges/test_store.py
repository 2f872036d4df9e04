"""The durable record of judge ratings: attempts appended and served from the cache by key, runs and
their manifests, clearing only when confirmed (calibrate/judges/store.py). Whole runs against a damaged,
read-only or full store: tests/judges/test_judge_runs_lose_nothing.py."""

import sqlite3
from pathlib import Path

import pytest

from calibrate.judges.store import STORE_NAME, Attempt, JudgeStore, cache_key, clear_judge_cache, move_aside

KEY = "sk-" + "p4o5i6u7y8t9" * 4


@pytest.fixture
def store(tmp_path):
    s = JudgeStore(tmp_path / STORE_NAME)
    yield s
    s.close()


def test_the_key_is_a_versioned_hash_of_canonical_json():
    assert cache_key({"b": 1, "a": [1, "é"]}) == cache_key({"a": [1, "é"], "b": 1})
    assert cache_key({"a": 1}) != cache_key({"a": 2}) and cache_key({"a": 1}).startswith("v1:")
    assert len(cache_key({})) == len("v1:") + 64


def test_an_attempt_never_keeps_a_credential():
    a = Attempt("k", "j", "m", "c", 0, error=f"401 for {KEY}", reason=f"I saw {KEY}", details={"prompt": f"key {KEY}"})
    assert KEY not in a.error + a.reason + str(a.details)


def test_the_cache_serves_the_latest_success_and_latest_tells_the_failure(store):
    store.add(Attempt("k1", "j", "f", "c1", 0, value=0.5, details={"weighted": True}), run_id="r1")
    store.add(Attempt("k1", "j", "f", "c1", 0, error="timeout"), run_id="r2")
    store.add(Attempt("k2", "j", "f", "c2", 1, error="refused"), run_id="r2")
    assert store.successes(["k1", "k2", "k3"]) == {
        "k1": Attempt("k1", "j", "f", "c1", 0, value=0.5, details={"weighted": True})
    }
    latest = store.latest(["k1", "k2"])
    assert (latest["k1"].error, latest["k2"].error) == ("timeout", "refused")
    assert store.repeats() == {"j": 2} and store.count() == 3


def test_many_keys_are_read_in_chunks(store):
    for i in range(1203):
        store.add(Attempt(f"k{i}", "j", "f", f"c{i}", 0, value=float(i % 2)), run_id="r1")
    assert len(store.successes([f"k{i}" for i in range(1203)])) == 1203


def test_runs_keep_their_manifests_in_order(store):
    store.start_run("r1", {"judges": []})
    store.start_run("r2", {"judges": [{"name": "j"}]})
    store.finish_run("r1", {"judges": [], "calls": 3})
    assert [row[0] for row in store.run_manifests()] == ["r1", "r2"]
    run = store.run("r1")
    assert run["calls"] == 3 and run["finished"] >= run["started"]
    assert store.run("r2")["finished"] is None


def test_the_summary_counts_each_judges_attempts(store):
    store.add(Attempt("k1", "a", "f", "c1", 0, value=1.0, calls=2, cost=0.01, prompt_tokens=10), run_id="r1")
    store.add(Attempt("k2", "a", "f", "c2", 0, error="x", calls=1, self_eval=True), run_id="r2")
    store.add(Attempt("k3", "b", "f", "c1", 0, value=0.0), run_id="r1")
    a, b = store.summary()
    assert (a["judge"], a["attempts"], a["scored"], a["failed"], a["calls"], a["runs"], a["self_eval"]) == (
        "a",
        2,
        1,
        1,
        3,
        2,
        1,
    )
    assert a["cost"] == pytest.approx(0.01) and b["judge"] == "b"


def test_answers_written_under_the_shared_client_defect_are_kept_but_never_served(tmp_path):
    path = tmp_path / STORE_NAME
    store = JudgeStore(path)
    endpoint = {"provider": "openai", "base_url": "http://h/v1", "api_key_env": "K"}
    store.start_run(
        "old",
        {
            "judges": [
                {"name": "a", "model": {**endpoint, "model": "gpt-4o"}},
                {"name": "b", "model": {**endpoint, "model": "llama"}},
            ]
        },
    )
    store.start_run("safe", {"judges": [{"name": "c", "model": {**endpoint, "model": "gpt-4o"}}]})
    for key, judge, run in [("ka", "a", "old"), ("kb", "b", "old"), ("kc", "c", "safe")]:
        store.add(Attempt(key, judge, "f", "c1", 0, value=1.0), run_id=run)
    store.close()
    with sqlite3.connect(path) as db:  # as an earlier calibrate wrote them: no client recorded
        db.execute("UPDATE attempts SET client = NULL")
    store = JudgeStore(path)
    assert set(store.successes(["ka", "kb", "kc"])) == {"kc"}
    assert store.suspect_keys(["ka", "kb", "kc"]) == {"ka", "kb"} and store.count() == 3
    store.close()


def test_clearing_needs_confirming_and_a_damaged_store_is_moved_aside(tmp_path):
    assert clear_judge_cache(tmp_path)["deleted"] is None  # no store
    store = JudgeStore(tmp_path / STORE_NAME)
    store.add(Attempt("k1", "j", "f", "c1", 0, value=0.5, cost=0.02), run_id="r1")
    store.close()
    doc = clear_judge_cache(tmp_path)
    assert (doc["refused"], doc["deleted"], doc["would_delete"]["attempts"], doc["would_delete"]["cost"]) == (
        True,
        None,
        1,
        0.02,
    )
    assert clear_judge_cache(tmp_path, confirm=True)["deleted"] == 1
    assert clear_judge_cache(tmp_path)["deleted"] == 0
    for suffix in ("-wal", "-shm"):
        (tmp_path / (STORE_NAME + suffix)).unlink(missing_ok=True)
    (tmp_path / STORE_NAME).write_bytes(b"garbage" * 100)
    moved = clear_judge_cache(tmp_path, confirm=True)
    assert moved["deleted"] is None and "damaged" in moved["problem"]
    assert not (tmp_path / STORE_NAME).exists() and Path(moved["moved_to"]).read_bytes() == b"garbage" * 100


def test_move_aside_renames_the_store_and_its_wal_files(tmp_path):
    for suffix in ("", "-wal", "-shm"):
        (tmp_path / f"s.sqlite{suffix}").write_text(suffix or "main")
    target = move_aside(tmp_path / "s.sqlite")
    assert target.name.startswith("s.sqlite.damaged-") and target.read_text() == "main"
    assert (tmp_path / (target.name + "-wal")).read_text() == "-wal" and not (tmp_path / "s.sqlite").exists()
