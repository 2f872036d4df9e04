"""The readers of a campaign's files: ratings (CSV with the line each row starts on, Parquet, JSON Lines),
values and ids as written, cases.jsonl's cases, and the problems each gives on a malformed file."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calibrate.base.errors import CampaignError, Problem
from calibrate.campaign.readers import (
    id_problem,
    id_problem_rows,
    parse_values,
    plain_text,
    read_cases,
    read_csv,
    read_jsonl,
    read_ratings,
    text_column,
    typed_ratings,
)


def test_a_csv_row_keeps_the_line_it_starts_on(tmp_path):
    path = tmp_path / "ratings.csv"
    path.write_text('case_id,metric,rater,rater_kind,value\na,f,ann,human,1\n\nb,"f\nx",ann,human,0\nc,f,ann,human,1\n')
    frame = read_csv(path)
    assert frame["case_id"].tolist() == ["a", "b", "c"] and frame["line"].tolist() == [2, 4, 6]
    assert frame["metric"].tolist()[1] == "f\nx" and frame["value"].tolist() == ["1", "0", "1"]


def test_jsonl_ratings_keep_their_ids_as_written(tmp_path):
    path = tmp_path / "ratings.jsonl"
    path.write_text('{"case_id": 7, "metric": "f", "rater": "a", "rater_kind": "human", "value": 1}\n\n')
    frame = read_ratings(path)
    assert frame["case_id"].tolist() == [7] and frame["line"].tolist() == [1]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("[1, 2]\n", "each line must be a JSON object"),
        ("", "the file holds no rating"),
        ('{"case_id": "a"\n', "line 1"),
    ],
)
def test_malformed_jsonl_ratings_are_refused_with_their_line(tmp_path, content, message):
    path = tmp_path / "ratings.jsonl"
    path.write_text(content)
    with pytest.raises(CampaignError) as raised:
        read_ratings(path)
    assert message in str(raised.value) and str(path) in str(raised.value)


def test_a_file_that_is_no_parquet_is_refused(tmp_path):
    path = tmp_path / "ratings.parquet"
    path.write_bytes(b"not parquet at all")
    with pytest.raises(CampaignError) as raised:
        read_ratings(path)
    assert "not a readable Parquet file" in str(raised.value) and "expected a Parquet file of ratings" in str(
        raised.value
    )


def test_parquet_ratings_are_numbered_from_one(tmp_path):
    path = tmp_path / "ratings.parquet"
    pd.DataFrame({"case_id": ["a", "b"], "value": [1.0, 0.0]}).to_parquet(path)
    assert read_ratings(path)["line"].tolist() == [1, 2]


def test_read_jsonl_numbers_each_line(tmp_path):
    path = tmp_path / "cases.jsonl"
    path.write_text('{"case_id": "a"}\n\n{"case_id": "b"}\n')
    assert read_jsonl(path) == [(1, {"case_id": "a"}), (3, {"case_id": "b"})]


def test_text_columns_are_text_with_whole_numbers_as_written():
    frame = pd.DataFrame({"a": [12.0, None, "x", 1.5], "n": pd.array([1, 2, 3, 4])})
    assert text_column(frame, "a").tolist() == ["12", "", "x", "1.5"]
    assert text_column(frame, "n").tolist() == ["1", "2", "3", "4"]
    assert text_column(frame, "absent").tolist() == ["", "", "", ""]


def test_values_parsed_from_text_numbers_and_booleans():
    values, blank, invalid = parse_values(pd.Series(["1", "", "high", "inf", None, "0.5"], dtype=object))
    assert np.isnan(values[[1, 2, 3, 4]]).all() and values[[0, 5]].tolist() == [1.0, 0.5]
    assert blank.tolist() == [False, True, False, False, True, False]
    assert invalid.tolist() == [False, False, True, True, False, False]
    _, _, invalid = parse_values(pd.Series([True, False]))
    assert invalid.all()  # a true/false value is no number here
    values, blank, invalid = parse_values(pd.Series([1.0, np.nan, np.inf]))
    assert blank.tolist() == [False, True, False] and invalid.tolist() == [False, False, True]


def test_typed_ratings_give_text_ids_float_values_and_where_each_came_from():
    raw = pd.DataFrame(
        {"case_id": [1, "b"], "metric": "f", "rater": "a", "rater_kind": "human", "value": ["1", ""], "line": [2, 3]}
    )
    ratings, values, blank, _ = typed_ratings(raw, np.array(["/x/ratings.csv"] * 2), in_folder=True)
    assert ratings["case_id"].tolist() == ["1", "b"] and ratings["file"].tolist() == ["ratings.csv"] * 2
    assert ratings["line"].tolist() == [2, 3] and blank.tolist() == [False, True] and values[0] == 1.0
    assert ratings["error"].tolist() == ["", ""] and ratings["source"].tolist() == ["", ""]


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("c1", None),
        (7, None),
        (float("nan"), None),
        ("c\x1b[2J", "holds a control character ('\\x1b'): ids that differ only by one would be shown as one"),
        (b"\xff", "bytes that are not UTF-8 text"),
        (True, "a true/false value"),
        (2.0**60, "a number too large to be kept exactly (write ids as text)"),
        (float("inf"), "not a finite number"),
        ([1], "a list, not text"),
    ],
)
def test_id_problem(value, why):
    assert id_problem(value) == why


def test_cases_are_read_and_each_bad_line_is_a_problem():
    rows = [
        (1, {"case_id": "a", "input": "q", "retrieval_context": ["x"]}),
        (2, {"case_id": 5, "input": "q"}),
        (3, ["not", "a", "case"]),
        (4, {"input": "q"}),
        (5, {"case_id": "a", "input": "again"}),
        (6, {"case_id": "c\x07", "input": "q"}),
        (7, {"case_id": "d", "input": 3, "context": ["ok", 2]}),
    ]
    problems: list[Problem] = []
    cases = read_cases(rows, "cases.jsonl", problems)
    assert list(cases) == ["a", "5", "d"] and cases["5"]["case_id"] == "5" and cases["a"]["input"] == "q"
    text = [str(p) for p in problems]
    assert text == [
        "cases.jsonl, line 3: each case must be a JSON object (found 'list'); expected an object with case_id and "
        "DeepEval's field names",
        "cases.jsonl, line 4, field 'case_id': missing or empty case_id; expected a non-empty string",
        "cases.jsonl, line 5, field 'case_id': duplicate case_id (first at line 1) (found 'a'); expected each case once",
        text[3],
        "cases.jsonl, line 7, field 'input': wrong type for case 'd' (found 'int'); expected str",
        "cases.jsonl, line 7, field 'context': case 'd' has a non-string chunk; expected a list of strings",
    ]
    assert text[3].startswith("cases.jsonl, line 6, field 'case_id': case_id holds a control character")


ID_VALUES = st.one_of(
    st.text(alphabet=st.sampled_from(["a", "1", "é", "\x1b", "\x00", "\x7f", "\n", " "]), max_size=4),
    st.integers(-(2**60), 2**60),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([None, True, False, b"c1", b"\xff", 2.0**53, 12.0]),
)


@settings(max_examples=300, deadline=None)
@given(values=st.lists(ID_VALUES, max_size=8), dtype=st.sampled_from([None, object, "str", "category"]))
def test_ids_checked_column_wise_find_every_row_the_value_rule_refuses(values, dtype):
    # every row id_problem refuses is among the rows id_problem_rows names: the rest are never checked
    try:
        column = pd.Series(values, dtype=dtype)
    except (TypeError, ValueError):
        return  # a column pandas does not make of these values
    refused = np.array([id_problem(v.item() if isinstance(v, np.generic) else v) is not None for v in column], bool)
    named = id_problem_rows(column)
    assert not (refused & ~named).any()


@settings(max_examples=200, deadline=None)
@given(values=st.lists(st.one_of(st.text(max_size=4), st.none(), st.just(float("nan"))), max_size=8))
def test_text_columns_of_objects_read_as_each_value_reads(values):
    frame = pd.DataFrame({"case_id": pd.Series(values, dtype=object)})
    expected = ["" if v is None or v != v else str(v) for v in values]
    assert text_column(frame, "case_id").tolist() == expected


def test_parquet_text_columns_of_any_string_dtype_read_missing_as_empty(tmp_path):
    # pandas' nullable "string" (missing as <NA>) and its default str (missing as NaN): both read as ""
    frame = pd.DataFrame(
        {
            "case_id": pd.array(["a", "b"], dtype="string"),
            "metric": "f",
            "rater": "ann",
            "rater_kind": "human",
            "value": [1.0, 0.0],
            "error": pd.array([None, None], dtype="string"),
            "run_id": pd.Series([None, "r"], dtype="str"),
        }
    )
    frame.to_parquet(tmp_path / "ratings.parquet")
    raw = read_ratings(tmp_path / "ratings.parquet")
    assert text_column(raw, "error").tolist() == ["", ""] and text_column(raw, "run_id").tolist() == ["", "r"]
    assert text_column(raw, "case_id").tolist() == ["a", "b"]


@settings(max_examples=200, deadline=None)
@given(
    values=st.lists(st.one_of(st.none(), st.text(alphabet=["a", "é", "\x1b", "\x7f", "\n", " ", "\x00"], max_size=4))),
    cut=st.integers(0, 12),
    skip=st.integers(0, 2),
)
def test_control_characters_are_found_in_the_bytes_of_every_chunk(values, cut, skip):
    # a column pyarrow holds in two chunks, the first starting inside its buffers: the rows found in its
    # bytes are exactly those the pattern finds value by value
    import pyarrow as pa

    text = pa.array(["pad"] * skip + values, type=pa.large_string()).slice(skip)
    column = pd.Series(pd.arrays.ArrowStringArray(pa.chunked_array([text.slice(0, cut), text.slice(cut)])))
    expected = [v is not None and re.search("[\x00-\x1f\x7f]", v) is not None for v in values]
    assert id_problem_rows(column).tolist() == expected


@settings(max_examples=200, deadline=None)
@given(values=st.lists(st.one_of(st.sampled_from(["a", "12", "", "é"]), st.none(), st.sampled_from([12.0, 7, 1.5]))))
def test_a_categorical_column_reads_as_its_values_read(values):
    # a Parquet file's dictionary-encoded column (or a DataFrame's categorical): each name converted
    # once, the same text as value by value; and as pandas' text at the end, the same again
    try:
        categorical = pd.Series(values, dtype="category")
    except (TypeError, ValueError):
        return
    expected = text_column(pd.DataFrame({"c": pd.Series(values, dtype=object)}), "c").tolist()
    read = text_column(pd.DataFrame({"c": categorical}), "c")
    assert read.tolist() == expected and plain_text(read).tolist() == expected
