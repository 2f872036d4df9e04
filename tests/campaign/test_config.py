"""campaign.toml read (read_toml: size, encoding, TOML, nesting) and its tables checked by their schemas
(table, tables): every problem names the field, what was found and what was expected.

A campaign.toml saved with a byte order mark (as Windows editors do) reads as the same file without one,
as the JSON and CSV readers read theirs."""

import pytest

from calibrate import init_campaign, load_campaign
from calibrate.base.errors import CampaignError, Problem
from calibrate.campaign.config import (
    MAX_CONFIG_BYTES,
    MAX_NESTING,
    CampaignFile,
    MetricTable,
    RaterTable,
    nesting_problem,
    read_toml,
    table,
    tables,
)


def test_a_campaign_toml_with_a_byte_order_mark_is_read(tmp_path):
    folder = tmp_path / "c"
    init_campaign(folder, ["faithfulness"])
    toml = folder / "campaign.toml"
    plain = read_toml(toml)
    toml.write_bytes(b"\xef\xbb\xbf" + toml.read_bytes())  # before: "not valid TOML: Invalid statement (at line 1,
    assert read_toml(toml) == plain  # column 1)"
    assert list(load_campaign(folder).metrics) == ["faithfulness"]


def refused(path) -> str:
    with pytest.raises(CampaignError) as raised:
        read_toml(path)
    return str(raised.value)


def test_a_toml_file_that_cannot_be_read_is_refused_naming_it(tmp_path):
    path = tmp_path / "campaign.toml"
    path.write_bytes(b'name = "x"\nother = "\xff"\n')
    assert "not UTF-8 text (byte 0xff at offset 20)" in refused(path) and "line 2" in refused(path)
    path.write_text("name = \n")
    assert f"{path}: not valid TOML: " in refused(path)
    path.write_text("x = " + "[" * (MAX_NESTING + 2) + "]" * (MAX_NESTING + 2))
    assert f"nested deeper than {MAX_NESTING} levels" in refused(path)
    path.write_bytes(b"#" * (MAX_CONFIG_BYTES + 1))
    assert str(path) in refused(path)
    assert str(tmp_path / "none.toml") in refused(tmp_path / "none.toml")


def test_nesting_is_measured_and_named():
    deep: object = 0
    for _ in range(MAX_NESTING - 1):
        deep = [deep]
    assert nesting_problem({"a": deep}, "c.toml") is None  # at the limit
    problem = nesting_problem({"a": {"b": [deep]}}, "c.toml")
    assert problem.field == "a.b" and problem.file == "c.toml"


def test_a_table_is_read_or_its_problems_listed():
    problems: list[Problem] = []
    metric = table(
        {"scale": "ordinal", "levels": [0, 1, 2], "human_pass": 1}, MetricTable, "metrics.m", "c.toml", problems
    )
    assert problems == [] and metric.levels == [0, 1, 2] and isinstance(metric.human_pass, int)
    assert table({"scale": "ratio"}, MetricTable, "metrics.m", "c.toml", problems) is None
    assert str(problems[0]) == (
        "c.toml, field 'metrics.m.scale': unknown or missing scale (found 'ratio'); "
        'expected "binary", "ordinal" or "continuous"'
    )


@pytest.mark.parametrize(
    ("value", "field", "message"),
    [
        ({"scale": "binary", "max_false_pass": 1.5}, "metrics.m.max_false_pass", "max_false_pass must be a rate"),
        ({"scale": "binary", "cost_false_pass": 0}, "metrics.m.cost_false_pass", "a cost must be a positive number"),
        ({"scale": "binary", "human_pass": "1"}, "metrics.m.human_pass", "human_pass is missing or not a number"),
        ({"scale": "binary", "human_pass": True}, "metrics.m.human_pass", "human_pass is missing or not a number"),
        (
            {"scale": "binary", "human_pass": float("nan")},
            "metrics.m.human_pass",
            "human_pass is missing or not a number",
        ),
        ({}, "metrics.m.scale", "unknown or missing scale"),
        ("binary", "metrics.m", "[metrics.m] must be a table"),
    ],
)
def test_each_metric_table_problem_names_its_field(value, field, message):
    problems: list[Problem] = []
    assert table(value, MetricTable, "metrics.m", "c.toml", problems) is None
    assert [(p.field, p.message) for p in problems] == [(field, message)]


def test_an_unknown_key_is_listed_and_the_rest_still_read():
    problems: list[Problem] = []
    rater = table({"family": "gpt", "colour": "red"}, RaterTable, "raters.j", "c.toml", problems)
    assert rater is not None and rater.family == "gpt"
    assert str(problems[0]) == (
        "c.toml, field 'raters.j.colour': unknown key; "
        "expected one of description, family, higher_is_better, model, on_metric_scale"
    )
    problems = []
    table({"name": "x", "metrics": {"m": {}}, "metric": 1}, CampaignFile, "", "c.toml", problems)
    assert problems[0].message == "unknown top-level key" and problems[0].field == "metric"


def test_tables_reads_each_named_table_and_refuses_a_section_that_is_none():
    problems: list[Problem] = []
    found = tables({"a": {"family": "gpt"}, "b": {"family": 3}}, RaterTable, "raters", "c.toml", problems)
    assert list(found) == ["a"] and [p.field for p in problems] == ["raters.b.family"]
    assert tables(None, RaterTable, "raters", "c.toml", problems) == {}
    problems = []
    assert tables([1], RaterTable, "raters", "c.toml", problems) == {}
    assert (
        str(problems[0]) == "c.toml, field 'raters': raters must be tables (found '[1]'); expected [raters.NAME] tables"
    )
