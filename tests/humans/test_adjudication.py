"""calibrate adjudicate: disagreements listed, decisions recorded with their history, the reference follows them."""

import csv
import json

import pandas as pd
import pytest

from calibrate import CampaignError, compute_stats, load_campaign
from calibrate.campaign.reference import human_reference
from calibrate.humans.adjudication import decision_history, disagreements, record_decisions, write_template
from tests.conftest import run_cli, write_campaign

TOML = """
name = "adj"
[metrics.faithfulness]
scale = "binary"
[metrics.precision]
scale = "continuous"
range = [0, 1]
human_pass = 0.5
[raters.judge]
"""


def make(tmp_path):
    rows = [
        ("a", "faithfulness", "x", "human", 1),
        ("a", "faithfulness", "y", "human", 0),  # a tie: reference 0
        ("b", "faithfulness", "x", "human", 1),
        ("b", "faithfulness", "y", "human", 1),
        ("c", "faithfulness", "x", "human", 0),
        ("a", "precision", "x", "human", 0.9),
        ("a", "precision", "y", "human", 0.2),
        ("b", "precision", "x", "human", 0.7),
        ("b", "precision", "y", "human", 0.6),
    ]
    rows += [
        (case, metric, "judge", "judge", score)
        for case, score in (("a", 0.9), ("b", 0.8), ("c", 0.1))
        for metric in ("faithfulness", "precision")
    ]
    frame = pd.DataFrame(rows, columns=["case_id", "metric", "rater", "rater_kind", "value"])
    cases = [{"case_id": c, "input": f"question {c}", "actual_output": f"answer {c}"} for c in "abc"]
    return write_campaign(tmp_path / "campaign", TOML, frame, cases)


def fill(path, decisions):
    rows = list(csv.DictReader(path.open()))
    for row in rows:
        row.update(decisions.get((row["case_id"], row["metric"]), {}))
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def test_disagreements_decisions_and_history(tmp_path):
    folder = make(tmp_path)
    c = load_campaign(folder)
    found = disagreements(c)
    assert [(d["case_id"], d["metric"]) for d in found] == [("a", "faithfulness"), ("a", "precision")]
    assert found[0]["labels"] == {"x": 1.0, "y": 0.0} and found[0]["decision"] is None
    assert human_reference(c, "faithfulness").values.tolist() == [0.0, 1.0, 0.0]

    template = tmp_path / "to_decide.csv"
    assert write_template(c, template) == 2
    fill(template, {("a", "faithfulness"): {"decision": "pass", "adjudicator": "lead@x", "note": "spec allows it"}})
    counts = record_decisions(c, template)
    assert counts == {"new": 1, "changed": 0, "unchanged": 0, "blank": 1}
    c = load_campaign(folder)
    ref = human_reference(c, "faithfulness")
    assert ref.values.tolist() == [1.0, 1.0, 0.0] and ref.n_adjudicated == 1
    assert compute_stats(c, n_boot=20)["metrics"][0]["n_adjudicated"] == 1
    assert disagreements(c)[0]["decision"] == 1.0

    fill(template, {("a", "faithfulness"): {"decision": "0", "adjudicator": "second@x"}})
    assert record_decisions(c, template)["changed"] == 1
    history = [(h["value"], h["adjudicator"]) for h in decision_history(folder)]
    assert history == [(1.0, "lead@x"), (0.0, "second@x")]  # the earlier decision is kept
    assert human_reference(load_campaign(folder), "faithfulness").values.tolist() == [0.0, 1.0, 0.0]


def test_bad_decisions_name_the_file_row_and_field_and_record_nothing(tmp_path):
    folder = make(tmp_path)
    decisions = tmp_path / "decisions.csv"
    decisions.write_text(
        "case_id,metric,decision,adjudicator\n"
        "a,faithfulness,maybe,lead\n"
        "zz,faithfulness,1,lead\n"
        "a,precision,1.5,lead\n"
        "a,nosuch,1,lead\n"
        "b,faithfulness,1,\n"
    )
    with pytest.raises(CampaignError) as raised:
        record_decisions(load_campaign(folder), decisions)
    text = str(raised.value)
    for expected in (
        "line 2, field 'decision'",
        "line 3, field 'case_id'",
        "line 4, field 'decision'",
        "line 5, field 'metric'",
        "line 6, field 'adjudicator'",
    ):
        assert expected in text, expected
    assert not (folder / "adjudications.csv").exists()


def test_the_command_line(tmp_path):
    folder = make(tmp_path)
    template = tmp_path / "t.csv"
    listed = run_cli("adjudicate", folder, "--template", template)
    assert listed.returncode == 0, listed.stderr
    assert "2 case(s) where annotators disagree" in listed.stdout and template.exists()
    fill(template, {("a", "precision"): {"decision": "0.8", "adjudicator": "lead"}})
    recorded = run_cli("adjudicate", folder, "--decisions", template, "--json")
    assert recorded.returncode == 0, recorded.stderr
    assert json.loads(recorded.stdout)["new"] == 1
    doc = json.loads(run_cli("adjudicate", folder, "--json").stdout)
    assert {d["metric"]: d["decision"] for d in doc["disagreements"]} == {"faithfulness": None, "precision": 0.8}


def test_a_decisions_file_saved_by_a_spreadsheet_is_read_or_named(tmp_path):
    """Issue 24: a decisions file that is not UTF-8 was "'utf-8' codec can't decode byte 0xe9 in position
    46", naming no file; one saved with a byte-order mark (a spreadsheet's "CSV UTF-8") lost its first
    column ("missing columns: case_id")."""
    folder = make(tmp_path)
    decisions = tmp_path / "decisions.csv"
    decisions.write_bytes(b"case_id,metric,decision,adjudicator\na,faithfulness,pass,Ren\xe9\n")
    with pytest.raises(CampaignError) as raised:
        record_decisions(load_campaign(folder), decisions)
    assert f"{decisions}, line 2: not UTF-8 text (byte 0xe9" in str(raised.value)
    decisions.write_bytes("\ufeffcase_id,metric,decision,adjudicator\na,faithfulness,pass,René\n".encode())
    assert record_decisions(load_campaign(folder), decisions)["new"] == 1
    assert [h["adjudicator"] for h in decision_history(folder)] == ["René"]
