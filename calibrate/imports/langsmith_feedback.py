"""LangSmith runs and feedback, as its SDK gives them and saved to files, read as cases, human ratings
and judge ratings.

No LangSmith server can run here, so calibrate reads what ``Client.list_runs`` and
``Client.list_feedback`` return, saved as JSON or JSON Lines (``run.model_dump_json()`` a line), and
optionally the dataset's examples (``Client.list_examples``) for the expected answers:

- each **root run** (no ``parent_run_id``) is a case, its id the trace id: its ``inputs`` (the usual
  key, a chat's last user message) and ``outputs`` are the input and actual output, the documents its
  ``retriever`` runs returned the retrieval context, its reference example's outputs the expected
  output, its start time ``metadata.time``; a root run that failed with no outputs is skipped;
- each **feedback** on a root run is a rating of the metric of its ``key``. Its
  ``feedback_source.type`` says who gave it: ``app`` (the LangSmith app, annotation queues) is a human
  by ``user_name`` / ``user_id``; ``model`` (an evaluator of ``evaluate()``) and ``auto_eval``
  (an online evaluator) a judge named by the source metadata's model (``ls_model_name``, ``model``,
  ``model_name``, ``evaluator``), else by the source type (``langsmith-model``); ``api``
  (``create_feedback``, user feedback or an
  application's own evaluation) is imported only as the kind ``api_feedback`` says. The value is the
  ``score``, else the ``value`` read as a number or pass / fail; a correction, or feedback on a run
  inside a trace or on no run, is skipped saying why.

The SDK's formats are declared below (:class:`Run`, :class:`Feedback`, :class:`Example`): a file that
is not JSON (or JSON Lines) is refused, naming it and the line; a record that does not fit is skipped,
with where it is and why.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import JsonValue

from calibrate.base.documents import check
from calibrate.base.results import Result
from calibrate.base.secrets import clip
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
    fits,
    problem_text,
    read_records,
    text_of,
)

__all__ = ["SOURCE_KINDS", "Example", "Feedback", "Run", "import_langsmith", "read_langsmith_export"]

#: each feedback source type, and the kind of rater it makes (api: as the user says)
SOURCE_KINDS = {"app": "human", "model": "judge", "auto_eval": "judge"}
MODEL_KEYS = ("ls_model_name", "model", "model_name", "evaluator", "evaluator_name")
ApiKind = Literal["human", "judge"]


class Run(Record):
    """A run (``Client.list_runs``): a root run (no ``parent_run_id``) is a case; its inputs and
    outputs as the application gave them."""

    id: Id
    trace_id: OptionalId = None
    parent_run_id: OptionalId = None
    run_type: str | None = None
    name: str | None = None
    inputs: JsonValue = None
    outputs: JsonValue = None
    error: str | None = None
    extra: dict[str, JsonValue] | None = None
    reference_example_id: OptionalId = None
    session_id: OptionalId = None
    start_time: str | None = None
    tags: list[str] | None = None


class FeedbackSource(Record):
    type: str | None = None
    metadata: dict[str, JsonValue] | None = None
    user_id: OptionalId = None
    user_name: str | None = None


class Feedback(Record):
    """A feedback (``Client.list_feedback``): a rating of the metric its ``key`` names."""

    id: OptionalId = None
    run_id: OptionalId = None
    key: str
    score: JsonValue = None
    value: JsonValue = None
    correction: JsonValue = None
    comment: str | None = None
    feedback_source: FeedbackSource | None = None
    modified_at: SourceTime = None
    created_at: SourceTime = None


class Example(Record):
    """A dataset example (``Client.list_examples``): its outputs are the expected output."""

    id: Id
    outputs: JsonValue = None


class _Generation(Record):
    text: str


class _Generations(Record):
    generations: list[JsonValue]


def _output_text(outputs: Any) -> str | None:
    """A run's outputs as text: a LangChain chat model's ``generations`` first, else the usual key."""
    found = fits(outputs, _Generations)
    if found is not None and found.generations:
        first = found.generations[0]
        first = first[0] if isinstance(first, list) and first else first
        generation = fits(first, _Generation)
        if generation is not None:
            return generation.text
    return text_of(outputs, OUTPUT_KEYS, chat_role=None)


def _cases(runs: list[Run], examples: dict[str, Example], where: str, batch: SourceBatch) -> dict[str, str]:
    """The cases of the runs file, into ``batch``; returns root run id -> trace id."""
    by_trace: dict[str, list[Run]] = defaultdict(list)
    for run in runs:
        by_trace[run.trace_id or run.id].append(run)
    roots: dict[str, str] = {}
    for trace_id, trace in by_trace.items():
        root = next((r for r in trace if not r.parent_run_id), None)
        if root is None:
            batch.skipped.append(Skip(trace_id, "a trace whose root run is not in the file"))
            continue
        if root.error and not root.outputs:
            batch.skipped.append(Skip(trace_id, f"the run failed ({clip(root.error, 200)}): no output to rate"))
            continue
        record: dict[str, Any] = {
            "case_id": trace_id,
            "input": text_of(root.inputs, INPUT_KEYS, chat_role="user"),
            "actual_output": _output_text(root.outputs),
        }
        chunks = [
            text
            for r in sorted(trace, key=lambda r: r.start_time or "")
            if r.run_type == "retriever"
            for text in documents_of(r.outputs)
        ]
        if chunks:
            record["retrieval_context"] = chunks
        example = examples.get(root.reference_example_id or "")
        if example is not None and example.outputs is not None:
            record["expected_output"] = text_of(example.outputs, EXPECTED_OUTPUT_NAMES + OUTPUT_KEYS, chat_role=None)
        metadata = (root.extra or {}).get("metadata")
        record["metadata"] = {
            k: v
            for k, v in {
                **(metadata if isinstance(metadata, dict) else {}),
                "trace_id": trace_id,
                "run_id": root.id,
                "time": root.start_time,
                "name": root.name,
                "tags": root.tags or None,
                "project_id": root.session_id,
                "example_id": root.reference_example_id,
            }.items()
            if v is not None
        }
        case, problems = external_case(
            {k: v for k, v in record.items() if v is not None}, source="deepeval", where=where
        )
        if case is None:
            batch.skipped.append(Skip(trace_id, problem_text(problems)))
            continue
        case["metadata"]["source"] = "langsmith"
        batch.cases.append(case)
        roots[root.id] = trace_id
    return roots


def _rating(
    feedback: Feedback,
    roots: dict[str, str],
    held_runs: dict[str, str],
    api_feedback: ApiKind | None,
    where: str = "LangSmith feedback",
) -> ImportedRating | Skip:
    what = f"{feedback.id} ({feedback.key!r})"
    run_id = feedback.run_id
    if run_id is None:
        return Skip(what, "feedback on no run (a project's or an experiment's summary)")
    if run_id not in roots:
        held = held_runs.get(run_id)
        return Skip(
            what,
            "feedback on a run the runs file does not hold"
            if held is None
            else "feedback on a run inside the trace, not on its root run"
            if held == "inner"
            else "feedback on a root run that is no case (skipped above)",
        )
    source = feedback.feedback_source or FeedbackSource()
    kind_name = source.type or ""
    kind = SOURCE_KINDS.get(kind_name) or (api_feedback if kind_name == "api" else None)
    if kind is None:
        return Skip(
            what,
            "source api holds whatever an application sent (user feedback or its own evaluations): say "
            "which with --api-feedback human or --api-feedback judge"
            if kind_name == "api"
            else f"its source type {kind_name or None!r} is none of app, model, auto_eval, api",
        )
    field = f"{where}, feedback {feedback.id}, field"
    value = (
        rating_value(feedback.score, where=f"{field} 'score'")
        if feedback.score is not None
        else rating_value(feedback.value, where=f"{field} 'value'")
    )
    if value is None:
        if feedback.correction is not None:
            return Skip(what, "a correction of the output, not a rating")
        return Skip(
            what,
            f"its score {feedback.score!r:.100} and value {feedback.value!r:.100} read as no number or pass / fail",
        )
    metadata = source.metadata or {}
    model = next((metadata[k] for k in MODEL_KEYS if isinstance(metadata.get(k), str) and metadata[k]), None)
    if kind == "human":
        rater = source.user_name or source.user_id or f"langsmith-{kind_name}"
    else:
        rater = model or f"langsmith-{kind_name}"
    facts = {"library": "langsmith", "source_type": kind_name, "model": model if kind == "judge" else None}
    return ImportedRating(
        case_id=roots[run_id],
        metric=feedback.key,
        rater=rater,
        rater_kind=kind,
        value=value,
        source_id=str(feedback.id),
        reason=feedback.comment,
        facts={k: v for k, v in facts.items() if v is not None},
        updated=feedback.modified_at or feedback.created_at or None,
    )


def _read(path: Path, schema: Any, what: str, batch: SourceBatch) -> list[Any]:
    """The records of a file that fit ``schema``; the others skipped, saying where and why."""
    found = []
    for line, item in read_records(path, what=what):
        record, problems = check(item, schema, source=str(path), line=line, expected=what)
        if record is None:
            batch.skipped.append(Skip(f"{path.name}#{line}", f"not {what}: " + problem_text(problems)))
        else:
            found.append(record)
    return found


def read_langsmith_export(
    runs: str | Path, feedback: str | Path, *, examples: str | Path | None = None, api_feedback: ApiKind | None = None
) -> SourceBatch:
    """The cases and ratings of LangSmith runs and feedback saved from its SDK (see the module docstring).

    Parameters
    ----------
    runs : str or Path
        Runs (``Client.list_runs``), as JSON or JSON Lines; the retriever runs of a trace give its context.
    feedback : str or Path
        Feedback (``Client.list_feedback``), as JSON or JSON Lines.
    examples : str or Path, optional
        The dataset's examples (``Client.list_examples``): their outputs are the expected outputs.
    api_feedback : {"human", "judge"}, optional
        What feedback of source type ``api`` is; skipped when not given.

    Returns
    -------
    SourceBatch
        Origin ``langsmith``; files may hold part of a project, so ratings they lack stay. A record that
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
    >>> _ = (tmp / "runs.jsonl").write_text(json.dumps({"id": "r1", "trace_id": "r1", "inputs": {"question": "Why?"},
    ...     "outputs": {"answer": "Because."}, "run_type": "chain"}) + "\\n")
    >>> _ = (tmp / "feedback.jsonl").write_text("\\n".join(json.dumps(f) for f in [
    ...     {"id": "f1", "run_id": "r1", "key": "correctness", "score": 1, "feedback_source": {"type": "app",
    ...      "user_name": "alice"}},
    ...     {"id": "f2", "run_id": "r1", "key": "correctness", "score": 0, "feedback_source": {"type": "model",
    ...      "metadata": {"ls_model_name": "gpt-4o"}}}]))
    >>> [(r.rater, r.rater_kind, r.value) for r in read_langsmith_export(tmp / "runs.jsonl", tmp / "feedback.jsonl").ratings]
    [('alice', 'human', 1.0), ('gpt-4o', 'judge', 0.0)]
    """
    if api_feedback not in (None, "human", "judge"):
        raise ValueError(f"api_feedback={api_feedback!r}: expected 'human' or 'judge' (or none, to skip it)")
    runs, feedback = Path(runs), Path(feedback)
    batch = SourceBatch(kind="langsmith", origin="langsmith", source=f"{runs} + {feedback}")
    by_id: dict[str, Example] = {}
    if examples is not None:
        by_id = {e.id: e for e in _read(Path(examples), Example, "a LangSmith example", batch)}
    run_records = _read(runs, Run, "a LangSmith run", batch)
    roots = _cases(run_records, by_id, str(runs), batch)
    held_runs = {r.id: "inner" if r.parent_run_id else "root" for r in run_records}
    for item in _read(feedback, Feedback, "LangSmith feedback", batch):
        found = _rating(item, roots, held_runs, api_feedback, str(feedback))
        (batch.skipped if isinstance(found, Skip) else batch.ratings).append(found)
    return batch


def import_langsmith(
    campaign_folder: str | Path,
    runs: str | Path,
    feedback: str | Path,
    *,
    examples: str | Path | None = None,
    api_feedback: ApiKind | None = None,
    metric_map: Mapping[str, str] | None = None,
    rater: str | None = None,
    dry_run: bool = False,
) -> Result:
    """The ``calibrate import langsmith`` command: LangSmith runs and feedback saved from its SDK, read by
    :func:`read_langsmith_export`, brought into the campaign by :func:`~calibrate.imports.apply.import_batch`.

    Parameters
    ----------
    campaign_folder : str or Path
    runs, feedback : str or Path
        The saved runs and feedback.
    examples : str or Path, optional
        The dataset's examples, for the expected outputs.
    api_feedback : {"human", "judge"}, optional
        What feedback of source type ``api`` is; skipped when not given.
    metric_map : mapping, optional
        Feedback key -> campaign metric, for keys that do not match the campaign's.
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
    >>> _ = calibrate.init_campaign(tmp / "c", ["correctness"])
    >>> _ = (tmp / "runs.json").write_text(json.dumps([{"id": "r1", "inputs": {"q": "q?"}, "outputs": {"output": "a."}}]))
    >>> _ = (tmp / "fb.json").write_text(json.dumps([{"id": "f1", "run_id": "r1", "key": "correctness", "score": 1,
    ...     "feedback_source": {"type": "api"}}]))
    >>> import_langsmith(tmp / "c", tmp / "runs.json", tmp / "fb.json", api_feedback="judge", rater="my-evaluator")["raters"]
    {'my-evaluator': {'kind': 'judge', 'ratings': 1, 'metrics': ['correctness'], 'model': None}}
    """
    return import_files(
        campaign_folder,
        "langsmith",
        {"runs": runs, "feedback": feedback, "examples": examples},
        lambda: read_langsmith_export(runs, feedback, examples=examples, api_feedback=api_feedback),
        options={"api_feedback": api_feedback},
        metric_map=metric_map,
        rater=rater,
        dry_run=dry_run,
    )
