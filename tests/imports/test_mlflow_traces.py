"""calibrate import mlflow / export mlflow against a real MLflow tracking server on 127.0.0.1 (SQLite
backend), on traces and feedback logged with MLflow's own API: the README's example end to end, with two
judges of different models that disagree with the humans on known cases, and the export read back through
MLflow's API."""

from __future__ import annotations

import json

import pytest
from sklearn.metrics import cohen_kappa_score

from calibrate import load_campaign
from calibrate.imports.store import ImportStore
from calibrate.report.mlflow_run import mlflow_key
from tests.imports.common import run

N = 50
HUMAN = [0 if i % 3 == 0 else 1 for i in range(N)]
#: each judge's planted misses: the cases where it says the opposite of the human
MISSES = {
    "openai:/gpt-4o-mini": {1, 4, 9, 15, 22, 30, 41, 47},
    "anthropic:/claude-3-5-haiku": set(range(0, N, 3)) | {2, 5, 8, 11},
}

LOG_TRACES = """
import json, sys
from mlflow.entities import AssessmentSource, AssessmentSourceType, Document

human, misses = json.loads(sys.argv[1]), json.loads(sys.argv[2])
mlflow.set_experiment("rag-eval")

@mlflow.trace(span_type="RETRIEVER")
def retrieve(question):
    return [Document(page_content=f"Passage {len(question)} about {question}"),
            Document(page_content="Another passage.")]

@mlflow.trace
def answer(question):
    retrieve(question)
    return f"The answer to {question}"

ids = []
for i, label in enumerate(human):
    answer(f"question {i}?")
    trace_id = mlflow.get_last_active_trace_id()
    ids.append(trace_id)
    for judge, missed in misses.items():
        verdict = bool(label) != (i in missed)
        mlflow.log_feedback(trace_id=trace_id, name="correctness", value="yes" if verdict else "no",
                            rationale=f"{judge} thinks so",
                            source=AssessmentSource(source_type=AssessmentSourceType.LLM_JUDGE, source_id=judge))
    mlflow.log_feedback(trace_id=trace_id, name="correctness", value=bool(label),
                        source=AssessmentSource(source_type=AssessmentSourceType.HUMAN, source_id="alice@example.com"))
    if i % 2 == 0:
        mlflow.log_expectation(trace_id=trace_id, name="expected_response", value=f"Expected {i}",
                               source=AssessmentSource(source_type=AssessmentSourceType.HUMAN,
                                                       source_id="alice@example.com"))
    if i == 0:
        mlflow.log_feedback(trace_id=trace_id, name="tone", value=0.8,
                            source=AssessmentSource(source_type=AssessmentSourceType.LLM_JUDGE,
                                                    source_id="openai:/gpt-4o-mini"))
print(json.dumps(ids))
"""

CHANGE_IN_MLFLOW = """
import json, sys
from mlflow.entities import AssessmentError, AssessmentSource, AssessmentSourceType

first, second = sys.argv[1], sys.argv[2]
alice = [a for a in mlflow.get_trace(first).info.assessments if a.source.source_id == "alice@example.com"
         and a.name == "correctness"][0]
mlflow.override_feedback(trace_id=first, assessment_id=alice.assessment_id, value=not alice.value,
                         rationale="looked again",
                         source=AssessmentSource(source_type=AssessmentSourceType.HUMAN, source_id="alice@example.com"))
haiku = [a for a in mlflow.get_trace(second).info.assessments if a.source.source_id == "anthropic:/claude-3-5-haiku"][0]
mlflow.delete_assessment(trace_id=second, assessment_id=haiku.assessment_id)
mlflow.log_feedback(trace_id=second, name="correctness",
                    error=AssessmentError(error_code="RATE_LIMIT_EXCEEDED", error_message="429 from the judge"),
                    source=AssessmentSource(source_type=AssessmentSourceType.CODE, source_id="my-scorer"))
print(json.dumps({"was": alice.value}))
"""

READ_RUN = """
import json, sys
from mlflow import MlflowClient
client = MlflowClient()
run = client.get_run(sys.argv[1])
print(json.dumps({"metrics": run.data.metrics, "params": run.data.params, "tags": run.data.tags,
                  "status": run.info.status,
                  "artifacts": [f.path for f in client.list_artifacts(sys.argv[1], "calibrate-report")],
                  "experiment": client.get_experiment(run.info.experiment_id).name,
                  "html": open(mlflow.artifacts.download_artifacts(run_id=sys.argv[1],
                                                                   artifact_path="calibrate-report/report.html")).read()[:200],
                  "md": open(mlflow.artifacts.download_artifacts(run_id=sys.argv[1],
                                                                 artifact_path="calibrate-report/report.md")).read()}))
"""


@pytest.fixture(scope="module")
def logged(mlflow_server):
    return mlflow_server.client(LOG_TRACES, json.dumps(HUMAN), json.dumps({k: sorted(v) for k, v in MISSES.items()}))


def test_the_readme_example_imports_and_kappa_is_sklearns(mlflow_server, logged, tmp_path):
    folder = tmp_path / "support-bot"
    run("init", str(folder), "--metric", "correctness")
    out = run("import", "mlflow", str(folder), "--tracking-uri", mlflow_server.url, "--experiment", "rag-eval")
    assert "cases: 50 added" in out and "ratings: 150 new" in out
    assert "1 × its metric 'tone' is none of the campaign's (correctness)" in out
    c = load_campaign(folder)
    assert sorted(c.cases) == sorted(logged)
    case = c.cases[logged[0]]
    assert case["input"] == "question 0?" and case["actual_output"] == "The answer to question 0?"
    assert case["retrieval_context"] == ["Passage 11 about question 0?", "Another passage."]
    assert case["expected_output"] == "Expected 0" and "expected_output" not in c.cases[logged[1]]
    assert case["metadata"]["time"].startswith("20")
    humans = c.ratings[c.ratings["rater_kind"] == "human"]
    assert set(humans["rater"]) == {"alice@example.com"} and len(humans) == N
    assert set(c.ratings["source"]) == {f"mlflow:{mlflow_server.url}#1"}
    doc = json.loads(run("stats", str(folder), "--json", "--n-boot", "200"))
    judges = {j["judge"]: j for j in doc["metrics"][0]["judges"]}
    assert set(judges) == set(MISSES)
    for judge, missed in MISSES.items():
        verdicts = [int(bool(h) != (i in missed)) for i, h in enumerate(HUMAN)]
        assert judges[judge]["kappa"]["estimate"] == pytest.approx(cohen_kappa_score(HUMAN, verdicts), abs=1e-12)
        assert judges[judge]["n"] == N
    assert (
        judges["openai:/gpt-4o-mini"]["kappa"]["estimate"] > judges["anthropic:/claude-3-5-haiku"]["kappa"]["estimate"]
    )
    assert (
        judges["openai:/gpt-4o-mini"]["family"] == "gpt" and judges["anthropic:/claude-3-5-haiku"]["family"] == "claude"
    )


def test_importing_again_changes_nothing_then_changes_in_mlflow_become_revisions(mlflow_server, logged, tmp_path):
    folder = tmp_path / "campaign"
    run("init", str(folder), "--metric", "correctness")
    args = ["import", "mlflow", str(folder), "--tracking-uri", mlflow_server.url, "--experiment", "rag-eval", "--json"]
    first = json.loads(run(*args))
    files = {p.name: p.read_bytes() for p in folder.iterdir() if p.suffix in (".csv", ".jsonl")}
    again = json.loads(run(*args))
    assert again["ratings"]["unchanged"] == first["ratings"]["new"] and again["ratings"]["new"] == 0
    assert {p.name: p.read_bytes() for p in folder.iterdir() if p.suffix in (".csv", ".jsonl")} == files
    was = mlflow_server.client(CHANGE_IN_MLFLOW, logged[3], logged[4])["was"]
    dry = json.loads(run(*args, "--dry-run"))
    assert {k: dry["ratings"][k] for k in ("new", "changed", "withdrawn")} == {"new": 1, "changed": 1, "withdrawn": 1}
    assert {p.name: p.read_bytes() for p in folder.iterdir() if p.suffix in (".csv", ".jsonl")} == files
    doc = json.loads(run(*args))
    assert {k: doc["ratings"][k] for k in ("new", "changed", "withdrawn")} == {"new": 1, "changed": 1, "withdrawn": 1}
    assert any("overridden by a later assessment" in g["reason"] for g in doc["skipped_by_reason"])
    c = load_campaign(folder)
    alice = c.ratings[(c.ratings["case_id"] == logged[3]) & (c.ratings["rater"] == "alice@example.com")]
    assert alice["value"].tolist() == [float(not was)]
    gone = c.ratings[(c.ratings["case_id"] == logged[4]) & (c.ratings["rater"] == "anthropic:/claude-3-5-haiku")]
    assert gone.empty  # deleted in MLflow: out of the statistics
    failed = c.ratings[c.ratings["rater"] == "my-scorer"]
    assert failed["value"].isna().all() and "429 from the judge" in failed["error"].iloc[0]
    store = ImportStore(folder)
    history = [h for h in store.history(logged[3]) if h["rater"] == "alice@example.com"]
    kept = [h for h in store.history(logged[4]) if h["rater"] == "anthropic:/claude-3-5-haiku"]
    store.close()
    assert [h["value"] for h in history] == [float(was), float(not was)]  # both revisions kept
    assert len(kept) == 1  # the deleted one stays in the history


def test_export_logs_a_run_mlflow_reads_back(mlflow_server, logged, tmp_path):
    folder = tmp_path / "campaign"
    run("init", str(folder), "--metric", "correctness")
    run("import", "mlflow", str(folder), "--tracking-uri", mlflow_server.url, "--experiment", "rag-eval")
    doc = json.loads(
        run(
            "export",
            "mlflow",
            str(folder),
            "--tracking-uri",
            mlflow_server.url,
            "--experiment",
            "calibrate-runs",
            "--n-boot",
            "200",
            "--json",
        )
    )
    assert (
        doc["artifacts"]
        == ["calibrate-report/report.html", "calibrate-report/report.json", "calibrate-report/report.md"]
        and doc["artifacts_note"] is None
    )
    stats = json.loads(run("stats", str(folder), "--json", "--n-boot", "200"))
    back = mlflow_server.client(READ_RUN, doc["run_id"])
    assert back["status"] == "FINISHED" and back["experiment"] == "calibrate-runs"
    for judge in stats["metrics"][0]["judges"]:
        key = mlflow_key("correctness", judge["judge"], "kappa")  # a judge's own "/" becomes "_"
        assert key.count("/") == 2
        if judge["kappa"]["estimate"] is None:  # a judge all of whose ratings failed (the test before adds one)
            assert key not in back["metrics"]
            continue
        assert back["metrics"][key] == pytest.approx(judge["kappa"]["estimate"])
        assert back["metrics"][key + "_ci_low"] == pytest.approx(judge["kappa"]["ci_low"])
    assert back["params"]["calibrate/campaign"] == "campaign"
    assert back["params"]["correctness/rule"].startswith("most lenient threshold")
    assert back["tags"]["correctness/openai:_gpt-4o-mini/verdict"] in (
        "defensible",
        "defensible if stricter",
        "needs labels",
        "not shown",
        "not defensible",
    )
    assert sorted(back["artifacts"]) == [
        "calibrate-report/report.html",
        "calibrate-report/report.json",
        "calibrate-report/report.md",
    ]
    assert back["html"].lstrip().lower().startswith("<!doctype html")
    # the report says where the ratings came from
    assert f"| calibrate import: mlflow:{mlflow_server.url}#1 | 1 human: alice@example.com | {N} |" in back["md"]


# ---------------------------------------------------------------- a tracking server that attacks the import
# (an adversarial stand-in on 127.0.0.1 speaking MLflow's REST API: it redirects, pages without end, and
# sends malformed, partial, huge or non-UTF-8 replies)
import base64 as _base64  # noqa: E402
import time as _time  # noqa: E402

from click.testing import CliRunner  # noqa: E402
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from calibrate.base.http import HttpPolicy  # noqa: E402
from calibrate.cli import main  # noqa: E402
from calibrate.imports.mlflow_traces import MlflowClient, MlflowError, read_mlflow_experiment  # noqa: E402
from calibrate.imports.records import SourceBatch  # noqa: E402
from tests.base.adversary import Adversary  # noqa: E402

TOKEN = "zq81PLmv42Wt-mlflow-token"
GET_BY_NAME, SEARCH, BATCH_GET = (
    "/api/2.0/mlflow/experiments/get-by-name",
    "/api/3.0/mlflow/traces/search",
    "/api/3.0/mlflow/traces/batchGet",
)


def fake_trace(i: int, *, judge_value="yes") -> dict:
    attributes = [
        {"key": "mlflow.spanInputs", "value": {"string_value": json.dumps({"question": f"q{i}?"})}},
        {"key": "mlflow.spanOutputs", "value": {"string_value": json.dumps(f"answer {i}")}},
    ]
    return {
        "trace_info": {
            "trace_id": f"tr-{i}",
            "request_time": "2025-01-01T00:00:00Z",
            "state": "OK",
            "assessments": [
                {
                    "assessment_id": f"h-{i}",
                    "assessment_name": "correctness",
                    "feedback": {"value": True},
                    "source": {"source_type": "HUMAN", "source_id": "alice"},
                },
                {
                    "assessment_id": f"j-{i}",
                    "assessment_name": "correctness",
                    "feedback": {"value": judge_value},
                    "rationale": "why",
                    "source": {"source_type": "LLM_JUDGE", "source_id": "openai:/gpt-4o"},
                },
            ],
        },
        "spans": [{"span_id": f"s{i}", "parent_span_id": "", "start_time_unix_nano": "1", "attributes": attributes}],
    }


def fake_mlflow(server: Adversary, traces: list[dict], *, listed: list[str] | None = None) -> None:
    server.json(GET_BY_NAME, {"experiment": {"experiment_id": "7", "name": "rag"}})
    server.json(
        SEARCH, {"traces": [{"trace_id": t} for t in (listed or [t["trace_info"]["trace_id"] for t in traces])]}
    )
    server.json(BATCH_GET, {"traces": traces})


@pytest.mark.parametrize("status", [302, 307])
@pytest.mark.parametrize("auth", ["token", "basic"])
def test_mlflow_credentials_never_follow_a_redirect_to_another_server(tmp_path, monkeypatch, status, auth):
    # the example: urllib followed the 302 / 307 with Authorization, then died with a KeyError traceback
    if auth == "token":
        monkeypatch.setenv("MLFLOW_TRACKING_TOKEN", TOKEN)
    else:
        monkeypatch.setenv("MLFLOW_TRACKING_USERNAME", "me")
        monkeypatch.setenv("MLFLOW_TRACKING_PASSWORD", TOKEN)
    folder = tmp_path / "campaign"
    run("init", str(folder), "--metric", "correctness")
    with Adversary() as tracking, Adversary() as elsewhere:
        elsewhere.json("*", {"unexpected": "shape"})
        tracking.route("*", lambda h: h.redirect(status, elsewhere.url + h.path))
        with pytest.raises(MlflowError) as caught:
            read_mlflow_experiment(tracking.url, "rag")
        assert caught.value.kind == "redirect" and f"to {elsewhere.url}{GET_BY_NAME}?..." in str(caught.value)
        assert "give its address instead" in str(caught.value)
        result = CliRunner().invoke(
            main, ["import", "mlflow", str(folder), "--tracking-uri", tracking.url, "--experiment", "rag"]
        )
        assert result.exit_code == 2 and "another server" in result.output and "Traceback" not in result.output
        assert elsewhere.seen == []
        sent = tracking.seen[0]["headers"]["authorization"]
        assert sent == (
            f"Bearer {TOKEN}" if auth == "token" else "Basic " + _base64.b64encode(f"me:{TOKEN}".encode()).decode()
        )
        assert TOKEN not in result.output


MALFORMED = {  # (path, reply): what an MLflow server, a proxy or a stand-in could send instead
    "a list for an object": (GET_BY_NAME, [{"experiment": {"experiment_id": "7"}}]),
    "a missing experiment id": (GET_BY_NAME, {"experiment": {"name": "rag"}}),
    "a list of ids as a trace id": (SEARCH, {"traces": [{"trace_id": ["tr-0"]}]}),
    "traces as an object": (SEARCH, {"traces": {"trace_id": "tr-0"}}),
    "a null trace info": (BATCH_GET, {"traces": [{"trace_info": None, "spans": []}]}),
    "a missing trace id": (BATCH_GET, {"traces": [{"trace_info": {"state": "OK"}, "spans": []}]}),
    "a span time that is no number": (
        BATCH_GET,
        {"traces": [{**fake_trace(0), "spans": [{"span_id": "s", "start_time_unix_nano": "soon", "attributes": []}]}]},
    ),
    "assessments as text": (BATCH_GET, {"traces": [{"trace_info": {"trace_id": "tr-0", "assessments": "x"}}]}),
    "a null source id type": (
        BATCH_GET,
        {"traces": [{"trace_info": {"trace_id": "tr-0", "assessments": [{"assessment_id": "a", "source": "HUMAN"}]}}]},
    ),
    "not UTF-8": (BATCH_GET, b'{"traces": ["\xff\xfe"]}'),
    "HTML from a login page": (SEARCH, b"<html><body>Please log in</body></html>"),
    "nested 100,000 deep": (BATCH_GET, b'{"traces": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"),
}


@pytest.mark.parametrize("what", sorted(MALFORMED))
def test_a_malformed_mlflow_reply_is_an_error_naming_the_request_and_the_field(what):
    path, reply = MALFORMED[what]
    with Adversary() as tracking:
        fake_mlflow(tracking, [fake_trace(0)])
        tracking.json(path, reply)
        with pytest.raises(MlflowError) as caught:
            read_mlflow_experiment(tracking.url, "rag")
    said = str(caught.value)
    assert f"MLflow at {tracking.url}: {'GET' if path != SEARCH else 'POST'} {path}" in said, said
    assert caught.value.kind in ("document", "encoding"), said


def test_mlflow_pages_that_loop_or_never_end_are_errors():
    with Adversary() as tracking:
        fake_mlflow(tracking, [fake_trace(0)])
        tracking.json(SEARCH, {"traces": [{"trace_id": "tr-0"}], "next_page_token": "same"})
        with pytest.raises(MlflowError, match="next-page token 'same' again"):
            read_mlflow_experiment(tracking.url, "rag")
        counter = iter(range(10**9))
        tracking.route(
            SEARCH,
            lambda h: h.send(
                200, {"traces": [{"trace_id": f"tr-{next(counter)}"}], "next_page_token": f"t{next(counter)}"}
            ),
        )
        client = MlflowClient(tracking.url, policy=HttpPolicy(max_pages=30))
        with pytest.raises(MlflowError, match="more than 30 pages"):
            read_mlflow_experiment(tracking.url, "rag", client=client)
        tracking.route(SEARCH, lambda h: h.trickle(every_s=0.1))
        started = _time.monotonic()
        with pytest.raises(MlflowError, match="no complete reply within 1 s"):
            read_mlflow_experiment(
                tracking.url, "rag", client=MlflowClient(tracking.url, policy=HttpPolicy(timeout_s=1))
            )
        assert _time.monotonic() - started < 4


def test_a_partial_mlflow_reply_never_withdraws(tmp_path):
    folder = tmp_path / "campaign"
    run("init", str(folder), "--metric", "correctness")
    with Adversary() as tracking:
        fake_mlflow(tracking, [fake_trace(0), fake_trace(1)])
        args = ["import", "mlflow", str(folder), "--tracking-uri", tracking.url, "--experiment", "rag", "--json"]
        assert json.loads(run(*args))["ratings"]["new"] == 4
        fake_mlflow(tracking, [fake_trace(0)], listed=["tr-0", "tr-1"])  # tr-1 listed, not returned
        doc = json.loads(run(*args))
        assert doc["ratings"]["withdrawn"] == 0 and doc["ratings"]["absent_kept"] == 2
        assert any("did not return it" in g["reason"] for g in doc["skipped_by_reason"])
        assert len(load_campaign(folder).ratings) == 4
        fake_mlflow(tracking, [fake_trace(0)])  # whole again, and tr-1 gone from the experiment: withdrawn
        assert json.loads(run(*args))["ratings"]["withdrawn"] == 2


def test_a_judge_error_or_rationale_quoting_a_key_is_stored_redacted(tmp_path, monkeypatch):
    monkeypatch.setenv("MLFLOW_TRACKING_TOKEN", TOKEN)
    folder = tmp_path / "campaign"
    run("init", str(folder), "--metric", "correctness")
    trace = fake_trace(0)
    trace["trace_info"]["assessments"][1] = {
        "assessment_id": "j-0",
        "assessment_name": "correctness",
        "rationale": f"the key was {TOKEN}",
        "source": {"source_type": "LLM_JUDGE", "source_id": "openai:/gpt-4o"},
        "feedback": {"error": {"error_code": "401", "error_message": f"invalid key Bearer {TOKEN}"}},
    }
    with Adversary() as tracking:
        fake_mlflow(tracking, [trace])
        run("import", "mlflow", str(folder), "--tracking-uri", tracking.url, "--experiment", "rag")
    stored = b"".join(p.read_bytes() for p in folder.rglob("*") if p.is_file())
    assert TOKEN.encode() not in stored and b"[redacted]" in stored


def mutate_json(data, value):
    """``value`` with parts replaced by arbitrary JSON, dropped, or nulled, as hypothesis draws."""
    choice = data.draw(st.integers(0, 24))
    if choice == 0:
        return data.draw(JSON_VALUES)
    if choice == 1:
        return None
    if isinstance(value, dict):
        return {k: mutate_json(data, v) for k, v in value.items() if data.draw(st.integers(0, 29)) != 0}
    if isinstance(value, list):
        return [mutate_json(data, v) for v in value] + ([data.draw(JSON_VALUES)] if choice == 2 else [])
    return value


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=12,
)


@pytest.fixture(scope="module")
def attacked_mlflow():
    with Adversary() as tracking:
        yield tracking


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_mlflow_reply_gives_a_batch_or_a_clear_error(attacked_mlflow, data):
    replies = {
        GET_BY_NAME: {"experiment": {"experiment_id": "7", "name": "rag"}},
        SEARCH: {"traces": [{"trace_id": "tr-0"}, {"trace_id": "tr-1"}]},
        BATCH_GET: {"traces": [fake_trace(0), fake_trace(1, judge_value=0.5)]},
    }
    for path, reply in replies.items():
        attacked_mlflow.json(path, mutate_json(data, reply))
    try:
        batch = read_mlflow_experiment(
            attacked_mlflow.url, "rag", client=MlflowClient(attacked_mlflow.url, policy=HttpPolicy(max_pages=5))
        )
    except MlflowError as exc:
        assert f"MLflow at {attacked_mlflow.url}" in str(exc) or "experiment 'rag'" in str(exc)
        return
    assert isinstance(batch, SourceBatch)
    assert batch.whole == (not any("did not return it" in s.reason for s in batch.skipped))
    assert {c["case_id"] for c in batch.cases} <= {"tr-0", "tr-1"}
    assert all(r.case_id in {c["case_id"] for c in batch.cases} for r in batch.ratings)
