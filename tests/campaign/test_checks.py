"""Each check of campaign/checks.CHECKS fires on a planted bad row, with its message naming the file, the
line, the field, the value found and what was expected; a clean campaign passes them all."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import calibrate
from calibrate.base.errors import CampaignError
from calibrate.campaign.checks import CHECKS, _first_of_each, in_case_order, rating_keys
from tests.conftest import write_campaign

TOML = """name = "t"
[metrics.f]
scale = "binary"
"""
HEADER = "case_id,metric,rater,rater_kind,value,error,run_id\n"
CLEAN = "a,f,ann,human,1,,\nb,f,ann,human,0,,\na,f,j,judge,0.8,,\nb,f,j,judge,0.2,,\n"
CASES = [{"case_id": c, "input": "q"} for c in "ab"]


def problems(tmp_path, planted: str, toml: str = TOML, cases=CASES) -> str:
    """The message load_campaign gives for the clean ratings with ``planted`` rows after them (line 6 on)."""
    folder = write_campaign(tmp_path / "c", toml, HEADER + CLEAN + planted, cases)
    with pytest.raises(CampaignError) as raised:
        calibrate.load_campaign(folder)
    return str(raised.value)


def test_a_clean_campaign_passes_every_check(tmp_path):
    campaign = calibrate.load_campaign(write_campaign(tmp_path / "c", TOML, HEADER + CLEAN, CASES))
    assert len(campaign.ratings) == 4 and set(campaign.cases) == {"a", "b"}


#: each check, a planted row it refuses, and the message it gives (after the file's path)
FIRES = {
    "check_ids": [
        (
            "a,g,ann,human,1,,\n",
            "line 6, field 'metric': unknown metric (found 'g'); expected a metric declared in "
            "campaign.toml: f (to remove a metric, take its rows out of your own ratings file too)",
        ),
        (
            "a,f,ann,person,1,,\n",
            "line 6, field 'rater_kind': unknown rater_kind (found 'person'); expected \"human\" or \"judge\"",
        ),
        (",f,ann,human,1,,\n", "line 6, field 'case_id': empty"),
        ("a,f,,human,1,,\n", "line 6, field 'rater': empty"),
    ],
    "check_values": [
        (
            "a,f,j2,judge,high,,\n",
            "line 6, field 'value': not a number (found 'high'); expected a finite number, "
            "or an empty value with an error",
        ),
        (
            "a,f,j2,judge,,,\n",
            "line 6, field 'value': no value and no error (found ''); expected a value, "
            "or an 'error' saying why the rating failed",
        ),
        (
            "a,f,j2,judge,0.5,timeout,\n",
            "line 6, field 'error': a rating has both a value and an error "
            "(found 'timeout'); expected either a value or an error",
        ),
    ],
    "check_scale": [
        (
            "a,f,ann2,human,2,,\n",
            "line 6, field 'value': value outside the scale of metric 'f' (found '2'); expected one of 0, 1",
        ),
    ],
    "check_rater_kinds": [
        (
            "a,f,j,human,1,,\n",
            "line 6, field 'rater_kind': rater 'j' is declared both human (first at line 6) and "
            "judge (first at line 4) (found 'j'); expected one rater_kind per rater",
        ),
    ],
    "check_duplicates": [
        (
            "a,f,ann,human,0,,\n",
            "line 6, field 'case_id': duplicate rating of case 'a', metric 'f' by rater 'ann' "
            "(first at line 2); expected one rating per (case_id, metric, rater)",
        ),
        (
            "a,f,j,judge,0.3,,\n",
            "line 6, field 'case_id': duplicate rating of case 'a', metric 'f' by rater 'j' "
            "(first at line 4); expected one rating per (case_id, metric, rater, run_id)",
        ),
    ],
    "check_run_names": [
        (
            "a,f,j@r1,judge,0.3,,\na,f,j,judge,0.4,,r1\n",
            "line 7, field 'rater': rater 'j@r1' and rater 'j' with "
            "run_id 'r1' would both be shown as 'j@r1'; expected rater names without '@' where runs are named, "
            "or other run_ids",
        ),
    ],
    "check_cases": [
        (
            "c,f,ann,human,1,,\n",
            "line 6, field 'case_id': a rating for a case that is not in cases.jsonl "
            "(found 'c'); expected a case_id listed in cases.jsonl",
        ),
    ],
}


def test_every_check_is_planted_here_in_order():
    assert list(FIRES) == [check.__name__ for check in CHECKS]


@pytest.mark.parametrize(
    ("planted", "message"),
    [pytest.param(*case, id=f"{name}-{i}") for name, cases in FIRES.items() for i, case in enumerate(cases)],
)
def test_each_check_fires_on_its_planted_row(tmp_path, planted, message):
    text = problems(tmp_path, planted)
    assert "ratings.csv, " + message in text, text
    assert text.startswith("1 problem in the campaign") or "problems in the campaign" in text


def test_a_judge_with_a_humans_name_and_a_human_rating_backwards_are_refused(tmp_path):
    toml = TOML + (
        '[judges.ann]\nlibrary = "deepeval"\nmetric = "faithfulness"\ninto = "f"\n'
        'model = { provider = "openai", name = "gpt-4o" }\n[raters.ann]\nhigher_is_better = false\n'
    )
    text = problems(tmp_path, "", toml)
    assert "field 'judges.ann': judge 'ann' has the name of a human rater in the ratings" in text, text
    assert (
        "field 'raters.ann.higher_is_better': a human rater rates on the metric's own scale (found False); "
        "expected true" in text
    ), text


def test_a_judge_on_the_metrics_scale_is_checked_against_it(tmp_path):
    text = problems(tmp_path, "a,f,k,judge,3,,\n", TOML + "[raters.k]\non_metric_scale = true\n")
    assert "line 6, field 'value': value outside the scale of metric 'f' (found '3')" in text, text


@pytest.mark.parametrize(("action", "value", "kept"), [("clip", 1.0, 5), ("drop", None, 4)])
def test_out_of_scale_clips_or_drops_and_lists_what_it_changed(tmp_path, action, value, kept):
    folder = write_campaign(tmp_path / "c", TOML, HEADER + CLEAN + "a,f,ann2,human,2,,\n", CASES)
    campaign = calibrate.load_campaign(folder, out_of_scale=action)
    (adjusted,) = campaign.adjustments
    assert (adjusted.line, adjusted.case_id, adjusted.rater, adjusted.value) == (6, "a", "ann2", 2.0)
    assert adjusted.action == ("clipped" if action == "clip" else "dropped") and adjusted.new_value == value
    assert len(campaign.ratings) == kept


def test_a_bad_cases_file_is_refused_with_its_line(tmp_path):
    text = problems(tmp_path, "", cases=[{"case_id": "a", "input": "q"}, {"input": "q"}])
    assert "cases.jsonl" in text and "line 2" in text, text


@settings(max_examples=200, deadline=None)
@given(
    rows=st.lists(
        st.tuples(
            st.sampled_from(["a", "b", "c"]),
            st.sampled_from(["f", "g"]),
            st.sampled_from(["ann", "j"]),
            st.sampled_from(["human", "judge"]),
            st.sampled_from(["", "1", "2"]),
            st.booleans(),
        ),
        max_size=12,
    )
)
def test_duplicates_found_by_codes_are_those_of_the_text(rows):
    # the keys the duplicate check combines from codes, against pandas' duplicated on the text itself
    ratings = pd.DataFrame(rows, columns=["case_id", "metric", "rater", "rater_kind", "run_id", "aside"])
    kept = np.flatnonzero(~ratings["aside"].to_numpy(dtype=bool))
    text = ratings[["case_id", "metric", "rater"]].copy()
    text["run"] = np.where(ratings["rater_kind"] == "judge", ratings["run_id"], "")
    expected = text.iloc[kept].duplicated(keep="first").to_numpy()
    first = _first_of_each(rating_keys(ratings, kept))
    assert (first != np.arange(len(kept))).tolist() == expected.tolist()
    for j, f in enumerate(first):  # the first rating of the same key, before or at each
        assert f <= j and text.iloc[kept[f]].tolist() == text.iloc[kept[j]].tolist()


def _loaded(folder, first_line: int):
    """A campaign folder's ratings (without the file's name), or its problems with each line counted
    from the file's first rating (a CSV's header is line 1, a Parquet or JSON Lines file has none)."""
    try:
        ratings = calibrate.load_campaign(folder).ratings
    except CampaignError as raised:
        return [
            (p.row - first_line, p.field, p.value, re.sub(r"line \d+", "line", p.message), p.expected)
            for p in raised.problems
        ]
    return ratings.drop(columns=["file", "line"])


@settings(max_examples=60, deadline=None)
@given(
    rows=st.lists(
        st.tuples(
            st.sampled_from(["a", "b", "c", "c\x1b", "é"]),
            st.sampled_from(["f", "f", "f", "g"]),
            st.sampled_from(["ann", "j", "k"]),
            st.sampled_from(["", "", "1"]),
        ),
        min_size=1,
        max_size=10,
    ),
    in_order=st.booleans(),
)
def test_each_format_loads_alike_in_case_order_or_not(tmp_path_factory, rows, in_order):
    # Parquet's names read as categoricals, a CSV's text held by pyarrow and JSON Lines' Python objects
    # go through different fast paths (ids in case order are not hashed): the same ratings or problems
    frame = pd.DataFrame(rows, columns=["case_id", "metric", "rater", "run_id"])
    frame = frame.sort_values("case_id", kind="stable") if in_order else frame
    frame = frame.assign(rater_kind=np.where(frame["rater"] == "ann", "human", "judge"), value=1.0, error="")
    folder = tmp_path_factory.mktemp("formats")
    found = [
        _loaded(write_campaign(folder / name, TOML, frame, ratings_name=name), 2 if name.endswith("csv") else 1)
        for name in ("ratings.csv", "ratings.parquet", "ratings.jsonl")
    ]
    for other in found[1:]:
        if isinstance(found[0], list):
            assert other == found[0]
        else:
            pd.testing.assert_frame_equal(other, found[0])
    text = frame[["case_id", "metric", "rater"]].assign(run=np.where(frame["rater"] == "ann", "", frame["run_id"]))
    duplicated = np.flatnonzero(text.duplicated(keep="first").to_numpy())
    if isinstance(found[0], list):  # every duplicate found, and no other
        named = [row for row, field, _, message, _ in found[0] if message.startswith("duplicate rating")]
        assert named == duplicated.tolist()
    else:
        assert not duplicated.size and found[0]["case_id"].tolist() == frame["case_id"].tolist()


@settings(max_examples=200, deadline=None)
@given(
    rows=st.lists(
        st.tuples(st.sampled_from(["a", "b", "c", "ab"]), st.sampled_from(["x", "y"]), st.sampled_from(["", "1"])),
        max_size=12,
    ),
    in_order=st.booleans(),
    categorical=st.booleans(),
)
def test_ratings_in_case_order_have_no_duplicate(rows, in_order, categorical):
    ratings = pd.DataFrame(rows, columns=["case_id", "rater", "run_id"]).assign(metric="m", rater_kind="judge")
    ratings = ratings.sort_values("case_id", kind="stable") if in_order else ratings
    ratings = ratings.reset_index(drop=True).astype({"case_id": "str"})
    if categorical:
        ratings = ratings.astype({c: "category" for c in ("rater", "run_id", "metric", "rater_kind")})
    ordered = in_case_order(ratings, np.arange(len(ratings)))
    of_one_case = ratings[["case_id", "rater", "run_id"]].astype(str).duplicated(keep=False).to_numpy()
    assert not (ordered & of_one_case).any()  # never a duplicate among the ratings it passes
    if in_order and not of_one_case.any():
        assert ordered.all()  # in case order, every rating passes: none of them is hashed
