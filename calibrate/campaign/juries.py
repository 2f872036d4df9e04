"""Juries: a judge made of several judges, analysed like any other.

Declared in ``campaign.toml``::

    [juries.panel]
    judges = ["gpt4o-faithfulness", "llama70b-faithfulness", "claude-faithfulness"]
    combine = "median"          # mean | median | majority
    metrics = ["faithfulness"]  # optional: every metric its judges rated

On each case every member rated (without error), the jury's score is the members' mean, their median
(the lower middle value when all members rate on the metric's scale, so that it stays on the scale),
or their majority (the most frequent value, a tie going to the lower one, as a human panel's does;
members must rate on the metric's scale). A member rated in several runs is named ``rater@run_id``.
The jury's ratings join the campaign as a judge named after the jury, of the family ``jury``.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

import numpy as np
import pandas as pd
from pydantic import Field

from calibrate.base.errors import Problem
from calibrate.campaign.config import Table, tables

__all__ = ["COMBINE", "JURY_KEYS", "JuryTable", "jury_ratings", "parse_juries"]

COMBINE = ("mean", "median", "majority")


class JuryTable(Table):
    """``[juries.NAME]``: the judges (``rater`` or ``rater@run_id``), how their scores combine, the metrics."""

    judges: list[str] = Field(description='judges = ["a", "b", ...]: two or more distinct judges')
    combine: Literal["mean", "median", "majority"] = Field("mean", description=" | ".join(COMBINE))
    metrics: list[str] | None = Field(None, description="a list of metric names")
    description: str | None = Field(None, description="text")

    messages: ClassVar[dict[str, str]] = {
        "judges": "a jury needs two or more distinct judges",
        "combine": "unknown way to combine",
        "metrics": "must be a list of metric names",
        "description": "must be a string",
    }


JURY_KEYS = set(JuryTable.model_fields)


def parse_juries(specs: Any, file: str, problems: list[Problem]) -> dict[str, dict[str, Any]]:
    """The ``[juries.NAME]`` tables, read by :class:`JuryTable` (members are checked against the ratings
    later).

    >>> problems = []
    >>> parse_juries({"p": {"judges": ["a", "a"]}, "q": {"judges": ["a", "b"], "combine": "max"}}, "c.toml", problems)
    {}
    >>> [(p.field, p.message) for p in problems]
    [('juries.q.combine', 'unknown way to combine'), ('juries.p.judges', 'a jury needs two or more distinct judges')]
    """
    juries = {}
    for name, spec in tables(specs, JuryTable, "juries", file, problems).items():
        if len(spec.judges) < 2 or len(set(spec.judges)) != len(spec.judges):
            problems.append(
                Problem(
                    file,
                    "a jury needs two or more distinct judges",
                    field=f"juries.{name}.judges",
                    value=spec.judges,
                    expected='judges = ["a", "b", ...]',
                )
            )
            continue
        juries[name] = {
            "judges": list(spec.judges),
            "combine": spec.combine,
            "metrics": list(spec.metrics) if spec.metrics is not None else None,
            "description": spec.description,
        }
    return juries


def _combine(values: np.ndarray, how: str, on_scale: bool) -> np.ndarray:
    """Row-wise combination of a (cases x members) array."""
    if how == "mean":
        return values.mean(axis=1)
    ordered = np.sort(values, axis=1)
    if how == "median":
        return ordered[:, (values.shape[1] - 1) // 2] if on_scale else np.median(values, axis=1)
    out = np.empty(values.shape[0])  # majority: the most frequent value, ties to the lower
    for i, row in enumerate(ordered):
        distinct, counts = np.unique(row, return_counts=True)
        out[i] = distinct[np.argmax(counts)]
    return out


def _refusal(
    name: str,
    jury: dict,
    members: list[tuple[str, str, str]],
    orientation: set[bool],
    on_scale: bool,
    taken: set,
    judge_rows: pd.DataFrame,
    file: str,
) -> Problem | None:
    """Why a jury cannot be formed at all (its name taken, its members at odds or without ratings), or None."""
    where = f"juries.{name}"
    if name in taken:
        return Problem(
            file,
            f"jury '{name}' has the name of a rater in the ratings",
            field=where,
            expected="a name no rater uses",
        )
    if len(orientation) > 1:
        return Problem(
            file, "its judges' scores run in opposite directions (higher_is_better)", field=f"{where}.judges"
        )
    if jury["combine"] == "majority" and not on_scale:
        return Problem(
            file,
            "a majority needs judges that rate on the metric's scale (declare "
            "on_metric_scale = true for each, or combine by mean or median)",
            field=f"{where}.combine",
            value="majority",
        )
    missing = [r for r, _, _ in members if not (judge_rows["rater"] == r).any()]
    if missing:
        return Problem(
            file,
            f"judge '{missing[0]}' has no ratings in the campaign",
            field=f"{where}.judges",
            value=missing[0],
            expected="judges with ratings (the ratings of a judge removed from [judges] are "
            "set aside: take it out of the jury too, or declare it again)",
        )
    return None


def _member_scores(
    judge_rows: pd.DataFrame, members: list[tuple[str, str, str]], metric: str, where: str, file: str
) -> list[pd.Series] | Problem:
    """Each member's scores of ``metric`` by case (from its one run, or the run named), or why not."""
    columns = []
    for rater, _, run in members:
        part = judge_rows[(judge_rows["rater"] == rater) & (judge_rows["metric"] == metric)]
        runs = sorted(part["run_id"].unique())
        if not len(part):
            return Problem(
                file,
                f"judge '{rater}' has no ratings of metric '{metric}'",
                field=f"{where}.judges",
                value=rater,
            )
        if run:
            part = part[part["run_id"] == run]
            if not len(part):
                return Problem(
                    file,
                    f"judge '{rater}' has no run '{run}' on metric '{metric}' (its runs: {', '.join(runs)})",
                    field=f"{where}.judges",
                )
        elif len(runs) > 1:
            return Problem(
                file,
                f"judge '{rater}' has several runs on metric '{metric}': name one "
                f"as {rater}@RUN_ID ({', '.join(runs)})",
                field=f"{where}.judges",
            )
        columns.append(part.set_index("case_id")["value"])
    return columns


def _jury_frame(columns: list[pd.Series], name: str, metric: str, how: str, on_scale: bool) -> pd.DataFrame:
    """The jury's ratings of ``metric``: on each case every member rated, the members' scores combined."""
    table = pd.concat(columns, axis=1, join="inner").sort_index()
    values = _combine(table.to_numpy(float), how, on_scale)
    return pd.DataFrame(
        {
            "case_id": table.index.astype(str),
            "metric": metric,
            "rater": name,
            "rater_kind": "judge",
            "value": values,
        }
    )


def jury_ratings(
    ratings: pd.DataFrame, juries: dict[str, dict], raters: dict, metrics: dict, file: str, problems: list[Problem]
) -> tuple[pd.DataFrame, dict[str, dict]]:
    """The juries' ratings (rows in the ratings table's columns) and, per jury, the facts its rater
    needs (members' orientation, scale)."""
    judge_rows = ratings[(ratings["rater_kind"] == "judge") & ratings["value"].notna()]
    taken = set(ratings["rater"])
    rows, facts = [], {}
    for name, jury in juries.items():
        where = f"juries.{name}"
        members = [m.partition("@") for m in jury["judges"]]
        orientation = {raters[r].higher_is_better if r in raters else True for r, _, _ in members}
        on_scale = all(raters[r].on_metric_scale if r in raters else False for r, _, _ in members)
        refusal = _refusal(name, jury, members, orientation, on_scale, taken, judge_rows, file)
        if refusal is not None:
            problems.append(refusal)
            continue
        rated = set(metrics)
        for rater, _, _ in members:
            rated &= set(judge_rows.loc[judge_rows["rater"] == rater, "metric"])
        chosen = jury["metrics"] if jury["metrics"] is not None else sorted(rated)
        if not chosen:
            problems.append(Problem(file, "its judges have no metric in common", field=f"{where}.judges"))
            continue
        for metric in chosen:
            if metric not in metrics:
                problems.append(Problem(file, f"unknown metric '{metric}'", field=f"{where}.metrics"))
                continue
            found = _member_scores(judge_rows, members, metric, where, file)
            if isinstance(found, Problem):
                problems.append(found)
            else:
                rows.append(_jury_frame(found, name, metric, jury["combine"], on_scale))
        facts[name] = {
            "higher_is_better": orientation.pop(),
            "on_metric_scale": on_scale,
            "model": f"{jury['combine']} of " + ", ".join(jury["judges"]),
            "description": jury.get("description"),
        }
    if not rows:
        return ratings.iloc[0:0], facts
    added = pd.concat(rows, ignore_index=True)
    for column in ratings.columns:
        if column not in added:
            added[column] = 0 if pd.api.types.is_numeric_dtype(ratings[column].dtype) else ""  # text, or a file
    return added[ratings.columns], facts
