"""calibrate gate: every reason, named, and the exit code."""

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from calibrate import load_campaign
from calibrate.gate import GateRules, run_gate
from tests.conftest import write_campaign

EXE = Path(sys.executable).parent / "calibrate"
TOML = """name = "gate"
[metrics.faithfulness]
scale = "binary"
max_false_pass = 0.1
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
    frame = pd.DataFrame({"case_id": ids * 3, "metric": "faithfulness", "rater": ["ann"] * n + ["good"] * n + ["poor"] * n,
                          "rater_kind": ["human"] * n + ["judge"] * 2 * n, "value": np.r_[human, good, poor]})
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


@pytest.mark.parametrize("rules, expected", [
    ({"min_spearman": 0.6}, r"Spearman rho 0\.\d+ \[0\.\d+, 0\.\d+\]: its lower bound 0\.\d+ is below the floor 0\.6"),
    ({"min_kappa": 0.6}, r"pass kappa .*: its lower bound .* is below the floor 0\.6"),
    ({"max_false_pass": 0.05}, r"no pass threshold under the metric's rule|upper bound .* above the ceiling 0\.05"),
    ({"forbid_self_eval": True}, r"of the gpt family, as the generator of 300 case\(s\)"),
    ({"min_labels": 500}, r"300 human-labelled cases, fewer than the minimum 500"),
])
def test_each_reason_is_named(campaign, rules, expected):
    passed, why = reasons(campaign, "poor", **rules)
    assert not passed and len(why) == 1
    assert re.search(expected, why[0]), why


def test_the_false_pass_ceiling_reads_the_upper_bound(campaign):
    ok, _ = reasons(campaign, "good", max_false_pass=0.2)
    doc = run_gate(campaign, GateRules(max_false_pass=0.2), judges=["good"], n_boot=0)
    fpr = doc["checks"][0]["false_pass_rate"]
    assert ok and fpr["ci_high"] <= 0.2
    # a ceiling between the estimate and the upper bound fails: the bound is what counts
    ceiling = (fpr["estimate"] + fpr["ci_high"]) / 2
    passed, why = reasons(campaign, "good", max_false_pass=ceiling)
    assert not passed and "its upper bound" in why[0]


def test_a_report_of_averages_only_is_refused(campaign, monkeypatch):
    import calibrate.gate as gate

    real = gate.compute_stats

    def averages_only(*args, **kwargs):
        doc = real(*args, **kwargs)
        for metric in doc["metrics"]:
            for judge in metric["judges"]:
                judge.pop("bottom_decile", None)
        return doc

    monkeypatch.setattr(gate, "compute_stats", averages_only)
    passed, why = reasons(campaign, "good")
    assert not passed and "bottom-decile" in why[0]


def test_exit_codes_from_the_command_line(tmp_path):
    folder = make(tmp_path)
    ok = subprocess.run([str(EXE), "gate", str(folder), "--judge", "good", "--min-spearman", "0.6", "--n-boot", "200"],
                        capture_output=True, text=True, timeout=300)
    assert ok.returncode == 0 and "gate passed" in ok.stdout
    bad = subprocess.run([str(EXE), "gate", str(folder), "--min-spearman", "0.6", "--forbid-self-eval", "--n-boot",
                          "200", "--json"], capture_output=True, text=True, timeout=300)
    doc = json.loads(bad.stdout)
    assert bad.returncode == 1 and not doc["passed"]
    assert {c["judge"]: len(c["reasons"]) for c in doc["checks"]} == {"good": 0, "poor": 2}
    usage = subprocess.run([str(EXE), "gate", str(folder), "--metric", "nope"], capture_output=True, text=True,
                           timeout=120)
    assert usage.returncode == 2 and "unknown metric" in usage.stderr
