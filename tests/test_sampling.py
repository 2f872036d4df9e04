"""calibrate sample: random and proportionally stratified samples, their inclusion probabilities, and files."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from calibrate import load_campaign
from calibrate.sampling import _allocate, draw_sample
from tests.conftest import write_campaign


def make(tmp_path, n=100):
    cases = [{"case_id": f"c{i:03d}", "input": f"q{i}", "actual_output": f"a{i}",
              "metadata": {"kind": ["how", "what", "why"][0 if i < 60 else 1 if i < 90 else 2]}} for i in range(n)]
    humans = pd.DataFrame({"case_id": ["c000", "c001"], "metric": "faithfulness", "rater": "lead",
                           "rater_kind": "human", "value": [1, 0]})
    return write_campaign(tmp_path / "campaign", 'name = "s"\n[metrics.faithfulness]\nscale = "binary"\n', humans,
                          cases)


def test_random_is_uniform_and_reproducible_and_leaves_labelled_cases_out(tmp_path):
    c = load_campaign(make(tmp_path))
    s = draw_sample(c, 20, seed=4)
    assert len(set(s.case_ids)) == 20 and not {"c000", "c001"} & set(s.case_ids)
    assert s.inclusion_probability == [20 / 98] * 20
    assert draw_sample(c, 20, seed=4).case_ids == s.case_ids and draw_sample(c, 20, seed=5).case_ids != s.case_ids
    counts = np.zeros(98)
    pool = sorted(set(c.cases) - {"c000", "c001"})
    for seed in range(400):
        for case in draw_sample(c, 20, seed=seed).case_ids:
            counts[pool.index(case)] += 1
    assert abs(counts.mean() / 400 - 20 / 98) < 1e-12 and counts.std() / 400 < 0.05  # every case about equally


def test_stratified_is_proportional_with_every_stratum_present(tmp_path):
    c = load_campaign(make(tmp_path))
    s = draw_sample(c, 10, strategy="stratified", by="kind", seed=1)
    kinds = pd.Series(s.strata).value_counts().to_dict()
    assert kinds == {"how": 6, "what": 3, "why": 1}          # 58, 30 and 10 cases in the pool
    assert {(k, p) for k, p in zip(s.strata, s.inclusion_probability)} == {
        ("how", 6 / 58), ("what", 3 / 30), ("why", 1 / 10)}
    assert _allocate(np.array([98, 1, 1]), 10).tolist() == [8, 1, 1]
    with pytest.raises(ValueError, match="needs --by"):
        draw_sample(c, 10, strategy="stratified")
    with pytest.raises(ValueError, match="case\\(s\\) can be sampled"):
        draw_sample(c, 99)


def test_the_command_line_writes_the_sample_and_never_replaces_one(tmp_path):
    folder = make(tmp_path)
    calibrate = Path(sys.executable).parent / "calibrate"
    run = [str(calibrate), "sample", str(folder), "--n", "12", "--strategy", "stratified", "--by", "kind"]
    first = subprocess.run(run + ["--json"], capture_output=True, text=True, timeout=120)
    assert first.returncode == 0, first.stderr
    doc = json.loads(first.stdout)
    sample = pd.read_csv(folder / "samples" / "stratified-0.csv")
    assert sample["case_id"].tolist() == doc["case_ids"] and len(sample) == 12
    assert json.loads((folder / "samples" / "stratified-0.json").read_text())["strata"]["why"] == {"size": 10,
                                                                                                   "sampled": 1}
    again = subprocess.run(run, capture_output=True, text=True, timeout=120)
    assert again.returncode == 2 and "exists" in again.stderr


def test_the_report_says_which_design_the_labelled_cases_came_from(tmp_path):
    from calibrate import compute_stats, write_report
    from calibrate.sampling import write_sample

    folder = make(tmp_path)
    c = load_campaign(folder)
    drawn = draw_sample(c, 5, strategy="stratified", by="kind", seed=2)
    write_sample(folder, drawn, "pilot")
    labels = pd.DataFrame({"case_id": drawn.case_ids, "metric": "faithfulness", "rater": "ann",
                           "rater_kind": "human", "value": 1})
    pd.concat([pd.read_csv(folder / "ratings.csv"), labels]).to_csv(folder / "ratings.csv", index=False)
    c = load_campaign(folder)
    assert c.samples["pilot"]["case_ids"] == drawn.case_ids
    stats = compute_stats(c, n_boot=0)
    assert stats["metrics"][0]["sample_designs"] == [{"sample": "pilot", "strategy": "stratified", "by": "kind",
                                                      "n": 5, "seed": 2, "labelled": 5}]
    html = write_report(stats, [], tmp_path / "report", cases=c.cases)["html"].read_text()
    assert "5 from sample “pilot” (stratified by kind, n = 5, seed 2)" in html
