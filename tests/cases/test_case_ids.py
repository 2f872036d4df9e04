"""Ids people can read: `cases import --id-from FIELD`, and a warning when ids are content hashes
(DeepEval's save_as writes a test case without its name, so every one became `case-cd531ac66e1f`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from calibrate import CampaignError, import_cases, init_campaign, load_campaign
from calibrate.cases.datasets import content_id, is_content_id, read_external_cases
from tests.conftest import run_cli
from tests.imports.attack_tools import NASTY


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """What a team has: test cases (each with a name and a ticket number in its metadata) saved by
    DeepEval's own EvaluationDataset.save_as, in its three formats."""
    from deepeval.dataset import EvaluationDataset
    from deepeval.test_case import LLMTestCase

    folder = tmp_path_factory.mktemp("saved")
    dataset = EvaluationDataset()
    for i, (question, answer) in enumerate(
        [
            ("How do I reset my password on the mobile app?", "Tap Settings."),
            ("Can I get a refund after 30 days?", "No, 30 days at most."),
            ("Do you ship to Norway?", "Yes."),
        ]
    ):
        dataset.add_test_case(
            LLMTestCase(
                input=question,
                actual_output=answer,
                retrieval_context=[f"policy {i}"],
                name=f"named-{i}",
                metadata={"ticket": f"T-{100 + i}"},
            )
        )
    for kind in ("json", "jsonl", "csv"):
        dataset.save_as(file_type=kind, directory=str(folder), file_name=f"saved_{kind}", include_test_cases=True)
    return folder


def campaign(tmp_path) -> Path:
    init_campaign(tmp_path / "campaign", ["faithfulness"])
    return tmp_path / "campaign"


@pytest.mark.parametrize("kind", ["json", "jsonl", "csv"])
def test_deepeval_dropped_the_names_and_the_import_says_so(saved, tmp_path, kind):
    folder = campaign(tmp_path)
    doc = import_cases(folder, saved / f"saved_{kind}.{kind}")
    ids = sorted(load_campaign(folder).cases)
    assert doc["added"] == 3 and all(is_content_id(i) for i in ids)  # DeepEval wrote no name
    [warning] = doc["warnings"]
    assert warning.startswith(f"3 of 3 case(s) of saved_{kind}.{kind} have no case_id, id or name")
    assert "DeepEval wrote no name" in warning and "id_from takes the ids from a field" in warning


@pytest.mark.parametrize("kind", ["json", "jsonl", "csv"])
def test_ids_from_a_metadata_field(saved, tmp_path, kind):
    folder = campaign(tmp_path)
    doc = import_cases(folder, saved / f"saved_{kind}.{kind}", id_from="additional_metadata.ticket")
    assert doc["added"] == 3 and doc["warnings"] == []
    cases = load_campaign(folder).cases
    assert sorted(cases) == ["T-100", "T-101", "T-102"]
    assert cases["T-101"]["input"] == "Can I get a refund after 30 days?"
    # metadata.KEY reads the same, however the file held the metadata; the same ids again add nothing
    assert import_cases(folder, saved / f"saved_{kind}.{kind}", id_from="metadata.ticket")["unchanged"] == 3


def test_a_record_without_an_id_there_is_named_and_nothing_is_written(tmp_path):
    path = tmp_path / "goldens.json"
    path.write_text(
        json.dumps(
            [
                {"input": "a?", "ticket": "T-1"},
                {"input": "b?"},
                {"input": "c?", "ticket": True},
                {"input": "d?", "ticket": "  "},
                {"input": "e?", "ticket": "T-1"},
                {"input": "f?", "ticket": f"T-{NASTY}"},
            ]
        )
    )
    folder = campaign(tmp_path)
    with pytest.raises(CampaignError) as caught:
        import_cases(folder, path, id_from="ticket")
    assert [(p.row, p.field) for p in caught.value.problems] == [
        (2, "ticket"),
        (3, "ticket"),
        (4, "ticket"),
        (6, "ticket"),
        (5, "ticket"),
    ]
    assert "two cases with id T-1 (first at 1)" in caught.value.problems[-1].message
    with pytest.raises(ValueError, match=r"id_from='additional_metadata\.': expected the name of a field"):
        import_cases(folder, path, id_from="additional_metadata.")
    assert not (folder / "cases.jsonl").exists()


def test_ragas_field_names_and_whole_numbers(tmp_path):
    path = tmp_path / "ragas.jsonl"
    path.write_text(
        "\n".join(json.dumps({"user_input": f"q{i}?", "response": "a.", "sample_id": 7 + i}) for i in range(2)) + "\n"
    )
    assert [c["case_id"] for c in read_external_cases(path, id_from="sample_id")] == ["7", "8"]
    # a RAGAS name reads the field it maps to
    assert [c["case_id"] for c in read_external_cases(path, id_from="user_input")] == ["q0?", "q1?"]


def test_the_same_cases_with_ids_after_hashes_are_refused(saved, tmp_path):
    """Imported first without ids, then with them: each case would be held twice, under two ids."""
    folder = campaign(tmp_path)
    import_cases(folder, saved / "saved_json.json")
    before = (folder / "cases.jsonl").read_bytes()
    with pytest.raises(CampaignError) as caught:
        import_cases(folder, saved / "saved_json.json", id_from="additional_metadata.ticket")
    first = caught.value.problems[0]
    assert (
        first.value == "T-100"
        and f"already in the campaign as {first.message.split(' as ')[1].split(' ')[0]}" in first.message
        and "remove" in first.expected
    )
    assert (folder / "cases.jsonl").read_bytes() == before


def test_the_command_line_warns_with_the_start_of_each_question(saved, tmp_path):
    folder = campaign(tmp_path)
    hashed = run_cli("cases", "import", str(folder), str(saved / "saved_json.json"))
    assert hashed.returncode == 0, hashed.stderr
    assert "warning: 3 of 3 case(s) of saved_json.json have no case_id, id or name" in hashed.stdout
    assert "--id-from takes the ids from a field" in hashed.stdout
    example = next(c for c in load_campaign(folder).cases.values())
    # the example id is shown with the start of its question beside it
    assert f'({content_id(example)} ("' in hashed.stdout or f'{content_id(example)} ("' in hashed.stdout
    named = run_cli(
        "cases",
        "import",
        str(campaign(tmp_path / "other")),
        str(saved / "saved_csv.csv"),
        "--id-from",
        "additional_metadata.ticket",
    )
    assert named.returncode == 0 and "3 case(s) added" in named.stdout and "warning" not in named.stdout
    missing = run_cli(
        "cases",
        "import",
        str(campaign(tmp_path / "third")),
        str(saved / "saved_csv.csv"),
        "--id-from",
        "additional_metadata.nope",
    )
    assert missing.returncode == 2 and "field 'additional_metadata.nope': no case id in the field" in missing.stderr


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    value=st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
        max_leaves=8,
    ),
    path=st.sampled_from(["ticket", "additional_metadata.ticket", "metadata.ticket", "a.b"]),
    text=st.sampled_from(["", NASTY]),
)
def test_any_value_at_the_id_field_is_an_id_or_a_named_problem(tmp_path_factory, value, path, text):
    record = {"input": f"q{text}", "ticket": value, "additional_metadata": {"ticket": value}, "a": {"b": value}}
    file = tmp_path_factory.mktemp("ids") / "goldens.json"
    file.write_text(json.dumps([record]))
    usable = (
        isinstance(value, (str, int))
        and not isinstance(value, bool)
        and str(value).strip() != ""
        and not any(ord(ch) < 32 or 127 <= ord(ch) < 160 or ch in "\u2028\u2029" for ch in str(value))
    )
    try:
        [case] = read_external_cases(file, id_from=path)
    except CampaignError as exc:
        assert [(p.row, p.field) for p in exc.problems] == [(1, path)] and not usable
        return
    assert usable and case["case_id"] == str(value)
