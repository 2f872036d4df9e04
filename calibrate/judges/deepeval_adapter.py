"""DeepEval metrics, run with calibrate's model calls.

DeepEval's own ``LocalModel`` builds a new HTTP client per call; :class:`CalibrateModel` shares one
async client per endpoint and routes every call through the run's :class:`CallPolicy` (limits,
timeout, retries). A fresh metric object is built for every rating: DeepEval stores results on the
metric, so a shared one would mix ratings.
"""

from __future__ import annotations

import asyncio
import math
import os
from importlib import metadata
from typing import Any

from pydantic import ConfigDict, Field, JsonValue

from calibrate.base.documents import DocumentError, Schema, parse_json
from calibrate.base.documents import check as check_document
from calibrate.judges.calls import CallPolicy
from calibrate.campaign.judge_settings import CASE_FIELDS, JudgeSpec
from calibrate.judges.replies import JudgeReplyError, json_text, notes, parse_reply

# no telemetry, no tracing to Confident AI, no .env file read: before DeepEval is imported anywhere
os.environ.setdefault("DEEPEVAL_TELEMETRY_OPT_OUT", "1")
os.environ.setdefault("DEEPEVAL_DISABLE_DOTENV", "1")
os.environ.setdefault("CONFIDENT_TRACING_ENABLED", "NO")

__all__ = ["library_version", "model_versions", "check", "score_case", "make_model"]


def library_version() -> str:
    return metadata.version("deepeval")


def model_versions(spec: JudgeSpec) -> dict[str, str]:
    """Versions, beyond DeepEval's, that the judge's result depends on (none)."""
    return {}


def check(spec: JudgeSpec) -> list[str]:
    """What must be fixed before the judge can run: for G-Eval and DAG, what DeepEval itself refuses
    (a rubric whose ranges overlap or leave 0-10, a tree it cannot read, say), found by building the
    metric once."""
    if spec.metric not in ("g_eval", "dag"):
        return []
    from deepeval.models import DeepEvalBaseLLM

    class Unused(DeepEvalBaseLLM):
        def load_model(self):
            return None

        def generate(self, prompt, schema=None, **kwargs):
            raise NotImplementedError

        async def a_generate(self, prompt, schema=None, **kwargs):
            raise NotImplementedError

        def get_model_name(self):
            return "unused"

    try:
        _metric(spec, Unused("unused"))
    except (ValueError, TypeError, KeyError) as exc:
        what = "G-Eval settings" if spec.metric == "g_eval" else f"DAG ({spec.settings['dag']})"
        return [f"judge {spec.name}: DeepEval refuses these {what}: {exc}"]
    return []


class _Message(Schema):
    content: str


class _Choice(Schema):
    message: _Message
    logprobs: JsonValue = None


class LogprobReply(Schema):
    """The parts of an OpenAI chat completion that tell whether a score can be weighted by its logprobs."""

    choices: list[_Choice] = Field(min_length=1)


class _Logprobs(Schema):
    content: list[JsonValue]


class TokenLogprob(Schema):
    """One token of a reply's ``logprobs.content``, with its ``top_logprobs`` alternatives."""

    model_config = ConfigDict(strict=True)
    token: str
    logprob: float | None = None
    top_logprobs: list[JsonValue] | None = None


class _Scored(Schema):
    score: JsonValue


def _read(value: Any, schema: Any) -> Any:
    """``value`` as ``schema``, or None when it is not one (a part DeepEval cannot use)."""
    return check_document(value, schema, source="the judge's reply", expected="an OpenAI chat completion")[0]


def _weighted_by_logprobs(reply: dict[str, Any]) -> str | None:
    """Why DeepEval cannot weight this G-Eval reply's score by its token probabilities, or None when
    it can (the same conditions as ``calculate_weighted_summed_score``: the last token equal to the
    score has alternatives that are integers with a probability of at least 1%). The reply is read
    through its declared parts (:class:`LogprobReply`, :class:`TokenLogprob`): a part of another shape
    is a reason, never an exception."""
    whole = _read(reply, LogprobReply)
    if whole is None:
        return "the reply holds no score"
    try:
        score = parse_json(json_text(whole.choices[0].message.content), _Scored, source="the judge's reply",
                           expected="a JSON object with a score").score
    except DocumentError:
        return "the reply holds no score"
    probabilities = _read(whole.choices[0].logprobs, _Logprobs)
    tokens = [t for t in (_read(item, TokenLogprob) for item in probabilities.content) if t is not None] \
        if probabilities is not None else []
    for token in reversed(tokens):
        if token.token == str(score):
            alternatives = [t for t in (_read(item, TokenLogprob) for item in token.top_logprobs or []) if t]
            usable = [t for t in alternatives if t.token.isdecimal() and t.logprob is not None
                      and t.logprob >= math.log(0.01)]
            return None if usable else "the score token has no usable alternatives"
    return "the server returned no logprobs for the score token"


def make_model(spec: JudgeSpec, client_for, policy: CallPolicy):
    """A DeepEval model (``DeepEvalBaseLLM``) calling the judge's model under ``policy``;
    ``client_for(model_spec)`` gives the run's shared client of an endpoint.

    For G-Eval with ``logprobs`` (the default) on an endpoint that gives them, the model also offers
    ``a_generate_raw_response``, which DeepEval uses to weight the score by the probabilities of the
    score tokens; whether a rating was weighted is noted with it, since it changes the number."""
    from deepeval.models import DeepEvalBaseLLM
    from openai.types.chat import ChatCompletion

    client = client_for(spec.model)

    class CalibrateModel(DeepEvalBaseLLM):
        def __init__(self):
            self._client = client
            self.steps: list[str] | None = None  # G-Eval's steps from its criteria, made once per run
            self.steps_lock = asyncio.Lock()
            super().__init__(client.spec.name)

        def load_model(self):
            return self._client

        def get_model_name(self) -> str:
            return self._client.spec.name

        def generate(self, prompt: str, schema=None, **kwargs: Any):
            raise NotImplementedError("calibrate runs DeepEval metrics asynchronously (a_measure)")

        async def a_generate(self, prompt: str, schema=None, **kwargs: Any):
            text = await self._client.complete(prompt, policy, json_mode=schema is not None)
            return text if schema is None else parse_reply(text, schema)

    class CalibrateLogprobModel(CalibrateModel):
        async def a_generate_raw_response(self, prompt: str, top_logprobs: int = 20, **kwargs: Any):
            reply = await self._client.complete_with_logprobs(prompt, policy, top_logprobs=top_logprobs)
            why_not = _weighted_by_logprobs(reply)
            try:
                completion = ChatCompletion.model_validate(reply)
            except ValueError as exc:   # pydantic's ValidationError: DeepEval reads the reply as this model
                raise JudgeReplyError(f"the model server's reply is not an OpenAI chat completion: "
                                      f"{str(exc).splitlines()[0][:200]}", summary="the model server's reply is not "
                                      "an OpenAI chat completion") from None
            notes.get({}).update(logprob_weighted=why_not is None,
                                 **({"logprob_fallback": why_not} if why_not else {}))
            return completion, 0.0

    wants_logprobs = spec.metric == "g_eval" and spec.settings.get("logprobs", True) and not spec.settings.get(
        "strict_mode", False)
    return CalibrateLogprobModel() if wants_logprobs and client.supports_logprobs else CalibrateModel()


def _metric(spec: JudgeSpec, model, steps: list[str] | None = None):
    from deepeval import metrics

    if spec.metric == "g_eval":
        from deepeval.metrics.g_eval.utils import Rubric
        from deepeval.test_case import SingleTurnParams

        settings = {k: v for k, v in spec.settings.items() if k not in ("logprobs", "evaluation_params", "rubric")}
        if steps is not None:
            settings["evaluation_steps"] = steps
        rubric = [Rubric(score_range=tuple(r["score_range"]), expected_outcome=r["expected_outcome"])
                  for r in spec.settings.get("rubric") or []] or None
        return metrics.GEval(**{"name": spec.name, **settings}, model=model, async_mode=True, rubric=rubric,
                             evaluation_params=[SingleTurnParams(p) for p in spec.settings["evaluation_params"]])
    if spec.metric == "dag":  # a fresh tree per rating: DeepEval's nodes keep what a run found
        from deepeval.metrics.dag import DeepAcyclicGraph

        dag = DeepAcyclicGraph.from_dict(spec.dag)
        settings = {k: v for k, v in spec.settings.items() if k != "dag"}
        return metrics.DAGMetric(**{"name": spec.name, **settings}, dag=dag, model=model, async_mode=True)
    classes = {"faithfulness": metrics.FaithfulnessMetric, "answer_relevancy": metrics.AnswerRelevancyMetric,
               "contextual_precision": metrics.ContextualPrecisionMetric,
               "contextual_recall": metrics.ContextualRecallMetric,
               "contextual_relevancy": metrics.ContextualRelevancyMetric}
    return classes[spec.metric](model=model, async_mode=True, **spec.settings)


async def _g_eval_steps(spec: JudgeSpec, model) -> list[str] | None:
    """G-Eval's evaluation steps: the user's, or made from the criteria once per run and judge (so
    every case of a run is judged by the same steps), and noted with each rating."""
    if spec.settings.get("evaluation_steps"):
        return None
    async with model.steps_lock:
        if model.steps is None:
            model.steps = await _metric(spec, model)._a_generate_evaluation_steps(multimodal=False)
    notes.get({})["evaluation_steps"] = model.steps
    return model.steps


async def score_case(spec: JudgeSpec, model, case: dict[str, Any]) -> tuple[float, str | None]:
    """One rating: a fresh metric, DeepEval's own ``a_measure`` on the case; returns (score, reason)."""
    from deepeval.test_case import LLMTestCase

    fields = {key: case.get(key) for key in CASE_FIELDS if case.get(key) is not None}
    steps = await _g_eval_steps(spec, model) if spec.metric == "g_eval" else None
    if spec.metric == "g_eval" and not hasattr(model, "a_generate_raw_response"):
        why_not = ("strict mode scores 0 or 1" if spec.settings.get("strict_mode") else
                   "logprobs = false in the settings" if not spec.settings.get("logprobs", True) else
                   f"the {spec.model.provider} provider gives no logprobs")
        notes.get({}).update(logprob_weighted=False, logprob_fallback=why_not)
    metric = _metric(spec, model, steps)
    await metric.a_measure(LLMTestCase(**fields), _show_indicator=False)
    if metric.score is None:
        raise JudgeReplyError(f"DeepEval returned no score ({getattr(metric, 'error', None) or 'no error given'})")
    return float(metric.score), getattr(metric, "reason", None)
