"""calibrate fingerprint: the real DeepEval faithfulness metric against the scripted judge server, whose
alias "gpt-alias" a provider moves from one model to another: SAME while it answers as before, CHANGED
when it answers as a lenient model, FLAKY when it answers at random; the campaign's ratings untouched,
and the gate refusing a judge whose fingerprint is not SAME."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from click.testing import CliRunner

from calibrate import load_campaign
from calibrate.cli import main
from calibrate.judges.runner import run_judges
from calibrate.review.fingerprint import choose_anchors, fingerprint_judge, latest_fingerprint
from calibrate.review.gate import GateRules, run_gate
from tests.conftest import write_campaign
from tests.judge_server import JudgeServer

N = 40


def cases() -> list[dict]:
    out = []
    for i in range(N):
        fact = f"Fact {i} is true."
        answer = fact if i % 2 == 0 else f"{fact} Invented claim {i} is false."
        out.append({"case_id": f"c{i:03d}", "input": f"question {i}?", "actual_output": answer,
                    "retrieval_context": [fact, f"Other fact {i} holds."]})
    return out


@pytest.fixture
def setup(tmp_path):
    """A campaign whose judge calls the alias "gpt-alias", scored while the alias answers carefully."""
    with JudgeServer(models={"gpt-alias"}, aliases={"gpt-alias": "careful"}) as server:
        toml = f'''
name = "fp"
[metrics.faithfulness]
scale = "binary"
max_false_pass = 0.2
[judges.faith-gpt]
library = "deepeval"
metric = "faithfulness"
model = {{ provider = "openai", name = "gpt-alias", base_url = "{server.url}" }}
'''
        humans = pd.DataFrame({"case_id": [c["case_id"] for c in cases()], "metric": "faithfulness", "rater": "ann",
                               "rater_kind": "human", "value": [1 - i % 2 for i in range(N)]})
        folder = write_campaign(tmp_path / "campaign", toml, humans, cases())
        run_judges(load_campaign(folder))
        yield folder, server


def test_same_while_the_alias_answers_as_before_then_changed_then_flaky(setup):
    folder, server = setup
    ratings = (folder / "judge_ratings.csv").read_bytes()
    first = fingerprint_judge(load_campaign(folder), judge="faith-gpt", anchors=12, repeats=2)
    assert first["verdict"] == "SAME", first["reasons"]
    assert first["threshold"] == 1.0 and len(first["anchors"]) == 12
    stored = json.loads((folder / "fingerprints" / "faith-gpt" / "anchors.json").read_text())
    assert [a["case_id"] for a in stored["anchors"]] == [a["case_id"] for a in first["anchors"]]
    assert {a["stored_pass"] for a in first["anchors"]} == {True, False}   # both verdicts are anchored
    calls = server.by_model["gpt-alias"]
    assert calls >= 12 * 2 * 4   # every anchor scored anew, twice: no cache

    server.aliases["gpt-alias"] = "lenient"   # the provider moved the alias
    moved = fingerprint_judge(load_campaign(folder), judge="faith-gpt")
    assert moved["verdict"] == "CHANGED"
    failing = [a for a in moved["anchors"] if not a["stored_pass"]]
    assert failing and all(a["now_pass"] for a in failing) and sorted(moved["flips"]) == sorted(
        a["case_id"] for a in failing)
    assert "changed verdict" in moved["reasons"][0]

    server.aliases["gpt-alias"] = "flaky"
    flaky = fingerprint_judge(load_campaign(folder), judge="faith-gpt", repeats=4)
    assert flaky["verdict"] == "FLAKY" and flaky["straddles"]
    # the campaign's own ratings, and the statistics on them, never moved
    assert (folder / "judge_ratings.csv").read_bytes() == ratings
    assert latest_fingerprint(load_campaign(folder), "faith-gpt")["verdict"] == "FLAKY"
    # the report says so, in "Since the threshold was chosen"
    from calibrate import build_report

    documents, paths = build_report(load_campaign(folder), folder.parent / "report", n_boot=0)
    assert [(f["judge"], f["verdict"]) for f in documents["since"]["fingerprints"]] == [("faith-gpt", "FLAKY")]
    assert "<h3>Fingerprints</h3>" in paths["html"].read_text() and "**FLAKY**" in paths["md"].read_text()


def test_the_gate_requires_a_same_fingerprint_and_the_command_line(setup):
    folder, server = setup
    rules = GateRules(min_labels=20, require_fingerprint=True)
    refused = run_gate(load_campaign(folder), rules, n_boot=100)
    assert not refused["passed"] and any("no fingerprint of the judge" in r for c in refused["checks"]
                                         for r in c["reasons"])
    runner = CliRunner()
    done = runner.invoke(main, ["fingerprint", str(folder), "--judge", "faith-gpt", "--anchors", "12", "--repeats",
                                "2"])
    assert done.exit_code == 0 and "SAME" in done.output, done.output
    passed = run_gate(load_campaign(folder), rules, n_boot=100)
    assert passed["passed"], [c["reasons"] for c in passed["checks"]]
    server.aliases["gpt-alias"] = "lenient"
    done = runner.invoke(main, ["fingerprint", str(folder), "--judge", "faith-gpt", "--json"])
    assert done.exit_code == 1 and json.loads(done.output)["verdict"] == "CHANGED"
    gate = runner.invoke(main, ["gate", str(folder), "--min-labels", "20", "--require-fingerprint", "--n-boot", "100"])
    assert gate.exit_code == 1 and "its latest fingerprint" in gate.output and "says CHANGED" in gate.output
    unknown = runner.invoke(main, ["fingerprint", str(folder), "--judge", "nobody"])
    assert unknown.exit_code == 2 and "--judge nobody: not a judge of [judges]" in unknown.output


def test_anchors_are_near_the_threshold_and_spread_over_the_scores():
    import numpy as np

    ids = np.array([f"c{i:02d}" for i in range(40)])
    scores = np.linspace(0, 1, 40)
    chosen = choose_anchors(ids, scores, 0.5, 10)
    assert len(chosen) == 10
    near = sorted(np.argsort(np.abs(scores - 0.5))[:5])
    assert all(ids[i] in chosen for i in near) and "c00" in chosen and "c39" in chosen


def test_a_damaged_anchor_set_or_fingerprint_is_named_not_guessed_at(setup):
    folder, server = setup
    fingerprint_judge(load_campaign(folder), judge="faith-gpt", anchors=8, repeats=2)
    anchors = folder / "fingerprints" / "faith-gpt" / "anchors.json"
    [latest] = [p for p in anchors.parent.glob("*.json") if p.name != "anchors.json"]
    latest.write_text('{"verdict": ')
    runner = CliRunner()
    gate = runner.invoke(main, ["gate", str(folder), "--require-fingerprint", "--n-boot", "0"])
    assert gate.exit_code == 2 and str(latest) in gate.output and "Traceback" not in gate.output
    anchors.write_text("[1, 2]")
    done = runner.invoke(main, ["fingerprint", str(folder), "--judge", "faith-gpt"])
    assert done.exit_code == 2 and "anchors.json" in done.output and "remove it to start again" in done.output


def test_a_judge_that_cannot_be_reached_fails_its_fingerprint_saying_why(setup):
    folder, server = setup
    fingerprint_judge(load_campaign(folder), judge="faith-gpt", anchors=8, repeats=2)
    server.models = {"another-model"}   # the endpoint no longer serves the judge's model
    done = CliRunner().invoke(main, ["fingerprint", str(folder), "--judge", "faith-gpt", "--json"])
    doc = json.loads(done.output)
    assert done.exit_code == 1 and doc["verdict"] == "FAILED"
    assert "could be scored" in doc["reasons"][0] and doc["errors"]
