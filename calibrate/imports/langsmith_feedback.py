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
  ``model_name``, ``evaluator``), else by the source type (``langsmith-model``); ``api`` (``create_feedback``, user feedback or an
  application's own evaluation) is imported only as the kind ``api_feedback`` says. The value is the
  ``score``, else the ``value`` read as a number or pass / fail; a correction, or feedback on a run
  inside a trace or on no run, is skipped saying why.
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
from calibrate.imports.texts import (EXPECTED_OUTPUT_NAMES, INPUT_KEYS, OUTPUT_KEYS, documents_of, id_text, problem_text,
                                     read_records, text_of)

__all__ = ["read_langsmith_export", "import_langsmith", "SOURCE_KINDS"]

#: each feedback source type, and the kind of rater it makes (api: as the user says)
SOURCE_KINDS = {"app": "human", "model": "judge", "auto_eval": "judge"}
MODEL_KEYS = ("ls_model_name", "model", "model_name", "evaluator", "evaluator_name")
ApiKind = Literal["human", "judge"]


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _output_text(outputs: Any) -> str | None:
    """A run's outputs as text: a LangChain chat model's ``generations`` first, else the usual key."""
    generations = _mapping(outputs).get("generations")
    if isinstance(generations, list) and generations:
        first = generations[0][0] if isinstance(generations[0], list) and generations[0] else generations[0]
        if isinstance(first, dict) and isinstance(first.get("text"), str):
            return first["text"]
    return text_of(outputs, OUTPUT_KEYS, chat_role=None)


def _cases(runs: list[tuple[int, Any]], examples: dict[str, Any], where: str, batch: SourceBatch) -> dict[str, str]:
    """The cases of the runs file, into ``batch``; returns root run id -> trace id."""
    by_trace: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for line, run in runs:
        if not isinstance(run, dict) or id_text(run.get("id")) is None:
            batch.skipped.append(Skip(f"{Path(where).name}#{line}", "not a LangSmith run (an object with an id)"))
            continue
        by_trace[id_text(run.get("trace_id")) or id_text(run["id"])].append(run)
    roots: dict[str, str] = {}
    for trace_id, trace in by_trace.items():
        root = next((r for r in trace if not r.get("parent_run_id")), None)
        if root is None:
            batch.skipped.append(Skip(trace_id, "a trace whose root run is not in the file"))
            continue
        if root.get("error") and not root.get("outputs"):
            batch.skipped.append(Skip(trace_id, f"the run failed ({str(root['error'])[:200]}): no output to rate"))
            continue
        record: dict[str, Any] = {"case_id": trace_id,
                                  "input": text_of(root.get("inputs"), INPUT_KEYS, chat_role="user"),
                                  "actual_output": _output_text(root.get("outputs"))}
        chunks = [text for r in sorted(trace, key=lambda r: str(r.get("start_time") or ""))
                  if r.get("run_type") == "retriever" for text in documents_of(r.get("outputs"))]
        if chunks:
            record["retrieval_context"] = chunks
        example = examples.get(id_text(root.get("reference_example_id")) or "")
        if isinstance(example, dict) and example.get("outputs") is not None:
            record["expected_output"] = text_of(example["outputs"], EXPECTED_OUTPUT_NAMES + OUTPUT_KEYS, chat_role=None)
        extra = _mapping(root.get("extra"))
        record["metadata"] = {k: v for k, v in {
            **_mapping(extra.get("metadata")), "trace_id": trace_id, "run_id": id_text(root["id"]),
            "time": root.get("start_time"), "name": root.get("name"), "tags": root.get("tags") or None,
            "project_id": str(root["session_id"]) if root.get("session_id") else None,
            "example_id": str(root["reference_example_id"]) if root.get("reference_example_id") else None}.items()
            if v is not None}
        case, problems = external_case({k: v for k, v in record.items() if v is not None}, source="deepeval",
                                       where=where)
        if case is None:
            batch.skipped.append(Skip(trace_id, problem_text(problems)))
            continue
        case["metadata"]["source"] = "langsmith"
        batch.cases.append(case)
        roots[id_text(root["id"])] = trace_id
    return roots


def _rating(feedback: dict[str, Any], roots: dict[str, str], held_runs: dict[str, str],
            api_feedback: ApiKind | None) -> ImportedRating | Skip:
    what = f"{feedback.get('id')} ({feedback.get('key')!r})"
    run_id = id_text(feedback.get("run_id"))
    if run_id is None:
        return Skip(what, "feedback on no run (a project's or an experiment's summary)")
    if run_id not in roots:
        held = held_runs.get(run_id)
        return Skip(what, "feedback on a run the runs file does not hold" if held is None else
                    "feedback on a run inside the trace, not on its root run" if held == "inner" else
                    "feedback on a root run that is no case (skipped above)")
    source = _mapping(feedback.get("feedback_source"))
    kind_name = str(source.get("type") or "")
    kind = SOURCE_KINDS.get(kind_name) or (api_feedback if kind_name == "api" else None)
    if kind is None:
        return Skip(what, "source api holds whatever an application sent (user feedback or its own evaluations): say "
                          "which with --api-feedback human or --api-feedback judge" if kind_name == "api"
                    else f"its source type {kind_name or None!r} is none of app, model, auto_eval, api")
    score = feedback.get("score")
    value = rating_value(score) if score is not None else rating_value(feedback.get("value"))
    if value is None:
        if feedback.get("correction") is not None:
            return Skip(what, "a correction of the output, not a rating")
        return Skip(what, f"its score {score!r} and value {feedback.get('value')!r} read as no number or pass / fail")
    metadata = _mapping(source.get("metadata"))
    model = next((str(metadata[k]) for k in MODEL_KEYS if isinstance(metadata.get(k), str) and metadata[k]), None)
    if kind == "human":
        rater = id_text(source.get("user_name")) or id_text(source.get("user_id")) or f"langsmith-{kind_name}"
    else:
        rater = model or f"langsmith-{kind_name}"
    facts = {"library": "langsmith", "source_type": kind_name, "model": model if kind == "judge" else None}
    comment = feedback.get("comment")
    return ImportedRating(case_id=roots[run_id], metric=str(feedback.get("key")), rater=rater, rater_kind=kind,
                          value=value, source_id=str(feedback.get("id")),
                          reason=comment if isinstance(comment, str) else None,
                          facts={k: v for k, v in facts.items() if v is not None},
                          updated=str(feedback.get("modified_at") or feedback.get("created_at") or "") or None)


def read_langsmith_export(runs: str | Path, feedback: str | Path, *, examples: str | Path | None = None,
                          api_feedback: ApiKind | None = None) -> SourceBatch:
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
        Origin ``langsmith``; files may hold part of a project, so ratings they lack stay.

    Raises
    ------
    CampaignError
        A file that is not JSON, naming the file and line.

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
    by_id = {}
    if examples is not None:
        by_id = {id_text(e["id"]): e for _, e in read_records(examples, what="LangSmith examples")
                 if isinstance(e, dict) and id_text(e.get("id")) is not None}
    run_records = read_records(runs, what="LangSmith runs")
    roots = _cases(run_records, by_id, str(runs), batch)
    held_runs = {id_text(r["id"]): "inner" if r.get("parent_run_id") else "root" for _, r in run_records
                 if isinstance(r, dict) and id_text(r.get("id")) is not None}
    for line, item in read_records(feedback, what="LangSmith feedback"):
        if not isinstance(item, dict) or item.get("key") is None:
            batch.skipped.append(Skip(f"{feedback.name}#{line}", "not LangSmith feedback (an object with a key)"))
            continue
        found = _rating(item, roots, held_runs, api_feedback)
        (batch.skipped if isinstance(found, Skip) else batch.ratings).append(found)
    return batch


def import_langsmith(campaign_folder: str | Path, runs: str | Path, feedback: str | Path, *,
                     examples: str | Path | None = None, api_feedback: ApiKind | None = None,
                     metric_map: Mapping[str, str] | None = None, rater: str | None = None,
                     dry_run: bool = False) -> Result:
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
    return import_batch(campaign_folder, read_langsmith_export(runs, feedback, examples=examples,
                                                               api_feedback=api_feedback),
                        metric_map=metric_map, rater=rater, dry_run=dry_run)
