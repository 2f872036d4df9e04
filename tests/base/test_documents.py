"""Documents read strictly: JSON, JSON Lines, text and CSV files into declared schemas, every problem
naming the file, the line and the field (calibrate/base/documents.py)."""

import pytest

from calibrate.base import documents
from calibrate.base.documents import (
    DocumentError,
    Schema,
    check,
    field_path,
    max_document_bytes,
    parse_json,
    read_csv_rows,
    read_json,
    read_json_lines,
    read_text,
    short,
    validate,
)
from calibrate.base.fields import FiniteNumber, Name
from calibrate.base.settings import SettingError


class Rating(Schema):
    case_id: Name
    score: FiniteNumber


def problems(exc: pytest.ExceptionInfo) -> list[str]:
    return [str(p) for p in exc.value.problems]


def test_a_document_is_read_into_its_schema_and_extra_fields_ignored():
    got = parse_json(
        b'\xef\xbb\xbf{"case_id": "c1", "score": 1, "note": "x"}', Rating, source="r.json", expected="a rating"
    )
    assert got == Rating(case_id="c1", score=1.0) and not hasattr(got, "note")
    with pytest.raises(Exception, match="frozen"):
        got.score = 2.0


def test_every_problem_names_the_source_the_line_and_the_field():
    with pytest.raises(DocumentError) as bad:
        parse_json('{"case_id": "", "score": "0.5"}', Rating, source="r.jsonl", expected="a rating", line=7)
    assert problems(bad) == [
        "r.jsonl, line 7, field 'case_id': String should have at least 1 character (found ''); expected a rating",
        "r.jsonl, line 7, field 'score': Input should be a valid number (found '0.5'); expected a rating",
    ]
    assert str(bad.value).startswith("2 problems in r.jsonl:")


def test_text_that_is_too_long_not_utf8_or_too_deep_is_refused_saying_so():
    with pytest.raises(DocumentError, match="12 bytes, more than the 10 calibrate reads at once"):
        parse_json(b'{"a": "xxxx"}'[:12], dict, source="a", expected="x", max_bytes=10)
    with pytest.raises(DocumentError, match=r"line 2: not UTF-8 text \(byte 0xe9 at offset 11\)"):
        parse_json(b'{"a":\n "caf\xe9"}', dict, source="a", expected="x")
    with pytest.raises(DocumentError, match="nested deeper than 200 levels"):
        parse_json("[" * 250 + "]" * 250, list, source="a", expected="x")


def test_check_returns_the_problems_and_validate_raises_them():
    assert check({"case_id": "c", "score": 0.5}, Rating, source="t", expected="e") == (
        Rating(case_id="c", score=0.5),
        [],
    )
    model, found = check(
        {"case_id": "c", "score": None}, Rating, source="campaign.toml", expected="e", field="judges.j"
    )
    assert model is None and [p.field for p in found] == ["judges.j.score"]
    with pytest.raises(DocumentError, match=r"field 'ratings\.score'"):
        validate({"case_id": "c"}, Rating, source="t", expected="e", field="ratings")


def test_json_lines_are_read_with_their_numbers_and_every_bad_line_listed(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_bytes(b'{"case_id": "a", "score": 1}\n\n{"case_id": "b"}\nnot json\n')
    with pytest.raises(DocumentError) as bad:
        read_json_lines(path, Rating, expected="ratings")
    assert [p.row for p in bad.value.problems] == [3, 4]
    path.write_bytes(b'{"case_id": "a", "score": 1}\n\n{"case_id": "b", "score": 0}\n')
    assert read_json_lines(path, Rating, expected="ratings") == [
        (1, Rating(case_id="a", score=1)),
        (3, Rating(case_id="b", score=0)),
    ]


def test_a_file_too_large_or_missing_is_refused_before_it_is_read(tmp_path):
    path = tmp_path / "big.json"
    path.write_text("[" + "1," * 100 + "1]")
    with pytest.raises(DocumentError, match=r"more than the 50 calibrate reads at once.*CALIBRATE_MAX_DOCUMENT_MB"):
        read_json(path, list[int], expected="numbers", max_bytes=50)
    assert read_json(path, list[int], expected="numbers") == [1] * 101
    with pytest.raises(DocumentError, match=r"absent\.json: cannot be read"):
        read_text(tmp_path / "absent.json", expected="x")


def test_the_size_limit_comes_from_the_environment_when_read(monkeypatch):
    monkeypatch.setenv("CALIBRATE_MAX_DOCUMENT_MB", "2")
    assert max_document_bytes() == 2 * 2**20 == documents.MAX_DOCUMENT_BYTES
    monkeypatch.setenv("CALIBRATE_MAX_DOCUMENT_MB", "lots")
    with pytest.raises(SettingError, match="CALIBRATE_MAX_DOCUMENT_MB"):
        max_document_bytes()


def test_csv_rows_keep_their_physical_lines_and_every_problem_is_listed(tmp_path):
    path = tmp_path / "r.csv"
    path.write_text('case_id,reason\nc1,"two\nlines"\n\nc2,x\n')
    assert read_csv_rows(path, expected="t") == (["case_id", "reason"], [(2, ["c1", "two\nlines"]), (5, ["c2", "x"])])
    path.write_text("case_id,value,value\nc1,1\n")
    with pytest.raises(DocumentError) as bad:
        read_csv_rows(path, expected="t")
    assert [(p.row, p.field) for p in bad.value.problems] == [(1, "value"), (2, None)]
    assert "2 field(s) where the header has 3" in str(bad.value)
    path.write_text("")
    with pytest.raises(DocumentError, match="line 1: the file is empty"):
        read_csv_rows(path, expected="t")


def test_paths_and_values_are_shown_short_and_redacted():
    assert field_path(("results", 3, "score")) == "results[3].score"
    assert short("y" * 90, 10) == "yyyyyyyyyy... (90 characters)"
    assert short(b"abc") == "abc" and short(2.5) == 2.5
    secret = "sk-" + "a1b2c3d4" * 6
    assert secret not in short(f"key {secret}", 200) and secret[:12] not in str(short([f"key {secret}"], 20))
