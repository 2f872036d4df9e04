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

Only the standard library talks to the server (no MLflow client is needed): ``MLFLOW_TRACKING_TOKEN``,
or ``MLFLOW_TRACKING_USERNAME`` and ``MLFLOW_TRACKING_PASSWORD``, authenticate as MLflow's own client
does.
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from calibrate.base.results import Result
from calibrate.cases.datasets import external_case
from calibrate.imports.apply import import_batch
from calibrate.imports.http import JsonClient, ServerError
from calibrate.imports.records import ImportedRating, Skip, SourceBatch, rating_value
from calibrate.imports.texts import EXPECTED_OUTPUT_NAMES, INPUT_KEYS, OUTPUT_KEYS, documents_of, problem_text, text_of

__all__ = ["MlflowError", "MlflowClient", "read_mlflow_experiment", "import_mlflow", "any_value"]

JUDGE_SOURCES = {"LLM_JUDGE", "CODE"}
PAGE = 500     # the most traces a search returns at once
BATCH = 50     # traces fetched with their spans at once


class MlflowError(ServerError):
    """The MLflow tracking server cannot be reached, refuses a request, or lacks the experiment."""


class MlflowClient(JsonClient):
    """The few REST calls calibrate makes to an MLflow tracking server (``tracking_uri``: ``http(s)://``).

    Examples
    --------
    >>> MlflowClient("file:///tmp/mlruns")
    Traceback (most recent call last):
    ...
    calibrate.imports.mlflow_traces.MlflowError: tracking_uri 'file:///tmp/mlruns': calibrate talks to an MLflow tracking server over HTTP; start one (mlflow server --backend-store-uri ...) and give its http:// address
    """

    def __init__(self, tracking_uri: str):
        if not tracking_uri.startswith(("http://", "https://")):
            raise MlflowError(f"tracking_uri {tracking_uri!r}: calibrate talks to an MLflow tracking server over "
                              "HTTP; start one (mlflow server --backend-store-uri ...) and give its http:// address")
        headers = {}
        if os.environ.get("MLFLOW_TRACKING_TOKEN"):
            headers["Authorization"] = "Bearer " + os.environ["MLFLOW_TRACKING_TOKEN"]
        elif os.environ.get("MLFLOW_TRACKING_USERNAME"):
            pair = f"{os.environ['MLFLOW_TRACKING_USERNAME']}:{os.environ.get('MLFLOW_TRACKING_PASSWORD', '')}"
            headers["Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode()
        super().__init__(tracking_uri, name="MLflow", headers=headers, error=MlflowError)

    def experiment(self, name: str) -> dict[str, Any]:
        """The experiment of that name (its id, name, artifact location)."""
        try:
            return self.call("GET", "/api/2.0/mlflow/experiments/get-by-name", query=[("experiment_name", name)])[
                "experiment"]
        except MlflowError as exc:
            if "HTTP 404" not in str(exc):
                raise
        found = self.call("POST", "/api/2.0/mlflow/experiments/search", {"max_results": 50}) or {}
        names = sorted(e["name"] for e in found.get("experiments", []))
        raise MlflowError(f"experiment {name!r}: MLflow at {self.uri} has no experiment of that name (it has "
                          + (", ".join(repr(n) for n in names[:20]) or "none") + ")")

    def trace_ids(self, experiment_id: str) -> list[str]:
        """The id of every trace of the experiment, oldest first."""
        ids, token = [], None
        while True:
            body = {"locations": [{"type": "MLFLOW_EXPERIMENT", "mlflow_experiment": {"experiment_id": experiment_id}}],
                    "max_results": PAGE, "order_by": ["timestamp_ms ASC"]}
            if token:
                body["page_token"] = token
            page = self.call("POST", "/api/3.0/mlflow/traces/search", body) or {}
            ids += [t["trace_id"] for t in page.get("traces", [])]
            token = page.get("next_page_token")
            if not token:
                return ids

    def traces(self, trace_ids: list[str]) -> list[dict[str, Any]]:
        """Each trace whole: its info (with its assessments) and its spans."""
        found = []
        for start in range(0, len(trace_ids), BATCH):
            chunk = trace_ids[start:start + BATCH]
            reply = self.call("GET", "/api/3.0/mlflow/traces/batchGet", query=[("trace_ids", t) for t in chunk]) or {}
            found += reply.get("traces", [])
        return found


def any_value(value: Any) -> Any:
    """An OpenTelemetry ``AnyValue`` (as MLflow's JSON gives span attributes) as the Python value.

    >>> any_value({"kvlist_value": {"values": [{"key": "q", "value": {"string_value": "hi"}}, {"key": "id"}]}})
    {'q': 'hi', 'id': None}
    >>> any_value({"array_value": {"values": [{"int_value": "3"}, {"double_value": 0.5}, {"bool_value": True}]}})
    [3, 0.5, True]
    """
    if not isinstance(value, dict) or not value:
        return None
    if "string_value" in value:
        return value["string_value"]
    if "int_value" in value:
        return int(value["int_value"])
    if "double_value" in value:
        return float(value["double_value"])
    if "bool_value" in value:
        return bool(value["bool_value"])
    if "array_value" in value:
        return [any_value(v) for v in value["array_value"].get("values", [])]
    if "kvlist_value" in value:
        return {item["key"]: any_value(item.get("value")) for item in value["kvlist_value"].get("values", [])}
    if "bytes_value" in value:
        return value["bytes_value"]
    return None


def _attributes(span: dict[str, Any]) -> dict[str, Any]:
    values = {a["key"]: any_value(a.get("value")) for a in span.get("attributes", []) if "key" in a}
    for key in ("mlflow.spanInputs", "mlflow.spanOutputs"):   # older servers keep them as JSON text
        if isinstance(values.get(key), str):
            try:
                values[key] = json.loads(values[key])
            except ValueError:
                pass
    return values


def _case(trace: dict[str, Any], where: str) -> tuple[dict | None, list[Skip]]:
    info = trace.get("trace_info") or {}
    trace_id = info.get("trace_id", "")
    spans = sorted(trace.get("spans") or [], key=lambda s: int(s.get("start_time_unix_nano") or 0))
    root = next((s for s in spans if not s.get("parent_span_id")), spans[0] if spans else None)
    if root is None:
        return None, [Skip(trace_id, "a trace without spans: no request or response to rate")]
    attributes = _attributes(root)
    record: dict[str, Any] = {
        "case_id": trace_id,
        "input": text_of(attributes.get("mlflow.spanInputs"), INPUT_KEYS, chat_role="user"),
        "actual_output": text_of(attributes.get("mlflow.spanOutputs"), OUTPUT_KEYS, chat_role=None)}
    chunks = []
    for span in spans:
        span_attributes = _attributes(span)
        if span_attributes.get("mlflow.spanType") == "RETRIEVER":
            chunks += documents_of(span_attributes.get("mlflow.spanOutputs"))
    if chunks:
        record["retrieval_context"] = chunks
    expectations = {}
    for a in info.get("assessments", []):
        if "expectation" in a and a.get("valid", True) is not False:
            expectations[a.get("assessment_name")] = (a["expectation"].get("value")
                                                      if "value" in a["expectation"] else a["expectation"])
    for name in EXPECTED_OUTPUT_NAMES:
        if isinstance(expectations.get(name), str):
            record["expected_output"] = expectations.pop(name)
            break
    tags = {k: v for k, v in (info.get("tags") or {}).items() if not k.startswith("mlflow.")}
    record["metadata"] = {k: v for k, v in {"trace_id": trace_id, "time": info.get("request_time"),
                                            "state": info.get("state"), "tags": tags or None,
                                            "expectations": expectations or None}.items() if v is not None}
    case, problems = external_case(record, source="deepeval", where=where)
    if case is None:
        return None, [Skip(trace_id, problem_text(problems))]
    case["metadata"]["source"] = "mlflow"
    return case, []


def _model(source_id: str) -> str:
    """The model of a judge's source id (MLflow's judges name theirs as ``provider:/model``)."""
    return source_id.split(":/", 1)[1] if ":/" in source_id else source_id


def _ratings(info: dict[str, Any], case_id: str) -> tuple[list[ImportedRating], list[Skip]]:
    ratings, skipped = [], []
    for a in info.get("assessments", []):
        if "feedback" not in a:
            continue
        what = f"{a.get('assessment_id')} ({a.get('assessment_name')!r} on {case_id})"
        source = a.get("source") or {}
        kind = source.get("source_type")
        rater = source.get("source_id") or ""
        if a.get("valid") is False:
            skipped.append(Skip(what, "overridden by a later assessment (MLflow marks it invalid)"))
        elif a.get("span_id"):
            skipped.append(Skip(what, "an assessment of one span, not of the trace"))
        elif kind not in JUDGE_SOURCES | {"HUMAN"}:
            skipped.append(Skip(what, f"its source type {kind!r} is neither HUMAN nor LLM_JUDGE / CODE"))
        elif not rater:
            skipped.append(Skip(what, "its source has no id to name its rater by"))
        else:
            feedback = a["feedback"]
            error = feedback.get("error")
            value = rating_value(feedback.get("value"))
            if error and kind in JUDGE_SOURCES:
                message = error.get("error_message") or error.get("error_code") or "failed"
                code = error.get("error_code")
                value, error = None, f"{code}: {message}" if code and code not in message else str(message)
            elif value is None:
                skipped.append(Skip(what, f"its value {feedback.get('value')!r} is not a number, true / false, "
                                          "yes / no or pass / fail"))
                continue
            else:
                error = None
            facts = {"source_type": kind, "library": "mlflow"}
            if kind in JUDGE_SOURCES:
                facts["model"] = _model(rater)
            ratings.append(ImportedRating(
                case_id=case_id, metric=str(a.get("assessment_name")), rater=rater,
                rater_kind="judge" if kind in JUDGE_SOURCES else "human", value=value,
                source_id=str(a.get("assessment_id")), error=error,
                reason=a.get("rationale") if isinstance(a.get("rationale"), str) else None, facts=facts,
                updated=a.get("last_update_time")))
    return ratings, skipped


def read_mlflow_experiment(tracking_uri: str, experiment: str, *, client: MlflowClient | None = None) -> SourceBatch:
    """The cases and ratings of every trace of an MLflow experiment (see the module docstring).

    Parameters
    ----------
    tracking_uri : str
        The tracking server's address (``http://127.0.0.1:5000``).
    experiment : str
        The experiment's name.

    Returns
    -------
    SourceBatch
        Origin ``mlflow:URI#EXPERIMENT_ID``, read whole: a rating imported before whose assessment is
        gone (deleted, or overridden by another rater) is withdrawn.

    Raises
    ------
    MlflowError
        The server cannot be reached, or has no such experiment.

    Examples
    --------
    >>> read_mlflow_experiment("http://127.0.0.1:9", "x")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    calibrate.imports.mlflow_traces.MlflowError: cannot reach MLflow at http://127.0.0.1:9 (...
    """
    client = client or MlflowClient(tracking_uri)
    found = client.experiment(experiment)
    experiment_id = str(found["experiment_id"])
    batch = SourceBatch(kind="mlflow", origin=f"mlflow:{client.uri}#{experiment_id}",
                        source=f"{client.uri} experiment {experiment!r}", whole=True)
    for trace in client.traces(client.trace_ids(experiment_id)):
        case, skipped = _case(trace, f"{client.uri} experiment {experiment!r}")
        batch.skipped += skipped
        info = trace.get("trace_info") or {}
        ratings, skipped = _ratings(info, info.get("trace_id", ""))
        if case is None:
            batch.skipped += [Skip(r.source_id, "its trace is not a case (see the trace's own skip)") for r in ratings]
            continue
        batch.cases.append(case)
        batch.ratings += ratings
        batch.skipped += skipped
    return batch


def import_mlflow(campaign_folder: str | Path, tracking_uri: str, experiment: str, *,
                  metric_map: Mapping[str, str] | None = None, dry_run: bool = False) -> Result:
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
    >>> _ = calibrate.init_campaign(folder, ["faithfulness"])
    >>> import_mlflow(folder, "http://127.0.0.1:9", "rag")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    calibrate.imports.mlflow_traces.MlflowError: cannot reach MLflow at http://127.0.0.1:9 (...
    """
    return import_batch(campaign_folder, read_mlflow_experiment(tracking_uri, experiment), metric_map=metric_map,
                        dry_run=dry_run)
