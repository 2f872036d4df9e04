"""What a campaign holds, counted per metric, and where its ratings came from
(calibrate/campaign/summary.py: the document ``calibrate validate`` shows)."""

import pytest

from calibrate import CampaignError, load_campaign, validate_campaign
from calibrate.campaign.summary import rating_provenance
from tests.conftest import write_campaign

TOML = """
name = "two"
[metrics.faithful]
scale = "binary"
[metrics.relevance]
scale = "ordinal"
levels = [0, 1, 2]
human_pass = 1
"""
RATINGS = """case_id,metric,rater,rater_kind,value,error
c1,faithful,ann,human,1,
c2,faithful,ann,human,0,
c2,faithful,bea,human,0,
c1,faithful,gpt,judge,1,
c2,faithful,gpt,judge,,timed out
c1,faithful,llama,judge,0,
c1,relevance,ann,human,2,
"""


@pytest.fixture
def folder(tmp_path):
    return write_campaign(
        tmp_path / "c", TOML, RATINGS, cases=[{"case_id": "c1"}, {"case_id": "c2"}, {"case_id": "c3"}]
    )


def test_each_metric_is_counted(folder):
    doc = validate_campaign(folder)
    assert doc["campaign"] == "two" and doc["cases"] == 3 and doc["data_hash"].startswith("sha256:")
    faithful, relevance = doc["metrics"]
    assert faithful == {
        "metric": "faithful",
        "scale": "binary",
        "human_ratings": 3,
        "judge_ratings": 3,
        "failed": 1,
        "labelled_cases": 2,
        "judges": 2,
        "judges_declared": [],
    }
    assert (relevance["metric"], relevance["human_ratings"], relevance["judges"]) == ("relevance", 1, 0)
    assert doc.to_frame()["metric"].tolist() == ["faithful", "relevance"]
    assert doc["judges"] == [] and doc["adjustments"] == [] and doc["set_aside"] == []


def test_a_campaign_already_read_gives_the_same_document(folder):
    assert validate_campaign(load_campaign(folder)) == validate_campaign(str(folder))


def test_provenance_is_one_row_per_origin_and_kind(folder):
    rows = rating_provenance(load_campaign(folder))
    assert [(r["origin"], r["kind"], r["raters"], r["ratings"], r["failed"]) for r in rows] == [
        ("ratings.csv (the campaign’s own file)", "human", 2, 4, 0),
        ("ratings.csv (the campaign’s own file)", "judge", 2, 3, 1),
    ]
    assert rows[1]["rater_names"] == ["gpt", "llama"] and rows[0]["metrics"] == ["faithful", "relevance"]


def test_a_folder_with_problems_is_refused_with_every_problem(tmp_path):
    bad = write_campaign(
        tmp_path / "bad", TOML, RATINGS.replace("c1,faithful,ann,human,1,", "c1,faithful,ann,human,7,")
    )
    with pytest.raises(CampaignError, match=r"ratings\.csv, line 2, field 'value'"):
        validate_campaign(bad)
    assert validate_campaign(bad, out_of_scale="clip")["metrics"][0]["human_ratings"] == 3
