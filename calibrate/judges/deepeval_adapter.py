"""DeepEval metrics, run with calibrate's model calls.

DeepEval's own ``LocalModel`` builds a new HTTP client per call; :class:`CalibrateModel` shares one
async client per endpoint and routes every call through the run's :class:`CallPolicy` (limits,
timeout, retries). A fresh metric object is built for every rating: DeepEval stores results on the
metric, so a shared one would mix ratings.
"""

from __future__ import annotations

import json
import os
import re
from importlib import metadata
from typing import Any

from calibrate.judges.calls import CallPolicy
from calibrate.judges.config import JudgeSpec

# no telemetry, no tracing to Confident AI, no .env file read: before DeepEval is imported anywhere
os.environ.setdefault("DEEPEVAL_TELEMETRY_OPT_OUT", "1")
os.environ.setdefault("DEEPEVAL_DISABLE_DOTENV", "1")
os.environ.setdefault("CONFIDENT_TRACING_ENABLED", "NO")

__all__ = ["library_version", "score_case", "make_model"]


def library_version() -> str:
    return metadata.version("deepeval")


class JudgeReplyError(ValueError):
    """The judge's reply does not fit the answer the metric asked for."""


def _json_text(text: str) -> str:
    """The JSON object in a reply, tolerating Markdown fences and text around it."""
    fenced = re.search(r"```(?:json)?\s*(.*?)```", text, re.S)
    if fenced:
        text = fenced.group(1)
    start, end = text.find("{"), text.rfind("}")
    return text[start:end + 1] if start != -1 and end > start else text


def make_model(client, policy: CallPolicy):
    """A DeepEval model (``DeepEvalBaseLLM``) calling through ``client`` under ``policy``."""
    from deepeval.models import DeepEvalBaseLLM
    from pydantic import ValidationError

    class CalibrateModel(DeepEvalBaseLLM):
        def __init__(self):
            self._client = client
            super().__init__(client.spec.name)

        def load_model(self):
            return self._client

        def get_model_name(self) -> str:
            return self._client.spec.name

        def generate(self, prompt: str, schema=None, **kwargs: Any):
            raise NotImplementedError("calibrate runs DeepEval metrics asynchronously (a_measure)")

        async def a_generate(self, prompt: str, schema=None, **kwargs: Any):
            text = await self._client.complete(prompt, policy, json_mode=schema is not None)
            if schema is None:
                return text
            try:
                return schema.model_validate_json(_json_text(text))
            except (ValidationError, json.JSONDecodeError) as exc:
                raise JudgeReplyError(f"the judge's reply is not the JSON {schema.__name__} asks for: "
                                      f"{text[:200]!r} ({exc.errors()[0]['msg'] if hasattr(exc, 'errors') else exc})"
                                      ) from None

    return CalibrateModel()


def _metric(spec: JudgeSpec, model):
    from deepeval import metrics

    classes = {"faithfulness": metrics.FaithfulnessMetric, "answer_relevancy": metrics.AnswerRelevancyMetric,
               "contextual_precision": metrics.ContextualPrecisionMetric,
               "contextual_recall": metrics.ContextualRecallMetric,
               "contextual_relevancy": metrics.ContextualRelevancyMetric}
    return classes[spec.metric](model=model, async_mode=True, **spec.settings)


async def score_case(spec: JudgeSpec, model, case: dict[str, Any]) -> tuple[float, str | None]:
    """One rating: a fresh metric, DeepEval's own ``a_measure`` on the case; returns (score, reason)."""
    from deepeval.test_case import LLMTestCase

    fields = {key: case.get(key) for key in ("input", "actual_output", "expected_output", "retrieval_context",
                                             "context") if case.get(key) is not None}
    metric = _metric(spec, model)
    await metric.a_measure(LLMTestCase(**fields), _show_indicator=False)
    if metric.score is None:
        raise JudgeReplyError(f"DeepEval returned no score ({getattr(metric, 'error', None) or 'no error given'})")
    return float(metric.score), getattr(metric, "reason", None)
