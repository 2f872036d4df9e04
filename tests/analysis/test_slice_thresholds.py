"""Thresholds per slice (``calibrate thresholds --by KEY``): each slice's threshold is the exhaustive search on
its cases, a planted slice that needs its own threshold is flagged and no other is, a coin-flip judge is
flagged no more often than the Holm level allows, the overrides file round-trips and is never written over,
and a key no case has is named with the keys there are."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calibrate import Rule, campaign_from_frames
from calibrate.analysis.slice_thresholds import (
    MIN_SLICE_LABELS,
    check_key,
    overrides,
    rule_pick,
    slice_thresholds,
    write_overrides,
)
from calibrate.stats.slice_tests import ceiling_excess_p, cross_fitted_gain, cut_by_rule, holm
from tests.conftest import run_cli, write_campaign

BINARY = {"scale": "binary"}


def campaign(human, score, kind, metric=BINARY, judge="j"):
    """A binary metric, one annotator and one judge, each case's ``metadata.kind`` its slice."""
    ids = [f"c{i:04d}" for i in range(len(human))]
    rows = [(c, "m", "ann", "human", int(h)) for c, h in zip(ids, human)]
    rows += [(c, "m", judge, "judge", float(s)) for c, s in zip(ids, score)]
    frame = pd.DataFrame(rows, columns=["case_id", "metric", "rater", "rater_kind", "value"])
    cases = [{"case_id": c, "input": "q", "metadata": {"kind": str(k)}} for c, k in zip(ids, kind)]
    return campaign_from_frames({"name": "t", "metrics": {"m": metric}}, frame, cases)


def exhaustive(score, passes, rule):
    """Every candidate threshold (each distinct score, then failing every case) tried, by the rule's own
    words: the cost rule's cheapest (ties: the most lenient), the constraint's most lenient under the
    ceiling; None for failing every case or no threshold."""
    candidates = [*sorted(set(score.tolist())), math.inf]
    fp = [int(((score >= t) & ~passes).sum()) for t in candidates]
    ff = [int(((score < t) & passes).sum()) for t in candidates]
    if rule.kind == "cost":
        costs = [rule.cost_false_pass * a + rule.cost_false_fail * b for a, b in zip(fp, ff)]
        best = candidates[int(np.argmin(costs))]
    else:
        n_fail = int((~passes).sum())
        if n_fail == 0:
            return None
        best = next(t for t, a in zip(candidates, fp) if a / n_fail <= rule.max_false_pass + 1e-12)
    return None if best == math.inf else best


RULES = [
    Rule("cost", cost_false_pass=1, cost_false_fail=1),
    Rule("cost", cost_false_pass=4, cost_false_fail=1),
    Rule("constraint", max_false_pass=0.1),
    Rule("constraint", max_false_pass=0.3),
]


@settings(max_examples=20, deadline=None)
@given(
    seed=st.integers(0, 2**31 - 1),
    n=st.integers(6, 60),
    rule=st.sampled_from(RULES),
    levels=st.sampled_from([3, 5, 11]),
)
def test_each_slice_threshold_is_the_exhaustive_search_on_its_cases(seed, n, rule, levels):
    rng = np.random.default_rng(seed)
    human = rng.random(n) < 0.5
    score = np.round(np.clip(human * 0.3 + rng.random(n) * 0.7, 0, 1) * (levels - 1)) / (levels - 1)
    kind = rng.choice(["a", "b", "c"], n)
    doc = slice_thresholds(campaign(human, score, kind), metric="m", by="kind", rule=rule, n_boot=0)
    (j,) = doc["judges"]
    assert j["default"] == exhaustive(score, human, rule)
    for s in j["slices"]:
        mine = kind == s["value"]
        if mine.sum() >= 2:  # a judge rated on fewer than two cases of a slice gets no recommendation
            assert s["threshold"] == exhaustive(score[mine], human[mine], rule), s["value"]


def test_the_tests_own_rule_is_the_same_exhaustive_search():
    rng = np.random.default_rng(3)
    for rule in RULES:
        for _ in range(20):
            n = int(rng.integers(2, 40))
            human, score = rng.random(n) < 0.4, rng.integers(0, 6, n).astype(float)
            cut = cut_by_rule(score, human, rule_pick(rule))
            assert (None if cut == math.inf else cut) == exhaustive(score, human, rule)


def planted(seed, *, plant, n=300):
    """Three slices of ``n`` cases; the judge's score is the human's latent quality plus noise. With
    ``plant``, the humans of slice ``b`` pass only at a higher quality than elsewhere: the judge's one
    threshold passes too many of them."""
    rng = np.random.default_rng(seed)
    kind = np.repeat(np.array(["a", "b", "c"]), n)
    quality = rng.random(3 * n)
    bar = np.where((kind == "b") & plant, 0.75, 0.4)
    human = quality >= bar
    score = np.round(np.clip(quality + rng.normal(0, 0.05, 3 * n), 0, 1), 2)
    return campaign(human, score, kind)


@pytest.mark.parametrize(
    "rule", [Rule("cost", cost_false_pass=1, cost_false_fail=1), Rule("constraint", max_false_pass=0.1)]
)
def test_a_planted_slice_is_flagged_and_no_other(rule):
    doc = slice_thresholds(planted(1, plant=True), metric="m", by="kind", rule=rule, n_boot=0)
    (j,) = doc["judges"]
    flagged = {s["value"] for s in j["slices"] if s["needs_own_threshold"]}
    assert flagged == {"b"}
    assert set(j["overrides"]) == {"b"} and j["overrides"]["b"] > j["default"]
    totals = j["totals"]
    assert totals["mapping"]["false_passes"] < totals["one_threshold"]["false_passes"]
    if rule.kind == "cost":
        b = next(s for s in j["slices"] if s["value"] == "b")
        assert b["test"]["gain"] > 0 and b["test"]["cost_own"] < b["test"]["cost_common"]
        assert totals["mapping"]["cost_per_case"] < totals["one_threshold"]["cost_per_case"]


@pytest.mark.parametrize(
    "rule", [Rule("cost", cost_false_pass=1, cost_false_fail=1), Rule("constraint", max_false_pass=0.1)]
)
def test_without_a_planted_slice_none_is_flagged(rule):
    doc = slice_thresholds(planted(2, plant=False), metric="m", by="kind", rule=rule, n_boot=0)
    (j,) = doc["judges"]
    assert not any(s["needs_own_threshold"] for s in j["slices"]) and j["overrides"] == {}
    assert all(s["p_value_holm"] is not None for s in j["slices"])


def test_a_perfect_judge_needs_no_slice_threshold():
    rng = np.random.default_rng(4)
    human = rng.random(300) < 0.4
    doc = slice_thresholds(
        campaign(human, human * 0.8 + 0.1, rng.choice(["a", "b"], 300)),
        metric="m",
        by="kind",
        rule=Rule("cost", cost_false_pass=1, cost_false_fail=1),
        n_boot=0,
    )
    (j,) = doc["judges"]
    assert j["totals"]["one_threshold"] == {"false_passes": 0, "false_fails": 0, "cost_per_case": 0.0}
    assert [s["p_value_holm"] for s in j["slices"]] == [1.0, 1.0]


@pytest.mark.parametrize("kind", ["cost", "constraint"])
def test_a_coin_flip_judge_is_flagged_no_more_often_than_the_holm_level(kind):
    """Over 200 seeds of a coin-flip judge (three slices of 60 labels), a slice is flagged anywhere (Holm at
    0.05) in at most 5% of them, allowing three binomial standard errors (over 1,000 seeds: 1.6% for the
    cost rule's cross-fitted test, 0.1% for the ceiling's binomial one)."""
    seeds, alpha = 200, 0.05
    rule = (
        Rule("cost", cost_false_pass=1, cost_false_fail=1) if kind == "cost" else Rule("constraint", max_false_pass=0.2)
    )
    pick = rule_pick(rule)
    any_flagged = 0
    for seed in range(seeds):
        rng = np.random.default_rng(seed)
        kind_of = np.repeat(np.arange(3), 60)
        human, score = rng.random(180) < 0.5, rng.integers(0, 11, 180).astype(float)
        if kind == "cost":
            p = [cross_fitted_gain(score, human, kind_of == k, pick, (1.0, 1.0), seed=seed).p_value for k in range(3)]
        else:
            cut = cut_by_rule(score, human, pick)
            p = [
                ceiling_excess_p(
                    int((score[(kind_of == k) & ~human] >= cut).sum()), int(((kind_of == k) & ~human).sum()), 0.2
                )
                for k in range(3)
            ]
        any_flagged += any(q < alpha for q in holm(p))
    assert any_flagged / seeds <= alpha + 3 * math.sqrt(alpha * (1 - alpha) / seeds)


def test_a_small_slice_is_reported_not_tested():
    rng = np.random.default_rng(5)
    kind = np.array(["big"] * 200 + ["tiny"] * (MIN_SLICE_LABELS - 1))
    human = rng.random(kind.size) < 0.5
    doc = slice_thresholds(
        campaign(human, np.round(human * 0.4 + rng.random(kind.size) * 0.6, 2), kind),
        metric="m",
        by="kind",
        rule=Rule("cost", cost_false_pass=1, cost_false_fail=1),
        n_boot=0,
    )
    tiny = next(s for s in doc["judges"][0]["slices"] if s["value"] == "tiny")
    assert "test" not in tiny and tiny["p_value_holm"] is None and not tiny["needs_own_threshold"]
    assert tiny["not_tested"] == f"too small: {MIN_SLICE_LABELS - 1} labelled cases (the test needs {MIN_SLICE_LABELS})"


def test_the_slice_threshold_carries_the_whole_metrics_interval():
    doc = slice_thresholds(
        planted(1, plant=True),
        metric="m",
        by="kind",
        rule=Rule("cost", cost_false_pass=1, cost_false_fail=1),
        n_boot=200,
    )
    for s in [doc["judges"][0]["overall"], *doc["judges"][0]["slices"]]:
        low, high = s["threshold_ci"]
        assert low <= s["threshold"] <= high and "percentile bootstrap" in s["threshold_ci_method"]


def test_the_overrides_file_round_trips_and_is_never_written_over(tmp_path):
    doc = slice_thresholds(
        planted(1, plant=True), metric="m", by="kind", rule=Rule("constraint", max_false_pass=0.1), n_boot=0
    )
    mapping = overrides(doc, "j")
    path = write_overrides(tmp_path / "thresholds.json", mapping)
    read = json.loads(path.read_text())
    assert read == mapping and set(read["overrides"]) == {"b"} and read["key"] == "kind"
    with pytest.raises(FileExistsError, match="already exists"):
        write_overrides(path, {"other": 1})
    assert json.loads(path.read_text()) == mapping
    with pytest.raises(KeyError, match="there are: j"):
        overrides(doc, "nobody")


def test_a_deepeval_style_test_reads_the_overrides(tmp_path):
    """The README's reading: the threshold of a case is its slice's override, else the default."""
    doc = slice_thresholds(
        planted(1, plant=True), metric="m", by="kind", rule=Rule("constraint", max_false_pass=0.1), n_boot=0
    )
    mapping = json.loads(write_overrides(tmp_path / "t.json", overrides(doc, "j")).read_text())

    def threshold_for(metadata):
        return mapping["overrides"].get(str(metadata.get(mapping["key"])), mapping["default"])

    assert threshold_for({"kind": "b"}) == doc["judges"][0]["overrides"]["b"]
    assert threshold_for({"kind": "a"}) == threshold_for({}) == doc["judges"][0]["default"]


def test_a_key_no_case_has_is_named_with_the_keys_there_are():
    c = planted(1, plant=False, n=10)
    with pytest.raises(ValueError, match=r"metadata key 'doc_type': no case has it; the cases' metadata keys: kind$"):
        check_key(c, "doc_type")
    with pytest.raises(ValueError, match="'doc_type'"):
        slice_thresholds(c, metric="m", by="doc_type", rule=Rule("cost", cost_false_pass=1, cost_false_fail=1))


def test_a_rule_that_does_not_learn_from_labels_is_refused():
    with pytest.raises(ValueError, match="need a rule chosen from the labels"):
        slice_thresholds(planted(1, plant=False, n=10), metric="m", by="kind", n_boot=0)


def test_the_command(tmp_path):
    rng = np.random.default_rng(1)
    n = 300
    kind = np.repeat(np.array(["a", "b", "c"]), n)
    quality = rng.random(3 * n)
    human = quality >= np.where(kind == "b", 0.75, 0.4)
    score = np.round(np.clip(quality + rng.normal(0, 0.05, 3 * n), 0, 1), 2)
    ids = [f"c{i:04d}" for i in range(3 * n)]
    ratings = pd.DataFrame(
        [(c, "m", "ann", "human", int(h)) for c, h in zip(ids, human)]
        + [(c, "m", "j", "judge", float(s)) for c, s in zip(ids, score)],
        columns=["case_id", "metric", "rater", "rater_kind", "value"],
    )
    cases = [{"case_id": c, "input": "q", "metadata": {"kind": str(k)}} for c, k in zip(ids, kind)]
    folder = write_campaign(
        tmp_path / "c", 'name = "t"\n[metrics.m]\nscale = "binary"\nmax_false_pass = 0.1\n', ratings, cases
    )
    out = tmp_path / "overrides.json"
    r = run_cli("thresholds", folder, "--by", "kind", "--n-boot", "0", "--write-overrides", out, "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["key"] == "kind" and [s["value"] for s in doc["judges"][0]["slices"]] == ["a", "b", "c"]
    assert set(json.loads(out.read_text())["overrides"]) == {"b"}
    again = run_cli("thresholds", folder, "--by", "kind", "--n-boot", "0", "--write-overrides", out)
    assert again.returncode != 0 and "already exists" in again.stderr
    bad = run_cli("thresholds", folder, "--by", "doc_type", "--n-boot", "0")
    assert bad.returncode != 0 and "'doc_type'" in bad.stderr and "keys: kind" in bad.stderr
    text = run_cli("thresholds", folder, "--by", "kind", "--n-boot", "0")
    assert text.returncode == 0 and "thresholds per kind" in text.stdout and "overrides: b:" in text.stdout
    for args, message in (
        (("--write-overrides", tmp_path / "x.json"), "--write-overrides goes with --by KEY"),
        (("--by", "kind", "--current", "0.5"), "--current does not go with --by"),
    ):
        refused = run_cli("thresholds", folder, "--n-boot", "0", *args)
        assert refused.returncode != 0 and message in refused.stderr
    assert not (tmp_path / "x.json").exists()


def test_arbitrary_slice_values_reach_the_file_and_the_terminal_as_they_are(tmp_path):
    weird = ["[bold]a|b", "نص\nx", "c\x00d"]
    rng = np.random.default_rng(6)
    kind = np.repeat(np.array(weird, dtype=object), 150)
    quality = rng.random(kind.size)
    human = quality >= np.where(kind == weird[1], 0.75, 0.4)
    score = np.round(np.clip(quality + rng.normal(0, 0.05, kind.size), 0, 1), 2)
    doc = slice_thresholds(
        campaign(human, score, kind), metric="m", by="kind", rule=Rule("constraint", max_false_pass=0.1), n_boot=0
    )
    assert [s["value"] for s in doc["judges"][0]["slices"]] == sorted(weird)
    mapping = json.loads(write_overrides(tmp_path / "o.json", overrides(doc, "j")).read_text(encoding="utf-8"))
    assert list(mapping["overrides"]) == [weird[1]]
