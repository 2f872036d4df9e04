"""The CI gate: refuse a judge whose agreement with humans is not established.

Each (metric, judge) is checked against floors a team sets, and every reason it fails is listed:

- fewer human labels than ``min_labels``;
- Spearman's rho or kappa below a floor, judged on the *lower bound* of its interval (the estimate
  alone would pass a judge measured on too few labels);
- a false-pass rate above a ceiling at the judge's threshold under the metric's rule, judged on the
  *upper bound* of its Wilson interval (or no threshold at all);
- a judge of the generator's own model family, when self-evaluation is forbidden;
- no bottom-decile figures: a gate is never passed on averages alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from calibrate.analysis import ProgressCallback, compute_stats, recommend_thresholds, default_rule
from calibrate.campaign import Campaign
from calibrate.manifest import build_manifest

__all__ = ["GateRules", "run_gate"]


@dataclass(frozen=True)
class GateRules:
    """The floors and ceilings of :func:`run_gate` (``None``: not checked)."""

    min_labels: int = 50
    min_spearman: float | None = None
    min_kappa: float | None = None
    max_false_pass: float | None = None
    forbid_self_eval: bool = False

    def describe(self) -> list[str]:
        rules = [f"at least {self.min_labels} human labels"]
        if self.min_spearman is not None:
            rules.append(f"Spearman rho >= {self.min_spearman:g} (lower bound of its interval)")
        if self.min_kappa is not None:
            rules.append(f"kappa >= {self.min_kappa:g} (lower bound of its interval)")
        if self.max_false_pass is not None:
            rules.append(f"false-pass rate <= {self.max_false_pass:g} at the judge's threshold (upper bound)")
        if self.forbid_self_eval:
            rules.append("no judge of the generator's own family")
        return rules


def _kappa(judge: dict) -> tuple[str, dict]:
    """The kappa the gate reads: on the metric's scale where defined, else of the pass/fail verdicts."""
    if judge.get("kappa", {}).get("estimate") is not None:
        return "kappa", judge["kappa"]
    return "pass kappa", judge.get("pass_kappa", {})


def _self_eval(campaign: Campaign, family: str | None) -> int:
    if not family or not campaign.cases:
        return 0
    return sum(1 for c in campaign.cases.values()
               if str((c.get("metadata") or {}).get("generator_family", "")).lower() == family.lower())


def run_gate(campaign: Campaign, rules: GateRules, *, metrics: list[str] | None = None,
             judges: list[str] | None = None, seed: int = 0, n_boot: int = 1000, confidence: float = 0.95,
             progress: ProgressCallback | None = None) -> dict[str, Any]:
    """Check every (metric, judge) against ``rules``; ``passed`` is false when any reason is listed.

    Examples
    --------
    >>> import calibrate
    >>> c = calibrate.load_campaign(calibrate.demo_campaign_path(), out_of_scale="drop")
    >>> doc = run_gate(c, GateRules(min_spearman=0.5), judges=["Olz-gpt4o"], n_boot=200)
    >>> doc["passed"], doc["checks"][0]["reasons"][0][:60]
    (False, 'Spearman rho 0.511 [0.489, 0.534]: its lower bound 0.489 is ')
    """
    stats = compute_stats(campaign, metrics=metrics, judges=judges, seed=seed, n_boot=n_boot, confidence=confidence,
                          n_listed=0, curves=False, progress=progress)
    checks = []
    for metric in stats["metrics"]:
        name = metric["metric"]
        rule = default_rule(campaign.metrics[name])
        recs = {r["judge"]: r for r in recommend_thresholds(campaign, metric=name, rule=rule, judges=judges, seed=seed,
                                                             n_boot=0, confidence=confidence)["recommendations"]}
        if not metric["judges"]:
            checks.append({"metric": name, "judge": None, "passed": False,
                           "reasons": [f"no judge scores on {name}" + (" from the judges named" if judges else "")]})
        for judge in metric["judges"]:
            reasons = []
            n = judge["n"]
            if n < rules.min_labels:
                reasons.append(f"{n} human-labelled cases, fewer than the minimum {rules.min_labels}")
            for label, figure, floor in (("Spearman rho", judge["spearman"], rules.min_spearman),
                                         (*_kappa(judge), rules.min_kappa)):
                if floor is None:
                    continue
                if figure.get("estimate") is None:
                    reasons.append(f"{label} is undefined ({figure.get('reason')}): it cannot show >= {floor:g}")
                elif figure.get("ci_low") is None:
                    reasons.append(f"{label} {figure['estimate']:.3f} has no interval ({figure.get('ci_reason')}): "
                                   f"its lower bound cannot show >= {floor:g}")
                elif figure["ci_low"] < floor:
                    reasons.append(f"{label} {figure['estimate']:.3f} [{figure['ci_low']:.3f}, {figure['ci_high']:.3f}]: "
                                   f"its lower bound {figure['ci_low']:.3f} is below the floor {floor:g}")
            rec = recs.get(judge["judge"], {})
            if rules.max_false_pass is not None:
                detail = rec.get("false_pass_rate_detail")
                if rec.get("threshold") is None or detail is None:
                    reasons.append(f"no pass threshold under the metric's rule ({rule.describe()}): the false-pass "
                                   f"rate cannot be shown <= {rules.max_false_pass:g}")
                elif detail["ci_high"] > rules.max_false_pass:
                    reasons.append(f"false-pass rate {detail['estimate']:.3f} [{detail['ci_low']:.3f}, "
                                   f"{detail['ci_high']:.3f}] at threshold {rec['threshold']:g}: its upper bound "
                                   f"{detail['ci_high']:.3f} is above the ceiling {rules.max_false_pass:g}")
            if rules.forbid_self_eval:
                same = _self_eval(campaign, judge.get("family"))
                if same:
                    reasons.append(f"the judge is of the {judge['family']} family, as the generator of {same} "
                                   "case(s): self-evaluation is forbidden")
            decile = judge.get("bottom_decile") or {}
            if decile.get("human_pass_rate", {}).get("estimate") is None:
                reasons.append("no bottom-decile figures (the human pass rate among the lowest-scored tenth): "
                               "the gate does not pass a judge on averages alone")
            checks.append({"metric": name, "judge": judge["judge"], "n": n, "passed": not reasons, "reasons": reasons,
                           "spearman": judge["spearman"], "kappa": _kappa(judge)[1],
                           "threshold": rec.get("threshold"), "false_pass_rate": rec.get("false_pass_rate_detail"),
                           "bottom_decile": {k: v for k, v in decile.items() if k != "cases"}})
    return {"campaign": campaign.name, "passed": bool(checks) and all(c["passed"] for c in checks),
            "rules": rules.describe(), "checks": checks,
            "manifest": build_manifest(campaign, command="gate", seed=seed, n_boot=n_boot, confidence=confidence,
                                       rules=rules.__dict__, metrics=metrics, judges=judges)}
