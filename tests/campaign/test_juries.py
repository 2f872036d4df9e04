"""Juries: a judge made of several judges, their scores combined per case (calibrate/campaign/juries.py)."""

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from calibrate.campaign.juries import jury_ratings, parse_juries

SCORES = {"a": [0, 1, 2, 3], "b": [1, 1, 3, 3], "c": [3, 1, 2, 0]}


def ratings(scores=SCORES, runs=None) -> pd.DataFrame:
    rows = [("h1", "m", "ann", "human", 1.0, "")]
    for rater, values in scores.items():
        for i, v in enumerate(values):
            rows.append((f"c{i}", "m", rater, "judge", float(v), (runs or {}).get(rater, "r1")))
    rows.append(("c9", "m", "a", "judge", np.nan, "r1"))  # a failed rating: no score, not combined
    return pd.DataFrame(rows, columns=["case_id", "metric", "rater", "rater_kind", "value", "run_id"])


def rater(on_scale=True, higher=True):
    return SimpleNamespace(on_metric_scale=on_scale, higher_is_better=higher)


RATERS = {name: rater() for name in SCORES}


def jury(combine, judges=("a", "b", "c"), table=None, raters=RATERS):
    problems = []
    spec = {"judges": list(judges), "combine": combine, "metrics": None, "description": None}
    added, facts = jury_ratings(
        table if table is not None else ratings(), {"panel": spec}, raters, {"m": None}, "c.toml", problems
    )
    return added, facts, problems


@pytest.mark.parametrize(
    ("combine", "expected"),
    [("mean", [4 / 3, 1, 7 / 3, 2]), ("median", [1, 1, 2, 3]), ("majority", [0, 1, 2, 3])],
)
def test_each_case_every_member_rated_gets_the_combined_score(combine, expected):
    added, facts, problems = jury(combine)
    assert problems == []
    assert added["case_id"].tolist() == ["c0", "c1", "c2", "c3"] and set(added["rater"]) == {"panel"}
    assert added["value"].tolist() == pytest.approx(expected)
    assert list(added.columns) == ["case_id", "metric", "rater", "rater_kind", "value", "run_id"]
    assert facts["panel"] == {
        "higher_is_better": True,
        "on_metric_scale": True,
        "model": f"{combine} of a, b, c",
        "description": None,
    }


def test_an_even_median_on_the_scale_stays_on_the_scale():
    on_scale, _, _ = jury("median", judges=("a", "b"))
    off = {name: rater(on_scale=False) for name in SCORES}
    off_scale, _, _ = jury("median", judges=("a", "b"), raters=off)
    assert on_scale["value"].tolist() == [0, 1, 2, 3]  # the lower middle value
    assert off_scale["value"].tolist() == [0.5, 1, 2.5, 3]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"raters": {**RATERS, "b": rater(higher=False)}}, "opposite directions"),
        ({"combine": "majority", "raters": {n: rater(on_scale=False) for n in SCORES}}, "a majority needs judges"),
        ({"judges": ("a", "zed")}, "judge 'zed' has no ratings in the campaign"),
        ({"judges": ("a", "b@r2")}, "judge 'b' has no run 'r2' on metric 'm' (its runs: r1)"),
        ({"table": pd.concat([ratings(), ratings(runs={"b": "r2"})])}, "judge 'b' has several runs on metric 'm'"),
    ],
)
def test_a_jury_that_cannot_be_formed_is_a_problem_naming_it(change, message):
    kwargs = {"combine": "mean", "judges": ("a", "b"), **change}
    added, _, problems = jury(**kwargs)
    assert len(added) == 0 and len(problems) == 1
    assert message in problems[0].message and problems[0].field.startswith("juries.panel")


def test_a_jury_named_like_a_rater_is_refused():
    problems = []
    spec = {"judges": ["a", "b"], "combine": "mean", "metrics": None, "description": None}
    jury_ratings(ratings(), {"a": spec}, RATERS, {"m": None}, "c.toml", problems)
    assert [p.message for p in problems] == ["jury 'a' has the name of a rater in the ratings"]


def test_the_tables_are_read_strictly():
    problems = []
    got = parse_juries(
        {
            "ok": {"judges": ["a", "b@r1"], "combine": "median", "metrics": ["m"], "description": "two"},
            "same": {"judges": ["a", "a"]},
            "how": {"judges": ["a", "b"], "combine": "max"},
        },
        "c.toml",
        problems,
    )
    assert got == {"ok": {"judges": ["a", "b@r1"], "combine": "median", "metrics": ["m"], "description": "two"}}
    assert sorted((p.field, p.message) for p in problems) == [
        ("juries.how.combine", "unknown way to combine"),
        ("juries.same.judges", "a jury needs two or more distinct judges"),
    ]
    assert parse_juries({"d": {"judges": ["a", "b"]}}, "c.toml", [])["d"]["combine"] == "mean"
