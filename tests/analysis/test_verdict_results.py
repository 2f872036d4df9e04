"""The typed verdicts: each writes the dict the documents held before, byte for byte (key order, and the keys
written only in some cases), reads it back, and gives its parts as attributes; the steps of a judge's
verdict keep to what its status promises, on any recommendation."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import calibrate
from calibrate.analysis.metric_verdicts import metric_verdict
from calibrate.analysis.recommendations import thresholds
from calibrate.analysis.verdict_results import (
    BestJudge,
    ChanceLabels,
    CurrentLine,
    HumanCeiling,
    JudgeVerdict,
    LabelsNeeded,
    MetricVerdict,
)
from calibrate.analysis.verdict_statuses import (
    DEFENSIBLE,
    NEEDS_LABELS,
    NO_CRITERION,
    NOT_DEFENSIBLE,
    NOT_SHOWN,
    STATUSES,
    STRICTER,
)
from calibrate.analysis.verdicts import judge_verdict
from calibrate.base.estimates import Estimate
from calibrate.stats.intervals import wilson_interval
from tests.analysis.test_verdicts import _campaign


def _text(document) -> str:
    return json.dumps(document, ensure_ascii=False)


@pytest.fixture(scope="module")
def demo_stats():
    return calibrate.compute_stats(calibrate.load_campaign(calibrate.demo_campaign_path()), n_boot=50)


def _planted(n: int = 400, *, second_annotator: bool = True, metric: dict | None = None):
    """A perfect judge (defensible only at a stricter threshold), a good one and a coin flip, and two
    annotators who disagree on every tenth case (a human ceiling with figures): test_verdicts' campaign."""
    return _campaign(n, metric=metric, second_annotator=second_annotator)


# ------------------------------------------------------------------------------------- the documents' dicts
def test_the_demo_statistics_hold_typed_verdicts_that_write_their_dicts_byte_for_byte(demo_stats):
    written = demo_stats.to_dict()["metrics"]
    assert len(written) == len(demo_stats.metrics) > 0
    for metric, entry in zip(demo_stats.metrics, written):
        assert isinstance(metric.verdict, MetricVerdict)
        assert _text(metric.verdict.to_dict()) == _text(entry["verdict"])
        back = MetricVerdict.from_dict(entry["verdict"])
        assert back == metric.verdict and _text(back.to_dict()) == _text(entry["verdict"])


def test_every_recommendation_of_the_demo_holds_a_verdict_that_reads_back_byte_for_byte(demo_stats):
    assert len(demo_stats.recommendations) == 9
    for rec in demo_stats.recommendations:
        verdict = JudgeVerdict.from_dict(rec["verdict"])
        assert verdict.judge == rec["judge"] and verdict.status in STATUSES
        assert _text(verdict.to_dict()) == _text(rec["verdict"])


def test_the_thresholds_document_holds_the_same_blocks_as_the_statistics():
    c = _planted()
    stats = calibrate.compute_stats(c, n_boot=50)
    doc = thresholds(c, n_boot=50)
    [block] = doc["verdicts"]
    assert isinstance(block, dict)  # the document is written as plain dicts
    assert _text(block) == _text(stats.metrics[0].verdict.to_dict())
    assert MetricVerdict.from_dict(block) == stats.metrics[0].verdict


def test_a_stricter_verdict_writes_the_rules_threshold_after_current_and_its_own_in_place():
    verdict = calibrate.compute_stats(_planted(), n_boot=0).metrics[0].verdict.judge("perfect")
    assert verdict.status == STRICTER and verdict.rule_threshold is not None
    assert verdict.threshold > verdict.rule_threshold  # stricter: a higher score to pass
    assert list(verdict.to_dict()) == [
        "judge",
        "threshold",
        "reasons",
        "labels_needed",
        "chance",
        "warnings",
        "current",
        "rule_threshold",
        "status",
        "text",
    ]
    assert "rule_threshold" not in JudgeVerdict("j", DEFENSIBLE, "j: defensible", threshold=0.5).to_dict()


def test_the_parts_are_attributes_and_the_figures_estimates():
    block = calibrate.compute_stats(_planted(), n_boot=50).metrics[0].verdict
    assert block.metric == "m" and block.rule["kind"] == "constraint"
    assert [v.judge for v in block.judges] == ["coin", "good", "perfect"]
    assert block.best.judge == "perfect" and block.best.threshold == block.judge("perfect").threshold
    assert block.judge("coin").status == NOT_DEFENSIBLE and block.judge("coin").reasons
    ceiling = block.ceiling
    assert isinstance(ceiling.agreement, Estimate) and isinstance(ceiling.kappa, Estimate)
    assert ceiling.agreement.value == pytest.approx(0.9)
    assert ceiling.text.startswith("human ceiling: 2 annotators agree on 0.90 [")
    with pytest.raises(KeyError, match="m: no verdict on a judge 'nobody'; judges: coin, good, perfect"):
        block.judge("nobody")


def test_a_verdict_that_needs_labels_says_how_many_as_attributes():
    v = calibrate.compute_stats(_planted(40, second_annotator=False), n_boot=0).metrics[0].verdict.judge("perfect")
    assert v.status == NEEDS_LABELS
    assert v.labels_needed == LabelsNeeded(human_fails=35 - 16, cases=48, fail_share=0.4)


@pytest.mark.parametrize(
    ("best", "written"),
    [
        (
            BestJudge("a", "best by the rule: a", threshold=0.7),
            {"judge": "a", "threshold": 0.7, "text": "best by the rule: a"},
        ),
        (BestJudge(None, "no judge is defensible yet"), {"judge": None, "text": "no judge is defensible yet"}),
        (
            BestJudge(None, "no judge is defensible yet; closest: a", closest="a"),
            {"judge": None, "text": "no judge is defensible yet; closest: a", "closest": "a"},
        ),
    ],
)
def test_the_best_judge_writes_its_threshold_or_closest_only_where_it_has_one(best, written):
    assert best.to_dict() == written and list(best.to_dict()) == list(written)
    assert BestJudge.from_dict(written) == best


@pytest.mark.parametrize(
    "written",
    [
        {"text": "no human ceiling: one annotator (label some cases twice to measure it)"},
        {"text": "human ceiling: ...", "agreement": {"estimate": 1.0}, "kappa": {}},
        {
            "text": "human ceiling: ...",
            "agreement": {"estimate": 0.75, "ci_low": 0.5, "ci_high": 0.9, "ci_method": "BCa", "ci_width": 0.4},
            "kappa": {"estimate": 0.5, "ci_low": 0.2, "ci_high": 0.8, "weights": "none"},
        },
    ],
)
def test_the_human_ceiling_reads_back_what_it_wrote(written):
    ceiling = HumanCeiling.from_dict(written)
    assert _text(ceiling.to_dict()) == _text(written)
    assert (ceiling.kappa is None) == (written.get("kappa") in (None, {}))


def test_a_stored_verdict_missing_a_key_is_refused_by_name():
    written = JudgeVerdict("j", DEFENSIBLE, "j: defensible").to_dict()
    del written["chance"]
    with pytest.raises(KeyError, match="chance"):
        JudgeVerdict.from_dict(written)


# --------------------------------------------------------------------------- the steps of a judge's verdict
def _rec(k_fp: int, n_fail: int, k_ff: int, n_pass: int, p: float, rule: dict, threshold: float | None) -> dict:
    low, high = wilson_interval(k_fp, n_fail)
    f_low, f_high = wilson_interval(k_ff, n_pass)
    return {
        "judge": "j",
        "rule": rule,
        "threshold": threshold,
        "pass_rule": "score >= threshold",
        "n": n_fail + n_pass,
        "n_human_pass": n_pass,
        "n_human_fail": n_fail,
        "false_pass_rate": k_fp / n_fail,
        "false_fail_rate": k_ff / n_pass,
        "false_pass_rate_detail": {"estimate": k_fp / n_fail, "ci_low": float(low), "ci_high": float(high)},
        "false_fail_rate_detail": {"estimate": k_ff / n_pass, "ci_low": float(f_low), "ci_high": float(f_high)},
        "separation": {"auc": 0.8, "chance_p": p, "n_pass": n_pass, "n_fail": n_fail},
        "lowest_false_pass": {"rate": 0.0, "threshold": 0.9},
        "current": [
            {
                "threshold": 0.5,
                "source": "given",
                "source_text": "given",
                "pass_rule": "score >= threshold",
                "false_pass_rate": {"estimate": k_fp / n_fail, "k": k_fp, "n": n_fail},
                "false_fail_rate": {"estimate": k_ff / n_pass, "k": k_ff, "n": n_pass},
            }
        ],
    }


RULES = st.sampled_from(
    [
        {"kind": "constraint", "max_false_pass": 0.1},
        {"kind": "constraint", "max_false_pass": 0.05, "confidence": 0.95},
        {"kind": "constraint", "max_false_pass": 0.0},
        {"kind": "cost", "cost_false_pass": 5, "cost_false_fail": 1},
        {"kind": "fixed", "threshold": 0.5},
        {"kind": "default"},
    ]
)


@st.composite
def recommendations(draw) -> dict:
    n_fail, n_pass = draw(st.integers(1, 300)), draw(st.integers(1, 300))
    k_fp = draw(st.one_of(st.integers(0, n_fail), st.integers(0, min(n_fail, n_fail // 10 + 1))))
    p = draw(st.one_of(st.floats(0, 0.03), st.floats(0, 1)))
    threshold = draw(st.sampled_from([0.5, None]))
    return _rec(k_fp, n_fail, draw(st.integers(0, n_pass)), n_pass, p, draw(RULES), threshold)


@settings(max_examples=300, deadline=None)
@given(rec=recommendations(), min_labels=st.sampled_from([2, 50, 1000]))
def test_each_step_gives_what_its_status_promises(rec, min_labels):
    v = judge_verdict(rec, min_labels=min_labels)
    assert v.status in STATUSES and v.text.startswith("j: ") and v.judge == "j"
    assert v.current == (CurrentLine(0.5, "given", v.current[0].text),)
    assert v.current[0].text.startswith("at your current threshold 0.5 (given): passes ")
    if v.status in (NO_CRITERION, DEFENSIBLE):
        assert v.labels_needed is None and v.chance is None
    if v.status == NO_CRITERION:
        assert rec["rule"]["kind"] in ("fixed", "default") and len(v.reasons) == 1
    if v.status == DEFENSIBLE:
        assert v.reasons == () and v.threshold == rec["threshold"] == 0.5 and rec["n"] >= min_labels
    if v.status == NEEDS_LABELS:
        assert isinstance(v.labels_needed, LabelsNeeded) and v.labels_needed.cases >= 0 and v.reasons
    if v.status == NOT_SHOWN:
        assert v.labels_needed is None and v.chance is None
    if v.chance is not None:  # kept only while labels would show the judge better than chance
        assert isinstance(v.chance, ChanceLabels) and v.status in (NEEDS_LABELS, NOT_DEFENSIBLE)
        assert v.reasons[0].startswith("not shown better than chance yet: about ")
        assert v.labels_needed is None or v.labels_needed.cases >= v.chance.labels
    assert (v.rule_threshold is not None) == (v.status == STRICTER)
    if rec["rule"].get("max_false_pass") == 0 and rec["rule"]["kind"] == "constraint":
        assert v.status == NOT_DEFENSIBLE and "can never be shown" in v.text


@settings(max_examples=200, deadline=None)
@given(rec=recommendations())
def test_every_verdict_reads_back_from_the_dict_it_writes(rec):
    v = judge_verdict(rec)
    written = v.to_dict()
    assert JudgeVerdict.from_dict(written) == v
    assert _text(JudgeVerdict.from_dict(json.loads(_text(written))).to_dict()) == _text(written)
    block = metric_verdict("m", [{**rec, "verdict": written}])
    assert block.judges == (v,) and block == metric_verdict("m", [{**rec, "verdict": v}])
    assert _text(MetricVerdict.from_dict(block.to_dict()).to_dict()) == _text(block.to_dict())


def test_the_statistics_schema_describes_every_shape_of_the_verdict():
    jsonschema = pytest.importorskip("jsonschema")
    from pathlib import Path

    schema = json.loads((Path(__file__).parents[2] / "docs" / "reference" / "schemas" / "stats.json").read_text())
    doc = json.loads(_text(calibrate.compute_stats(_planted(), n_boot=0).to_dict()))
    statuses = {v["status"] for v in doc["metrics"][0]["verdict"]["judges"]}
    assert STRICTER in statuses and "agreement" in doc["metrics"][0]["verdict"]["ceiling"]
    jsonschema.validate(doc, schema)
    broken = json.loads(_text(doc))
    broken["metrics"][0]["verdict"]["judges"][0]["status"] = "fine"
    with pytest.raises(jsonschema.ValidationError, match="'fine' is not one of"):
        jsonschema.validate(broken, schema)
    no_kappa = json.loads(_text(doc))
    del no_kappa["metrics"][0]["verdict"]["ceiling"]["kappa"]  # the ceiling's figures come together
    with pytest.raises(jsonschema.ValidationError, match="'kappa' is a dependency of 'agreement'"):
        jsonschema.validate(no_kappa, schema)
