"""The HTTP contract of a RAG service, from ``[service]`` in ``campaign.toml``.

::

    [service]
    url = "https://rag.internal/api/ask"
    method = "POST"                                          # POST (JSON body) or GET (query string)
    headers = { Authorization = "Bearer ${RAG_TOKEN}" }      # ${VAR}: from the environment, never stored
    body = { query = "{input}", top_k = 5, session = "{case_id}" }
    answer = "data.answer"                                   # JMESPath into the JSON reply
    contexts = "data.chunks[*].text"                         # the retrieved chunks, in rank order
    context_ids = "data.chunks[*].id"                        # optional
    timeout_s = 30

The body is a template: in every string, ``{field}`` is replaced by that field of the golden (``input``,
``case_id``, ``expected_output``, ``metadata[key]``...); a string that is exactly one ``{field}`` takes the
field's value as it is (a list stays a list). The body is then serialised as JSON, so quotes, backslashes
and newlines in a golden are escaped as JSON requires. Paths are JMESPath (the ``jmespath`` package).
"""

from __future__ import annotations

import os
import re
import string
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import jmespath
from jmespath.exceptions import JMESPathError
from pydantic import Field

from calibrate.base.errors import Problem
from calibrate.campaign.config import Positive, Table, table

__all__ = ["SERVICE_KEYS", "ContractError", "ServiceContract", "ServiceTable", "load_contract", "parse_service"]
ENV = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
WHOLE_FIELD = re.compile(r"^\{([A-Za-z_][A-Za-z0-9_]*)\}$")


class ContractError(ValueError):
    """A golden or a reply that does not fit the contract (one case's error; the run goes on)."""


@dataclass(frozen=True)
class ServiceContract:
    url: str
    answer: str
    contexts: str
    method: str = "POST"
    headers: dict[str, str] = field(default_factory=dict)
    body: Any = None
    context_ids: str | None = None
    timeout_s: float = 30.0

    # ------------------------------------------------------------------ requests
    def header_values(self) -> dict[str, str]:
        """The headers with ``${VAR}`` taken from the environment (an unset variable is an error)."""
        out = {}
        for name, value in self.headers.items():
            missing = [v for v in ENV.findall(value) if v not in os.environ]
            if missing:
                raise ValueError(f"service header {name}: the environment variable {missing[0]} is not set")
            out[name] = ENV.sub(lambda m: os.environ[m.group(1)], value)
        return out

    def masked_headers(self) -> dict[str, str]:
        """The headers as declared, ``${VAR}`` left unexpanded: what may be shown or stored."""
        return dict(self.headers)

    def render(self, golden: dict[str, Any]) -> Any:
        """The request body (or query parameters) for one golden.

        Examples
        --------
        >>> c = ServiceContract("http://x", "a", "c", body={"q": "{input}", "k": 3, "ctx": "{context}"})
        >>> c.render({"input": 'say "hi"\\n', "context": ["a", "b"]})
        {'q': 'say "hi"\\n', 'k': 3, 'ctx': ['a', 'b']}
        """
        fields = {k: v for k, v in golden.items()}
        fields.setdefault("metadata", {})

        def walk(node: Any) -> Any:
            if isinstance(node, dict):
                return {k: walk(v) for k, v in node.items()}
            if isinstance(node, list):
                return [walk(v) for v in node]
            if isinstance(node, str):
                whole = WHOLE_FIELD.match(node)
                if whole:
                    if whole.group(1) not in fields:
                        raise ContractError(
                            f"the body template asks for {{{whole.group(1)}}}, which the golden "
                            f"does not have (it has {', '.join(sorted(fields))})"
                        )
                    return fields[whole.group(1)]
                try:
                    return string.Formatter().vformat(node, (), _Fields(fields))
                except (KeyError, IndexError, ValueError) as exc:
                    raise ContractError(f"the body template {node!r} cannot be filled from the golden: {exc}") from None
            return node

        return walk(self.body)

    # ------------------------------------------------------------------ replies
    def extract(self, reply: Any) -> tuple[str, list[str], list[str] | None]:
        """(answer, contexts, context ids) of a parsed JSON reply; :class:`ContractError` names what is
        missing or of the wrong type.

        Examples
        --------
        >>> c = ServiceContract("http://x", "data.answer", "data.chunks[*].text", context_ids="data.chunks[*].id")
        >>> c.extract({"data": {"answer": "Paris.", "chunks": [{"id": 7, "text": "Paris is..."}]}})
        ('Paris.', ['Paris is...'], ['7'])
        """
        answer = jmespath.search(self.answer, reply)
        if not isinstance(answer, str):
            found = "nothing" if answer is None else f"a {type(answer).__name__}"
            raise ContractError(f"no answer at {self.answer!r}: found {found} (reply keys: {_keys(reply)})")
        contexts = jmespath.search(self.contexts, reply)
        if not isinstance(contexts, list) or not all(isinstance(c, str) for c in contexts):
            found = (
                "nothing"
                if contexts is None
                else (
                    f"a {type(contexts).__name__}"
                    if not isinstance(contexts, list)
                    else "a list holding "
                    + ", ".join(sorted({type(c).__name__ for c in contexts if not isinstance(c, str)}))
                )
            )
            raise ContractError(f"contexts at {self.contexts!r}: expected a list of strings, found {found}")
        ids = None
        if self.context_ids:
            found_ids = jmespath.search(self.context_ids, reply)
            if not isinstance(found_ids, list) or len(found_ids) != len(contexts):
                raise ContractError(
                    f"context ids at {self.context_ids!r}: expected a list as long as the contexts "
                    f"({len(contexts)}), found {found_ids!r:.100}"
                )
            ids = [str(i) for i in found_ids]
        return answer, contexts, ids


class _Fields(dict):
    """Golden fields for str.format: ``{metadata[topic]}`` works, a missing field is a KeyError."""

    def __missing__(self, key):
        raise KeyError(f"{{{key}}} is not a field of the golden")


def _keys(reply: Any) -> str:
    return ", ".join(sorted(map(str, reply))) if isinstance(reply, dict) else type(reply).__name__


class ServiceTable(Table):
    """``[service]``: the RAG service's HTTP contract (the body is any TOML value: a template)."""

    url: str = Field(description="an http(s) URL")
    method: str = Field("POST", description="GET or POST")
    headers: dict[str, str] = Field({}, description='a table of strings: { Authorization = "Bearer ${RAG_TOKEN}" }')
    body: Any = Field(None, description="the request body's template")
    answer: str = Field(description='a JMESPath expression into the reply, e.g. "data.answer"')
    contexts: str = Field(description='a JMESPath expression into the reply, e.g. "data.chunks[*].text"')
    context_ids: str | None = Field(None, description='a JMESPath expression into the reply, e.g. "data.chunks[*].id"')
    timeout_s: Positive = Field(30, description="a number of seconds above 0")

    messages: ClassVar[dict[str, str]] = {
        "url": "the service needs an http(s) URL",
        "method": "unsupported method",
        "headers": "headers must be a table of strings",
        "answer": "needs a JMESPath expression into the reply",
        "contexts": "needs a JMESPath expression into the reply",
        "context_ids": "needs a JMESPath expression into the reply",
        "timeout_s": "must be a positive number of seconds",
    }


SERVICE_KEYS = set(ServiceTable.model_fields)


def parse_service(spec: Any, file: str, problems: list[Problem]) -> ServiceContract | None:
    """``[service]`` read by :class:`ServiceTable` and checked (a URL, a method, JMESPath expressions);
    problems are appended, ``None`` when it is unusable.

    >>> problems = []
    >>> parse_service({"url": "ftp://x", "answer": "a[", "contexts": "c", "timeout_s": 0}, "c.toml", problems)
    >>> [(p.field, p.message.split(":")[0]) for p in problems]
    [('service.timeout_s', 'must be a positive number of seconds')]
    >>> problems = []
    >>> parse_service({"url": "ftp://x", "answer": "a[", "contexts": "c"}, "c.toml", problems)
    >>> [(p.field, p.message.split(":")[0]) for p in problems]
    [('service.url', 'the service needs an http(s) URL'), ('service.answer', 'not a valid JMESPath expression')]
    """
    if spec is None:
        return None
    model = table(spec, ServiceTable, "service", file, problems)
    if model is None:
        return None
    before = len(problems)
    if not model.url.startswith(("http://", "https://")):
        problems.append(Problem(file, "the service needs an http(s) URL", field="service.url", value=model.url))
    method = model.method.upper()
    if method not in ("GET", "POST"):
        problems.append(
            Problem(file, "unsupported method", field="service.method", value=model.method, expected="GET or POST")
        )
    for key in ("answer", "contexts", "context_ids"):
        value = getattr(model, key)
        if value is None:
            continue
        try:
            jmespath.compile(value)
        except JMESPathError as exc:
            problems.append(
                Problem(file, f"not a valid JMESPath expression: {exc}", field=f"service.{key}", value=value)
            )
    if len(problems) > before:
        return None
    return ServiceContract(
        url=model.url,
        answer=model.answer,
        contexts=model.contexts,
        method=method,
        headers=dict(model.headers),
        body=model.body,
        context_ids=model.context_ids,
        timeout_s=float(model.timeout_s),
    )


def load_contract(folder: str | Path) -> ServiceContract:
    """The ``[service]`` of a campaign folder's ``campaign.toml`` (the campaign needs no ratings yet)."""
    from calibrate.base.errors import CampaignError
    from calibrate.campaign.config import read_toml

    path = Path(folder) / "campaign.toml"
    if not path.is_file():
        raise CampaignError([Problem(str(path), "no campaign.toml in the campaign folder")])
    config = read_toml(path)
    problems: list[Problem] = []
    contract = parse_service(config.get("service"), str(path), problems)
    if problems:
        raise CampaignError(problems)
    if contract is None:
        raise CampaignError(
            [
                Problem(
                    str(path),
                    "no [service] table: declare the RAG service's HTTP contract",
                    field="service",
                    expected="[service] with url, answer and contexts",
                )
            ]
        )
    return contract
