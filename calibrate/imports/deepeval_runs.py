"""A DeepEval test run, as DeepEval saves it, read as cases and judge ratings.

DeepEval writes a test run (``evaluate()`` or ``deepeval test run``) as the JSON of its ``TestRun``:
``test_run_<timestamp>.json`` in ``DEEPEVAL_RESULTS_FOLDER``, ``.deepeval/.latest_run_full.json``,
and the same under a ``testRunData`` key in ``.deepeval/.latest_test_run.json``. Each test case holds
its fields (``input``, ``actualOutput``, ``expectedOutput``, ``context``, ``retrievalContext``,
``metadata``) and, per metric, ``metricsData``: the metric's name, score, threshold, success, strict
mode, reason, error and ``evaluationModel``, the judge's model. Each scored metric becomes a judge
rating by the judge named after that model; a metric that erred is a failed rating with DeepEval's
error.

The format is declared below (:class:`TestRun`, :class:`TestCase`, :class:`MetricData`), as DeepEval's
own models declare it. A test run is DeepEval's own dump, so anything in it that does not fit (a score
that is no number, a model that is no name) refuses the file, every problem named with its field.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping
from pathlib import Path

from pydantic import Field, JsonValue

from calibrate.base.documents import DocumentError, check, parse_json, read_bytes
from calibrate.base.errors import Problem
from calibrate.base.results import Result
from calibrate.cases.datasets import content_id, external_case
from calibrate.imports.apply import import_files
from calibrate.imports.records import ImportedRating, Skip, SourceBatch
from calibrate.imports.texts import Record, fits

__all__ = ["DeepEvalTestCase", "MetricData", "TestRun", "import_deepeval_run", "read_deepeval_run"]

#: the name DeepEval gives a test case that has none (its place in the run): not an id across runs
DEFAULT_NAME = re.compile(r"^(conversational_)?test_case_\d+$")
EXPECTED = (
    "the JSON DeepEval saves: an object with testCases (test_run_*.json, .deepeval/.latest_run_full.json "
    "or .latest_test_run.json)"
)


class MetricData(Record):
    """One metric's result on a test case (DeepEval's ``MetricData``)."""

    name: str
    score: float | None = None
    threshold: float | None = None
    success: bool | None = None
    reason: str | None = None
    strict_mode: bool | None = Field(None, alias="strictMode")
    evaluation_model: str | None = Field(None, alias="evaluationModel")
    error: str | None = None


class DeepEvalTestCase(Record):
    """A single-turn test case (DeepEval's ``LLMApiTestCase``): its fields, as text and lists of text,
    and its metrics' results."""

    name: str | None = None
    input: JsonValue = None
    actual_output: JsonValue = Field(None, alias="actualOutput")
    expected_output: JsonValue = Field(None, alias="expectedOutput")
    context: JsonValue = None
    retrieval_context: JsonValue = Field(None, alias="retrievalContext")
    metadata: JsonValue = None
    metrics_data: list[MetricData] | None = Field(None, alias="metricsData")


class TestRun(Record):
    """A test run: its test cases (each read on its own) and conversational test cases (skipped)."""

    __test__ = False  # not a test class for pytest
    test_cases: list[JsonValue] | None = Field(None, alias="testCases")
    conversational_test_cases: list[JsonValue] | None = Field(None, alias="conversationalTestCases")


class _Latest(Record):
    test_run_data: JsonValue = Field(alias="testRunData")


class _Named(Record):
    name: str


def _load(path: Path) -> TestRun:
    data = parse_json(read_bytes(path, expected=EXPECTED), JsonValue, source=str(path), expected=EXPECTED)
    latest = fits(data, _Latest)
    if latest is not None and isinstance(latest.test_run_data, dict):
        data = latest.test_run_data  # .deepeval/.latest_test_run.json
    if not isinstance(data, dict) or not ("testCases" in data or "conversationalTestCases" in data):
        raise DocumentError(
            [Problem(str(path), "not a DeepEval test run", value=type(data).__name__, expected=EXPECTED)],
            source=str(path),
        )
    run, problems = check(data, TestRun, source=str(path), expected="the shape of a DeepEval test run: a list")
    if run is None:
        raise DocumentError(
            [
                Problem(
                    p.file,
                    "not the shape of a DeepEval test run: " + p.message,
                    field=p.field,
                    value=p.value,
                    expected=p.expected,
                )
                for p in problems
            ],
            source=str(path),
        )
    return run


def _test_cases(run: TestRun, path: Path) -> tuple[list[tuple[str, DeepEvalTestCase]], list[Problem]]:
    """The test cases that fit DeepEval's format, each with its place; and the problems of every one."""
    problems: list[Problem] = []
    test_cases: list[tuple[str, DeepEvalTestCase]] = []
    for i, item in enumerate(run.test_cases or []):
        where = f"testCases[{i}]"
        test_case, found = check(
            item,
            DeepEvalTestCase,
            source=str(path),
            field=where,
            expected="DeepEval's test case: input, actualOutput, ... and metricsData (name, "
            "score, threshold, evaluationModel, ...)",
        )
        problems += found
        for j, metric in enumerate(test_case.metrics_data or [] if test_case is not None else []):
            if metric.score is not None and not math.isfinite(metric.score):
                problems.append(
                    Problem(
                        str(path),
                        f"{where}: the score of {metric.name!r} is not a number",
                        field=f"{where}.metricsData[{j}].score",
                        value=metric.score,
                        expected="a finite number, or an error",
                    )
                )
        if test_case is not None:
            test_cases.append((where, test_case))
    return test_cases, problems


def _add_ratings(batch: SourceBatch, tc: DeepEvalTestCase, case_id: str, where: str, path: Path) -> None:
    """Add to ``batch`` a rating per metric of the test case (a failed one with its error); skip those not scored."""
    for metric in tc.metrics_data or []:
        source_id = f"{path.name}#{tc.name or where}/{metric.name}"
        if metric.score is None and not metric.error:
            batch.skipped.append(Skip(source_id, "not scored (DeepEval skipped the metric)"))
            continue
        facts = {
            "library": "deepeval",
            "model": metric.evaluation_model,
            "threshold": metric.threshold,
            "strict_mode": metric.strict_mode,
            "success": metric.success,
        }
        batch.ratings.append(
            ImportedRating(
                case_id=case_id,
                metric=metric.name,
                rater=metric.evaluation_model or "",
                rater_kind="judge",
                value=None if metric.error else metric.score,
                error=metric.error or None,
                reason=metric.reason,
                source_id=source_id,
                facts={k: v for k, v in facts.items() if v is not None},
            )
        )


def read_deepeval_run(path: str | Path) -> SourceBatch:
    """The cases and judge ratings of a DeepEval test run file.

    Parameters
    ----------
    path : str or Path
        A test run DeepEval saved (see the module docstring).

    Returns
    -------
    SourceBatch
        Origin ``deepeval``: the same judge's rating of the same case in a later test run is a new
        revision of it. A case's id is its ``metadata.case_id``, else its test case name where the name
        is its own (not DeepEval's positional ``test_case_N``, and used once), else a hash of its content
        (the id ``calibrate cases import`` gives the same case).

    Raises
    ------
    DocumentError
        A file that is not a test run (not JSON, nested too deep, no ``testCases``), or a test case
        that does not fit DeepEval's format (no input, a score that is no number, ...), every problem
        named with its place and field.

    Examples
    --------
    >>> import json, tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "test_run.json"
    >>> _ = path.write_text(json.dumps({"testCases": [{"name": "test_case_0", "input": "q?", "actualOutput": "a.",
    ...     "metricsData": [{"name": "Faithfulness", "score": 0.5, "threshold": 0.7, "evaluationModel": "gpt-4o"}]}]}))
    >>> batch = read_deepeval_run(path)
    >>> r = batch.ratings[0]
    >>> r.metric, r.rater, r.value, r.facts["threshold"], r.case_id == batch.cases[0]["case_id"]
    ('Faithfulness', 'gpt-4o', 0.5, 0.7, True)
    >>> _ = path.write_text(json.dumps({"testCases": [{"input": "q?", "metricsData": [{"name": "F", "score": "high"}]}]}))
    >>> read_deepeval_run(path)   # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    calibrate.base.documents.DocumentError: 1 problem in ...test_run.json:
      ...test_run.json, field 'testCases[0].metricsData[0].score': Input should be a valid number (found 'high'); expected DeepEval's test case: ...
    """
    path = Path(path)
    run = _load(path)
    batch = SourceBatch(kind="deepeval", origin="deepeval", source=str(path))
    for i, item in enumerate(run.conversational_test_cases or []):
        named = fits(item, _Named)
        name = named.name if named is not None else f"conversational_test_case_{i}"
        batch.skipped.append(
            Skip(f"{path.name}#{name}", "a conversational test case: calibrate rates single-turn cases")
        )
    test_cases, problems = _test_cases(run, path)
    names = Counter(tc.name for _, tc in test_cases if tc.name is not None)
    for where, tc in test_cases:
        record = {
            "input": tc.input,
            "actual_output": tc.actual_output,
            "expected_output": tc.expected_output,
            "context": tc.context,
            "retrieval_context": tc.retrieval_context,
            "metadata": tc.metadata,
        }
        case, found = external_case(record, source="deepeval", where=str(path), row=None)
        if case is None:
            problems += [
                Problem(p.file, f"{where}: {p.message}", field=p.field, value=p.value, expected=p.expected)
                for p in found
            ]
            continue
        own = case["metadata"].get("case_id") if isinstance(case["metadata"].get("case_id"), str) else None
        if own is None and tc.name and not DEFAULT_NAME.match(tc.name) and names[tc.name] == 1:
            own = tc.name
        case["case_id"] = own or content_id(case)
        case["metadata"]["source"] = f"deepeval:{path.name}"
        batch.cases.append(case)
        _add_ratings(batch, tc, case["case_id"], where, path)
    if problems:
        raise DocumentError(problems, source=str(path))
    return batch


def import_deepeval_run(
    campaign_folder: str | Path,
    path: str | Path,
    *,
    metric_map: Mapping[str, str] | None = None,
    rater: str | None = None,
    dry_run: bool = False,
) -> Result:
    """The ``calibrate import deepeval`` command: a DeepEval test run file read by :func:`read_deepeval_run`
    and brought into the campaign by :func:`~calibrate.imports.apply.import_batch`; the same file imported
    again into a campaign as its import left it does nothing (:func:`~calibrate.imports.apply.import_files`).

    Parameters
    ----------
    campaign_folder : str or Path
    path : str or Path
        The test run DeepEval saved.
    metric_map : mapping, optional
        DeepEval metric name -> campaign metric, for names that do not match the campaign's.
    rater : str, optional
        The judge's name in the campaign instead of DeepEval's evaluation model.
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
    >>> _ = calibrate.init_campaign(tmp / "c", ["faithfulness"])
    >>> _ = (tmp / "run.json").write_text(json.dumps({"testCases": [{"input": "q?", "actualOutput": "a.",
    ...     "metricsData": [{"name": "Faithfulness", "score": 1.0, "evaluationModel": "gpt-4o"}]}]}))
    >>> doc = import_deepeval_run(tmp / "c", tmp / "run.json")
    >>> doc["ratings"]["new"], import_deepeval_run(tmp / "c", tmp / "run.json")["ratings"]["unchanged"]
    (1, 1)
    """
    return import_files(
        campaign_folder,
        "deepeval",
        {"test_run": path},
        lambda: read_deepeval_run(path),
        metric_map=metric_map,
        rater=rater,
        dry_run=dry_run,
    )
