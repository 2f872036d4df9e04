"""DeepEval metrics, run with calibrate's model calls.

DeepEval's own ``LocalModel`` builds a new HTTP client per call; :class:`CalibrateModel` shares one
async client per endpoint and routes every call through the run's :class:`CallPolicy` (limits,
timeout, retries). A fresh metric object is built for every rating: DeepEval stores results on the
metric, so a shared one would mix ratings.
"""

from __future__ import annotations

import asyncio
import contextvars
import math
import os
from importlib import metadata
from typing import Any

from calibrate.campaign.judge_specs import CASE_FIELDS, JudgeSpec
from calibrate.judges.calls import CallPolicy
from calibrate.judges.logprobs import Weighting, weigh
from calibrate.judges.replies import JudgeReplyError, notes, parse_reply

# no telemetry, no tracing to Confident AI, no .env file read: before DeepEval is imported anywhere
os.environ.setdefault("DEEPEVAL_TELEMETRY_OPT_OUT", "1")
os.environ.setdefault("DEEPEVAL_DISABLE_DOTENV", "1")
os.environ.setdefault("CONFIDENT_TRACING_ENABLED", "NO")

__all__ = ["check", "library_version", "make_model", "model_versions", "score_case"]


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


#: the weighting of the G-Eval score call of the rating being scored (set by :func:`score_case`)
_weighings: contextvars.ContextVar[list[Weighting]] = contextvars.ContextVar("calibrate_geval_weighings")


def make_model(spec: JudgeSpec, client_for, policy: CallPolicy):
    """A DeepEval model (``DeepEvalBaseLLM``) calling the judge's model under ``policy``;
    ``client_for(model_spec)`` gives the run's shared client of an endpoint.

    For G-Eval with ``logprobs`` (the default) on an endpoint that gives them, the model also offers
    ``a_generate_raw_response``, which DeepEval uses to weight the score by the probabilities of the
    score tokens; calibrate weighs the same reply (:func:`calibrate.judges.logprobs.weigh`: DeepEval's
    rule for a score of one token, and a 10 written as two), and :func:`score_case` takes its number.
    Whether a rating was weighted, and how, is noted with it, since it changes the number."""
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
            text = await self._client.complete(prompt, policy, json_mode=schema is not None, schema=schema)
            return text if schema is None else parse_reply(text, schema)

    class CalibrateLogprobModel(CalibrateModel):
        async def a_generate_raw_response(self, prompt: str, top_logprobs: int = 20, **kwargs: Any):
            reply = await self._client.complete_with_logprobs(prompt, policy, top_logprobs=top_logprobs)
            weighing = weigh(reply)
            try:
                completion = ChatCompletion.model_validate(reply)
            except ValueError as exc:  # pydantic's ValidationError: DeepEval reads the reply as this model
                raise JudgeReplyError(
                    f"the model server's reply is not an OpenAI chat completion: {str(exc).splitlines()[0][:200]}",
                    summary="the model server's reply is not an OpenAI chat completion",
                ) from None
            said = notes.get({})
            for key in ("logprob_weighting", "logprob_fallback"):
                said.pop(key, None)
            said.update(
                logprob_weighted=weighing.weighted is not None,
                **({"logprob_weighting": weighing.how} if weighing.how else {}),
                **({"logprob_fallback": weighing.why_not} if weighing.why_not else {}),
            )
            _weighings.get([]).append(weighing)
            return completion, 0.0

    wants_logprobs = (
        spec.metric == "g_eval" and spec.settings.get("logprobs", True) and not spec.settings.get("strict_mode", False)
    )
    return CalibrateLogprobModel() if wants_logprobs and client.supports_logprobs else CalibrateModel()


def _metric(spec: JudgeSpec, model, steps: list[str] | None = None):
    from deepeval import metrics

    if spec.metric == "g_eval":
        from deepeval.metrics.g_eval.utils import Rubric
        from deepeval.test_case import SingleTurnParams

        settings = {k: v for k, v in spec.settings.items() if k not in ("logprobs", "evaluation_params", "rubric")}
        if steps is not None:
            settings["evaluation_steps"] = steps
        rubric = [
            Rubric(score_range=tuple(r["score_range"]), expected_outcome=r["expected_outcome"])
            for r in spec.settings.get("rubric") or []
        ] or None
        return metrics.GEval(
            **{"name": spec.name, **settings},
            model=model,
            async_mode=True,
            rubric=rubric,
            evaluation_params=[SingleTurnParams(p) for p in spec.settings["evaluation_params"]],
        )
    if spec.metric == "dag":  # a fresh tree per rating: DeepEval's nodes keep what a run found
        from deepeval.metrics.dag import DeepAcyclicGraph

        dag = DeepAcyclicGraph.from_dict(spec.dag)
        settings = {k: v for k, v in spec.settings.items() if k != "dag"}
        return metrics.DAGMetric(**{"name": spec.name, **settings}, dag=dag, model=model, async_mode=True)
    classes = {
        "faithfulness": metrics.FaithfulnessMetric,
        "answer_relevancy": metrics.AnswerRelevancyMetric,
        "contextual_precision": metrics.ContextualPrecisionMetric,
        "contextual_recall": metrics.ContextualRecallMetric,
        "contextual_relevancy": metrics.ContextualRelevancyMetric,
    }
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
    """One rating: a fresh metric, DeepEval's own ``a_measure`` on the case; returns (score, reason).

    A G-Eval score call with logprobs is weighted by :func:`calibrate.judges.logprobs.weigh`: where it
    weighted the score, the rating's value is its weighted score on the metric's range (the number
    DeepEval gives for a score of one token; for a 10 written as two tokens, which DeepEval keeps raw,
    calibrate's); where it could not, DeepEval's raw score, and ``logprob_fallback`` says why."""
    from deepeval.test_case import LLMTestCase

    fields = {key: case.get(key) for key in CASE_FIELDS if case.get(key) is not None}
    steps = await _g_eval_steps(spec, model) if spec.metric == "g_eval" else None
    if spec.metric == "g_eval" and not hasattr(model, "a_generate_raw_response"):
        why_not = (
            "strict mode scores 0 or 1"
            if spec.settings.get("strict_mode")
            else "logprobs = false in the settings"
            if not spec.settings.get("logprobs", True)
            else f"the {spec.model.provider} provider gives no logprobs"
        )
        notes.get({}).update(logprob_weighted=False, logprob_fallback=why_not)
    metric = _metric(spec, model, steps)
    weighings: list[Weighting] = []
    token = _weighings.set(weighings)
    try:
        await metric.a_measure(LLMTestCase(**fields), _show_indicator=False)
    finally:
        _weighings.reset(token)
    if metric.score is None:
        raise JudgeReplyError(f"DeepEval returned no score ({getattr(metric, 'error', None) or 'no error given'})")
    if weighings:  # the score call's tokens, weighed by calibrate: its number, weighted or raw as noted
        weighing, low = weighings[-1], metric.score_range[0]
        raw = (
            weighing.score
            if isinstance(weighing.score, (int, float))
            and not isinstance(weighing.score, bool)
            and math.isfinite(weighing.score)
            else None
        )
        if weighing.weighted is None and raw is None:  # DeepEval read a score calibrate cannot: weighted or not?
            raise JudgeReplyError(
                f"the G-Eval reply holds no score calibrate can read ({weighing.why_not}), so "
                "whether DeepEval weighted its score cannot be said",
                summary="the G-Eval reply holds no score calibrate can read",
            )
        value = weighing.weighted if weighing.weighted is not None else raw
        return (value - low) / metric.score_range_span, getattr(metric, "reason", None)
    return float(metric.score), getattr(metric, "reason", None)
