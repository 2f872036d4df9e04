"""What the import tests share: the command line run in process, a new campaign, the files an import writes,
and the capitals the promptfoo and Inspect evals ask about."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

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
