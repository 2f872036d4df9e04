"""A judge's API key never leaves its endpoint and is never written: a server echoing the key in its error
body does not put it into judge_ratings.sqlite, judge_ratings.csv or the run's output (the issue's example),
a redirect to another server is refused without sending it, and a malformed reply is a failed rating
saying what is wrong, never a traceback."""

from __future__ import annotations

import asyncio
import json
import sqlite3

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from calibrate import load_campaign
from calibrate.campaign.judge_specs import ModelSpec
from calibrate.judges.calls import CallPolicy, ClientPool, JudgeCallError
from calibrate.judges.runner import run_judges
from calibrate.judges.store import STORE_NAME
from tests.base.adversary import Adversary
from tests.conftest import write_campaign
from tests.imports.test_mlflow_traces import mutate_json
from tests.servers.judge_server import JudgeServer

KEY = "zq81PLmv42Wt-judge-key"  # no known key format, in a variable whose name says nothing of a key
VARIABLE = "CALIBRATE_TEST_JUDGE_CRED"


def judged_campaign(tmp_path, url: str, provider: str = "openai", n: int = 3):
    toml = f"""
name = "judged"
[metrics.faithfulness]
scale = "binary"
[judges.de-faith]
library = "deepeval"
metric = "faithfulness"
model = {{ provider = "{provider}", name = "llama-3-scripted", base_url = "{url}", api_key_env = "{VARIABLE}" }}
"""
    cases = [
        {
            "case_id": f"c{i}",
            "input": f"question {i}?",
            "actual_output": f"Fact {i} is true.",
            "retrieval_context": [f"Fact {i} is true."],
        }
        for i in range(n)
    ]
    humans = pd.DataFrame(
        {
            "case_id": [c["case_id"] for c in cases],
            "metric": "faithfulness",
            "rater": "ann",
            "rater_kind": "human",
            "value": 1,
        }
    )
    return write_campaign(tmp_path / "campaign", toml, humans, cases)


def everything_written(folder) -> bytes:
    with sqlite3.connect(folder / STORE_NAME) as db:
        rows = db.execute("SELECT * FROM attempts").fetchall() + db.execute("SELECT * FROM runs").fetchall()
    return repr(rows).encode() + b"".join(p.read_bytes() for p in folder.rglob("*") if p.is_file())


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_key_echoed_in_an_error_body_is_never_stored_or_shown(tmp_path, monkeypatch, provider):
    monkeypatch.setenv(VARIABLE, KEY)
    with JudgeServer() as server:
        url = server.url if provider == "openai" else server.url.removesuffix("/v1")
        folder = judged_campaign(tmp_path, url, provider)
        server.inject("Fact 1 is true.", "echo-key", times=1)
        doc = run_judges(load_campaign(folder), policy=CallPolicy(retries=1, backoff_s=0.01))
    assert KEY in server.keys_seen or f"Bearer {KEY}" in server.keys_seen  # the key was sent, to its server
    failed = [r for r in doc["ratings"] if r["error"]]
    assert len(failed) == 1 and "HTTP 401" in failed[0]["error"] and "[redacted]" in failed[0]["error"]
    assert KEY not in json.dumps(doc.to_dict() if hasattr(doc, "to_dict") else dict(doc), default=str)
    exported = pd.read_csv(folder / "judge_ratings.csv", keep_default_na=False)
    assert "[redacted]" in exported.loc[exported["case_id"] == "c1", "error"].iloc[0]
    assert KEY.encode() not in everything_written(folder)


def test_a_judge_endpoint_redirecting_elsewhere_gets_no_key_and_the_rating_says_why(tmp_path, monkeypatch):
    monkeypatch.setenv(VARIABLE, KEY)
    with Adversary() as endpoint, Adversary() as elsewhere:
        elsewhere.json("*", {"choices": [{"message": {"content": "{}"}}]})
        endpoint.route("*", lambda h: h.redirect(307, elsewhere.url + h.path))
        folder = judged_campaign(tmp_path, endpoint.url + "/v1", n=2)
        doc = run_judges(load_campaign(folder), policy=CallPolicy(retries=2, backoff_s=0.01))
        bodies = [r["body"] for r in endpoint.seen]
        assert elsewhere.seen == [] and len(bodies) == len(set(bodies))  # refused at once, never retried
    assert all("another server" in r["error"] and elsewhere.url in r["error"] for r in doc["ratings"])
    assert KEY.encode() not in everything_written(folder)


CHAT = {
    "id": "x",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": '{"verdicts": []}'}}],
    "usage": {"prompt_tokens": 3, "completion_tokens": 2, "cost": 0.001},
}
EMBEDDINGS = {
    "data": [{"index": 0, "embedding": [0.1, 0.2]}, {"index": 1, "embedding": [0.3, 0.4]}],
    "usage": {"prompt_tokens": 4},
}


@pytest.fixture(scope="module")
def model_server():
    with Adversary() as server:
        yield server


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), kind=st.sampled_from(["chat", "logprobs", "embeddings", "anthropic"]))
def test_any_model_reply_is_text_or_a_failed_call_saying_why(model_server, data, kind):
    template = (
        EMBEDDINGS
        if kind == "embeddings"
        else (
            {"content": [{"type": "text", "text": "{}"}], "usage": {"input_tokens": 1}} if kind == "anthropic" else CHAT
        )
    )
    model_server.json("*", mutate_json(data, template))
    spec = ModelSpec("anthropic" if kind == "anthropic" else "openai", "m", base_url=model_server.url + "/v1")

    async def ask():
        pool = ClientPool()
        client = pool(spec)
        try:
            policy = CallPolicy(retries=0, timeout_s=5)
            if kind == "embeddings":
                return await client.embed(["a", "b"], policy)
            if kind == "logprobs":
                return await client.complete_with_logprobs("p", policy, top_logprobs=2)
            return await client.complete("p", policy, json_mode=True)
        finally:
            await pool.close()

    try:
        result = asyncio.run(ask())
    except JudgeCallError as exc:
        assert str(exc) and "Traceback" not in str(exc)
        return
    if kind == "embeddings":
        assert len(result) == 2 and all(isinstance(x, float) for v in result for x in v)
    elif kind == "logprobs":
        assert isinstance(result, dict)
    else:
        assert isinstance(result, str)
