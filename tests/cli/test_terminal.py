"""What the terminal shows: names whole, no column that is undefined for every judge, the humans'
agreement beside the judges', the cases a warning is about, one progress bar per judge."""

from __future__ import annotations

import numpy as np
import pandas as pd
from click.testing import CliRunner

from calibrate import Campaign, compute_stats
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
    frame = pd.DataFrame([(ids[i % n], "faithfulness", rater, kind, value)
                          for i, (rater, kind, value) in enumerate(rows)],
                         columns=["case_id", "metric", "rater", "rater_kind", "value"])
    frame["run_id"] = np.where(frame["rater_kind"] == "judge", "run-2026-11-30", "")
    return frame


def test_a_warning_about_ties_names_the_cases():
    c = Campaign.from_frames({"name": "t", "metrics": {"faithfulness": {"scale": "binary"}}}, _ratings())
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


def test_one_progress_bar_per_judge():
    from calibrate.cli.console import progress

    with progress() as update:
        for label, total in (("judging judge-a", 3), ("judging judge-b", 2), ("bootstrap relevance", 10)):
            for done in range(1, total + 1):
                update(done, total, label)
        shown = [(task.description, task.completed, task.total) for task in update.bar.tasks]
    assert shown == [("judging judge-a", 3, 3), ("judging judge-b", 2, 2), ("bootstrap relevance", 10, 10)]
