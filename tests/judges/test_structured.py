"""Structured output (issue 27): the metric's own schema as ``json_schema``, the fallback to ``json_object``
and text once per endpoint and run, the mode in each rating's details, the manifest and the cache key, and
the ``structured_output`` setting checked where it enters."""

import json

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from calibrate import CampaignError, load_campaign
from calibrate.judges.calls import CallPolicy
from calibrate.judges.runner import run_judges
from tests.conftest import write_campaign
from tests.judges.test_runner import make_cases
from tests.servers.judge_server import JudgeServer

CALLS_PER_CASE = 4  # DeepEval faithfulness: truths, claims, verdicts, reason


def toml(url: str, setting: str | None = None, provider: str = "openai", ragas: bool = False) -> str:
    extra = f', structured_output = "{setting}"' if setting is not None else ""
    text = f"""
name = "structured"
[metrics.faithfulness]
scale = "binary"
[judges.de-faith]
library = "deepeval"
metric = "faithfulness"
model = {{ provider = "{provider}", name = "llama-3-scripted", base_url = "{url}"{extra} }}
"""
    if ragas:
        text += f"""[judges.rg-faith]
library = "ragas"
metric = "faithfulness"
into = "faithfulness"
model = {{ provider = "openai", name = "qwen-scripted", base_url = "{url}"{extra} }}
"""
    return text


def campaign(tmp_path, url, n=4, **kwargs):
    cases = make_cases(n)
    humans = pd.DataFrame(
        {
            "case_id": [c["case_id"] for c in cases],
            "metric": "faithfulness",
            "rater": "ann",
            "rater_kind": "human",
            "value": 1,
        }
    )
    return write_campaign(tmp_path / "campaign", toml(url, **kwargs), humans, cases)


def retoml(folder, url, **kwargs):
    (folder / "campaign.toml").write_text(toml(url, **kwargs))


def manifest(folder, doc):
    return json.loads((folder / "judge_runs" / f"{doc['run_id']}.json").read_text())


def test_the_metrics_own_schema_is_sent_as_json_schema(tmp_path, server):
    folder = campaign(tmp_path, server.url, ragas=True)
    doc = run_judges(load_campaign(folder), policy=CallPolicy(concurrency=4))
    chat = [s for s in server.seen if s["path"] == "completions"]
    assert chat and {s["response_format"] for s in chat} == {"json_schema"}
    keys = {frozenset(s["schema"]["properties"]) for s in chat}
    # DeepEval faithfulness's Truths, Claims, Verdicts and reason models; RAGAS's statements and NLI outputs
    assert {
        frozenset({"truths"}),
        frozenset({"claims"}),
        frozenset({"verdicts"}),
        frozenset({"reason"}),
        frozenset({"statements"}),
    } <= keys
    assert server.counts["schema_mismatch"] == 0  # every answer fits the schema its request sent
    assert all(r["value"] is not None for r in doc["ratings"])
    assert {r["details"]["structured_output"] for r in doc["ratings"]} == {"json_schema"}
    recorded = manifest(folder, doc)
    assert recorded["structured_output"]["de-faith"] == {
        "setting": "auto",
        "mode": "json_schema",
        "refused": {},
        "sent": {"json_schema": 4 * CALLS_PER_CASE},
    }
    assert {j["key_template"]["structured_output"] for j in recorded["judges"]} == {"json_schema"}


@pytest.mark.parametrize("refuse, mode", [({"json_schema"}, "json_object"), ({"json_schema", "json_object"}, "text")])
def test_a_refusing_endpoint_is_not_asked_again_in_the_refused_mode(tmp_path, refuse, mode):
    n, concurrency = 12, 3
    with JudgeServer(refuse=refuse) as server:
        folder = campaign(tmp_path, server.url, n=n, ragas=True)
        doc = run_judges(load_campaign(folder), policy=CallPolicy(concurrency=concurrency))
        # at most the requests in flight when the first refusal came back, not one per call (12 cases x 6
        # calls); each of the two models on the endpoint finds out for itself
        for m in refuse:
            assert 2 <= server.counts[f"refused_{m}"] <= 2 * concurrency, m
        assert all(r["value"] is not None for r in doc["ratings"]) and len(doc["ratings"]) == 2 * n
        assert {r["details"]["structured_output"] for r in doc["ratings"]} == {mode}
        chat = [s for s in server.seen if s["path"] == "completions" and s["response_format"] not in refuse]
        assert {s["response_format"] for s in chat} == {mode}
        recorded = manifest(folder, doc)["structured_output"]
        assert {j: (r["mode"], sorted(r["refused"])) for j, r in recorded.items()} == {
            "de-faith": (mode, sorted(refuse)),
            "rg-faith": (mode, sorted(refuse)),
        }
        assert "response_format" in recorded["de-faith"]["refused"]["json_schema"]
        server.counts.clear()
        again = run_judges(load_campaign(folder))  # same endpoint, same mode: nothing asked again
        assert sum(j["from_cache"] for j in again["judges"]) == 2 * n and sum(server.counts.values()) == 0
        assert (folder / "judge_ratings.csv").read_text().count("\n") == 1 + 2 * n


def test_a_rating_made_in_another_mode_is_not_served(tmp_path):
    n = 3
    with JudgeServer(refuse={"json_schema"}) as server:
        folder = campaign(tmp_path, server.url, n=n)
        first = run_judges(load_campaign(folder))
        assert {r["details"]["structured_output"] for r in first["ratings"]} == {"json_object"}
        server.refuse = set()  # the server upgraded; the table asks for the schema: scored again
        steps = [
            ("json_schema", 0, "json_schema"),
            ("json_object", n, "json_object"),
            # auto keys by the mode the endpoint took last (json_object, in the run before)
            ("auto", n, "json_object"),
            ("json_schema", n, "json_schema"),
        ]
        for setting, cached, mode in steps:
            retoml(folder, server.url, setting=setting)
            server.counts.clear()
            doc = run_judges(load_campaign(folder))
            assert doc["judges"][0]["from_cache"] == cached, setting
            assert server.counts["requests"] == (n - cached) * CALLS_PER_CASE, setting
            assert {r["details"]["structured_output"] for r in doc["ratings"]} == {mode}, setting
            assert manifest(folder, doc)["structured_output"]["de-faith"]["mode"] == mode


def test_a_mode_the_table_names_is_not_fallen_back_from(tmp_path):
    with JudgeServer(refuse={"json_schema"}) as server:
        folder = campaign(tmp_path, server.url, n=5, setting="json_schema")
        doc = run_judges(load_campaign(folder), policy=CallPolicy(concurrency=4))
        assert 1 <= server.counts["refused_json_schema"] <= 4 and server.counts["requests"] == 0
        assert all(r["value"] is None for r in doc["ratings"])
        assert doc["judges"][0]["errors"] == [
            {"error": "the model server refused structured output json_schema", "count": 5}
        ]
        error = doc["ratings"][0]["error"]
        assert "llama-3-scripted" in error and 'structured_output = "auto"' in error and "response_format" in error


def test_anthropic_gets_the_schema_in_output_config_and_falls_back_to_text(tmp_path):
    with JudgeServer() as server:
        folder = campaign(tmp_path, server.url.rsplit("/v1", 1)[0], n=2, provider="anthropic")
        doc = run_judges(load_campaign(folder))
        assert {s["response_format"] for s in server.seen} == {"json_schema"}
        assert {"claims"} in [set(s["schema"]["properties"]) for s in server.seen]
        assert all(
            r["value"] is not None and r["details"]["structured_output"] == "json_schema" for r in doc["ratings"]
        )
    with JudgeServer(refuse={"json_schema"}) as server:
        folder = campaign(tmp_path / "old", server.url.rsplit("/v1", 1)[0], n=2, provider="anthropic")
        doc = run_judges(load_campaign(folder), policy=CallPolicy(concurrency=2))
        assert 1 <= server.counts["refused_json_schema"] <= 2
        assert all(r["value"] is not None and r["details"]["structured_output"] == "text" for r in doc["ratings"])


@pytest.mark.parametrize(
    "setting, provider, message",
    [
        ("xml", "openai", "judges.de-faith.model.structured_output"),
        ("JSON_SCHEMA", "openai", "judges.de-faith.model.structured_output"),
        ("json_object", "anthropic", "Anthropic's API has no JSON mode"),
    ],
)
def test_a_bad_setting_is_refused_naming_the_judge_and_field(tmp_path, setting, provider, message):
    folder = campaign(tmp_path, "http://127.0.0.1:9/v1", setting=setting, provider=provider)
    with pytest.raises(CampaignError) as raised:
        load_campaign(folder)
    text = str(raised.value)
    assert message in text and "judges.de-faith.model.structured_output" in text and "json_schema" in text


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    value=st.one_of(
        st.sampled_from(["auto", "json_schema", "json_object", "text", "JSON", " auto", "json"]),
        st.text(st.characters(blacklist_categories=("Cs",)), max_size=30),
        st.integers(),
        st.booleans(),
        st.lists(st.text(st.characters(blacklist_categories=("Cs",)), max_size=5), max_size=3),
    )
)
def test_any_setting_is_one_of_the_four_or_a_clear_error(tmp_path_factory, value):
    folder = campaign(tmp_path_factory.mktemp("c"), "http://127.0.0.1:9/v1")
    written = json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")  # TOML allows no raw DEL
    text = (folder / "campaign.toml").read_text().replace(" }\n", f", structured_output = {written} }}\n", 1)
    (folder / "campaign.toml").write_text(text)
    try:
        loaded = load_campaign(folder)
    except CampaignError as exc:
        assert "judges.de-faith.model.structured_output" in str(exc) and "Traceback" not in str(exc)
        assert value not in ("auto", "json_schema", "json_object", "text")
    else:
        assert loaded.judges["de-faith"].model.structured_output == value


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_reply_cut_at_max_tokens_says_so(tmp_path, provider):
    """A reply stopped at max_tokens (finish_reason "length") in the middle of its JSON: the rating's error
    says the reply was cut, names the model, the max_tokens sent and where to raise it, not "Invalid JSON:
    EOF while parsing"; the other ratings are unaffected."""
    with JudgeServer() as server:
        url = server.url if provider == "openai" else server.url.rsplit("/v1", 1)[0]
        folder = campaign(tmp_path, url, n=3, provider=provider, ragas=provider == "openai")
        text = (folder / "campaign.toml").read_text().replace(" }\n", ", max_tokens = 300 }\n")
        (folder / "campaign.toml").write_text(text)
        server.inject("Other fact 1 holds", "cut", times=2)  # case c001's first call of each judge
        doc = run_judges(load_campaign(folder))
    failed = [r for r in doc["ratings"] if r["error"]]
    assert {r["case_id"] for r in failed} == {"c001"} and len(failed) == (2 if provider == "openai" else 1)
    for rating in failed:
        error = rating["error"]
        assert "cut at max_tokens" in error and "max_tokens = 300" in error and "campaign.toml" in error, error
        assert ("finish_reason" if provider == "openai" else "stop_reason") in error
        assert ("llama-3-scripted" if rating["judge"] == "de-faith" else "qwen-scripted") in error
        assert "EOF while parsing" not in error
    assert all(r["value"] is not None for r in doc["ratings"] if r["case_id"] != "c001")
    errors = [e for j in doc["judges"] for e in j["errors"]]
    assert all(e["error"].startswith("the judge's reply was cut at max_tokens (max_tokens = 300") for e in errors)


def test_a_cut_reply_whose_json_is_whole_is_read():
    """A model cut at max_tokens after its JSON was complete (looping in blanks, say) is not an error."""
    from calibrate.campaign.judge_specs import ModelSpec
    from calibrate.judges.calls import ChatReply, OpenAICompatibleClient

    client = OpenAICompatibleClient.__new__(OpenAICompatibleClient)
    client.spec = ModelSpec("openai", "m", max_tokens=50)
    whole = ChatReply.model_validate(
        {"choices": [{"message": {"content": '{"claims": []}   '}, "finish_reason": "length"}]}
    )
    client.check_cut(whole, '{"claims": []}   ', {"max_tokens": 50})  # no error
    cut = ChatReply.model_validate({"choices": [{"message": {"content": '{"claims": ["a'}, "finish_reason": "length"}]})
    with pytest.raises(ValueError, match="cut at max_tokens: model m stopped at max_tokens = 50"):
        client.check_cut(cut, '{"claims": ["a', {"max_tokens": 50})
    client.check_cut(cut.model_copy(update={"choices": []}), '{"claims": ["a', {})  # not cut: parsed elsewhere
