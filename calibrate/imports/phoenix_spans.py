"""A Phoenix project's traces and their annotations, read through the Phoenix server's REST API, as
cases, human ratings and judge ratings.

Each trace is a case, its id the trace id: its root span's ``input.value`` is the ``input``, its
``output.value`` the ``actual_output``, and the documents its ``RETRIEVER`` spans returned
(``retrieval.documents.N.document.content``) the ``retrieval_context``; the root span's start time is
kept as ``metadata.time``. Each annotation of the root span or of the trace is a rating of the metric
of its name: by a human when its annotator kind is ``HUMAN``, by a judge when it is ``LLM`` or
``CODE``. The rater is named by the annotation's ``identifier`` (Phoenix's way to keep several
annotators' annotations of one name apart), else its user, else its ``metadata.model``, else the
annotator kind (``phoenix-human``, ``phoenix-llm``, ``phoenix-code``). The value is the score, else the
label when it reads as pass / fail (``yes`` / ``no``, ``correct`` / ``incorrect``, ...); an annotation of
a child span, or whose label means neither, is skipped, saying why.

``PHOENIX_API_KEY`` authenticates, as Phoenix's own client does; the requests go through
:mod:`calibrate.base.http` (a redirect to another server refused, so the key never leaves the server
given; a deadline per request and for the import; pages that loop refused). The project is found by
its name in Phoenix's list of projects and asked for by its id, so no name is ever part of a URL's path.
Every reply is read through the schemas below: a malformed one (a span without its context, a list
where an object belongs) is a :class:`PhoenixError` naming the request and the field.
"""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import JsonValue

from calibrate.base.documents import Schema
from calibrate.base.http import HttpClient, HttpError, HttpPolicy, path_segment
from calibrate.base.results import Result
from calibrate.base.secrets import remember
from calibrate.base.times import SourceTime
from calibrate.cases.datasets import external_case
from calibrate.imports.apply import import_batch
from calibrate.imports.records import ImportedRating, Skip, SourceBatch, rating_value
from calibrate.imports.texts import Id, OptionalId, problem_text

__all__ = ["Annotation", "PhoenixClient", "PhoenixError", "Span", "import_phoenix", "read_phoenix_project"]

JUDGE_KINDS = {"LLM", "CODE"}
PAGE = 1000  # the most spans a page of /spans gives
IDS_AT_ONCE = 500  # span or trace ids per annotation request (Phoenix takes up to 1,000)


class PhoenixError(HttpError):
    """The Phoenix server cannot be reached, refuses a request, sends a reply that is not what its API
    declares, or lacks the project (``kind="missing"``)."""


# ------------------------------------------------------------------ the replies calibrate reads
class _Project(Schema):
    id: Id
    name: str


class _Projects(Schema):
    data: list[_Project]
    next_cursor: str | None = None


class _Context(Schema):
    trace_id: Id
    span_id: Id


class Span(Schema):
    """A span as ``/v1/projects/ID/spans`` gives it."""

    context: _Context
    parent_id: str | None = None
    span_kind: str | None = None
    start_time: str | None = None
    status_code: str | None = None
    attributes: dict[str, JsonValue] | None = None


class _Spans(Schema):
    data: list[Span]
    next_cursor: str | None = None


class _Result(Schema):
    label: JsonValue = None
    score: JsonValue = None
    explanation: JsonValue = None


class Annotation(Schema):
    """A span's or trace's annotation."""

    id: OptionalId = None
    name: str | None = None
    span_id: OptionalId = None
    trace_id: OptionalId = None
    annotator_kind: str | None = None
    result: _Result | None = None
    metadata: JsonValue = None
    identifier: str | None = None
    user_id: OptionalId = None
    updated_at: SourceTime = None


class _Annotations(Schema):
    data: list[Annotation]
    next_cursor: str | None = None


class PhoenixClient(HttpClient):
    """The few REST calls calibrate makes to a Phoenix server (``endpoint``: ``http(s)://host:port``),
    under the rules of :mod:`calibrate.base.http`.

    Examples
    --------
    >>> PhoenixClient("127.0.0.1:6006")
    Traceback (most recent call last):
    ...
    calibrate.imports.phoenix_spans.PhoenixError: endpoint '127.0.0.1:6006': give the Phoenix server's http:// address (http://127.0.0.1:6006)
    """

    def __init__(self, endpoint: str, *, policy: HttpPolicy | None = None):
        if not str(endpoint).startswith(("http://", "https://")):
            raise PhoenixError(
                f"endpoint {endpoint!r}: give the Phoenix server's http:// address (http://127.0.0.1:6006)"
            )
        key = os.environ.get("PHOENIX_API_KEY")
        remember(key)
        super().__init__(
            endpoint,
            name="Phoenix",
            headers={"Authorization": f"Bearer {key}"} if key else None,
            error=PhoenixError,
            policy=policy,
        )

    def project(self, name: str) -> str:
        """The id of the project of that name, from the list of projects (the error lists them when it
        is not there)."""

        def fetch(cursor: str | None) -> tuple[list[_Project], str | None]:
            page = self.call(
                "GET",
                "/v1/projects",
                _Projects,
                expected="a page of Phoenix projects",
                query=[("limit", "100")] + ([("cursor", cursor)] if cursor else []),
            )
            return page.data, page.next_cursor

        names = []
        for page in self.pages(fetch, request="GET /v1/projects"):
            for project in page:
                if project.name == name:
                    return project.id
                names.append(project.name)
        raise PhoenixError(
            f"project {name!r}: Phoenix at {self.uri} has no project of that name (it has "
            + (", ".join(repr(n) for n in sorted(names)[:20]) or "none")
            + ")",
            kind="missing",
        )

    def spans(self, project_id: str) -> list[Span]:
        """Every span of the project, in the order Phoenix stored them."""
        path = f"/v1/projects/{path_segment(project_id, what='project id')}/spans"

        def fetch(cursor: str | None) -> tuple[list[Span], str | None]:
            page = self.call(
                "GET",
                path,
                _Spans,
                expected="a page of Phoenix spans",
                query=[("limit", str(PAGE))] + ([("cursor", cursor)] if cursor else []),
            )
            return page.data, page.next_cursor

        return [span for page in self.pages(fetch, request=f"GET {path}") for span in page]

    def annotations(self, project_id: str, kind: str, ids: list[str]) -> list[Annotation]:
        """Every annotation of these spans (``kind`` ``span``) or traces (``trace``)."""
        path = f"/v1/projects/{path_segment(project_id, what='project id')}/{kind}_annotations"
        found = []
        for start in range(0, len(ids), IDS_AT_ONCE):
            query = [(f"{kind}_ids", i) for i in ids[start : start + IDS_AT_ONCE]] + [("limit", "10000")]

            def fetch(cursor: str | None, query=query) -> tuple[list[Annotation], str | None]:
                page = self.call(
                    "GET",
                    path,
                    _Annotations,
                    expected=f"a page of Phoenix {kind} annotations",
                    query=query + ([("cursor", cursor)] if cursor else []),
                )
                return page.data, page.next_cursor

            found += [a for page in self.pages(fetch, request=f"GET {path}") for a in page]
        return found


def _documents(attributes: dict[str, Any]) -> list[str]:
    """A retriever span's documents: flat ``retrieval.documents.N.document.content`` keys, or nested."""
    flat = {}
    for key, value in attributes.items():
        parts = key.split(".")
        if key.startswith("retrieval.documents.") and key.endswith(".document.content") and parts[2].isdecimal():
            flat[int(parts[2])] = value
    if flat:
        return [str(flat[i]) for i in sorted(flat)]
    nested = (
        (attributes.get("retrieval") or {}).get("documents") if isinstance(attributes.get("retrieval"), dict) else None
    )
    texts = []
    for item in nested or []:
        document = item.get("document") if isinstance(item, dict) else None
        if isinstance(document, dict) and isinstance(document.get("content"), str):
            texts.append(document["content"])
    return texts


def _value(attributes: dict[str, Any], name: str) -> Any:
    """``input.value`` as Phoenix gives it: a flat key, or nested under ``input``."""
    if name in attributes:
        return attributes[name]
    head, _, tail = name.partition(".")
    nested = attributes.get(head)
    return nested.get(tail) if isinstance(nested, dict) else None


def _rater(annotation: Annotation) -> str:
    metadata = annotation.metadata if isinstance(annotation.metadata, dict) else {}
    model = metadata.get("model")
    for candidate in (
        annotation.identifier,
        annotation.user_id and f"user-{annotation.user_id}",
        model if isinstance(model, str) else None,
    ):
        if candidate:
            return str(candidate)
    return f"phoenix-{str(annotation.annotator_kind or 'unknown').lower()}"


def _rating(annotation: Annotation, case_id: str, on: str) -> ImportedRating | Skip:
    kind = annotation.annotator_kind
    what = f"{annotation.id} ({annotation.name!r} on {on})"
    if kind not in JUDGE_KINDS | {"HUMAN"}:
        return Skip(what, f"its annotator kind {kind!r} is none of HUMAN, LLM, CODE")
    if annotation.id is None or annotation.name is None:
        return Skip(what, "it has no id or no name (Phoenix gives both)")
    result = annotation.result or _Result()
    field = f"Phoenix annotation {annotation.id} ({on}), field"
    value = (
        rating_value(result.score, where=f"{field} 'result.score'")
        if result.score is not None
        else rating_value(result.label, where=f"{field} 'result.label'")
    )
    if value is None:
        return Skip(what, f"it has no score, and its label {result.label!r} reads as neither pass nor fail")
    metadata = annotation.metadata if isinstance(annotation.metadata, dict) else {}
    facts = {"library": "phoenix", "source_type": kind, "label": result.label}
    if kind in JUDGE_KINDS and isinstance(metadata.get("model"), str):
        facts["model"] = metadata["model"]
    return ImportedRating(
        case_id=case_id,
        metric=annotation.name,
        rater=_rater(annotation),
        rater_kind="judge" if kind in JUDGE_KINDS else "human",
        value=value,
        source_id=annotation.id,
        reason=result.explanation if isinstance(result.explanation, str) else None,
        facts={k: v for k, v in facts.items() if v is not None},
        updated=annotation.updated_at,
    )


def read_phoenix_project(endpoint: str, project: str, *, client: PhoenixClient | None = None) -> SourceBatch:
    """The cases and ratings of every trace of a Phoenix project (see the module docstring).

    Parameters
    ----------
    endpoint : str
        The Phoenix server's address (``http://127.0.0.1:6006``).
    project : str
        The project's name.
    client : PhoenixClient, optional
        The client to use (one with another :class:`~calibrate.base.http.HttpPolicy`).

    Returns
    -------
    SourceBatch
        Origin ``phoenix:ENDPOINT#PROJECT_ID``, read whole (every page of spans and annotations): a
        rating imported before whose annotation is gone is withdrawn.

    Raises
    ------
    PhoenixError
        The server cannot be reached, refuses a request, redirects to another server, sends a reply that
        is not what its API declares (naming the request and the field), pages without end, or has no
        such project.

    Examples
    --------
    >>> read_phoenix_project("http://127.0.0.1:9", "rag")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    calibrate.imports.phoenix_spans.PhoenixError: cannot reach Phoenix at http://127.0.0.1:9 (...
    """
    client = client or PhoenixClient(endpoint)
    project_id = client.project(project)
    batch = SourceBatch(
        kind="phoenix",
        origin=f"phoenix:{client.uri}#{project_id}",
        source=f"{client.uri} project {project!r}",
        whole=True,
    )
    by_trace: dict[str, list[Span]] = defaultdict(list)
    for span in client.spans(project_id):
        by_trace[span.context.trace_id].append(span)
    roots: dict[str, str] = {}  # root span id -> trace id
    for trace_id, spans in by_trace.items():
        root = next((s for s in spans if not s.parent_id), None)
        if root is None:
            batch.skipped.append(Skip(trace_id, "a trace whose root span is not in the project"))
            continue
        attributes = root.attributes or {}
        chunks = [
            text
            for s in sorted(spans, key=lambda s: s.start_time or "")
            if s.span_kind == "RETRIEVER"
            for text in _documents(s.attributes or {})
        ]
        record = {
            "case_id": trace_id,
            "input": _value(attributes, "input.value"),
            "actual_output": _value(attributes, "output.value"),
            "retrieval_context": chunks or None,
            "metadata": {
                "trace_id": trace_id,
                "span_id": root.context.span_id,
                "time": root.start_time,
                "status": root.status_code,
            },
        }
        case, problems = external_case(
            {k: v for k, v in record.items() if v is not None}, source="deepeval", where=batch.source
        )
        if case is None:
            batch.skipped.append(Skip(trace_id, problem_text(problems)))
            continue
        case["metadata"]["source"] = "phoenix"
        batch.cases.append(case)
        roots[root.context.span_id] = trace_id
    spans_of = {s.context.span_id for spans in by_trace.values() for s in spans}
    for annotation in client.annotations(project_id, "span", sorted(spans_of)):
        span_id = annotation.span_id
        if span_id in roots:
            found = _rating(annotation, roots[span_id], f"span {span_id}")
        else:
            found = Skip(
                f"{annotation.id} ({annotation.name!r} on span {span_id})",
                "an annotation of a child span, not of the trace's root span",
            )
        (batch.skipped if isinstance(found, Skip) else batch.ratings).append(found)
    traces = set(roots.values())
    for annotation in client.annotations(project_id, "trace", sorted(traces)):
        on = f"trace {annotation.trace_id}"
        found = (
            _rating(annotation, annotation.trace_id, on)
            if annotation.trace_id in traces
            else Skip(f"{annotation.id} ({annotation.name!r} on {on})", "an annotation of a trace that is not a case")
        )
        (batch.skipped if isinstance(found, Skip) else batch.ratings).append(found)
    return batch


def import_phoenix(
    campaign_folder: str | Path,
    endpoint: str,
    project: str,
    *,
    metric_map: Mapping[str, str] | None = None,
    rater: str | None = None,
    dry_run: bool = False,
    allow_withdraw: bool = False,
) -> Result:
    """The ``calibrate import phoenix`` command: a Phoenix project's traces and annotations read by
    :func:`read_phoenix_project`, brought into the campaign by :func:`~calibrate.imports.apply.import_batch`.

    Parameters
    ----------
    campaign_folder : str or Path
    endpoint : str
        The Phoenix server's address.
    project : str
        The project's name.
    metric_map : mapping, optional
        Annotation name -> campaign metric, for names that do not match the campaign's.
    rater : str, optional
        The judge's name in the campaign, for a project of one judge (one named like an annotator, say).
    dry_run : bool
        Say what the import would do; write nothing.
    allow_withdraw : bool
        Withdraw every rating the project no longer holds, however many (see
        :func:`~calibrate.imports.apply.import_batch`).

    Returns
    -------
    Result
        As :func:`~calibrate.imports.apply.import_batch` returns it.

    Examples
    --------
    >>> import tempfile, pathlib, calibrate
    >>> folder = pathlib.Path(tempfile.mkdtemp()) / "c"
    >>> _ = calibrate.init_campaign(folder, ["correctness"])
    >>> import_phoenix(folder, "http://127.0.0.1:9", "rag")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    calibrate.imports.phoenix_spans.PhoenixError: cannot reach Phoenix at http://127.0.0.1:9 (...
    """
    return import_batch(
        campaign_folder,
        read_phoenix_project(endpoint, project),
        metric_map=metric_map,
        rater=rater,
        dry_run=dry_run,
        allow_withdraw=allow_withdraw,
    )
