"""The campaign's data model: a metric's scale (in it, nearest to it, in words, its alpha level), facts
about a rater, the metrics named, and the note on exported ratings set aside."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from calibrate.campaign.judge_specs import JudgeSpec, ModelSpec
from calibrate.campaign.model import (
    RATING_COLUMNS,
    REQUIRED_COLUMNS,
    Campaign,
    Metric,
    Rater,
    SetAside,
    number_text,
)

ORDINAL = Metric("r", "ordinal", human_pass=2, levels=(0.0, 1.0, 2.0, 3.0))
CONTINUOUS = Metric("c", "continuous", human_pass=0.5, range=(0.0, 1.0))
UNBOUNDED = Metric("u", "continuous", human_pass=0.0)


def test_number_text():
    assert (number_text(2.0), number_text(0.5), number_text(3), number_text("x")) == ("2", "0.5", "3", "x")


def test_a_scale_in_words_and_its_alpha_level():
    assert ORDINAL.scale_text() == "one of 0, 1, 2, 3" and ORDINAL.alpha_level == "ordinal"
    assert CONTINUOUS.scale_text() == "a number from 0 to 1" and CONTINUOUS.alpha_level == "interval"
    assert UNBOUNDED.scale_text() == "a finite number"
    assert Metric("b", "binary", human_pass=1, levels=(0.0, 1.0)).alpha_level == "nominal"


def test_in_scale_and_nearest_in_scale():
    assert ORDINAL.in_scale(np.array([0, 2.5, 3, 4])).tolist() == [True, False, True, False]
    assert ORDINAL.nearest_in_scale(np.array([-1, 2.4, 7, 1.5])).tolist() == [0.0, 2.0, 3.0, 1.0]  # ties go low
    assert CONTINUOUS.in_scale(np.array([0, 1, 1.01, -0.1])).tolist() == [True, True, False, False]
    assert CONTINUOUS.nearest_in_scale(np.array([-1, 0.3, 2])).tolist() == [0.0, 0.3, 1.0]
    assert UNBOUNDED.in_scale(np.array([1e9, np.inf, np.nan])).tolist() == [True, False, False]
    assert UNBOUNDED.nearest_in_scale(np.array([5.0])).tolist() == [5.0]


def test_the_rating_columns():
    assert REQUIRED_COLUMNS == ("case_id", "metric", "rater", "rater_kind", "value")
    assert RATING_COLUMNS[: len(REQUIRED_COLUMNS)] == REQUIRED_COLUMNS and "error" in RATING_COLUMNS


def campaign(**kwargs) -> Campaign:
    return Campaign("n", {"r": ORDINAL, "c": CONTINUOUS}, {}, pd.DataFrame(), **kwargs)


def test_the_metrics_named_are_checked():
    c = campaign()
    assert c.metric_names() == ["c", "r"] and c.metric_names(["r"]) == ["r"]
    with pytest.raises(ValueError, match="unknown metric x, y; the campaign declares c, r"):
        c.metric_names(["r", "x", "y"])


def test_facts_about_a_rater_from_its_table_its_judge_or_its_import():
    judge = JudgeSpec("j", "deepeval", "faithfulness", "r", ModelSpec("openai", "gpt-4o"), "gpt")
    c = campaign(
        judges={"j": judge, "t": judge},
        imported_raters={"i": {"family": "claude", "model": "claude-3"}},
    )
    c.raters["t"] = Rater("t", family="own", higher_is_better=False)
    assert c.rater("j") == Rater("j", family="gpt", model="gpt-4o")
    assert c.rater("t").family == "own" and not c.rater("t").higher_is_better  # its table first
    assert c.rater("i") == Rater("i", family="claude", model="claude-3")
    assert c.rater("nobody") == Rater("nobody") and Rater("x").higher_is_better and not Rater("x").on_metric_scale


def test_the_note_on_ratings_set_aside_per_reason_and_metric():
    aside = [
        SetAside("/f/judge_ratings.csv", 2, "c1", "r", "j", "case"),
        SetAside("/f/labelstudio_ratings.csv", 3, "c2", "r", "ann", "case"),
        SetAside("/f/judge_ratings.csv", 4, "c1", "tone", "j", "metric"),
        SetAside("/f/judge_ratings.csv", 5, "c1", "r", "old", "judge"),
    ]
    c = campaign(set_aside=aside)
    assert campaign().set_aside_note() is None
    assert c.set_aside_note("r", why="case") == (
        "2 rating(s) in judge_ratings.csv and labelstudio_ratings.csv are of 2 case(s) no longer in cases.jsonl "
        "(c1, c2): left out of every statistic; their stores keep them, and the next judge run or pull leaves "
        "them out of the file"
    )
    assert c.set_aside_note("tone") == (
        "1 rating(s) in judge_ratings.csv are of metric(s) no longer declared in campaign.toml (tone): left out "
        "of every statistic; kept in their files and stores, they come back when it is declared again"
    )
    assert c.set_aside_note(why="judge").startswith(
        "1 rating(s) in judge_ratings.csv are by judge(s) no longer declared in campaign.toml (old)"
    )
    assert c.set_aside_note().count("; ") >= 2 and c.set_aside_note("c") is None


def test_a_long_list_set_aside_is_cut_at_ten():
    c = campaign(set_aside=[SetAside("judge_ratings.csv", i, f"c{i:02d}", "r", "j") for i in range(12)])
    assert "(c00, c01, c02, c03, c04, c05, c06, c07, c08, c09 ...)" in c.set_aside_note()
