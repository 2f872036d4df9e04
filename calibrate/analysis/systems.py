"""Version B of an application against version A: the difference in the human pass rate, from the judge's
scores on every case and human labels on a few (``calibrate compare-systems``).

The cases of each version are tagged in their metadata (``metadata.KEY``). For each version, the human
pass rate is a prediction-powered estimate (PPI++: :func:`~calibrate.analysis.pass_rate.ppi_mean`, the
judge's raw score on every case of the version corrected by its labelled cases, power-tuned, design-
weighted); the two versions' cases are disjoint, so the difference ``B - A`` has the sum of their
variances, and a normal interval. The humans-only difference (the labelled cases' weighted pass rates)
is given beside it, and so is the judge alone (biased by whatever the judge gets wrong).

Per slice (another metadata key), each difference has its own interval and a two-sided p-value against
no difference; the p-values are adjusted by Holm's step-down method, which keeps the chance of any false
"B differs from A" among the slices at ``1 - confidence``, and the simultaneous (Bonferroni) intervals
are given beside the per-slice ones.

How many labels a wanted width needs (:func:`labels_for_width`): with ``n`` of a version's ``M`` cases
labelled, its variance is ``var_labelled / n + var_unlabelled / (M - n)`` (the PPI++ terms measured on
the labels so far; the humans-only ``p (1 - p) / n`` where that is smaller), against ``p (1 - p) / n``
for humans alone; the smallest equal ``n`` per version whose difference reaches the width is given for
each.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from calibrate.analysis.figures import estimate, undefined
from calibrate.analysis.pass_rate import ppi_mean
from calibrate.base.errors import ParameterText
from calibrate.base.manifest import build_manifest
from calibrate.base.params import checked
from calibrate.base.results import Result
from calibrate.campaign import Campaign
from calibrate.campaign.metadata import metadata_value
from calibrate.campaign.reference import computed_once, pair
from calibrate.campaign.weights import kish_effective_n
from calibrate.stats.intervals import normal_quantile

__all__ = ["compare_systems", "labels_for_width", "rate_difference", "version_rate"]


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


def _judge_only(pass_a: np.ndarray, pass_b: np.ndarray) -> dict[str, Any]:
    if pass_a.size == 0 or pass_b.size == 0:
        return undefined("a version has no case the judge scored")
    return {
        "estimate": float(pass_b.mean() - pass_a.mean()),
        "a": float(pass_a.mean()),
        "b": float(pass_b.mean()),
        "note": "the judge's own verdicts at its threshold: biased by its errors, no interval given",
    }


def _holm(p_values: list[float | None]) -> list[float | None]:
    """Holm's step-down adjusted p-values (None stays None)."""
    from statsmodels.stats.multitest import multipletests

    known = [i for i, p in enumerate(p_values) if p is not None]
    adjusted: list[float | None] = [None] * len(p_values)
    if known:
        values = multipletests([p_values[i] for i in known], method="holm")[1]
        for i, value in zip(known, values):
            adjusted[i] = float(value)
    return adjusted


def _check_arguments(
    campaign: Campaign,
    *,
    metric: str,
    by: str,
    a: str,
    b: str,
    slice_by: str | None,
    width: float,
    confidence: float,
) -> None:
    """Refuse what :func:`compare_systems` cannot compare, naming the parameter."""
    if not 0 < confidence < 1:
        raise ValueError(ParameterText("{confidence}: expected a level between 0 and 1", confidence=confidence))
    if not 0 < width < 1:
        raise ValueError(ParameterText("{width}: expected a width between 0 and 1", width=width))
    if a == b:
        raise ValueError(ParameterText("{b}: the same version as {a}: compare two versions", a=a, b=b))
    if slice_by is not None and slice_by == by:
        raise ValueError(
            ParameterText(
                "{slice_by}: the key of the versions itself: each slice would hold one version", slice_by=slice_by
            )
        )
    campaign.metric_names([metric])
    if not campaign.cases:
        raise ValueError(
            ParameterText("{by}: the versions are read from cases.jsonl, which this campaign lacks", by=by)
        )


@dataclass(frozen=True)
class _Versions:
    """The labelled (``_l``) and unlabelled (``_u``) cases of a comparison: version, scores, verdicts."""

    a: str
    b: str
    version_l: np.ndarray
    version_u: np.ndarray
    passes: np.ndarray
    oriented_l: np.ndarray
    oriented_u: np.ndarray
    weights: np.ndarray | None
    judge_passes: np.ndarray | None
    version_all: np.ndarray


def _version_of(
    campaign: Campaign, ids_l: list[str], ids_u: list[str], *, by: str, a: str, b: str
) -> tuple[np.ndarray, np.ndarray]:
    """Each case's version (``metadata[by]``), labelled and unlabelled; a version no case has is a ``ValueError``."""
    version_l = np.array([metadata_value(campaign, c, by) for c in ids_l])
    version_u = np.array([metadata_value(campaign, c, by) for c in ids_u])
    found = sorted(set(version_l.tolist()) | set(version_u.tolist()))
    for name, value in (("a", a), ("b", b)):
        if value not in found:
            raise ValueError(
                ParameterText(
                    "{" + name + "}: no case the judge scored has metadata.{_by} = {_value} (its values: {_found})",
                    **{name: value},
                    _by=by,
                    _value=repr(value),
                    _found=", ".join(found[:20]) or "none",
                )
            )
    return version_l, version_u


def _versions(
    joined: Any, version_l: np.ndarray, version_u: np.ndarray, *, a: str, b: str, threshold: float | None
) -> _Versions:
    """The cases of a comparison: their versions, oriented scores, and the judge's verdicts at ``threshold``."""
    scores = joined.judge
    unl = joined.unlabelled
    oriented_l = scores.sign * joined.score
    oriented_u = scores.sign * scores.values[unl]
    judge_passes = np.r_[oriented_l, oriented_u] >= scores.sign * threshold if threshold is not None else None
    return _Versions(
        a=a,
        b=b,
        version_l=version_l,
        version_u=version_u,
        passes=joined.passes,
        oriented_l=oriented_l,
        oriented_u=oriented_u,
        weights=joined.weights,
        judge_passes=judge_passes,
        version_all=np.r_[version_l, version_u],
    )


def _compare(
    v: _Versions, mask_l: np.ndarray, mask_u: np.ndarray, *, width: float, confidence: float
) -> dict[str, Any]:
    """Version b against version a on the cases the masks keep: each rate, the differences, the labels."""
    sides = {}
    for name, value in (("a", v.a), ("b", v.b)):
        in_l, in_u = mask_l & (v.version_l == value), mask_u & (v.version_u == value)
        w = None if v.weights is None else v.weights[in_l]
        sides[name] = version_rate(v.passes[in_l], v.oriented_l[in_l], v.oriented_u[in_u], w, confidence)
    result = {
        "a": sides["a"],
        "b": sides["b"],
        "difference": rate_difference(sides["a"], sides["b"], "ppi", confidence),
        "humans_only_difference": rate_difference(sides["a"], sides["b"], "humans_only", confidence),
        "labels": labels_for_width(width, [sides["a"], sides["b"]], confidence),
    }
    if v.judge_passes is not None:
        every = np.r_[mask_l, mask_u]
        result["judge_only_difference"] = _judge_only(
            v.judge_passes[every & (v.version_all == v.a)], v.judge_passes[every & (v.version_all == v.b)]
        )
    else:
        result["judge_only_difference"] = undefined("the judge has no threshold under the metric's rule")
    return result


def _slices(
    campaign: Campaign,
    v: _Versions,
    ids_l: list[str],
    ids_u: list[str],
    *,
    slice_by: str,
    width: float,
    confidence: float,
) -> tuple[list[dict[str, Any]], str]:
    """The comparison per value of ``metadata[slice_by]``, Holm-adjusted; and the sentence saying how."""
    slice_l = np.array([metadata_value(campaign, c, slice_by) for c in ids_l])
    slice_u = np.array([metadata_value(campaign, c, slice_by) for c in ids_u])
    values = sorted(set(slice_l.tolist()) | set(slice_u.tolist()))
    slices = [
        {
            "key": slice_by,
            "value": value,
            **_compare(v, slice_l == value, slice_u == value, width=width, confidence=confidence),
        }
        for value in values
    ]
    adjusted = _holm([s["difference"].get("p_value") for s in slices])
    k = sum(p is not None for p in adjusted)
    z_all = normal_quantile(1 - (1 - confidence) / max(k, 1))
    for s, p in zip(slices, adjusted):
        d = s["difference"]
        if p is not None:
            d["p_value_holm"] = p
            d["differs_after_holm"] = p < 1 - confidence
            d["simultaneous_ci"] = [d["estimate"] - z_all * d["se"], d["estimate"] + z_all * d["se"]]
    multiplicity = (
        f"Holm's step-down adjustment over the {k} slices with a difference; simultaneous "
        f"intervals by Bonferroni at {1 - (1 - confidence) / max(k, 1):.4f}"
    )
    return slices, multiplicity


@computed_once()
@checked("confidence")
def compare_systems(
    campaign: Campaign,
    *,
    metric: str,
    judge: str,
    by: str,
    a: str,
    b: str,
    slice_by: str | None = None,
    width: float = 0.1,
    confidence: float = 0.95,
) -> Result:
    """The ``calibrate compare-systems`` command: the human pass rate of version ``b`` minus version ``a``
    (cases tagged ``metadata[by]``), from ``judge``'s scores on every case and the human labels.

    Parameters
    ----------
    campaign : Campaign
    metric, judge : str
    by : str
        The metadata key naming the version of each case.
    a, b : str
        The two versions' values of it.
    slice_by : str, optional
        A metadata key to compare per value of, with Holm's correction across the slices.
    width : float
        The interval width to plan the labels for.
    confidence : float

    Returns
    -------
    Result
        ``{"campaign", "metric", "judge", "by", "a", "b", "threshold", "overall": {"a", "b", "difference",
        "humans_only_difference", "judge_only_difference", "labels"}, "slices", "manifest"}``.

    Examples
    --------
    >>> import calibrate
    >>> c = calibrate.load_campaign(calibrate.demo_campaign_path())
    >>> doc = compare_systems(c, metric="relevance", judge="Olz-gpt4o", by="question_type", a="what", b="how")
    >>> d = doc["overall"]["difference"]
    >>> round(d["estimate"], 3), d["ci_low"] < d["estimate"] < d["ci_high"]
    (-0.029, True)
    """
    _check_arguments(campaign, metric=metric, by=by, a=a, b=b, slice_by=slice_by, width=width, confidence=confidence)
    joined = pair(campaign, metric, judge)
    scores = joined.judge
    ids_l = joined.case_ids.tolist()
    ids_u = scores.case_ids[joined.unlabelled].tolist()
    version_l, version_u = _version_of(campaign, ids_l, ids_u, by=by, a=a, b=b)
    from calibrate.analysis.recommendations import recommended_threshold

    threshold = recommended_threshold(campaign, metric, scores.name)
    versions = _versions(joined, version_l, version_u, a=a, b=b, threshold=threshold)
    doc: dict[str, Any] = {
        "campaign": campaign.name,
        "metric": metric,
        "judge": scores.name,
        "by": by,
        "a": a,
        "b": b,
        "threshold": threshold,
        "weighted": joined.weights is not None,
        "confidence": confidence,
        "overall": _compare(
            versions, np.ones(len(ids_l), bool), np.ones(len(ids_u), bool), width=width, confidence=confidence
        ),
    }
    if slice_by is not None:
        doc["slices"], doc["multiplicity"] = _slices(
            campaign, versions, ids_l, ids_u, slice_by=slice_by, width=width, confidence=confidence
        )
    doc["manifest"] = build_manifest(
        campaign,
        command="compare-systems",
        metric=metric,
        judge=scores.name,
        by=by,
        a=a,
        b=b,
        slice_by=slice_by,
        width=width,
        confidence=confidence,
    )
    return Result(doc)
