"""The typed statistics document (calibrate/analysis/results.py): its schema_version first, its table the
one the old key-name walk gave, its figures read as attributes, and the gate deciding on those figures."""

from __future__ import annotations

import pandas as pd
import pytest

import calibrate
from calibrate.base.results import FRAME_COLUMNS, Result
from calibrate.review.gate import GateRules, run_gate

JUDGES = ["Olz-gpt4o", "TREMA-all"]


@pytest.fixture(scope="module")
def demo():
    return calibrate.load_campaign(calibrate.demo_campaign_path())


@pytest.fixture(scope="module")
def stats(demo):
    return calibrate.compute_stats(demo, judges=JUDGES, n_boot=50, by="question_type")


def test_the_statistics_carry_their_schema_version_first(stats):
    assert next(iter(stats.to_dict())) == "schema_version"
    assert stats["schema_version"] == type(stats).SCHEMA_VERSION == 1


def test_the_statistics_table_is_the_old_key_name_walks(stats):
    new, old = stats.to_frame(), Result(stats.to_dict(schema_version=False)).to_frame()
    assert list(new.columns) == list(FRAME_COLUMNS) and len(new) > 3
    assert new.dtypes.to_dict() == old.dtypes.to_dict()
    key = ["metric", "judge", "slice", "statistic"]
    pd.testing.assert_frame_equal(
        new.sort_values(key).reset_index(drop=True), old.sort_values(key).reset_index(drop=True)
    )


def test_the_statistics_read_attributes(stats):
    metric, judge = stats.metrics[0], stats.metrics[0].judges[0]
    as_dict = stats["metrics"][0]["judges"][0]
    assert judge.auc.value == as_dict["auc"]["estimate"]
    assert judge.spearman.lower_bound == as_dict["spearman"]["lower_bound"]
    assert metric.judge(judge.judge) is judge and stats.metric(metric.metric) is metric
    assert metric.slices and {j.judge for j in metric.slices[0].judges} <= set(JUDGES)
    assert {r["judge"] for r in stats.recommendations} == set(JUDGES)
    assert "recommendations" not in stats.to_dict()
    with pytest.raises(KeyError, match="no judge 'nobody'"):
        metric.judge("nobody")


def test_the_gate_decides_on_the_statistics_figures(demo):
    gate = run_gate(demo, GateRules(min_kappa=0.3), judges=JUDGES, n_boot=50)
    stats = calibrate.compute_stats(demo, metrics=["relevance"], judges=JUDGES, n_boot=50, n_listed=0, curves=False)
    for check in gate.checks:
        judge = stats.metric(check.metric).judge(check.judge)
        assert (check.auc, check.spearman, check.n) == (judge.auc, judge.spearman, judge.n)
