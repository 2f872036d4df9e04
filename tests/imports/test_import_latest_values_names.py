"""Issue 26's attacks on what imports read: the rating a source updated last wins however its time is written;
a value too large for a number, a rater's name with a control character or a credential are refused naming
the source and the field; a metric's exact name beats one alike up to case; Phoenix and MLflow take --rater."""

from __future__ import annotations

import copy
import datetime as dt
import json

import pandas as pd
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from calibrate import CampaignError, init_campaign
from calibrate.base.secrets import remember
from calibrate.cli import main
from calibrate.imports.apply import import_batch
from calibrate.imports.inspect_logs import read_inspect_log
from calibrate.imports.langfuse_scores import read_langfuse_export
from calibrate.imports.langsmith_feedback import read_langsmith_export
from calibrate.imports.mlflow_traces import read_mlflow_experiment
from calibrate.imports.phoenix_spans import read_phoenix_project
from calibrate.imports.ragas_results import read_ragas_result
from calibrate.imports.records import (
    ImportedRating,
    SourceBatch,
    match_metric,
    rating_value,
)
from tests.base.adversary import Adversary
from tests.imports.test_import_attacks import (
    INSPECT_LOG_JSON,
    LANGFUSE_SCORES,
    LANGFUSE_TRACES,
    LANGSMITH_FEEDBACK,
    LANGSMITH_RUNS,
)
from tests.imports.test_mlflow_traces import fake_mlflow, fake_trace
from tests.imports.test_phoenix_spans import REPLIES, SPAN_NOTES, fake_phoenix

UTC = dt.UTC
HUGE = "1" + "0" * 400  # a JSON integer no float holds


def imported(folder) -> pd.DataFrame:
    return pd.read_csv(folder / "imported_ratings.csv")


# ------------------------------------------------------------------------ the one updated last wins
def written(moment: dt.datetime, minutes: int, fraction: bool) -> str:
    local = moment.astimezone(dt.timezone(dt.timedelta(minutes=minutes)))
    return local.isoformat(timespec="milliseconds" if fraction else "auto").replace("+00:00", "Z")


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    base=st.datetimes(dt.datetime(2000, 1, 1), dt.datetime(2080, 1, 1), timezones=st.just(UTC)),
    later_by_ms=st.integers(1, 3_600_000),
    offsets=st.tuples(st.integers(-600, 600), st.integers(-600, 600)),
    fractions=st.tuples(st.booleans(), st.booleans()),
    later_first=st.booleans(),
)
def test_the_rating_updated_last_wins_however_its_time_is_written(
    tmp_path_factory, base, later_by_ms, offsets, fractions, later_first
):
    older, newer = base, base + dt.timedelta(milliseconds=later_by_ms)
    ratings = [
        ImportedRating(
            "c1", "faithfulness", "alice", "human", 0.0, "old", updated=written(older, offsets[0], fractions[0])
        ),
        ImportedRating(
            "c1", "faithfulness", "alice", "human", 1.0, "new", updated=written(newer, offsets[1], fractions[1])
        ),
    ]
    folder = tmp_path_factory.mktemp("latest") / "c"
    init_campaign(folder, ["faithfulness"])
    batch = SourceBatch(
        "tool",
        "tool",
        "by hand",
        cases=[{"case_id": "c1", "input": "q?"}],
        ratings=ratings[::-1] if later_first else ratings,
    )
    doc = import_batch(folder, batch)
    assert imported(folder)["value"].tolist() == [1.0]
    assert any("that later one is kept" in s["reason"] for s in doc["skipped"])


def test_the_attacks_times_fractions_and_offsets(tmp_path):
    # MLflow: two HUMAN feedbacks of one rater, "12:00:00Z" (false) then "12:00:00.500Z" (true): the older was kept
    folder = tmp_path / "ml"
    init_campaign(folder, ["correctness"])
    trace = fake_trace(0)
    first = trace["trace_info"]["assessments"][0]
    first["last_update_time"], first["feedback"]["value"] = "2025-01-01T12:00:00Z", False
    second = copy.deepcopy(first)
    second.update(assessment_id="h-0b", last_update_time="2025-01-01T12:00:00.500Z", feedback={"value": True})
    trace["trace_info"]["assessments"].append(second)
    with Adversary() as mlflow:
        fake_mlflow(mlflow, [trace])
        import_batch(folder, read_mlflow_experiment(mlflow.url, "rag"))
    rows = imported(folder)
    assert rows[rows["rater"] == "alice"]["value"].tolist() == [1.0]

    # Phoenix: 13:00+01:00 (0) is before 12:30Z (1)
    folder = tmp_path / "ph"
    init_campaign(folder, ["correctness"])
    notes = copy.deepcopy(REPLIES[SPAN_NOTES])
    notes["data"][0].update(updated_at="2025-01-01T13:00:00+01:00", result={"score": 0.0})
    notes["data"].append(
        {**copy.deepcopy(notes["data"][0]), "id": "n0b", "updated_at": "2025-01-01T12:30:00Z", "result": {"score": 1.0}}
    )
    with Adversary() as phoenix:
        fake_phoenix(phoenix)
        phoenix.json(SPAN_NOTES, notes)
        import_batch(folder, read_phoenix_project(phoenix.url, "rag-app"))
    rows = imported(folder)
    assert rows[rows["rater"] == "alice"]["value"].tolist() == [1.0]

    # Inspect: alice's edits, 00:00:00Z (I) then 00:00:00.500Z (C)
    log = copy.deepcopy(INSPECT_LOG_JSON)
    history = log["samples"][0]["scores"]["model_graded_qa"]["history"]
    history.append(
        {"value": "C", "provenance": {"author": "alice", "reason": "r2", "timestamp": "2026-01-01T00:00:00.500Z"}}
    )
    path = tmp_path / "log.json"
    path.write_text(json.dumps(log))
    folder = tmp_path / "in"
    init_campaign(folder, ["model_graded_qa"])
    import_batch(folder, read_inspect_log(path))
    rows = imported(folder)
    assert rows[rows["rater"] == "alice"]["value"].tolist() == [1.0]

    # Langfuse: u-alice's scores updated 00:00:00Z (0) and 00:00:00.250Z (1)
    scores = copy.deepcopy(LANGFUSE_SCORES)
    scores["data"][0].update(updatedAt="2026-01-01T00:00:00Z", value=0)
    scores["data"].append({**scores["data"][0], "id": "s1b", "value": 1, "updatedAt": "2026-01-01T00:00:00.250Z"})
    (tmp_path / "traces.json").write_text(json.dumps(LANGFUSE_TRACES))
    (tmp_path / "scores.json").write_text(json.dumps(scores))
    folder = tmp_path / "lf"
    init_campaign(folder, ["faithfulness"])
    import_batch(folder, read_langfuse_export(tmp_path / "traces.json", tmp_path / "scores.json"))
    rows = imported(folder)
    assert rows[(rows["rater"] == "u-alice") & (rows["case_id"] == "t1")]["value"].tolist() == [1.0]


def test_a_time_that_is_no_time_is_named_with_its_file_and_field(tmp_path):
    scores = copy.deepcopy(LANGFUSE_SCORES)
    scores["data"][0]["updatedAt"] = "yesterday"
    (tmp_path / "traces.json").write_text(json.dumps(LANGFUSE_TRACES))
    (tmp_path / "scores.json").write_text(json.dumps(scores))
    batch = read_langfuse_export(tmp_path / "traces.json", tmp_path / "scores.json")
    [skip] = [s for s in batch.skipped if "yesterday" in s.reason]  # a record not of the format: skipped, saying so
    assert skip.what == "scores.json score #1" and "updatedAt: 'yesterday' is not a time" in skip.reason
    with pytest.raises(ValueError, match="rating 'r1', field 'updated': 'soon' is not a time"):
        ImportedRating("c1", "m", "alice", "human", 1.0, "r1", updated="soon")


# ------------------------------------------------------------------------ values
@given(value=st.integers())
def test_any_integer_is_a_number_or_refused_naming_where(value):
    try:
        found = rating_value(value, where="f.json, score s1, field 'value'")
    except ValueError as exc:
        assert str(exc).startswith("f.json, score s1, field 'value': an integer of about")
        assert abs(value) > 2**1000
    else:
        assert found == float(value)


def test_an_integer_no_float_holds_is_refused_naming_the_source_and_field(tmp_path):
    # each of these was an OverflowError traceback
    log = copy.deepcopy(INSPECT_LOG_JSON)
    log["samples"][0]["scores"]["model_graded_qa"].update(value="__HUGE__", history=[])
    (tmp_path / "log.json").write_text(json.dumps(log).replace('"__HUGE__"', HUGE))
    with pytest.raises(ValueError, match=r"log.json, score .*field 'value': an integer of about 401 digits"):
        read_inspect_log(tmp_path / "log.json")

    scores = copy.deepcopy(LANGFUSE_SCORES)
    scores["data"][0]["value"] = "__HUGE__"
    (tmp_path / "traces.json").write_text(json.dumps(LANGFUSE_TRACES))
    (tmp_path / "scores.json").write_text(json.dumps(scores).replace('"__HUGE__"', HUGE))
    with pytest.raises(ValueError, match=r"scores.json, score s1, field 'value': an integer"):
        read_langfuse_export(tmp_path / "traces.json", tmp_path / "scores.json")

    feedback = copy.deepcopy(LANGSMITH_FEEDBACK)
    feedback[0]["score"] = "__HUGE__"
    (tmp_path / "runs.json").write_text(json.dumps(LANGSMITH_RUNS))
    (tmp_path / "feedback.json").write_text(json.dumps(feedback).replace('"__HUGE__"', HUGE))
    with pytest.raises(ValueError, match=r"feedback.json, feedback f1, field 'score': an integer"):
        read_langsmith_export(tmp_path / "runs.json", tmp_path / "feedback.json")

    notes = copy.deepcopy(REPLIES[SPAN_NOTES])
    notes["data"][0]["result"] = {"score": 10**400}
    with Adversary() as phoenix:
        fake_phoenix(phoenix)
        phoenix.json(SPAN_NOTES, json.dumps(notes).encode())
        with pytest.raises(ValueError, match=r"Phoenix annotation n0 .*field 'result.score': an integer"):
            read_phoenix_project(phoenix.url, "rag-app")


def test_an_infinite_ragas_score_is_called_infinite(tmp_path):
    path = tmp_path / "r.csv"
    path.write_text("user_input,response,faithfulness\nq,a,inf\nq2,a2,-inf\nq3,a3,\n")
    errors = [r.error for r in read_ragas_result(path, rater="rj").ratings]
    assert "infinite score (inf)" in errors[0] and "infinite score (-inf)" in errors[1] and "(NaN)" in errors[2]


# ------------------------------------------------------------------------ names
def test_the_exact_metric_name_beats_one_alike_up_to_case():
    metrics = ["faithfulness", "Faithfulness"]
    assert match_metric("Faithfulness", metrics, {}) == "Faithfulness"
    assert match_metric("faithfulness", metrics, {}) == "faithfulness"
    assert match_metric("FAITHFULNESS", metrics, {}) is None  # two alike: --map says which
    assert match_metric("Faithfulness [GEval]", metrics, {}) == "Faithfulness"


def test_a_judge_named_like_an_annotator_in_phoenix_has_a_way_through(tmp_path):
    folder = tmp_path / "c"
    init_campaign(folder, ["correctness"])
    notes = copy.deepcopy(REPLIES[SPAN_NOTES])
    notes["data"][1]["metadata"] = {"model": "alice"}
    with Adversary() as phoenix:
        fake_phoenix(phoenix)
        phoenix.json(SPAN_NOTES, notes)
        phoenix.json(REPLIES and "/v1/projects/UHJvamVjdDox/trace_annotations", {"data": [], "next_cursor": None})
        refused = CliRunner().invoke(
            main, ["import", "phoenix", str(folder), "--endpoint", phoenix.url, "--project", "rag-app"]
        )
        assert refused.exit_code == 2 and "--rater NAME" in refused.output
        done = CliRunner().invoke(
            main,
            [
                "import",
                "phoenix",
                str(folder),
                "--endpoint",
                phoenix.url,
                "--project",
                "rag-app",
                "--rater",
                "judge-alice",
            ],
        )
        assert done.exit_code == 0, done.output
    assert sorted(imported(folder)["rater"]) == ["alice", "judge-alice"]
    assert "--rater" in CliRunner().invoke(main, ["import", "mlflow", "--help"]).output


def test_a_rater_name_holding_a_credential_is_refused_and_never_shown(tmp_path, monkeypatch):
    key = "zq81PLmv42Wt-phoenix-key"
    monkeypatch.setenv("PHOENIX_API_KEY", key)
    folder = tmp_path / "c"
    init_campaign(folder, ["correctness"])
    with Adversary() as phoenix:
        fake_phoenix(phoenix)

        def notes(handler):  # a server that puts the key it was sent into an annotator's identifier
            reply = copy.deepcopy(REPLIES[SPAN_NOTES])
            reply["data"][0]["identifier"] = handler.headers.get("Authorization", "")[len("Bearer ") :]
            handler.send(200, reply)

        phoenix.route(SPAN_NOTES, notes)
        result = CliRunner().invoke(
            main, ["import", "phoenix", str(folder), "--endpoint", phoenix.url, "--project", "rag-app"]
        )
    assert result.exit_code == 2 and "holds a credential" in result.output and "n0" in result.output
    assert key not in result.output
    assert not (folder / "imported_ratings.csv").exists()
    remember("sk-proj-ATTACKkey0123456789abcdef")
    with pytest.raises(CampaignError) as caught:
        import_batch(
            folder,
            SourceBatch(
                "tool",
                "tool",
                "by hand",
                cases=[{"case_id": "c1", "input": "q?"}],
                ratings=[ImportedRating("c1", "correctness", "sk-proj-ATTACKkey0123456789abcdef", "judge", 1.0, "r1")],
            ),
        )
    assert "ATTACKkey" not in str(caught.value)


def test_a_rater_with_a_control_character_is_named_by_its_assessment_id(tmp_path):
    folder = tmp_path / "c"
    init_campaign(folder, ["correctness"])
    trace = fake_trace(0)
    trace["trace_info"]["assessments"][0]["source"]["source_id"] = "ali\x1b[31mce"
    with Adversary() as mlflow:
        fake_mlflow(mlflow, [trace, fake_trace(1)])
        with pytest.raises(CampaignError) as caught:
            import_batch(folder, read_mlflow_experiment(mlflow.url, "rag"))
    text = str(caught.value)
    assert "mlflow rating 'h-0'" in text and "field 'rater'" in text and "control character" in text
    assert "imported_ratings.csv" not in text  # a file that does not exist was named before
    assert not (folder / "imported_ratings.csv").exists()
