"""A fingerprint vouches for the judge it fingerprinted, and compares only what it can compare.

- It records the judge's settings (library, metric settings, model, base_url, ...) and their hash; the
  gate refuses a SAME fingerprint once campaign.toml sets the judge otherwise (the reproduction: model
  careful -> lenient, library deepeval -> ragas, another base_url, and the stale SAME still passed), and a
  fingerprint that records no settings (an earlier calibrate's) fails closed.
- The anchor set records a hash of each anchor case's content: an anchor whose case was edited since
  (the reproduction: two answers fixed, and an unchanged judge was called CHANGED) is left out, unpaid,
  and said so; with too few anchors left, nothing is scored.
"""

from __future__ import annotations

import json
import shutil

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from calibrate import load_campaign
from calibrate.base.errors import CampaignError
from calibrate.campaign.judge_specs import JudgeSpec, ModelSpec
from calibrate.cli import main
from calibrate.review.fingerprint import fingerprint_judge, fingerprint_reasons
from calibrate.review.fingerprint_files import content_hash
from calibrate.review.gate import GateRules, run_gate
from tests.review.fingerprint_campaign import judged_campaign
from tests.servers.judge_server import JudgeServer


@pytest.fixture(scope="module")
def fingerprinted(tmp_path_factory):
    """A campaign whose judge was fingerprinted SAME (8 anchors); copied per test."""
    with JudgeServer() as server:
        folder = judged_campaign(tmp_path_factory.mktemp("fingerprinted") / "campaign", server.url)
        assert fingerprint_judge(load_campaign(folder), judge="faith-gpt", anchors=8, repeats=2)["verdict"] == "SAME"
        yield folder, server


@pytest.fixture
def campaign(fingerprinted, tmp_path):
    folder, server = fingerprinted
    return shutil.copytree(folder, tmp_path / "campaign", symlinks=True), server


RULES = GateRules(min_labels=20, require_fingerprint=True)


def test_the_gate_passes_on_the_same_fingerprint_of_the_judge_as_it_is(campaign):
    folder, _ = campaign
    assert fingerprint_reasons(load_campaign(folder), "faith-gpt", "faithfulness") == []
    assert run_gate(load_campaign(folder), RULES, n_boot=0)["passed"]


@pytest.mark.parametrize(
    "change, shown",
    [
        (lambda text, url: text.replace('name = "careful"', 'name = "lenient"'), "model name: careful -> lenient"),
        (lambda text, url: text.replace('library = "deepeval"', 'library = "ragas"'), "library: deepeval -> ragas"),
        (lambda text, url: text.replace(url, "http://127.0.0.1:9/v1"), "model base url"),
    ],
)
def test_a_same_fingerprint_of_the_judge_before_its_settings_changed_never_passes_the_gate(campaign, change, shown):
    folder, server = campaign
    path = folder / "campaign.toml"
    path.write_text(change(path.read_text(), server.url))
    reasons = fingerprint_reasons(load_campaign(folder), "faith-gpt", "faithfulness")
    assert len(reasons) == 1 and "the judge's settings changed since its latest fingerprint" in reasons[0]
    assert shown in reasons[0] and "run calibrate fingerprint CAMPAIGN --judge faith-gpt again" in reasons[0]
    gate = CliRunner().invoke(
        main, ["gate", str(folder), "--min-labels", "20", "--require-fingerprint", "--n-boot", "0"]
    )
    assert gate.exit_code == 1 and "settings changed" in gate.output, gate.output


def test_a_fingerprint_that_records_no_settings_fails_closed(campaign):
    """A fingerprint written before settings were recorded (its index rewritten to match, as that calibrate
    wrote it) cannot vouch for the judge as it is now."""
    folder, _ = campaign
    judge_folder = folder / "fingerprints" / "faith-gpt"
    index = json.loads((judge_folder / "index.json").read_text())
    [entry] = index["fingerprints"]
    document = json.loads((judge_folder / entry["file"]).read_text())
    for key in ("judge_settings", "judge_settings_sha256"):
        del document[key]
    (judge_folder / entry["file"]).write_text(json.dumps(document))
    entry["sha256"] = content_hash(document)
    (judge_folder / "index.json").write_text(json.dumps(index))
    reasons = fingerprint_reasons(load_campaign(folder), "faith-gpt", "faithfulness")
    assert len(reasons) == 1 and "records no settings of the judge" in reasons[0]
    assert "run calibrate fingerprint CAMPAIGN --judge faith-gpt again" in reasons[0]
    assert not run_gate(load_campaign(folder), RULES, n_boot=0)["passed"]


def anchors_of(folder) -> dict:
    return json.loads((folder / "fingerprints" / "faith-gpt" / "anchors.json").read_text())


def edit_answers(folder, case_ids, edit=lambda case: case["retrieval_context"][0]) -> None:
    """An ordinary fix of cases.jsonl: the answers of these cases now say what their context says."""
    lines = []
    for line in (folder / "cases.jsonl").read_text().splitlines():
        case = json.loads(line)
        if case["case_id"] in case_ids:
            case["actual_output"] = edit(case)
        lines.append(json.dumps(case))
    (folder / "cases.jsonl").write_text("\n".join(lines) + "\n")


def test_anchors_whose_case_was_edited_are_left_out_unpaid_not_called_a_change(campaign):
    folder, server = campaign
    stored = anchors_of(folder)
    failing = [a["case_id"] for a in stored["anchors"] if a["score"] < 1][:2]
    assert len(failing) == 2 and all(a.get("case_sha256") for a in stored["anchors"])
    edit_answers(folder, failing)  # the careful judge would now pass them: two flips if compared
    calls = sum(server.by_model.values())
    doc = fingerprint_judge(load_campaign(folder), judge="faith-gpt", repeats=2)
    assert doc["verdict"] == "SAME", doc["reasons"]
    assert sorted(a["case_id"] for a in doc["left_out"]) == sorted(failing)
    assert {a["case_id"] for a in doc["anchors"]}.isdisjoint(failing) and len(doc["anchors"]) == 6
    assert "2 of 8 anchors left out of the comparison" in doc["reasons"][-1]
    per_anchor = (sum(server.by_model.values()) - calls) / 6
    assert per_anchor == int(per_anchor)  # the six comparable anchors were scored, the two edited ones not


def test_too_many_edited_anchors_refuse_before_any_paid_call(campaign):
    folder, server = campaign
    edit_answers(
        folder,
        [a["case_id"] for a in anchors_of(folder)["anchors"]][:5],
        lambda case: case["actual_output"] + " Edited.",
    )
    calls = sum(server.by_model.values())
    with pytest.raises(CampaignError, match=r"5 of 8 anchor cases changed in cases.jsonl") as caught:
        fingerprint_judge(load_campaign(folder), judge="faith-gpt", repeats=2)
    assert "choose anchors anew" in str(caught.value)
    assert sum(server.by_model.values()) == calls


def test_metadata_edits_leave_every_anchor_comparable(campaign):
    folder, _ = campaign
    lines = [
        json.dumps({**json.loads(line), "metadata": {"edited": True}})
        for line in (folder / "cases.jsonl").read_text().splitlines()
    ]
    (folder / "cases.jsonl").write_text("\n".join(lines) + "\n")
    doc = fingerprint_judge(load_campaign(folder), judge="faith-gpt", repeats=2)
    assert doc["left_out"] == [] and len(doc["anchors"]) == 8


# ------------------------------------------------------------------ the settings hash, attacked
def spec(**model) -> JudgeSpec:
    settings = model.pop("settings", {})
    base = {"provider": "openai", "name": "m", "base_url": "http://127.0.0.1:1/v1"}
    return JudgeSpec(
        "j", "deepeval", "faithfulness", "faithfulness", ModelSpec(**(base | model)), None, settings=settings
    )


texts = st.text(min_size=1, max_size=20)


@settings(max_examples=200, deadline=None)
@given(field=st.sampled_from(["name", "base_url", "temperature", "max_tokens", "settings"]), data=st.data())
def test_attack_any_change_of_what_defines_the_judge_changes_its_hash(field, data):
    from calibrate.review.fingerprint import judge_settings_sha256

    before = spec()
    value = {
        "name": texts.filter(lambda t: t != "m"),
        "base_url": texts.filter(lambda t: t != "http://127.0.0.1:1/v1"),
        "temperature": st.floats(0.01, 2),
        "max_tokens": st.integers(1, 10**6),
        "settings": st.fixed_dictionaries({"threshold": st.floats(0, 1), "strict_mode": st.booleans()}),
    }[field]
    after = spec(**{field: data.draw(value)})
    assert judge_settings_sha256(before) != judge_settings_sha256(after)


@settings(max_examples=100, deadline=None)
@given(key_variable=st.text(min_size=1, max_size=20), price=st.tuples(st.floats(0, 100), st.floats(0, 100)))
def test_attack_the_key_variable_and_price_do_not_define_the_judge(key_variable, price):
    from calibrate.review.fingerprint import judge_settings_sha256

    assert judge_settings_sha256(spec()) == judge_settings_sha256(spec(api_key_env=key_variable, price=price))
