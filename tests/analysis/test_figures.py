"""The shape of every figure in a statistics document (calibrate/analysis/figures.py)."""

import math

from calibrate.analysis.figures import estimate, finite_or_none, from_interval, undefined
from calibrate.stats.bootstrap import Interval


def test_a_figure_with_its_interval_has_its_width():
    assert estimate(0.5, 0.25, 0.75, "Wilson score") == {
        "estimate": 0.5,
        "ci_low": 0.25,
        "ci_high": 0.75,
        "ci_method": "Wilson score",
        "ci_width": 0.5,
    }


def test_a_figure_without_an_interval_says_why():
    for low, high in [(None, None), (math.nan, 0.9), (0.1, math.inf)]:
        figure = estimate(1, low, high, "BCa", "every resample gives 1")
        assert figure["ci_width"] is None and figure["estimate"] == 1.0 and isinstance(figure["estimate"], float)
        assert (
            figure["ci_reason"] == "every resample gives 1" if figure["ci_low"] is None else "ci_reason" not in figure
        )
    assert estimate(0.2, None, None, "BCa")["ci_reason"] == "no interval"
    assert undefined("one class only") == {"estimate": None, "reason": "one class only"}


def test_a_bootstrap_interval_becomes_a_figure_and_counts_its_dropped_resamples():
    figure = from_interval(0.4, Interval(0.3, 0.5, "BCa bootstrap (998 resamples of cases)", 998, 2))
    assert (figure["ci_low"], figure["ci_high"], figure["ci_dropped_resamples"]) == (0.3, 0.5, 2)
    assert figure["ci_width"] == 0.5 - 0.3
    none = from_interval(0.4, Interval(None, None, "BCa", 10, 0, "only 10 resamples defined the statistic (need 100)"))
    assert none["ci_reason"].startswith("only 10 resamples") and "ci_dropped_resamples" not in none


def test_only_finite_numbers_are_kept():
    assert finite_or_none(None) is None and finite_or_none(math.nan) is None and finite_or_none(-math.inf) is None
    assert finite_or_none(3) == 3.0 and isinstance(finite_or_none(3), float)
