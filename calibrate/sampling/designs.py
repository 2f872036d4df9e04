"""Which cases humans should label: sample designs, each a stratified random sample.

Every design splits the candidate cases into strata and draws a fixed number from each, uniformly
without replacement, so each sampled case has a known inclusion probability ``n_h / N_h`` that the
statistics weight by (:mod:`calibrate.campaign.weights`):

- ``random``: one stratum.
- ``stratified``: one stratum per value of a metadata key, ``proportional`` (every case about the
  same chance: look at every slice) or ``equal`` (as many per slice: small slices get measured).
- ``threshold``: the ``band`` share of the cases whose judge score lies closest to the threshold
  (given, or the judge's recommended one) gets the ``focus`` share of the labels; the cases below and
  above share the rest. Labels there are the ones that change a pass/fail decision.
- ``disagreement``: the ``band`` share of the cases where the judges' percentile ranks differ most
  gets the ``focus`` share of the labels; the rest share the others.
- ``neyman``: strata by a judge's score (quantiles). The first call draws a proportional pilot; once
  humans labelled it, each further call allocates the labels over the strata in proportion to
  ``N_h x S_h`` (stratum size times the spread of the human verdict in it, Neyman 1934), counting what
  the series already drew; the series' inclusion probability is then ``(drawn so far) / N_h``. On real
  data this needed the fewest labels for a given interval on the pass rate (see the README).

``random`` and ``stratified`` leave out cases humans already labelled (unless asked); the designs
on judge scores take the cases the judge scored. A drawn sample is never replaced.
"""

from __future__ import annotations

import csv
import datetime as _dt
import functools
import io
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd

from calibrate.base.documents import validate
from calibrate.base.errors import NO_VALUE, ParameterText
from calibrate.base.files import write_all, writes_campaign
from calibrate.base.names import inside, name_key, path_component
from calibrate.base.params import checked
from calibrate.base.results import Result
from calibrate.campaign import SAMPLES_FOLDER, Campaign
from calibrate.campaign.metadata import MISSING, metadata_value
from calibrate.campaign.own_files import SampleDesign, read_case_ids
from calibrate.campaign.reference import computed_once, find_judge, judge_scores, pair
from calibrate.stats.strata import percentile_ranks, score_edges, score_strata

__all__ = [
    "SAMPLES_FOLDER",
    "STRATEGIES",
    "Sample",
    "draw_sample",
    "read_sample_ids",
    "sample_cases",
    "sample_file",
    "write_sample",
]

Strategy = Literal["random", "stratified", "threshold", "disagreement", "neyman"]
STRATEGIES = ("random", "stratified", "threshold", "disagreement", "neyman")
#: A stratum of a Neyman pilot needs this many labelled cases before labels are allocated by it.
MIN_PILOT_LABELS = 2


@dataclass(frozen=True)
class Sample:
    """Cases drawn for humans to label, each with its stratum and inclusion probability, and the design."""

    case_ids: list[str]
    strata: list[str]
    inclusion_probability: list[float]
    design: dict[str, Any]

    def to_frame(self) -> pd.DataFrame:
        """One row per case drawn: ``case_id``, ``stratum``, ``inclusion_probability``."""
        return pd.DataFrame(
            {"case_id": self.case_ids, "stratum": self.strata, "inclusion_probability": self.inclusion_probability}
        )

    def default_name(self) -> str:
        """The name ``calibrate sample`` gives it: the strategy (and a Neyman series' phase) and seed."""
        strategy, seed = self.design["strategy"], self.design.get("seed")
        name = f"{strategy}-{self.design.get('phase', '')}-{seed}" if strategy == "neyman" else f"{strategy}-{seed}"
        return name.replace("--", "-")


@writes_campaign("calibrate sample")
def sample_cases(campaign: Campaign, n: int, *, name: str | None = None, **design: Any) -> Result:
    """The ``calibrate sample`` command: :func:`draw_sample`, then :func:`write_sample` into the
    campaign's ``samples/`` (a sample already drawn is never replaced).

    Parameters
    ----------
    campaign : Campaign
        A campaign read from its folder.
    n : int
        Cases to draw.
    name : str, optional
        The sample's name (default: its strategy and seed, e.g. ``random-0``): a file name, so a name
        :func:`~calibrate.base.names.path_component` refuses (``../x``) is a ValueError.
    **design
        The design: ``strategy``, ``by``, ``seed``, ... as :func:`draw_sample` takes them.

    Returns
    -------
    Result
        ``{"file", "design", "case_ids"}``; ``.to_frame()`` gives each case with its stratum and
        inclusion probability.

    Examples
    --------
    >>> import calibrate, shutil, tempfile
    >>> folder = shutil.copytree(calibrate.demo_campaign_path(), tempfile.mkdtemp() + "/demo")
    >>> doc = calibrate.sample_cases(calibrate.load_campaign(folder), 20, strategy="stratified",
    ...                              by="question_type", include_labelled=True)
    >>> doc["file"].endswith("stratified-0.csv"), len(doc.to_frame())
    (True, 20)
    """
    if campaign.path is None:
        raise ValueError("sampling needs a campaign folder: the sample is written into it")
    if name is not None:
        path_component(name, what="sample name")  # refused before anything is drawn
    drawn = draw_sample(campaign, n, **design)
    path = write_sample(campaign.path, drawn, name or drawn.default_name())
    return Result(
        {"file": str(path), "design": drawn.design, "case_ids": drawn.case_ids}, functools.partial(_sample_frame, drawn)
    )


def _sample_frame(sample: Sample, document: dict[str, Any]) -> pd.DataFrame:
    return sample.to_frame()


def _apportion(shares: np.ndarray, n: int, caps: np.ndarray) -> np.ndarray:
    """``n`` whole units in proportion to ``shares`` (largest remainder), none above its cap; what a
    capped stratum cannot take goes to the others.

    Examples
    --------
    >>> _apportion(np.array([1.0, 1.0, 1.0]), 10, np.array([2, 50, 50])).tolist()
    [2, 4, 4]
    """
    shares = np.asarray(shares, dtype=float)
    caps = np.asarray(caps, dtype=int)
    if not (shares[caps > 0] > 0).any():
        shares = np.ones(caps.size)
    out = np.zeros(caps.size, dtype=int)
    capped = caps <= 0
    n = min(n, int(caps.sum()))
    while True:
        open_ = ~capped & (shares > 0)
        budget = n - out[capped].sum()
        target = np.where(open_, shares, 0) / max(np.where(open_, shares, 0).sum(), 1e-300) * budget
        over = open_ & (target >= caps)
        if over.any():  # these strata take all they have; the rest is shared again
            out[over], capped = caps[over], capped | over
            continue
        out[open_] = np.floor(target[open_]).astype(int)
        for index in np.argsort(-(target - np.floor(target)), kind="stable"):
            if out.sum() < n and open_[index] and out[index] < caps[index]:
                out[index] += 1
        if out.sum() < n:  # strata with a zero share take what is left, in order
            for index in np.flatnonzero(~capped & (out < caps)):
                out[index] += min(caps[index] - out[index], n - out.sum())
        return out


def _allocate(sizes: np.ndarray, n: int) -> np.ndarray:
    """Proportional allocation of ``n`` over strata of ``sizes`` (largest remainder), with at least
    one case per stratum when ``n`` allows.

    Examples
    --------
    >>> _allocate(np.array([50, 30, 20]), 10).tolist(), _allocate(np.array([98, 1, 1]), 10).tolist()
    ([5, 3, 2], [8, 1, 1])
    """
    allocation = _apportion(sizes, n, sizes)
    if n >= np.count_nonzero(sizes):  # every stratum represented: one from the largest allocation for an empty one
        for index in np.flatnonzero((allocation == 0) & (sizes > 0)):
            allocation[np.argmax(allocation)] -= 1
            allocation[index] = 1
    return allocation


def _focus_allocation(names: np.ndarray, sizes: np.ndarray, n: int, focus_name: str, focus: float) -> np.ndarray:
    """``focus`` of ``n`` to the focus stratum, the rest proportional over the others."""
    at = int(np.flatnonzero(names == focus_name)[0]) if focus_name in names else None
    if at is None:
        return _allocate(sizes, n)
    others = np.arange(names.size) != at
    allocation = np.zeros(names.size, dtype=int)
    allocation[at] = min(sizes[at], int(round(focus * n)))
    if others.any():
        allocation[others] = _apportion(sizes[others], n - allocation[at], sizes[others])
    if allocation.sum() < n:  # the others were too small: the focus stratum takes the rest
        allocation[at] = min(sizes[at], allocation[at] + n - allocation.sum())
    return allocation


def chosen_judge(campaign: Campaign, metric: str | None, name: str | None):
    """The scores of one judge on one metric (a judge name, or a rater with one run)."""
    metric = chosen_metric(campaign, metric)
    judges = judge_scores(campaign, metric)
    if not judges:
        raise ValueError(f"metric {metric}: no judge scores in the campaign (run calibrate judge first)")
    if name is None:
        if len(judges) > 1:
            raise ValueError(
                ParameterText(
                    "metric {_metric} has several judges: choose one with {judge} ({_names})",
                    _metric=metric,
                    judge=NO_VALUE,
                    _names=", ".join(j.name for j in judges),
                )
            )
        return metric, judges[0]
    return metric, find_judge(campaign, metric, name)


def chosen_metric(campaign: Campaign, metric: str | None) -> str:
    if metric is None:
        if len(campaign.metrics) > 1:
            raise ValueError(
                ParameterText(
                    "this design reads judge scores: choose a metric with {metric} ({_names})",
                    metric=NO_VALUE,
                    _names=", ".join(sorted(campaign.metrics)),
                )
            )
        return next(iter(campaign.metrics))
    if metric not in campaign.metrics:
        raise ValueError(
            ParameterText(
                "{metric}: the campaign declares {_names}", metric=metric, _names=", ".join(sorted(campaign.metrics))
            )
        )
    return metric


def _closest_share(distance: np.ndarray, share: float) -> np.ndarray:
    """The cases among the ``share`` closest (ties at the cut included)."""
    k = max(1, int(round(share * distance.size)))
    return distance <= np.sort(distance)[k - 1]


# A design's cases: the pool, each one's stratum, the design's own settings, and how n spreads over the strata
_Design = tuple[list[str], list[str], dict[str, Any], Callable[[np.ndarray, np.ndarray], np.ndarray]]


def _metadata_design(
    campaign: Campaign,
    cases: dict[str, dict],
    n: int,
    labelled: set,
    *,
    strategy: Strategy,
    by: str | None,
    include_labelled: bool,
    allocation: Literal["proportional", "equal"],
) -> _Design:
    """``random`` (one stratum) and ``stratified`` (a stratum per value of ``metadata[by]``)."""
    extra: dict[str, Any] = {}
    pool = sorted(c for c in cases if include_labelled or c not in labelled)
    if strategy == "stratified":
        if not by:
            raise ValueError(ParameterText("the stratified strategy needs {by} METADATA_KEY", by=NO_VALUE))
        strata = [metadata_value(campaign, c, by) for c in pool]
        missing = [c for c, value in zip(pool, strata) if value == MISSING]
        if missing:
            raise ValueError(
                ParameterText(
                    "{by}: {_n} case(s) have no metadata.{_by}, e.g. {_cases}",
                    by=by,
                    _n=len(missing),
                    _by=by,
                    _cases=", ".join(missing[:5]),
                )
            )
        extra["allocation"] = allocation
    else:
        strata = ["all"] * len(pool)
    allocate = (
        (lambda names, sizes: _apportion(np.ones(sizes.size), n, sizes))
        if allocation == "equal" and strategy == "stratified"
        else (lambda names, sizes: _allocate(sizes, n))
    )
    return pool, strata, extra, allocate


def _threshold_design(
    campaign: Campaign,
    n: int,
    labelled: set,
    *,
    metric: str | None,
    judge: str | None,
    threshold: float | None,
    include_labelled: bool,
    focus: float,
    band: float,
) -> _Design:
    """``threshold``: the ``band`` share of the cases nearest the judge's threshold, and either side of it."""
    metric, scores = chosen_judge(campaign, metric, judge)
    if threshold is None:
        threshold = recommended_threshold(campaign, metric, scores.name)
    pool = [c for c in scores.case_ids.tolist() if include_labelled or c not in labelled]
    value = dict(zip(scores.case_ids.tolist(), scores.values.tolist()))
    score = np.array([value[c] for c in pool])
    near = _closest_share(np.abs(score - threshold), band) if pool else np.zeros(0, bool)
    passes = score >= threshold if scores.rater.higher_is_better else score <= threshold
    strata = np.where(near, "near", np.where(passes, "pass side", "fail side")).tolist()
    extra = {"metric": metric, "judge": scores.name, "threshold": threshold, "focus": focus, "band": band}
    return pool, strata, extra, lambda names, sizes: _focus_allocation(names, sizes, n, "near", focus)


def _disagreement_design(
    campaign: Campaign,
    n: int,
    labelled: set,
    *,
    metric: str | None,
    judges: list[str] | None,
    include_labelled: bool,
    focus: float,
    band: float,
) -> _Design:
    """``disagreement``: the ``band`` share of the cases the judges rank furthest apart, and the rest."""
    metric = chosen_metric(campaign, metric)
    chosen = [chosen_judge(campaign, metric, name)[1] for name in judges] if judges else None
    if chosen is None:
        chosen = judge_scores(campaign, metric)
    if len(chosen) < 2:
        raise ValueError(f"metric {metric}: the disagreement design needs two or more judges ({len(chosen)} found)")
    ranks: dict[str, list[float]] = {}
    for scores in chosen:
        for c, r in zip(scores.case_ids.tolist(), percentile_ranks(scores.sign * scores.values).tolist()):
            ranks.setdefault(c, []).append(r)
    pool = sorted(c for c, r in ranks.items() if len(r) >= 2 and (include_labelled or c not in labelled))
    spread = np.array([max(ranks[c]) - min(ranks[c]) for c in pool])
    top = _closest_share(-spread, band) if pool else np.zeros(0, bool)
    strata = np.where(top, "disagree", "rest").tolist()
    extra = {"metric": metric, "judges": [j.name for j in chosen], "focus": focus, "band": band}
    return pool, strata, extra, lambda names, sizes: _focus_allocation(names, sizes, n, "disagree", focus)


def _draw_design(
    pool: list[str],
    strata: list[str],
    allocate: Callable[[np.ndarray, np.ndarray], np.ndarray],
    design: dict[str, Any],
) -> Sample:
    """Draw a design's cases: ``pool``'s strata given ``allocate``'s counts, with the design's seed."""
    names, inverse = np.unique(np.array(strata), return_inverse=True)
    sizes = np.bincount(inverse, minlength=names.size)
    counts = allocate(names, sizes)
    return _draw(pool, names, inverse, counts, np.random.default_rng(design["seed"]), design)


@computed_once()
@checked("seed")
def draw_sample(
    campaign: Campaign,
    n: int,
    *,
    strategy: Strategy = "random",
    by: str | None = None,
    seed: int = 0,
    include_labelled: bool = False,
    allocation: Literal["proportional", "equal"] = "proportional",
    metric: str | None = None,
    judge: str | None = None,
    judges: list[str] | None = None,
    threshold: float | None = None,
    focus: float = 0.5,
    band: float = 0.2,
    n_strata: int = 5,
) -> Sample:
    """``n`` cases for humans to label; see the module docstring for the designs.

    Parameters
    ----------
    campaign : Campaign
        Needs its ``cases.jsonl``; the designs on judge scores need the judges' ratings.
    n : int
        Cases to draw.
    strategy : {"random", "stratified", "threshold", "disagreement", "neyman"}
    by : str, optional
        The metadata key of ``stratified``.
    allocation : {"proportional", "equal"}
        How ``stratified`` spreads the cases over the values of ``by``.
    metric, judge : str, optional
        The judge whose scores ``threshold`` and ``neyman`` read (needed when there is a choice).
    judges : list of str, optional
        The judges ``disagreement`` compares (default: every judge of the metric).
    threshold : float, optional
        ``threshold``: the pass threshold in the judge's units (default: the judge's recommended
        threshold under the metric's rule, from the human labels so far).
    focus, band : float
        ``threshold`` / ``disagreement``: the share of the labels for the ``band`` share of the cases
        nearest the threshold / with the most disagreement.
    n_strata : int
        ``neyman``: score strata (quantiles of the judge's score).

    Returns
    -------
    Sample
        The cases with their strata and inclusion probabilities, and the design (``.to_frame()``;
        :func:`write_sample` keeps it in the campaign).

    Examples
    --------
    >>> import pandas as pd
    >>> cases = [{"case_id": f"c{i}", "metadata": {"kind": "how" if i % 4 else "what"}} for i in range(40)]
    >>> from calibrate.campaign import campaign_from_frames
    >>> c = campaign_from_frames({"name": "n", "metrics": {"f": {"scale": "binary"}}},
    ...     pd.DataFrame({"case_id": ["c0"], "metric": "f", "rater": "h", "rater_kind": "human", "value": [1]}), cases)
    >>> s = draw_sample(c, 8, strategy="stratified", by="kind")
    >>> sorted(set(zip(s.strata, s.inclusion_probability)))
    [('how', 0.2), ('what', 0.2222222222222222)]
    >>> s = draw_sample(c, 8, strategy="stratified", by="kind", allocation="equal")
    >>> sorted(set(zip(s.strata, s.inclusion_probability)))
    [('how', 0.13333333333333333), ('what', 0.4444444444444444)]
    """
    if not campaign.cases:
        raise ValueError("sampling needs the campaign's cases.jsonl")
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown strategy {strategy!r}: one of {', '.join(STRATEGIES)}")
    for name, value in (("focus", focus), ("band", band)):
        if not 0 < value < 1:
            raise ValueError(f"--{name} {value}: expected a share between 0 and 1")
    labelled = set(campaign.ratings.loc[campaign.ratings["rater_kind"] == "human", "case_id"])
    if strategy in ("random", "stratified"):
        pool, strata, extra, allocate = _metadata_design(
            campaign,
            campaign.cases,
            n,
            labelled,
            strategy=strategy,
            by=by,
            include_labelled=include_labelled,
            allocation=allocation,
        )
    elif strategy == "threshold":
        pool, strata, extra, allocate = _threshold_design(
            campaign,
            n,
            labelled,
            metric=metric,
            judge=judge,
            threshold=threshold,
            include_labelled=include_labelled,
            focus=focus,
            band=band,
        )
    elif strategy == "disagreement":
        pool, strata, extra, allocate = _disagreement_design(
            campaign,
            n,
            labelled,
            metric=metric,
            judges=judges,
            include_labelled=include_labelled,
            focus=focus,
            band=band,
        )
    else:
        return _neyman(campaign, n, metric=metric, judge=judge, seed=seed, n_strata=n_strata)
    if n < 1 or n > len(pool):
        raise ValueError(
            ParameterText(
                "{n}: {_n} case(s) can be sampled{_note}",
                n=n,
                _n=len(pool),
                _note="" if include_labelled else f" ({len(labelled)} already labelled, left out)",
            )
        )
    design = {"strategy": strategy, "by": by, "n": n, "seed": seed, "population": len(pool)}
    return _draw_design(pool, strata, allocate, design | {"include_labelled": include_labelled, **extra})


def _draw(
    pool: list[str],
    names: np.ndarray,
    inverse: np.ndarray,
    counts: np.ndarray,
    rng: np.random.Generator,
    design: dict[str, Any],
    sizes: np.ndarray | None = None,
    already: np.ndarray | None = None,
) -> Sample:
    """Draw ``counts[h]`` of the pool cases of stratum ``h``; the inclusion probability is
    ``(already[h] + counts[h]) / sizes[h]`` (a series' earlier draws counted in)."""
    pool_sizes = np.bincount(inverse, minlength=names.size)
    sizes = pool_sizes if sizes is None else sizes
    already = np.zeros(names.size, dtype=int) if already is None else already
    probability = (already + counts) / np.maximum(sizes, 1)
    chosen: list[tuple[str, str, float]] = []
    for h, name in enumerate(names):
        members = [pool[i] for i in np.flatnonzero(inverse == h)]
        picked = rng.choice(len(members), size=int(counts[h]), replace=False) if counts[h] else []
        chosen += [(members[i], str(name), float(probability[h])) for i in sorted(picked)]
    chosen.sort()
    design = {
        **design,
        "strata": {
            str(name): {
                "size": int(sizes[h]),
                "sampled": int(counts[h]),
                **({"drawn_before": int(already[h])} if already.any() else {}),
                "inclusion_probability": float(probability[h]),
            }
            for h, name in enumerate(names)
        },
        "created": _dt.datetime.now(_dt.UTC).isoformat(timespec="microseconds"),
    }
    return Sample([c for c, _, _ in chosen], [s for _, s, _ in chosen], [p for _, _, p in chosen], design)


def recommended_threshold(campaign: Campaign, metric: str, judge: str) -> float:
    from calibrate.analysis.recommendations import recommended_threshold
    from calibrate.analysis.rules import default_rule

    found = recommended_threshold(campaign, metric, judge)
    if found is None:
        # named without a value: "(threshold)" to a library caller, "(--threshold)" on the command line
        raise ValueError(
            ParameterText(
                "{_head}; give the judge's pass threshold ({threshold})",
                threshold=NO_VALUE,
                _head=f"judge {judge} on {metric}: no recommended threshold yet under "
                f"the rule ({default_rule(campaign.metrics[metric]).describe()})",
            )
        )
    return float(found)


def _neyman(campaign: Campaign, n: int, *, metric: str | None, judge: str | None, seed: int, n_strata: int) -> Sample:
    metric, scores = chosen_judge(campaign, metric, judge)
    series = [
        name
        for name, s in sorted(campaign.samples.items(), key=lambda kv: kv[1]["design"].get("created", ""))
        if s["design"].get("strategy") == "neyman"
        and s["design"].get("metric") == metric
        and s["design"].get("judge") == scores.name
    ]
    oriented = scores.sign * scores.values
    if series:
        last = campaign.samples[series[-1]]["design"]
        edges = last["edges"]
        series = last.get("series", []) + [series[-1]]
    else:
        edges = score_edges(oriented, n_strata)
    stratum = score_strata(oriented, edges)
    names = np.array([f"score stratum {h + 1}" for h in range(len(edges) + 1)])
    sizes = np.bincount(stratum, minlength=names.size)
    ids = scores.case_ids.tolist()
    drawn = {c for name in series for c in campaign.samples[name]["case_ids"]}
    pool = [c for c in ids if c not in drawn]
    pool_inverse = np.array([stratum[i] for i, c in enumerate(ids) if c not in drawn], dtype=np.int64)
    position = {c: i for i, c in enumerate(ids)}
    already = np.bincount([stratum[position[c]] for c in drawn if c in position], minlength=names.size)
    if n > len(pool):
        raise ValueError(ParameterText("{n}: {_n} scored case(s) are left to sample", n=n, _n=len(pool)))
    design = {
        "strategy": "neyman",
        "n": n,
        "seed": seed,
        "metric": metric,
        "judge": scores.name,
        "edges": edges,
        "series": series,
        "population": len(ids),
    }
    if not series:
        design["phase"] = "pilot"
        counts = _allocate(sizes, n)
    else:
        joined = pair(campaign, metric, scores)  # the drawn cases are all cases the judge scored
        labels = dict(zip(joined.case_ids.tolist(), joined.passes.tolist()))
        spread = np.zeros(names.size)
        short = []
        for h in range(names.size):
            members = [c for c in drawn if c in position and stratum[position[c]] == h]
            known = [labels[c] for c in members if c in labels]
            if len(known) < min(MIN_PILOT_LABELS, len(members)) or (members and not known):
                short.append(f"{names[h]}: {len(known)} of {len(members)} labelled")
            p = (sum(known) + 0.5) / (len(known) + 1)  # smoothed: a stratum of one verdict keeps some spread
            spread[h] = np.sqrt(p * (1 - p))
        if short:
            raise ValueError(
                f"the Neyman series {', '.join(series)} is not labelled enough to allocate by "
                f"({'; '.join(short)}): label it (labelstudio push --sample, pull) first"
            )
        target = sizes * spread / (sizes * spread).sum() * (already.sum() + n)
        deficit = np.maximum(target - already, 0)
        counts = _apportion(deficit if deficit.sum() > 0 else sizes * spread, n, sizes - already)
        design["phase"] = "allocation"
        design["spread"] = {str(names[h]): float(spread[h]) for h in range(names.size)}
    return _draw(pool, names, pool_inverse, counts, np.random.default_rng(seed), design, sizes, already)


@writes_campaign("calibrate sample")
def write_sample(folder: Path, sample: Sample, name: str) -> Path:
    """``samples/NAME.csv`` (case_id, stratum, inclusion_probability) and ``samples/NAME.json`` (the
    design); an existing sample of that name is never replaced, and a name that cannot be a file name
    (:func:`~calibrate.base.names.path_component`) is refused."""
    name = path_component(name, what="sample name")
    target, design_file = (inside(folder, SAMPLES_FOLDER, name + suffix) for suffix in (".csv", ".json"))
    if target.exists():
        raise FileExistsError(
            ParameterText(
                "{_target} exists: choose another {name} (a sample already drawn is kept)",
                _target=target,
                name=NO_VALUE,
            )
        )
    # a name differing only by case or Unicode form is the same file on macOS and Windows disks
    twin = (
        next(
            (
                p
                for p in sorted(target.parent.glob("*"))
                if p.suffix in (".csv", ".json") and name_key(p.stem) == name_key(name)
            ),
            None,
        )
        if target.parent.is_dir()
        else None
    )
    if twin is not None:
        raise FileExistsError(
            ParameterText(
                "{_twin} exists, and its name differs from {name} only by case or Unicode form (one file on macOS "
                "and Windows disks): choose another {name} (a sample already drawn is kept)",
                _twin=twin,
                name=name,
            )
        )
    target.parent.mkdir(exist_ok=True)
    table = io.StringIO()
    writer = csv.writer(table)
    writer.writerow(["case_id", "stratum", "inclusion_probability"])
    writer.writerows(zip(sample.case_ids, sample.strata, (repr(p) for p in sample.inclusion_probability)))
    text = json.dumps(sample.design, indent=2) + "\n"
    # what is written is what load_campaign reads back, checked now (calibrate.campaign.own_files)
    validate(json.loads(text), SampleDesign, source=str(design_file), expected="a design calibrate can read back")
    # the design first: a sample is read only where both files are, and the CSV is moved in last
    write_all({design_file: text, target: table.getvalue()})
    return target


def sample_file(given: str | Path, campaign: Campaign) -> Path:
    """The sample file ``given`` names: a path from the working directory, a path inside the campaign
    folder (``samples/NAME.csv``, as ``calibrate sample`` prints it), or a sample's name (``NAME``).

    Raises ``ValueError`` when it names no file (listing the campaign's samples), or two different
    files (one from the working directory, one in the campaign).

    Examples
    --------
    >>> import calibrate
    >>> c = calibrate.load_campaign(calibrate.demo_campaign_path())
    >>> sample_file("nowhere", c)
    Traceback (most recent call last):
    ...
    ValueError: case_ids='nowhere': no sample file there: looked for nowhere, ...; the campaign's samples are none yet ...
    """
    path = Path(given)
    candidates = [path]
    if campaign.path is not None and not path.is_absolute():
        folder = Path(campaign.path)
        candidates += [folder / path, folder / SAMPLES_FOLDER / path, folder / SAMPLES_FOLDER / f"{path}.csv"]
    found: dict[Path, Path] = {}
    for candidate in candidates:
        try:  # a name too long for the system, or that no file can have, names no file
            if candidate.is_file():
                found.setdefault(candidate.resolve(), candidate)
        except (OSError, ValueError):
            continue
    if len(found) == 1:
        return next(iter(found.values()))
    if len(found) > 1:
        raise ValueError(
            ParameterText(
                "{case_ids}: names two different files, {_files}: give the path of the one meant",
                case_ids=str(given),
                _files=" and ".join(map(str, found.values())),
            )
        )
    samples = sorted(campaign.samples) if campaign.samples else []
    raise ValueError(
        ParameterText(
            "{case_ids}: no sample file there: looked for {_looked}; the campaign's samples are {_samples}",
            case_ids=str(given),
            _looked=", ".join(map(str, dict.fromkeys(candidates))),
            _samples=", ".join(f"{SAMPLES_FOLDER}/{s}.csv" for s in samples)
            or "none yet (calibrate sample writes them)",
        )
    )


def read_sample_ids(path: str | Path, campaign: Campaign) -> list[str]:
    """The case ids of a sample file (its ``case_id`` column), each checked against the campaign's cases.

    ``path`` is found as :func:`sample_file` finds it: from the working directory, in the campaign
    folder, or by the sample's name.

    Raises
    ------
    CampaignError
        A file that cannot be read, without a ``case_id`` column or with a row without one (named, with
        the line); a ``ValueError`` names the cases not in the campaign, or a name that is no file.
    """
    path = sample_file(path, campaign)
    ids = read_case_ids(path)
    unknown = [c for c in ids if c not in (campaign.cases or {})]
    if unknown:
        raise ValueError(
            f"{path}: {len(unknown)} case(s) not in the campaign's cases.jsonl, e.g. {', '.join(unknown[:5])}"
        )
    return ids
