"""CSV tables read column-wise (:func:`calibrate.base.tables.read_csv_table`) give the table the row reader
gives (:func:`calibrate.base.documents.read_csv_rows`): the same text in every cell, the same physical line
for every row, the same problems for a file it refuses. Attacked with hypothesis-drawn files."""

from __future__ import annotations

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from calibrate.base.documents import DocumentError, read_csv_rows
from calibrate.base.tables import _plain_table, read_csv_table


def _by_rows(path) -> pd.DataFrame | str:
    """The table the row reader gives (or its problems), as read_csv_table gives it."""
    try:
        header, rows = read_csv_rows(path, expected="a table")
    except DocumentError as exc:
        return str(exc)
    table = pd.DataFrame([record for _, record in rows], columns=header, dtype=object)
    table["line"] = [line for line, _ in rows]
    return table


def _by_columns(path) -> pd.DataFrame | str:
    try:
        return read_csv_table(path, expected="a table")
    except DocumentError as exc:
        return str(exc)


def _same(path) -> None:
    rows, columns = _by_rows(path), _by_columns(path)
    if isinstance(rows, str) or isinstance(columns, str):
        assert rows == columns
        return
    assert list(columns.columns) == list(rows.columns)
    for name in rows.columns:
        assert columns[name].tolist() == rows[name].tolist(), name


FIELD = st.text(alphabet=st.sampled_from(list('ab ,"\n\r;x1é\t|[]<>&\\')), max_size=5)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    header=st.lists(st.sampled_from(["case_id", "value", "reason", "x"]), min_size=1, max_size=3),
    rows=st.lists(st.lists(FIELD, min_size=0, max_size=4), max_size=6),
    newline=st.sampled_from(["\n", "\r\n", "\r"]),
    final=st.booleans(),
)
def test_any_file_reads_as_the_row_reader_reads_it(tmp_path, header, rows, newline, final):
    # fields drawn with commas, quotes and line ends, rows of any width, blank lines: plain or not
    text = newline.join([",".join(header), *(",".join(r) for r in rows)]) + (newline if final else "")
    path = tmp_path / "t.csv"
    path.write_bytes(text.encode())
    _same(path)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    rows=st.lists(st.lists(st.text(alphabet="ab1 é;", max_size=4), min_size=3, max_size=3), max_size=8),
    blank=st.lists(st.integers(0, 8), max_size=3),
    newline=st.sampled_from(["\n", "\r\n", "\r"]),
)
def test_plain_files_take_the_columnar_way_and_keep_their_lines(tmp_path, rows, blank, newline):
    lines = [",".join(r) for r in rows]
    for at in sorted(blank, reverse=True):  # blank lines and rows of empty fields are skipped, lines kept
        lines.insert(min(at, len(lines)), ",,")
    text = newline.join(["case_id,value,reason", *lines]) + newline
    path = tmp_path / "t.csv"
    path.write_bytes(text.encode())
    assert _plain_table(text) is not None  # no quote: pyarrow reads it
    _same(path)


@pytest.mark.parametrize(
    "text",
    [
        'case_id,value\nc1,"two\nlines"\nc2,1\n',  # a quoted field spans lines
        "case_id,value\nc1,1\n\nc2,1\n",  # a blank line in a table of two columns
        "case_id,value\nc1,1,3\nc2\n",  # rows of the wrong width: the row reader's problems
        "case_id,case_id\nc1,1\n",  # a repeated column
        "case_id,value\nc1,\x00\n",  # a NUL byte
        "",  # an empty file
        'case_id,value\nc1,"cut off',  # truncated inside a quoted field
        "case_id,value\nc1,1\nc2",  # truncated inside a row
        "case_id,value\nc1,<b>[x]</b>|y\n",  # markup, brackets and a pipe: text like any other
    ],
)
def test_files_that_are_not_plain_give_the_row_readers_table_or_problems(tmp_path, text):
    path = tmp_path / "t.csv"
    path.write_bytes(text.encode())
    _same(path)


def test_a_plain_file_gives_text_columns_and_lines(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("case_id,value\nc1,1\n,\nc2,NA\n\n")
    table = read_csv_table(path, expected="a table")
    assert table.to_dict("list") == {"case_id": ["c1", "c2"], "value": ["1", "NA"], "line": [2, 4]}
