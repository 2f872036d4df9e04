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

__all__ = ["import_cases", "read_external_cases", "merge_cases", "read_cases_file", "plan_merge", "content_id", "case_content",
           "external_case", "RAGAS_TO_DEEPEVAL"]

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
        if not all(isinstance(v, (str, int, float)) and not isinstance(v, bool) for v in value):
            raise ValueError("a chunk that is not text")
        return [str(v) for v in value]
    if isinstance(value, (dict, bool)):
        raise ValueError("not a list of chunks")
    text = str(value)
    if text.startswith("[") and source == "ragas":
        parsed = ast.literal_eval(text)
        return [str(v) for v in parsed]
    return [part for part in text.split(separator)] if separator else [text]


def external_case(record: Any, *, source: Source = "auto", list_separator: str = "|", where: str = "",
                  row: int | None = None) -> tuple[dict | None, list[Problem]]:
    """One record of a DeepEval or RAGAS dataset (or of another tool's export, in either's field names)
    as a case of the campaign: ``(case, [])``, or ``(None, problems)`` naming ``where`` and ``row``.

    The case's ``metadata`` holds the record's own and ``source`` (the library); its id is the record's
    ``case_id``, ``id`` or ``name``, else :func:`content_id`.

    >>> external_case({"user_input": "q?", "response": "a.", "reference_contexts": ["c"]})[0]["context"]
    ['c']
    >>> external_case({"response": "a."}, where="f.jsonl", row=3)[1][0].message
    'a case without input'
    """
    if not isinstance(record, dict):
        return None, [Problem(where, "a case must be an object", row=row, value=type(record).__name__)]
    kind = source
    if kind == "auto":
        kind = "ragas" if any(k in record for k in ("user_input", "response", "retrieved_contexts")) else "deepeval"
    if kind == "ragas":
        record = {RAGAS_TO_DEEPEVAL.get(k, k): v for k, v in record.items()}
    if not record.get("input"):
        return None, [Problem(where, "a case without input", row=row, field="user_input" if kind == "ragas" else "input",
                              expected="the question or prompt of the case")]
    problems = [Problem(where, "not text", row=row, field=f, value=type(record[f]).__name__, expected="a string")
                for f in TEXT_FIELDS if not isinstance(record.get(f), (str, int, float, type(None)))
                or isinstance(record.get(f), bool)]
    case: dict[str, Any] = {f: str(record[f]) for f in TEXT_FIELDS if record.get(f) not in (None, "")}
    for field in LIST_FIELDS:
        try:
            values = _as_list(record.get(field), kind, list_separator)
        except (ValueError, SyntaxError):
            problems.append(Problem(where, "not a list of chunks", row=row, field=field, value=record.get(field),
                                    expected="a list, or chunks joined by " + repr(list_separator)))
            continue
        if values is not None:
            case[field] = values
    metadata = record.get("additional_metadata") or record.get("metadata") or {}
    if isinstance(metadata, str):
        try:
            metadata = json.loads(metadata)
        except json.JSONDecodeError:
            metadata = {"additional_metadata": metadata}
    case["metadata"] = {**(metadata if isinstance(metadata, dict) else {}), "source": kind}
    identifier = record.get("case_id") or record.get("id") or record.get("name")
    case["case_id"] = str(identifier) if identifier else content_id(case)
    return (None, problems) if problems else (case, [])


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
        case, found = external_case(record, source=source, list_separator=list_separator, where=str(path), row=number)
        problems += found
        if case is not None:
            case["metadata"]["source"] = f"{case['metadata']['source']}:{path.name}"
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


def read_cases_file(campaign_folder: str | Path) -> dict[str, dict]:
    """The cases of a campaign's ``cases.jsonl`` by id (empty when there is none)."""
    path = Path(campaign_folder) / CASES_FILE
    existing: dict[str, dict] = {}
    if path.is_file():
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                record = json.loads(line)
                existing[str(record.get("case_id"))] = record
    return existing


def plan_merge(campaign_folder: str | Path, cases: list[dict], *,
               complete: bool = False) -> tuple[str | None, dict[str, int]]:
    """What :func:`merge_cases` would make of ``cases.jsonl``: its new text (None when it would not
    change) and the counts ``{"added", "unchanged", "completed"}``; raises as it does."""
    path = Path(campaign_folder) / CASES_FILE
    existing = read_cases_file(campaign_folder)
    conflicts, completed = [], {}
    for c in cases:
        before = existing.get(c["case_id"])
        if before is None or case_content(before) == case_content(c):
            continue
        ours = {k: v for k, v in before.items() if k not in ("metadata", "case_id")}
        theirs = {k: v for k, v in c.items() if k not in ("metadata", "case_id")}
        if complete and all(theirs.get(k) == v for k, v in ours.items()):
            completed[c["case_id"]] = {**before, **{k: v for k, v in theirs.items() if k not in ours}}
            continue
        differ = sorted(k for k in set(ours) | set(theirs) if ours.get(k) != theirs.get(k))
        conflicts.append(Problem(str(path), f"case {c['case_id']} is already in the campaign with other content "
                                 f"({', '.join(differ)} differ)", field="case_id", value=c["case_id"],
                                 expected="a new case_id, or the same case"))
    if conflicts:
        raise CampaignError(conflicts)
    added = {c["case_id"]: c for c in cases if c["case_id"] not in existing}
    counts = {"added": len(added), "unchanged": len(cases) - len(added) - len(completed), "completed": len(completed)}
    if not (added or completed or not path.is_file()):
        return None, counts
    rows = [completed.get(case_id, case) for case_id, case in existing.items()] + list(added.values())
    return "".join(json.dumps(c, ensure_ascii=False) + "\n" for c in rows), counts


def merge_cases(campaign_folder: str | Path, cases: list[dict], *, complete: bool = False,
                dry_run: bool = False) -> dict[str, int]:
    """Add ``cases`` to the campaign's ``cases.jsonl`` (created if missing), atomically.

    A case whose id is already there with other content is an error naming it; the same case again is
    left as it is. With ``complete``, a case already there that lacks a field the new one has (an
    expected output added in the source since) gains it, and nothing it has changes. Returns
    ``{"added", "unchanged", "completed"}``; ``dry_run`` writes nothing.
    """
    text, counts = plan_merge(campaign_folder, cases, complete=complete)
    if text is not None and not dry_run:
        with replacing(Path(campaign_folder) / CASES_FILE) as handle:
            handle.write(text)
    return counts


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


def content_id(case: dict) -> str:
    """The id of a case its source gives none: ``case-`` and 12 hex digits of its content's hash (the
    same case read from any file gets the same id).

    >>> content_id({"input": "q?", "actual_output": "a."})
    'case-d99b00e33d68'
    """
    content = json.dumps({k: v for k, v in case.items() if k not in ("metadata", "case_id")}, sort_keys=True)
    return "case-" + hashlib.sha256(content.encode()).hexdigest()[:12]


def case_content(case: dict) -> str:
    """What a case says (its fields but its id and metadata), as text two versions of it compare by."""
    return json.dumps({k: v for k, v in case.items() if k not in ("metadata", "case_id")}, sort_keys=True)
