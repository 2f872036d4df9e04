"""Checking a campaign folder: validate."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click
from rich.table import Table

from calibrate.cli.console import (
    load,
    out,
    out_of_scale_option,
)

if TYPE_CHECKING:
    pass


@click.command()
@click.argument("campaign", type=click.Path(file_okay=False))
@out_of_scale_option
def validate(campaign: str, out_of_scale: str) -> None:
    """Check a campaign folder; list every problem with its file, line and field."""
    c = load(campaign, out_of_scale)
    table = Table(title=f"campaign {c.name}: valid")
    for col in ("metric", "scale", "human ratings", "judge ratings", "failed", "cases with a human label",
                "judges"):
        table.add_column(col)
    for name, metric in sorted(c.metrics.items()):
        rows = c.ratings[c.ratings["metric"] == name]
        human, judge = rows[rows["rater_kind"] == "human"], rows[rows["rater_kind"] == "judge"]
        table.add_row(name, metric.scale, str(len(human)), str(len(judge)), str(int(rows["value"].isna().sum())),
                      str(human.loc[human["value"].notna(), "case_id"].nunique()), str(judge["rater"].nunique()))
    out.print(table)
    out.print(f"{len(c.cases) if c.cases is not None else 'no'} cases in cases.jsonl; data {c.data_hash}")
    for a in c.adjustments:
        out.print(f"{a.action}: {a.file} line {a.line}: {a.rater} rated case {a.case_id} {a.value:g}"
                  + (f" -> {a.new_value:g}" if a.new_value is not None else ""))
    if c.set_aside:
        out.print("note: " + c.set_aside_note())


#: the commands this module adds to ``calibrate``
COMMANDS = [validate]
