"""Reading a judge's reply as the JSON object a metric asked for (shared by the library adapters)."""

from __future__ import annotations

import contextvars
import json
import re
from collections import Counter
from typing import Any

from calibrate.base.secrets import clip

__all__ = [
    "JudgeReplyError",
    "complete_json",
    "json_text",
    "note_call",
    "notes",
    "parse_reply",
    "sent_modes",
    "settle_modes",
]

#: What the replies of the rating being scored said about how its score was made (for example whether
#: G-Eval weighted it by the score token's probabilities); stored with the rating.
notes: contextvars.ContextVar[dict[str, Any]] = contextvars.ContextVar("calibrate_rating_notes")


class JudgeReplyError(ValueError):
    """The judge's reply does not fit the answer the metric asked for; ``summary`` says so without
    quoting the reply (for grouping a run's failures)."""

    def __init__(self, message: str, *, summary: str | None = None):
        super().__init__(message)
        self.summary = summary or message


def json_text(text: str) -> str:
    """The JSON object in a reply, tolerating Markdown fences and text around it.

    Examples
    --------
    >>> json_text('Here it is:\\n```json\\n{"a": 1}\\n```')
    '{"a": 1}'
    """
    fenced = re.search(r"```(?:json)?\s*(.*?)```", text, re.S)
    if fenced:
        text = fenced.group(1)
    start, end = text.find("{"), text.rfind("}")
    return text[start : end + 1] if start != -1 and end > start else text


def complete_json(text: str) -> bool:
    """Whether a reply holds a whole JSON object (as :func:`json_text` finds it), whatever its keys.

    Examples
    --------
    >>> complete_json('{"claims": ["a"]}  '), complete_json('{"claims": ["a", "b'), complete_json('{"v": [{"a": 1}')
    (True, False, False)
    """
    try:
        json.loads(json_text(text))
    except (ValueError, RecursionError):
        return False
    return True


#: the key of :data:`notes` under which a rating's model calls are noted while it is scored
_CALLS = "structured_output_sent"


def note_call(mode: str, *, schema: bool) -> None:
    """Note, with the rating being scored, that one of its model calls was answered in structured-output
    ``mode`` (``"json_schema"``, ``"json_object"``, ``"text"``: what its request carried); ``schema``: the
    call carried the metric's schema, so its mode is the one the model's table chose (what keys the rating)."""
    said = notes.get(None)
    if said is not None:
        said.setdefault(_CALLS, []).append((mode, schema))


def sent_modes(said: dict[str, Any]) -> Counter:
    """How many of a rating's calls (noted in ``said`` by :func:`note_call`) were answered in each mode.

    Examples
    --------
    >>> sent_modes({_CALLS: [("json_schema", True), ("text", False), ("text", False)]})
    Counter({'text': 2, 'json_schema': 1})
    """
    return Counter(mode for mode, _ in said.get(_CALLS, []))


def settle_modes(said: dict[str, Any], default: str) -> str:
    """Write into a rating's details (``said``) the structured output its calls were sent in, and return the
    mode that keys it.

    ``structured_output`` is the mode of the rating's *last* answered call, the one that produced its score
    (G-Eval's score call, a metric's last verdicts or reason); when its calls were sent in several modes
    (G-Eval's steps in ``json_schema``, its logprob score call in ``text``), ``structured_output_calls``
    lists them all, in order. The key's mode is that of the last call that carried the metric's schema,
    else ``default`` (the mode the model's endpoint took in the run, which made what the rating shares,
    such as G-Eval's steps); a rating none of whose calls was answered records that mode too.

    Examples
    --------
    >>> said = {_CALLS: [("json_schema", True), ("text", False)]}
    >>> settle_modes(said, "json_object"), said
    ('json_schema', {'structured_output': 'text', 'structured_output_calls': ['json_schema', 'text']})
    >>> said = {_CALLS: [("text", False)]}
    >>> settle_modes(said, "json_schema"), said
    ('json_schema', {'structured_output': 'text'})
    >>> said = {}
    >>> settle_modes(said, "json_object"), said
    ('json_object', {'structured_output': 'json_object'})
    """
    calls = said.pop(_CALLS, [])
    keyed = [mode for mode, schema in calls if schema]
    key = keyed[-1] if keyed else default
    said["structured_output"] = calls[-1][0] if calls else key
    if len({mode for mode, _ in calls}) > 1:
        said["structured_output_calls"] = [mode for mode, _ in calls]
    return key


def parse_reply(text: str, schema: Any) -> Any:
    """``schema`` (a pydantic model class) validated from the reply, or :class:`JudgeReplyError`
    quoting the start of the reply and what was wrong."""
    from pydantic import ValidationError

    try:
        return schema.model_validate_json(json_text(text))
    except (ValidationError, json.JSONDecodeError) as exc:
        why = exc.errors()[0]["msg"] if isinstance(exc, ValidationError) else str(exc)
        raise JudgeReplyError(
            f"the judge's reply is not the JSON {schema.__name__} asks for: {clip(text, 200)!r} ({why})",
            summary=f"the judge's reply is not the JSON {schema.__name__} asks for",
        ) from None
