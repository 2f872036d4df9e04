"""A DeepEval test run, as DeepEval saves it, read as cases and judge ratings.

DeepEval writes a test run (``evaluate()`` or ``deepeval test run``) as the JSON of its ``TestRun``:
``test_run_<timestamp>.json`` in ``DEEPEVAL_RESULTS_FOLDER``, ``.deepeval/.latest_run_full.json``,
and the same under a ``testRunData`` key in ``.deepeval/.latest_test_run.json``. Each test case holds
its fields (``input``, ``actualOutput``, ``expectedOutput``, ``context``, ``retrievalContext``,
``metadata``) and, per metric, ``metricsData``: the metric's name, score, threshold, success, strict
mode, reason, error and ``evaluationModel``, the judge's model. Each scored metric becomes a judge
rating by the judge named after that model; a metric that erred is a failed rating with DeepEval's
error.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from calibrate.base.errors import CampaignError, Problem
from calibrate.cases.datasets import content_id, external_case
from calibrate.base.results import Result
from calibrate.imports.apply import import_batch
from calibrate.imports.records import ImportedRating, Skip, SourceBatch

__all__ = ["import_deepeval_run", "read_deepeval_run"]

#: the name DeepEval gives a test case that has none (its place in the run): not an id across runs
DEFAULT_NAME = re.compile(r"^(conversational_)?test_case_\d+$")


def _load(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise CampaignError([Problem(str(path), "not UTF-8 text", expected="a DeepEval test run (JSON)")]) from None
    except json.JSONDecodeError as exc:
        raise CampaignError([Problem(str(path), f"not valid JSON: {exc.msg}", row=exc.lineno,
                                     expected="a DeepEval test run (JSON)")]) from None
    if isinstance(data, dict) and isinstance(data.get("testRunData"), dict):
        data = data["testRunData"]   # .deepeval/.latest_test_run.json
    if not isinstance(data, dict) or not ("testCases" in data or "conversationalTestCases" in data):
        raise CampaignError([Problem(str(path), "not a DeepEval test run", value=type(data).__name__,
                                     expected="the JSON DeepEval saves: an object with testCases (test_run_*.json, "
                                              ".deepeval/.latest_run_full.json or .latest_test_run.json)")])
    wrong = [key for key in ("testCases", "conversationalTestCases") if not isinstance(data.get(key) or [], list)]
    wrong += [] if wrong else [f"testCases[{i}]" for i, tc in enumerate(data.get("testCases") or []) if not isinstance(tc, dict)]
    wrong += [] if wrong else [f"testCases[{i}].metricsData" for i, tc in enumerate(data.get("testCases") or [])
              if isinstance(tc, dict) and not isinstance(tc.get("metricsData") or [], list)]
    if wrong:
        raise CampaignError([Problem(str(path), "not the shape of a DeepEval test run", field=key,
                                     expected="a list (of objects, for test cases)") for key in wrong])
    return data


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
    CampaignError
        A file that is not a test run, or a test case without its fields, named with its place.

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
    """
    path = Path(path)
    data = _load(path)
    batch = SourceBatch(kind="deepeval", origin="deepeval", source=str(path))
    for i, conversation in enumerate(data.get("conversationalTestCases") or []):
        name = conversation.get("name") if isinstance(conversation, dict) else None
        name = name if isinstance(name, str) else f"conversational_test_case_{i}"
        batch.skipped.append(Skip(f"{path.name}#{name}", "a conversational test case: calibrate rates single-turn "
                                                         "cases"))
    test_cases = data.get("testCases") or []
    names = Counter(tc.get("name") for tc in test_cases if isinstance(tc.get("name"), str))
    problems: list[Problem] = []
    for i, tc in enumerate(test_cases):
        where = f"testCases[{i}]"
        record = {"input": tc.get("input"), "actual_output": tc.get("actualOutput"),
                  "expected_output": tc.get("expectedOutput"), "context": tc.get("context"),
                  "retrieval_context": tc.get("retrievalContext"), "metadata": tc.get("metadata")}
        case, found = external_case(record, source="deepeval", where=str(path), row=None)
        if case is None:
            problems += [Problem(p.file, f"{where}: {p.message}", field=p.field, value=p.value, expected=p.expected)
                         for p in found]
            continue
        name = tc.get("name")
        own = (case["metadata"].get("case_id") if isinstance(case["metadata"].get("case_id"), str) else None)
        if own is None and isinstance(name, str) and name and not DEFAULT_NAME.match(name) and names[name] == 1:
            own = name
        case["case_id"] = own or content_id(case)
        case["metadata"]["source"] = f"deepeval:{path.name}"
        batch.cases.append(case)
        for metric in tc.get("metricsData") or []:
            if not isinstance(metric, dict) or not isinstance(metric.get("name"), str):
                problems.append(Problem(str(path), f"{where}: a metricsData item without a name", field="metricsData",
                                        expected="DeepEval's metric data: name, score, threshold, ..."))
                continue
            source_id = f"{path.name}#{name or where}/{metric['name']}"
            score, error = metric.get("score"), metric.get("error")
            if score is None and not error:
                batch.skipped.append(Skip(source_id, "not scored (DeepEval skipped the metric)"))
                continue
            if score is not None and (isinstance(score, bool) or not isinstance(score, (int, float))):
                problems.append(Problem(str(path), f"{where}: the score of {metric['name']!r} is not a number",
                                        field="score", value=score, expected="a number, or an error"))
                continue
            facts = {"library": "deepeval", "model": metric.get("evaluationModel"), "threshold": metric.get("threshold"),
                     "strict_mode": metric.get("strictMode"), "success": metric.get("success")}
            batch.ratings.append(ImportedRating(
                case_id=case["case_id"], metric=metric["name"], rater=str(metric.get("evaluationModel") or ""),
                rater_kind="judge", value=None if error else float(score), error=str(error) if error else None,
                reason=metric.get("reason") if isinstance(metric.get("reason"), str) else None, source_id=source_id,
                facts={k: v for k, v in facts.items() if v is not None}))
    if problems:
        raise CampaignError(problems)
    return batch


def import_deepeval_run(campaign_folder: str | Path, path: str | Path, *, metric_map: Mapping[str, str] | None = None,
                        rater: str | None = None, dry_run: bool = False) -> Result:
    """The ``calibrate import deepeval`` command: a DeepEval test run file read by :func:`read_deepeval_run`
    and brought into the campaign by :func:`~calibrate.imports.apply.import_batch`.

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
    return import_batch(campaign_folder, read_deepeval_run(path), metric_map=metric_map, rater=rater,
                        dry_run=dry_run)
