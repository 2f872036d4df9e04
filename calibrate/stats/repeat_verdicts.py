"""Per-case verdicts under judge noise: a case scored ``m`` times by the same judge, passed ``k`` times.

A judge that samples (temperature above 0, or a provider that is not deterministic) passes a case with some
probability ``p`` of its own: the **case's pass rate**, what the share of passes tends to over ever more
repeats. The case's **verdict** is the side of the threshold most repeats land on, ``p > 1/2`` (pass) or
``p < 1/2`` (fail); ``k`` of ``m`` repeats estimate it:

- the **pass rate** ``k / m``, and its exact **Clopper-Pearson** interval at confidence ``C`` (two-sided,
  ``alpha = 1 - C``): the rates ``p`` for which neither binomial tail of ``k`` is below ``alpha / 2``;
- the **verdict**: *pass* when the interval lies above 1/2, *fail* when below, *undecided* otherwise.

**"Beyond what chance allows"**, precisely: a case is *undecided* when its ``k`` of ``m`` is what a judge
passing it at a coin-flip rate, ``p = 1/2``, gives with probability ``alpha`` or more (the two-sided exact
binomial test of ``p = 1/2`` does not reject at level ``alpha``); the interval lies above 1/2 exactly
when ``P(X >= k; m, 1/2) < alpha / 2`` (below: ``P(X <= k; m, 1/2) < alpha / 2``). So a decided verdict
is wrong, for a case whose pass rate is on the other side of 1/2 (or on it), with probability less than
``alpha / 2``, case by case. It is not a guarantee over all the cases at once: among many cases whose
pass rate is near 1/2, about ``alpha / 2`` of them get a decided verdict on the wrong side.

**What it takes to decide a case.** Even ``m`` passes of ``m`` happen with probability ``2**-m`` under
``p = 1/2``, so no case is decided with fewer than :func:`min_repeats_to_decide` repeats: 6 at 95%
confidence, 5 at 90%, 4 at 80%. With **one repeat**, every case is undecided at every confidence (one
pass is what a coin flip gives half the time): the rule never calls a single score a settled verdict.

Why this rule and not a prior shared by the cases (an empirical-Bayes beta-binomial fitted to every case's
``k``, which decides 3 of 3 where most cases never flip): its verdict of one case depends on none of the
other cases, so a case keeps its verdict when the campaign gains cases, and its error rate holds for
whatever the other cases are.

The share of repeats on the majority side, ``max(k, m - k) / m`` (:func:`majority_share`), is the
judge's self-agreement on a case: 1 when every repeat agrees, 1/2 when they split evenly; it orders cases
from the most to the least settled, as a confidence signal beside the score.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats

from calibrate.base.params import Array, checked
from calibrate.stats.intervals import clopper_pearson_interval

__all__ = [
    "VERDICTS",
    "RepeatVerdicts",
    "majority_share",
    "min_repeats_to_decide",
    "repeat_verdicts",
]

#: the verdicts, in order: a case with more passes of as many repeats never gets an earlier one
VERDICTS = ("fail", "undecided", "pass")

_PASSES = Array("counts of passing repeats", at_most="repeats", nonnegative=True, length_of="repeats")
_REPEATS = Array("counts of repeats", nonnegative=True)


def _whole_counts(passes: ArrayLike, repeats: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    k, m = np.asarray(passes, dtype=float), np.asarray(repeats, dtype=float)
    for name, value in (("passes", k), ("repeats", m)):
        if (value != np.round(value)).any():
            raise ValueError(f"{name}: expected whole counts of repeats; it has {value[value != np.round(value)][0]:g}")
    return k, m


@dataclass(frozen=True)
class RepeatVerdicts:
    """Each case's pass rate over its repeats, its Clopper-Pearson interval and its verdict.

    Attributes
    ----------
    passes, repeats : ndarray of int
        ``k`` and ``m`` of each case.
    pass_rate, low, high : ndarray of float
        ``k / m`` and its interval at ``confidence``.
    verdict : ndarray of str
        ``"pass"``, ``"fail"`` or ``"undecided"`` (:data:`VERDICTS`).
    confidence : float
    """

    passes: np.ndarray
    repeats: np.ndarray
    pass_rate: np.ndarray
    low: np.ndarray
    high: np.ndarray
    verdict: np.ndarray
    confidence: float

    def counts(self) -> dict[str, int]:
        """How many cases got each verdict, in the order of :data:`VERDICTS`."""
        return {v: int(np.sum(self.verdict == v)) for v in VERDICTS}


@checked("confidence", passes=_PASSES, repeats=_REPEATS)
def repeat_verdicts(passes: ArrayLike, repeats: ArrayLike, *, confidence: float = 0.95) -> RepeatVerdicts:
    """Each case's verdict from the repeats that passed it (see the module docstring for the rule).

    Parameters
    ----------
    passes : array_like of shape (n_cases,)
        The repeats that passed each case (``k``), whole, ``0 <= k <= m``.
    repeats : array_like of shape (n_cases,)
        The repeats that scored each case (``m``), whole and at least 1 (failed ratings left out).
    confidence : float, default=0.95
        The confidence of the interval; a decided verdict is wrong with probability below
        ``(1 - confidence) / 2``.

    Returns
    -------
    RepeatVerdicts

    Examples
    --------
    >>> v = repeat_verdicts([0, 2, 3, 6, 1], [3, 3, 3, 6, 1])
    >>> v.verdict.tolist(), v.counts()
    (['undecided', 'undecided', 'undecided', 'pass', 'undecided'], {'fail': 0, 'undecided': 4, 'pass': 1})
    >>> repeat_verdicts([0, 2, 3], [3, 3, 3], confidence=0.7).verdict.tolist()
    ['fail', 'undecided', 'pass']
    """
    k, m = _whole_counts(passes, repeats)
    if (m < 1).any():
        raise ValueError("repeats: expected at least 1 repeat per case (a case no repeat scored has no verdict)")
    low, high = clopper_pearson_interval(k, m, confidence=confidence)
    tail = (1 - confidence) / 2
    # the exact tails at p = 1/2 decide, not the bounds' rounding: low > 1/2 exactly when P(X >= k) < tail
    above = stats.binom.sf(k - 1, m, 0.5) < tail
    below = stats.binom.cdf(k, m, 0.5) < tail
    verdict = np.where(above, "pass", np.where(below, "fail", "undecided")).astype(object)
    return RepeatVerdicts(k.astype(int), m.astype(int), k / m, low, high, verdict, float(confidence))


@checked(passes=_PASSES, repeats=_REPEATS)
def majority_share(passes: ArrayLike, repeats: ArrayLike) -> np.ndarray:
    """The share of each case's repeats on its majority side, ``max(k, m - k) / m``: in [1/2, 1], 1 when
    every repeat gives the same verdict; ``nan`` for a case no repeat scored (``m = 0``).

    A confidence signal that orders cases without the labels: the higher, the more settled the judge.

    Examples
    --------
    >>> majority_share([0, 2, 3, 1, 0], [3, 3, 3, 2, 0]).round(3).tolist()
    [1.0, 0.667, 1.0, 0.5, nan]
    """
    k, m = _whole_counts(passes, repeats)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(m > 0, np.maximum(k, m - k) / m, np.nan)


@checked("confidence")
def min_repeats_to_decide(*, confidence: float = 0.95) -> int:
    """The fewest repeats with which a case can get a decided verdict at ``confidence``: the smallest ``m``
    with ``2**-m < (1 - confidence) / 2`` (all ``m`` repeats on one side).

    Examples
    --------
    >>> min_repeats_to_decide(), min_repeats_to_decide(confidence=0.9), min_repeats_to_decide(confidence=0.8)
    (6, 5, 4)
    """
    tail, m = (1 - confidence) / 2, 1
    while 0.5**m >= tail:
        m += 1
    return m
