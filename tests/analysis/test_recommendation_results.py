"""The typed recommendations (calibrate/analysis/recommendation_results.py): their documents written byte for
byte as the dicts were (key order included, a judge with too few cases in its own order), read back by
from_dict, their table built from the fields and equal to the old key-name walk's, their figures Estimates."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pandas as pd
import pytest

import calibrate
from calibrate.analysis.recommendation_parts import rate_counts
from calibrate.analysis.recommendation_results import (
    TOO_FEW_ORDER,
    Recommendation,
    ThresholdsResult,
    recommendation_dicts,
)
from calibrate.base.estimates import Estimate
from calibrate.base.results import FRAME_COLUMNS, Result

#: the keys of a judge with a threshold under a constraint rule, in the order the documents have written them
AT_A_THRESHOLD = [
    "metric",
    "judge",
    "rule",
    "pass_rule",
    "n",
    "warnings",
    "n_human_pass",
    "n_human_fail",
    "separation",
    "threshold",
    "false_pass_rate",
    "false_pass_rate_ci",
    "false_pass_rate_detail",
    "false_fail_rate",
    "false_fail_rate_ci",
    "false_fail_rate_detail",
    "accuracy",
    "lowest_false_pass",
    "threshold_ci",
    "threshold_ci_method",
    "threshold_ci_resamples_without_threshold",
    "deepeval_default",
    "current",
    "verdict",
]


@pytest.fixture(scope="module")
def demo():
    return calibrate.load_campaign(calibrate.demo_campaign_path())


@pytest.fixture(scope="module")
def doc(demo) -> ThresholdsResult:
    return calibrate.thresholds(demo, n_boot=50, current=0.5)


@pytest.fixture(scope="module")
def small():
    """Ten cases two judges rated, and a judge that rated one of them only (too few to compare)."""
    ids = [f"c{i}" for i in range(10)]
    human = [0, 0, 0, 1, 0, 1, 0, 1, 1, 1]
    scores = [0.1, 0.2, 0.3, 0.35, 0.6, 0.4, 0.8, 0.7, 0.9, 0.95]
    rows = [(c, "h", "human", h) for c, h in zip(ids, human)]
    rows += [(c, "j", "judge", s) for c, s in zip(ids, scores)] + [("c0", "one", "judge", 0.5)]
    frame = pd.DataFrame(rows, columns=["case_id", "rater", "rater_kind", "value"]).assign(metric="m")
    config = {"name": "t", "metrics": {"m": {"scale": "binary", "max_false_pass": 0.2}}}
    return calibrate.campaign_from_frames(config, frame)


def test_the_document_is_written_and_read_back_byte_for_byte(doc):
    written = doc.to_dict()
    assert list(written) == ["schema_version", "campaign", "verdicts", "recommendations", "manifest"]
    assert len(written["recommendations"]) == len(doc.recommendations) == 9
    for rec, entry in zip(doc.recommendations, written["recommendations"]):
        back = Recommendation.from_dict(json.loads(json.dumps(entry)))
        assert json.dumps(back.to_dict()) == json.dumps(entry) == json.dumps(rec.to_dict())
        assert back == rec and back.order == tuple(entry) and rec.order == ()
    at_threshold = doc.recommendation("relevance", "Olz-gpt4o")
    assert list(at_threshold) == AT_A_THRESHOLD  # the order the builder's dicts had


def test_a_judge_on_too_few_cases_writes_its_own_order(small):
    doc = calibrate.thresholds(small, n_boot=40, current=0.5)
    few, compared = doc.recommendation("m", "one"), doc.recommendation("m", "j")
    assert few.order == TOO_FEW_ORDER and list(few) == list(TOO_FEW_ORDER)
    assert few.threshold_ci_resamples_without_threshold is None and few.false_pass_rate == Estimate.undefined(
        "only 1 case(s) rated by both the judge and the humans (need 2)"
    )
    assert list(compared)[:9] == AT_A_THRESHOLD[:9] and compared.order == ()
    for rec in doc.recommendations:
        entry = json.loads(json.dumps(rec.to_dict()))
        assert json.dumps(Recommendation.from_dict(entry).to_dict()) == json.dumps(rec.to_dict())


def test_the_table_is_built_from_the_fields_and_is_the_old_key_name_walks(doc, small):
    for document in (doc, calibrate.thresholds(small, n_boot=40, current=0.5)):
        new, old = document.to_frame(), Result(document.to_dict(schema_version=False)).to_frame()
        assert list(new.columns) == list(FRAME_COLUMNS) and len(new) == len(old) > 10
        key = ["metric", "judge", "slice", "statistic"]
        pd.testing.assert_frame_equal(
            new.sort_values(key, kind="stable").reset_index(drop=True),
            old.sort_values(key, kind="stable").reset_index(drop=True),
        )
    table = doc.to_frame()
    rec = doc.recommendation("relevance", "Olz-gpt4o")
    row = table[(table.judge == rec.judge) & (table.statistic == "false_pass_rate")].iloc[0]
    assert (row.estimate, row.ci_low, row.ci_high, row.n) == (
        rec.false_pass_rate.value,
        rec.false_pass_rate.ci_low,
        rec.false_pass_rate.ci_high,
        rec.false_pass_rate.n,
    )
    threshold = table[(table.judge == rec.judge) & (table.statistic == "threshold")].iloc[0]
    assert (threshold.estimate, threshold.method, threshold.n) == (rec.threshold, rec.threshold_ci_method, rec.n)


def test_the_figures_are_estimates_read_by_attribute(doc, demo):
    rec = doc.recommendation("relevance", "Olz-gpt4o")
    figures = [rec.false_pass_rate, rec.false_fail_rate, rec.accuracy, rec.deepeval_default.false_pass_rate]
    figures += [rec.current[0].false_fail_rate, rec.threshold_figure()]
    assert all(isinstance(f, Estimate) for f in figures)
    assert rec["false_pass_rate"] == rec.false_pass_rate.value and rec.false_pass_rate.method == "Wilson score"
    assert rec["false_pass_rate_ci"] == [rec.false_pass_rate.ci_low, rec.false_pass_rate.ci_high]
    assert rec["false_pass_rate_detail"] == rec.false_pass_rate.to_dict()
    assert rec.current[0].threshold == 0.5 and rec.current[0].source == "given"
    assert rate_counts(rec.false_pass_rate) == (rec.false_pass_rate.extra["k"], rec.n_human_fail)
    stats = calibrate.compute_stats(demo, judges=["Olz-gpt4o"], n_boot=50, current=0.5)
    (same,) = stats.recommendations
    assert isinstance(same, Recommendation) and same.to_dict() == rec.to_dict()
    with pytest.raises(KeyError, match="no recommendation for 'nobody' on 'relevance'; there are: relevance/"):
        doc.recommendation("relevance", "nobody")


def test_a_key_no_recommendation_writes_is_refused_by_name(doc):
    entry = {**doc.to_dict()["recommendations"][0], "cost": 1.0}
    with pytest.raises(ValueError, match=r"^cost: not a key of a recommendation \(its keys: metric, judge, rule,"):
        Recommendation.from_dict(entry)


def test_a_recommendation_not_yet_judged_writes_no_verdict(doc):
    rec = dataclasses.replace(doc.recommendations[0], verdict=None)
    assert "verdict" not in rec.to_dict() and list(rec.to_dict()) == list(doc.recommendations[0])[:-1]


def test_the_report_takes_typed_recommendations_or_their_dicts(doc):
    typed = recommendation_dicts(doc.recommendations)
    assert typed == doc.to_dict()["recommendations"] and all(type(r) is dict for r in typed)
    read = recommendation_dicts(doc["recommendations"])
    assert read == typed and np.all([a is not b for a, b in zip(read, doc["recommendations"])])
