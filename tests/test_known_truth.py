"""A known truth through the whole flow: cases -> calibrate judge (the real DeepEval and RAGAS code, five
judges of five models behind one endpoint) -> stats -> thresholds -> gate -> audit, as a user runs it.

The human labels and each model's behaviour are planted, so each judge's agreement with the humans is
known before anything runs (the scripted server's personas, tests/servers/judge_server.py):

- 80 cases, four kinds of 20: an answer the context supports (S) or one that adds an invented claim
  (U), each about a named shelf or a numbered one (SN, UN). Humans pass S and SN, fail U and UN.
- de-llama (DeepEval, careful) and rg-claude (RAGAS, careful): faithfulness 1 on a pass and 0.5 on a
  fail: a perfect judge (Spearman, AUC, pass/fail kappa 1 at threshold 1; no false pass, no false fail).
- rg-qwen (RAGAS, inverts every verdict on a claim with a digit): right on the named shelves, and on
  the numbered ones scores a pass 0 and a fail 0.5: at threshold 1 no false pass, half the passes
  failed (20/40), kappa exactly 0.5; the ranks carry no information (Spearman 0, AUC 0.5).
- de-gpt (DeepEval, lenient): 1 everywhere: every fail passes (40/40), kappa 0, AUC 0.5, no threshold.
- rg-mistral (RAGAS, flips each verdict with probability 0.2): on a pass 1 (0.8) or 0 (0.2); on a fail
  1 (0.16), 0.5 (0.68) or 0 (0.16). So at threshold 1 its false-pass rate is 0.16 and its false-fail
  rate 0.2, and its AUC 0.8 x 0.84 + 0.16 / 2 = 0.752: each interval must hold its planted value.

This is the test that catches a judge calling another judge's model: every figure would move.
"""

import json

import pandas as pd
import pytest

from tests.conftest import run_cli, write_campaign
from tests.servers.judge_server import Judge, JudgeServer

SHELVES = [
    "amber",
    "birch",
    "cedar",
    "delta",
    "ember",
    "fjord",
    "grove",
    "heron",
    "inlet",
    "juniper",
    "kestrel",
    "larch",
    "maple",
    "nectar",
    "osprey",
    "poplar",
    "quartz",
    "raven",
    "spruce",
    "thistle",
]
JUDGES = {
    "de-llama": ("deepeval", "llama-3-careful"),
    "rg-claude": ("ragas", "claude-careful"),
    "rg-qwen": ("ragas", "qwen-numbers"),
    "de-gpt": ("deepeval", "gpt-4-lenient"),
    "rg-mistral": ("ragas", "mistral-noisy"),
}
CALLS_PER_CASE = {"deepeval": 4, "ragas": 2}


def cases() -> list[dict]:
    out = []
    for kind in ("S", "U", "SN", "UN"):
        for i, word in enumerate(SHELVES):
            subject = f"Shelf {i + 1}{kind[0]}" if kind.endswith("N") else f"The {word} shelf"
            fact = f"{subject} holds books."
            answer = fact if kind.startswith("S") else f"{fact} {subject} is made of gold."
            out.append(
                {
                    "case_id": f"{kind}-{i:02d}",
                    "input": f"What does {subject.lower()} hold?",
                    "actual_output": answer,
                    "retrieval_context": [fact, f"{subject} stands by the door."],
                    "metadata": {"kind": kind},
                }
            )
    return out


def calibrate(*args, expect: int = 0) -> dict:
    result = run_cli(*args, "--json")
    assert result.returncode == expect, result.stderr
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def flow(tmp_path_factory):
    """The campaign judged through the command line, and the server's record of what each model was asked."""
    folder = tmp_path_factory.mktemp("known-truth") / "campaign"
    with JudgeServer(models={model for _, model in JUDGES.values()}) as server:
        config = 'name = "known truth"\n[metrics.faithfulness]\nscale = "binary"\nmax_false_pass = 0.1\n'
        config += "".join(
            f'[judges.{name}]\nlibrary = "{library}"\nmetric = "faithfulness"\nmodel = {{ provider = '
            f'"openai", name = "{model}", base_url = "{server.url}" }}\n'
            for name, (library, model) in JUDGES.items()
        )
        all_cases = cases()
        humans = pd.DataFrame(
            {
                "case_id": [c["case_id"] for c in all_cases],
                "metric": "faithfulness",
                "rater": "ann",
                "rater_kind": "human",
                "value": [int(c["case_id"].startswith("S")) for c in all_cases],
            }
        )
        write_campaign(folder, config, humans, all_cases)
        judged = calibrate("judge", folder)
        yield folder, judged, dict(server.by_model)


def test_each_judge_reached_its_own_model(flow):
    _, judged, by_model = flow
    assert by_model == {model: 80 * CALLS_PER_CASE[library] for library, model in JUDGES.values()}
    assert {j["judge"]: (j["scored"], j["failed"]) for j in judged["judges"]} == {name: (80, 0) for name in JUDGES}


def test_stats_recover_the_planted_agreement(flow):
    folder, _, _ = flow
    doc = calibrate("stats", folder, "--n-boot", 400)
    metric = doc["metrics"][0]
    assert (metric["n_cases"], metric["n_human_pass"]) == (80, 40)
    judges = {j["judge"]: j for j in metric["judges"]}
    for perfect in ("de-llama", "rg-claude"):
        j = judges[perfect]
        assert [j[s]["estimate"] for s in ("spearman", "auc", "pass_kappa")] == pytest.approx([1.0, 1.0, 1.0])
        assert j["pass_threshold"]["threshold"] == 1.0
    numbers = judges["rg-qwen"]
    assert numbers["spearman"]["estimate"] == pytest.approx(0.0, abs=1e-12)
    assert numbers["auc"]["estimate"] == pytest.approx(0.5)
    assert numbers["pass_kappa"]["estimate"] == pytest.approx(0.5) and numbers["pass_threshold"]["threshold"] == 1.0
    lenient = judges["de-gpt"]
    assert lenient["kappa"]["estimate"] == 0.0 and lenient["auc"]["estimate"] == 0.5
    assert lenient["spearman"]["estimate"] is None and lenient["pass_threshold"]["threshold"] is None
    # the noisy judge: which verdicts it flips is a hash of its model name and the claim, so the counts of
    # this draw are known exactly, and the planted rates must lie in the intervals
    noisy = judges["rg-mistral"]
    flips = Judge("mistral-noisy").inverts
    facts = {c["case_id"]: c["retrieval_context"][0] for c in cases()}
    invented = {c["case_id"]: c["actual_output"].split(". ", 1)[1] for c in cases() if c["case_id"][0] == "U"}
    false_fails = sum(flips(fact) for case, fact in facts.items() if case[0] == "S")
    false_passes = sum(not flips(facts[case]) and flips(claim) for case, claim in invented.items())
    at_one = next(point for point in noisy["curve"] if point["threshold"] == 1.0)
    assert (at_one["n_false_pass"], at_one["n_false_fail"]) == (false_passes, false_fails) == (6, 13)
    assert at_one["false_pass_rate_ci"][0] <= 0.16 <= at_one["false_pass_rate_ci"][1]
    assert noisy["auc"]["ci_low"] <= 0.752 <= noisy["auc"]["ci_high"]
    # 13 flips of 40 where 8 are expected: the planted 0.2 lies just below this draw's 95% interval, as one
    # interval in twenty should; the interval is Wilson's on the counts
    from statsmodels.stats.proportion import proportion_confint

    assert at_one["false_fail_rate_ci"] == pytest.approx(list(proportion_confint(13, 40, method="wilson")))
    # and the careful judges' numbers are exactly those of their planted scores
    scores = pd.read_csv(folder / "judge_ratings.csv")
    careful = scores[scores["rater"] == "de-llama"].set_index("case_id")["value"]
    assert all(careful[c] == (1.0 if c.startswith("S") else 0.5) for c in careful.index)


def test_thresholds_recover_the_planted_error_rates(flow):
    folder, _, _ = flow
    recs = {
        r["judge"]: r
        for r in calibrate("thresholds", folder, "--metric", "faithfulness", "--max-false-pass", 0.1, "--n-boot", 400)[
            "recommendations"
        ]
    }
    for judge, false_fail in (("de-llama", 0.0), ("rg-claude", 0.0), ("rg-qwen", 0.5)):
        assert (recs[judge]["threshold"], recs[judge]["false_pass_rate"], recs[judge]["false_fail_rate"]) == (
            1.0,
            0.0,
            false_fail,
        ), judge
    assert (
        recs["de-gpt"]["threshold"] is None and recs["de-gpt"]["deepeval_default"]["false_pass_rate"]["estimate"] == 1.0
    )
    assert recs["rg-mistral"]["threshold"] is None  # 0.16 is over the 0.1 ceiling


def test_the_gate_passes_the_perfect_judges_only(flow):
    folder, _, _ = flow
    doc = calibrate("gate", folder, "--min-kappa", 0.6, "--max-false-pass", 0.1, "--n-boot", 400, expect=1)
    assert {c["judge"] for c in doc["checks"] if c["passed"]} == {"de-llama", "rg-claude"}
    assert not doc["passed"]


def test_the_audit_tells_an_upgrade_from_a_downgrade(flow):
    folder, _, _ = flow
    same = calibrate(
        "audit", folder, "--metric", "faithfulness", "--old", "de-llama", "--new", "rg-claude", "--n-boot", 400
    )
    assert same["decision"]["decision"] == "non-inferior"
    worse = calibrate(
        "audit",
        folder,
        "--metric",
        "faithfulness",
        "--old",
        "de-llama",
        "--new",
        "rg-mistral",
        "--n-boot",
        400,
        expect=1,
    )
    assert worse["decision"]["decision"] == "inferior"
    assert worse["changes"]["spearman"]["ci_high"] < -0.05
