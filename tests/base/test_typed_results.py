"""Typed results: an Estimate writes the figure dict it was read from, byte for byte; the typed documents
carry their schema_version first; their tables equal the ones the old key-name walk gave."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

import calibrate
from calibrate.base.estimates import Estimate
from calibrate.base.results import FRAME_COLUMNS, Result, versioned
from calibrate.review.audit import audit_judges
from calibrate.review.gate import GateRules, run_gate

finite = st.floats(allow_nan=False, allow_infinity=False, width=64)
maybe = st.one_of(st.none(), finite)
text = st.one_of(st.none(), st.text(max_size=8))
extra_keys = st.sampled_from(["chance_p", "k", "threshold", "rule", "upper_bound", "weighted", "old", "new"])


@st.composite
def figures(draw) -> dict:
    """A figure dict as calibrate writes them: undefined, or a value with its interval, then other keys."""
    if draw(st.booleans()):
        figure = {"estimate": None, "reason": draw(st.text(min_size=1, max_size=8))}
    else:
        low, high = draw(maybe), draw(maybe)
        figure = Estimate.interval(draw(finite), low, high, draw(st.text(max_size=8)), draw(text)).to_dict()
    for key in draw(st.lists(st.sampled_from(["n", "lower_bound", "lower_bound_method"]), unique=True)):
        figure[key] = draw(st.integers(0, 10**6)) if key == "n" else draw(maybe if key == "lower_bound" else text)
    for key in draw(st.lists(extra_keys, unique=True)):
        figure[key] = draw(st.one_of(maybe, st.integers(), text, st.booleans()))
    return figure


@given(figures())
def test_an_estimate_writes_the_figure_it_read_byte_for_byte(figure):
    estimate = Estimate.from_dict(figure)
    assert json.dumps(estimate.to_dict()) == json.dumps(figure)
    assert Estimate.from_dict(estimate.to_dict()) == estimate


@given(finite, maybe, maybe, st.text(max_size=8), text)
def test_an_estimate_made_reads_back_the_same(value, low, high, method, reason):
    made = Estimate.interval(value, low, high, method, reason)
    assert Estimate.from_dict(made.to_dict()) == made
    assert made.value == value and (made.ci_low is None) == (low is None or not math.isfinite(low))


def test_extra_keys_must_be_written():
    with pytest.raises(ValueError, match="chance_p"):
        Estimate(0.5, keys=("estimate",), extra={"chance_p": 0.1})


@pytest.fixture(scope="module")
def demo():
    return calibrate.load_campaign(calibrate.demo_campaign_path())


@pytest.fixture(scope="module")
def documents(demo):
    return {
        "gate": run_gate(demo, GateRules(min_kappa=0.3), judges=["Olz-gpt4o", "TREMA-all"], n_boot=50),
        "audit": audit_judges(demo, metric="relevance", old="Olz-gpt4o", new="RMITIR-GPT4o", n_boot=50),
        "stats": calibrate.compute_stats(demo, judges=["Olz-gpt4o", "TREMA-all"], n_boot=50, by="question_type"),
    }


@pytest.mark.parametrize("name", ["gate", "audit", "stats"])
def test_a_typed_document_carries_its_schema_version_first(documents, name):
    doc = documents[name]
    assert next(iter(doc.to_dict())) == "schema_version" and doc["schema_version"] == type(doc).SCHEMA_VERSION == 1
    assert "schema_version" not in doc.to_dict(schema_version=False)
    assert versioned(doc) == doc.to_dict()
    assert list(versioned(Result({"campaign": "c"}))) == ["schema_version", "campaign"]


@pytest.mark.parametrize("name", ["gate", "audit", "stats"])
def test_a_typed_documents_table_is_the_old_key_name_walks(documents, name):
    doc = documents[name]
    new, old = doc.to_frame(), Result(doc.to_dict(schema_version=False)).to_frame()
    assert list(new.columns) == list(FRAME_COLUMNS) and len(new) > 3
    assert new.dtypes.to_dict() == old.dtypes.to_dict()
    key = ["metric", "judge", "slice", "statistic"]
    pd.testing.assert_frame_equal(
        new.sort_values(key).reset_index(drop=True), old.sort_values(key).reset_index(drop=True)
    )


def test_the_gate_reads_attributes(documents):
    gate = documents["gate"]
    assert gate.passed == gate["passed"] == all(c.passed for c in gate.checks)
    check = gate.checks[0]
    assert check.spearman.lower_bound == gate["checks"][0]["spearman"]["lower_bound"]


def test_the_statistics_read_attributes(documents):
    stats = documents["stats"]
    metric, judge = stats.metrics[0], stats.metrics[0].judges[0]
    as_dict = stats["metrics"][0]["judges"][0]
    assert (
        judge.auc.value == as_dict["auc"]["estimate"]
        and judge.spearman.lower_bound == as_dict["spearman"]["lower_bound"]
    )
    assert metric.judge(judge.judge) is judge and stats.metric(metric.metric) is metric
    assert metric.slices and {j.judge for j in metric.slices[0].judges} <= {"Olz-gpt4o", "TREMA-all"}
    assert {r["judge"] for r in stats.recommendations} == {"Olz-gpt4o", "TREMA-all"}
    assert "recommendations" not in stats.to_dict()
    with pytest.raises(KeyError, match="no judge 'nobody'"):
        metric.judge("nobody")


def test_the_gate_decides_on_the_statistics_figures(demo, documents):
    gate = documents["gate"]
    stats = calibrate.compute_stats(
        demo, metrics=["relevance"], judges=["Olz-gpt4o", "TREMA-all"], n_boot=50, n_listed=0, curves=False
    )
    for check in gate.checks:
        judge = stats.metric(check.metric).judge(check.judge)
        assert (check.auc, check.spearman, check.n) == (judge.auc, judge.spearman, judge.n)
