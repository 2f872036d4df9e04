"""One judge's recommendation under a rule: the threshold and the rates there (counted by hand here), the
bound a rule with a confidence kept, the defensible alternative and the lowest false-pass rate, DeepEval's
0.5 and the thresholds run today, no threshold, too few cases, and the threshold's own interval."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from calibrate.analysis.judge_comparison import TooFewCases
from calibrate.analysis.judge_recommendation import bound_kept, recommendation
from calibrate.analysis.metric_comparisons import bootstrap_runs, judge_comparisons
from calibrate.analysis.rules import Rule
from calibrate.base.estimates import Estimate
from calibrate.campaign import campaign_from_frames
from calibrate.stats.intervals import clopper_pearson_upper

IDS = [f"c{i}" for i in range(10)]
HUMAN = np.array([0, 0, 0, 1, 0, 1, 0, 1, 1, 1])
SCORES = np.array([0.1, 0.2, 0.3, 0.35, 0.6, 0.4, 0.8, 0.7, 0.9, 0.95])


def judges(rule: Rule, scores=SCORES, n_boot: int = 0, human=HUMAN):
    rows = [(c, "h", "human", int(h)) for c, h in zip(IDS, human)]
    rows += [(c, "j", "judge", float(s)) for c, s in zip(IDS, scores)] + [("c0", "one", "judge", 0.5)]
    frame = pd.DataFrame(rows, columns=["case_id", "rater", "rater_kind", "value"]).assign(metric="m")
    compared = judge_comparisons(
        campaign_from_frames({"name": "t", "metrics": {"m": {"scale": "binary"}}}, frame), "m", None, rule
    )
    if n_boot:
        bootstrap_runs(compared.comparisons, compared.design, n_boot=n_boot, seed=0, progress=None, label="m")
    return {j.judge.name: j for j in compared.judges}


def test_the_rates_at_a_fixed_threshold_are_those_counted_by_hand():
    rule = Rule("fixed", threshold=0.5)
    rec = recommendation(
        judges(rule)["j"], "m", rule, 0.95, seed=0, current=[{"threshold": 0.3, "source": "given", "source_text": "x"}]
    )
    assert rec["judge"] == "j" and rec["pass_rule"] == "score >= threshold" and rec["rule"] == rule.to_dict()
    assert rec["threshold"] == pytest.approx(0.6) and (rec["n_human_pass"], rec["n_human_fail"]) == (5, 5)
    assert rec["false_pass_rate"] == pytest.approx(2 / 5) and rec["false_fail_rate"] == pytest.approx(2 / 5)
    assert (
        rec["false_pass_rate_detail"]["k"] == 2 and rec["false_pass_rate_ci"][0] <= 0.4 <= rec["false_pass_rate_ci"][1]
    )
    # DeepEval's 0.5 reads the same cases as passes; 0.3 passes c2..c9: 3 false passes, no false fail
    assert rec["deepeval_default"]["threshold"] == 0.5 and rec["deepeval_default"]["false_pass_rate"]["k"] == 2
    (current,) = rec["current"]
    assert (
        current["source_text"] == "x" and current["false_pass_rate"]["k"] == 3 and current["false_fail_rate"]["k"] == 0
    )
    assert "only 10 human-labelled cases: under 50, this recommendation is not yet trustworthy" in rec["warnings"]
    assert rec["separation"]["n_pass"] == 5 and rec["verdict"]["status"]


def test_a_constraint_offers_the_lowest_false_pass_and_its_confidence_keeps_the_one_sided_bound():
    plain = Rule("constraint", max_false_pass=0.2)
    rec = recommendation(judges(plain)["j"], "m", plain, 0.95, seed=0)
    assert rec["false_pass_rate"] <= 0.2 and rec["lowest_false_pass"]["rate"] == 0.0
    assert rec["lowest_false_pass"]["threshold"] == pytest.approx(0.95)
    sure = Rule("constraint", max_false_pass=0.5, confidence=0.9)
    kept = recommendation(judges(sure)["j"], "m", sure, 0.95, seed=0)["false_pass_rate_detail"]
    assert kept["ci_low"] == 0.0 and kept["ci_high"] == pytest.approx(
        float(clopper_pearson_upper(kept["k"], 5, confidence=0.9))
    )
    assert kept["ci_method"].startswith("one-sided 90% Clopper-Pearson upper bound")


def test_bound_kept_leaves_an_undefined_rate_and_reads_a_weighted_one_at_its_effective_size():
    assert bound_kept(Estimate.undefined("r"), 0.9) == Estimate.undefined("r")
    weighted = bound_kept(Estimate.from_dict({"estimate": 0.1, "weighted": True, "effective_n": 20.0}), 0.9)
    assert weighted.ci_high == pytest.approx(float(clopper_pearson_upper(2.0, 20.0, confidence=0.9)))
    assert weighted.to_dict()["ci_width"] == weighted.ci_high and weighted.ci_low == 0.0


def test_a_judge_that_cannot_meet_the_rule_says_so():
    rule = Rule("constraint", max_false_pass=0.0)
    worst = np.where(HUMAN == 0, 0.9, 0.1)  # every human fail scored highest
    rec = recommendation(judges(rule, worst)["j"], "m", rule, 0.95, seed=0)
    assert rec["threshold"] is None and rec["false_pass_rate"] is None and rec["false_pass_rate_ci"] == [None, None]
    assert any(
        w.startswith("no threshold meets the rule (most lenient threshold with false-pass rate <= 0)")
        for w in rec["warnings"]
    )


def test_every_human_label_a_pass_is_warned():
    rule = Rule("constraint", max_false_pass=0.1)
    rec = recommendation(judges(rule, human=np.ones(10, int))["j"], "m", rule, 0.95, seed=0)
    assert rec["threshold"] is None
    assert "every human label is a pass: the rule needs both human passes and human fails" in rec["warnings"]
    assert "separation" not in rec


def test_a_judge_on_too_few_cases_gets_every_rate_undefined():
    rule = Rule("fixed", threshold=0.5)
    one = judges(rule)["one"]
    assert isinstance(one, TooFewCases)
    rec = recommendation(
        one, "m", rule, 0.95, seed=0, current=[{"threshold": 0.4, "source": "given", "source_text": "x"}]
    )
    reason = "only 1 case(s) rated by both the judge and the humans (need 2)"
    assert rec["threshold"] is None and rec["n"] == 1 and rec["warnings"] == [reason + ": no recommendation"]
    assert rec["false_pass_rate_detail"] == {"estimate": None, "reason": reason}
    assert rec["current"][0]["false_fail_rate"] == {"estimate": None, "reason": reason}


def test_the_thresholds_own_interval_comes_from_the_resamples():
    rule = Rule("constraint", max_false_pass=0.2)
    rec = recommendation(judges(rule, n_boot=200)["j"], "m", rule, 0.95, seed=0)
    low, high = rec["threshold_ci"]
    assert low is not None and low <= rec["threshold"] <= high
    assert rec["threshold_ci_method"] == "percentile bootstrap (200 resamples of cases)"
    missed = rec["threshold_ci_resamples_without_threshold"]
    assert (missed > 0) == any(w.endswith("bootstrap resamples no threshold met the rule") for w in rec["warnings"])
    few = recommendation(judges(rule, n_boot=60)["j"], "m", rule, 0.95, seed=0)
    assert few["threshold_ci"] == [None, None]  # under 100 defined resamples: no interval
    none = recommendation(judges(rule)["j"], "m", rule, 0.95, seed=0)
    assert none["threshold_ci"] == [None, None] and none["threshold_ci_resamples_without_threshold"] == 0
