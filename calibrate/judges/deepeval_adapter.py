"""DeepEval metrics, run with calibrate's model calls.

DeepEval's own ``LocalModel`` builds a new HTTP client per call; :class:`CalibrateModel` shares one
async client per endpoint and routes every call through the run's :class:`CallPolicy` (limits,
timeout, retries). A fresh metric object is built for every rating: DeepEval stores results on the
metric, so a shared one would mix ratings.
"""

from __future__ import annotations

import os
from importlib import metadata
from typing import Any

from calibrate.judges.calls import CallPolicy
from calibrate.judges.config import JudgeSpec
from calibrate.judges.replies import JudgeReplyError, parse_reply

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
    """What must be fixed before the judge can run (nothing beyond the configuration)."""
    return []


def make_model(spec: JudgeSpec, client_for, policy: CallPolicy):
    """A DeepEval model (``DeepEvalBaseLLM``) calling the judge's model under ``policy``;
    ``client_for(model_spec)`` gives the run's shared client of an endpoint."""
    from deepeval.models import DeepEvalBaseLLM

    client = client_for(spec.model)

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
            return text if schema is None else parse_reply(text, schema)

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
