"""Per-case verdicts under judge noise (``calibrate case-verdicts``): a judge scored with repeats
(``calibrate judge --repeats K``: runs ``repeat-0``, ``repeat-1``, ...) gives each case a pass rate over
its repeats, an exact interval and a verdict, pass, fail or undecided (the rule, what "undecided" means
and what one repeat gives: :mod:`calibrate.stats.repeat_verdicts`).

- **the judge's pass/fail** of a repeat is its score at its threshold, chosen without the labels as
  ``calibrate escalate`` chooses it (:func:`calibrate.analysis.escalate.label_free_threshold`: the one
  given, else the one the judge runs at, else the metric's pass level on the judge's scale); a higher
  score is better unless the judge says otherwise (``higher_is_better = false``: pass at or below it);
- **a case's repeats** are the repeats that scored it; a failed rating is no repeat (it is counted apart);
- no label is read: the verdicts say what the judge decides, not whether it is right.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from calibrate.analysis.escalate import label_free_threshold
from calibrate.analysis.repeatability import REPEAT_PREFIX
from calibrate.base.manifest import build_manifest
from calibrate.base.params import checked
from calibrate.base.results import Result, records_frame
from calibrate.campaign import Campaign
from calibrate.campaign.reference import JudgeScores, judge_scores
from calibrate.stats.repeat_verdicts import RepeatVerdicts, majority_share, min_repeats_to_decide, repeat_verdicts

__all__ = ["CASE_COLUMNS", "RepeatCounts", "case_verdicts", "repeat_counts", "repeat_runs", "verdict_counts"]

#: the columns of ``case_verdicts(...).to_frame()``, one row per case
CASE_COLUMNS = ("case_id", "repeats", "passes", "pass_rate", "low", "high", "verdict", "majority_share")


def _repeat_number(run_id: str) -> tuple[int, str]:
    tail = run_id.removeprefix(REPEAT_PREFIX)
    return (int(tail), "") if tail.isdigit() else (-1, run_id)


def repeat_runs(campaign: Campaign, metric: str, judge: str) -> list[JudgeScores]:
    """The runs of ``judge`` (a rater's name) on ``metric`` that are repeats (``repeat-N``), in the order of N.

    Examples
    --------
    >>> import pandas as pd
    >>> from calibrate.campaign import campaign_from_frames
    >>> r = pd.DataFrame({"case_id": ["a", "a", "a"], "metric": "f", "rater": "j", "rater_kind": "judge",
    ...                   "value": [0.9, 0.8, 0.1], "run_id": ["repeat-10", "repeat-2", "v1"]})
    >>> c = campaign_from_frames({"name": "n", "metrics": {"f": {"scale": "binary"}}}, r)
    >>> [j.run_id for j in repeat_runs(c, "f", "j")]
    ['repeat-2', 'repeat-10']
    """
    runs = [j for j in judge_scores(campaign, metric) if j.rater.name == judge and j.run_id.startswith(REPEAT_PREFIX)]
    return sorted(runs, key=lambda j: _repeat_number(j.run_id))


@dataclass(frozen=True)
class RepeatCounts:
    """A judge's repeats on a metric counted at its threshold: each case's passes ``k`` of its scored
    repeats ``m`` (cases sorted by id), and the failed ratings, which are no repeat.

    Attributes
    ----------
    runs : tuple of str
        The repeats' run ids, in order.
    threshold : float
        The judge's pass threshold in its units (pass at or above it; at or below it for a judge whose
        lower score is better), ``threshold_source`` where it comes from, ``pass_rule`` the rule in words.
    case_ids : ndarray of str
    passes, repeats : ndarray of int
    n_failed : int
    """

    runs: tuple[str, ...]
    threshold: float
    threshold_source: str
    pass_rule: str
    case_ids: np.ndarray
    passes: np.ndarray
    repeats: np.ndarray
    n_failed: int


def repeat_counts(campaign: Campaign, metric: str, judge: str, threshold: float | None = None) -> RepeatCounts:
    """The repeats of ``judge`` on ``metric`` counted at its label-free threshold (or ``threshold``).

    Raises
    ------
    ValueError
        When the judge has no repeat on the metric, or no threshold that does not come from the labels.
    """
    runs = repeat_runs(campaign, metric, judge)
    if not runs:
        with_repeats = sorted(
            {j.rater.name for j in judge_scores(campaign, metric) if j.run_id.startswith(REPEAT_PREFIX)}
        )
        raise ValueError(
            f"judge {judge} has no repeats on {metric} (runs named repeat-0, repeat-1, ...: calibrate judge "
            f"--repeats K writes them); the judges with repeats on it: {', '.join(with_repeats) or 'none'}"
        )
    value, source = label_free_threshold(campaign, metric, runs[0], threshold)
    case_ids = np.unique(np.concatenate([j.case_ids for j in runs]))
    passes, repeats = np.zeros(case_ids.size, dtype=int), np.zeros(case_ids.size, dtype=int)
    for run in runs:
        at = np.searchsorted(case_ids, run.case_ids)
        np.add.at(repeats, at, 1)
        np.add.at(passes, at, (run.oriented >= run.sign * value).astype(int))
    side = ">=" if runs[0].rater.higher_is_better else "<="
    return RepeatCounts(
        runs=tuple(j.run_id for j in runs),
        threshold=value,
        threshold_source=source,
        pass_rule=f"a repeat passes a case when its score {side} {value:g}",
        case_ids=case_ids,
        passes=passes,
        repeats=repeats,
        n_failed=int(sum(len(j.errors) for j in runs)),
    )


def _cases(case_ids: np.ndarray, found: RepeatVerdicts, share: np.ndarray) -> list[dict[str, Any]]:
    return [
        {
            "case_id": str(case_ids[i]),
            "repeats": int(found.repeats[i]),
            "passes": int(found.passes[i]),
            "pass_rate": float(found.pass_rate[i]),
            "low": float(found.low[i]),
            "high": float(found.high[i]),
            "verdict": str(found.verdict[i]),
            "majority_share": float(share[i]),
        }
        for i in range(case_ids.size)
    ]


def _text(judge: str, counts: dict[str, int], confidence: float, fewest: int, most: int) -> str:
    total = sum(counts.values())
    text = (
        f"{judge}: {counts['pass']} pass, {counts['fail']} fail, {counts['undecided']} undecided of {total} "
        f"cases at {confidence:.0%} confidence"
    )
    if most < fewest:
        text += f" (with {most} repeat(s) a case cannot be decided at {confidence:.0%}: {fewest} are needed)"
    return text


@checked("confidence")
def case_verdicts(
    campaign: Campaign, *, metric: str, judge: str, threshold: float | None = None, confidence: float = 0.95
) -> Result:
    """Each case's pass rate over ``judge``'s repeats, its Clopper-Pearson interval and its verdict: pass,
    fail, or undecided (see the module docstring and :mod:`calibrate.stats.repeat_verdicts`).

    Parameters
    ----------
    campaign : Campaign
    metric : str
    judge : str
        A rater scored with repeats (runs ``repeat-N``).
    threshold : float, optional
        The judge's pass threshold; by default its own, chosen without the labels.
    confidence : float
        Two-sided level of the intervals; a decided verdict is wrong with probability below
        ``(1 - confidence) / 2``.

    Returns
    -------
    Result
        The ``calibrate case-verdicts --json`` document: ``counts`` of each verdict, ``cases`` (one per
        case: ``case_id``, ``repeats``, ``passes``, ``pass_rate``, ``low``, ``high``, ``verdict``,
        ``majority_share``); ``.to_frame()`` is ``cases`` as a table (:data:`CASE_COLUMNS`).

    Raises
    ------
    ValueError
        An unknown metric, a judge without repeats on it, or no threshold.

    Examples
    --------
    >>> import pandas as pd
    >>> from calibrate.campaign import campaign_from_frames
    >>> scores = {"a": [0.9] * 6, "b": [0.62, 0.58, 0.61, 0.3, 0.7, 0.2], "c": [0.1] * 6}
    >>> r = pd.DataFrame([{"case_id": c, "metric": "f", "rater": "j", "rater_kind": "judge", "value": v,
    ...                    "run_id": f"repeat-{i}"} for c, vs in scores.items() for i, v in enumerate(vs)])
    >>> c = campaign_from_frames({"name": "n", "metrics": {"f": {"scale": "binary"}}}, r)
    >>> doc = case_verdicts(c, metric="f", judge="j", threshold=0.6)
    >>> doc["counts"], doc.to_frame()[["case_id", "passes", "verdict"]].values.tolist()
    ({'fail': 1, 'undecided': 1, 'pass': 1}, [['a', 6, 'pass'], ['b', 3, 'undecided'], ['c', 0, 'fail']])
    """
    campaign.metric_names([metric])
    counts = repeat_counts(campaign, metric, judge, threshold)
    verdicts = repeat_verdicts(counts.passes, counts.repeats, confidence=confidence)
    fewest = min_repeats_to_decide(confidence=confidence)
    document = {
        "campaign": campaign.name,
        "metric": metric,
        "judge": judge,
        "runs": list(counts.runs),
        "threshold": counts.threshold,
        "threshold_source": counts.threshold_source,
        "pass_rule": counts.pass_rule,
        "confidence": confidence,
        "method": "Clopper-Pearson; pass (fail) when the interval lies above (below) 1/2",
        "min_repeats_to_decide": fewest,
        "n_cases": int(counts.case_ids.size),
        "n_failed_ratings": counts.n_failed,
        "counts": verdicts.counts(),
        "text": _text(judge, verdicts.counts(), confidence, fewest, int(counts.repeats.max())),
        "cases": _cases(counts.case_ids, verdicts, majority_share(counts.passes, counts.repeats)),
        "manifest": build_manifest(
            campaign, command="case-verdicts", metric=metric, judge=judge, threshold=threshold, confidence=confidence
        ),
    }
    return Result(document, records_frame("cases"))


def verdict_counts(
    campaign: Campaign, judges: list[str] | None = None, *, confidence: float = 0.95
) -> list[dict[str, Any]]:
    """Per judge scored with repeats (of ``judges``) and metric, how many cases got each verdict: the lines
    ``calibrate judge`` prints. Each ``{"judge", "metric", "repeats", "counts", "text"}``; ``counts`` is
    None, and ``text`` says why, where the judge has no threshold without the labels.

    Examples
    --------
    >>> import pandas as pd
    >>> from calibrate.campaign import campaign_from_frames
    >>> r = pd.DataFrame({"case_id": ["a", "a"], "metric": "f", "rater": "j", "rater_kind": "judge",
    ...                   "value": [0.9, 0.8], "run_id": ["repeat-0", "repeat-1"]})
    >>> c = campaign_from_frames({"name": "n", "metrics": {"f": {"scale": "binary"}}}, r)
    >>> verdict_counts(c)[0]["text"]
    'j: 0 pass, 0 fail, 1 undecided of 1 cases at 95% confidence (with 2 repeat(s) a case cannot be decided at 95%: 6 are needed)'
    """
    ratings = campaign.ratings
    found = ratings[(ratings["rater_kind"] == "judge") & ratings["run_id"].str.startswith(REPEAT_PREFIX)]
    pairs = sorted({(r, m) for r, m in zip(found["rater"], found["metric"]) if judges is None or r in judges})
    lines = []
    for rater, metric in pairs:
        try:
            doc = case_verdicts(campaign, metric=metric, judge=rater, confidence=confidence)
        except ValueError as exc:
            lines.append({"judge": rater, "metric": metric, "repeats": None, "counts": None, "text": str(exc)})
            continue
        lines.append(
            {
                "judge": rater,
                "metric": metric,
                "repeats": len(doc["runs"]),
                "counts": doc["counts"],
                "text": doc["text"],
            }
        )
    return lines
