"""A RAGAS evaluation result (``EvaluationResult.to_pandas()`` saved as CSV or Parquet) read as cases
and judge ratings.

The table has one row per sample: its fields in RAGAS's names (``user_input``, ``response``,
``reference``, ``retrieved_contexts``, ``reference_contexts``) and one column per metric scored
(``faithfulness``, ``answer_relevancy``, ...). RAGAS records a metric that failed on a sample as NaN,
and keeps neither why nor which model judged: a NaN becomes a failed rating saying so, and the judge
is named by the user (``rater``, with its ``model``).
"""

from __future__ import annotations

import ast
import io
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from pydantic import JsonValue

from calibrate.base.documents import DocumentError, check, read_bytes
from calibrate.base.errors import CampaignError, Problem
from calibrate.base.results import Result
from calibrate.base.secrets import clip
from calibrate.cases.datasets import external_case
from calibrate.imports.apply import import_files
from calibrate.imports.records import ImportedRating, Skip, SourceBatch
from calibrate.imports.texts import Record

__all__ = ["SAMPLE_COLUMNS", "RagasSample", "import_ragas_result", "read_ragas_result"]

#: the columns of a sample (single- and multi-turn) that RAGAS's table holds beside the scores
SAMPLE_COLUMNS = {
    "user_input",
    "response",
    "reference",
    "retrieved_contexts",
    "reference_contexts",
    "multi_responses",
    "rubrics",
    "reference_tool_calls",
    "reference_topics",
    "persona_name",
    "query_style",
    "query_length",
    "synthesizer_name",
}
NAN_ERROR = "RAGAS recorded no score (NaN): the metric failed on this sample, and RAGAS keeps no reason"
INF_ERROR = "RAGAS recorded an infinite score ({score}): no score a metric gives, so none is kept"


EXPECTED = "EvaluationResult.to_pandas() saved as CSV or Parquet"


class RagasSample(Record):
    """The sample columns of a row of RAGAS's table: a single-turn sample's user input is text (a
    multi-turn sample's is a list of messages); the other columns are read as a case
    (:func:`~calibrate.cases.datasets.external_case`); each metric column holds a number (NaN where
    the metric failed)."""

    user_input: JsonValue = None


def _table(path: Path) -> pd.DataFrame:
    if path.suffix not in (".csv", ".parquet"):
        raise DocumentError(
            [
                Problem(
                    str(path),
                    "not a .csv or .parquet file",
                    value=path.suffix,
                    expected="EvaluationResult.to_pandas() saved with to_csv or to_parquet",
                )
            ],
            source=str(path),
        )
    data = io.BytesIO(read_bytes(path, expected=EXPECTED))
    try:
        return pd.read_parquet(data) if path.suffix == ".parquet" else pd.read_csv(data, keep_default_na=True)
    except Exception as exc:  # noqa: BLE001 - pandas and pyarrow raise many kinds for an unreadable file
        raise DocumentError(
            [Problem(str(path), f"not a readable table ({type(exc).__name__}: {clip(exc, 200)})", expected=EXPECTED)],
            source=str(path),
        ) from None


def _cell(value: Any) -> Any:
    """A cell as RAGAS had it: None for a missing value, a list for an array or a list's text, a Python
    number for numpy's."""
    if isinstance(value, np.ndarray):
        return [str(v) for v in value.tolist()]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, str) and value.startswith("[") and value.endswith("]"):
        try:  # Python's parser refuses nesting past 200 levels (a SyntaxError): no stack exhausted
            parsed = ast.literal_eval(value)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            return value
        return parsed if isinstance(parsed, list) else value
    return value


def _metric_columns(path: Path, table: pd.DataFrame) -> list:
    """The metric columns of a RAGAS table (every column not of the sample); none, or no ``user_input``, refused."""
    if "user_input" not in table.columns:
        raise CampaignError(
            [
                Problem(
                    str(path),
                    "no user_input column",
                    value=", ".join(map(str, table.columns[:10])),
                    expected="the table of EvaluationResult.to_pandas(): user_input, response, "
                    "retrieved_contexts, ... and a column per metric",
                )
            ]
        )
    metrics = [c for c in table.columns if c not in SAMPLE_COLUMNS]
    if not metrics:
        raise CampaignError(
            [
                Problem(
                    str(path),
                    "no metric column",
                    expected="a column per metric RAGAS scored, "
                    "beside " + ", ".join(sorted(c for c in SAMPLE_COLUMNS if c in table.columns)),
                )
            ]
        )
    return metrics


def _row_ratings(
    row: dict, metrics: list, case_id: str, *, path: Path, line: int, rater: str, facts: dict[str, str]
) -> tuple[list[ImportedRating], list[Problem]]:
    """A row's rating per metric column (a failed score kept as a rating with its error), and the scores refused."""
    ratings: list[ImportedRating] = []
    problems: list[Problem] = []
    for metric in metrics:
        value = _cell(row[metric])
        score, found = check(
            float(value) if isinstance(value, bool) else value,
            float | None,
            source=str(path),
            line=line,
            field=str(metric),
            expected="a number, or empty where the metric failed",
        )
        if found:
            problems += [
                Problem(
                    p.file,
                    f"the score of {metric!r} is not a number",
                    row=p.row,
                    field=p.field,
                    value=p.value,
                    expected=p.expected,
                )
                for p in found
            ]
            continue
        failed = score is None or not math.isfinite(score)
        value = score
        ratings.append(
            ImportedRating(
                case_id=case_id,
                metric=str(metric),
                rater=str(rater),
                rater_kind="judge",
                value=None if failed else float(value),
                error=None
                if not failed
                else NAN_ERROR
                if score is None or math.isnan(score)
                else INF_ERROR.format(score=score),
                source_id=f"{path.name}#row{line}/{metric}",
                facts=facts,
            )
        )
    return ratings, problems


def read_ragas_result(path: str | Path, *, rater: str, model: str | None = None) -> SourceBatch:
    """The cases and judge ratings of a saved RAGAS result.

    Parameters
    ----------
    path : str or Path
        ``result.to_pandas().to_csv(path)`` (with or without the index) or ``.to_parquet(path)``.
    rater : str
        The judge's name in the campaign (RAGAS does not record it).
    model : str, optional
        The judge's model, recorded with each rating (and its family told from it).

    Returns
    -------
    SourceBatch
        Origin ``ragas``; each case's id is a hash of its content, as ``calibrate cases import`` gives
        the same sample.

    Raises
    ------
    CampaignError
        A file that is not RAGAS's table, a sample without ``user_input``, or a score that is not a number.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "result.csv"
    >>> pd.DataFrame({"user_input": ["q?", "r?"], "response": ["a.", "b."], "retrieved_contexts": [["c"], ["d"]],
    ...               "faithfulness": [1.0, float("nan")]}).to_csv(path, index=False)
    >>> batch = read_ragas_result(path, rater="ragas-gpt4o", model="gpt-4o")
    >>> [(r.metric, r.value, r.error is None) for r in batch.ratings], batch.cases[0]["retrieval_context"]
    ([('faithfulness', 1.0, True), ('faithfulness', None, False)], ['c'])
    """
    path = Path(path)
    if not rater or not str(rater).strip():
        raise ValueError(
            "rater: a RAGAS result does not record its judge: name it (--rater NAME; its model with --model)"
        )
    table = _table(path)
    table = table.drop(columns=[c for c in table.columns if str(c).startswith("Unnamed: ")])  # a saved index
    metrics = _metric_columns(path, table)
    batch = SourceBatch(kind="ragas", origin="ragas", source=str(path))
    problems: list[Problem] = []
    facts = {k: v for k, v in {"library": "ragas", "model": model}.items() if v is not None}
    for i, row in enumerate(table.to_dict("records")):
        line = i + 2 if path.suffix == ".csv" else i + 1
        record = {c: _cell(row[c]) for c in table.columns if c in SAMPLE_COLUMNS}
        sample, found = check(record, RagasSample, source=str(path), line=line, expected=EXPECTED)
        if sample is None:
            problems += found
            continue
        if isinstance(sample.user_input, list):
            batch.skipped.append(
                Skip(f"{path.name}#row{line}", "a multi-turn sample: calibrate rates single-turn cases")
            )
            continue
        case, found = external_case(
            {k: v for k, v in record.items() if v is not None}, source="ragas", where=str(path), row=line
        )
        if case is None:
            problems += found
            continue
        case["metadata"]["source"] = f"ragas:{path.name}"
        batch.cases.append(case)
        ratings, found = _row_ratings(row, metrics, case["case_id"], path=path, line=line, rater=rater, facts=facts)
        batch.ratings += ratings
        problems += found
    if problems:
        raise CampaignError(problems)
    return batch


def import_ragas_result(
    campaign_folder: str | Path,
    path: str | Path,
    *,
    rater: str,
    model: str | None = None,
    metric_map: Mapping[str, str] | None = None,
    dry_run: bool = False,
) -> Result:
    """The ``calibrate import ragas`` command: a saved RAGAS result read by :func:`read_ragas_result` and
    brought into the campaign by :func:`~calibrate.imports.apply.import_batch`.

    Parameters
    ----------
    campaign_folder : str or Path
    path : str or Path
        ``EvaluationResult.to_pandas()`` saved as CSV or Parquet.
    rater : str
        The judge's name in the campaign (RAGAS does not record it).
    model : str, optional
        The judge's model.
    metric_map : mapping, optional
        RAGAS metric column -> campaign metric, for names that do not match the campaign's.
    dry_run : bool
        Say what the import would do; write nothing.

    Returns
    -------
    Result
        As :func:`~calibrate.imports.apply.import_batch` returns it.

    Examples
    --------
    >>> import tempfile, pathlib, calibrate
    >>> tmp = pathlib.Path(tempfile.mkdtemp())
    >>> _ = calibrate.init_campaign(tmp / "c", ["faithfulness"])
    >>> pd.DataFrame({"user_input": ["q?"], "response": ["a."], "faithfulness": [0.5]}).to_csv(tmp / "r.csv")
    >>> import_ragas_result(tmp / "c", tmp / "r.csv", rater="ragas-gpt4o", model="gpt-4o")["by_metric"]
    {'faithfulness': {'human': 0, 'judge': 1}}
    """
    return import_files(
        campaign_folder,
        "ragas",
        {"result": path},
        lambda: read_ragas_result(path, rater=rater, model=model),
        options={"rater": rater, "model": model},
        metric_map=metric_map,
        dry_run=dry_run,
    )
