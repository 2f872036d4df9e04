"""The false-pass / false-fail curve of a judge: the one place the errors at a threshold are counted.

A judge passes a case when its score is at least the threshold. At each of its distinct scores taken as
the threshold, a *false pass* is a human fail it passes and a *false fail* a human pass it fails.
:func:`threshold_errors` is the definition, from running counts of human passes and fails by score;
:func:`error_curve` applies it to one sample of cases, and
:meth:`calibrate.stats.paired.PairedScores.error_counts` to a batch of resamples at once (their running
counts come from the rank kernel).

This is scikit-learn's ``det_curve`` (false-positive and false-negative rates at each threshold, the
thresholds increasing), with the human pass as the positive class: see :func:`error_curve`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from calibrate.base.params import Array, checked

__all__ = ["ErrorCurve", "error_curve", "threshold_errors"]


def threshold_errors(
    cum_passes: np.ndarray, cum_fails: np.ndarray, index: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """False passes and false fails from running counts, at every threshold index or at one.

    Parameters
    ----------
    cum_passes, cum_fails : ndarray of shape (n_rows, m)
        Per row (a sample, or a resample's weighting of it), the (weighted) number of human passes /
        human fails scored at most the ``j``-th smallest distinct score.
    index : int, optional
        A threshold index in ``0..m``: index ``t`` passes the ``t``-th smallest distinct score and every
        larger one; ``t = m`` fails every case. By default, every index.

    Returns
    -------
    false_pass, false_fail : ndarray of shape (n_rows, m + 1), or (n_rows,) at one ``index``
        The human fails scored at least the threshold, and the human passes scored below it.

    Examples
    --------
    >>> passes, fails = np.array([[0.0, 1, 2]]), np.array([[1.0, 2, 2]])   # scores 0.1, 0.5, 0.9
    >>> fp, ff = threshold_errors(passes, fails)
    >>> fp.tolist(), ff.tolist()
    ([[2.0, 1.0, 0.0, 0.0]], [[0.0, 0.0, 1.0, 2.0]])
    >>> [a.tolist() for a in threshold_errors(passes, fails, 1)]
    [[1.0], [0.0]]
    """
    n_fail = cum_fails[:, -1].astype(float)
    if index is None:
        zero = np.zeros((n_fail.size, 1))
        return n_fail[:, None] - np.concatenate([zero, cum_fails], axis=1), np.concatenate([zero, cum_passes], axis=1)
    if index <= 0:  # as index 0 (no case scored below the lowest score)
        return n_fail - 0.0, np.zeros_like(n_fail)
    return n_fail - cum_fails[:, index - 1].astype(float), cum_passes[:, index - 1].astype(float)


@dataclass(frozen=True)
class ErrorCurve:
    """The (weighted) errors of a judge at each of its distinct scores taken as the threshold.

    Attributes
    ----------
    thresholds : ndarray of shape (n_thresholds,)
        The judge's distinct scores (of the cases of positive weight), increasing; a case passes at
        ``thresholds[i]`` when its score is ``>= thresholds[i]``.
    false_pass : ndarray of shape (n_thresholds,)
        The (weighted) number of human fails scored ``>= thresholds[i]``: non-increasing.
    false_fail : ndarray of shape (n_thresholds,)
        The (weighted) number of human passes scored ``< thresholds[i]``: non-decreasing, 0 at the first.
    n_pass, n_fail : float
        The (weighted) numbers of human passes and human fails.
    """

    thresholds: np.ndarray
    false_pass: np.ndarray
    false_fail: np.ndarray
    n_pass: float
    n_fail: float

    def rates(self) -> tuple[np.ndarray, np.ndarray]:
        """The false-pass rate (among human fails) and the false-fail rate (among human passes) at each
        threshold; ``nan`` where there is no human fail (pass).

        Returns
        -------
        false_pass_rate, false_fail_rate : ndarray of shape (n_thresholds,)
        """
        with np.errstate(invalid="ignore", divide="ignore"):
            return self.false_pass / self.n_fail, self.false_fail / self.n_pass


@checked(
    human_pass=Array("human verdicts (1 or True: a pass)", binary=True),
    score=Array("judge scores", length_of="human_pass"),
    sample_weight=Array("case weights", length_of="human_pass", nonnegative=True, optional=True),
)
def error_curve(human_pass: ArrayLike, score: ArrayLike, *, sample_weight: ArrayLike | None = None) -> ErrorCurve:
    """The false passes and false fails of a judge at each of its distinct scores as the threshold.

    The contract of scikit-learn's ``det_curve(y_true, y_score, sample_weight=...)`` with the human pass
    as the positive class: ``ErrorCurve.rates()`` is its ``(fpr, fnr)`` and ``thresholds`` its
    thresholds, both in increasing order of threshold, on the thresholds ``det_curve`` keeps. The
    differences: this curve keeps every distinct score, where ``det_curve`` keeps those from the largest
    at which no pass fails (``fnr = 0``) to the smallest at which no fail passes (``fpr = 0``), the latter
    being ``inf``, the point ``(0, 1)``, when every finite threshold passes a fail; it returns counts,
    with their totals, and rates on request; it accepts one class only (the other's rates are ``nan``,
    where ``det_curve`` raises). Cases of weight 0 are left out, as scikit-learn leaves them out.

    Parameters
    ----------
    human_pass : array_like of bool of shape (n_cases,)
        The human verdict of each case (``True`` or 1: a pass).
    score : array_like of float of shape (n_cases,)
        The judge's score of each case, oriented so that higher means better (negate a score where
        lower is better).
    sample_weight : array_like of float of shape (n_cases,), optional
        A non-negative weight per case (a case of weight 2 counts twice: the inverse inclusion
        probabilities of a sample design estimate the population's errors). ``None``: every case 1.

    Returns
    -------
    ErrorCurve

    Raises
    ------
    ValueError
        Naming the parameter: arrays of other lengths, a verdict not 0 or 1, a score that is ``nan``
        or infinite, a negative weight, no case.

    See Also
    --------
    sklearn.metrics.det_curve : the same curve as rates, trimmed.

    Examples
    --------
    >>> curve = error_curve([1, 0, 1, 0, 1], [0.9, 0.7, 0.6, 0.1, 0.8])
    >>> curve.thresholds.tolist()
    [0.1, 0.6, 0.7, 0.8, 0.9]
    >>> curve.false_pass.tolist(), curve.false_fail.tolist()      # at 0.7: the fail scored 0.7 passes
    ([2.0, 1.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 1.0, 2.0])
    >>> [r.round(3).tolist() for r in curve.rates()]
    [[1.0, 0.5, 0.5, 0.0, 0.0], [0.0, 0.0, 0.333, 0.333, 0.667]]
    >>> error_curve([1, 0, 1, 0, 1], [0.9, 0.7, 0.6, 0.1, 0.8], sample_weight=[1, 3, 1, 1, 1]).false_pass.tolist()
    [4.0, 3.0, 3.0, 0.0, 0.0]
    """
    passes = np.asarray(human_pass).astype(bool)
    scores = np.asarray(score, dtype=float)
    weights = np.ones(scores.size) if sample_weight is None else np.asarray(sample_weight, dtype=float)
    kept = weights > 0
    thresholds, at = np.unique(scores[kept], return_inverse=True)
    passes, weights = passes[kept], weights[kept]
    if thresholds.size == 0:  # every weight 0: no threshold, no case
        return ErrorCurve(thresholds, np.zeros(0), np.zeros(0), 0.0, 0.0)
    cum_passes = np.cumsum(np.bincount(at[passes], weights[passes], minlength=thresholds.size))
    cum_fails = np.cumsum(np.bincount(at[~passes], weights[~passes], minlength=thresholds.size))
    false_pass, false_fail = threshold_errors(cum_passes[None, :], cum_fails[None, :])
    return ErrorCurve(
        thresholds=thresholds,
        false_pass=false_pass[0, :-1],
        false_fail=false_fail[0, :-1],
        n_pass=float(cum_passes[-1]),
        n_fail=float(cum_fails[-1]),
    )
