"""Probes that re-run real DeepEval metrics on perturbed cases, against the scripted judge server."""

import json

import numpy as np
import pandas as pd
import pytest

from calibrate import load_campaign
from calibrate.judges.probes import perturb, run_probe
from tests.conftest import run_cli, write_campaign


def toml(url: str) -> str:
    model = f'{{ provider = "openai", name = "llama-3-scripted", base_url = "{url}" }}'
    return f"""
name = "probed"
[metrics.faithfulness]
scale = "binary"
[metrics.precision]
scale = "binary"
[metrics.relevancy]
scale = "binary"
[judges.de-faith]
library = "deepeval"
metric = "faithfulness"
model = {model}
[judges.de-precision]
library = "deepeval"
metric = "contextual_precision"
into = "precision"
model = {model}
[judges.de-relevancy]
library = "deepeval"
metric = "answer_relevancy"
into = "relevancy"
model = {model}
"""


def make(tmp_path, url, n=12):
    cases = []
    for i in range(n):
        fact = f"Paris museum number {i} opens daily."
        cases.append(
            {
                "case_id": f"c{i:03d}",
                "input": f"When does Paris museum number {i} open?",
                "actual_output": fact,
                "expected_output": fact,
                "retrieval_context": [fact, f"Unrelated note {i} about weather."],
            }
        )
    humans = pd.DataFrame(
        {
            "case_id": [c["case_id"] for c in cases],
            "metric": "faithfulness",
            "rater": "ann",
            "rater_kind": "human",
            "value": 1,
        }
    )
    return write_campaign(tmp_path / "campaign", toml(url), humans, cases)


def test_order_moves_precision_and_not_faithfulness(tmp_path, server):
    folder = make(tmp_path, server.url)
    before = (folder / "ratings.csv").read_text()
    doc = run_probe(load_campaign(folder), probe="order", n=8, seed=1)
    by = {j["judge"]: j for j in doc["judges"]}
    precision, faith = by["de-precision"], by["de-faith"]
    assert precision["n_pairs"] == 8 and precision["mean_change"]["estimate"] == pytest.approx(-0.5)
    assert precision["share_changed"] == 1 and precision["finding"] == "as expected: the score moved"
    assert faith["mean_change"]["estimate"] == 0 and faith["finding"] == "as expected: no systematic change"
    assert (folder / "ratings.csv").read_text() == before and not (folder / "judge_ratings.csv").exists()
    assert (folder / "probes" / "order" / "judge_ratings.csv").exists()
    server.counts.clear()
    again = run_probe(load_campaign(folder), probe="order", n=8, seed=1)  # cached: no call
    assert server.counts["requests"] == 0 and again["judges"] == doc["judges"]


def test_padding_drops_answer_relevancy_from_the_command_line(tmp_path, server):
    folder = make(tmp_path, server.url)
    run = run_cli("probe", str(folder), "--probe", "padding", "--judge", "de-relevancy", "--n", "6", "--json")
    assert run.returncode == 0, run.stderr
    entry = json.loads(run.stdout)["judges"][0]
    assert entry["mean_change"]["estimate"] == pytest.approx(-0.5) and entry["expected"] == "drops"
    assert entry["finding"] == "as expected: the score dropped" and entry["verdict_flips"]["share"] == 0
    table = run_cli("probe", str(folder), "--probe", "padding", "--n", "6")
    assert table.returncode == 0 and "padding probe on 6 cases" in table.stdout


def test_perturbations_and_cases_they_cannot_change():
    rng = np.random.default_rng(0)
    padded = perturb({"case_id": "a", "actual_output": "Yes."}, "padding", rng)
    assert padded["actual_output"].startswith("Yes. ") and padded["metadata"]["probe_of"] == "a"
    assert perturb({"case_id": "a", "retrieval_context": ["only one"]}, "order", rng) is None
    with pytest.raises(ValueError, match="unknown probe"):
        perturb({"case_id": "a"}, "shout", rng)
