"""Hypothesis attacks on what the import readers accept: any file gives a batch or a CampaignError naming
the file, never a traceback; every batch imports or is refused whole."""

from __future__ import annotations

import json

import pandas as pd
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from calibrate import CampaignError
from calibrate.imports.apply import import_batch
from calibrate.imports.deepeval_runs import read_deepeval_run
from calibrate.imports.ragas_results import read_ragas_result
from tests.conftest import write_campaign

JSON = st.recursive(st.none() | st.booleans() | st.floats(allow_nan=False) | st.integers() | st.text(max_size=8),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
                    max_leaves=12)
METRIC_DATA = st.fixed_dictionaries({"name": st.sampled_from(["Faithfulness", "Answer Relevancy", "x"]) | JSON},
                                    optional={"score": JSON | st.floats(0, 1), "error": JSON,
                                              "evaluationModel": st.sampled_from(["gpt-4o", ""]) | JSON,
                                              "threshold": JSON, "reason": JSON})
TEST_CASE = st.fixed_dictionaries({}, optional={
    "name": st.sampled_from(["a", "a", "test_case_0"]) | JSON, "input": st.sampled_from(["q?", ""]) | JSON,
    "actualOutput": JSON, "retrievalContext": JSON | st.lists(st.text(max_size=5), max_size=2),
    "metadata": JSON, "metricsData": JSON | st.lists(METRIC_DATA, max_size=3)})
RUN = st.fixed_dictionaries({"testCases": st.lists(TEST_CASE, max_size=4) | JSON},
                            optional={"conversationalTestCases": JSON}) | JSON
TOML = 'name = "x"\n[metrics.faithfulness]\nscale = "binary"\n[metrics.answer_relevancy]\nscale = "binary"\n'


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(run=RUN)
def test_any_test_run_file_is_read_or_refused_with_its_name(tmp_path_factory, run):
    tmp = tmp_path_factory.mktemp("run")
    path = tmp / "test_run.json"
    path.write_text(json.dumps(run))
    try:
        batch = read_deepeval_run(path)
    except CampaignError as exc:
        assert all(str(path) in p.file for p in exc.problems)
        return
    folder = write_campaign(tmp / "campaign", TOML, "case_id,metric,rater,rater_kind,value\n")
    try:
        doc = import_batch(folder, batch)
    except (CampaignError, ValueError) as exc:
        assert str(exc)
        assert not (folder / "imported_ratings.csv").exists()
        return
    assert doc["ratings"]["new"] + len(doc["skipped"]) >= len(batch.ratings)


CELL = st.none() | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=6) | st.booleans() | st.integers()


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(columns=st.lists(st.sampled_from(["user_input", "response", "retrieved_contexts", "faithfulness", "other",
                                         "Unnamed: 0"]), min_size=1, max_size=5, unique=True),
       cells=st.lists(st.lists(CELL, min_size=5, max_size=5), max_size=4))
def test_any_ragas_table_is_read_or_refused_with_its_name(tmp_path_factory, columns, cells):
    tmp = tmp_path_factory.mktemp("ragas")
    path = tmp / "result.csv"
    pd.DataFrame([row[:len(columns)] for row in cells], columns=columns).to_csv(path, index=False)
    try:
        batch = read_ragas_result(path, rater="r")
    except CampaignError as exc:
        assert all(str(path) in p.file for p in exc.problems)
        return
    folder = write_campaign(tmp / "campaign", TOML, "case_id,metric,rater,rater_kind,value\n")
    try:
        import_batch(folder, batch, metric_map={"other": "answer_relevancy"})
    except (CampaignError, ValueError) as exc:
        assert str(exc)


def read_or_refuse(read, paths, tmp):
    """``read()`` gives a batch that imports or is refused whole, or a CampaignError naming one of ``paths``."""
    try:
        batch = read()
    except CampaignError as exc:
        assert exc.problems and all(any(str(path) in p.file for path in paths) for p in exc.problems)
        return
    folder = write_campaign(tmp / "campaign", TOML, "case_id,metric,rater,rater_kind,value\n")
    try:
        doc = import_batch(folder, batch, metric_map={"human": "faithfulness", "model_graded_qa": "answer_relevancy"})
    except (CampaignError, ValueError) as exc:
        assert str(exc)
        assert not (folder / "imported_ratings.csv").exists()
        return
    assert doc["ratings"]["new"] <= len(batch.ratings)


TEXT = st.sampled_from(["q?", "", "Faithfulness", "human", "llm-rubric", "C", "I", "pass", "0.5"]) | st.text(max_size=6)
ASSERTION = st.fixed_dictionaries({}, optional={"type": st.sampled_from(["llm-rubric", "human", "contains", "assert-set"])
                                               | JSON, "metric": TEXT | JSON, "provider": TEXT | JSON})
COMPONENT = st.fixed_dictionaries({}, optional={"assertion": ASSERTION | JSON, "pass": JSON, "score": JSON | st.floats(0, 1),
                                               "reason": JSON, "comment": JSON, "metadata": JSON,
                                               "componentResults": JSON})
PROMPTFOO_RESULT = st.fixed_dictionaries({}, optional={
    "id": TEXT | JSON, "testIdx": JSON, "promptIdx": JSON, "vars": JSON,
    "testCase": st.fixed_dictionaries({}, optional={"vars": st.dictionaries(TEXT, TEXT | JSON, max_size=3) | JSON,
                                                   "metadata": JSON, "options": JSON}) | JSON,
    "response": st.fixed_dictionaries({}, optional={"output": TEXT | JSON, "error": JSON}) | JSON,
    "gradingResult": st.fixed_dictionaries({}, optional={"componentResults": st.lists(COMPONENT, max_size=3) | JSON})
    | JSON, "prompt": JSON, "provider": JSON})
PROMPTFOO_FILE = st.fixed_dictionaries({"results": st.fixed_dictionaries({"results": st.lists(PROMPTFOO_RESULT,
                                                                                              max_size=4) | JSON}) | JSON},
                                       optional={"evalId": JSON, "config": JSON}) | JSON


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(document=PROMPTFOO_FILE)
def test_any_promptfoo_output_is_read_or_refused_with_its_name(tmp_path_factory, document):
    from calibrate.imports.promptfoo_results import read_promptfoo_results

    tmp = tmp_path_factory.mktemp("promptfoo")
    path = tmp / "results.json"
    path.write_text(json.dumps(document))
    read_or_refuse(lambda: read_promptfoo_results(path), [path], tmp)


SCORE = st.fixed_dictionaries({}, optional={"value": TEXT | JSON | st.floats(), "history": JSON | st.lists(
    st.fixed_dictionaries({}, optional={"value": TEXT | JSON, "provenance": st.fixed_dictionaries(
        {}, optional={"author": TEXT | JSON, "timestamp": JSON, "reason": JSON}) | JSON}), max_size=3),
    "reason": JSON, "explanation": JSON, "metadata": JSON})
SAMPLE = st.fixed_dictionaries({}, optional={
    "id": TEXT | JSON, "epoch": JSON, "input": TEXT | JSON, "target": TEXT | JSON, "metadata": JSON,
    "output": st.fixed_dictionaries({}, optional={"completion": TEXT | JSON}) | JSON, "error": JSON,
    "scores": st.dictionaries(st.sampled_from(["model_graded_qa", "model_graded_qa1", "x"]), SCORE | JSON, max_size=3)
    | JSON})
INSPECT_LOG = st.fixed_dictionaries({"eval": st.fixed_dictionaries({}, optional={
    "scorers": st.lists(st.fixed_dictionaries({}, optional={"name": TEXT | JSON, "options": JSON}), max_size=3) | JSON,
    "model_roles": JSON, "eval_id": JSON, "task": JSON}) | JSON},
    optional={"samples": st.lists(SAMPLE, max_size=3) | JSON, "status": JSON}) | JSON


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(log=INSPECT_LOG, as_archive=st.booleans())
@example(log={"eval": {}, "samples": [{"input": "q?", "scores": {"model_graded_qa": {"history": True}}}]},
         as_archive=False)   # found in CI: a history that is no list
@example(log={"eval": {}, "samples": [{"input": "q?", "output": {}, "scores": {"model_graded_qa": {
         "value": "q?", "history": [{}]}}}]}, as_archive=False)   # found in CI: an edit without a value
def test_any_inspect_log_is_read_or_refused_with_its_name(tmp_path_factory, log, as_archive):
    import zipfile

    from calibrate.imports.inspect_logs import read_inspect_log

    tmp = tmp_path_factory.mktemp("inspect")
    if as_archive:   # an .eval archive of the same content (deflated entries)
        path = tmp / "log.eval"
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
            header = {k: v for k, v in log.items() if k != "samples"} if isinstance(log, dict) else log
            archive.writestr("header.json", json.dumps(header))
            samples = log.get("samples") if isinstance(log, dict) and isinstance(log.get("samples"), list) else []
            for i, sample in enumerate(samples):
                archive.writestr(f"samples/{i}_epoch_1.json", json.dumps(sample))
    else:
        path = tmp / "log.json"
        path.write_text(json.dumps(log))
    read_or_refuse(lambda: read_inspect_log(path), [path], tmp)


RECORD_TEXT = TEXT | JSON
OBSERVATION = st.fixed_dictionaries({"id": st.sampled_from(["t1", "o1", "o2"]) | JSON}, optional={
    "traceId": st.sampled_from(["t1", "t2"]) | JSON, "type": st.sampled_from(["AGENT", "RETRIEVER"]) | JSON,
    "parentObservationId": JSON, "isRootObservation": JSON, "input": RECORD_TEXT, "output": RECORD_TEXT,
    "metadata": JSON, "scores": JSON})
LANGFUSE_SCORE = st.fixed_dictionaries({"name": st.sampled_from(["faithfulness", "x"]) | JSON}, optional={
    "id": JSON, "traceId": st.sampled_from(["t1", "t2"]) | JSON, "observationId": JSON, "subject": JSON,
    "source": st.sampled_from(["ANNOTATION", "EVAL", "API"]) | JSON, "dataType": st.sampled_from(
        ["NUMERIC", "BOOLEAN", "CATEGORICAL", "TEXT"]) | JSON, "value": JSON | st.floats(), "stringValue": JSON,
    "authorUserId": JSON, "metadata": JSON, "comment": JSON, "updatedAt": JSON})


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(traces=st.lists(OBSERVATION, max_size=4) | JSON, scores=st.lists(LANGFUSE_SCORE, max_size=4) | JSON,
       api=st.sampled_from([None, "human", "judge"]))
def test_any_langfuse_export_is_read_or_refused_with_its_name(tmp_path_factory, traces, scores, api):
    from calibrate.imports.langfuse_scores import read_langfuse_export

    tmp = tmp_path_factory.mktemp("langfuse")
    paths = [tmp / "traces.json", tmp / "scores.json"]
    for path, records in zip(paths, (traces, scores)):
        path.write_text(json.dumps(records))
    read_or_refuse(lambda: read_langfuse_export(*paths, api_scores=api), paths, tmp)


RUN = st.fixed_dictionaries({"id": st.sampled_from(["r1", "r2"]) | JSON}, optional={
    "trace_id": st.sampled_from(["r1", "r2"]) | JSON, "parent_run_id": JSON, "run_type": JSON,
    "inputs": st.dictionaries(st.sampled_from(["question", "messages"]), RECORD_TEXT, max_size=2) | JSON,
    "outputs": JSON, "error": JSON, "extra": JSON, "reference_example_id": JSON})
FEEDBACK = st.fixed_dictionaries({"key": st.sampled_from(["faithfulness", "x"]) | JSON}, optional={
    "id": JSON, "run_id": st.sampled_from(["r1", "r2"]) | JSON, "score": JSON | st.floats(), "value": JSON,
    "correction": JSON, "feedback_source": st.fixed_dictionaries({}, optional={
        "type": st.sampled_from(["app", "model", "api"]) | JSON, "metadata": JSON, "user_name": JSON}) | JSON})


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(runs=st.lists(RUN, max_size=4) | JSON, feedback=st.lists(FEEDBACK, max_size=4) | JSON,
       api=st.sampled_from([None, "human", "judge"]))
def test_any_langsmith_export_is_read_or_refused_with_its_name(tmp_path_factory, runs, feedback, api):
    from calibrate.imports.langsmith_feedback import read_langsmith_export

    tmp = tmp_path_factory.mktemp("langsmith")
    paths = [tmp / "runs.json", tmp / "feedback.json"]
    for path, records in zip(paths, (runs, feedback)):
        path.write_text(json.dumps(records))
    read_or_refuse(lambda: read_langsmith_export(*paths, api_feedback=api), paths, tmp)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(content=st.binary(max_size=64) | st.text(max_size=40).map(str.encode))
def test_any_bytes_are_read_or_refused_by_every_file_reader(tmp_path_factory, content):
    from calibrate.imports.inspect_logs import read_inspect_log
    from calibrate.imports.langfuse_scores import read_langfuse_export
    from calibrate.imports.langsmith_feedback import read_langsmith_export
    from calibrate.imports.promptfoo_results import read_promptfoo_results

    tmp = tmp_path_factory.mktemp("bytes")
    for name, read in (("r.json", read_promptfoo_results), ("l.eval", read_inspect_log), ("l.json", read_inspect_log),
                       ("t.jsonl", read_langfuse_export),
                       ("runs.jsonl", lambda p: read_langsmith_export(p, p))):
        path = tmp / name
        path.write_bytes(content)
        try:
            read(path)
        except CampaignError as exc:
            assert all(str(path) in p.file for p in exc.problems)
