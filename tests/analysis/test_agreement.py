"""compute_stats and recommend_thresholds through the public API."""

import numpy as np
import pandas as pd
import pytest

import calibrate
from calibrate import Rule, campaign_from_frames, compute_stats, load_campaign, recommend_thresholds

ORDINAL = {
    "name": "sim",
    "metrics": {"m": {"scale": "ordinal", "levels": [0, 1, 2, 3], "human_pass": 2}},
    "raters": {"j": {"on_metric_scale": True}},
}


def campaign_of(human, judges: dict, config=ORDINAL, case_prefix="c"):
    n = len(human)
    ids = [f"{case_prefix}{i:05d}" for i in range(n)]
    frames = [pd.DataFrame({"case_id": ids, "metric": "m", "rater": "h", "rater_kind": "human", "value": human})]
    for name, values in judges.items():
        frames.append(
            pd.DataFrame({"case_id": ids, "metric": "m", "rater": name, "rater_kind": "judge", "value": values})
        )
    return campaign_from_frames(config, pd.concat(frames, ignore_index=True))


# ----------------------------------------------------------------------------------- coverage
def _population(size=200_000, seed=11):
    rng = np.random.default_rng(seed)
    human = rng.choice(4, size=size, p=[0.45, 0.28, 0.18, 0.09])
    judge = np.where(rng.random(size) < 0.55, human, rng.choice(4, size=size, p=[0.4, 0.3, 0.2, 0.1]))
    return human.astype(float), judge.astype(float)


@pytest.mark.slow
@pytest.mark.parametrize("n", [50, 300])
def test_intervals_cover_about_95_percent(n):
    """Nominal 95% intervals of Spearman rho, Kendall tau-b, kappa, ROC AUC (BCa) and a false-pass rate
    (Wilson) contain the population value in about 95% of samples (the README's honest promise:
    93-97% at n = 50)."""
    from scipy import stats
    from sklearn.metrics import cohen_kappa_score, roc_auc_score

    human, judge = _population()
    truth = {
        "spearman": stats.spearmanr(human, judge).statistic,
        "kendall": stats.kendalltau(human, judge).statistic,
        "kappa": cohen_kappa_score(human, judge),
        "auc": roc_auc_score(human >= 2, judge),
        "fp": float(((judge >= 2) & (human < 2)).sum() / (human < 2).sum()),
    }
    rng = np.random.default_rng(n)
    reps = 300
    hits = {k: 0 for k in truth}
    for _ in range(reps):
        idx = rng.integers(0, human.size, n)
        doc = compute_stats(campaign_of(human[idx], {"j": judge[idx]}), n_boot=1000, seed=int(rng.integers(1e9)))
        j = doc["metrics"][0]["judges"][0]
        for key in ("spearman", "kendall", "kappa", "auc"):
            hits[key] += j[key]["ci_low"] <= truth[key] <= j[key]["ci_high"]
        point = next(p for p in j["curve"] if p["threshold"] == 2.0)
        hits["fp"] += point["false_pass_rate_ci"][0] <= truth["fp"] <= point["false_pass_rate_ci"][1]
    coverage = {k: v / reps for k, v in hits.items()}
    print(f"coverage at n = {n} over {reps} samples:", {k: round(float(v), 3) for k, v in coverage.items()})
    assert all(0.91 <= c <= 0.985 for c in coverage.values()), coverage


# ------------------------------------------------------------------------------------ the document
@pytest.fixture(scope="module")
def small_doc(tmp_path_factory):
    from tests.conftest import BINARY_TOML, write_campaign

    rng = np.random.default_rng(3)
    human = (rng.random(80) < 0.4).astype(int)
    a = np.clip(human * 0.45 + rng.normal(0.3, 0.2, 80), 0, 1).round(2)
    frame = pd.DataFrame(
        {
            "case_id": [f"c{i}" for i in range(80)] * 3,
            "metric": "faithfulness",
            "rater": ["ann"] * 80 + ["judge-a"] * 80 + ["judge-b"] * 80,
            "rater_kind": ["human"] * 80 + ["judge"] * 160,
            "value": np.r_[human, a, a],
        }
    )
    cases = [
        {
            "case_id": f"c{i}",
            "input": "q",
            "metadata": {"question_type": "how" if i % 2 else "what", "generator_family": "gpt"},
        }
        for i in range(80)
    ]
    folder = write_campaign(tmp_path_factory.mktemp("doc"), BINARY_TOML, frame, cases)
    return compute_stats(load_campaign(folder), n_boot=500, seed=5, by="question_type")


def test_document_has_every_statistic_with_interval_and_method(small_doc):
    metric = small_doc["metrics"][0]
    assert metric["metric"] == "faithfulness" and metric["n_cases"] == 80
    judge = metric["judges"][0]
    for key in ("spearman", "kendall", "pass_kappa", "auc", "accuracy", "balanced_accuracy"):
        stat = judge[key]
        assert stat["ci_low"] <= stat["estimate"] <= stat["ci_high"], key
        assert stat["ci_method"] and stat["ci_width"] == pytest.approx(stat["ci_high"] - stat["ci_low"])
    for key in ("kappa", "kappa_quadratic", "alpha"):
        assert judge[key]["estimate"] is None and "scale" in judge[key]["reason"]
    assert judge["pass_threshold"]["threshold"] is not None and judge["pass_threshold"]["rule"]["kind"] == "constraint"
    assert judge["pass_kappa"]["threshold"] == judge["pass_threshold"]["threshold"]
    assert "false-pass rate <= 0.2" in judge["pass_kappa"]["rule"]
    assert set(judge["curve"][0]) >= {"threshold", "false_pass_rate", "false_fail_rate", "n_false_pass", "n_false_fail"}
    assert small_doc["manifest"]["seed"] == 5 and small_doc["manifest"]["data_hash"].startswith("sha256:")


def test_identical_judges_get_identical_intervals_because_resamples_are_shared(small_doc):
    a, b = small_doc["metrics"][0]["judges"]
    for key in ("spearman", "kendall", "auc", "pass_kappa"):
        assert a[key] == b[key]


def test_same_seed_same_interval_other_seed_other_interval():
    rng = np.random.default_rng(0)
    human = rng.integers(0, 4, 120).astype(float)
    judge = np.clip(human + rng.integers(-1, 2, 120), 0, 3)
    c = campaign_of(human, {"j": judge})
    first, again, other = (compute_stats(c, n_boot=300, seed=s)["metrics"][0]["judges"][0] for s in (1, 1, 2))
    assert first["kappa"] == again["kappa"] and first["spearman"] == again["spearman"]
    assert first["kappa"]["ci_low"] != other["kappa"]["ci_low"]


def test_fisher_z_below_fifty_cases_bca_from_fifty():
    rng = np.random.default_rng(1)
    human = rng.integers(0, 4, 60).astype(float)
    judge = np.clip(human + rng.integers(-1, 2, 60), 0, 3)
    small = compute_stats(campaign_of(human[:30], {"j": judge[:30]}), n_boot=200)["metrics"][0]["judges"][0]
    large = compute_stats(campaign_of(human, {"j": judge}), n_boot=200)["metrics"][0]["judges"][0]
    assert small["spearman"]["ci_method"] == "Fisher z, Bonett-Wright SE"
    assert small["kendall"]["ci_method"] == "Fisher z, Fieller SE"
    assert large["spearman"]["ci_method"].startswith("BCa")


def test_slices_bottom_decile_worst_misses_errors_and_family_warning(small_doc):
    metric = small_doc["metrics"][0]
    assert [s["value"] for s in metric["slices"]] == ["how", "what"]
    assert sum(s["n_cases"] for s in metric["slices"]) == 80
    judge = metric["judges"][0]
    assert judge["bottom_decile"]["n"] == 8 and len(judge["bottom_decile"]["cases"]) == 8
    misses = judge["worst_misses"]
    scores = [m["score"] for m in misses["false_passes"]]
    assert scores == sorted(scores, reverse=True) and all(m["human"] == 0 for m in misses["false_passes"])
    assert any("gpt family" in w for w in metric["warnings"])


def test_undefined_statistics_have_reasons():
    one_class = compute_stats(campaign_of([3.0] * 10, {"j": [0, 1, 2, 3, 3, 2, 1, 0, 1, 2]}), n_boot=100)
    judge = one_class["metrics"][0]["judges"][0]
    assert judge["auc"] == {"estimate": None, "reason": judge["auc"]["reason"]} and "AUC" in judge["auc"]["reason"]
    assert judge["spearman"]["estimate"] is None and "constant" in judge["spearman"]["reason"]
    tiny = compute_stats(campaign_of([1.0], {"j": [1.0]}), n_boot=100)["metrics"][0]["judges"][0]
    assert tiny["spearman"]["estimate"] is None and "need 2" in tiny["spearman"]["reason"]
    assert any("under 50" in w for w in one_class["metrics"][0]["warnings"])


def test_failed_judge_ratings_are_counted(small_campaign):
    doc = compute_stats(load_campaign(small_campaign), n_boot=100)
    judge_b = next(j for j in doc["metrics"][0]["judges"] if j["judge"] == "judge-b")
    assert judge_b["n_errors"] == 1 and judge_b["n"] == 59
    assert any("judge-b: 1 failed rating" in w for w in doc["metrics"][0]["warnings"])


def test_engine_mismatch_is_an_error_not_a_result(monkeypatch):
    from calibrate.stats import library

    real = library.point_estimates
    monkeypatch.setattr(library, "point_estimates", lambda *a, **k: {**real(*a, **k), "kappa": 0.123456})
    with pytest.raises(library.EngineMismatch, match="kappa"):
        compute_stats(campaign_of([0, 1, 2, 3, 2], {"j": [0, 1, 2, 2, 3]}), n_boot=50)


# ------------------------------------------------------------------------------------ thresholds
def _threshold_campaign():
    # 100 human fails with scores spread 0..0.99 and 100 passes with scores 0.5..0.99, judge in 0-1
    scores_fail = np.round(np.linspace(0, 0.99, 100), 2)
    scores_pass = np.round(np.linspace(0.5, 0.99, 100), 2)
    config = {"name": "t", "metrics": {"m": {"scale": "binary"}}}
    return campaign_of(np.r_[np.zeros(100), np.ones(100)], {"j": np.r_[scores_fail, scores_pass]}, config)


def test_constraint_rule_and_conservative_variant():
    c = _threshold_campaign()
    plain = recommend_thresholds(c, metric="m", rule=Rule("constraint", max_false_pass=0.1), n_boot=300)
    rec = plain["recommendations"][0]
    assert rec["threshold"] == 0.9 and rec["false_pass_rate"] == pytest.approx(0.10)
    assert rec["false_pass_rate_ci"][0] < 0.1 < rec["false_pass_rate_ci"][1]
    assert rec["threshold_ci"][0] <= 0.9 <= rec["threshold_ci"][1]
    careful = recommend_thresholds(
        c, metric="m", rule=Rule("constraint", max_false_pass=0.1, confidence=0.95), n_boot=300
    )["recommendations"][0]
    assert careful["threshold"] > rec["threshold"] and careful["false_pass_rate"] < 0.1
    assert rec["deepeval_default"]["false_pass_rate"]["estimate"] == pytest.approx(0.5)
    assert set(rec) >= {
        "metric",
        "judge",
        "rule",
        "threshold",
        "threshold_ci",
        "false_pass_rate",
        "false_pass_rate_ci",
        "false_fail_rate",
        "false_fail_rate_ci",
        "n_human_pass",
        "n_human_fail",
        "warnings",
    }


def _brute_force_cost(human, score, cfp, cff, prevalence=None):
    """The cost rule by exhaustive search: every distinct score as a threshold, plus failing everything."""
    best, best_cost = None, np.inf
    for t in sorted(set(score)) + [None]:
        passed = score >= t if t is not None else np.zeros(score.size, bool)
        fp, ff = np.sum(passed & (human == 0)), np.sum(~passed & (human == 1))
        if prevalence is None:
            cost = cfp * fp + cff * ff
        else:
            cost = cfp * (1 - prevalence) * fp / np.sum(human == 0) + cff * prevalence * ff / np.sum(human == 1)
        if cost < best_cost - 1e-12:
            best, best_cost = t, cost
    return best


@pytest.mark.parametrize(
    "cfp, cff, prevalence", [(1, 1, None), (5, 1, None), (1, 5, None), (1, 1, 0.05), (2, 1, 0.5), (1, 3, 0.9)]
)
def test_cost_rule_matches_exhaustive_search(cfp, cff, prevalence):
    rng = np.random.default_rng(4)
    human = (rng.random(150) < 0.4).astype(float)
    score = np.clip(0.35 * human + rng.beta(2, 3, 150), 0, 1).round(2)
    c = campaign_of(human, {"j": score}, {"name": "t", "metrics": {"m": {"scale": "binary"}}})
    rule = Rule("cost", cost_false_pass=cfp, cost_false_fail=cff, prevalence=prevalence)
    rec = recommend_thresholds(c, metric="m", rule=rule, n_boot=100)["recommendations"][0]
    assert rec["threshold"] == _brute_force_cost(human, score, cfp, cff, prevalence)


def test_judge_that_cannot_meet_the_ceiling_says_so():
    config = {"name": "t", "metrics": {"m": {"scale": "binary"}}}
    # a pass/fail judge that passes half the human fails
    c = campaign_of(np.r_[np.zeros(60), np.ones(60)], {"j": np.r_[np.tile([0, 1], 30), np.ones(60)]}, config)
    rec = recommend_thresholds(c, metric="m", rule=Rule("constraint", max_false_pass=0.1), n_boot=100)[
        "recommendations"
    ][0]
    assert rec["threshold"] is None
    assert any("except failing every case" in w and "cannot serve the gate" in w for w in rec["warnings"])


def test_under_fifty_labels_warns_and_lower_is_better_flips():
    config = {
        "name": "t",
        "metrics": {"m": {"scale": "binary"}},
        "raters": {"hallucination": {"higher_is_better": False}},
    }
    human = np.r_[np.zeros(15), np.ones(15)]
    prob = np.r_[np.linspace(0.6, 0.95, 15), np.linspace(0.05, 0.5, 15)].round(2)
    c = campaign_of(human, {"hallucination": prob}, config)
    rec = recommend_thresholds(c, metric="m", rule=Rule("constraint", max_false_pass=0.0), n_boot=100)[
        "recommendations"
    ][0]
    assert rec["pass_rule"] == "score <= threshold" and rec["threshold"] == 0.5
    assert rec["false_fail_rate"] == 0.0
    assert any("not yet trustworthy" in w for w in rec["warnings"])
    stats = compute_stats(c, n_boot=100)["metrics"][0]["judges"][0]
    assert stats["spearman"]["estimate"] > 0.8 and stats["auc"]["estimate"] == 1.0


def test_unknown_metric_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown metric nope"):
        compute_stats(_threshold_campaign(), metrics=["nope"])


def test_public_api_exports():
    assert set(calibrate.__all__) >= {"load_campaign", "compute_stats", "recommend_thresholds", "write_report", "Rule"}


def test_a_judge_of_the_generators_family_on_every_case_is_said_once_not_listed(tmp_path):
    """Item 8 of issue 26: the self-family note lists no ids when every case is affected."""
    import pandas as pd

    from calibrate import campaign_from_frames, compute_stats

    cases = [
        {"case_id": f"c{i}", "input": "q", "actual_output": "a", "metadata": {"generator_family": "gpt"}}
        for i in range(30)
    ]
    rows = [
        {"case_id": f"c{i}", "metric": "f", "rater": who, "rater_kind": kind, "value": v}
        for i in range(30)
        for who, kind, v in (("h", "human", i % 2), ("j", "judge", (i % 2) * 0.8 + 0.1))
    ]
    campaign = campaign_from_frames(
        {"name": "n", "metrics": {"f": {"scale": "binary"}}, "raters": {"j": {"family": "gpt"}}},
        pd.DataFrame(rows),
        cases,
    )
    notes = compute_stats(campaign, n_boot=0)["metrics"][0]["warnings"]
    said = [n for n in notes if "family" in n]
    assert said == [
        "judge j is of the gpt family, as the generator of every case (30): a judge may favour its own "
        "family's answers; rate them with a judge of another family to compare"
    ]
