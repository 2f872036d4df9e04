"""A judge comparison has one state: two cases or more. A judge rated with the humans on fewer is a
TooFewCases, and the documents give its figures as undefined, with the reason."""

import pandas as pd
import pytest

from calibrate import campaign_from_frames, compute_stats, recommend_thresholds
from calibrate.analysis.judge_comparison import JudgeComparison, TooFewCases
from calibrate.analysis.metric_comparisons import judge_comparisons
from calibrate.analysis.rules import default_rule

CONFIG = {"name": "few", "metrics": {"m": {"scale": "binary"}}, "raters": {}}


def two_judges():
    """Ten labelled cases; judge ``all`` rates every one, judge ``one`` a single one."""
    ids = [f"c{i}" for i in range(10)]
    rows = [(c, "h", "human", i % 2) for i, c in enumerate(ids)]
    rows += [(c, "all", "judge", 0.1 * i) for i, c in enumerate(ids)] + [("c3", "one", "judge", 0.9)]
    frame = pd.DataFrame(rows, columns=["case_id", "rater", "rater_kind", "value"]).assign(metric="m")
    return campaign_from_frames(CONFIG, frame)


def test_a_judge_on_fewer_than_two_cases_is_too_few_cases_not_a_comparison():
    campaign = two_judges()
    compared = judge_comparisons(campaign, "m", None, default_rule(campaign.metrics["m"]))
    kinds = {j.judge.name: type(j) for j in compared.judges}
    assert kinds == {"all": JudgeComparison, "one": TooFewCases}
    assert [c.judge.name for c in compared.comparisons] == ["all"]
    too_few = next(j for j in compared.judges if isinstance(j, TooFewCases))
    with pytest.raises(ValueError, match=r"judge one: only 1 case\(s\) rated by both"):
        JudgeComparison(too_few.pairing, default_rule(campaign.metrics["m"]))


def test_the_documents_give_a_too_few_judge_undefined_figures_with_the_reason():
    campaign = two_judges()
    judges = {j["judge"]: j for j in compute_stats(campaign, n_boot=50)["metrics"][0]["judges"]}
    assert judges["all"]["spearman"]["estimate"] is not None
    assert judges["one"]["n"] == 1 and judges["one"]["curve"] == []
    assert judges["one"]["kappa"] == {"estimate": None, "reason": too_few_reason(1)}
    rule = default_rule(campaign.metrics["m"])
    recs = {r["judge"]: r for r in recommend_thresholds(campaign, metric="m", rule=rule, n_boot=50)["recommendations"]}
    assert recs["one"]["threshold"] is None and recs["one"]["warnings"] == [too_few_reason(1) + ": no recommendation"]


def too_few_reason(n: int) -> str:
    return f"only {n} case(s) rated by both the judge and the humans (need 2)"
