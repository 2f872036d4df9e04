"""Watching a judge in production: ``calibrate monitor``.

A threshold chosen on some labelled cases is a claim about a judge and a stream of answers at that time.
The monitor reads the **stream**: the cases the judge scored that carry a time (``metadata.time``, ISO
8601), from ``since`` (when the threshold was chosen) on, in time order. Humans audit some of them (the
labelled ones): at random with the inclusion probabilities the campaign's sample designs recorded, or,
for labels no recorded sample chose, uniformly (each stream case equally likely). The labelled cases
outside the stream are the **baseline**, the labels the threshold was chosen on.

At the judge's threshold (given, or the one the metric's rule recommends on the baseline) it watches:

- the **false-pass rate** (the share of human fails the judge passes), against the metric's
  ``max_false_pass`` where it declares one, else the baseline's rate plus ``tolerance``;
- the **false-fail rate** (the share of human passes the judge fails), against the baseline's rate plus
  ``tolerance``;
- the **human pass rate**, against the baseline's rate plus or minus ``tolerance``, estimated from the
  judge's score on every case and the audited labels (a prediction-powered increment per case:
  ``lam * f + (audited / pi) * (y - lam * f)``, ``f`` the judge's score scaled to [0, 1] and ``lam`` fitted
  on the baseline, unbiased whatever ``lam`` is).

Each watch is an anytime-valid change detector (:func:`calibrate.stats.sequential.e_detector`); ``alpha``
is split evenly between the watches, so that while every rate stays in its range, the monitor as a whole
ever alarms with probability at most ``alpha``, however often it is run and however long the stream. After
an alarm a watch restarts from the next case. Each watch also gives the confidence sequence of its rate
(restarted at each alarm: the current rate).

Every bound can fire. A bound of 0 (``max_false_pass = 0``: the judge may pass no human fail; or a
baseline rate of 0 with a ``tolerance`` of 0) allows no case of the kind at all, so the first audited one
is certain evidence: the watch alarms there, at any ``alpha`` (its ``evidence`` is infinite: ``None`` in
the document, with ``certain`` true). A range that reaches past what the rate can take (a bound of 1 for
a rate watched from above, 0 from below) cannot be left, and its watch is listed in ``not_watched``.

An alarm names the change it found (``change_time``, ``change_case_id``: where the evidence against the
range starts) only when the rate was in its range on the baseline. A declared ceiling the baseline's rate
already exceeds (``baseline_in_range`` false) was never met: the stream's alarm marks no change, and its
``change_time`` is None, with ``no_change`` saying why.

A judge the monitor cannot watch raises :class:`NotWatchable`, a ``ValueError`` whose ``reason`` says why
without naming the judge (the report groups the judges by it).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from calibrate.base.errors import NO_VALUE, CampaignError, ParameterText, Problem
from calibrate.base.manifest import build_manifest
from calibrate.base.results import Result
from calibrate.campaign import CASES_FILE, Campaign
from calibrate.campaign.reference import JudgeScores, computed_once, find_judge, human_reference
from calibrate.stats.library import separation
from calibrate.stats.sequential import confidence_sequence, e_detector, rate_increments

__all__ = ["MIN_ALPHA", "SEQUENCE_POINTS", "NotWatchable", "case_times", "monitor_judge"]

#: the points of each confidence sequence kept in the document (every case's is in the computation)
SEQUENCE_POINTS = 200
#: the smallest alpha: its share per watch still has a reciprocal (the detector's threshold) in floating point
MIN_ALPHA = 1e-300


class NotWatchable(ValueError):
    """A judge the monitor cannot watch: the message names the judge and what to give; ``reason`` says why
    in words that hold for any judge (``calibrate report`` lists the judges of one reason together).

    Examples
    --------
    >>> exc = NotWatchable("judge j: no baseline", reason="no baseline")
    >>> str(exc), exc.reason
    ('judge j: no baseline', 'no baseline')
    """

    def __init__(self, message: str, *, reason: str):
        super().__init__(message)
        self.reason = reason


def case_times(campaign: Campaign) -> dict[str, pd.Timestamp]:
    """Each case's ``metadata.time`` as a UTC timestamp (cases without one are left out).

    Raises
    ------
    CampaignError
        A time that is not ISO 8601, naming ``cases.jsonl``, the case and the field.

    Examples
    --------
    >>> import pandas as pd
    >>> from calibrate.campaign import campaign_from_frames
    >>> c = campaign_from_frames({"name": "n", "metrics": {"f": {"scale": "binary"}}},
    ...     pd.DataFrame({"case_id": ["a"], "metric": "f", "rater": "h", "rater_kind": "human", "value": [1]}),
    ...     [{"case_id": "a", "metadata": {"time": "2026-11-02T10:00:00+01:00"}}, {"case_id": "b"}])
    >>> case_times(c)
    {'a': Timestamp('2026-11-02 09:00:00+0000', tz='UTC')}
    """
    ids, stamps = _timed_cases(campaign)
    return dict(zip(ids.tolist(), stamps))


def _timed_cases(campaign: Campaign) -> tuple[np.ndarray, Any]:
    """:func:`case_times` as two arrays, the timed cases' ids and their times (a DatetimeArray), in the
    order of the cases: no object per case (a dict of a million timestamps takes seconds)."""
    cases = campaign.cases or {}
    values = [
        metadata.get("time") if isinstance(metadata := case.get("metadata"), dict) else None for case in cases.values()
    ]
    timed = [i for i, value in enumerate(values) if value is not None]
    texts = [values[i] for i in timed]
    parsed = pd.to_datetime(
        pd.Series([t if isinstance(t, str) else None for t in texts], dtype=object),
        utc=True,
        errors="coerce",
        format="ISO8601",
    )
    where = str(campaign.path / CASES_FILE) if campaign.path else CASES_FILE
    keys = list(cases)
    problems = [
        Problem(
            where,
            f"case {keys[timed[i]]!r}: its time is not a date and time",
            row=timed[i] + 1,
            field="metadata.time",
            value=texts[i],
            expected="ISO 8601, such as 2026-11-30T14:05:00Z",
        )
        for i in np.flatnonzero(parsed.isna().to_numpy())
    ]
    if problems:
        raise CampaignError(problems)
    return np.asarray(keys, dtype=str)[timed], parsed.array


def _positions(keys: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """Each of ``ids``' place in ``keys`` (the last, should a key be there twice), -1 where it is not there:
    by a binary search in the sorted keys (quicker than a hash table of strings here)."""
    keys, ids = np.asarray(keys, dtype=str), np.asarray(ids, dtype=str)
    if keys.size == 0 or ids.size == 0:
        return np.full(ids.size, -1)
    order = np.argsort(keys, kind="stable")  # equal keys keep their order: the last of a run is the last place
    ordered = keys[order]
    at = np.maximum(np.searchsorted(ordered, ids, side="right") - 1, 0)
    return np.where(ordered[at] == ids, order[at], -1)


@dataclass(frozen=True)
class _Watch:
    """One rate watched: its increments, their lower bound, and what its confidence sequence reads."""

    rate: str
    direction: str  # "above" or "below"
    bound: float
    basis: str
    increments: np.ndarray
    lower: np.ndarray
    values: np.ndarray  # what the confidence sequence averages
    weights: np.ndarray
    max_weight: float
    value_range: tuple[float, float]
    #: the baseline's rate against the range: False when it was already out (no alarm can mark a change)
    baseline_in_range: bool | None = None


def _audit(stream: np.ndarray, labelled: np.ndarray, campaign: Campaign) -> tuple[np.ndarray, str, float]:
    """Each audited stream case's probability of an audit, how it was known, and the design's smallest
    (which sizes every bet). A case a recorded sample chose has that sample's; the labelled cases no
    sample chose are taken as a uniform audit of the stream cases no sample chose."""
    pi = np.full(stream.size, np.nan)
    strata: list[float] = []
    for sample in (campaign.samples or {}).values():
        found = _positions(stream, sample["case_ids"])  # a case the stream lists twice: its last place
        chosen = found >= 0
        # the first time a sample names a case sets its probability, unless an earlier sample did
        at, first = np.unique(found[chosen], return_index=True)
        new = np.isnan(pi[at])
        pi[at[new]] = np.asarray(sample["inclusion_probability"], dtype=float)[chosen][first[new]]
        if new.any():
            strata += [
                float(s["inclusion_probability"])
                for s in sample["design"].get("strata", {}).values()
                if s.get("inclusion_probability")
            ]
    free = np.isnan(pi)
    loose = labelled & free
    parts = []
    if (labelled & ~free).any():
        parts.append(f"{int((labelled & ~free).sum())} from recorded sample designs")
    if loose.any():
        share = float(loose.sum() / free.sum())
        pi[free] = share
        strata.append(share)
        parts.append(f"{int(loose.sum())} taken as a uniform audit ({share:.1%} of the stream cases no sample chose)")
    floor = min(strata + pi[labelled].tolist()) if labelled.any() else 0.0
    pi[np.isnan(pi)] = floor if floor > 0 else 1.0  # never audited: their probability weighs nothing
    return pi, "; ".join(parts) or "none", floor


def _better_than_chance(oriented: np.ndarray, passes: np.ndarray, level: float = 0.025) -> dict[str, Any]:
    """Whether the judge ranks the baseline's human passes above its fails (a one-sided Mann-Whitney test
    at ``level``): the monitor watches a judge change, and says so when there is no judge to watch."""
    if not passes.any() or passes.all():
        return {
            "auc": None,
            "p_value": None,
            "better_than_chance": False,
            "reason": "the baseline holds one class of human label only: the judge's worth is unknown",
        }
    found = separation(oriented, passes)  # the test the gate reads, by permutation while a class is small
    auc, p = found["auc"], found["chance_p"]
    better = p < level
    return {
        "auc": auc,
        "p_value": p,
        "better_than_chance": better,
        "reason": None
        if better
        else f"on the baseline the judge is not shown better than chance (AUC {auc:.3f}, "
        f"one-sided Mann-Whitney p = {p:.3g}, needs p < {level:g}): "
        "watching it for a change says nothing of its worth (calibrate gate)",
    }


def _baseline_rates(passes: np.ndarray, judge_passes: np.ndarray) -> dict[str, float | None]:
    fails = ~passes
    return {
        "false_pass_rate": float(judge_passes[fails].mean()) if fails.any() else None,
        "false_fail_rate": float((~judge_passes[passes]).mean()) if passes.any() else None,
        "human_pass_rate": float(passes.mean()) if passes.size else None,
    }


def _thinned(size: int) -> np.ndarray:
    """The steps of a stretch of ``size`` cases kept in the document: at most :data:`SEQUENCE_POINTS`, evenly
    spread, the first and the last among them."""
    return np.unique(np.linspace(0, size - 1, min(SEQUENCE_POINTS, size)).round().astype(int))


def _number(x: float) -> float | None:
    return None if x is None or not math.isfinite(x) else float(x)


def _sequence(w: _Watch, start: int, end: int, alpha: float, known: dict) -> tuple[np.ndarray, ...]:
    """The steps of the stretch from ``start`` to ``end`` kept in the document, and the estimate and the
    confidence sequence of the watch's rate after each: computed there only, and once for the watches of
    one rate that average the same values over the same stretch (the human pass rate from above and below),
    ``known`` holding them."""
    key = (id(w.values), id(w.weights), w.max_weight, w.value_range, start, end, alpha)
    if key not in known:
        steps = _thinned(end - start)
        low, high = confidence_sequence(
            w.values[start:end],
            w.weights[start:end],
            alpha=alpha,
            max_weight=w.max_weight,
            value_range=w.value_range,
            at=steps,
        )
        weight = np.cumsum(w.weights[start:end])[steps]
        with np.errstate(invalid="ignore", divide="ignore"):
            estimate = np.cumsum(w.weights[start:end] * w.values[start:end])[steps] / weight
        estimate[weight == 0] = np.nan
        known[key] = (steps, estimate, low, high)
    return known[key]


def _watch(
    w: _Watch, alpha: float, stream: _Stream, scale: int, confidence_alpha: float, known: dict
) -> dict[str, Any]:
    """Run one watch over the stream, restarting after each alarm (``known``: see :func:`_sequence`)."""
    alarms, sequence = [], []
    start, n = 0, w.increments.size
    times, ids, audited = stream.stamps, stream.ids, stream.audited
    current = None
    while start < n:
        found = e_detector(w.increments[start:], w.lower[start:], alpha=alpha, scale=scale)
        end = n if found.alarm is None else start + found.alarm + 1
        steps, estimate, low, high = _sequence(w, start, end, confidence_alpha, known)
        sequence += [
            {"time": times.iloc[start + i].isoformat(), "estimate": _number(e), "low": _number(a), "high": _number(b)}
            for i, e, a, b in zip(steps.tolist(), estimate, low, high)
        ]
        current = {
            "since": times.iloc[start].isoformat(),
            "cases": int(end - start),
            "estimate": _number(estimate[-1]),
            "low": _number(low[-1]),
            "high": _number(high[-1]),
        }
        if found.alarm is None:
            break
        at, change = start + found.alarm, start + found.change
        alarm = {
            "time": times.iloc[at].isoformat(),
            "case_id": str(ids[at]),
            "case_index": int(at),
            "change_time": times.iloc[change].isoformat(),
            "change_case_id": str(ids[change]),
            "evidence": _number(found.evidence),
            "certain": found.evidence == math.inf,
            "cases_since_change": int(at - change + 1),
            "audited_since_change": int(audited[change : at + 1].sum()),
            "statistic": _number(found.statistic[-1]),
            "threshold": _number(1 / alpha),
        }
        if w.baseline_in_range is False:
            # the rate was past its bound before the stream began: the evidence marks no change
            alarm.update(
                change_time=None,
                change_case_id=None,
                cases_since_change=None,
                audited_since_change=None,
                no_change=f"the rate was already {w.direction} {w.bound:g} on the baseline, so no change "
                "is found: the threshold never met this range",
            )
        alarms.append(alarm)
        start = at + 1
    return {
        "rate": w.rate,
        "watch": w.direction,
        "bound": w.bound,
        "basis": w.basis,
        "alarms": alarms,
        "current": current,
        "sequence": sequence,
        "baseline_in_range": w.baseline_in_range,
    }


def _check_parameters(alpha: float, tolerance: float) -> None:
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not MIN_ALPHA <= alpha < 1:
        # below MIN_ALPHA, 1 / alpha (the detector's threshold) is past the largest floating-point number
        raise ValueError(
            ParameterText(
                "{alpha}: expected a probability from {_least} to below 1", alpha=alpha, _least=f"{MIN_ALPHA:g}"
            )
        )
    if not 0 <= tolerance < 1:
        raise ValueError(ParameterText("{tolerance}: expected a number from 0 to 1", tolerance=tolerance))


def _stream_start(since: str | None) -> Any:
    """When the stream starts (``since`` read as a UTC time), or None: every timed case."""
    start = pd.to_datetime(since, utc=True, errors="coerce") if since is not None else None
    if since is not None and pd.isna(start):
        raise ValueError(
            ParameterText("{since}: not a date and time (ISO 8601, such as 2026-11-01T00:00:00Z)", since=since)
        )
    return start


def _in_stream(scores: JudgeScores, timed: np.ndarray, times: Any, start: Any, metric: str) -> np.ndarray:
    """Which of the judge's cases (``timed``: each one's place in ``times``, -1 for none) are in the stream
    (timed, from ``start`` on); none raises NotWatchable."""
    in_stream = timed >= 0
    if start is not None and in_stream.any():
        in_stream[in_stream] = np.asarray(times[timed[in_stream]] >= start)
    if not in_stream.any():
        when = f" from {start.isoformat()} on" if start is not None else ""
        raise NotWatchable(
            f"judge {scores.name} scored no case of {metric} with a metadata.time{when}: the monitor "
            "reads the cases in time order",
            reason=f"no case it scored has a metadata.time{when}",
        )
    return in_stream


def _choose_threshold(
    campaign: Campaign, metric: str, scores: JudgeScores, base_ids: list[str], threshold: float | None
) -> tuple[float, str]:
    """The threshold watched and where it came from: given, or recommended on the baseline's labels."""
    if threshold is None:
        from calibrate.analysis.recommendations import recommended_threshold

        if not base_ids:
            raise NotWatchable(
                ParameterText(
                    "judge {_judge}: no labelled case outside the stream to choose the threshold on: "
                    "give the threshold used in production ({threshold}), or when it was chosen ({since})",
                    _judge=scores.name,
                    threshold=NO_VALUE,
                    since=NO_VALUE,
                ),
                reason="every labelled case it scored is in the stream (has a "
                "metadata.time): no baseline to choose its threshold on (give calibrate monitor the threshold used "
                "in production, or when it was chosen)",
            )
        threshold = recommended_threshold(campaign, metric, scores.name, cases=set(base_ids))
        if threshold is None:
            raise NotWatchable(
                ParameterText(
                    "the metric's rule gives judge {_judge} no threshold on the baseline: give the threshold used in "
                    "production ({threshold})",
                    _judge=scores.name,
                    threshold=NO_VALUE,
                ),
                reason="the metric's rule gives it no threshold on the baseline (give calibrate monitor the "
                "threshold used in production)",
            )
        return threshold, f"recommended under the metric's rule on the {len(base_ids)} baseline labels"
    if not math.isfinite(threshold):
        raise ValueError(ParameterText("{threshold}: expected a finite number", threshold=threshold))
    return threshold, "given"


@dataclass(frozen=True)
class _Stream:
    """The stream in time order: its cases, the judge's scores and decisions, the audit and its weights."""

    ids: np.ndarray
    values: np.ndarray
    stamps: pd.Series
    audited: np.ndarray
    human: np.ndarray  # the human label (False where none)
    judge_passes: np.ndarray
    pi: np.ndarray
    how: str
    floor: float
    ipw: np.ndarray


def _read_stream(
    campaign: Campaign,
    scores: JudgeScores,
    in_stream: np.ndarray,
    when: Any,
    label: np.ndarray,
    passes: np.ndarray,
    threshold: float,
) -> _Stream:
    """The stream's cases (``when``: the times of the judge's cases in it) in time order, with their audit
    (``label``: each one's place among the human ``passes``, -1 for none); a stream with no audited case
    raises NotWatchable."""
    sign = scores.sign
    order = np.argsort(when.asi8, kind="stable")
    ids = scores.case_ids[in_stream][order]
    values = scores.values[in_stream][order]
    stamps = pd.Series(when[order])
    label = label[order]
    audited = label >= 0
    human = np.zeros(ids.size, dtype=bool)
    human[audited] = passes[label[audited]]
    judge_passes = sign * values >= sign * threshold
    pi, how, floor = _audit(ids, audited, campaign)
    if floor <= 0:
        raise NotWatchable(
            f"judge {scores.name}: no case of the stream is audited: the monitor needs human labels "
            f"on some of the {ids.size} stream cases",
            reason="no case of its stream is audited (has a human label)",
        )
    ipw = np.where(audited, 1 / pi, 0.0)
    return _Stream(ids, values, stamps, audited, human, judge_passes, pi, how, floor, ipw)


def _error_rate_watch(
    rate: str,
    counted: np.ndarray,
    outcome: np.ndarray,
    declared: float | None,
    measured: float | None,
    what: str,
    stream: _Stream,
    tolerance: float,
) -> _Watch | dict[str, str]:
    """The watch of an error rate (the share of ``counted`` cases with ``outcome``), or why it is not watched."""
    in_range = None
    if declared is not None:
        bound, basis = float(declared), f"the metric's max_false_pass ({declared:g})"
        if measured is not None:  # a ceiling the baseline already exceeds was never met: no change to find
            in_range = measured <= bound + 1e-12
            if not in_range:
                basis += f"; the baseline's rate, {measured:.3f}, is already above it"
    elif measured is not None:
        bound = min(1.0, measured + tolerance)
        basis = f"the baseline's {what} ({measured:.3f}) plus the tolerance {tolerance:g}"
    else:
        return {
            "rate": rate,
            "reason": f"no baseline {what} to compare with (no labelled case of that "
            "kind outside the stream) and no declared ceiling",
        }
    if bound >= 1:
        return {"rate": rate, "reason": f"its accepted range reaches 1 ({basis}): nothing can leave it"}
    z, lower = rate_increments(outcome, counted, stream.audited, stream.pi, bound, smallest=stream.floor)
    return _Watch(
        rate,
        "above",
        bound,
        basis,
        z,
        lower,
        outcome.astype(float),
        np.where(counted, stream.ipw, 0.0),
        1 / stream.floor,
        (0.0, 1.0),
        baseline_in_range=in_range if declared is not None else True,
    )


def _human_pass_watches(
    base_scores: np.ndarray, base_passes: np.ndarray, rate: float, sign: float, stream: _Stream, tolerance: float
) -> tuple[list[_Watch], list[dict[str, str]]]:
    """The watches of the human pass rate (from above and below, prediction-powered), and those skipped."""
    watches: list[_Watch] = []
    skipped: list[dict[str, str]] = []
    floor = stream.floor
    low_score, high_score = float(np.min(base_scores)), float(np.max(base_scores))
    spread = high_score - low_score

    def scaled(x: np.ndarray) -> np.ndarray:
        f = (x - low_score) / spread if spread > 0 else np.zeros_like(x)
        return np.clip(f if sign > 0 else 1 - f, 0, 1)

    f_base, f = scaled(base_scores), scaled(stream.values)
    var = float(np.var(f_base))
    lam = (
        float(np.clip(np.cov(f_base, base_passes.astype(float))[0, 1] / var, 0, 1))
        if var > 0 and base_passes.size > 1
        else 0.0
    )
    estimate = lam * f + stream.ipw * (stream.human.astype(float) - lam * f)
    ones = np.ones(estimate.size)  # one array for both watches: they share their confidence sequence
    widest = (lam * (1 - 1 / floor), 1 / floor)
    for direction, bound in (("above", rate + tolerance), ("below", rate - tolerance)):
        if (bound >= 1) if direction == "above" else (bound <= 0):  # a range no rate can leave
            skipped.append(
                {
                    "rate": "human_pass_rate",
                    "reason": f"its range reaches {bound:.3f}: nothing can go {direction} it",
                }
            )
            continue
        sign_z = 1.0 if direction == "above" else -1.0
        z = sign_z * (estimate - bound)
        lower = -(bound - widest[0]) if direction == "above" else -(widest[1] - bound)
        watches.append(
            _Watch(
                "human_pass_rate",
                direction,
                bound,
                f"the baseline's human pass rate ({rate:.3f}) {'plus' if sign_z > 0 else 'minus'} "
                f"the tolerance {tolerance:g}; prediction-powered (lam {lam:.2f}, the judge's "
                "score on every case)",
                z,
                np.full(z.size, lower),
                estimate,
                ones,
                1.0,
                (min(0.0, widest[0]), max(1.0, widest[1])),
                baseline_in_range=True,
            )
        )
    return watches, skipped


def _watches(
    max_false_pass: float | None,
    rates: dict[str, float | None],
    base_scores: np.ndarray,
    base_passes: np.ndarray,
    sign: float,
    stream: _Stream,
    tolerance: float,
) -> tuple[list[_Watch], list[dict[str, str]]]:
    """Every rate's watches, in order (false-pass, false-fail, human pass rate), and the rates not watched."""
    watches: list[_Watch] = []
    skipped: list[dict[str, str]] = []
    for found in (
        _error_rate_watch(
            "false_pass_rate",
            ~stream.human,
            stream.judge_passes,
            max_false_pass,
            rates["false_pass_rate"],
            "false-pass rate",
            stream,
            tolerance,
        ),
        _error_rate_watch(
            "false_fail_rate",
            stream.human,
            ~stream.judge_passes,
            None,
            rates["false_fail_rate"],
            "false-fail rate",
            stream,
            tolerance,
        ),
    ):
        if isinstance(found, _Watch):
            watches.append(found)
        else:
            skipped.append(found)
    if rates["human_pass_rate"] is not None and base_scores.size:
        more, passed_over = _human_pass_watches(
            base_scores, base_passes, rates["human_pass_rate"], sign, stream, tolerance
        )
        watches += more
        skipped += passed_over
    else:
        skipped.append({"rate": "human_pass_rate", "reason": "no baseline labels to measure it on"})
    return watches, skipped


def _stream_summary(stream: _Stream, timed: np.ndarray) -> dict[str, Any]:
    return {
        "n_cases": int(stream.ids.size),
        "first": stream.stamps.iloc[0].isoformat(),
        "last": stream.stamps.iloc[-1].isoformat(),
        "n_audited": int(stream.audited.sum()),
        "audit": stream.how,
        "smallest_inclusion": stream.floor,
        "n_without_time": int((timed < 0).sum()),
    }


@computed_once()
def monitor_judge(
    campaign: Campaign,
    *,
    metric: str,
    judge: str,
    threshold: float | None = None,
    alpha: float = 0.05,
    since: str | None = None,
    tolerance: float = 0.05,
) -> Result:
    """The ``calibrate monitor`` command: watch a judge's error rates at its threshold, and the human
    pass rate, over the campaign's timed cases (see the module docstring).

    Parameters
    ----------
    campaign : Campaign
    metric, judge : str
    threshold : float, optional
        The judge's pass threshold in production; by default the one the metric's rule recommends on the
        baseline's labels.
    alpha : float
        The probability that the monitor ever alarms while every rate stays in its range (split evenly
        between the rates watched), from :data:`MIN_ALPHA` to below 1.
    since : str, optional
        When the threshold was chosen (ISO 8601): the stream starts there; by default every timed case
        is in the stream, and the baseline is the labelled cases without a time.
    tolerance : float
        How far a rate may move from the baseline's before it has left its range (not used for a rate
        the metric bounds itself, such as the false-pass rate under ``max_false_pass``).

    Returns
    -------
    Result
        ``{"campaign", "metric", "judge", "threshold", "alpha", "since", "stream", "baseline", "rates":
        [one per watch: bound, basis, alarms, current, sequence], "alarmed", "baseline_fitness", "passed",
        "guarantee", "manifest"}``. ``passed`` fails closed: no alarm, and a judge shown better than
        chance on the baseline.

    Raises
    ------
    ValueError
        No timed case the judge scored, no baseline to choose a threshold or measure a rate on, or a
        parameter out of range.
    CampaignError
        A case's time that is not ISO 8601.

    Examples
    --------
    The stream demo's planted drift (from 2026-11-02, RMITIR-llama70B passes more of what humans fail):

    >>> import calibrate
    >>> stream = calibrate.load_campaign(calibrate.demo_stream_path(), out_of_scale="drop")
    >>> doc = monitor_judge(stream, metric="relevance", judge="RMITIR-llama70B")
    >>> doc["passed"], doc["threshold"]["value"], doc["stream"]["n_cases"], doc["stream"]["n_audited"]
    (False, 3.0, 3422, 855)
    >>> alarm = doc["rates"][0]["alarms"][0]
    >>> alarm["change_time"][:10], alarm["time"][:10], alarm["audited_since_change"]
    ('2026-11-02', '2026-11-13', 54)
    """
    _check_parameters(alpha, tolerance)
    campaign.metric_names([metric])
    spec = campaign.metrics[metric]
    scores = find_judge(campaign, metric, judge)
    timed_ids, times = _timed_cases(campaign)
    timed = _positions(timed_ids, scores.case_ids)  # each of the judge's cases' place in times, or -1
    start = _stream_start(since)
    in_stream = _in_stream(scores, timed, times, start, metric)
    ref = human_reference(campaign, metric)
    passes = ref.values >= spec.human_pass
    sign = scores.sign
    # the baseline: labelled cases the judge scored outside the stream
    label = _positions(ref.case_ids, scores.case_ids)  # each of the judge's cases' place in ref, or -1
    base = ~in_stream & (label >= 0)
    base_ids, base_scores = scores.case_ids[base].tolist(), scores.values[base]
    base_passes = passes[label[base]].astype(bool)
    threshold, source = _choose_threshold(campaign, metric, scores, base_ids, threshold)
    rates = _baseline_rates(base_passes, sign * base_scores >= sign * threshold)  # all None on no baseline
    fitness = _better_than_chance(sign * base_scores, base_passes)
    when = times[timed[in_stream]]
    stream = _read_stream(campaign, scores, in_stream, when, label[in_stream], passes, threshold)

    watches, skipped = _watches(spec.max_false_pass, rates, base_scores, base_passes, sign, stream, tolerance)
    if not watches:
        why = "no rate can be watched: " + "; ".join(s["reason"] for s in skipped)
        raise NotWatchable(f"judge {scores.name}: {why}", reason=why)

    each = alpha / len(watches)
    known: dict = {}  # the confidence sequences computed, for the watches that share one
    results = [_watch(w, each, stream, max(stream.ids.size, 1), alpha, known) for w in watches]
    doc = {
        "campaign": campaign.name,
        "metric": metric,
        "judge": scores.name,
        "threshold": {"value": threshold, "source": source},
        "alpha": alpha,
        "alpha_each": each,
        "tolerance": tolerance,
        "since": start.isoformat() if start is not None else None,
        "stream": _stream_summary(stream, timed),
        "baseline": {"n_labelled": len(base_ids), **rates},
        "rates": results,
        "not_watched": skipped,
        "alarmed": any(r["alarms"] for r in results),
        "baseline_fitness": fitness,
        "passed": fitness["better_than_chance"] and not any(r["alarms"] for r in results),
        "guarantee": (
            f"while every rate stays in its accepted range, the chance that this monitor ever alarms, "
            f"however often it is run and however long the stream grows, is at most {alpha:g} "
            f"({each:.4g} for each of the {len(watches)} watches)"
        ),
    }
    doc["manifest"] = build_manifest(
        campaign,
        command="monitor",
        metric=metric,
        judge=scores.name,
        threshold=threshold,
        alpha=alpha,
        since=doc["since"],
        tolerance=tolerance,
    )
    return Result(doc)
