"""How often the gate passes a judge whose true agreement equals the floor: at most its nominal level
(2.5%: every gate bound is one-sided at 97.5%), at n = 10, 20, 30, 50 and 100 — the simulation the
README's "The CI gate" section reports. A bootstrap interval alone let such a judge through a kappa
floor of 0.9 on 62% of samples of 10 and 7-10% of samples of 50 (every case agreeing gives the
interval [1, 1]); the gate reads the lower of it and a bound that holds there.

Each sample runs the whole gate (``run_gate`` on a campaign built from frames), with 200 resamples,
the one setting these runs change. Deterministic: fixed seeds.
"""

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from calibrate import campaign_from_frames
from calibrate.review.gate import GateRules, run_gate

SIZES = (10, 20, 30, 50, 100)
REPEATS = 400
#: the nominal level and the Monte Carlo allowance of REPEATS samples (two standard errors)
NOMINAL = 0.025
ALLOWED = NOMINAL + 2 * np.sqrt(NOMINAL * (1 - NOMINAL) / REPEATS)
PREVALENCE = 0.3  # the harder of the two prevalences simulated while choosing the bounds


def gate_passes(human: np.ndarray, judge: np.ndarray, rules: GateRules, *, seed: int) -> bool:
    n = human.size
    ids = [f"c{i:03d}" for i in range(n)]
    frame = pd.DataFrame(
        {
            "case_id": ids * 2,
            "metric": "m",
            "rater": ["ann"] * n + ["judge"] * n,
            "rater_kind": ["human"] * n + ["judge"] * n,
            "value": np.r_[human, judge],
        }
    )
    campaign = campaign_from_frames({"name": "sim", "metrics": {"m": {"scale": "binary"}}}, frame)
    check = run_gate(campaign, rules, n_boot=200, seed=seed)["checks"][0]
    # the floor alone decides here: the chance test and the label minimum are not what is measured
    floor_reasons = [r for r in check["reasons"] if r.startswith(("kappa", "pass kappa", "Spearman rho"))]
    return not floor_reasons


def flip_rate_for_kappa(kappa: float, prevalence: float) -> float:
    """The rate of symmetric verdict flips at which a judge's kappa with the humans is ``kappa``."""
    flips = np.linspace(0, 0.5, 200_001)
    judge_pass = prevalence * (1 - flips) + (1 - prevalence) * flips
    chance = prevalence * judge_pass + (1 - prevalence) * (1 - judge_pass)
    values = (1 - flips - chance) / (1 - chance)
    return float(flips[np.argmin(np.abs(values - kappa))])


def noise_for_spearman(rho: float, prevalence: float) -> float:
    """The noise sd at which score = verdict + noise has population Spearman ``rho`` with the verdict."""
    rng = np.random.default_rng(0)
    verdict = (rng.random(400_000) < prevalence).astype(float)
    noise = rng.normal(size=verdict.size)
    low, high = 0.01, 20.0
    for _ in range(50):
        sd = (low + high) / 2
        low, high = (sd, high) if stats.spearmanr(verdict, verdict + sd * noise)[0] > rho else (low, sd)
    return sd


@pytest.mark.slow
@pytest.mark.parametrize("statistic", ["kappa", "spearman"])
def test_a_judge_at_the_floor_passes_at_most_the_nominal_level(statistic):
    rng = np.random.default_rng(11 if statistic == "kappa" else 12)
    if statistic == "kappa":
        floor, rules = 0.9, GateRules(min_labels=1, min_kappa=0.9)
        flips = flip_rate_for_kappa(floor, PREVALENCE)

        def judge_of(human):
            return np.where(rng.random(human.size) < flips, 1 - human, human)
    else:
        floor, rules = 0.3, GateRules(min_labels=1, min_spearman=0.3)
        sd = noise_for_spearman(floor, PREVALENCE)

        def judge_of(human):
            return np.round(human + sd * rng.normal(size=human.size), 6)

    shares = {}
    for n in SIZES:
        passed = 0
        for r in range(REPEATS):
            human = (rng.random(n) < PREVALENCE).astype(int)
            passed += gate_passes(human, judge_of(human), rules, seed=r)
        shares[n] = passed / REPEATS
    print(
        f"{statistic} floor {floor}: share passed at the floor, by n: "
        + ", ".join(f"{n}: {share:.3f}" for n, share in shares.items())
    )
    assert all(share <= ALLOWED for share in shares.values()), shares


def test_a_judge_well_above_the_floor_still_passes():
    """The bounds are not a refusal in disguise: a judge that agrees on every one of 100 cases passes a
    0.9 kappa floor."""
    rng = np.random.default_rng(5)
    passed = sum(
        gate_passes(h, h, GateRules(min_labels=1, min_kappa=0.9), seed=r)
        for r, h in enumerate((rng.random(100) < 0.5).astype(int) for _ in range(20))
    )
    assert passed >= 18
