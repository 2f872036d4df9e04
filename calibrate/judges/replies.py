"""Reading a judge's reply as the JSON object a metric asked for (shared by the library adapters)."""

from __future__ import annotations

import contextvars
import json
import re
from typing import Any

from calibrate.base.secrets import clip

__all__ = ["JudgeReplyError", "json_text", "parse_reply", "notes"]

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
    return text[start:end + 1] if start != -1 and end > start else text


def parse_reply(text: str, schema: Any) -> Any:
    """``schema`` (a pydantic model class) validated from the reply, or :class:`JudgeReplyError`
    quoting the start of the reply and what was wrong."""
    from pydantic import ValidationError

    try:
        return schema.model_validate_json(json_text(text))
    except (ValidationError, json.JSONDecodeError) as exc:
        why = exc.errors()[0]["msg"] if isinstance(exc, ValidationError) else str(exc)
        raise JudgeReplyError(f"the judge's reply is not the JSON {schema.__name__} asks for: "
                              f"{clip(text, 200)!r} ({why})",
                              summary=f"the judge's reply is not the JSON {schema.__name__} asks for") from None
