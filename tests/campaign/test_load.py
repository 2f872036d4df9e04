"""load_campaign and campaign_from_frames: a campaign read from its folder or from frames, and every
validation error naming the file, the line, the field and what was expected."""

import numpy as np
import pandas as pd
import pytest

from calibrate import CampaignError, load_campaign
from calibrate.campaign import campaign_from_frames
from tests.conftest import write_campaign

ORDINAL_TOML = """
name = "ord"
[metrics.relevance]
scale = "ordinal"
levels = [0, 1, 2, 3]
human_pass = 2
"""
HEADER = "case_id,metric,rater,rater_kind,value,error\n"


def problems(folder, **kwargs):
    with pytest.raises(CampaignError) as info:
        load_campaign(folder, **kwargs)
    return info.value.problems, str(info.value)


def test_valid_campaign_loads_in_every_format(tmp_path):
    frame = pd.DataFrame(
        {"case_id": ["a", "b"], "metric": "relevance", "rater": "h", "rater_kind": "human", "value": [0, 3]}
    )
    for name in ("ratings.csv", "ratings.jsonl", "ratings.parquet"):
        c = load_campaign(write_campaign(tmp_path / name, ORDINAL_TOML, frame, ratings_name=name))
        assert c.ratings["value"].tolist() == [0.0, 3.0] and c.data_hash.startswith("sha256:")


def test_unknown_metric_names_file_line_and_choices(tmp_path):
    folder = write_campaign(tmp_path / "c", ORDINAL_TOML, HEADER + "a,relevance,h,human,1,\nb,relevancy,h,human,2,\n")
    found, text = problems(folder)
    assert len(found) == 1 and found[0].row == 3 and found[0].field == "metric" and found[0].value == "relevancy"
    assert "ratings.csv, line 3" in text and "relevance" in found[0].expected


def test_out_of_scale_error_clip_and_drop(tmp_path):
    folder = write_campaign(
        tmp_path / "c",
        ORDINAL_TOML,
        HEADER + "a,relevance,h,human,1,\nb,relevance,h,human,5,\nc,relevance,h,human,1.5,\n",
    )
    found, text = problems(folder)
    assert [p.row for p in found] == [3, 4] and "one of 0, 1, 2, 3" in text
    clipped = load_campaign(folder, out_of_scale="clip")
    assert clipped.ratings["value"].tolist() == [1.0, 3.0, 1.0]
    assert [(a.line, a.value, a.new_value, a.action) for a in clipped.adjustments] == [
        (3, 5.0, 3.0, "clipped"),
        (4, 1.5, 1.0, "clipped"),
    ]
    dropped = load_campaign(folder, out_of_scale="drop")
    assert dropped.ratings["case_id"].tolist() == ["a"] and len(dropped.adjustments) == 2


def test_judges_on_their_own_scale_are_not_checked_unless_declared(tmp_path):
    rows = HEADER + "a,relevance,h,human,1,\na,relevance,j,judge,0.75,\n"
    assert load_campaign(write_campaign(tmp_path / "free", ORDINAL_TOML, rows)).ratings.shape[0] == 2
    declared = ORDINAL_TOML + "[raters.j]\non_metric_scale = true\n"
    found, _ = problems(write_campaign(tmp_path / "declared", declared, rows))
    assert found[0].row == 3 and found[0].value == "0.75"


def test_missing_column(tmp_path):
    found, text = problems(
        write_campaign(tmp_path / "c", ORDINAL_TOML, "case_id,metric,rater,value\na,relevance,h,1\n")
    )
    assert "rater_kind" in found[0].value and "missing column" in text


def test_duplicate_rating_names_both_lines(tmp_path):
    found, text = problems(
        write_campaign(tmp_path / "c", ORDINAL_TOML, HEADER + "a,relevance,h,human,1,\na,relevance,h,human,2,\n")
    )
    assert found[0].row == 3 and "first at line 2" in text


def test_judge_runs_are_not_duplicates(tmp_path):
    rows = (
        "case_id,metric,rater,rater_kind,value,run_id\na,relevance,h,human,1,\nb,relevance,h,human,2,\n"
        "a,relevance,j,judge,1,r1\na,relevance,j,judge,2,r2\n"
    )
    c = load_campaign(write_campaign(tmp_path / "c", ORDINAL_TOML, rows))
    from calibrate.campaign.reference import judge_scores

    assert [j.name for j in judge_scores(c, "relevance")] == ["j@r1", "j@r2"]


def test_rater_both_human_and_judge(tmp_path):
    _found, text = problems(
        write_campaign(tmp_path / "c", ORDINAL_TOML, HEADER + "a,relevance,x,human,1,\nb,relevance,x,judge,2,\n")
    )
    assert "both human (first at line 2) and judge (first at line 3)" in text


def test_rating_for_unknown_case(tmp_path):
    folder = write_campaign(
        tmp_path / "c",
        ORDINAL_TOML,
        HEADER + "a,relevance,h,human,1,\nzz,relevance,h,human,1,\n",
        cases=[{"case_id": "a", "input": "q"}],
    )
    found, text = problems(folder)
    assert found[0].row == 3 and found[0].value == "zz" and "cases.jsonl" in text


def test_bad_values_and_failures(tmp_path):
    rows = (
        HEADER + "a,relevance,h,human,abc,\nb,relevance,h,human,,\nc,relevance,j,judge,,rate limited\n"
        "d,relevance,j,judge,2,also an error\ne,relevance,h,human,inf,\n"
    )
    found, _ = problems(write_campaign(tmp_path / "c", ORDINAL_TOML, rows))
    messages = {(p.row, p.message) for p in found}
    assert (2, "not a number") in messages and (3, "no value and no error") in messages
    assert (5, "a rating has both a value and an error") in messages and (6, "not a number") in messages
    assert not any(p.row == 4 for p in found)  # a failure with its error is data, not a problem


def test_bad_rater_kind_and_empty_fields(tmp_path):
    found, _ = problems(write_campaign(tmp_path / "c", ORDINAL_TOML, HEADER + ",relevance,h,robot,1,\n"))
    assert {(p.field, p.row) for p in found} == {("case_id", 2), ("rater_kind", 2)}


@pytest.mark.parametrize(
    "toml, field",
    [
        ('name = "x"\n[metrics.m]\nscale = "likert"\n', "metrics.m.scale"),
        ('name = "x"\n[metrics.m]\nscale = "ordinal"\nhuman_pass = 1\n', "metrics.m.levels"),
        ('name = "x"\n[metrics.m]\nscale = "ordinal"\nlevels = [0, 1, 2]\n', "metrics.m.human_pass"),
        ('name = "x"\n[metrics.m]\nscale = "ordinal"\nlevels = [0, 1, 2]\nhuman_pass = 5\n', "metrics.m.human_pass"),
        ('name = "x"\n[metrics.m]\nscale = "binary"\nmax_false_pass = 1.5\n', "metrics.m.max_false_pass"),
        ('name = "x"\n[metrics.m]\nscale = "binary"\ncost_false_pass = 2\n', "metrics.m.cost_false_pass"),
        ('name = "x"\n[metrics.m]\nscale = "binary"\nthreshhold = 2\n', "metrics.m.threshhold"),
        (
            'name = "x"\n[metrics.m]\nscale = "binary"\n[raters.j]\nhigher_is_better = "no"\n',
            "raters.j.higher_is_better",
        ),
        ('[metrics.m]\nscale = "binary"\n', "name"),
        ('name = "x"\n', "metrics"),
    ],
)
def test_configuration_errors(tmp_path, toml, field):
    found, _ = problems(write_campaign(tmp_path / "c", toml, HEADER + "a,m,h,human,1,\n"))
    assert field in [p.field for p in found]


def test_invalid_toml_names_the_position(tmp_path):
    _, text = problems(write_campaign(tmp_path / "c", 'name = "x"\n[metrics.m\n', HEADER))
    assert "campaign.toml" in text and "line 2" in text


def test_missing_folder_files_and_several_ratings_files(tmp_path):
    _, text = problems(tmp_path / "nowhere")
    assert "does not exist" in text
    (tmp_path / "empty").mkdir()
    _, text = problems(tmp_path / "empty")
    assert "campaign.toml is missing" in text
    folder = write_campaign(tmp_path / "two", ORDINAL_TOML, HEADER + "a,relevance,h,human,1,\n")
    (folder / "ratings.jsonl").write_text("")
    _, text = problems(folder)
    assert "exactly one ratings file" in text


def test_cases_file_errors(tmp_path):
    folder = write_campaign(
        tmp_path / "c",
        ORDINAL_TOML,
        HEADER + "a,relevance,h,human,1,\n",
        cases=[{"case_id": "a", "retrieval_context": "not a list"}, {"case_id": "a"}, {"input": "x"}],
    )
    with (folder / "cases.jsonl").open("a") as handle:
        handle.write("{not json\n")
    found, _ = problems(folder)
    assert [p.row for p in found] == [4]  # invalid JSON stops reading first
    (folder / "cases.jsonl").write_text(
        '{"case_id": "a", "retrieval_context": "x"}\n{"case_id": "a"}\n{"input": "x"}\n'
    )
    found, _text = problems(folder)
    assert {(p.row, p.field) for p in found} == {(1, "retrieval_context"), (2, "case_id"), (3, "case_id")}


def test_every_problem_is_reported_at_once(tmp_path):
    rows = HEADER + "".join(f"c{i},nope,h,human,1,\n" for i in range(60))
    found, text = problems(write_campaign(tmp_path / "c", ORDINAL_TOML, rows))
    assert len(found) == 60 and "and 10 more problems" in text


def test_from_frames_validates_like_files():
    with pytest.raises(CampaignError, match="unknown metric"):
        campaign_from_frames(
            {"name": "x", "metrics": {"m": {"scale": "binary"}}},
            pd.DataFrame({"case_id": ["a"], "metric": "q", "rater": "h", "rater_kind": "human", "value": [1]}),
        )


def test_multiple_humans_give_majority_and_count(small_campaign):
    from calibrate.campaign.reference import human_reference

    c = load_campaign(small_campaign)
    ref = human_reference(c, "faithfulness")
    assert ref.n_multiply_labelled == 12 and ref.values.size == 60 and ref.n_ties == 0


def test_ordinal_reference_is_low_median():
    from calibrate.campaign.reference import human_reference

    frame = pd.DataFrame(
        {
            "case_id": ["a"] * 4 + ["b"] * 3,
            "metric": "relevance",
            "rater": ["p", "q", "r", "s", "p", "q", "r"],
            "rater_kind": "human",
            "value": [0, 1, 3, 3, 1, 2, 3],
        }
    )
    import tomllib

    c = campaign_from_frames(tomllib.loads(ORDINAL_TOML), frame)
    ref = human_reference(c, "relevance")
    assert ref.values.tolist() == [1.0, 2.0] and ref.n_ties == 1


def test_rater_facts_are_read(small_campaign):
    c = load_campaign(small_campaign)
    assert c.raters["judge-a"].family == "gpt" and c.raters["judge-b"].higher_is_better


def declared_judges(*names: str) -> str:
    return "".join(
        f'[judges.{n}]\nlibrary = "deepeval"\nmetric = "answer_relevancy"\ninto = "relevance"\n'
        f'model = {{ provider = "openai", name = "m" }}\n'
        for n in names
    )


def test_exported_judge_ratings_are_read_and_validated_with_their_file(tmp_path):
    folder = write_campaign(
        tmp_path / "c",
        ORDINAL_TOML + declared_judges("j", "j2"),
        HEADER + "a,relevance,h,human,1,\na,relevance,j,judge,2,\n",
    )
    (folder / "judge_ratings.csv").write_text(
        "case_id,metric,rater,rater_kind,value,error,reason,run_id\n"
        "b,relevance,j,judge,1,,,\na,relevance,j,judge,3,,,\n"
    )
    found, text = problems(folder)
    assert found[0].file.endswith("judge_ratings.csv") and found[0].row == 3
    assert "first at line 3 of ratings.csv" in text
    (folder / "judge_ratings.csv").write_text(
        "case_id,metric,rater,rater_kind,value,error,reason,run_id\nb,relevance,j2,judge,1,,,\n"
    )
    c = load_campaign(folder)
    assert sorted(c.ratings["rater"]) == ["h", "j", "j2"]
    # a judge no longer declared in campaign.toml: its exported ratings are set aside, not an error
    (folder / "campaign.toml").write_text(ORDINAL_TOML + declared_judges("j"))
    c = load_campaign(folder)
    assert sorted(c.ratings["rater"]) == ["h", "j"] and [(s.rater, s.why) for s in c.set_aside] == [("j2", "judge")]


def test_the_demo_loads_as_it_is_because_it_declares_what_to_do_out_of_scale():
    from calibrate import demo_campaign_path

    campaign = load_campaign(demo_campaign_path())
    assert campaign.out_of_scale == "drop" and len(campaign.adjustments) == 2
    assert load_campaign(demo_campaign_path(), out_of_scale="clip").out_of_scale == "clip"  # the caller decides


def test_a_declared_out_of_scale_applies_and_a_wrong_one_is_named(tmp_path):
    write_campaign(
        tmp_path,
        'name = "x"\nout_of_scale = "clip"\n[metrics.m]\nscale = "ordinal"\nlevels = [0, 1, 2]\nhuman_pass = 1\n',
        "case_id,metric,rater,rater_kind,value\nc0,m,a,human,5\n",
    )
    assert load_campaign(tmp_path).ratings["value"].tolist() == [2.0]
    (tmp_path / "campaign.toml").write_text('name = "x"\nout_of_scale = "ignore"\n[metrics.m]\nscale = "binary"\n')
    with pytest.raises(CampaignError) as raised:
        load_campaign(tmp_path)
    assert "field 'out_of_scale': unknown out_of_scale (found 'ignore'); expected error, clip or drop" in str(
        raised.value
    )


def test_from_frames_takes_a_frame_of_cases_and_true_false_labels():
    config = {"name": "x", "metrics": {"f": {"scale": "binary"}}}
    ratings = pd.DataFrame(
        {"case_id": ["a", "b"], "metric": "f", "rater": "ann", "rater_kind": "human", "value": [True, False]}
    )
    cases = pd.DataFrame(
        {
            "case_id": ["a", "b"],
            "input": ["q1", "q2"],
            "retrieval_context": [["p"], None],
            "expected_output": ["e", np.nan],
        }
    )
    campaign = campaign_from_frames(config, ratings, cases)
    assert campaign.ratings["value"].tolist() == [1.0, 0.0]
    assert campaign.cases["b"] == {"case_id": "b", "input": "q2"}
    assert campaign.cases["a"]["retrieval_context"] == ["p"]
    with pytest.raises(TypeError, match="ratings must be a pandas DataFrame, not list"):
        campaign_from_frames(config, [{"case_id": "a"}])


@pytest.mark.parametrize(
    ("value", "missing"),
    [
        (None, True),
        (np.nan, True),
        (pd.NA, True),
        ("", False),
        (0, False),
        ([], False),
        ({}, False),
        (np.array([np.nan]), False),
    ],
)
def test_a_missing_cell_holds_nothing(value, missing):
    from calibrate.campaign.load import missing_cell

    assert missing_cell(value) is missing
