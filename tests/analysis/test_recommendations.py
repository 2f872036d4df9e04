"""recommend_thresholds and the thresholds command: the rule each metric declares, the scale a judge is
read on, and the bound the rule used (the rules themselves: tests/stats/test_thresholds.py; a Rule made and
checked: tests/analysis/test_rules.py)."""

import json

import numpy as np
import pandas as pd
import pytest

from calibrate import Campaign, campaign_from_frames, compute_stats, recommend_thresholds
from calibrate.analysis.rules import default_rule
from calibrate.stats.intervals import clopper_pearson_upper
from tests.conftest import run_cli, write_campaign


def frames(human, judges: dict, metric: dict, raters: dict | None = None) -> Campaign:
    n = len(human)
    ids = [f"c{i:03d}" for i in range(n)]
    rows = [(c, "m", "ann", "human", h) for c, h in zip(ids, human)]
    rows += [(c, "m", name, "judge", v) for name, values in judges.items() for c, v in zip(ids, values)]
    frame = pd.DataFrame(rows, columns=["case_id", "metric", "rater", "rater_kind", "value"])
    return campaign_from_frames(
        {"name": "t", "metrics": {"m": metric}, **({"raters": raters} if raters else {})}, frame
    )


ORDINAL = {"scale": "ordinal", "levels": [0, 1, 2, 3], "human_pass": 2}


def test_a_judge_on_the_metrics_levels_is_read_at_human_pass():
    """An ordinal 0-3 metric with no rule: a judge identical to the humans used to be read at DeepEval's 0.5
    (false-pass rate 0.5 "at threshold 1"); a 0-1 judge gets no threshold rather than a silent 0.5."""
    rng = np.random.default_rng(0)
    human = rng.integers(0, 4, 80)
    c = frames(human, {"same": human, "zero-one": (human >= 2) * 0.6 + rng.random(80) * 0.3}, ORDINAL)
    recs = {
        r["judge"]: r
        for r in recommend_thresholds(c, metric="m", rule=default_rule(c.metrics["m"]), n_boot=0)["recommendations"]
    }
    assert (recs["same"]["threshold"], recs["same"]["false_pass_rate"], recs["same"]["false_fail_rate"]) == (2, 0, 0)
    assert recs["zero-one"]["threshold"] is None
    judges = {j["judge"]: j for j in compute_stats(c, n_boot=50)["metrics"][0]["judges"]}
    assert judges["same"]["pass_kappa"]["estimate"] == pytest.approx(1.0)
    assert "no pass threshold: the judge is not on the metric's scale" in judges["zero-one"]["pass_kappa"]["reason"]


def test_a_binary_metric_keeps_deepevals_half_for_a_zero_to_one_judge():
    human = np.array([0, 1] * 30)
    c = frames(human, {"j": np.where(human == 1, 0.7, 0.3)}, {"scale": "binary"})
    rec = recommend_thresholds(c, metric="m", rule=default_rule(c.metrics["m"]), n_boot=0)["recommendations"][0]
    assert rec["threshold"] == 0.7 and rec["false_pass_rate"] == 0.0  # the lowest score at or above 0.5


def test_the_false_pass_interval_shown_is_the_bound_the_rule_used():
    """Under --confidence the rule keeps the one-sided Clopper-Pearson bound under the ceiling; the interval
    shown was a two-sided Wilson one whose upper end could be above it."""
    rng = np.random.default_rng(1)
    human = (rng.random(400) < 0.5).astype(int)
    c = frames(human, {"j": np.clip(human * 0.4 + rng.random(400) * 0.6, 0, 1).round(3)}, {"scale": "binary"})
    from calibrate import Rule

    rec = recommend_thresholds(c, metric="m", rule=Rule("constraint", max_false_pass=0.1, confidence=0.95), n_boot=0)[
        "recommendations"
    ][0]
    detail = rec["false_pass_rate_detail"]
    assert rec["false_pass_rate_ci"][1] <= 0.1 and rec["false_pass_rate_ci"][0] == 0.0
    assert detail["ci_high"] == pytest.approx(float(clopper_pearson_upper(detail["k"], detail["n"], confidence=0.95)))
    assert "one-sided 95% Clopper-Pearson" in detail["ci_method"]


def test_thresholds_with_no_option_follows_every_metrics_declared_rule(tmp_path):
    rng = np.random.default_rng(2)
    n = 60
    human = (rng.random(n) < 0.5).astype(int)
    ids = [f"c{i:03d}" for i in range(n)]
    frame = pd.DataFrame(
        {
            "case_id": ids * 4,
            "metric": ["a"] * 2 * n + ["b"] * 2 * n,
            "rater": (["ann"] * n + ["j"] * n) * 2,
            "rater_kind": (["human"] * n + ["judge"] * n) * 2,
            "value": np.r_[human, human * 0.5 + rng.random(n) * 0.5, human, rng.random(n)],
        }
    )
    toml = (
        'name = "rules"\n[metrics.a]\nscale = "binary"\nmax_false_pass = 0.2\n'
        '[metrics.b]\nscale = "binary"\ncost_false_pass = 3\ncost_false_fail = 1\n'
    )
    folder = write_campaign(tmp_path / "c", toml, frame)
    result = run_cli("thresholds", folder, "--json", "--n-boot", "50")
    assert result.returncode == 0, result.stderr
    rules = {r["metric"]: r["rule"]["kind"] for r in json.loads(result.stdout)["recommendations"]}
    assert rules == {"a": "constraint", "b": "cost"}
    table = run_cli("thresholds", folder, "--n-boot", "50")
    # the verdict block opens the output: each metric's rule, then a line per judge
    lines = table.stdout.splitlines()
    assert lines[0] == "a: most lenient threshold with false-pass rate <= 0.2" and lines[1].startswith("  j: ")
    assert "b: minimise 3 x false passes + 1 x false fails" in lines and "rules from campaign.toml" in lines
    assert "50 resamples of cases" in table.stdout
