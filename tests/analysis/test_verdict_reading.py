"""What a verdict reads of a recommendation (calibrate/analysis/verdict_reading.py): the rule, the labels and
the level the false-pass bound is at; the verdict's reasons after the test against chance's; the labels that
would settle a shortfall, in human fails and in cases at the share of fails."""

from __future__ import annotations

import dataclasses

import pytest

from calibrate.analysis.verdict_reading import Shortfall, VerdictReading, beyond_reach_text, labels_to_settle
from calibrate.analysis.verdict_results import LabelsNeeded
from calibrate.analysis.verdict_statuses import NEEDS_LABELS


def _rec(**changes) -> dict:
    rec = {
        "judge": "j",
        "rule": {"kind": "constraint", "max_false_pass": 0.1},
        "threshold": 0.7,
        "pass_rule": "score >= threshold",
        "n": 40,
        "n_human_pass": 24,
        "n_human_fail": 16,
        "false_pass_rate_detail": {"estimate": 0.0, "ci_low": 0.0, "ci_high": 0.19, "n": 16},
        "false_fail_rate_detail": {"estimate": 0.25, "ci_low": 0.12, "ci_high": 0.45, "n": 24},
    }
    return rec | changes


def test_the_reading_takes_the_rule_the_labels_and_the_level():
    r = VerdictReading.of(_rec(), 0.95, 50)
    assert (r.kind, r.ceiling, r.n, r.n_pass, r.n_fail, r.fail_share) == ("constraint", 0.1, 40, 24, 16, 0.4)
    assert (r.one_sided, r.level, r.fail_n, r.min_labels, r.chance) == (False, 0.95, 16, 50, None)
    assert r.at == "at score ≥ 0.7 false passes 0 [0, 0.19], false fails 0.25 [0.12, 0.45]"
    assert r.fails_needed(0.0) == 35


def test_a_rule_with_a_confidence_reads_its_one_sided_level_and_a_weighted_rate_its_effective_size():
    rule = {"kind": "constraint", "max_false_pass": 0.1, "confidence": 0.9}
    fp = {"estimate": 0.0, "ci_low": 0.0, "ci_high": 0.2, "n": 16, "effective_n": 9.5, "weighted": True}
    r = VerdictReading.of(_rec(rule=rule, false_pass_rate_detail=fp, threshold=None), 0.95, 50)
    assert (r.one_sided, r.level, r.fail_n, r.at) == (True, 0.9, 9.5, "no threshold")
    cost = VerdictReading.of(_rec(rule={"kind": "cost", "cost_false_pass": 5, "cost_false_fail": 1}), 0.95, 50)
    assert cost.kind == "cost" and cost.ceiling != cost.ceiling  # no ceiling: NaN


def test_a_verdict_puts_the_chance_shortfall_first_and_names_the_judge():
    chance = {"text": "not shown better than chance yet", "status": NEEDS_LABELS, "labels": 20, "human_fails": 8}
    chance["total"] = 60
    r = VerdictReading.of(_rec(), 0.95, 50)
    plain = r.verdict(NEEDS_LABELS, "text", "why")
    assert plain.text == "j: text" and plain.reasons == ("why",) and plain.chance is None and plain.threshold == 0.7
    seen = dataclasses.replace(r, chance=chance).verdict(NEEDS_LABELS, "text", "why")
    assert seen.reasons == ("not shown better than chance yet", "why")
    assert (seen.chance.labels, seen.chance.human_fails, seen.chance.total) == (20, 8, 60)


@pytest.mark.parametrize(
    ("more_fails", "share", "more_cases", "expected"),
    [
        (19, 0.4, 10, (19, 48)),  # 19 fails at a 40% share of fails: 48 cases
        (0, 0.4, 10, (0, 10)),  # no fail short: the cases min_labels asks for
        (3.0000000001, None, 0, (3, 0)),  # a float's noise is no extra fail; no share, no cases
        (-2, 0.5, 0, (0, 0)),
    ],
)
def test_the_labels_to_settle_a_shortfall(more_fails, share, more_cases, expected):
    needed = labels_to_settle(more_fails, share, more_cases)
    assert needed == LabelsNeeded(human_fails=expected[0], cases=expected[1], fail_share=share)


def test_a_ceiling_beyond_reach_says_how_many_fails_were_searched():
    assert beyond_reach_text(1e-7) == (
        "a 1e-07 ceiling needs more than 1,000,000 human fails even with no false pass; "
        "declare a ceiling labels can show"
    )
    assert Shortfall() == ((), 0.0)
