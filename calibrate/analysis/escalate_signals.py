"""Confidence beyond the score (``calibrate escalate --signal``): the nested candidate bands ordered by how sure
the judge is, from a signal read without the labels, instead of by its score's distance from its threshold.

Each signal gives every case the judge scored a verdict (pass/fail: the judge's own, at its threshold,
chosen without the labels as :func:`calibrate.analysis.escalate.label_free_threshold` chooses it) and a
confidence; the bands decide the most confident cases first (ties broken by the score's distance from the
threshold) and are tested exactly as the score's bands are (:func:`calibrate.stats.selective.select_signal_band`):

- ``score``: today's bands, by the score's distance from the judge's boundary (the default);
- ``repeats``: a judge scored with repeats (runs ``repeat-0``, ``repeat-1``, ...: ``calibrate judge
  --repeats K``). A case's verdict is the **majority verdict over its repeats** (a tie: the mean score at
  the threshold), its confidence the share of repeats on the majority side
  (:func:`calibrate.stats.repeat_verdicts.majority_share`). The majority, not the first run's verdict,
  because the share measures how sure the judge is *of the majority*: with the first run's verdict, a case
  whose first run is the one repeat of five to pass would carry a confidence of 0.8 for a verdict four
  repeats of five contradict;
- ``jury``: the judge's verdict (its one run), and as confidence the share of the judges **of other model
  families** (``family`` of ``[raters.NAME]`` or ``[judges.NAME]``) that agree with it on the case, each
  at its own label-free threshold, one vote per judge (a judge with several runs: the share of its runs
  that agree). Judges of no recorded family, of the judge's own family and juries (family ``jury``, which
  may hold the judge's own family) do not vote; a case no other family scored has confidence 0 (decided
  last);
- G-Eval's **logprob-weighted spread** is not a signal here: the judge store records, per rating, only
  whether the score was weighted by its logprobs (``logprob_weighted``), not the distribution over scores
  the spread would be read from, and the campaign's ratings carry no such column.

**Choosing a signal** (``--signal all``): every available signal is tested, each at ``delta / S``
(``S`` the number of available signals, ``delta = 1 - C``: Bonferroni), and the one that decides the most
cases is kept. Which signals are available depends on the campaign's runs and families, not on the labels;
picking the best of ``S`` on the same labels is safe because the probability that *any* of the ``S`` chosen
bands misses the target is at most ``S * delta / S = delta``. Testing each at ``delta`` instead and keeping
the best would not be: the guarantee would hold for each signal alone, not for the one picked.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np

from calibrate.analysis.escalate import (
    EscalateResult,
    SignalUsed,
    band_result,
    check_ceiling,
    human_ceiling,
    label_free_threshold,
)
from calibrate.analysis.repeatability import REPEAT_PREFIX
from calibrate.base.params import PROBABILITY, checked
from calibrate.campaign import Campaign
from calibrate.campaign.reference import JudgeScores, computed_once, judge_scores, pair
from calibrate.stats.repeat_verdicts import majority_share
from calibrate.stats.selective import MAX_BANDS, SignalBands, select_band, select_signal_band

__all__ = ["SIGNALS", "Signalled", "confidence_signal", "escalate_by_signal"]

#: the confidence signals ``--signal`` names, in the order ``all`` prefers them at equal coverage
SIGNALS = ("score", "repeats", "jury")
#: the family of a jury's ratings (:mod:`calibrate.campaign.juries`), which never votes
JURY_FAMILY = "jury"


@dataclass(frozen=True)
class Signalled:
    """A judge's cases under one signal: its scores (``judge``, one value a case, sorted by id), each case's
    verdict, confidence and distance from the threshold, the threshold and its source, and how the signal
    was read (``note``)."""

    name: str
    judge: JudgeScores
    verdict: np.ndarray
    confidence: np.ndarray
    distance: np.ndarray
    threshold: float
    threshold_source: str
    note: str


def _runs(campaign: Campaign, metric: str, rater: str) -> list[JudgeScores]:
    return [j for j in judge_scores(campaign, metric) if j.rater.name == rater]


def _base_run(campaign: Campaign, metric: str, judge: str) -> JudgeScores:
    """The judge's one run (``judge`` names it), or the first of its repeats when it has only repeats."""
    runs = [j for j in judge_scores(campaign, metric) if j.name == judge] or _runs(campaign, metric, judge)
    repeats = sorted((j for j in runs if j.run_id.startswith(REPEAT_PREFIX)), key=_repeat_number)
    if len(runs) == 1:
        return runs[0]
    if runs and len(repeats) == len(runs):
        return repeats[0]
    names = ", ".join(j.name for j in runs) or "none"
    raise ValueError(f"judge {judge} on {metric}: name one run ({names})")


def _repeat_number(run: JudgeScores) -> int:
    tail = run.run_id.removeprefix(REPEAT_PREFIX)
    return int(tail) if tail.isdigit() else -1


def _pass_counts(runs: list[JudgeScores], case_ids: np.ndarray, threshold: float) -> tuple[np.ndarray, np.ndarray]:
    """Each case's passes and scored runs among ``runs`` (each at ``threshold`` in its units)."""
    passes, scored = np.zeros(case_ids.size), np.zeros(case_ids.size)
    for run in runs:
        at = np.searchsorted(case_ids, run.case_ids)
        known = (at < case_ids.size) & (case_ids[np.minimum(at, case_ids.size - 1)] == run.case_ids)
        np.add.at(scored, at[known], 1)
        np.add.at(passes, at[known], (run.oriented >= run.sign * threshold)[known])
    return passes, scored


def _score_signal(campaign, metric, judge, threshold) -> Signalled:
    base = _base_run(campaign, metric, judge)
    value, source = label_free_threshold(campaign, metric, base, threshold)
    t = base.sign * value
    verdict = base.oriented >= t
    return Signalled("score", base, verdict, np.zeros(verdict.size), np.abs(base.oriented - t), value, source,
                     "the score's distance from the judge's boundary (the bands of calibrate escalate)")  # fmt: skip


def _repeats_signal(campaign, metric, judge, threshold) -> Signalled:
    rater = _base_run(campaign, metric, judge).rater.name
    runs = sorted((j for j in _runs(campaign, metric, rater) if j.run_id.startswith(REPEAT_PREFIX)), key=_repeat_number)
    if len(runs) < 2:
        raise ValueError(
            f"judge {rater} has {len(runs)} repeat(s) on {metric}: the repeats signal needs two or more "
            "(calibrate judge --repeats K writes runs repeat-0, repeat-1, ...)"
        )
    value, source = label_free_threshold(campaign, metric, runs[0], threshold)
    case_ids = np.unique(np.concatenate([j.case_ids for j in runs]))
    passes, repeats = _pass_counts(runs, case_ids, value)
    total = np.zeros(case_ids.size)
    for run in runs:
        np.add.at(total, np.searchsorted(case_ids, run.case_ids), run.oriented)
    sign = runs[0].sign
    mean = total / repeats  # oriented
    t = sign * value
    verdict = np.where(2 * passes == repeats, mean >= t, 2 * passes > repeats)
    scores = JudgeScores(rater, runs[0].rater, "repeats", case_ids, sign * mean, runs[0].errors.iloc[:0])
    note = (
        f"the share of the judge's {len(runs)} repeats on the majority side; the verdict is the majority's "
        "(a tie: the mean score at the threshold)"
    )
    return Signalled("repeats", scores, verdict, majority_share(passes, repeats), np.abs(mean - t), value, source, note)


def _jury_signal(campaign, metric, judge, threshold) -> Signalled:
    own = _score_signal(campaign, metric, judge, threshold)
    family = own.judge.rater.family
    if family is None:
        raise ValueError(f"judge {own.judge.rater.name} has no family recorded: no other family can be told apart")
    case_ids = own.judge.case_ids
    others = sorted({j.rater.name for j in judge_scores(campaign, metric)}
                    - {own.judge.rater.name})  # fmt: skip
    agree, voters, skipped = np.zeros(case_ids.size), np.zeros(case_ids.size), []
    for rater in others:
        runs = _runs(campaign, metric, rater)
        if runs[0].rater.family in (None, family, JURY_FAMILY):
            continue
        try:
            value, _ = label_free_threshold(campaign, metric, runs[0])
        except ValueError:
            skipped.append(rater)
            continue
        passes, scored = _pass_counts(runs, case_ids, value)
        voted = scored > 0
        share = np.where(own.verdict, passes, scored - passes) / np.maximum(scored, 1)
        agree += np.where(voted, share, 0.0)
        voters += voted
    if not voters.any():
        raise ValueError(
            f"no judge of another family than {family} (with a threshold of its own) scored {metric} on the cases "
            f"{own.judge.name} scored: the jury signal needs one"
            + (f" (no threshold: {', '.join(skipped)})" if skipped else "")
        )
    note = (
        f"the share of the judges of other families than {family} that agree with the judge's verdict, on "
        f"{int((voters > 0).sum())} of its {case_ids.size} cases (the others: 0); at most {int(voters.max())} voted"
        + (f"; without a label-free threshold, left out: {', '.join(skipped)}" if skipped else "")
    )
    confidence = np.where(voters > 0, agree / np.maximum(voters, 1), 0.0)
    return dataclasses.replace(own, name="jury", confidence=confidence, note=note)


_READERS = {"score": _score_signal, "repeats": _repeats_signal, "jury": _jury_signal}


def confidence_signal(
    campaign: Campaign, metric: str, judge: str, signal: str, threshold: float | None = None
) -> Signalled:
    """``judge``'s cases of ``metric`` under ``signal`` (one of :data:`SIGNALS`; see the module docstring).

    Raises
    ------
    ValueError
        An unknown signal, or one the campaign does not hold for this judge (saying why).
    """
    if signal not in _READERS:
        raise ValueError(f"signal={signal!r}: expected one of {', '.join(SIGNALS)} or 'all'")
    return _READERS[signal](campaign, metric, judge, threshold)


def _selected(campaign, metric, read: Signalled, agreement, confidence, max_bands):
    """The pairing with the humans and the band of one signal, at ``confidence``."""
    joined = pair(campaign, metric, read.judge)
    if joined.n == 0:
        raise ValueError(
            f"no human label of {metric} among the {read.judge.case_ids.size} cases judge {read.judge.name} "
            "scored: the band is chosen from labelled cases"
        )
    labelled = np.searchsorted(read.judge.case_ids, joined.case_ids)
    t = read.judge.sign * read.threshold
    if read.name == "score":
        found = select_band(joined.oriented, joined.passes, read.judge.oriented, t, agreement=agreement,
                            confidence=confidence, weights=joined.weights, max_bands=max_bands)  # fmt: skip
        return joined, found, None
    judge_pass = read.verdict[labelled]
    found = select_signal_band(read.confidence, read.distance, labelled, judge_pass, joined.passes,
                               agreement=agreement, confidence=confidence, weights=joined.weights,
                               max_bands=max_bands)  # fmt: skip
    assert isinstance(found.bands, SignalBands)
    return joined, found, (found.bands.rank[labelled], judge_pass != joined.passes)


def _rule(read: Signalled, found) -> str:
    """The chosen signal band in words: the signal it starts at, and the score's distance at that signal."""
    if found.chosen < 0:
        return ""
    b = found.bands
    at, far = float(b.signal_at[found.chosen]), float(b.distance_at[found.chosen])
    nearest = float(read.distance[read.confidence == at].min())
    which = (
        f"at least {at:.3g}"
        if far <= nearest
        else f"above {at:.3g}, or {at:.3g} with its score {far:.3g} or more from the threshold"
    )
    return f"the judge decides a case alone, by its own verdict, when its {read.name} confidence is {which}; the rest go to people"


def _one(campaign, metric, read, agreement, confidence, max_bands, ceiling, details) -> EscalateResult:
    joined, found, ranked = _selected(campaign, metric, read, agreement, confidence, max_bands)
    details = {"name": read.name, "note": read.note} | details
    signal = None if ranked is None else SignalUsed(ranked[0], ranked[1], _rule(read, found), details)
    doc = band_result(campaign, joined, found, ceiling, (read.threshold, read.threshold_source), max_bands,
                      signal or SignalUsed(np.zeros(0), np.zeros(0), "", details))  # fmt: skip
    return doc


def _available(campaign, metric, judge, threshold) -> tuple[list[Signalled], list[dict[str, Any]]]:
    reads, missing = [], []
    for name in SIGNALS:
        try:
            reads.append(confidence_signal(campaign, metric, judge, name, threshold))
        except ValueError as exc:
            missing.append({"name": name, "available": False, "reason": str(exc)})
    missing.append({"name": "logprobs", "available": False, "reason": LOGPROBS_MISSING})
    return reads, missing


#: why G-Eval's logprob-weighted spread is not a signal
LOGPROBS_MISSING = (
    "G-Eval's logprob-weighted spread is not recorded: the judge store keeps whether a score was weighted by "
    "its logprobs, not the distribution over scores it was weighted from"
)


@computed_once()
@checked("confidence", agreement=PROBABILITY)
def escalate_by_signal(
    campaign: Campaign,
    *,
    metric: str,
    judge: str,
    agreement: float,
    signal: str,
    confidence: float = 0.95,
    threshold: float | None = None,
    max_bands: int = MAX_BANDS,
) -> EscalateResult:
    """:func:`calibrate.analysis.escalate.escalate` with the candidate bands ordered by a confidence
    ``signal`` (one of :data:`SIGNALS`), or, with ``signal="all"``, by each available signal tested at
    ``(1 - confidence) / S`` and the one deciding the most cases kept (see the module docstring). The
    document gains ``signal`` (its name, how it was read; with ``all``: the level each was tested at and why)
    and, with ``all``, ``signals`` (each signal's coverage, or why it is not available).

    Examples
    --------
    >>> import calibrate
    >>> c = calibrate.load_campaign(calibrate.demo_campaign_path())
    >>> doc = escalate_by_signal(c, metric="relevance", judge="NISTRetrieval-instruct0", agreement=0.9, signal="all")
    >>> doc.signal["name"], [(s["name"], s["available"]) for s in doc.signals]
    ('score', [('score', True), ('jury', True), ('repeats', False), ('logprobs', False)])
    """
    campaign.metric_names([metric])
    if not isinstance(max_bands, int) or max_bands < 1:
        raise ValueError(f"max_bands={max_bands!r}: expected a whole number, 1 or more")
    ceiling = human_ceiling(campaign, metric, confidence)
    check_ceiling(agreement, ceiling)
    if signal != "all":
        read = confidence_signal(campaign, metric, judge, signal, threshold)
        return _one(campaign, metric, read, agreement, confidence, max_bands, ceiling, {})
    reads, missing = _available(campaign, metric, judge, threshold)
    if not reads:
        raise ValueError("no signal is available: " + "; ".join(m["reason"] for m in missing))
    each = 1 - (1 - confidence) / len(reads)
    bonferroni = (
        f"each of the {len(reads)} available signals tested at confidence {each:.4g} (Bonferroni: the error budget "
        f"{1 - confidence:.3g} split {len(reads)} ways), so the one kept holds at {confidence:g}"
    )
    details = {"chosen_from": [r.name for r in reads], "tested_at": each, "multiplicity": bonferroni}
    docs = [_one(campaign, metric, r, agreement, each, max_bands, ceiling, details) for r in reads]
    best = max(range(len(docs)), key=lambda i: (docs[i].n_decided, -i))
    summary = [
        {"name": d.signal["name"], "available": True, "n_decided": d.n_decided, "coverage": d.coverage.value,
         "agreement": d.agreement.value, "chosen": i == best, "note": d.signal["note"]}
        for i, d in enumerate(docs) if d.signal is not None
    ] + missing  # fmt: skip
    chosen = docs[best]
    text = chosen.text.replace(f"guaranteed at {each:.0%}", f"guaranteed at {confidence:.0%}")
    text += f"; the {chosen.signal['name'] if chosen.signal else ''} signal, the best of {len(reads)} ({bonferroni})"
    return dataclasses.replace(chosen, confidence=confidence, text=text, signals=summary)
