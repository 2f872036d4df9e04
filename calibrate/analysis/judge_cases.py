"""The cases behind a judge's figures: its false-pass / false-fail curve (with the number of cases behind
each rate), its bottom decile, and its worst misses at the pass threshold."""

from __future__ import annotations

import gc
import math
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from calibrate.analysis.judge_comparison import JudgeComparison, pass_share
from calibrate.base.results import Deferred
from calibrate.stats.curves import error_curve
from calibrate.stats.intervals import wilson_interval

__all__ = ["CurvePoints", "bottom_decile", "case_row", "curve", "worst_misses"]


@contextmanager
def collector_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector while many acyclic objects are made (it would rescan
    them again and again); restore its previous state after."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def floats(values: np.ndarray) -> list[float | None]:
    """A float array as a JSON-ready list, NaN as None.

    >>> floats(np.array([0.5, np.nan]))
    [0.5, None]
    """
    values = np.asarray(values, dtype=float)
    return [None if np.isnan(v) else v for v in values.tolist()] if np.isnan(values).any() else values.tolist()


class CurvePoints(Deferred):
    """A judge's false-pass / false-fail curve: a point per distinct score, kept as columns (a
    full-precision judge of a million cases has a million points); each point is made when read, as
    the dict the document holds (:class:`~calibrate.base.results.Deferred`).

    Examples
    --------
    >>> points = CurvePoints({key: np.array([0.5, np.nan]) for key in CurvePoints.COLUMNS})
    >>> len(points), points[1]["false_pass_rate"], points[0]["false_pass_rate_ci"]
    (2, None, [0.5, 0.5])
    """

    #: The columns, in the order of a point's values.
    COLUMNS = ("threshold", "fp_rate", "ff_rate", "n_fp", "n_ff", "fp_low", "fp_high", "ff_low", "ff_high")

    def __init__(self, columns: dict[str, np.ndarray]):
        self.columns = columns

    def __len__(self) -> int:
        return int(self.columns["threshold"].size)

    def items(self, first: int, last: int) -> list[dict[str, Any]]:
        col = {key: values[first:last] for key, values in self.columns.items()}
        rows = zip(
            col["threshold"].tolist(),
            floats(col["fp_rate"]),
            floats(col["ff_rate"]),
            col["n_fp"].tolist(),
            col["n_ff"].tolist(),
            floats(col["fp_low"]),
            floats(col["fp_high"]),
            floats(col["ff_low"]),
            floats(col["ff_high"]),
        )
        with collector_paused():  # many small acyclic objects
            return [
                {
                    "threshold": t,
                    "false_pass_rate": fpr,
                    "false_fail_rate": ffr,
                    "n_false_pass": nfp,
                    "n_false_fail": nff,
                    "false_pass_rate_ci": [fpl, fph],
                    "false_fail_rate_ci": [ffl, ffh],
                }
                for t, fpr, ffr, nfp, nff, fpl, fph, ffl, ffh in rows
            ]


def curve(c: JudgeComparison, confidence: float) -> CurvePoints:
    """The false-pass and false-fail rates at every distinct score as a threshold, with their Wilson
    intervals (at the Kish effective size when weighted) and the number of cases behind each."""
    counts = c.paired.error_counts(c.paired.full)
    fp, ff = counts["false_pass"][0, :-1], counts["false_fail"][0, :-1]
    n_pass, n_fail = counts["n_pass"][0], counts["n_fail"][0]
    s_pass, s_fail = c.effective_scale["pass"], c.effective_scale["fail"]  # 1 when unweighted
    fp_low, fp_high = wilson_interval(fp * s_fail, np.full_like(fp, n_fail * s_fail), confidence=confidence)
    ff_low, ff_high = wilson_interval(ff * s_pass, np.full_like(ff, n_pass * s_pass), confidence=confidence)
    with np.errstate(invalid="ignore", divide="ignore"):
        fp_rate, ff_rate = fp / n_fail, ff / n_pass
    # the number of cases behind each rate (weighted rates count cases of different weights)
    cases = error_curve(c.passes, c.score)  # unweighted: each case counts once
    return CurvePoints(
        {
            "threshold": c.judge.sign * c.paired.j_values,
            "fp_rate": fp_rate,
            "ff_rate": ff_rate,
            "n_fp": cases.false_pass.astype(int),
            "n_ff": cases.false_fail.astype(int),
            "fp_low": fp_low,
            "fp_high": fp_high,
            "ff_low": ff_low,
            "ff_high": ff_high,
        }
    )


def bottom_decile(c: JudgeComparison, confidence: float, n_listed: int) -> dict[str, Any]:
    """The lowest-scored tenth of the cases (of the population, when cases are weighted): their human
    pass rate and mean human value, and the first ``n_listed`` of them."""
    order = np.lexsort((c.case_ids, c.score))
    size = (
        max(1, math.ceil(0.1 * c.n))
        if c.weights is None
        else int(np.searchsorted(np.cumsum(c.w[order]), 0.1 * c.n - 1e-9) + 1)
    )
    lowest = order[:size]
    w = c.w[lowest]
    return {
        "n": int(size),
        "score_at_most" if c.judge.sign > 0 else "score_at_least": float(c.judge.sign * c.score[lowest[-1]]),
        "human_pass_rate": pass_share(c.passes[lowest], None if c.weights is None else w, confidence),
        "mean_human_value": float(np.average(c.human[lowest], weights=w)),
        "cases": [case_row(c, i) for i in lowest[:n_listed]],
    }


def worst_misses(c: JudgeComparison, n_listed: int) -> dict[str, Any]:
    """False passes with the highest scores and false fails with the lowest, at the pass threshold;
    none listed where there is no pass threshold (every case would be a "miss" of failing everything)."""
    if not c.has_threshold:
        return {
            "threshold": None,
            "n_false_pass": 0,
            "n_false_fail": int(c.passes.sum()),
            "false_passes": [],
            "false_fails": [],
            "reason": (
                f"no pass threshold ({c.rule.describe()}"
                + (": none short of failing every case" if c.rule.kind != "default" else "")
                + "): no miss to list, since every case fails"
            ),
        }
    judged_pass = c.score >= c.paired.j_values[c.rule_index]
    false_pass = np.flatnonzero(judged_pass & ~c.passes)
    false_fail = np.flatnonzero(~judged_pass & c.passes)
    false_pass = false_pass[np.lexsort((c.case_ids[false_pass], c.human[false_pass], -c.score[false_pass]))]
    false_fail = false_fail[np.lexsort((c.case_ids[false_fail], -c.human[false_fail], c.score[false_fail]))]
    return {
        "threshold": c.threshold_value(c.rule_index),
        "n_false_pass": int(false_pass.size),
        "n_false_fail": int(false_fail.size),
        "false_passes": [case_row(c, i) for i in false_pass[:n_listed]],
        "false_fails": [case_row(c, i) for i in false_fail[:n_listed]],
    }


def case_row(c: JudgeComparison, i: int) -> dict[str, Any]:
    """One case as the documents list it: its id, the judge's score in its own units, the human value."""
    return {"case_id": str(c.case_ids[i]), "score": float(c.judge.sign * c.score[i]), "human": float(c.human[i])}
