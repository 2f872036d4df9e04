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

**A sample of part of the cases.** A queue of the cases a band escalated (``calibrate escalate --sample``,
strategy ``escalated``) is drawn from those cases only: its *frame* ``E``, which its design records
(``frame``: every case the band escalated; ``frame_labelled``: those humans had labelled before the draw,
left out of it). It says nothing of the complement ``D``, and weighted as a sample of every case it would
over-weight ``E``. So each part is estimated by the designs that cover it:

- on ``D``, the whole-population designs keep their weights (Horvitz-Thompson, mixed as above);
- on ``E``, two estimates are mixed: the whole-population designs' cases in ``E`` (their weights, as on
  ``D``), and the queue's: ``1 / pi`` for each case it drew, 1 for each case of ``frame_labelled`` (counted
  with certainty; with the drawn ones they estimate the frame's total without bias). Each is scaled to sum to
  ``N_E * u``, ``N_E`` the frame's size (known exactly) and ``u`` the whole-population designs' weight per
  case of the campaign (their total over the number of cases), so ``E`` stands at its exact share; they are
  mixed by Kish effective size within ``E``: ``alpha = ESS_whole,E / (ESS_whole,E + ESS_queue)``.

Several queues split the cases into cells by the frames that hold them, each cell mixed so. Every weighted
statistic is then a ratio (Hajek) estimate whose parts ``D`` and ``E`` each rest on samples of them. Where no
whole-population design labelled a case, the statistics describe the frames only: the designs say so
(``describes``). A queue written before frames were recorded is weighted as a sample of every case, as
before, and its entry says so. :func:`equal_probability` says where every case had one inclusion
probability (outside the frames, when the whole-population designs are uniform), which lets the band test
of :func:`calibrate.stats.selective.select_band` use the exact binomial test there.

The bootstrap resamples within each (design, stratum) cell, as the designs drew them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from calibrate.campaign import Campaign

__all__ = ["OUTSIDE", "DesignWeights", "design_weights", "equal_probability", "kish_effective_n"]

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


def _partial_frames(samples: dict[str, dict]) -> dict[str, tuple[frozenset[str], frozenset[str]]]:
    """Sample name -> (its frame, the cases of the frame it counts with certainty) for each sample that
    covers only part of the cases: a queue of escalated cases that records its frame."""
    frames = {}
    for name, sample in samples.items():
        design = sample["design"]
        if design.get("frame") is not None:
            frames[name] = (frozenset(design["frame"]), frozenset(design.get("frame_labelled") or ()))
    return frames


def _assign(
    samples: dict[str, dict], names: list[str], owner: dict[str, str], case_ids: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per case: the inclusion probability, design and stratum of the earliest of ``names`` that chose it
    (NaN, "" and "" for a case none chose)."""
    n = case_ids.size
    position = {c: i for i, c in enumerate(case_ids.tolist())}
    probability = np.full(n, np.nan)
    group = np.full(n, "", dtype=object)
    stratum = np.full(n, "", dtype=object)
    for name in names:  # the earliest design that chose a case is the one its label came from
        sample = samples[name]
        target = samples[owner[name]]
        by_stratum = {k: v.get("inclusion_probability") for k, v in target["design"].get("strata", {}).items()}
        for case, s, p in zip(sample["case_ids"], sample["strata"], sample["inclusion_probability"]):
            i = position.get(case)
            if i is None or group[i]:
                continue
            combined = by_stratum.get(s) if owner[name] != name else None
            probability[i] = float(combined) if combined is not None else float(p)
            group[i], stratum[i] = owner[name], s
    return probability, group, stratum


def _entry(samples: dict[str, dict], name: str, labelled: int, effective: float) -> dict[str, Any]:
    design = samples[name]["design"] if name != OUTSIDE else {"strategy": "unrecorded"}
    entry = {
        "sample": name,
        **{k: design.get(k) for k in ("strategy", "by", "n", "seed")},
        "labelled": labelled,
        "effective_n": effective,
    }
    if design.get("strategy") == "escalated" and design.get("frame") is None:
        entry["frame"] = "not recorded (a queue written before frames were): weighted as a sample of every case"
    return entry


def _whole_weights(samples: dict[str, dict], group: np.ndarray, probability: np.ndarray, names: list[str]):
    """Each whole-population design's Horvitz-Thompson weights, scaled to sum to its Kish effective size
    (0 for the cases of no such design), and the designs' entries."""
    weights = np.zeros(group.size)
    designs = []
    for name in names:
        members = group == name
        raw = 1.0 / probability[members]
        effective = kish_effective_n(raw)
        weights[members] = raw * effective / raw.sum()  # the design's total weight: its effective size
        designs.append(_entry(samples, name, int(members.sum()), effective))
    return weights, designs


def _population_size(campaign: Campaign, case_ids: np.ndarray, frames: dict) -> int:
    """The number of cases the whole-population designs stand for: the campaign's cases (else every case id
    it knows: rated, labelled or in a frame)."""
    cases = getattr(campaign, "cases", None)
    if cases:
        return len(cases)
    ratings = getattr(campaign, "ratings", None)
    known = set(case_ids.tolist()).union(*(frame for frame, _ in frames.values()))
    return len(known.union(ratings["case_id"].astype(str)) if ratings is not None else known)


def _partial_raw(sample: dict, certain: frozenset[str], case_ids: np.ndarray) -> np.ndarray:
    """A partial-frame sample's Horvitz-Thompson weights over its frame: ``1 / pi`` for each case it drew,
    1 for each case of the frame humans had labelled before the draw (counted with certainty)."""
    raw = np.where(np.isin(case_ids, np.array(sorted(certain), dtype=str)), 1.0, 0.0)
    position = {c: i for i, c in enumerate(case_ids.tolist())}
    for case, p in zip(sample["case_ids"], sample["inclusion_probability"]):
        if case in position:
            raw[position[case]] = 1.0 / float(p)
    return raw


def _frame_weights(
    whole: np.ndarray, partial: dict[str, np.ndarray], frames: dict, case_ids: np.ndarray, unit: float
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Place each cell of cases (the frames holding them alike) at its size: the whole-population weights
    and each covering partial-frame sample's, each scaled to the cell's size and mixed by Kish effective size
    within the cell. Returns the factor on the whole-population weights and each partial sample's weights."""
    names = sorted(frames)
    key = np.array(["".join("1" if c in frames[p][0] else "0" for p in names) for c in case_ids.tolist()])
    sizes: dict[str, int] = {}
    for c in set().union(*(frame for frame, _ in frames.values())):
        k = "".join("1" if c in frames[p][0] else "0" for p in names)
        sizes[k] = sizes.get(k, 0) + 1
    factor = np.ones(case_ids.size)
    mixed = {p: np.zeros(case_ids.size) for p in names}
    for cell, size in sizes.items():
        inside = key == cell
        parts = {None: whole * inside} | {p: partial[p] * inside for j, p in enumerate(names) if cell[j] == "1"}
        effective = {p: kish_effective_n(w[w > 0]) for p, w in parts.items()}
        total = sum(effective.values())
        for p, w in parts.items():
            if effective[p] == 0:
                continue
            scale = effective[p] / total * size * unit / w.sum()
            if p is None:
                factor[inside] = scale
            else:
                mixed[p] += w * scale
    return factor, mixed


def _with_frames(campaign: Campaign, case_ids: np.ndarray, group, probability, names, frames):
    """The weights and design entries of a campaign with partial-frame samples (see the module docstring)."""
    samples = campaign.samples
    whole_names = [g for g in names if g not in frames]
    whole, designs = _whole_weights(samples, group, probability, whole_names)
    raw = {p: _partial_raw(samples[p], frames[p][1], case_ids) for p in frames}
    covered = bool(whole.any())
    unit = whole.sum() / _population_size(campaign, case_ids, frames) if covered else 1.0
    factor, mixed = _frame_weights(whole, raw, frames, case_ids, unit)
    weights = whole * factor + sum(mixed.values())
    contribution = {g: np.where(group == g, whole * factor, 0.0) for g in whole_names} | mixed
    for d in designs:
        d["frame"] = "all"
    for p in sorted(frames):
        drawn = raw[p] * np.isin(case_ids, np.array(samples[p]["case_ids"], dtype=str))
        entry = _entry(samples, p, int(np.count_nonzero(drawn)), kish_effective_n(drawn[drawn > 0]))
        entry |= {"frame": "part", "frame_size": len(frames[p][0])}
        if not covered:
            entry["describes"] = "only the cases of the partial frames: no labelled case stands for the others"
        designs.append(entry)
    return weights, designs, contribution


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
    samples = campaign.samples
    owner = _series_owner(samples)
    frames = _partial_frames(samples)
    ordered = sorted(samples, key=lambda s: (samples[s]["design"].get("created", ""), s))
    probability, group, stratum = _assign(samples, [s for s in ordered if s not in frames], owner, case_ids)
    if frames:  # a case no whole-population design chose: the partial-frame sample's that drew it, if any
        probability_p, group_p, stratum_p = _assign(samples, [s for s in ordered if s in frames], owner, case_ids)
        fill = (group == "") & (group_p != "")
        group[fill], stratum[fill], probability[fill] = group_p[fill], stratum_p[fill], probability_p[fill]
    outside = group == ""
    group[outside], stratum[outside], probability[outside] = OUTSIDE, "", 1.0
    names = sorted(set(group.tolist()), key=lambda g: (g == OUTSIDE, g))
    if frames:
        weights, designs, contribution = _with_frames(campaign, case_ids, group, probability, names, frames)
    else:
        weights, designs = _whole_weights(samples, group, probability, names)
        contribution = None
    before = weights.sum()
    weights *= n / before
    total = weights.sum()
    for d in designs:
        d["weight_share"] = float(
            weights[group == d["sample"]].sum() / total
            if contribution is None
            else contribution[d["sample"]].sum() / before
        )
    _, strata = np.unique(np.char.add(group.astype(str), np.char.add("\0", stratum.astype(str))), return_inverse=True)
    uniform = bool(np.allclose(weights, 1.0, rtol=0, atol=1e-12))
    return DesignWeights(
        None if uniform else weights,
        strata.astype(np.int64),
        designs,
        tuple(str(c) for c in case_ids[group == OUTSIDE]),
    )


def equal_probability(campaign: Campaign, case_ids: np.ndarray) -> np.ndarray:
    """Per case of ``case_ids`` (labelled or not), whether it lies where every case had the same probability
    of being labelled: outside every partial frame, when every whole-population design drew each case with
    one probability (one stratum, or the same probability in each; labels outside any sample are taken as
    uniform, as :func:`design_weights` takes them). There the labelled cases are a uniform sample.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> c = SimpleNamespace(samples={"q": {"design": {"strategy": "escalated", "frame": ["b"]}}})
    >>> equal_probability(c, np.array(["a", "b"])).tolist()
    [True, False]
    >>> c.samples["s"] = {"design": {"strategy": "threshold"}, "inclusion_probability": np.array([0.5, 0.1])}
    >>> equal_probability(c, np.array(["a", "b"])).tolist()
    [False, False]
    """
    case_ids = np.asarray(case_ids, dtype=str)
    samples = campaign.samples
    frames = _partial_frames(samples)
    owner = _series_owner(samples)
    for name in set(owner[s] for s in samples if s not in frames):
        strata = samples[name]["design"].get("strata") or {}
        probabilities = {v.get("inclusion_probability") for v in strata.values()} or set(
            np.asarray(samples[name].get("inclusion_probability", []), dtype=float).tolist()
        )
        if len(probabilities) > 1:
            return np.zeros(case_ids.size, dtype=bool)
    framed = set().union(*(frame for frame, _ in frames.values()))
    return ~np.isin(case_ids, np.array(sorted(framed), dtype=str))
