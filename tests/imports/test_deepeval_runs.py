"""A DeepEval test run, as DeepEval saves it, read as cases and judge ratings
(calibrate/imports/deepeval_runs.py). Files the real library wrote: tests/imports/test_import_files.py."""

import json

import pytest

import calibrate
from calibrate.base.documents import DocumentError
from calibrate.imports.deepeval_runs import import_deepeval_run, read_deepeval_run


def case(name, inp, *metrics, **fields):
    return {"name": name, "input": inp, "actualOutput": "a.", **fields, "metricsData": list(metrics)}


def metric(name="Faithfulness", score=1.0, **kw):
    return {"name": name, "score": score, "evaluationModel": "gpt-4o", **kw}


RUN = {
    "testCases": [
        case("test_case_0", "q0?", metric(score=0.5, threshold=0.7, reason="half", strictMode=False, success=False)),
        case("refund-policy", "q1?", metric(score=None, error="rate limited")),
        case("test_case_2", "q2?", metric(score=None), metadata={"case_id": "own-id"}),
    ],
    "conversationalTestCases": [{"name": "chat-1", "turns": []}],
}


def write(tmp_path, document, name="test_run_1.json"):
    path = tmp_path / name
    path.write_text(json.dumps(document))
    return path


def test_a_run_gives_cases_ratings_and_what_it_skipped(tmp_path):
    batch = read_deepeval_run(write(tmp_path, RUN))
    assert (batch.kind, batch.origin) == ("deepeval", "deepeval")
    ids = [c["case_id"] for c in batch.cases]
    assert ids[1:] == ["refund-policy", "own-id"] and ids[0].startswith("case-")  # a positional name is no id
    assert all(c["metadata"]["source"] == "deepeval:test_run_1.json" for c in batch.cases)
    scored, failed = batch.ratings
    assert (scored.metric, scored.rater, scored.value, scored.reason) == ("Faithfulness", "gpt-4o", 0.5, "half")
    assert scored.facts == {
        "library": "deepeval",
        "model": "gpt-4o",
        "threshold": 0.7,
        "strict_mode": False,
        "success": False,
    }
    assert (failed.case_id, failed.value, failed.error) == ("refund-policy", None, "rate limited")
    assert [(s.what, s.reason) for s in batch.skipped] == [
        ("test_run_1.json#chat-1", "a conversational test case: calibrate rates single-turn cases"),
        ("test_run_1.json#test_case_2/Faithfulness", "not scored (DeepEval skipped the metric)"),
    ]


def test_the_latest_test_run_file_is_read_under_its_key(tmp_path):
    wrapped = read_deepeval_run(write(tmp_path, {"testRunData": RUN}, ".latest_test_run.json"))
    assert [r.value for r in wrapped.ratings] == [r.value for r in read_deepeval_run(write(tmp_path, RUN)).ratings]


def test_a_name_used_twice_is_no_id(tmp_path):
    batch = read_deepeval_run(write(tmp_path, {"testCases": [case("same", "a?"), case("same", "b?")]}))
    assert all(c["case_id"].startswith("case-") for c in batch.cases) and len({c["case_id"] for c in batch.cases}) == 2


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ([1, 2], "not a DeepEval test run"),
        ({"results": []}, "not a DeepEval test run"),
        ({"testCases": [case("x", "q", metric(score="high"))]}, "field 'testCases[0].metricsData[0].score'"),
        ({"testCases": [case("x", "q", metric(score=float("inf")))]}, "the score of 'Faithfulness' is not a number"),
        ({"testCases": "none"}, "not the shape of a DeepEval test run"),
    ],
)
def test_a_file_that_is_no_run_is_refused_naming_the_place(tmp_path, document, message):
    path = tmp_path / "run.json"
    path.write_text(json.dumps(document).replace("Infinity", "1e999"))
    with pytest.raises(DocumentError) as refused:
        read_deepeval_run(path)
    assert message in str(refused.value) and str(path) in str(refused.value)


def test_imported_into_a_campaign_once(tmp_path):
    calibrate.init_campaign(tmp_path / "c", ["faithfulness"])
    path = write(tmp_path, {"testCases": [case("refund-policy", "q1?", metric())]})
    assert import_deepeval_run(tmp_path / "c", path, rater="careful")["ratings"]["new"] == 1
    assert import_deepeval_run(tmp_path / "c", path, rater="careful")["ratings"]["unchanged"] == 1
    c = calibrate.load_campaign(tmp_path / "c")
    assert c.ratings.loc[c.ratings["rater"] == "careful", "value"].tolist() == [1.0]
