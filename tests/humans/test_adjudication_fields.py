"""The adjudication template carries every field the metric reads: a faithfulness decision needs the
retrieved contexts (the template had the question and the answer only, cut at 500 characters)."""

from __future__ import annotations

import csv
import io

import pandas as pd

from calibrate import load_campaign
from calibrate.humans.adjudication import CELL_LIMIT, record_decisions, write_template
from tests.conftest import write_campaign

TOML = """name = "adj-fields"
[metrics.faithfulness]
scale = "binary"
[metrics.contextual_recall]
scale = "binary"
[metrics.politeness]
scale = "binary"
"""
LONG_ANSWER = "The refund window is 30 days. " * 100  # 3,000 characters: the template cut it at 500


def make(tmp_path, *, judges: str = ""):
    cases = [
        {
            "case_id": "t-1",
            "input": "Can I get a refund?",
            "actual_output": LONG_ANSWER,
            "expected_output": "Within 30 days.",
            "retrieval_context": ["Refunds: 30 days.", '=HYPERLINK("http://evil", "x")'],
        },
        {"case_id": "t-2", "input": "-1 or +1?", "actual_output": "@home", "context": ["policy"]},
    ]
    rows = [
        (c, m, who, v)
        for c in ("t-1", "t-2")
        for m in ("faithfulness", "contextual_recall", "politeness")
        for who, v in (("ana", 1), ("ben", 0))
    ]
    frame = pd.DataFrame(rows, columns=["case_id", "metric", "rater", "value"]).assign(rater_kind="human")
    return write_campaign(tmp_path / "campaign", TOML + judges, frame, cases)


def template(tmp_path, folder, metric=None):
    path = tmp_path / f"decide-{metric}.csv"
    write_template(load_campaign(folder), path, metric)
    return list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8"), newline=""))), path


def test_faithfulness_rows_carry_the_retrieved_contexts_whole(tmp_path):
    folder = make(tmp_path)
    rows, _ = template(tmp_path, folder, "faithfulness")
    assert list(rows[0]) == [
        "case_id",
        "metric",
        "labels",
        "input",
        "actual_output",
        "expected_output",
        "retrieval_context",
        "context",
        "decision",
        "adjudicator",
        "note",
    ]
    first = rows[0]
    assert first["actual_output"] == LONG_ANSWER  # whole, not its first 500 characters
    # numbered passages; a formula inside the cell is inert (a spreadsheet reads only a cell's start)
    assert first["retrieval_context"] == '[1] Refunds: 30 days.\n\n[2] =HYPERLINK("http://evil", "x")'
    # a cell a spreadsheet would run as a formula starts with an apostrophe; the ids are left as they are
    second = rows[1]
    assert second["input"] == "'-1 or +1?" and second["actual_output"] == "'@home" and second["case_id"] == "t-2"


def test_the_fields_follow_what_the_metric_reads(tmp_path):
    folder = make(tmp_path)
    # contextual recall reads the expected output and the contexts: columns even where a case lacks them
    rows, _ = template(tmp_path, folder, "contextual_recall")
    assert {"expected_output", "retrieval_context"} <= set(rows[0])
    # a custom criterion reads the question and the answer, and whatever else the cases hold
    rows, _ = template(tmp_path, folder, "politeness")
    assert [c for c in rows[0] if c not in ("case_id", "metric", "labels", "decision", "adjudicator", "note")] == [
        "input",
        "actual_output",
        "expected_output",
        "retrieval_context",
        "context",
    ]


def test_a_judge_that_reads_more_adds_its_fields(tmp_path):
    geval = """
[judges.polite-geval]
library = "deepeval"
metric = "g_eval"
into = "politeness"
model = { provider = "openai", name = "gpt-4o" }
settings = { name = "politeness", criteria = "Is the answer polite, given the policy?", \
evaluation_params = ["input", "actual_output", "context"] }
"""
    folder = make(tmp_path, judges=geval)
    campaign = load_campaign(folder)
    from calibrate.humans.adjudication import fields_read

    assert fields_read(campaign, "politeness") == ("input", "actual_output", "context")


def test_a_text_longer_than_a_cell_is_cut_saying_so_and_decisions_still_record(tmp_path):
    folder = make(tmp_path)
    campaign = load_campaign(folder)
    campaign.cases["t-1"]["actual_output"] = "y" * (CELL_LIMIT + 10)
    path = tmp_path / "long.csv"
    write_template(campaign, path, "faithfulness")
    rows = list(csv.DictReader(path.open(encoding="utf-8", newline="")))
    assert rows[0]["actual_output"].endswith(
        f"[cut at 32,000 of {CELL_LIMIT + 10:,} characters: the whole text is in cases.jsonl]"
    )
    for row in rows:
        row.update(decision="pass", adjudicator="carla")
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    assert record_decisions(load_campaign(folder), path)["new"] == 2
