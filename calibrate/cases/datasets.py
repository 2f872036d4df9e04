"""Bring the cases users already have: DeepEval goldens / test cases and RAGAS datasets.

Reads the files DeepEval's ``EvaluationDataset.save_as`` (JSON, JSONL, CSV) and RAGAS's
``EvaluationDataset.to_jsonl`` / ``to_csv`` write, maps RAGAS names to DeepEval's (the campaign's
names), and merges the cases into a campaign's ``cases.jsonl``: a case already there with the same
id and other content is an error (nothing is overwritten), the same case again is skipped.
"""

from __future__ import annotations

import ast
import csv
import hashlib
import io
import json
import math
import re
from pathlib import Path
from typing import Annotated, Any, Literal

import pandas as pd
from pydantic import BeforeValidator, ConfigDict, JsonValue

from calibrate.base.documents import (
    DocumentError,
    Schema,
    check,
    parse_json,
    read_bytes,
    read_json_lines,
    short,
)
from calibrate.base.errors import NO_VALUE, CampaignError, ParameterText, Problem
from calibrate.base.files import replacing, writes_campaign
from calibrate.base.results import Result, single_row
from calibrate.base.secrets import clip
from calibrate.campaign import CASES_FILE
from calibrate.campaign.readers import id_problem

__all__ = [
    "CONTENT_ID",
    "RAGAS_TO_DEEPEVAL",
    "CaseRecord",
    "case_content",
    "content_id",
    "external_case",
    "id_field",
    "import_cases",
    "is_content_id",
    "jsonl_line",
    "merge_cases",
    "plan_merge",
    "read_cases_file",
    "read_external_cases",
]

RAGAS_TO_DEEPEVAL = {
    "user_input": "input",
    "response": "actual_output",
    "reference": "expected_output",
    "retrieved_contexts": "retrieval_context",
    "reference_contexts": "context",
}
LIST_FIELDS = ("retrieval_context", "context")
TEXT_FIELDS = ("input", "actual_output", "expected_output")
Source = Literal["auto", "deepeval", "ragas"]


class _Dataset(Schema):
    """A JSON dataset that is an object: its cases under ``goldens``, ``test_cases`` or ``samples``."""

    goldens: JsonValue = None
    test_cases: JsonValue = None
    samples: JsonValue = None


def _rows(path: Path) -> list[tuple[int, Any]]:
    """(line or row number, record) of a JSON list, JSONL or CSV file (records as JSON values, or a CSV
    row's texts), read within the limits of every document."""
    expected = "a DeepEval or RAGAS dataset: a JSON list of cases, JSON Lines, or CSV"
    if path.suffix == ".csv":
        data = read_bytes(path, expected=expected)
        twice = _repeated_columns(data)
        if twice:  # pandas would rename the second "input" to "input.1", and the case would keep only one
            raise DocumentError(
                [
                    Problem(
                        str(path),
                        "columns named twice: " + ", ".join(repr(c) for c in twice),
                        row=1,
                        expected="one column of each name",
                    )
                ],
                source=str(path),
            )
        try:
            frame = pd.read_csv(io.BytesIO(data), dtype=str, keep_default_na=False, encoding="utf-8")
        except Exception as exc:  # noqa: BLE001 - pandas raises many kinds for a file that is not CSV
            raise DocumentError(
                [
                    Problem(
                        str(path),
                        f"not a readable CSV file ({type(exc).__name__}: {clip(exc, 200)})",
                        expected=expected,
                    )
                ],
                source=str(path),
            ) from None
        return [(i + 2, record) for i, record in enumerate(frame.to_dict("records"))]
    if path.suffix == ".json":
        data = parse_json(read_bytes(path, expected=expected), JsonValue, source=str(path), expected=expected)
        dataset = check(data, _Dataset, source=str(path), expected=expected)[0] if isinstance(data, dict) else None
        if dataset is not None:  # {"goldens": [...]} or {"test_cases": [...]} or {"samples": [...]}
            data = next((v for v in (dataset.goldens, dataset.test_cases, dataset.samples) if v is not None), data)
        if not isinstance(data, list):
            raise DocumentError(
                [Problem(str(path), "expected a list of cases", value=type(data).__name__, expected=expected)],
                source=str(path),
            )
        return [(i + 1, record) for i, record in enumerate(data)]
    return read_json_lines(path, JsonValue, expected=expected)


def _repeated_columns(data: bytes) -> list[str]:
    """The names a CSV file's header row gives to more than one column (none when it cannot be read:
    the CSV reader says why)."""
    try:
        header = next(csv.reader(io.StringIO(data.decode("utf-8-sig"), newline="")), [])
    except (UnicodeDecodeError, csv.Error):
        return []
    return sorted({name for name in header if header.count(name) > 1})


def _chunks_of(text: str) -> list[Any]:
    """A list RAGAS's CSV holds as text (Python's repr of a list of strings, or JSON)."""
    try:
        return parse_json(text, list[JsonValue], source="", expected="")
    except DocumentError:
        pass
    try:  # the parser refuses nesting past 200 levels (a SyntaxError), never exhausting the stack
        found = ast.literal_eval(text)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        raise ValueError("not a list of chunks") from None
    if not isinstance(found, list):
        raise ValueError("not a list of chunks")
    return found


def _as_list(value: Any, source: str, separator: str) -> list[str] | None:
    if value is None or value == "":
        return None
    if isinstance(value, str) and value.startswith("[") and source == "ragas":
        value = _chunks_of(value)
    if isinstance(value, list):
        if not all(isinstance(v, (str, int, float)) and not isinstance(v, bool) for v in value):
            raise ValueError("a chunk that is not text")
        return [str(v) for v in value]
    if not isinstance(value, (str, int, float)) or isinstance(value, bool):
        raise ValueError("not a list of chunks")
    text = str(value)
    return [part for part in text.split(separator)] if separator else [text]


def _text(value: Any) -> Any:
    """A text field as text: a string as it is (every character kept: text is data), a number as its
    digits; anything else refused."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"not text: {'a boolean' if isinstance(value, bool) else type(value).__name__}")
    if isinstance(value, float) and not math.isfinite(value):  # a NaN or Infinity literal, or 1e400
        raise ValueError(f"not text: a number that is not finite ({value}); write the text in quotes")
    if isinstance(value, int) and value.bit_length() > 3000:  # ~900 digits: no question, and past str()'s limit
        raise ValueError("not text: an integer of hundreds of digits; write the text in quotes")
    return str(value)


def _identifier(value: Any) -> Any:
    if value is None or value == "":
        return None
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise ValueError("an id is a text or an integer")
    return str(value)


CaseText = Annotated[str | None, BeforeValidator(_text)]
CaseId = Annotated[str | None, BeforeValidator(_identifier)]


class CaseRecord(Schema):
    """One case of a dataset (or of another tool's export), in DeepEval's field names (RAGAS's are
    mapped to them first): the text fields as text, the context lists as lists of chunks or chunks
    joined by a separator (read by the caller, which knows the separator), the metadata an object
    (or its JSON text), the id text or an integer."""

    model_config = ConfigDict(strict=True)
    input: CaseText = None
    actual_output: CaseText = None
    expected_output: CaseText = None
    retrieval_context: JsonValue = None
    context: JsonValue = None
    metadata: JsonValue = None
    additional_metadata: JsonValue = None
    case_id: CaseId = None
    id: CaseId = None
    name: CaseId = None


def _metadata(value: Any) -> dict[str, Any]:
    """A record's metadata: an object, or the JSON text of one; other text kept under
    ``additional_metadata``."""
    if isinstance(value, str):
        try:
            return parse_json(value, dict[str, JsonValue], source="metadata", expected="an object")
        except DocumentError:
            return {"additional_metadata": value}
    return value if isinstance(value, dict) else {}


def _both_names(record: dict, where: str, row: int | None) -> list[Problem]:
    """A problem per field a RAGAS record holds under both its RAGAS and its DeepEval name, with two values."""
    both = [(k, v) for k, v in RAGAS_TO_DEEPEVAL.items() if k in record and v in record and record[k] != record[v]]
    return [
        Problem(
            where,
            f"both {k!r} (RAGAS's name) and {v!r} (DeepEval's), with different values: "
            "which one the case holds is unclear",
            row=row,
            field=k,
            expected="one of the two names",
        )
        for k, v in both
    ]


def _add_lists(
    case: dict[str, Any], fields: CaseRecord, kind: str, list_separator: str, where: str, row: int | None
) -> list[Problem]:
    """Add the record's context lists to ``case``; a problem per field that is no list of chunks."""
    problems = []
    for field in LIST_FIELDS:
        try:
            values = _as_list(getattr(fields, field), kind, list_separator)
        except ValueError:
            problems.append(
                Problem(
                    where,
                    "not a list of chunks",
                    row=row,
                    field=field,
                    value=short(getattr(fields, field)),
                    expected="a list, or chunks joined by " + repr(list_separator),
                )
            )
            continue
        if values is not None:
            case[field] = values
    return problems


def _id_problems(fields: CaseRecord, identifier: str | None, where: str, row: int | None) -> list[Problem]:
    """The problem of a record's own id that breaks the rule every loader applies to cases.jsonl, if any."""
    if identifier and (why := id_problem(identifier)):
        named = "case_id" if fields.case_id else "id" if fields.id else "name"
        return [
            Problem(
                where,
                f"the case id {why}",
                row=row,
                field=named,
                value=identifier,
                expected="text without control characters, or a whole number",
            )
        ]
    return []


def external_case(
    record: Any,
    *,
    source: Source = "auto",
    list_separator: str = "|",
    where: str = "",
    row: int | None = None,
    id_from: str | None = None,
) -> tuple[dict | None, list[Problem]]:
    """One record of a DeepEval or RAGAS dataset (or of another tool's export, in either's field names)
    as a case of the campaign: ``(case, [])``, or ``(None, problems)`` naming ``where``, ``row`` and
    the field (the record is read as a :class:`CaseRecord`).

    The case's ``metadata`` holds the record's own and ``source`` (the library); its id is the field
    ``id_from`` names (:func:`id_field`; a record without it is a problem), else the record's
    ``case_id``, ``id`` or ``name``, else :func:`content_id`. Text is kept as it is: a ``\\r``, a NUL
    or an escape sequence in a text field is data.

    >>> external_case({"user_input": "q?", "response": "a.", "reference_contexts": ["c"]})[0]["context"]
    ['c']
    >>> external_case({"response": "a."}, where="f.jsonl", row=3)[1][0].message
    'a case without input'
    >>> external_case({"input": "q?\\r", "actual_output": {"a": 1}}, where="f.jsonl")[1][0].field
    'actual_output'
    """
    if not isinstance(record, dict):
        return None, [Problem(where, "a case must be an object", row=row, value=type(record).__name__)]
    kind = source
    if kind == "auto":
        kind = "ragas" if any(k in record for k in ("user_input", "response", "retrieved_contexts")) else "deepeval"
    if kind == "ragas":
        both = _both_names(record, where, row)
        if both:  # one name would silently replace the other
            return None, both
        record = {RAGAS_TO_DEEPEVAL.get(k, k): v for k, v in record.items()}
    fields, problems = check(
        record, CaseRecord, source=where, line=row, expected="a case: text fields, lists of chunks, a metadata object"
    )
    if fields is not None and not fields.input:
        return None, [
            Problem(
                where,
                "a case without input",
                row=row,
                field="user_input" if kind == "ragas" else "input",
                expected="the question or prompt of the case",
            )
        ]
    if fields is None:
        return None, problems
    case: dict[str, Any] = {f: getattr(fields, f) for f in TEXT_FIELDS if getattr(fields, f) not in (None, "")}
    problems += _add_lists(case, fields, kind, list_separator, where, row)
    case["metadata"] = {**_metadata(fields.additional_metadata or fields.metadata or {}), "source": kind}
    if id_from is not None:  # RAGAS's names were mapped to DeepEval's above: the path is mapped alike
        head, dot, rest = id_from.partition(".")
        path = (RAGAS_TO_DEEPEVAL.get(head, head) if kind == "ragas" else head) + dot + rest
        named = id_field(record, path, metadata=case["metadata"])
        if named is None:
            problems.append(
                Problem(
                    where,
                    "no case id in the field named to take ids from",
                    row=row,
                    field=id_from,
                    value=short(_lookup(record, path, case["metadata"])),
                    expected="a text on one line (no control character) or a whole number, in every record",
                )
            )
        case["case_id"] = named
        return (None, problems) if problems else (case, [])
    identifier = fields.case_id or fields.id or fields.name
    problems += _id_problems(fields, identifier, where, row)
    case["case_id"] = identifier if identifier else content_id(case)
    return (None, problems) if problems else (case, [])


def _lookup(record: dict, path: str, metadata: dict) -> Any:
    """The value at a dotted ``path`` of a record (an object held as JSON text, as in a CSV cell, is
    read as the object); ``metadata.KEY`` also reads the case's metadata (DeepEval's
    ``additional_metadata``)."""
    head, _, rest = path.partition(".")
    value: Any = record.get(head)
    if head == "metadata" and value is None:
        value = metadata
    for part in rest.split(".") if rest else []:
        if isinstance(value, str):
            try:
                value = parse_json(value, dict[str, JsonValue], source="", expected="")
            except DocumentError:
                return None
        if not isinstance(value, dict):
            return None
        value = value.get(part)
    return value


#: what a case id taken from a field may not hold: control characters and line breaks (an id is one
#: line a person reads, in a terminal, a CSV row and a Label Studio task)
UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def id_field(record: dict, path: str, *, metadata: dict | None = None) -> str | None:
    """The case id a record holds at ``path`` (``--id-from``): a top-level field (``name``,
    ``ticket_id``), or a dotted path into an object field (``additional_metadata.ticket``,
    ``custom_column_key_values.id``; ``metadata.KEY`` reads the case's metadata, however the file held
    it). A text (not blank, on one line, without control characters) or a whole number; None when the
    record has none there.

    Examples
    --------
    >>> id_field({"input": "q", "additional_metadata": {"ticket": 4711}}, "additional_metadata.ticket")
    '4711'
    >>> id_field({"input": "q", "additional_metadata": '{"ticket": "T-9"}'}, "additional_metadata.ticket")
    'T-9'
    >>> id_field({"input": "q", "name": None}, "name") is None, id_field({"name": "  "}, "name") is None
    (True, True)
    """
    value = _lookup(record, path, metadata or {})
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        return None
    text = str(value)
    return text if text.strip() and not UNPRINTABLE.search(text) else None


def read_external_cases(
    path: str | Path, *, source: Source = "auto", list_separator: str = "|", id_from: str | None = None
) -> list[dict]:
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
    id_from : str, optional
        The field that holds each case's id (:func:`id_field`: ``name``, ``additional_metadata.ticket``):
        every record must have one there, and no two the same.

    Returns
    -------
    list of dict
        One case per record: ``case_id`` (the field ``id_from`` names, else the record's ``case_id``,
        ``id`` or DeepEval ``name``, else a content hash), the text fields, the context lists and
        ``metadata``.

    Examples
    --------
    >>> import json, tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "ragas.jsonl"
    >>> _ = path.write_text(json.dumps({"user_input": "q?", "response": "a.", "retrieved_contexts": ["c"]}))
    >>> case = read_external_cases(path)[0]
    >>> case["input"], case["actual_output"], case["retrieval_context"]
    ('q?', 'a.', ['c'])
    """
    return _read_cases(Path(path), source, list_separator, id_from)[0]


def _read_cases(path: Path, source: Source, list_separator: str, id_from: str | None) -> tuple[list[dict], list[str]]:
    """The cases of a dataset file, and the warnings about them (ids that are content hashes)."""
    if id_from is not None and (not isinstance(id_from, str) or not all(part.strip() for part in id_from.split("."))):
        raise ValueError(
            ParameterText(
                "{id_from}: expected the name of a field, or names joined by dots (name, "
                "ticket_id, additional_metadata.ticket)",
                id_from=id_from,
            )
        )
    problems: list[Problem] = []
    cases, nameless = [], 0
    for number, record in _rows(path):
        case, found = external_case(
            record, source=source, list_separator=list_separator, where=str(path), row=number, id_from=id_from
        )
        problems += found
        if case is not None:
            case["metadata"]["source"] = f"{case['metadata']['source']}:{path.name}"
            cases.append((number, case))
            # DeepEval writes "name": null where it has none (save_as drops every test case's name)
            nameless += isinstance(record, dict) and "name" in record and id_field(record, "name") is None
    seen: dict[str, int] = {}
    for number, case in cases:
        if case["case_id"] in seen:
            problems.append(
                Problem(
                    str(path),
                    f"two cases with id {case['case_id']} (first at {seen[case['case_id']]})",
                    row=number,
                    field=id_from or "case_id",
                )
            )
        seen.setdefault(case["case_id"], number)
    if problems:
        raise CampaignError(problems)
    hashed = [case["case_id"] for _, case in cases if case["case_id"] == content_id(case)]
    warnings = []
    if hashed and id_from is None:
        warnings.append(
            ParameterText(
                "{_n} of {_total} case(s) of {_file} have no case_id, id or name, so their ids are hashes of their "
                "content (such as {_example}), which people cannot tell apart{_why}; {id_from} takes the ids from a "
                "field of the records (such as name, or additional_metadata.KEY)",
                id_from=NO_VALUE,
                _n=len(hashed),
                _total=len(cases),
                _file=path.name,
                _example=hashed[0],
                _why=(
                    ": DeepEval wrote no name (EvaluationDataset.save_as keeps a golden's name and drops a test case's)"
                    if nameless
                    else ""
                ),
            )
        )
    return [case for _, case in cases], warnings


def read_cases_file(campaign_folder: str | Path) -> dict[str, dict]:
    """The cases of a campaign's ``cases.jsonl`` by id (empty when there is none)."""
    path = Path(campaign_folder) / CASES_FILE
    existing: dict[str, dict] = {}
    if path.is_file():
        for _, record in read_json_lines(
            path, dict[str, JsonValue], expected="the campaign's cases: a JSON object a line"
        ):
            existing[str(record.get("case_id"))] = record
    return existing


#: characters JSON leaves as they are that some readers take for a line break (Python's
#: ``str.splitlines``, JavaScript): escaped in a JSON Lines file, so that each record stays on its line
LINE_BREAKS = {"\u2028": "\\u2028", "\u2029": "\\u2029", "\x85": "\\u0085"}


def jsonl_line(record: dict) -> str:
    """A record as one line of a JSON Lines file: its text kept whole (non-ASCII as it is, control
    characters and the characters some readers take for line breaks escaped).

    >>> jsonl_line({"input": "a\\u2028b\\rc é"})
    '{"input": "a\\\\u2028b\\\\rc é"}\\n'
    """
    text = json.dumps(record, ensure_ascii=False)
    for character, escaped in LINE_BREAKS.items():
        text = text.replace(character, escaped)
    return text + "\n"


def plan_merge(
    campaign_folder: str | Path,
    cases: list[dict],
    *,
    complete: bool = False,
    existing: dict[str, dict] | None = None,
) -> tuple[str | None, dict[str, int]]:
    """What :func:`merge_cases` would make of ``cases.jsonl``: its new text (None when it would not
    change) and the counts ``{"added", "unchanged", "completed"}``; raises as it does (and for a case id
    the campaign's loader would refuse: :func:`~calibrate.campaign.readers.id_problem`). ``existing``:
    the file's cases as :func:`read_cases_file` gives them, when the caller read them already."""
    path = Path(campaign_folder) / CASES_FILE
    unfit = [
        Problem(
            str(path),
            f"case id {why}: nothing was written",
            field="case_id",
            value=c["case_id"],
            expected="text without control characters: fix it in the source",
        )
        for c in cases
        if (why := id_problem(c["case_id"]))
    ]
    if unfit:
        raise CampaignError(unfit)
    existing = read_cases_file(campaign_folder) if existing is None else existing
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
        conflicts.append(
            Problem(
                str(path),
                f"case {c['case_id']} is already in the campaign with other content ({', '.join(differ)} differ)",
                field="case_id",
                value=c["case_id"],
                expected="a new case_id, or the same case",
            )
        )
    if conflicts:
        raise CampaignError(conflicts)
    added = {c["case_id"]: c for c in cases if c["case_id"] not in existing}
    counts = {"added": len(added), "unchanged": len(cases) - len(added) - len(completed), "completed": len(completed)}
    if not (added or completed or not path.is_file()):
        return None, counts
    rows = [completed.get(case_id, case) for case_id, case in existing.items()] + list(added.values())
    return "".join(jsonl_line(c) for c in rows), counts


@writes_campaign("calibrate cases import")
def merge_cases(
    campaign_folder: str | Path, cases: list[dict], *, complete: bool = False, dry_run: bool = False
) -> dict[str, int]:
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


def _hashed_before(campaign_folder: str | Path, cases: list[dict]) -> list[Problem]:
    """Cases that arrive under an id of their own and are already in the campaign under the hash of the
    same content (imported before without ids): adding them would hold each case twice."""
    existing = read_cases_file(campaign_folder)
    problems = []
    for case in cases:
        hashed = content_id(case)
        before = existing.get(hashed)
        if (
            case["case_id"] != hashed
            and case["case_id"] not in existing
            and before is not None
            and case_content(before) == case_content(case)
        ):
            problems.append(
                Problem(
                    str(Path(campaign_folder) / CASES_FILE),
                    f"case {case['case_id']} is already in "
                    f"the campaign as {hashed} (its content hash, from an import without ids): "
                    "nothing was written",
                    field="case_id",
                    value=case["case_id"],
                    expected=f"one id per case: import without --id-from, or remove {hashed} (and "
                    "its ratings) from the campaign first",
                )
            )
    return problems


@writes_campaign("calibrate cases import")
def import_cases(
    campaign_folder: str | Path,
    source_file: str | Path,
    *,
    source: Source = "auto",
    list_separator: str = "|",
    id_from: str | None = None,
) -> Result:
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
    id_from : str, optional
        The field holding each case's id (:func:`id_field`), for a file whose cases have no
        ``case_id``, ``id`` or ``name`` (DeepEval's ``save_as`` writes a test case without its name).

    Returns
    -------
    Result
        ``{"added", "unchanged", "completed", "cases_file", "warnings"}``: a warning when ids are
        hashes of the cases' content.

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
        raise CampaignError(
            [
                Problem(
                    str(folder),
                    "no campaign here (no campaign.toml): nothing was written",
                    expected="a campaign folder: check its name, or start one with calibrate init FOLDER --metric NAME",
                )
            ]
        )
    cases, warnings = _read_cases(Path(source_file), source, list_separator, id_from)
    problems = _hashed_before(campaign_folder, cases)
    if problems:
        raise CampaignError(problems)
    counts = merge_cases(campaign_folder, cases)
    return Result(counts | {"cases_file": str(Path(campaign_folder) / CASES_FILE), "warnings": warnings}, single_row)


#: an id :func:`content_id` made (``case-`` and 12 hex digits), wherever it stands in a text
CONTENT_ID = re.compile(r"(?<![\w-])case-[0-9a-f]{12}(?![\w-])")


def is_content_id(case_id: str) -> bool:
    """Whether ``case_id`` has the shape of an id calibrate hashed from a case's content.

    >>> is_content_id("case-d99b00e33d68"), is_content_id("refunds-3"), is_content_id("case-d99b00e33d68x")
    (True, False, False)
    """
    return CONTENT_ID.fullmatch(case_id) is not None


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
