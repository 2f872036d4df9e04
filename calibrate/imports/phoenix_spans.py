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

``PHOENIX_API_KEY`` authenticates, as Phoenix's own client does.
"""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from calibrate.base.results import Result
from calibrate.cases.datasets import external_case
from calibrate.imports.apply import import_batch
from calibrate.imports.http import JsonClient, ServerError
from calibrate.imports.records import ImportedRating, Skip, SourceBatch, rating_value
from calibrate.imports.texts import problem_text

__all__ = ["PhoenixError", "PhoenixClient", "read_phoenix_project", "import_phoenix"]

JUDGE_KINDS = {"LLM", "CODE"}
PAGE = 1000         # the most spans a page of /spans gives
IDS_AT_ONCE = 500   # span or trace ids per annotation request (Phoenix takes up to 1,000)


class PhoenixError(ServerError):
    """The Phoenix server cannot be reached, refuses a request, or lacks the project."""


class PhoenixClient(JsonClient):
    """The few REST calls calibrate makes to a Phoenix server (``endpoint``: ``http(s)://host:port``).

    Examples
    --------
    >>> PhoenixClient("127.0.0.1:6006")
    Traceback (most recent call last):
    ...
    calibrate.imports.phoenix_spans.PhoenixError: endpoint '127.0.0.1:6006': give the Phoenix server's http:// address (http://127.0.0.1:6006)
    """

    def __init__(self, endpoint: str):
        if not endpoint.startswith(("http://", "https://")):
            raise PhoenixError(f"endpoint {endpoint!r}: give the Phoenix server's http:// address "
                               "(http://127.0.0.1:6006)")
        key = os.environ.get("PHOENIX_API_KEY")
        super().__init__(endpoint, name="Phoenix", headers={"Authorization": f"Bearer {key}"} if key else None,
                         error=PhoenixError)

    def project(self, name: str) -> str:
        """The project's id (the error lists the projects there are)."""
        try:
            return self.call("GET", f"/v1/projects/{name}")["data"]["id"]
        except PhoenixError as exc:
            if "HTTP 404" not in str(exc):
                raise
        found = self.call("GET", "/v1/projects", query=[("limit", "100")]) or {}
        names = sorted(p["name"] for p in found.get("data", []))
        raise PhoenixError(f"project {name!r}: Phoenix at {self.uri} has no project of that name (it has "
                           + (", ".join(repr(n) for n in names[:20]) or "none") + ")")

    def spans(self, project: str) -> list[dict[str, Any]]:
        """Every span of the project, in the order Phoenix stored them."""
        spans, cursor = [], None
        while True:
            query = [("limit", str(PAGE))] + ([("cursor", cursor)] if cursor else [])
            page = self.call("GET", f"/v1/projects/{project}/spans", query=query) or {}
            spans += page.get("data", [])
            cursor = page.get("next_cursor")
            if not cursor:
                return spans

    def annotations(self, project: str, kind: str, ids: list[str]) -> list[dict[str, Any]]:
        """Every annotation of these spans (``kind`` ``span``) or traces (``trace``)."""
        found = []
        for start in range(0, len(ids), IDS_AT_ONCE):
            cursor = None
            while True:
                query = [(f"{kind}_ids", i) for i in ids[start:start + IDS_AT_ONCE]] + [("limit", "10000")]
                page = self.call("GET", f"/v1/projects/{project}/{kind}_annotations",
                                 query=query + ([("cursor", cursor)] if cursor else [])) or {}
                found += page.get("data", [])
                cursor = page.get("next_cursor")
                if not cursor:
                    break
        return found


def _documents(attributes: dict[str, Any]) -> list[str]:
    """A retriever span's documents: flat ``retrieval.documents.N.document.content`` keys, or nested."""
    flat = {}
    for key, value in attributes.items():
        parts = key.split(".")
        if key.startswith("retrieval.documents.") and key.endswith(".document.content") and parts[2].isdigit():
            flat[int(parts[2])] = value
    if flat:
        return [str(flat[i]) for i in sorted(flat)]
    nested = (attributes.get("retrieval") or {}).get("documents") if isinstance(attributes.get("retrieval"), dict) else None
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


def _rater(annotation: dict[str, Any]) -> str:
    metadata = annotation.get("metadata") if isinstance(annotation.get("metadata"), dict) else {}
    for candidate in (annotation.get("identifier"), annotation.get("user_id") and f"user-{annotation['user_id']}",
                      metadata.get("model") if isinstance(metadata.get("model"), str) else None):
        if candidate:
            return str(candidate)
    return f"phoenix-{str(annotation.get('annotator_kind', 'unknown')).lower()}"


def _rating(annotation: dict[str, Any], case_id: str, on: str) -> ImportedRating | Skip:
    kind = annotation.get("annotator_kind")
    what = f"{annotation.get('id')} ({annotation.get('name')!r} on {on})"
    if kind not in JUDGE_KINDS | {"HUMAN"}:
        return Skip(what, f"its annotator kind {kind!r} is none of HUMAN, LLM, CODE")
    result = annotation.get("result") or {}
    value = rating_value(result.get("score")) if result.get("score") is not None else rating_value(result.get("label"))
    if value is None:
        return Skip(what, f"it has no score, and its label {result.get('label')!r} reads as neither pass nor fail")
    metadata = annotation.get("metadata") if isinstance(annotation.get("metadata"), dict) else {}
    facts = {"library": "phoenix", "source_type": kind, "label": result.get("label")}
    if kind in JUDGE_KINDS and isinstance(metadata.get("model"), str):
        facts["model"] = metadata["model"]
    return ImportedRating(case_id=case_id, metric=str(annotation.get("name")), rater=_rater(annotation),
                          rater_kind="judge" if kind in JUDGE_KINDS else "human", value=value,
                          source_id=str(annotation.get("id")), reason=result.get("explanation"),
                          facts={k: v for k, v in facts.items() if v is not None},
                          updated=annotation.get("updated_at"))


def read_phoenix_project(endpoint: str, project: str, *, client: PhoenixClient | None = None) -> SourceBatch:
    """The cases and ratings of every trace of a Phoenix project (see the module docstring).

    Parameters
    ----------
    endpoint : str
        The Phoenix server's address (``http://127.0.0.1:6006``).
    project : str
        The project's name.

    Returns
    -------
    SourceBatch
        Origin ``phoenix:ENDPOINT#PROJECT_ID``, read whole: a rating imported before whose annotation
        is gone is withdrawn.

    Raises
    ------
    PhoenixError
        The server cannot be reached, or has no such project.

    Examples
    --------
    >>> read_phoenix_project("http://127.0.0.1:9", "rag")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    calibrate.imports.phoenix_spans.PhoenixError: cannot reach Phoenix at http://127.0.0.1:9 (...
    """
    client = client or PhoenixClient(endpoint)
    project_id = client.project(project)
    batch = SourceBatch(kind="phoenix", origin=f"phoenix:{client.uri}#{project_id}",
                        source=f"{client.uri} project {project!r}", whole=True)
    by_trace: dict[str, list[dict]] = defaultdict(list)
    for span in client.spans(project):
        by_trace[(span.get("context") or {}).get("trace_id", "")].append(span)
    roots: dict[str, str] = {}   # root span id -> trace id
    for trace_id, spans in by_trace.items():
        root = next((s for s in spans if not s.get("parent_id")), None)
        if root is None:
            batch.skipped.append(Skip(trace_id, "a trace whose root span is not in the project"))
            continue
        attributes = root.get("attributes") or {}
        chunks = [text for s in sorted(spans, key=lambda s: s.get("start_time") or "")
                  if s.get("span_kind") == "RETRIEVER" for text in _documents(s.get("attributes") or {})]
        record = {"case_id": trace_id, "input": _value(attributes, "input.value"),
                  "actual_output": _value(attributes, "output.value"), "retrieval_context": chunks or None,
                  "metadata": {"trace_id": trace_id, "span_id": root["context"]["span_id"],
                               "time": root.get("start_time"), "status": root.get("status_code")}}
        case, problems = external_case({k: v for k, v in record.items() if v is not None}, source="deepeval",
                                       where=batch.source)
        if case is None:
            batch.skipped.append(Skip(trace_id, problem_text(problems)))
            continue
        case["metadata"]["source"] = "phoenix"
        batch.cases.append(case)
        roots[root["context"]["span_id"]] = trace_id
    spans_of = {s["context"]["span_id"]: (s.get("context") or {}).get("trace_id") for spans in by_trace.values()
                for s in spans}
    for annotation in client.annotations(project, "span", sorted(spans_of)):
        span_id = annotation.get("span_id")
        if span_id in roots:
            found = _rating(annotation, roots[span_id], f"span {span_id}")
        else:
            found = Skip(f"{annotation.get('id')} ({annotation.get('name')!r} on span {span_id})",
                         "an annotation of a child span, not of the trace's root span")
        (batch.skipped if isinstance(found, Skip) else batch.ratings).append(found)
    for annotation in client.annotations(project, "trace", sorted(set(roots.values()))):
        found = _rating(annotation, annotation.get("trace_id"), f"trace {annotation.get('trace_id')}")
        (batch.skipped if isinstance(found, Skip) else batch.ratings).append(found)
    return batch


def import_phoenix(campaign_folder: str | Path, endpoint: str, project: str, *,
                   metric_map: Mapping[str, str] | None = None, dry_run: bool = False) -> Result:
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
    dry_run : bool
        Say what the import would do; write nothing.

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
    return import_batch(campaign_folder, read_phoenix_project(endpoint, project), metric_map=metric_map,
                        dry_run=dry_run)
