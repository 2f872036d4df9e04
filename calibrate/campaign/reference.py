"""From the ratings table to the two sides of every comparison: the human reference and each judge."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from calibrate.campaign import Campaign, Metric, Rater

__all__ = ["HumanReference", "JudgeScores", "human_reference", "judge_scores", "find_judge"]


@dataclass(frozen=True)
class HumanReference:
    """One reference label per case: the majority (binary), low median (ordinal) or mean (continuous).

    A binary tie or an even-sized ordinal panel resolves to the lower value, so a case passes only
    when a strict majority of its annotators pass it; ``n_ties`` counts such cases.
    """

    metric: Metric
    case_ids: np.ndarray
    values: np.ndarray
    n_raters: np.ndarray
    n_multiply_labelled: int
    n_ties: int
    n_failed_ratings: int
    raters: tuple[str, ...]
    n_adjudicated: int = 0

    @property
    def passes(self) -> np.ndarray:
        return self.values >= self.metric.human_pass


@dataclass(frozen=True)
class JudgeScores:
    """One judge's scores on a metric; ``oriented`` is the score with higher meaning better."""

    name: str
    rater: Rater
    run_id: str
    case_ids: np.ndarray
    values: np.ndarray
    errors: pd.DataFrame  # case_id, error of the failed ratings

    @property
    def sign(self) -> float:
        return 1.0 if self.rater.higher_is_better else -1.0

    @property
    def oriented(self) -> np.ndarray:
        return self.sign * self.values


def human_reference(campaign: Campaign, metric: str) -> HumanReference:
    """The human reference of ``metric``, one value per case, sorted by case id.

    Examples
    --------
    >>> import pandas as pd
    >>> from calibrate.campaign import Campaign
    >>> r = pd.DataFrame({"case_id": ["a", "a", "b"], "metric": "f", "rater": ["x", "y", "x"],
    ...                   "rater_kind": "human", "value": [1, 0, 1]})
    >>> ref = human_reference(Campaign.from_frames({"name": "n", "metrics": {"f": {"scale": "binary"}}}, r), "f")
    >>> ref.values.tolist(), ref.n_ties
    ([0.0, 1.0], 1)
    """
    spec = campaign.metrics[metric]
    rows = campaign.ratings[(campaign.ratings["metric"] == metric) & (campaign.ratings["rater_kind"] == "human")]
    failed = int(rows["value"].isna().sum())
    rows = rows[rows["value"].notna()]
    # sort by case, then value: each case's labels are one contiguous run
    ordered = rows.sort_values(["case_id", "value"], kind="stable")
    case_ids, starts, counts = np.unique(ordered["case_id"].to_numpy(dtype=str), return_index=True,
                                         return_counts=True)
    labels = ordered["value"].to_numpy(float)
    if spec.scale == "continuous":
        values = np.add.reduceat(labels, starts) / counts if labels.size else labels
        ties = 0
    else:
        # the low median; for 0/1 labels it is the majority, a tie resolving to 0
        values = labels[starts + (counts - 1) // 2]
        even = counts % 2 == 0
        ties = int(np.sum(even & (labels[starts + counts // 2 - 1] != labels[np.minimum(starts + counts // 2,
                                                                                          labels.size - 1)])))
    # an adjudicator's decision replaces the annotators' majority where they disagreed
    decided = campaign.adjudications[campaign.adjudications["metric"] == metric]
    position = {case_id: i for i, case_id in enumerate(case_ids)}
    adjudicated = 0
    if len(decided):
        values = values.copy()
        for case_id, value in zip(decided["case_id"].astype(str), decided["value"].astype(float)):
            if case_id in position:
                values[position[case_id]] = value
                adjudicated += 1
    return HumanReference(metric=spec, case_ids=case_ids, values=values, n_raters=counts,
                          n_multiply_labelled=int((counts > 1).sum()), n_ties=ties,
                          n_failed_ratings=failed, raters=tuple(sorted(rows["rater"].unique())),
                          n_adjudicated=adjudicated)


def judge_scores(campaign: Campaign, metric: str) -> list[JudgeScores]:
    """Every judge's scores on ``metric``; a judge with several ``run_id`` values gives one per run,
    named ``rater@run_id``."""
    rows = campaign.ratings[(campaign.ratings["metric"] == metric) & (campaign.ratings["rater_kind"] == "judge")]
    judges = []
    for rater, by_rater in rows.groupby("rater", sort=True):
        runs = sorted(by_rater["run_id"].unique())
        for run in runs:
            part = by_rater[by_rater["run_id"] == run].sort_values("case_id")
            ok = part["value"].notna()
            judges.append(JudgeScores(
                name=rater if len(runs) == 1 else f"{rater}@{run}", rater=campaign.rater(rater), run_id=run,
                case_ids=part.loc[ok, "case_id"].to_numpy(dtype=str), values=part.loc[ok, "value"].to_numpy(float),
                errors=part.loc[~ok, ["case_id", "error"]].reset_index(drop=True)))
    return judges


def find_judge(campaign: Campaign, metric: str, name: str) -> JudgeScores:
    """A judge of ``metric`` by name (``rater`` or ``rater@run_id``; a rater with one run)."""
    judges = judge_scores(campaign, metric)
    found = [j for j in judges if j.name == name] or [j for j in judges if j.rater.name == name]
    if len(found) == 1:
        return found[0]
    if found:
        raise ValueError(f"judge {name} has several runs on {metric}: name one as "
                         + ", ".join(j.name for j in found))
    raise ValueError(f"judge {name} did not rate {metric}; its judges are: "
                     + (", ".join(j.name for j in judges) or "none"))
