"""Every rule can fire: each decision (gate, verdict, audit, monitor) at its boundary settings — a
false-pass ceiling of 0 and of 1, a confidence near 0 and near 1 (and exactly 0 and 1), a margin of 0
and as wide as the statistic's range, a floor of -1 and of 1, an alpha at its smallest, a tolerance of
0, one label, no label of a class — either decides correctly or refuses the setting with a message that
names the parameter and the values allowed.

A registry (as scikit-learn's ``test_common.py``): one row per decision and setting, with the outcomes
allowed for each judge, and the same properties checked on every row:

- nothing but a ``ValueError`` (a refusal) escapes a decision;
- a coin-flip judge never passes (the gate, the verdict, the audit as the new judge, the monitor);
- a perfect judge passes wherever the row says passing is possible; where it is not, the setting is
  refused (or the reason says what more it takes);
- a refusal names the parameter and what is allowed.

Then hypothesis attacks the same doors with settings drawn from the whole allowed range and its edges,
and checks the exact answer where one is known: a perfect judge passes the gate exactly when the
Clopper-Pearson bound of no false pass on its human fails is under the ceiling; under a ceiling of 0
the monitor alarms at the first audited false pass, never before, and never on a judge that has none.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from calibrate.analysis.recommendations import recommend_thresholds
from calibrate.analysis.rules import Rule, default_rule
from calibrate.analysis.verdicts import DEFENSIBLE, NEEDS_LABELS, NOT_DEFENSIBLE, STRICTER
from calibrate.campaign import Campaign, campaign_from_frames
from calibrate.review.audit import STATISTIC_SPANS, audit_judges
from calibrate.review.gate import GateRules, run_gate
from calibrate.review.monitor import MIN_ALPHA, monitor_judge
from calibrate.stats.intervals import clopper_pearson_upper, wilson_interval
from calibrate.stats.thresholds import fails_for_ceiling

PASS, FAIL, REFUSED = "pass", "fail", "refused"
N_BOOT = 100
NEAR_ONE = 1 - 1e-15  # the largest confidence a float holds this close to 1 (0.999999999999999)


# ------------------------------------------------------------------------------------ campaigns
@cache
def judged(ceiling: float | None = 0.1, n: int = 160, labels: int | None = None, only: float | None = None) -> Campaign:
    """Binary human labels (half fail), a perfect judge (its scores separate the labels completely), two
    coin-flip judges (uniform scores, the labels ignored), and the metric's ceiling ``ceiling``."""
    rng = np.random.default_rng(7)
    human = (np.arange(n) % 2).astype(float)
    if only is not None:
        human[:] = only
    ids = [f"c{i:04d}" for i in range(n)]
    scores = {
        "perfect": np.clip(0.2 + 0.6 * human + rng.uniform(-0.15, 0.15, n), 0, 1),
        "coin": rng.random(n),
        "coin2": rng.random(n),
    }
    rows = [
        pd.DataFrame({"case_id": ids, "metric": "m", "rater": name, "rater_kind": "judge", "value": v})
        for name, v in scores.items()
    ]
    labelled = ids[:labels] if labels is not None else ids
    rows.append(
        pd.DataFrame(
            {"case_id": labelled, "metric": "m", "rater": "h", "rater_kind": "human", "value": human[: len(labelled)]}
        )
    )
    spec = {"scale": "binary"} | ({"max_false_pass": ceiling} if ceiling is not None else {})
    return campaign_from_frames({"name": "boundary", "metrics": {"m": spec}}, pd.concat(rows))


@cache
def stream(
    judge: str,
    ceiling: float | None = 0.1,
    n_base: int = 300,
    n: int = 900,
    base_only: bool | None = None,
    seed: int = 0,
) -> Campaign:
    """A baseline of labelled cases without a time, then a timed stream, a third audited. ``perfect``
    scores are the labels, ``coin`` scores ignore them, ``good`` passes 5% of the human fails (and 90%
    of the passes)."""
    rng = np.random.default_rng(seed)
    t0 = pd.Timestamp("2026-09-07", tz="UTC")
    human = rng.random(n_base + n) < 0.5
    if base_only is not None:
        human[:n_base] = base_only
    if judge == "perfect":
        score = human.astype(float)
    elif judge == "coin":
        score = rng.random(n_base + n)
    else:
        passes = np.where(human, rng.random(n_base + n) < 0.9, rng.random(n_base + n) < 0.05)
        score = np.where(passes, rng.uniform(0.55, 1, n_base + n), rng.uniform(0, 0.45, n_base + n))
    ids = [f"c{i:05d}" for i in range(n_base + n)]
    audited = np.r_[np.ones(n_base, bool), rng.random(n) < 1 / 3]
    rows = pd.concat(
        [
            pd.DataFrame({"case_id": ids, "metric": "f", "rater": "j", "rater_kind": "judge", "value": score}),
            pd.DataFrame(
                {
                    "case_id": np.array(ids)[audited],
                    "metric": "f",
                    "rater": "h",
                    "rater_kind": "human",
                    "value": human[audited].astype(float),
                }
            ),
        ]
    )
    cases = [
        {
            "case_id": c,
            "metadata": {} if i < n_base else {"time": (t0 + pd.Timedelta(minutes=35 * (i - n_base))).isoformat()},
        }
        for i, c in enumerate(ids)
    ]
    spec = {"scale": "binary"} | ({"max_false_pass": ceiling} if ceiling is not None else {})
    return campaign_from_frames({"name": "stream", "metrics": {"f": spec}}, rows, cases)


# ------------------------------------------------------------------------------------ the decisions
@dataclass
class Outcome:
    kind: str  # PASS, FAIL or REFUSED
    text: str  # the reasons, or the refusal
    doc: Any = None


def decide(call: Callable[[], tuple[str, str, Any]]) -> Outcome:
    try:
        kind, text, doc = call()
    except ValueError as exc:  # a refusal: the only exception a decision may raise
        return Outcome(REFUSED, str(exc))
    return Outcome(kind, text, doc)


def gate(campaign: Campaign, judge: str, confidence: float = 0.95, **rules) -> tuple[str, str, Any]:
    doc = run_gate(campaign, GateRules(**rules), judges=[judge], n_boot=N_BOOT, confidence=confidence)
    return (PASS if doc["passed"] else FAIL), "; ".join(doc["checks"][0]["reasons"]), doc


def verdict(
    campaign: Campaign, judge: str, rule: Callable[[], Rule] | None = None, confidence: float = 0.95
) -> tuple[str, str, Any]:
    chosen = rule() if rule else default_rule(campaign.metrics["m"])
    rec = recommend_thresholds(campaign, metric="m", rule=chosen, judges=[judge], n_boot=0, confidence=confidence)[
        "recommendations"
    ][0]
    v = rec["verdict"]
    return (PASS if v["status"] in (DEFENSIBLE, STRICTER) else FAIL), v["text"], v


def audit(campaign: Campaign, new: str, old: str, **options) -> tuple[str, str, Any]:
    doc = audit_judges(campaign, metric="m", old=old, new=new, n_boot=N_BOOT, **options)
    decision = doc["decision"]
    return (PASS if decision["exit_code"] == 0 else FAIL), decision["reason"], decision


def monitor(campaign: Campaign, **options) -> tuple[str, str, Any]:
    doc = monitor_judge(campaign, metric="f", judge="j", **options)
    alarms = [a for r in doc["rates"] for a in r["alarms"]]
    text = f"{len(alarms)} alarm(s); " + (doc["baseline_fitness"]["reason"] or "")
    return (PASS if doc["passed"] else FAIL), text, doc


# ------------------------------------------------------------------------------------ the registry
@dataclass
class Row:
    """One decision at one setting: how to run it for each judge, what it may answer, and what a refusal
    or a reason must say."""

    decision: str
    setting: str
    run: Callable[[str], Outcome]
    allowed: dict[str, set[str]]
    says: tuple[str, ...] | dict[str, tuple[str, ...]] = ()  # in the refusal or reasons (of a judge, if a dict)
    check: Callable[[str, Outcome], None] | None = field(default=None)

    @property
    def id(self) -> str:
        return f"{self.decision}: {self.setting}"


def _gate_row(setting, allowed, *, says=(), check=None, campaign=lambda: judged(), **options) -> Row:
    return Row("gate", setting, lambda judge: decide(lambda: gate(campaign(), judge, **options)), allowed, says, check)


def _verdict_row(setting, allowed, *, says=(), check=None, campaign=lambda: judged(), **options) -> Row:
    return Row(
        "verdict", setting, lambda judge: decide(lambda: verdict(campaign(), judge, **options)), allowed, says, check
    )


#: new judge -> the old judge it replaces
AUDIT_OLD = {"perfect": "coin", "coin": "perfect", "coin2": "coin"}


def _audit_row(setting, allowed, *, says=(), check=None, campaign=lambda: judged(), **options) -> Row:
    return Row(
        "audit",
        setting,
        lambda judge: decide(lambda: audit(campaign(), judge, AUDIT_OLD[judge], **options)),
        allowed,
        says,
        check,
    )


def _monitor_row(setting, allowed, *, says=(), check=None, ceiling=0.1, build=None, **options) -> Row:
    return Row(
        "monitor",
        setting,
        lambda judge: decide(lambda: monitor((build or stream)(judge, ceiling), **options)),
        allowed,
        says,
        check,
    )


def both(kind: str, *judges: str) -> dict[str, set[str]]:
    return {judge: {kind} for judge in (judges or ("coin", "perfect"))}


def usual(perfect: str = PASS) -> dict[str, set[str]]:
    """A coin flip fails, the perfect judge answers ``perfect``."""
    return {"coin": {FAIL}, "perfect": {perfect}}


def says_what_it_takes(judge: str, outcome: Outcome) -> None:
    """A perfect judge that cannot pass yet is told how many human fails it takes."""
    if judge == "perfect":
        assert "takes at least" in outcome.text and "human fails" in outcome.text, outcome.text


def first_false_pass_alarms(judge: str, outcome: Outcome) -> None:
    """Under a ceiling of 0 the false-pass watch alarms exactly at the first audited false pass."""
    doc = outcome.doc
    [watch] = [r for r in doc["rates"] if r["rate"] == "false_pass_rate"]
    assert watch["bound"] == 0
    c = stream(judge, 0.0)
    labels = c.ratings[c.ratings["rater"] == "h"].set_index("case_id")["value"]
    scores = c.ratings[c.ratings["rater"] == "j"].set_index("case_id")["value"]
    threshold = doc["threshold"]["value"]
    timed = [k for k, v in c.cases.items() if (v.get("metadata") or {}).get("time")]
    false_passes = [k for k in timed if k in labels.index and labels[k] < 1 and scores[k] >= threshold]
    if not false_passes:
        assert not watch["alarms"]
        return
    first = watch["alarms"][0]
    assert first["case_id"] == false_passes[0] and first["certain"] and first["evidence"] is None
    if doc["baseline"]["false_pass_rate"]:  # the baseline passed human fails already: never in range, no change
        assert first["change_case_id"] is None and first["no_change"].startswith("the rate was already above 0")
    else:
        assert first["change_case_id"] == false_passes[0]
    assert outcome.kind == FAIL


REGISTRY: list[Row] = [
    # the gate ------------------------------------------------------------------------------------
    _gate_row("the campaign's ceiling 0.1", usual()),
    _gate_row("max_false_pass 1", usual(), max_false_pass=1.0),
    _gate_row(
        "max_false_pass 0",
        both(REFUSED),
        says=("max_false_pass=0", "can never be shown", "above 0"),
        max_false_pass=0.0,
    ),
    _gate_row(
        "campaign.toml declares max_false_pass 0",
        both(REFUSED),
        says=("max_false_pass = 0 in campaign.toml", "can never be shown", "max_false_pass"),
        campaign=lambda: judged(0.0),
    ),
    _gate_row("no ceiling at all", usual(), campaign=lambda: judged(None)),
    _gate_row("confidence 1e-12", usual(), confidence=1e-12),
    _gate_row("confidence 0.3", usual(), confidence=0.3),
    _gate_row("confidence 0.999", usual(), confidence=0.999),
    _gate_row("confidence 1 - 1e-15", usual(FAIL), check=says_what_it_takes, confidence=NEAR_ONE),
    _gate_row("confidence 0", both(REFUSED), says=("confidence=0", "between 0 and 1"), confidence=0.0),
    _gate_row("confidence 1", both(REFUSED), says=("confidence=1", "between 0 and 1"), confidence=1.0),
    _gate_row("min_spearman 1", both(REFUSED), says=("min_spearman=1", "floor of 1", "below 1"), min_spearman=1.0),
    _gate_row("min_kappa 1", both(REFUSED), says=("min_kappa=1", "floor of 1", "below 1"), min_kappa=1.0),
    _gate_row("min_spearman -1", usual(), min_spearman=-1.0),
    _gate_row("min_kappa -1", usual(), min_kappa=-1.0),
    _gate_row("min_spearman 0.5, min_kappa 0.5", usual(), min_spearman=0.5, min_kappa=0.5),
    _gate_row(
        "min_labels 1, one label", usual(FAIL), says=("only 1 case",), min_labels=1, campaign=lambda: judged(labels=1)
    ),
    _gate_row(
        "min_labels 1, two labels",
        usual(FAIL),
        says=("not shown better than chance",),
        min_labels=1,
        campaign=lambda: judged(labels=2),
    ),
    _gate_row("no human fail", usual(FAIL), says=("same human verdict",), campaign=lambda: judged(only=1.0)),
    _gate_row("no human pass", usual(FAIL), says=("same human verdict",), campaign=lambda: judged(only=0.0)),
    # the verdict ---------------------------------------------------------------------------------
    _verdict_row("the campaign's ceiling 0.1", usual()),
    _verdict_row(
        "campaign.toml declares max_false_pass 0",
        usual(FAIL),
        says=("ceiling of 0 can never be shown",),
        campaign=lambda: judged(0.0),
    ),
    _verdict_row(
        "ceiling 0 under 50 labels (more labels never help)",
        usual(FAIL),
        says=("ceiling of 0 can never be shown",),
        campaign=lambda: judged(0.0, n=40),
    ),
    _verdict_row(
        "ceiling 0 at a confidence",
        usual(FAIL),
        says=("ceiling of 0 can never be shown",),
        rule=lambda: Rule("constraint", max_false_pass=0.0, confidence=0.95),
    ),
    _verdict_row("ceiling 1", usual(), campaign=lambda: judged(1.0)),
    _verdict_row("rule confidence 0.5", usual(), rule=lambda: Rule("constraint", max_false_pass=0.1, confidence=0.5)),
    _verdict_row(
        "rule confidence 1 - 1e-12",
        usual(FAIL),
        says={"perfect": ("needs at least",)},
        rule=lambda: Rule("constraint", max_false_pass=0.1, confidence=1 - 1e-12),
    ),
    _verdict_row(
        "rule confidence 0.3",
        both(REFUSED),
        says=("confidence", "from 0.5"),
        rule=lambda: Rule("constraint", max_false_pass=0.1, confidence=0.3),
    ),
    _verdict_row("intervals at confidence 1e-9", usual(), confidence=1e-9),
    _verdict_row("intervals at confidence 0.3", usual(), confidence=0.3),
    _verdict_row(
        "intervals at confidence 1 - 1e-15", usual(FAIL), says={"perfect": ("needs at least",)}, confidence=NEAR_ONE
    ),
    _verdict_row("one label", usual(FAIL), says=("only 1 case",), campaign=lambda: judged(labels=1)),
    _verdict_row("no human fail", usual(FAIL), says=("needs at least",), campaign=lambda: judged(only=1.0)),
    _verdict_row("no human pass", usual(FAIL), says=("needs human passes",), campaign=lambda: judged(only=0.0)),
    # the audit (the judge named is the new one; the old one is AUDIT_OLD's) ------------------------
    _audit_row("margin 0.05", usual() | {"coin2": {FAIL}}),
    _audit_row("margin 0", usual() | {"coin2": {FAIL}}),
    _audit_row(
        "margin 1.99 (a coin flip is within it, and still no judge)",
        usual() | {"coin2": {FAIL}},
        check=lambda judge, o: judge == "perfect" or "not better than chance" in o.text,
        margin=1.99,
    ),
    _audit_row("margin 2", both(REFUSED, "coin", "perfect", "coin2"), says=("margin=2", "below 2"), margin=2.0),
    _audit_row(
        "margin 1 on the AUC",
        both(REFUSED, "coin", "perfect", "coin2"),
        says=("margin=1", "below 1"),
        margin=1.0,
        statistic="auc",
    ),
    _audit_row(
        "margin 0 on the false-pass rate",
        {"coin": {FAIL}, "perfect": {FAIL}, "coin2": {FAIL}},
        margin=0.0,
        statistic="false_pass_rate",
    ),
    _audit_row("confidence 1e-9", usual() | {"coin2": {FAIL}}, confidence=1e-9),
    _audit_row("confidence 1 - 1e-9", usual() | {"coin2": {FAIL}}, confidence=1 - 1e-9),
    _audit_row(
        "confidence 0",
        both(REFUSED, "coin", "perfect", "coin2"),
        says=("confidence=0", "between 0 and 1"),
        confidence=0.0,
    ),
    _audit_row(
        "confidence 1",
        both(REFUSED, "coin", "perfect", "coin2"),
        says=("confidence=1", "between 0 and 1"),
        confidence=1.0,
    ),
    _audit_row(
        "one label",
        both(FAIL, "coin", "perfect", "coin2"),
        says=("1 labelled case",),
        campaign=lambda: judged(labels=1),
    ),
    _audit_row(
        "no human fail", both(FAIL, "coin", "perfect", "coin2"), says=("undefined",), campaign=lambda: judged(only=1.0)
    ),
    _audit_row(
        "no human pass", both(FAIL, "coin", "perfect", "coin2"), says=("undefined",), campaign=lambda: judged(only=0.0)
    ),
    # the monitor (a judge that passes 5% of the human fails: "good") -------------------------------
    _monitor_row("the campaign's ceiling 0.1", usual() | {"good": {PASS}}),
    # max_false_pass = 0: the first audited false pass is certain evidence, at any alpha
    _monitor_row(
        "max_false_pass 0",
        {"perfect": {PASS}, "good": {FAIL}, "coin": {REFUSED}},
        ceiling=0.0,
        says={"coin": ("(threshold)",)},
        check=lambda judge, o: judge == "coin" or first_false_pass_alarms(judge, o),
    ),
    _monitor_row(
        "max_false_pass 0, alpha 1e-300",
        {"perfect": {PASS}, "good": {FAIL}, "coin": {REFUSED}},
        ceiling=0.0,
        alpha=1e-300,
        says={"coin": ("(threshold)",)},
        check=lambda judge, o: judge == "coin" or first_false_pass_alarms(judge, o),
    ),
    _monitor_row(
        "max_false_pass 0 at threshold 0.5",
        {"perfect": {PASS}, "good": {FAIL}, "coin": {FAIL}},
        ceiling=0.0,
        threshold=0.5,
        check=first_false_pass_alarms,
    ),
    _monitor_row(
        "max_false_pass 1 (not watched)",
        usual() | {"good": {PASS}},
        ceiling=1.0,
        check=lambda judge, o: o.kind == REFUSED or o.doc["not_watched"][0]["rate"] == "false_pass_rate",
    ),
    _monitor_row("alpha 1e-300", usual() | {"good": {PASS}}, alpha=1e-300),
    _monitor_row(
        "alpha below 1e-300", both(REFUSED, "coin", "perfect", "good"), says=("alpha=", "from 1e-300"), alpha=1e-301
    ),
    _monitor_row("alpha 1 - 1e-9", {"coin": {FAIL}, "perfect": {PASS}, "good": {PASS, FAIL}}, alpha=1 - 1e-9),
    _monitor_row("alpha 1", both(REFUSED, "coin", "perfect", "good"), says=("alpha=1", "below 1"), alpha=1.0),
    _monitor_row("tolerance 0", {"coin": {FAIL}, "perfect": {PASS}, "good": {PASS, FAIL}}, tolerance=0.0),
    _monitor_row(
        "one baseline label",
        both(REFUSED, "coin", "perfect", "good"),
        says=("(threshold)",),
        build=lambda judge, ceiling: stream(judge, ceiling, n_base=1),
    ),
    _monitor_row(
        "no human fail on the baseline",
        {"coin": {REFUSED, FAIL}, "perfect": {REFUSED, FAIL}, "good": {REFUSED, FAIL}},
        build=lambda judge, ceiling: stream(judge, ceiling, base_only=True),
    ),
    _monitor_row(
        "no human pass on the baseline",
        {"coin": {REFUSED, FAIL}, "perfect": {REFUSED, FAIL}, "good": {REFUSED, FAIL}},
        build=lambda judge, ceiling: stream(judge, ceiling, base_only=False),
    ),
]

CELLS = [(row, judge) for row in REGISTRY for judge in row.allowed]


@pytest.mark.parametrize("row, judge", CELLS, ids=[f"{row.id} / {judge}" for row, judge in CELLS])
def test_every_decision_at_its_boundary_decides_or_refuses_clearly(row: Row, judge: str):
    outcome = row.run(judge)
    assert outcome.kind in row.allowed[judge], f"{row.id}, {judge}: {outcome.kind}: {outcome.text}"
    if judge.startswith("coin"):  # whatever the setting, a coin flip never passes
        assert outcome.kind != PASS, outcome.text
    for words in row.says.get(judge, ()) if isinstance(row.says, dict) else row.says:
        if outcome.kind != PASS:
            assert words in outcome.text, f"{row.id}, {judge}: {words!r} not in {outcome.text!r}"
    if outcome.kind == REFUSED:  # a refusal names what is allowed (or what to give instead)
        assert any(w in outcome.text for w in ("expected", "give", "declare", "must be")), outcome.text
    if row.check:
        row.check(judge, outcome)


def test_the_registry_covers_every_decision_at_every_boundary():
    settings_by_decision: dict[str, list[str]] = {}
    for row in REGISTRY:
        settings_by_decision.setdefault(row.decision, []).append(row.setting)
    assert set(settings_by_decision) == {"gate", "verdict", "audit", "monitor"}
    for decision, names in settings_by_decision.items():
        text = " | ".join(names)
        assert "one label" in text or "one baseline label" in text, decision
        assert "no human fail" in text and "no human pass" in text, decision
        assert "confidence" in text or "alpha" in text, decision
    assert any("ceiling" in s or "max_false_pass 0" in s for s in settings_by_decision["monitor"])
    assert any("margin 0" in s for s in settings_by_decision["audit"])


# ------------------------------------------------------------------------------------ hypothesis
FEW = settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
edges = st.sampled_from([1e-300, 1e-12, 1e-6, 0.01, 0.3, 0.5, 0.9, 0.95, 0.999, 1 - 1e-9, NEAR_ONE])


@FEW
@given(
    confidence=edges | st.floats(min_value=1e-300, max_value=NEAR_ONE),
    ceiling=st.sampled_from([1e-9, 0.01, 0.05, 0.1, 1.0]) | st.floats(min_value=1e-9, max_value=1.0),
)
def test_a_perfect_gate_passes_exactly_where_its_bound_allows_and_a_coin_flip_never(confidence, ceiling):
    c = judged()
    n_fail = 80
    level = (1 + confidence) / 2
    possible = float(clopper_pearson_upper(0, n_fail, confidence=level)) <= ceiling
    perfect = run_gate(c, GateRules(max_false_pass=ceiling), judges=["perfect"], n_boot=0, confidence=confidence)
    assert perfect["passed"] == possible, (confidence, ceiling, perfect["checks"][0]["reasons"])
    if not possible:
        assert any("even with no false pass, that takes " in r for r in perfect["checks"][0]["reasons"])
    coin = run_gate(c, GateRules(max_false_pass=ceiling), judges=["coin"], n_boot=0, confidence=confidence)
    assert not coin["passed"]
    assert any("not shown better than chance (needs p < " in r for r in coin["checks"][0]["reasons"])


@FEW
@given(
    confidence=edges | st.floats(min_value=1e-300, max_value=NEAR_ONE),
    ceiling=st.sampled_from([0.0, 1e-9, 0.05, 0.1, 1.0]) | st.floats(min_value=0, max_value=1.0),
)
def test_a_verdict_is_defensible_exactly_where_labels_allow_and_never_for_a_coin_flip_or_a_zero_ceiling(
    confidence, ceiling
):
    c = judged(ceiling)
    for judge in ("coin", "coin2", "perfect"):
        v = verdict(c, judge, confidence=confidence)[2]
        if ceiling == 0:
            assert v["status"] == NOT_DEFENSIBLE and "can never be shown" in v["text"]
            assert v["labels_needed"] is None  # more labels never help
        elif judge.startswith("coin"):
            assert v["status"] in (NOT_DEFENSIBLE,), v["text"]
        elif float(wilson_interval(0, 80, confidence=confidence)[1]) <= ceiling + 1e-12:  # (the verdict's tolerance)
            # a threshold with no false pass on its 80 human fails has an interval under the ceiling
            assert v["status"] in (DEFENSIBLE, STRICTER), v["text"]
        elif fails_for_ceiling(0.0, ceiling, confidence=confidence) is None:  # beyond any count of labels
            assert v["status"] == NOT_DEFENSIBLE and "more than 1,000,000 human fails" in v["text"], v["text"]
        else:  # not yet: the verdict says how many human fails it takes
            assert v["status"] == NEEDS_LABELS and v["labels_needed"]["human_fails"] > 0, v["text"]


@FEW
@given(statistic=st.sampled_from(sorted(STATISTIC_SPANS)), share=st.floats(0, 1.5), confidence=edges)
def test_an_audit_margin_is_refused_exactly_where_nothing_could_be_inferior(statistic, share, confidence):
    margin = share * STATISTIC_SPANS[statistic]
    try:
        doc = audit_judges(
            judged(),
            metric="m",
            old="perfect",
            new="coin",
            margin=margin,
            statistic=statistic,
            n_boot=0,
            confidence=confidence,
        )
    except ValueError as exc:
        assert margin >= STATISTIC_SPANS[statistic] and "margin=" in str(exc) and "below" in str(exc)
        return
    assert margin < STATISTIC_SPANS[statistic]
    assert doc["decision"]["exit_code"] == 1  # a coin flip never replaces a perfect judge


@FEW
@given(
    alpha=st.sampled_from([MIN_ALPHA, 1e-12, 0.05, 0.5, 1 - 1e-9]) | st.floats(MIN_ALPHA, 1 - 1e-12),
    threshold=st.floats(0.05, 0.95),
    seed=st.integers(0, 3),
)
def test_under_a_zero_ceiling_the_monitor_alarms_at_the_first_false_pass_and_never_without_one(alpha, threshold, seed):
    for judge in ("good", "perfect"):
        c = stream(judge, 0.0, n_base=100, n=300, seed=seed)
        doc = monitor_judge(c, metric="f", judge="j", alpha=alpha, threshold=threshold)
        [watch] = [r for r in doc["rates"] if r["rate"] == "false_pass_rate"]
        labels = c.ratings[c.ratings["rater"] == "h"].set_index("case_id")["value"]
        scores = c.ratings[c.ratings["rater"] == "j"].set_index("case_id")["value"]
        timed = [k for k, v in c.cases.items() if (v.get("metadata") or {}).get("time")]
        false_passes = [k for k in timed if k in labels.index and labels[k] < 1 and scores[k] >= threshold]
        if not false_passes:
            assert not watch["alarms"], judge
        else:
            assert watch["alarms"][0]["case_id"] == false_passes[0] and watch["alarms"][0]["certain"]
        json.dumps(doc, allow_nan=False)  # the document stays valid JSON (no infinite evidence or threshold)


# ------------------------------------------------------------------------------------ the command line
def _cli(*args) -> Any:
    from calibrate.cli import main

    return CliRunner().invoke(main, [str(a) for a in args])


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    from tests.conftest import write_campaign

    c = judged()
    return write_campaign(
        tmp_path_factory.mktemp("rules") / "c",
        'name = "rules"\n[metrics.m]\nscale = "binary"\nmax_false_pass = 0.1\n',
        c.ratings[["case_id", "metric", "rater", "rater_kind", "value"]],
    )


@pytest.mark.parametrize(
    "args, says",
    [
        (("gate", "--max-false-pass", 0), "--max-false-pass 0.0: a false-pass ceiling of 0 can never be shown"),
        (("gate", "--min-kappa", 1), "--min-kappa 1.0: a floor of 1 can never be shown"),
        (("gate", "--min-spearman", 1), "--min-spearman 1.0: a floor of 1 can never be shown"),
        (
            ("audit", "--metric", "m", "--old", "perfect", "--new", "coin", "--margin", 2),
            "--margin 2.0: expected a number from 0 to below 2",
        ),
        (("thresholds", "--max-false-pass", 0.1, "--confidence", 0.3), "0.5<=x<1"),
    ],
)
def test_the_command_line_refuses_a_setting_no_judge_could_meet(folder, args, says):
    result = _cli(args[0], folder, *args[1:])
    assert result.exit_code == 2, result.output
    assert says in result.stderr.replace("\n", " "), result.stderr
    assert result.exception is None or isinstance(result.exception, SystemExit)


def test_a_zero_ceiling_alarm_prints_and_serialises(tmp_path):
    from tests.conftest import write_campaign

    c = stream("good", 0.0)
    folder = write_campaign(
        tmp_path / "s",
        'name = "s"\n[metrics.f]\nscale = "binary"\nmax_false_pass = 0\n',
        c.ratings[["case_id", "metric", "rater", "rater_kind", "value"]],
        list(c.cases.values()),
    )
    text = _cli("monitor", folder, "--metric", "f", "--judge", "j", "--alpha", "1e-300")
    assert text.exit_code == 1, text.output
    assert "evidence certain (its range allows no such case)" in text.stdout
    doc = json.loads(_cli("monitor", folder, "--metric", "f", "--judge", "j", "--alpha", "1e-300", "--json").stdout)
    alarm = doc["rates"][0]["alarms"][0]
    assert doc["rates"][0]["bound"] == 0 and alarm["certain"] and alarm["evidence"] is None
    assert math.isclose(alarm["threshold"], 4e300)
