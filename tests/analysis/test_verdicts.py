"""The verdict block: planted judges (perfect, good, coin-flip) must get the verdict they deserve,
through the whole flow (a campaign, ``thresholds`` and ``stats``), and no verdict may call a judge
defensible that the rule cannot hold."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calibrate.analysis.agreement import compute_stats
from calibrate.analysis.recommendations import thresholds
from calibrate.analysis.verdict_results import MetricVerdict
from calibrate.analysis.verdicts import (
    DEFENSIBLE,
    NEEDS_LABELS,
    NO_CRITERION,
    NOT_DEFENSIBLE,
    NOT_SHOWN,
    STRICTER,
    judge_verdict,
    labels_to_beat_chance,
    verdict_lines,
)
from calibrate.campaign import Campaign, campaign_from_frames
from calibrate.stats.intervals import wilson_interval


def _campaign(
    n: int, fail_share: float = 0.4, metric: dict | None = None, seed: int = 0, second_annotator: bool = False
) -> Campaign:
    rng = np.random.default_rng(seed)
    ids = [f"c{i:03d}" for i in range(n)]
    human = (np.arange(n) >= round(fail_share * n)).astype(float)  # the first share fail
    judges = {
        "perfect": np.where(human == 1, 0.6 + 0.4 * rng.random(n), 0.4 * rng.random(n)),
        # passes score high; a fifth of the fails too
        "good": np.where((human == 1) | (rng.random(n) < 0.2), 0.5 + 0.5 * rng.random(n), 0.5 * rng.random(n)),
        "coin": rng.random(n),
    }
    rows = [
        {"case_id": c, "metric": "m", "rater": "ann", "rater_kind": "human", "value": v} for c, v in zip(ids, human)
    ]
    if second_annotator:  # agrees on all but every tenth case
        rows += [
            {"case_id": c, "metric": "m", "rater": "bob", "rater_kind": "human", "value": 1 - v if i % 10 == 0 else v}
            for i, (c, v) in enumerate(zip(ids, human))
        ]
    for name, scores in judges.items():
        rows += [
            {"case_id": c, "metric": "m", "rater": name, "rater_kind": "judge", "value": float(s)}
            for c, s in zip(ids, scores)
        ]
    config = {
        "name": "planted",
        "metrics": {"m": {"scale": "binary", **({"max_false_pass": 0.1} if metric is None else metric)}},
        "raters": {name: {"family": name} for name in judges},
    }
    return campaign_from_frames(config, pd.DataFrame(rows))


def _by_judge(doc) -> dict[str, dict]:
    return {v["judge"]: v for v in doc["verdicts"][0]["judges"]}


def test_planted_judges_get_their_verdicts_and_the_perfect_one_is_best():
    doc = thresholds(_campaign(400), n_boot=100)
    v = _by_judge(doc)
    # the rule's most lenient threshold lets a tenth of the fails through; a stricter one is defensible
    assert v["perfect"]["status"] == STRICTER
    assert v["perfect"]["text"].startswith("perfect: defensible at a stricter threshold: pass at score ≥ ")
    assert v["good"]["status"] in (DEFENSIBLE, STRICTER)
    assert v["coin"]["status"] == NOT_DEFENSIBLE and "no better than chance" in v["coin"]["text"]
    best = doc["verdicts"][0]["best"]
    assert best["judge"] == "perfect" and best["text"].startswith("best by the rule: perfect at score ≥ ")
    assert "agrees with the human verdict on 0.9" in best["text"]


def test_a_defensible_verdict_holds_the_interval_under_the_ceiling():
    doc = thresholds(_campaign(400), n_boot=100)
    for rec in doc["recommendations"]:
        verdict = rec["verdict"]
        if verdict["status"] == DEFENSIBLE:
            assert rec["false_pass_rate_ci"][1] <= 0.1
        if verdict["status"] == STRICTER:  # the rule's threshold reaches past; the one offered does not
            assert rec["false_pass_rate_ci"][1] > 0.1
            alternative = rec["defensible_alternative"]
            assert alternative["false_pass_rate"]["ci_high"] <= 0.1
            assert alternative["threshold"] > rec["threshold"] and verdict["threshold"] == alternative["threshold"]


def test_too_few_human_fails_say_how_many_more_and_of_which_kind():
    # 40 cases, 16 of them human fails: even no false pass has a Wilson upper bound of 0.19
    doc = thresholds(_campaign(40), n_boot=50)
    v = _by_judge(doc)["perfect"]
    assert v["status"] == NEEDS_LABELS
    assert "16 human fails: a 0.1 ceiling needs at least 35" in v["text"]
    assert v["labels_needed"]["human_fails"] == 35 - 16
    assert v["labels_needed"]["cases"] == 48  # 19 fails at a 40% share of fails, and over 50 labels
    assert doc["verdicts"][0]["best"]["judge"] is None
    assert doc["verdicts"][0]["best"]["text"].startswith("no judge is defensible yet; closest: ")


def test_no_declared_rule_gives_nothing_to_defend():
    doc = thresholds(_campaign(200, metric={}), n_boot=50)
    verdict = doc["verdicts"][0]
    assert {v["status"] for v in verdict["judges"]} == {NO_CRITERION}
    assert verdict["best"]["judge"] is None and "declares no rule" in verdict["best"]["text"]


def test_a_cost_rule_ranks_by_expected_cost():
    doc = thresholds(_campaign(400, metric={"cost_false_pass": 5, "cost_false_fail": 1}), n_boot=50)
    v = _by_judge(doc)
    assert v["perfect"]["status"] == DEFENSIBLE and "(least expected cost)" in v["perfect"]["text"]
    assert v["coin"]["status"] == NOT_DEFENSIBLE
    assert doc["verdicts"][0]["best"]["judge"] == "perfect"


def test_every_label_a_pass_asks_for_human_fails():
    c = _campaign(60, fail_share=0.0)
    v = _by_judge(thresholds(c, n_boot=20))["perfect"]
    assert v["status"] == NEEDS_LABELS and "every one of the 60 human labels is a pass" in v["text"]
    assert v["labels_needed"]["human_fails"] == 35


def test_stats_carries_the_same_verdicts_and_the_human_ceiling():
    c = _campaign(200, second_annotator=True)
    stats_doc = compute_stats(c, n_boot=50)
    threshold_doc = thresholds(c, n_boot=50)
    mine, theirs = stats_doc["metrics"][0]["verdict"], threshold_doc["verdicts"][0]
    assert [v["text"] for v in mine["judges"]] == [v["text"] for v in theirs["judges"]]
    assert mine["ceiling"]["text"].startswith("human ceiling: 2 annotators agree on 0.90 [")
    lines = verdict_lines(stats_doc.metrics[0].verdict)
    assert lines[0] == "m: most lenient threshold with false-pass rate <= 0.1" and len(lines) == 3 + 3


def _rec(
    k_fp: int,
    n_fail: int,
    k_ff: int,
    n_pass: int,
    p: float,
    ceiling: float,
    *,
    rule: dict | None = None,
    threshold: float | None = 0.5,
) -> dict:
    low, high = wilson_interval(k_fp, n_fail)
    f_low, f_high = wilson_interval(k_ff, n_pass)
    return {
        "judge": "j",
        "rule": rule or {"kind": "constraint", "max_false_pass": ceiling},
        "threshold": threshold,
        "pass_rule": "score >= threshold",
        "n": n_fail + n_pass,
        "n_human_pass": n_pass,
        "n_human_fail": n_fail,
        "false_pass_rate": k_fp / n_fail,
        "false_fail_rate": k_ff / n_pass,
        "false_pass_rate_detail": {"estimate": k_fp / n_fail, "ci_low": float(low), "ci_high": float(high)},
        "false_fail_rate_detail": {"estimate": k_ff / n_pass, "ci_low": float(f_low), "ci_high": float(f_high)},
        "separation": {"auc": 0.8, "chance_p": p, "n_pass": n_pass, "n_fail": n_fail},
    }


RULES = {
    "ceiling": None,
    "ceiling at 95%": "confidence",
    "cost": {"kind": "cost", "cost_false_pass": 5, "cost_false_fail": 1},
    "fixed": {"kind": "fixed", "threshold": 0.5},
}


@settings(max_examples=400, deadline=None)
@given(
    n_fail=st.integers(1, 400),
    n_pass=st.integers(1, 400),
    data=st.data(),
    p=st.one_of(st.floats(0, 0.03), st.floats(0, 1)),
    ceiling=st.sampled_from([0.01, 0.05, 0.1, 0.2]),
    kind=st.sampled_from(sorted(RULES)),
    has_threshold=st.booleans(),
)
def test_no_verdict_defends_what_the_rule_cannot_hold(n_fail, n_pass, data, p, ceiling, kind, has_threshold):
    # false passes around the ceiling, where the verdict turns, as often as anywhere else
    k_fp = data.draw(st.one_of(st.integers(0, n_fail), st.integers(0, min(n_fail, int(ceiling * n_fail) + 1))))
    k_ff = data.draw(st.integers(0, n_pass))
    rule = RULES[kind] or {"kind": "constraint", "max_false_pass": ceiling}
    if rule == "confidence":
        rule = {"kind": "constraint", "max_false_pass": ceiling, "confidence": 0.95}
    rec = _rec(k_fp, n_fail, k_ff, n_pass, p, ceiling, rule=rule, threshold=0.5 if has_threshold else None)
    if rule.get("confidence"):  # such a rule shows the one-sided bound it kept under its ceiling
        from calibrate.stats.intervals import clopper_pearson_upper

        rec["false_pass_rate_detail"].update(ci_low=0.0, ci_high=float(clopper_pearson_upper(k_fp, n_fail)))
    verdict = judge_verdict(rec)
    assert verdict.text.startswith("j: ") and verdict.status in (
        DEFENSIBLE,
        NEEDS_LABELS,
        NOT_SHOWN,
        NOT_DEFENSIBLE,
        NO_CRITERION,
    )
    enough = p < 0.025 and n_fail + n_pass >= 50 and has_threshold
    if kind == "fixed":
        assert verdict.status == NO_CRITERION
    elif kind == "cost":
        assert (verdict.status == DEFENSIBLE) == enough
    else:  # the bound shown is the bound checked (a rule with a confidence shows its own one-sided bound)
        assert (verdict.status == DEFENSIBLE) == (
            enough and rec["false_pass_rate_detail"]["ci_high"] <= ceiling + 1e-12
        )
    if verdict.status == NEEDS_LABELS:
        assert verdict.labels_needed.cases > 0
    if verdict.status == NOT_SHOWN:  # no sign of separating, few labels: no count is projected
        assert verdict.labels_needed is None and n_fail + n_pass < 50 and p >= 0.025
    if p >= 0.025 and kind != "fixed" and verdict.status == NEEDS_LABELS and verdict.chance:
        # the count given for the test against chance is what labels_to_beat_chance projects
        total = labels_to_beat_chance(p, n_fail + n_pass, level=0.025)
        assert verdict.chance.total == total and verdict.labels_needed.cases >= total - n_fail - n_pass


@pytest.mark.parametrize("rule", [None, RULES["cost"]])
def test_a_chance_p_value_at_the_level_itself_is_not_below_it(rule):
    """Found in CI: (1 - 0.95) / 2 is 0.025000000000000022 in floating point, and passed p = 0.025."""
    verdict = judge_verdict(_rec(0, 35, 0, 15, 0.025, 0.1, rule=rule))
    assert verdict.status != DEFENSIBLE and "needs p < 0.025" in verdict.text


@pytest.mark.parametrize("status", [DEFENSIBLE, NEEDS_LABELS, NOT_DEFENSIBLE])
def test_verdict_examples(status):
    recs = {
        DEFENSIBLE: _rec(2, 100, 10, 100, 0.001, 0.1),
        NEEDS_LABELS: _rec(0, 16, 6, 24, 0.001, 0.1),
        NOT_DEFENSIBLE: _rec(5, 100, 50, 100, 0.4, 0.1),
    }
    assert judge_verdict(recs[status]).status == status


def test_enough_fails_for_no_false_pass_but_a_rate_near_the_ceiling_counts_the_labels_at_that_rate():
    verdict = judge_verdict(_rec(9, 100, 10, 100, 0.001, 0.1))
    assert verdict.status == NEEDS_LABELS
    assert verdict.labels_needed.human_fails == 3458 - 100 and verdict.labels_needed.cases == 6716


@pytest.mark.parametrize(
    "rate, ceiling, one_sided",
    [
        (0.0, 0.1, False),
        (0.0, 0.05, False),
        (0.06, 0.1, False),
        (0.02, 0.05, False),
        (0.0, 0.1, True),
        (0.05, 0.1, True),
    ],
)
def test_fails_for_ceiling_is_the_first_count_whose_bound_is_within_the_ceiling(rate, ceiling, one_sided):
    from calibrate.stats.intervals import clopper_pearson_upper
    from calibrate.stats.thresholds import fails_for_ceiling

    n = np.arange(1, 5000)
    bound = clopper_pearson_upper(rate * n, n) if one_sided else wilson_interval(rate * n, n)[1]
    assert fails_for_ceiling(rate, ceiling, one_sided=one_sided) == int(n[np.argmax(bound <= ceiling + 1e-12)])


# ------------------------------------------------------------------------ honest on few labels (issue 26)
def _spread(n_pass: int, n_fail: int, shift: float) -> tuple[np.ndarray, np.ndarray]:
    """Scores evenly spread over (0, 1), the human fails' shifted down by ``shift``: a separation of known
    strength that does not depend on a draw (0: a coin flip's, exactly)."""
    passes = (np.arange(n_pass) + 0.5) / n_pass
    fails = np.clip((np.arange(n_fail) + 0.5) / n_fail - shift, 0.001, 0.999)
    return np.r_[passes, fails], np.r_[np.ones(n_pass), np.zeros(n_fail)]


def _planted(
    judges: dict[str, tuple[int, int, float]], metric: dict | None = None, config: dict | None = None
) -> Campaign:
    """One campaign per planted judge set: ``{name: (n_pass, n_fail, shift)}``, each judge on its own cases."""
    rows = []
    for name, (n_pass, n_fail, shift) in judges.items():
        score, human = _spread(n_pass, n_fail, shift)
        ids = [f"{name}-{i:04d}" for i in range(human.size)]
        rows += [
            {"case_id": c, "metric": "m", "rater": "ann", "rater_kind": "human", "value": v} for c, v in zip(ids, human)
        ]
        rows += [
            {"case_id": c, "metric": "m", "rater": name, "rater_kind": "judge", "value": float(x)}
            for c, x in zip(ids, score)
        ]
    spec = {"scale": "binary", **({"max_false_pass": 0.1} if metric is None else metric)}
    return campaign_from_frames({"name": "planted", "metrics": {"m": spec}, **(config or {})}, pd.DataFrame(rows))


def _verdict_of(campaign: Campaign, judge: str, **options) -> dict:
    return _by_judge(thresholds(campaign, judges=[judge], n_boot=0, **options))[judge]


def test_the_reproduction_ten_human_fails_at_p_0031_is_not_shown_yet_with_a_count():
    """Issue 26: 10 human fails, p = 0.031 was "not defensible: ... no better than chance"."""
    v = _verdict_of(_planted({"j": (50, 10, 0.21)}), "j")
    assert v["status"] == NEEDS_LABELS
    assert v["text"].startswith(
        "j: not shown better than chance yet: about 6 more labels (1 human fail) would "
        "settle it (AUC 0.69, one-sided Mann-Whitney p = 0.03"
    )
    assert "no better than chance" not in v["text"]
    assert v["chance"] == {"labels": 6, "human_fails": 1, "total": 66}
    # 10 human fails are also too few for the 0.1 ceiling: the line says so after, and the count covers both
    assert "; and the rule needs more: at score ≥ " in v["text"] and v["labels_needed"]["cases"] >= 6
    # under costs the test against chance is all that is missing
    v = _verdict_of(_planted({"j": (50, 10, 0.21)}, {"cost_false_pass": 5, "cost_false_fail": 1}), "j")
    assert v["status"] == NEEDS_LABELS and v["labels_needed"] == {"human_fails": 1, "cases": 6, "fail_share": 1 / 6}
    assert (
        v["text"].startswith(
            "j: not shown better than chance yet: about 6 more labels (1 human fail) would settle it ("
        )
        and "; at score ≥ " in v["text"]
    )


@pytest.mark.parametrize("shift", [0.14, 0.18, 0.24])
def test_the_count_is_where_the_separation_seen_would_be_shown(shift):
    """The count's meaning, checked: the same cases copied k times keep the AUC and the shares; the test
    against chance gets under 0.025 from about the projected total on, not before."""
    from calibrate.stats.library import separation

    score, human = _spread(20, 10, shift)
    v = _verdict_of(_planted({"j": (20, 10, shift)}), "j")
    total = v["chance"]["total"]
    assert v["status"] == NEEDS_LABELS and v["text"].startswith("j: not shown better than chance yet: about ")
    for copies in range(1, 8):
        p = separation(np.tile(score, copies), np.tile(human, copies) == 1)["chance_p"]
        if copies * 30 >= 1.15 * total:
            assert p < 0.025, (copies, p, total)
        if copies * 30 <= 0.85 * total:
            assert p >= 0.025, (copies, p, total)


def test_a_coin_flip_on_few_labels_shows_no_sign_and_gets_no_count():
    c = _planted({"coin": (12, 8, 0.0)})
    v = _verdict_of(c, "coin")
    assert v["status"] == NOT_SHOWN and v["labels_needed"] is None and v["chance"] is None
    assert v["text"].startswith(
        "coin: not shown better than chance; its scores show no sign of separating human passes from fails (AUC 0.50"
    )
    assert not any(ch.isdigit() for ch in v["text"].split("gives no count")[1].split("(on 50")[0])
    assert thresholds(c, n_boot=0)["verdicts"][0]["best"]["text"] == "no judge is defensible yet"


@pytest.mark.parametrize("seed", range(12))
def test_a_coin_flip_on_many_labels_is_not_defensible_or_at_most_one_doubling_from_settled(seed):
    [rec] = thresholds(_campaign(400, seed=seed), judges=["coin"], n_boot=0)["recommendations"]
    v = rec["verdict"]
    if rec["separation"]["chance_p"] < 0.025:
        # the test's own error: a coin flip gets through it once in 40 draws (seed 10 here); then a ceiling
        # rule makes it fail nearly every human pass, and the line says so
        assert "fails most human passes" in v["text"] or v["status"] not in (DEFENSIBLE, STRICTER)
        return
    assert v["status"] in (NOT_DEFENSIBLE, NEEDS_LABELS), v["text"]
    if v["status"] == NEEDS_LABELS:  # a draw that looks like a weak judge: never more than doubling the labels
        assert v["chance"]["total"] <= 800 and v["text"].startswith("coin: not shown better than chance yet")
    else:
        assert "no better than chance" in v["text"]


def test_a_coin_flip_on_many_labels_with_no_sign_is_not_defensible():
    v = _verdict_of(_planted({"coin": (240, 160, 0.0)}), "coin")
    assert v["status"] == NOT_DEFENSIBLE and v["labels_needed"] is None
    assert (
        v["text"].startswith(
            "coin: not defensible: its scores separate human passes from fails no better than chance (AUC 0.50"
        )
        and "more labels would not show one" in v["text"]
    )


def test_a_weak_sign_on_many_labels_is_not_defensible_and_says_how_far_off_it_is():
    v = _verdict_of(_planted({"weak": (240, 160, 0.04)}), "weak")  # AUC 0.54, p = 0.094: z 1.31
    assert v["status"] == NOT_DEFENSIBLE and "over 2 times the 400 so far" in v["text"], v["text"]


def test_scores_that_run_backwards_say_so():
    v = _verdict_of(_planted({"backwards": (20, 10, -0.6)}), "backwards")
    assert v["status"] == NOT_SHOWN and "higher_is_better = false" in v["text"]


#: (scenario, campaign maker, the perfect judge's status, the coin flip's): every status, a perfect judge and a
#: coin flip at each; a coin flip is never defensible
SCENARIOS = [
    (
        "a ceiling, many labels",
        lambda: _planted({"perfect": (240, 160, 0.6), "coin": (240, 160, 0.0)}),
        (DEFENSIBLE, STRICTER),
        NOT_DEFENSIBLE,
    ),
    (
        "a ceiling, few labels",
        lambda: _planted({"perfect": (24, 16, 0.6), "coin": (24, 16, 0.0)}),
        NEEDS_LABELS,
        NOT_SHOWN,
    ),
    (
        "a ceiling of 0",
        lambda: _planted({"perfect": (240, 160, 0.6), "coin": (240, 160, 0.0)}, {"max_false_pass": 0}),
        NOT_DEFENSIBLE,
        NOT_DEFENSIBLE,
    ),
    (
        "costs, many labels",
        lambda: _planted(
            {"perfect": (240, 160, 0.6), "coin": (240, 160, 0.0)}, {"cost_false_pass": 5, "cost_false_fail": 1}
        ),
        DEFENSIBLE,
        NOT_DEFENSIBLE,
    ),
    (
        "no rule",
        lambda: _planted({"perfect": (240, 160, 0.6), "coin": (240, 160, 0.0)}, {}),
        NO_CRITERION,
        NO_CRITERION,
    ),
]


@pytest.mark.parametrize("scenario, make, perfect, coin", SCENARIOS, ids=[s[0] for s in SCENARIOS])
def test_a_perfect_judge_and_a_coin_flip_at_each_status(scenario, make, perfect, coin):
    v = _by_judge(thresholds(make(), n_boot=0))
    assert v["perfect"]["status"] in (perfect if isinstance(perfect, tuple) else (perfect,)), v["perfect"]["text"]
    assert v["coin"]["status"] == coin, v["coin"]["text"]
    assert v["coin"]["status"] not in (DEFENSIBLE, STRICTER)


# ------------------------------------------------------------------ a defensible threshold that fails most passes
def test_a_defensible_threshold_that_fails_most_human_passes_says_so():
    # passes score high only a fifth of the time; fails never: under a 0.1 ceiling the threshold fails 80% of passes
    rng = np.random.default_rng(4)
    human = np.r_[np.ones(300), np.zeros(200)]
    score = np.where((human == 1) & (rng.random(500) < 0.2), rng.uniform(0.8, 1, 500), rng.uniform(0, 0.6, 500))
    ids = [f"c{i}" for i in range(500)]
    rows = pd.DataFrame(
        {
            "case_id": ids * 2,
            "metric": "m",
            "rater": ["ann"] * 500 + ["harsh"] * 500,
            "rater_kind": ["human"] * 500 + ["judge"] * 500,
            "value": np.r_[human, score],
        }
    )
    doc = thresholds(
        campaign_from_frames({"name": "h", "metrics": {"m": {"scale": "binary", "max_false_pass": 0.1}}}, rows),
        n_boot=0,
    )
    v = _by_judge(doc)["harsh"]
    assert v["status"] in (DEFENSIBLE, STRICTER)
    assert ", though it fails most human passes: pass at score ≥ " in v["text"]
    assert ": a gate there blocks 8" in v["text"] and v["text"].endswith("% of the answers the annotators passed")
    assert v["warnings"] and v["warnings"][0].startswith("it fails most human passes: false fails 0.8")
    assert "even so, it fails 8" in doc["verdicts"][0]["best"]["text"]
    # a judge that fails few passes gets no such word
    good = _by_judge(thresholds(_campaign(400), judges=["perfect"], n_boot=0))["perfect"]
    assert "most human passes" not in good["text"] and not good["warnings"]


# ----------------------------------------------------------------------- the threshold the user runs today
def _deepeval_campaign(
    settings: dict | None = None, library: str = "deepeval", metric: str = "faithfulness"
) -> Campaign:
    """60 cases, 27 human fails: the judge passes 21 of them and 3 of the 33 human passes score under 0.5."""
    human = np.r_[np.ones(33), np.zeros(27)]
    score = np.r_[np.linspace(0.55, 1, 30), [0.1, 0.2, 0.3], np.linspace(0.6, 0.99, 21), np.linspace(0.05, 0.4, 6)]
    ids = [f"c{i:02d}" for i in range(60)]
    rows = pd.DataFrame(
        {
            "case_id": ids * 2,
            "metric": "faithfulness",
            "rater": ["ann"] * 60 + ["faith-gpt"] * 60,
            "rater_kind": ["human"] * 60 + ["judge"] * 60,
            "value": np.r_[human, score],
        }
    )
    judge = {
        "library": library,
        "metric": metric,
        "into": "faithfulness",
        "settings": settings or {},
        "model": {"provider": "openai", "name": "gpt-4o-mini", "base_url": "http://127.0.0.1:9"},
    }
    return campaign_from_frames(
        {
            "name": "d",
            "metrics": {"faithfulness": {"scale": "binary", "max_false_pass": 0.1}},
            "judges": {"faith-gpt": judge},
        },
        rows,
    )


def test_a_deepeval_judge_is_read_at_deepevals_default_in_its_verdict():
    doc = thresholds(_deepeval_campaign(), n_boot=0)
    v = _by_judge(doc)["faith-gpt"]
    [current] = v["current"]
    assert current["threshold"] == 0.5 and current["source"] == "deepeval_default"
    assert current["text"] == (
        "at your current threshold 0.5 (DeepEval's default): passes 21 of 27 answers the "
        "annotators failed (0.78 [0.59, 0.89]) and fails 3 of 33 answers they passed "
        "(0.09 [0.03, 0.24]); past the 0.1 ceiling"
    )
    lines = verdict_lines(MetricVerdict.from_dict(doc["verdicts"][0]))
    assert lines[2] == "    " + current["text"] and lines[1].startswith("  faith-gpt: ")
    # the same in stats, with the rates and counts in the document
    rec = doc["recommendations"][0]["current"][0]
    assert (rec["false_pass_rate"]["k"], rec["false_pass_rate"]["n"]) == (21, 27)
    assert (
        compute_stats(_deepeval_campaign(), n_boot=0)["metrics"][0]["verdict"]["judges"][0]["current"] == v["current"]
    )


@pytest.mark.parametrize(
    "settings, threshold, source",
    [({"threshold": 0.7}, 0.7, "deepeval_setting"), ({"strict_mode": True}, 1.0, "deepeval_strict_mode")],
)
def test_a_deepeval_judges_own_threshold_or_strict_mode(settings, threshold, source):
    [current] = _verdict_of(_deepeval_campaign(settings), "faith-gpt")["current"]
    assert (current["threshold"], current["source"]) == (threshold, source)


def test_a_ragas_judge_has_no_current_threshold_unless_given():
    c = _deepeval_campaign(library="ragas")
    assert _verdict_of(c, "faith-gpt")["current"] == []
    [current] = _verdict_of(c, "faith-gpt", current=0.6)["current"]
    assert current["source"] == "given" and current["text"].startswith(
        "at your current threshold 0.6 (given): passes 21 of 27"
    )


def test_a_given_threshold_wins_and_a_judge_it_names_must_exist():
    c = _deepeval_campaign()
    [current] = _verdict_of(c, "faith-gpt", current={"faith-gpt": 0.95})["current"]
    assert current["threshold"] == 0.95 and current["source"] == "given"
    with pytest.raises(ValueError, match="current names gpt-5: no such judge rated the metrics chosen"):
        thresholds(c, n_boot=0, current={"gpt-5": 0.5})
    with pytest.raises(ValueError, match=r"current=.*a threshold is a finite number"):
        compute_stats(c, n_boot=0, current={"faith-gpt": float("inf")})


def test_the_threshold_of_an_imported_deepeval_run_is_read(tmp_path):
    import json

    import calibrate
    from calibrate.imports.deepeval_runs import import_deepeval_run

    folder = tmp_path / "c"
    calibrate.init_campaign(folder, ["faithfulness"])
    human = np.r_[np.ones(33), np.zeros(27)]
    score = np.r_[np.linspace(0.75, 1, 30), [0.1, 0.2, 0.3], np.linspace(0.7, 0.99, 21), np.linspace(0.05, 0.4, 6)]
    run = {
        "testCases": [
            {
                "name": f"c{i:02d}",
                "input": f"question {i}?",
                "actualOutput": f"answer {i}.",
                "metricsData": [
                    {
                        "name": "Faithfulness",
                        "score": float(s),
                        "threshold": 0.7,
                        "success": bool(s >= 0.7),
                        "evaluationModel": "gpt-4o-mini",
                    }
                ],
            }
            for i, s in enumerate(score)
        ]
    }
    (tmp_path / "run.json").write_text(json.dumps(run))
    import_deepeval_run(folder, tmp_path / "run.json")
    (folder / "ratings.csv").write_text(
        "case_id,metric,rater,rater_kind,value\n"
        + "".join(f"c{i:02d},faithfulness,ann,human,{v:g}\n" for i, v in enumerate(human))
    )
    v = _verdict_of(calibrate.load_campaign(folder), "gpt-4o-mini")
    [current] = v["current"]
    assert (current["threshold"], current["source"]) == (0.7, "imported")
    assert current["text"].startswith(
        "at your current threshold 0.7 (recorded in the imported run): passes 21 of 27 "
        "answers the annotators failed (0.78 [0.59, 0.89])"
    )


def test_the_command_line_prints_the_current_threshold_under_its_judge(tmp_path):
    import json

    from tests.conftest import BINARY_TOML, run_cli, write_campaign

    rows = pd.DataFrame(
        {
            "case_id": [f"c{i}" for i in range(40)] * 2,
            "metric": "faithfulness",
            "rater": ["ann"] * 40 + ["judge-a"] * 40,
            "rater_kind": ["human"] * 40 + ["judge"] * 40,
            "value": [i % 2 for i in range(40)] + [0.3 + 0.4 * (i % 2) for i in range(40)],
        }
    )
    folder = write_campaign(tmp_path / "c", BINARY_TOML, rows)

    def run(*args):
        return run_cli(*args, folder, "--n-boot", "0")

    for command in ("stats", "thresholds"):
        shown = run(command, "--current", "judge-a=0.6")
        assert shown.returncode == 0, shown.stderr
        lines = shown.stdout.splitlines()
        at = next(i for i, line in enumerate(lines) if line.startswith("  judge-a: "))
        assert lines[at + 1].startswith(
            "    at your current threshold 0.6 (given): passes 0 of 20 answers the annotators failed (0 [0, 0.16])"
        )
    doc = json.loads(run("thresholds", "--current", "0.65", "--json").stdout)
    assert doc["recommendations"][0]["current"][0]["threshold"] == 0.65
    assert doc["verdicts"][0]["judges"][0]["current"][0]["source"] == "given"
    for args, message in (
        (
            ("--current", "nobody=0.5"),
            "--current names nobody: no such judge rated the metrics chosen (their judges: judge-a)",
        ),
        (("--current", "0.5", "--current", "0.6"), "a threshold for every judge is given already"),
        (("--current", "judge-a=nan"), "nan is not a finite number"),
    ):
        bad = run("thresholds", *args)
        assert bad.returncode == 2 and message in bad.stderr and "Traceback" not in bad.stderr, bad.stderr


@settings(max_examples=150, deadline=None)
@given(
    current=st.one_of(
        st.none(),
        st.floats(allow_nan=True, allow_infinity=True),
        st.booleans(),
        st.text(max_size=8),
        st.integers(),
        st.lists(st.floats(), max_size=2),
        st.dictionaries(
            st.one_of(st.sampled_from(["faith-gpt", "gpt-5"]), st.none(), st.integers(), st.text(max_size=6)),
            st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=4), st.none(), st.booleans()),
            max_size=3,
        ),
    )
)
def test_any_current_is_a_verdict_line_or_an_error_that_names_it(current):
    c = _DEEPEVAL
    try:
        doc = thresholds(c, n_boot=0, current=current)
    except ValueError as exc:
        assert str(exc).startswith("current") and "Traceback" not in str(exc)
        return
    [v] = doc["verdicts"][0]["judges"]
    for line in v["current"]:
        assert line["text"].startswith("at your current threshold ") and np.isfinite(line["threshold"])


@settings(max_examples=150, deadline=None)
@given(texts=st.lists(st.text(alphabet=st.characters(codec="utf-8"), max_size=12), min_size=1, max_size=3))
def test_any_current_option_text_is_read_or_refused_by_name(texts):
    from calibrate.analysis.current import parse_current

    try:
        found = parse_current(texts)
    except ValueError as exc:
        assert any(repr(t) in str(exc) for t in texts), str(exc)
        return
    assert all(np.isfinite(v) for v in found.values()) and len(found) == len(texts)


def test_thresholds_an_imported_run_recorded_that_are_no_numbers_are_left_out():
    c = _deepeval_campaign(library="ragas")
    c.imported_raters = {"faith-gpt": {"thresholds": {"faithfulness": ["0.5", True, None, [0.5], 1e400, 0.65]}}}
    [current] = _verdict_of(c, "faith-gpt")["current"]
    assert (current["threshold"], current["source"]) == (0.65, "imported")


_DEEPEVAL = _deepeval_campaign()
