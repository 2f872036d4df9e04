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

Each version's rate, the differences and the labels a wanted width needs are those of
:mod:`calibrate.analysis.system_rates`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from calibrate.analysis.figures import undefined
from calibrate.analysis.system_rates import labels_for_width, rate_difference, version_rate
from calibrate.base.errors import ParameterText
from calibrate.base.manifest import build_manifest
from calibrate.base.params import checked
from calibrate.base.results import Result
from calibrate.campaign import Campaign
from calibrate.campaign.metadata import metadata_value
from calibrate.campaign.reference import computed_once, pair
from calibrate.stats.intervals import normal_quantile

__all__ = ["compare_systems"]


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
