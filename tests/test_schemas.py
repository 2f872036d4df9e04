"""The JSON schemas in docs/reference/schemas/ are the ones the result classes give, and each describes the
document its command prints (checked on the demo with jsonschema, where installed)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_the_schemas_are_the_ones_the_classes_give():
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "write_schemas.py"), "--check"], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr


def test_the_gate_document_meets_its_schema():
    jsonschema = pytest.importorskip("jsonschema")
    import calibrate
    from calibrate.review.gate import GateRules, run_gate

    campaign = calibrate.load_campaign(calibrate.demo_campaign_path())
    doc = run_gate(campaign, GateRules(min_kappa=0.3), judges=["Olz-gpt4o"], n_boot=50)
    schema = json.loads((ROOT / "docs" / "reference" / "schemas" / "gate.json").read_text())
    jsonschema.validate(json.loads(json.dumps(doc.to_dict())), schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**doc.to_dict(), "schema_version": doc.SCHEMA_VERSION + 1}, schema)


def test_the_statistics_document_meets_its_schema():
    jsonschema = pytest.importorskip("jsonschema")
    import calibrate

    campaign = calibrate.load_campaign(calibrate.demo_campaign_path())
    doc = calibrate.compute_stats(campaign, judges=["Olz-gpt4o"], n_boot=50, by="question_type")
    schema = json.loads((ROOT / "docs" / "reference" / "schemas" / "stats.json").read_text())
    assert "recommendations" not in schema["properties"]
    jsonschema.validate(json.loads(json.dumps(doc.to_dict())), schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**doc.to_dict(), "schema_version": doc.SCHEMA_VERSION + 1}, schema)
    broken = json.loads(json.dumps(doc.to_dict()))
    del broken["metrics"][0]["judges"][0]["auc"]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, schema)


def test_the_thresholds_document_meets_its_schema():
    jsonschema = pytest.importorskip("jsonschema")
    import calibrate

    campaign = calibrate.load_campaign(calibrate.demo_campaign_path())
    doc = calibrate.thresholds(campaign, n_boot=50, current=0.5)
    schema = json.loads((ROOT / "docs" / "reference" / "schemas" / "thresholds.json").read_text())
    jsonschema.validate(json.loads(json.dumps(doc.to_dict())), schema)
    one = calibrate.recommend_thresholds(
        campaign, metric="relevance", rule=calibrate.Rule("constraint", max_false_pass=0.1), n_boot=0
    )
    assert "verdicts" not in one
    jsonschema.validate(json.loads(json.dumps(one.to_dict())), schema)
    broken = json.loads(json.dumps(doc.to_dict()))
    del broken["recommendations"][0]["false_pass_rate_ci"]
    with pytest.raises(jsonschema.ValidationError, match="'false_pass_rate_ci' is a required property"):
        jsonschema.validate(broken, schema)
    broken["recommendations"][0]["false_pass_rate_ci"] = [0.1]
    with pytest.raises(jsonschema.ValidationError, match="is too short"):
        jsonschema.validate(broken, schema)
