"""calibrate escalate (calibrate.analysis.escalate): a campaign in, the band in which the judge decides alone
out; the demo's judges, a planted band, design-weighted labels, a judge whose lower score is better, the
human ceiling and the errors."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import calibrate
from calibrate.analysis.escalate import EscalateResult, escalate
from calibrate.campaign import campaign_from_frames
from tests.conftest import run_cli

SCHEMA = Path(__file__).resolve().parents[2] / "docs" / "reference" / "schemas" / "escalate.json"


@pytest.fixture(scope="module")
def demo():
    return calibrate.load_campaign(calibrate.demo_campaign_path())


def _planted(n=3000, *, seed=0, higher_is_better=True, annotators=1, flip=0.0, sample=False):
    """A binary metric and a 0-1 judge that is right on every case scored below 0.3 or above 0.7 and a
    coin flip between: the band (0.3, 0.7) is the one to recover. With ``sample``, the humans label a
    targeted sample only: each case within 0.25 of 0.5 with probability 0.8, each other with 0.2."""
    rng = np.random.default_rng(seed)
    score = rng.random(n).round(3)
    truth = np.where(np.abs(score - 0.5) > 0.2, score >= 0.5, rng.random(n) < 0.5)
    ids = np.array([f"c{i:05d}" for i in range(n)])
    value = score if higher_is_better else 1 - score
    rows = [pd.DataFrame({"case_id": ids, "metric": "ok", "rater": "j", "rater_kind": "judge", "value": value})]
    near = np.abs(score - 0.5) < 0.25
    pi = np.where(near, 0.8, 0.2)
    drawn = rng.random(n) < pi if sample else np.ones(n, dtype=bool)
    for a in range(annotators):
        label = np.where(rng.random(n) < flip, ~truth, truth) if a else truth
        rows.append(
            pd.DataFrame(
                {
                    "case_id": ids[drawn],
                    "metric": "ok",
                    "rater": f"h{a}",
                    "rater_kind": "human",
                    "value": label[drawn].astype(int),
                }
            )
        )
    config = {
        "name": "planted",
        "metrics": {"ok": {"scale": "binary"}},
        "raters": {"j": {"higher_is_better": higher_is_better}},
    }
    campaign = campaign_from_frames(config, pd.concat(rows), [{"case_id": c} for c in ids])
    if sample:
        campaign.samples["near"] = {
            "design": {"strategy": "threshold"},
            "case_ids": ids[drawn].tolist(),
            "strata": ["near" if x else "far" for x in near[drawn]],
            "inclusion_probability": pi[drawn],
        }
    return campaign


def test_the_demo_judges_bands(demo):
    doc = escalate(demo, metric="relevance", judge="NISTRetrieval-instruct0", agreement=0.9)
    assert isinstance(doc, EscalateResult)
    assert (doc.pass_at, doc.fail_below, doc.n_labels) == (2.5, 1.0, 4423)  # it fails its 0s alone
    assert doc.coverage.value == pytest.approx(1115 / 4423) and doc.coverage.ci_low < doc.coverage.value
    assert doc.agreement.value == pytest.approx(1 - 55 / 1115) and doc.agreement.lower_bound > 0.9
    assert doc.method.endswith("Clopper-Pearson (exact binomial)") and not doc.weighted
    assert doc.threshold == 2 and "human_pass = 2" in doc.threshold_source
    assert doc.human_ceiling.agreement is None and "1 annotator" in doc.human_ceiling.text
    assert doc.more_labels.labels is None and "27.6%" in doc.more_labels.text
    none = escalate(demo, metric="relevance", judge="Olz-gpt4o", agreement=0.9)
    assert none.pass_at is None and none.fail_below is None and none.coverage.value == 0
    assert none.agreement.value is None and "no band" in none.text
    assert escalate(demo, metric="relevance", judge="Olz-gpt4o", agreement=0.85).pass_at == 3


def test_the_document_is_its_json_and_meets_its_schema(demo):
    doc = escalate(demo, metric="relevance", judge="NISTRetrieval-instruct0", agreement=0.9, confidence=0.9)
    body = json.loads(json.dumps(doc.to_dict()))
    for key in ("pass_at", "fail_below", "coverage", "agreement", "target", "confidence", "method", "n_labels"):
        assert key in body
    assert body["target"] == 0.9 and body["confidence"] == 0.9 and body["manifest"]["command"] == "escalate"
    assert doc["pass_at"] == 2.5 and len(body["candidates"]) == 2
    frame = doc.to_frame()
    assert frame["statistic"].tolist() == ["coverage", "agreement"]
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.validate(body, json.loads(SCHEMA.read_text()))


def test_the_planted_band_is_recovered():
    doc = escalate(_planted(), metric="ok", judge="j", agreement=0.99)
    assert 0.69 <= doc.pass_at <= 0.705 and 0.295 <= doc.fail_below <= 0.31
    assert doc.coverage.value == pytest.approx(0.6, abs=0.02)
    # a lower target lets the band reach into the coin flips: at 0.95, about 0.033 on each side
    wider = escalate(_planted(), metric="ok", judge="j", agreement=0.95)
    assert 0.66 <= wider.pass_at < doc.pass_at and doc.fail_below < wider.fail_below <= 0.34
    assert doc.threshold == 0.5 and "DeepEval's 0.5" in doc.threshold_source


def test_a_judge_whose_lower_score_is_better_gets_its_band_in_its_units():
    doc = escalate(_planted(higher_is_better=False), metric="ok", judge="j", agreement=0.99, threshold=0.5)
    assert 0.295 <= doc.pass_at <= 0.31 and 0.69 <= doc.fail_below <= 0.705
    assert doc.pass_rule.startswith("pass when score <= ") and "fail when score > " in doc.pass_rule


def test_labels_of_a_targeted_sample_are_weighted_with_the_betting_test():
    doc = escalate(_planted(sample=True), metric="ok", judge="j", agreement=0.98)
    assert doc.weighted and "betting" in doc.method and doc.n_labels < doc.n_scored
    assert 0.69 <= doc.pass_at <= 0.705 and 0.295 <= doc.fail_below <= 0.31


def test_a_target_above_the_annotators_own_agreement_is_refused():
    campaign = _planted(n=600, annotators=2, flip=0.1)
    with pytest.raises(ValueError, match=r"agreement=0.95: the target is above what the humans reach"):
        escalate(campaign, metric="ok", judge="j", agreement=0.95)
    doc = escalate(campaign, metric="ok", judge="j", agreement=0.8)
    assert doc.human_ceiling.agreement.value == pytest.approx(0.9, abs=0.04)


def test_more_labels_are_estimated_for_the_next_band():
    doc = escalate(_planted(n=400, seed=3), metric="ok", judge="j", agreement=0.8)
    more = doc.more_labels
    assert more.pass_at is not None and more.coverage > doc.coverage.value
    assert more.labels is None or more.labels > 0


def test_bad_input_is_a_clear_error(demo):
    with pytest.raises(ValueError, match="unknown metric nope"):
        escalate(demo, metric="nope", judge="Olz-gpt4o", agreement=0.9)
    with pytest.raises(ValueError, match="judge nobody did not rate relevance"):
        escalate(demo, metric="relevance", judge="nobody", agreement=0.9)
    for bad in (0, 1, 1.5, -0.1):
        with pytest.raises(ValueError, match=f"agreement={bad}"):
            escalate(demo, metric="relevance", judge="Olz-gpt4o", agreement=bad)
        with pytest.raises(ValueError, match=f"confidence={bad}"):
            escalate(demo, metric="relevance", judge="Olz-gpt4o", agreement=0.9, confidence=bad)
    unlabelled = campaign_from_frames(
        {"name": "n", "metrics": {"f": {"scale": "binary"}}},
        pd.DataFrame(
            {
                "case_id": ["a", "b", "c"],
                "metric": "f",
                "rater": ["j", "j", "h"],
                "rater_kind": ["judge", "judge", "human"],
                "value": [0.2, 0.9, 1],
            }
        ),
    )
    with pytest.raises(ValueError, match="no human label of f among the 2 cases judge j scored"):
        escalate(unlabelled, metric="f", judge="j", agreement=0.9)
    ordinal = campaign_from_frames(
        {"name": "n", "metrics": {"f": {"scale": "ordinal", "levels": [0, 1, 2], "human_pass": 1}}},
        pd.DataFrame(
            {
                "case_id": ["a", "b", "a", "b"],
                "metric": "f",
                "rater": ["j", "j", "h", "h"],
                "rater_kind": ["judge", "judge", "human", "human"],
                "value": [7.5, 9.0, 1, 0],
            }
        ),
    )
    with pytest.raises(ValueError, match=r"no pass threshold on f .* give the threshold it passes at \(threshold\)"):
        escalate(ordinal, metric="f", judge="j", agreement=0.9)
    assert escalate(ordinal, metric="f", judge="j", agreement=0.9, threshold=8).threshold_source == "given"


def test_the_command_line(small_campaign):
    result = run_cli(
        "escalate", small_campaign, "--metric", "faithfulness", "--judge", "judge-a", "--agreement", "0.8", "--json"
    )
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["target"] == 0.8 and doc["n_labels"] == 60 and doc["human_ceiling"]["annotators"] == 2
    assert doc["human_ceiling"]["agreement"]["estimate"] == 1.0  # ann2 copies ann1
    table = run_cli("escalate", small_campaign, "--metric", "faithfulness", "--judge", "judge-a", "--agreement", "0.8")
    assert (
        table.returncode == 0
        and "candidate bands, most confident first" in table.stdout
        and "fail below" in table.stdout
        and "coverage:" in table.stdout
    )
    bad = run_cli("escalate", small_campaign, "--metric", "faithfulness", "--judge", "judge-a", "--agreement", "1")
    assert bad.returncode == 2 and "--agreement" in bad.stderr
    no_threshold = run_cli(
        "escalate", small_campaign, "--metric", "faithfulness", "--judge", "nobody", "--agreement", "0.8"
    )
    assert no_threshold.returncode == 2 and "judge nobody did not rate faithfulness" in no_threshold.stderr
