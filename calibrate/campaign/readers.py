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
        try:
            frame = pd.read_parquet(path)
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
        # typed columns as Parquet holds them (a dictionary-encoded one as plain values): the values a
        # problem shows are the file's, and text is checked column-wise
        for name in frame.columns[[isinstance(t, pd.CategoricalDtype) for t in frame.dtypes]]:
            frame[name] = np.asarray(frame[name], dtype=object)
        frame["line"] = np.arange(len(frame)) + 1
        return frame
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
    """A column as text ("" where missing; whole floats such as ids 12.0 as "12")."""
    if column not in frame:
        return pd.Series("", index=frame.index, dtype="str")
    col = frame[column]
    if pd.api.types.is_string_dtype(col.dtype) and not pd.api.types.is_object_dtype(col.dtype):
        return col.fillna("") if col.hasnans else col  # the file's column itself: no copy
    if pd.api.types.is_integer_dtype(col.dtype):
        return col.astype("str")
    if pd.api.types.is_object_dtype(col.dtype) and pd.api.types.infer_dtype(col, skipna=True) in ("string", "empty"):
        return pd.Series(col, dtype="str").fillna("")  # text, and None or NaN where missing: no value to convert
    return pd.Series([_as_text(v) for v in col.tolist()], index=frame.index, dtype="str")


def id_problem_rows(column: pd.Series) -> np.ndarray:
    """The rows of a column of ids whose value may have an :func:`id_problem`, found column-wise: a
    control character in text, a number that is no id, any value of another type. Only these rows'
    values are then checked one by one, for the message.

    >>> id_problem_rows(pd.Series(["c1", "c\\x1b", None], dtype=object)).tolist()
    [False, True, False]
    >>> id_problem_rows(pd.Series(["c1", 7], dtype=object)).tolist()  # mixed types: each value checked
    [True, True]
    """
    dtype = column.dtype
    if pd.api.types.is_bool_dtype(dtype):
        return np.ones(len(column), dtype=bool)
    if pd.api.types.is_integer_dtype(dtype):
        return np.zeros(len(column), dtype=bool)
    if pd.api.types.is_float_dtype(dtype):
        values = column.to_numpy(dtype=float, na_value=np.nan)
        with np.errstate(invalid="ignore"):
            return np.isinf(values) | ((values == np.round(values)) & (np.abs(values) >= 2**53))
    objects = pd.api.types.is_object_dtype(dtype)
    if objects and pd.api.types.infer_dtype(column, skipna=True) not in ("string", "empty"):
        return np.ones(len(column), dtype=bool)  # mixed types (JSON Lines): each value checked
    if not (objects or pd.api.types.is_string_dtype(dtype)):
        return np.ones(len(column), dtype=bool)
    text = pd.Series(column, dtype="str") if objects else column
    return text.str.contains(_CONTROL.pattern, regex=True, na=False).to_numpy(dtype=bool)


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
    ratings = pd.DataFrame({c: text_column(raw, c) for c in ("case_id", "metric", "rater", "rater_kind")}, copy=False)
    values, blank, invalid = parse_values(raw["value"])
    for c in OPTIONAL_COLUMNS:
        ratings[c] = text_column(raw, c)
    ratings["value"] = values
    ratings["line"] = raw["line"].to_numpy()
    # where each rating came from: the file's name, and the tool it was imported from (calibrate import)
    ratings["file"] = file_names(files) if in_folder else pd.Categorical(files)
    ratings["source"] = text_column(raw, "source")
    return ratings, values, blank, invalid


def file_names(files: np.ndarray | pd.Categorical) -> pd.Categorical:
    """The name of each row's file (``ratings.csv`` of ``/data/c/ratings.csv``), worked out once per file,
    as a categorical (each name held once).

    >>> file_names(np.array(["/c/ratings.csv", "/c/judge_ratings.csv", "/c/ratings.csv"])).tolist()
    ['ratings.csv', 'judge_ratings.csv', 'ratings.csv']
    """
    codes, paths = pd.factorize(files)
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
