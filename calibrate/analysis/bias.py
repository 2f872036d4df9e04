"""Bias probes from the data: where a judge departs from the humans in a systematic way.

On the labelled cases, a judge's *excess* on a case is its percentile rank of the case minus the
humans' percentile rank (both ranks among the labelled cases the judge scored, so the scales need not
match): positive where the judge places a case higher than the humans do. Per judge:

- **verbosity**: the rank correlation between the answer's length (words of ``actual_output``) and the
  excess (Fisher interval) — positive when the judge favours long answers more than humans do — and
  agreement with humans per length tertile;
- **self-preference**: the mean excess on cases whose ``metadata.generator_family`` is the judge's own
  family, minus that on the other cases (Welch interval) — positive when the judge favours its family;
- **slices**: agreement and mean excess per value of a metadata key.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import stats

from calibrate.base.params import checked
from calibrate.base.results import Result
from calibrate.campaign import Campaign
from calibrate.campaign.metadata import generator_family, metadata_value, require_cases
from calibrate.campaign.reference import human_reference, pair, select_judges
from calibrate.stats.intervals import spearman_with_interval

__all__ = ["bias_probes", "excess"]

MIN_GROUP = 5


def excess(human: np.ndarray, judge: np.ndarray) -> np.ndarray:
    """The judge's percentile rank of each case minus the humans' (midranks for ties).

    Examples
    --------
    >>> excess(np.array([0, 1, 1, 0]), np.array([0.9, 0.8, 0.7, 0.1])).round(2).tolist()
    [0.62, -0.12, -0.38, -0.12]
    """
    n = human.size
    return (stats.rankdata(judge) - stats.rankdata(human)) / n


def _group(human: np.ndarray, judge: np.ndarray, ex: np.ndarray, mask: np.ndarray, confidence: float) -> dict:
    return {
        "n": int(mask.sum()),
        "spearman": spearman_with_interval(human[mask], judge[mask], confidence=confidence),
        "mean_excess": float(ex[mask].mean()) if mask.any() else None,
    }


def _welch(a: np.ndarray, b: np.ndarray, confidence: float) -> dict[str, Any]:
    if a.size < MIN_GROUP or b.size < MIN_GROUP:
        return {"estimate": None, "reason": f"{a.size} and {b.size} cases: each group needs {MIN_GROUP}"}
    test = stats.ttest_ind(a, b, equal_var=False)
    ci = test.confidence_interval(confidence)
    return {
        "estimate": float(a.mean() - b.mean()),
        "ci_low": float(ci.low),
        "ci_high": float(ci.high),
        "ci_method": "Welch t",
        "p_value": float(test.pvalue),
    }


@checked("confidence")
def bias_probes(
    campaign: Campaign, *, metric: str, judges: list[str] | None = None, by: str | None = None, confidence: float = 0.95
) -> Result:
    """Verbosity, self-preference and slice probes of ``metric``'s judges; see the module docstring.

    Parameters
    ----------
    campaign : Campaign
    metric : str
    judges : list of str, optional
        Only these judges.
    by : str, optional
        A metadata key of the cases: Spearman's rho per value of it.
    confidence : float
        Two-sided level of the intervals.

    Returns
    -------
    Result
        The ``calibrate bias --json`` document: per judge its ``verbosity``, ``self_preference`` and
        ``slices``; ``.to_frame()`` gives each figure with its interval.

    Examples
    --------
    >>> import calibrate
    >>> c = calibrate.load_campaign(calibrate.demo_campaign_path())
    >>> doc = bias_probes(c, metric="relevance", judges=["Olz-gpt4o"], by="question_type")
    >>> doc["judges"][0]["verbosity"]["reason"][:32], len(doc["judges"][0]["slices"]) > 1
    ('the cases have no actual_output ', True)
    """

    campaign.metric_names([metric])
    require_cases(campaign, by)
    found = select_judges(campaign, metric, judges or None)
    if judges and not found:
        raise ValueError(f"none of {', '.join(judges)} rated {metric}")
    ref = human_reference(campaign, metric)
    cases = campaign.cases or {}
    out = []
    for s in found:
        joined = pair(campaign, metric, s, reference=ref)
        ids, human, judge = joined.case_ids, joined.human, joined.oriented
        entry: dict[str, Any] = {"judge": s.name, "family": s.rater.family, "n": int(ids.size)}
        if ids.size < 2 * MIN_GROUP:
            entry["reason"] = f"{ids.size} labelled cases: the probes need {2 * MIN_GROUP}"
            out.append(entry)
            continue
        ex = excess(human, judge)
        texts = [(cases.get(c) or {}).get("actual_output") for c in ids.tolist()]
        if all(t is None for t in texts):
            entry["verbosity"] = {"estimate": None, "reason": "the cases have no actual_output to measure"}
        else:
            length = np.array([len(str(t).split()) if t is not None else np.nan for t in texts], dtype=float)
            known = ~np.isnan(length)
            entry["verbosity"] = spearman_with_interval(length[known], ex[known], confidence=confidence) | {
                "measure": "words of actual_output"
            }
            cuts = np.quantile(length[known], [1 / 3, 2 / 3])
            tertile = np.where(~known, -1, np.searchsorted(cuts, length, side="right"))
            entry["verbosity"]["tertiles"] = [
                {
                    "words_up_to": float(length[tertile == t].max()) if (tertile == t).any() else None,
                    **_group(human, judge, ex, tertile == t, confidence),
                }
                for t in range(3)
            ]
        families = np.array([generator_family(cases.get(c) or {}) for c in ids.tolist()])
        if not s.rater.family or not (families != "").any():
            entry["self_preference"] = {
                "estimate": None,
                "reason": "no family for the judge, or no metadata.generator_family on the cases",
            }
        else:
            own = families == s.rater.family.lower()
            entry["self_preference"] = _welch(ex[own], ex[~own & (families != "")], confidence) | {
                "own_family": _group(human, judge, ex, own, confidence),
                "other_families": _group(human, judge, ex, ~own & (families != ""), confidence),
            }
        if by is not None:
            values = np.array([metadata_value(campaign, c, by) for c in ids.tolist()])
            entry["slices"] = [
                {"key": by, "value": v, **_group(human, judge, ex, values == v, confidence)}
                for v in sorted(set(values.tolist()))
            ]
        out.append(entry)
    return Result({"campaign": campaign.name, "metric": metric, "judges": out})
