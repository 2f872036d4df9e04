"""The CI gate: refuse a judge whose agreement with humans is not established. It fails closed.

Each (metric, judge) is checked, and every reason it fails is listed:

- fewer human labels than ``min_labels`` (50 unless set);
- always, agreement no better than chance: the judge's scores must rank the human passes above the
  human fails (AUC above 0.5), shown by a one-sided Mann-Whitney test at level ``(1 - confidence) / 2``
  and never looser than 2.5% (:func:`calibrate.analysis.verdicts.chance_level`; by permutation while the
  smaller class has fewer than 20 cases, so it holds at any sample size). A coin-flip judge fails here
  whatever floors were given, and whatever the confidence;
- a false-pass rate above a ceiling (the one given, else the ``max_false_pass`` the metric declares
  in ``campaign.toml``): the gate needs a threshold whose one-sided Clopper-Pearson upper bound of
  the false-pass rate, at level ``(1 + confidence) / 2``, is at most the ceiling — the bound it
  shows is the bound it used. A ceiling of 0 is refused (a ``ValueError``, naming the parameter or the
  metric that declares it): no finite number of labels bounds a rate at 0, so no judge could pass;
- Spearman's rho or kappa below a floor, judged on a one-sided lower bound that keeps its level at
  small n: the lower of the bootstrap interval's end and a bound that holds where the bootstrap
  collapses (Fisher's z for rho; for kappa ``1 - D / (1 - p_e)`` with D the Clopper-Pearson bound on
  the disagreement rate, which holds at zero disagreements). ``tests/review/test_gate_level.py`` measures
  how often a judge exactly at the floor passes, at n = 10 to 100;
- a judge of the generator's own model family, when self-evaluation is forbidden;
- a judge whose latest fingerprint is not SAME (or that has none), when a fingerprint is required: the
  latest by the time recorded in it, among the files ``index.json`` vouches for; any other file in the
  judge's fingerprint folder (unknown, edited, damaged, deleted from the index) is a reason naming it
  (:mod:`calibrate.review.fingerprint_files`);
- no bottom-decile figures: a gate is never passed on averages alone.

What the gate applied by default (the label minimum, the chance check, a ceiling from the campaign,
the absence of any floor) is listed in ``defaults``. Every rule can pass and fail: a floor of 1 (no
finite sample bounds rho or kappa at 1 from below) and a ceiling of 0 are refused where they enter;
``tests/review/test_rules_fire.py`` runs every decision at its boundary settings with a coin-flip and a
perfect judge.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from calibrate.analysis.agreement import compute_stats
from calibrate.analysis.metric_comparisons import ProgressCallback
from calibrate.analysis.recommendation_parts import rate_counts
from calibrate.analysis.recommendation_results import Recommendation
from calibrate.analysis.recommendations import recommend_thresholds
from calibrate.analysis.results import JudgeAgreement, MetricAgreement
from calibrate.analysis.rules import Rule
from calibrate.analysis.verdicts import chance_level, zero_ceiling_text
from calibrate.base.errors import NO_VALUE, ParameterText
from calibrate.base.estimates import Estimate
from calibrate.base.manifest import build_manifest
from calibrate.base.params import checked
from calibrate.campaign import Campaign
from calibrate.campaign.metadata import cases_by_generator_family
from calibrate.campaign.reference import computed_once, judge_scores
from calibrate.review.fingerprint import fingerprint_reasons
from calibrate.review.results import BottomDecile, GateCheck, GateResult
from calibrate.stats import N_BOOT
from calibrate.stats.intervals import clopper_pearson_upper
from calibrate.stats.thresholds import MOST_FAILS_SEARCHED, fails_for_ceiling, within_ceiling

__all__ = ["DEFAULT_MIN_LABELS", "GateRules", "gate_scope", "run_gate"]

DEFAULT_MIN_LABELS = 50


@dataclass(frozen=True)
class GateRules:
    """The floors and ceilings of :func:`run_gate` (``None``: not checked, or the campaign's own).

    Every value is checked where it enters: a NaN, an infinity or a value out of its range is a
    ``ValueError`` naming the parameter and the values allowed. A setting no judge could ever meet is
    out of range: a floor of 1, a ceiling of 0.

    Parameters
    ----------
    min_labels : int
        Human labels a judge needs on a metric.
    min_spearman, min_kappa : float, optional
        Floors on the one-sided lower bounds of Spearman's rho and of the pass/fail kappa, from -1 to
        below 1.
    max_false_pass : float, optional
        Ceiling on the false-pass rate at the rule's threshold, above 0 and at most 1 (default: the
        metric's own ceiling).
    forbid_self_eval : bool
        Refuse a judge of the generator's own model family.
    require_fingerprint : bool
        Refuse a judge whose latest fingerprint (``calibrate fingerprint``) is not SAME, or that has none,
        or whose fingerprint folder holds a file calibrate did not write as it is.

    Examples
    --------
    >>> GateRules(min_kappa=float("nan"))
    Traceback (most recent call last):
    ...
    ValueError: min_kappa=nan: expected a finite number from -1 to below 1
    >>> GateRules(max_false_pass=0)
    Traceback (most recent call last):
    ...
    ValueError: max_false_pass=0: a false-pass ceiling of 0 can never be shown: on any finite number of human ...
    """

    min_labels: int = DEFAULT_MIN_LABELS
    min_spearman: float | None = None
    min_kappa: float | None = None
    max_false_pass: float | None = None
    forbid_self_eval: bool = False
    require_fingerprint: bool = False

    def __post_init__(self) -> None:
        if isinstance(self.min_labels, bool) or not isinstance(self.min_labels, int) or self.min_labels < 1:
            raise ValueError(
                ParameterText("{min_labels}: expected a whole number of at least 1", min_labels=self.min_labels)
            )
        # (parameter, allowed range as text, test); a floor of 1 and a ceiling of 0 can never be shown
        checks = (
            ("min_spearman", "from -1 to below 1", lambda v: -1 <= v < 1),
            ("min_kappa", "from -1 to below 1", lambda v: -1 <= v < 1),
            ("max_false_pass", "above 0 and at most 1", lambda v: 0 < v <= 1),
        )
        for name, allowed, ok in checks:
            value = getattr(self, name)
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise ValueError(ParameterText(f"{{{name}}}: expected a finite number {allowed}", **{name: value}))
            if name == "max_false_pass" and value == 0:
                raise ValueError(ParameterText(f"{{{name}}}: {zero_ceiling_text()}", **{name: value}))
            if name != "max_false_pass" and value == 1:
                raise ValueError(
                    ParameterText(
                        f"{{{name}}}: a floor of 1 can never be shown: on any finite number of labels the one-sided "
                        f"lower bound is below 1, so no judge meets it; expected a number {allowed}",
                        **{name: value},
                    )
                )
            if not ok(value):
                raise ValueError(ParameterText(f"{{{name}}}: expected a finite number {allowed}", **{name: value}))

    def describe(self) -> list[str]:
        rules = [
            f"at least {self.min_labels} human labels",
            "agreement better than chance (AUC above 0.5 by a one-sided Mann-Whitney test)",
        ]
        if self.min_spearman is not None:
            rules.append(f"Spearman rho >= {self.min_spearman:g} (its one-sided lower bound)")
        if self.min_kappa is not None:
            rules.append(f"kappa >= {self.min_kappa:g} (its one-sided lower bound)")
        if self.max_false_pass is not None:
            rules.append(
                f"false-pass rate <= {self.max_false_pass:g} at the judge's threshold (one-sided "
                "Clopper-Pearson upper bound)"
            )
        else:
            rules.append("false-pass rate at most the max_false_pass each metric declares, if it declares one")
        if self.forbid_self_eval:
            rules.append("no judge of the generator's own family")
        if self.require_fingerprint:
            rules.append("the judge's latest fingerprint says SAME (calibrate fingerprint)")
        return rules


def _kappa(judge: JudgeAgreement) -> tuple[str, Estimate]:
    """The kappa the gate reads: on the metric's scale where defined, else of the pass/fail verdicts."""
    if judge.kappa.value is not None:
        return "kappa", judge.kappa
    return "pass kappa", judge.pass_kappa


def _chance(auc: Estimate, confidence: float) -> str | None:
    """Why the judge is not shown better than chance, or None."""
    alpha = chance_level(confidence)  # at most 0.025, whatever the confidence
    if auc.value is None:
        return f"AUC is undefined ({auc.reason}): agreement better than chance cannot be shown"
    text = f"AUC {auc.value:.3f}"
    if auc.ci_low is not None:
        text += f" [{auc.ci_low:.3f}, {auc.ci_high:.3f}]"
    p = auc.extra.get("chance_p")
    if p is None:
        return f"{text}: no test against chance"
    if p >= alpha:
        return f"{text}, one-sided Mann-Whitney p = {p:.3g}: not shown better than chance (needs p < {alpha:g})"
    return None


def _floor(label: str, figure: Estimate, floor: float) -> str | None:
    """Why ``figure`` is not shown at or above ``floor`` by its one-sided lower bound, or None."""
    if figure.value is None:
        return f"{label} is undefined ({figure.reason}): it cannot show >= {floor:g}"
    bound = figure.lower_bound
    if bound is None:
        return (
            f"{label} {figure.value:.3f} has no lower bound that keeps its level "
            f"({figure.extra.get('lower_bound_reason') or figure.ci_reason or 'no interval'}): it cannot "
            f"show >= {floor:g}"
        )
    if bound < floor:
        return (
            f"{label} {figure.value:.3f}: its one-sided lower bound {bound:.3f} ("
            f"{figure.lower_bound_method}) is below the floor {floor:g}"
        )
    return None


def level_text(level: float) -> str:
    """A one-sided level as a percentage, with the digits it takes not to read 100% or 0%.

    Examples
    --------
    >>> level_text(0.975), level_text(0.9995), level_text(1 - 5e-10)
    ('97.5%', '99.95%', '99.99999995%')
    """
    decimals = 1 if level >= 1 or level <= 0 else max(1, math.ceil(-math.log10(min(level, 1 - level))) - 1)
    return f"{100 * level:.{decimals}f}".rstrip("0").rstrip(".") + "%" if decimals > 1 else f"{level:.1%}"


def _false_pass(
    rec: Recommendation | None, ceiling: float, level: float, n_fail: int | None = None
) -> tuple[str | None, Estimate | None]:
    """Why the false-pass rate is not shown at most ``ceiling``, or None; and the figure shown."""
    detail = None if rec is None else rec.false_pass_rate
    if rec is None or rec.threshold is None or detail is None:
        needed = fails_for_ceiling(0.0, ceiling, confidence=level, one_sided=True)
        more = (
            ""
            if n_fail is None or (needed is not None and n_fail >= needed)
            else (
                f" (even with no false pass, that takes at least {needed} human fails; there are {n_fail})"
                if needed is not None
                else f" (even with no false pass, that takes more than {MOST_FAILS_SEARCHED:,} "
                f"human fails; there are {n_fail})"
            )
        )
        return (
            f"no threshold keeps the false-pass rate's one-sided {level_text(level)} Clopper-Pearson upper bound "
            f"at most {ceiling:g}{more}",
            None,
        )
    upper = float(clopper_pearson_upper(*rate_counts(detail), confidence=level))
    shown = detail.with_keys(upper_bound=upper, upper_bound_method=f"one-sided {level_text(level)} Clopper-Pearson")
    if not within_ceiling(upper, ceiling):  # the rule chose the threshold by this same test
        return (
            f"false-pass rate {detail.value:.3f} at threshold {rec.threshold:g}: its upper bound "
            f"{upper:.3f} is above the ceiling {ceiling:g}",
            shown,
        )
    return None, shown


def _named(judge, names: list[str]) -> bool:
    """Whether a judge's scores are among those ``names`` name (as ``rater`` or ``rater@run_id``)."""
    return judge.name in names or judge.rater.name in names


def gate_scope(
    campaign: Campaign, *, metrics: list[str] | None = None, judges: list[str] | None = None
) -> tuple[list[str], list[GateCheck]]:
    """What the gate checks: the metrics, and the checks that fail before any statistic is computed.

    With judges named and no metric, the gate checks the metrics those judges score (a pipeline that
    names its judge is not failed on another judge's metric). A judge named that scores none of the
    metrics checked is a failing check of its own: the gate fails closed, never silently narrower. A
    name no rater of the campaign has is a ``ValueError`` naming the judges there are.

    Parameters
    ----------
    campaign : Campaign
    metrics, judges : list of str, optional
        As :func:`run_gate` takes them.

    Returns
    -------
    tuple
        The metrics to check, and a failing :class:`~calibrate.review.results.GateCheck` (no figures)
        per judge named that scores none of them.

    Examples
    --------
    >>> import calibrate
    >>> c = calibrate.load_campaign(calibrate.demo_campaign_path())
    >>> gate_scope(c, judges=["Olz-gpt4o"])
    (['relevance'], [])
    >>> gate_scope(c, judges=["olz-gpt4o"])
    Traceback (most recent call last):
    ...
    ValueError: judges='olz-gpt4o': no rater of the campaign has this name; its judges are NISTRetrieval-instruct0, ...
    """
    declared = campaign.metric_names(metrics)
    if not judges:
        return declared, []
    scores = {m: judge_scores(campaign, m) for m in campaign.metric_names(None)}
    known = set(campaign.judges) | set(campaign.raters) | set(campaign.imported_raters)
    known |= {name for found in scores.values() for j in found for name in (j.name, j.rater.name)}
    known |= set(campaign.ratings["rater"].astype(str))
    unknown = [name for name in judges if name not in known]
    if unknown:
        names = sorted({j.name for found in scores.values() for j in found} | set(campaign.judges))
        raise ValueError(
            ParameterText(
                "{judges}: no rater of the campaign has this name; its judges are {_names}",
                judges=", ".join(unknown),
                _names=", ".join(names) or "none (no ratings yet)",
            )
        )
    chosen = declared if metrics else [m for m in declared if any(_named(j, judges) for j in scores[m])]
    failing: list[GateCheck] = []
    for name in judges:
        if any(_named(j, [name]) for m in chosen for j in scores[m]):
            continue
        elsewhere = sorted(m for m in scores if any(_named(j, [name]) for j in scores[m]))
        spec = campaign.judges.get(name)
        if elsewhere:
            why = f"judge {name} scores {', '.join(elsewhere)}, not the metric(s) checked ({', '.join(chosen)})"
        elif spec is not None:
            why = (
                f"judge {name} ({spec.library} {spec.metric} into {spec.into}) has no ratings yet: run "
                "calibrate judge, and label its cases"
            )
        else:
            why = f"judge {name} has no judge ratings in the campaign"
        failing.append(GateCheck(spec.into if spec is not None and not elsewhere else None, name, False, (why,)))
    return chosen, failing


def _defaults(
    campaign: Campaign, rules: GateRules, chosen: list[str], *, metrics: list[str] | None, judges: list[str] | None
) -> list[str]:
    """What the gate applies without being told: the label minimum, no floor, the metrics left out."""
    defaults = []
    if rules.min_labels == DEFAULT_MIN_LABELS:
        defaults.append(f"at least {DEFAULT_MIN_LABELS} human labels (the default)")
    if rules.min_spearman is None and rules.min_kappa is None:
        defaults.append(
            "no agreement floor was given: beyond the chance check, agreement is not bounded "
            "(set min_spearman or min_kappa)"
        )
    left = [m for m in campaign.metric_names(None) if m not in chosen] if judges and not metrics else []
    if left:
        defaults.append(
            f"only the metric(s) the judges named score: {', '.join(chosen) or 'none'}; not checked: {', '.join(left)}"
        )
    return defaults


def _ceiling(campaign: Campaign, rules: GateRules, name: str) -> float | None:
    """The false-pass ceiling of metric ``name``: the rules', else the one campaign.toml declares."""
    ceiling = rules.max_false_pass if rules.max_false_pass is not None else campaign.metrics[name].max_false_pass
    if ceiling == 0:  # declared in campaign.toml (GateRules refuses it): no judge could pass it
        raise ValueError(
            ParameterText(
                "metric {_metric} declares max_false_pass = 0 in campaign.toml, and {_zero}; "
                "give the gate one ({max_false_pass}), or declare one above 0",
                _metric=name,
                _zero=zero_ceiling_text(),
                max_false_pass=NO_VALUE,
            )
        )
    return ceiling


def _recommendations(
    campaign: Campaign, name: str, ceiling: float, level: float, *, judges: list[str] | None, seed: int
) -> dict[str, Recommendation]:
    """Each judge's threshold under the ceiling at the one-sided ``level``, by judge name."""
    rule = Rule("constraint", max_false_pass=ceiling, confidence=level)
    doc = recommend_thresholds(campaign, metric=name, rule=rule, judges=judges, seed=seed, n_boot=0)
    return {r.judge: r for r in doc.recommendations}


def _no_judge_check(name: str, judges: list[str] | None) -> GateCheck:
    """The failing check of a metric no judge (among those named) scores."""
    return GateCheck(
        name,
        None,
        False,
        (f"no judge scores on {name}" + (f" among the judges named ({', '.join(judges)})" if judges else ""),),
    )


def _judge_check(
    campaign: Campaign,
    rules: GateRules,
    name: str,
    judge: JudgeAgreement,
    ceiling: float | None,
    recs: dict[str, Recommendation],
    *,
    confidence: float,
) -> GateCheck:
    """One judge on metric ``name`` against every rule: its reasons to fail, and the figures read."""
    level = (1 + confidence) / 2
    reasons = []
    n = judge.n
    if n < rules.min_labels:
        reasons.append(f"{n} human-labelled cases, fewer than the minimum {rules.min_labels}")
    auc, spearman, (kappa_label, kappa) = judge.auc, judge.spearman, _kappa(judge)
    chance = _chance(auc, confidence)
    if chance:
        reasons.append(chance)
    for label, figure, floor in (
        ("Spearman rho", spearman, rules.min_spearman),
        (kappa_label, kappa, rules.min_kappa),
    ):
        why = _floor(label, figure, floor) if floor is not None else None
        if why:
            reasons.append(why)
    rec, false_pass = recs.get(judge.judge), None
    if ceiling is not None:
        why, false_pass = _false_pass(rec, ceiling, level, judge.n_human_fail)
        if why:
            reasons.append(why)
    if rules.forbid_self_eval:
        same = len(cases_by_generator_family(campaign, judge.family))
        if same:
            reasons.append(
                f"the judge is of the {judge.family} family, as the generator of {same} "
                "case(s): self-evaluation is forbidden"
            )
    if rules.require_fingerprint:  # the latest trusted one by its recorded time; refused files named
        reasons += fingerprint_reasons(campaign, judge.judge, name)
    decile = BottomDecile.from_dict(judge.bottom_decile) if judge.bottom_decile else None
    if decile is None or decile.human_pass_rate.value is None:
        reasons.append(
            "no bottom-decile figures (the human pass rate among the lowest-scored tenth): "
            "the gate does not pass a judge on averages alone"
        )
    return GateCheck(
        metric=name,
        judge=judge.judge,
        n=n,
        passed=not reasons,
        reasons=tuple(reasons),
        auc=auc,
        spearman=spearman,
        kappa=kappa,
        false_pass_ceiling=ceiling,
        threshold=None if rec is None else rec.threshold,
        false_pass_rate=false_pass,
        bottom_decile=decile,
    )


def _metric_checks(
    campaign: Campaign,
    rules: GateRules,
    metric: MetricAgreement,
    defaults: list[str],
    *,
    judges: list[str] | None,
    seed: int,
    confidence: float,
) -> list[GateCheck]:
    """The checks of one metric, a check per judge; a ceiling the campaign declares is added to ``defaults``."""
    name = metric.metric
    ceiling = _ceiling(campaign, rules, name)
    recs: dict[str, Recommendation] = {}
    if ceiling is not None:
        if rules.max_false_pass is None:
            defaults.append(f"{name}: false-pass ceiling {ceiling:g}, the max_false_pass campaign.toml declares")
        recs = _recommendations(campaign, name, ceiling, (1 + confidence) / 2, judges=judges, seed=seed)
    checks = []
    if not metric.judges:
        checks.append(_no_judge_check(name, judges))
    for judge in metric.judges:
        checks.append(_judge_check(campaign, rules, name, judge, ceiling, recs, confidence=confidence))
    return checks


@computed_once()
@checked("confidence", "n_boot", "seed")
def run_gate(
    campaign: Campaign,
    rules: GateRules,
    *,
    metrics: list[str] | None = None,
    judges: list[str] | None = None,
    seed: int = 0,
    n_boot: int = N_BOOT,
    confidence: float = 0.95,
    progress: ProgressCallback | None = None,
) -> GateResult:
    """Check every (metric, judge) against ``rules``; ``passed`` is false when any reason is listed.

    Parameters
    ----------
    campaign : Campaign
    rules : GateRules
    metrics, judges : list of str, optional
        Only these metrics / judges (``rater`` or ``rater@run_id``). With judges and no metrics, the
        metrics those judges score (:func:`gate_scope`); a judge named that scores none of the metrics
        checked fails the gate, and a name no rater has is a ``ValueError``.
    seed, n_boot : int
        Bootstrap seed and resamples.
    confidence : float
        Two-sided level of the intervals shown (the floors use one-sided bounds at ``(1 + confidence) / 2``).
    progress : callable, optional
        Called as ``progress(done, total, label)``.

    Returns
    -------
    GateResult
        The ``calibrate gate --json`` document: ``passed``, the ``rules`` and ``defaults`` applied, and a
        check per metric and judge with its ``reasons`` and figures; ``doc.passed`` is what the exit code
        says.

    Examples
    --------
    >>> import calibrate
    >>> c = calibrate.load_campaign(calibrate.demo_campaign_path())
    >>> doc = run_gate(c, GateRules(min_spearman=0.55), judges=["Olz-gpt4o"], n_boot=200)
    >>> doc.passed, doc.checks[0].reasons[0][:47], doc.checks[0].spearman.lower_bound < 0.55
    (False, 'Spearman rho 0.511: its one-sided lower bound 0', True)
    """
    if isinstance(confidence, bool) or not isinstance(confidence, (int, float)) or not 0 < confidence < 1:
        raise ValueError(
            ParameterText("{confidence}: expected a number between 0 and 1 (both excluded)", confidence=confidence)
        )
    chosen, checks = gate_scope(campaign, metrics=metrics, judges=judges)
    stats = (
        compute_stats(
            campaign,
            metrics=chosen,
            judges=judges,
            seed=seed,
            n_boot=n_boot,
            confidence=confidence,
            n_listed=0,
            curves=False,
            progress=progress,
        )
        if chosen
        else None
    )
    defaults = _defaults(campaign, rules, chosen, metrics=metrics, judges=judges)
    for metric in stats.metrics if stats is not None else ():
        checks += _metric_checks(campaign, rules, metric, defaults, judges=judges, seed=seed, confidence=confidence)
    return GateResult(
        campaign=campaign.name,
        passed=bool(checks) and all(c.passed for c in checks),
        rules=tuple(rules.describe()),
        defaults=tuple(defaults),
        checks=tuple(checks),
        confidence=confidence,
        n_boot=n_boot,
        manifest=build_manifest(
            campaign,
            command="gate",
            seed=seed,
            n_boot=n_boot,
            confidence=confidence,
            rules=rules.__dict__,
            metrics=metrics,
            judges=judges,
        ),
    )
