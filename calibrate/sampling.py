"""Which cases humans should label: self-weighting sample designs.

``random`` draws n cases uniformly without replacement; ``stratified`` splits the cases by a
metadata key and draws from every stratum in proportion to its size (largest-remainder rounding,
at least one per stratum when n allows), so that every slice is represented. Each sampled case
records its inclusion probability (n_h / N_h in its stratum). Both designs give (nearly) every case
the same probability, so the statistics need no weights; designs that target cases (near a
threshold, where judges disagree, Neyman allocation) need weighted statistics and are not offered
yet. Cases humans already labelled are left out unless asked.
"""

from __future__ import annotations

import csv
import datetime as _dt
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from calibrate.campaign import SAMPLES_FOLDER, Campaign

__all__ = ["draw_sample", "Sample", "write_sample", "read_sample_ids", "SAMPLES_FOLDER"]

Strategy = Literal["random", "stratified"]


@dataclass(frozen=True)
class Sample:
    case_ids: list[str]
    strata: list[str]
    inclusion_probability: list[float]
    design: dict[str, Any]


def _allocate(sizes: np.ndarray, n: int) -> np.ndarray:
    """Proportional allocation of ``n`` over strata of ``sizes`` (largest remainder), with at least
    one case per stratum when ``n`` allows.

    Examples
    --------
    >>> _allocate(np.array([50, 30, 20]), 10).tolist(), _allocate(np.array([98, 1, 1]), 10).tolist()
    ([5, 3, 2], [8, 1, 1])
    """
    share = sizes / sizes.sum() * n
    allocation = np.minimum(np.floor(share).astype(int), sizes)
    order = np.argsort(-(share - np.floor(share)), kind="stable")
    while allocation.sum() < n:  # largest remainders first, skipping full strata
        for index in order:
            if allocation.sum() < n and allocation[index] < sizes[index]:
                allocation[index] += 1
    if n >= sizes.size:  # every stratum represented: one from the largest allocation for an empty one
        for index in np.flatnonzero(allocation == 0):
            allocation[np.argmax(allocation)] -= 1
            allocation[index] = 1
    return allocation


def draw_sample(campaign: Campaign, n: int, *, strategy: Strategy = "random", by: str | None = None, seed: int = 0,
                include_labelled: bool = False) -> Sample:
    """``n`` cases for humans to label; see the module docstring.

    Examples
    --------
    >>> import pandas as pd
    >>> cases = [{"case_id": f"c{i}", "metadata": {"kind": "how" if i % 4 else "what"}} for i in range(40)]
    >>> c = Campaign.from_frames({"name": "n", "metrics": {"f": {"scale": "binary"}}},
    ...     pd.DataFrame({"case_id": ["c0"], "metric": "f", "rater": "h", "rater_kind": "human", "value": [1]}), cases)
    >>> s = draw_sample(c, 8, strategy="stratified", by="kind")
    >>> sorted(set(zip(s.strata, s.inclusion_probability)))
    [('how', 0.2), ('what', 0.2222222222222222)]
    """
    if not campaign.cases:
        raise ValueError("sampling needs the campaign's cases.jsonl")
    if strategy not in ("random", "stratified"):
        raise ValueError(f"unknown strategy {strategy!r}: random or stratified (the targeted designs are not "
                         "available yet)")
    labelled = set(campaign.ratings.loc[campaign.ratings["rater_kind"] == "human", "case_id"])
    pool = sorted(c for c in campaign.cases if include_labelled or c not in labelled)
    if n < 1 or n > len(pool):
        raise ValueError(f"--n {n}: {len(pool)} case(s) can be sampled"
                         + ("" if include_labelled else f" ({len(labelled)} already labelled, left out)"))
    if strategy == "stratified":
        if not by:
            raise ValueError("the stratified strategy needs --by METADATA_KEY")
        missing = [c for c in pool if by not in (campaign.cases[c].get("metadata") or {})]
        if missing:
            raise ValueError(f"--by {by}: {len(missing)} case(s) have no metadata.{by}, e.g. {', '.join(missing[:5])}")
        strata = [str(campaign.cases[c]["metadata"][by]) for c in pool]
    else:
        strata = ["all"] * len(pool)
    rng = np.random.default_rng(seed)
    names, inverse = np.unique(np.array(strata), return_inverse=True)
    sizes = np.bincount(inverse, minlength=names.size)
    allocation = _allocate(sizes, n)
    chosen: list[tuple[str, str, float]] = []
    for h, name in enumerate(names):
        members = [pool[i] for i in np.flatnonzero(inverse == h)]
        picked = rng.choice(len(members), size=int(allocation[h]), replace=False) if allocation[h] else []
        chosen += [(members[i], str(name), float(allocation[h] / sizes[h])) for i in sorted(picked)]
    chosen.sort()
    design = {"strategy": strategy, "by": by, "n": n, "seed": seed, "population": len(pool),
              "include_labelled": include_labelled,
              "strata": {str(name): {"size": int(sizes[h]), "sampled": int(allocation[h])}
                         for h, name in enumerate(names)},
              "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")}
    return Sample([c for c, _, _ in chosen], [s for _, s, _ in chosen], [p for _, _, p in chosen], design)


def write_sample(folder: Path, sample: Sample, name: str) -> Path:
    """``samples/NAME.csv`` (case_id, stratum, inclusion_probability) and ``samples/NAME.json`` (the
    design); an existing sample of that name is never replaced."""
    target = Path(folder) / SAMPLES_FOLDER / f"{name}.csv"
    if target.exists():
        raise FileExistsError(f"{target} exists: choose another --name (a sample already drawn is kept)")
    target.parent.mkdir(exist_ok=True)
    with target.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["case_id", "stratum", "inclusion_probability"])
        writer.writerows(zip(sample.case_ids, sample.strata, (repr(p) for p in sample.inclusion_probability)))
    target.with_suffix(".json").write_text(json.dumps(sample.design, indent=2) + "\n", encoding="utf-8")
    return target


def read_sample_ids(path: str | Path, campaign: Campaign) -> list[str]:
    """The case ids of a sample file, each checked against the campaign's cases."""
    with Path(path).open(newline="", encoding="utf-8") as handle:
        ids = [row["case_id"] for row in csv.DictReader(handle)]
    unknown = [c for c in ids if c not in (campaign.cases or {})]
    if unknown:
        raise ValueError(f"{path}: {len(unknown)} case(s) not in the campaign's cases.jsonl, e.g. "
                         f"{', '.join(unknown[:5])}")
    return ids
