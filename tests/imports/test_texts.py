"""What the import readers share: strict records, ids, the text inputs and outputs stand for, a
retriever's documents, and the records of export files (calibrate/imports/texts.py)."""

import json

import pytest
from pydantic import TypeAdapter, ValidationError

from calibrate.base.documents import DocumentError, check
from calibrate.base.errors import Problem
from calibrate.imports.texts import (
    INPUT_KEYS,
    OUTPUT_KEYS,
    Id,
    OptionalId,
    Record,
    documents_of,
    id_text,
    parsed,
    problem_text,
    read_records,
    text_of,
)


class Score(Record):
    id: Id
    trace: OptionalId = None
    value: float | None = None


def test_a_record_is_strict_and_ids_are_text_or_integers():
    assert check({"id": 7, "value": 1, "extra": [1]}, Score, source="s", expected="e")[0] == Score(id="7", value=1.0)
    for bad in ({"id": True}, {"id": ""}, {"id": 1.5}, {"id": ["a"]}, {"id": "a", "value": "0.5"}):
        with pytest.raises(ValidationError):
            Score.model_validate(bad)
    assert TypeAdapter(OptionalId).validate_python(None) is None
    assert [id_text(v) for v in ("t1", 3, True, [1], "", None)] == ["t1", "3", None, None, None, None]


@pytest.mark.parametrize(
    ("value", "keys", "role", "expected"),
    [
        ("as is", INPUT_KEYS, "user", "as is"),
        ({"question": "Why?", "k": 3}, INPUT_KEYS, "user", "Why?"),
        (
            {"messages": [{"role": "system", "content": "be kind"}, {"role": "user", "content": "Hi"}]},
            INPUT_KEYS,
            "user",
            "Hi",
        ),
        ([{"role": "user", "content": "a"}, {"role": "user", "content": "b"}], INPUT_KEYS, "user", "b"),
        ({"choices": [{"message": {"role": "assistant", "content": "Paris."}}]}, OUTPUT_KEYS, None, "Paris."),
        ({"only": "the one string"}, OUTPUT_KEYS, None, "the one string"),
        ({"n": 1, "b": [2]}, OUTPUT_KEYS, None, '{"b": [2], "n": 1}'),
        (None, OUTPUT_KEYS, None, None),
    ],
)
def test_the_text_an_input_or_output_stands_for(value, keys, role, expected):
    assert text_of(value, keys, chat_role=role) == expected


def test_a_retrievers_documents_are_their_texts():
    assert documents_of({"documents": [{"page_content": "a"}, "b", {"id": 3}, {"text": "c"}]}) == ["a", "b", "c"]
    assert documents_of([{"content": "x"}]) == ["x"] and documents_of("one") == ["one"] and documents_of(5) == []


def test_raw_json_text_is_parsed_and_other_text_kept():
    assert parsed('{"question": "Why?"}') == {"question": "Why?"}
    assert parsed("Why?") == "Why?" and parsed("{not json") == "{not json" and parsed(3) == 3
    deep = "[" * 300
    assert parsed(deep) == deep  # deeper than any document is read: kept as text


def test_a_records_problems_read_as_one_line():
    problems = [Problem("f", "Input should be a valid string", field="reason", value=3), Problem("f", "missing")]
    assert problem_text(problems) == "reason: Input should be a valid string (found 3); missing"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('[{"id": "a"}, {"id": "b"}]', [(1, {"id": "a"}), (2, {"id": "b"})]),
        ('{"data": [{"id": "a"}], "meta": {"page": 1}}', [(1, {"id": "a"})]),
        ('{"runs": [{"id": "r"}]}', [(1, {"id": "r"})]),
        ('{"id": "single"}', [(1, {"id": "single"})]),
        (
            '{"data": [{"id": "a"}, {"id": "b"}]}\n\n{"id": "c"}\n',
            [(1, {"id": "a"}), (1, {"id": "b"}), (3, {"id": "c"})],
        ),
    ],
)
def test_export_files_give_their_records_with_lines(tmp_path, text, expected):
    path = tmp_path / "export.json"
    path.write_text(text)
    assert read_records(path, what="scores") == expected


def test_a_file_of_no_records_is_refused_naming_the_line(tmp_path):
    path = tmp_path / "export.jsonl"
    path.write_text('{"id": "a"}\n"text"\n')
    with pytest.raises(DocumentError, match=r"line 2: holds a str, not records \(found 'text'\); expected scores"):
        read_records(path, what="scores")
    path.write_text('{"id": "a"}\n{"id": \n')
    with pytest.raises(DocumentError, match=r"line 2: not valid JSON"):
        read_records(path, what="scores")
    path.write_text(json.dumps([1, 2]) + "\n" + "[")
    with pytest.raises(DocumentError):
        read_records(path, what="scores")
