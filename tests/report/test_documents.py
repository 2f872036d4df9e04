"""The report's input (calibrate/report/documents.py): typed parts, the statistics checked where they
enter, report.json with the whole text of the listed cases, and the old calls of write_report refused with
how to call it now."""

from __future__ import annotations

import json

import pytest

import calibrate
from calibrate.analysis.recommendation_results import Recommendation
from calibrate.report import ReportDocuments, render_html, render_markdown, write_report


@pytest.fixture(scope="module")
def demo():
    campaign = calibrate.load_campaign(calibrate.demo_campaign_path())
    return campaign, calibrate.compute_stats(campaign, judges=["Olz-gpt4o", "RMITIR-GPT4o"], n_boot=0)


def test_the_parts_are_typed_and_report_json_holds_them_as_plain_documents(demo):
    campaign, stats = demo
    documents = ReportDocuments(stats, list(stats.recommendations), cases=campaign.cases, since=None)
    assert documents.manifest is stats.manifest and documents.recommendations == stats.recommendations
    assert documents.judge_runs == documents.audits == () and documents.since is None
    body = documents.to_dict()
    assert list(body) == [
        "stats",
        "recommendations",
        "manifest",
        "judge_runs",
        "audits",
        "calibrations",
        "versus",
        "since",
        "worst_miss_cases",
    ]
    assert body["stats"] == stats.to_dict(schema_version=False) and "schema_version" not in body["stats"]
    assert body["since"] == {} and json.loads(json.dumps(body)) == body


def test_report_json_keeps_the_text_of_every_listed_case_once(demo):
    campaign, stats = demo
    documents = ReportDocuments(stats, [], cases=campaign.cases)
    listed = list(documents.listed_cases())
    rows = [
        row["case_id"]
        for m in stats["metrics"]
        for j in m["judges"]
        for key in ("false_passes", "false_fails")
        for row in j["worst_misses"][key]
    ]
    assert listed == rows and len(listed) > len(set(listed))  # two judges miss some of the same cases
    kept = documents.to_dict()["worst_miss_cases"]
    assert list(kept) == sorted(set(rows))
    first = kept[rows[0]]
    assert first["input"] == campaign.cases[rows[0]]["input"] and "metadata" not in first
    assert ReportDocuments(stats, []).to_dict()["worst_miss_cases"] == {}  # no cases, no texts


def test_a_recommendations_dict_is_read_back_as_its_recommendation(demo):
    _, stats = demo
    from_dicts = ReportDocuments(stats, [r.to_dict() for r in stats.recommendations])
    assert all(isinstance(r, Recommendation) for r in from_dicts.recommendations)
    assert from_dicts.recommendations == stats.recommendations
    assert from_dicts.to_dict()["recommendations"] == [r.to_dict() for r in stats.recommendations]


def test_the_statistics_must_be_typed(demo):
    _, stats = demo
    with pytest.raises(TypeError, match=r"^stats: expected the StatsResult of calibrate\.compute_stats, not dict$"):
        ReportDocuments(stats.to_dict(), [])


@pytest.mark.parametrize(
    ("call", "usage"),
    [
        (lambda s, out: write_report(s, s.recommendations, out), "write_report(documents, out_dir)"),
        (lambda s, out: write_report(s, [], out, cases={}), "write_report(documents, out_dir)"),
        (lambda s, out: render_html(s, []), "render_html(documents)"),
        (lambda s, out: render_markdown(s, [], since={}), "render_markdown(documents)"),
    ],
)
def test_the_old_calls_say_how_to_call_now(demo, tmp_path, call, usage):
    _, stats = demo
    with pytest.raises(TypeError) as caught:
        call(stats, tmp_path / "out")
    message = str(caught.value)
    assert message.startswith(f"{usage.split('(')[0]} takes the report's documents in one object now")
    assert f": {usage}, with documents = calibrate.ReportDocuments(stats, recommendations, cases=" in message
    assert "(got StatsResult first)" in message
    assert not (tmp_path / "out").exists()  # nothing written


def test_the_new_call_writes_the_three_files(demo, tmp_path):
    campaign, stats = demo
    documents = ReportDocuments(stats, stats.recommendations, cases=campaign.cases)
    paths = write_report(documents, tmp_path / "r")
    assert json.loads(paths["json"].read_text()) == json.loads(json.dumps(documents.to_dict()))
    assert paths["html"].read_text() == render_html(documents)
    assert paths["md"].read_text() == render_markdown(documents)
