"""Repeatability: how far a judge agrees with itself when it scores the same cases again.

``calibrate judge --repeats K`` exports each repeat as a run (``repeat-0``, ``repeat-1``, ...). Per
judge and metric, over the cases scored in two repeats or more:

- test-retest agreement: Krippendorff's alpha across the repeats (interval level for scores, the
  metric's level when the judge rates on its scale), with a bootstrap interval over cases;
- the share of cases whose pass/fail verdict flips between repeats, at the judge's threshold under the
  metric's rule (Wilson interval);
- the mean absolute difference between two repeats of a case, in the judge's units.

This is the noise floor under any comparison: a change between two judges, or two versions of one,
smaller than what a judge does to itself on a second run is not a change.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from calibrate.analysis.figures import estimate, from_interval, undefined
from calibrate.analysis.recommendations import recommend_thresholds
from calibrate.analysis.rules import default_rule
from calibrate.base.manifest import build_manifest
from calibrate.base.params import checked
from calibrate.base.results import Result
from calibrate.campaign import Campaign
from calibrate.stats import N_BOOT
from calibrate.stats.annotators import agreement_with_interval, krippendorff_alpha
from calibrate.stats.intervals import wilson_interval

__all__ = ["REPEAT_PREFIX", "repeatability"]

REPEAT_PREFIX = "repeat-"


def _repeat_matrix(campaign: Campaign, metric: str, rater: str) -> tuple[np.ndarray, list[str], list[str]]:
    rows = campaign.ratings[
        (campaign.ratings["metric"] == metric)
        & (campaign.ratings["rater"] == rater)
        & campaign.ratings["run_id"].str.startswith(REPEAT_PREFIX)
        & campaign.ratings["value"].notna()
    ]
    table = rows.pivot_table(index="case_id", columns="run_id", values="value", aggfunc="last")
    return table.to_numpy(float), [str(c) for c in table.index], [str(r) for r in table.columns]


def _one(campaign: Campaign, metric: str, rater: str, *, n_boot: int, seed: int, confidence: float) -> dict[str, Any]:
    spec = campaign.metrics[metric]
    facts = campaign.rater(rater)
    matrix, _, runs = _repeat_matrix(campaign, metric, rater)
    repeated = np.sum(~np.isnan(matrix), axis=1) >= 2
    matrix = matrix[repeated]
    out: dict[str, Any] = {"metric": metric, "judge": rater, "repeats": runs, "n_cases": int(matrix.shape[0])}
    if matrix.shape[0] < 2:
        reason = f"{matrix.shape[0]} case(s) scored in two repeats or more (need 2)"
        return out | {"alpha": undefined(reason), "flip_share": undefined(reason), "mean_absolute_difference": None}
    level = spec.alpha_level if facts.on_metric_scale else "interval"
    alpha = agreement_with_interval(
        lambda m, w: krippendorff_alpha(m, level, w), matrix, n_boot=n_boot, seed=seed, confidence=confidence
    )
    if not np.isfinite(alpha.estimate):
        out["alpha"] = undefined("undefined: every repeat gives every case the same score")
    elif alpha.interval is None:
        out["alpha"] = estimate(alpha.estimate, None, None, "none", "no resamples (n_boot = 0)")
    else:
        out["alpha"] = from_interval(alpha.estimate, alpha.interval)
    out["alpha"]["level"] = level
    pairs = [np.abs(row[~np.isnan(row)][:, None] - row[~np.isnan(row)][None, :]) for row in matrix]
    out["mean_absolute_difference"] = float(np.mean([p[np.triu_indices(p.shape[0], 1)].mean() for p in pairs]))
    # the verdict at the threshold the metric's rule gives the first repeat
    first = f"{rater}@{runs[0]}"
    rule = default_rule(spec)
    values = matrix[~np.isnan(matrix)]
    # on the metric's scale as the statistics read it: every score on its levels, or declared on a continuous one
    on_scale = facts.higher_is_better and (
        bool(spec.levels is not None and spec.in_scale(values).all())
        or (spec.scale == "continuous" and facts.on_metric_scale)
    )
    if rule.kind in ("fixed", "default"):  # no labels needed
        threshold = rule.fixed_threshold(on_scale=on_scale, zero_to_one=bool(values.min() >= 0 and values.max() <= 1))
    else:
        recs = recommend_thresholds(campaign, metric=metric, rule=rule, judges=[first], n_boot=0).recommendations
        threshold = recs[0].threshold if recs else None
    out["threshold"] = threshold
    if threshold is None:
        out["flip_share"] = undefined(f"no threshold for {first} under the metric's rule ({rule.describe()})")
        return out
    passes = np.where(
        np.isnan(matrix), np.nan, (matrix >= threshold) if facts.higher_is_better else (matrix <= threshold)
    )
    flips = np.array([np.unique(row[~np.isnan(row)]).size > 1 for row in passes])
    low, high = wilson_interval(flips.sum(), flips.size, confidence=confidence)
    out["flip_share"] = estimate(float(flips.mean()), float(low), float(high), "Wilson score") | {
        "k": int(flips.sum()),
        "n": int(flips.size),
    }
    return out


def _other_runs(ratings, judges: list[str] | None) -> str:
    """What runs the judges do have, when none is a repeat: named otherwise, they are not taken for repeats."""
    rows = ratings[
        (ratings["rater_kind"] == "judge")
        & (ratings["run_id"] != "")
        & ~ratings["run_id"].str.startswith(REPEAT_PREFIX)
    ]
    if judges is not None:
        rows = rows[rows["rater"].isin(judges)]
    runs = sorted({f"{r}@{run}" for r, run in zip(rows["rater"], rows["run_id"])})
    if not runs:
        return ""
    return (
        f"; the runs found, {', '.join(runs[:10])}{' ...' if len(runs) > 10 else ''}, are not named repeat-N, "
        "so they are not taken for repeats of one setting (compare two runs with calibrate audit)"
    )


@checked("confidence", "n_boot", "seed")
def repeatability(
    campaign: Campaign,
    *,
    metrics: list[str] | None = None,
    judges: list[str] | None = None,
    n_boot: int = N_BOOT,
    seed: int = 0,
    confidence: float = 0.95,
) -> Result:
    """Test-retest figures of every judge scored with repeats (or of ``judges``) on every metric.

    Parameters
    ----------
    campaign : Campaign
    metrics, judges : list of str, optional
        Only these metrics / judges (raters scored with runs ``repeat-N``).
    n_boot, seed : int
        Bootstrap resamples of cases, and their seed.
    confidence : float
        Two-sided level of the intervals.

    Returns
    -------
    Result
        The ``calibrate repeatability --json`` document: per metric and judge its test-retest
        ``alpha``, ``mean_absolute_difference`` and ``flip_share`` at its threshold.

    Examples
    --------
    >>> import pandas as pd
    >>> r = pd.DataFrame({"case_id": ["a", "b", "c", "a", "b", "c"], "metric": "f", "rater": "j",
    ...                   "rater_kind": "judge", "value": [0.9, 0.2, 0.6, 0.8, 0.3, 0.4],
    ...                   "run_id": ["repeat-0"] * 3 + ["repeat-1"] * 3})
    >>> from calibrate.campaign import campaign_from_frames
    >>> c = campaign_from_frames({"name": "n", "metrics": {"f": {"scale": "binary"}}}, r)
    >>> doc = repeatability(c, n_boot=0)["judges"][0]
    >>> doc["n_cases"], round(doc["mean_absolute_difference"], 3), doc["flip_share"]["estimate"]
    (3, 0.133, 0.3333333333333333)
    """
    ratings = campaign.ratings
    found = ratings[(ratings["rater_kind"] == "judge") & ratings["run_id"].str.startswith(REPEAT_PREFIX)]
    pairs = sorted(
        {
            (m, r)
            for m, r in zip(found["metric"], found["rater"])
            if (metrics is None or m in metrics) and (judges is None or r in judges)
        }
    )
    if judges:
        missing = sorted(set(judges) - {r for _, r in pairs})
        if missing:
            raise ValueError(
                f"no repeats of judge(s) {', '.join(missing)} (score them with calibrate judge "
                "--repeats K)" + _other_runs(ratings, missing)
            )
    if not pairs:
        raise ValueError(
            "no judge was scored with repeats (runs named repeat-0, repeat-1, ...: calibrate judge "
            "--repeats K writes them)" + _other_runs(ratings, None)
        )
    results = [_one(campaign, m, r, n_boot=n_boot, seed=seed, confidence=confidence) for m, r in pairs]
    return Result(
        {
            "campaign": campaign.name,
            "judges": results,
            "manifest": build_manifest(
                campaign,
                command="repeatability",
                n_boot=n_boot,
                seed=seed,
                confidence=confidence,
                metrics=metrics,
                judges=judges,
            ),
        }
    )
