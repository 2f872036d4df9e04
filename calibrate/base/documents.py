"""Documents from outside calibrate, read through declared schemas.

Every file another tool wrote (a DeepEval test run, a promptfoo output, an Inspect log, a Label Studio
export), every reply a tracking server sends, and every file of calibrate's own that a person can edit
(fingerprints, anchors, samples, designs) is read by one reader per format into typed models
(`pydantic <https://docs.pydantic.dev>`_ v2, one library for all of them). The readers here are the
only way in:

- a size limit is checked before anything is parsed (:func:`max_document_bytes`, or ``max_bytes``);
- the JSON parser is pydantic-core's, which refuses nesting deeper than 200 levels instead of
  exhausting Python's stack, and says the line and column of what it cannot read;
- a value the schema does not allow is a :class:`DocumentError` naming the source, the line (JSON
  Lines) and the field's path (``results[3].score``), the value found and what was expected.

A schema is a :class:`Schema` subclass (extra fields ignored, instances frozen) or any type pydantic
validates (``list[int]``, ``dict[str, JsonValue]``).

Examples
--------
>>> class Score(Schema):
...     name: str
...     value: float
>>> parse_json(b'{"name": "faithfulness", "value": 0.5, "other": 1}', Score, source="run.json",
...            expected="a score").value
0.5
>>> parse_json(b'{"name": "f", "value": "high"}', Score, source="run.json", expected="a score")
Traceback (most recent call last):
...
calibrate.base.documents.DocumentError: 1 problem in run.json:
  run.json, field 'value': Input should be a valid number, unable to parse string as a number (found 'high'); expected a score
"""

from __future__ import annotations

import csv
import functools
import io
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError

from calibrate.base.errors import CampaignError, Problem

__all__ = [
    "MAX_DEPTH",
    "MAX_DOCUMENT_MB",
    "DocumentError",
    "Schema",
    "check",
    "csv_text_rows",
    "field_path",
    "max_document_bytes",
    "parse_json",
    "read_bytes",
    "read_csv_rows",
    "read_json",
    "read_json_lines",
    "read_text",
    "short",
    "validate",
]

T = TypeVar("T")

#: The largest document read at once by default, in megabytes (``CALIBRATE_MAX_DOCUMENT_MB`` changes it,
#: read by :func:`max_document_bytes` when a document is read). A larger file is refused before it is
#: parsed, saying so. (``MAX_DOCUMENT_BYTES``, the module's attribute, is the limit now in force.)
MAX_DOCUMENT_MB = 1024
#: The deepest nesting the JSON parser reads (pydantic-core's own limit); deeper is an error.
MAX_DEPTH = 200


class DocumentError(CampaignError):
    """A document that does not hold what its format declares; ``problems`` lists where and why.

    Examples
    --------
    >>> str(DocumentError([Problem("x.json", "not JSON")], source="x.json")).splitlines()
    ['1 problem in x.json:', '  x.json: not JSON']
    """

    def __init__(self, problems: list[Problem], *, source: str | None = None):
        super().__init__(problems, heading=source or "the document")


class Schema(BaseModel):
    """A declared format: fields it does not name are ignored; a document read is never changed."""

    model_config = ConfigDict(extra="ignore", frozen=True, populate_by_name=True)


@functools.cache
def _adapter(schema: Any) -> TypeAdapter:
    return TypeAdapter(schema)


def max_document_bytes() -> int:
    """The largest document read at once, in bytes: ``CALIBRATE_MAX_DOCUMENT_MB`` megabytes
    (:data:`MAX_DOCUMENT_MB` when unset), read now, so that a value that is not a number above 0 is a
    :class:`~calibrate.base.settings.SettingError` naming it when a document is read, not a
    traceback when calibrate is imported. A value set on the module (``MAX_DOCUMENT_BYTES``) wins.

    >>> max_document_bytes() > 0
    True
    """
    set_here = globals().get("MAX_DOCUMENT_BYTES")
    if isinstance(set_here, int):
        return set_here
    from calibrate.base.settings import env_number

    return int(
        env_number(
            "CALIBRATE_MAX_DOCUMENT_MB",
            MAX_DOCUMENT_MB,
            unit="megabytes",
            meaning="calibrate reads at most of one document (a file, a server's reply)",
        )
        * 2**20
    )


def __getattr__(name: str) -> Any:
    if name == "MAX_DOCUMENT_BYTES":  # the limit in force, read when asked for
        return max_document_bytes()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def field_path(loc: Iterable[Any]) -> str:
    """A pydantic error location as a path people read: ``results[3].score``.

    >>> field_path(("results", 3, "score")), field_path((0, "id")), field_path(())
    ('results[3].score', '[0].id', '')
    """
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else ("." if text else "") + str(part)
    return text


def short(value: Any, limit: int = 80) -> Any:
    """A value found, short enough for a message (text and containers cut to ``limit`` characters),
    redacted (:func:`~calibrate.base.secrets.redact`) *before* it is cut: a credential straddling the
    cut leaves none of its characters.

    >>> short("x" * 100, 10), short([1, 2]), short(3)
    ('xxxxxxxxxx... (100 characters)', '[1, 2]', 3)
    >>> short({"detail": "x" * 20 + " Bearer qz-doctest-99887766"}, 36)
    "{'detail': 'xxxxxxxxxxxxxxxxxxxx Be..."
    """
    from calibrate.base.secrets import redact

    if isinstance(value, (bytes, bytearray)):
        value = bytes(value[: limit * 4 + _MARGIN]).decode("utf-8", errors="replace")
    if isinstance(value, str):
        text = redact(value)
        return text if len(text) <= limit else f"{text[:limit]}... ({len(value)} characters)"
    if isinstance(value, (dict, list, tuple)):
        text = redact(repr(value))
        return text if len(text) <= limit else text[:limit] + "..."
    return value


#: bytes read past a cut before redacting, so that a credential straddling the cut is whole when
#: redacted (longer than any credential calibrate holds)
_MARGIN = 8192


_AT_LINE = re.compile(r" at line (\d+) column (\d+)$")


def _problems(exc: ValidationError, *, source: str, expected: str, line: int | None, prefix: str) -> list[Problem]:
    problems = []
    for error in exc.errors(include_url=False):
        message = str(error.get("msg", "invalid"))
        row = line
        if error.get("type") == "json_invalid":
            found = _AT_LINE.search(message)
            if found:
                message = message[: found.start()]
                inner = int(found.group(1))
                row = inner if line is None else line + inner - 1
                message += f" (column {found.group(2)})"
            if "recursion limit" in message:
                message = f"nested deeper than {MAX_DEPTH} levels"
            problems.append(
                Problem(source, message.replace("Invalid JSON: ", "not valid JSON: "), row=row, expected=expected)
            )
            continue
        path = field_path(error.get("loc", ()))
        path = f"{prefix}.{path}".strip(".") if prefix and path and not path.startswith("[") else prefix + path
        found = error.get("input")
        problems.append(
            Problem(
                source,
                message,
                row=row,
                field=path or None,
                value=None if isinstance(found, dict) else short(found),
                expected=expected,
            )
        )
    return problems


def parse_json(
    data: bytes | str, schema: Any, *, source: str, expected: str, line: int | None = None, max_bytes: int | None = None
) -> Any:
    """JSON text read into ``schema``.

    Parameters
    ----------
    data : bytes or str
        The JSON text (bytes must be UTF-8).
    schema : type
        A :class:`Schema`, or any type pydantic validates.
    source : str
        What the text came from, for the error (a file's path, ``MLflow at URL: GET /path``).
    expected : str
        What the text should hold, for the error (``"a DeepEval test run"``).
    line : int, optional
        The line the text starts at in its file (JSON Lines), for the error.
    max_bytes : int, optional
        The longest text read (:func:`max_document_bytes` by default).

    Raises
    ------
    DocumentError
        Text that is too long, not JSON, nested too deep, or not what the schema declares.

    Examples
    --------
    >>> parse_json("[1, 2]", list[int], source="a.json", expected="numbers")
    [1, 2]
    >>> parse_json("[" * 300 + "]" * 300, list, source="a.json", expected="numbers")
    Traceback (most recent call last):
    ...
    calibrate.base.documents.DocumentError: 1 problem in a.json:
      a.json, line 1: nested deeper than 200 levels; expected numbers
    """
    limit = max_document_bytes() if max_bytes is None else max_bytes
    if len(data) > limit:
        raise DocumentError(
            [
                Problem(
                    source,
                    f"{len(data):,} bytes, more than the {limit:,} calibrate reads at once",
                    row=line,
                    expected=expected + " (CALIBRATE_MAX_DOCUMENT_MB raises the limit)",
                )
            ],
            source=source,
        )
    if isinstance(data, (bytes, bytearray)) and data[:3] == b"\xef\xbb\xbf":
        data = data[3:]  # a UTF-8 byte-order mark (Windows tools write one)
    try:
        return _adapter(schema).validate_json(data)
    except ValidationError as exc:
        problems = _problems(exc, source=source, expected=expected, line=line, prefix="")
        if isinstance(data, (bytes, bytearray)) and any(e.get("type") == "json_invalid" for e in exc.errors()):
            try:
                bytes(data).decode("utf-8")
            except UnicodeDecodeError as bad:  # say so, not "expected value"
                row = data.count(b"\n", 0, bad.start) + (line or 1)
                problems = [
                    Problem(
                        source,
                        f"not UTF-8 text (byte {data[bad.start]:#04x} at offset {bad.start})",
                        row=row,
                        expected=expected + ", saved as UTF-8",
                    )
                ]
        raise DocumentError(problems, source=source) from None


def check(
    value: Any, schema: Any, *, source: str, expected: str, line: int | None = None, field: str = ""
) -> tuple[Any, list[Problem]]:
    """A value already read (a record of a list, a TOML table) checked against ``schema``: ``(model,
    [])``, or ``(None, problems)`` naming ``field`` and the path below it.

    Examples
    --------
    >>> check({"a": 1}, dict[str, int], source="f.json", expected="counts")
    ({'a': 1}, [])
    >>> check({"a": "x"}, dict[str, int], source="f.json", expected="counts", line=4, field="counts")[1][0].field
    'counts.a'
    """
    try:
        return _adapter(schema).validate_python(value), []
    except ValidationError as exc:
        return None, _problems(exc, source=source, expected=expected, line=line, prefix=field)
    except RecursionError:
        return None, [
            Problem(source, f"nested deeper than {MAX_DEPTH} levels", row=line, field=field or None, expected=expected)
        ]


def validate(value: Any, schema: Any, *, source: str, expected: str, line: int | None = None, field: str = "") -> Any:
    """As :func:`check`, raising :class:`DocumentError` instead of returning the problems.

    >>> validate([1, "2"], list[int], source="f.json", expected="numbers")
    [1, 2]
    """
    model, problems = check(value, schema, source=source, expected=expected, line=line, field=field)
    if problems:
        raise DocumentError(problems, source=source)
    return model


def read_bytes(path: str | Path, *, expected: str, max_bytes: int | None = None) -> bytes:
    """A file's bytes, refused before it is read when larger than ``max_bytes``.

    Raises
    ------
    DocumentError
        A file that cannot be read or is too large, naming it.
    """
    path = Path(path)
    limit = max_document_bytes() if max_bytes is None else max_bytes
    try:
        size = path.stat().st_size
        if size > limit:
            raise DocumentError(
                [
                    Problem(
                        str(path),
                        f"{size:,} bytes, more than the {limit:,} calibrate reads at once",
                        expected=expected + " (CALIBRATE_MAX_DOCUMENT_MB raises the limit)",
                    )
                ],
                source=str(path),
            )
        with path.open("rb") as handle:
            return handle.read(limit + 1)
    except OSError as exc:
        raise DocumentError(
            [Problem(str(path), f"cannot be read ({exc.strerror or exc})", expected=expected)], source=str(path)
        ) from None


def read_json(path: str | Path, schema: Any, *, expected: str, max_bytes: int | None = None) -> Any:
    """A JSON file read into ``schema`` (see :func:`parse_json`).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "a.json"
    >>> _ = path.write_bytes(b'{"n": 3}')
    >>> read_json(path, dict[str, int], expected="counts")
    {'n': 3}
    """
    data = read_bytes(path, expected=expected, max_bytes=max_bytes)
    return parse_json(data, schema, source=str(path), expected=expected, max_bytes=max_bytes)


def read_json_lines(
    path: str | Path, schema: Any, *, expected: str, max_bytes: int | None = None, skip_blank: bool = True
) -> list[tuple[int, Any]]:
    """Each line of a JSON Lines file read into ``schema``, with its line number; every line that is
    not valid is listed in one :class:`DocumentError`.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "a.jsonl"
    >>> _ = path.write_bytes(b'{"n": 1}\\n\\n{"n": 2}\\n')
    >>> read_json_lines(path, dict[str, int], expected="counts")
    [(1, {'n': 1}), (3, {'n': 2})]
    """
    data = read_bytes(path, expected=expected, max_bytes=max_bytes)
    found, problems = [], []
    for number, line in enumerate(data.split(b"\n"), 1):
        if skip_blank and not line.strip():
            continue
        try:
            found.append((number, parse_json(line, schema, source=str(path), expected=expected, line=number)))
        except DocumentError as exc:
            problems += exc.problems
    if problems:
        raise DocumentError(problems, source=str(path))
    return found


def read_text(path: str | Path, *, expected: str, max_bytes: int | None = None) -> str:
    """A text file's text: UTF-8 (a byte-order mark, as spreadsheets write one, dropped), within the size
    limit; a byte that is not UTF-8 is a :class:`DocumentError` naming the file, its line and offset.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "a.csv"
    >>> _ = path.write_bytes(b"\\xef\\xbb\\xbfcase_id\\nc1\\n")
    >>> read_text(path, expected="a table")
    'case_id\\nc1\\n'
    >>> _ = path.write_bytes(b"case_id\\ncaf\\xe9\\n")
    >>> read_text(path, expected="a table")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    calibrate.base.documents.DocumentError: 1 problem in ...a.csv:
      ...a.csv, line 2: not UTF-8 text (byte 0xe9 at offset 11); expected a file saved as UTF-8
    """
    data = read_bytes(path, expected=expected, max_bytes=max_bytes)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DocumentError(
            [
                Problem(
                    str(path),
                    f"not UTF-8 text (byte {data[exc.start]:#04x} at offset {exc.start})",
                    row=data.count(b"\n", 0, exc.start) + 1,
                    expected="a file saved as UTF-8",
                )
            ],
            source=str(path),
        ) from None


def read_csv_rows(
    path: str | Path, *, expected: str, max_bytes: int | None = None
) -> tuple[list[str], list[tuple[int, list[str]]]]:
    """A CSV file's header and rows, each row with the physical line it starts on (a quoted field may
    span lines, and blank rows are skipped, so a row's line is not its index). What is checked here is
    what every table shares: text (:func:`read_text`), a header, each column once, each row as wide as
    the header; the caller checks the columns and the values.

    Raises
    ------
    DocumentError
        Every problem found, each naming the file and the line.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "a.csv"
    >>> _ = path.write_text('case_id,reason\\nc1,"two\\nlines"\\n\\nc2,x\\n')
    >>> read_csv_rows(path, expected="a table")
    (['case_id', 'reason'], [(2, ['c1', 'two\\nlines']), (5, ['c2', 'x'])])
    """
    return csv_text_rows(read_text(path, expected=expected, max_bytes=max_bytes), source=str(path), expected=expected)


def csv_text_rows(text: str, *, source: str, expected: str) -> tuple[list[str], list[tuple[int, list[str]]]]:
    """:func:`read_csv_rows` of a CSV file's text already read (:func:`read_text`), ``source`` its file."""
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader, None)
        if header is None:
            raise DocumentError([Problem(source, "the file is empty", row=1, expected=expected)], source=source)
        problems = [
            Problem(
                source,
                "duplicate column (a second column of this name would be ignored)",
                row=1,
                field=name,
                expected="each column once",
            )
            for name in sorted({n for n in header if header.count(n) > 1})
        ]
        rows, start = [], reader.line_num + 1
        for record in reader:
            if any(value != "" for value in record):
                if len(record) != len(header):
                    problems.append(
                        Problem(
                            source,
                            f"{len(record)} field(s) where the header has {len(header)}",
                            row=start,
                            expected="one field per column",
                        )
                    )
                else:
                    rows.append((start, record))
            start = reader.line_num + 1
    except csv.Error as exc:
        raise DocumentError(
            [Problem(source, f"not a readable CSV file: {exc}", row=reader.line_num)], source=source
        ) from None
    if problems:
        raise DocumentError(problems, source=source)
    return header, rows
