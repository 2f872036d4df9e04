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
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from calibrate.base.results import Result
from calibrate.cases.datasets import external_case
from calibrate.imports.apply import import_batch
from calibrate.imports.records import ImportedRating, Skip, SourceBatch, rating_value
from calibrate.imports.texts import (EXPECTED_OUTPUT_NAMES, INPUT_KEYS, OUTPUT_KEYS, documents_of, parsed,
                                     id_text, problem_text, read_records, text_of)

__all__ = ["read_langfuse_export", "import_langfuse", "SOURCE_KINDS"]

#: each score source, and the kind of rater it makes (API: as the user says)
SOURCE_KINDS = {"ANNOTATION": "human", "EVAL": "judge"}
MODEL_KEYS = ("model", "judge_model", "model_name", "evaluator", "evaluator_name")
ApiKind = Literal["human", "judge"]


def _get(record: dict[str, Any], *names: str) -> Any:
    """A field by its API name (camelCase) or the SDK's (snake_case)."""
    return next((record[n] for n in names if record.get(n) is not None), None)


def _is_observation(record: dict[str, Any]) -> bool:
    return _get(record, "traceId", "trace_id") is not None and "type" in record


def _cases(records: list[tuple[int, Any]], where: str, batch: SourceBatch) -> dict[str, str]:
    """The cases of the traces file, into ``batch``; returns root observation id -> trace id."""
    traces: dict[str, dict[str, Any]] = {}
    observations: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for line, record in records:
        if not isinstance(record, dict) or id_text(record.get("id")) is None:
            batch.skipped.append(Skip(f"{Path(where).name}#{line}", "not a Langfuse trace or observation (an object "
                                                                   "with an id)"))
        elif _is_observation(record):
            trace_id = id_text(_get(record, "traceId", "trace_id"))
            if trace_id is None:
                batch.skipped.append(Skip(f"{Path(where).name}#{line}", "an observation whose traceId is no id"))
                continue
            observations[trace_id].append(record)
        else:
            traces[id_text(record["id"])] = record
    roots: dict[str, str] = {}
    for trace_id in list(dict.fromkeys([*traces, *observations])):
        spans = sorted(observations.get(trace_id, []), key=lambda o: str(_get(o, "startTime", "start_time") or ""))
        root = next((o for o in spans if _get(o, "isRootObservation", "is_root_observation") is True), None) \
            or next((o for o in spans if not _get(o, "parentObservationId", "parent_observation_id")), None)
        head = traces.get(trace_id) or root
        if head is None:
            batch.skipped.append(Skip(trace_id, "a trace whose root observation is not in the file"))
            continue
        if root is not None:
            roots[id_text(root["id"])] = trace_id
        metadata = _get(head, "metadata") if isinstance(_get(head, "metadata"), dict) else {}
        record: dict[str, Any] = {
            "case_id": trace_id,
            "input": text_of(parsed(_get(head, "input")), INPUT_KEYS, chat_role="user"),
            "actual_output": text_of(parsed(_get(head, "output")), OUTPUT_KEYS, chat_role=None)}
        chunks = [text for o in spans if str(o.get("type")).upper() == "RETRIEVER"
                  for text in documents_of(parsed(_get(o, "output")))]
        if chunks:
            record["retrieval_context"] = chunks
        expected = next((metadata[k] for k in EXPECTED_OUTPUT_NAMES if isinstance(metadata.get(k), str)), None)
        if expected:
            record["expected_output"] = expected
        record["metadata"] = {k: v for k, v in {
            **metadata, "trace_id": trace_id, "time": _get(head, "timestamp", "startTime", "start_time"),
            "name": _get(head, "name", "traceName"), "environment": _get(head, "environment"),
            "tags": _get(head, "tags") or None}.items() if v is not None}
        case, problems = external_case({k: v for k, v in record.items() if v is not None}, source="deepeval",
                                       where=where)
        if case is None:
            batch.skipped.append(Skip(trace_id, problem_text(problems)))
            continue
        case["metadata"]["source"] = "langfuse"
        batch.cases.append(case)
    return roots


def _target(score: dict[str, Any], roots: dict[str, str]) -> tuple[str | None, str | None]:
    """The trace a score rates, or why it rates none."""
    subject = score.get("subject")
    if isinstance(subject, dict):   # v3
        kind = subject.get("kind")
        if kind == "trace" and id_text(subject.get("id")):
            return id_text(subject.get("id")), None
        if kind == "observation":
            trace = roots.get(id_text(subject.get("id")) or "")
            return (trace, None) if trace else (None, "a score of an observation inside the trace, not of the trace")
        return None, f"a score of a {kind}, not of a trace" if isinstance(kind, str) else "a score whose subject is no trace"
    observation = id_text(_get(score, "observationId", "observation_id"))
    trace = id_text(_get(score, "traceId", "trace_id"))
    if observation is not None:
        return (roots[observation], None) if observation in roots else (
            None, "a score of an observation inside the trace, not of the trace")
    if trace is not None:
        return trace, None
    if _get(score, "sessionId", "session_id") is not None:
        return None, "a score of a session, not of a trace"
    if _get(score, "datasetRunId", "dataset_run_id") is not None:
        return None, "a score of a dataset run, not of a trace"
    return None, "a score without its subject (export the v3 scores with fields=subject, or the v2 scores)"


def _rating(score: dict[str, Any], roots: dict[str, str], api_scores: ApiKind | None) -> ImportedRating | Skip:
    what = f"{score.get('id')} ({score.get('name')!r})"
    trace, why = _target(score, roots)
    if trace is None:
        return Skip(what, why)
    source = str(score.get("source") or "").upper()
    kind = SOURCE_KINDS.get(source) or (api_scores if source == "API" else None)
    if kind is None:
        return Skip(what, "source API holds whatever an application sent (user feedback or its own evaluations): "
                          "say which with --api-scores human or --api-scores judge" if source == "API"
                    else f"its source {score.get('source')!r} is none of ANNOTATION, EVAL, API")
    data_type = str(_get(score, "dataType", "data_type") or "NUMERIC").upper()
    if data_type in ("TEXT", "CORRECTION"):
        return Skip(what, f"a {data_type.lower()} score, not a rating")
    value = score.get("value")
    if data_type == "CATEGORICAL":
        value = rating_value(_get(score, "stringValue", "string_value") if _get(score, "stringValue", "string_value")
                             is not None else value)
        if value is None:
            return Skip(what, f"its category {_get(score, 'stringValue', 'string_value') or score.get('value')!r} "
                              "reads as neither pass nor fail")
    else:
        value = rating_value(value)
        if value is None:
            return Skip(what, f"its value {score.get('value')!r} is not a number or a boolean")
    metadata = score.get("metadata") if isinstance(score.get("metadata"), dict) else {}
    model = next((str(metadata[k]) for k in MODEL_KEYS if isinstance(metadata.get(k), str) and metadata[k]), None)
    if kind == "human":
        rater = id_text(_get(score, "authorUserId", "author_user_id")) or f"langfuse-{source.lower()}"
    else:
        rater = model or f"langfuse-{source.lower()}"
    facts = {"library": "langfuse", "source_type": source, "model": model if kind == "judge" else None,
             "queue": _get(score, "queueId", "queue_id"), "config": _get(score, "configId", "config_id")}
    comment = score.get("comment")
    return ImportedRating(case_id=trace, metric=str(score.get("name")), rater=rater, rater_kind=kind, value=value,
                          source_id=str(score.get("id")), reason=comment if isinstance(comment, str) else None,
                          facts={k: v for k, v in facts.items() if v is not None},
                          updated=str(_get(score, "updatedAt", "updated_at", "timestamp") or "") or None)


def read_langfuse_export(traces: str | Path, scores: str | Path | None = None, *,
                         api_scores: ApiKind | None = None) -> SourceBatch:
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
        Origin ``langfuse``; files may hold part of a project, so ratings they lack stay.

    Raises
    ------
    CampaignError
        A file that is not JSON, naming the file and line.

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
    batch = SourceBatch(kind="langfuse", origin="langfuse",
                        source=str(traces) + (f" + {scores}" if scores is not None else ""))
    records = read_records(traces, what="Langfuse traces or observations")
    roots = _cases(records, str(traces), batch)
    # a trace's own scores, when the API gave its full details (ids alone are no ratings)
    embedded = [s for _, r in records if isinstance(r, dict) and not _is_observation(r)
                and isinstance(r.get("scores"), list) for s in r["scores"] if isinstance(s, dict)]
    given = [r for _, r in read_records(scores, what="Langfuse scores")] if scores is not None else []
    score_records = given + embedded
    for line, score in enumerate(score_records, 1):
        if not isinstance(score, dict) or score.get("name") is None:
            batch.skipped.append(Skip(f"score #{line}", "not a Langfuse score (an object with a name)"))
            continue
        found = _rating(score, roots, api_scores)
        (batch.skipped if isinstance(found, Skip) else batch.ratings).append(found)
    return batch


def import_langfuse(campaign_folder: str | Path, traces: str | Path, scores: str | Path | None = None, *,
                    api_scores: ApiKind | None = None, metric_map: Mapping[str, str] | None = None,
                    rater: str | None = None, dry_run: bool = False) -> Result:
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
    return import_batch(campaign_folder, read_langfuse_export(traces, scores, api_scores=api_scores),
                        metric_map=metric_map, rater=rater, dry_run=dry_run)
