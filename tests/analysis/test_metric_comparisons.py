"""The judges of a metric against its humans on one case universe: which judges a command reads, each
paired (or too few), a slice of the cases, and every judge's replicates from the same resamples."""

from __future__ import annotations

import numpy as np
import pandas as pd

from calibrate.analysis.judge_comparison import JudgeComparison, TooFewCases
from calibrate.analysis.metric_comparisons import bootstrap_runs, chosen_judges, judge_comparisons
from calibrate.analysis.rules import Rule
from calibrate.campaign import campaign_from_frames

CONFIG = {"name": "t", "metrics": {"m": {"scale": "binary"}, "n": {"scale": "binary"}}}
IDS = [f"c{i}" for i in range(10)]
HUMAN = [0, 0, 0, 0, 1, 0, 1, 1, 1, 1]
RULE = Rule("fixed", threshold=0.5)


def small():
    rows = [(c, "m", "h", "human", h) for c, h in zip(IDS, HUMAN)]
    rows += [(c, "n", "h", "human", h) for c, h in zip(IDS, HUMAN)]
    rows += [(c, "m", "a", "judge", 0.1 * i) for i, c in enumerate(IDS)]
    rows += [(c, "m", "b", "judge", 1 - 0.1 * i) for i, c in enumerate(IDS)]
    rows += [("c3", "m", "one", "judge", 0.9), ("c1", "n", "a", "judge", 0.2)]
    frame = pd.DataFrame(rows, columns=["case_id", "metric", "rater", "rater_kind", "value"])
    return campaign_from_frames(CONFIG, frame)


def test_the_judges_a_command_reads():
    c = small()
    assert [j.name for j in chosen_judges(c, ["m"], None)] == ["a", "b", "one"]
    named = chosen_judges(c, ["m", "n"], ["a"])
    assert [(j.name, j.case_ids.size) for j in named] == [("a", 10), ("a", 1)]  # its m ratings, then its n one


def test_every_judge_is_paired_with_the_humans_or_too_few():
    compared = judge_comparisons(small(), "m", None, RULE)
    assert [type(j) for j in compared.judges] == [JudgeComparison, JudgeComparison, TooFewCases]
    assert [j.judge.name for j in compared.comparisons] == ["a", "b"]
    assert sorted(compared.universe.tolist()) == IDS and compared.design.weights is None
    assert compared.reference.case_ids.size == 10


def test_a_slice_of_the_cases_is_its_own_universe():
    compared = judge_comparisons(small(), "m", ["a"], RULE, case_filter={"c0", "c5", "c9", "zz"})
    assert sorted(compared.universe.tolist()) == ["c0", "c5", "c9"]
    (only,) = compared.comparisons
    assert only.n == 3 and sorted(only.case_ids.tolist()) == ["c0", "c5", "c9"]


def resampled(n_boot: int, seed: int):
    compared = judge_comparisons(small(), "m", None, RULE)
    seen: list[tuple] = []
    bootstrap_runs(
        compared.comparisons,
        compared.design,
        n_boot=n_boot,
        seed=seed,
        progress=lambda done, total, label: seen.append((done, total, label)),
        label="m",
    )
    assert seen and seen[-1][:2] == (n_boot, n_boot) and seen[-1][2] == "bootstrap m"
    return compared


def auc(c: JudgeComparison) -> np.ndarray:
    return np.concatenate(c.replicates["auc"])


def test_every_judge_is_resampled_on_the_same_cases_and_a_seed_repeats():
    first, again, other = resampled(40, seed=3), resampled(40, seed=3), resampled(40, seed=4)
    a, b = first.comparisons
    # judge b is judge a reversed: on every shared resample their AUCs add up to 1
    assert auc(a).shape == (40,) and np.allclose(auc(a) + auc(b), 1, equal_nan=True)
    assert np.array_equal(auc(a), auc(again.comparisons[0]), equal_nan=True)
    assert not np.array_equal(auc(a), auc(other.comparisons[0]), equal_nan=True)


def test_no_judge_no_resample():
    compared = judge_comparisons(small(), "m", ["one"], RULE)
    bootstrap_runs(compared.comparisons, compared.design, n_boot=10, seed=0, progress=None, label="m")
    assert compared.comparisons == []
