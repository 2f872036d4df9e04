"""DeepEval metrics run through calibrate's model calls: a fresh metric per rating, the model chosen for
G-Eval's logprobs, DeepEval's own refusals found before a run (calibrate/judges/deepeval_adapter.py).
Against the scripted judge server: tests/judges/test_runner.py, test_judges_geval.py, test_judges_dag.py."""

import asyncio
import json
from importlib import metadata

import pytest

pytest.importorskip("deepeval")

from calibrate.campaign.judge_specs import JudgeSpec, ModelSpec
from calibrate.judges.calls import CallPolicy
from calibrate.judges.deepeval_adapter import check, library_version, make_model, model_versions, score_case
from calibrate.judges.replies import notes

MODEL = ModelSpec("openai", "gpt-4o-mini", base_url="http://127.0.0.1:1/v1")
#: what the model says to each of DeepEval's faithfulness prompts, by the schema it asks for
REPLIES = {
    "Truths": {"truths": ["Paris is the capital of France."]},
    "Claims": {"claims": ["Paris is the capital of France.", "Paris has ten million people."]},
    "Verdicts": {"verdicts": [{"verdict": "yes"}, {"verdict": "no", "reason": "not in the context"}]},
    "FaithfulnessScoreReason": {"reason": "one claim is not supported"},
}


class FakeClient:
    """The one method DeepEval's model calls on calibrate's client: a completion, JSON when asked."""

    supports_logprobs = False

    def __init__(self, spec):
        self.spec, self.prompts = spec, []

    async def complete(self, prompt, policy, *, json_mode, schema):
        self.prompts.append(prompt)
        return json.dumps(REPLIES[schema.__name__]) if schema is not None else "plain text"


def spec(metric="faithfulness", **settings):
    return JudgeSpec("careful", "deepeval", metric, "faithful", MODEL, "gpt", settings=settings)


def test_a_faithfulness_rating_is_deepevals_score_through_calibrates_client():
    client = FakeClient(MODEL)
    model = make_model(spec(), lambda s: client, CallPolicy())
    assert model.get_model_name() == "gpt-4o-mini" and not hasattr(model, "a_generate_raw_response")
    case = {
        "input": "What is the capital of France?",
        "actual_output": "Paris, of ten million people.",
        "retrieval_context": ["Paris is the capital of France."],
    }
    score, reason = asyncio.run(score_case(spec(), model, case))
    assert score == pytest.approx(0.5)  # one of the two claims supported
    assert reason == "one claim is not supported" and len(client.prompts) == 4
    strict, _ = asyncio.run(score_case(spec(strict_mode=True), model, case))
    assert strict in (0.0, 1.0)


def test_a_model_without_logprobs_notes_why_g_eval_is_not_weighted():
    g_eval = spec(
        "g_eval",
        criteria="Is it faithful?",
        evaluation_params=["input", "actual_output"],
        evaluation_steps=["Read it."],
    )
    model = make_model(g_eval, lambda s: FakeClient(MODEL), CallPolicy())
    assert not hasattr(model, "a_generate_raw_response")
    logprob_client = FakeClient(MODEL)
    logprob_client.supports_logprobs = True
    assert hasattr(make_model(g_eval, lambda s: logprob_client, CallPolicy()), "a_generate_raw_response")
    strict = spec("g_eval", criteria="c", evaluation_params=["input"], strict_mode=True)
    assert not hasattr(make_model(strict, lambda s: logprob_client, CallPolicy()), "a_generate_raw_response")
    said: dict = {}

    async def scored():
        notes.set(said)
        await score_case(g_eval, model, {"input": "q", "actual_output": "a"})

    with pytest.raises(KeyError):  # the fake client has no G-Eval replies: the note is made before the calls
        asyncio.run(scored())
    assert said == {"logprob_weighted": False, "logprob_fallback": "the openai provider gives no logprobs"}


def test_deepevals_own_refusals_are_found_before_a_run():
    overlapping = spec(
        "g_eval",
        criteria="c",
        evaluation_params=["input"],
        rubric=[
            {"score_range": [0, 6], "expected_outcome": "bad"},
            {"score_range": [5, 10], "expected_outcome": "good"},
        ],
    )
    (problem,) = check(overlapping)
    assert problem.startswith("judge careful: DeepEval refuses these G-Eval settings:")
    assert check(spec("g_eval", criteria="c", evaluation_params=["input"])) == []
    assert check(spec()) == []  # only G-Eval and DAG are built ahead


def test_versions_recorded_with_a_rating():
    assert library_version() == metadata.version("deepeval") and model_versions(spec()) == {}
