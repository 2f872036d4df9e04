"""`calibrate gate --judge J` checks J's metrics: a campaign with two metrics and a judge on each (the
README's CI line failed with `FAIL answer_relevancy / None` before)."""

from __future__ import annotations

import json

import pytest

from calibrate import load_campaign
from calibrate.review.gate import GateRules, gate_scope, run_gate
from tests.conftest import run_cli
from tests.testing.story import support_bot


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return support_bot(tmp_path_factory.mktemp("scope") / "campaign")


@pytest.fixture(scope="module")
def campaign(folder):
    return load_campaign(folder)


def test_a_judge_named_narrows_the_gate_to_its_metrics(campaign):
    doc = run_gate(campaign, GateRules(), judges=["faithfulness-gpt4o"], n_boot=200)
    assert [(c["metric"], c["judge"]) for c in doc["checks"]] == [("faithfulness", "faithfulness-gpt4o")]
    assert doc["passed"], doc["checks"]
    assert "only the metric(s) the judges named score: faithfulness; not checked: answer_relevancy" in doc["defaults"]
    # without a judge, both are checked, and the coin-flip relevancy judge fails it
    every = run_gate(campaign, GateRules(), n_boot=200)
    assert {(c["metric"], c["judge"]): c["passed"] for c in every["checks"]} == {
        ("faithfulness", "faithfulness-gpt4o"): True,
        ("answer_relevancy", "relevancy-llama"): False,
    }


def test_the_gate_never_gets_silently_narrower(campaign):
    """A judge named that scores none of the metrics checked is a failing check of its own."""
    doc = run_gate(campaign, GateRules(), metrics=["answer_relevancy"], judges=["faithfulness-gpt4o"], n_boot=0)
    assert not doc["passed"]
    reasons = {(c["metric"], c["judge"]): c["reasons"] for c in doc["checks"]}
    assert reasons[(None, "faithfulness-gpt4o")] == [
        "judge faithfulness-gpt4o scores faithfulness, not the metric(s) checked (answer_relevancy)"
    ]
    assert reasons[("answer_relevancy", None)] == [
        "no judge scores on answer_relevancy among the judges named (faithfulness-gpt4o)"
    ]
    # a human annotator named as the judge scores nothing: it fails, it does not pass on nothing
    human = run_gate(campaign, GateRules(), judges=["ana"], n_boot=0)
    assert not human["passed"] and human["checks"][0]["reasons"] == ["judge ana has no judge ratings in the campaign"]


def test_a_name_no_rater_has_is_refused(campaign):
    with pytest.raises(
        ValueError,
        match=r"judges='faithfulness-gpt4': no rater of the campaign has this name; "
        r"its judges are faithfulness-gpt4o, relevancy-llama",
    ):
        gate_scope(campaign, judges=["faithfulness-gpt4"])


def test_a_declared_judge_without_ratings_fails_naming_what_to_do(tmp_path):
    folder = support_bot(tmp_path / "c", n=60)
    toml = (
        (folder / "campaign.toml").read_text()
        + """
[judges.faith-claude]
library = "deepeval"
metric = "faithfulness"
model = { provider = "anthropic", name = "claude-sonnet-4" }
"""
    )
    (folder / "campaign.toml").write_text(toml)
    doc = run_gate(load_campaign(folder), GateRules(min_labels=10), judges=["faith-claude"], n_boot=0)
    assert [(c["metric"], c["judge"], c["passed"]) for c in doc["checks"]] == [("faithfulness", "faith-claude", False)]
    assert "has no ratings yet: run calibrate judge" in doc["checks"][0]["reasons"][0]


def test_the_command_line(folder):
    ok = run_cli("gate", str(folder), "--judge", "faithfulness-gpt4o", "--n-boot", "200")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "pass faithfulness / faithfulness-gpt4o" in ok.stdout and "answer_relevancy /" not in ok.stdout
    assert "not checked: answer_relevancy" in ok.stdout  # said, not silent
    other = run_cli(
        "gate", str(folder), "--judge", "faithfulness-gpt4o", "--metric", "answer_relevancy", "--n-boot", "0"
    )
    assert other.returncode == 1
    assert "FAIL faithfulness-gpt4o (no metric checked)" in other.stdout
    assert "FAIL answer_relevancy / (no judge)" in other.stdout and "None" not in other.stdout
    typo = run_cli("gate", str(folder), "--judge", "faithfulness-gpt4", "--json")
    assert typo.returncode == 2 and typo.stdout == ""
    assert "error: --judge faithfulness-gpt4: no rater of the campaign has this name" in typo.stderr
    both = run_cli(
        "gate", str(folder), "--judge", "faithfulness-gpt4o", "--judge", "relevancy-llama", "--n-boot", "200", "--json"
    )
    doc = json.loads(both.stdout)
    assert both.returncode == 1 and {c["judge"]: c["passed"] for c in doc["checks"]} == {
        "faithfulness-gpt4o": True,
        "relevancy-llama": False,
    }
