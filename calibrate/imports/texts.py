"""What the import readers share: the declared shape of a record, ids, the text a tool's inputs and
outputs stand for, the documents a retriever returned, and records read from the JSON or JSONL files
tools export.

Every reader declares the format it reads as :class:`~calibrate.base.documents.Schema` classes and
reads the fields of typed models; no reader indexes raw JSON. A :class:`Record` is strict (a number is
no text, text no number, a boolean no id) and ignores the fields it does not name. Text fields are
data: a bare ``\\r``, a NUL, an escape sequence are kept as they are; only ids have rules (:data:`Id`).

Tracing tools (MLflow, Langfuse, LangSmith) record a request and a response as whatever the
application passed: a string, a dict of named inputs, a chat request. :func:`text_of` turns each
into the text of a case; :func:`documents_of` turns a retriever's output into chunks;
:func:`read_records` reads the records of an export file (a JSON list, an API page
``{"data": [...]}``, or JSON Lines), naming the file and line of what it cannot read.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

from pydantic import BeforeValidator, ConfigDict, JsonValue

from calibrate.base.documents import DocumentError, Schema, check, parse_json, read_bytes
from calibrate.base.errors import Problem

__all__ = [
    "CONTEXT_KEYS",
    "EXPECTED_OUTPUT_NAMES",
    "INPUT_KEYS",
    "OUTPUT_KEYS",
    "Id",
    "OptionalId",
    "Record",
    "documents_of",
    "fits",
    "id_text",
    "json_documents",
    "parsed",
    "problem_text",
    "read_records",
    "text_of",
]

EXPECTED_OUTPUT_NAMES = (
    "expected_response",
    "expected_output",
    "expected_answer",
    "reference",
    "ground_truth",
    "expected",
)
INPUT_KEYS = ("question", "query", "input", "user_input", "prompt", "request", "q")
OUTPUT_KEYS = ("answer", "output", "response", "content", "text", "result")
CONTEXT_KEYS = ("retrieval_context", "retrieved_contexts", "contexts", "context", "documents")
#: the keys an API page holds its records under (Langfuse's and Phoenix's ``data``, LangSmith's lists)
PAGE_KEYS = ("data", "items", "results", "runs", "feedback", "scores", "observations", "traces")


class Record(Schema):
    """A record of another tool's export, as its format declares it: strict types (a number is no
    text, text no number, a boolean no number), fields it does not name ignored, never changed.

    Examples
    --------
    >>> class Score(Record):
    ...     name: str
    ...     value: float | None = None
    >>> check({"name": "f", "value": 1}, Score, source="s.json", expected="a score")[0].value
    1.0
    >>> check({"name": 3}, Score, source="s.json", expected="a score")[1][0].message
    'Input should be a valid string'
    """

    model_config = ConfigDict(strict=True)


def id_text(value: Any) -> str | None:
    """An id as text: a string or an integer; None for anything else (a malformed record's list, object
    or boolean, or an empty string).

    >>> id_text("t1"), id_text(3), id_text(True), id_text(["t1"]), id_text("")
    ('t1', '3', None, None, None)
    """
    if isinstance(value, bool) or not isinstance(value, (str, int)) or value == "":
        return None
    return str(value)


def _id(value: Any) -> str:
    text = id_text(value)
    if text is None:
        raise ValueError(
            "an id is a non-empty text or an integer"
            + (f", not {type(value).__name__}" if not isinstance(value, str) else "")
        )
    return text


def _optional_id(value: Any) -> str | None:
    return None if value is None else _id(value)


#: an id a tool gives (a trace's, a run's, a test's): text or an integer, read as text; never a
#: boolean, a number with a fraction, a list or an object, never empty
Id = Annotated[str, BeforeValidator(_id)]
#: an :data:`Id`, or null / absent
OptionalId = Annotated[str | None, BeforeValidator(_optional_id)]


def fits(value: Any, schema: Any) -> Any:
    """``value`` read as ``schema`` when it fits, else None (for free-form values an application
    passed, read in whichever of the usual shapes they have).

    >>> class Named(Schema):
    ...     name: str
    >>> fits({"name": "x", "k": 1}, Named).name, fits(["x"], Named)
    ('x', None)
    """
    return check(value, schema, source="", expected="")[0]


class _Message(Schema):
    role: JsonValue = None
    content: JsonValue = None


class _Chat(Schema):
    messages: list[JsonValue]


class _Choice(Schema):
    message: JsonValue = None


class _Completion(Schema):
    choices: list[JsonValue]


class _Documents(Schema):
    documents: list[JsonValue]


class _Document(Schema):
    page_content: JsonValue = None
    content: JsonValue = None
    text: JsonValue = None


_Mapping = dict[str, JsonValue]


def text_of(value: Any, keys: tuple[str, ...], *, chat_role: str | None) -> str | None:
    """The text an application's inputs or outputs stand for: a string as it is; a chat request's last
    ``chat_role`` message or a chat completion's reply; the value under a usual key, or the one string
    of a dict; else the value as JSON.

    Examples
    --------
    >>> text_of({"question": "Why?", "k": 3}, INPUT_KEYS, chat_role="user")
    'Why?'
    >>> text_of({"messages": [{"role": "user", "content": "Hi"}]}, INPUT_KEYS, chat_role="user")
    'Hi'
    >>> text_of({"n": 1}, OUTPUT_KEYS, chat_role=None), text_of(None, OUTPUT_KEYS, chat_role=None)
    ('{"n": 1}', None)
    """
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, list) and chat_role and value and all(fits(m, _Mapping) is not None for m in value):
        value = {"messages": value}  # a bare list of chat messages
    named = fits(value, _Mapping)
    if named is not None:
        chat = fits(named, _Chat) if chat_role else None
        if chat is not None:
            messages = (fits(m, _Message) for m in chat.messages)
            said = [m.content for m in messages if m is not None and m.role == chat_role]
            if said and isinstance(said[-1], str):
                return said[-1]
        completion = fits(named, _Completion)
        if completion is not None and completion.choices:
            choice = fits(completion.choices[0], _Choice)
            message = fits(choice.message, _Message) if choice is not None else None
            if message is not None and isinstance(message.content, str):
                return message.content
        for key in keys:
            if isinstance(named.get(key), str):
                return named[key]
        strings = [v for v in named.values() if isinstance(v, str)]
        if len(strings) == 1 and len(named) == 1:
            return strings[0]
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def documents_of(output: Any) -> list[str]:
    """The texts of the documents a retriever returned: strings, or objects with ``page_content``,
    ``content`` or ``text``, as a list or under ``documents``.

    >>> documents_of({"documents": [{"page_content": "a"}, "b", {"id": 3}]})
    ['a', 'b']
    """
    wrapped = fits(output, _Documents)
    items = wrapped.documents if wrapped is not None else output if isinstance(output, list) else [output]
    texts = []
    for item in items:
        if isinstance(item, str):
            texts.append(item)
            continue
        document = fits(item, _Document)
        if document is not None:
            text = next(
                (t for t in (document.page_content, document.content, document.text) if isinstance(t, str)), None
            )
            if text is not None:
                texts.append(text)
    return texts


def parsed(value: Any) -> Any:
    """A value an API gives as raw JSON text (Langfuse's observation input and output) as the value
    (read with the depth and size limits of every document); any other value, or text that is not
    JSON, as it is.

    >>> parsed('{"question": "Why?"}'), parsed("Why?"), parsed('"quoted"'), parsed("[" * 300)[:3]
    ({'question': 'Why?'}, 'Why?', 'quoted', '[[[')
    """
    if isinstance(value, str) and value[:1] in ("{", "[", '"'):
        try:
            return parse_json(value, JsonValue, source="a value", expected="JSON")
        except DocumentError:
            return value
    return value


def problem_text(problems: list[Problem]) -> str:
    """Problems found in one record, in a line (for the skip report): each message with its field.

    >>> problem_text([Problem("f.json", "Input should be a valid string", field="reason", value=3)])
    'reason: Input should be a valid string (found 3)'
    """
    return "; ".join(
        (f"{p.field}: " if p.field else "") + p.message + (f" (found {p.value!r})" if p.value is not None else "")
        for p in problems
    )


class _Page(Schema):
    data: JsonValue = None
    items: JsonValue = None
    results: JsonValue = None
    runs: JsonValue = None
    feedback: JsonValue = None
    scores: JsonValue = None
    observations: JsonValue = None
    traces: JsonValue = None


def json_documents(path: str | Path, *, expected: str) -> list[tuple[int, Any]]:
    """The JSON documents of a file, each with its line: the whole file, else one a line (JSON Lines;
    every line that is not JSON listed in one error).

    Raises
    ------
    DocumentError
        A file that is too large, not UTF-8, not JSON nor JSON Lines, or nested too deep.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "r.jsonl"
    >>> _ = path.write_text('{"a": 1}\\n\\n{"a": 2}\\n')
    >>> json_documents(path, expected="results")
    [(1, {'a': 1}), (3, {'a': 2})]
    """
    path = Path(path)
    data = read_bytes(path, expected=expected)
    try:
        return [(1, parse_json(data, JsonValue, source=str(path), expected=expected))]
    except DocumentError as whole:
        lines = [(n, line) for n, line in enumerate(data.split(b"\n"), 1) if line.strip()]
        if len(lines) < 2 or data.lstrip()[:1] == b"[" or not all(p.row is not None for p in whole.problems):
            raise
        documents, problems = [], []
        for number, line in lines:
            try:
                documents.append(
                    (number, parse_json(line, JsonValue, source=str(path), expected=expected, line=number))
                )
            except DocumentError as exc:
                problems += exc.problems
        if problems:
            raise DocumentError(problems, source=str(path)) from None
        return documents


def read_records(path: str | Path, *, what: str) -> list[tuple[int, Any]]:
    """The records of an export file, each with its line (JSON Lines) or its place in the list (JSON),
    as JSON values for the reader's :class:`Record` schema.

    Parameters
    ----------
    path : str or Path
        A JSON list, a JSON object holding a list under ``data`` (an API page) or another usual key,
        a single JSON object, or JSON Lines (one record, or one API page, a line).
    what : str
        What the file should hold, for the error (``"LangSmith runs"``).

    Raises
    ------
    DocumentError
        A file that is too large, not UTF-8 JSON (or JSON Lines), nested too deep, or that holds
        neither records nor pages of them, naming the file and line.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "scores.jsonl"
    >>> _ = path.write_text('{"data": [{"id": "a"}, {"id": "b"}]}\\n{"id": "c"}\\n')
    >>> read_records(path, what="Langfuse scores")
    [(1, {'id': 'a'}), (1, {'id': 'b'}), (2, {'id': 'c'})]
    >>> _ = path.write_text('{"id": "a"}\\n{"id": \\n')
    >>> read_records(path, what="Langfuse scores")   # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    calibrate.base.documents.DocumentError: 1 problem in ...scores.jsonl:
      ...scores.jsonl, line 2: not valid JSON: EOF while parsing a value (column 7); expected Langfuse scores (JSON or JSON Lines)
    """
    path = Path(path)
    expected = f"{what} (JSON or JSON Lines)"
    documents = json_documents(path, expected=expected)
    records: list[tuple[int, Any]] = []
    for number, document in documents:
        if isinstance(document, list):
            items = document
        elif isinstance(document, dict):
            page = fits(document, _Page)
            items = next((v for v in (getattr(page, k) for k in PAGE_KEYS) if isinstance(v, list)), [document])
        else:
            raise DocumentError(
                [
                    Problem(
                        str(path),
                        f"holds a {type(document).__name__}, not records",
                        row=number,
                        value=document if isinstance(document, (str, int, float)) else None,
                        expected=f"{what}: a list of objects, an API page, or JSON Lines",
                    )
                ],
                source=str(path),
            )
        records += [(number if len(documents) > 1 else i + 1, item) for i, item in enumerate(items)]
    return records
