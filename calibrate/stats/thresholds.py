"""Threshold rules on false-pass / false-fail counts, vectorised over resamples.

Threshold index ``t`` passes every case whose judge score is at least the ``t``-th smallest distinct
score; ``t == m`` fails every case. The false-pass count falls and the false-fail count rises with
``t``, so "the most lenient threshold" is the smallest admissible index.
"""

from __future__ import annotations

import numpy as np

from calibrate.stats.intervals import clopper_pearson_upper

__all__ = ["NO_THRESHOLD", "constraint_rule", "cost_rule"]

#: Returned where no threshold satisfies the rule (or the rule is undefined on that sample).
NO_THRESHOLD = -1


def constraint_rule(false_pass: np.ndarray, n_fail: np.ndarray, *, max_false_pass: float,
                    confidence: float | None = None) -> np.ndarray:
    """The most lenient threshold index whose false-pass rate is at most ``max_false_pass``.

    Parameters
    ----------
    false_pass : ndarray, shape (batch, m + 1)
        False passes at every threshold index.
    n_fail : ndarray, shape (batch,)
        Human fails in each sample.
    max_false_pass : float
        The ceiling on the false-pass rate.
    confidence : float, optional
        When given, the one-sided Clopper-Pearson upper bound of the false-pass rate at this
        confidence must stay under the ceiling (conservative), instead of the rate itself.

    Returns
    -------
    ndarray of int, shape (batch,)
        The index, or ``NO_THRESHOLD`` where none qualifies or the sample has no human fail.

    Examples
    --------
    >>> fp = np.array([[4, 2, 1, 0]])
    >>> constraint_rule(fp, np.array([4]), max_false_pass=0.3).tolist()
    [2]
    >>> constraint_rule(fp, np.array([4]), max_false_pass=0.3, confidence=0.95).tolist()
    [-1]
    """
    n = np.asarray(n_fail, dtype=float)[:, None]
    if confidence is None:
        with np.errstate(invalid="ignore", divide="ignore"):
            rate = false_pass / n
    else:
        rate = clopper_pearson_upper(false_pass, np.broadcast_to(n, false_pass.shape), confidence=confidence)
    admissible = rate <= max_false_pass + 1e-12
    first = np.argmax(admissible, axis=1)
    return np.where(admissible.any(axis=1) & (n[:, 0] > 0), first, NO_THRESHOLD)


def cost_rule(false_pass: np.ndarray, false_fail: np.ndarray, n_pass: np.ndarray, n_fail: np.ndarray, *,
              cost_false_pass: float, cost_false_fail: float, prevalence: float | None = None) -> np.ndarray:
    """The threshold index minimising ``cost_false_pass * FP + cost_false_fail * FN``.

    With ``prevalence`` (the expected production share of human passes) the rates are weighted by
    it instead of by the sample's share: ``cfp * (1 - P) * FPR + cff * P * FFR``. Ties go to the
    most lenient threshold.

    Examples
    --------
    >>> fp, ff = np.array([[4., 2, 1, 0]]), np.array([[0., 0, 1, 6]])
    >>> cost_rule(fp, ff, np.array([6]), np.array([4]), cost_false_pass=5, cost_false_fail=1).tolist()
    [2]
    """
    if prevalence is None:
        cost = cost_false_pass * false_pass + cost_false_fail * false_fail
        defined = np.ones(false_pass.shape[0], dtype=bool)
    else:
        with np.errstate(invalid="ignore", divide="ignore"):
            cost = (cost_false_pass * (1 - prevalence) * false_pass / n_fail[:, None]
                    + cost_false_fail * prevalence * false_fail / n_pass[:, None])
        defined = (n_fail > 0) & (n_pass > 0)
    best = np.argmin(np.where(np.isfinite(cost), cost, np.inf), axis=1)
    return np.where(defined, best, NO_THRESHOLD)
