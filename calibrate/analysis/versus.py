"""Judge versus judge: how far a metric's judges agree with each other, beside how far each agrees
with the humans.

Per metric, Spearman's rho between every pair of judges on the cases both scored (labelled or not),
with a Fisher z interval (Bonett-Wright standard error), and each judge's rho with the human
reference. Where two judges disagree, the cases they rank furthest apart (the largest gap between
their percentile ranks) are listed with the human label where there is one: judges of two families,
or DeepEval and RAGAS, that disagree on many cases are a sign the metric needs refining on this data.
"""

from __future__ import annotations

from itertools import combinations

import numpy as np

from calibrate.base.params import checked
from calibrate.base.results import Result
from calibrate.campaign import Campaign
from calibrate.campaign.reference import human_reference, pair, select_judges
from calibrate.stats.intervals import spearman_with_interval
from calibrate.stats.strata import percentile_ranks

__all__ = ["compare_judges", "judge_matrix"]

TEXT_CHARS = 200


def judge_matrix(
    campaign: Campaign, *, metric: str, judges: list[str] | None = None, n_listed: int = 5, confidence: float = 0.95
) -> Result:
    """Every pair of ``metric``'s judges (or of ``judges``), and each judge against the humans.

    Parameters
    ----------
    campaign : Campaign
    metric : str
    judges : list of str, optional
        Only these judges (names, or ``rater@run_id``).
    n_listed : int
        Cases listed per pair: those the two rank furthest apart.
    confidence : float
        Two-sided level of the Fisher z intervals.

    Returns
    -------
    Result
        ``{"metric", "judges", "with_humans", "pairs", "least_agreeing"}``; ``.to_frame()`` gives
        Spearman's rho of each judge with the humans and of each pair (judge ``"A vs B"``).

    Examples
    --------
    >>> import calibrate
    >>> c = calibrate.load_campaign(calibrate.demo_campaign_path())
    >>> doc = judge_matrix(c, metric="relevance", judges=["Olz-gpt4o", "RMITIR-llama70B"])
    >>> pair = doc["pairs"][0]
    >>> pair["a"], pair["b"], round(pair["spearman"]["estimate"], 3), len(pair["most_apart"])
    ('Olz-gpt4o', 'RMITIR-llama70B', 0.787, 5)
    """

    campaign.metric_names([metric])
    found = select_judges(campaign, metric, judges or None, strict=True)
    if len(found) < 2:
        raise ValueError(f"metric {metric}: {len(found)} judge(s); a comparison needs two or more")
    ref = human_reference(campaign, metric)
    cases = campaign.cases or {}
    humans = []
    for s in found:
        joined = pair(campaign, metric, s, reference=ref)
        humans.append(
            {
                "judge": s.name,
                "family": s.rater.family,
                "spearman": spearman_with_interval(joined.human, joined.oriented, confidence=confidence),
            }
        )
    pairs = []
    for a, b in combinations(found, 2):
        common, i_a, i_b = np.intersect1d(a.case_ids, b.case_ids, return_indices=True)
        x, y = a.sign * a.values[i_a], b.sign * b.values[i_b]
        entry = {
            "a": a.name,
            "b": b.name,
            "families": [a.rater.family, b.rater.family],
            "spearman": spearman_with_interval(x, y, confidence=confidence),
            "most_apart": [],
        }
        if common.size >= 2:
            gap = percentile_ranks(x) - percentile_ranks(y)
            for i in np.argsort(-np.abs(gap), kind="stable")[:n_listed]:
                case_id = str(common[i])
                at = np.searchsorted(ref.case_ids, case_id)
                human = float(ref.values[at]) if at < ref.case_ids.size and ref.case_ids[at] == case_id else None
                text = str((cases.get(case_id) or {}).get("input") or "")
                entry["most_apart"].append(
                    {
                        "case_id": case_id,
                        "score_a": float(a.values[i_a[i]]),
                        "score_b": float(b.values[i_b[i]]),
                        "rank_gap": float(gap[i]),
                        "human": human,
                        "input": text[:TEXT_CHARS],
                    }
                )
        pairs.append(entry)
    order = sorted(
        range(len(pairs)),
        key=lambda k: (pairs[k]["spearman"].get("estimate") is None, pairs[k]["spearman"].get("estimate") or 0.0),
    )
    return Result(
        {
            "metric": metric,
            "judges": [s.name for s in found],
            "with_humans": humans,
            "pairs": pairs,
            "least_agreeing": [f"{pairs[k]['a']} vs {pairs[k]['b']}" for k in order[:3]],
        }
    )


@checked("confidence")
def compare_judges(
    campaign: Campaign,
    *,
    metrics: list[str] | None = None,
    judges: list[str] | None = None,
    n_listed: int = 5,
    confidence: float = 0.95,
) -> Result:
    """The ``calibrate compare`` command: :func:`judge_matrix` for every metric (or ``metrics``).

    Parameters
    ----------
    campaign : Campaign
    metrics : list of str, optional
        Only these metrics.
    judges, n_listed, confidence
        As for :func:`judge_matrix`.

    Returns
    -------
    Result
        The ``calibrate compare --json`` document, ``{"campaign", "metrics": [judge_matrix, ...]}``.

    Examples
    --------
    >>> import calibrate
    >>> c = calibrate.load_campaign(calibrate.demo_campaign_path())
    >>> table = calibrate.compare_judges(c, judges=["Olz-gpt4o", "RMITIR-llama70B"]).to_frame()
    >>> table[["judge", "estimate"]].round(3).values.tolist()[-1]
    ['Olz-gpt4o vs RMITIR-llama70B', 0.787]
    """
    return Result(
        {
            "campaign": campaign.name,
            "metrics": [
                judge_matrix(campaign, metric=m, judges=judges, n_listed=n_listed, confidence=confidence)
                for m in campaign.metric_names(metrics)
            ],
        }
    )
