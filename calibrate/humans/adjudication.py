"""Settling annotators' disagreements: a third person's decision becomes the case's reference label.

:func:`disagreements` lists the cases whose annotators disagree (different labels on a binary or
ordinal metric, a different side of ``human_pass`` on a continuous one); :func:`write_template` puts
them in a CSV for the adjudicator to fill; :func:`record_decisions` reads it back, checks every row,
and appends each new or changed decision to ``adjudications.sqlite`` (earlier decisions are kept) and
the current ones to ``adjudications.csv``, which ``load_campaign`` reads: the human reference of an
adjudicated case is then the decision, not the annotators' majority.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

import numpy as np

from calibrate.base.documents import read_text
from calibrate.base.errors import CampaignError, ParameterText, Problem
from calibrate.base.files import replacing, writes_campaign
from calibrate.base.results import Result, records_frame, single_row
from calibrate.base.sqlite_store import now, open_store
from calibrate.campaign import ADJUDICATIONS_FILE, CASES_FILE, Campaign
from calibrate.campaign.judge_specs import SUPPORTED
from calibrate.humans.labelstudio.interface import metric_kind

__all__ = [
    "STORE_NAME",
    "adjudicate",
    "append_decisions",
    "cell_text",
    "decision_history",
    "disagreements",
    "fields_read",
    "record_decisions",
    "template_columns",
    "write_template",
]

STORE_NAME = "adjudications.sqlite"
MIGRATIONS = [
    """CREATE TABLE decisions (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    case_id TEXT NOT NULL,
    metric TEXT NOT NULL,
    value REAL NOT NULL,
    adjudicator TEXT NOT NULL,
    note TEXT,
    source TEXT NOT NULL,
    decided TEXT NOT NULL
)"""
]
#: the template's columns around the case's text: what identifies a row, and what the adjudicator fills
TEMPLATE_HEAD = ["case_id", "metric", "labels"]
TEMPLATE_TAIL = ["decision", "adjudicator", "note"]
#: a case's text fields, in the order a reader wants them
CASE_FIELDS = ("input", "actual_output", "expected_output", "retrieval_context", "context")
#: the longest text written in one cell: a spreadsheet holds 32,767 characters a cell, and cuts the rest
#: silently; a longer text is cut here, saying so (the whole text stays in cases.jsonl)
CELL_LIMIT = 32_000
#: a cell a spreadsheet would run as a formula starts with one of these (CSV injection)
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


@writes_campaign("calibrate adjudicate", when=lambda bound: bound.arguments.get("decisions") is not None)
def adjudicate(
    campaign: Campaign,
    *,
    metric: str | None = None,
    template: str | Path | None = None,
    decisions: str | Path | None = None,
) -> Result:
    """The ``calibrate adjudicate`` command: the cases annotators disagree on (and, with ``template``,
    a CSV of them for the adjudicator to fill), or, with ``decisions``, the filled CSV recorded.

    Parameters
    ----------
    campaign : Campaign
        A campaign read from its folder (decisions are kept there).
    metric : str, optional
        Only this metric.
    template : str or Path, optional
        Write the disagreements to this CSV (a file that exists is never replaced: it may hold an
        adjudicator's work).
    decisions : str or Path, optional
        A filled template: its decisions become the cases' reference labels (earlier ones kept).

    Returns
    -------
    Result
        ``{"disagreements": [{"case_id", "metric", "labels", "decision"}]}`` (``.to_frame()``: one row
        per case), or with ``decisions`` the counts ``{"new", "changed", "unchanged", "blank"}``.

    Examples
    --------
    >>> import pandas as pd
    >>> from calibrate.campaign import campaign_from_frames
    >>> c = campaign_from_frames({"name": "n", "metrics": {"f": {"scale": "binary"}}}, pd.DataFrame(
    ...     {"case_id": ["a", "a", "b", "b"], "metric": "f", "rater": ["x", "y", "x", "y"],
    ...      "rater_kind": "human", "value": [1, 0, 1, 1]}))
    >>> adjudicate(c).to_frame()[["case_id", "labels.x", "labels.y"]].values.tolist()
    [['a', 1.0, 0.0]]
    """
    if metric is not None:
        campaign.metric_names([metric])
    if decisions is not None:
        return Result(record_decisions(campaign, decisions), single_row)
    found = disagreements(campaign, metric)
    if template is not None:
        if Path(template).exists():
            raise FileExistsError(
                ParameterText(
                    "{template}: the file exists (it may hold an adjudicator's decisions): choose another file",
                    template=str(template),
                )
            )
        write_template(campaign, template, metric)
    return Result({"disagreements": found}, records_frame("disagreements"))


def disagreements(campaign: Campaign, metric: str | None = None) -> list[dict[str, Any]]:
    """The cases whose human annotators disagree, per metric, with each annotator's label and the
    current decision (None when not adjudicated)."""
    current = {(r.case_id, r.metric): r.value for r in campaign.adjudications.itertuples()}
    out = []
    for name in sorted([metric] if metric else campaign.metrics):
        spec = campaign.metrics[name]
        rows = campaign.ratings[
            (campaign.ratings["metric"] == name)
            & (campaign.ratings["rater_kind"] == "human")
            & campaign.ratings["value"].notna()
        ]
        for case_id, group in rows.groupby("case_id", sort=True):
            values = group["value"].to_numpy(float)
            sides = values >= spec.human_pass if spec.scale == "continuous" else values
            if len(values) >= 2 and np.unique(sides).size > 1:
                out.append(
                    {
                        "case_id": str(case_id),
                        "metric": name,
                        "labels": dict(zip(group["rater"].astype(str), values.tolist())),
                        "decision": current.get((str(case_id), name)),
                    }
                )
    return out


def fields_read(campaign: Campaign, metric: str) -> tuple[str, ...]:
    """The case fields a judgement of ``metric`` reads: those its ``[judges]`` read, and those its
    labeling interface shows the annotators (faithfulness: the question, the answer and the retrieved
    contexts). Input and actual output always.

    Examples
    --------
    >>> import pandas as pd
    >>> from calibrate.campaign import campaign_from_frames
    >>> c = campaign_from_frames({"name": "n", "metrics": {"faithfulness": {"scale": "binary"},
    ...                           "politeness": {"scale": "binary"}}}, pd.DataFrame(
    ...     columns=["case_id", "metric", "rater", "rater_kind", "value"]))
    >>> fields_read(c, "faithfulness"), fields_read(c, "politeness")
    (('input', 'actual_output', 'retrieval_context'), ('input', 'actual_output'))
    """
    read = {"input", "actual_output"}
    kind = metric_kind(metric)
    if kind != "custom":
        read.update(SUPPORTED[("deepeval", kind)]["fields"])
    for spec in campaign.judges.values():
        if spec.into == metric:
            read.update(spec.fields)
    return tuple(f for f in CASE_FIELDS if f in read)


def template_columns(campaign: Campaign, found: list[dict[str, Any]]) -> list[str]:
    """The columns of a template for the disagreements ``found``: every field their metrics read
    (:func:`fields_read`), and any other text field their cases have."""
    fields = set()
    for d in found:
        fields.update(fields_read(campaign, d["metric"]))
        case = (campaign.cases or {}).get(d["case_id"], {})
        fields.update(f for f in CASE_FIELDS if case.get(f) not in (None, "", []))
    return TEMPLATE_HEAD + [f for f in CASE_FIELDS if f in fields] + TEMPLATE_TAIL


def cell_text(value: Any) -> str:
    """A case's field as a template cell: a list of passages numbered one a paragraph, a text whole up to
    :data:`CELL_LIMIT` characters (then cut, saying so), and a text a spreadsheet would run as a formula
    made inert with a leading apostrophe.

    Examples
    --------
    >>> cell_text(["Paris is in France.", "It is the capital."])
    '[1] Paris is in France.\\n\\n[2] It is the capital.'
    >>> cell_text('=HYPERLINK("http://x", "click")'), cell_text(None)
    ('\\'=HYPERLINK("http://x", "click")', '')
    >>> cell_text("x" * 40_000)[-72:]
    '… [cut at 32,000 of 40,000 characters: the whole text is in cases.jsonl]'
    """
    if value is None:
        return ""
    if isinstance(value, (list, tuple)):
        text = "\n\n".join(f"[{i}] {chunk}" for i, chunk in enumerate(value, start=1))
    else:
        text = str(value)
    if len(text) > CELL_LIMIT:
        text = (
            text[:CELL_LIMIT] + f"… [cut at {CELL_LIMIT:,} of {len(text):,} characters: the whole text is in "
            f"{CASES_FILE}]"
        )
    return "'" + text if text.startswith(FORMULA_START) else text


def write_template(campaign: Campaign, path: str | Path, metric: str | None = None) -> int:
    """A CSV of the disagreements for the adjudicator: fill ``decision`` and ``adjudicator``. Each row
    carries every field of the case the metric reads (:func:`template_columns`): a faithfulness
    decision needs the retrieved contexts."""
    found = disagreements(campaign, metric)
    columns = template_columns(campaign, found)
    with replacing(path) as handle:
        writer = csv.writer(handle)
        writer.writerow(columns)
        for d in found:
            case = (campaign.cases or {}).get(d["case_id"], {})
            labels = "; ".join(f"{who}={value:g}" for who, value in d["labels"].items())
            texts = [cell_text(case.get(f)) for f in columns[len(TEMPLATE_HEAD) : -len(TEMPLATE_TAIL)]]
            writer.writerow(
                [
                    d["case_id"],
                    d["metric"],
                    labels,
                    *texts,
                    "" if d["decision"] is None else f"{d['decision']:g}",
                    "",
                    "",
                ]
            )
    return len(found)


def _decision(campaign: Campaign, path: Path, row: dict[str, Any], line: int, text: str) -> dict[str, Any] | Problem:
    """The decision of a filled row (``text``: its decision cell), or the problem that refuses it."""
    where = {"row": line}
    metric = campaign.metrics.get(row["metric"])
    if metric is None:
        return Problem(
            str(path),
            "unknown metric",
            field="metric",
            value=row["metric"],
            expected="one of " + ", ".join(sorted(campaign.metrics)),
            **where,
        )
    if campaign.cases is not None and row["case_id"] not in campaign.cases:
        return Problem(
            str(path),
            "a case that is not in cases.jsonl",
            field="case_id",
            value=row["case_id"],
            **where,
        )
    try:
        value = float(text)
    except ValueError:
        value = {"pass": 1.0, "fail": 0.0}.get(text.lower()) if metric.scale == "binary" else None
    if value is None or not bool(metric.in_scale(np.array([value]))[0]):
        return Problem(
            str(path),
            "the decision is not on the metric's scale",
            field="decision",
            value=text,
            expected=metric.scale_text(),
            **where,
        )
    if not (row.get("adjudicator") or "").strip():
        return Problem(
            str(path),
            "who decided?",
            field="adjudicator",
            value="",
            expected="the adjudicator's name or e-mail",
            **where,
        )
    return {
        "case_id": row["case_id"],
        "metric": row["metric"],
        "value": value,
        "adjudicator": row["adjudicator"].strip(),
        "note": (row.get("note") or "").strip(),
    }


def _read_decisions(campaign: Campaign, path: Path) -> tuple[list[dict[str, Any]], int]:
    problems: list[Problem] = []
    decisions, blank = [], 0
    try:
        with io.StringIO(read_text(path, expected="a decisions file (CSV)"), newline="") as handle:
            reader = csv.DictReader(handle)
            missing = {"case_id", "metric", "decision", "adjudicator"} - set(reader.fieldnames or [])
            if missing:
                raise CampaignError(
                    [
                        Problem(
                            str(path),
                            "missing columns",
                            value=", ".join(sorted(missing)),
                            expected="case_id, metric, decision, adjudicator (and note)",
                        )
                    ]
                )
            for line, row in enumerate(reader, start=2):
                text = (row.get("decision") or "").strip()
                if not text:
                    blank += 1
                    continue
                found = _decision(campaign, path, row, line, text)
                if isinstance(found, Problem):
                    problems.append(found)
                else:
                    decisions.append(found)
    except OSError as exc:
        raise CampaignError([Problem(str(path), f"cannot read the decisions: {exc.strerror}")]) from None
    if problems:
        raise CampaignError(problems)
    return decisions, blank


@writes_campaign("calibrate adjudicate")
def record_decisions(campaign: Campaign, path: str | Path) -> dict[str, int]:
    """Append the decisions of a filled template (new or changed ones) and export the current ones.
    Every row is checked first; a problem anywhere records nothing."""
    if campaign.path is None:
        raise ValueError("adjudication needs a campaign folder")
    decisions, blank = _read_decisions(campaign, Path(path))
    return append_decisions(campaign.path, decisions, source=str(path)) | {"blank": blank}


@writes_campaign("calibrate adjudicate")
def append_decisions(folder: Path, decisions: list[dict[str, Any]], *, source: str) -> dict[str, int]:
    """Append each new or changed decision (``case_id, metric, value, adjudicator, note``) to the
    store, keeping the earlier ones, and write the current ones to ``adjudications.csv``."""
    db = open_store(Path(folder) / STORE_NAME, MIGRATIONS)
    try:
        latest = {
            (r[0], r[1]): (r[2], r[3])
            for r in db.execute(
                "SELECT case_id, metric, value, adjudicator FROM decisions WHERE id IN "
                "(SELECT MAX(id) FROM decisions GROUP BY case_id, metric)"
            )
        }
        counts = {"new": 0, "changed": 0, "unchanged": 0}
        stamp = now()
        db.execute("BEGIN")
        for d in decisions:
            before = latest.get((d["case_id"], d["metric"]))
            if before == (d["value"], d["adjudicator"]):
                counts["unchanged"] += 1
                continue
            counts["new" if before is None else "changed"] += 1
            db.execute(
                "INSERT INTO decisions (case_id, metric, value, adjudicator, note, source, decided) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (d["case_id"], d["metric"], d["value"], d["adjudicator"], d.get("note") or None, source, stamp),
            )
        db.execute("COMMIT")
        rows = db.execute(
            "SELECT case_id, metric, value, adjudicator, decided FROM decisions WHERE id IN "
            "(SELECT MAX(id) FROM decisions GROUP BY case_id, metric) ORDER BY case_id, metric"
        )
        with replacing(Path(folder) / ADJUDICATIONS_FILE) as handle:
            writer = csv.writer(handle)
            writer.writerow(["case_id", "metric", "value", "adjudicator", "decided"])
            for case_id, metric, value, adjudicator, decided in rows:
                writer.writerow([case_id, metric, repr(value), adjudicator, decided])
    finally:
        db.close()
    return counts


def decision_history(folder: str | Path) -> list[dict[str, Any]]:
    """Every recorded decision, oldest first."""
    db = open_store(Path(folder) / STORE_NAME, MIGRATIONS)
    keys = ("case_id", "metric", "value", "adjudicator", "note", "source", "decided")
    try:
        return [dict(zip(keys, row)) for row in db.execute(f"SELECT {', '.join(keys)} FROM decisions ORDER BY id")]
    finally:
        db.close()
