"""Cases that share their content with another case (the same question asked more than once, as production
logs have) are rated, listed and exported each under its own id: every (case, metric, judge, repeat) of a
judge run is in the ``--json`` document's ``"ratings"`` and in ``.to_frame()`` exactly once, scored now or
served from the cache, and those rows are ``judge_ratings.csv``'s, row for row — after a fresh run, a
cached one, and a run killed with SIGKILL and resumed. The other documents that list per-case rows
(fingerprint, probe, collect, import dry-runs) keep every case sharing content too.

The real DeepEval and RAGAS code runs against the scripted judge server (tests/servers/judge_server.py); judge
``b``'s model is its ``flaky`` persona (every verdict flipped at random, afresh on each request), so a
document that took one case's rating from another call than the file did cannot pass by luck."""

from __future__ import annotations

import csv
import json
import math
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import calibrate
from calibrate import load_campaign
from calibrate.cases.collect import collect
from calibrate.cli import main
from calibrate.imports.deepeval_runs import import_deepeval_run
from calibrate.judges.calls import CallPolicy
from calibrate.judges.probes import run_probe
from calibrate.judges.runner import run_judges
from calibrate.judges.store import STORE_NAME
from calibrate.review.fingerprint import fingerprint_judge
from tests.conftest import run_cli, write_campaign
from tests.servers.judge_server import JudgeServer

CALIBRATE = str(Path(sys.executable).parent / "calibrate")
N, CONTENTS, REPEATS = 40, 3, 2
#: calls per rating: DeepEval faithfulness (truths, claims, verdicts, reason); RAGAS (statements, verdicts)
CALLS = {"a": 4, "b": 2}


def content(k: int) -> dict:
    fact = f"Fact {k} is true."
    return {
        "input": f"question {k}?",
        "actual_output": fact if k % 2 == 0 else f"{fact} Invented claim {k} is false.",
        "retrieval_context": [fact, f"Other fact {k} holds."],
    }


def make_cases(n: int = N, contents: int = CONTENTS) -> list[dict]:
    """``n`` cases under their own ids whose texts repeat ``contents`` contents."""
    return [{"case_id": f"c{i:03d}", **content(i % contents)} for i in range(n)]


def toml(url: str) -> str:
    return f"""
name = "repeated"
[metrics.faithfulness]
scale = "binary"
[judges.a]
library = "deepeval"
metric = "faithfulness"
model = {{ provider = "openai", name = "llama-careful", base_url = "{url}" }}
[judges.b]
library = "ragas"
metric = "faithfulness"
model = {{ provider = "openai", name = "gpt-flaky", base_url = "{url}" }}
"""


def campaign(tmp_path: Path, url: str, cases: list[dict] | None = None) -> Path:
    cases = cases or make_cases()
    humans = pd.DataFrame(
        {
            "case_id": [c["case_id"] for c in cases],
            "metric": "faithfulness",
            "rater": "ann",
            "rater_kind": "human",
            "value": [int(c["actual_output"].count(".") == 1) for c in cases],
        }
    )
    return write_campaign(tmp_path / "campaign", toml(url), humans, cases)


def rows(ratings: list[dict], repeated: bool = True) -> list[tuple]:
    """The document's ratings as judge_ratings.csv writes them (a judge scored with repeats gets one run per
    repeat)."""
    out = []
    for r in ratings:
        value = r["value"]
        missing = value is None or (isinstance(value, float) and math.isnan(value))
        out.append(
            (
                r["case_id"],
                r["metric"],
                r["judge"],
                f"repeat-{int(r['repeat'])}" if repeated else "",
                "" if missing else repr(float(value)),
                r["error"] or "",
                (r["reason"] or "").replace("\r", " "),
            )
        )
    return sorted(out)


def file_rows(folder: Path) -> list[tuple]:
    with (folder / "judge_ratings.csv").open(newline="", encoding="utf-8") as handle:
        return sorted(
            (r["case_id"], r["metric"], r["rater"], r["run_id"], r["value"], r["error"], r["reason"])
            for r in csv.DictReader(handle)
        )


def frame_rows(result, repeated: bool = True) -> list[tuple]:
    frame = result.to_frame()
    return rows(
        [
            {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in record.items()}
            for record in frame.to_dict("records")
        ],
        repeated,
    )


def every_rating(cases: list[dict], judges=("a", "b"), repeats: int = REPEATS) -> list[tuple]:
    return sorted((c["case_id"], "faithfulness", j, k) for c in cases for j in judges for k in range(repeats))


def check(ratings: list[dict], folder: Path, cases: list[dict]) -> None:
    """Every rating of the run once, and the document's rows the file's, row for row."""
    assert sorted((r["case_id"], r["metric"], r["judge"], r["repeat"]) for r in ratings) == every_rating(cases)
    assert rows(ratings) == file_rows(folder)


def judge_json(folder: Path, *args) -> dict:
    """``calibrate judge FOLDER --json``, run in this process (the same command and document as a
    subprocess, without importing DeepEval and RAGAS again: ~4 s of CPU a run); the killed run below is
    a process of its own."""
    done = CliRunner().invoke(main, ["judge", str(folder), "--repeats", str(REPEATS), "--json", *map(str, args)])
    assert done.exit_code == 0, done.output + repr(done.exception)
    return json.loads(done.stdout)


def summary(doc: dict) -> dict[str, tuple[int, int, int, int]]:
    return {j["judge"]: (j["scored"], j["failed"], j["from_cache"], j["unscored"]) for j in doc["judges"]}


def test_cases_sharing_content_are_each_listed_fresh_cached_and_after_a_kill(tmp_path):
    cases = make_cases()
    with JudgeServer() as server:
        folder = campaign(tmp_path, server.url, cases)
        # scored fresh: one call per content (the others are the same rating), every case listed
        fresh = judge_json(folder)
        check(fresh["ratings"], folder, cases)
        assert summary(fresh) == {"a": (N * REPEATS, 0, 0, 0), "b": (N * REPEATS, 0, 0, 0)}
        assert server.counts["requests"] == CONTENTS * REPEATS * sum(CALLS.values())
        assert {j["judge"]: j["calls"] for j in fresh["judges"]} == {
            j: CONTENTS * REPEATS * c for j, c in CALLS.items()
        }
        values: dict[tuple, set] = {}
        for r in fresh["ratings"]:  # a case and the cases sharing its content: one rating
            values.setdefault((r["judge"], r["repeat"], int(r["case_id"][1:]) % CONTENTS), set()).add(r["value"])
        assert all(len(v) == 1 for v in values.values())

        # served from the cache: the command line's document and the Python API's table
        server.counts.clear()
        cached = judge_json(folder)
        check(cached["ratings"], folder, cases)
        assert summary(cached) == {"a": (0, 0, N * REPEATS, 0), "b": (0, 0, N * REPEATS, 0)}
        assert all(r["from_cache"] for r in cached["ratings"]) and server.counts["requests"] == 0
        assert rows(cached["ratings"]) == rows(fresh["ratings"])
        result = run_judges(load_campaign(folder), repeats=REPEATS)
        assert frame_rows(result) == file_rows(folder) and rows(result["ratings"]) == file_rows(folder)
        assert len(result.to_frame()) == len(every_rating(cases))

        # killed half way (SIGKILL), then resumed
        assert run_cli("cache", "clear", folder, "--yes").returncode == 0
        server.delay_s = 0.1
        killed = subprocess.Popen(
            [CALIBRATE, "judge", str(folder), "--repeats", str(REPEATS), "--concurrency", "1"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline, stored = time.time() + 120, 0
        while time.time() < deadline and stored < 1:
            time.sleep(0.01)
            if (folder / STORE_NAME).exists():
                try:
                    with sqlite3.connect(f"file:{folder / STORE_NAME}?mode=ro", uri=True, timeout=5) as db:
                        stored = db.execute("SELECT COUNT(*) FROM attempts").fetchone()[0]
                except sqlite3.OperationalError:
                    pass  # the store is being created
        os.kill(killed.pid, signal.SIGKILL)
        killed.wait()
        assert stored >= 1
        server.delay_s = 0.0
        resumed = judge_json(folder)
        check(resumed["ratings"], folder, cases)
        counts = summary(resumed)
        assert all(
            scored + cache == N * REPEATS and failed == unscored == 0
            for scored, failed, cache, unscored in counts.values()
        )
        assert 0 < sum(c[2] for c in counts.values()) < 2 * N * REPEATS  # some kept from the killed run, some not
        judge_a = [r for r in resumed["ratings"] if r["judge"] == "a"]  # the careful judge gives what it gave
        assert rows(judge_a) == rows([r for r in fresh["ratings"] if r["judge"] == "a"])
        again = run_judges(load_campaign(folder), repeats=REPEATS)
        assert frame_rows(again) == file_rows(folder)
        assert summary(again) == {"a": (0, 0, N * REPEATS, 0), "b": (0, 0, N * REPEATS, 0)}


#: text of any kind in a case's fields (brackets, markup, NUL, right-to-left marks, newlines, pipes, quotes)
TEXT = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=24) | st.sampled_from(
    [
        "[red]x[/]",
        "<script>alert(1)</script>",
        "a|b",
        "x\ny",
        "c0\x00",
        "\u202eevil",
        "'\"",
        "Fact 1 is true.",
        "Fact 2 is true. Invented claim 2 is false.",
    ]
)
#: case ids: printable text with the characters a CSV or a table may choke on
IDS = st.text(st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=12).filter(str.strip)


@settings(
    max_examples=int(os.environ.get("ATTACK_EXAMPLES", 25)),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    ids=st.lists(IDS, min_size=1, max_size=10, unique=True),
    texts=st.lists(TEXT, min_size=1, max_size=4),
    data=st.data(),
    repeats=st.integers(1, 2),
    fail=st.booleans(),
)
def test_any_pattern_of_shared_contents_lists_each_case_once(tmp_path_factory, server, ids, texts, data, repeats, fail):
    """Any ids, any contents, any pattern of sharing: every run's rows are the file's, each rating once."""
    which = data.draw(st.lists(st.integers(0, len(texts) - 1), min_size=len(ids), max_size=len(ids)))
    cases = [
        {"case_id": i, "input": f"{texts[k]}?", "actual_output": texts[k], "retrieval_context": [texts[k], "x."]}
        for i, k in zip(ids, which)
    ]
    folder = campaign(tmp_path_factory.mktemp("attack"), server.url, cases)
    (folder / "campaign.toml").write_text(toml(server.url).split("[judges.b]")[0])
    server.faults.clear()
    if fail:  # the replies on one content are unreadable: failed ratings, listed as the file has them
        server.inject(texts[which[0]][:8], "malformed", times=1000)
    expected = sorted((c["case_id"], "faithfulness", "a", k) for c in cases for k in range(repeats))
    for use_cache in (True, True, False):
        doc = run_judges(load_campaign(folder), repeats=repeats, use_cache=use_cache)
        assert sorted((r["case_id"], r["metric"], r["judge"], r["repeat"]) for r in doc["ratings"]) == expected
        assert rows(doc["ratings"], repeats > 1) == file_rows(folder) == frame_rows(doc, repeats > 1)
        assert sum(j["scored"] + j["failed"] + j["from_cache"] for j in doc["judges"]) == len(expected)


def test_a_rating_that_failed_since_its_cached_score_is_scored_again(tmp_path, server):
    """The cache serves a rating whose latest attempt succeeded: the one the file exports."""
    cases = make_cases(8, 2)
    folder = campaign(tmp_path, server.url, cases)
    run_judges(load_campaign(folder), repeats=REPEATS)
    server.inject("Fact 1 is true.", "malformed", times=1000)  # every rating of content 1 fails now
    failed = run_judges(load_campaign(folder), repeats=REPEATS, use_cache=False)
    check(failed["ratings"], folder, cases)
    assert sum(r["error"] is not None for r in failed["ratings"]) == 4 * 2 * REPEATS
    server.faults.clear()
    server.counts.clear()
    healed = run_judges(load_campaign(folder), repeats=REPEATS)
    check(healed["ratings"], folder, cases)
    assert not any(r["error"] for r in healed["ratings"])
    assert {j["judge"]: j["scored"] for j in healed["judges"]} == {"a": 4 * REPEATS, "b": 4 * REPEATS}
    assert server.counts["requests"] == REPEATS * sum(CALLS.values())  # content 1 again, once per repeat


def test_an_endpoint_given_up_on_leaves_every_case_of_a_content_unscored(tmp_path):
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{probe.getsockname()[1]}/v1"
    cases = make_cases(20, 10)
    folder = campaign(tmp_path, url, cases)
    (folder / "campaign.toml").write_text(toml(url).split("[judges.b]")[0])
    doc = run_judges(load_campaign(folder), policy=CallPolicy(retries=0), stop_after=3)
    judge = doc["judges"][0]
    assert judge["failed"] >= 3 * 2 and judge["failed"] + judge["unscored"] == 20
    assert judge["failed"] % 2 == judge["unscored"] % 2 == 0  # a content's two cases share its fate
    assert doc["stopped"][0]["unscored"] == {"a": judge["unscored"]}
    assert judge["calls"] <= judge["failed"]  # at most its two first calls per content, not per case
    assert rows(doc["ratings"], repeated=False) == file_rows(folder) == frame_rows(doc, repeated=False)


def test_a_probe_pairs_every_case_sharing_content(tmp_path, server):
    folder = campaign(tmp_path, server.url)
    doc = run_probe(load_campaign(folder), probe="order", judges=["a"], n=12, seed=3)
    assert doc["n_cases"] == 12 and doc["judges"][0]["n_pairs"] == 12
    # the originals repeat 3 contents and so do their copies: 6 ratings' worth of calls
    assert server.counts["requests"] == 2 * CONTENTS * CALLS["a"]
    exported = pd.read_csv(folder / "probes" / "order" / "judge_ratings.csv", dtype=str)
    assert len(exported) == 24 and exported["case_id"].is_unique


def test_a_fingerprint_rescores_every_anchor_sharing_content(tmp_path, server):
    folder = campaign(tmp_path, server.url)
    run_judges(load_campaign(folder), judges=["a"])
    doc = fingerprint_judge(load_campaign(folder), judge="a", anchors=8, repeats=3, threshold=0.75)
    assert len(doc["anchors"]) == 8 and len({a["case_id"] for a in doc["anchors"]}) == 8
    assert all(len(a["now"]) == 3 and None not in a["now"] for a in doc["anchors"]), doc["anchors"]
    assert all(a["now"] == [a["stored"]] * 3 for a in doc["anchors"])  # the careful judge gives what it gave
    assert doc["verdict"] == "SAME", doc["reasons"]


def test_collect_lists_every_golden_sharing_a_question(tmp_path):
    folder = tmp_path / "campaign"
    calibrate.init_campaign(folder, ["faithfulness"])
    questions = ["What is the tallest tower?", "How many hearts has an octopus?", "Who built the bridge?"]
    goldens = [{"case_id": f"g{i:02d}", "input": questions[i % 3]} for i in range(N)]

    def service(question: str):
        if question == questions[2]:
            raise RuntimeError("the service cannot answer that")
        return f"An answer to {question}", [f"A passage about {question}"]

    doc = collect(folder, goldens, function=service, policy=CallPolicy(retries=0))
    failing = [g["case_id"] for g in goldens if g["input"] == questions[2]]
    assert (doc["asked"], doc["collected"], doc["failed"], doc["cases"]) == (
        N,
        N - len(failing),
        len(failing),
        N - len(failing),
    )
    assert sorted(e["case_id"] for e in doc["errors"]) == failing
    assert sorted(doc.to_frame()["case_id"]) == failing
    written = [json.loads(line)["case_id"] for line in (folder / "cases.jsonl").read_text().splitlines()]
    assert sorted(written) == sorted(set(g["case_id"] for g in goldens) - set(failing))


def test_an_import_dry_run_counts_every_case_sharing_content(tmp_path):
    folder = tmp_path / "campaign"
    calibrate.init_campaign(folder, ["faithfulness"])
    run = {
        "testCases": [
            {
                "name": f"question-{i:02d}",
                "input": f"question {i % CONTENTS}?",
                "actualOutput": f"Fact {i % CONTENTS} is true.",
                "metricsData": [
                    {"name": "Faithfulness", "score": float(i % CONTENTS == 0), "evaluationModel": "gpt-4o"}
                ],
            }
            for i in range(N)
        ]
    }
    path = tmp_path / "test_run.json"
    path.write_text(json.dumps(run))
    planned = import_deepeval_run(folder, path, dry_run=True)
    assert planned["cases"]["added"] == N and planned["ratings"]["new"] == N and not planned["skipped"]
    assert planned["raters"]["gpt-4o"]["ratings"] == N and not (folder / "imported_ratings.csv").exists()
    done = import_deepeval_run(folder, path)
    assert {k: done[k] for k in ("cases", "ratings")} == {k: planned[k] for k in ("cases", "ratings")}
    ratings = load_campaign(folder).ratings
    assert sorted(ratings[ratings["rater"] == "gpt-4o"]["case_id"]) == [f"question-{i:02d}" for i in range(N)]
    again = import_deepeval_run(folder, path, dry_run=True)
    assert again["ratings"]["unchanged"] == N and again["cases"]["unchanged"] == N
