"""A judge's entry in the statistics document from its JudgeComparison on a small pairing: the header, each
statistic against scipy and scikit-learn, the interval small samples take, the gate's one-sided bounds,
every undefined statistic's reason, no threshold, and a judge on too few cases."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import spearmanr
from sklearn.metrics import roc_auc_score

from calibrate.analysis.judge_comparison import TooFewCases
from calibrate.analysis.judge_figures import SMALL_N, judge_entry, judge_result, too_few_result, undefined_reason
from calibrate.analysis.metric_comparisons import bootstrap_runs, judge_comparisons
from calibrate.analysis.results import STATISTICS, JudgeAgreement
from calibrate.analysis.rules import Rule
from calibrate.base.estimates import Estimate
from calibrate.campaign import campaign_from_frames

IDS = [f"c{i}" for i in range(12)]
HUMAN = np.array([0, 0, 0, 1, 0, 1, 0, 1, 1, 1, 1, 0])
SCORES = np.array([0.1, 0.2, 0.3, 0.35, 0.6, 0.4, 0.8, 0.7, 0.9, 0.95, 0.65, 0.15])
FIXED = Rule("fixed", threshold=0.5)


def compared(rule=FIXED, scores=SCORES, metric=None, raters=None, n_boot=50):
    rows = [(c, "h", "human", int(h), "") for c, h in zip(IDS, HUMAN)]
    rows += [(c, "j", "judge", float(s), "") for c, s in zip(IDS, scores)]
    rows += [("c0", "one", "judge", 0.5, ""), ("c1", "one", "judge", None, "timeout")]
    frame = pd.DataFrame(rows, columns=["case_id", "rater", "rater_kind", "value", "error"]).assign(metric="m")
    config = {
        "name": "t",
        "metrics": {"m": metric or {"scale": "binary"}},
        "raters": raters or {"j": {"family": "gpt"}},
    }
    got = judge_comparisons(campaign_from_frames(config, frame), "m", None, rule)
    bootstrap_runs(got.comparisons, got.design, n_boot=n_boot, seed=0, progress=None, label="m")
    return {j.judge.name: j for j in got.judges}


@pytest.fixture(scope="module")
def judges():
    return compared()


def test_the_header_says_who_the_judge_is_and_its_cases(judges):
    entry = judge_result(judges["j"], 0.95, seed=0, n_listed=3).to_dict()
    assert {
        k: entry[k]
        for k in ("judge", "family", "pass_rule", "n", "n_ratings", "n_errors", "n_human_pass", "n_human_fail")
    } == {
        "judge": "j",
        "family": "gpt",
        "pass_rule": "score >= threshold",
        "n": 12,
        "n_ratings": 12,
        "n_errors": 0,
        "n_human_pass": 6,
        "n_human_fail": 6,
    }
    assert "weighted" not in entry


def test_each_statistic_is_the_reference_librarys_with_a_small_sample_interval(judges):
    judge = judge_result(judges["j"], 0.95, seed=0, n_listed=3)
    assert judge.spearman.value == pytest.approx(spearmanr(HUMAN, SCORES).statistic)
    assert judge.auc.value == pytest.approx(roc_auc_score(HUMAN, SCORES))
    assert 12 < SMALL_N and judge.spearman.method == "Fisher z, Bonett-Wright SE"
    assert judge.kendall.method == "Fisher z, Fieller SE"
    assert judge.spearman.ci_low < judge.spearman.value < judge.spearman.ci_high


def test_the_entry_is_built_typed_and_reads_back_from_its_document(judges):
    """judge_figures builds the typed entry; JudgeAgreement.from_dict reads its document back to it."""
    for brief in (False, True):
        judge = judge_result(judges["j"], 0.95, seed=0, n_listed=3, full=not brief)
        assert all(isinstance(judge.statistic(k), Estimate) for k in STATISTICS)
        assert JudgeAgreement.from_dict(judge.to_dict()) == judge
    few = too_few_result(judges["one"])
    assert JudgeAgreement.from_dict(few.to_dict()) == few and few.extra["curve"] == []


def test_the_threshold_and_the_gates_bounds(judges):
    entry = judge_result(judges["j"], 0.95, seed=0, n_listed=3).to_dict()
    assert entry["pass_threshold"] == {"threshold": pytest.approx(0.6), "rule": FIXED.to_dict()}
    assert (
        entry["pass_kappa"]["threshold"] == pytest.approx(0.6) and entry["pass_kappa"]["rule"] == "fixed threshold 0.5"
    )
    rho = entry["spearman"]
    assert rho["lower_bound"] <= rho["ci_low"] and rho["lower_bound_method"].startswith(
        "the lower of the interval's end"
    )
    kappa = entry["pass_kappa"]
    # at 0.6, c4 and c6 pass wrongly and c3 and c5 fail wrongly: 8 of 12 agree where chance gives half
    assert kappa["estimate"] == pytest.approx(1 / 3)
    assert (
        kappa["lower_bound"] < kappa["estimate"]
        and "Clopper-Pearson bound on 4 disagreement(s) in 12" in kappa["lower_bound_method"]
    )
    assert 0 < entry["auc"]["chance_p"] < 1
    assert len(entry["worst_misses"]["false_passes"]) <= 3 and entry["bottom_decile"]["n"] == 2
    assert [p["threshold"] for p in entry["curve"]] == sorted(SCORES.tolist())


def test_full_and_curves_choose_the_parts(judges):
    brief = judge_result(judges["j"], 0.95, seed=0, n_listed=3, full=False)
    assert not {"curve", "bottom_decile", "worst_misses"} & set(brief.keys) and brief.bottom_decile is None
    no_curve = judge_result(judges["j"], 0.95, seed=0, n_listed=3, curves=False)
    assert "curve" not in no_curve.keys and no_curve.bottom_decile["n"] == 2


def test_a_judge_on_too_few_cases_has_every_statistic_undefined(judges):
    one = judges["one"]
    assert isinstance(one, TooFewCases)
    entry = judge_entry(one, 0.95, seed=0, n_listed=3).to_dict()
    assert (
        entry == too_few_result(one).to_dict()
        and entry["curve"] == []
        and entry["n_errors"] == 1
        and entry["n_ratings"] == 2
    )
    reason = "only 1 case(s) rated by both the judge and the humans (need 2)"
    for key in (
        "spearman",
        "kendall",
        "kappa",
        "kappa_quadratic",
        "alpha",
        "pass_kappa",
        "auc",
        "accuracy",
        "balanced_accuracy",
    ):
        assert entry[key] == {"estimate": None, "reason": reason}


def test_kappa_of_a_judge_off_the_scale_says_why(judges):
    judge = judge_result(judges["j"], 0.95, seed=0, n_listed=3)
    assert judge.kappa == Estimate.undefined("the judge's scores do not all lie on the metric's scale (one of 0, 1)")
    assert judge.kappa_quadratic.reason == "quadratic weighting applies to ordinal scales only"


def test_the_undefined_reasons():
    c = compared(scores=1 - SCORES, raters={"j": {"higher_is_better": False}}, n_boot=0)["j"]
    assert (
        undefined_reason(c, "kappa") == "the judge's scores run opposite to the human scale (higher_is_better = false)"
    )
    assert undefined_reason(c, "auc") == "every case has the same human verdict (all pass or all fail): AUC needs both"
    assert undefined_reason(c, "spearman").startswith("constant scores")
    assert undefined_reason(c, "other") == "undefined on this sample"
    continuous = compared(metric={"scale": "continuous", "range": [0, 1], "human_pass": 0.5}, n_boot=0)["j"]
    assert undefined_reason(continuous, "kappa").startswith("kappa needs categories")
    assert undefined_reason(continuous, "alpha").startswith("the judge is not declared to rate on the metric's scale")


def test_without_a_threshold_the_pass_figures_say_why():
    rule = Rule("default", human_pass=1, binary=True)
    c = compared(rule, scores=SCORES * 10)["j"]  # scores from 0 to 10: no default threshold
    entry = judge_result(c, 0.95, seed=0, n_listed=3).to_dict()
    reason = f"no pass threshold: the judge is not on the metric's scale and {rule.describe()}"
    assert entry["pass_kappa"]["estimate"] is None and entry["pass_kappa"]["reason"] == reason
    assert entry["accuracy"] == entry["balanced_accuracy"] == {"estimate": None, "reason": reason}
    assert entry["pass_threshold"]["threshold"] is None
