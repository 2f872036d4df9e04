"""Errors that name the file, the row, the field, the value found and what was expected
(calibrate/base/errors.py)."""

import pytest

from calibrate.base.errors import NO_VALUE, CampaignError, FileError, FolderInUse, ParameterText, Problem, StoreError


def test_a_problem_reads_file_line_field_found_expected():
    assert str(Problem("cases.jsonl", "no case id")) == "cases.jsonl: no case id"
    full = Problem("ratings.csv", "not a number", row=3, field="value", value="x", expected="a number")
    assert str(full) == "ratings.csv, line 3, field 'value': not a number (found 'x'); expected a number"
    assert str(Problem("a.csv", "empty", row=0, value=0)) == "a.csv, line 0: empty (found 0)"


def test_a_campaign_error_lists_every_problem_up_to_fifty():
    one = CampaignError([Problem("campaign.toml", "no metric")], heading="the folder x")
    assert str(one) == "1 problem in the folder x:\n  campaign.toml: no metric"
    many = CampaignError([Problem("r.csv", f"bad {i}", row=i) for i in range(53)])
    lines = str(many).splitlines()
    assert lines[0] == "53 problems in the campaign:" and len(many.problems) == 53
    assert lines[1] == "  r.csv, line 0: bad 0" and lines[50] == "  r.csv, line 49: bad 49"
    assert lines[-1] == "  ... and 3 more problems"
    assert isinstance(many, ValueError)


def test_file_errors_name_the_file_the_problem_and_what_to_do():
    error = StoreError("/c/store.sqlite", "locked", "the store is locked", "close the other command")
    assert str(error) == "/c/store.sqlite: the store is locked; close the other command"
    assert (error.kind, error.path, error.problem, error.todo) == (
        "locked",
        "/c/store.sqlite",
        "the store is locked",
        "close the other command",
    )
    assert isinstance(error, FileError) and isinstance(FolderInUse("/c", "held", "wait"), FileError)


def test_a_parameter_text_names_parameters_for_the_library_and_flags_for_the_command_line():
    text = ParameterText(
        "{n_boot} must be at least 0 ({confidence}, {strict}, {_user})",
        n_boot=-1,
        confidence=NO_VALUE,
        strict=True,
        _user="{judge}",
    )
    assert str(text) == "n_boot=-1 must be at least 0 (confidence, strict=True, {judge})"
    assert text.for_command_line() == "--n-boot -1 must be at least 0 (--confidence, --strict, {judge})"
    assert text.for_command_line({"n_boot": "-B"}) == "-B -1 must be at least 0 (--confidence, --strict, {judge})"
    with pytest.raises(ValueError, match="n_boot=-1"):
        raise ValueError(text)


def test_joined_parameter_texts_keep_both_readings():
    joined = ParameterText.join(
        "; ",
        [
            ParameterText("{by} needs cases ({_a})", by="topic", _a="x"),
            "plain {braces}",
            ParameterText("{seed}", seed=2),
        ],
    )
    assert str(joined) == "by='topic' needs cases (x); plain {braces}; seed=2"
    assert joined.for_command_line() == "--by topic needs cases (x); plain {braces}; --seed 2"
    assert ParameterText.join("{;}", ["a", "b"]) == "a{;}b"
