"""calibrate pass-rate: PPI++ against ppi_python, coverage and savings on the demo data, design weights."""

import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import calibrate
from calibrate.analysis.pass_rate import _merged_strata, _one, estimate_pass_rate, ppi_mean, stratified_mean
from calibrate.campaign import campaign_from_frames
from calibrate.stats.intervals import wilson_interval
from tests.conftest import run_cli

JUDGE = "Olz-gpt4o"
CONFIG = {
    "name": "pr",
    "metrics": {"relevance": {"scale": "ordinal", "levels": [0, 1, 2, 3], "human_pass": 2, "max_false_pass": 0.1}},
}


@pytest.fixture(scope="module")
def demo():
    c = calibrate.load_campaign(calibrate.demo_campaign_path(), out_of_scale="drop")
    r = c.ratings
    human = r[r["rater_kind"] == "human"].set_index("case_id")["value"].sort_index()
    score = r[r["rater"] == JUDGE].set_index("case_id")["value"].reindex(human.index).to_numpy()
    return c, (human.to_numpy() >= 2).astype(float), score


def with_labels_of(demo_campaign, keep, samples=()):
    """The demo campaign with the human labels of ``keep`` only, and the given samples recorded. Of the
    judges, only JUDGE, whose pass rate these tests estimate: the other eight judges' ratings change
    nothing of its estimate (the documents are the same with and without them), and checking them again
    in each rebuilt campaign took most of the tests' time."""
    r = demo_campaign.ratings
    sub = campaign_from_frames(
        CONFIG, r[(r["rater"] == JUDGE) | r["case_id"].isin(set(keep))], list(demo_campaign.cases.values())
    )
    for name, s in samples:
        sub.samples[name] = {
            "design": s.design,
            "case_ids": s.case_ids,
            "strata": s.strata,
            "inclusion_probability": np.array(s.inclusion_probability),
        }
    return sub


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**31 - 1), st.booleans())
def test_ppi_matches_ppi_python(seed, weighted):
    from ppi_py import ppi_mean_ci, ppi_mean_pointestimate

    rng = np.random.default_rng(seed)
    n, big_n = int(rng.integers(20, 300)), int(rng.integers(50, 3000))
    f = rng.random(n + big_n) * 3
    y = (rng.random(n + big_n) < f / 3 * 0.8 + 0.1).astype(float)
    w = rng.choice([0.5, 1.0, 4.0], n) if weighted else None
    ours = ppi_mean(y[:n], f[:n], f[n:], weights=w)
    low, high = ppi_mean_ci(y[:n], f[:n], f[n:], alpha=0.05, w=w)
    assert ours["estimate"] == pytest.approx(float(ppi_mean_pointestimate(y[:n], f[:n], f[n:], w=w)[0]), abs=1e-9)
    assert (ours["ci_low"], ours["ci_high"]) == pytest.approx((float(low[0]), float(high[0])), abs=1e-9)
    plain = ppi_mean(y[:n], f[:n], f[n:], weights=w, lam=1.0)
    low, high = ppi_mean_ci(y[:n], f[:n], f[n:], alpha=0.05, w=w, lam=1.0)
    assert (plain["ci_low"], plain["ci_high"]) == pytest.approx((float(low[0]), float(high[0])), abs=1e-9)


def test_coverage_and_savings_on_the_demo_data(demo):
    """300 labels drawn at random from the 4,423 demo cases, the rest scored by the judge only, 300 times:
    the humans-only, PPI++ and stratified intervals cover the true pass rate about 95% of the time; the
    corrected ones are narrower (about a quarter fewer labels for the same width, as measured in the
    project's label-efficiency study); plain PPI on pass/fail verdicts is *wider* than humans alone;
    the judge alone never covers."""
    _, passes, score = demo
    truth = passes.mean()
    rng = np.random.default_rng(3)
    hits = {k: 0 for k in ("humans", "ppi", "stratified", "judge")}
    widths = {k: [] for k in ("humans", "ppi", "stratified", "plain")}
    reps, n = 300, 300
    for _ in range(reps):
        pick = np.zeros(passes.size, bool)
        pick[rng.choice(passes.size, n, replace=False)] = True
        y, f, fu = passes[pick], score[pick], score[~pick]
        low, high = wilson_interval(y.sum(), n)
        ppi = ppi_mean(y, f, fu)
        stratum, shares, _ = _merged_strata(score, f, 5)
        strat = stratified_mean(y, stratum, shares)
        plain = ppi_mean(y, (f >= 2).astype(float), (fu >= 2).astype(float), lam=1.0)
        judge_low, judge_high = wilson_interval(np.sum(score >= 2), score.size)
        for key, (lo, hi) in {
            "humans": (low, high),
            "ppi": (ppi["ci_low"], ppi["ci_high"]),
            "stratified": (strat["ci_low"], strat["ci_high"]),
            "judge": (judge_low, judge_high),
        }.items():
            hits[key] += lo <= truth <= hi
        widths["humans"].append(high - low)
        widths["ppi"].append(ppi["ci_high"] - ppi["ci_low"])
        widths["stratified"].append(strat["ci_high"] - strat["ci_low"])
        widths["plain"].append(plain["ci_high"] - plain["ci_low"])
    coverage = {k: v / reps for k, v in hits.items()}
    labels = {k: float(np.mean(np.square(widths[k])) / np.mean(np.square(widths["humans"]))) for k in widths}
    print("coverage", coverage, "labels for the same width, relative to humans only", labels)
    assert all(0.92 <= coverage[k] <= 0.98 for k in ("humans", "ppi", "stratified")) and coverage["judge"] == 0
    assert 0.65 < labels["ppi"] < 0.85 and 0.65 < labels["stratified"] < 0.85 and labels["plain"] > 1.1


def test_the_sample_design_is_honoured(demo):
    """A sample focused on the judge's top scores over-represents the cases where the judge and the
    humans differ in one way: PPI's correction is biased unless the labelled cases are weighted by their
    inclusion probabilities."""
    from calibrate.sampling.designs import draw_sample

    c, passes, _ = demo
    truth = passes.mean()
    weighted, unweighted = [], []
    for seed in range(6):
        s = draw_sample(
            c,
            300,
            strategy="threshold",
            judge=JUDGE,
            threshold=2.5,
            band=0.3,
            focus=0.8,
            seed=seed,
            include_labelled=True,
        )
        weighted.append(
            estimate_pass_rate(with_labels_of(c, s.case_ids, [("d", s)]), metric="relevance", judge=JUDGE)["overall"][
                "ppi"
            ]["estimate"]
        )
        unweighted.append(
            estimate_pass_rate(with_labels_of(c, s.case_ids), metric="relevance", judge=JUDGE)["overall"]["ppi"][
                "estimate"
            ]
        )
    assert abs(np.mean(weighted) - truth) < 0.01 and abs(np.mean(unweighted) - truth) > 0.02


def test_slices_and_the_command_line(demo, tmp_path):
    c, _, _ = demo
    rng = np.random.default_rng(1)
    sub = with_labels_of(c, rng.choice(sorted(c.cases), 400, replace=False))
    doc = estimate_pass_rate(sub, metric="relevance", judge=JUDGE, by="question_type")
    assert sum(s["n_labelled"] for s in doc["slices"]) == 400
    assert sum(s["n_unlabelled"] for s in doc["slices"]) == doc["overall"]["n_unlabelled"] == 4023
    assert doc["overall"]["ppi"]["labels_saved"] > 0 and 0 < doc["overall"]["ppi"]["lam"] <= 1
    run = run_cli(
        "pass-rate",
        calibrate.demo_campaign_path(),
        "--metric",
        "relevance",
        "--judge",
        JUDGE,
        "--out-of-scale",
        "drop",
        "--json",
        check=True,
    )
    whole = json.loads(run.stdout)["overall"]
    assert whole["n_unlabelled"] == 0 and "every case" in whole["ppi"]["reason"]
    table = run_cli(
        "pass-rate",
        calibrate.demo_campaign_path(),
        "--metric",
        "relevance",
        "--judge",
        JUDGE,
        "--out-of-scale",
        "drop",
        "--by",
        "question_type",
        check=True,
    ).stdout
    assert "question_type = " in table and "humans only" in table


def _straightforward(c, by):
    """estimate_pass_rate's document, the plain way: dicts of the judge's and the humans' values per case,
    the labelled and unlabelled cases listed in id order, each slice's cases picked one by one."""
    from calibrate.analysis.recommendations import recommended_threshold
    from calibrate.campaign.weights import design_weights

    r = c.ratings
    judged = {k: v for k, v, who in zip(r["case_id"], r["value"], r["rater"]) if who == "j" and v == v}
    labels: dict[str, list[float]] = {}
    for k, v, kind in zip(r["case_id"], r["value"], r["rater_kind"]):
        if kind == "human":
            labels.setdefault(k, []).append(v)
    human = {k: sorted(v)[(len(v) - 1) // 2] for k, v in labels.items()}  # the low median
    labelled = sorted(k for k in judged if k in human)
    weights = design_weights(c, np.array(labelled)).weights
    sign = 1.0 if c.rater("j").higher_is_better else -1.0
    threshold = recommended_threshold(c, "m", "j")

    def part(keep):
        at = [i for i, k in enumerate(labelled) if keep(k)]
        return _one(
            np.array([float(human[labelled[i]] >= 1) for i in at]),
            np.array([judged[labelled[i]] for i in at]),
            np.array([judged[k] for k in sorted(judged) if k not in human and keep(k)]),
            None if weights is None else weights[at],
            threshold,
            sign,
            0.95,
            5,
        )

    doc = {"threshold": threshold, "weighted": weights is not None, "overall": part(lambda k: True)}
    if by is not None:
        value = {k: str((c.cases[k].get("metadata") or {}).get(by, "(missing)")) for k in judged}
        doc["slices"] = [
            {"key": by, "value": v, **part(lambda k, v=v: value[k] == v)} for v in sorted(set(value.values()))
        ]
    return doc


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**31 - 1), st.booleans(), st.booleans())
def test_the_vectorised_path_is_the_straightforward_one(seed, weighted, lower_is_better):
    """A small random campaign (its rows in any order, failed judge calls, one or two annotators, labels
    on cases the judge did not score, a slice key some cases lack, a sample design or none): the document
    is exactly the one plain per-case Python gives (each number to the last bit)."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(40, 400))
    ids = np.array([f"q{i:04d}" for i in rng.permutation(n)])
    labelled = rng.random(n) < rng.uniform(0.1, 0.6)
    scored = rng.random(n) < 0.9
    rows = [
        {"case_id": k, "metric": "m", "rater": a, "rater_kind": "human", "value": float(rng.integers(0, 2))}
        for k in ids[labelled]
        for a in ["a1", "a2"][: int(rng.integers(1, 3))]
    ]
    rows += [
        {"case_id": k, "metric": "m", "rater": "j", "rater_kind": "judge"}
        | ({"value": None, "error": "timeout"} if rng.random() < 0.03 else {"value": float(rng.integers(0, 50)) / 7})
        for k in ids[scored]
    ]
    cases = [
        {"case_id": k} | ({"metadata": {"topic": int(rng.integers(0, 4))}} if rng.random() < 0.9 else {}) for k in ids
    ]
    config = {
        "name": "v",
        "metrics": {"m": {"scale": "binary", "max_false_pass": 0.2}},
        "raters": {"j": {"higher_is_better": not lower_is_better}},
    }
    c = campaign_from_frames(config, pd.DataFrame(rows).iloc[rng.permutation(len(rows))], cases)
    if weighted:
        drawn = sorted(rng.choice(ids[labelled], int(labelled.sum() * 0.7), replace=False).tolist())
        c.samples["s"] = {
            "design": {"strategy": "threshold"},
            "case_ids": drawn,
            "strata": ["near" if i % 3 else "far" for i in range(len(drawn))],
            "inclusion_probability": np.array([0.6 if i % 3 else 0.05 for i in range(len(drawn))]),
        }
    doc = estimate_pass_rate(c, metric="m", judge="j", by="topic")
    plain = _straightforward(c, "topic")
    assert {k: doc[k] for k in plain} == plain


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**31 - 1), st.integers(1, 8))
def test_stratum_shares_are_the_counts_of_each_score(seed, n_strata):
    """The shares counted from the scores at or below each edge are the shares of each case's own
    stratum (score_strata, np.bincount), on scores with many ties."""
    from calibrate.stats.strata import score_strata

    rng = np.random.default_rng(seed)
    scores = rng.integers(0, int(rng.integers(2, 30)), int(rng.integers(5, 2000))) / 4
    labelled = rng.choice(scores, int(rng.integers(2, 60)))
    stratum, shares, edges = _merged_strata(scores, labelled, n_strata)
    counts = np.bincount(score_strata(scores, edges), minlength=len(edges) + 1)
    assert (
        shares.tolist() == (counts / scores.size).tolist()
        and stratum.tolist() == score_strata(labelled, edges).tolist()
    )
