"""Estimate: one figure of a statistics document, typed; it writes the figure dict it was read from, byte
for byte, and reads back what it wrote."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from calibrate.base.estimates import Estimate, finite_or_none, is_figure

finite = st.floats(allow_nan=False, allow_infinity=False, width=64)
maybe = st.one_of(st.none(), finite)
text = st.one_of(st.none(), st.text(max_size=8))
extra_keys = st.sampled_from(["chance_p", "k", "threshold", "rule", "upper_bound", "weighted", "old", "new"])


@st.composite
def figures(draw) -> dict:
    """A figure dict as calibrate writes them: undefined, or a value with its interval, then other keys."""
    if draw(st.booleans()):
        figure = {"estimate": None, "reason": draw(st.text(min_size=1, max_size=8))}
    else:
        low, high = draw(maybe), draw(maybe)
        figure = Estimate.interval(draw(finite), low, high, draw(st.text(max_size=8)), draw(text)).to_dict()
    for key in draw(st.lists(st.sampled_from(["n", "lower_bound", "lower_bound_method"]), unique=True)):
        figure[key] = draw(st.integers(0, 10**6)) if key == "n" else draw(maybe if key == "lower_bound" else text)
    for key in draw(st.lists(extra_keys, unique=True)):
        figure[key] = draw(st.one_of(maybe, st.integers(), text, st.booleans()))
    return figure


@given(figures())
def test_an_estimate_writes_the_figure_it_read_byte_for_byte(figure):
    estimate = Estimate.from_dict(figure)
    assert json.dumps(estimate.to_dict()) == json.dumps(figure)
    assert Estimate.from_dict(estimate.to_dict()) == estimate


@given(finite, maybe, maybe, st.text(max_size=8), text)
def test_an_estimate_made_reads_back_the_same(value, low, high, method, reason):
    made = Estimate.interval(value, low, high, method, reason)
    assert Estimate.from_dict(made.to_dict()) == made
    assert made.value == value and (made.ci_low is None) == (low is None or not math.isfinite(low))


def test_extra_keys_must_be_written():
    with pytest.raises(ValueError, match="chance_p"):
        Estimate(0.5, keys=("estimate",), extra={"chance_p": 0.1})


def test_a_figure_is_a_dict_with_a_plain_estimate():
    assert is_figure({"estimate": None, "reason": "one class only"})
    assert is_figure({"estimate": 0.4, "ci_low": 0.1})
    assert not is_figure({"estimate": {"a": 1}}) and not is_figure({"estimate": [1]})
    assert not is_figure({"value": 0.4}) and not is_figure(0.4) and not is_figure(None)


@pytest.mark.parametrize(
    ("value", "expected"), [(None, None), (math.nan, None), (math.inf, None), (-math.inf, None), (2, 2.0), (0.5, 0.5)]
)
def test_finite_or_none(value, expected):
    got = finite_or_none(value)
    assert got == expected and (got is None or isinstance(got, float))


def test_an_undefined_estimate_says_why():
    assert Estimate.undefined("one class only").to_dict() == {"estimate": None, "reason": "one class only"}


def test_an_interval_with_non_finite_ends_has_none_and_says_why():
    figure = Estimate.interval(0.4, math.nan, 0.6, "BCa").to_dict()
    assert figure == {
        "estimate": 0.4,
        "ci_low": None,
        "ci_high": 0.6,
        "ci_method": "BCa",
        "ci_width": None,
        "ci_reason": "no interval",
    }
    whole = Estimate.interval(0.4, 0.25, 0.5, "BCa")
    assert whole.to_dict() == {"estimate": 0.4, "ci_low": 0.25, "ci_high": 0.5, "ci_method": "BCa", "ci_width": 0.25}
    assert whole.ci_reason is None


def test_keys_added_come_after_the_figures_own():
    figure = Estimate.interval(0.4, 0.25, 0.5, "BCa").with_keys(chance_p=0.01, n=30)
    assert list(figure.to_dict())[-2:] == ["chance_p", "n"] and figure.n == 30 and figure.extra["chance_p"] == 0.01


def test_a_figure_with_both_reasons_keeps_ci_reason_as_written():
    figure = {"estimate": None, "reason": "no labels", "ci_reason": "no interval"}
    estimate = Estimate.from_dict(figure)
    assert estimate.reason == "no labels" and estimate.extra == {"ci_reason": "no interval"}
    assert estimate.to_dict() == figure
