"""Human labels out of Label Studio's JSON export, checked against the campaign's interface.

The same reader serves a pull through the API and an export file a user downloaded: both are Label
Studio's JSON export (a list of tasks, each with its ``data``, ``annotations`` and ``drafts``),
declared below (:class:`Task`, :class:`Annotation`, :class:`AnnotationResult`) and read by
:func:`parse_export` within the limits of every document: a document of another shape is a
:class:`~calibrate.base.documents.DocumentError` naming the source and each field. Each annotation's
results are then checked against the generated interface — an unknown control, a choice it does not
offer, a rating or number out of its bounds, a chunk that the task does not have — and every problem
names the source, the task, its case and the annotator (:class:`LabelError`). Cancelled (skipped)
annotations and drafts are counted, not read. Per-chunk answers map back to the case's contexts in
rank order. No network.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

from pydantic import BeforeValidator, ConfigDict, Field, JsonValue

from calibrate.base.documents import Schema, check, parse_json, read_bytes
from calibrate.base.times import SourceTime, latest_first
from calibrate.campaign import Campaign
from calibrate.humans.labelstudio.interface import PER_ITEM, Interface

__all__ = [
    "EXPECTED",
    "Annotation",
    "AnnotationResult",
    "ExportReading",
    "Label",
    "LabelError",
    "Task",
    "average_precision",
    "export_projects",
    "parse_export",
    "read_export",
    "read_export_file",
    "shape_problems",
    "shown_model_version",
    "task_case_id",
]

BINARY = {"pass": 1.0, "fail": 0.0}
POSITIVE = {"relevant", "found"}
EXPECTED = "Label Studio's JSON export: a list of tasks (id, data, annotations, drafts, predictions)"
#: the longest control name a result may give (longer is no control of the interface)
MAX_NAME = 200


class LabelError(ValueError):
    """Annotations that do not fit the interface; every problem is listed, with where they came from."""

    def __init__(self, problems: list[str], *, source: str | None = None):
        self.problems = problems
        self.source = source
        shown = "\n  ".join(problems[:50]) + (f"\n  ... and {len(problems) - 50} more" if len(problems) > 50 else "")
        super().__init__(
            f"{len(problems)} annotation problem(s)" + (f" in {source}" if source else "") + f":\n  {shown}"
        )


# ------------------------------------------------------------------------------------ the format
class _Strict(Schema):
    model_config = ConfigDict(strict=True)


#: an id Label Studio gives (a task's, an annotation's, a user's, a project's): an integer SQLite holds
LabelStudioId = Annotated[int, Field(ge=0, le=2**63 - 1)]


class User(_Strict):
    id: LabelStudioId | None = None
    email: str | None = None


def _user(value: Any) -> Any:
    """``completed_by`` as a user: Label Studio gives a user id, or the user."""
    return {"id": value} if isinstance(value, int) and not isinstance(value, bool) else value


class AnnotationResult(_Strict):
    """One result of an annotation: the control it answers (``from_name``), its type and ``value``
    (checked against the interface, not here)."""

    from_name: JsonValue = None
    type: JsonValue = None
    value: dict[str, JsonValue] | None = None


class Annotation(_Strict):
    id: LabelStudioId
    completed_by: Annotated[User | None, BeforeValidator(_user)] = None
    project: LabelStudioId | None = None
    updated_at: SourceTime = None
    was_cancelled: bool | None = None
    result: list[AnnotationResult] | None = None


class Task(_Strict):
    """A task: the data calibrate pushed (``case_id``, the texts, the chunks), its annotations, drafts
    and predictions (the judge shown, if any)."""

    id: LabelStudioId
    data: dict[str, JsonValue] | None = None
    annotations: list[Annotation] | None = None
    drafts: list[JsonValue] | None = None
    predictions: list[JsonValue] | None = None


class _Prediction(Schema):
    model_version: JsonValue = None


def parse_export(data: bytes, *, source: str) -> list[Task]:
    """A Label Studio JSON export (what the API's export or the "Export -> JSON" button gives) read as
    tasks.

    Raises
    ------
    DocumentError
        Text that is not JSON (or too large, or nested too deep), or not the shape of the export, each
        problem naming ``source`` and the field (``[3].annotations[0].id``).

    Examples
    --------
    >>> parse_export(b'[{"id": 1, "data": {"case_id": "c1"}, "annotations": []}]', source="e.json")[0].id
    1
    >>> parse_export(b'[{"id": 1, "annotations": [{"id": "x", "result": {}}]}]', source="e.json")
    Traceback (most recent call last):
    ...
    calibrate.base.documents.DocumentError: 2 problems in e.json:
      e.json, field '[0].annotations[0].id': Input should be a valid integer (found 'x'); expected Label Studio's JSON export: a list of tasks (id, data, annotations, drafts, predictions)
      e.json, field '[0].annotations[0].result': Input should be a valid array; expected Label Studio's JSON export: a list of tasks (id, data, annotations, drafts, predictions)
    """
    return parse_json(data, list[Task], source=source, expected=EXPECTED)


def read_export_file(path: str | Path) -> list[Task]:
    """A Label Studio JSON export file read as tasks (see :func:`parse_export`)."""
    return parse_export(read_bytes(path, expected=EXPECTED), source=str(path))


def shape_problems(tasks: Any, *, source: str = "the export") -> list[str]:
    """What in a document (JSON values) is not the shape of Label Studio's JSON export, one line each.

    Examples
    --------
    >>> shape_problems([{"id": 1, "data": {}, "annotations": [{"id": "x", "result": {}}]}])[0]
    "the export, field '[0].annotations[0].id': Input should be a valid integer (found 'x'); expected Label Studio's JSON export: a list of tasks (id, data, annotations, drafts, predictions)"
    """
    return [str(p) for p in check(tasks, list[Task], source=source, expected=EXPECTED)[1]]


def task_case_id(task: Task) -> str:
    """The campaign case a task holds (its ``data.case_id``, as text; empty when it has none).

    >>> task_case_id(Task(id=1, data={"case_id": 7})), task_case_id(Task(id=2))
    ('7', '')
    """
    found = (task.data or {}).get("case_id")
    return "" if found is None else str(found)


def export_projects(tasks: list[Task]) -> set[int]:
    """The projects the annotations of an export belong to."""
    return {a.project for t in tasks for a in t.annotations or [] if a.project is not None}


def shown_model_version(tasks: list[Task]) -> str | None:
    """The model version of the first prediction an export holds: the judge the annotators were shown."""
    for task in tasks:
        for item in task.predictions or []:
            prediction = check(item, _Prediction, source="", expected="")[0]
            if prediction is not None and isinstance(prediction.model_version, str) and prediction.model_version:
                return prediction.model_version
    return None


# ------------------------------------------------------------------------------------ reading
@dataclass(frozen=True)
class Label:
    """One annotator's label of one case on one metric."""

    case_id: str
    metric: str
    annotator: str
    value: float
    task_id: int
    annotation_id: int
    updated_at: str
    details: dict[str, Any] = field(default_factory=dict)


@dataclass
class ExportReading:
    labels: list[Label]
    tasks: int = 0
    annotations: int = 0
    cancelled: int = 0
    drafts: int = 0
    unlabelled_metrics: int = 0  # a submitted annotation that left a metric out
    replaced: int = 0  # an annotator's older annotation of the same task, superseded


def average_precision(relevant: list[bool]) -> float:
    """Average precision of the relevant items in rank order (0 when none is relevant), as DeepEval's
    contextual precision computes it.

    Examples
    --------
    >>> average_precision([False, True]), average_precision([True, False, True]), average_precision([False])
    (0.5, 0.8333333333333333, 0.0)
    """
    hits, total = 0, 0.0
    for rank, is_relevant in enumerate(relevant, start=1):
        if is_relevant:
            hits += 1
            total += hits / rank
    return total / hits if hits else 0.0


def _annotator(annotation: Annotation, users: dict[int, str]) -> str:
    who = annotation.completed_by
    if who is None:
        return "ls-user-None"
    return who.email or users.get(who.id, f"ls-user-{who.id}")


def _metric_of(control_name: str) -> str:
    return control_name.split("__", 1)[0]


def _items(data: dict[str, Any], key: str | None) -> list[Any]:
    """The task data list a repeated control runs over (none when the data holds no list there)."""
    found = data.get(key) if key else None
    return found if isinstance(found, list) else []


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _check_result(
    result: AnnotationResult,
    interface: Interface,
    data: dict[str, Any],
    where: str,
    problems: list[str],
    declared: Any = (),
) -> tuple[str, int | None, Any] | None:
    """(metric, item index, answer) of one result, or None with the problem recorded; ``declared``: the
    metrics campaign.toml declares, to say so of a result of another one."""
    name = result.from_name
    found = interface.find(name) if isinstance(name, str) and len(name) <= MAX_NAME else None
    if found is None:
        metric = _metric_of(name) if isinstance(name, str) and len(name) <= MAX_NAME else None
        problems.append(
            f"{where}: a result for {name!r:.{MAX_NAME}}, which the interface does not have (its "
            f"controls: {', '.join(sorted(interface.controls))})"
            + (
                f"; campaign.toml does not declare {metric!r}, and no push or pull of this project "
                "recorded it (declare it again to read these labels: removed later, they are kept, "
                "set aside)"
                if metric and metric not in declared
                else ""
            )
        )
        return None
    control, index = found
    if result.type != control.type:
        problems.append(f"{where}: {name} is a {control.type} control, the result is of type {result.type!r:.80}")
        return None
    if index is not None and index >= len(_items(data, control.repeated_over)):
        problems.append(
            f"{where}: {name} answers item {index + 1}, the task has {len(_items(data, control.repeated_over))}"
        )
        return None
    value = result.value or {}
    if control.type in ("choices", "labels"):
        chosen = value.get(control.type)
        if not isinstance(chosen, list) or not chosen or any(c not in control.values for c in chosen):
            problems.append(
                f"{where}: {name} chose {chosen!r:.200}; the interface offers "
                f"{', '.join(repr(v) for v in control.values)}"
            )
            return None
        if control.type == "choices" and len(chosen) != 1:
            problems.append(f"{where}: {name} takes one choice, the result has {chosen!r}")
            return None
        answer = (
            chosen[0]
            if control.type == "choices"
            else {"start": value.get("start"), "end": value.get("end"), "text": value.get("text")}
        )
    elif control.type == "rating":
        answer = value.get("rating")
        if not (_is_number(answer) and 1 <= answer <= (control.max_rating or 5)):
            problems.append(f"{where}: {name} rated {answer!r:.80}; the interface takes 1 to {control.max_rating}")
            return None
    else:  # number
        answer = value.get("number")
        low, high = control.bounds or (float("-inf"), float("inf"))
        if not (_is_number(answer) and low <= answer <= high):
            problems.append(f"{where}: {name} is {answer!r:.80}; the interface takes {low:g} to {high:g}")
            return None
    return _metric_of(control.name), index, (control, answer)


def _value(
    metric: str, kind: str, answers: list[tuple[int | None, Any]], data: dict[str, Any], where: str, problems: list[str]
) -> tuple[float, dict[str, Any]] | None:
    """A metric's value from its answers in one annotation."""
    if kind in PER_ITEM:
        items = _items(data, PER_ITEM[kind])
        by_index = {index: answer for index, (control, answer) in answers if index is not None}
        missing = [i + 1 for i in range(len(items)) if i not in by_index]
        if missing:
            problems.append(
                f"{where}: {metric} leaves item(s) {', '.join(map(str, missing))} of {len(items)} unanswered"
            )
            return None
        flags = [by_index[i] in POSITIVE for i in range(len(items))]
        value = (
            average_precision(flags) if kind == "contextual_precision" else (sum(flags) / len(flags) if flags else 0.0)
        )
        key = "parts" if kind == "contextual_recall" else "chunks"
        return value, {key: [by_index[i] for i in range(len(items))]}
    main = [(control, answer) for index, (control, answer) in answers if control.name == metric]
    if not main:
        return None  # only spans, say: no verdict given
    control, answer = main[0]
    details: dict[str, Any] = {}
    spans = [answer for _, (c, answer) in answers if c.type == "labels"]
    if spans:
        details["unsupported_spans"] = spans
    if control.type == "choices":
        return (BINARY[answer] if answer in BINARY else float(answer)), details
    return float(answer), details


def _answered_twice(
    answered: dict[tuple[str, int | None], Any],
    answer: tuple[Any, Any],
    index: int | None,
    where: str,
    problems: list[str],
) -> bool:
    """Whether a control (of one item) already has an answer in this annotation: the same answer again is
    left out; another one is a conflict, recorded in ``problems`` (which of the two the annotator meant is
    unknown). A span control (``labels``) takes any number of results."""
    control, value = answer
    if control.type == "labels":
        return False
    slot = (control.name, index)
    if slot not in answered:
        answered[slot] = value
        return False
    if answered[slot] != value:
        item = f" (item {index + 1})" if index is not None else ""
        problems.append(
            f"{where}: {control.name}{item} has two results that disagree ({answered[slot]!r:.80} and "
            f"{value!r:.80}); Label Studio gives one per control: fix the annotation in Label Studio "
            "(or the export file) so that it holds one"
        )
    return True


def read_export(
    tasks: list[Task] | Any,
    campaign: Campaign,
    interface: Interface,
    *,
    users: dict[int, str] | None = None,
    source: str | None = None,
) -> ExportReading:
    """The labels in a Label Studio JSON export: tasks read by :func:`parse_export`, or the export's JSON
    values, read here through :class:`Task`. :class:`LabelError` lists every task that does not fit the
    export's format and every result that does not fit the interface, naming ``source`` (nothing is read
    then)."""
    if not (isinstance(tasks, list) and all(isinstance(t, Task) for t in tasks)):
        tasks, shape = check(tasks, list[Task], source=source or "the export", expected=EXPECTED)
        if tasks is None:
            raise LabelError([str(p) for p in shape], source=source)
    users = users or {}
    reading = ExportReading(labels=[])
    problems: list[str] = []
    latest: dict[tuple[str, str, str], Label] = {}
    for task in tasks:
        data = task.data or {}
        case_id = task_case_id(task)
        reading.tasks += 1
        reading.drafts += len(task.drafts or [])
        if case_id not in (campaign.cases or {}):
            problems.append(f"task {task.id}: case {case_id!r:.200} is not in the campaign's cases.jsonl")
            continue
        for annotation in task.annotations or []:
            if annotation.was_cancelled:
                reading.cancelled += 1
                continue
            reading.annotations += 1
            annotator = _annotator(annotation, users)
            where = f"task {task.id} (case {case_id}), annotator {annotator}"
            per_metric: dict[str, list] = {}
            answered: dict[tuple[str, int | None], Any] = {}
            for result in annotation.result or []:
                checked = _check_result(result, interface, data, where, problems, campaign.metrics)
                if checked:
                    metric, index, answer = checked
                    if _answered_twice(answered, answer, index, where, problems):
                        continue
                    per_metric.setdefault(metric, []).append((index, answer))
            for metric, kind in interface.metrics.items():
                if metric not in per_metric:
                    reading.unlabelled_metrics += 1
                    continue
                valued = _value(metric, kind, per_metric[metric], data, where, problems)
                if valued is None:
                    continue
                label = Label(
                    case_id,
                    metric,
                    annotator,
                    valued[0],
                    task.id,
                    annotation.id,
                    annotation.updated_at or "",
                    valued[1],
                )
                key = (case_id, metric, annotator)
                if key in latest:
                    reading.replaced += 1
                    if (latest_first(latest[key].updated_at), latest[key].annotation_id) > (
                        latest_first(label.updated_at),
                        label.annotation_id,
                    ):
                        continue
                latest[key] = label
    if problems:
        raise LabelError(problems, source=source)
    reading.labels = sorted(latest.values(), key=lambda label: (label.case_id, label.metric, label.annotator))
    return reading
