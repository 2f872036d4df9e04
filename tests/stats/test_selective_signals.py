"""Bands ordered by a confidence signal (calibrate.stats.selective.signal_bands, select_signal_band): the bands,
and the guarantee simulated for a judge whose agreement among its repeats predicts whether it is right, with
the best of two signals chosen on the same labels at a Bonferroni-split error budget."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calibrate.stats.repeat_verdicts import majority_share
from calibrate.stats.selective import select_band, select_signal_band, signal_bands

REPEATS = 5


def test_the_bands_are_nested_by_signal_then_distance():
    b = signal_bands([1.0, 0.6, 1.0, 0.8, 0.6], [0.1, 0.4, 0.3, 0.2, 0.1])
    assert b.n_decided.tolist() == [1, 2, 3, 4, 5] and b.cut[-1] == 0
    assert [b.decided(b.rank, j).sum() for j in range(5)] == [1, 2, 3, 4, 5]
    assert b.decides([1.0, 0.9, 0.8, 0.8], [0.0, 0.0, 0.2, 0.19], 2).tolist() == [True, True, True, False]
    with pytest.raises(ValueError, match="signal and distance"):
        signal_bands([0.5, np.nan], [0.0, 0.0])


@settings(max_examples=40, deadline=None)
@given(
    signal=st.lists(st.sampled_from([0.5, 0.6, 0.8, 1.0]), min_size=1, max_size=60),
    seed=st.integers(0, 2**16),
    max_bands=st.integers(1, 10),
    weighted=st.booleans(),
)
def test_random_signals_give_nested_bands_deciding_what_they_count(signal, seed, max_bands, weighted):
    rng = np.random.default_rng(seed)
    s = np.asarray(signal)
    d = rng.choice([0.0, 0.1, 0.2], s.size)
    labelled = rng.choice(s.size, rng.integers(1, s.size + 1), replace=False)
    judge, human = rng.random(labelled.size) < 0.5, rng.random(labelled.size) < 0.5
    weights = rng.uniform(0.5, 2, labelled.size) if weighted else None
    found = select_signal_band(s, d, labelled, judge, human, agreement=0.7, weights=weights, max_bands=max_bands)
    b = found.bands
    assert np.all(np.diff(b.n_decided) > 0) and b.n_decided[-1] == s.size
    for j in range(b.cut.size):
        assert b.decides(s, d, j).sum() == b.n_decided[j] == b.decided(b.rank, j).sum()
        assert b.decides(s[labelled], d[labelled], j).sum() == found.n_labelled[j]
    assert -1 <= found.chosen < b.cut.size and not found.passed[~found.tested].any()


def _cases(rng, n):
    """A judge scoring 0 to 1 (pass at 0.5) in ``REPEATS`` repeats: half the cases are easy (difficulty ``q``
    0), the others have ``q`` uniform in (0, 1); each repeat gives the human verdict with probability ``1 - q / 2`` (always on the easiest, a coin
    flip on the hardest), its score uniform on the side it chose (so the score says nothing of ``q``).
    The first repeat's score and verdict, the majority verdict, its share and the mean score's distance."""
    human = rng.random(n) < 0.5
    q = np.where(rng.random(n) < 0.5, 0.0, rng.random(n))
    right = rng.random((n, REPEATS)) < 1 - q[:, None] / 2
    passed = np.where(right, human[:, None], ~human[:, None])
    score = np.where(passed, rng.uniform(0.5, 1, passed.shape), rng.uniform(0, 0.5, passed.shape))
    k = passed.sum(axis=1)
    return {
        "human": human,
        "score": score[:, 0],
        "majority": 2 * k > REPEATS,
        "share": majority_share(k, np.full(n, REPEATS)),
        "distance": np.abs(score.mean(axis=1) - 0.5),
    }


def _split(rng, n, agreement, confidence, signals):
    """One calibration sample of ``n`` labels from a pool of 3n: the band of each signal at
    ``1 - (1 - confidence) / len(signals)``, the one deciding most of the pool kept; its realised agreement on
    4,000 fresh cases (nan: it decides none), and the coverage of each signal."""
    pool, fresh = _cases(rng, 3 * n), _cases(rng, 4000)
    at = rng.choice(3 * n, n, replace=False)
    level = 1 - (1 - confidence) / len(signals)
    covered, decide = {}, {}
    if "score" in signals:
        found = select_band(pool["score"][at], pool["human"][at], pool["score"], 0.5, agreement=agreement,
                            confidence=level, bounds=False)  # fmt: skip
        covered["score"] = found.bands.n_decided[found.chosen] if found.chosen >= 0 else 0
        decide["score"] = (found.bands.decided(fresh["score"], found.chosen) if found.chosen >= 0 else None,
                           fresh["score"] >= 0.5)  # fmt: skip
    if "repeats" in signals:
        found = select_signal_band(pool["share"], pool["distance"], at, pool["majority"][at], pool["human"][at],
                                   agreement=agreement, confidence=level, bounds=False)  # fmt: skip
        covered["repeats"] = found.bands.n_decided[found.chosen] if found.chosen >= 0 else 0
        mask = found.bands.decides(fresh["share"], fresh["distance"], found.chosen) if found.chosen >= 0 else None
        decide["repeats"] = (mask, fresh["majority"])
    best = max(signals, key=lambda s: covered[s])
    mask, verdict = decide[best]
    if mask is None or not mask.any():
        return np.nan, covered
    return float((verdict[mask] == fresh["human"][mask]).mean()), covered


@pytest.mark.slow
@pytest.mark.parametrize("n", [100, 300, 1000])
def test_the_signal_chosen_by_all_reaches_the_target_in_at_least_c_of_the_splits(n):
    """The guarantee for the repeat signal and for the best of score and repeats on the same labels, each tested
    at delta / 2: the realised agreement on fresh cases the kept band decides is at least A in at least C of
    1,000 splits; and the repeats, which know the judge's difficulty, decide more than the score does."""
    agreement, confidence = 0.9, 0.9
    rng = np.random.default_rng(n)
    results = [_split(rng, n, agreement, confidence, ("score", "repeats")) for _ in range(1000)]
    realised = np.array([r for r, _ in results])
    met = np.isnan(realised) | (realised >= agreement)
    assert met.mean() >= confidence, (met.mean(), np.nanmean(realised))
    score = np.array([c["score"] for _, c in results]) / (3 * n)
    repeats = np.array([c["repeats"] for _, c in results]) / (3 * n)
    assert np.mean(repeats) > np.mean(score) + 0.1 and np.median(score) < 0.05
    if n >= 300:
        # the unanimous cases, mostly easy; fixed-sequence testing stops at once when its first band, the
        # fewest labels that could pass, holds a disagreement: that happens in some splits
        assert np.mean(repeats > score) > 0.8 and np.median(repeats) > 0.5
