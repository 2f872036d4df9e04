"""Structured output: how a judge's model is asked for the JSON a metric expects.

A model table's ``structured_output`` chooses it (:data:`~calibrate.campaign.judge_specs.STRUCTURED_OUTPUT`):

- ``"json_schema"``: the metric's own output model (DeepEval's ``Claims``, ``Truths``, ``Verdicts``, ...;
  RAGAS's output models), as JSON Schema, in the request: OpenAI's ``response_format`` ``{"type":
  "json_schema", ...}``, Anthropic's ``output_config.format``. A server that supports it constrains the
  reply to the schema (llama.cpp and vLLM compile it into a grammar): small local models stop looping
  or answering other keys.
- ``"json_object"``: OpenAI's JSON mode (any JSON object; the prompt says which keys). Anthropic has none.
- ``"text"``: nothing but the library's prompt, which asks for JSON; the JSON is read out of the text.
- ``"auto"`` (the default): the first of those the endpoint accepts. An endpoint that refuses a mode (an
  HTTP 400 or 422 naming the response format or schema, as an older llama.cpp, vLLM or LM Studio
  sends) is not asked in that mode again for the rest of the run: requests do not wait for the first
  to find out, so it sees the requests already in flight refused (at most the run's concurrency), then
  none.

The mode a rating was made under is part of its cache key and is recorded in the rating's details and
the run's manifest. Under ``auto`` a run keys its ratings by the mode the model's endpoint took in the
campaign's latest run that used it (``json_schema`` at first); a run that finds the endpoint taking
another mode keys what it scores by that mode (:func:`expected_mode`).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any

from calibrate.base.documents import DocumentError, Schema, parse_json
from calibrate.base.http import HttpError
from calibrate.campaign.judge_specs import ModelSpec

__all__ = ["MODES", "ResponseSchema", "chain", "expected_mode", "model_identity", "refuses", "response_schema"]

#: the modes, best first (what ``auto`` tries, in order)
MODES = ("json_schema", "json_object", "text")
#: what an error reply names when it refuses a structured-output request
REFUSAL_MARKERS = (
    "response_format",
    "json_schema",
    "json_object",
    "schema",
    "output_config",
    "output_format",
    "structured output",
    "grammar",
)


def chain(spec: ModelSpec) -> tuple[str, ...]:
    """The modes a model's requests try, in order: the one its table names, or for ``auto`` every mode its
    provider has (Anthropic has no JSON mode).

    Examples
    --------
    >>> chain(ModelSpec("openai", "m")), chain(ModelSpec("anthropic", "m"))
    (('json_schema', 'json_object', 'text'), ('json_schema', 'text'))
    >>> chain(ModelSpec("openai", "m", structured_output="json_object"))
    ('json_object',)
    """
    if spec.structured_output != "auto":
        return (spec.structured_output,)
    return tuple(m for m in MODES if not (spec.provider == "anthropic" and m == "json_object"))


@dataclass(frozen=True)
class ResponseSchema:
    """A metric's output model as a request carries it: its name, its JSON Schema, and whether the schema
    is in OpenAI's strict form (every property required, no other property allowed)."""

    name: str
    schema: dict[str, Any]
    strict: bool


@functools.lru_cache(maxsize=256)
def response_schema(model: Any) -> ResponseSchema:
    """The JSON Schema of a pydantic model class (a metric's output model), made once per class.

    The strict form is the OpenAI SDK's own (``openai.pydantic_function_tool``, as its
    ``chat.completions.parse`` sends it); where the SDK is not installed or cannot make the model strict,
    pydantic's schema as it is, not strict.

    Examples
    --------
    >>> from pydantic import BaseModel
    >>> class Claims(BaseModel):
    ...     claims: list[str]
    >>> found = response_schema(Claims)
    >>> found.name, found.schema["properties"]["claims"]["type"], found.schema["required"], found.strict
    ('Claims', 'array', ['claims'], True)
    """
    name = re.sub(r"[^A-Za-z0-9_-]", "_", getattr(model, "__name__", "") or "output")[:64] or "output"
    try:
        import openai

        return ResponseSchema(name, openai.pydantic_function_tool(model)["function"]["parameters"], True)
    except Exception:  # noqa: BLE001 - no SDK, or a model the strict form cannot express: the plain schema
        return ResponseSchema(name, model.model_json_schema(), False)


def refuses(exc: BaseException | None) -> bool:
    """Whether a failed request is an endpoint refusing a structured-output form: an HTTP 400 or 422
    whose body names the response format, the schema or the output config (not, say, a prompt too long).

    Examples
    --------
    >>> refuses(HttpError("HTTP 400 from the server: response_format type json_schema is not supported",
    ...                   kind="status", status=400))
    True
    >>> refuses(HttpError("HTTP 400 from the server: the prompt is too long", kind="status", status=400))
    False
    """
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, HttpError):
            return (
                exc.kind == "status"
                and exc.status in (400, 422)
                and any(marker in str(exc).lower() for marker in REFUSAL_MARKERS)
            )
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return False


def model_identity(spec: ModelSpec) -> dict[str, Any]:
    """What names a model's endpoint for the memory of its mode (provider, base URL, name)."""
    return {"provider": spec.provider, "base_url": spec.base_url, "name": spec.name}


class _Judge(Schema):
    name: str = ""
    model: dict[str, Any] = {}
    key_template: dict[str, Any] | None = None


class _Run(Schema):
    judges: list[_Judge] = []
    structured_output: dict[str, dict[str, Any]] = {}


def expected_mode(spec: ModelSpec, manifests: list[str]) -> str:
    """The mode a judge's ratings are keyed by before a run calls its model: the one its table names, or
    for ``auto`` the mode its model's endpoint took in the latest of ``manifests`` (run manifests as
    stored, oldest first) that keyed a judge of that model by a mode, else the first mode ``auto`` tries.
    A manifest that cannot be read is passed over.

    Examples
    --------
    >>> import json
    >>> run = {"judges": [{"model": {"provider": "openai", "name": "m"}, "key_template": {"structured_output":
    ...        "json_object"}}]}
    >>> expected_mode(ModelSpec("openai", "m"), [json.dumps(run)]), expected_mode(ModelSpec("openai", "n"), [])
    ('json_object', 'json_schema')
    """
    if spec.structured_output != "auto":
        return spec.structured_output
    me, allowed = model_identity(spec), chain(spec)
    for text in reversed(manifests):
        try:
            run = parse_json(text, _Run, source="a judge run's manifest", expected="a judge run's manifest")
        except DocumentError:
            continue
        for judge in run.judges:
            mode = (judge.key_template or {}).get("structured_output") or run.structured_output.get(judge.name, {}).get(
                "mode"
            )
            if mode in allowed and {k: judge.model.get(k) for k in me} == me:
                return mode
    return allowed[0]
