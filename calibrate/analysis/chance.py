"""Whether a judge's scores are shown to separate human passes from fails better than chance: the level of
the one-sided Mann-Whitney test a decision reads (:func:`chance_level`), the labels at which a separation
seen so far would be shown (:func:`labels_to_beat_chance`), and what a verdict says when it is not
(:func:`chance_shortfall`)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from scipy.stats import norm

from calibrate.analysis.verdict_statuses import NEEDS_LABELS, NOT_DEFENSIBLE, NOT_SHOWN

__all__ = [
    "LOOSEST_CHANCE_LEVEL",
    "MOST_LABELS_RATIO",
    "SIGN_Z",
    "chance_level",
    "chance_shortfall",
    "labels_to_beat_chance",
]

#: a separation from which a label count is projected: its one-sided z (the normal quantile of its p) is at
#: least this, one standard error from none; under it the AUC seen is as much noise as signal
SIGN_Z = 1.0
#: on ``min_labels`` labels or more, a judge whose separation so far would need more than this many times its
#: labels to be shown is too weak to gate on: labels help only while they are few (as for a stricter threshold)
MOST_LABELS_RATIO = 2

#: the chance test never runs looser than this, whatever the confidence asked for: a judge no better than
#: chance gets through it at most once in 40 samples
LOOSEST_CHANCE_LEVEL = 0.025


def chance_level(confidence: float) -> float:
    """The level of the one-sided test against chance that a decision at ``confidence`` reads:
    ``(1 - confidence) / 2``, to 12 significant digits (0.025, not 0.025000000000000022, so that p =
    0.025 is not below it; and about 5e-13 at a confidence of 1 - 1e-12, not 0), and never above
    :data:`LOOSEST_CHANCE_LEVEL` (at a confidence of 0.3 a coin-flip judge would get through one time
    in three).

    Examples
    --------
    >>> chance_level(0.95), chance_level(0.999), chance_level(0.3), chance_level(1e-9)
    (0.025, 0.0005, 0.025, 0.025)
    """
    return min(LOOSEST_CHANCE_LEVEL, float(f"{(1 - confidence) / 2:.12g}"))


def labels_to_beat_chance(chance_p: float, n: int, *, level: float) -> int | None:
    """The labels at which a judge's separation, as seen so far, would be shown better than chance: the
    smallest total ``N`` at which the one-sided Mann-Whitney test reaches ``p < level`` if the AUC and the
    shares of human passes and fails stay what they are on the ``n`` labels. None when the separation seen is
    under one standard error from none (its z, ``norm.isf(chance_p)``, below :data:`SIGN_Z`): the AUC seen is
    then as much noise as effect, and at no effect no number of labels would do.

    How: with the AUC fixed, the test's z grows with the labels as U's null standard deviation shrinks
    relative to its distance from ``n_pass n_fail / 2``; scaling both classes by ``c`` multiplies z by
    ``c sqrt((n + 1) / (c n + 1))``. ``N = c n`` for the ``c`` that brings z to ``norm.isf(level)`` (the
    positive root of ``c**2 (n + 1) = r**2 (c n + 1)``, ``r`` the ratio of the two z's). The observed p is
    the test's own (by permutation on small classes), so ``N > n`` exactly when ``p >= level``.

    Parameters
    ----------
    chance_p : float
        The one-sided Mann-Whitney p-value on ``n`` labels.
    n : int
        The labels it was computed on (human passes and fails).
    level : float
        The level the test must get under (:func:`chance_level`).

    Returns
    -------
    int or None
        The total labels (``n`` itself when ``chance_p`` is already under ``level``).

    Examples
    --------
    >>> labels_to_beat_chance(0.031, 50, level=0.025)    # just short: a few more labels at this AUC
    56
    >>> labels_to_beat_chance(0.10, 30, level=0.025)     # z = 1.28: about twice as many
    69
    >>> labels_to_beat_chance(0.40, 400, level=0.025) is None   # z = 0.25: no sign to project from
    True
    >>> labels_to_beat_chance(0.025, 400, level=0.025)   # at the level itself, not under it: one more at least
    401
    """
    z, target = float(norm.isf(chance_p)), float(norm.isf(level))
    if not z >= SIGN_Z:  # NaN included
        return None
    if chance_p < level:
        return int(n)
    r2 = (target / z) ** 2
    c = (r2 * n + math.sqrt(r2**2 * n**2 + 4 * (n + 1) * r2)) / (2 * (n + 1))
    return max(int(n) + 1, math.ceil(c * n - 1e-9))


def _separation_text(sep: Mapping[str, Any], alpha: float) -> str:
    """``AUC 0.71, one-sided Mann-Whitney p = 0.031 on 40 passes and 10 fails; needs p < 0.025``."""
    return (
        f"AUC {sep['auc']:.2f}, one-sided Mann-Whitney p = {sep['chance_p']:.2g} on {sep['n_pass']} passes and "
        f"{sep['n_fail']} fails; needs p < {alpha:g}"
    )


def chance_shortfall(rec: Mapping[str, Any], confidence: float, min_labels: int) -> dict[str, Any] | None:
    """Why the judge's scores are not shown to separate passes from fails, or None: ``{"status", "text"}``
    and, when labels would settle it (``NEEDS_LABELS``), ``labels`` (more labels), ``human_fails`` (of them)
    and ``total`` (:func:`labels_to_beat_chance`)."""
    sep = rec.get("separation")
    if not sep:
        return None
    alpha = chance_level(confidence)
    if sep["chance_p"] < alpha:
        return None
    n, detail = sep["n_pass"] + sep["n_fail"], _separation_text(sep, alpha)
    total = labels_to_beat_chance(sep["chance_p"], n, level=alpha)
    if total is None:
        backwards = ""
        if sep["auc"] < 0.5 and 1 - sep["chance_p"] < alpha:  # the other tail: the scores run the wrong way
            backwards = (
                "; its scores rank human fails above passes: do its higher scores mean worse answers? "
                "(higher_is_better = false for the rater)"
            )
        if n >= min_labels:
            return {
                "status": NOT_DEFENSIBLE,
                "text": (
                    f"its scores separate human passes from fails no better than chance ({detail}): on {n} labels "
                    f"their separation is under one standard error from none, so more labels would not show one"
                    f"{backwards}"
                ),
            }
        return {
            "status": NOT_SHOWN,
            "text": (
                f"not shown better than chance; its scores show no sign of separating human passes from fails "
                f"({detail}): a separation under one standard error from none gives no count of labels that would "
                f"settle it (on {min_labels} labels or more, still without a sign, it is not defensible){backwards}"
            ),
        }
    if n >= min_labels and total > MOST_LABELS_RATIO * n:  # a sign too weak to gate on: labels help little
        return {
            "status": NOT_DEFENSIBLE,
            "text": (
                f"its scores separate human passes from fails no better than chance ({detail}): at this AUC it would "
                f"take about {total} labels to show, over {MOST_LABELS_RATIO} times the {n} so far: a separation this "
                f"weak is no gate"
            ),
        }
    more = total - n
    fails = max(1, math.ceil(more * sep["n_fail"] / n - 1e-9))
    return {
        "status": NEEDS_LABELS,
        "labels": more,
        "human_fails": fails,
        "total": total,
        "text": (
            f"not shown better than chance yet: about {more} more label{'s' * (more != 1)} ({fails} human "
            f"fail{'s' * (fails != 1)}) would settle it "
            f"({detail}; at this AUC, p falls under {alpha:g} at about {total} labels)"
        ),
    }
