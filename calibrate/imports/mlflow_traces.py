"""An MLflow experiment's traces and their assessments, read through the tracking server's REST API, as
cases, human ratings and judge ratings.

Each trace is a case: its root span's inputs are the ``input``, its outputs the ``actual_output``, the
documents its ``RETRIEVER`` spans returned the ``retrieval_context``, and an expectation named
``expected_response`` (or ``expected_output``, ``expected_answer``, ``reference``, ``ground_truth``, ``expected``)
the ``expected_output``; its id is the trace id, and its request time is kept as ``metadata.time``.
Each valid feedback on a trace is a rating of the metric of its name: by a human when its source type
is ``HUMAN``, by a judge when it is ``LLM_JUDGE`` or ``CODE``, the rater named by the source id. A
feedback that erred is a failed judge rating with MLflow's error; one overridden by a later one, one on
a span rather than the trace, or one whose value is no number or yes / no is skipped, saying why.

calibrate's own HTTP client (:mod:`calibrate.base.http`) talks to the server, so no MLflow client is
needed: ``MLFLOW_TRACKING_TOKEN``, or ``MLFLOW_TRACKING_USERNAME`` and ``MLFLOW_TRACKING_PASSWORD``,
authenticate as MLflow's own client does; a redirect to another server is refused, so they never leave
the server given. Every reply is read through the schemas below: a malformed one is an
:class:`MlflowError` naming the request and the field. The read is whole (a rating imported before and
no longer there is withdrawn) only when every page of the search and every trace asked for came back;
a trace the server did not return is listed as skipped, and that import withdraws nothing.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import JsonValue

from calibrate.base.documents import DocumentError, Schema, parse_json
from calibrate.base.http import HttpClient, HttpError, HttpPolicy
from calibrate.base.results import Result
from calibrate.base.secrets import remember
from calibrate.base.times import SourceTimeOrEpochMs
from calibrate.cases.datasets import external_case
from calibrate.imports.apply import import_batch
from calibrate.imports.records import ImportedRating, Skip, SourceBatch, rating_value
from calibrate.imports.texts import (
    EXPECTED_OUTPUT_NAMES,
    INPUT_KEYS,
    OUTPUT_KEYS,
    Id,
    OptionalId,
    documents_of,
    problem_text,
    text_of,
)

__all__ = [
    "AnyValue",
    "Assessment",
    "MlflowClient",
    "MlflowError",
    "Span",
    "Trace",
    "TraceInfo",
    "any_value",
    "import_mlflow",
    "read_mlflow_experiment",
]

JUDGE_SOURCES = {"LLM_JUDGE", "CODE"}
PAGE = 500  # the most traces a search returns at once
BATCH = 50  # traces fetched with their spans at once
SEARCH = "/api/3.0/mlflow/traces/search"
BATCH_GET = "/api/3.0/mlflow/traces/batchGet"


class MlflowError(HttpError):
    """The MLflow tracking server cannot be reached, refuses a request, sends a reply that is not what
    its API declares, or lacks the experiment (``kind="missing"``)."""


# ------------------------------------------------------------------ the replies calibrate reads
class _Experiment(Schema):
    experiment_id: Id
    name: str | None = None


class _ExperimentReply(Schema):
    experiment: _Experiment


class _ExperimentList(Schema):
    experiments: list[_Experiment] = []


class _Created(Schema):
    experiment_id: Id


class _TraceRef(Schema):
    trace_id: Id


class _TraceSearch(Schema):
    traces: list[_TraceRef] = []
    next_page_token: str | None = None


class AnyValue(Schema):
    """An OpenTelemetry ``AnyValue``, as MLflow's JSON gives a span attribute's value."""

    string_value: str | None = None
    int_value: int | None = None
    double_value: float | None = None
    bool_value: bool | None = None
    array_value: _ArrayValue | None = None
    kvlist_value: _KeyValueList | None = None
    bytes_value: str | None = None


class _ArrayValue(Schema):
    values: list[AnyValue] = []


class _KeyValue(Schema):
    key: str | None = None
    value: AnyValue | None = None


class _KeyValueList(Schema):
    values: list[_KeyValue] = []


class Span(Schema):
    """A span of a trace (OpenTelemetry's JSON, as ``batchGet`` gives it)."""

    span_id: OptionalId = None
    parent_span_id: str | None = None
    start_time_unix_nano: int | None = None
    attributes: list[_KeyValue] = []


class _Source(Schema):
    source_type: str | None = None
    source_id: str | None = None


class _AssessmentError(Schema):
    error_code: str | None = None
    error_message: str | None = None


class _Feedback(Schema):
    value: JsonValue = None
    error: _AssessmentError | None = None


class _Expectation(Schema):
    value: JsonValue = None
    serialized_value: JsonValue = None


class Assessment(Schema):
    """A feedback or an expectation on a trace."""

    assessment_id: OptionalId = None
    assessment_name: str | None = None
    source: _Source | None = None
    valid: bool | None = None
    span_id: str | None = None
    feedback: _Feedback | None = None
    expectation: _Expectation | None = None
    rationale: JsonValue = None
    last_update_time: SourceTimeOrEpochMs = None


class TraceInfo(Schema):
    """A trace's info: its id, request time, state, tags and assessments."""

    trace_id: Id
    request_time: str | None = None
    state: str | None = None
    tags: dict[str, JsonValue] | None = None
    assessments: list[Assessment] = []


class Trace(Schema):
    """A trace whole: its info and its spans."""

    trace_info: TraceInfo
    spans: list[Span] = []


class _TraceBatch(Schema):
    traces: list[Trace] = []


for _model in (AnyValue, _ArrayValue, _KeyValue, _KeyValueList):
    _model.model_rebuild()


class MlflowClient(HttpClient):
    """The few REST calls calibrate makes to an MLflow tracking server (``tracking_uri``: ``http(s)://``),
    under the rules of :mod:`calibrate.base.http`.

    Examples
    --------
    >>> MlflowClient("file:///tmp/mlruns")
    Traceback (most recent call last):
    ...
    calibrate.imports.mlflow_traces.MlflowError: tracking_uri 'file:///tmp/mlruns': calibrate talks to an MLflow tracking server over HTTP; start one (mlflow server --backend-store-uri ...) and give its http:// address
    """

    def __init__(self, tracking_uri: str, *, policy: HttpPolicy | None = None):
        if not str(tracking_uri).startswith(("http://", "https://")):
            raise MlflowError(
                f"tracking_uri {tracking_uri!r}: calibrate talks to an MLflow tracking server over "
                "HTTP; start one (mlflow server --backend-store-uri ...) and give its http:// address"
            )
        headers = {}
        token, user = os.environ.get("MLFLOW_TRACKING_TOKEN"), os.environ.get("MLFLOW_TRACKING_USERNAME")
        if token:
            remember(token)
            headers["Authorization"] = "Bearer " + token
        elif user:
            password = os.environ.get("MLFLOW_TRACKING_PASSWORD", "")
            remember(password)
            headers["Authorization"] = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()
        super().__init__(tracking_uri, name="MLflow", headers=headers, error=MlflowError, policy=policy)

    def experiment(self, name: str) -> _Experiment:
        """The experiment of that name (its id and name); ``MlflowError`` (``kind="missing"``) listing
        the experiments there are when it has none of that name."""
        try:
            return self.call(
                "GET",
                "/api/2.0/mlflow/experiments/get-by-name",
                _ExperimentReply,
                expected="an MLflow experiment",
                query=[("experiment_name", name)],
            ).experiment
        except MlflowError as exc:
            if exc.status != 404:
                raise
        found = self.call(
            "POST",
            "/api/2.0/mlflow/experiments/search",
            _ExperimentList,
            expected="a list of MLflow experiments",
            body={"max_results": 50},
        )
        names = sorted(e.name for e in found.experiments if e.name is not None)
        raise MlflowError(
            f"experiment {name!r}: MLflow at {self.uri} has no experiment of that name (it has "
            + (", ".join(repr(n) for n in names[:20]) or "none")
            + ")",
            kind="missing",
        )

    def create_experiment(self, name: str) -> str:
        """A new experiment's id."""
        return self.call(
            "POST",
            "/api/2.0/mlflow/experiments/create",
            _Created,
            expected="a new experiment's id",
            body={"name": name},
        ).experiment_id

    def trace_ids(self, experiment_id: str) -> list[str]:
        """The id of every trace of the experiment, oldest first (each once), over every page of the
        search; a page token given twice, or pages without end, is an error."""

        def fetch(token: str | None) -> tuple[list[str], str | None]:
            body: dict[str, Any] = {
                "locations": [{"type": "MLFLOW_EXPERIMENT", "mlflow_experiment": {"experiment_id": experiment_id}}],
                "max_results": PAGE,
                "order_by": ["timestamp_ms ASC"],
            }
            if token:
                body["page_token"] = token
            page = self.call("POST", SEARCH, _TraceSearch, expected="an MLflow trace search reply", body=body)
            return [t.trace_id for t in page.traces], page.next_page_token

        ids: dict[str, None] = {}
        for page in self.pages(fetch, request=f"POST {SEARCH}"):
            ids.update(dict.fromkeys(page))
        return list(ids)

    def traces(self, trace_ids: list[str]) -> tuple[list[Trace], list[str]]:
        """Each trace whole (its info with its assessments, and its spans), in the order asked, and the
        ids the server did not return."""
        found: dict[str, Trace] = {}
        for start in range(0, len(trace_ids), BATCH):
            chunk = trace_ids[start : start + BATCH]
            reply = self.call(
                "GET", BATCH_GET, _TraceBatch, expected="MLflow traces", query=[("trace_ids", t) for t in chunk]
            )
            asked = set(chunk)
            for trace in reply.traces:
                if trace.trace_info.trace_id in asked:
                    found.setdefault(trace.trace_info.trace_id, trace)
        return [found[t] for t in trace_ids if t in found], [t for t in trace_ids if t not in found]


def any_value(value: AnyValue | None) -> Any:
    """An OpenTelemetry ``AnyValue`` (as MLflow's JSON gives span attributes) as the Python value.

    >>> any_value(AnyValue.model_validate({"kvlist_value": {"values": [{"key": "q", "value": {"string_value": "hi"}},
    ...                                                                {"key": "id"}]}}))
    {'q': 'hi', 'id': None}
    >>> any_value(AnyValue.model_validate({"array_value": {"values": [{"int_value": "3"}, {"double_value": 0.5},
    ...                                                               {"bool_value": True}]}}))
    [3, 0.5, True]
    """
    if value is None:
        return None
    if value.string_value is not None:
        return value.string_value
    for found in (value.int_value, value.double_value, value.bool_value):
        if found is not None:
            return found
    if value.array_value is not None:
        return [any_value(v) for v in value.array_value.values]
    if value.kvlist_value is not None:
        return {item.key: any_value(item.value) for item in value.kvlist_value.values if item.key is not None}
    return value.bytes_value


def _attributes(span: Span) -> dict[str, Any]:
    values = {a.key: any_value(a.value) for a in span.attributes if a.key is not None}
    for key in ("mlflow.spanInputs", "mlflow.spanOutputs"):  # older servers keep them as JSON text
        if isinstance(values.get(key), str):
            try:  # within the depth and size limits of every document; text that is not JSON stays text
                values[key] = parse_json(values[key], JsonValue, source=f"span {span.span_id}", expected=key)
            except DocumentError:
                pass
    return values


def _case(trace: Trace, where: str) -> tuple[dict | None, list[Skip]]:
    info = trace.trace_info
    trace_id = info.trace_id
    spans = sorted(trace.spans, key=lambda s: s.start_time_unix_nano or 0)
    root = next((s for s in spans if not s.parent_span_id), spans[0] if spans else None)
    if root is None:
        return None, [Skip(trace_id, "a trace without spans: no request or response to rate")]
    attributes = _attributes(root)
    record: dict[str, Any] = {
        "case_id": trace_id,
        "input": text_of(attributes.get("mlflow.spanInputs"), INPUT_KEYS, chat_role="user"),
        "actual_output": text_of(attributes.get("mlflow.spanOutputs"), OUTPUT_KEYS, chat_role=None),
    }
    chunks = []
    for span in spans:
        span_attributes = _attributes(span)
        if span_attributes.get("mlflow.spanType") == "RETRIEVER":
            chunks += documents_of(span_attributes.get("mlflow.spanOutputs"))
    if chunks:
        record["retrieval_context"] = chunks
    expectations: dict[str | None, Any] = {}
    for a in info.assessments:
        if a.expectation is not None and a.valid is not False:
            expectations[a.assessment_name] = (
                a.expectation.value
                if "value" in a.expectation.model_fields_set
                else a.expectation.model_dump(exclude_none=True)
            )
    for name in EXPECTED_OUTPUT_NAMES:
        if isinstance(expectations.get(name), str):
            record["expected_output"] = expectations.pop(name)
            break
    tags = {k: v for k, v in (info.tags or {}).items() if not k.startswith("mlflow.")}
    record["metadata"] = {
        k: v
        for k, v in {
            "trace_id": trace_id,
            "time": info.request_time,
            "state": info.state,
            "tags": tags or None,
            "expectations": {str(k): v for k, v in expectations.items()} or None,
        }.items()
        if v is not None
    }
    case, problems = external_case(record, source="deepeval", where=where)
    if case is None:
        return None, [Skip(trace_id, problem_text(problems))]
    case["metadata"]["source"] = "mlflow"
    return case, []


def _model(source_id: str) -> str:
    """The model of a judge's source id (MLflow's judges name theirs as ``provider:/model``)."""
    return source_id.split(":/", 1)[1] if ":/" in source_id else source_id


def _ratings(info: TraceInfo, case_id: str) -> tuple[list[ImportedRating], list[Skip]]:
    ratings, skipped = [], []
    for a in info.assessments:
        if a.feedback is None:
            continue
        what = f"{a.assessment_id} ({a.assessment_name!r} on {case_id})"
        kind = a.source.source_type if a.source is not None else None
        rater = (a.source.source_id if a.source is not None else None) or ""
        if a.valid is False:
            skipped.append(Skip(what, "overridden by a later assessment (MLflow marks it invalid)"))
        elif a.span_id:
            skipped.append(Skip(what, "an assessment of one span, not of the trace"))
        elif kind not in JUDGE_SOURCES | {"HUMAN"}:
            skipped.append(Skip(what, f"its source type {kind!r} is neither HUMAN nor LLM_JUDGE / CODE"))
        elif not rater:
            skipped.append(Skip(what, "its source has no id to name its rater by"))
        elif a.assessment_id is None or a.assessment_name is None:
            skipped.append(Skip(what, "it has no id or no name (MLflow gives both)"))
        else:
            failure = a.feedback.error
            value = rating_value(a.feedback.value, where=f"MLflow assessment {a.assessment_id}, field 'feedback.value'")
            error = None
            if failure is not None and kind in JUDGE_SOURCES:
                message = failure.error_message or failure.error_code or "failed"
                code = failure.error_code
                value, error = None, f"{code}: {message}" if code and code not in message else message
            elif value is None:
                skipped.append(
                    Skip(what, f"its value {a.feedback.value!r} is not a number, true / false, yes / no or pass / fail")
                )
                continue
            facts = {"source_type": kind, "library": "mlflow"}
            if kind in JUDGE_SOURCES:
                facts["model"] = _model(rater)
            ratings.append(
                ImportedRating(
                    case_id=case_id,
                    metric=a.assessment_name,
                    rater=rater,
                    rater_kind="judge" if kind in JUDGE_SOURCES else "human",
                    value=value,
                    source_id=a.assessment_id,
                    error=error,
                    reason=a.rationale if isinstance(a.rationale, str) else None,
                    facts=facts,
                    updated=a.last_update_time,
                )
            )
    return ratings, skipped


def read_mlflow_experiment(tracking_uri: str, experiment: str, *, client: MlflowClient | None = None) -> SourceBatch:
    """The cases and ratings of every trace of an MLflow experiment (see the module docstring).

    Parameters
    ----------
    tracking_uri : str
        The tracking server's address (``http://127.0.0.1:5000``).
    experiment : str
        The experiment's name.
    client : MlflowClient, optional
        The client to use (one with another :class:`~calibrate.base.http.HttpPolicy`).

    Returns
    -------
    SourceBatch
        Origin ``mlflow:URI#EXPERIMENT_ID``. Read whole when every page of the search and every trace
        asked for came back: a rating imported before whose assessment is gone (deleted, or overridden
        by another rater) is then withdrawn. A trace the server did not return (deleted meanwhile, or a
        partial reply) is skipped, saying so, and the batch is not whole: nothing is withdrawn.

    Raises
    ------
    MlflowError
        The server cannot be reached, refuses a request, redirects to another server, sends a reply that
        is not what its API declares (naming the request and the field), pages without end, or has no
        such experiment.

    Examples
    --------
    >>> read_mlflow_experiment("http://127.0.0.1:9", "x")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    calibrate.imports.mlflow_traces.MlflowError: cannot reach MLflow at http://127.0.0.1:9 (...
    """
    client = client or MlflowClient(tracking_uri)
    experiment_id = client.experiment(experiment).experiment_id
    where = f"{client.uri} experiment {experiment!r}"
    batch = SourceBatch(kind="mlflow", origin=f"mlflow:{client.uri}#{experiment_id}", source=where)
    traces, missing = client.traces(client.trace_ids(experiment_id))
    batch.whole = not missing
    batch.skipped += [
        Skip(
            t,
            "the search listed this trace but MLflow did not return it (deleted meanwhile, or a "
            "partial reply): this import withdraws nothing",
        )
        for t in missing
    ]
    for trace in traces:
        case, skipped = _case(trace, where)
        batch.skipped += skipped
        ratings, skipped = _ratings(trace.trace_info, trace.trace_info.trace_id)
        if case is None:
            batch.skipped += [Skip(r.source_id, "its trace is not a case (see the trace's own skip)") for r in ratings]
            continue
        batch.cases.append(case)
        batch.ratings += ratings
        batch.skipped += skipped
    return batch


def import_mlflow(
    campaign_folder: str | Path,
    tracking_uri: str,
    experiment: str,
    *,
    metric_map: Mapping[str, str] | None = None,
    rater: str | None = None,
    dry_run: bool = False,
    allow_withdraw: bool = False,
) -> Result:
    """The ``calibrate import mlflow`` command: an MLflow experiment's traces and feedback read by
    :func:`read_mlflow_experiment`, brought into the campaign by :func:`~calibrate.imports.apply.import_batch`.

    Parameters
    ----------
    campaign_folder : str or Path
    tracking_uri : str
        The tracking server's address.
    experiment : str
        The experiment's name.
    metric_map : mapping, optional
        Feedback name -> campaign metric, for names that do not match the campaign's.
    rater : str, optional
        The judge's name in the campaign, for an experiment of one judge (one named like an annotator, say).
    dry_run : bool
        Say what the import would do; write nothing.
    allow_withdraw : bool
        Withdraw every rating the experiment no longer holds, however many (see
        :func:`~calibrate.imports.apply.import_batch`).

    Returns
    -------
    Result
        As :func:`~calibrate.imports.apply.import_batch` returns it.

    Examples
    --------
    >>> import tempfile, pathlib, calibrate
    >>> folder = pathlib.Path(tempfile.mkdtemp()) / "c"
    >>> _ = calibrate.init_campaign(folder, ["faithfulness"])
    >>> import_mlflow(folder, "http://127.0.0.1:9", "rag")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    calibrate.imports.mlflow_traces.MlflowError: cannot reach MLflow at http://127.0.0.1:9 (...
    """
    return import_batch(
        campaign_folder,
        read_mlflow_experiment(tracking_uri, experiment),
        metric_map=metric_map,
        rater=rater,
        dry_run=dry_run,
        allow_withdraw=allow_withdraw,
    )
