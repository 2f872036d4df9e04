"""Juries (a judge made of judges) and judge-versus-judge agreement."""

import json

import pandas as pd
import pytest
from scipy import stats

import calibrate
from calibrate import campaign_from_frames, compute_stats
from calibrate.analysis.versus import judge_matrix
from calibrate.base.errors import CampaignError
from tests.conftest import run_cli


def config(juries, on_scale=True):
    return {
        "name": "j",
        "metrics": {"m": {"scale": "ordinal", "levels": [0, 1, 2, 3], "human_pass": 2}},
        "raters": {
            n: {"on_metric_scale": on_scale, "family": f} for n, f in (("a", "gpt"), ("b", "llama"), ("c", "claude"))
        },
        "juries": juries,
    }


def ratings(values: dict, runs: dict | None = None):
    frames = []
    for rater, vals in values.items():
        kind = "human" if rater == "h" else "judge"
        frames.append(
            pd.DataFrame(
                {
                    "case_id": [f"c{i}" for i in range(len(vals))],
                    "metric": "m",
                    "rater": rater,
                    "rater_kind": kind,
                    "value": vals,
                    "run_id": (runs or {}).get(rater, ""),
                }
            )
        )
    return pd.concat(frames, ignore_index=True)


VALUES = {"h": [0, 1, 2, 3, 3, 0], "a": [0, 1, 3, 3, 2, 1], "b": [1, 1, 2, 2, 3, 0], "c": [0, 2, 2, 3, 3, 3]}


@pytest.mark.parametrize(
    "combine, expected",
    [
        ("mean", [1 / 3, 4 / 3, 7 / 3, 8 / 3, 8 / 3, 4 / 3]),
        ("median", [0, 1, 2, 3, 3, 1]),
        ("majority", [0, 1, 2, 3, 3, 0]),  # c5: 1, 0, 3 all differ: the lowest
    ],
)
def test_a_jury_combines_its_judges_case_by_case(combine, expected):
    c = campaign_from_frames(config({"panel": {"judges": ["a", "b", "c"], "combine": combine}}), ratings(VALUES))
    jury = c.ratings[c.ratings["rater"] == "panel"].sort_values("case_id")
    assert jury["value"].tolist() == pytest.approx(expected)
    assert c.rater("panel").family == "jury" and c.rater("panel").on_metric_scale
    judged = compute_stats(c, n_boot=0)["metrics"][0]["judges"]
    assert "panel" in [j["judge"] for j in judged]


def test_a_jury_of_one_run_of_a_judge_and_the_problems_named():
    values = {"h": [0, 1, 2, 3], "a": [0, 1, 2, 3], "b": [1, 1, 2, 2]}
    two_runs = pd.concat([ratings(values), ratings({"a": [3, 3, 3, 3]}, {"a": "r2"})], ignore_index=True)
    two_runs.loc[(two_runs["rater"] == "a") & (two_runs["run_id"] == ""), "run_id"] = "r1"
    c = campaign_from_frames(config({"p": {"judges": ["a@r1", "b"], "combine": "median"}}), two_runs)
    assert c.ratings[c.ratings["rater"] == "p"]["value"].tolist() == [0, 1, 2, 2]
    cases = [
        ({"p": {"judges": ["a", "b"], "combine": "mean"}}, two_runs, "several runs on metric 'm': name one"),
        ({"p": {"judges": ["a"]}}, ratings(values), "two or more distinct judges"),
        ({"p": {"judges": ["a", "b"], "combine": "vote"}}, ratings(values), "unknown way to combine"),
        ({"h": {"judges": ["a", "b"]}}, ratings(values), "has the name of a rater"),
        ({"p": {"judges": ["a", "zz"]}}, ratings(values), "judge 'zz' has no ratings in the campaign"),
    ]
    for juries, frame, message in cases:
        with pytest.raises(CampaignError, match=message):
            campaign_from_frames(config(juries), frame)
    with pytest.raises(CampaignError, match="a majority needs judges that rate on the metric's scale"):
        campaign_from_frames(
            config({"p": {"judges": ["a", "b"], "combine": "majority"}}, on_scale=False), ratings(values)
        )


@pytest.fixture(scope="module")
def demo():
    return calibrate.load_campaign(calibrate.demo_campaign_path(), out_of_scale="drop")


def test_judge_versus_judge_against_scipy(demo):
    doc = judge_matrix(demo, metric="relevance", judges=["Olz-gpt4o", "RMITIR-llama70B", "TREMA-all"], n_listed=4)
    r = demo.ratings
    scores = {k: r[r["rater"] == k].set_index("case_id")["value"] for k in doc["judges"]}
    human = r[r["rater_kind"] == "human"].set_index("case_id")["value"]
    for pair in doc["pairs"]:
        common = scores[pair["a"]].index.intersection(scores[pair["b"]].index)
        assert pair["spearman"]["estimate"] == pytest.approx(
            stats.spearmanr(scores[pair["a"]][common], scores[pair["b"]][common]).statistic
        )
        assert pair["spearman"]["ci_low"] < pair["spearman"]["estimate"] < pair["spearman"]["ci_high"]
        gaps = [abs(x["rank_gap"]) for x in pair["most_apart"]]
        assert gaps == sorted(gaps, reverse=True) and len(gaps) == 4
        assert all(x["human"] == human[x["case_id"]] for x in pair["most_apart"])
    stats_doc = compute_stats(demo, judges=doc["judges"], n_boot=0, curves=False)["metrics"][0]["judges"]
    assert [h["spearman"]["estimate"] for h in doc["with_humans"]] == pytest.approx(
        [j["spearman"]["estimate"] for j in stats_doc]
    )
    assert doc["least_agreeing"][-1] == "Olz-gpt4o vs RMITIR-llama70B"
    with pytest.raises(ValueError, match="did not rate relevance"):
        judge_matrix(demo, metric="relevance", judges=["nobody", "Olz-gpt4o"])


def test_compare_from_the_command_line():
    run = run_cli(
        "compare",
        str(calibrate.demo_campaign_path()),
        "--out-of-scale",
        "drop",
        "--judge",
        "Olz-gpt4o",
        "--judge",
        "TREMA-all",
        "--json",
        check=True,
    )
    doc = json.loads(run.stdout)["metrics"][0]
    assert [p["a"] + "/" + p["b"] for p in doc["pairs"]] == ["Olz-gpt4o/TREMA-all"]
    table = run_cli("compare", str(calibrate.demo_campaign_path()), "--out-of-scale", "drop", check=True).stdout
    assert "Spearman's rho between judges" in table and "furthest apart on" in table
