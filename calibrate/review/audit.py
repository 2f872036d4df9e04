"""Judge-upgrade audit: is a new judge at least as close to humans as the old one?

Both judges are compared on the same cases — those both rated and humans labelled — with the same
bootstrap resamples, so every change (new minus old) gets a *paired* interval: BCa, its acceleration
from a jackknife that leaves the same groups of cases out of both judges. Beside the changes: McNemar's
test on which judge's pass/fail verdict matches the human one (statsmodels), the verdict flips (toward
the human label and away from it, with the cases), how the score distribution moved, and the new
judge's thresholds that keep the old judge's false-pass rate (from the labels) or pass rate (from
every case both scored), so a gate set on the old judge can be re-mapped instead of silently broken.

The decision rests on one statistic (``spearman`` unless chosen) and a margin: *non-inferior* when the
whole interval of the change lies above ``-margin`` (below ``+margin`` for an error rate), *inferior*
when it lies wholly beyond the margin, *inconclusive* otherwise, or when fewer than
``MIN_TRUSTED_LABELS`` cases were labelled. The other statistics are watched too (``"others"``): one
whose interval — Bonferroni-adjusted for the number looked at — lies wholly on the bad side of no
change got *significantly worse*, and is named in the decision. An upgrade passes (exit code 0) only
when it is non-inferior; no other statistic got significantly worse by perhaps more than its margin
(the same share of its range; else *worse on other statistics*: Spearman within its margin while kappa
and alpha fell is no upgrade to pass silently); and the new judge's scores separate human passes from
fails better than chance (the gate's one-sided Mann-Whitney test,
:func:`calibrate.analysis.verdicts.chance_level`): a coin flip that replaces a coin flip is no worse,
and still no judge (*not better than chance*). A non-inferior upgrade whose other losses all lie within
their margins passes, and its reason lists them.

``old`` and ``new`` name a judge's current ratings, or a version of a judge the store keeps
(:mod:`calibrate.judges.versions`: ``JUDGE@MODEL``, ``JUDGE@RUN_ID``): after a judge's model is swapped
in ``campaign.toml`` and ``calibrate judge`` runs again, ``--old JUDGE@OLD_MODEL --new JUDGE`` audits
the swap on the cases both versions rated.

Every setting can decide both ways: a margin of 0 asks for an interval wholly on the good side of no
change; a margin as wide as the statistic's whole range (2 for a correlation or a kappa, 1 for a rate or
the AUC), which no change could lie beyond, is refused, naming ``margin`` and the values allowed.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import stats

from calibrate.analysis.figures import estimate, from_interval, undefined
from calibrate.analysis.judge_comparison import JudgeComparison
from calibrate.analysis.judge_figures import judge_result
from calibrate.analysis.metric_comparisons import ProgressCallback, bootstrap_runs
from calibrate.analysis.metric_warnings import MIN_TRUSTED_LABELS
from calibrate.analysis.rules import default_rule
from calibrate.analysis.verdicts import chance_level
from calibrate.base.errors import NO_VALUE, ParameterText, StoreError
from calibrate.base.estimates import Estimate
from calibrate.base.manifest import build_manifest
from calibrate.base.params import checked
from calibrate.campaign import Campaign
from calibrate.campaign.reference import JudgeScores, find_judge, human_reference, pair
from calibrate.campaign.weights import design_weights
from calibrate.judges.versions import Found, find_version, judge_versions
from calibrate.review.results import AuditResult, AuditSide
from calibrate.stats import N_BOOT
from calibrate.stats.bootstrap import bca_interval
from calibrate.stats.thresholds import NO_THRESHOLD, constraint_rule

__all__ = ["AUDIT_STATISTICS", "STATISTIC_SPANS", "audit_judges", "find_judge"]

#: The statistics an audit compares, and whether higher is better (+1) or worse (-1).
AUDIT_STATISTICS = {
    "spearman": 1,
    "kendall": 1,
    "auc": 1,
    "kappa": 1,
    "kappa_quadratic": 1,
    "alpha": 1,
    "pass_kappa": 1,
    "balanced_accuracy": 1,
    "false_pass_rate": -1,
    "false_fail_rate": -1,
}
#: How far each statistic can move from one judge to another (its range's width): a margin this wide
#: leaves no change beyond it, so the audit could never say inferior.
STATISTIC_SPANS = {
    "spearman": 2.0,
    "kendall": 2.0,
    "auc": 1.0,
    "kappa": 2.0,
    "kappa_quadratic": 2.0,
    "alpha": 2.0,
    "pass_kappa": 2.0,
    "balanced_accuracy": 1.0,
    "false_pass_rate": 1.0,
    "false_fail_rate": 1.0,
}
TEXT_CHARS = 300


def _verdicts(run: JudgeComparison) -> np.ndarray | None:
    index = run.rule_index
    if index == NO_THRESHOLD or index >= run.paired.m:
        return None
    return run.score >= run.paired.j_values[index]


def _text(case: dict | None) -> dict[str, str]:
    if not case:
        return {}
    return {
        k: (str(case[k])[:TEXT_CHARS] + ("…" if len(str(case[k])) > TEXT_CHARS else ""))
        for k in ("input", "actual_output")
        if case.get(k)
    }


def _check_settings(statistic: str, margin: float, confidence: float) -> None:
    """Refuse a statistic the audit does not compare, a margin no change could lie beyond, a level out of range."""
    if statistic not in AUDIT_STATISTICS:
        raise ValueError(
            ParameterText("{statistic}: one of {_known}", statistic=statistic, _known=", ".join(AUDIT_STATISTICS))
        )
    span = STATISTIC_SPANS[statistic]
    if isinstance(margin, bool) or not isinstance(margin, (int, float)) or not 0 <= margin < span:
        raise ValueError(
            ParameterText(
                "{margin}: expected a number from 0 to below {_span} (at {_span} or more no "
                "change in {_statistic} lies beyond the margin, so the audit could never say "
                "inferior)",
                margin=margin,
                _span=f"{span:g}",
                _statistic=statistic,
            )
        )
    if isinstance(confidence, bool) or not isinstance(confidence, (int, float)) or not 0 < confidence < 1:
        raise ValueError(
            ParameterText("{confidence}: expected a number between 0 and 1 (both excluded)", confidence=confidence)
        )


def _two_judges(campaign: Campaign, metric: str, old: str, new: str) -> list[Found]:
    """The ratings ``old`` and ``new`` name; both naming the same ratings is a ``ValueError``."""
    campaign.metric_names([metric])
    found = [find_version(campaign, metric, name) for name in (old, new)]
    if found[0].source == found[1].source:
        raise ValueError(
            ParameterText(
                "{old} and {new} both name {_name}: an audit compares two judges, or two versions of one{_earlier}",
                old=NO_VALUE,
                new=NO_VALUE,
                _name=_ratings_named(found[0]),
                _earlier=_earlier_text(campaign, metric, found[0]),
            )
        )
    return found


def _decision(
    changes: dict[str, Any],
    others: dict[str, Any],
    new_run: JudgeComparison,
    statistic: str,
    margin: float,
    n: int,
    seed: int,
    confidence: float,
) -> dict[str, Any]:
    """Non-inferior on ``statistic``, then no other statistic worse beyond its margin, then better than chance."""
    decision = _decide(changes.get(statistic), statistic, margin, n)
    if decision["exit_code"] == 0:
        decision = _elsewhere(decision, others)
    if decision["exit_code"] == 0:
        decision = _worth(decision, new_run, seed, confidence)
    return decision


@checked("confidence", "n_boot", "seed")
def audit_judges(
    campaign: Campaign,
    *,
    metric: str,
    old: str,
    new: str,
    margin: float = 0.05,
    statistic: str = "spearman",
    seed: int = 0,
    n_boot: int = N_BOOT,
    confidence: float = 0.95,
    n_listed: int = 20,
    progress: ProgressCallback | None = None,
) -> AuditResult:
    """Compare judge ``new`` with judge ``old`` against the humans on ``metric``; see the module docstring.

    Parameters
    ----------
    campaign : Campaign
    metric : str
    old, new : str
        Judge names: a rater, ``rater@run_id`` for one run of a rater scored several times (two
        versions of one judge stored in one campaign), or an earlier version of a judge the judge
        store keeps (``JUDGE@MODEL``, ``JUDGE@RUN_ID``: :func:`calibrate.judges.versions.find_version`).
    margin : float
        The largest loss in ``statistic`` that still counts as "at least as close to humans": from 0 to
        below the statistic's span (:data:`STATISTIC_SPANS`).
    statistic : str
        One of :data:`AUDIT_STATISTICS`.
    seed, n_boot, confidence
        Paired bootstrap: the same ``n_boot`` resamples of cases for both judges.
    n_listed : int
        Verdict flips listed per direction.

    Returns
    -------
    AuditResult
        ``{"decision": {"decision", "reason", "exit_code", "worse", ...}, "changes", "others", "mcnemar",
        "flips", "drift", "old", "new", "versions", "manifest", ...}``: ``others`` the statistics besides
        ``statistic`` that got significantly worse (``{"confidence", "looked_at", "worse": [{"statistic",
        "change", "ci_low", "ci_high", "margin", "status"}]}``), ``versions`` which version of its judge
        each side is, when the judge store ran it.

    Examples
    --------
    >>> import calibrate
    >>> c = calibrate.load_campaign(calibrate.demo_campaign_path())
    >>> doc = audit_judges(c, metric="relevance", old="NISTRetrieval-instruct0", new="Olz-gpt4o", n_boot=200)
    >>> doc.decision["decision"], round(doc.changes["spearman"].extra["change"], 3), doc.new.judge
    ('non-inferior', 0.106, 'Olz-gpt4o')
    """
    _check_settings(statistic, margin, confidence)
    found = _two_judges(campaign, metric, old, new)
    old_scores, new_scores = found[0].scores, found[1].scores
    spec = campaign.metrics[metric]
    rule = default_rule(spec)
    ref = human_reference(campaign, metric)
    universe = np.intersect1d(np.intersect1d(ref.case_ids, old_scores.case_ids), new_scores.case_ids)
    design = design_weights(campaign, universe)
    head: dict[str, Any] = {
        "campaign": campaign.name,
        "metric": metric,
        "statistic": statistic,
        "margin": margin,
        "n": int(universe.size),
        "weighted": design.weights is not None,
        "rule": rule.to_dict(),
    }
    if universe.size < 2:
        return AuditResult(
            **head,
            decision={
                "decision": "inconclusive",
                "exit_code": 1,
                "reason": f"{universe.size} labelled case(s) rated by both judges: nothing to compare",
            },
        )
    runs = [
        JudgeComparison(pair(campaign, metric, j, reference=ref, universe=universe, design=design), rule)
        for j in (old_scores, new_scores)
    ]
    bootstrap_runs(runs, design, n_boot=n_boot, seed=seed, progress=progress, label=f"{metric}: {old} vs {new}")
    results = [judge_result(r, confidence, seed, 0, full=False).to_dict() for r in runs]  # the entries, as written
    sides = [AuditSide.from_result(result, tuple(AUDIT_STATISTICS)) for result in results]
    changes, material = _changes(runs, results, seed, confidence)
    mcnemar, flips = _flips(runs, ref, campaign, n_listed)
    drift = _drift(runs, old_scores, new_scores)
    others = _others(changes, material, statistic, margin, confidence)  # adds each change's "adjusted"
    decision = _decision(changes, others, runs[1], statistic, margin, int(universe.size), seed, confidence)
    return AuditResult(
        **head,
        old=sides[0],
        new=sides[1],
        changes={k: Estimate.from_dict(v) for k, v in changes.items()},
        mcnemar=mcnemar,
        flips=flips,
        drift=drift,
        others=others,
        decision=decision,
        versions=_versions(campaign, found),
        manifest=build_manifest(
            campaign,
            command="audit",
            metric=metric,
            old=old_scores.name,
            new=new_scores.name,
            margin=margin,
            statistic=statistic,
            seed=seed,
            n_boot=n_boot,
            confidence=confidence,
        ),
    )


def _versions(campaign: Campaign, found: list[Found]) -> dict[str, Any]:
    """Which version of its judge each side is, when the judge store has run it: model, library, runs."""
    try:
        listed = judge_versions(campaign) if any(f.version is None for f in found) else {}
    except StoreError:  # the audit itself needs no store: its provenance is left out
        listed = {}
    out = {}
    for side, f in zip(("old", "new"), found):
        version = f.version or (
            next((v for v in listed.get(f.scores.rater.name, []) if v.current), None)
            if f.source[0] == "current"
            else None
        )
        if version is not None:
            out[side] = version.describe()
    return out


def _ratings_named(found: Found) -> str:
    if found.source[0] == "current":
        return f"the current ratings of {found.scores.name}"
    return f"the ratings of {found.scores.name} (model {found.scores.rater.model}, run {found.scores.run_id})"


def _earlier_text(campaign: Campaign, metric: str, found: Found) -> str:
    """For two names of the same ratings: the versions of the judge the store keeps, and the audit of
    its latest change."""
    judge = found.scores.rater.name
    listed = [v for v in judge_versions(campaign).get(judge, []) if v.metric == metric]
    named = found.version.version if found.version else next((v.version for v in listed if v.current), None)
    others = [v for v in reversed(listed) if v.version != named]
    if not others:
        return (
            f" (the store keeps no other version of {judge}: when its model or settings change in "
            "campaign.toml and calibrate judge runs again, the earlier ratings stay named JUDGE@MODEL or "
            "JUDGE@RUN_ID)"
        )
    kept = "; ".join(f"{v.name} (model {v.model}, last run {v.last_run})" for v in others)
    old, new = (others[0].name, judge) if found.source[0] == "current" else (found.scores.name, judge)
    return f"; the other versions of {judge} kept: {kept}. To compare: --old {old} --new {new}"


def _changes(
    runs: list[JudgeComparison], results: list[dict], seed: int, confidence: float
) -> tuple[dict[str, Any], dict[str, tuple]]:
    """Every statistic's change with its paired interval; and, for each that has one, what the interval
    was made from (the change, its bootstrap replicates and jackknife values), for :func:`_others`."""
    _old, _new = runs
    full = [r.statistics(r.paired.full) for r in runs]
    jack = [r.jackknife(seed, case_groups=True)[0] for r in runs]
    boot = [{k: np.concatenate(v) for k, v in r.replicates.items()} for r in runs]
    out: dict[str, Any] = {}
    material: dict[str, tuple] = {}
    for key, direction in AUDIT_STATISTICS.items():
        values = [res.get(key, {}).get("estimate") if isinstance(res.get(key), dict) else None for res in results]
        if key in ("false_pass_rate", "false_fail_rate"):  # at each judge's threshold (none: undefined)
            values = [
                float(f[key][0])
                if key in f and np.isfinite(f[key][0]) and res["pass_threshold"]["threshold"] is not None
                else None
                for f, res in zip(full, results)
            ]
            if None in values:
                out[key] = undefined(results[values.index(None)]["pass_kappa"].get("reason", "no threshold")) | {
                    "old": values[0],
                    "new": values[1],
                }
                continue
        if values[0] is None or values[1] is None or key not in boot[0] or key not in boot[1]:
            reason = next(
                (res[key]["reason"] for res in results if isinstance(res.get(key), dict) and res[key].get("reason")),
                "undefined for one of the judges",
            )
            out[key] = undefined(reason) | {"old": values[0], "new": values[1]}
            continue
        change = values[1] - values[0]
        engine_change = float(full[1][key][0] - full[0][key][0])
        interval = bca_interval(
            engine_change, boot[1][key] - boot[0][key], jack[1][key] - jack[0][key], confidence=confidence
        )
        figure = (
            from_interval(change, interval)
            if interval.low is not None
            else estimate(change, None, None, interval.method, interval.reason)
        )
        out[key] = figure | {
            "old": values[0],
            "new": values[1],
            "change": change,
            "better": "higher" if direction > 0 else "lower",
        }
        if interval.low is not None:
            material[key] = (engine_change, boot[1][key] - boot[0][key], jack[1][key] - jack[0][key])
    return out, material


def _others(
    changes: dict[str, Any], material: dict[str, tuple], statistic: str, margin: float, confidence: float
) -> dict[str, Any]:
    """The statistics besides the decision's that moved significantly against the new judge.

    Each is judged by its change's paired BCa interval at a Bonferroni-adjusted level (``1 - (1 -
    confidence) / k`` over the ``k`` statistics looked at, so that an upgrade that changed nothing is
    flagged on some statistic no more often than ``1 - confidence``). It got *worse* when the whole
    interval lies on the bad side of no change; its ``status`` then says where the interval lies from
    its margin — the same share of the statistic's range as ``margin`` is of the decision statistic's
    (:data:`STATISTIC_SPANS`: a margin of 0.05 on Spearman's rho is 0.025 on the AUC or a rate):
    ``"within the margin"``, ``"perhaps beyond the margin"`` (it straddles it) or ``"beyond the margin"``.
    """
    looked = [k for k in AUDIT_STATISTICS if k != statistic and k in material]
    out: dict[str, Any] = {"confidence": None, "looked_at": looked, "worse": []}
    if not looked:
        return out
    level = 1 - (1 - confidence) / len(looked)
    out["confidence"] = level
    share = margin / STATISTIC_SPANS[statistic]
    for key in looked:
        engine_change, replicates, jackknife = material[key]
        interval = bca_interval(engine_change, replicates, jackknife, confidence=level)
        if interval.low is None:
            continue
        # the interval's ends as gains (positive: the new judge closer to the humans)
        best, worst = (interval.high, interval.low) if AUDIT_STATISTICS[key] > 0 else (-interval.low, -interval.high)
        scaled = share * STATISTIC_SPANS[key]
        changes[key]["adjusted"] = {"confidence": level, "ci_low": interval.low, "ci_high": interval.high}
        if best >= 0:
            continue
        status = (
            "beyond the margin"
            if best < -scaled
            else "within the margin"
            if worst >= -scaled
            else "perhaps beyond the margin"
        )
        out["worse"].append(
            {
                "statistic": key,
                "change": changes[key]["change"],
                "ci_low": interval.low,
                "ci_high": interval.high,
                "margin": scaled,
                "status": status,
                "limit": f"{'-' if AUDIT_STATISTICS[key] > 0 else '+'}{scaled:g}" if scaled else "0",
            }
        )
    return out


def _shown(row: dict[str, Any]) -> str:
    return f"{row['statistic']} {row['change']:+.3f} [{row['ci_low']:+.3f}, {row['ci_high']:+.3f}]"


def _elsewhere(decision: dict[str, Any], others: dict[str, Any]) -> dict[str, Any]:
    """A non-inferior decision, told of the other statistics that moved significantly against the new
    judge (:func:`_others`): when one got worse by perhaps more than its margin, the decision is *worse
    on other statistics* (exit code 1), as an interval that straddles the margin leaves the decision
    statistic inconclusive; when each got worse within its margin, it stays non-inferior and says so."""
    worse = others["worse"]
    if not worse:
        return decision
    level = (
        f"{others['confidence']:.1%} intervals, adjusted for the {len(others['looked_at'])} statistics looked "
        "at; each margin the same share of the statistic's range"
    )
    listed = "; ".join(f"{_shown(r)}, {r['status']} {r['limit']}" for r in worse)
    if any(r["status"] != "within the margin" for r in worse):
        return decision | {
            "decision": "worse on other statistics",
            "exit_code": 1,
            "worse": worse,
            "reason": f"{decision['reason']}; but other statistics got significantly worse: {listed} ({level})",
        }
    return decision | {
        "worse": worse,
        "reason": f"{decision['reason']}; significantly worse, within the margin, on {listed} ({level})",
    }


def _decide(change: dict | None, statistic: str, margin: float, n: int) -> dict[str, Any]:
    direction = AUDIT_STATISTICS[statistic]
    out = {"statistic": statistic, "margin": margin}
    if change is None or change.get("estimate") is None:
        reason = (change or {}).get("reason", "undefined")
        return out | {"decision": "inconclusive", "exit_code": 1, "reason": f"{statistic} is undefined: {reason}"}
    if change.get("ci_low") is None:
        return out | {
            "decision": "inconclusive",
            "exit_code": 1,
            "reason": f"no interval for the change in {statistic}: {change.get('ci_reason')}",
        }
    low, high = change["ci_low"], change["ci_high"]
    # the interval of the improvement (positive = the new judge is closer to the humans)
    worst, best = (low, high) if direction > 0 else (-high, -low)
    shown = f"change in {statistic} {change['estimate']:+.3f} [{low:+.3f}, {high:+.3f}]"
    if n < MIN_TRUSTED_LABELS:
        return out | {
            "decision": "inconclusive",
            "exit_code": 1,
            "reason": f"only {n} labelled cases both judges rated (under {MIN_TRUSTED_LABELS}, no "
            f"comparison is trustworthy); {shown}",
        }
    limit = f"{'-' if direction > 0 else '+'}{margin:g}" if margin else "0"
    if worst > -margin:
        return out | {
            "decision": "non-inferior",
            "exit_code": 0,
            "reason": f"{shown}: the whole interval is on the good side of the margin {limit}",
        }
    if best < -margin:
        return out | {
            "decision": "inferior",
            "exit_code": 1,
            "reason": f"{shown}: the whole interval is beyond the margin {limit}",
        }
    return out | {
        "decision": "inconclusive",
        "exit_code": 1,
        "reason": f"{shown} straddles the margin {limit}: these labels cannot tell whether the change is within it",
    }


def _worth(decision: dict[str, Any], new: JudgeComparison, seed: int, confidence: float) -> dict[str, Any]:
    """A non-inferior decision, kept only when the new judge separates human passes from fails better
    than chance (the gate's test): otherwise *not better than chance*, exit code 1."""
    passes = new.human >= new.ref.metric.human_pass
    level = chance_level(confidence)
    if passes.all() or not passes.any():
        why = "every labelled case has the same human verdict: its worth against chance is unknown"
    else:
        found = new.separation(seed)
        if found["chance_p"] < level:
            return decision
        why = (
            f"its scores separate human passes from fails no better than chance (AUC {found['auc']:.3f}, "
            f"one-sided Mann-Whitney p = {found['chance_p']:.3g}, needs p < {level:g})"
        )
    return decision | {
        "decision": "not better than chance",
        "exit_code": 1,
        "reason": f"{decision['reason']}; but the new judge is no judge: {why} (calibrate gate)",
    }


def _flips(runs: list[JudgeComparison], ref, campaign: Campaign, n_listed: int) -> tuple[dict, dict]:
    from statsmodels.stats.contingency_tables import mcnemar

    old, new = runs
    verdicts = [_verdicts(r) for r in runs]
    if verdicts[0] is None or verdicts[1] is None:
        reason = "a judge has no pass threshold under the metric's rule (it would fail every case)"
        return undefined(reason), {"reason": reason}
    human = old.human >= ref.metric.human_pass
    right = [v == human for v in verdicts]
    table = np.array(
        [
            [np.sum(right[0] & right[1]), np.sum(right[0] & ~right[1])],
            [np.sum(~right[0] & right[1]), np.sum(~right[0] & ~right[1])],
        ]
    )
    discordant = int(table[0, 1] + table[1, 0])
    exact = discordant < 25
    test = mcnemar(table, exact=exact, correction=True)
    mc = {
        "statistic": float(test.statistic),
        "p_value": float(test.pvalue),
        "method": "exact binomial" if exact else "chi-square with continuity correction",
        "both_right": int(table[0, 0]),
        "only_old_right": int(table[0, 1]),
        "only_new_right": int(table[1, 0]),
        "both_wrong": int(table[1, 1]),
        "n": int(table.sum()),
    }
    if old.weights is not None:
        mc["note"] = "on the labelled cases as drawn (not weighted by the sample design)"
    flipped = np.flatnonzero(verdicts[0] != verdicts[1])
    cases = campaign.cases or {}

    def row(i: int) -> dict[str, Any]:
        case_id = str(old.case_ids[i])
        return {
            "case_id": case_id,
            "old_score": float(old.judge.values[np.searchsorted(old.judge.case_ids, case_id)]),
            "new_score": float(new.judge.values[np.searchsorted(new.judge.case_ids, case_id)]),
            "human": float(old.human[i]),
            "old_pass": bool(verdicts[0][i]),
            "new_pass": bool(verdicts[1][i]),
            **_text(cases.get(case_id)),
        }

    toward = [i for i in flipped if right[1][i]]
    away = [i for i in flipped if right[0][i]]
    flips = {
        "n_flips": int(flipped.size),
        "n_toward_human": len(toward),
        "n_away_from_human": len(away),
        "toward_human": [row(i) for i in toward[:n_listed]],
        "away_from_human": [row(i) for i in away[:n_listed]],
    }
    return mc, flips


def _drift(runs: list[JudgeComparison], old_scores: JudgeScores, new_scores: JudgeScores) -> dict[str, Any]:
    """How the scores moved on every case both judges scored, and the re-mapped thresholds."""
    old_run, new_run = runs
    both, i_old, i_new = np.intersect1d(old_scores.case_ids, new_scores.case_ids, return_indices=True)
    a, b = old_scores.values[i_old], new_scores.values[i_new]
    quantiles = [0.1, 0.25, 0.5, 0.75, 0.9]
    out: dict[str, Any] = {
        "n_cases": int(both.size),
        "old": {
            "mean": float(a.mean()),
            "quantiles": dict(zip(map(str, quantiles), np.quantile(a, quantiles).tolist())),
        },
        "new": {
            "mean": float(b.mean()),
            "quantiles": dict(zip(map(str, quantiles), np.quantile(b, quantiles).tolist())),
        },
        "mean_shift": float(b.mean() - a.mean()),
        "ks_statistic": float(stats.ks_2samp(a, b).statistic),
        "rank_correlation": float(stats.spearmanr(a, b).statistic) if np.ptp(a) > 0 and np.ptp(b) > 0 else None,
    }
    old_threshold = old_run.threshold_value(old_run.rule_index) if old_run.rule_index != NO_THRESHOLD else None
    out["old_threshold"] = old_threshold
    out["new_threshold"] = new_run.threshold_value(new_run.rule_index) if new_run.rule_index != NO_THRESHOLD else None
    if old_threshold is None:
        out["remap_reason"] = "the old judge has no pass threshold under the metric's rule"
        return out
    # keep the old false-pass rate: the most lenient new threshold whose false-pass rate is at most it
    t = int(old_run.rule_index)
    summary = old_run.paired.summarize(old_run.paired.full)
    n_fail = float(summary.cum_fails[0, -1])
    if n_fail > 0:
        old_fpr = (n_fail - (float(summary.cum_fails[0, t - 1]) if t > 0 else 0.0)) / n_fail
        new_summary = new_run.paired.summarize(new_run.paired.full)
        index = int(
            constraint_rule(
                new_summary.cum_fails,
                new_summary.cum_fails[:, -1],
                max_false_pass=old_fpr,
                whole=new_run.weights is None,
            )[0]
        )
        out["keep_false_pass_rate"] = {
            "old_false_pass_rate": old_fpr,
            "new_threshold": new_run.threshold_value(index) if index != NO_THRESHOLD else None,
        }
    # keep the old pass rate on every case both scored: the new judge's score whose pass rate is closest
    old_pass = (a >= old_threshold) if old_scores.rater.higher_is_better else (a <= old_threshold)
    share = float(old_pass.mean())
    oriented = new_scores.sign * b
    distinct = np.unique(oriented)
    rates = 1.0 - np.searchsorted(np.sort(oriented), distinct, side="left") / oriented.size  # share >= each
    best = int(np.argmin(np.abs(rates - share)))
    out["keep_pass_rate"] = {
        "old_pass_rate": share,
        "new_threshold": float(new_scores.sign * distinct[best]),
        "new_pass_rate": float(rates[best]),
    }
    return out
