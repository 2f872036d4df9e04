"""The test against chance a verdict reads: its level (chance_level), the labels at which a separation seen
so far would be shown (labels_to_beat_chance), and what a verdict says when it is not (chance_shortfall)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.stats import norm

from calibrate.analysis.chance import (
    LOOSEST_CHANCE_LEVEL,
    MOST_LABELS_RATIO,
    SIGN_Z,
    chance_level,
    chance_shortfall,
    labels_to_beat_chance,
)
from calibrate.analysis.verdict_statuses import NEEDS_LABELS, NOT_DEFENSIBLE, NOT_SHOWN


@pytest.mark.parametrize(
    ("confidence", "level"), [(0.95, 0.025), (0.99, 0.005), (0.999, 0.0005), (0.5, 0.025), (0.0, 0.025)]
)
def test_the_level_is_half_the_rest_and_never_looser_than_the_loosest(confidence, level):
    assert chance_level(confidence) == level <= LOOSEST_CHANCE_LEVEL


def test_the_level_at_a_confidence_near_one_is_not_zero():
    assert 0 < chance_level(1 - 1e-12) < 1e-12


def test_a_p_already_under_the_level_needs_the_labels_it_has():
    assert labels_to_beat_chance(0.01, 40, level=0.025) == 40


@pytest.mark.parametrize("p", [0.4, 0.5, 0.9, math.nan, float(norm.sf(SIGN_Z)) + 1e-6])
def test_no_sign_of_separating_gives_no_count(p):
    assert labels_to_beat_chance(p, 100, level=0.025) is None


def test_the_docstring_counts():
    assert labels_to_beat_chance(0.031, 50, level=0.025) == 56
    assert labels_to_beat_chance(0.10, 30, level=0.025) == 69
    assert labels_to_beat_chance(0.025, 400, level=0.025) == 401  # at the level itself: not under it


@given(st.floats(0.001, float(norm.sf(SIGN_Z))), st.integers(4, 2000), st.sampled_from([0.025, 0.005]))
def test_the_count_is_the_first_at_which_z_reaches_the_target(p, n, level):
    total = labels_to_beat_chance(p, n, level=level)
    z, target = norm.isf(p), norm.isf(level)

    def z_at(labels: float) -> float:  # z with the AUC and class shares fixed, at ``labels`` in all
        c = labels / n
        return z * c * math.sqrt((n + 1) / (c * n + 1))

    if p < level:
        assert total == n
    else:
        assert total > n and z_at(total) >= target - 1e-9
        assert total == n + 1 or z_at(total - 1) < target + 1e-9


def separation(auc: float, p: float, n_pass: int, n_fail: int) -> dict:
    return {"separation": {"auc": auc, "chance_p": p, "n_pass": n_pass, "n_fail": n_fail}}


def test_no_separation_or_one_shown_has_no_shortfall():
    assert chance_shortfall({}, 0.95, 50) is None
    assert chance_shortfall({"separation": None}, 0.95, 50) is None
    assert chance_shortfall(separation(0.9, 0.001, 40, 10), 0.95, 50) is None


def test_a_separation_just_short_says_how_many_more_labels_and_fails():
    short = chance_shortfall(separation(0.7, 0.031, 40, 10), 0.95, 50)
    assert short == {
        "status": NEEDS_LABELS,
        "labels": 6,
        "human_fails": 2,
        "total": 56,
        "text": (
            "not shown better than chance yet: about 6 more labels (2 human fails) would settle it "
            "(AUC 0.70, one-sided Mann-Whitney p = 0.031 on 40 passes and 10 fails; needs p < 0.025; "
            "at this AUC, p falls under 0.025 at about 56 labels)"
        ),
    }


def test_a_weak_sign_is_no_gate_on_enough_labels_and_needs_labels_on_few():
    weak = separation(0.6, 0.10, 20, 10)  # 69 labels to show it: over twice the 30 so far
    gated = chance_shortfall(weak, 0.95, 30)
    assert gated["status"] == NOT_DEFENSIBLE and set(gated) == {"status", "text"}
    assert f"about 69 labels to show, over {MOST_LABELS_RATIO} times the 30 so far" in gated["text"]
    few = chance_shortfall(weak, 0.95, 50)
    assert few["status"] == NEEDS_LABELS and few["labels"] == 39 and few["total"] == 69


def test_no_sign_is_not_shown_on_few_labels_and_not_defensible_on_many():
    none = separation(0.52, 0.4, 12, 8)
    few, many = chance_shortfall(none, 0.95, 50), chance_shortfall(none, 0.95, 20)
    assert few["status"] == NOT_SHOWN and "not shown better than chance" in few["text"]
    assert "(on 50 labels or more, still without a sign, it is not defensible)" in few["text"]
    assert many["status"] == NOT_DEFENSIBLE and "on 20 labels their separation is under one standard" in many["text"]
    assert "higher_is_better" not in few["text"] + many["text"]


def test_scores_that_run_backwards_say_so():
    backwards = chance_shortfall(separation(0.2, 0.999, 12, 8), 0.95, 50)
    assert backwards["status"] == NOT_SHOWN
    assert backwards["text"].endswith(
        "; its scores rank human fails above passes: do its higher scores mean worse answers? "
        "(higher_is_better = false for the rater)"
    )
