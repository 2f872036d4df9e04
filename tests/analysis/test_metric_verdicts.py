"""The verdict block of one metric: the best judge by the rule (fewest false fails under a ceiling, least
expected cost, a stricter alternative's threshold), the closest when none is defensible, no best without a
rule, the human ceiling, and the block as lines."""

from __future__ import annotations

import pytest

from calibrate.analysis.metric_verdicts import metric_verdict, verdict_lines
from calibrate.analysis.verdict_results import BestJudge, CurrentLine, JudgeVerdict, LabelsNeeded
from calibrate.analysis.verdict_statuses import DEFENSIBLE, NEEDS_LABELS, NOT_DEFENSIBLE, STRICTER

CEILING = {
    "kind": "constraint",
    "max_false_pass": 0.1,
    "description": "most lenient threshold with false-pass rate <= 0.1",
}


def rec(judge, status, fp=0.05, ff=0.2, threshold=0.5, rule=CEILING, needed=None, current=(), **more):
    verdict = JudgeVerdict(
        judge,
        status,
        f"{judge}: {status}",
        labels_needed=None
        if needed is None
        else LabelsNeeded(needed["human_fails"], needed["cases"], needed.get("fail_share")),
        current=tuple(CurrentLine(0.5, "given", t) for t in current),
    )
    return {
        "judge": judge,
        "rule": rule,
        "pass_rule": "score >= threshold",
        "threshold": threshold,
        "false_pass_rate": fp,
        "false_fail_rate": ff,
        "n": 100,
        "n_human_pass": 60,
        "verdict": verdict,
        **more,
    }


def test_the_best_under_a_ceiling_has_the_fewest_false_fails():
    recs = [rec("a", DEFENSIBLE, ff=0.3), rec("b", DEFENSIBLE, ff=0.1, threshold=0.7), rec("c", NOT_DEFENSIBLE, ff=0.0)]
    v = metric_verdict("m", recs)
    assert v.best == BestJudge(
        "b", "best by the rule: b at score ≥ 0.7 (the fewest false fails under the 0.1 ceiling)", threshold=0.7
    )
    assert [j.judge for j in v.judges] == ["a", "b", "c"] and v.rule == CEILING


def test_the_best_by_cost_has_the_least_expected_cost_and_its_accuracy_is_said():
    rule = {"kind": "cost", "cost_false_pass": 3, "cost_false_fail": 1}
    accuracy = {"estimate": 0.9, "ci_low": 0.8, "ci_high": 0.95}
    # a: 3 * 0.4 * 0.1 + 1 * 0.6 * 0.2 = 0.24; b: 3 * 0.4 * 0.05 + 0.6 * 0.5 = 0.36
    recs = [rec("a", DEFENSIBLE, 0.1, 0.2, rule=rule, accuracy=accuracy), rec("b", DEFENSIBLE, 0.05, 0.5, rule=rule)]
    assert metric_verdict("m", recs).best.text == (
        "best by the rule: a at score ≥ 0.5 (the least expected cost per case, 0.24); "
        "it agrees with the human verdict on 0.90 [0.80, 0.95] of cases"
    )
    prevalence = {**rule, "prevalence": 0.9}  # b's false fails now cost more: 3*.1*.05 + .9*.5 = .465 vs .21
    assert (
        metric_verdict(
            "m", [rec("a", DEFENSIBLE, 0.1, 0.2, rule=prevalence), rec("b", DEFENSIBLE, 0.05, 0.5, rule=prevalence)]
        ).best.judge
        == "a"
    )


def test_a_stricter_verdict_is_best_at_its_alternative_threshold_and_failing_most_passes_is_said():
    alternative = {
        "threshold": 0.9,
        "false_pass_rate": {"estimate": 0.02},
        "false_fail_rate": {"estimate": 0.7},
        "accuracy": None,
    }
    v = metric_verdict("m", [rec("a", STRICTER, defensible_alternative=alternative)])
    assert v.best.threshold == 0.9
    assert v.best.text.endswith("; even so, it fails 70% of the answers the annotators passed")


@pytest.mark.parametrize(
    ("needed", "text"),
    [
        ({"cases": 30, "human_fails": 0}, "no judge is defensible yet; closest: a, with about 30 more labelled cases"),
        (
            {"cases": 20, "human_fails": 5},
            "no judge is defensible yet; closest: a, once at least 5 human fails are labelled (none found yet: "
            "label cases the judges score low), among at least 20 more labelled cases",
        ),
        (
            {"cases": 20, "human_fails": 5, "fail_share": 0.3},
            "no judge is defensible yet; closest: a, with about 20 more labelled cases",
        ),
        ({"cases": 0, "human_fails": 0}, "no judge is defensible yet; closest: a"),
    ],
)
def test_none_defensible_names_the_closest(needed, text):
    recs = [
        rec("b", NEEDS_LABELS, needed={"cases": 90, "human_fails": 0}),
        rec("a", NEEDS_LABELS, needed=needed),
        rec("c", NOT_DEFENSIBLE),
    ]
    best = metric_verdict("m", recs).best
    assert best == BestJudge(None, text, closest="a")


def test_no_rule_and_no_judge_give_no_best():
    fixed = {"kind": "fixed", "threshold": 0.5, "description": "fixed threshold 0.5"}
    assert metric_verdict("m", [rec("a", "no criterion", rule=fixed)]).best.to_dict() == {
        "judge": None,
        "text": "no best judge: the metric declares no rule to rank the judges by",
    }
    assert metric_verdict("m", []).best.to_dict() == {"judge": None, "text": "no judge rated this metric"}
    assert metric_verdict("m", [rec("a", NOT_DEFENSIBLE)]).best.text == "no judge is defensible yet"


@pytest.mark.parametrize(
    ("annotators", "text"),
    [
        (None, "no human ceiling: one annotator (label some cases twice to measure it)"),
        ({"n_annotators": 1}, "no human ceiling: one annotator (label some cases twice to measure it)"),
        ({"n_annotators": 2, "reason": "no case labelled twice"}, "no human ceiling: no case labelled twice"),
        (
            {
                "n_annotators": 2,
                "n_items_multiply_labelled": 12,
                "percent_agreement": {"estimate": 0.75},
                "cohen_kappa": {"estimate": 0.5, "ci_low": 0.2, "ci_high": 0.8},
                "basis": "pass / fail",
            },
            "human ceiling: 2 annotators agree on 0.75 of the 12 cases labelled twice or more (Cohen κ 0.50 "
            "[0.20, 0.80]; on pass / fail)",
        ),
        (
            {
                "n_annotators": 3,
                "n_items_multiply_labelled": 5,
                "percent_agreement": {"estimate": 1.0},
                "fleiss_kappa": {"estimate": None},
            },
            "human ceiling: 3 annotators agree on 1 of the 5 cases labelled twice or more (on the labels)",
        ),
    ],
)
def test_the_human_ceiling(annotators, text):
    assert metric_verdict("m", [], annotators).ceiling.text == text


def test_the_block_as_lines_puts_current_thresholds_under_their_judge():
    v = metric_verdict(
        "m", [rec("a", DEFENSIBLE, current=["at your current threshold 0.5 (x): ..."]), rec("b", NOT_DEFENSIBLE)]
    )
    assert verdict_lines(v) == [
        "m: most lenient threshold with false-pass rate <= 0.1",
        "  a: defensible",
        "    at your current threshold 0.5 (x): ...",
        "  b: not defensible",
        "  best by the rule: a at score ≥ 0.5 (the fewest false fails under the 0.1 ceiling)",
        "  no human ceiling: one annotator (label some cases twice to measure it)",
    ]
