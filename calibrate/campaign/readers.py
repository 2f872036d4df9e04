"""Reading a campaign folder's files: ``ratings.{csv,jsonl,parquet}`` and the ratings calibrate exports
beside them (:func:`read_ratings`), ``cases.jsonl`` (:func:`read_jsonl`) and ``adjudications.csv``
(:func:`read_adjudications`), and the typed ratings table made from the rows read (:func:`typed_ratings`).
Every problem names the file and the line.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from pydantic import JsonValue

from calibrate.base.documents import read_csv_rows, read_json_lines
from calibrate.base.errors import CampaignError, Problem
from calibrate.base.secrets import clip
from calibrate.campaign.model import ADJUDICATION_COLUMNS, OPTIONAL_COLUMNS, REQUIRED_COLUMNS, Campaign, SetAside

__all__ = [
    "parse_values",
    "read_adjudications",
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
    lines, and blank lines are skipped, so a row's line is not its index)."""
    header, rows = read_csv_rows(path, expected="a header line: " + ", ".join(REQUIRED_COLUMNS))
    frame = pd.DataFrame([record for _, record in rows], columns=header, dtype=object)
    frame["line"] = [line for line, _ in rows]
    return frame


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
        frame = frame.astype(object)
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
    if pd.api.types.is_string_dtype(col.dtype) and col.dtype != object:
        return col.fillna("")
    if pd.api.types.is_integer_dtype(col.dtype):
        return col.astype("str")
    return pd.Series([_as_text(v) for v in col.tolist()], index=frame.index, dtype="str")


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
    raw: pd.DataFrame, files: np.ndarray, *, in_folder: bool
) -> tuple[pd.DataFrame, np.ndarray, np.ndarray, np.ndarray]:
    """The ratings read (``raw``: text or numbers as the file held them) as a table of text ids and float
    values, with the line and the file each came from: ``(ratings, values, blank, invalid)``, the last
    three as :func:`parse_values` gives them. ``in_folder``: the files are a folder's (their names kept),
    not Python objects."""
    ratings = pd.DataFrame({c: text_column(raw, c) for c in ("case_id", "metric", "rater", "rater_kind")})
    values, blank, invalid = parse_values(raw["value"])
    for c in OPTIONAL_COLUMNS:
        ratings[c] = text_column(raw, c)
    ratings["value"] = values
    ratings["line"] = raw["line"].to_numpy()
    # where each rating came from: the file's name, and the tool it was imported from (calibrate import)
    ratings["file"] = [Path(f).name if in_folder else f for f in files]
    ratings["source"] = text_column(raw, "source")
    return ratings, values, blank, invalid
