"""Human labels out of Label Studio's JSON export, checked against the campaign's interface.

The same reader serves a pull through the API and an export file a user downloaded: both are Label
Studio's JSON export (a list of tasks, each with its ``data``, ``annotations`` and ``drafts``). Each
annotation's results are checked against the generated interface — an unknown control, a choice it
does not offer, a rating or number out of its bounds, a chunk that the task does not have — and every
problem names the task, its case and the annotator. Cancelled (skipped) annotations and drafts are
counted, not read. Per-chunk answers map back to the case's contexts in rank order. No network.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from calibrate.campaign import Campaign
from calibrate.humans.labelstudio.interface import PER_ITEM, Interface

__all__ = ["Label", "ExportReading", "read_export", "shape_problems", "average_precision", "LabelError"]

BINARY = {"pass": 1.0, "fail": 0.0}
POSITIVE = {"relevant", "found"}


class LabelError(ValueError):
    """Annotations that do not fit the interface; every problem is listed."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        shown = "\n  ".join(problems[:50]) + (f"\n  ... and {len(problems) - 50} more" if len(problems) > 50 else "")
        super().__init__(f"{len(problems)} annotation problem(s):\n  {shown}")


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
    unlabelled_metrics: int = 0        # a submitted annotation that left a metric out
    replaced: int = 0                  # an annotator's older annotation of the same task, superseded


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


def _annotator(annotation: dict[str, Any], users: dict[int, str]) -> str:
    who = annotation.get("completed_by")
    if isinstance(who, dict):
        return who.get("email") or users.get(who.get("id"), f"ls-user-{who.get('id')}")
    return users.get(who, f"ls-user-{who}")


def _metric_of(control_name: str) -> str:
    return control_name.split("__", 1)[0]


def _check_result(result: dict[str, Any], interface: Interface, data: dict[str, Any], where: str,
                  problems: list[str]) -> tuple[str, int | None, Any] | None:
    """(metric, item index, answer) of one result, or None with the problem recorded."""
    name = result.get("from_name")
    found = interface.find(name) if isinstance(name, str) else None
    if found is None:
        problems.append(f"{where}: a result for {name!r}, which the interface does not have (its controls: "
                        f"{', '.join(sorted(interface.controls))})")
        return None
    control, index = found
    if result.get("type") != control.type:
        problems.append(f"{where}: {name} is a {control.type} control, the result is of type {result.get('type')!r}")
        return None
    if index is not None and index >= len(data.get(control.repeated_over) or []):
        problems.append(f"{where}: {name} answers item {index + 1}, the task has "
                        f"{len(data.get(control.repeated_over) or [])}")
        return None
    value = result.get("value") or {}
    if control.type in ("choices", "labels"):
        chosen = value.get(control.type)
        if not isinstance(chosen, list) or not chosen or any(c not in control.values for c in chosen):
            problems.append(f"{where}: {name} chose {chosen!r}; the interface offers "
                            f"{', '.join(repr(v) for v in control.values)}")
            return None
        if control.type == "choices" and len(chosen) != 1:
            problems.append(f"{where}: {name} takes one choice, the result has {chosen!r}")
            return None
        answer = chosen[0] if control.type == "choices" else {"start": value.get("start"), "end": value.get("end"),
                                                               "text": value.get("text")}
    elif control.type == "rating":
        answer = value.get("rating")
        if not (isinstance(answer, (int, float)) and 1 <= answer <= (control.max_rating or 5)):
            problems.append(f"{where}: {name} rated {answer!r}; the interface takes 1 to {control.max_rating}")
            return None
    else:  # number
        answer = value.get("number")
        low, high = control.bounds or (float("-inf"), float("inf"))
        if not (isinstance(answer, (int, float)) and low <= answer <= high):
            problems.append(f"{where}: {name} is {answer!r}; the interface takes {low:g} to {high:g}")
            return None
    return _metric_of(control.name), index, (control, answer)


def _value(metric: str, kind: str, answers: list[tuple[int | None, Any]], data: dict[str, Any],
           where: str, problems: list[str]) -> tuple[float, dict[str, Any]] | None:
    """A metric's value from its answers in one annotation."""
    if kind in PER_ITEM:
        items = data.get(PER_ITEM[kind]) or []
        by_index = {index: answer for index, (control, answer) in answers if index is not None}
        missing = [i + 1 for i in range(len(items)) if i not in by_index]
        if missing:
            problems.append(f"{where}: {metric} leaves item(s) {', '.join(map(str, missing))} of {len(items)} "
                            "unanswered")
            return None
        flags = [by_index[i] in POSITIVE for i in range(len(items))]
        value = average_precision(flags) if kind == "contextual_precision" else (
            sum(flags) / len(flags) if flags else 0.0)
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


def _is_id(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _given(document: dict[str, Any], key: str, default: Any) -> Any:
    """``document[key]``, or ``default`` where it is absent or null."""
    value = document.get(key)
    return default if value is None else value


def shape_problems(tasks: Any) -> list[str]:
    """What in a document is not the shape of Label Studio's JSON export: a list of tasks, each an
    object with an integer ``id``, a ``data`` object, and lists of ``annotations`` (objects with an
    integer ``id``, a ``completed_by`` user id or object, a ``result`` list of objects whose ``value``
    is an object), ``drafts`` and ``predictions``.

    Examples
    --------
    >>> shape_problems([{"id": 1, "data": {}, "annotations": [{"id": "x", "result": {}}]}])
    ["task 1, annotation 1: 'id' is 'x', expected an integer", "task 1, annotation 1: 'result' is {}, expected a list"]
    """
    if not isinstance(tasks, list):
        return [f"the document is {type(tasks).__name__}, expected a list of tasks"]
    problems: list[str] = []

    def expect(ok: bool, where: str, key: str, value: Any, what: str) -> bool:
        if not ok:
            problems.append(f"{where}: {key!r} is {str(repr(value))[:60]}, expected {what}")
        return ok

    for number, task in enumerate(tasks, start=1):
        if not isinstance(task, dict):
            problems.append(f"task {number}: a {type(task).__name__}, expected an object")
            continue
        where = f"task {task.get('id') if _is_id(task.get('id')) else number}"
        expect(_is_id(task.get("id")), where, "id", task.get("id"), "an integer")
        expect(isinstance(_given(task, "data", {}), dict), where, "data", task.get("data"), "an object")
        for key in ("drafts", "predictions"):
            expect(isinstance(_given(task, key, []), list), where, key, task.get(key), "a list")
        annotations = _given(task, "annotations", [])
        if not expect(isinstance(annotations, list), where, "annotations", annotations, "a list"):
            continue
        for index, annotation in enumerate(annotations, start=1):
            if not isinstance(annotation, dict):
                problems.append(f"{where}, annotation {index}: a {type(annotation).__name__}, expected an object")
                continue
            named = f"{where}, annotation {annotation.get('id') if _is_id(annotation.get('id')) else index}"
            expect(_is_id(annotation.get("id")), f"{where}, annotation {index}", "id", annotation.get("id"),
                   "an integer")
            who = annotation.get("completed_by")
            expect(who is None or _is_id(who) or (isinstance(who, dict) and (who.get("email") is None or isinstance(
                who.get("email"), str)) and (who.get("id") is None or _is_id(who.get("id")))), named, "completed_by",
                who, "a user id or a user object")
            expect(annotation.get("project") is None or _is_id(annotation.get("project")), named, "project",
                   annotation.get("project"), "a project id")
            expect(annotation.get("updated_at") is None or isinstance(annotation.get("updated_at"), str), named,
                   "updated_at", annotation.get("updated_at"), "a time")
            results = _given(annotation, "result", [])
            if not expect(isinstance(results, list), named, "result", results, "a list"):
                continue
            for result in results:
                if expect(isinstance(result, dict), named, "result item", result, "an object"):
                    expect(isinstance(_given(result, "value", {}), dict), named, "value", result.get("value"),
                           "an object")
    return problems


def read_export(tasks: list[dict[str, Any]], campaign: Campaign, interface: Interface, *,
                users: dict[int, str] | None = None) -> ExportReading:
    """The labels in a Label Studio JSON export; :class:`LabelError` lists every result that does not
    fit the interface (nothing is read then)."""
    users = users or {}
    reading = ExportReading(labels=[])
    problems = shape_problems(tasks)
    if problems:
        raise LabelError(problems)
    latest: dict[tuple[str, str, str], Label] = {}
    for task in tasks:
        data = task.get("data") or {}
        case_id = str(data.get("case_id", ""))
        reading.tasks += 1
        reading.drafts += len(task.get("drafts") or [])
        if case_id not in (campaign.cases or {}):
            problems.append(f"task {task.get('id')}: case {case_id!r} is not in the campaign's cases.jsonl")
            continue
        for annotation in task.get("annotations") or []:
            if annotation.get("was_cancelled"):
                reading.cancelled += 1
                continue
            reading.annotations += 1
            annotator = _annotator(annotation, users)
            where = f"task {task.get('id')} (case {case_id}), annotator {annotator}"
            per_metric: dict[str, list] = {}
            for result in annotation.get("result") or []:
                checked = _check_result(result, interface, data, where, problems)
                if checked:
                    metric, index, answer = checked
                    per_metric.setdefault(metric, []).append((index, answer))
            for metric, kind in interface.metrics.items():
                if metric not in per_metric:
                    reading.unlabelled_metrics += 1
                    continue
                valued = _value(metric, kind, per_metric[metric], data, where, problems)
                if valued is None:
                    continue
                label = Label(case_id, metric, annotator, valued[0], int(task.get("id")), int(annotation["id"]),
                              str(annotation.get("updated_at") or ""), valued[1])
                key = (case_id, metric, annotator)
                if key in latest:
                    reading.replaced += 1
                    if (latest[key].updated_at, latest[key].annotation_id) > (label.updated_at, label.annotation_id):
                        continue
                latest[key] = label
    if problems:
        raise LabelError(problems)
    reading.labels = sorted(latest.values(), key=lambda l: (l.case_id, l.metric, l.annotator))
    return reading
