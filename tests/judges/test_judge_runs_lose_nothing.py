"""Nothing a judge run was given or paid for is lost: a partial run keeps every other rating, one run at
a time holds a campaign, failures are loud and grouped, removed cases do not wedge the campaign, and a
damaged, read-only or full store or output folder gives a clear error with nothing lost."""

import json
import os
import re
import resource
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from calibrate import compute_stats, load_campaign
from calibrate.base.errors import FolderInUse, StoreError
from calibrate.judges.calls import CallPolicy
from calibrate.judges.runner import run_judges
from calibrate.judges.store import STORE_NAME
from tests.conftest import need, run_cli, write_campaign
from tests.servers.judge_server import JudgeServer

CALIBRATE = str(Path(sys.executable).parent / "calibrate")
CALLS_PER_CASE = 4  # DeepEval faithfulness


def make_cases(n: int) -> list[dict]:
    return [
        {
            "case_id": f"c{i:03d}",
            "input": f"What about item {i}?",
            "actual_output": f"Item {i} is blue." + ("" if i % 2 == 0 else f" Item {i} costs nothing."),
            "retrieval_context": [f"Item {i} is blue."],
        }
        for i in range(n)
    ]


def two_judges(url: str) -> str:
    return f"""
name = "lossless"
[metrics.faithfulness]
scale = "binary"
[judges.a]
library = "deepeval"
metric = "faithfulness"
model = {{ provider = "openai", name = "llama-careful", base_url = "{url}" }}
[judges.b]
library = "ragas"
metric = "faithfulness"
model = {{ provider = "openai", name = "gpt-lenient", base_url = "{url}" }}
"""


def campaign(tmp_path, url, n=6, toml=None):
    cases = make_cases(n)
    humans = pd.DataFrame(
        {
            "case_id": [c["case_id"] for c in cases],
            "metric": "faithfulness",
            "rater": "ann",
            "rater_kind": "human",
            "value": [int(i % 2 == 0) for i in range(n)],
        }
    )
    return write_campaign(tmp_path / "campaign", toml or two_judges(url), humans, cases)


def exported(folder) -> dict:
    table = pd.read_csv(folder / "judge_ratings.csv", keep_default_na=False, dtype=str)
    return {(r.rater, r.case_id, r.run_id): r.value for r in table.itertuples()}


def run_limited(megabytes: float, *args) -> subprocess.CompletedProcess:
    """``calibrate ARGS`` in a process of its own whose files cannot grow past ``megabytes``."""
    return subprocess.run(
        [CALIBRATE, *map(str, args)], capture_output=True, text=True, timeout=300, preexec_fn=limited(megabytes)
    )


def test_a_run_of_one_judge_keeps_every_other_rating(tmp_path, server):
    folder = campaign(tmp_path, server.url)
    bars: dict[str, tuple[int, int]] = {}
    run_judges(load_campaign(folder), progress=lambda done, total, label: bars.__setitem__(label, (done, total)))
    assert bars == {"judging a": (6, 6), "judging b": (6, 6)}  # one bar per judge, each run to its end
    everything = exported(folder)
    assert {judge for judge, _, _ in everything} == {"a", "b"} and len(everything) == 12
    run_judges(load_campaign(folder), judges=["a"], use_cache=False)
    assert exported(folder) == everything
    run_judges(load_campaign(folder), judges=["b"], skip_incomplete=True)
    assert exported(folder) == everything
    judges = {j["judge"] for j in compute_stats(load_campaign(folder), n_boot=20)["metrics"][0]["judges"]}
    assert judges == {"a", "b"}


def test_repeats_survive_a_plain_run(tmp_path, server):
    folder = campaign(tmp_path, server.url)
    run_judges(load_campaign(folder), judges=["a"], repeats=3)
    run_judges(load_campaign(folder))
    rows = exported(folder)
    assert sorted({run_id for judge, _, run_id in rows if judge == "a"}) == ["repeat-0", "repeat-1", "repeat-2"]
    assert sum(judge == "a" for judge, _, _ in rows) == 18 and sum(judge == "b" for judge, _, _ in rows) == 6
    judges = {j["judge"] for j in compute_stats(load_campaign(folder), n_boot=20)["metrics"][0]["judges"]}
    assert judges == {"a@repeat-0", "a@repeat-1", "a@repeat-2", "b"}


def test_a_changed_judge_leaves_the_file_until_it_is_scored_again(tmp_path, server):
    """Ratings of a judge's earlier settings are not its current ones: they stay in the store only."""
    folder = campaign(tmp_path, server.url)
    run_judges(load_campaign(folder))
    toml = (folder / "campaign.toml").read_text().replace('name = "gpt-lenient"', 'name = "gpt-strict"')
    (folder / "campaign.toml").write_text(toml)
    doc = run_judges(load_campaign(folder), judges=["a"])
    assert doc["exported"] == {"a": 6}
    assert run_judges(load_campaign(folder), judges=["b"])["exported"] == {"a": 6, "b": 6}


def test_one_judge_run_at_a_time(tmp_path, monkeypatch):
    monkeypatch.setenv("CALIBRATE_LOCK_TIMEOUT", "0")  # refuse at once, rather than wait for the first run
    n = 30
    with JudgeServer(delay_s=0.05) as server:
        folder = campaign(tmp_path, server.url, n=n, toml=two_judges(server.url).split("[judges.b]")[0])
        first = subprocess.Popen(
            [CALIBRATE, "judge", str(folder), "--concurrency", "2"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.time() + 60
        while time.time() < deadline and server.counts["requests"] < 4:
            time.sleep(0.05)
        second = run_cli("judge", folder)
        assert second.returncode == 2
        assert (
            "in use by calibrate judge (process" in second.stderr and "pay for every model call twice" in second.stderr
        )
        with pytest.raises(FolderInUse):
            run_judges(load_campaign(folder))
        assert first.wait(timeout=120) == 0, first.stderr.read()
        assert server.counts["requests"] == n * CALLS_PER_CASE
        # a killed run leaves no lock behind
        killed = subprocess.Popen(
            [CALIBRATE, "judge", str(folder), "--no-cache", "--concurrency", "1"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        before = server.counts["requests"]
        while time.time() < deadline + 60 and server.counts["requests"] < before + 2:
            time.sleep(0.05)
        os.kill(killed.pid, signal.SIGKILL)
        killed.wait()
        assert run_judges(load_campaign(folder))["judges"][0]["from_cache"] == n


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_a_run_that_reaches_no_model_is_loud_and_stops_early(tmp_path, server):
    port = closed_port()
    folder = campaign(
        tmp_path,
        f"http://127.0.0.1:{port}/v1",
        n=20,
        toml=two_judges(f"http://127.0.0.1:{port}/v1").split("[judges.b]")[0],
    )
    result = run_cli("judge", folder, "--retries", 1, "--concurrency", 2)
    assert result.returncode == 1, result.stdout + result.stderr
    lines = [line for line in result.stdout.splitlines() if line.startswith("failed:")]
    assert len(lines) == 1, result.stdout  # grouped, not one line per case
    assert f"connection failed: ClientConnectorError to 127.0.0.1:{port} (Connection refused)" in lines[0]
    assert "after 2 attempts" in lines[0]
    assert f"stopped calling openai:http://127.0.0.1:{port}/v1 after 5 consecutive ratings" in result.stderr
    doc = run_judges(load_campaign(folder), policy=CallPolicy(retries=0), stop_after=3)
    summary = doc["judges"][0]
    assert summary["failed"] >= 3 and summary["unscored"] > 0 and summary["failed"] + summary["unscored"] == 20
    assert doc["stopped"][0]["unscored"] == {"a": summary["unscored"]} and doc["stopped"][0]["after"] == 3
    assert summary["errors"] == [
        {
            "error": f"connection failed: ClientConnectorError to 127.0.0.1:{port} "
            "(Connection refused) after 1 attempts",
            "count": summary["failed"],
        }
    ]
    # once the endpoint is back, the next run tries every rating, the unscored ones included
    (folder / "campaign.toml").write_text(
        (folder / "campaign.toml").read_text().replace(f"http://127.0.0.1:{port}/v1", server.url)
    )
    assert run_judges(load_campaign(folder))["judges"][0]["scored"] == 20


def test_a_judge_that_fails_everywhere_exits_non_zero_though_others_work(tmp_path, server):
    folder = campaign(tmp_path, server.url)
    server.inject("Item", "malformed", times=1000)  # every reply unreadable: not retried, not a connection failure
    result = run_cli("judge", folder, "--judge", "a")
    assert result.returncode == 1 and "judge a failed on all 6 rating(s) it tried" in result.stderr
    # DeepEval asks for the truths and the claims at once: whichever reply it reads first fails the rating
    groups = re.findall(
        r"failed: a: (\d+) rating\(s\): the judge's reply is not the JSON (\w+) asks for", result.stdout
    )
    assert sum(int(n) for n, _ in groups) == 6 and {what for _, what in groups} <= {"Truths", "Claims"}


def test_removing_a_case_keeps_the_campaign_usable_and_the_cache(tmp_path, server):
    folder = campaign(tmp_path, server.url)
    run_judges(load_campaign(folder))
    cases = [json.loads(line) for line in (folder / "cases.jsonl").read_text().splitlines()]
    kept = [c for c in cases if c["case_id"] != "c005"]
    (folder / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in kept))
    # the user's own ratings file must agree with cases.jsonl; the exported ratings are calibrate's to set aside
    ratings = pd.read_csv(folder / "ratings.csv")
    ratings[ratings["case_id"] != "c005"].to_csv(folder / "ratings.csv", index=False)
    c = load_campaign(folder)
    assert [(s.case_id, s.rater) for s in c.set_aside] == [("c005", "a"), ("c005", "b")]
    validated = run_cli("validate", folder)
    assert (
        validated.returncode == 0
        and "2 rating(s) in judge_ratings.csv are of 1 case(s) no longer in cases.jsonl (c005)" in validated.stdout
    )
    stats = json.loads(run_cli("stats", folder, "--json", "--n-boot", 20).stdout)
    assert any("no longer in cases.jsonl" in w for w in stats["metrics"][0]["warnings"])
    server.counts.clear()
    doc = run_judges(c)
    assert server.counts["requests"] == 0 and doc["exported"] == {"a": 5, "b": 5}
    assert not load_campaign(folder).set_aside
    (folder / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))  # it comes back: no call
    assert run_judges(load_campaign(folder))["judges"][0]["from_cache"] == 6 and server.counts["requests"] == 0


@pytest.mark.parametrize("damage", ["garbage", "truncated"])
def test_a_damaged_store_gives_a_clear_error_and_cache_clear_moves_it_aside(tmp_path, server, damage):
    folder = campaign(tmp_path, server.url, n=40)
    run_judges(load_campaign(folder))
    store = folder / STORE_NAME
    if damage == "garbage":
        store.write_bytes(b"these bytes are no SQLite database\n" * 50)
    else:
        data = store.read_bytes()
        store.write_bytes(data[: len(data) // 3])
    result = run_cli("judge", folder)
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert f"{store}: damaged" in result.stderr.replace("\n", "") and "cache clear" in result.stderr
    with pytest.raises(StoreError):
        run_judges(load_campaign(folder))
    cleared = run_cli("cache", "clear", folder)
    assert cleared.returncode == 0, cleared.stderr
    aside = [
        p
        for p in folder.iterdir()
        if p.name.startswith(STORE_NAME + ".damaged-") and not p.name.endswith(("-wal", "-shm"))
    ]  # its WAL files, if any, moved beside it
    assert len(aside) == 1 and "moved it to" in cleared.stdout and aside[0].stat().st_size > 0
    assert not list(folder.glob(STORE_NAME + "-*"))
    assert run_judges(load_campaign(folder))["judges"][0]["scored"] == 40


def read_only(folder: Path, *command: str) -> subprocess.CompletedProcess:
    """Run a command with ``folder`` mounted read-only (in a mount namespace of its own: even root cannot
    write there)."""
    need(
        shutil.which("unshare") is not None and subprocess.run(["unshare", "-m", "true"]).returncode == 0,
        "unshare -m (a mount namespace)",
    )
    script = f'mount --bind "{folder}" "{folder}" && mount -o remount,ro,bind "{folder}" && exec "$@"'
    return subprocess.run(
        ["unshare", "-m", "sh", "-c", script, "sh", *command], capture_output=True, text=True, timeout=300
    )


def test_report_reads_a_read_only_campaign(tmp_path, server):
    folder = campaign(tmp_path, server.url)
    run_judges(load_campaign(folder))
    before = {p.name: p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    result = read_only(folder, CALIBRATE, "report", str(folder), "--out", str(tmp_path / "report"), "--n-boot", "20")
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "report" / "report.html").stat().st_size > 0
    assert json.loads((tmp_path / "report" / "report.json").read_text())["judge_runs"][0]["scored"] == 6
    assert {p.name: p.read_bytes() for p in folder.rglob("*") if p.is_file()} == before
    judged = read_only(folder, CALIBRATE, "judge", str(folder))
    assert judged.returncode == 2 and "Traceback" not in judged.stderr
    assert "writable" in judged.stderr


def limited(megabytes: float):
    """A child process whose files cannot grow past ``megabytes`` (a full disk, for what it writes)."""

    def limit():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        size = int(megabytes * 1e6)
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))

    return limit


def test_a_full_disk_leaves_the_previous_report_whole(tmp_path, server):
    folder = campaign(tmp_path, server.url)
    run_judges(load_campaign(folder))
    # the ratings stay in judge_ratings.csv; without the store, reading it (SQLite's 32 KB shared-memory
    # file) is not what fills the disk: the report is, and it is smaller than that
    (folder / STORE_NAME).unlink()
    out = tmp_path / "report"
    assert run_cli("report", folder, "--out", out, "--n-boot", 20).returncode == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    result = run_limited(len(before["report.html"]) / 2 / 1e6, "report", folder, "--out", out, "--n-boot", 20)
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert "report.html: cannot be written" in result.stderr and "the previous version is kept whole" in result.stderr
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


def test_a_full_disk_during_a_run_loses_no_stored_rating(tmp_path, server):
    folder = campaign(tmp_path, server.url, n=200, toml=two_judges(server.url).split("[judges.b]")[0])
    load_campaign(folder)
    result = run_limited(0.25, "judge", folder)
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert "judge_ratings.sqlite: the disk is full" in result.stderr.replace("\n", "")
    with sqlite3.connect(folder / STORE_NAME) as db:
        stored = db.execute("SELECT COUNT(*) FROM attempts WHERE value IS NOT NULL").fetchone()[0]
    assert 0 < stored < 200
    doc = run_judges(load_campaign(folder))
    assert doc["judges"][0]["from_cache"] == stored and doc["judges"][0]["scored"] == 200 - stored
