"""calibrate sample: random and proportionally stratified samples, their inclusion probabilities, and files."""

import json

import numpy as np
import pandas as pd
import pytest

from calibrate import load_campaign
from calibrate.sampling.designs import _allocate, draw_sample
from tests.conftest import run_cli, write_campaign


def make(tmp_path, n=100):
    cases = [
        {
            "case_id": f"c{i:03d}",
            "input": f"q{i}",
            "actual_output": f"a{i}",
            "metadata": {"kind": ["how", "what", "why"][0 if i < 60 else 1 if i < 90 else 2]},
        }
        for i in range(n)
    ]
    humans = pd.DataFrame(
        {"case_id": ["c000", "c001"], "metric": "faithfulness", "rater": "lead", "rater_kind": "human", "value": [1, 0]}
    )
    return write_campaign(
        tmp_path / "campaign", 'name = "s"\n[metrics.faithfulness]\nscale = "binary"\n', humans, cases
    )


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
    assert kinds == {"how": 6, "what": 3, "why": 1}  # 58, 30 and 10 cases in the pool
    assert {(k, p) for k, p in zip(s.strata, s.inclusion_probability)} == {
        ("how", 6 / 58),
        ("what", 3 / 30),
        ("why", 1 / 10),
    }
    assert _allocate(np.array([98, 1, 1]), 10).tolist() == [8, 1, 1]
    with pytest.raises(ValueError, match="needs by"):
        draw_sample(c, 10, strategy="stratified")
    with pytest.raises(ValueError, match="case\\(s\\) can be sampled"):
        draw_sample(c, 99)


def test_the_command_line_writes_the_sample_and_never_replaces_one(tmp_path):
    folder = make(tmp_path)
    run = ["sample", folder, "--n", "12", "--strategy", "stratified", "--by", "kind"]
    first = run_cli(*run, "--json")
    assert first.returncode == 0, first.stderr
    doc = json.loads(first.stdout)
    sample = pd.read_csv(folder / "samples" / "stratified-0.csv")
    assert sample["case_id"].tolist() == doc["case_ids"] and len(sample) == 12
    assert json.loads((folder / "samples" / "stratified-0.json").read_text())["strata"]["why"] == {
        "size": 10,
        "inclusion_probability": 0.1,
        "sampled": 1,
    }
    again = run_cli(*run)
    assert again.returncode == 2 and "exists" in again.stderr


def test_the_report_says_which_design_the_labelled_cases_came_from(tmp_path):
    from calibrate import ReportDocuments, compute_stats, write_report
    from calibrate.sampling.designs import write_sample

    folder = make(tmp_path)
    c = load_campaign(folder)
    drawn = draw_sample(c, 5, strategy="stratified", by="kind", seed=2)
    write_sample(folder, drawn, "pilot")
    labels = pd.DataFrame(
        {"case_id": drawn.case_ids, "metric": "faithfulness", "rater": "ann", "rater_kind": "human", "value": 1}
    )
    pd.concat([pd.read_csv(folder / "ratings.csv"), labels]).to_csv(folder / "ratings.csv", index=False)
    c = load_campaign(folder)
    assert c.samples["pilot"]["case_ids"] == drawn.case_ids
    stats = compute_stats(c, n_boot=0)
    pilot, outside = stats["metrics"][0]["sample_designs"]
    assert {k: pilot[k] for k in ("sample", "strategy", "by", "n", "seed", "labelled")} == {
        "sample": "pilot",
        "strategy": "stratified",
        "by": "kind",
        "n": 5,
        "seed": 2,
        "labelled": 5,
    }
    assert outside["strategy"] == "unrecorded" and outside["labelled"] == stats["metrics"][0]["n_cases"] - 5
    assert pilot["weight_share"] + outside["weight_share"] == pytest.approx(1)
    html = write_report(ReportDocuments(stats, [], cases=c.cases), tmp_path / "report")["html"].read_text()
    assert "5 from sample “pilot” (stratified by kind, n = 5, seed 2)" in html


# ------------------------------------------------------------------- targeted designs, weighted figures
DEMO_JUDGE = "Olz-gpt4o"


@pytest.fixture(scope="module")
def demo():
    import calibrate

    return calibrate.load_campaign(calibrate.demo_campaign_path(), out_of_scale="drop")


def labelled_only(demo, case_ids, samples=()):
    """The demo campaign with the human labels of ``case_ids`` only, and the given samples recorded. Of
    the judges, only DEMO_JUDGE, whose figures these tests read: the other eight judges' ratings change
    none of them (its metric entry, sample designs and weights are the same with and without them), and
    checking them again in each rebuilt campaign took two thirds of the tests' time."""
    from calibrate.campaign import campaign_from_frames

    r = demo.ratings
    sub = campaign_from_frames(
        {"name": "sim", "metrics": {"relevance": {"scale": "ordinal", "levels": [0, 1, 2, 3], "human_pass": 2}}},
        r[(r["rater"] == DEMO_JUDGE) | r["case_id"].isin(set(case_ids))],
        list(demo.cases.values()),
    )
    for name, s in samples:
        sub.samples[name] = {
            "design": s.design,
            "case_ids": s.case_ids,
            "strata": s.strata,
            "inclusion_probability": np.array(s.inclusion_probability),
        }
    return sub


def figures(campaign, n_boot=0):
    from calibrate import compute_stats

    m = compute_stats(campaign, judges=[DEMO_JUDGE], n_boot=n_boot, curves=False)["metrics"][0]
    return m, np.array(
        [m["judges"][0][k]["estimate"] for k in ("spearman", "kappa", "auc")] + [m["human_pass_rate"]["estimate"]]
    )


def test_weighting_removes_the_bias_of_a_disagreement_sample(demo):
    """Cases where judges disagree are where the judge agrees least with humans: an unweighted
    disagreement sample understates agreement; weighting by inclusion probability recovers it."""
    _, truth = figures(demo)
    weighted, unweighted = [], []
    for seed in range(8):
        s = draw_sample(demo, 300, strategy="disagreement", seed=seed, include_labelled=True)
        assert s.design["judges"] and sum(x == "disagree" for x in s.strata) == 150  # the focus share
        weighted.append(figures(labelled_only(demo, s.case_ids, [("d", s)]))[1])
        unweighted.append(figures(labelled_only(demo, s.case_ids))[1])
    bias_w = np.abs(np.mean(weighted, axis=0) - truth)
    bias_u = np.abs(np.mean(unweighted, axis=0) - truth)
    assert bias_u[0] > 0.03 and bias_w[0] < 0.02 and bias_w[0] < bias_u[0] / 3  # Spearman's rho
    assert bias_w[1] < bias_u[1] and bias_w[1] < 0.03  # Cohen's kappa


def test_threshold_design_focuses_near_the_threshold_and_weights_each_stratum(demo):
    s = draw_sample(
        demo,
        200,
        strategy="threshold",
        judge=DEMO_JUDGE,
        threshold=1.5,
        focus=0.6,
        band=0.3,
        include_labelled=True,
        seed=1,
    )
    strata = s.design["strata"]
    assert strata["near"]["sampled"] == 120 and strata["near"]["size"] < 0.5 * 4423
    assert {x for x in s.strata} == {"near", "pass side", "fail side"}
    for name, facts in strata.items():  # every case records its stratum's n_h / N_h
        assert {p for x, p in zip(s.strata, s.inclusion_probability) if x == name} == {facts["sampled"] / facts["size"]}
    scores = demo.ratings[(demo.ratings["rater"] == DEMO_JUDGE)].set_index("case_id")["value"]
    near = [c for c, x in zip(s.case_ids, s.strata) if x == "near"]
    assert set(scores[near]) <= {1.0, 2.0}  # the scores closest to 1.5
    m, _ = figures(labelled_only(demo, s.case_ids, [("t", s)]), n_boot=200)
    judge = m["judges"][0]
    assert m["weighted"] and judge["weighted"] and 0 < judge["effective_n"] < 200
    assert judge["kappa"]["ci_low"] < judge["kappa"]["estimate"] < judge["kappa"]["ci_high"]
    # without --threshold: the judge's recommended threshold under the metric's rule
    from calibrate import default_rule, recommend_thresholds

    default = draw_sample(demo, 50, strategy="threshold", judge=DEMO_JUDGE, include_labelled=True)
    rec = recommend_thresholds(
        demo, metric="relevance", rule=default_rule(demo.metrics["relevance"]), judges=[DEMO_JUDGE], n_boot=0
    )["recommendations"][0]
    assert default.design["threshold"] == rec["threshold"] == 3.0


def test_neyman_series_pilot_then_allocation_where_human_verdicts_vary(demo, tmp_path):
    from calibrate.campaign.weights import design_weights

    pilot = draw_sample(demo, 100, strategy="neyman", judge=DEMO_JUDGE, seed=0)
    assert pilot.design["phase"] == "pilot" and len(pilot.design["strata"]) >= 3
    sizes = {k: v["size"] for k, v in pilot.design["strata"].items()}
    campaign = labelled_only(demo, [], [("pilot", pilot)])
    with pytest.raises(ValueError, match="not labelled enough"):
        draw_sample(campaign, 200, strategy="neyman", judge=DEMO_JUDGE, seed=1)
    campaign = labelled_only(demo, pilot.case_ids, [("pilot", pilot)])
    second = draw_sample(campaign, 200, strategy="neyman", judge=DEMO_JUDGE, seed=1)
    assert second.design["phase"] == "allocation" and second.design["series"] == ["pilot"]
    assert not set(second.case_ids) & set(pilot.case_ids)
    spread, strata = second.design["spread"], second.design["strata"]
    total = {k: strata[k]["drawn_before"] + strata[k]["sampled"] for k in strata}
    # the series' labels per stratum follow N_h x S_h (Neyman): labels per case in proportion to the spread
    ratio = np.array([total[k] / sizes[k] / spread[k] for k in strata])
    assert ratio.max() / ratio.min() < 1.1 and max(spread.values()) / min(spread.values()) > 2
    for k, facts in strata.items():
        assert facts["inclusion_probability"] == pytest.approx(total[k] / sizes[k])
    # the pilot's cases take the series' probability: one weight per stratum across both steps
    campaign = labelled_only(demo, pilot.case_ids + second.case_ids, [("pilot", pilot), ("second", second)])
    ids = np.array(sorted(pilot.case_ids + second.case_ids))
    dw = design_weights(campaign, ids)
    stratum_of = dict(zip(pilot.case_ids + second.case_ids, pilot.strata + second.strata))
    for k in strata:
        w = dw.weights[[stratum_of[c] == k for c in ids]]
        assert np.allclose(w, w[0])
    assert [d["sample"] for d in dw.designs] == ["second"]


def test_a_sample_file_with_a_bad_probability_names_the_row(tmp_path):
    from calibrate.base.errors import CampaignError

    folder = make(tmp_path)
    (folder / "samples").mkdir()
    (folder / "samples" / "s.json").write_text('{"strategy": "random"}')
    (folder / "samples" / "s.csv").write_text("case_id,stratum,inclusion_probability\nc003,all,0.2\nc004,all,1.5\n")
    with pytest.raises(CampaignError, match=r"s.csv, line 3, field 'inclusion_probability'.*\(0, 1\]"):
        load_campaign(folder)


def test_equal_allocation_and_the_targeted_designs_from_the_command_line(tmp_path):
    folder = make(tmp_path)
    run = [
        "sample",
        folder,
        "--n",
        "12",
        "--strategy",
        "stratified",
        "--by",
        "kind",
        "--allocation",
        "equal",
        "--json",
    ]
    doc = json.loads(run_cli(*run, check=True).stdout)
    assert {k: v["sampled"] for k, v in doc["design"]["strata"].items()} == {"how": 4, "what": 4, "why": 4}
    bad = run_cli("sample", folder, "--n", "5", "--strategy", "threshold")
    assert bad.returncode == 2 and "no judge scores" in bad.stderr


def test_a_targeted_sample_from_the_command_line_to_weighted_stats_and_report(tmp_path):
    folder = make(tmp_path)
    rng = np.random.default_rng(0)
    ids = [f"c{i:03d}" for i in range(100)]
    score = rng.random(100).round(2)
    judge = pd.DataFrame(
        {"case_id": ids, "metric": "faithfulness", "rater": "gpt-judge", "rater_kind": "judge", "value": score}
    )
    pd.concat([pd.read_csv(folder / "ratings.csv"), judge]).to_csv(folder / "ratings.csv", index=False)
    drawn = run_cli("sample", folder, "--n", "30", "--strategy", "threshold", "--threshold", "0.5", "--json")
    assert drawn.returncode == 0, drawn.stderr
    doc = json.loads(drawn.stdout)
    assert doc["design"]["judge"] == "gpt-judge" and doc["design"]["strata"]["near"]["sampled"] == 15
    # humans label the sample: they pass what the judge scores above 0.5, except near the threshold
    labels = pd.DataFrame(
        {
            "case_id": doc["case_ids"],
            "metric": "faithfulness",
            "rater": "ann",
            "rater_kind": "human",
            "value": [int(score[ids.index(c)] >= 0.6) for c in doc["case_ids"]],
        }
    )
    pd.concat([pd.read_csv(folder / "ratings.csv"), labels]).to_csv(folder / "ratings.csv", index=False)
    table = run_cli("stats", folder, "--n-boot", "100")
    assert table.returncode == 0, table.stderr
    assert "weighted by inverse inclusion probability: 30 from threshold-0 (threshold" in table.stdout
    assert "came from no recorded sample" in table.stdout  # the two labels of the campaign's lead
    report = run_cli("report", folder, "--out", tmp_path / "report")
    assert report.returncode == 0, report.stderr
    html = (tmp_path / "report" / "report.html").read_text()
    assert "weighted by the inverse of its inclusion probability" in html
    pilot = run_cli("sample", folder, "--n", "20", "--strategy", "neyman")
    assert pilot.returncode == 0 and (folder / "samples" / "neyman-pilot-0.csv").exists()
    assert "run the neyman strategy again" in pilot.stdout
