"""calibrate judge with DeepEval's G-Eval: logprob weighting recorded, steps made once per run, settings checked."""

import json
import sqlite3

import pandas as pd
import pytest

from calibrate import CampaignError, load_campaign
from calibrate.judges.runner import JudgeSetupError, run_judges
from calibrate.judges.store import STORE_NAME
from tests.conftest import write_campaign
from tests.servers.judge_server import SCORE_PROBABILITIES, TEN_AFTER_ONE, JudgeServer

CASES = [
    {
        "case_id": "same",
        "input": "Where is Paris?",
        "actual_output": "Paris is located in France.",
        "expected_output": "Paris is located in France.",
    },
    {
        "case_id": "half",
        "input": "Where is Paris?",
        "actual_output": "Paris is located in Spain today.",
        "expected_output": "Paris is located in France.",
    },
    {
        "case_id": "none",
        "input": "Where is Paris?",
        "actual_output": "Bananas grow everywhere.",
        "expected_output": "Paris is located in France.",
    },
]
STEPS = 'evaluation_steps = ["Compare the actual output with the expected output.", "Penalise what differs."]'


def folder_for(tmp_path, url, settings: str = STEPS, provider: str = "openai"):
    config = f"""
name = "geval"
[metrics.correctness]
scale = "continuous"
human_pass = 0.5
[judges.geval-gpt]
library = "deepeval"
metric = "g_eval"
into = "correctness"
model = {{ provider = "{provider}", name = "gpt-scripted", base_url = "{url}" }}
settings = {{ evaluation_params = ["actual_output", "expected_output"], {settings} }}
"""
    humans = pd.DataFrame(
        {
            "case_id": [c["case_id"] for c in CASES],
            "metric": "correctness",
            "rater": "ann",
            "rater_kind": "human",
            "value": [1.0, 0.5, 0.0],
        }
    )
    return write_campaign(tmp_path / "campaign", config, humans, CASES)


def manifest(folder, doc):
    return json.loads((folder / "judge_runs" / f"{doc['run_id']}.json").read_text())


def by_case(doc):
    return {r["case_id"]: r for r in doc["ratings"]}


def test_scores_are_weighted_by_the_score_tokens_probabilities(tmp_path, server):
    doc = run_judges(load_campaign(folder_for(tmp_path, server.url)))
    ratings = by_case(doc)
    # the server says s with probability 0.6, s-1 with 0.25, s+1 with 0.15 (within 0-10), and DeepEval
    # takes the expectation: s = 10 -> (6 + 2.25) / 0.85; s = 5 -> 4.9; s = 0 -> 0.15 / 0.75
    assert ratings["same"]["value"] == pytest.approx((10 * 0.6 + 9 * 0.25) / 0.85 / 10)
    assert ratings["half"]["value"] == pytest.approx(0.49)
    assert ratings["none"]["value"] == pytest.approx(0.02)
    # the score call asks for no response format: the rating says so (its one call was sent as text)
    said = {"logprob_weighted": True, "logprob_weighting": "score token", "structured_output": "text"}
    assert all(r["details"] == said for r in ratings.values())
    assert {s["response_format"] for s in server.seen} == {"text"}
    assert doc["judges"][0]["logprob_weighted"] == 3 and server.counts["logprobs"] == 3
    # the manifest says what keys the ratings (the mode the endpoint would take for a schema), and that no
    # call of this run carried one
    recorded = manifest(tmp_path / "campaign", doc)["structured_output"]["geval-gpt"]
    assert recorded == {"setting": "auto", "mode": "json_schema", "refused": {}, "sent": {"text": 3}}
    with sqlite3.connect(tmp_path / "campaign" / STORE_NAME) as db:
        stored = [json.loads(d) for (d,) in db.execute("SELECT details FROM attempts")]
    assert stored == [said] * 3
    again = run_judges(load_campaign(folder_for(tmp_path, server.url)))  # the key is the judge's: cached
    assert again["judges"][0]["from_cache"] == 3 and server.counts["logprobs"] == 3


def test_a_ten_written_as_two_tokens_is_weighted(tmp_path):
    """A tokenizer that writes numbers digit by digit (Qwen's) writes 10 as "1", "0": DeepEval finds no
    token equal to 10 and keeps the raw 10; calibrate weights it over the two tokens, and the one-token
    scores exactly as DeepEval does."""
    with JudgeServer(digits=True) as server:
        doc = run_judges(load_campaign(folder_for(tmp_path, server.url)))
    ratings = by_case(doc)
    # first digit: "1" (10 or 1) with 0.6, "9" with 0.25; after "1", "0" with TEN_AFTER_ONE, "}" (ends at 1)
    p1, p9 = SCORE_PROBABILITIES[0], SCORE_PROBABILITIES[-1]
    ten = (10 * p1 * TEN_AFTER_ONE + 1 * p1 * (1 - TEN_AFTER_ONE) + 9 * p9) / (p1 + p9)
    assert ratings["same"]["value"] == pytest.approx(ten / 10)
    assert ratings["same"]["details"]["logprob_weighting"].startswith("10 as '1','0'")
    assert ratings["half"]["value"] == pytest.approx(0.49) and ratings["none"]["value"] == pytest.approx(0.02)
    assert all(
        r["details"]["logprob_weighted"] is True and "logprob_fallback" not in r["details"] for r in ratings.values()
    )
    assert doc["judges"][0]["logprob_weighted"] == 3


@pytest.mark.parametrize(
    "settings, why",
    [
        (STEPS + ", logprobs = false", "logprobs = false in the settings"),
        (STEPS + ", strict_mode = true", "strict mode scores 0 or 1"),
    ],
)
def test_without_logprobs_the_raw_score_is_kept_and_said(tmp_path, server, settings, why):
    doc = run_judges(load_campaign(folder_for(tmp_path, server.url, settings)))
    ratings = by_case(doc)
    expected = {"same": 1.0, "half": 0.0, "none": 0.0} if "strict" in why else {"same": 1.0, "half": 0.5, "none": 0.0}
    assert {c: r["value"] for c, r in ratings.items()} == expected
    assert all(
        r["details"] == {"logprob_weighted": False, "logprob_fallback": why, "structured_output": "json_schema"}
        for r in ratings.values()
    )
    assert doc["judges"][0]["logprob_weighted"] == 0 and server.counts["logprobs"] == 0


def test_anthropic_gives_no_logprobs(tmp_path, server):
    doc = run_judges(load_campaign(folder_for(tmp_path, server.url.rsplit("/v1", 1)[0], provider="anthropic")))
    assert {c: r["value"] for c, r in by_case(doc).items()} == {"same": 1.0, "half": 0.5, "none": 0.0}
    assert by_case(doc)["same"]["details"] == {
        "logprob_weighted": False,
        "structured_output": "json_schema",
        "logprob_fallback": "the anthropic provider gives no logprobs",
    }


def test_steps_from_criteria_are_made_once_and_kept(tmp_path, server):
    folder = folder_for(tmp_path, server.url, 'criteria = "Is the actual output the expected output?"')
    doc = run_judges(load_campaign(folder))
    assert doc["judges"][0]["calls"] == 1 + 3 and server.counts["requests"] == 4
    steps = {json.dumps(r["details"]["evaluation_steps"]) for r in doc["ratings"]}
    assert len(steps) == 1 and "expected output" in steps.pop()
    assert by_case(doc)["half"]["value"] == pytest.approx(0.49)
    # the steps' call carried G-Eval's Steps schema, the score calls none: each rating names what its calls sent
    calls = [r["details"].get("structured_output_calls") for r in doc["ratings"]]
    assert sorted(calls, key=json.dumps) == [["json_schema", "text"], None, None]
    assert {r["details"]["structured_output"] for r in doc["ratings"]} == {"text"}
    assert sorted(s["response_format"] for s in server.seen) == ["json_schema", "text", "text", "text"]
    assert manifest(folder, doc)["structured_output"]["geval-gpt"]["sent"] == {"json_schema": 1, "text": 3}


def test_settings_are_checked_before_any_call(tmp_path, server):
    folder = folder_for(
        tmp_path,
        server.url,
        'criteria = "x", rubric = [{ score_range = [0, 6], expected_outcome '
        '= "bad" }, { score_range = [5, 10], expected_outcome = "good" }]',
    )
    with pytest.raises(JudgeSetupError, match="DeepEval refuses these G-Eval settings"):
        run_judges(load_campaign(folder))
    assert server.counts["requests"] == 0
    toml = (folder / "campaign.toml").read_text()
    settings = toml[toml.index("settings = ") :].splitlines()[0]
    (folder / "campaign.toml").write_text(toml.replace(settings, "settings = { rubric = [1] }"))
    with pytest.raises(CampaignError) as raised:
        load_campaign(folder)
    text = str(raised.value)
    assert "settings.evaluation_params" in text and "G-Eval needs the case fields it reads" in text
    assert "settings.rubric[0]" in text and "G-Eval needs criteria or evaluation_steps" in text


def test_a_rubric_bounds_the_score(tmp_path, server):
    rubric = (
        'rubric = [{ score_range = [0, 3], expected_outcome = "Different." }, '
        '{ score_range = [4, 10], expected_outcome = "The same." }]'
    )
    doc = run_judges(load_campaign(folder_for(tmp_path, server.url, f"{STEPS}, {rubric}")))
    assert by_case(doc)["half"]["value"] == pytest.approx(0.49) and doc["judges"][0]["failed"] == 0


def test_a_score_reply_cut_at_max_tokens_says_so(tmp_path, server):
    """The logprob score call is read by DeepEval, not by calibrate's parser: a reply cut at max_tokens is
    told apart in the same one place (the model client), not left to DeepEval's "invalid JSON"."""
    folder = folder_for(tmp_path, server.url)
    toml = (folder / "campaign.toml").read_text()
    (folder / "campaign.toml").write_text(toml.replace('base_url = "', 'max_tokens = 64, base_url = "'))
    server.inject("Bananas grow everywhere", "cut")
    doc = run_judges(load_campaign(folder))
    error = by_case(doc)["none"]["error"]
    assert "cut at max_tokens" in error and "gpt-scripted" in error and "max_tokens = 64" in error, error
    assert "campaign.toml" in error and "invalid JSON" not in error
    assert by_case(doc)["same"]["value"] is not None and server.counts["cut"] == 1
