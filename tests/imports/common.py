"""What the import tests share: the command line run in process, a new campaign, the files an import writes,
the capitals the promptfoo and Inspect evals ask about, and the planted judges of the Langfuse and
LangSmith exports."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from sklearn.metrics import cohen_kappa_score

from calibrate.cli import main


def run(*args: str) -> str:
    """``calibrate ARGS``, which must succeed; its output."""
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def new_campaign(folder: Path, metric: str) -> Path:
    """``calibrate init FOLDER --metric METRIC``."""
    run("init", str(folder), "--metric", metric)
    return folder


def written(folder: Path) -> dict[str, bytes]:
    """The campaign's data files, byte for byte (an import that changes nothing leaves them so)."""
    return {p.name: p.read_bytes() for p in folder.iterdir() if p.suffix in (".csv", ".jsonl", ".json")}


#: the questions of the promptfoo and Inspect evals: where each city is
CITIES = [
    ("Paris", "France"),
    ("Rome", "Italy"),
    ("Oslo", "Norway"),
    ("Lima", "Peru"),
    ("Cairo", "Egypt"),
    ("Tokyo", "Japan"),
    ("Berlin", "Germany"),
    ("Madrid", "Spain"),
    ("Athens", "Greece"),
    ("Dublin", "Ireland"),
    ("Vienna", "Austria"),
    ("Lisbon", "Portugal"),
    ("Warsaw", "Poland"),
    ("Prague", "Czechia"),
    ("Quito", "Ecuador"),
    ("Hanoi", "Vietnam"),
]
#: the answers their context supports (every third answer names the wrong country)
SUPPORTED = [i % 3 != 0 for i in range(len(CITIES))]


# ---------------------------------------- the Langfuse and LangSmith exports: two judges, planted misses
N = 30
HUMAN = [0 if i % 3 == 0 else 1 for i in range(N)]
MISSES = {"gpt-4o-mini": {1, 4, 9, 15, 22}, "claude-3-5-haiku": set(range(0, N, 3)) | {2, 5}}
USERS = 6  # the traces with a user's thumbs (source API)


def verdict(judge: str, i: int) -> int:
    return int(bool(HUMAN[i]) != (i in MISSES[judge]))


def check_kappas(folder: Path) -> None:
    stats = json.loads(run("stats", str(folder), "--json", "--n-boot", "200"))
    judges = {j["judge"]: j for j in stats["metrics"][0]["judges"]}
    assert set(judges) == set(MISSES)
    for judge in MISSES:
        assert judges[judge]["kappa"]["estimate"] == pytest.approx(
            cohen_kappa_score(HUMAN, [verdict(judge, i) for i in range(N)]), abs=1e-12
        )
        assert judges[judge]["n"] == N
    assert judges["gpt-4o-mini"]["family"] == "gpt" and judges["claude-3-5-haiku"]["family"] == "claude"
