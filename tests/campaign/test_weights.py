"""How much each human-labelled case counts, from the sample designs that chose it
(calibrate/campaign/weights.py)."""

from types import SimpleNamespace

import numpy as np
import pytest

from calibrate.campaign.weights import OUTSIDE, design_weights, kish_effective_n


def sample(cases, strata, probabilities, **design):
    return {"design": design, "case_ids": cases, "strata": strata, "inclusion_probability": np.array(probabilities)}


def weights_of(samples, cases):
    return design_weights(SimpleNamespace(samples=samples), np.array(cases))


def test_kish_effective_n():
    assert kish_effective_n(np.ones(10)) == 10.0
    assert kish_effective_n(np.array([1.0, 1.0, 4.0])) == 2.0
    assert kish_effective_n(np.array([])) == 0.0


def test_no_recorded_sample_counts_every_case_once():
    dw = weights_of({}, ["a", "b"])
    assert dw.weights is None and dw.strata.tolist() == [0, 0] and dw.designs == []


def test_a_case_stands_for_one_over_its_inclusion_probability():
    dw = weights_of(
        {"s": sample(["a", "b", "c"], ["near", "far", "far"], [0.5, 0.1, 0.1], strategy="threshold", n=3)},
        ["a", "b", "c"],
    )
    assert dw.weights.tolist() == pytest.approx(np.array([2, 10, 10]) * 3 / 22)  # scaled to the number of cases
    assert dw.strata[1] == dw.strata[2] != dw.strata[0]
    (design,) = dw.designs
    assert design["sample"] == "s" and design["strategy"] == "threshold" and design["labelled"] == 3
    assert design["effective_n"] == pytest.approx(kish_effective_n(np.array([2.0, 10, 10])))
    assert design["weight_share"] == pytest.approx(1.0) and dw.n_outside == 0 and dw.outside_cases == ()


def test_designs_mix_in_proportion_to_their_effective_sizes():
    dw = weights_of({"s": sample(["a", "b"], ["x", "y"], [0.5, 0.1], strategy="threshold")}, ["a", "b", "c", "d"])
    shares = {d["sample"]: d["weight_share"] for d in dw.designs}
    effective = kish_effective_n(np.array([2.0, 10.0]))
    assert shares["s"] == pytest.approx(effective / (effective + 2))
    assert shares[OUTSIDE] == pytest.approx(2 / (effective + 2))
    assert dw.outside_cases == ("c", "d") and dw.n_outside == 2
    assert dw.weights.sum() == pytest.approx(4) and dw.weights[2] == dw.weights[3]


def test_an_equal_probability_sample_needs_no_weights_but_keeps_its_strata():
    dw = weights_of(
        {"s": sample(["a", "b", "c", "d"], ["x", "x", "y", "y"], [0.2] * 4, strategy="stratified")},
        ["a", "b", "c", "d"],
    )
    assert dw.weights is None
    assert dw.strata.tolist() == [0, 0, 1, 1]


def test_the_first_design_that_chose_a_case_is_the_one_it_counts_in():
    samples = {
        "first": sample(["a", "b"], ["x", "x"], [0.5, 0.5], created="2026-01-01"),
        "second": sample(["b", "c"], ["y", "y"], [0.1, 0.1], created="2026-02-01"),
    }
    dw = weights_of(samples, ["a", "b", "c"])
    assert {d["sample"]: d["labelled"] for d in dw.designs} == {"first": 2, "second": 1}


def test_a_later_step_of_a_neyman_series_gives_every_earlier_step_its_probabilities():
    samples = {
        "step1": sample(["a", "b"], ["low", "high"], [0.5, 0.5], created="2026-01-01"),
        "step2": {
            **sample(["c"], ["high"], [0.9], created="2026-01-02", series=["step1"]),
        },
    }
    samples["step2"]["design"]["strata"] = {
        "low": {"inclusion_probability": 0.25},
        "high": {"inclusion_probability": 0.75},
    }
    dw = weights_of(samples, ["a", "b", "c"])
    assert [d["sample"] for d in dw.designs] == ["step2"]
    raw = np.array([1 / 0.25, 1 / 0.75, 1 / 0.9])  # step1's cases read at step2's stratum probabilities
    assert dw.weights.tolist() == pytest.approx(raw * 3 / raw.sum())
