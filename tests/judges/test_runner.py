"""calibrate judge: the real DeepEval FaithfulnessMetric against the scripted judge server on 127.0.0.1."""

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from calibrate import CampaignError, compute_stats, load_campaign
from calibrate.judges.calls import CallPolicy
from calibrate.judges.runner import JudgeSetupError, run_judges
from calibrate.judges.store import STORE_NAME
from tests.conftest import run_cli, write_campaign
from tests.judges.rag_cases import RAG_CASES
from tests.servers.judge_server import COST_PER_CALL, JudgeServer

CALLS_PER_CASE = 4  # DeepEval faithfulness: truths, claims, verdicts, reason


def toml(url: str, extra: str = "", family: str = "") -> str:
    return f"""
name = "judged"
[metrics.faithfulness]
scale = "binary"
[judges.de-faith]
library = "deepeval"
metric = "faithfulness"
model = {{ provider = "openai", name = "llama-3-scripted", base_url = "{url}"{extra} }}
{f'family = "{family}"' if family else ""}
"""


def make_cases(n: int, supported_every: int = 2) -> list[dict]:
    cases = []
    for i in range(n):
        fact = f"Fact {i} is true."
        answer = fact if i % supported_every == 0 else f"{fact} Invented claim {i} is false."
        cases.append(
            {
                "case_id": f"c{i:03d}",
                "input": f"question {i}?",
                "actual_output": answer,
                "retrieval_context": [fact, f"Other fact {i} holds."],
                "metadata": {"generator_family": "gpt" if i < 2 else "llama"},
            }
        )
    return cases


def campaign(tmp_path, url, cases, extra="", family=""):
    humans = pd.DataFrame(
        {
            "case_id": [c["case_id"] for c in cases],
            "metric": "faithfulness",
            "rater": "ann",
            "rater_kind": "human",
            "value": [1 if i % 2 == 0 else 0 for i in range(len(cases))],
        }
    )
    return write_campaign(tmp_path / "campaign", toml(url, extra, family), humans, cases)


def test_scores_with_real_deepeval_and_lands_in_the_campaign(tmp_path, server, monkeypatch):
    monkeypatch.chdir(tmp_path)  # DeepEval must write nothing into the working directory
    folder = campaign(tmp_path, server.url, make_cases(6))
    before = set(os.listdir(tmp_path))
    doc = run_judges(load_campaign(folder), policy=CallPolicy(concurrency=4))
    assert set(os.listdir(tmp_path)) == before
    summary = doc["judges"][0]
    assert summary == {
        **summary,
        "judge": "de-faith",
        "scored": 6,
        "failed": 0,
        "from_cache": 0,
        "calls": 6 * CALLS_PER_CASE,
    }
    assert server.counts["requests"] == 6 * CALLS_PER_CASE and summary["tokens"] > 0
    values = {r["case_id"]: r["value"] for r in doc["ratings"]}
    assert values == {f"c{i:03d}": (1.0 if i % 2 == 0 else 0.5) for i in range(6)}
    assert all(r["reason"].startswith("The score is") for r in doc["ratings"])
    stats = compute_stats(load_campaign(folder), n_boot=100)
    judge = stats["metrics"][0]["judges"][0]
    assert judge["judge"] == "de-faith" and judge["n"] == 6 and judge["family"] == "llama"
    assert judge["auc"]["estimate"] == 1.0


def test_unchanged_rerun_makes_no_call_and_a_changed_case_is_rescored(tmp_path, server):
    cases = make_cases(5)
    folder = campaign(tmp_path, server.url, cases)
    run_judges(load_campaign(folder))
    server.counts.clear()
    again = run_judges(load_campaign(folder))
    assert server.counts["requests"] == 0 and again["judges"][0]["from_cache"] == 5
    cases[1]["actual_output"] = "Fact 1 is true."
    (folder / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    changed = run_judges(load_campaign(folder))
    assert server.counts["requests"] == CALLS_PER_CASE
    assert changed["judges"][0]["scored"] == 1 and changed["judges"][0]["from_cache"] == 4
    assert {r["case_id"]: r["value"] for r in changed["ratings"]}["c001"] == 1.0
    fresh = run_judges(load_campaign(folder), use_cache=False)
    assert fresh["judges"][0]["scored"] == 5
    with sqlite3.connect(folder / STORE_NAME) as db:  # attempts are appended, never replaced
        assert db.execute("SELECT COUNT(*) FROM attempts").fetchone()[0] == 5 + 1 + 5


def test_missing_fields_are_listed_before_any_call(tmp_path, server):
    cases = make_cases(4)
    del cases[2]["retrieval_context"]
    cases[3]["actual_output"] = ""
    folder = campaign(tmp_path, server.url, cases)
    with pytest.raises(JudgeSetupError, match=r"2 case\(s\) lack some: c002: retrieval_context; c003: actual_output"):
        run_judges(load_campaign(folder))
    assert server.counts["requests"] == 0
    doc = run_judges(load_campaign(folder), skip_incomplete=True)
    assert doc["judges"][0]["scored"] == 2 and doc["judges"][0]["skipped"] == 2


def test_self_evaluation_is_flagged_or_refused(tmp_path, server):
    folder = campaign(tmp_path, server.url, make_cases(4), family="gpt")
    with pytest.raises(JudgeSetupError, match="gpt family, as the generator of 2 case"):
        run_judges(load_campaign(folder), forbid_self_eval=True)
    doc = run_judges(load_campaign(folder))
    assert doc["judges"][0]["self_eval"] == 2
    with sqlite3.connect(folder / STORE_NAME) as db:
        assert db.execute("SELECT COUNT(*) FROM attempts WHERE self_eval = 1").fetchone()[0] == 2


@pytest.mark.parametrize("kind", ["429", "500", "drop", "slow"])
def test_transient_faults_are_retried(tmp_path, server, kind):
    folder = campaign(tmp_path, server.url, make_cases(2))
    server.inject("Fact 1 is true.", kind, times=1)
    doc = run_judges(load_campaign(folder), policy=CallPolicy(timeout_s=1.0, retries=2, backoff_s=0.01))
    assert doc["judges"][0]["scored"] == 2 and doc["judges"][0]["failed"] == 0
    assert server.counts[kind] == 1 and server.counts["requests"] == 2 * CALLS_PER_CASE + 1
    assert doc["judges"][0]["calls"] == 2 * CALLS_PER_CASE + 1


def test_failures_are_data(tmp_path, server):
    folder = campaign(tmp_path, server.url, make_cases(3))
    server.inject("Fact 1 is true.", "malformed", times=1)  # not retried: the reply is wrong, not lost
    server.inject("Fact 2 is true.", "500", times=10)  # retried until the retries run out
    doc = run_judges(load_campaign(folder), policy=CallPolicy(retries=2, backoff_s=0.01))
    summary = doc["judges"][0]
    assert (summary["scored"], summary["failed"]) == (1, 2)
    errors = {r["case_id"]: r["error"] for r in doc["ratings"] if r["error"]}
    assert "not the JSON" in errors["c001"] and "HTTP 500" in errors["c002"] and "after 3 attempts" in errors["c002"]
    exported = pd.read_csv(folder / "judge_ratings.csv", keep_default_na=False)
    assert (exported["error"] != "").sum() == 2
    c = load_campaign(folder)
    stats = compute_stats(c, n_boot=50)["metrics"][0]
    assert stats["judges"][0]["n_errors"] == 2
    server.counts.clear()
    retried = run_judges(c)  # failures are not cached: a rerun tries them again
    assert retried["judges"][0]["scored"] == 2 and retried["judges"][0]["from_cache"] == 1


def test_repeats_are_distinct_entries_and_runs(tmp_path, server):
    folder = campaign(tmp_path, server.url, make_cases(3))
    doc = run_judges(load_campaign(folder), repeats=2)
    assert doc["judges"][0]["scored"] == 6 and server.counts["requests"] == 6 * CALLS_PER_CASE
    stats = compute_stats(load_campaign(folder), n_boot=50)["metrics"][0]
    assert sorted(j["judge"] for j in stats["judges"]) == ["de-faith@repeat-0", "de-faith@repeat-1"]
    server.counts.clear()
    assert run_judges(load_campaign(folder), repeats=2)["judges"][0]["from_cache"] == 6
    assert server.counts["requests"] == 0


def test_strict_stops_at_the_first_failure(tmp_path, server):
    folder = campaign(tmp_path, server.url, make_cases(3))
    server.inject("Fact 0 is true.", "malformed", times=5)
    with pytest.raises(JudgeSetupError, match="strict=True"):
        run_judges(load_campaign(folder), strict=True, policy=CallPolicy(concurrency=1))


def test_the_key_is_never_written(tmp_path, server, monkeypatch):
    secret = "sk-test-not-a-real-key-9f8e7d"
    monkeypatch.setenv("SCRIPTED_KEY", secret)
    folder = campaign(tmp_path, server.url, make_cases(2), extra=', api_key_env = "SCRIPTED_KEY"')
    doc = run_judges(load_campaign(folder))
    assert secret not in json.dumps(doc)
    for path in folder.rglob("*"):
        assert path.is_dir() or secret.encode() not in path.read_bytes(), path
    monkeypatch.delenv("SCRIPTED_KEY")
    server.counts.clear()
    with pytest.raises(JudgeSetupError, match=r"judge de-faith: the environment variable SCRIPTED_KEY .* is not set"):
        run_judges(load_campaign(folder), use_cache=False)
    assert server.counts["requests"] == 0


def test_killed_run_resumes_without_loss_or_duplicate(tmp_path):
    n = 24
    with JudgeServer(delay_s=0.05) as server:
        folder = campaign(tmp_path, server.url, make_cases(n))
        calibrate = Path(sys.executable).parent / "calibrate"
        process = subprocess.Popen(
            [str(calibrate), "judge", str(folder), "--concurrency", "2"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        store = folder / STORE_NAME
        deadline = time.time() + 60
        done = 0
        while time.time() < deadline and done < 5:
            time.sleep(0.1)
            if store.exists():
                try:  # the store may exist before its tables do
                    with sqlite3.connect(store) as db:
                        done = db.execute("SELECT COUNT(*) FROM attempts").fetchone()[0]
                except sqlite3.OperationalError:
                    continue
        os.kill(process.pid, signal.SIGKILL)
        process.wait()
        with sqlite3.connect(store) as db:
            first = db.execute("SELECT COUNT(*) FROM attempts WHERE value IS NOT NULL").fetchone()[0]
        assert 5 <= first < n
        server.counts.clear()
        doc = run_judges(load_campaign(folder))
        summary = doc["judges"][0]
        assert summary["from_cache"] == first and summary["scored"] == n - first and summary["failed"] == 0
        assert server.counts["requests"] == (n - first) * CALLS_PER_CASE
        with sqlite3.connect(store) as db:
            successes = db.execute(
                "SELECT COUNT(*), COUNT(DISTINCT cache_key) FROM attempts WHERE value IS NOT NULL"
            ).fetchone()
        assert successes == (n, n)
        assert len(pd.read_csv(folder / "judge_ratings.csv")) == n


def test_cli_judge_json_and_cache_clear(tmp_path, server):
    folder = campaign(tmp_path, server.url, make_cases(3))
    result = run_cli("judge", folder, "--json")
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert set(doc) >= {"run_id", "judges", "ratings"}
    assert set(doc["judges"][0]) >= {"judge", "scored", "failed", "from_cache", "calls", "tokens", "cost"}
    assert {r["case_id"] for r in doc["ratings"]} == {"c000", "c001", "c002"}
    table = run_cli("judge", folder)
    assert "cached" in table.stdout and "de-faith" in table.stdout
    cleared = run_cli("cache", "clear", folder, "--yes")
    assert "deleted 3 stored attempt(s)" in cleared.stdout


def test_every_deepeval_rag_metric_scores_through_the_runner(tmp_path, server):
    metrics = ["faithfulness", "answer_relevancy", "contextual_precision", "contextual_recall", "contextual_relevancy"]
    config = 'name = "rag"\n' + "".join(f'[metrics.{m}]\nscale = "binary"\n' for m in metrics)
    config += "".join(
        f'[judges.de-{m}]\nlibrary = "deepeval"\nmetric = "{m}"\n'
        f'model = {{ provider = "openai", name = "scripted", base_url = "{server.url}" }}\n'
        for m in metrics
    )
    cases = RAG_CASES[:2]
    humans = pd.DataFrame(
        [(c["case_id"], m, "ann", "human", 1) for c in cases for m in metrics],
        columns=["case_id", "metric", "rater", "rater_kind", "value"],
    )
    folder = write_campaign(tmp_path / "rag", config, humans, cases)
    doc = run_judges(load_campaign(folder))
    scores = {(r["judge"], r["case_id"]): r["value"] for r in doc["ratings"]}
    assert scores == {
        ("de-faithfulness", "paris"): 0.5,
        ("de-faithfulness", "rome"): 1.0,
        ("de-answer_relevancy", "paris"): 0.5,
        ("de-answer_relevancy", "rome"): 1.0,
        ("de-contextual_precision", "paris"): 1.0,
        ("de-contextual_precision", "rome"): 0.5,
        ("de-contextual_recall", "paris"): 1.0,
        ("de-contextual_recall", "rome"): 0.5,
        ("de-contextual_relevancy", "paris"): 0.5,
        ("de-contextual_relevancy", "rome"): 0.5,
    }
    assert all(j["failed"] == 0 for j in doc["judges"])


def test_report_shows_what_each_judge_cost(tmp_path, server):
    folder = campaign(tmp_path, server.url, make_cases(4))
    server.inject("Fact 1 is true.", "malformed", times=1)
    run_judges(load_campaign(folder))
    result = run_cli("report", folder, "--out", tmp_path / "report", "--n-boot", "50")
    assert result.returncode == 0, result.stderr
    runs = json.loads((tmp_path / "report" / "report.json").read_text())["judge_runs"]
    assert runs == [
        {
            **runs[0],
            "judge": "de-faith",
            "attempts": 4,
            "scored": 3,
            "failed": 1,
            "runs": 1,
            "calls": server.counts["requests"],
        }
    ]
    html = (tmp_path / "report" / "report.html").read_text()
    assert "Judge runs" in html and "<td>de-faith</td>" in html
    assert "## Judge runs" in (tmp_path / "report" / "report.md").read_text()


def test_anthropic_provider(tmp_path, server, monkeypatch):
    monkeypatch.setenv("SCRIPTED_ANTHROPIC_KEY", "sk-ant-test-123")
    root = server.url.rsplit("/v1", 1)[0]
    folder = campaign(tmp_path, root, make_cases(4))
    (folder / "campaign.toml").write_text(
        (folder / "campaign.toml")
        .read_text()
        .replace(
            'provider = "openai", name = "llama-3-scripted"',
            'provider = "anthropic", name = "claude-scripted", api_key_env = "SCRIPTED_ANTHROPIC_KEY"',
        )
    )
    server.inject("Fact 2 is true.", "429", times=1)
    c = load_campaign(folder)
    assert c.judges["de-faith"].family == "claude"
    doc = run_judges(c, policy=CallPolicy(backoff_s=0.01))
    assert {r["case_id"]: r["value"] for r in doc["ratings"]} == {"c000": 1.0, "c001": 0.5, "c002": 1.0, "c003": 0.5}
    assert doc["judges"][0]["calls"] == 4 * CALLS_PER_CASE + 1 and doc["judges"][0]["tokens"] > 0
    assert server.keys_seen == {"sk-ant-test-123"}


def test_cost_from_the_declared_price_or_the_reported_cost(tmp_path, server):
    folder = campaign(
        tmp_path, server.url, make_cases(3), extra=", price = { input_per_mtok = 2.0, output_per_mtok = 8.0 }"
    )
    doc = run_judges(load_campaign(folder))
    with sqlite3.connect(folder / STORE_NAME) as db:
        tokens = db.execute("SELECT SUM(prompt_tokens), SUM(completion_tokens) FROM attempts").fetchone()
    assert doc["judges"][0]["cost"] == pytest.approx((tokens[0] * 2.0 + tokens[1] * 8.0) / 1e6)
    toml = (folder / "campaign.toml").read_text()  # the price is not part of the cache key
    (folder / "campaign.toml").write_text(toml.replace("input_per_mtok = 2.0", "input_per_mtok = 3.0"))
    assert run_judges(load_campaign(folder))["judges"][0]["from_cache"] == 3
    (folder / "campaign.toml").write_text(toml.replace('name = "llama-3-scripted"', 'name = "llama-3-costed"'))
    reported = run_judges(load_campaign(folder))["judges"][0]
    assert reported["cost"] == pytest.approx(3 * CALLS_PER_CASE * COST_PER_CALL)  # reported cost wins
    (folder / "campaign.toml").write_text(toml.replace("output_per_mtok = 8.0", "output_per_mtok = -1"))
    with pytest.raises(CampaignError, match="the price is per million tokens"):
        load_campaign(folder)


def test_a_refused_connection_is_retried_then_recorded(tmp_path):
    import socket

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    folder = campaign(tmp_path, f"http://127.0.0.1:{port}/v1", make_cases(2))
    doc = run_judges(load_campaign(folder), policy=CallPolicy(retries=2, backoff_s=0.01))
    assert doc["judges"][0]["failed"] == 2 and doc["judges"][0]["calls"] >= 2 * 3
    assert all("connection failed" in r["error"] and "after 3 attempts" in r["error"] for r in doc["ratings"])


def test_the_score_is_deepevals_own(tmp_path, server):
    """DeepEval's own OpenAI-compatible model (LocalModel, its own HTTP client and JSON schema) gives the
    numbers calibrate's model class gives."""
    import asyncio

    from deepeval.metrics import FaithfulnessMetric
    from deepeval.models import LocalModel
    from deepeval.test_case import LLMTestCase

    cases = make_cases(4)
    ours = {
        r["case_id"]: r["value"] for r in run_judges(load_campaign(campaign(tmp_path, server.url, cases)))["ratings"]
    }

    async def theirs():
        model = LocalModel(model="llama-3-scripted", base_url=server.url, api_key="unused", temperature=0)
        found = {}
        for case in cases:
            metric = FaithfulnessMetric(model=model, async_mode=True)
            await metric.a_measure(
                LLMTestCase(
                    input=case["input"],
                    actual_output=case["actual_output"],
                    retrieval_context=case["retrieval_context"],
                ),
                _show_indicator=False,
            )
            found[case["case_id"]] = metric.score
        return found

    assert ours == asyncio.run(theirs())


def test_each_run_writes_its_manifest_beside_the_ratings(tmp_path, server):
    folder = campaign(tmp_path, server.url, make_cases(3))
    before = load_campaign(folder)
    doc = run_judges(before)
    manifest = json.loads((folder / "judge_runs" / f"{doc['run_id']}.json").read_text())
    assert set(manifest["library_versions"]) >= {"calibrate-judges", "deepeval", "aiohttp"}
    assert manifest["judges"][0]["model"] == {
        "provider": "openai",
        "name": "llama-3-scripted",
        "base_url": server.url,
        "temperature": 0.0,
    }
    assert manifest["data_hash"] == before.data_hash and manifest["started"] < manifest["finished"]
    assert manifest["counts"] == {"calls": 3 * CALLS_PER_CASE, "failures": 0, "cache_hits": 0}
    again = run_judges(load_campaign(folder))
    second = json.loads((folder / "judge_runs" / f"{again['run_id']}.json").read_text())
    assert second["counts"] == {"calls": 0, "failures": 0, "cache_hits": 3}


def test_no_dotenv_file_is_read(tmp_path, server, monkeypatch):
    """Neither DeepEval nor RAGAS may pick settings (a key, a provider) out of a .env file."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".env").write_text("OPENAI_API_KEY=sk-from-dotenv\nSCRIPTED_KEY=sk-from-dotenv\n")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    folder = campaign(tmp_path, server.url, make_cases(2))
    run_judges(load_campaign(folder))
    assert "OPENAI_API_KEY" not in os.environ and "SCRIPTED_KEY" not in os.environ
    assert not any("dotenv" in key for key in server.keys_seen)
