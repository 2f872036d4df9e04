"""Repeatability of a judge scored with repeats: alpha across repeats (krippendorff), verdict flips."""

import json

import krippendorff
import numpy as np
import pandas as pd
import pytest

from calibrate import load_campaign
from calibrate.analysis.repeatability import repeatability
from tests.conftest import run_cli, write_campaign

TOML = """name = "rep"
[metrics.faithfulness]
scale = "binary"
max_false_pass = 0.2
[raters.steady]
family = "gpt"
[raters.noisy]
family = "llama"
"""


def make(tmp_path, n=200, seed=0):
    rng = np.random.default_rng(seed)
    human = (rng.random(n) < 0.5).astype(int)
    base = np.clip(0.6 * human + rng.normal(0.2, 0.15, n), 0, 1)
    ids = [f"c{i:04d}" for i in range(n)]
    frames = [
        pd.DataFrame(
            {
                "case_id": ids,
                "metric": "faithfulness",
                "rater": "ann",
                "rater_kind": "human",
                "value": human,
                "run_id": "",
            }
        )
    ]
    scores = {}
    for rater, noise in (("steady", 0.02), ("noisy", 0.25)):
        for k in range(3):
            values = np.clip(base + rng.normal(0, noise, n), 0, 1).round(3)
            scores[(rater, k)] = values
            frames.append(
                pd.DataFrame(
                    {
                        "case_id": ids,
                        "metric": "faithfulness",
                        "rater": rater,
                        "rater_kind": "judge",
                        "value": values,
                        "run_id": f"repeat-{k}",
                    }
                )
            )
    frame = pd.concat(frames, ignore_index=True)
    frame = frame[~((frame["rater"] == "noisy") & (frame["run_id"] == "repeat-2") & (frame["case_id"] < "c0010"))]
    return write_campaign(tmp_path / "campaign", TOML, frame), scores


def test_alpha_and_flips_of_each_judge(tmp_path):
    folder, scores = make(tmp_path)
    doc = repeatability(load_campaign(folder), n_boot=300)
    by = {r["judge"]: r for r in doc["judges"]}
    steady, noisy = by["steady"], by["noisy"]
    assert steady["repeats"] == ["repeat-0", "repeat-1", "repeat-2"] and steady["n_cases"] == 200
    data = np.vstack([scores[("noisy", k)] for k in range(3)])
    data[2, :10] = np.nan
    assert noisy["alpha"]["estimate"] == pytest.approx(
        krippendorff.alpha(reliability_data=data, level_of_measurement="interval")
    )
    assert noisy["alpha"]["ci_low"] < noisy["alpha"]["estimate"] < noisy["alpha"]["ci_high"]
    assert steady["alpha"]["estimate"] > 0.95 > noisy["alpha"]["estimate"]
    t = noisy["threshold"]
    verdicts = data >= t
    flips = [len(set(col[~np.isnan(d)])) > 1 for col, d in zip(verdicts.T, data.T)]
    assert noisy["flip_share"]["k"] == sum(flips) and noisy["flip_share"]["n"] == 200
    assert steady["flip_share"]["estimate"] < noisy["flip_share"]["estimate"]


def test_the_command_line(tmp_path):
    folder, _ = make(tmp_path)
    run = run_cli("repeatability", folder, "--judge", "noisy", "--n-boot", "100", "--json")
    assert run.returncode == 0, run.stderr
    assert [r["judge"] for r in json.loads(run.stdout)["judges"]] == ["noisy"]
    table = run_cli("repeatability", folder, "--n-boot", "100").stdout
    assert "alpha across repeats" in table and "steady" in table
    human = run_cli("repeatability", folder, "--judge", "ann")
    assert human.returncode == 2, human.stderr
    assert "--judge ann: a human annotator of the campaign, not a judge; its judges are noisy, steady" in human.stderr
    # a judge rated once, without repeats, is told how to get them
    ratings = pd.read_csv(folder / "ratings.csv", keep_default_na=False)
    once = ratings[(ratings["rater"] == "steady") & (ratings["run_id"] == "repeat-0")].assign(rater="once", run_id="")
    pd.concat([ratings, once]).to_csv(folder / "ratings.csv", index=False)
    missing = run_cli("repeatability", folder, "--judge", "once")
    assert missing.returncode == 2 and "--repeats" in missing.stderr, missing.stderr
