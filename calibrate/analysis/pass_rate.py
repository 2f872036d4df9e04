"""The human pass rate of a large judge-scored set, from a few human labels and the judge's scores.

A team has a few hundred human labels and many more cases only a judge scored. Three estimates of
the share of all those cases a human would pass, each with its interval:

- **humans only**: the labelled cases' pass rate (weighted by their sample design), Wilson interval;
- **prediction-powered (PPI++)**: the judge's raw score ``f`` on every case, corrected by the
  labelled cases: ``theta = lambda * mean_all(f) + mean_labelled(y - lambda * f)`` with the
  power-tuning ``lambda`` that minimises the variance, clipped to [0, 1] (Angelopoulos, Duchi & Zrnic
  2023); ``lambda = 0`` is the humans-only estimate, so a tuned ``lambda`` is not worse than it in large
  samples, whereas plain PPI (``lambda = 1``) with pass/fail predictions can need more labels than
  humans alone. The formulas follow ``ppi_python``'s ``ppi_mean_ci`` (the tests compare the two);
- **stratified by the judge's score**: strata at the quantiles of the score over every case, the
  labelled pass rate in each stratum weighted by the stratum's share of all cases, with per-stratum
  rates smoothed (``(x + 1/2) / (n + 1)``) in the variance so that a stratum of one verdict keeps some;

and, for comparison only, the **judge alone**: the share of all cases the judge passes at its threshold
— biased by whatever the judge gets wrong, and its narrow interval does not cover that bias.

Each corrected estimate says how many labels it saves: the labels a humans-only estimate would need for
the same interval width, minus the labels used.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from calibrate.analysis.figures import estimate, undefined
from calibrate.base.manifest import build_manifest
from calibrate.base.params import checked
from calibrate.base.results import Result
from calibrate.campaign import Campaign
from calibrate.campaign.metadata import metadata_values, require_cases
from calibrate.campaign.reference import computed_once, pair
from calibrate.campaign.weights import kish_effective_n
from calibrate.stats.intervals import normal_quantile, wilson_interval
from calibrate.stats.strata import score_edges, score_strata

__all__ = ["MIN_STRATUM_LABELS", "estimate_pass_rate", "ppi_mean", "stratified_mean"]

#: Score strata with fewer labelled cases are merged with their neighbour.
MIN_STRATUM_LABELS = 2


def _normalised(weights: np.ndarray | None, n: int) -> np.ndarray:
    return np.ones(n) if weights is None else np.asarray(weights, float) / np.sum(weights) * n


def ppi_mean(
    y: np.ndarray,
    yhat: np.ndarray,
    yhat_unlabelled: np.ndarray,
    *,
    weights: np.ndarray | None = None,
    lam: float | None = None,
    confidence: float = 0.95,
) -> dict[str, float]:
    """PPI++ estimate of the mean of ``y`` over the labelled and unlabelled cases, with its interval.

    Parameters
    ----------
    y, yhat : ndarray
        The labelled cases' outcome (1 = human pass) and prediction (the judge's raw score).
    yhat_unlabelled : ndarray
        The prediction on the cases without a label.
    weights : ndarray, optional
        The labelled cases' design weights (inverse inclusion probabilities).
    lam : float, optional
        The power-tuning parameter; ``None`` chooses the variance-minimising one in [0, 1], ``1`` is
        plain PPI, ``0`` the labelled mean.

    Returns
    -------
    dict
        ``estimate``, ``se``, ``ci_low``, ``ci_high``, ``lam``, and the variance of one labelled case's
        term and of one unlabelled case's (``se**2 = var_labelled / n + var_unlabelled / N``: what a
        plan for more labels reads).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> f = rng.random(5000); y = (rng.random(5000) < f).astype(float)
    >>> r = ppi_mean(y[:300], f[:300], f[300:])
    >>> round(r["lam"], 2), round(r["estimate"], 3), round(float(y.mean()), 3)
    (0.96, 0.488, 0.491)
    """
    y, yhat, unl = (np.asarray(a, dtype=float) for a in (y, yhat, yhat_unlabelled))
    n, big_n = y.size, unl.size
    w = _normalised(weights, n)
    if lam is None:  # ppi_python's power tuning: from the lambda = 1 estimate, clipped to [0, 1]
        theta = unl.mean() + np.mean(w * (y - yhat))
        grads, grads_hat = w * (y - theta), w * (yhat - theta)
        cov = 2 * np.mean((grads - grads.mean()) * (grads_hat - grads_hat.mean()))
        var = np.var(np.concatenate([grads_hat, unl - theta]), ddof=1)
        lam = float(np.clip(cov / (2 * (1 + n / big_n) * var), 0, 1)) if var > 0 else 0.0
    theta = lam * unl.mean() + np.mean(w * (y - lam * yhat))
    var_labelled, var_unlabelled = float(np.var(w * (y - lam * yhat))), float(np.var(lam * unl))
    se = float(np.sqrt(var_unlabelled / big_n + var_labelled / n))
    z = normal_quantile(confidence)
    return {
        "estimate": float(theta),
        "se": se,
        "ci_low": float(theta - z * se),
        "ci_high": float(theta + z * se),
        "lam": float(lam),
        "var_labelled": var_labelled,
        "var_unlabelled": var_unlabelled,
    }


def stratified_mean(
    y: np.ndarray,
    stratum: np.ndarray,
    shares: np.ndarray,
    *,
    weights: np.ndarray | None = None,
    confidence: float = 0.95,
) -> dict[str, float]:
    """Post-stratified estimate ``sum_h W_h p_h`` of a pass rate, with a smoothed variance.

    Examples
    --------
    >>> y = np.array([0, 0, 1, 1, 1, 0.]); s = np.array([0, 0, 0, 1, 1, 1])
    >>> r = stratified_mean(y, s, np.array([0.8, 0.2]))
    >>> round(r["estimate"], 4)
    0.4
    """
    y = np.asarray(y, dtype=float)
    w = _normalised(weights, y.size)
    theta, var = 0.0, 0.0
    for h, share in enumerate(shares):
        at = stratum == h
        if not at.any():
            continue
        p = np.average(y[at], weights=w[at])
        n_eff = kish_effective_n(w[at])
        smoothed = (p * n_eff + 0.5) / (n_eff + 1)
        theta += share * p
        var += share**2 * smoothed * (1 - smoothed) / n_eff
    se = float(np.sqrt(var))
    z = normal_quantile(confidence)
    return {"estimate": float(theta), "se": se, "ci_low": float(theta - z * se), "ci_high": float(theta + z * se)}


def _merged_strata(
    score_all: np.ndarray, score_labelled: np.ndarray, n_strata: int
) -> tuple[np.ndarray, np.ndarray, list[float]]:
    """Score strata over every case, merged until each holds ``MIN_STRATUM_LABELS`` labelled cases:
    the labelled cases' stratum and every stratum's share of all cases."""

    edges = score_edges(score_all, n_strata)
    while edges:
        counts = np.bincount(score_strata(score_labelled, edges), minlength=len(edges) + 1)
        short = np.flatnonzero(counts < MIN_STRATUM_LABELS)
        if not short.size:
            break
        h = int(short[0])
        del edges[min(h, len(edges) - 1)]  # merge the short stratum with its upper neighbour (the last: lower)
    # each stratum's count from the count at or below each edge: a few comparisons of the many scores,
    # not a search of each (the counts np.bincount(score_strata(score_all, edges)) gives)
    at_or_below = [np.count_nonzero(score_all <= e) for e in edges]
    shares = np.diff(np.array([0, *at_or_below, score_all.size], dtype=np.int64)) / score_all.size
    return score_strata(score_labelled, edges), shares, edges


def _with_savings(result: dict, human_se: float, n: int, method: str) -> dict[str, Any]:
    """The estimate with what it saves: at the humans-only interval's width it needs ``n * ratio``
    labels (``ratio`` its variance over the humans-only one); for its own width humans alone would
    need ``n / ratio``."""
    ratio = (result["se"] / human_se) ** 2 if human_se > 0 else float("nan")
    usable = np.isfinite(ratio) and ratio > 0
    return estimate(result["estimate"], result["ci_low"], result["ci_high"], method) | {
        "se": result["se"],
        "variance_ratio": float(ratio) if usable else None,
        "labels_saved": int(n - np.ceil(n * ratio)) if usable else None,
        "humans_only_labels_for_this_width": int(np.ceil(n / ratio)) if usable else None,
        **({"lam": result["lam"]} if "lam" in result else {}),
    }


def _one(passes, score_l, score_u, weights, threshold, sign, confidence, n_strata) -> dict[str, Any]:
    """The four estimates of one part (all cases, or a slice): its labelled cases' passes, scores and
    weights, and its unlabelled cases' scores (``score_u``: millions of cases; each array of them made
    here is made once)."""
    n, big_n = passes.size, score_u.size
    out: dict[str, Any] = {"n_labelled": int(n), "n_unlabelled": int(big_n)}
    if n < 2:
        reason = f"{n} labelled case(s): an estimate needs 2"
        return out | {
            "humans_only": undefined(reason),
            "ppi": undefined(reason),
            "stratified": undefined(reason),
            "judge_only": undefined(reason),
        }
    w = _normalised(weights, n)
    p_h = float(np.average(passes, weights=w))
    n_eff = kish_effective_n(w)
    low, high = wilson_interval(p_h * n_eff, n_eff, confidence=confidence)
    smoothed = (p_h * n_eff + 0.5) / (n_eff + 1)
    human_se = float(np.sqrt(smoothed * (1 - smoothed) / n_eff))  # for the savings, smoothed as the strata are
    out["humans_only"] = estimate(
        p_h, float(low), float(high), "Wilson score" + (" at the Kish effective size" if weights is not None else "")
    ) | {"se": human_se}
    if big_n == 0:
        reason = "every case the judge scored is labelled: the humans-only figure is the pass rate itself"
        return out | {"ppi": undefined(reason), "stratified": undefined(reason), "judge_only": undefined(reason)}
    oriented_u = score_u if sign == 1 else sign * score_u  # the same numbers, without a copy of the many
    out["ppi"] = _with_savings(
        ppi_mean(passes, sign * score_l, oriented_u, weights=weights, confidence=confidence),
        human_se,
        n,
        "prediction-powered (PPI++, power-tuned, the judge's raw score), normal",
    )
    everyone = np.concatenate([sign * score_l, oriented_u])
    del oriented_u
    stratum, shares, _edges = _merged_strata(everyone, sign * score_l, n_strata)
    out["stratified"] = _with_savings(
        stratified_mean(passes, stratum, shares, weights=weights, confidence=confidence),
        human_se,
        n,
        f"stratified by the judge's score ({len(shares)} strata), normal, smoothed",
    )
    if threshold is None:
        out["judge_only"] = undefined("the judge has no pass threshold under the metric's rule")
    else:
        k = float(np.count_nonzero(everyone >= sign * threshold))
        low, high = wilson_interval(k, everyone.size, confidence=confidence)
        out["judge_only"] = estimate(k / everyone.size, float(low), float(high), "Wilson score") | {
            "threshold": threshold,
            "note": "the judge's own verdicts: biased by its errors, which the interval does not include",
        }
    return out


def _groups(keys: np.ndarray, labelled: np.ndarray) -> tuple[list[str], list[tuple[np.ndarray, np.ndarray]]]:
    """The sorted distinct ``keys`` of a judge's cases, and for each, the indices of its cases among
    the labelled ones and among the others (each ascending: a slice's cases keep their order, so its
    sums are those of a mask). One sort of the integer codes instead of a pass over every case per slice.

    Examples
    --------
    >>> values, members = _groups(np.array(["b", "a", "b", "a"]), np.array([True, True, False, False]))
    >>> values, [(at_l.tolist(), at_u.tolist()) for at_l, at_u in members]
    (['a', 'b'], [([1], [1]), ([0], [0])])
    """
    codes, uniques = pd.factorize(keys, sort=True)
    k = len(uniques)

    def split(codes: np.ndarray) -> list[np.ndarray]:
        order = np.argsort(codes, kind="stable")
        return np.split(order, np.cumsum(np.bincount(codes, minlength=k))[:-1])

    return [str(u) for u in uniques], list(zip(split(codes[labelled]), split(codes[~labelled]), strict=True))


@computed_once()
@checked("confidence")
def estimate_pass_rate(
    campaign: Campaign, *, metric: str, judge: str, by: str | None = None, confidence: float = 0.95, n_strata: int = 5
) -> Result:
    """The human pass rate of every case ``judge`` scored on ``metric``, from the human labels and the
    judge's scores; per value of the metadata key ``by`` too. See the module docstring.

    Parameters
    ----------
    campaign : Campaign
    metric, judge : str
        The metric, and the judge whose scores cover the cases without a human label.
    by : str, optional
        A metadata key of the cases: the estimates per value of it too.
    confidence : float
        Two-sided level of the intervals.
    n_strata : int
        Strata of the judge's score for the stratified estimate.

    Returns
    -------
    Result
        The ``calibrate pass-rate --json`` document: ``overall`` and ``slices``, each with the
        ``humans_only``, ``ppi``, ``stratified`` and ``judge_only`` estimates; ``.to_frame()`` gives them
        with their intervals.

    Examples
    --------
    >>> import calibrate
    >>> c = calibrate.load_campaign(calibrate.demo_campaign_path())
    >>> doc = estimate_pass_rate(c, metric="relevance", judge="Olz-gpt4o")
    >>> doc["overall"]["n_unlabelled"], round(doc["overall"]["humans_only"]["estimate"], 3)
    (0, 0.268)
    """
    from calibrate.analysis.recommendations import recommended_threshold

    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be between 0 and 1, not {confidence}")

    campaign.metric_names([metric])
    joined = pair(campaign, metric, judge)
    scores, passes, weights = joined.judge, joined.passes.astype(float), joined.weights
    unlabelled = joined.unlabelled
    score_u = scores.values[unlabelled]  # the judge's scores of the cases no human labelled: made once
    threshold = recommended_threshold(campaign, metric, scores.name)

    def part(at_l: np.ndarray | None, at_u: np.ndarray | None) -> dict[str, Any]:
        """The estimates over the labelled cases ``at_l`` and the unlabelled ones ``at_u`` (indices in
        the order of the cases; None: all of them)."""
        w = None if weights is None or at_l is None else weights[at_l]
        return _one(
            passes if at_l is None else passes[at_l],
            joined.score if at_l is None else joined.score[at_l],
            score_u if at_u is None else score_u[at_u],
            weights if at_l is None else w,
            threshold,
            scores.sign,
            confidence,
            n_strata,
        )

    doc: dict[str, Any] = {
        "campaign": campaign.name,
        "metric": metric,
        "judge": scores.name,
        "weighted": weights is not None,
        "threshold": threshold,
        "overall": part(None, None),
    }
    if by is not None:
        require_cases(campaign, by)
        values, members = _groups(metadata_values(campaign, scores.case_ids, by), ~unlabelled)
        doc["slices"] = [
            {"key": by, "value": v, **part(at_l, at_u)} for v, (at_l, at_u) in zip(values, members, strict=True)
        ]
    doc["manifest"] = build_manifest(
        campaign, command="pass-rate", metric=metric, judge=scores.name, by=by, confidence=confidence, n_strata=n_strata
    )
    return Result(doc)
