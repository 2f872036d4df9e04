"""One version's human pass rate, from the judge's scores on every case and human labels on a few; the
difference of two versions' rates; and the labels a wanted width of that difference needs (what
:func:`calibrate.analysis.systems.compare_systems` reads for each version and each slice).

A version's human pass rate is a prediction-powered estimate (PPI++: :func:`~calibrate.analysis.pass_rate.ppi_mean`,
the judge's raw score on every case of the version corrected by its labelled cases, power-tuned, design-
weighted), with the humans-only rate (the labelled cases' weighted pass rate) beside it. Two versions' cases
are disjoint, so the difference ``B - A`` has the sum of their variances, and a normal interval.

How many labels a wanted width needs (:func:`labels_for_width`): with ``n`` of a version's ``M`` cases
labelled, its variance is ``var_labelled / n + var_unlabelled / (M - n)`` (the PPI++ terms measured on
the labels so far; the humans-only ``p (1 - p) / n`` where that is smaller), against ``p (1 - p) / n``
for humans alone; the smallest equal ``n`` per version whose difference reaches the width is given for
each.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from calibrate.analysis.figures import estimate, undefined
from calibrate.analysis.pass_rate import ppi_mean
from calibrate.campaign.weights import kish_effective_n
from calibrate.stats.intervals import normal_quantile

__all__ = ["labels_for_width", "rate_difference", "version_rate"]


def version_rate(
    passes: np.ndarray,
    score_labelled: np.ndarray,
    score_unlabelled: np.ndarray,
    weights: np.ndarray | None,
    confidence: float,
) -> dict[str, Any]:
    """One version's human pass rate: PPI++ from its labelled and unlabelled cases, and humans only.

    Parameters
    ----------
    passes : ndarray of bool
        The labelled cases' human verdicts.
    score_labelled, score_unlabelled : ndarray
        The judge's oriented scores (higher is better) on the labelled and on the unlabelled cases.
    weights : ndarray, optional
        The labelled cases' design weights.

    Returns
    -------
    dict
        ``n_labelled``, ``n_unlabelled``, ``ppi`` and ``humans_only``: each with ``estimate``, ``se``,
        its interval, and the variance terms a plan for more labels reads.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> f = rng.random(2000); y = rng.random(2000) < f
    >>> r = version_rate(y[:200], f[:200], f[200:], None, 0.95)
    >>> round(r["ppi"]["estimate"], 3), r["ppi"]["se"] < r["humans_only"]["se"]
    (0.498, True)
    """
    y = np.asarray(passes, dtype=float)
    n, big_n = y.size, np.asarray(score_unlabelled).size
    out: dict[str, Any] = {"n_labelled": int(n), "n_unlabelled": int(big_n)}
    if n < 2:
        reason = f"{n} labelled case(s) of this version: an estimate needs 2"
        return out | {"ppi": undefined(reason), "humans_only": undefined(reason)}
    w = np.ones(n) if weights is None else np.asarray(weights, float) / np.sum(weights) * n
    p = float(np.average(y, weights=w))
    n_eff = kish_effective_n(w)
    smoothed = (p * n_eff + 0.5) / (n_eff + 1)  # a version of one verdict still has some variance
    se_h = float(math.sqrt(smoothed * (1 - smoothed) / n_eff))
    z = normal_quantile(confidence)
    out["humans_only"] = estimate(
        p,
        p - z * se_h,
        p + z * se_h,
        "weighted labelled share, normal" if weights is not None else "labelled share, normal",
    ) | {"se": se_h, "var_labelled": smoothed * (1 - smoothed) * n / n_eff}
    if big_n == 0:
        out["ppi"] = out["humans_only"] | {
            "lam": 0.0,
            "var_unlabelled": 0.0,
            "note": "every case of the version is labelled: the labels alone",
        }
        return out
    r = ppi_mean(y, score_labelled, score_unlabelled, weights=weights, confidence=confidence)
    out["ppi"] = estimate(
        r["estimate"],
        r["ci_low"],
        r["ci_high"],
        "prediction-powered (PPI++, power-tuned, the judge's raw score), normal",
    ) | {k: r[k] for k in ("se", "lam", "var_labelled", "var_unlabelled")}
    return out


def labels_for_width(width: float, versions: list[dict[str, Any]], confidence: float) -> dict[str, Any]:
    """Labels per version that give the difference an interval ``width`` wide (full width), with the
    judge (PPI++) and with humans alone, out of the cases each version has.

    With ``n`` of a version's ``M`` cases labelled, its humans-only variance is ``var / n`` and its PPI++
    variance ``var_labelled / n + var_unlabelled / (M - n)``, or the humans-only one where that is
    smaller (power tuning can always fall back to the labels alone); the same ``n`` is taken for both
    versions, at most the smaller version's size.

    >>> v = {"n_labelled": 100, "n_unlabelled": 1900, "ppi": {"var_labelled": 0.15, "var_unlabelled": 0.05},
    ...      "humans_only": {"var_labelled": 0.25}}
    >>> labels_for_width(0.1, [v, v], 0.95)
    {'width': 0.1, 'with_the_judge': 515, 'humans_only': 769, 'reason': None}
    """
    half = width / (2 * max(normal_quantile(confidence), 1e-12))  # a level near 0: an interval of no width
    if not all(v.get("ppi", {}).get("var_labelled") is not None for v in versions):
        return {
            "width": width,
            "with_the_judge": None,
            "humans_only": None,
            "reason": "a version has too few labels to plan on",
        }
    sizes = np.array([v["n_labelled"] + v["n_unlabelled"] for v in versions], dtype=float)
    n = np.arange(2, int(sizes.min()) + 1, dtype=float)
    judge = np.zeros(n.size)
    humans = np.zeros(n.size)
    for v, size in zip(versions, sizes):
        rest = size - n
        alone = v["humans_only"]["var_labelled"] / n
        with_judge = v["ppi"]["var_labelled"] / n + v["ppi"]["var_unlabelled"] / np.maximum(rest, 1)
        judge += np.where(rest > 0, np.minimum(with_judge, alone), alone)
        humans += alone
    reach_judge, reach_humans = np.flatnonzero(judge <= half**2), np.flatnonzero(humans <= half**2)
    found = {
        "with_the_judge": int(n[reach_judge[0]]) if reach_judge.size else None,
        "humans_only": int(n[reach_humans[0]]) if reach_humans.size else None,
    }
    reason = None
    if found["with_the_judge"] is None:
        reason = (
            f"even labelling all {int(sizes.min())} cases of the smaller version does not reach that width: more "
            "cases are needed"
        )
    return {"width": width, **found, "reason": reason}


def rate_difference(first: dict, second: dict, key: str, confidence: float) -> dict[str, Any]:
    """The second version's rate minus the first's (``key``: ``"ppi"`` or ``"humans_only"`` of
    :func:`version_rate`), with a normal interval and a two-sided p-value against no difference.

    >>> a = {"ppi": {"estimate": 0.5, "se": 0.03, "ci_method": "PPI++, normal"}}
    >>> b = {"ppi": {"estimate": 0.6, "se": 0.04, "ci_method": "PPI++, normal"}}
    >>> d = rate_difference(a, b, "ppi", 0.95)
    >>> round(d["estimate"], 3), round(d["se"], 3), round(d["p_value"], 4)
    (0.1, 0.05, 0.0455)
    """
    a, b = first[key], second[key]
    if a.get("estimate") is None or b.get("estimate") is None:
        return undefined(a.get("reason") or b.get("reason"))
    diff = b["estimate"] - a["estimate"]
    se = math.sqrt(a["se"] ** 2 + b["se"] ** 2)
    z = normal_quantile(confidence)
    p_value = math.erfc(abs(diff) / se / math.sqrt(2)) if se > 0 else (0.0 if diff else 1.0)
    return estimate(
        diff,
        diff - z * se,
        diff + z * se,
        f"{a['ci_method'].split(',')[0]}, difference of independent versions, normal",
    ) | {"se": se, "p_value": p_value}
