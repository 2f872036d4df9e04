"""Reading a judge's reply as the JSON a metric asked for, and noting how each call was answered
(calibrate/judges/replies.py)."""

import pytest
from pydantic import BaseModel

from calibrate.judges.replies import (
    JudgeReplyError,
    complete_json,
    json_text,
    note_call,
    notes,
    parse_reply,
    sent_modes,
    settle_modes,
)


class Verdict(BaseModel):
    verdict: str
    reason: str | None = None


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ('{"verdict": "yes"}', '{"verdict": "yes"}'),
        ('Here it is:\n```json\n{"verdict": "no"}\n```\nThanks', '{"verdict": "no"}'),
        ('```\n{"a": {"b": 1}}```', '{"a": {"b": 1}}'),
        ('Sure! {"verdict": "yes"} hope that helps', '{"verdict": "yes"}'),
        ("no json at all", "no json at all"),
    ],
)
def test_the_json_object_is_found_in_fences_and_prose(reply, expected):
    assert json_text(reply) == expected


def test_a_whole_object_is_told_from_a_cut_one():
    assert complete_json('{"claims": ["a"]}  ') and complete_json('```json\n{"a": 1}\n```')
    assert not complete_json('{"claims": ["a", "b') and not complete_json("[" * 5000 + "]" * 5000)


def test_a_reply_is_read_into_the_schema_or_refused_quoting_its_start():
    assert parse_reply('```json\n{"verdict": "yes", "reason": "r"}\n```', Verdict) == Verdict(verdict="yes", reason="r")
    with pytest.raises(JudgeReplyError) as refused:
        parse_reply('{"reason": "' + "x" * 500 + '"}', Verdict)
    assert "the judge's reply is not the JSON Verdict asks for" in str(refused.value) and "Field required" in str(
        refused.value
    )
    assert refused.value.summary == "the judge's reply is not the JSON Verdict asks for"  # no quote: groups failures
    assert len(str(refused.value)) < 400
    with pytest.raises(JudgeReplyError, match="not the JSON Verdict"):
        parse_reply("{not json}", Verdict)


def test_calls_are_noted_with_the_rating_being_scored_only():
    note_call("text", schema=False)  # no rating being scored: nothing noted, nothing raised
    said: dict = {}
    token = notes.set(said)
    try:
        note_call("json_schema", schema=True)
        note_call("text", schema=False)
        note_call("text", schema=False)
    finally:
        notes.reset(token)
    assert sent_modes(said) == {"text": 2, "json_schema": 1}
    assert settle_modes(said, "json_object") == "json_schema"  # the last call that carried the schema keys it
    assert said == {"structured_output": "text", "structured_output_calls": ["json_schema", "text", "text"]}


@pytest.mark.parametrize(
    ("calls", "default", "key", "said"),
    [
        ([("text", False)], "json_schema", "json_schema", {"structured_output": "text"}),
        ([], "json_object", "json_object", {"structured_output": "json_object"}),
        (
            [("json_object", True), ("text", True)],
            "json_schema",
            "text",
            {"structured_output": "text", "structured_output_calls": ["json_object", "text"]},
        ),
    ],
)
def test_the_mode_that_keys_a_rating(calls, default, key, said):
    details = {"structured_output_sent": list(calls)}
    assert settle_modes(details, default) == key
    assert details == said
