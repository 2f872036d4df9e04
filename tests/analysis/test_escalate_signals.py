"""calibrate escalate --signal (calibrate.analysis.escalate_signals): bands ordered by a judge's agreement among
its repeats or with judges of other families; a planted campaign where the repeats know which cases the judge
gets right and the score does not, the Bonferroni split of --signal all, the schema, and the command line."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from calibrate.analysis.escalate import escalate
from calibrate.analysis.escalate_signals import confidence_signal, escalate_by_signal
from calibrate.campaign import load_campaign
from tests.conftest import run_cli, write_campaign

SCHEMA = Path(__file__).resolve().parents[2] / "docs" / "reference" / "schemas" / "escalate.json"
REPEATS = 5
TOML = """name = "sure"
[metrics.ok]
scale = "binary"
[raters.sampler]
family = "gpt"
[raters.cousin]
family = "gpt"
[raters.other]
family = "llama"
[raters.blind]
"""


def make(folder: Path, n: int = 600, seed: int = 0) -> Path:
    """A binary metric; on the easy 60% of the cases every repeat of the sampler (gpt, 5 repeats) gives the
    human verdict, on the hard 40% each repeat is a coin flip. Its scores are uniform on the side of 0.5 it
    chose, so the score's distance says nothing of the difficulty. ``other`` (llama) is right on the easy
    cases and a coin flip on the hard; ``cousin`` (gpt, the sampler's family) and ``blind`` (no family) are
    always wrong and must not vote."""
    rng = np.random.default_rng(seed)
    ids = np.array([f"c{i:04d}" for i in range(n)])
    truth = rng.random(n) < 0.5
    hard = rng.random(n) < 0.4
    rows = []

    def judge(rater, passed, run=""):
        score = np.where(passed, rng.uniform(0.5, 1, n), rng.uniform(0, 0.499, n)).round(4)
        rows.append(pd.DataFrame({"case_id": ids, "metric": "ok", "rater": rater, "rater_kind": "judge",
                                  "value": score, "run_id": run}))  # fmt: skip

    for k in range(REPEATS):
        judge("sampler", np.where(hard, rng.random(n) < 0.5, truth), f"repeat-{k}")
    judge("other", np.where(hard, rng.random(n) < 0.5, truth))
    judge("cousin", ~truth)
    judge("blind", ~truth)
    rows.append(pd.DataFrame({"case_id": ids, "metric": "ok", "rater": "ann", "rater_kind": "human",
                              "value": truth.astype(int), "run_id": ""}))  # fmt: skip
    return write_campaign(folder / "sure", TOML, pd.concat(rows))


@pytest.fixture(scope="module")
def sure(tmp_path_factory):
    return make(tmp_path_factory.mktemp("signals"))


def test_the_signals_read_the_campaign(sure):
    c = load_campaign(sure)
    repeats = confidence_signal(c, "ok", "sampler", "repeats")
    assert repeats.judge.case_ids.size == 600 and set(np.unique(repeats.confidence)) <= {0.6, 0.8, 1.0}
    jury = confidence_signal(c, "ok", "sampler", "jury")
    assert set(np.unique(jury.confidence)) <= {0.0, 1.0}  # one voter: other (cousin and blind do not vote)
    assert "other families than gpt" in jury.note and jury.judge.name == "sampler@repeat-0"
    with pytest.raises(ValueError, match="has 0 repeat"):
        confidence_signal(c, "ok", "other", "repeats")
    with pytest.raises(ValueError, match="no family recorded"):
        confidence_signal(c, "ok", "blind", "jury")
    with pytest.raises(ValueError, match="signal='x'"):
        confidence_signal(c, "ok", "sampler", "x")


def test_the_repeats_decide_the_easy_cases_the_score_cannot_tell_apart(sure):
    c = load_campaign(sure)
    by_score = escalate(c, metric="ok", judge="sampler@repeat-0", agreement=0.9)
    by_repeats = escalate_by_signal(c, metric="ok", judge="sampler", agreement=0.9, signal="repeats")
    assert by_score.n_decided < 100 and "signal" not in by_score.to_dict()
    # every easy case (60%) and the hard cases whose 5 coin flips agree (1/16 of them) have share 1; then the
    # cases 4 of 5 repeats agree on, all hard, right half the time: at most 75% of the cases reach 90% together
    assert 0.6 <= by_repeats.coverage.value <= 0.75 and by_repeats.agreement.value >= 0.9
    assert by_repeats.pass_at is None and by_repeats.fail_below is None and by_repeats.signal["name"] == "repeats"
    assert all(x.signal_at in (0.6, 0.8, 1.0) for x in by_repeats.candidates)
    assert "when its repeats confidence is above 0.8, or 0.8 with its score" in by_repeats.pass_rule
    score = escalate_by_signal(c, metric="ok", judge="sampler@repeat-0", agreement=0.9, signal="score")
    assert score.n_decided == by_score.n_decided and score.candidates == by_score.candidates


def test_all_splits_the_error_budget_and_keeps_the_widest(sure):
    c = load_campaign(sure)
    doc = escalate_by_signal(c, metric="ok", judge="sampler", agreement=0.9, signal="all", confidence=0.9)
    assert doc.signal["chosen_from"] == ["score", "repeats", "jury"]
    assert doc.signal["tested_at"] == pytest.approx(1 - 0.1 / 3) and doc.confidence == 0.9
    assert "Bonferroni" in doc.signal["multiplicity"] and "guaranteed at 90%" in doc.text
    kept = [s for s in doc.signals if s.get("chosen")]
    assert len(kept) == 1 and kept[0]["n_decided"] == max(s.get("n_decided", -1) for s in doc.signals)
    assert doc.n_decided == kept[0]["n_decided"] and doc.signal["name"] in ("repeats", "jury")
    assert [s["name"] for s in doc.signals if not s["available"]] == ["logprobs"]
    alone = escalate_by_signal(c, metric="ok", judge="sampler", agreement=0.9, signal=doc.signal["name"],
                               confidence=1 - 0.1 / 3)  # fmt: skip
    assert alone.n_decided == doc.n_decided  # the same test, at the split level


def test_the_signal_document_meets_the_schema(sure):
    jsonschema = pytest.importorskip("jsonschema")
    c = load_campaign(sure)
    for signal in ("repeats", "all"):
        body = json.loads(json.dumps(escalate_by_signal(c, metric="ok", judge="sampler", agreement=0.9,
                                                        signal=signal).to_dict()))  # fmt: skip
        jsonschema.validate(body, json.loads(SCHEMA.read_text()))
        assert "signal" in body and ("signals" in body) == (signal == "all")


def test_the_command_line(sure):
    base = ("escalate", sure, "--metric", "ok", "--agreement", "0.9")
    plain = run_cli(*base, "--judge", "sampler@repeat-0", "--json")
    assert plain.returncode == 0, plain.stderr
    assert "signal" not in json.loads(plain.stdout) and "signals" not in json.loads(plain.stdout)
    chosen = run_cli(*base, "--judge", "sampler", "--signal", "repeats", "--json")
    assert chosen.returncode == 0, chosen.stderr
    doc = json.loads(chosen.stdout)
    assert doc["signal"]["name"] == "repeats" and doc["coverage"]["estimate"] > 0.5
    every = run_cli(*base, "--judge", "sampler", "--signal", "all")
    assert every.returncode == 0, every.stderr
    assert (
        "multiplicity" in every.stdout
        and "(kept)" in every.stdout
        and "by the signal" in every.stdout
        and "signal at least" in every.stdout
    )
    refused = run_cli(*base, "--judge", "sampler", "--signal", "repeats", "--sample", "q")
    assert refused.returncode == 2 and "without --signal" in refused.stderr
    missing = run_cli(*base, "--judge", "other", "--signal", "repeats")
    assert missing.returncode == 2 and "has 0 repeat" in missing.stderr
