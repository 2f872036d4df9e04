"""What campaign.toml declares (parse_config): its name, metrics, raters and judges; each metric's fields
checked together (parse_metric: levels and range to the scale, human_pass inside them, both costs), and
every problem of every table listed at once."""

from __future__ import annotations

import pytest

from calibrate.base.errors import CampaignError, Problem
from calibrate.campaign.config import MetricTable
from calibrate.campaign.declared import parse_config, parse_metric, section


def metric(spec: dict) -> tuple[object, list[Problem]]:
    problems: list[Problem] = []
    return parse_metric("m", MetricTable.model_validate(spec), "c.toml", problems), problems


def test_each_scale_gets_its_levels_or_range_and_pass_level():
    binary, problems = metric({"scale": "binary"})
    assert problems == [] and binary.levels == (0.0, 1.0) and binary.human_pass == 1.0 and binary.range is None
    ordinal, _ = metric({"scale": "ordinal", "levels": [3, 1, 2, 0], "human_pass": 2})
    assert ordinal.levels == (0.0, 1.0, 2.0, 3.0) and ordinal.human_pass == 2.0
    continuous, _ = metric({"scale": "continuous", "range": [0, 10], "human_pass": 6, "max_false_pass": 0.1})
    assert continuous.range == (0.0, 10.0) and continuous.levels is None and continuous.max_false_pass == 0.1
    unbounded, _ = metric({"scale": "continuous", "human_pass": -3})
    assert unbounded.range is None and unbounded.human_pass == -3.0


@pytest.mark.parametrize(
    ("spec", "field", "message", "made"),
    [
        ({"scale": "binary", "levels": [0, 2]}, "metrics.m.levels", "a binary scale has the levels [0, 1]", True),
        ({"scale": "binary", "human_pass": 0.5}, "metrics.m.human_pass", "a binary scale passes at 1", True),
        ({"scale": "ordinal", "human_pass": 1}, "metrics.m.levels", "an ordinal scale needs its levels", False),
        (
            {"scale": "ordinal", "levels": [1, 1], "human_pass": 1},
            "metrics.m.levels",
            "an ordinal scale needs its levels",
            False,
        ),
        (
            {"scale": "ordinal", "levels": [0, 1, 2]},
            "metrics.m.human_pass",
            "human_pass is missing or not a number",
            False,
        ),
        (
            {"scale": "ordinal", "levels": [0, 1, 2], "human_pass": 0},
            "metrics.m.human_pass",
            "human_pass makes every human label a pass or every one a fail",
            True,
        ),
        (
            {"scale": "continuous", "range": [0, 1], "human_pass": 2},
            "metrics.m.human_pass",
            "human_pass makes every human label a pass or every one a fail",
            True,
        ),
        (
            {"scale": "continuous", "levels": [0, 1], "human_pass": 1},
            "metrics.m.levels",
            "a continuous scale has no levels",
            True,
        ),
        ({"scale": "continuous", "range": [1, 0], "human_pass": 1}, "metrics.m.range", "invalid range", True),
        (
            {"scale": "ordinal", "levels": [0, 1], "range": [0, 1], "human_pass": 1},
            "metrics.m.range",
            "only a continuous scale takes a range",
            True,
        ),
        (
            {"scale": "binary", "cost_false_pass": 2},
            "metrics.m.cost_false_pass",
            "the cost rule needs both costs",
            True,
        ),
    ],
)
def test_fields_that_do_not_fit_together_are_named(spec, field, message, made):
    parsed, problems = metric(spec)
    assert [(p.field, p.message) for p in problems] == [(field, message)]
    assert (parsed is not None) == made


def test_human_pass_outside_the_levels_says_the_range_it_needs():
    _, (problem,) = metric({"scale": "ordinal", "levels": [0, 1, 2, 3], "human_pass": 3.5})
    assert problem.expected == "a value above 0 and at most 3"


CONFIG = {
    "name": "c",
    "out_of_scale": "clip",
    "metrics": {"f": {"scale": "binary"}, "r": {"scale": "ordinal", "levels": [0, 1, 2], "human_pass": 1}},
    "raters": {"j": {"family": "gpt", "higher_is_better": False}},
    "judges": {
        "de": {
            "library": "deepeval",
            "metric": "faithfulness",
            "into": "f",
            "model": {"provider": "openai", "name": "m"},
        }
    },
}


def test_a_config_is_declared_whole():
    declared = parse_config(CONFIG, "c.toml")
    assert declared.name == "c" and declared.out_of_scale == "clip" and list(declared.metrics) == ["f", "r"]
    assert declared.raters["j"].family == "gpt" and declared.raters["j"].higher_is_better is False
    assert declared.judges["de"].into == "f" and declared.juries == {} and declared.service is None


def test_every_problem_of_every_table_is_listed_at_once():
    config = {
        "name": " ",
        "metrics": {"f": {"scale": "ratio"}, "r": {"scale": "ordinal"}},
        "raters": {"j": {"family": 3}},
        "judges": {"de": {"library": "deepeval", "metric": "faithfulness", "into": "nope"}},
    }
    with pytest.raises(CampaignError) as raised:
        parse_config(config, "c.toml")
    fields = [p.field for p in raised.value.problems]
    assert fields[:4] == ["name", "metrics.f.scale", "metrics.r.levels", "raters.j.family"]
    assert "judges.de.into" in fields and "judges.de.model" in fields


def test_a_section_is_read_only_when_it_is_a_table():
    assert section({"metrics": {"f": {}}}, "metrics") == {"f": {}}
    assert section({"metrics": [1]}, "metrics") is None and section({}, "metrics") is None and section(3, "m") is None
