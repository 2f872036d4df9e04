"""Issue 26's attacks on ``calibrate cases import``: what it writes, every loader reads; what it cannot keep as
written (an id with a control character, a column named twice, two names for one field, a number that is no
text) is refused naming the file, the row and the field, and nothing is written."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from calibrate import CampaignError, init_campaign, load_campaign
from calibrate.cases.datasets import import_cases, read_external_cases
from calibrate.cli import main


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case_id=st.text(min_size=1, max_size=8))
def test_a_case_id_cases_import_writes_is_one_every_loader_reads(tmp_path_factory, case_id):
    folder = tmp_path_factory.mktemp("ids") / "c"
    init_campaign(folder, ["faithfulness"])
    path = folder.parent / "cases.jsonl"
    path.write_text(json.dumps({"case_id": case_id, "input": "q?"}) + "\n")
    try:
        import_cases(folder, path)
    except CampaignError as exc:
        assert "cases.jsonl" in str(exc) and "case_id" in str(exc)
        assert not (folder / "cases.jsonl").exists()
    else:
        assert case_id in load_campaign(folder).cases  # before: "c\x1b[2J" was written, then no loader read it


def test_the_attacks_case_id_with_an_escape_is_refused_before_writing(tmp_path):
    folder = tmp_path / "c"
    init_campaign(folder, ["faithfulness"])
    path = tmp_path / "a.jsonl"
    path.write_text(json.dumps({"case_id": "c\x1b[2J", "input": "q1"}) + "\n")
    result = CliRunner().invoke(main, ["cases", "import", str(folder), str(path)])
    assert result.exit_code == 2 and "a.jsonl, line 1, field 'case_id'" in result.output
    assert "control character" in result.output
    assert not (folder / "cases.jsonl").exists()


def test_a_csv_column_named_twice_is_refused_naming_it(tmp_path):
    path = tmp_path / "a.csv"
    path.write_text("case_id,input,input,actual_output,actual_output\nb1,q,r,a,b\n")
    with pytest.raises(CampaignError, match="columns named twice: 'actual_output', 'input'"):
        read_external_cases(path)
    path.write_text("\ufeffcase_id,input\nb1,q\n")  # a byte order mark is no second name
    assert read_external_cases(path)[0]["case_id"] == "b1"


def test_a_record_with_both_names_of_a_field_is_refused(tmp_path):
    path = tmp_path / "a.jsonl"
    path.write_text(json.dumps({"case_id": "m", "input": "one", "user_input": "other"}) + "\n")
    with pytest.raises(CampaignError, match=r"both 'user_input' .* and 'input' .*, with different values"):
        read_external_cases(path)
    path.write_text(json.dumps({"case_id": "m", "input": "same", "user_input": "same"}) + "\n")
    assert read_external_cases(path)[0]["input"] == "same"


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity", "1e400"])
def test_a_number_that_is_not_finite_is_no_text(tmp_path, literal):
    path = tmp_path / "a.jsonl"
    path.write_text('{"case_id": "n", "input": ' + literal + "}\n")
    with pytest.raises(CampaignError, match="field 'input': Value error, not text: a number that is not finite"):
        read_external_cases(path)
    path.write_text('{"case_id": "n", "input": 42}\n')  # a finite number is its digits
    assert read_external_cases(path)[0]["input"] == "42"
