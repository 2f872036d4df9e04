"""Bias probes from the labels: a planted verbosity bias and self-preference are found, a fair judge is not."""

import json

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from calibrate import load_campaign
from calibrate.analysis.bias import bias_probes, excess
from tests.conftest import run_cli, write_campaign

TOML = """name = "bias"
[metrics.helpfulness]
scale = "ordinal"
levels = [1, 2, 3, 4, 5]
human_pass = 4
[raters.fair]
family = "anthropic"
[raters.wordy]
family = "gpt"
"""


def make(tmp_path, n=400, seed=0):
    """Humans rate quality alone; the 'wordy' judge adds a bonus for length and for its own family's answers."""
    rng = np.random.default_rng(seed)
    quality = rng.integers(1, 6, n)
    words = rng.integers(5, 200, n)
    family = rng.choice(["gpt", "llama"], n)
    fair = quality + rng.normal(0, 0.8, n)
    wordy = quality + rng.normal(0, 0.8, n) + words / 60 + 0.8 * (family == "gpt")
    ids = [f"c{i:04d}" for i in range(n)]
    frame = pd.DataFrame(
        {
            "case_id": ids * 3,
            "metric": "helpfulness",
            "rater": ["ann"] * n + ["fair"] * n + ["wordy"] * n,
            "rater_kind": ["human"] * n + ["judge"] * 2 * n,
            "value": np.r_[quality, fair.round(2), wordy.round(2)],
        }
    )
    cases = [
        {
            "case_id": c,
            "input": "q",
            "actual_output": " ".join(["word"] * int(w)),
            "metadata": {"generator_family": f, "topic": "a" if i % 2 else "b"},
        }
        for i, (c, w, f) in enumerate(zip(ids, words, family))
    ]
    return write_campaign(tmp_path / "campaign", TOML, frame, cases)


def test_planted_biases_are_found_and_a_fair_judge_is_cleared(tmp_path):
    doc = bias_probes(load_campaign(make(tmp_path)), metric="helpfulness", by="topic")
    by = {j["judge"]: j for j in doc["judges"]}
    wordy, fair = by["wordy"], by["fair"]
    assert wordy["verbosity"]["ci_low"] > 0.2 and fair["verbosity"]["ci_low"] < 0 < fair["verbosity"]["ci_high"]
    assert wordy["self_preference"]["ci_low"] > 0.05
    assert fair["self_preference"]["estimate"] is None  # no case of the fair judge's family
    tertiles = wordy["verbosity"]["tertiles"]
    assert [t["mean_excess"] for t in tertiles] == sorted(t["mean_excess"] for t in tertiles)
    assert {s["value"] for s in wordy["slices"]} == {"a", "b"} and sum(s["n"] for s in wordy["slices"]) == 400


def test_excess_and_the_reference_correlation(tmp_path):
    c = load_campaign(make(tmp_path))
    doc = bias_probes(c, metric="helpfulness", judges=["wordy"])
    r = c.ratings
    human = r[r["rater"] == "ann"].set_index("case_id")["value"].sort_index()
    judge = r[r["rater"] == "wordy"].set_index("case_id")["value"].sort_index()
    length = np.array([len(c.cases[i]["actual_output"].split()) for i in human.index])
    ex = excess(human.to_numpy(), judge.to_numpy())
    assert doc["judges"][0]["verbosity"]["estimate"] == pytest.approx(stats.spearmanr(length, ex).statistic)
    run = run_cli("bias", c.path, "--metric", "helpfulness", "--json", check=True)
    assert [j["judge"] for j in json.loads(run.stdout)["judges"]] == ["fair", "wordy"]
    table = run_cli("bias", c.path, "--metric", "helpfulness", "--by", "topic", check=True).stdout
    assert "self-preference" in table and "topic = a" in table
