"""What the import readers share: the text a tool's inputs and outputs stand for, the documents a
retriever returned, and records read from the JSON or JSONL files tools export.

Tracing tools (MLflow, Langfuse, LangSmith) record a request and a response as whatever the
application passed: a string, a dict of named inputs, a chat request. :func:`text_of` turns each
into the text of a case; :func:`documents_of` turns a retriever's output into chunks;
:func:`read_records` reads the records of an export file (a JSON list, an API page
``{"data": [...]}``, or JSON Lines), naming the file and line of what it cannot read.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from calibrate.base.errors import CampaignError, Problem

__all__ = ["INPUT_KEYS", "OUTPUT_KEYS", "EXPECTED_OUTPUT_NAMES", "CONTEXT_KEYS", "text_of", "documents_of",
           "parsed", "read_records", "problem_text", "id_text"]

EXPECTED_OUTPUT_NAMES = ("expected_response", "expected_output", "expected_answer", "reference", "ground_truth",
                         "expected")
INPUT_KEYS = ("question", "query", "input", "user_input", "prompt", "request", "q")
OUTPUT_KEYS = ("answer", "output", "response", "content", "text", "result")
CONTEXT_KEYS = ("retrieval_context", "retrieved_contexts", "contexts", "context", "documents")
#: the keys an API page holds its records under (Langfuse's and Phoenix's ``data``, LangSmith's lists)
PAGE_KEYS = ("data", "items", "results", "runs", "feedback", "scores", "observations", "traces")


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
    if isinstance(value, list) and chat_role and value and all(isinstance(m, dict) for m in value):
        value = {"messages": value}   # a bare list of chat messages
    if isinstance(value, dict):
        if chat_role and isinstance(value.get("messages"), list):
            said = [m.get("content") for m in value["messages"] if isinstance(m, dict) and m.get("role") == chat_role]
            if said and isinstance(said[-1], str):
                return said[-1]
        if isinstance(value.get("choices"), list) and value["choices"]:
            message = value["choices"][0].get("message") if isinstance(value["choices"][0], dict) else None
            if isinstance(message, dict) and isinstance(message.get("content"), str):
                return message["content"]
        for key in keys:
            if isinstance(value.get(key), str):
                return value[key]
        strings = [v for v in value.values() if isinstance(v, str)]
        if len(strings) == 1 and len(value) == 1:
            return strings[0]
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def documents_of(output: Any) -> list[str]:
    """The texts of the documents a retriever returned: strings, or objects with ``page_content``,
    ``content`` or ``text``, as a list or under ``documents``.

    >>> documents_of({"documents": [{"page_content": "a"}, "b", {"id": 3}]})
    ['a', 'b']
    """
    if isinstance(output, dict) and isinstance(output.get("documents"), list):
        output = output["documents"]
    items = output if isinstance(output, list) else [output]
    texts = []
    for item in items:
        if isinstance(item, str):
            texts.append(item)
        elif isinstance(item, dict):
            text = next((item[k] for k in ("page_content", "content", "text") if isinstance(item.get(k), str)), None)
            if text is not None:
                texts.append(text)
    return texts


def parsed(value: Any) -> Any:
    """A value an API gives as raw JSON text (Langfuse's observation input and output) as the value; any
    other value, or text that is not JSON of an object or list, as it is.

    >>> parsed('{"question": "Why?"}'), parsed("Why?"), parsed('"quoted"')
    ({'question': 'Why?'}, 'Why?', 'quoted')
    """
    if isinstance(value, str) and value[:1] in ("{", "[", '"'):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def id_text(value: Any) -> str | None:
    """An id as text: a string or an integer; None for anything else (a malformed record's list, object
    or boolean).

    >>> id_text("t1"), id_text(3), id_text(True), id_text(["t1"]), id_text("")
    ('t1', '3', None, None, None)
    """
    if isinstance(value, bool) or not isinstance(value, (str, int)) or value == "":
        return None
    return str(value)


def problem_text(problems: list[Problem]) -> str:
    """Problems found in one record, in a line (for the skip report)."""
    return "; ".join(p.message + (f" ({p.field})" if p.field else "") for p in problems)


def read_records(path: str | Path, *, what: str) -> list[tuple[int, Any]]:
    """The records of an export file, each with its line (JSON Lines) or its place in the list (JSON).

    Parameters
    ----------
    path : str or Path
        A JSON list, a JSON object holding a list under ``data`` (an API page) or another usual key,
        a single JSON object, or JSON Lines (one record, or one API page, a line).
    what : str
        What the file should hold, for the error (``"LangSmith runs"``).

    Raises
    ------
    CampaignError
        A file that is not UTF-8 or not JSON, naming the file and line.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "scores.jsonl"
    >>> _ = path.write_text('{"data": [{"id": "a"}, {"id": "b"}]}\\n{"id": "c"}\\n')
    >>> read_records(path, what="Langfuse scores")
    [(1, {'id': 'a'}), (1, {'id': 'b'}), (2, {'id': 'c'})]
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise CampaignError([Problem(str(path), "not UTF-8 text", expected=f"{what} (JSON or JSON Lines)")]) from None
    except OSError as exc:
        raise CampaignError([Problem(str(path), f"cannot be read ({exc.strerror or exc})",
                                     expected=f"{what} (JSON or JSON Lines)")]) from None
    try:
        documents = [(1, json.loads(text))]
    except json.JSONDecodeError as whole:
        documents = []
        for number, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                documents.append((number, json.loads(line)))
            except json.JSONDecodeError as exc:
                one_document = len(text.strip().splitlines()) == 1 or text.lstrip()[:1] == "["
                raise CampaignError([Problem(str(path), f"not valid JSON: {(whole if one_document else exc).msg}",
                                             row=whole.lineno if one_document else number,
                                             expected=f"{what} (JSON or JSON Lines)")]) from None
    records: list[tuple[int, Any]] = []
    for number, document in documents:
        if isinstance(document, dict):
            key = next((k for k in PAGE_KEYS if isinstance(document.get(k), list)), None)
            items = document[key] if key else [document]
        elif isinstance(document, list):
            items = document
        else:
            raise CampaignError([Problem(str(path), f"holds a {type(document).__name__}, not records", row=number,
                                         expected=f"{what}: a list of objects, an API page, or JSON Lines")])
        records += [(number if len(documents) > 1 else i + 1, item) for i, item in enumerate(items)]
    return records
