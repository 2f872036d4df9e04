"""Threshold rules: a Rule is checked where it is made (a kind it knows, the settings that kind needs, in
range), says itself in words, and gives a judge without labels its threshold; default_rule reads a
metric's declared rule, or falls back on its scale."""

import math
import re

import pytest

from calibrate.analysis.rules import RULE_KINDS, Rule, default_rule
from calibrate.campaign import Metric
from calibrate.stats.thresholds import DEEPEVAL_DEFAULT_THRESHOLD


@pytest.mark.parametrize(
    "args, kwargs, message",
    [
        (
            ("constrain",),
            {"max_false_pass": 0.1},
            "Rule kind 'constrain' is not one of constraint, cost, fixed, default",
        ),
        (("constraint",), {}, "a constraint Rule needs max_false_pass"),
        (("constraint",), {"max_false_pass": float("nan")}, "Rule max_false_pass must be a finite number from 0 to 1"),
        (("constraint",), {"max_false_pass": 0.1, "confidence": 1.0}, "Rule confidence must be from 0.5 to below 1"),
        # below 0.5 the one-sided "upper" bound lies under the estimate: a rule on it passes a ceiling it breaks
        (("constraint",), {"max_false_pass": 0.1, "confidence": 0.3}, "Rule confidence must be from 0.5 to below 1"),
        (("constraint",), {"max_false_pass": 0.1, "prevalence": 0.3}, "a constraint Rule takes no prevalence"),
        (("cost",), {"cost_false_pass": 1}, "a cost Rule needs cost_false_fail"),
        (
            ("cost",),
            {"cost_false_pass": 0, "cost_false_fail": 1},
            "Rule cost_false_pass must be a finite number above 0",
        ),
        (("fixed",), {"threshold": "0.5"}, "Rule threshold must be a finite number, not '0.5'"),
    ],
)
def test_a_rule_is_checked_where_it_is_made(args, kwargs, message):
    with pytest.raises(ValueError) as raised:
        Rule(*args, **kwargs)
    assert message in str(raised.value)


@pytest.mark.parametrize("value", [math.inf, -math.inf, True, None])
def test_a_fixed_threshold_must_be_a_finite_number(value):
    if value is None:
        with pytest.raises(ValueError, match="a fixed Rule needs threshold"):
            Rule("fixed")
        return
    with pytest.raises(ValueError, match=f"Rule threshold must be a finite number, not {value!r}"):
        Rule("fixed", threshold=value)


def test_the_ranges_ends():
    assert Rule("constraint", max_false_pass=0).max_false_pass == 0
    assert Rule("constraint", max_false_pass=1, confidence=0.5).confidence == 0.5
    with pytest.raises(ValueError, match=re.escape("Rule max_false_pass must be a finite number from 0 to 1, not 1.5")):
        Rule("constraint", max_false_pass=1.5)
    with pytest.raises(ValueError, match=re.escape("Rule prevalence must be a finite number from 0 to 1, not -0.1")):
        Rule("cost", cost_false_pass=1, cost_false_fail=1, prevalence=-0.1)
    with pytest.raises(ValueError, match="a cost Rule takes no confidence or threshold"):
        Rule("cost", cost_false_pass=1, cost_false_fail=1, confidence=0.9, threshold=0.5)


@pytest.mark.parametrize(
    ("rule", "words"),
    [
        (Rule("constraint", max_false_pass=0.1), "most lenient threshold with false-pass rate <= 0.1"),
        (
            Rule("constraint", max_false_pass=0.1, confidence=0.95),
            "most lenient threshold with false-pass rate <= 0.1 at 95% confidence "
            "(one-sided Clopper-Pearson upper bound)",
        ),
        (Rule("cost", cost_false_pass=3, cost_false_fail=1), "minimise 3 x false passes + 1 x false fails"),
        (
            Rule("cost", cost_false_pass=3, cost_false_fail=1, prevalence=0.2),
            "minimise 3 x false passes + 1 x false fails at a production pass prevalence of 0.2",
        ),
        (Rule("fixed", threshold=0.7), "fixed threshold 0.7"),
        (
            Rule("default", human_pass=2, binary=False),
            "no rule declared: a judge on the metric's scale passes at its human pass level 2; "
            "another gets no threshold (declare max_false_pass or costs)",
        ),
        (
            Rule("default", human_pass=1, binary=True),
            "no rule declared: a judge on the metric's scale passes at its human pass level 1; "
            "another, scoring from 0 to 1, at DeepEval's 0.5",
        ),
    ],
)
def test_a_rule_in_words(rule, words):
    assert rule.describe() == words
    assert rule.to_dict()["description"] == words and rule.kind in RULE_KINDS
    assert set(rule.to_dict()) - {"description"} == {k for k, v in rule.__dict__.items() if v is not None}


def test_the_threshold_a_rule_gives_without_labels():
    fixed, binary = Rule("fixed", threshold=0.7), Rule("default", human_pass=1, binary=True)
    ordinal = Rule("default", human_pass=2, binary=False)
    for on_scale, zero_to_one in [(True, False), (False, True), (False, False)]:
        assert fixed.fixed_threshold(on_scale=on_scale, zero_to_one=zero_to_one) == 0.7
        assert (
            Rule("constraint", max_false_pass=0.1).fixed_threshold(on_scale=on_scale, zero_to_one=zero_to_one) is None
        )
        assert ordinal.fixed_threshold(on_scale=on_scale, zero_to_one=zero_to_one) == (2 if on_scale else None)
    assert binary.fixed_threshold(on_scale=True, zero_to_one=True) == 1
    assert binary.fixed_threshold(on_scale=False, zero_to_one=True) == DEEPEVAL_DEFAULT_THRESHOLD == 0.5
    assert binary.fixed_threshold(on_scale=False, zero_to_one=False) is None


@pytest.mark.parametrize(
    ("metric", "expected"),
    [
        (Metric("m", "binary", human_pass=1, levels=(0, 1)), Rule("default", human_pass=1, binary=True)),
        (Metric("m", "ordinal", human_pass=2, levels=(0, 1, 2, 3)), Rule("default", human_pass=2, binary=False)),
        (Metric("m", "continuous", human_pass=0.6, range=(0, 1)), Rule("default", human_pass=0.6, binary=False)),
        (
            Metric("m", "ordinal", human_pass=2, levels=(0, 1, 2, 3), max_false_pass=0.1),
            Rule("constraint", max_false_pass=0.1),
        ),
        (
            Metric("m", "binary", human_pass=1, levels=(0, 1), cost_false_pass=3, cost_false_fail=1),
            Rule("cost", cost_false_pass=3, cost_false_fail=1),
        ),
        # a declared ceiling wins over declared costs
        (
            Metric("m", "binary", human_pass=1, max_false_pass=0.2, cost_false_pass=3, cost_false_fail=1),
            Rule("constraint", max_false_pass=0.2),
        ),
    ],
)
def test_default_rule_per_scale_and_declaration(metric, expected):
    assert default_rule(metric) == expected
