"""How far a campaign's human annotators agree with each other, per metric.

The figures are the ceiling a judge can be held to: a judge agreeing with the human reference as
well as annotators agree with each other is as good as another annotator. Percent agreement and
kappa compare labels as given on binary and ordinal metrics (Cohen's kappa quadratic-weighted on an
ordinal scale), and pass/fail at ``human_pass`` on a continuous one; Krippendorff's alpha uses the
metric's level of measurement and every label. Each annotator is also compared with the reference of
the *others* (to spot one who read the guideline differently).

Every resample's figures come from the counts of label patterns (:mod:`calibrate.stats.label_tables`),
the full-sample figures from scikit-learn, krippendorff and the written references, checked against
each other on every run; a command computes a metric's agreement once, however many of its parts read it.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np

from calibrate.analysis.figures import estimate, from_interval, undefined
from calibrate.base.params import checked
from calibrate.base.results import Result
from calibrate.campaign import Campaign
from calibrate.campaign.reference import once_per_command
from calibrate.campaign.weights import design_weights
from calibrate.stats import N_BOOT
from calibrate.stats.annotators import Agreement, agreement_intervals, others_reference
from calibrate.stats.label_tables import LabelTables, multiply_labelled

__all__ = ["annotator_agreement", "label_matrix"]


def label_matrix(campaign: Campaign, metric: str) -> tuple[np.ndarray, list[str], list[str]]:
    """Human labels of ``metric`` as (cases x annotators), NaN where an annotator gave none."""
    rows = campaign.ratings[
        (campaign.ratings["metric"] == metric)
        & (campaign.ratings["rater_kind"] == "human")
        & campaign.ratings["value"].notna()
    ]
    table = rows.pivot_table(index="case_id", columns="rater", values="value", aggfunc="last")
    return table.to_numpy(float), [str(c) for c in table.index], [str(r) for r in table.columns]


def _entry(agreement: Agreement) -> dict[str, Any]:
    """An agreement figure in the shape of every other statistic, with the items it rests on."""
    if not np.isfinite(agreement.estimate):
        figure = undefined("undefined on these labels (too few items, or one category only)")
    elif agreement.interval is None:
        figure = estimate(agreement.estimate, None, None, "none", "no resamples (n_boot = 0)")
    else:
        figure = from_interval(agreement.estimate, agreement.interval)
    return figure | {"n_items": agreement.n_items}


@checked("confidence", "n_boot", "seed")
def annotator_agreement(
    campaign: Campaign, metric: str, *, n_boot: int = N_BOOT, seed: int = 0, confidence: float = 0.95
) -> Result:
    """Agreement between the annotators of ``metric``, with bootstrap intervals over the items that
    two annotators or more labelled (computed once per command: :func:`~calibrate.campaign.reference.computed_once`).

    Parameters
    ----------
    campaign : Campaign
    metric : str
    n_boot, seed : int
        Bootstrap resamples of the items, and their seed.
    confidence : float
        Two-sided level of the intervals.

    Returns
    -------
    Result
        ``{"metric", "annotators", "n_items_multiply_labelled", "percent_agreement", "alpha",
        "cohen_kappa", "per_annotator", ...}`` (a ``reason`` in place of the figures when fewer than two
        items have two labels); ``.to_frame()`` gives each figure with its interval.

    Examples
    --------
    >>> import pandas as pd
    >>> r = pd.DataFrame({"case_id": list("aabbccdd"), "metric": "f", "rater": ["x", "y"] * 4,
    ...                   "rater_kind": "human", "value": [1, 1, 0, 0, 1, 0, 0, 0]})
    >>> from calibrate.campaign import campaign_from_frames
    >>> c = campaign_from_frames({"name": "n", "metrics": {"f": {"scale": "binary"}}}, r)
    >>> doc = annotator_agreement(c, "f", n_boot=0)
    >>> doc["percent_agreement"]["estimate"], doc["cohen_kappa"]["estimate"]
    (0.75, 0.5)
    """
    doc = once_per_command(
        "annotator agreement",
        campaign,
        (metric, n_boot, seed, confidence),
        lambda: _agreement(campaign, metric, n_boot=n_boot, seed=seed, confidence=confidence),
    )
    return Result(copy.deepcopy(dict(doc)))  # each caller its own copy of the shared document


def _agreement(campaign: Campaign, metric: str, *, n_boot: int, seed: int, confidence: float) -> Result:
    spec = campaign.metrics[metric]
    matrix, case_ids, annotators = label_matrix(campaign, metric)
    multiply = int(np.sum(multiply_labelled(matrix))) if matrix.size else 0
    doc: dict[str, Any] = {
        "metric": metric,
        "annotators": annotators,
        "n_annotators": len(annotators),
        "n_items_multiply_labelled": multiply,
    }
    if len(annotators) < 2 or multiply < 2:
        return Result(
            doc | {"reason": f"{multiply} case(s) labelled by two annotators or more: agreement needs at least 2"}
        )
    # the items' design weights (a targeted sample), and their strata for the bootstrap
    design = design_weights(campaign, np.array(case_ids))
    w, strata = design.weights, design.strata
    if w is not None:
        doc["weighted"] = True
    continuous = spec.scale == "continuous"
    compared = np.where(np.isnan(matrix), np.nan, (matrix >= spec.human_pass).astype(float)) if continuous else matrix
    kappa = "cohen_kappa_quadratic" if spec.scale == "ordinal" else "cohen_kappa"
    doc["basis"] = (
        f"pass/fail at human_pass = {spec.human_pass:g} (alpha: the values, interval level)"
        if continuous
        else f"the labels as given ({spec.scale})"
    )
    options = {"n_boot": n_boot, "seed": seed, "confidence": confidence, "subject": f"the annotators of {metric}"}
    # the items two annotators or more labelled, resampled once for every figure of the panel
    keep = multiply_labelled(matrix)
    kept_w = None if w is None else w[keep]
    labels = LabelTables(compared[keep], kept_w)
    values = LabelTables(matrix[keep], kept_w) if continuous else labels
    panel = {"percent_agreement": (labels, "percent_agreement"), "alpha": (values, f"alpha_{spec.alpha_level}")}
    if len(annotators) == 2:
        panel["cohen_kappa"] = (labels, kappa)
    else:
        panel["fleiss_kappa"] = (labels, "fleiss_kappa")
    found = agreement_intervals(panel, strata=strata[keep], **options)
    doc["percent_agreement"] = _entry(found["percent_agreement"])
    doc["alpha"] = _entry(found["alpha"]) | {"level": spec.alpha_level}
    if len(annotators) == 2:
        doc["cohen_kappa"] = _entry(found["cohen_kappa"]) | {
            "weights": "quadratic" if spec.scale == "ordinal" else "none"
        }
    else:
        doc["fleiss_kappa"] = _entry(found["fleiss_kappa"])
    per = []
    for column, annotator in enumerate(annotators):
        others = others_reference(compared, column, mean=False)  # pass/fail on a continuous metric
        pair = np.stack([compared[:, column], others], axis=1)
        both = ~np.isnan(pair).any(axis=1)
        pair = pair[both]
        pair_w = None if w is None else w[both]
        agree = float(np.average(pair[:, 0] == pair[:, 1], weights=pair_w)) if len(pair) else None
        with_others = agreement_intervals(
            {"kappa": (LabelTables(pair, pair_w), kappa)},
            strata=strata[both],
            **options | {"subject": f"annotator {annotator} of {metric}"},
        )["kappa"]
        per.append(
            {
                "annotator": annotator,
                "n_items": len(pair),
                "agreement_with_others": agree,
                "kappa_with_others": _entry(with_others),
            }
        )
    doc["per_annotator"] = per
    return Result(doc)
