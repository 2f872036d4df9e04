"""The production loop of ``calibrate escalate``: the band stored, applied to the cases a judge scores later,
and the cases it sends to people written as a sample for them to label (band -> queue -> labels -> band again).

**The queue.** The cases a band *escalates* are the judge-scored cases of the metric that it does not decide
(a score at or above ``pass_at`` passes alone, below ``fail_below`` fails alone; the cases between go to
people; with no band, every case); those humans already labelled on the metric are left out. They are written
as a sample of the campaign (``samples/NAME.csv`` and ``NAME.json``, as ``calibrate sample`` writes samples,
ready for ``calibrate labelstudio push --sample NAME``), in one stratum, ``escalated``, of the ``N``
escalated unlabelled cases:

- every one of them (the default): each case's inclusion probability is 1; the labels are a census of the
  escalated cases, and their pass rate is the plain share of passes;
- ``max_cases = K < N``: ``K`` drawn uniformly without replacement (the seed recorded), each with inclusion
  probability ``K / N``: a simple random sample of the escalated cases, so the labelled share of passes, or
  a PPI estimate from the judge's scores of all ``N`` and these ``K`` labels, is unbiased *for the escalated
  cases*.

**What estimates may assume.** The queue is a probability sample of the escalated cases only: a case the band
decides had probability 0 of entering it. A figure about the whole campaign made from these labels alone
would stand for the escalated cases, not for all; for all, combine the parts (the judge's verdicts where the
band decides, with its guaranteed agreement, and the humans' on the escalated cases), or use labels drawn
from every case (``calibrate sample``). The queue's design records its frame: every case the band escalated (``frame``) and those of them humans had
labelled before (``frame_labelled``). When its labels join the labels the band was chosen from, calibrate
weighs the queue as a sample of its frame only (:mod:`calibrate.campaign.weights`): the escalated cases stand
at their share of all the cases, estimated from the queue and the samples of every case together, and the
decided ones from the samples of every case alone. Where those samples drew every case alike, the bands that
decide no escalated case are tested as before (the exact binomial test on the same labels), so the band does
not shrink while the new labels agree as before; a wider band's test weighs the escalated cases at their share.

**The stored band** (``bands/NAME.json``, :class:`StoredBand`, versioned) records the judge (its name, the
rater, the run and the model and family the campaign records for it), the metric, the edges, the threshold,
the target, the confidence, the labels it was chosen from, the date, and the ids of the cases the judge had
scored then. :func:`apply_band` applies it to the cases the judge scored since (those ids left out; or every
case, ``all_cases``): how many the judge decides, pass and fail, and how many go to people. A band is not
applied to another judge model than the one it was chosen on, nor to scores of the other direction.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import StrictBool, model_validator
from pydantic_core import PydanticCustomError

from calibrate.analysis.escalate import EscalateResult
from calibrate.base.documents import Schema, read_json, validate
from calibrate.base.errors import NO_VALUE, ParameterText
from calibrate.base.fields import Count, FiniteNumber, Name, Text, TimestampText
from calibrate.base.files import write_all, writes_campaign
from calibrate.base.manifest import build_manifest
from calibrate.base.names import inside, name_key, path_component
from calibrate.base.results import Result
from calibrate.campaign import SAMPLES_FOLDER, Campaign
from calibrate.campaign.reference import JudgeScores, find_judge, human_reference
from calibrate.sampling.designs import Sample, write_sample

__all__ = [
    "BANDS_FOLDER",
    "ESCALATED",
    "BandVerdicts",
    "StoredBand",
    "apply_band",
    "band_verdicts",
    "check_free",
    "draw_queue",
    "fresh_queue",
    "queue_facts",
    "read_band",
    "save_band",
    "stored_band",
    "write_queue",
]

#: the campaign's folder of stored bands: ``bands/NAME.json``
BANDS_FOLDER = "bands"
#: the one stratum of a queue, and the strategy its design records
ESCALATED = "escalated"
#: the verdicts of a band: the judge passes or fails the case alone, or sends it to people
PASS, FAIL, PEOPLE = "pass", "fail", "people"


class StoredBand(Schema):
    """``bands/NAME.json``: a band ``calibrate escalate --save-band`` chose, for ``--since`` to apply later.
    ``pass_at`` and ``fail_below`` are in the judge's units (both null: no band, every case to people)."""

    schema_version: Literal[1]
    name: Name
    campaign: Text
    metric: Name
    judge: Name
    rater: Name
    run_id: Text
    model: Text | None
    family: Text | None
    higher_is_better: StrictBool
    threshold: FiniteNumber
    pass_at: FiniteNumber | None
    fail_below: FiniteNumber | None
    target: FiniteNumber
    confidence: FiniteNumber
    n_labels: Count
    n_scored: Count
    n_decided: Count
    method: Text
    created: TimestampText
    scored_cases: list[Name]

    @model_validator(mode="after")
    def _edges(self) -> StoredBand:
        if (self.pass_at is None) != (self.fail_below is None):
            raise PydanticCustomError("band", "pass_at and fail_below are both numbers, or both null (no band)")
        if len(set(self.scored_cases)) != len(self.scored_cases) or len(self.scored_cases) != self.n_scored:
            raise PydanticCustomError("band", "scored_cases lists the n_scored cases the judge scored, each once")
        return self


@dataclass(frozen=True)
class BandVerdicts:
    """A band applied to a judge's scores: per case considered (sorted ids), the verdict (``pass``, ``fail``
    or ``people``) and whether humans labelled it on the metric already."""

    case_ids: np.ndarray
    verdict: np.ndarray
    labelled: np.ndarray

    @property
    def escalated(self) -> np.ndarray:
        """The cases that go to people and have no human label yet: the queue's population."""
        return self.case_ids[(self.verdict == PEOPLE) & ~self.labelled]

    def counts(self) -> dict[str, int]:
        """How many cases the judge passes and fails alone, how many go to people (and of them, how many
        humans labelled already)."""
        people = self.verdict == PEOPLE
        return {
            "cases": int(self.case_ids.size),
            "pass": int(np.sum(self.verdict == PASS)),
            "fail": int(np.sum(self.verdict == FAIL)),
            "people": int(people.sum()),
            "people_labelled": int(np.sum(people & self.labelled)),
            "people_unlabelled": int(np.sum(people & ~self.labelled)),
        }


def band_verdicts(
    values: np.ndarray, *, higher_is_better: bool, pass_at: float | None, fail_below: float | None
) -> np.ndarray:
    """Each score's verdict under the band: ``pass`` at or beyond ``pass_at``, ``fail`` beyond
    ``fail_below`` (in the judge's direction), ``people`` between; with no band (None), ``people``.

    Examples
    --------
    >>> band_verdicts(np.array([0.1, 0.5, 0.9]), higher_is_better=True, pass_at=0.7, fail_below=0.3).tolist()
    ['fail', 'people', 'pass']
    >>> band_verdicts(np.array([0.1, 0.5, 0.9]), higher_is_better=False, pass_at=0.3, fail_below=0.7).tolist()
    ['pass', 'people', 'fail']
    """
    values = np.asarray(values, dtype=float)
    verdict = np.full(values.shape, PEOPLE, dtype=object)
    if pass_at is None or fail_below is None:
        return verdict
    sign = 1.0 if higher_is_better else -1.0
    oriented = sign * values
    verdict[oriented < sign * fail_below] = FAIL
    verdict[oriented >= sign * pass_at] = PASS
    return verdict


def _verdicts(
    campaign: Campaign, metric: str, scores: JudgeScores, pass_at, fail_below, among: np.ndarray | None = None
) -> BandVerdicts:
    keep = np.ones(scores.case_ids.size, dtype=bool) if among is None else among
    labelled = np.isin(scores.case_ids[keep], human_reference(campaign, metric).case_ids)
    verdict = band_verdicts(
        scores.values[keep], higher_is_better=scores.rater.higher_is_better, pass_at=pass_at, fail_below=fail_below
    )
    return BandVerdicts(scores.case_ids[keep], verdict, labelled)


def draw_queue(
    verdicts: BandVerdicts, *, max_cases: int | None = None, seed: int = 0, design: dict[str, Any] | None = None
) -> Sample:
    """The escalated unlabelled cases as a sample: all of them (inclusion probability 1), or ``max_cases``
    of them drawn uniformly without replacement with ``seed`` (probability ``max_cases / N``).

    Raises
    ------
    ValueError
        No case to send to people, or a ``max_cases`` that is not a whole number of 1 or more.

    Examples
    --------
    >>> v = BandVerdicts(np.array(["a", "b", "c", "d"]), np.array(["people", "pass", "people", "people"]),
    ...                  np.array([False, False, True, False]))
    >>> draw_queue(v).case_ids, draw_queue(v).inclusion_probability
    (['a', 'd'], [1.0, 1.0])
    >>> draw_queue(v, max_cases=1).inclusion_probability, draw_queue(v, max_cases=1).design["population"]
    ([0.5], 2)
    >>> draw_queue(v).design["frame"], draw_queue(v).design["frame_labelled"]   # every escalated case; labelled before
    (['a', 'c', 'd'], ['c'])
    """
    if max_cases is not None and (isinstance(max_cases, bool) or not isinstance(max_cases, int) or max_cases < 1):
        raise ValueError(ParameterText("{max_cases}: expected a whole number, 1 or more", max_cases=max_cases))
    pool = verdicts.escalated
    counts = verdicts.counts()
    if pool.size == 0:
        raise ValueError(
            f"no case to send to people: of the {counts['cases']} case(s), the band decides "
            f"{counts['pass'] + counts['fail']} and humans labelled the {counts['people_labelled']} it escalates "
            "(nothing written)"
        )
    size = int(pool.size)
    taken = size if max_cases is None else min(max_cases, size)
    picked = np.sort(np.random.default_rng(seed).choice(size, size=taken, replace=False)) if taken < size else None
    chosen = pool.tolist() if picked is None else pool[picked].tolist()
    probability = taken / size
    people = verdicts.verdict == PEOPLE
    full = {
        "strategy": ESCALATED,
        "n": taken,
        "seed": seed,
        "max_cases": max_cases,
        "population": size,
        **(design or {}),
        "decided": counts["pass"] + counts["fail"],
        "escalated_labelled_left_out": counts["people_labelled"],
        "frame": verdicts.case_ids[people].tolist(),
        "frame_labelled": verdicts.case_ids[people & verdicts.labelled].tolist(),
        "strata": {ESCALATED: {"size": size, "sampled": taken, "inclusion_probability": probability}},
        "created": _dt.datetime.now(_dt.UTC).isoformat(timespec="microseconds"),
    }
    return Sample(chosen, [ESCALATED] * taken, [probability] * taken, full)


def queue_facts(sample: Sample, path: Path | None) -> dict[str, Any]:
    """What the ``--json`` document says of a queue: its file (None: not written), its cases, the escalated
    unlabelled cases it was drawn from, those left out as labelled, and the inclusion probability."""
    design = sample.design
    return {
        "file": None if path is None else str(path),
        "cases": len(sample.case_ids),
        "escalated_unlabelled": design["population"],
        "escalated_labelled_left_out": design["escalated_labelled_left_out"],
        "inclusion_probability": design["strata"][ESCALATED]["inclusion_probability"],
        "max_cases": design["max_cases"],
        "seed": design["seed"],
    }


def _refuse_taken(folder: Path, sub: str, name: str, suffixes: tuple[str, ...], what: str, flag: str) -> None:
    """Refuse a name whose file exists in ``folder/sub``, or one differing from it only by case or Unicode
    form (one file on macOS and Windows disks): nothing is replaced."""
    target = inside(folder, sub, name + suffixes[0])
    twin = target if target.exists() else None
    if twin is None and target.parent.is_dir():
        twin = next(
            (p for p in sorted(target.parent.glob("*")) if p.suffix in suffixes and name_key(p.stem) == name_key(name)),
            None,
        )
    if twin is not None:
        raise FileExistsError(
            ParameterText(
                "{_twin} exists: choose another {" + flag + "} (a " + what + " already written is kept)",
                _twin=twin,
                **{flag: NO_VALUE},
            )
        )


def stored_band(campaign: Campaign, result: EscalateResult, name: str) -> StoredBand:
    """The document of the band ``result`` chose, named ``name``."""
    scores = find_judge(campaign, result.metric, result.judge)
    return StoredBand(
        schema_version=1,
        name=path_component(name, what="band name"),
        campaign=result.campaign,
        metric=result.metric,
        judge=result.judge,
        rater=scores.rater.name,
        run_id=scores.run_id,
        model=scores.rater.model,
        family=scores.rater.family,
        higher_is_better=scores.rater.higher_is_better,
        threshold=result.threshold,
        pass_at=result.pass_at,
        fail_below=result.fail_below,
        target=result.target,
        confidence=result.confidence,
        n_labels=result.n_labels,
        n_scored=result.n_scored,
        n_decided=result.n_decided,
        method=result.method,
        created=_dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        scored_cases=scores.case_ids.tolist(),
    )


def _folder(campaign: Campaign, what: str) -> Path:
    if campaign.path is None:
        raise ValueError(f"{what} needs a campaign folder: it is written into it")
    return Path(campaign.path)


@writes_campaign("calibrate escalate")
def save_band(campaign: Campaign, result: EscalateResult, name: str) -> Path:
    """Store the band ``result`` chose as ``bands/NAME.json`` (:class:`StoredBand`); an existing band of
    that name is never replaced.

    Raises
    ------
    FileExistsError
        A band of that name (or one differing only by case) exists.
    """
    folder = _folder(campaign, "storing a band")
    name = path_component(name, what="band name")
    _refuse_taken(folder, BANDS_FOLDER, name, (".json",), "band", "save_band")
    document = stored_band(campaign, result, name)
    path = inside(folder, BANDS_FOLDER, name + ".json")
    path.parent.mkdir(exist_ok=True)
    text = json.dumps(document.model_dump(mode="json"), indent=2) + "\n"
    validate(json.loads(text), StoredBand, source=str(path), expected="a band calibrate can read back")
    write_all({path: text})
    return path


def read_band(campaign: Campaign, name: str) -> StoredBand:
    """The band stored as ``bands/NAME.json``.

    Raises
    ------
    ValueError
        No band of that name (the stored bands listed).
    DocumentError
        A file that is not a band calibrate wrote, naming the field.
    """
    folder = _folder(campaign, "reading a band")
    path = inside(folder, BANDS_FOLDER, path_component(name, what="band name") + ".json")
    if not path.is_file():
        stored = sorted(p.stem for p in path.parent.glob("*.json")) if path.parent.is_dir() else []
        raise ValueError(
            ParameterText(
                "{since}: no band stored as {_path}; the campaign's bands are {_bands}",
                since=name,
                _path=path,
                _bands=", ".join(stored) or "none yet (calibrate escalate --save-band NAME stores one)",
            )
        )
    return read_json(path, StoredBand, expected="a band calibrate escalate --save-band writes")


@writes_campaign("calibrate escalate")
def write_queue(campaign: Campaign, sample: Sample, name: str) -> Path:
    """Write a queue (:func:`draw_queue`) as the campaign's sample ``NAME``
    (:func:`~calibrate.sampling.designs.write_sample`: an existing sample is never replaced)."""
    return write_sample(_folder(campaign, "writing a queue"), sample, name)


def _same_judge(band: StoredBand, scores: JudgeScores) -> str:
    """Refuse another judge model (or direction) than the band's; say what could not be checked."""
    model = scores.rater.model
    if band.model is not None and model is not None and band.model != model:
        raise ValueError(
            ParameterText(
                "{judge}: band {_band} was chosen on the judge model {_was} ({_rater}), not {_now}: a band holds "
                "for the model it was chosen on; choose a band for this one (calibrate escalate --agreement)",
                judge=scores.name,
                _band=band.name,
                _was=band.model,
                _rater=band.rater,
                _now=model,
            )
        )
    if band.model is None or model is None:
        if scores.rater.name != band.rater:
            raise ValueError(
                ParameterText(
                    "{judge}: band {_band} was chosen on rater {_was}; the campaign records no model for "
                    "{_which}, so calibrate cannot tell it is the same judge model: apply it to {_was}",
                    judge=scores.name,
                    _band=band.name,
                    _was=band.rater,
                    _which="either" if band.model is None and model is None else "one of them",
                )
            )
        checked = f"the same rater, {band.rater} (no model recorded to check)"
    else:
        checked = f"the same judge model, {model}"
    if scores.rater.higher_is_better != band.higher_is_better:
        raise ValueError(
            f"judge {scores.name}: its scores now read {'higher' if scores.rater.higher_is_better else 'lower'} "
            f"is better; band {band.name} was chosen on the other direction"
        )
    return checked


def apply_band(
    campaign: Campaign,
    since: str,
    *,
    metric: str,
    judge: str,
    all_cases: bool = False,
    max_cases: int | None = None,
    seed: int = 0,
) -> tuple[Result, Sample | None]:
    """Apply the stored band ``since`` (``bands/SINCE.json``) to the cases ``judge`` scored on ``metric``
    since it was chosen (or every case it scored, ``all_cases``): how many it passes and fails alone, and
    how many go to people; and those without a human label as a queue (None when there is none).

    Returns
    -------
    (Result, Sample or None)
        The ``calibrate escalate --since --json`` document, and the queue for :func:`write_queue`.

    Raises
    ------
    ValueError
        No such band, another metric, another judge model or direction, or an unknown judge.
    """
    band = read_band(campaign, since)
    campaign.metric_names([metric])
    if metric != band.metric:
        raise ValueError(
            ParameterText("{metric}: band {_band} was chosen on {_was}", metric=metric, _band=since, _was=band.metric)
        )
    scores = find_judge(campaign, metric, judge)
    checked = _same_judge(band, scores)
    among = None if all_cases else ~np.isin(scores.case_ids, np.array(band.scored_cases, dtype=str))
    verdicts = _verdicts(campaign, metric, scores, band.pass_at, band.fail_below, among)
    counts = verdicts.counts()
    which = "every case the judge scored" if all_cases else "the cases the judge scored since the band was chosen"
    queue = None
    if verdicts.escalated.size:
        queue = draw_queue(
            verdicts,
            max_cases=max_cases,
            seed=seed,
            design={"metric": metric, "judge": scores.name, "band": since, "cases": "all" if all_cases else "new"}
            | {"pass_at": band.pass_at, "fail_below": band.fail_below},
        )
    decided = counts["pass"] + counts["fail"]
    share = decided / counts["cases"] if counts["cases"] else math.nan
    text = (
        f"band {since} ({scores.name} on {metric}): of {counts['cases']} case(s), {which}, the judge decides "
        f"{decided} ({share:.0%}: {counts['pass']} pass, {counts['fail']} fail) and {counts['people']} go to people"
        + (f" ({counts['people_labelled']} labelled already)" if counts["people_labelled"] else "")
        if counts["cases"]
        else f"band {since} ({scores.name} on {metric}): no case to apply it to ({which})"
    )
    document = {
        "campaign": campaign.name,
        "band": band.model_dump(mode="json", exclude={"scored_cases"}),
        "metric": metric,
        "judge": scores.name,
        "judge_check": checked,
        "applied_to": "all" if all_cases else "new",
        "seen_before": int(scores.case_ids.size - counts["cases"]),
        **counts,
        "coverage": None if not counts["cases"] else share,
        "queue": None if queue is None else queue_facts(queue, None),
        "text": text,
        "manifest": build_manifest(
            campaign, command="escalate", metric=metric, judge=scores.name, since=since, all_cases=all_cases
        ),
    }
    return Result(document), queue


def fresh_queue(
    campaign: Campaign, result: EscalateResult, *, max_cases: int | None = None, seed: int = 0, band: str | None = None
) -> Sample:
    """The queue of the band ``result`` chose: the judge-scored cases it escalates without a human label of the
    metric (every one, or ``max_cases`` drawn uniformly), as :func:`draw_queue` makes it."""
    scores = find_judge(campaign, result.metric, result.judge)
    verdicts = _verdicts(campaign, result.metric, scores, result.pass_at, result.fail_below)
    design: dict[str, Any] = {"metric": result.metric, "judge": result.judge, "band": band, "cases": "all"}
    design |= {"pass_at": result.pass_at, "fail_below": result.fail_below, "target": result.target}
    return draw_queue(verdicts, max_cases=max_cases, seed=seed, design=design | {"confidence": result.confidence})


def check_free(campaign: Campaign, *, sample: str | None = None, band: str | None = None) -> None:
    """Refuse, before anything is written, a sample or band name already taken (``FileExistsError``)."""
    folder = _folder(campaign, "writing a queue or a band")
    if sample is not None:
        name = path_component(sample, what="sample name")
        _refuse_taken(folder, SAMPLES_FOLDER, name, (".csv", ".json"), "sample", "sample")
    if band is not None:
        _refuse_taken(folder, BANDS_FOLDER, path_component(band, what="band name"), (".json",), "band", "save_band")
