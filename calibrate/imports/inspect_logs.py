"""An Inspect AI eval log (``.eval`` or ``.json``, as ``inspect eval`` writes it) read as cases, judge
ratings, and the human ratings its score edits hold.

Each sample (and epoch) is a case: its ``input`` (a string, or the last user message of a chat) is the
input, its output's completion the actual output, its ``target`` the expected output, the retrieved
context the sample metadata key named by ``context_key`` (else ``retrieval_context``, ``contexts``,
``context``, ...); the rest of the sample metadata, the sample id and epoch, the task and the eval id
are kept in the case's metadata. Each score is a rating of the metric of its scorer's name (a
dict-valued score gives one rating per key):

- the scorer's own value is a judge rating: by the grader model its options name (``model``, or the
  ``model_role`` the eval's ``model_roles`` give), else the model that answered in the score's grading
  transcript; a scorer with no model (``includes``, ``match``, ...) is a judge by code, named
  ``inspect:SCORER``. Inspect's values read as numbers: ``C`` 1, ``I`` 0, ``P`` 0.5, ``N`` 0, and
  ``yes`` / ``no``, ``true`` / ``false``. An unscored value (NaN) is a failed rating when the grader
  or scorer failed, and skipped when Inspect blames the model under test (a refusal, no response);
- an edit of the score (``inspect_ai.log.edit_score``, or the log viewer) made by someone is a human
  rating by the edit's ``provenance.author``, their latest edit kept.

A ``.eval`` log is a ZIP archive whose entries Inspect compresses with Zstandard; reading one needs
the ``zstandard`` package (``pip install 'calibrate-judges[imports]'``). A ``.json`` log needs nothing.
 A
``.eval`` archive is read within limits (:class:`~calibrate.imports.archives.BoundedZip`: a ZIP or
Zstandard bomb, a damaged entry, an absurd size are refused naming the file and the entry).

The log's format is declared below (:class:`EvalLog`, :class:`Sample`, :class:`Score`, ...): a log
whose eval spec does not fit is refused, naming the field; a sample, score or score edit that does not
fit is skipped, with where it is and why.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import JsonValue

from calibrate.base.documents import DocumentError, check, parse_json, read_bytes
from calibrate.base.errors import Problem
from calibrate.base.results import Result
from calibrate.base.secrets import clip
from calibrate.base.times import SourceTime
from calibrate.cases.datasets import content_id, external_case
from calibrate.imports.apply import import_files
from calibrate.imports.archives import BoundedZip
from calibrate.imports.records import ImportedRating, Skip, SourceBatch, rating_value
from calibrate.imports.texts import (
    CONTEXT_KEYS,
    OptionalId,
    Record,
    documents_of,
    fits,
    problem_text,
    text_of,
)

__all__ = [
    "EvalLog",
    "EvalSpec",
    "Sample",
    "Score",
    "ScoreEdit",
    "import_inspect",
    "inspect_value",
    "read_inspect_log",
]

#: Inspect's letter grades, as its ``value_to_float`` reads them
GRADES = {"C": 1.0, "I": 0.0, "P": 0.5, "N": 0.0}
#: unscored reasons Inspect puts on the model under test, not on the grader: skipped, not failures
UNDER_TEST = {"invalid_response_format", "refusal", "no_response"}
EXPECTED = "an Inspect AI eval log: a .eval archive or a .json log, as inspect eval writes it"
UNCHANGED = "UNCHANGED"


# ------------------------------------------------------------------------------------ the format
class Scorer(Record):
    """A scorer of the eval spec: its name and options (a grader ``model``, or a ``model_role``)."""

    name: str
    options: dict[str, JsonValue] | None = None


class EvalSpec(Record):
    """The eval spec (``eval``): what ran, and its scorers (each read on its own)."""

    task: str | None = None
    eval_id: str | None = None
    model: str | None = None
    model_roles: dict[str, JsonValue] | None = None
    scorers: list[JsonValue] | None = None


class EvalLog(Record):
    """A log's header (``header.json`` of a ``.eval`` archive, or the ``.json`` log with its samples)."""

    eval: EvalSpec
    status: str | None = None
    samples: list[JsonValue] | None = None


class Output(Record):
    completion: str | None = None


class Sample(Record):
    """One sample of one epoch: its input (a string or chat messages), target, output and scores (each
    score read on its own)."""

    id: OptionalId = None
    epoch: int | None = None
    input: JsonValue = None
    target: str | list[str] | None = None
    metadata: dict[str, JsonValue] | None = None
    output: Output | None = None
    error: JsonValue = None
    scores: dict[str, JsonValue] | None = None


class Provenance(Record):
    author: str | None = None
    reason: str | None = None
    timestamp: SourceTime = None


class ScoreEdit(Record):
    """An edit of a score (``history``): by someone (``provenance``), or the scorer's own value."""

    value: JsonValue = UNCHANGED
    provenance: Provenance | None = None


class Score(Record):
    """A score: its value (a letter, a number, a boolean, or a dict of them), explanation, and the
    edits made to it (each read on its own)."""

    value: JsonValue = None
    explanation: str | None = None
    reason: str | None = None
    metadata: dict[str, JsonValue] | None = None
    history: list[JsonValue] | None = None


class _Error(Record):
    message: str


class _Message(Record):
    role: JsonValue = None
    model: JsonValue = None
    content: JsonValue = None


class _ModelConfig(Record):
    model: JsonValue = None


class _TextPart(Record):
    text: str


def inspect_value(value: Any, *, where: str = "a score's value") -> float | None:
    """A score value as Inspect's ``value_to_float`` reads it; None for NaN (unscored) and for anything
    that is not a scalar.

    >>> inspect_value("C"), inspect_value("P"), inspect_value("yes"), inspect_value(0.25), inspect_value(True)
    (1.0, 0.5, 1.0, 0.25, 1.0)
    >>> inspect_value(float("nan")) is None, inspect_value(["C"]) is None
    (True, True)
    """
    if isinstance(value, str) and value.strip().upper() in GRADES:
        return GRADES[value.strip().upper()]
    return rating_value(value, where=where)


# ------------------------------------------------------------------------------------ reading
def _load(path: Path) -> tuple[EvalLog, list[tuple[str, Any]]]:
    """The log's header and its samples (JSON values, each with its place in the file)."""
    if path.suffix == ".eval":
        with BoundedZip(path, expected=EXPECTED) as archive:
            names = archive.names
            entry = next((n for n in ("header.json", "_journal/start.json") if n in names), None)  # or still written
            if entry is None:
                raise DocumentError(
                    [Problem(str(path), "a ZIP archive without header.json", expected=EXPECTED)], source=str(path)
                )
            header = parse_json(archive.read(entry), EvalLog, source=f"{path} (entry {entry})", expected=EXPECTED)
            samples = []
            for name in names:
                if name.startswith("samples/") and name.endswith(".json"):
                    samples.append(
                        (
                            name,
                            parse_json(
                                archive.read(name),
                                JsonValue,
                                source=f"{path} (entry {name})",
                                expected="an Inspect sample",
                            ),
                        )
                    )
        return header, samples
    data = read_bytes(path, expected=EXPECTED)
    header = parse_json(data, EvalLog, source=str(path), expected=EXPECTED)
    return header, [(f"samples[{i}]", s) for i, s in enumerate(header.samples or [])]


def _model_name(value: Any) -> str | None:
    """A model as a scorer's options record it: ``"openai/gpt-4o"``, ``{"model": ...}``, or a list (the
    first)."""
    if isinstance(value, list):
        return _model_name(value[0]) if value else None
    config = fits(value, _ModelConfig)
    if config is not None:
        return _model_name(config.model)
    return value if isinstance(value, str) and value else None


def _graders(spec: EvalSpec) -> dict[str, tuple[str, str | None]]:
    """Each score name in the samples -> (its scorer's name, the grader model its options name): the
    scorers in order, named as Inspect's ``unique_scorer_name`` names them."""
    roles = spec.model_roles or {}
    found: dict[str, tuple[str, str | None]] = {}
    for item in spec.scorers or []:
        scorer = fits(item, Scorer)
        if scorer is None:
            continue
        base = scorer.name.rsplit("/", 1)[-1]
        name, count = base, 1
        while name in found:
            name, count = f"{base}{count}", count + 1
        options = scorer.options or {}
        model = _model_name(options.get("model"))
        role = options.get("model_role")
        if model is None and isinstance(role, str):
            model = _model_name(roles.get(role))
        found[name] = (base, model)
    return found


def _transcript_model(score: Score) -> str | None:
    """The model that answered in a model-graded score's grading transcript (``metadata.grading``)."""
    grading = (score.metadata or {}).get("grading")
    if isinstance(grading, list):
        said = [m.model for m in (fits(g, _Message) for g in grading) if m is not None and m.role == "assistant"]
        if said and isinstance(said[-1], str) and said[-1]:
            return said[-1]
    return None


def _message_text(value: Any) -> Any:
    """A chat input with content parts (``[{"type": "text", "text": ...}]``) as messages of plain text."""
    if not isinstance(value, list):
        return value
    messages = []
    for item in value:
        message = fits(item, _Message)
        if message is not None and isinstance(message.content, list):
            texts = [part.text for part in (fits(p, _TextPart) for p in message.content) if part is not None]
            item = {"role": message.role, "content": "\n".join(texts)}
        messages.append(item)
    return messages


def _case(sample: Sample, spec: EvalSpec, where: str, context_key: str | None) -> tuple[dict | None, str | None]:
    if sample.error:
        error = fits(sample.error, _Error)
        return None, (
            f"the sample failed in Inspect ({clip(error.message if error else sample.error, 200)}): no output to rate"
        )
    metadata = dict(sample.metadata or {})
    target = sample.target
    record: dict[str, Any] = {
        "input": text_of(_message_text(sample.input), (), chat_role="user"),
        "actual_output": sample.output.completion if sample.output is not None else None,
        "expected_output": "\n".join(target) if isinstance(target, list) else target or None,
    }
    key = context_key if context_key else next((k for k in CONTEXT_KEYS if k in metadata), None)
    if key is not None and key in metadata:
        context = metadata.pop(key)
        record["retrieval_context"] = [context] if isinstance(context, str) else documents_of(context)
    record["metadata"] = {
        k: v
        for k, v in {
            **metadata,
            "sample_id": sample.id,
            "epoch": sample.epoch,
            "task": spec.task,
            "eval_id": spec.eval_id,
            "model": spec.model,
        }.items()
        if v is not None
    }
    record["metadata"].pop("case_id", None)
    case, problems = external_case({k: v for k, v in record.items() if v is not None}, source="deepeval", where=where)
    if case is None:
        return None, problem_text(problems)
    return case, None


def _edits(history: list[Any], source_id: str, path: str, skipped: list[Skip]) -> list[tuple[int, ScoreEdit]]:
    """The score's edits that fit their format, each with its place; the others skipped."""
    edits = []
    for i, item in enumerate(history):
        edit, problems = check(item, ScoreEdit, source=path, expected="an Inspect score edit")
        if edit is None:
            skipped.append(Skip(f"{source_id}/edit{i}", "not an Inspect score edit: " + problem_text(problems)))
        else:
            edits.append((i, edit))
    return edits


def _edit_ratings(
    history: list[tuple[int, ScoreEdit]], base: str, case_id: str, source_id: str, path: str
) -> tuple[list[ImportedRating], list[Skip]]:
    """The human ratings of a score's edits (each by its author), and the edits skipped with why."""
    ratings: list[ImportedRating] = []
    skipped: list[Skip] = []
    for i, edit in history:
        if edit.provenance is None:
            continue
        author = edit.provenance.author
        what = f"{source_id}/edit{i}"
        if not author or not author.strip():
            skipped.append(Skip(what, "a score edit without an author"))
            continue
        if edit.value == UNCHANGED:
            skipped.append(Skip(what, "a score edit that changed no value (an explanation or metadata)"))
            continue
        edited = edit.value if isinstance(edit.value, dict) else {None: edit.value}
        for key, item in edited.items():
            number = inspect_value(item, where=f"{path}, score edit {what}, field 'value'")
            metric = base if key is None else str(key)
            if number is None:
                skipped.append(Skip(what, f"its value {item!r:.200} reads as no number"))
                continue
            ratings.append(
                ImportedRating(
                    case_id=case_id,
                    metric=metric,
                    rater=author.strip(),
                    rater_kind="human",
                    value=number,
                    source_id=f"{what}" + ("" if key is None else f"/{key}"),
                    reason=edit.provenance.reason,
                    facts={"library": "inspect_ai", "scorer": base, "source_type": "HUMAN"},
                    updated=edit.provenance.timestamp,
                )
            )
    return ratings, skipped


def _ratings(
    name: str, score: Score, case_id: str, source_id: str, graders: dict[str, tuple[str, str | None]], path: str
) -> tuple[list[ImportedRating], list[Skip]]:
    base, model = graders.get(name, (name, None))
    model = model or _transcript_model(score)
    rater = model or f"inspect:{base}"
    facts = {"library": "inspect_ai", "scorer": base, "model": model, "source_type": "LLM" if model else "CODE"}
    facts = {k: v for k, v in facts.items() if v is not None}
    ratings: list[ImportedRating] = []
    skipped: list[Skip] = []
    history = _edits(score.history or [], source_id, path, skipped)
    original = next((edit for _, edit in history if edit.provenance is None), None)
    value = original.value if original is not None and original.value != UNCHANGED else score.value
    unscored_reason = (score.metadata or {}).get("unscored_reason")
    reason = score.reason or (unscored_reason if isinstance(unscored_reason, str) else None)
    values = value if isinstance(value, dict) else {None: value}
    for key, item in values.items():
        metric, where = (base, source_id) if key is None else (str(key), f"{source_id}/{key}")
        number = inspect_value(item, where=f"{path}, score {where}, field 'value'")
        unscored = isinstance(item, float) and math.isnan(item)
        if unscored and reason in UNDER_TEST:
            skipped.append(
                Skip(
                    where, f"unscored by {base}: {reason} (Inspect puts it on the model under test, not on the grader)"
                )
            )
        elif unscored:
            ratings.append(
                ImportedRating(
                    case_id=case_id,
                    metric=metric,
                    rater=rater,
                    rater_kind="judge",
                    value=None,
                    error=f"unscored: {reason or 'the scorer gave no value'}"
                    + (f" ({clip(score.explanation, 300)})" if score.explanation else ""),
                    source_id=where,
                    facts=facts,
                )
            )
        elif number is None:
            skipped.append(
                Skip(where, f"its value {item!r:.200} reads as no number (C / I / P / N, yes / no, a number)")
            )
        else:
            ratings.append(
                ImportedRating(
                    case_id=case_id,
                    metric=metric,
                    rater=rater,
                    rater_kind="judge",
                    value=number,
                    reason=score.explanation,
                    source_id=where,
                    facts=facts,
                )
            )
    edited_ratings, edited_skipped = _edit_ratings(history, base, case_id, source_id, path)
    return ratings + edited_ratings, skipped + edited_skipped


def read_inspect_log(path: str | Path, *, context_key: str | None = None) -> SourceBatch:
    """The cases and ratings of an Inspect AI eval log (see the module docstring).

    Parameters
    ----------
    path : str or Path
        A ``.eval`` log (needs ``zstandard``) or a ``.json`` log.
    context_key : str, optional
        The sample metadata key holding the retrieved context (a string or a list of chunks); by default
        the first of ``retrieval_context``, ``retrieved_contexts``, ``contexts``, ``context``, ``documents``.

    Returns
    -------
    SourceBatch
        Origin ``inspect``: a later log's score of the same case by the same grader is a new revision.
        A case's id is its sample's ``metadata.case_id`` when the log holds that sample once, else a
        hash of its content (sample ids repeat across tasks and epochs). A sample, score or edit that
        does not fit its format is skipped, saying where and why.

    Raises
    ------
    DocumentError
        A file that is not an Inspect log (not JSON, no eval spec, an eval spec of the wrong shape), a
        damaged archive or entry, or one larger than the limits, named with the problem.

    Examples
    --------
    >>> import json, tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "log.json"
    >>> log = {"eval": {"task": "qa", "eval_id": "e1", "scorers": [{"name": "model_graded_qa",
    ...        "options": {"model": "openai/gpt-4o"}}]}, "samples": [{"id": 1, "epoch": 1, "input": "q?",
    ...        "target": "a", "output": {"completion": "a."}, "scores": {"model_graded_qa": {"value": "C",
    ...        "history": [{"value": "C"}, {"value": "I", "provenance": {"author": "alice"}}]}}}]}
    >>> _ = path.write_text(json.dumps(log))
    >>> [(r.metric, r.rater, r.rater_kind, r.value) for r in read_inspect_log(path).ratings]
    [('model_graded_qa', 'openai/gpt-4o', 'judge', 1.0), ('model_graded_qa', 'alice', 'human', 0.0)]
    """
    path = Path(path)
    header, items = _load(path)
    spec = header.eval
    graders = _graders(spec)
    eval_id = spec.eval_id or path.stem
    batch = SourceBatch(kind="inspect", origin="inspect", source=str(path))
    if header.status not in (None, "success"):
        batch.skipped.append(
            Skip(
                f"{eval_id} (status {header.status!r})", "the eval did not finish: its samples are imported as they are"
            )
        )
    samples: list[tuple[str, Sample]] = []
    for place, item in items:
        sample, problems = check(item, Sample, source=str(path), expected="an Inspect sample")
        if sample is None:
            batch.skipped.append(Skip(f"{eval_id}#{place}", "not an Inspect sample: " + problem_text(problems)))
        else:
            samples.append((place, sample))
    seen: dict[Any, int] = {}
    for _, sample in samples:
        own = (sample.metadata or {}).get("case_id")
        key = own if isinstance(own, (str, int)) and not isinstance(own, bool) else None
        seen[key] = seen.get(key, 0) + 1
    for _place, sample in samples:
        label = f"{eval_id}#{sample.id}/epoch{sample.epoch if sample.epoch is not None else 1}"
        case, why = _case(sample, spec, str(path), context_key)
        if case is None:
            batch.skipped.append(Skip(label, why))
            continue
        own = (sample.metadata or {}).get("case_id")
        usable = isinstance(own, (str, int)) and not isinstance(own, bool) and str(own) and seen.get(own) == 1
        case["case_id"] = str(own) if usable else content_id(case)
        case["metadata"] = {**case["metadata"], "source": f"inspect:{eval_id}"}
        batch.cases.append(case)
        for name, item in (sample.scores or {}).items():
            score, problems = check(item, Score, source=str(path), expected="an Inspect score")
            if score is None:
                batch.skipped.append(Skip(f"{label}/{name}", "not an Inspect score: " + problem_text(problems)))
                continue
            ratings, skipped = _ratings(str(name), score, case["case_id"], f"{label}/{name}", graders, str(path))
            batch.ratings += ratings
            batch.skipped += skipped
    return batch


def import_inspect(
    campaign_folder: str | Path,
    path: str | Path,
    *,
    context_key: str | None = None,
    metric_map: Mapping[str, str] | None = None,
    rater: str | None = None,
    dry_run: bool = False,
) -> Result:
    """The ``calibrate import inspect`` command: an Inspect AI eval log read by :func:`read_inspect_log`,
    brought into the campaign by :func:`~calibrate.imports.apply.import_batch`.

    Parameters
    ----------
    campaign_folder : str or Path
    path : str or Path
        The eval log (``.eval`` or ``.json``).
    context_key : str, optional
        The sample metadata key holding the retrieved context.
    metric_map : mapping, optional
        Scorer name -> campaign metric (``{"model_graded_qa": "correctness"}``).
    rater : str, optional
        The judge's name in the campaign, for a log of one grader (refused when a person who edited a
        score has that name).
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
    >>> log = {"eval": {"scorers": [{"name": "model_graded_qa", "options": {"model": "openai/gpt-4o"}}]},
    ...        "samples": [{"id": 1, "input": "q?", "output": {"completion": "a."},
    ...                     "scores": {"model_graded_qa": {"value": "I"}}}]}
    >>> _ = (tmp / "log.json").write_text(json.dumps(log))
    >>> import_inspect(tmp / "c", tmp / "log.json", metric_map={"model_graded_qa": "correctness"})["by_metric"]
    {'correctness': {'human': 0, 'judge': 1}}
    """
    return import_files(
        campaign_folder,
        "inspect",
        {"log": path},
        lambda: read_inspect_log(path, context_key=context_key),
        options={"context_key": context_key},
        metric_map=metric_map,
        rater=rater,
        dry_run=dry_run,
    )
