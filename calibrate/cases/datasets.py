"""Bring the cases users already have: DeepEval goldens / test cases and RAGAS datasets.

Reads the files DeepEval's ``EvaluationDataset.save_as`` (JSON, JSONL, CSV) and RAGAS's
``EvaluationDataset.to_jsonl`` / ``to_csv`` write, maps RAGAS names to DeepEval's (the campaign's
names), and merges the cases into a campaign's ``cases.jsonl``: a case already there with the same
id and other content is an error (nothing is overwritten), the same case again is skipped.
"""

from __future__ import annotations

import ast
import hashlib
import json
from pathlib import Path
from typing import Any, Literal

import pandas as pd

from calibrate.campaign import CASES_FILE
from calibrate.base.errors import CampaignError, Problem
from calibrate.base.files import replacing
from calibrate.base.results import Result, single_row

__all__ = ["import_cases", "read_external_cases", "merge_cases", "RAGAS_TO_DEEPEVAL"]

RAGAS_TO_DEEPEVAL = {"user_input": "input", "response": "actual_output", "reference": "expected_output",
                     "retrieved_contexts": "retrieval_context", "reference_contexts": "context"}
LIST_FIELDS = ("retrieval_context", "context")
TEXT_FIELDS = ("input", "actual_output", "expected_output")
Source = Literal["auto", "deepeval", "ragas"]


def _rows(path: Path) -> list[tuple[int, dict]]:
    """(line or row number, record) of a JSON list, JSONL or CSV file."""
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".csv":
        frame = pd.read_csv(path, dtype=str, keep_default_na=False)
        return [(i + 2, record) for i, record in enumerate(frame.to_dict("records"))]
    if path.suffix == ".json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise CampaignError([Problem(str(path), f"not valid JSON: {exc.msg}", row=exc.lineno)]) from None
        if isinstance(data, dict):  # {"goldens": [...]} or {"test_cases": [...]} or {"samples": [...]}
            data = next((v for k, v in data.items() if k in ("goldens", "test_cases", "samples")), data)
        if not isinstance(data, list):
            raise CampaignError([Problem(str(path), "expected a list of cases", value=type(data).__name__)])
        return [(i + 1, record) for i, record in enumerate(data)]
    rows = []
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            try:
                rows.append((number, json.loads(line)))
            except json.JSONDecodeError as exc:
                raise CampaignError([Problem(str(path), f"not valid JSON: {exc.msg}", row=number)]) from None
    return rows


def _as_list(value: Any, source: str, separator: str) -> list[str] | None:
    if value is None or value == "":
        return None
    if isinstance(value, list):
        return [str(v) for v in value]
    text = str(value)
    if text.startswith("[") and source == "ragas":
        parsed = ast.literal_eval(text)
        return [str(v) for v in parsed]
    return [part for part in text.split(separator)] if separator else [text]


def read_external_cases(path: str | Path, *, source: Source = "auto", list_separator: str = "|") -> list[dict]:
    """Cases of a DeepEval or RAGAS dataset file, with the campaign's (DeepEval's) field names.

    Parameters
    ----------
    path : path
        ``.json`` (a list, or an object holding ``goldens`` / ``test_cases`` / ``samples``),
        ``.jsonl`` or ``.csv``.
    source : {"auto", "deepeval", "ragas"}
        The library that wrote it; ``auto`` tells from the field names.
    list_separator : str
        How DeepEval's CSV and JSONL files join a list of chunks (``"|"`` by default).

    Returns
    -------
    list of dict
        One case per record: ``case_id`` (the record's ``case_id``, ``id`` or DeepEval ``name``, else a
        content hash), the text fields, the context lists and ``metadata``.

    Examples
    --------
    >>> import json, tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "ragas.jsonl"
    >>> _ = path.write_text(json.dumps({"user_input": "q?", "response": "a.", "retrieved_contexts": ["c"]}))
    >>> case = read_external_cases(path)[0]
    >>> case["input"], case["actual_output"], case["retrieval_context"]
    ('q?', 'a.', ['c'])
    """
    path = Path(path)
    problems: list[Problem] = []
    cases = []
    for number, record in _rows(path):
        if not isinstance(record, dict):
            problems.append(Problem(str(path), "a case must be an object", row=number, value=type(record).__name__))
            continue
        kind = source
        if kind == "auto":
            kind = "ragas" if any(k in record for k in ("user_input", "response", "retrieved_contexts")) else "deepeval"
        if kind == "ragas":
            record = {RAGAS_TO_DEEPEVAL.get(k, k): v for k, v in record.items()}
        if not record.get("input"):
            problems.append(Problem(str(path), "a case without input", row=number,
                                    field="user_input" if kind == "ragas" else "input",
                                    expected="the question or prompt of the case"))
            continue
        case: dict[str, Any] = {f: str(record[f]) for f in TEXT_FIELDS if record.get(f) not in (None, "")}
        for field in LIST_FIELDS:
            try:
                values = _as_list(record.get(field), kind, list_separator)
            except (ValueError, SyntaxError):
                problems.append(Problem(str(path), "not a list of chunks", row=number, field=field,
                                        value=record.get(field), expected="a list, or chunks joined by "
                                        + repr(list_separator)))
                continue
            if values is not None:
                case[field] = values
        metadata = record.get("additional_metadata") or record.get("metadata") or {}
        if isinstance(metadata, str):
            try:
                metadata = json.loads(metadata)
            except json.JSONDecodeError:
                metadata = {"additional_metadata": metadata}
        case["metadata"] = {**(metadata if isinstance(metadata, dict) else {}), "source": f"{kind}:{path.name}"}
        identifier = record.get("case_id") or record.get("id") or record.get("name")
        content = json.dumps({k: v for k, v in case.items() if k != "metadata"}, sort_keys=True)
        case["case_id"] = str(identifier) if identifier else "case-" + hashlib.sha256(content.encode()).hexdigest()[:12]
        cases.append((number, case))
    seen: dict[str, int] = {}
    for number, case in cases:
        if case["case_id"] in seen:
            problems.append(Problem(str(path), f"two cases with id {case['case_id']} (first at {seen[case['case_id']]})",
                                    row=number, field="case_id"))
        seen.setdefault(case["case_id"], number)
    if problems:
        raise CampaignError(problems)
    return [case for _, case in cases]


def merge_cases(campaign_folder: str | Path, cases: list[dict]) -> dict[str, int]:
    """Add ``cases`` to the campaign's ``cases.jsonl`` (created if missing), atomically.

    A case whose id is already there with other content is an error naming it; the same case again is
    left as it is. Returns ``{"added", "unchanged"}``.
    """
    path = Path(campaign_folder) / CASES_FILE
    existing: dict[str, dict] = {}
    lines: list[str] = []
    if path.is_file():
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                record = json.loads(line)
                existing[str(record.get("case_id"))] = record
                lines.append(line)
    conflicts = [Problem(str(path), f"case {c['case_id']} is already in the campaign with other content",
                         field="case_id", value=c["case_id"], expected="a new case_id, or the same case")
                 for c in cases if c["case_id"] in existing and case_content(existing[c["case_id"]]) != case_content(c)]
    if conflicts:
        raise CampaignError(conflicts)
    added = [c for c in cases if c["case_id"] not in existing]
    with replacing(path) as handle:
        handle.write("".join(line + "\n" for line in lines + [json.dumps(c, ensure_ascii=False) for c in added]))
    return {"added": len(added), "unchanged": len(cases) - len(added)}


def import_cases(campaign_folder: str | Path, source_file: str | Path, *, source: Source = "auto",
                 list_separator: str = "|") -> Result:
    """The ``calibrate cases import`` command: the cases of a DeepEval or RAGAS dataset file added to
    the campaign's ``cases.jsonl`` (:func:`read_external_cases`, then :func:`merge_cases`).

    Parameters
    ----------
    campaign_folder : str or Path
        The campaign folder, with its ``campaign.toml`` (a folder that is not a campaign is refused:
        a mistyped name makes no folder).
    source_file : str or Path
        A DeepEval goldens / test-cases file (JSON, JSONL, CSV) or a RAGAS dataset (JSONL, CSV).
    source : {"auto", "deepeval", "ragas"}
        The library that wrote it (``auto``: told by its field names).
    list_separator : str
        How DeepEval's CSV and JSONL files join the chunks of a context.

    Returns
    -------
    Result
        ``{"added", "unchanged", "cases_file"}``.

    Raises
    ------
    CampaignError
        A problem in the file (named with its line and field), or a case already in the campaign with
        other content (nothing is written).

    Examples
    --------
    >>> import json, tempfile, pathlib, calibrate
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "goldens.json").write_text(json.dumps([{"input": "q?", "actual_output": "a."}]))
    >>> _ = calibrate.init_campaign(folder / "campaign", ["faithfulness"])
    >>> doc = import_cases(folder / "campaign", folder / "goldens.json")
    >>> doc["added"], doc["unchanged"], import_cases(folder / "campaign", folder / "goldens.json")["unchanged"]
    (1, 0, 1)
    >>> import_cases(folder / "campain", folder / "goldens.json")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    calibrate.base.errors.CampaignError: 1 problem in the campaign:
      .../campain: no campaign here (no campaign.toml): nothing was written; expected a campaign folder: check its name, or start one with calibrate init FOLDER --metric NAME
    """
    folder = Path(campaign_folder)
    if not (folder / "campaign.toml").is_file():
        raise CampaignError([Problem(str(folder), "no campaign here (no campaign.toml): nothing was written",
                                     expected="a campaign folder: check its name, or start one with "
                                              "calibrate init FOLDER --metric NAME")])
    counts = merge_cases(campaign_folder, read_external_cases(source_file, source=source,
                                                              list_separator=list_separator))
    return Result(counts | {"cases_file": str(Path(campaign_folder) / CASES_FILE)}, single_row)


def case_content(case: dict) -> str:
    """What a case says (its fields but its id and metadata), as text two versions of it compare by."""
    return json.dumps({k: v for k, v in case.items() if k not in ("metadata", "case_id")}, sort_keys=True)
