"""The review commands' typed documents (GateResult, AuditResult): they carry their schema_version first;
their tables equal the ones the old key-name walk gave; their parts write the dicts of the --json documents
(the Estimate of each figure: tests/base/test_estimates.py)."""

from __future__ import annotations

import pandas as pd
import pytest

import calibrate
from calibrate.base.estimates import Estimate
from calibrate.base.results import FRAME_COLUMNS, Result, versioned
from calibrate.review.audit import audit_judges
from calibrate.review.gate import GateRules, run_gate
from calibrate.review.results import AuditResult, AuditSide, BottomDecile, GateCheck, GateResult


@pytest.fixture(scope="module")
def demo():
    return calibrate.load_campaign(calibrate.demo_campaign_path())


@pytest.fixture(scope="module")
def documents(demo):
    return {
        "gate": run_gate(demo, GateRules(min_kappa=0.3), judges=["Olz-gpt4o", "TREMA-all"], n_boot=50),
        "audit": audit_judges(demo, metric="relevance", old="Olz-gpt4o", new="RMITIR-GPT4o", n_boot=50),
    }


@pytest.mark.parametrize("name", ["gate", "audit"])
def test_a_typed_document_carries_its_schema_version_first(documents, name):
    doc = documents[name]
    assert next(iter(doc.to_dict())) == "schema_version" and doc["schema_version"] == type(doc).SCHEMA_VERSION == 1
    assert "schema_version" not in doc.to_dict(schema_version=False)
    assert versioned(doc) == doc.to_dict()
    assert list(versioned(Result({"campaign": "c"}))) == ["schema_version", "campaign"]


@pytest.mark.parametrize("name", ["gate", "audit"])
def test_a_typed_documents_table_is_the_old_key_name_walks(documents, name):
    doc = documents[name]
    new, old = doc.to_frame(), Result(doc.to_dict(schema_version=False)).to_frame()
    assert list(new.columns) == list(FRAME_COLUMNS) and len(new) > 3
    assert new.dtypes.to_dict() == old.dtypes.to_dict()
    key = ["metric", "judge", "statistic"]
    pd.testing.assert_frame_equal(
        new.sort_values(key).reset_index(drop=True), old.sort_values(key).reset_index(drop=True)
    )


def test_the_gate_reads_attributes(documents):
    gate = documents["gate"]
    assert gate.passed == gate["passed"] == all(c.passed for c in gate.checks)
    check = gate.checks[0]
    assert check.spearman.lower_bound == gate["checks"][0]["spearman"]["lower_bound"]


RATE = Estimate.interval(0.2, 0.1, 0.35, "Wilson")


@pytest.mark.parametrize("higher_is_better", [True, False])
def test_a_bottom_decile_reads_back_what_it_writes(higher_is_better):
    decile = BottomDecile(6, 0.31, higher_is_better, RATE, 0.4)
    written = decile.to_dict()
    assert list(written) == [
        "n",
        "score_at_most" if higher_is_better else "score_at_least",
        "human_pass_rate",
        "mean_human_value",
    ]
    assert BottomDecile.from_dict(written) == decile


def test_a_gate_check_that_failed_before_any_statistic_has_no_figures():
    check = GateCheck("m", None, False, ("no judge scores on m",))
    assert check.to_dict() == {"metric": "m", "judge": None, "passed": False, "reasons": ["no judge scores on m"]}
    assert list(check.figures()) == []


def test_a_gate_checks_figures_are_named_by_statistic():
    check = GateCheck(
        "m",
        "j",
        True,
        (),
        n=60,
        auc=RATE,
        kappa=None,
        false_pass_rate=RATE,
        bottom_decile=BottomDecile(6, 0.3, True, RATE, 0.4),
    )
    written = check.to_dict()
    assert written["kappa"] == {} and written["auc"] == RATE.to_dict() and written["bottom_decile"]["n"] == 6
    assert [(f.statistic, f.n) for f in check.figures()] == [
        ("auc", 60),
        ("false_pass_rate", 60),
        ("bottom_decile.human_pass_rate", 6),
    ]
    doc = GateResult("c", True, ("rule",), (), (check,), 0.95, 200, {"k": [1]})
    assert list(doc.to_dict()) == [
        "schema_version",
        "campaign",
        "passed",
        "rules",
        "defaults",
        "checks",
        "confidence",
        "n_boot",
        "manifest",
    ]
    assert len(doc.to_frame()) == 3


def test_an_audit_on_too_few_cases_writes_only_its_decision():
    decision = {"passed": False, "exit_code": 1, "reason": "fewer than two cases both judges rated"}
    doc = AuditResult("c", "m", "auc", 0.02, 1, False, {"kind": "fixed"}, decision)
    assert doc.exit_code == 1 and list(doc.figures()) == []
    assert list(doc.to_dict(schema_version=False)) == [
        "campaign",
        "metric",
        "statistic",
        "margin",
        "n",
        "weighted",
        "rule",
        "decision",
    ]


def test_an_audit_side_reads_a_judge_result_and_writes_it_back():
    result = {
        "judge": "j",
        "rater": "j",
        "run_id": None,
        "family": "gpt",
        "model": "m",
        "n": 40,
        "pass_threshold": {"value": 0.5},
        "auc": RATE.to_dict(),
        "kappa": RATE.to_dict(),
        "other": 1,
    }
    side = AuditSide.from_result(result, ("auc", "spearman"))
    assert list(side.statistics) == ["auc"]
    assert side.to_dict() == {k: v for k, v in result.items() if k not in ("kappa", "other")}
