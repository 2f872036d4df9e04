"""Reading a campaign folder's files: ``ratings.{csv,jsonl,parquet}`` and the ratings calibrate exports
beside them (:func:`read_ratings`), ``cases.jsonl`` (:func:`read_jsonl`, :func:`read_cases`, the ids
checked by :func:`id_problem`) and ``adjudications.csv``
(:func:`read_adjudications`), and the typed ratings table made from the rows read (:func:`typed_ratings`).
Every problem names the file and the line.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from pydantic import JsonValue

from calibrate.base.documents import read_json_lines
from calibrate.base.errors import CampaignError, Problem
from calibrate.base.secrets import clip
from calibrate.base.tables import read_csv_table
from calibrate.campaign.model import (
    ADJUDICATION_COLUMNS,
    CASE_FIELDS,
    OPTIONAL_COLUMNS,
    REQUIRED_COLUMNS,
    Campaign,
    SetAside,
)

__all__ = [
    "file_names",
    "id_problem",
    "id_problem_rows",
    "parse_values",
    "plain_text",
    "read_adjudications",
    "read_cases",
    "read_csv",
    "read_jsonl",
    "read_ratings",
    "text_column",
    "typed_ratings",
]


def read_jsonl(path: Path) -> list[tuple[int, Any]]:
    """Each line of a JSON Lines file (``cases.jsonl``, ``ratings.jsonl``) with its number, read by
    :func:`~calibrate.base.documents.read_json_lines`: a line ends at ``\\n`` only (U+2028, U+2029 and
    U+0085 are text inside a JSON string), within the size and depth limits of every document; each line
    that is not JSON is a problem naming the file and the line. Whether a line is an object is checked
    by the caller, which names what it should hold."""
    return read_json_lines(path, JsonValue, expected="one JSON object per line")


def read_csv(path: Path) -> pd.DataFrame:
    """A CSV file as text columns, each row with the physical line it starts on (a quoted field may span
    lines, and blank lines are skipped, so a row's line is not its index): read column-wise
    (:func:`~calibrate.base.tables.read_csv_table`)."""
    return read_csv_table(path, expected="a header line: " + ", ".join(REQUIRED_COLUMNS))


def read_ratings(path: Path) -> pd.DataFrame:
    if path.suffix == ".csv":
        return read_csv(path)
    if path.suffix == ".parquet":
        return _read_parquet(path)
    rows = read_jsonl(path)
    problems = [
        Problem(
            str(path),
            "each line must be a JSON object",
            row=n,
            value=type(obj).__name__,
            expected="an object with case_id, metric, rater, rater_kind, value",
        )
        for n, obj in rows
        if not isinstance(obj, dict)
    ]
    if problems:
        raise CampaignError(problems)
    if not rows:
        raise CampaignError(
            [
                Problem(
                    str(path),
                    "the file holds no rating",
                    expected="one JSON object per line with " + ", ".join(REQUIRED_COLUMNS),
                )
            ]
        )
    frame = pd.DataFrame([obj for _, obj in rows], dtype=object)  # object: ids stay exactly as written
    frame["line"] = [n for n, _ in rows]
    return frame


def _read_parquet(path: Path) -> pd.DataFrame:
    """A Parquet file of ratings, typed as it holds them, each text column but ``case_id`` as a categorical
    (read dictionary-encoded: a column of few names, such as the metric or the rater, costs a small integer
    a row, and its names are checked and compared once each, not once a row), numbered from line 1."""
    import pyarrow as pa  # the Parquet reader: imported by the commands that read a campaign only
    import pyarrow.parquet as pq

    try:
        schema = pq.read_schema(path)
        few = [
            f.name
            for f in schema
            if f.name != "case_id" and (pa.types.is_string(f.type) or pa.types.is_large_string(f.type))
        ]
        frame = pq.read_table(path, read_dictionary=few).to_pandas()
    except Exception as exc:  # noqa: BLE001 - pyarrow raises many kinds for a file that is not Parquet
        raise CampaignError(
            [
                Problem(
                    str(path),
                    f"not a readable Parquet file ({type(exc).__name__}: {clip(exc, 200)})",
                    expected="a Parquet file of ratings",
                )
            ]
        ) from None
    if not isinstance(frame.index, pd.RangeIndex) or frame.index.start != 0:  # an index pandas wrote with it
        frame = frame.reset_index(drop=True)
    frame["line"] = np.arange(len(frame)) + 1
    return frame


def read_adjudications(path: Path, campaign: Campaign) -> pd.DataFrame:
    """The current decisions ``calibrate adjudicate`` wrote, checked against the campaign."""
    frame = pd.read_csv(path, dtype={"case_id": str, "metric": str, "adjudicator": str})
    problems = []
    if list(frame.columns) != ADJUDICATION_COLUMNS:
        problems.append(
            Problem(
                str(path),
                "unexpected columns",
                value=", ".join(frame.columns),
                expected=", ".join(ADJUDICATION_COLUMNS) + " (the file calibrate adjudicate writes)",
            )
        )
    else:
        removed = ~frame["metric"].isin(list(campaign.metrics)).to_numpy()
        for line, row in enumerate(frame.itertuples(), start=2):  # a removed metric's decisions: set aside
            if removed[line - 2]:
                campaign.set_aside.append(
                    SetAside(str(path), line, str(row.case_id), str(row.metric), str(row.adjudicator), "metric")
                )
        for line, row in enumerate(frame.itertuples(), start=2):
            metric = campaign.metrics.get(row.metric)
            if metric is None and removed[line - 2]:
                continue
            if metric is None or not bool(metric.in_scale(np.array([row.value], float))[0]):
                problems.append(
                    Problem(
                        str(path),
                        "a decision for an unknown metric or off its scale",
                        row=line,
                        field="value",
                        value=f"{row.metric}={row.value}",
                    )
                )
    if problems:
        raise CampaignError(problems)
    return frame[~removed].reset_index(drop=True) if list(frame.columns) == ADJUDICATION_COLUMNS else frame


def _as_text(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, bytes):  # a Parquet binary column: its text (an undecodable one is refused first)
        return value.decode("utf-8", errors="replace")
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


def text_column(frame: pd.DataFrame, column: str) -> pd.Series:
    """A column as text ("" where missing; whole floats such as ids 12.0 as "12"); a categorical column
    stays one, of its names as text (each name converted once, not once a row).

    >>> text_column(pd.DataFrame({"a": pd.Categorical([12.0, None, 12.0])}), "a").tolist()
    ['12', '', '12']
    """
    if column not in frame:
        return _empty_text(len(frame), frame.index)
    col = frame[column]
    if isinstance(col.dtype, pd.CategoricalDtype):
        return _text_categorical(col)
    if pd.api.types.is_string_dtype(col.dtype) and not pd.api.types.is_object_dtype(col.dtype):
        return col.fillna("") if col.hasnans else col  # the file's column itself: no copy
    if pd.api.types.is_integer_dtype(col.dtype):
        return col.astype("str")
    if pd.api.types.is_object_dtype(col.dtype) and pd.api.types.infer_dtype(col, skipna=True) in ("string", "empty"):
        return pd.Series(col, dtype="str").fillna("")  # text, and None or NaN where missing: no value to convert
    return pd.Series([_as_text(v) for v in col.tolist()], index=frame.index, dtype="str")


def _empty_text(n: int, index: pd.Index) -> pd.Series:
    """``n`` empty texts, as a categorical of the one name "" (a byte a row)."""
    empty = pd.Categorical.from_codes(np.zeros(n, dtype=np.int8), categories=pd.Index([""], dtype="str"))
    return pd.Series(empty, index=index)


def _text_categorical(col: pd.Series) -> pd.Series:
    """A categorical column with its names as text: names that read alike (12 and "12") become one,
    and a missing value is ""."""
    categories = col.cat.categories
    names = text_column(pd.DataFrame({"name": categories}), "name")
    codes = col.cat.codes.to_numpy()
    if names.is_unique and not (codes < 0).any():
        if pd.api.types.is_string_dtype(categories.dtype) and names.tolist() == categories.tolist():
            return col  # text already: the file's column itself
        return pd.Series(pd.Categorical.from_codes(codes, categories=pd.Index(names)), index=col.index)
    label, unique = pd.factorize(pd.concat([names, pd.Series([""], dtype="str")], ignore_index=True))
    # code -1 (missing) reads the "" appended last
    return pd.Series(pd.Categorical.from_codes(label[codes], categories=pd.Index(unique, dtype="str")), index=col.index)


def plain_text(column: pd.Series) -> pd.Series:
    """A text column as pandas' text (``str``): a categorical one's names taken by its codes, by pyarrow
    (a tenth of a second for 10 million rows, where pandas' ``astype`` takes a second or more).

    >>> plain_text(pd.Series(pd.Categorical(["a", "b", "a"]))).tolist()
    ['a', 'b', 'a']
    """
    if not isinstance(column.dtype, pd.CategoricalDtype):
        return column
    if (column.cat.categories == "").all():  # "" alone (a column the file has not): offsets, no text
        import pyarrow as pa

        n = len(column)
        empty = pa.LargeStringArray.from_buffers(n, pa.py_buffer(np.zeros(n + 1, dtype=np.int64)), pa.py_buffer(b""))
        return pd.Series(pd.array(empty, dtype="str"), index=column.index, name=column.name)
    names = pd.Index(column.cat.categories, dtype="str").array
    text = pd.Series(names.take(column.cat.codes.to_numpy(), allow_fill=True), index=column.index, name=column.name)
    return text.fillna("") if text.hasnans else text  # a missing value (code -1): ""


def id_problem_rows(column: pd.Series) -> np.ndarray:
    """The rows of a column of ids whose value may have an :func:`id_problem`, found column-wise: a
    control character in text, a number that is no id, any value of another type. Only these rows'
    values are then checked one by one, for the message.

    >>> id_problem_rows(pd.Series(["c1", "c\\x1b", None], dtype=object)).tolist()
    [False, True, False]
    >>> id_problem_rows(pd.Series(["c1", 7], dtype=object)).tolist()  # mixed types: each value checked
    [True, True]
    >>> id_problem_rows(pd.Series(pd.Categorical(["c1", "c\\x7f", "c1"]))).tolist()  # each name checked once
    [False, True, False]
    """
    dtype = column.dtype
    if isinstance(dtype, pd.CategoricalDtype):
        named = id_problem_rows(pd.Series(column.cat.categories, dtype=column.cat.categories.dtype))
        return np.append(named, False)[column.cat.codes.to_numpy()]  # code -1 (missing): the False appended
    if pd.api.types.is_bool_dtype(dtype):
        return np.ones(len(column), dtype=bool)
    if pd.api.types.is_integer_dtype(dtype):
        return np.zeros(len(column), dtype=bool)
    if pd.api.types.is_float_dtype(dtype):
        values = column.to_numpy(dtype=float, na_value=np.nan)
        with np.errstate(invalid="ignore"):
            return np.isinf(values) | ((values == np.round(values)) & (np.abs(values) >= 2**53))
    if isinstance(dtype, pd.StringDtype) and dtype.storage == "pyarrow":
        return _control_byte_rows(column)
    objects = pd.api.types.is_object_dtype(dtype)
    if objects and pd.api.types.infer_dtype(column, skipna=True) not in ("string", "empty"):
        return np.ones(len(column), dtype=bool)  # mixed types (JSON Lines): each value checked
    if not (objects or pd.api.types.is_string_dtype(dtype)):
        return np.ones(len(column), dtype=bool)
    text = pd.Series(column, dtype="str") if objects else column
    return text.str.contains(_CONTROL.pattern, regex=True, na=False).to_numpy(dtype=bool)


def _control_byte_rows(column: pd.Series) -> np.ndarray:
    """The rows of a text column held by pyarrow with a control character, found in its bytes: in UTF-8
    the bytes 0x00-0x1F and 0x7F are those characters and nothing else (every byte of a longer
    character is 0x80 or more). A tenth of a second for 10 million ids, where a pattern searched value
    by value takes seconds."""
    import pyarrow as pa

    text = pa.array(column.array)  # the column's own arrays (no copy)
    rows = np.zeros(len(column), dtype=bool)
    start = 0
    for chunk in text.chunks if isinstance(text, pa.ChunkedArray) else [text]:
        if not len(chunk):
            continue
        _, offsets_buffer, data_buffer = chunk.buffers()
        wide = pa.types.is_large_string(chunk.type)
        offsets = np.frombuffer(offsets_buffer, dtype=np.int64 if wide else np.int32)
        offsets = offsets[chunk.offset : chunk.offset + len(chunk) + 1]
        data = np.frombuffer(data_buffer, dtype=np.uint8) if data_buffer is not None else np.zeros(0, np.uint8)
        data = data[offsets[0] : offsets[-1]]
        if (data < 0x20).any() or (data == 0x7F).any():  # then where: a value holding such a byte
            at = np.flatnonzero((data < 0x20) | (data == 0x7F)) + offsets[0]
            rows[start + np.searchsorted(offsets, at, side="right") - 1] = True
        start += len(chunk)
    return rows


def parse_values(raw: pd.Series) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Numbers from a column of strings or numbers: (values, is_blank, is_invalid)."""
    if pd.api.types.is_bool_dtype(raw.dtype):
        invalid = np.ones(len(raw), dtype=bool)
        return np.full(len(raw), np.nan), np.zeros(len(raw), dtype=bool), invalid
    if pd.api.types.is_numeric_dtype(raw.dtype):
        values = raw.to_numpy(dtype=float, na_value=np.nan)
        blank = np.isnan(values)
        invalid = np.isinf(values)
        return np.where(invalid, np.nan, values), blank, invalid
    objects = raw.to_numpy(dtype=object)
    blank = pd.isna(raw).to_numpy() | (objects == "")
    as_bool = np.array([isinstance(v, bool) for v in objects.tolist()], dtype=bool)
    values = pd.to_numeric(pd.Series(np.where(blank | as_bool, None, objects)), errors="coerce").to_numpy(float)
    invalid = (~blank & ~np.isfinite(values)) | as_bool
    return np.where(blank | invalid, np.nan, values), blank, invalid


def typed_ratings(
    raw: pd.DataFrame, files: np.ndarray | pd.Categorical, *, in_folder: bool
) -> tuple[pd.DataFrame, np.ndarray, np.ndarray, np.ndarray]:
    """The ratings read (``raw``: text or numbers as the file held them) as a table of text ids and float
    values, with the line and the file each came from: ``(ratings, values, blank, invalid)``, the last
    three as :func:`parse_values` gives them. ``in_folder``: the files are a folder's (their names kept),
    not Python objects. The text columns are the file's own where they need no change (no copy), and
    the ``file`` column is categorical (one name per file, not per row)."""
    values, blank, invalid = parse_values(raw["value"])
    columns = {c: text_column(raw, c) for c in ("case_id", "metric", "rater", "rater_kind", *OPTIONAL_COLUMNS)}
    columns |= {
        "value": pd.Series(values, index=raw.index),
        "line": raw["line"],
        # where each rating came from: the file's name, and the tool it was imported from (calibrate import)
        "file": pd.Series(file_names(files) if in_folder else pd.Categorical(files), index=raw.index),
        "source": text_column(raw, "source"),
    }
    return pd.DataFrame(columns, copy=False), values, blank, invalid


def file_names(files: np.ndarray | pd.Categorical) -> pd.Categorical:
    """The name of each row's file (``ratings.csv`` of ``/data/c/ratings.csv``), worked out once per file,
    as a categorical (each name held once).

    >>> file_names(np.array(["/c/ratings.csv", "/c/judge_ratings.csv", "/c/ratings.csv"])).tolist()
    ['ratings.csv', 'judge_ratings.csv', 'ratings.csv']
    """
    codes, paths = (files.codes, files.categories) if isinstance(files, pd.Categorical) else pd.factorize(files)
    names = pd.Categorical([Path(f).name for f in paths])
    return pd.Categorical.from_codes(names.codes[codes], dtype=names.dtype)


_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def id_problem(value: Any) -> str | None:
    """Why a value cannot serve as an id (a case's, a metric's, a rater's) kept exactly as written, or None:
    the rule every loader applies, for what writes ids to check them first.

    >>> id_problem("c1"), id_problem(7), id_problem("c\x1b[2J").startswith("holds a control character")
    (None, None, True)
    """
    if value is None or isinstance(value, (str, np.str_)):
        text = "" if value is None else str(value)
        found = _CONTROL.search(text)
        return (
            f"holds a control character ({found.group()!r}): ids that differ only by one would be shown as one"
            if found
            else None
        )
    if isinstance(value, bytes):
        try:
            return id_problem(value.decode("utf-8"))
        except UnicodeDecodeError:
            return "bytes that are not UTF-8 text"
    if isinstance(value, (bool, np.bool_)):
        return "a true/false value"
    if isinstance(value, (int, np.integer)):
        return None
    if isinstance(value, (float, np.floating)):
        if math.isnan(value):
            return None
        if float(value).is_integer() and abs(value) >= 2**53:
            return "a number too large to be kept exactly (write ids as text)"
        return None if math.isfinite(value) else "not a finite number"
    return f"a {type(value).__name__}, not text"


def read_cases(case_rows: list[tuple[int, Any]], file: str, problems: list[Problem]) -> dict[str, dict]:
    """The cases of ``cases.jsonl`` (its lines as read), by id; each line that is no case, or a case
    whose fields have the wrong types, is a problem appended to ``problems``."""
    cases: dict[str, dict] = {}
    first_line: dict[str, int] = {}
    for line, obj in case_rows:
        case_id = _case_id(obj, line, file, problems)
        if case_id is None:
            continue
        problems += _field_problems(obj, case_id, line, file)
        if case_id in cases:
            problems.append(
                Problem(
                    file,
                    f"duplicate case_id (first at line {first_line[case_id]})",
                    row=line,
                    field="case_id",
                    value=case_id,
                    expected="each case once",
                )
            )
            continue
        cases[case_id] = {**obj, "case_id": case_id}
        first_line[case_id] = line
    return cases


def _case_id(obj: Any, line: int, file: str, problems: list[Problem]) -> str | None:
    """A line's case id, or None (with a problem) when the line is no object or its id is no id."""
    if not isinstance(obj, dict):
        problems.append(
            Problem(
                file,
                "each case must be a JSON object",
                row=line,
                value=type(obj).__name__,
                expected="an object with case_id and DeepEval's field names",
            )
        )
        return None
    case_id = obj.get("case_id")
    if isinstance(case_id, int) and not isinstance(case_id, bool):
        case_id = str(case_id)
    if not isinstance(case_id, str) or not case_id:
        problems.append(
            Problem(
                file,
                "missing or empty case_id",
                row=line,
                field="case_id",
                value=case_id,
                expected="a non-empty string",
            )
        )
        return None
    if why := id_problem(case_id):
        problems.append(
            Problem(
                file,
                f"case_id {why}",
                row=line,
                field="case_id",
                value=case_id,
                expected="text without control characters",
            )
        )
        return None
    return case_id


def _field_problems(obj: dict[str, Any], case_id: str, line: int, file: str) -> list[Problem]:
    """A case's DeepEval fields of the wrong type, and context chunks that are not text."""
    problems = []
    for key, types in CASE_FIELDS.items():
        if key in obj and not isinstance(obj[key], types):
            problems.append(
                Problem(
                    file,
                    f"wrong type for case '{case_id}'",
                    row=line,
                    field=key,
                    value=type(obj[key]).__name__,
                    expected=" or ".join("null" if t is type(None) else t.__name__ for t in types),
                )
            )
    for key in ("retrieval_context", "context"):
        if isinstance(obj.get(key), list) and not all(isinstance(x, str) for x in obj[key]):
            problems.append(
                Problem(
                    file,
                    f"case '{case_id}' has a non-string chunk",
                    row=line,
                    field=key,
                    expected="a list of strings",
                )
            )
    return problems
