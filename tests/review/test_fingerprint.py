"""calibrate fingerprint: the real DeepEval faithfulness metric against the scripted judge server, whose
alias "gpt-alias" a provider moves from one model to another: SAME while it answers as before, CHANGED
when it answers as a lenient model, FLAKY when it answers at random; the campaign's ratings untouched,
and the gate refusing a judge whose fingerprint is not SAME."""

from __future__ import annotations

import json
import shutil

import pytest
from click.testing import CliRunner

from calibrate import load_campaign
from calibrate.base.errors import CampaignError
from calibrate.cli import main
from calibrate.review.fingerprint import choose_anchors, fingerprint_judge, latest_fingerprint
from calibrate.review.gate import GateRules, run_gate
from tests.review.fingerprint_campaign import judged_campaign
from tests.servers.judge_server import JudgeServer


@pytest.fixture
def setup(tmp_path):
    """A campaign whose judge calls the alias "gpt-alias", scored while the alias answers carefully."""
    with JudgeServer(models={"gpt-alias"}, aliases={"gpt-alias": "careful"}) as server:
        yield judged_campaign(tmp_path / "campaign", server.url, "gpt-alias"), server


def test_same_while_the_alias_answers_as_before_then_changed_then_flaky(setup):
    folder, server = setup
    ratings = (folder / "judge_ratings.csv").read_bytes()
    first = fingerprint_judge(load_campaign(folder), judge="faith-gpt", anchors=12, repeats=2)
    assert first["verdict"] == "SAME", first["reasons"]
    assert first["threshold"] == 1.0 and len(first["anchors"]) == 12
    stored = json.loads((folder / "fingerprints" / "faith-gpt" / "anchors.json").read_text())
    assert [a["case_id"] for a in stored["anchors"]] == [a["case_id"] for a in first["anchors"]]
    assert {a["stored_pass"] for a in first["anchors"]} == {True, False}  # both verdicts are anchored
    calls = server.by_model["gpt-alias"]
    assert calls >= 12 * 2 * 4  # every anchor scored anew, twice: no cache

    server.aliases["gpt-alias"] = "lenient"  # the provider moved the alias
    moved = fingerprint_judge(load_campaign(folder), judge="faith-gpt")
    assert moved["verdict"] == "CHANGED"
    failing = [a for a in moved["anchors"] if not a["stored_pass"]]
    assert (
        failing
        and all(a["now_pass"] for a in failing)
        and sorted(moved["flips"]) == sorted(a["case_id"] for a in failing)
    )
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
    assert [(f["judge"], f["verdict"]) for f in documents.since["fingerprints"]] == [("faith-gpt", "FLAKY")]
    assert "<h3>Fingerprints</h3>" in paths["html"].read_text() and "**FLAKY**" in paths["md"].read_text()


def test_the_gate_requires_a_same_fingerprint_and_the_command_line(setup):
    folder, server = setup
    rules = GateRules(min_labels=20, require_fingerprint=True)
    refused = run_gate(load_campaign(folder), rules, n_boot=100)
    assert not refused["passed"] and any(
        "no fingerprint of the judge" in r for c in refused["checks"] for r in c["reasons"]
    )
    runner = CliRunner()
    done = runner.invoke(
        main, ["fingerprint", str(folder), "--judge", "faith-gpt", "--anchors", "12", "--repeats", "2"]
    )
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
    [latest] = [p for p in anchors.parent.glob("*.json") if p.name not in ("anchors.json", "index.json")]
    latest.write_text('{"verdict": ')
    runner = CliRunner()
    gate = runner.invoke(main, ["gate", str(folder), "--require-fingerprint", "--n-boot", "0"])
    assert gate.exit_code == 1 and str(latest) in gate.output and "Traceback" not in gate.output
    assert "restore it from version control" in gate.output
    anchors.write_text("[1, 2]")
    calls = sum(server.by_model.values())
    done = runner.invoke(main, ["fingerprint", str(folder), "--judge", "faith-gpt"])
    assert done.exit_code == 2 and "anchors.json" in done.output and "choose anchors anew" in done.output
    assert sum(server.by_model.values()) == calls


def test_a_judge_that_cannot_be_reached_fails_its_fingerprint_saying_why(setup):
    folder, server = setup
    fingerprint_judge(load_campaign(folder), judge="faith-gpt", anchors=8, repeats=2)
    server.models = {"another-model"}  # the endpoint no longer serves the judge's model
    done = CliRunner().invoke(main, ["fingerprint", str(folder), "--judge", "faith-gpt", "--json"])
    doc = json.loads(done.output)
    assert done.exit_code == 1 and doc["verdict"] == "FAILED"
    assert "could be scored" in doc["reasons"][0] and doc["errors"]


# ------------------------------------------------------------------ decisions read only what calibrate wrote
@pytest.fixture(scope="module")
def history(tmp_path_factory):
    """A campaign whose judge was fingerprinted SAME, then CHANGED (the alias moved); copied per test."""
    with JudgeServer(models={"gpt-alias"}, aliases={"gpt-alias": "careful"}) as server:
        folder = judged_campaign(tmp_path_factory.mktemp("history") / "campaign", server.url, "gpt-alias")
        assert fingerprint_judge(load_campaign(folder), judge="faith-gpt", anchors=8, repeats=2)["verdict"] == "SAME"
        server.aliases["gpt-alias"] = "lenient"
        assert fingerprint_judge(load_campaign(folder), judge="faith-gpt", repeats=2)["verdict"] == "CHANGED"
        server.aliases["gpt-alias"] = "careful"
        yield folder, server


@pytest.fixture
def history_copy(history, tmp_path):
    folder, server = history
    return shutil.copytree(folder, tmp_path / "campaign", symlinks=True), server


def fingerprint_files(folder):
    """The fingerprint documents calibrate wrote, oldest first (by the time recorded in them)."""
    found = [
        p
        for p in (folder / "fingerprints" / "faith-gpt").glob("*.json")
        if p.name not in ("anchors.json", "index.json")
    ]
    return sorted(found, key=lambda p: json.loads(p.read_text())["created"])


GATE = ["--min-labels", "20", "--require-fingerprint", "--n-boot", "0"]


def test_a_stray_same_beside_a_real_changed_never_passes_the_gate(history_copy):
    """The reproduction: `fingerprints/J/99999999T999999Z.json` saying SAME sorted last by name, and the gate
    took it for the latest and passed."""
    folder, _ = history_copy
    same, changed = fingerprint_files(folder)
    assert json.loads(changed.read_text())["verdict"] == "CHANGED"
    runner = CliRunner()
    before = runner.invoke(main, ["gate", str(folder), *GATE])
    assert before.exit_code == 1 and "says CHANGED" in before.output
    stray = folder / "fingerprints" / "faith-gpt" / "99999999T999999Z.json"
    stray.write_text(json.dumps({**json.loads(same.read_text()), "created": "2099-01-01T00:00:00+00:00"}))
    gate = runner.invoke(main, ["gate", str(folder), *GATE, "--json"])
    assert gate.exit_code == 1, gate.output
    [check] = json.loads(gate.output)["checks"]
    assert any(
        str(stray) in r and "not written by calibrate fingerprint" in r and "remove it" in r for r in check["reasons"]
    ), check["reasons"]
    stray.unlink()
    assert runner.invoke(main, ["gate", str(folder), *GATE]).exit_code == 1


@pytest.mark.parametrize(
    "attack",
    ["edit CHANGED to SAME", "delete CHANGED", "copy SAME to a later name", "another judge's SAME", "no index"],
)
def test_an_edited_deleted_or_copied_fingerprint_fails_the_gate_naming_it(history_copy, attack):
    folder, _ = history_copy
    same, changed = fingerprint_files(folder)
    judge_folder = same.parent
    if attack == "edit CHANGED to SAME":
        changed.write_text(changed.read_text().replace('"verdict": "CHANGED"', '"verdict": "SAME"'))
        named = changed
    elif attack == "delete CHANGED":
        changed.unlink()
        named = changed
    elif attack == "copy SAME to a later name":
        named = judge_folder / "99991231T235959999999Z.json"
        shutil.copy(same, named)
    elif attack == "another judge's SAME":
        named = judge_folder / "99991231T235959Z.json"
        named.write_text(json.dumps({**json.loads(same.read_text()), "judge": "other", "created": "2099-01-01T00:00Z"}))
    else:
        (judge_folder / "index.json").unlink()
        named = changed
    gate = CliRunner().invoke(main, ["gate", str(folder), *GATE])
    assert gate.exit_code == 1 and str(named) in gate.output and "gate failed" in gate.output, gate.output
    assert "Traceback" not in gate.output
    with pytest.raises(CampaignError, match=named.name):  # the report's reader refuses it too
        latest_fingerprint(load_campaign(folder), "faith-gpt")


def canonical_hash(path):
    """index.json's hash of a file: SHA-256 of its canonical JSON (README, "A judge's fingerprint")."""
    import hashlib

    text = json.dumps(json.loads(path.read_text()), sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode()).hexdigest()


def damage(document):
    """The ways a damaged anchors.json crashed only after the paid re-scoring (the first six), or ran on it."""
    first = document["anchors"][0]
    return {
        "no threshold_source": {k: v for k, v in document.items() if k != "threshold_source"},
        "no settings": {k: v for k, v in document.items() if k != "settings"},
        "an anchor without its score": {
            **document,
            "anchors": [{"case_id": first["case_id"]}, *document["anchors"][1:]],
        },
        "a score that is text": {**document, "anchors": [{**first, "score": "high"}, *document["anchors"][1:]]},
        "a score that is null": {**document, "anchors": [{**first, "score": None}, *document["anchors"][1:]]},
        "a creation time that is a number": {**document, "created": 5},
        "a threshold that is NaN": {**document, "threshold": float("nan")},
        "a threshold that is null": {**document, "threshold": None},
        "a threshold that is text": {**document, "threshold": "x"},
        "anchors an object": {**document, "anchors": {"c000": 1}},
        "anchors empty": {**document, "anchors": []},
        "three anchors": {**document, "anchors": document["anchors"][:3]},
        "a case id that is a number": {**document, "anchors": [{**first, "case_id": 5}, *document["anchors"][1:]]},
        "an unknown case id": {**document, "anchors": [{**first, "case_id": "nope"}, *document["anchors"][1:]]},
        "a case listed twice": {**document, "anchors": document["anchors"] + document["anchors"][:1]},
        "another judge's anchors": {**document, "judge": "other-judge"},
        "another metric's anchors": {**document, "metric": "relevance"},
    }


DAMAGE = list(damage({"anchors": [{"case_id": "c000", "score": 1.0}]}))
FIELDS = {
    "no threshold_source": "threshold_source",
    "no settings": "settings",
    "an anchor without its score": "anchors[0].score",
    "a score that is text": "anchors[0].score",
    "a score that is null": "anchors[0].score",
    "a creation time that is a number": "created",
    "a threshold that is NaN": "threshold",
    "a threshold that is null": "threshold",
    "a threshold that is text": "threshold",
    "anchors an object": "anchors",
    "anchors empty": "anchors",
    "three anchors": "anchors",
    "a case id that is a number": "anchors[0].case_id",
    "an unknown case id": "anchors[0].case_id",
    "another judge's anchors": "judge",
    "another metric's anchors": "metric",
}


@pytest.mark.parametrize("how", DAMAGE)
def test_a_damaged_anchor_set_is_refused_before_any_paid_call(history_copy, how):
    """Each damage named (file and field) with no call to the judge: the index made to agree with the file,
    so that the anchor set's own schema and checks are what refuse it."""
    folder, server = history_copy
    anchors = folder / "fingerprints" / "faith-gpt" / "anchors.json"
    anchors.write_text(json.dumps(damage(json.loads(anchors.read_text()))[how]))
    index = anchors.parent / "index.json"
    if index.is_file():
        made = json.loads(index.read_text())
        made["anchors"]["sha256"] = canonical_hash(anchors)
        index.write_text(json.dumps(made))
    calls = sum(server.by_model.values())
    server.aliases["gpt-alias"] = "lenient"  # the CHANGED path, where the stored time is read
    try:
        done = CliRunner().invoke(main, ["fingerprint", str(folder), "--judge", "faith-gpt", "--repeats", "2"])
    finally:
        server.aliases["gpt-alias"] = "careful"
    assert sum(server.by_model.values()) == calls, "paid calls were made"
    assert done.exit_code == 2 and not isinstance(done.exception, (KeyError, TypeError)), done.output
    assert str(anchors) in done.output and "choose anchors anew" in done.output
    if how in FIELDS:
        assert f"field '{FIELDS[how]}'" in done.output, done.output
    else:
        assert "listed twice" in done.output


def test_a_hand_edited_anchor_set_is_refused_before_any_paid_call(history_copy):
    folder, server = history_copy
    anchors = folder / "fingerprints" / "faith-gpt" / "anchors.json"
    document = json.loads(anchors.read_text())
    anchors.write_text(json.dumps({**document, "threshold": 0.5}))  # well formed, and not what was chosen
    calls = sum(server.by_model.values())
    done = CliRunner().invoke(main, ["fingerprint", str(folder), "--judge", "faith-gpt"])
    assert sum(server.by_model.values()) == calls
    assert done.exit_code == 2 and "changed since calibrate fingerprint wrote it" in done.output
    # the way through: remove it, and the next fingerprint chooses anchors anew
    anchors.unlink()
    done = CliRunner().invoke(
        main, ["fingerprint", str(folder), "--judge", "faith-gpt", "--anchors", "8", "--repeats", "2", "--json"]
    )
    assert done.exit_code == 0 and json.loads(done.output)["verdict"] == "SAME", done.output
    assert CliRunner().invoke(main, ["gate", str(folder), *GATE]).exit_code == 0
