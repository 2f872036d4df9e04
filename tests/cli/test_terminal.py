"""What the terminal shows: names whole, no column that is undefined for every judge, the humans'
agreement beside the judges', the cases a warning is about, one progress bar per judge."""

from __future__ import annotations

import os
import pty
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
from click.testing import CliRunner

from calibrate import campaign_from_frames, compute_stats
from calibrate.cli import main
from tests.conftest import write_campaign

TOML = """
name = "terminal"
[metrics.faithfulness]
scale = "binary"
max_false_pass = 0.2
"""
LONG = "a-judge-with-a-rather-long-name-that-must-not-be-cut@run-2026-11-30"


def _ratings(n: int = 60) -> pd.DataFrame:
    rng = np.random.default_rng(5)
    truth = rng.integers(0, 2, n)
    ids = [f"c{i:03d}" for i in range(n)]
    rows = [("ann-a", "human", float(v)) for v in truth]
    # ann-b disagrees on four cases: c000-c003 are ties of a two-person panel
    rows += [("ann-b", "human", float(1 - v) if i < 4 else float(v)) for i, v in enumerate(truth)]
    rows += [(LONG.split("@")[0], "judge", float(np.clip(v * 0.6 + rng.random() * 0.4, 0, 1))) for v in truth]
    frame = pd.DataFrame(
        [(ids[i % n], "faithfulness", rater, kind, value) for i, (rater, kind, value) in enumerate(rows)],
        columns=["case_id", "metric", "rater", "rater_kind", "value"],
    )
    frame["run_id"] = np.where(frame["rater_kind"] == "judge", "run-2026-11-30", "")
    return frame


def test_a_warning_about_ties_names_the_cases():
    c = campaign_from_frames({"name": "t", "metrics": {"faithfulness": {"scale": "binary"}}}, _ratings())
    warnings = compute_stats(c, n_boot=0)["metrics"][0]["warnings"]
    tie = next(w for w in warnings if "tied human panel" in w)
    # every disagreement of a two-person panel is a tie
    assert tie.startswith("4 case(s)") and tie.endswith(": c000, c001, c002, c003")


def test_stats_in_the_terminal(tmp_path):
    folder = write_campaign(tmp_path / "c", TOML, _ratings())
    result = CliRunner().invoke(main, ["stats", str(folder), "--n-boot", "100"], terminal_width=100)
    assert result.exit_code == 0, result.output
    text = result.output
    # a 0-1 judge on a binary metric has no kappa or alpha on the labels' scale: those columns are gone,
    # with one line saying why, and the judge's name is whole
    header = next(line for line in text.splitlines() if "judge" in line and "AUC" in line)
    assert "alpha" not in header and "kappa quadratic" not in header
    assert "alpha undefined for" in text
    assert "a-judge-with-a-rather-long-name-that-must-not-be-cut" in text
    # the human ceiling beside the judges
    assert "humans with each other (2 annotators, 60 cases labelled by two or more)" in text
    assert "Krippendorff's alpha" in text


def _in_a_terminal(args: list[str], columns: int) -> str:
    """What a user sees running ``calibrate ARGS`` in a terminal ``columns`` wide (a real pseudo-terminal,
    so that rich wraps and colours as it does for them), colours taken out."""
    master, slave = pty.openpty()
    env = {**os.environ, "COLUMNS": str(columns), "LINES": "50", "TERM": "xterm"}
    proc = subprocess.Popen(
        [str(Path(sys.executable).parent / "calibrate"), *args],
        stdout=slave,
        stderr=slave,
        stdin=subprocess.DEVNULL,
        env=env,
    )
    os.close(slave)
    chunks = []
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(master)
    assert proc.wait(timeout=300) == 0, b"".join(chunks).decode(errors="replace")
    text = b"".join(chunks).decode().replace("\r\n", "\n")
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", text)


def test_stats_and_thresholds_fit_100_columns_with_names_whole(tmp_path):
    frame = _ratings()
    rng = np.random.default_rng(1)
    for name in (
        "NISTRetrieval-instruct0",
        "h2oloo-zeroshot1",
        "coin",
    ):  # three more judges, names of the demo's length
        more = frame[frame["rater"] == "ann-a"].assign(rater=name, rater_kind="judge", run_id="")
        more["value"] = (
            np.clip(more["value"] * 0.5 + rng.random(len(more)) * 0.5, 0, 1)
            if name != "coin"
            else rng.random(len(more))
        )
        frame = pd.concat([frame[frame["rater"] != LONG.split("@")[0]], more])
    folder = write_campaign(tmp_path / "c", TOML, frame)
    for command in ("stats", "thresholds"):
        text = _in_a_terminal([command, str(folder), "--n-boot", "100"], columns=100)
        lines = [line for line in text.splitlines() if "judging" not in line and "bootstrap" not in line]
        assert max(len(line) for line in lines) <= 100, "\n".join(lines)
        # the verdict block opens the output, one line (or more, wrapped) per judge
        start = next(i for i, line in enumerate(lines) if line.startswith("faithfulness: most lenient"))
        assert lines[start + 1].startswith("  NISTRetrieval-instruct0: ")
        assert any(line.startswith("  coin: not defensible: its scores separate") for line in lines)
        # every name whole on a row of the table
        for name in ("NISTRetrieval-instruct0", "h2oloo-zeroshot1", "coin"):
            assert any(line.lstrip().startswith(name + " ") for line in lines[start + 5 :]), name


def test_one_progress_bar_per_judge():
    from calibrate.cli.console import progress

    with progress() as update:
        for label, total in (("judging judge-a", 3), ("judging judge-b", 2), ("bootstrap relevance", 10)):
            for done in range(1, total + 1):
                update(done, total, label)
        shown = [(task.description, task.completed, task.total) for task in update.bar.tasks]
    assert shown == [("judging judge-a", 3, 3), ("judging judge-b", 2, 2), ("bootstrap relevance", 10, 10)]


def test_every_warning_about_cases_names_them():
    frame = _ratings(40)
    frame = frame[frame["rater"] != "ann-b"].copy()
    frame["error"] = ""
    # a failed human rating of c005, failed judge ratings of c007 and c009
    frame = pd.concat(
        [
            frame,
            pd.DataFrame(
                [
                    {
                        "case_id": "c005",
                        "metric": "faithfulness",
                        "rater": "ann-b",
                        "rater_kind": "human",
                        "value": np.nan,
                        "error": "timeout",
                    }
                ]
            ),
        ],
        ignore_index=True,
    )
    judge = frame["rater_kind"] == "judge"
    frame.loc[judge & frame["case_id"].isin(["c007", "c009"]), ["value", "error"]] = [np.nan, "refused"]
    cases = [
        {"case_id": f"c{i:03d}", "input": "q", "metadata": {"generator_family": "judges" if i in (3, 4) else "other"}}
        for i in range(40)
    ]
    c = campaign_from_frames(
        {
            "name": "t",
            "metrics": {"faithfulness": {"scale": "binary"}},
            "raters": {LONG.split("@")[0]: {"family": "judges"}},
        },
        frame,
        cases,
    )
    c.samples["s"] = {
        "design": {"strategy": "threshold"},
        "case_ids": [f"c{i:03d}" for i in range(10, 40)],
        "strata": ["a"] * 15 + ["b"] * 15,
        "inclusion_probability": np.r_[np.full(15, 0.5), np.full(15, 0.1)],
    }
    warnings = compute_stats(c, n_boot=0)["metrics"][0]["warnings"]
    assert any(w.startswith("1 human rating(s) recorded as failed") and w.endswith(": c005") for w in warnings)
    assert any("2 failed rating(s)" in w and w.endswith(": c007, c009") for w in warnings)
    assert any("generator of 2 case(s)" in w and w.endswith(": c003, c004") for w in warnings)
    outside = next(w for w in warnings if "came from no recorded sample" in w)
    assert outside.endswith(": c000, c001, c002, c003, c004, c005, c006, c007, c008, c009")
