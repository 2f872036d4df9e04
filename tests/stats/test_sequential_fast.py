"""The fast paths of the sequential tests give the numbers of the computation of every step.

- :func:`confidence_sequence` sums the weighted steps only (a step of weight 0 moves no e-process) and
  computes the bounds only after the steps asked for (``at``), or counts the recurring pairs of value and
  weight between them; here against :func:`step_by_step`, which computes every e-process at every step
  of the stream, weighted or not, in one cumulative sum.
- :func:`e_detector` computes its statistic a stretch at a time and stops at the first alarm; here
  against :func:`detector_statistic`, every step in one pass.

Streams drawn by hypothesis: without any weighted step, with a weighted first or last step only, with few
or many distinct values, with alarms (and the monitor's restarts after them); the stretches are made short
(``CHUNK``, ``WINDOW``) so that short streams cross many of them.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calibrate.stats import sequential
from calibrate.stats.sequential import (
    BET_FRACTIONS,
    confidence_sequence,
    detector_statistic,
    e_detector,
    rate_increments,
)

QUICK = settings(max_examples=80, deadline=None)


def step_by_step(x, w, *, alpha=0.05, max_weight=None, value_range=(0.0, 1.0), grid=201):
    """The confidence sequence computed at every step: every step's increment for every rate of the grid and
    every bet, weighted or not, in one cumulative sum over the stream; the bounds after every step."""
    x, w = np.asarray(x, float), np.asarray(w, float)
    top = float(max_weight if max_weight is not None else w.max())
    lowest, highest = value_range
    theta = np.linspace(0, 1, grid)
    f = np.asarray(BET_FRACTIONS)[:, None]
    up = f / (top * np.maximum(theta - lowest, 1e-3))
    down = f / (top * np.maximum(highest - theta, 1e-3))
    z = (w[:, None] * (x[:, None] - theta[None, :]))[:, None, :]  # steps x 1 x grid
    log_up = np.cumsum(np.log1p(up[None] * z), axis=0)  # steps x bets x grid
    log_down = np.cumsum(np.log1p(-down[None] * z), axis=0)

    def logmean(logs):
        top = logs.max(axis=1, keepdims=True)
        return (top + np.log(np.mean(np.exp(logs - top), axis=1, keepdims=True)))[:, 0]

    kept = np.logaddexp(logmean(log_up), logmean(log_down)) - np.log(2) < np.log(1 / alpha)
    low = np.array([theta[k][0] if k.any() else np.nan for k in kept])
    high = np.array([theta[k][-1] if k.any() else np.nan for k in kept])
    before = np.cumsum(w > 0) == 0
    low[before], high[before] = np.nan, np.nan
    return low, high


@pytest.fixture(autouse=True)
def short_stretches(monkeypatch):
    """Chunks of 16 steps and detector stretches of 8 (then 16, ...): short streams cross many."""
    monkeypatch.setattr(sequential, "CHUNK", 16)
    monkeypatch.setattr(sequential, "WINDOW", 8)


@st.composite
def streams(draw, max_size=300):
    """Values and weights of a stream: weights 0 on most steps (nobody audited), a few distinct values
    (a judge's scale) or many, and now and then no weighted step at all or only the first or the last."""
    n = draw(st.integers(1, max_size))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    distinct = draw(st.sampled_from([2, 4, None]))
    x = rng.integers(0, distinct, n) / (distinct - 1) if distinct else rng.random(n)
    share = draw(st.sampled_from([0.0, 0.02, 0.1, 0.5, 1.0]))
    w = np.where(rng.random(n) < share, rng.choice([1.0, 2.0, 5.0], n), 0.0)
    where = draw(st.sampled_from(["drawn", "first", "last", "first and last"]))
    if where != "drawn":
        w[:] = 0.0
        w[[0] if where == "first" else [-1] if where == "last" else [0, -1]] = 2.0
    return x, w


@QUICK
@given(streams(), st.data())
def test_the_confidence_sequence_is_that_of_every_step(stream, data):
    x, w = stream
    expected = step_by_step(x, w, max_weight=5.0)
    found = confidence_sequence(x, w, max_weight=5.0)
    np.testing.assert_array_equal(found, expected)
    at = np.array(sorted(data.draw(st.sets(st.integers(0, x.size - 1), min_size=1, max_size=12))))
    np.testing.assert_array_equal(confidence_sequence(x, w, max_weight=5.0, at=at), [b[at] for b in expected])


@settings(max_examples=15, deadline=None)
@given(st.integers(1000, 2000), st.integers(0, 2**32 - 1), st.sampled_from([3, 6, 11]))
def test_few_recurring_values_counted_give_the_sums_of_every_step(n, seed, points):
    """The prediction-powered stream of the monitor: every step weighted, a value among a few on a scale."""
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 4, n) / 3 * 0.7 + np.where(rng.random(n) < 0.05, 0.3, 0.0)
    w = np.ones(n)
    at = np.unique(np.linspace(0, n - 1, points).round().astype(int))
    assert sequential._pairs(x, w)[0].shape[0] * at.size * 4 < n  # the counted path is the one taken
    expected = step_by_step(x, w, value_range=(0.0, 1.0))
    np.testing.assert_array_equal(confidence_sequence(x, w, at=at), [b[at] for b in expected])


def test_a_stream_without_a_weighted_step_has_no_bounds_and_at_is_checked():
    low, high = confidence_sequence(np.full(50, 0.5), np.zeros(50), max_weight=2.0)
    assert np.isnan(low).all() and np.isnan(high).all()
    with pytest.raises(ValueError, match="at: steps from 0 to 49"):
        confidence_sequence(np.full(50, 0.5), np.ones(50), at=[50])
    with pytest.raises(ValueError, match="at: steps"):
        confidence_sequence(np.full(50, 0.5), np.ones(50), at=[1.5])


@QUICK
@given(
    st.integers(1, 400),
    st.integers(0, 2**32 - 1),
    st.sampled_from([0.0, 0.05, 0.1]),
    st.sampled_from([0.02, 0.3, 1.0]),
    st.sampled_from([0.05, 0.3, 0.9]),
    st.sampled_from([0.05, 0.5, 1e-4]),
)
def test_the_detector_stops_at_the_alarm_of_every_step(n, seed, bound, audit, after, alpha):
    rng = np.random.default_rng(seed)
    fails = rng.random(n) < 0.5
    rate = np.where(np.arange(n) < rng.integers(0, n + 1), 0.05, after)
    passes = np.where(fails, rng.random(n) < rate, rng.random(n) < 0.8)
    z, low = rate_increments(passes, fails, rng.random(n) < audit, np.full(n, audit), bound)
    scale = int(rng.integers(1, 2 * n + 1))
    with np.errstate(over="ignore"):
        every = detector_statistic(z, low, scale=scale)
    found = e_detector(z, low, alpha=alpha, scale=scale)
    crossed = np.flatnonzero(every >= 1 / alpha)
    assert found.alarm == (int(crossed[0]) if crossed.size else None)
    np.testing.assert_array_equal(found.statistic, every[: found.alarm + 1] if crossed.size else every)


def test_restarted_after_each_alarm_it_finds_the_alarms_of_every_step():
    """Restarted after each alarm (as the monitor does) over a stream that keeps alarming: the alarms are
    those of the statistic of every step, restart after restart."""
    rng = np.random.default_rng(5)
    n = 3000
    fails = rng.random(n) < 0.5
    passes = np.where(fails, rng.random(n) < 0.6, rng.random(n) < 0.8)
    z, low = rate_increments(passes, fails, rng.random(n) < 0.5, np.full(n, 0.5), 0.05)
    start, alarms = 0, []
    while start < n:
        found = e_detector(z[start:], low[start:], alpha=0.01, scale=n)
        with np.errstate(over="ignore"):
            every = detector_statistic(z[start:], low[start:], scale=n)
        crossed = np.flatnonzero(every >= 100)
        assert found.alarm == (int(crossed[0]) if crossed.size else None)
        if found.alarm is None:
            break
        alarms.append(start + found.alarm)
        start += found.alarm + 1
    assert len(alarms) > 10


@QUICK
@given(st.integers(1, 600), st.sampled_from([3, 2010]), st.integers(0, 2**32 - 1), st.integers(0, 20))
def test_the_running_sums_are_those_of_a_cumulative_sum_to_the_last_bit(n, columns, seed, picked):
    """The sums a confidence sequence reads after the steps asked for: numpy's sum over the first axis
    adds the rows in order, as its cumulative sum does."""
    rng = np.random.default_rng(seed)
    logs = rng.standard_normal((n, columns)) * 10.0 ** rng.integers(-12, 3, (n, columns))
    rows = np.unique(np.r_[rng.integers(0, n, picked), n - 1])
    np.testing.assert_array_equal(sequential._running_sums(logs.copy(), rows), np.cumsum(logs, axis=0)[rows])
