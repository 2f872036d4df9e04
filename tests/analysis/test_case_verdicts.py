"""Per-case verdicts of a judge scored with repeats (calibrate.analysis.case_verdicts, ``calibrate case-verdicts``
and the counts ``calibrate judge`` prints): a planted pass rate per case recovered, each case's counts and
interval checked against scipy's exact binomial test, failed ratings, a lower-is-better judge, and the
judge run itself through the scripted judge server."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import calibrate
from calibrate.analysis.case_verdicts import CASE_COLUMNS, case_verdicts, verdict_counts
from tests.conftest import run_cli, write_campaign

TOML = """name = "noise"
[metrics.faithfulness]
scale = "binary"
[metrics.helpfulness]
scale = "ordinal"
levels = [1, 2, 3, 4, 5]
human_pass = 4
[raters.sampler]
family = "gpt"
[raters.steady]
family = "llama"
[raters.distance]
family = "claude"
higher_is_better = false
"""

#: the planted pass rate of each group of cases
RATES = {"sure": 0.97, "split": 0.5, "never": 0.03}
REPEATS = 20


def _rows(rater: str, metric: str, case_id: str, values, run=lambda k: f"repeat-{k}") -> list[dict]:
    return [
        {"case_id": case_id, "metric": metric, "rater": rater, "rater_kind": "judge", "value": v, "run_id": run(k)}
        for k, v in enumerate(values)
    ]


def make(tmp_path, n: int = 30, seed: int = 0):
    """``n`` cases per group: the sampler passes a case (score above 0.5) at the group's rate in each of its
    20 repeats; the steady judge scores once (no repeats); the distance judge (lower is better) is the
    sampler's mirror; a human label for each case. One of the sampler's ratings failed."""
    rng = np.random.default_rng(seed)
    rows, truth = [], {}
    for group, rate in RATES.items():
        for i in range(n):
            case = f"{group}-{i:02d}"
            truth[case] = group
            passed = rng.random(REPEATS) < rate
            scores = np.where(passed, rng.uniform(0.5, 1, REPEATS), rng.uniform(0, 0.5, REPEATS)).round(3)
            rows += _rows("sampler", "faithfulness", case, scores)
            rows += _rows("distance", "faithfulness", case, (1 - scores).round(3))
            rows += _rows("steady", "faithfulness", case, [float(scores[0])], run=lambda k: "")
            rows += _rows("sampler", "helpfulness", case, (10 * scores[:3]).round(1))  # 0 to 10: no threshold
            rows.append(
                {"case_id": case, "metric": "faithfulness", "rater": "ann", "rater_kind": "human", "value": 1}
                | {"run_id": ""}
            )
    ratings = pd.DataFrame(rows)
    ratings["error"] = ""
    failed = (ratings["rater"] == "sampler") & (ratings["case_id"] == "sure-00") & (ratings["run_id"] == "repeat-3")
    ratings.loc[failed, ["value", "error"]] = [np.nan, "timeout"]
    return write_campaign(tmp_path / "noise", TOML, ratings), truth


@pytest.fixture
def noise(tmp_path):
    return make(tmp_path)


def test_each_cases_counts_interval_and_verdict_are_the_exact_binomial_ones(noise):
    folder, _ = noise
    c = calibrate.load_campaign(folder)
    doc = case_verdicts(c, metric="faithfulness", judge="sampler")
    frame = doc.to_frame()
    assert tuple(frame.columns) == CASE_COLUMNS and len(frame) == 90
    ratings = c.ratings[(c.ratings["rater"] == "sampler") & (c.ratings["metric"] == "faithfulness")]
    ratings = ratings[ratings["value"].notna()]
    expected = ratings.assign(passed=ratings["value"] >= 0.5).groupby("case_id")["passed"].agg(["sum", "count"])
    assert frame.set_index("case_id")["passes"].to_dict() == expected["sum"].to_dict()
    assert frame.set_index("case_id")["repeats"].to_dict() == expected["count"].to_dict()
    for row in frame.itertuples():
        test = stats.binomtest(row.passes, row.repeats, 0.5)
        ci = stats.binomtest(row.passes, row.repeats).proportion_ci(confidence_level=0.95, method="exact")
        assert (row.low, row.high) == pytest.approx((ci.low, ci.high), abs=1e-9)
        decided = test.pvalue < 0.05
        assert (row.verdict != "undecided") == decided
        assert row.verdict in (("pass",) if row.pass_rate > 0.5 else ("fail",)) if decided else True
    assert doc["threshold"] == 0.5 and doc["threshold_source"].startswith("DeepEval's 0.5")
    assert doc["runs"] == [f"repeat-{k}" for k in range(REPEATS)]
    assert doc["n_failed_ratings"] == 1 and frame.set_index("case_id").loc["sure-00", "repeats"] == REPEATS - 1
    assert (
        doc["counts"] == frame["verdict"].value_counts().reindex(["fail", "undecided", "pass"], fill_value=0).to_dict()
    )
    assert json.loads(json.dumps(doc.to_dict())) == dict(doc)


def test_the_planted_pass_rates_are_recovered(noise):
    folder, truth = noise
    frame = case_verdicts(calibrate.load_campaign(folder), metric="faithfulness", judge="sampler").to_frame()
    by_group = frame.assign(group=frame["case_id"].map(truth)).groupby("group")["verdict"].value_counts().unstack()
    by_group = by_group.fillna(0)
    assert by_group.loc["sure", "pass"] >= 28 and by_group.loc["never", "fail"] >= 28
    # a case passed half the time is never called pass or fail here (each side would be below 2.5% per case)
    assert by_group.loc["split"].get("pass", 0) + by_group.loc["split"].get("fail", 0) <= 2
    assert by_group.loc["split", "undecided"] >= 28
    # the majority share orders the settled cases before the split ones
    share = frame.assign(group=frame["case_id"].map(truth)).groupby("group")["majority_share"].mean()
    assert share["sure"] > 0.9 and share["never"] > 0.9 and share["split"] < 0.7


def test_a_judge_whose_lower_score_is_better_passes_at_or_below_its_threshold(noise):
    folder, _ = noise
    c = calibrate.load_campaign(folder)
    mirror = case_verdicts(c, metric="faithfulness", judge="distance", threshold=0.5).to_frame()
    sampler = case_verdicts(c, metric="faithfulness", judge="sampler", threshold=0.5).to_frame()
    both = mirror.merge(sampler, on="case_id", suffixes=("_d", "_s"))
    # the mirror has the failed rating's repeat too; elsewhere it is the same judge read the other way
    same = both["case_id"] != "sure-00"
    assert (both.loc[same, "verdict_d"] == both.loc[same, "verdict_s"]).all()
    assert case_verdicts(c, metric="faithfulness", judge="distance", threshold=0.5)["pass_rule"].endswith("<= 0.5")


def test_a_lower_confidence_decides_more_cases_and_the_threshold_moves_the_verdicts(noise):
    folder, _ = noise
    c = calibrate.load_campaign(folder)
    counts = [case_verdicts(c, metric="faithfulness", judge="sampler", confidence=a)["counts"] for a in (0.99, 0.8)]
    assert counts[0]["undecided"] > counts[1]["undecided"]
    everything = case_verdicts(c, metric="faithfulness", judge="sampler", threshold=-1)["counts"]
    assert everything == {"fail": 0, "undecided": 0, "pass": 90}


def test_a_judge_without_repeats_or_threshold_is_refused_saying_how(noise):
    folder, _ = noise
    c = calibrate.load_campaign(folder)
    with pytest.raises(ValueError, match=r"judge steady has no repeats on faithfulness.*--repeats K.*sampler"):
        case_verdicts(c, metric="faithfulness", judge="steady")
    with pytest.raises(ValueError, match="metric"):
        case_verdicts(c, metric="nope", judge="sampler")
    with pytest.raises(ValueError, match="confidence"):
        case_verdicts(c, metric="faithfulness", judge="sampler", confidence=1.5)


def test_the_counts_per_judge(noise):
    folder, _ = noise
    c = calibrate.load_campaign(folder)
    lines = {(line["judge"], line["metric"]): line for line in verdict_counts(c)}
    assert set(lines) == {("distance", "faithfulness"), ("sampler", "faithfulness"), ("sampler", "helpfulness")}
    sampler = case_verdicts(c, metric="faithfulness", judge="sampler")
    line = lines[("sampler", "faithfulness")]
    assert line["counts"] == sampler["counts"] and line["repeats"] == REPEATS and line["text"] == sampler["text"]
    # from 0 to 10 on a 1-5 metric: no threshold without the labels, said so
    assert lines[("sampler", "helpfulness")]["counts"] is None
    assert "no pass threshold on helpfulness" in lines[("sampler", "helpfulness")]["text"]
    assert {line["judge"] for line in verdict_counts(c, ["distance"])} == {"distance"}


def test_the_command_line(noise):
    folder, _ = noise
    run = run_cli("case-verdicts", folder, "--metric", "faithfulness", "--judge", "sampler", "--json")
    assert run.returncode == 0, run.stderr
    doc = json.loads(run.stdout)
    assert doc["schema_version"] == 1 and len(doc["cases"]) == 90 and set(doc["cases"][0]) == set(CASE_COLUMNS)
    table = run_cli("case-verdicts", folder, "--metric", "faithfulness", "--judge", "sampler", "--confidence", "0.9")
    assert table.returncode == 0, table.stderr
    assert "undecided cases, the most split first" in table.stdout and "90% interval" in table.stdout
    at_90 = case_verdicts(calibrate.load_campaign(folder), metric="faithfulness", judge="sampler", confidence=0.9)
    assert at_90["text"] in table.stdout
    assert "1 failed rating(s) are not counted as repeats" in table.stdout
    missing = run_cli("case-verdicts", folder, "--metric", "faithfulness", "--judge", "steady")
    assert missing.returncode == 2 and "--repeats K" in missing.stderr, missing.stderr
    no_threshold = run_cli("case-verdicts", folder, "--metric", "helpfulness", "--judge", "sampler")
    assert no_threshold.returncode == 2 and "(--threshold)" in no_threshold.stderr, no_threshold.stderr


def test_the_public_api():
    assert calibrate.case_verdicts is case_verdicts


def test_calibrate_judge_counts_the_verdicts_of_a_run_with_repeats(tmp_path, server):
    """Through the real DeepEval faithfulness metric and the scripted judge server: a careful judge at
    threshold 0.7, scored six times, passes the supported cases (score 1) and fails the others (0.5), each
    decided by its six agreeing repeats at 95%; the run's summary counts them; its --json keeps its keys."""
    from tests.judges.test_runner import make_cases
    from tests.judges.test_versions import OLD_MODEL, cli, toml

    cases = make_cases(6)
    humans = pd.DataFrame(
        {"case_id": [x["case_id"] for x in cases], "metric": "faithfulness", "rater": "ann", "rater_kind": "human"}
    ).assign(value=[i % 2 for i in range(6)])
    folder = write_campaign(
        tmp_path / "run", toml(server.url, OLD_MODEL, "gpt", "settings = { threshold = 0.7 }"), humans, cases
    )
    once = cli("judge", folder, "--json")
    assert "per-case verdicts" not in once.stdout
    summary = cli("judge", folder, "--repeats", 6).stdout
    c = calibrate.load_campaign(folder)
    doc = case_verdicts(c, metric="faithfulness", judge="faith-gpt4omini")
    first = c.ratings[c.ratings["run_id"] == "repeat-0"].set_index("case_id")["value"]
    assert doc["threshold"] == 0.7 and doc["threshold_source"].endswith("(the threshold in campaign.toml's settings)")
    expected = {case: "pass" if first[case] >= 0.7 else "fail" for case in first.index}
    assert {x["case_id"]: x["verdict"] for x in doc["cases"]} == expected
    assert list(expected.values()) == ["pass", "fail"] * 3 and doc["counts"] == {"fail": 3, "undecided": 0, "pass": 3}
    assert "per-case verdicts over the repeats" in summary
    assert f"  faithfulness: {doc['text']}" in summary and "calibrate case-verdicts" in summary
    again = cli("judge", folder, "--repeats", 6, "--json")
    assert set(json.loads(again.stdout)) == set(json.loads(once.stdout))
