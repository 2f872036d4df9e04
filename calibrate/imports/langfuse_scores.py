"""Langfuse traces and scores, as its public API gives them and saved to files, read as cases, human
ratings and judge ratings.

No Langfuse server can run here, so calibrate reads what the API returns, saved as JSON or JSON Lines
(a page a line, or a record a line):

- **traces**: observations (``GET /api/public/v2/observations``, the Python SDK's
  ``langfuse.api.observations.get_many(fields="core,basic,io,metadata,time")``), or traces
  (``GET /api/public/traces``, older SDKs' ``fetch_traces``). Each trace is a case, its id the trace
  id: its root observation's (or the trace's) ``input`` and ``output`` (Langfuse gives them as raw
  JSON text; a dict's usual key, a chat's last user message) are the input and actual output, the
  documents its ``RETRIEVER`` observations returned the retrieval context, its start time
  ``metadata.time``.
- **scores**: ``GET /api/public/v3/scores`` (``langfuse.api.scores.get_many(fields="details,subject,annotation")``)
  or the v2 scores, whose ``traceId`` names the trace; a trace's embedded ``scores`` are read too.
  Each score of a trace (or of its root observation) is a rating of the metric of its name: source
  ``ANNOTATION`` is a human rating by its ``authorUserId``, ``EVAL`` (Langfuse's LLM-as-a-judge
  evaluators) a judge rating named by its metadata's model (``model``, ``judge_model``,
  ``evaluator``), else ``langfuse-eval``. Source ``API`` holds whatever an application sent (user
  feedback, or its own evaluations), so it is imported only as the kind ``api_scores`` says. The
  value is the number, the boolean, or a category that reads as pass / fail; text and correction
  scores, and scores of sessions, experiments or inner observations, are skipped saying why.

The API's formats are declared below (:class:`Observation`, :class:`LangfuseScore`), each field by
its API name (camelCase) or the SDK's (snake_case): a file that is not JSON (or JSON Lines) is refused,
naming it and the line; a record that does not fit is skipped, with where it is and why.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import AliasChoices, Field, JsonValue

from calibrate.base.documents import check
from calibrate.base.results import Result
from calibrate.base.times import SourceTime
from calibrate.cases.datasets import external_case
from calibrate.imports.apply import import_files
from calibrate.imports.records import ImportedRating, Skip, SourceBatch, rating_value
from calibrate.imports.texts import (
    EXPECTED_OUTPUT_NAMES,
    INPUT_KEYS,
    OUTPUT_KEYS,
    Id,
    OptionalId,
    Record,
    documents_of,
    parsed,
    problem_text,
    read_records,
    text_of,
)

__all__ = ["SOURCE_KINDS", "LangfuseScore", "Observation", "import_langfuse", "read_langfuse_export"]

#: each score source, and the kind of rater it makes (API: as the user says)
SOURCE_KINDS = {"ANNOTATION": "human", "EVAL": "judge"}
MODEL_KEYS = ("model", "judge_model", "model_name", "evaluator", "evaluator_name")
ApiKind = Literal["human", "judge"]


def _named(*names: str) -> Any:
    """A field read by its API name or the SDK's."""
    return Field(None, validation_alias=AliasChoices(*names))


class Observation(Record):
    """A trace (``/api/public/traces``), or an observation of one (the v2 observations API: it has a
    ``traceId`` and a ``type``); input and output as the application gave them (often JSON text)."""

    id: Id
    trace_id: OptionalId = _named("traceId", "trace_id")
    type: str | None = None
    parent_observation_id: OptionalId = _named("parentObservationId", "parent_observation_id")
    is_root_observation: bool | None = _named("isRootObservation", "is_root_observation")
    start_time: str | None = _named("startTime", "start_time")
    timestamp: str | None = None
    input: JsonValue = None
    output: JsonValue = None
    metadata: JsonValue = None
    name: str | None = _named("name", "traceName")
    environment: str | None = None
    tags: list[str] | None = None
    scores: list[JsonValue] | None = None

    @property
    def is_observation(self) -> bool:
        return self.trace_id is not None and "type" in self.model_fields_set


class ScoreSubject(Record):
    kind: str | None = None
    id: OptionalId = None


class LangfuseScore(Record):
    """A score (the v3 API, with its ``subject``, or the v2 API, with ``traceId``)."""

    id: OptionalId = None
    name: str
    subject: ScoreSubject | None = None
    trace_id: OptionalId = _named("traceId", "trace_id")
    observation_id: OptionalId = _named("observationId", "observation_id")
    session_id: OptionalId = _named("sessionId", "session_id")
    dataset_run_id: OptionalId = _named("datasetRunId", "dataset_run_id")
    source: str | None = None
    data_type: str | None = _named("dataType", "data_type")
    value: JsonValue = None
    string_value: str | None = _named("stringValue", "string_value")
    author_user_id: OptionalId = _named("authorUserId", "author_user_id")
    metadata: JsonValue = None
    comment: str | None = None
    queue_id: OptionalId = _named("queueId", "queue_id")
    config_id: OptionalId = _named("configId", "config_id")
    updated_at: SourceTime = _named("updatedAt", "updated_at")
    timestamp: SourceTime = None


def _cases(records: list[tuple[int, Any]], where: str, batch: SourceBatch) -> tuple[dict[str, str], list[Observation]]:
    """The cases of the traces file, into ``batch``; returns root observation id -> trace id, and the
    traces read."""
    traces: dict[str, Observation] = {}
    observations: dict[str, list[Observation]] = defaultdict(list)
    for line, item in records:
        record, problems = check(item, Observation, source=where, line=line, expected="a Langfuse trace or observation")
        if record is None:
            batch.skipped.append(
                Skip(f"{Path(where).name}#{line}", "not a Langfuse trace or observation: " + problem_text(problems))
            )
        elif record.is_observation:
            observations[record.trace_id].append(record)
        else:
            traces[record.id] = record
    roots: dict[str, str] = {}
    for trace_id in list(dict.fromkeys([*traces, *observations])):
        spans = sorted(observations.get(trace_id, []), key=lambda o: o.start_time or "")
        root = next((o for o in spans if o.is_root_observation is True), None) or next(
            (o for o in spans if not o.parent_observation_id), None
        )
        head = traces.get(trace_id) or root
        if head is None:
            batch.skipped.append(Skip(trace_id, "a trace whose root observation is not in the file"))
            continue
        if root is not None:
            roots[root.id] = trace_id
        metadata = head.metadata if isinstance(head.metadata, dict) else {}
        record: dict[str, Any] = {
            "case_id": trace_id,
            "input": text_of(parsed(head.input), INPUT_KEYS, chat_role="user"),
            "actual_output": text_of(parsed(head.output), OUTPUT_KEYS, chat_role=None),
        }
        chunks = [text for o in spans if str(o.type).upper() == "RETRIEVER" for text in documents_of(parsed(o.output))]
        if chunks:
            record["retrieval_context"] = chunks
        expected = next((metadata[k] for k in EXPECTED_OUTPUT_NAMES if isinstance(metadata.get(k), str)), None)
        if expected:
            record["expected_output"] = expected
        record["metadata"] = {
            k: v
            for k, v in {
                **metadata,
                "trace_id": trace_id,
                "time": head.timestamp or head.start_time,
                "name": head.name,
                "environment": head.environment,
                "tags": head.tags or None,
            }.items()
            if v is not None
        }
        case, problems = external_case(
            {k: v for k, v in record.items() if v is not None}, source="deepeval", where=where
        )
        if case is None:
            batch.skipped.append(Skip(trace_id, problem_text(problems)))
            continue
        case["metadata"]["source"] = "langfuse"
        batch.cases.append(case)
    return roots, list(traces.values())


def _target(score: LangfuseScore, roots: dict[str, str]) -> tuple[str | None, str | None]:
    """The trace a score rates, or why it rates none."""
    subject = score.subject
    if subject is not None:  # v3
        if subject.kind == "trace" and subject.id:
            return subject.id, None
        if subject.kind == "observation":
            trace = roots.get(subject.id or "")
            return (trace, None) if trace else (None, "a score of an observation inside the trace, not of the trace")
        return None, (
            f"a score of a {subject.kind}, not of a trace"
            if subject.kind is not None
            else "a score whose subject is no trace"
        )
    if score.observation_id is not None:
        return (
            (roots[score.observation_id], None)
            if score.observation_id in roots
            else (None, "a score of an observation inside the trace, not of the trace")
        )
    if score.trace_id is not None:
        return score.trace_id, None
    if score.session_id is not None:
        return None, "a score of a session, not of a trace"
    if score.dataset_run_id is not None:
        return None, "a score of a dataset run, not of a trace"
    return None, "a score without its subject (export the v3 scores with fields=subject, or the v2 scores)"


def _rating(
    score: LangfuseScore, roots: dict[str, str], api_scores: ApiKind | None, where: str = "Langfuse scores"
) -> ImportedRating | Skip:
    what = f"{score.id} ({score.name!r})"
    field = f"{where}, score {score.id}, field"
    trace, why = _target(score, roots)
    if trace is None:
        return Skip(what, why)
    source = (score.source or "").upper()
    kind = SOURCE_KINDS.get(source) or (api_scores if source == "API" else None)
    if kind is None:
        return Skip(
            what,
            "source API holds whatever an application sent (user feedback or its own evaluations): "
            "say which with --api-scores human or --api-scores judge"
            if source == "API"
            else f"its source {score.source!r} is none of ANNOTATION, EVAL, API",
        )
    data_type = (score.data_type or "NUMERIC").upper()
    if data_type in ("TEXT", "CORRECTION"):
        return Skip(what, f"a {data_type.lower()} score, not a rating")
    if data_type == "CATEGORICAL":
        value = (
            rating_value(score.string_value, where=f"{field} 'stringValue'")
            if score.string_value is not None
            else rating_value(score.value, where=f"{field} 'value'")
        )
        if value is None:
            return Skip(what, f"its category {score.string_value or score.value!r:.200} reads as neither pass nor fail")
    else:
        value = rating_value(score.value, where=f"{field} 'value'")
        if value is None:
            return Skip(what, f"its value {score.value!r:.200} is not a number or a boolean")
    metadata = score.metadata if isinstance(score.metadata, dict) else {}
    model = next((metadata[k] for k in MODEL_KEYS if isinstance(metadata.get(k), str) and metadata[k]), None)
    if kind == "human":
        rater = score.author_user_id or f"langfuse-{source.lower()}"
    else:
        rater = model or f"langfuse-{source.lower()}"
    facts = {
        "library": "langfuse",
        "source_type": source,
        "model": model if kind == "judge" else None,
        "queue": score.queue_id,
        "config": score.config_id,
    }
    return ImportedRating(
        case_id=trace,
        metric=score.name,
        rater=rater,
        rater_kind=kind,
        value=value,
        source_id=str(score.id),
        reason=score.comment,
        facts={k: v for k, v in facts.items() if v is not None},
        updated=score.updated_at or score.timestamp or None,
    )


def read_langfuse_export(
    traces: str | Path, scores: str | Path | None = None, *, api_scores: ApiKind | None = None
) -> SourceBatch:
    """The cases and ratings of Langfuse traces and scores saved from its API (see the module docstring).

    Parameters
    ----------
    traces : str or Path
        Observations (v2 API) or traces, as JSON or JSON Lines.
    scores : str or Path, optional
        Scores (v3 or v2 API), as JSON or JSON Lines; without it, the scores the traces embed.
    api_scores : {"human", "judge"}, optional
        What the scores of source ``API`` are; skipped when not given.

    Returns
    -------
    SourceBatch
        Origin ``langfuse``; files may hold part of a project, so ratings they lack stay. A record that
        does not fit its format is skipped, saying where and why.

    Raises
    ------
    DocumentError
        A file that is not JSON or JSON Lines (or too large, or nested too deep), naming the file and
        line.

    Examples
    --------
    >>> import json, tempfile, pathlib
    >>> tmp = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (tmp / "traces.json").write_text(json.dumps({"data": [{"id": "t1", "input": '{"question": "Why?"}',
    ...     "output": "Because.", "timestamp": "2026-11-30T10:00:00Z"}]}))
    >>> _ = (tmp / "scores.json").write_text(json.dumps({"data": [
    ...     {"id": "s1", "traceId": "t1", "name": "correctness", "value": 1, "dataType": "NUMERIC",
    ...      "source": "ANNOTATION", "authorUserId": "u-alice"},
    ...     {"id": "s2", "subject": {"kind": "trace", "id": "t1"}, "name": "correctness", "value": False,
    ...      "dataType": "BOOLEAN", "source": "EVAL", "metadata": {"model": "gpt-4o"}}]}))
    >>> batch = read_langfuse_export(tmp / "traces.json", tmp / "scores.json")
    >>> batch.cases[0]["input"], [(r.rater, r.rater_kind, r.value) for r in batch.ratings]
    ('Why?', [('u-alice', 'human', 1.0), ('gpt-4o', 'judge', 0.0)])
    """
    if api_scores not in (None, "human", "judge"):
        raise ValueError(f"api_scores={api_scores!r}: expected 'human' or 'judge' (or none, to skip them)")
    traces = Path(traces)
    batch = SourceBatch(
        kind="langfuse", origin="langfuse", source=str(traces) + (f" + {scores}" if scores is not None else "")
    )
    roots, heads = _cases(read_records(traces, what="Langfuse traces or observations"), str(traces), batch)
    # a trace's own scores, when the API gave its full details (ids alone are no ratings)
    embedded = [(str(traces), s) for head in heads for s in head.scores or [] if isinstance(s, dict)]
    given = [(str(scores), r) for _, r in read_records(scores, what="Langfuse scores")] if scores is not None else []
    for line, (where, item) in enumerate(given + embedded, 1):
        score, problems = check(item, LangfuseScore, source=where, expected="a Langfuse score")
        if score is None:
            batch.skipped.append(
                Skip(f"{Path(where).name} score #{line}", "not a Langfuse score: " + problem_text(problems))
            )
            continue
        found = _rating(score, roots, api_scores, where)
        (batch.skipped if isinstance(found, Skip) else batch.ratings).append(found)
    return batch


def import_langfuse(
    campaign_folder: str | Path,
    traces: str | Path,
    scores: str | Path | None = None,
    *,
    api_scores: ApiKind | None = None,
    metric_map: Mapping[str, str] | None = None,
    rater: str | None = None,
    dry_run: bool = False,
) -> Result:
    """The ``calibrate import langfuse`` command: Langfuse traces and scores saved from its API, read by
    :func:`read_langfuse_export`, brought into the campaign by :func:`~calibrate.imports.apply.import_batch`.

    Parameters
    ----------
    campaign_folder : str or Path
    traces, scores : str or Path
        The saved observations (or traces) and scores.
    api_scores : {"human", "judge"}, optional
        What the scores of source ``API`` are; skipped when not given.
    metric_map : mapping, optional
        Score name -> campaign metric, for names that do not match the campaign's.
    rater : str, optional
        The judge's name in the campaign, for files of one judge.
    dry_run : bool
        Say what the import would do; write nothing.

    Returns
    -------
    Result
        As :func:`~calibrate.imports.apply.import_batch` returns it.

    Examples
    --------
    >>> import json, tempfile, pathlib, calibrate
    >>> tmp = pathlib.Path(tempfile.mkdtemp())
    >>> _ = calibrate.init_campaign(tmp / "c", ["helpfulness"])
    >>> _ = (tmp / "t.jsonl").write_text(json.dumps({"id": "t1", "input": "q?", "output": "a."}) + "\\n")
    >>> _ = (tmp / "s.jsonl").write_text(json.dumps({"id": "s1", "traceId": "t1", "name": "helpfulness",
    ...     "value": 0.0, "source": "API"}) + "\\n")
    >>> import_langfuse(tmp / "c", tmp / "t.jsonl", tmp / "s.jsonl", api_scores="human")["by_metric"]
    {'helpfulness': {'human': 1, 'judge': 0}}
    """
    return import_files(
        campaign_folder,
        "langfuse",
        {"traces": traces, "scores": scores},
        lambda: read_langfuse_export(traces, scores, api_scores=api_scores),
        options={"api_scores": api_scores},
        metric_map=metric_map,
        rater=rater,
        dry_run=dry_run,
    )
