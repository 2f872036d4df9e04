"""The words of a verdict: numbers, thresholds, rates and pass rules as short text, the line for a threshold
the user runs today, and why a false-pass ceiling of 0 can never be shown."""

from __future__ import annotations

import pytest

from calibrate.analysis.verdict_text import (
    MOST,
    current_text,
    fails_most_text,
    number_text,
    pass_rule_text,
    rate_text,
    rates_text,
    threshold_text,
    zero_ceiling_text,
)


@pytest.mark.parametrize(
    ("x", "text"), [(None, "-"), (3.0, "3"), (0, "0"), (0.0625, "0.06"), (0.004, "0.004"), (-0.004, "-0.004")]
)
def test_number_text(x, text):
    assert number_text(x) == text


@pytest.mark.parametrize(("x", "text"), [(3.0, "3"), (0.7, "0.7"), (0.89634, "0.896"), (0.0001, "0")])
def test_threshold_text(x, text):
    assert threshold_text(x) == text


def test_rate_text_with_and_without_an_interval():
    assert rate_text(None) == rate_text({}) == rate_text({"estimate": None, "reason": "no fails"}) == "-"
    assert rate_text({"estimate": 0.0625}) == "0.06"
    assert rate_text({"estimate": 0.0625, "ci_low": 0.04, "ci_high": 0.09}) == "0.06 [0.04, 0.09]"


def test_rates_text_of_a_recommendation_or_of_two_figures():
    fp, ff = {"estimate": 0.1, "ci_low": 0.05, "ci_high": 0.2}, {"estimate": 0.3}
    expected = "false passes 0.10 [0.05, 0.20], false fails 0.30"
    assert rates_text(fp, ff) == expected
    assert rates_text({"false_pass_rate_detail": fp, "false_fail_rate_detail": ff}) == expected
    assert rates_text({}) == "false passes -, false fails -"


def test_pass_rule_text_puts_the_threshold_in():
    assert pass_rule_text({"pass_rule": "score >= threshold", "threshold": 0.7}) == "score ≥ 0.7"
    assert pass_rule_text({"pass_rule": "score <= threshold", "threshold": 2.0}) == "score ≤ 2"


def current(fp: dict | None, ff: dict | None, pass_rule: str = "score >= threshold") -> dict:
    return {
        "threshold": 0.5,
        "source_text": "DeepEval's default",
        "pass_rule": pass_rule,
        "false_pass_rate": fp,
        "false_fail_rate": ff,
    }


FP = {"estimate": 21 / 27, "ci_low": 0.59, "ci_high": 0.89, "k": 21, "n": 27}
FF = {"estimate": 3 / 33, "ci_low": 0.03, "ci_high": 0.24, "k": 3, "n": 33}
CEILING = {"kind": "constraint", "max_false_pass": 0.1}


def test_the_current_threshold_counts_the_annotators_verdicts():
    assert current_text(current(FP, FF), CEILING) == (
        "at your current threshold 0.5 (DeepEval's default): passes 21 of 27 answers the annotators failed "
        "(0.78 [0.59, 0.89]) and fails 3 of 33 answers they passed (0.09 [0.03, 0.24]); past the 0.1 ceiling"
    )


@pytest.mark.parametrize(
    ("fp", "tail"),
    [
        (
            {"estimate": 0.05, "ci_low": 0.01, "ci_high": 0.2, "k": 1, "n": 20},
            "; its interval reaches past the 0.1 ceiling",
        ),
        ({"estimate": 0.0, "ci_low": 0.0, "ci_high": 0.08, "k": 0, "n": 40}, "; within the 0.1 ceiling"),
        ({"estimate": 0.1, "ci_low": None, "ci_high": None, "k": 2, "n": 20}, "; within the 0.1 ceiling"),
    ],
)
def test_where_the_current_threshold_stands_against_the_ceiling(fp, tail):
    assert current_text(current(fp, FF), CEILING).endswith(tail)
    assert "ceiling" not in current_text(current(fp, FF), {"kind": "cost", "cost_false_pass": 1})


def test_the_current_threshold_with_no_rates_says_why():
    no_fails = {"estimate": None, "reason": "no human fails"}
    assert current_text(current(no_fails, None), CEILING) == (
        "at your current threshold 0.5 (DeepEval's default): no rates (no human fails)"
    )
    assert current_text(current(None, None), CEILING).endswith(": no rates (no labelled case)")


def test_the_current_threshold_of_a_lower_is_better_judge_shows_its_rule():
    text = current_text(current(None, {"estimate": 0.2, "k": 2, "n": 10}, "score <= threshold"), CEILING)
    assert text == (
        "at your current threshold score ≤ 0.5 (DeepEval's default): fails 2 of 10 answers the annotators passed (0.20)"
    )


def test_weighted_rates_give_their_share_and_failing_most_passes_is_said():
    ff = {"estimate": 0.75, "ci_low": 0.6, "ci_high": 0.85, "k": 30, "n": 40, "weighted": True}
    text = current_text(current(None, ff), {})
    assert text.endswith(
        "fails 0.75 [0.60, 0.85] of the answers the annotators passed (weighted, 40 cases); it fails most human passes"
    )


def test_fails_most_text():
    assert MOST == 0.5
    assert fails_most_text(None) == fails_most_text({"estimate": None}) == fails_most_text({"estimate": 0.5}) == ""
    assert fails_most_text({"estimate": 0.78}) == ": a gate there blocks 78% of the answers the annotators passed"


def test_zero_ceiling_text_says_what_to_give_instead():
    text = zero_ceiling_text()
    assert text.startswith("a false-pass ceiling of 0 can never be shown: ")
    assert "give a ceiling above 0" in text and "0.05 takes about 73 human fails" in text
