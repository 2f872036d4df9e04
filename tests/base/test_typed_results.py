"""Typed results: the typed documents carry their schema_version first; their tables equal the ones the
old key-name walk gave (the Estimate of each figure: tests/base/test_estimates.py)."""

from __future__ import annotations

import pandas as pd
import pytest

import calibrate
from calibrate.base.results import FRAME_COLUMNS, Result, versioned
from calibrate.review.audit import audit_judges
from calibrate.review.gate import GateRules, run_gate


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
