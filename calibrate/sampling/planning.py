"""How many human labels a target confidence-interval width needs, and how many a judge's scores save.

Three statistics are planned, each at a judge's pass threshold where it needs one:

- the human pass rate ``p``: a uniform sample needs the fewest labels ``n`` whose Wilson interval
  around ``p`` (the interval calibrate reports for rates) is no wider than asked — about
  ``z^2 p (1 - p) / h^2`` for a half-width ``h``, and still right at ``p = 0``, where that formula
  says nothing is needed (0 of 20 has the interval [0, 0.161]);
- the judge's false-pass rate ``R`` (judge pass among human fails): the fewest human *fails* ``m``
  whose Wilson interval around ``R`` is that narrow (the rate is computed on them), and ``m / (1 - p)``
  labels of a uniform sample to find them;
- Cohen's kappa of the pass/fail verdicts: ``n = z^2 n_0 Var_0 / h^2`` with the large-sample
  variance ``Var_0`` of kappa on the expected table of ``n_0`` cases (Fleiss, Cohen & Everitt 1969, from
  statsmodels).

A judge's scores save labels by stratifying on them (strata at the quantiles of the score, as the
``neyman`` sample design does): with stratum shares ``W_h`` and the spread ``S_h`` of a statistic's
linearised value inside each stratum, a proportional sample (or a uniform one post-stratified) needs
``z^2 sum W_h S_h^2 / h^2`` and a Neyman allocation ``z^2 (sum W_h S_h)^2 / h^2``: the share of the
variance the judge's score explains is saved. Kappa measures the judge itself, so its plan is uniform.

Values come from the campaign's labels (weighted by their sample designs) or from stated assumptions.
These are large-sample figures, and no plan goes below 50 labels (``MIN_PLANNED_LABELS``). A width
so narrow that some statistic would need more than ``MAX_PLANNED_LABELS`` labels is refused, naming
the labels it would take, rather than planned (no labelling effort reaches it, and the arithmetic of
such counts is no longer exact).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from calibrate.base.errors import NO_VALUE, ParameterText
from calibrate.base.params import checked
from calibrate.base.results import Result, records_frame
from calibrate.campaign import Campaign
from calibrate.campaign.reference import (
    HumanReference,
    JudgeScores,
    computed_once,
    human_reference,
    judge_scores,
    pair,
)
from calibrate.sampling.designs import chosen_judge, chosen_metric, recommended_threshold
from calibrate.stats.intervals import normal_quantile
from calibrate.stats.strata import score_edges, score_strata

__all__ = [
    "MAX_PLANNED_LABELS",
    "MIN_PLANNED_LABELS",
    "labels_for_false_pass_rate",
    "labels_for_kappa",
    "labels_for_rate",
    "missing_options",
    "plan_labels",
    "stratified_labels",
    "trials_for_rate",
]

#: No plan asks for fewer labels: large-sample formulas do not hold below, and calibrate calls every
#: figure on fewer than 50 labels untrustworthy (``calibrate.analysis.metric_warnings.MIN_TRUSTED_LABELS``).
MIN_PLANNED_LABELS = 50
#: No plan asks for more labels: a width needing more is refused (a billion labels is beyond any
#: labelling effort, and counts this large are no longer exact in floating point)
MAX_PLANNED_LABELS = 10**9


def _labels_for(variance_per_case: float, width: float, confidence: float) -> float:
    """``z^2 variance / (width / 2)^2``, in floating point: ``inf`` where it overflows, never an error."""
    with np.errstate(all="ignore"):
        return float(
            np.float64(normal_quantile(confidence)) ** 2 * np.float64(variance_per_case) / (np.float64(width) / 2) ** 2
        )


def _too_narrow(width: float, needed: float) -> ValueError:
    shown = (
        f"about {needed:,.0f}"
        if needed < 1e15
        else (f"about {needed:.2g}" if np.isfinite(needed) else "more than 1e308")
    )
    return ValueError(
        ParameterText(
            "{width}: an interval that narrow needs {_needed} labels, more than the {_most} calibrate plans "
            "for: ask for a wider interval",
            width=width,
            _needed=shown,
            _most=f"{MAX_PLANNED_LABELS:,}",
        )
    )


def _count(variance_per_case: float, width: float, confidence: float) -> int:
    """Labels for an interval of full ``width`` on a statistic of variance ``variance_per_case / n``, and
    never fewer than ``MIN_PLANNED_LABELS``; more than ``MAX_PLANNED_LABELS`` is a ``ValueError``."""
    needed = _labels_for(variance_per_case, width, confidence)
    if not needed <= MAX_PLANNED_LABELS:  # also inf, and nan
        raise _too_narrow(width, needed)
    return max(MIN_PLANNED_LABELS, int(np.ceil(needed)))


def trials_for_rate(rate: float, width: float, confidence: float = 0.95) -> int:
    """The fewest trials whose Wilson interval around ``rate`` is at most ``width`` wide (no floor):
    it holds at a rate of zero, where the normal approximation needs none.

    The Wilson interval's width falls as the trials grow, so the fewest is found by bisection, up to
    ``MAX_PLANNED_LABELS``; a width needing more is a ``ValueError`` (never a count that is not enough).

    Examples
    --------
    >>> trials_for_rate(0.0, 0.1), trials_for_rate(0.268, 0.06), trials_for_rate(0.662, 0.001)
    (35, 835, 3438195)
    >>> trials_for_rate(0.5, 1e-9)
    Traceback (most recent call last):
    ...
    ValueError: width=1e-09: an interval that narrow needs about 3.8e+18 labels, more than the 1,000,000,000 calibrate plans for: ask for a wider interval
    """
    from calibrate.stats.intervals import wilson_interval

    def wide_enough(n: int) -> bool:
        low, high = wilson_interval(rate * n, n, confidence=confidence)
        return bool(float(high) - float(low) <= width)

    if not wide_enough(MAX_PLANNED_LABELS):
        raise _too_narrow(width, _labels_for(max(rate * (1 - rate), 1 / MAX_PLANNED_LABELS), width, confidence))
    low, high = 0, MAX_PLANNED_LABELS  # wide_enough(high), and not wide_enough(low) (no trials: no interval)
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if wide_enough(middle) else (middle, high)
    return high


def labels_for_rate(rate: float, width: float, confidence: float = 0.95) -> int:
    """Labels a uniform sample needs for a ``width``-wide Wilson interval on a rate near ``rate``.

    Examples
    --------
    >>> labels_for_rate(0.268, 0.06)     # the human pass rate of the demo data, +-0.03
    835
    """
    return max(MIN_PLANNED_LABELS, trials_for_rate(rate, width, confidence))


def labels_for_false_pass_rate(false_pass_rate: float, pass_rate: float, width: float, confidence: float = 0.95) -> int:
    """Labels a uniform sample needs for a false-pass rate interval: the human fails it needs
    (:func:`trials_for_rate`), over their share ``1 - pass_rate``.

    Examples
    --------
    >>> labels_for_false_pass_rate(0.1, 0.5, 0.1), labels_for_false_pass_rate(0.0, 0.5, 0.1)
    (282, 70)
    """
    return max(MIN_PLANNED_LABELS, int(np.ceil(trials_for_rate(false_pass_rate, width, confidence) / (1 - pass_rate))))


def labels_for_kappa(table: np.ndarray, width: float, confidence: float = 0.95) -> int:
    """Labels for a ``width``-wide interval on Cohen's kappa of a 2 x 2 table of (human, judge) verdicts
    (proportions or counts), from its large-sample variance.

    Examples
    --------
    >>> labels_for_kappa(np.array([[0.5, 0.1], [0.1, 0.3]]), 0.2)
    265
    """
    from statsmodels.stats.inter_rater import cohens_kappa

    table = np.asarray(table, dtype=float)
    scaled = table / table.sum() * 1000.0
    variance = cohens_kappa(scaled).var_kappa * 1000.0
    return _count(float(variance), width, confidence)


def stratified_labels(
    shares: np.ndarray, spreads: np.ndarray, width: float, confidence: float = 0.95
) -> dict[str, int]:
    """Labels for a ``width``-wide interval under proportional and Neyman allocation over strata of
    population ``shares`` with per-stratum standard deviations ``spreads``.

    Examples
    --------
    >>> stratified_labels(np.array([0.5, 0.5]), np.array([0.1, 0.5]), 0.1)
    {'stratified': 200, 'neyman': 139}
    """
    shares, spreads = np.asarray(shares, float), np.asarray(spreads, float)
    return {
        "stratified": _count(float(np.sum(shares * spreads**2)), width, confidence),
        "neyman": _count(float(np.sum(shares * spreads) ** 2), width, confidence),
    }


def missing_options(
    campaign: Campaign, *, metric: str | None, judge: str | None, pass_rate: float | None
) -> ParameterText | None:
    """Everything a plan lacks, said at once (None when nothing is): a metric to choose among several, a
    judge among several on it, a pass rate to assume where no human labelled the metric yet.

    Examples
    --------
    >>> import pandas as pd
    >>> from calibrate.campaign import campaign_from_frames
    >>> c = campaign_from_frames({"name": "n", "metrics": {"f": {"scale": "binary"}, "r": {"scale": "binary"}}},
    ...                          pd.DataFrame({"case_id": ["a", "a", "a", "a"], "metric": ["f", "f", "r", "r"],
    ...                                        "rater": ["x", "y", "x", "y"], "rater_kind": "judge",
    ...                                        "value": [0.1, 0.2, 0.3, 0.4]}))
    >>> print(missing_options(c, metric=None, judge=None, pass_rate=None))
    the plan needs 3 choices: (1) a metric, with metric (f, r); (2) a judge, with judge (on f: x, y; on r: x, y); (3) the human pass rate to assume, with pass_rate: no human has labelled f, r yet
    """
    if metric is not None and metric not in campaign.metrics:
        return None  # chosen_metric says what the campaign declares
    candidates = [metric] if metric is not None else sorted(campaign.metrics)
    needed: list[str] = []
    if len(candidates) > 1:
        needed.append(
            ParameterText("a metric, with {metric} ({_names})", metric=NO_VALUE, _names=", ".join(candidates))
        )
    if judge is None:
        several = {m: [j.name for j in judge_scores(campaign, m)] for m in candidates}
        several = {m: names for m, names in several.items() if len(names) > 1}
        if several:
            on = (
                "; ".join(f"on {m}: {', '.join(names)}" for m, names in several.items())
                if len(candidates) > 1
                else ", ".join(next(iter(several.values())))
            )
            needed.append(ParameterText("a judge, with {judge} ({_on})", judge=NO_VALUE, _on=on))
    if pass_rate is None:
        unlabelled = [m for m in candidates if human_reference(campaign, m).case_ids.size == 0]
        if unlabelled:
            whose = (
                ", ".join(unlabelled)
                if len(unlabelled) == len(candidates)
                else f"{', '.join(unlabelled)} (if you choose {'it' if len(unlabelled) == 1 else 'one of them'})"
            )
            needed.append(
                ParameterText(
                    "the human pass rate to assume, with {pass_rate}: no human has labelled {_whose} yet",
                    pass_rate=NO_VALUE,
                    _whose=whose,
                )
            )
    if not needed:
        return None
    if len(needed) == 1:
        return ParameterText.join("", ["the plan needs ", needed[0]])
    numbered = [ParameterText.join("", [f"({i}) ", part]) for i, part in enumerate(needed, start=1)]
    return ParameterText.join("", [f"the plan needs {len(needed)} choices: ", ParameterText.join("; ", numbered)])


def _weighted_var(values: np.ndarray, weights: np.ndarray) -> float:
    mean = np.average(values, weights=weights)
    return float(np.average((values - mean) ** 2, weights=weights))


def _check_numbers(
    width: float, confidence: float, pass_rate: float | None, false_pass_rate: float | None, kappa: float | None
) -> None:
    if not 0 < width < 2:
        raise ValueError(
            ParameterText("{width}: expected the full width of the interval, between 0 and 2", width=width)
        )
    if not 0 < confidence < 1:
        raise ValueError(ParameterText("{confidence}: expected a level between 0 and 1", confidence=confidence))
    for name, value in (("pass_rate", pass_rate), ("false_pass_rate", false_pass_rate)):
        if value is not None and not 0 < value < 1:
            raise ValueError(ParameterText(f"{{{name}}}: expected a rate between 0 and 1", **{name: value}))
    if kappa is not None and not -1 < kappa < 1:
        raise ValueError(ParameterText("{kappa}: expected a value between -1 and 1", kappa=kappa))


@dataclass(frozen=True)
class _Labelled:
    """The labelled cases the judge scored, their design weights, and the judge's score strata."""

    passes: np.ndarray  # the human verdicts, as 0.0 and 1.0
    oriented: np.ndarray
    stratum: np.ndarray
    shares: np.ndarray  # each stratum's share of every case the judge scored
    weights: np.ndarray
    n: int


def _labelled(campaign: Campaign, metric: str, scores: JudgeScores, ref: HumanReference, n_strata: int) -> _Labelled:
    oriented = scores.sign * scores.values
    edges = score_edges(oriented, n_strata)
    stratum_all = score_strata(oriented, edges)
    shares = np.bincount(stratum_all, minlength=len(edges) + 1) / oriented.size
    joined = pair(campaign, metric, scores, reference=ref)
    weights = joined.weights
    return _Labelled(
        passes=joined.passes.astype(float),
        oriented=joined.oriented,
        stratum=stratum_all[np.searchsorted(scores.case_ids, joined.case_ids)],
        shares=shares,
        weights=np.ones(joined.n) if weights is None else weights,
        n=joined.n,
    )


@dataclass(frozen=True)
class _Target:
    """What every row of the plan shares: the interval wanted, the labels in hand and their strata."""

    width: float
    confidence: float
    labelled: int
    data: _Labelled | None

    def row(
        self, statistic: str, value: float | None, source: str, labels: dict[str, int | None], note: str = ""
    ) -> dict[str, Any]:
        best = min((v for v in labels.values() if v is not None), default=None)
        designs = [v for k, v in labels.items() if k != "random" and v is not None]
        return {
            "statistic": statistic,
            "value": value,
            "source": source,
            "labels": labels,
            "labels_saved": labels["random"] - min(designs) if designs else None,
            "labelled": self.labelled,
            "more_needed": None if best is None else max(0, best - self.labelled),
            **({"note": note} if note else {}),
        }

    def spreads(self, u: np.ndarray) -> np.ndarray | None:
        """The weighted standard deviation of ``u`` in each score stratum (None: a stratum lacks labels)."""
        data = self.data
        assert data is not None  # only labelled data gives a ``u``
        found = []
        for h in range(data.shares.size):
            at = data.stratum == h
            if data.shares[h] > 0 and at.sum() < 2:
                return None
            found.append(np.sqrt(_weighted_var(u[at], data.weights[at])) if at.any() else 0.0)
        return np.array(found)

    def by_design(self, rate_labels: int, u: np.ndarray | None, scale: float) -> dict[str, int | None]:
        labels: dict[str, int | None] = {"random": rate_labels, "stratified": None, "neyman": None}
        s = self.spreads(u) if u is not None else None
        if s is not None:
            assert self.data is not None
            labels.update(stratified_labels(self.data.shares, s / scale, self.width, self.confidence))
        return labels


def _pass_rate(ref: HumanReference, data: _Labelled | None, pass_rate: float | None, metric: str) -> float:
    """The human pass rate planned for: stated, else the campaign's."""
    p_data = (
        float(np.average(data.passes, weights=data.weights))
        if data
        else (float(ref.passes.mean()) if ref.case_ids.size else None)
    )
    p = pass_rate if pass_rate is not None else p_data
    if p is None:
        raise ValueError(
            ParameterText(
                "metric {_metric}: no human labels yet; state the expected pass rate ({pass_rate})",
                _metric=metric,
                pass_rate=NO_VALUE,
            )
        )
    return p


def _false_pass_row(
    plan: _Target,
    judged: np.ndarray | None,
    p: float,
    threshold: float | None,
    false_pass_rate: float | None,
    pass_rate: float | None,
) -> dict[str, Any] | None:
    """The judge's false-pass rate at its threshold (None: nothing to read it from, and none stated)."""
    data = plan.data
    fails = 1.0 - data.passes if data else None
    r_data = (
        float(np.average(judged[fails > 0], weights=data.weights[fails > 0]))
        if judged is not None and data is not None and fails is not None and fails.any()
        else None
    )
    r = false_pass_rate if false_pass_rate is not None else r_data
    if r is None:
        return None
    u = None
    if judged is not None and fails is not None and false_pass_rate is None and pass_rate is None:
        u = fails * (judged - r)  # the linearised false-pass rate, times the share of fails
    fails_needed = trials_for_rate(r, plan.width, plan.confidence)
    fails_now = int(round(float(fails.sum()))) if fails is not None else 0
    row = plan.row(
        "false-pass rate",
        r,
        "assumed" if false_pass_rate is not None else "campaign",
        plan.by_design(labels_for_false_pass_rate(r, p, plan.width, plan.confidence), u, 1 - p),
        (f"at threshold {threshold:g}; " if threshold is not None else "")
        + f"computed on the human fails: {fails_needed} needed, {fails_now} labelled",
    )
    row.update(
        human_fails_needed=fails_needed,
        human_fails=fails_now,
        more_human_fails_needed=max(0, fails_needed - fails_now),
    )
    return row


def _kappa_row(
    plan: _Target, judged: np.ndarray | None, p: float, threshold: float | None, kappa: float | None
) -> dict[str, Any] | None:
    """The judge's pass/fail kappa, stated or the campaign's (None: neither)."""
    if kappa is not None:  # a judge passing as often as the humans do: kappa moves p(1 - p) onto the diagonal
        agree = kappa * p * (1 - p)
        table = np.array([[(1 - p) ** 2 + agree, p * (1 - p) - agree], [p * (1 - p) - agree, p * p + agree]])
        return plan.row(
            "pass/fail kappa",
            kappa,
            "assumed",
            {"random": labels_for_kappa(table, plan.width, plan.confidence), "stratified": None, "neyman": None},
            "a judge passing as often as the humans",
        )
    if judged is None or plan.data is None:
        return None
    w, fails = plan.data.weights, 1.0 - plan.data.passes
    table = np.array(
        [
            [np.sum(w * fails * (1 - judged)), np.sum(w * fails * judged)],
            [np.sum(w * (1 - fails) * (1 - judged)), np.sum(w * (1 - fails) * judged)],
        ]
    )
    from statsmodels.stats.inter_rater import cohens_kappa

    return plan.row(
        "pass/fail kappa",
        float(cohens_kappa(table).kappa),
        "campaign",
        {"random": labels_for_kappa(table, plan.width, plan.confidence), "stratified": None, "neyman": None},
        f"at threshold {threshold:g}; kappa measures the judge itself: its scores do not stratify it",
    )


@computed_once()
@checked("confidence")
def plan_labels(
    campaign: Campaign,
    *,
    metric: str | None = None,
    judge: str | None = None,
    width: float = 0.1,
    confidence: float = 0.95,
    n_strata: int = 5,
    threshold: float | None = None,
    pass_rate: float | None = None,
    false_pass_rate: float | None = None,
    kappa: float | None = None,
) -> Result:
    """Labels needed for a ``width``-wide interval on the human pass rate, a judge's false-pass rate and
    its pass/fail kappa, per design; see the module docstring.

    Parameters
    ----------
    campaign : Campaign
    metric, judge : str, optional
        Needed when the campaign has a choice. Without judge scores, only stated assumptions plan.
    width : float
        The full width of the interval wanted (``0.1`` is +-0.05).
    confidence : float
    n_strata : int
        Strata of the judge's score for the stratified and Neyman designs.
    threshold : float, optional
        The judge's pass threshold (default: its recommended one under the metric's rule).
    pass_rate, false_pass_rate, kappa : float, optional
        Stated assumptions, in place of the campaign's figures.

    Returns
    -------
    Result
        The ``calibrate plan --json`` document; ``.to_frame()`` gives one row per statistic with the
        labels each design needs.

    Examples
    --------
    >>> import calibrate
    >>> c = calibrate.load_campaign(calibrate.demo_campaign_path())
    >>> doc = plan_labels(c, judge="Olz-gpt4o", width=0.06)
    >>> {d: doc["statistics"][0]["labels"][d] for d in ("random", "stratified", "neyman")}
    {'random': 835, 'stratified': 665, 'neyman': 625}
    """
    _check_numbers(width, confidence, pass_rate, false_pass_rate, kappa)
    needed = missing_options(campaign, metric=metric, judge=judge, pass_rate=pass_rate)
    if needed is not None:  # every missing choice at once, not one a run
        raise ValueError(needed)
    metric = chosen_metric(campaign, metric)
    has_judges = bool(((campaign.ratings["metric"] == metric) & (campaign.ratings["rater_kind"] == "judge")).any())
    scores = chosen_judge(campaign, metric, judge)[1] if has_judges else None
    ref = human_reference(campaign, metric)
    out: dict[str, Any] = {
        "metric": metric,
        "judge": scores.name if scores else None,
        "width": width,
        "confidence": confidence,
        "statistics": [],
        "notes": [],
    }
    data = None
    if scores is not None and ref.case_ids.size >= 2:
        data = _labelled(campaign, metric, scores, ref, n_strata)
        if threshold is None:
            try:
                threshold = recommended_threshold(campaign, metric, scores.name)
            except ValueError as exc:
                out["notes"].append(str(exc))
        out["threshold"] = threshold
        out["strata"] = data.shares.size
    plan = _Target(width, confidence, data.n if data else int(ref.case_ids.size), data)
    p = _pass_rate(ref, data, pass_rate, metric)
    out["statistics"].append(
        plan.row(
            "human pass rate",
            p,
            "assumed" if pass_rate is not None else "campaign",
            plan.by_design(
                labels_for_rate(p, width, confidence), data.passes if data and pass_rate is None else None, 1.0
            ),
        )
    )
    # the judge's false-pass rate at its threshold, and its pass/fail kappa
    judged = (data.oriented >= scores.sign * threshold) if data and scores and threshold is not None else None
    false_pass = _false_pass_row(plan, judged, p, threshold, false_pass_rate, pass_rate)
    if false_pass is None:
        out["notes"].append(
            "false-pass rate: no judge threshold and human fails to read it from; state it with --false-pass-rate"
        )
    else:
        out["statistics"].append(false_pass)
    agreement = _kappa_row(plan, judged, p, threshold, kappa)
    if agreement is None:
        out["notes"].append("kappa: no judge verdicts to read it from; state it with --kappa (and --pass-rate)")
    else:
        out["statistics"].append(agreement)
    return Result(out, records_frame("statistics"))
