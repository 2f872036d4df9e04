"""calibrate audit: paired intervals, McNemar, flips, drift, the decision and its exit code."""

import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from statsmodels.stats.contingency_tables import mcnemar

import calibrate
from calibrate import campaign_from_frames
from calibrate.review.audit import STATISTIC_SPANS, audit_judges
from tests.conftest import run_cli

ORDINAL = {
    "name": "sim",
    "metrics": {"m": {"scale": "ordinal", "levels": [0, 1, 2, 3], "human_pass": 2, "max_false_pass": 0.2}},
}
OLD, NEW = "RMITIR-llama70B", "RMITIR-GPT4o"  # one team's prompt with two model families


@pytest.fixture(scope="module")
def demo():
    return calibrate.load_campaign(calibrate.demo_campaign_path(), out_of_scale="drop")


@pytest.fixture(scope="module")
def demo_audit(demo):
    return audit_judges(demo, metric="relevance", old=OLD, new=NEW, n_boot=500)


def frame(human, judges, run_ids=None):
    ids = [f"c{i:05d}" for i in range(len(human))]
    frames = [pd.DataFrame({"case_id": ids, "metric": "m", "rater": "h", "rater_kind": "human", "value": human})]
    for name, values in judges.items():
        rater, _, run = name.partition("@")
        frames.append(
            pd.DataFrame(
                {"case_id": ids, "metric": "m", "rater": rater, "rater_kind": "judge", "value": values, "run_id": run}
            )
        )
    return pd.concat(frames, ignore_index=True)


@pytest.mark.slow
def test_the_paired_interval_of_a_change_covers_the_population_change():
    """Two judges of different noise on one population: the interval of the change in Spearman's rho
    (new minus old, paired) covers the population change in about 95% of samples, and is narrower than
    the two judges' own intervals combined as if independent."""
    rng = np.random.default_rng(7)
    size = 200_000
    human = rng.choice(4, size=size, p=[0.45, 0.28, 0.18, 0.09]).astype(float)
    old = np.clip(human / 3 + rng.normal(0, 0.35, size), 0, 1).round(2)
    new = np.clip(human / 3 + rng.normal(0, 0.25, size), 0, 1).round(2)
    truth = stats.spearmanr(human, new).statistic - stats.spearmanr(human, old).statistic
    hits, narrower, reps, n = 0, 0, 150, 200
    for _ in range(reps):
        idx = rng.integers(0, size, n)
        c = campaign_from_frames(ORDINAL, frame(human[idx], {"old": old[idx], "new": new[idx]}))
        doc = audit_judges(c, metric="m", old="old", new="new", n_boot=500, seed=int(rng.integers(1e9)))
        ch = doc["changes"]["spearman"]
        hits += ch["ci_low"] <= truth <= ch["ci_high"]
        widths = [doc[k]["spearman"]["ci_width"] for k in ("old", "new")]
        narrower += ch["ci_width"] < np.hypot(*widths)
    print(f"paired change interval coverage: {hits / reps:.3f}; narrower than unpaired in {narrower}/{reps}")
    assert 0.9 <= hits / reps <= 0.99 and narrower >= 0.9 * reps


def test_mcnemar_and_flips_from_the_verdicts(demo, demo_audit):
    r = demo.ratings
    human = r[r["rater_kind"] == "human"].set_index("case_id")["value"]
    scores = {k: r[r["rater"] == k].set_index("case_id")["value"] for k in (OLD, NEW)}
    ids = sorted(set(scores[OLD].index) & set(scores[NEW].index))
    passes = human[ids].to_numpy() >= 2
    right = {
        k: (scores[k][ids].to_numpy() >= demo_audit[side]["pass_threshold"]["threshold"]) == passes
        for k, side in ((OLD, "old"), (NEW, "new"))
    }
    table = [
        [np.sum(right[OLD] & right[NEW]), np.sum(right[OLD] & ~right[NEW])],
        [np.sum(~right[OLD] & right[NEW]), np.sum(~right[OLD] & ~right[NEW])],
    ]
    mc = demo_audit["mcnemar"]
    assert [[mc["both_right"], mc["only_old_right"]], [mc["only_new_right"], mc["both_wrong"]]] == table
    assert mc["p_value"] == pytest.approx(mcnemar(np.array(table), exact=False, correction=True).pvalue)
    flips = demo_audit["flips"]
    assert (flips["n_toward_human"], flips["n_away_from_human"]) == (table[1][0], table[0][1])
    row = flips["toward_human"][0]
    assert row["new_pass"] == (row["human"] >= 2) != row["old_pass"] and "input" in row
    spearman = demo_audit["changes"]["spearman"]
    assert spearman["change"] == pytest.approx(
        stats.spearmanr(human[ids], scores[NEW][ids]).statistic
        - stats.spearmanr(human[ids], scores[OLD][ids]).statistic
    )


def test_drift_and_the_remapped_thresholds(demo, demo_audit):
    drift = demo_audit["drift"]
    assert drift["mean_shift"] == pytest.approx(drift["new"]["mean"] - drift["old"]["mean"])
    keep = drift["keep_false_pass_rate"]
    assert keep["old_false_pass_rate"] == pytest.approx(demo_audit["changes"]["false_pass_rate"]["old"])
    assert keep["new_threshold"] is not None
    # the new judge's pass rate at each of its scores: the re-mapped threshold's is the closest to the old one
    new = demo.ratings[demo.ratings["rater"] == NEW]
    old = demo.ratings[demo.ratings["rater"] == OLD]
    new = new[new["case_id"].isin(old["case_id"])]["value"].to_numpy()
    keep = drift["keep_pass_rate"]
    gaps = {s: abs(np.mean(new >= s) - keep["old_pass_rate"]) for s in np.unique(new)}
    assert keep["new_threshold"] == min(gaps, key=gaps.get)
    assert keep["new_pass_rate"] == pytest.approx(np.mean(new >= keep["new_threshold"]))


@pytest.mark.parametrize(
    "old, new, options, decision, code",
    [
        # Spearman within the margin, but the AUC, alpha and the false-fail rate fell (issue 26)
        (OLD, NEW, ["--statistic", "spearman", "--margin", "0.05"], "worse on other statistics", 1),
        (OLD, NEW, ["--statistic", "alpha", "--margin", "0.02"], "inferior", 1),
        (OLD, NEW, ["--statistic", "spearman", "--margin", "0.03"], "inconclusive", 1),
        # the new judge passes fewer human fails, and fails more human passes
        (OLD, NEW, ["--statistic", "false_pass_rate", "--margin", "0"], "worse on other statistics", 1),
        ("NISTRetrieval-instruct0", OLD, ["--statistic", "spearman", "--margin", "0.05"], "non-inferior", 0),
    ],
)
def test_decision_and_exit_code(old, new, options, decision, code):
    run = run_cli(
        "audit",
        str(calibrate.demo_campaign_path()),
        "--metric",
        "relevance",
        "--old",
        old,
        "--new",
        new,
        "--out-of-scale",
        "drop",
        "--n-boot",
        "500",
        "--json",
        *options,
    )
    doc = json.loads(run.stdout)
    assert (doc["decision"]["decision"], run.returncode) == (decision, code), doc["decision"]


def test_the_decision_names_the_other_statistics_that_got_worse(demo, demo_audit):
    """The demo's family switch: Spearman's loss lies within the 0.05 margin, but the AUC, alpha and the
    false-fail rate fell significantly (Bonferroni-adjusted intervals), by perhaps more than their
    margins: not an upgrade to pass, and the decision says which and by how much."""
    decision, others = demo_audit["decision"], demo_audit["others"]
    assert decision["decision"] == "worse on other statistics" and decision["exit_code"] == 1
    assert "whole interval is on the good side of the margin -0.05" in decision["reason"]
    assert len(others["looked_at"]) == 9 and others["confidence"] == pytest.approx(1 - 0.05 / 9)
    worse = {row["statistic"]: row for row in decision["worse"]}
    assert {"auc", "alpha", "false_fail_rate"} <= set(worse) and "false_pass_rate" not in worse
    for key, row in worse.items():
        adjusted = demo_audit["changes"][key]["adjusted"]
        assert (row["ci_low"], row["ci_high"]) == (adjusted["ci_low"], adjusted["ci_high"])
        # wider than the 95% interval the table shows, and wholly on the bad side of no change
        assert (
            adjusted["ci_low"]
            <= demo_audit["changes"][key]["ci_low"]
            <= demo_audit["changes"][key]["ci_high"]
            <= adjusted["ci_high"]
        )
        assert (row["ci_high"] < 0) if demo_audit["changes"][key]["better"] == "higher" else (row["ci_low"] > 0)
        assert f"{key} {row['change']:+.3f}" in decision["reason"]
    assert worse["auc"]["margin"] == 0.025 and worse["alpha"]["margin"] == 0.05  # the same share of each range
    assert worse["false_fail_rate"]["status"] in ("perhaps beyond the margin", "beyond the margin")


def test_losses_within_their_margins_pass_and_are_named(demo):
    """A margin of 0.5 on Spearman's rho is a quarter of every range: the same losses, all within it,
    leave the upgrade non-inferior (exit code 0), and the reason still names them."""
    doc = audit_judges(demo, metric="relevance", old=OLD, new=NEW, n_boot=500, margin=0.5)
    decision = doc["decision"]
    assert decision["decision"] == "non-inferior" and decision["exit_code"] == 0
    assert {"auc", "alpha"} <= {row["statistic"] for row in decision["worse"]}
    assert all(row["status"] == "within the margin" for row in decision["worse"])
    assert "significantly worse, within the margin, on auc" in decision["reason"]


def test_a_shifted_scale_keeps_spearman_and_loses_kappa_and_alpha():
    """A new judge one level more lenient on the metric's own scale ranks the cases as the old one did
    (Spearman within the margin) while its agreement on the scale collapses: worse on other statistics."""
    rng = np.random.default_rng(3)
    n = 400
    human = rng.choice(4, n, p=[0.35, 0.25, 0.25, 0.15]).astype(float)
    old = np.clip(human + rng.choice([-1, 0, 1], n, p=[0.1, 0.8, 0.1]), 0, 3)
    c = campaign_from_frames(ORDINAL, frame(human, {"old": old, "new": np.clip(old + 1, 0, 3)}))
    doc = audit_judges(c, metric="m", old="old", new="new", n_boot=300)
    assert doc["changes"]["spearman"]["ci_low"] > -0.05
    worse = {row["statistic"]: row["status"] for row in doc["decision"]["worse"]}
    assert worse["kappa"] == worse["alpha"] == "beyond the margin"
    assert doc["decision"]["decision"] == "worse on other statistics" and doc["decision"]["exit_code"] == 1


@settings(max_examples=6, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    statistic=st.sampled_from(["spearman", "auc", "alpha", "false_pass_rate"]),
    share=st.sampled_from([0.0, 0.025, 0.2]),
)
def test_a_coin_flip_never_passes_and_a_perfect_judge_does(seed, statistic, share):
    """Against a noisy old judge, at any margin on any statistic: a perfect new judge passes (no other
    statistic worse), and a coin flip never does."""
    rng = np.random.default_rng(seed)
    n = 150
    human = rng.choice(4, n, p=[0.3, 0.3, 0.25, 0.15]).astype(float)
    noisy = np.clip(human + rng.choice([-2, -1, 0, 1, 2], n, p=[0.1, 0.2, 0.4, 0.2, 0.1]), 0, 3)
    c = campaign_from_frames(
        ORDINAL, frame(human, {"old": noisy, "perfect": human, "coin": rng.choice(4, n).astype(float)})
    )
    margin = share * STATISTIC_SPANS[statistic]
    perfect = audit_judges(
        c, metric="m", old="old", new="perfect", margin=margin, statistic=statistic, n_boot=200, seed=seed
    )
    assert perfect["decision"]["exit_code"] == 0 and not perfect["decision"].get("worse"), perfect["decision"]
    coin = audit_judges(c, metric="m", old="old", new="coin", margin=margin, statistic=statistic, n_boot=200, seed=seed)
    assert coin["decision"]["exit_code"] == 1, coin["decision"]


@pytest.mark.slow
def test_an_upgrade_that_changed_nothing_is_seldom_called_worse():
    """Two judges of the same noise on one population: the other statistics are flagged significantly
    worse in at most about 1 - confidence of samples (Bonferroni over the nine looked at)."""
    rng = np.random.default_rng(11)
    size = 100_000
    human = rng.choice(4, size=size, p=[0.45, 0.28, 0.18, 0.09]).astype(float)
    old = np.clip(human + rng.choice([-1, 0, 1], size, p=[0.15, 0.7, 0.15]), 0, 3)
    new = np.clip(human + rng.choice([-1, 0, 1], size, p=[0.15, 0.7, 0.15]), 0, 3)
    flagged, reps = 0, 100
    for _ in range(reps):
        idx = rng.integers(0, size, 200)
        c = campaign_from_frames(ORDINAL, frame(human[idx], {"old": old[idx], "new": new[idx]}))
        doc = audit_judges(c, metric="m", old="old", new="new", n_boot=500, seed=int(rng.integers(1e9)))
        flagged += bool(doc["others"]["worse"])
    print(f"an unchanged upgrade flagged worse on another statistic in {flagged}/{reps} samples")
    assert flagged / reps <= 0.08


def test_too_few_labels_is_inconclusive_and_two_runs_of_one_judge_compare():
    rng = np.random.default_rng(1)
    human = rng.choice(4, 30).astype(float)
    c = campaign_from_frames(
        ORDINAL, frame(human, {"j@v1": np.clip(human + rng.integers(-1, 2, 30), 0, 3), "j@v2": human})
    )
    doc = audit_judges(c, metric="m", old="j@v1", new="j@v2", n_boot=300)
    assert doc["decision"]["decision"] == "inconclusive" and "only 30 labelled" in doc["decision"]["reason"]
    assert doc["changes"]["spearman"]["change"] > 0 and doc["old"]["run_id"] == "v1"
    with pytest.raises(ValueError, match="several runs"):
        audit_judges(c, metric="m", old="j", new="j@v2")
    with pytest.raises(ValueError, match="both name"):
        audit_judges(c, metric="m", old="j@v2", new="j@v2")


def test_an_unknown_judge_is_a_usage_error():
    run = run_cli(
        "audit",
        str(calibrate.demo_campaign_path()),
        "--metric",
        "relevance",
        "--old",
        "nobody",
        "--new",
        NEW,
        "--out-of-scale",
        "drop",
    )
    assert run.returncode == 2 and "did not rate relevance" in run.stderr


def test_a_bigger_model_of_the_same_family(demo):
    """Llama-3 8B -> 70B on the demo data: clearly closer to the humans; the 8B judge meets the false-pass
    ceiling at no threshold, so the pass/fail comparisons are undefined with that reason."""
    doc = audit_judges(demo, metric="relevance", old="NISTRetrieval-instruct0", new="RMITIR-llama70B", n_boot=300)
    assert doc["decision"]["decision"] == "non-inferior" and doc["changes"]["spearman"]["ci_low"] > 0.05
    assert doc["changes"]["pass_kappa"]["estimate"] is None and "no threshold" in doc["changes"]["pass_kappa"]["reason"]
    assert doc["mcnemar"]["estimate"] is None and doc["old"]["pass_threshold"]["threshold"] is None
