"""The change detector and the confidence sequences, by simulation: with no change, the share of streams
that ever alarm stays at or below alpha (uniform and targeted audits, a rate at the edge of its range);
after a planted change it alarms, quickly where a cumulative confidence sequence is slow; the
confidence sequences cover the rate at every step at once."""

from __future__ import annotations

import numpy as np
import pytest

from calibrate.stats.sequential import (
    change_point_weights,
    confidence_sequence,
    detector_statistic,
    e_detector,
    rate_increments,
)

ALPHA = 0.05


def false_pass_streams(
    rng, streams: int, n: int, change: int, before: float, after: float, *, audit=0.3, fail=0.4, targeted=False
):
    """Cases in time order: the human fails with probability ``fail``; a failing case's judge passes with
    probability ``before`` until ``change`` and ``after`` from then on; a case is audited with probability
    ``audit`` (targeted: three times likelier for the cases the judge passes)."""
    fails = rng.random((streams, n)) < fail
    rate = np.where(np.arange(n) < change, before, after)
    passes = np.where(fails, rng.random((streams, n)) < rate, rng.random((streams, n)) < 0.8)
    pi = np.where(passes, min(1.0, 3 * audit), audit) if targeted else np.full((streams, n), audit)
    audited = rng.random((streams, n)) < pi
    return fails, passes, audited, pi


def first_alarms(statistic: np.ndarray) -> np.ndarray:
    hit = statistic >= 1 / ALPHA
    return np.where(hit.any(axis=1), hit.argmax(axis=1), np.inf)


@pytest.mark.slow
@pytest.mark.parametrize("targeted", [False, True])
@pytest.mark.parametrize("n", [400, 2000])
def test_with_no_change_at_most_alpha_of_the_streams_ever_alarm(n, targeted):
    rng = np.random.default_rng(n + targeted)
    fails, passes, audited, pi = false_pass_streams(rng, 2000, n, n, 0.05, 0.05, targeted=targeted)
    z, low = rate_increments(passes, fails, audited, pi, 0.05)
    with np.errstate(over="ignore"):
        alarms = first_alarms(detector_statistic(z, low))
    share = float(np.isfinite(alarms).mean())
    print(f"n={n} targeted={targeted}: {share:.3%} of 2,000 streams with no change alarmed")
    assert share <= ALPHA


def test_the_detector_never_alarms_below_the_ceiling_and_its_statistic_starts_at_one():
    z, low = rate_increments(np.zeros(500), np.ones(500), np.ones(500), np.ones(500), 0.1)
    statistic = detector_statistic(z, low)
    assert statistic[0] <= 1 and np.all(np.diff(statistic) <= 1e-12)  # every audit lowers it
    assert e_detector(z, low).alarm is None


@pytest.mark.slow
def test_after_a_planted_change_it_alarms_soon_where_a_cumulative_sequence_is_slow():
    rng = np.random.default_rng(7)
    n, change, streams = 2000, 1000, 400
    fails, passes, audited, pi = false_pass_streams(rng, streams, n + 1500, change, 0.05, 0.30)
    z, low = rate_increments(passes, fails, audited, pi, 0.05)
    with np.errstate(over="ignore"):
        alarms = first_alarms(detector_statistic(z, low, scale=n))
    assert np.isfinite(alarms).all() and (alarms < change).mean() <= ALPHA
    delay = alarms[alarms >= change] - change
    labels = [
        int((audited[i, change : int(a) + 1] & fails[i, change : int(a) + 1]).sum())
        for i, a in enumerate(alarms)
        if a >= change
    ]
    # the cumulative alternative: alarm when the confidence sequence of the whole stream leaves [0, 0.05]
    slow = []
    for i in range(40):
        weights = (audited[i] & fails[i]) / pi[i]
        low_cs, _ = confidence_sequence(passes[i].astype(float), weights, alpha=ALPHA, max_weight=1 / pi[i].min())
        crossed = np.flatnonzero(low_cs > 0.05)
        slow.append(crossed[0] - change if crossed.size else np.inf)
    print(
        f"change at case {change}: median delay {np.median(delay):.0f} cases (90th percentile "
        f"{np.percentile(delay, 90):.0f}), {np.median(labels):.0f} audited failing cases; a cumulative "
        f"confidence sequence: median {np.median(slow):.0f} cases"
    )
    assert np.median(delay) < 300
    assert np.median(slow) > 1.5 * np.median(delay)


def test_the_change_point_found_is_near_the_planted_one():
    rng = np.random.default_rng(3)
    fails, passes, audited, pi = false_pass_streams(rng, 1, 1500, 800, 0.05, 0.4, audit=0.5)
    z, low = rate_increments(passes[0], fails[0], audited[0], pi[0], 0.05)
    found = e_detector(z, low)
    assert found.alarm is not None and 800 <= found.alarm < 1100
    assert abs(found.change - 800) < 150 and found.evidence >= 1


@pytest.mark.slow
def test_confidence_sequences_cover_the_rate_at_every_step_at_once():
    rng = np.random.default_rng(11)
    misses = 0
    runs = 300
    for _ in range(runs):  # a design that audits the cases the rate counts three times as often
        x = (rng.random(800) < 0.2).astype(float)
        pi = np.where(x == 1, 0.6, 0.2)
        audited = rng.random(800) < pi
        low, high = confidence_sequence(x, audited / pi, alpha=ALPHA, max_weight=5.0, grid=101)
        seen = ~np.isnan(low)
        misses += bool(np.any((low[seen] > 0.2) | (high[seen] < 0.2)))
    print(f"{misses} of {runs} confidence sequences missed the rate at some step")
    assert misses / runs <= ALPHA


def test_inputs_are_checked():
    with pytest.raises(ValueError, match="below their lower bound"):
        e_detector([-2.0], [-1.0])
    with pytest.raises(ValueError, match="alpha"):
        e_detector([0.0], [-1.0], alpha=1.5)
    with pytest.raises(ValueError, match="inclusion"):
        rate_increments([1], [1], [1], [0.0], 0.1)
    with pytest.raises(ValueError, match="scale"):
        change_point_weights(3, 0)
    assert change_point_weights(10_000, 100).sum() == pytest.approx(10_000 / 10_100)
