"""calibrate plan: the labels a target interval width needs, checked by simulation on the demo data."""

import json

import numpy as np
import pytest
from statsmodels.stats.inter_rater import cohens_kappa

import calibrate
from calibrate.sampling.planning import plan_labels
from calibrate.stats.strata import score_edges, score_strata
from tests.conftest import run_cli

JUDGE = "Olz-gpt4o"
Z = 1.959963984540054


@pytest.fixture(scope="module")
def demo():
    c = calibrate.load_campaign(calibrate.demo_campaign_path(), out_of_scale="drop")
    r = c.ratings
    human = r[r["rater_kind"] == "human"].set_index("case_id")["value"].sort_index()
    judge = r[r["rater"] == JUDGE].set_index("case_id")["value"].reindex(human.index).to_numpy()
    return c, (human.to_numpy() >= 2), judge


def planned(c, statistic, width, **kw):
    doc = plan_labels(c, judge=JUDGE, width=width, **kw)
    return doc, next(s for s in doc["statistics"] if s["statistic"] == statistic)


def spread_of(estimates):
    """The width of a 95% interval the estimates' own spread gives: 2 z sd."""
    return 2 * Z * np.std(estimates)


def test_pass_rate_random_and_neyman_plans_give_the_width_asked(demo):
    c, passes, judge = demo
    _, row = planned(c, "human pass rate", 0.1)
    assert row["value"] == pytest.approx(passes.mean()) and row["labels_saved"] > 0.2 * row["labels"]["random"]
    rng = np.random.default_rng(0)
    n = row["labels"]["random"]
    uniform = [passes[rng.choice(passes.size, n, replace=False)].mean() for _ in range(2000)]
    assert 0.92 < spread_of(uniform) / 0.1 < 1.04  # a 7% finite-population correction makes it a little narrower
    # a Neyman-allocated stratified sample of the planned size, with the stratified estimator
    n = row["labels"]["neyman"]
    stratum = score_strata(judge, score_edges(judge, 5))
    shares = np.bincount(stratum) / stratum.size
    sd = np.array([passes[stratum == h].std() for h in range(shares.size)])
    allocation = np.maximum(2, np.round(n * shares * sd / np.sum(shares * sd))).astype(int)
    members = [np.flatnonzero(stratum == h) for h in range(shares.size)]
    neyman = [
        sum(shares[h] * passes[rng.choice(members[h], allocation[h], replace=False)].mean() for h in range(shares.size))
        for _ in range(2000)
    ]
    assert 0.9 < spread_of(neyman) / 0.1 < 1.06


def test_false_pass_rate_and_kappa_plans_give_the_width_asked(demo):
    c, passes, judge = demo
    doc, row = planned(c, "false-pass rate", 0.04)
    judged = judge >= doc["threshold"]
    assert row["value"] == pytest.approx(judged[~passes].mean())
    rng = np.random.default_rng(1)
    n = row["labels"]["random"]
    rates = []
    for _ in range(2000):
        pick = rng.choice(passes.size, n, replace=False)
        rates.append(judged[pick][~passes[pick]].mean())
    assert 0.9 < spread_of(rates) / 0.04 < 1.06
    _, row = planned(c, "pass/fail kappa", 0.2)
    n = row["labels"]["random"]
    kappas = []
    for _ in range(1000):
        pick = rng.choice(passes.size, n, replace=False)
        table = np.histogram2d(passes[pick], judged[pick], bins=2)[0]
        kappas.append(cohens_kappa(table).kappa)
    assert 0.88 < spread_of(kappas) / 0.2 < 1.06


def test_stated_assumptions_plan_without_labels_and_bad_values_are_refused(tmp_path):
    from tests.sampling.test_designs import make

    c = calibrate.load_campaign(make(tmp_path))
    doc = plan_labels(c, width=0.1, pass_rate=0.5, kappa=0.6)
    rows = {r["statistic"]: r for r in doc["statistics"]}
    assert rows["human pass rate"]["labels"] == {"random": 381, "stratified": None, "neyman": None}
    assert rows["human pass rate"]["source"] == "assumed" and rows["human pass rate"]["labels_saved"] is None
    assert rows["pass/fail kappa"]["labels"]["random"] > 381
    assert any("false-pass" in n for n in doc["notes"])
    with pytest.raises(ValueError, match=r"pass_rate=1.5"):
        plan_labels(c, pass_rate=1.5)
    with pytest.raises(ValueError, match="width="):
        plan_labels(c, width=0)


def test_plan_from_the_command_line(demo):
    run = run_cli(
        "plan",
        calibrate.demo_campaign_path(),
        "--judge",
        JUDGE,
        "--out-of-scale",
        "drop",
        "--width",
        "0.06",
        "--json",
        check=True,
    )
    doc = json.loads(run.stdout)
    assert doc["statistics"][0]["labels"] == {"random": 835, "stratified": 665, "neyman": 625}
    table = run_cli(
        "plan", calibrate.demo_campaign_path(), "--judge", JUDGE, "--out-of-scale", "drop", check=True
    ).stdout
    assert "human pass rate" in table and "neyman" in table


def test_a_plan_holds_at_zero_false_passes():
    """No false pass among 16 human fails planned 50 labels ("10 more needed"): p-hat = 0 gave a zero
    variance. The plan counts the human fails the rate is computed on, with an interval that holds at
    zero events (0/35 has a Wilson interval [0, 0.099])."""
    import pandas as pd

    n = 40
    human = np.array([1] * 24 + [0] * 16)
    judge = np.where(human == 1, 0.9, 0.1)
    ids = [f"c{i:02d}" for i in range(n)]
    frame = pd.DataFrame(
        {
            "case_id": ids * 2,
            "metric": "m",
            "rater": ["ann"] * n + ["j"] * n,
            "rater_kind": ["human"] * n + ["judge"] * n,
            "value": np.r_[human, judge],
        }
    )
    c = calibrate.campaign_from_frames({"name": "zero", "metrics": {"m": {"scale": "binary"}}}, frame)
    row = next(
        r
        for r in plan_labels(c, judge="j", width=0.1, threshold=0.5)["statistics"]
        if r["statistic"] == "false-pass rate"
    )
    assert row["value"] == 0.0
    assert (row["human_fails_needed"], row["human_fails"], row["more_human_fails_needed"]) == (35, 16, 19)
    assert row["labels"]["random"] == int(np.ceil(35 / (16 / 40)))  # 88 labels to find 35 fails, not 50
    from calibrate.stats.intervals import wilson_interval

    _low, high = wilson_interval(0, 35)
    assert float(high) <= 0.1 < float(wilson_interval(0, 34)[1])
