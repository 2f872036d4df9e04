"""How much each human-labelled case counts, from the sample designs that chose it.

Every sample ``calibrate sample`` draws is a stratified random sample of the campaign's cases (one
stratum for ``random``), so case ``i`` of it was drawn with a known inclusion probability ``pi_i``
and stands for ``1 / pi_i`` cases of the pool it was drawn from. A sample that targets cases (near
a threshold, where judges disagree, Neyman allocation) gives some cases a far higher probability than
others; weighting each case by ``1 / pi_i`` (Horvitz-Thompson) removes the bias this would put into
every agreement figure.

A campaign may hold several samples, and labels from outside any sample. Each design is weighted as
an estimate of the whole population on its own, and the designs are mixed in proportion to their
Kish effective sample sizes ``(sum w)^2 / sum w^2``, so a small random sample does not get the weight
of a large targeted one. Labelled cases that no recorded sample chose are taken as one more, uniform,
design (the statistics say how many). The steps of one Neyman series (pilot, then allocations) form one
design, with the inclusion probability of the series as a whole. Weights are scaled to mean 1.

The bootstrap resamples within each (design, stratum) cell, as the designs drew them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from calibrate.campaign import Campaign

__all__ = ["OUTSIDE", "DesignWeights", "design_weights", "kish_effective_n"]

#: The design of labelled cases that no recorded sample chose.
OUTSIDE = "(labelled outside any sample)"


@dataclass(frozen=True)
class DesignWeights:
    """Per case of a sorted case-id array: its weight (``None``: every case counts once) and the
    bootstrap stratum it is resampled in; ``designs`` describes each design's share."""

    weights: np.ndarray | None
    strata: np.ndarray
    designs: list[dict[str, Any]] = field(default_factory=list)
    #: the labelled cases no recorded sample chose
    outside_cases: tuple[str, ...] = ()

    @property
    def n_outside(self) -> int:
        return sum(d["labelled"] for d in self.designs if d["sample"] == OUTSIDE)


def kish_effective_n(weights: np.ndarray) -> float:
    """Kish's effective sample size ``(sum w)^2 / sum w^2``: the number of equally weighted cases that
    would give an estimate of a mean the same variance.

    Examples
    --------
    >>> kish_effective_n(np.ones(10)), kish_effective_n(np.array([1.0, 1.0, 4.0]))
    (10.0, 2.0)
    """
    weights = np.asarray(weights, dtype=float)
    return float(weights.sum() ** 2 / np.sum(weights**2)) if weights.size else 0.0


def _series_owner(samples: dict[str, dict]) -> dict[str, str]:
    """Sample name -> the sample whose inclusion probabilities hold for its cases: the latest step of
    a Neyman series for every earlier step of it, else the sample itself."""
    owner = {name: name for name in samples}
    ordered = sorted(samples, key=lambda n: (samples[n]["design"].get("created", ""), n))
    for name in ordered:  # later steps take over the earlier ones they list
        for earlier in samples[name]["design"].get("series", []):
            for member, current in owner.items():
                if current == earlier or member == earlier:
                    owner[member] = name
    return owner


def design_weights(campaign: Campaign, case_ids: np.ndarray) -> DesignWeights:
    """The weight and bootstrap stratum of each case of ``case_ids`` (the human-labelled cases).

    Examples
    --------
    >>> import pandas as pd
    >>> from calibrate.campaign import campaign_from_frames
    >>> c = campaign_from_frames({"name": "n", "metrics": {"f": {"scale": "binary"}}},
    ...     pd.DataFrame({"case_id": ["a", "b", "c"], "metric": "f", "rater": "h", "rater_kind": "human",
    ...                   "value": [1, 0, 1]}), [{"case_id": x} for x in "abcd"])
    >>> design_weights(c, np.array(["a", "b", "c"])).weights is None   # no recorded sample: unweighted
    True
    >>> c.samples["s"] = {"design": {"strategy": "threshold"}, "case_ids": ["a", "b"], "strata": ["near", "far"],
    ...                   "inclusion_probability": np.array([0.5, 0.1])}
    >>> dw = design_weights(c, np.array(["a", "b", "c"]))
    >>> [round(w, 3) for w in dw.weights.tolist()], dw.n_outside
    ([0.29, 1.452, 1.258], 1)
    """
    case_ids = np.asarray(case_ids, dtype=str)
    n = case_ids.size
    if not campaign.samples or n == 0:
        return DesignWeights(None, np.zeros(n, dtype=np.int64))
    owner = _series_owner(campaign.samples)
    ordered = sorted(campaign.samples, key=lambda s: (campaign.samples[s]["design"].get("created", ""), s))
    position = {c: i for i, c in enumerate(case_ids.tolist())}
    probability = np.full(n, np.nan)
    group = np.full(n, "", dtype=object)
    stratum = np.full(n, "", dtype=object)
    for name in ordered:  # the earliest design that chose a case is the one its label came from
        sample = campaign.samples[name]
        target = campaign.samples[owner[name]]
        by_stratum = {k: v.get("inclusion_probability") for k, v in target["design"].get("strata", {}).items()}
        for case, s, p in zip(sample["case_ids"], sample["strata"], sample["inclusion_probability"]):
            i = position.get(case)
            if i is None or group[i]:
                continue
            combined = by_stratum.get(s) if owner[name] != name else None
            probability[i] = float(combined) if combined is not None else float(p)
            group[i], stratum[i] = owner[name], s
    outside = group == ""
    group[outside], stratum[outside], probability[outside] = OUTSIDE, "", 1.0
    weights = np.empty(n)
    designs = []
    for name in sorted(set(group.tolist()), key=lambda g: (g == OUTSIDE, g)):
        members = group == name
        raw = 1.0 / probability[members]
        effective = kish_effective_n(raw)
        weights[members] = raw * effective / raw.sum()  # the design's total weight: its effective size
        design = campaign.samples[name]["design"] if name != OUTSIDE else {"strategy": "unrecorded"}
        designs.append(
            {
                "sample": name,
                **{k: design.get(k) for k in ("strategy", "by", "n", "seed")},
                "labelled": int(members.sum()),
                "effective_n": effective,
            }
        )
    weights *= n / weights.sum()
    total = weights.sum()
    for d in designs:
        d["weight_share"] = float(weights[group == d["sample"]].sum() / total)
    _, strata = np.unique(np.char.add(group.astype(str), np.char.add("\0", stratum.astype(str))), return_inverse=True)
    uniform = bool(np.allclose(weights, 1.0, rtol=0, atol=1e-12))
    return DesignWeights(
        None if uniform else weights,
        strata.astype(np.int64),
        designs,
        tuple(str(c) for c in case_ids[group == OUTSIDE]),
    )
