"""calibrate gate: every reason, named, and the exit code."""

import dataclasses
import json
import re

import numpy as np
import pandas as pd
import pytest

from calibrate import load_campaign
from calibrate.review.gate import GateRules, run_gate
from tests.conftest import run_cli, write_campaign

TOML = """name = "gate"
[metrics.faithfulness]
scale = "binary"
[raters.good]
family = "anthropic"
[raters.poor]
family = "gpt"
"""


def make(tmp_path, n=300, seed=0):
    """A good judge (scores follow the human verdict closely) and a poor one, on cases a gpt model answered."""
    rng = np.random.default_rng(seed)
    human = (rng.random(n) < 0.5).astype(int)
    good = np.clip(0.7 * human + rng.normal(0.15, 0.12, n), 0, 1).round(2)
    poor = np.clip(0.2 * human + rng.normal(0.4, 0.25, n), 0, 1).round(2)
    ids = [f"c{i:04d}" for i in range(n)]
    frame = pd.DataFrame(
        {
            "case_id": ids * 3,
            "metric": "faithfulness",
            "rater": ["ann"] * n + ["good"] * n + ["poor"] * n,
            "rater_kind": ["human"] * n + ["judge"] * 2 * n,
            "value": np.r_[human, good, poor],
        }
    )
    cases = [{"case_id": c, "input": "q", "metadata": {"generator_family": "gpt"}} for c in ids]
    return write_campaign(tmp_path / "campaign", TOML, frame, cases)


@pytest.fixture(scope="module")
def campaign(tmp_path_factory):
    return load_campaign(make(tmp_path_factory.mktemp("gate")))


def reasons(campaign, judge, **rules):
    doc = run_gate(campaign, GateRules(**rules), judges=[judge], n_boot=300)
    return doc["passed"], doc["checks"][0]["reasons"]


def test_a_good_judge_passes_every_rule(campaign):
    passed, why = reasons(campaign, "good", min_spearman=0.6, min_kappa=0.6, max_false_pass=0.2, forbid_self_eval=True)
    assert passed and why == []


@pytest.mark.parametrize(
    "rules, expected",
    [
        (
            {"min_spearman": 0.6},
            r"Spearman rho 0\.\d+: its one-sided lower bound 0\.\d+ \(.*Fisher's z.*\) is below the "
            r"floor 0\.6",
        ),
        ({"min_kappa": 0.6}, r"pass kappa .*: its one-sided lower bound .* is below the floor 0\.6"),
        (
            {"max_false_pass": 0.01},
            r"no threshold keeps the false-pass rate's one-sided 97\.5% Clopper-Pearson upper bound "
            r"at most 0\.01",
        ),
        ({"forbid_self_eval": True}, r"of the gpt family, as the generator of 300 case\(s\)"),
        ({"min_labels": 500}, r"300 human-labelled cases, fewer than the minimum 500"),
    ],
)
def test_each_reason_is_named(campaign, rules, expected):
    passed, why = reasons(campaign, "poor", **rules)
    assert not passed and len(why) == 1
    assert re.search(expected, why[0]), why


def test_the_false_pass_ceiling_reads_the_bound_it_shows(campaign):
    from calibrate.stats.intervals import clopper_pearson_upper

    doc = run_gate(campaign, GateRules(max_false_pass=0.2), judges=["good"], n_boot=0)
    check = doc["checks"][0]
    fpr = check["false_pass_rate"]
    assert check["passed"] and fpr["upper_bound"] <= 0.2
    assert fpr["upper_bound"] == pytest.approx(float(clopper_pearson_upper(fpr["k"], fpr["n"], confidence=0.975)))
    assert fpr["upper_bound_method"] == "one-sided 97.5% Clopper-Pearson"
    # a ceiling below that bound at every threshold short of failing all: no threshold, and it says so
    passed, why = reasons(campaign, "poor", max_false_pass=0.01)
    assert not passed and "no threshold keeps the false-pass rate's one-sided 97.5% Clopper-Pearson" in why[0]


def test_a_report_of_averages_only_is_refused(campaign, monkeypatch):
    import calibrate.review.gate as gate

    real = gate.compute_stats

    def averages_only(*args, **kwargs):  # the statistics without any judge's bottom decile
        doc = real(*args, **kwargs)
        metrics = tuple(
            dataclasses.replace(m, judges=tuple(dataclasses.replace(j, bottom_decile=None) for j in m.judges))
            for m in doc.metrics
        )
        return dataclasses.replace(doc, metrics=metrics)

    monkeypatch.setattr(gate, "compute_stats", averages_only)
    passed, why = reasons(campaign, "good")
    assert not passed and "bottom-decile" in why[0]


def test_exit_codes_from_the_command_line(tmp_path):
    folder = make(tmp_path)
    ok = run_cli("gate", str(folder), "--judge", "good", "--min-spearman", "0.6", "--n-boot", "200")
    assert ok.returncode == 0 and "gate passed" in ok.stdout
    bad = run_cli("gate", str(folder), "--min-spearman", "0.6", "--forbid-self-eval", "--n-boot", "200", "--json")
    doc = json.loads(bad.stdout)
    assert bad.returncode == 1 and not doc["passed"]
    assert {c["judge"]: len(c["reasons"]) for c in doc["checks"]} == {"good": 0, "poor": 2}
    usage = run_cli("gate", str(folder), "--metric", "nope")
    assert usage.returncode == 2 and "unknown metric" in usage.stderr


def frames_campaign(human, judge, metric: dict, *, on_scale=False):
    n = len(human)
    ids = [f"c{i:03d}" for i in range(n)]
    frame = pd.DataFrame(
        {
            "case_id": ids * 2,
            "metric": "m",
            "rater": ["ann"] * n + ["judge"] * n,
            "rater_kind": ["human"] * n + ["judge"] * n,
            "value": np.r_[human, judge],
        }
    )
    config = {"name": "defaults", "metrics": {"m": metric}}
    if on_scale:
        config["raters"] = {"judge": {"on_metric_scale": True}}
    from calibrate import campaign_from_frames

    return campaign_from_frames(config, frame)


def test_a_coin_flip_judge_fails_the_default_gate():
    """No floor given, the campaign declares max_false_pass = 0.1: a judge of uniformly random scores fails
    (it passed before: only the label count was checked)."""
    rng = np.random.default_rng(3)
    human = (rng.random(60) < 0.5).astype(int)
    doc = run_gate(
        frames_campaign(human, rng.random(60).round(3), {"scale": "binary", "max_false_pass": 0.1}),
        GateRules(),
        n_boot=300,
    )
    check = doc["checks"][0]
    assert not doc["passed"]
    assert any("not shown better than chance" in r for r in check["reasons"]), check["reasons"]
    assert any("false-pass ceiling 0.1, the max_false_pass campaign.toml declares" in d for d in doc["defaults"])
    assert any("no agreement floor was given" in d for d in doc["defaults"])


def test_a_perfect_judge_on_an_ordinal_metric_passes_the_default_gate():
    rng = np.random.default_rng(4)
    human = rng.integers(0, 4, 100)
    metric = {"scale": "ordinal", "levels": [0, 1, 2, 3], "human_pass": 2, "max_false_pass": 0.1}
    doc = run_gate(frames_campaign(human, human, metric, on_scale=True), GateRules(), n_boot=300)
    assert doc["passed"], doc["checks"][0]["reasons"]
    check = doc["checks"][0]
    assert check["threshold"] == 2.0 and check["false_pass_rate"]["estimate"] == 0.0
    assert check["false_pass_rate"]["upper_bound"] <= 0.1


def test_a_kappa_floor_is_not_met_on_three_labels():
    """Perfect agreement on 3 labels: the bootstrap interval collapses to [1, 1] and met a 0.9 floor."""
    doc = run_gate(
        frames_campaign([1, 0, 1], [1, 0, 1], {"scale": "binary"}), GateRules(min_labels=1, min_kappa=0.9), n_boot=300
    )
    reasons = doc["checks"][0]["reasons"]
    assert not doc["passed"] and any(r.startswith("kappa 1.000: its one-sided lower bound") for r in reasons), reasons


@pytest.mark.parametrize("option", ["--min-spearman", "--min-kappa", "--max-false-pass", "--confidence"])
@pytest.mark.parametrize("value", ["nan", "inf", "-inf"])
def test_a_nan_or_infinite_option_is_refused(tmp_path, option, value):
    folder = make(tmp_path, n=40)
    for extra in ([], ["--json"]):
        result = run_cli("gate", str(folder), option, value, *extra)
        assert result.returncode == 2, result.stderr
        assert "is not a finite number" in result.stderr or "is not in the range" in result.stderr, result.stderr
        assert "Traceback" not in result.stderr


def test_gate_rules_are_checked_where_they_enter():
    for bad in (
        {"min_kappa": float("nan")},
        {"min_spearman": 2.0},
        {"max_false_pass": -0.1},
        {"min_labels": 0},
        {"max_false_pass": float("inf")},
    ):
        with pytest.raises(ValueError, match=next(iter(bad))):
            GateRules(**bad)
