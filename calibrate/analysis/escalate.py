"""Acting on the verdict: the band of scores in which a judge decides alone, with a guaranteed agreement with
the humans on the cases it decides; the cases between go to people (``calibrate escalate``).

The statistics, the candidate bands and their assumptions are in :mod:`calibrate.stats.selective`; here
a campaign goes in and an :class:`EscalateResult` comes out:

- **the judge's verdict** is pass at its threshold, chosen without the labels (the bands are centred on it,
  so a threshold fitted to the labels would spend them twice): the one given (``threshold``); else the one
  the judge runs at (:func:`calibrate.analysis.current.current_thresholds`: an imported run's, a DeepEval
  judge's setting), when it has one; else the metric's declared pass level mapped to the judge's scale as
  the metric's default rule does (:meth:`calibrate.analysis.rules.Rule.fixed_threshold`: ``human_pass``
  for a judge on the metric's scale, DeepEval's 0.5 for a judge scoring from 0 to 1 on a binary metric);
  else none, and the call asks for one;
- **the labels** are the cases the humans labelled among those the judge scored (the human verdict: the
  reference at ``human_pass``); with a targeted sample (design weights recorded), the betting test;
- **coverage** is the share of *every* case the judge scored on the metric that the band decides (known
  exactly for them; its Wilson interval is for cases to come, exchangeable with them);
- **the human ceiling**: where two annotators or more labelled a case, their pass/fail agreement with each
  other (design-weighted); a target above it is refused;
- **more labels**: for the next band of the sequence (the first whose test failed), how many more labels
  its test needs if they fell in it as these did and showed the same disagreement
  (:func:`calibrate.stats.selective.labels_to_pass`); the bands before it must pass again on them.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from calibrate.analysis.annotators import label_matrix
from calibrate.analysis.current import current_thresholds
from calibrate.analysis.rules import Rule
from calibrate.base.errors import NO_VALUE, ParameterText
from calibrate.base.estimates import Estimate
from calibrate.base.manifest import build_manifest
from calibrate.base.params import PROBABILITY, checked
from calibrate.base.results import Document, FigureAt
from calibrate.campaign import Campaign
from calibrate.campaign.reference import JudgeScores, computed_once, pair
from calibrate.campaign.weights import design_weights, equal_probability, kish_effective_n
from calibrate.stats.annotators import percent_agreement
from calibrate.stats.intervals import wilson_interval
from calibrate.stats.selective import MAX_BANDS, BandSelection, CandidateBands, labels_to_pass, select_band

__all__ = [
    "Candidate",
    "EscalateResult",
    "HumanCeiling",
    "MoreLabels",
    "SignalCandidate",
    "SignalUsed",
    "band_result",
    "check_ceiling",
    "escalate",
    "human_ceiling",
    "label_free_threshold",
]


@dataclass(frozen=True)
class Candidate:
    """One candidate band, in the judge's units: its edges, the share of every scored case it decides, the
    labelled cases it decides and their disagreements with the humans, their (weighted) agreement, the
    upper bound of its disagreement rate, and whether it was tested and passed."""

    pass_at: float
    fail_below: float
    coverage: float
    n_labelled: int
    disagreements: int
    agreement: float | None
    disagreement_upper_bound: float | None
    tested: bool
    passed: bool

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class SignalCandidate:
    """One candidate band of a confidence signal (``--signal``): it decides the cases whose signal is at least
    ``signal_at`` (at ``signal_at`` itself, those whose score is farthest from the threshold first); the rest
    as :class:`Candidate`."""

    signal_at: float
    coverage: float
    n_labelled: int
    disagreements: int
    agreement: float | None
    disagreement_upper_bound: float | None
    tested: bool
    passed: bool

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class SignalUsed:
    """A confidence signal's part of a band (``calibrate escalate --signal``): the labelled cases' ranks by
    the signal and disagreements with the humans, the rule in words, and the document's ``signal`` (and,
    for ``--signal all``, ``signals``) entries."""

    position: np.ndarray
    errors: np.ndarray
    rule: str
    details: dict[str, Any]
    signals: list[dict[str, Any]] | None = None


@dataclass(frozen=True)
class HumanCeiling:
    """The annotators' pass/fail agreement with each other (None: fewer than two annotators on two cases)."""

    annotators: int
    n_items: int
    agreement: Estimate | None
    text: str

    def to_dict(self) -> dict[str, Any]:
        figure = None if self.agreement is None else self.agreement.to_dict()
        return {"annotators": self.annotators, "n_items": self.n_items, "agreement": figure, "text": self.text}


@dataclass(frozen=True)
class MoreLabels:
    """The labels that would widen the band to the next candidate (``labels`` None: none would, or there is
    no next band), that band's edges and coverage, and how the estimate was made."""

    labels: int | None
    pass_at: float | None
    fail_below: float | None
    coverage: float | None
    text: str

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class EscalateResult(Document):
    """The ``calibrate escalate --json`` document (:func:`escalate`): the band chosen (``pass_at`` and
    ``fail_below`` None when none passed), its coverage and agreement, how it was found, the human ceiling,
    the labels that would widen it, and every candidate band.

    Examples
    --------
    >>> import calibrate
    >>> doc = escalate(calibrate.load_campaign(calibrate.demo_campaign_path()), metric="relevance",
    ...                judge="Olz-gpt4o", agreement=0.9)
    >>> list(doc.to_dict())[:9]
    ['schema_version', 'campaign', 'metric', 'judge', 'target', 'confidence', 'pass_at', 'fail_below', 'coverage']
    """

    SCHEMA_VERSION = 1

    campaign: str
    metric: str
    judge: str
    target: float
    confidence: float
    pass_at: float | None
    fail_below: float | None
    coverage: Estimate
    agreement: Estimate
    method: str
    n_labels: int
    n_scored: int
    n_decided: int
    weighted: bool
    pass_rule: str
    threshold: float
    threshold_source: str
    human_ceiling: HumanCeiling
    more_labels: MoreLabels
    candidates: tuple[Candidate | SignalCandidate, ...]
    text: str
    manifest: dict[str, Any] = field(default_factory=dict)
    #: with ``--signal`` only: the confidence signal the bands were ordered by, and with ``all`` each signal's
    signal: dict[str, Any] | None = None
    signals: list[dict[str, Any]] | None = None

    def body(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name in self.__dataclass_fields__:
            value = getattr(self, name)
            if name in ("signal", "signals") and value is None:
                continue
            if isinstance(value, tuple):
                value = [item.to_dict() for item in value]
            elif hasattr(value, "to_dict"):
                value = value.to_dict()
            out[name] = copy.deepcopy(value)
        return out

    def figures(self) -> Iterator[FigureAt]:
        """The coverage, the agreement and the annotators' agreement."""
        for name in ("coverage", "agreement"):
            yield FigureAt(self.metric, self.judge, None, name, getattr(self, name), self.n_labels)
        if self.human_ceiling.agreement is not None:
            yield FigureAt(self.metric, None, None, "human_ceiling", self.human_ceiling.agreement)


def label_free_threshold(
    campaign: Campaign, metric: str, judge: JudgeScores, given: float | None = None
) -> tuple[float, str]:
    """The judge's pass threshold in its own units, chosen without the labels, and where it comes from (see
    the module docstring).

    Raises
    ------
    ValueError
        When the judge has none: naming ``threshold``.

    Examples
    --------
    >>> import calibrate
    >>> from calibrate.campaign.reference import find_judge
    >>> c = calibrate.load_campaign(calibrate.demo_campaign_path())
    >>> label_free_threshold(c, "relevance", find_judge(c, "relevance", "Olz-gpt4o"))
    (2.0, "the metric's pass level, human_pass = 2 (the judge rates on the metric's scale)")
    """
    if given is not None:
        if not (isinstance(given, (int, float)) and math.isfinite(given)) or isinstance(given, bool):
            raise ValueError(
                ParameterText("{threshold}: expected a finite number, the judge's pass threshold", threshold=given)
            )
        return float(given), "given"
    runs = current_thresholds(campaign, metric, judge)
    if len(runs) == 1:
        return runs[0]["threshold"], f"the threshold the judge runs at ({runs[0]['source_text']})"
    spec, values = campaign.metrics[metric], judge.values
    on_scale = judge.rater.higher_is_better and (
        bool(spec.levels is not None and values.size and spec.in_scale(values).all())
        or (spec.scale == "continuous" and judge.rater.on_metric_scale)
    )
    # the metric's default rule, whatever rule it declares: a constraint's or a cost's threshold is fitted to the labels
    fixed = Rule("default", human_pass=spec.human_pass, binary=spec.scale == "binary")
    zero_to_one = bool(values.size and values.min() >= 0 and values.max() <= 1)
    threshold = fixed.fixed_threshold(on_scale=on_scale, zero_to_one=zero_to_one)
    if threshold is None:
        raise ValueError(
            ParameterText(
                "judge {_judge} has no pass threshold on {_metric} that does not come from the labels (it runs at "
                "{_runs} recorded thresholds, and does not score on the metric's scale or from 0 to 1 on a binary "
                "metric): give the threshold it passes at ({threshold})",
                _judge=judge.name,
                _metric=metric,
                _runs=len(runs),
                threshold=NO_VALUE,
            )
        )
    if on_scale:
        return float(
            threshold
        ), f"the metric's pass level, human_pass = {spec.human_pass:g} (the judge rates on the metric's scale)"
    return float(threshold), "DeepEval's 0.5 (a judge scoring from 0 to 1 on a binary metric)"


def human_ceiling(campaign: Campaign, metric: str, confidence: float) -> HumanCeiling:
    """The annotators' pass/fail agreement with each other on the cases two or more labelled: the share of
    their pairs that agree, design-weighted, with a Wilson interval at the Kish effective number of cases."""
    matrix, case_ids, annotators = label_matrix(campaign, metric)
    spec = campaign.metrics[metric]
    multiply = np.sum(~np.isnan(matrix), axis=1) >= 2 if matrix.size else np.zeros(0, dtype=bool)
    n_items = int(multiply.sum())
    if len(annotators) < 2 or n_items < 2:
        text = (
            f"not measured: {len(annotators)} annotator(s), {n_items} case(s) labelled by two or more; "
            "the target cannot be checked against what people achieve with each other"
        )
        return HumanCeiling(len(annotators), n_items, None, text)
    passes = np.where(np.isnan(matrix), np.nan, (matrix >= spec.human_pass).astype(float))[multiply]
    weights = design_weights(campaign, np.array(case_ids)[multiply]).weights
    value = percent_agreement(passes, weights)
    effective = kish_effective_n(np.ones(n_items) if weights is None else weights)
    low, high = wilson_interval(value * effective, effective, confidence=confidence)
    figure = Estimate.interval(value, float(low), float(high), "Wilson score").with_keys(n=n_items)
    text = f"the annotators agree with each other on pass/fail on {value:.1%} of their pairs' labels ({n_items} cases)"
    return HumanCeiling(len(annotators), n_items, figure, text)


def _judge_units(sign: float, value: float) -> float:
    return float(sign * value)


def _candidates(found: BandSelection, sign: float) -> tuple[Candidate | SignalCandidate, ...]:
    b = found.bands
    if not isinstance(b, CandidateBands):
        return tuple(
            SignalCandidate(
                signal_at=float(b.signal_at[j]),
                coverage=float(b.n_decided[j] / b.n_cases),
                n_labelled=int(found.n_labelled[j]),
                disagreements=int(found.disagreements[j]),
                agreement=None if not found.n_labelled[j] else float(1 - found.rate[j]),
                disagreement_upper_bound=None if np.isnan(found.upper[j]) else float(found.upper[j]),
                tested=bool(found.tested[j]),
                passed=bool(found.passed[j]),
            )
            for j in range(b.cut.size)
        )
    return tuple(
        Candidate(
            pass_at=_judge_units(sign, b.pass_at[j]),
            fail_below=_judge_units(sign, b.fail_below[j]),
            coverage=float(b.n_decided[j] / b.n_cases),
            n_labelled=int(found.n_labelled[j]),
            disagreements=int(found.disagreements[j]),
            agreement=None if not found.n_labelled[j] else float(1 - found.rate[j]),
            disagreement_upper_bound=None if np.isnan(found.upper[j]) else float(found.upper[j]),
            tested=bool(found.tested[j]),
            passed=bool(found.passed[j]),
        )
        for j in range(b.cut.size)
    )


def _pass_rule(sign: float, pass_at: float | None, fail_below: float | None) -> str:
    """The band in words, in the judge's direction."""
    if pass_at is None or fail_below is None:
        return "no band: every case goes to people"
    up, down = (">=", "<") if sign > 0 else ("<=", ">")
    if pass_at == fail_below:
        return f"the judge decides every case: pass when score {up} {pass_at:g}, fail otherwise"
    return f"pass when score {up} {pass_at:g}, fail when score {down} {fail_below:g}; the cases between go to people"


def _more_labels(found, position, errors, ratios, n_labels, sign, weighted, target) -> MoreLabels:
    """The labels that would bring the next band of the sequence through its test (``position``: the
    labelled cases' scores, or their ranks by a signal)."""
    b, chosen = found.bands, found.chosen
    if chosen == b.cut.size - 1:
        return MoreLabels(None, None, None, None, "none: the band decides every case already")
    nxt = chosen + 1 if chosen >= 0 else min(found.start, b.cut.size - 1)
    decided = b.decided(position, nxt)
    scale = labels_to_pass(
        errors[decided], ratios[decided], agreement=target, confidence=found.confidence, weighted=weighted
    )
    edges = (
        _judge_units(sign, b.pass_at[nxt]) if isinstance(b, CandidateBands) else None,
        _judge_units(sign, b.fail_below[nxt]) if isinstance(b, CandidateBands) else None,
        float(b.n_decided[nxt] / b.n_cases),
    )
    share = float(np.average(errors[decided], weights=ratios[decided])) if decided.any() else float("nan")
    if scale is None:
        text = (
            f"no number of labels like these: the next band's labelled cases disagree with the humans on "
            f"{share:.1%}, at or above the {1 - target:.0%} allowed"
        )
        return MoreLabels(None, *edges, text)
    labels = max(int(math.ceil(n_labels * (scale - 1))), 1)
    text = (
        f"about {labels} more labels, if they fell in the next band as the {n_labels} did "
        f"({int(decided.sum())} of them) and disagreed as often ({share:.1%})"
        + (" with the same mix of design weights" if weighted else "")
        + "; the bands before it must pass again on them"
    )
    return MoreLabels(labels, *edges, text)


def _summary(judge: str, found: BandSelection, n_decided: int, n_scored: int, pass_rule: str) -> str:
    if found.chosen < 0:
        return (
            f"{judge}: no band reaches {found.agreement:.0%} agreement at {found.confidence:.0%} confidence; "
            "every case goes to people"
        )
    share = n_decided / n_scored
    return (
        f"{judge} decides {share:.0%} of the {n_scored} cases alone at >= {found.agreement:.0%} agreement, "
        f"guaranteed at {found.confidence:.0%}; {1 - share:.0%} to people ({pass_rule})"
    )


@computed_once()
@checked("confidence", agreement=PROBABILITY)
def escalate(
    campaign: Campaign,
    *,
    metric: str,
    judge: str,
    agreement: float,
    confidence: float = 0.95,
    threshold: float | None = None,
    max_bands: int = MAX_BANDS,
) -> EscalateResult:
    """The band in which ``judge`` decides cases of ``metric`` alone, with at least ``agreement`` agreement
    with the human verdict on the cases it decides, guaranteed with probability ``confidence``; the cases
    between its edges go to people. See the module docstring and :mod:`calibrate.stats.selective`.

    Parameters
    ----------
    campaign : Campaign
    metric, judge : str
        The metric, and the judge (a name or ``rater@run_id``).
    agreement : float
        The target share of the cases the judge decides on which it agrees with the humans, in (0, 1).
    confidence : float
        The probability, in (0, 1), that the band chosen reaches the target.
    threshold : float, optional
        The judge's pass threshold, chosen without these labels; by default its own or the metric's.
    max_bands : int
        About this many candidate bands at most.

    Returns
    -------
    EscalateResult
        The ``calibrate escalate --json`` document; ``.to_frame()`` gives the coverage and the agreement.

    Raises
    ------
    ValueError
        An unknown metric or judge, no human label among the judge's cases, no threshold, or a target above
        the annotators' own agreement.

    Examples
    --------
    >>> import calibrate
    >>> c = calibrate.load_campaign(calibrate.demo_campaign_path())
    >>> doc = escalate(c, metric="relevance", judge="NISTRetrieval-instruct0", agreement=0.9)
    >>> doc.pass_at, doc.fail_below, doc.n_labels, round(doc.coverage.value, 3)
    (2.5, 1.0, 4423, 0.252)
    >>> doc.pass_rule
    'pass when score >= 2.5, fail when score < 1; the cases between go to people'
    >>> escalate(c, metric="relevance", judge="Olz-gpt4o", agreement=0.9).text
    'Olz-gpt4o: no band reaches 90% agreement at 95% confidence; every case goes to people'
    """
    campaign.metric_names([metric])
    if not isinstance(max_bands, int) or max_bands < 1:
        raise ValueError(ParameterText("{max_bands}: expected a whole number, 1 or more", max_bands=max_bands))
    joined = pair(campaign, metric, judge)
    scores = joined.judge
    if joined.n == 0:
        raise ValueError(
            f"no human label of {metric} among the {scores.case_ids.size} cases judge {scores.name} scored: "
            "the band is chosen from labelled cases"
        )
    ceiling = human_ceiling(campaign, metric, confidence)
    check_ceiling(agreement, ceiling)
    given, source = label_free_threshold(campaign, metric, scores, threshold)
    sign = scores.sign
    found = select_band(
        joined.oriented,
        joined.passes,
        scores.oriented,
        sign * given,
        agreement=agreement,
        confidence=confidence,
        weights=joined.weights,
        equal_probability=None if joined.weights is None else equal_probability(campaign, scores.case_ids),
        max_bands=max_bands,
    )
    return band_result(campaign, joined, found, ceiling, (given, source), max_bands)


def check_ceiling(agreement: float, ceiling: HumanCeiling) -> None:
    """Refuse a target above the annotators' own agreement, saying so."""
    reached = None if ceiling.agreement is None else ceiling.agreement.value
    if reached is not None and agreement > reached + 1e-12:
        raise ValueError(
            ParameterText(
                "{agreement}: the target is above what the humans reach with each other ({_text}); a judge "
                "cannot be shown to agree with them more often than that: ask for at most {_most}",
                agreement=agreement,
                _text=ceiling.text,
                _most=f"{reached:.3f}",
            )
        )


def band_result(
    campaign, joined, found: BandSelection, ceiling, given, max_bands, signal: SignalUsed | None = None
) -> EscalateResult:
    """The ``calibrate escalate`` document of a band ``found`` for the judge of ``joined`` (its pairing with
    the humans), the ``human_ceiling``, the threshold and its source (``given``); with ``signal``, the band
    was ordered by that confidence signal (:mod:`calibrate.analysis.escalate_signals`)."""
    scores, sign, b, chosen = joined.judge, joined.judge.sign, found.bands, found.chosen
    weighted = joined.weights is not None
    n_decided = int(b.n_decided[chosen]) if chosen >= 0 else 0
    low, high = wilson_interval(n_decided, b.n_cases, confidence=found.confidence)
    coverage = Estimate.interval(n_decided / b.n_cases, float(low), float(high), "Wilson score").with_keys(
        n=b.n_cases, k=n_decided
    )
    if chosen < 0:
        agreed = Estimate.undefined("no band passed: the judge decides no case alone")
    else:
        agreed = Estimate(
            float(1 - found.rate[chosen]),
            method=found.method,
            reason="one-sided: the lower bound is what the guarantee reads",
            n=int(found.n_labelled[chosen]),
            lower_bound=float(1 - found.upper[chosen]),
            lower_bound_method=found.method,
        )
    w = joined.weights
    ratios = np.ones(joined.n) if w is None else w / w.max()
    if isinstance(b, CandidateBands):
        pass_at = _judge_units(sign, b.pass_at[chosen]) if chosen >= 0 else None
        fail_below = _judge_units(sign, b.fail_below[chosen]) if chosen >= 0 else None
        rule = _pass_rule(sign, pass_at, fail_below)
        position, errors = joined.oriented, (joined.oriented >= b.threshold) != joined.passes
    else:  # a signal's band is no interval of scores: its rule says which cases it decides
        assert signal is not None
        pass_at = fail_below = None
        rule = signal.rule if chosen >= 0 else _pass_rule(sign, None, None)
        position, errors = signal.position, signal.errors
    more = _more_labels(found, position, errors, ratios, joined.n, sign, weighted, found.agreement)
    return EscalateResult(
        campaign=campaign.name,
        metric=joined.reference.metric.name,
        judge=scores.name,
        target=found.agreement,
        confidence=found.confidence,
        pass_at=pass_at,
        fail_below=fail_below,
        coverage=coverage,
        agreement=agreed,
        method=f"fixed-sequence testing over nested bands, {found.method}",
        n_labels=joined.n,
        n_scored=b.n_cases,
        n_decided=n_decided,
        weighted=weighted,
        pass_rule=rule,
        threshold=given[0],
        threshold_source=given[1],
        human_ceiling=ceiling,
        more_labels=more,
        candidates=_candidates(found, sign),
        text=_summary(scores.name, found, n_decided, b.n_cases, rule),
        manifest=build_manifest(
            campaign,
            command="escalate",
            metric=joined.reference.metric.name,
            judge=scores.name,
            agreement=found.agreement,
            confidence=found.confidence,
            threshold=given[0],
            max_bands=max_bands,
            **({} if signal is None else {"signal": signal.details["name"]}),
        ),
        signal=None if signal is None else signal.details,
        signals=None if signal is None else signal.signals,
    )
