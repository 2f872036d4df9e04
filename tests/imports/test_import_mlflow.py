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
MISSES = {"openai:/gpt-4o-mini": {1, 4, 9, 15, 22, 30, 41, 47},
          "anthropic:/claude-3-5-haiku": set(range(0, N, 3)) | {2, 5, 8, 11}}

LOG_TRACES = '''
import json, sys
from mlflow.entities import AssessmentSource, AssessmentSourceType, Document

human, misses = json.loads(sys.argv[1]), json.loads(sys.argv[2])
mlflow.set_experiment("rag-eval")

@mlflow.trace(span_type="RETRIEVER")
def retrieve(question):
    return [Document(page_content=f"Passage {len(question)} about {question}"), Document(page_content="Another passage.")]

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
                               source=AssessmentSource(source_type=AssessmentSourceType.HUMAN, source_id="alice@example.com"))
    if i == 0:
        mlflow.log_feedback(trace_id=trace_id, name="tone", value=0.8,
                            source=AssessmentSource(source_type=AssessmentSourceType.LLM_JUDGE, source_id="openai:/gpt-4o-mini"))
print(json.dumps(ids))
'''

CHANGE_IN_MLFLOW = '''
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
'''

READ_RUN = '''
import json, sys
from mlflow import MlflowClient
client = MlflowClient()
run = client.get_run(sys.argv[1])
print(json.dumps({"metrics": run.data.metrics, "params": run.data.params, "tags": run.data.tags,
                  "status": run.info.status, "artifacts": [f.path for f in client.list_artifacts(sys.argv[1], "calibrate-report")],
                  "experiment": client.get_experiment(run.info.experiment_id).name,
                  "html": open(mlflow.artifacts.download_artifacts(run_id=sys.argv[1],
                                                                   artifact_path="calibrate-report/report.html")).read()[:200],
                  "md": open(mlflow.artifacts.download_artifacts(run_id=sys.argv[1],
                                                                 artifact_path="calibrate-report/report.md")).read()}))
'''


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
    assert judges["openai:/gpt-4o-mini"]["kappa"]["estimate"] > judges["anthropic:/claude-3-5-haiku"]["kappa"]["estimate"]
    assert judges["openai:/gpt-4o-mini"]["family"] == "gpt" and judges["anthropic:/claude-3-5-haiku"]["family"] == "claude"


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
    assert gone.empty   # deleted in MLflow: out of the statistics
    failed = c.ratings[c.ratings["rater"] == "my-scorer"]
    assert failed["value"].isna().all() and "429 from the judge" in failed["error"].iloc[0]
    store = ImportStore(folder)
    history = [h for h in store.history(logged[3]) if h["rater"] == "alice@example.com"]
    kept = [h for h in store.history(logged[4]) if h["rater"] == "anthropic:/claude-3-5-haiku"]
    store.close()
    assert [h["value"] for h in history] == [float(was), float(not was)]   # both revisions kept
    assert len(kept) == 1   # the deleted one stays in the history


def test_export_logs_a_run_mlflow_reads_back(mlflow_server, logged, tmp_path):
    folder = tmp_path / "campaign"
    run("init", str(folder), "--metric", "correctness")
    run("import", "mlflow", str(folder), "--tracking-uri", mlflow_server.url, "--experiment", "rag-eval")
    doc = json.loads(run("export", "mlflow", str(folder), "--tracking-uri", mlflow_server.url, "--experiment",
                         "calibrate-runs", "--n-boot", "200", "--json"))
    assert doc["artifacts"] == ["calibrate-report/report.html", "calibrate-report/report.json",
                                "calibrate-report/report.md"] and doc["artifacts_note"] is None
    stats = json.loads(run("stats", str(folder), "--json", "--n-boot", "200"))
    back = mlflow_server.client(READ_RUN, doc["run_id"])
    assert back["status"] == "FINISHED" and back["experiment"] == "calibrate-runs"
    for judge in stats["metrics"][0]["judges"]:
        key = mlflow_key("correctness", judge["judge"], "kappa")   # a judge's own "/" becomes "_"
        assert key.count("/") == 2
        if judge["kappa"]["estimate"] is None:   # a judge all of whose ratings failed (the test before adds one)
            assert key not in back["metrics"]
            continue
        assert back["metrics"][key] == pytest.approx(judge["kappa"]["estimate"])
        assert back["metrics"][key + "_ci_low"] == pytest.approx(judge["kappa"]["ci_low"])
    assert back["params"]["calibrate/campaign"] == "campaign"
    assert back["params"]["correctness/rule"].startswith("most lenient threshold")
    assert back["tags"]["correctness/openai:_gpt-4o-mini/verdict"] in ("defensible", "defensible if stricter",
                                                                        "needs labels", "not defensible")
    assert sorted(back["artifacts"]) == ["calibrate-report/report.html", "calibrate-report/report.json",
                                         "calibrate-report/report.md"]
    assert back["html"].lstrip().lower().startswith("<!doctype html")
    # the report says where the ratings came from
    assert f"| calibrate import: mlflow:{mlflow_server.url}#1 | 1 human: alice@example.com | {N} |" in back["md"]
