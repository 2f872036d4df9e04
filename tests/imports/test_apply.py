"""One import into a campaign: a source's batch matched, checked, stored and written, or nothing
(calibrate/imports/apply.py). Each tool's reader through it: the other files of tests/imports/."""

import pytest

import calibrate
from calibrate.base.errors import CampaignError
from calibrate.imports.apply import grouped_skips, import_batch, undo_withdrawals
from calibrate.imports.records import ImportedRating, Skip, SourceBatch

CASES = [{"case_id": f"c{i}", "input": f"q{i}?"} for i in range(3)]


def rating(case, value=1.0, *, metric="Faithfulness", rater="gpt-4o", kind="judge"):
    return ImportedRating(case, metric, rater, kind, value, f"{case}/{metric}/{rater}")


def batch(ratings, *, cases=CASES, whole=False, skipped=()):
    return SourceBatch(
        "tool", "tool:x", "by hand", cases=list(cases), ratings=list(ratings), skipped=list(skipped), whole=whole
    )


@pytest.fixture
def folder(tmp_path):
    calibrate.init_campaign(tmp_path / "c", ["faithfulness", "relevance"])
    return tmp_path / "c"


def written(folder):
    return {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file() and p.suffix in (".csv", ".json", ".jsonl")}


def test_a_batch_is_matched_stored_and_written(folder):
    doc = import_batch(folder, batch([rating("c0"), rating("c1", 0.0), rating("c1", 1.0, rater="alice", kind="human")]))
    assert doc["cases"]["added"] == 3 and doc["ratings"]["new"] == 3 and not doc["dry_run"]
    c = calibrate.load_campaign(folder)
    got = (
        c.ratings[["case_id", "metric", "rater", "rater_kind", "value"]]
        .sort_values(["case_id", "rater"])
        .values.tolist()
    )
    assert got == [
        ["c0", "faithfulness", "gpt-4o", "judge", 1.0],
        ["c1", "faithfulness", "alice", "human", 1.0],
        ["c1", "faithfulness", "gpt-4o", "judge", 0.0],
    ]
    before = written(folder)
    again = import_batch(
        folder, batch([rating("c0"), rating("c1", 0.0), rating("c1", 1.0, rater="alice", kind="human")])
    )
    assert again["ratings"]["unchanged"] == 3 and written(folder) == before  # nothing new: the same bytes


def test_a_dry_run_says_what_it_would_do_and_writes_nothing(folder):
    before = written(folder)
    doc = import_batch(folder, batch([rating("c0")]), dry_run=True)
    assert doc["dry_run"] and doc["ratings"]["new"] == 1 and written(folder) == before


def test_names_are_mapped_and_a_judge_renamed(folder):
    doc = import_batch(
        folder, batch([rating("c0", metric="is_relevant")]), metric_map={"is_relevant": "relevance"}, rater="my-judge"
    )
    assert doc["ratings"]["new"] == 1
    c = calibrate.load_campaign(folder)
    assert c.ratings[["metric", "rater"]].values.tolist() == [["relevance", "my-judge"]]
    with pytest.raises(ValueError, match=r"metric_map: 'x' maps to 'tone', which the campaign does not declare"):
        import_batch(folder, batch([rating("c0")]), metric_map={"x": "tone"})
    with pytest.raises(ValueError, match=r"rater='one-name': by hand holds the ratings of 2 judges \(claude, gpt-4o\)"):
        import_batch(folder, batch([rating("c0"), rating("c1", rater="claude")]), rater="one-name")


def test_a_metric_the_campaign_lacks_is_skipped_saying_so(folder):
    doc = import_batch(
        folder, batch([rating("c0", metric="tone")], skipped=[Skip("x#1", "a conversational test case")])
    )
    assert doc["ratings"]["new"] == 0
    reasons = {g["reason"] for g in doc["skipped_by_reason"]}
    assert "a conversational test case" in reasons and any("tone" in r for r in reasons)


def test_a_case_id_with_other_content_is_refused_and_nothing_written(folder):
    import_batch(folder, batch([rating("c0")]))
    before = written(folder)
    changed = [{"case_id": "c0", "input": "another question?"}]
    with pytest.raises(CampaignError, match="c0"):
        import_batch(folder, batch([rating("c0", 0.0)], cases=changed))
    assert written(folder) == before


def test_withdrawals_of_a_whole_read_can_be_undone(folder):
    import_batch(folder, batch([rating("c0"), rating("c1")], whole=True))
    later = import_batch(folder, batch([rating("c0")], whole=True))
    assert later["ratings"]["withdrawn"] == 1 and [w["case_id"] for w in later["withdrawn"]] == ["c1"]
    assert len(calibrate.load_campaign(folder).ratings) == 1
    undone = undo_withdrawals(folder, later["import_id"])
    assert undone["reinstated"] == 1 and len(calibrate.load_campaign(folder).ratings) == 2
    with pytest.raises(CampaignError):
        undo_withdrawals(folder, "no-such-import")


def test_skips_are_grouped_by_reason_most_frequent_first():
    skips = [Skip(f"s{i}", "r1") for i in range(7)] + [Skip("t", "r2")]
    assert grouped_skips(skips) == [
        {"reason": "r1", "count": 7, "examples": ["s0", "s1", "s2", "s3", "s4"]},
        {"reason": "r2", "count": 1, "examples": ["t"]},
    ]
