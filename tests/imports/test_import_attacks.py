"""Hypothesis attacks on what the import readers accept: any file gives a batch or a CampaignError naming
the file, never a traceback; every batch imports or is refused whole."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from calibrate import CampaignError
from calibrate.imports.apply import import_batch
from calibrate.imports.deepeval_runs import read_deepeval_run
from calibrate.imports.ragas_results import read_ragas_result
from tests.conftest import assert_clear_error, write_campaign

JSON = st.recursive(
    st.none() | st.booleans() | st.floats(allow_nan=False) | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=12,
)
METRIC_DATA = st.fixed_dictionaries(
    {"name": st.sampled_from(["Faithfulness", "Answer Relevancy", "x"]) | JSON},
    optional={
        "score": JSON | st.floats(0, 1),
        "error": JSON,
        "evaluationModel": st.sampled_from(["gpt-4o", ""]) | JSON,
        "threshold": JSON,
        "reason": JSON,
    },
)
TEST_CASE = st.fixed_dictionaries(
    {},
    optional={
        "name": st.sampled_from(["a", "a", "test_case_0"]) | JSON,
        "input": st.sampled_from(["q?", ""]) | JSON,
        "actualOutput": JSON,
        "retrievalContext": JSON | st.lists(st.text(max_size=5), max_size=2),
        "metadata": JSON,
        "metricsData": JSON | st.lists(METRIC_DATA, max_size=3),
    },
)
RUN = (
    st.fixed_dictionaries(
        {"testCases": st.lists(TEST_CASE, max_size=4) | JSON}, optional={"conversationalTestCases": JSON}
    )
    | JSON
)
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
        assert_clear_error(exc, *IMPORT_MENTIONS)
        assert not (folder / "imported_ratings.csv").exists()
        return
    assert doc["ratings"]["new"] + len(doc["skipped"]) >= len(batch.ratings)


CELL = st.none() | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=6) | st.booleans() | st.integers()


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    columns=st.lists(
        st.sampled_from(["user_input", "response", "retrieved_contexts", "faithfulness", "other", "Unnamed: 0"]),
        min_size=1,
        max_size=5,
        unique=True,
    ),
    cells=st.lists(st.lists(CELL, min_size=5, max_size=5), max_size=4),
)
def test_any_ragas_table_is_read_or_refused_with_its_name(tmp_path_factory, columns, cells):
    tmp = tmp_path_factory.mktemp("ragas")
    path = tmp / "result.csv"
    pd.DataFrame([row[: len(columns)] for row in cells], columns=columns).to_csv(path, index=False)
    try:
        batch = read_ragas_result(path, rater="r")
    except CampaignError as exc:
        assert all(str(path) in p.file for p in exc.problems)
        return
    folder = write_campaign(tmp / "campaign", TOML, "case_id,metric,rater,rater_kind,value\n")
    try:
        import_batch(folder, batch, metric_map={"other": "answer_relevancy"})
    except (CampaignError, ValueError) as exc:
        assert_clear_error(exc, *IMPORT_MENTIONS)


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
        assert_clear_error(exc, *IMPORT_MENTIONS)
        assert not (folder / "imported_ratings.csv").exists()
        return
    assert doc["ratings"]["new"] <= len(batch.ratings)


TEXT = st.sampled_from(["q?", "", "Faithfulness", "human", "llm-rubric", "C", "I", "pass", "0.5"]) | st.text(max_size=6)
ASSERTION = st.fixed_dictionaries(
    {},
    optional={
        "type": st.sampled_from(["llm-rubric", "human", "contains", "assert-set"]) | JSON,
        "metric": TEXT | JSON,
        "provider": TEXT | JSON,
    },
)
COMPONENT = st.fixed_dictionaries(
    {},
    optional={
        "assertion": ASSERTION | JSON,
        "pass": JSON,
        "score": JSON | st.floats(0, 1),
        "reason": JSON,
        "comment": JSON,
        "metadata": JSON,
        "componentResults": JSON,
    },
)
PROMPTFOO_RESULT = st.fixed_dictionaries(
    {},
    optional={
        "id": TEXT | JSON,
        "testIdx": JSON,
        "promptIdx": JSON,
        "vars": JSON,
        "testCase": st.fixed_dictionaries(
            {},
            optional={"vars": st.dictionaries(TEXT, TEXT | JSON, max_size=3) | JSON, "metadata": JSON, "options": JSON},
        )
        | JSON,
        "response": st.fixed_dictionaries({}, optional={"output": TEXT | JSON, "error": JSON}) | JSON,
        "gradingResult": st.fixed_dictionaries(
            {}, optional={"componentResults": st.lists(COMPONENT, max_size=3) | JSON}
        )
        | JSON,
        "prompt": JSON,
        "provider": JSON,
    },
)
PROMPTFOO_FILE = (
    st.fixed_dictionaries(
        {"results": st.fixed_dictionaries({"results": st.lists(PROMPTFOO_RESULT, max_size=4) | JSON}) | JSON},
        optional={"evalId": JSON, "config": JSON},
    )
    | JSON
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(document=PROMPTFOO_FILE)
def test_any_promptfoo_output_is_read_or_refused_with_its_name(tmp_path_factory, document):
    from calibrate.imports.promptfoo_results import read_promptfoo_results

    tmp = tmp_path_factory.mktemp("promptfoo")
    path = tmp / "results.json"
    path.write_text(json.dumps(document))
    read_or_refuse(lambda: read_promptfoo_results(path), [path], tmp)


SCORE = st.fixed_dictionaries(
    {},
    optional={
        "value": TEXT | JSON | st.floats(),
        "history": JSON
        | st.lists(
            st.fixed_dictionaries(
                {},
                optional={
                    "value": TEXT | JSON,
                    "provenance": st.fixed_dictionaries(
                        {}, optional={"author": TEXT | JSON, "timestamp": JSON, "reason": JSON}
                    )
                    | JSON,
                },
            ),
            max_size=3,
        ),
        "reason": JSON,
        "explanation": JSON,
        "metadata": JSON,
    },
)
SAMPLE = st.fixed_dictionaries(
    {},
    optional={
        "id": TEXT | JSON,
        "epoch": JSON,
        "input": TEXT | JSON,
        "target": TEXT | JSON,
        "metadata": JSON,
        "output": st.fixed_dictionaries({}, optional={"completion": TEXT | JSON}) | JSON,
        "error": JSON,
        "scores": st.dictionaries(
            st.sampled_from(["model_graded_qa", "model_graded_qa1", "x"]), SCORE | JSON, max_size=3
        )
        | JSON,
    },
)
INSPECT_LOG = (
    st.fixed_dictionaries(
        {
            "eval": st.fixed_dictionaries(
                {},
                optional={
                    "scorers": st.lists(
                        st.fixed_dictionaries({}, optional={"name": TEXT | JSON, "options": JSON}), max_size=3
                    )
                    | JSON,
                    "model_roles": JSON,
                    "eval_id": JSON,
                    "task": JSON,
                },
            )
            | JSON
        },
        optional={"samples": st.lists(SAMPLE, max_size=3) | JSON, "status": JSON},
    )
    | JSON
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(log=INSPECT_LOG, as_archive=st.booleans())
@example(
    log={"eval": {}, "samples": [{"input": "q?", "scores": {"model_graded_qa": {"history": True}}}]}, as_archive=False
)  # found in CI: a history that is no list
@example(
    log={
        "eval": {},
        "samples": [{"input": "q?", "output": {}, "scores": {"model_graded_qa": {"value": "q?", "history": [{}]}}}],
    },
    as_archive=False,
)  # found in CI: an edit without a value
def test_any_inspect_log_is_read_or_refused_with_its_name(tmp_path_factory, log, as_archive):
    import zipfile

    from calibrate.imports.inspect_logs import read_inspect_log

    tmp = tmp_path_factory.mktemp("inspect")
    if as_archive:  # an .eval archive of the same content (deflated entries)
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
OBSERVATION = st.fixed_dictionaries(
    {"id": st.sampled_from(["t1", "o1", "o2"]) | JSON},
    optional={
        "traceId": st.sampled_from(["t1", "t2"]) | JSON,
        "type": st.sampled_from(["AGENT", "RETRIEVER"]) | JSON,
        "parentObservationId": JSON,
        "isRootObservation": JSON,
        "input": RECORD_TEXT,
        "output": RECORD_TEXT,
        "metadata": JSON,
        "scores": JSON,
    },
)
LANGFUSE_SCORE = st.fixed_dictionaries(
    {"name": st.sampled_from(["faithfulness", "x"]) | JSON},
    optional={
        "id": JSON,
        "traceId": st.sampled_from(["t1", "t2"]) | JSON,
        "observationId": JSON,
        "subject": JSON,
        "source": st.sampled_from(["ANNOTATION", "EVAL", "API"]) | JSON,
        "dataType": st.sampled_from(["NUMERIC", "BOOLEAN", "CATEGORICAL", "TEXT"]) | JSON,
        "value": JSON | st.floats(),
        "stringValue": JSON,
        "authorUserId": JSON,
        "metadata": JSON,
        "comment": JSON,
        "updatedAt": JSON,
    },
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    traces=st.lists(OBSERVATION, max_size=4) | JSON,
    scores=st.lists(LANGFUSE_SCORE, max_size=4) | JSON,
    api=st.sampled_from([None, "human", "judge"]),
)
def test_any_langfuse_export_is_read_or_refused_with_its_name(tmp_path_factory, traces, scores, api):
    from calibrate.imports.langfuse_scores import read_langfuse_export

    tmp = tmp_path_factory.mktemp("langfuse")
    paths = [tmp / "traces.json", tmp / "scores.json"]
    for path, records in zip(paths, (traces, scores)):
        path.write_text(json.dumps(records))
    read_or_refuse(lambda: read_langfuse_export(*paths, api_scores=api), paths, tmp)


RUN = st.fixed_dictionaries(
    {"id": st.sampled_from(["r1", "r2"]) | JSON},
    optional={
        "trace_id": st.sampled_from(["r1", "r2"]) | JSON,
        "parent_run_id": JSON,
        "run_type": JSON,
        "inputs": st.dictionaries(st.sampled_from(["question", "messages"]), RECORD_TEXT, max_size=2) | JSON,
        "outputs": JSON,
        "error": JSON,
        "extra": JSON,
        "reference_example_id": JSON,
    },
)
FEEDBACK = st.fixed_dictionaries(
    {"key": st.sampled_from(["faithfulness", "x"]) | JSON},
    optional={
        "id": JSON,
        "run_id": st.sampled_from(["r1", "r2"]) | JSON,
        "score": JSON | st.floats(),
        "value": JSON,
        "correction": JSON,
        "feedback_source": st.fixed_dictionaries(
            {}, optional={"type": st.sampled_from(["app", "model", "api"]) | JSON, "metadata": JSON, "user_name": JSON}
        )
        | JSON,
    },
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    runs=st.lists(RUN, max_size=4) | JSON,
    feedback=st.lists(FEEDBACK, max_size=4) | JSON,
    api=st.sampled_from([None, "human", "judge"]),
)
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
    for name, read in (
        ("r.json", read_promptfoo_results),
        ("l.eval", read_inspect_log),
        ("l.json", read_inspect_log),
        ("t.jsonl", read_langfuse_export),
        ("runs.jsonl", lambda p: read_langsmith_export(p, p)),
    ):
        path = tmp / name
        path.write_bytes(content)
        try:
            read(path)
        except CampaignError as exc:
            assert all(str(path) in p.file for p in exc.problems)


# ------------------------------------------------------------------------------- every door, every level
# Issue 24: each reader reads its format through declared schemas. Whatever JSON value sits at whatever
# level of a valid file, truncated, as JSON Lines or with a byte that is not UTF-8: a batch that imports
# or is refused whole, or a CampaignError naming the file; never another exception.

import copy  # noqa: E402

import pytest  # noqa: E402

from calibrate import load_campaign  # noqa: E402
from calibrate.base.documents import DocumentError  # noqa: E402
from calibrate.imports.inspect_logs import read_inspect_log  # noqa: E402
from calibrate.imports.langfuse_scores import read_langfuse_export  # noqa: E402
from calibrate.imports.langsmith_feedback import read_langsmith_export  # noqa: E402
from calibrate.imports.promptfoo_results import import_promptfoo, read_promptfoo_results  # noqa: E402
from tests.imports.attack_tools import DEEP, NASTY, attacked, read_or_refused, write  # noqa: E402

DEEPEVAL_RUN = {
    "testCases": [
        {
            "name": "t",
            "input": "q?",
            "actualOutput": "a.",
            "retrievalContext": ["c"],
            "metadata": {"k": 1},
            "metricsData": [
                {
                    "name": "Faithfulness",
                    "score": 0.5,
                    "threshold": 0.7,
                    "success": False,
                    "evaluationModel": "gpt-4o",
                    "reason": "ok",
                    "strictMode": False,
                }
            ],
        }
    ],
    "conversationalTestCases": [{"name": "chat"}],
}
PROMPTFOO_OUTPUT = {
    "evalId": "eval-1",
    "config": {"defaultTest": {"options": {"provider": "openai:gpt-4o"}}},
    "results": {
        "version": 3,
        "results": [
            {
                "id": "r1",
                "testIdx": 0,
                "promptIdx": 0,
                "vars": {"question": "Where?"},
                "testCase": {
                    "vars": {"question": "Where?", "context": "ctx"},
                    "metadata": {"case_id": "p1"},
                    "options": {"provider": "openai:gpt-4o"},
                },
                "prompt": {"raw": "Where?", "label": "p"},
                "provider": {"id": "app", "label": "app"},
                "response": {"output": "There."},
                "gradingResult": {
                    "componentResults": [
                        {
                            "pass": True,
                            "score": 1,
                            "reason": "ok",
                            "assertion": {"type": "llm-rubric", "metric": "faithfulness"},
                        },
                        {"pass": False, "score": 0, "reason": "Manual", "comment": "c", "assertion": {"type": "human"}},
                        {
                            "pass": True,
                            "assertion": {"type": "assert-set"},
                            "componentResults": [{"pass": True, "score": 1, "assertion": {"type": "contains"}}],
                        },
                    ]
                },
            }
        ],
    },
}
INSPECT_LOG_JSON = {
    "status": "success",
    "eval": {
        "task": "qa",
        "eval_id": "e1",
        "model": "m",
        "model_roles": {"grader": "g"},
        "scorers": [
            {"name": "model_graded_qa", "options": {"model": "openai/gpt-4o"}},
            {"name": "match", "options": {"model_role": "grader"}},
        ],
    },
    "samples": [
        {
            "id": 1,
            "epoch": 1,
            "input": [{"role": "user", "content": [{"type": "text", "text": "q?"}]}],
            "target": ["a"],
            "metadata": {"context": ["c"], "case_id": "i1"},
            "output": {"completion": "a."},
            "scores": {
                "model_graded_qa": {
                    "value": "C",
                    "explanation": "e",
                    "metadata": {"grading": [{"role": "assistant", "model": "g"}]},
                    "history": [
                        {"value": "C"},
                        {
                            "value": "I",
                            "provenance": {"author": "alice", "reason": "r", "timestamp": "2026-01-01T00:00:00Z"},
                        },
                    ],
                },
                "match": {"value": {"a": 1, "b": "N"}},
            },
        },
        {"id": 2, "epoch": 1, "input": "q2?", "error": {"message": "boom"}},
    ],
}
LANGFUSE_TRACES = {
    "data": [
        {
            "id": "t1",
            "input": '{"question": "Why?"}',
            "output": "Because.",
            "timestamp": "2026-11-30T10:00:00Z",
            "metadata": {"expected_output": "B"},
            "tags": ["x"],
            "scores": [
                {
                    "id": "s0",
                    "name": "faithfulness",
                    "value": 1,
                    "source": "EVAL",
                    "traceId": "t1",
                    "metadata": {"model": "m"},
                }
            ],
        },
        {
            "id": "o1",
            "traceId": "t2",
            "type": "AGENT",
            "input": "q2",
            "output": "a2",
            "isRootObservation": True,
            "startTime": "2026-01-01",
        },
        {
            "id": "o2",
            "traceId": "t2",
            "type": "RETRIEVER",
            "parentObservationId": "o1",
            "output": {"documents": [{"page_content": "d"}]},
        },
    ]
}
LANGFUSE_SCORES = {
    "data": [
        {
            "id": "s1",
            "traceId": "t1",
            "name": "faithfulness",
            "value": 1,
            "dataType": "NUMERIC",
            "source": "ANNOTATION",
            "authorUserId": "u-alice",
            "comment": "fine",
        },
        {
            "id": "s2",
            "subject": {"kind": "trace", "id": "t1"},
            "name": "faithfulness",
            "value": False,
            "dataType": "BOOLEAN",
            "source": "EVAL",
            "metadata": {"model": "gpt-4o"},
        },
        {
            "id": "s3",
            "observationId": "o1",
            "name": "faithfulness",
            "value": 0,
            "dataType": "CATEGORICAL",
            "stringValue": "fail",
            "source": "ANNOTATION",
            "authorUserId": "u-bob",
        },
    ]
}
LANGSMITH_RUNS = [
    {
        "id": "r1",
        "trace_id": "r1",
        "inputs": {"question": "Why?"},
        "outputs": {"answer": "Because."},
        "run_type": "chain",
        "reference_example_id": "e1",
        "extra": {"metadata": {"k": "v"}},
        "start_time": "2026-01-01",
        "tags": ["t"],
        "session_id": "s",
    },
    {
        "id": "r2",
        "trace_id": "r1",
        "parent_run_id": "r1",
        "run_type": "retriever",
        "outputs": {"documents": [{"page_content": "doc"}]},
    },
    {
        "id": "r3",
        "inputs": {"messages": [{"role": "user", "content": "hi"}]},
        "outputs": {"generations": [[{"text": "hello"}]]},
    },
]
LANGSMITH_FEEDBACK = [
    {
        "id": "f1",
        "run_id": "r1",
        "key": "faithfulness",
        "score": 1,
        "comment": "ok",
        "feedback_source": {"type": "app", "user_name": "alice"},
        "modified_at": "2026-01-01",
    },
    {
        "id": "f2",
        "run_id": "r3",
        "key": "faithfulness",
        "score": 0,
        "feedback_source": {"type": "model", "metadata": {"ls_model_name": "gpt-4o"}},
    },
]
LANGSMITH_EXAMPLES = [{"id": "e1", "outputs": {"answer": "Because!"}}]

#: each door: the file attacked (name, valid content), the other files it reads, and how it reads them
DOORS = {
    "deepeval": (("run.json", DEEPEVAL_RUN), {}, lambda p: read_deepeval_run(p["run.json"])),
    "promptfoo": (("results.json", PROMPTFOO_OUTPUT), {}, lambda p: read_promptfoo_results(p["results.json"])),
    "inspect": (("log.json", INSPECT_LOG_JSON), {}, lambda p: read_inspect_log(p["log.json"])),
    "langfuse traces": (
        ("traces.json", LANGFUSE_TRACES),
        {"scores.json": LANGFUSE_SCORES},
        lambda p: read_langfuse_export(p["traces.json"], p["scores.json"], api_scores="judge"),
    ),
    "langfuse scores": (
        ("scores.json", LANGFUSE_SCORES),
        {"traces.json": LANGFUSE_TRACES},
        lambda p: read_langfuse_export(p["traces.json"], p["scores.json"], api_scores="human"),
    ),
    "langsmith runs": (
        ("runs.json", LANGSMITH_RUNS),
        {"feedback.json": LANGSMITH_FEEDBACK, "examples.json": LANGSMITH_EXAMPLES},
        lambda p: read_langsmith_export(p["runs.json"], p["feedback.json"], examples=p["examples.json"]),
    ),
    "langsmith feedback": (
        ("feedback.json", LANGSMITH_FEEDBACK),
        {"runs.json": LANGSMITH_RUNS},
        lambda p: read_langsmith_export(p["runs.json"], p["feedback.json"], api_feedback="judge"),
    ),
    "langsmith examples": (
        ("examples.json", LANGSMITH_EXAMPLES),
        {"runs.json": LANGSMITH_RUNS, "feedback.json": LANGSMITH_FEEDBACK},
        lambda p: read_langsmith_export(p["runs.json"], p["feedback.json"], examples=p["examples.json"]),
    ),
}
#: what an import refused whole names: the field, file or rule that refused it
IMPORT_MENTIONS = ("metric", "case", "rater", "value", "score", "imported", "campaign.toml", "field", "expected")
MAP = {"human": "faithfulness", "model_graded_qa": "faithfulness", "match": "answer_relevancy", "a": "faithfulness"}


def door_files(tmp, door: str, attacked_content) -> dict[str, Path]:
    (name, _), others, _ = DOORS[door]
    paths = {name: write(tmp / name, attacked_content)}
    paths |= {other: write(tmp / other, content) for other, content in others.items()}
    return paths


def read_and_import(door: str, paths: dict[str, Path], tmp) -> None:
    """The door's reader gives a batch, which imports or is refused whole, or it refuses the attacked file
    naming it."""
    (name, _), _, read = DOORS[door]
    batch = read_or_refused(lambda: read(paths), paths[name])
    if batch is None:
        return
    folder = write_campaign(tmp / "campaign", TOML, "case_id,metric,rater,rater_kind,value\n")
    try:
        doc = import_batch(folder, batch, metric_map=MAP)
    except (CampaignError, ValueError) as exc:
        assert_clear_error(exc, *IMPORT_MENTIONS)
        assert not (folder / "imported_ratings.csv").exists()
        return
    assert doc["ratings"]["new"] <= len(batch.ratings)
    load_campaign(folder)  # what was written loads


@pytest.mark.parametrize("door", list(DOORS))
def test_each_door_reads_its_valid_file(door, tmp_path):
    (_name, valid), _, read = DOORS[door]
    batch = read(door_files(tmp_path, door, valid))
    assert batch.cases and batch.ratings, door
    read_and_import(door, door_files(tmp_path / "again", door, valid), tmp_path)


@pytest.mark.parametrize("door", list(DOORS))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_value_at_any_level_of_each_door_is_read_or_refused_naming_the_file(tmp_path_factory, door, data):
    (_, valid), _, _ = DOORS[door]
    tmp = tmp_path_factory.mktemp("door")
    read_and_import(door, door_files(tmp, door, data.draw(attacked(valid))), tmp)


@pytest.mark.parametrize("door", list(DOORS))
@pytest.mark.parametrize(
    "content",
    [DEEP.encode(), b"", b"\xff\xfe[]", b"[", b"3", b'"text"', b"null", b"[" + b"9" * 5000 + b"]", b"\x00" * 20],
    ids=["deep", "empty", "not-utf8", "truncated", "number", "string", "null", "5000-digit number", "nul bytes"],
)
def test_a_file_that_is_no_document_of_the_format_is_a_clear_error(door, content, tmp_path):
    """Found by the attacks: nested JSON exhausted Python's stack (a RecursionError traceback in every
    reader), a 5000-digit number was a ValueError traceback."""
    (name, _), _, read = DOORS[door]
    paths = door_files(tmp_path, door, content)
    try:
        batch = read(paths)
    except CampaignError as exc:
        assert str(paths[name]) in str(exc)
        if content == DEEP.encode():
            assert isinstance(exc, DocumentError) and "nested deeper than 200 levels" in str(exc)
        if content == b"\xff\xfe[]":
            assert "not UTF-8 text (byte 0xff at offset 0)" in str(exc)
        return
    assert content in (b"null", b"3", b'"text"') and not batch.ratings  # a Langfuse or LangSmith file of nothing


@pytest.mark.parametrize(
    "door, path, value",
    [
        ("deepeval", ("testCases", 0, "metricsData", 0, "evaluationModel"), 3),  # AttributeError before
        ("deepeval", ("testCases", 0, "metricsData", 0, "threshold"), [0.5]),  # TypeError (unhashable) before
        ("promptfoo", ("results", "results", 0, "gradingResult", "componentResults"), 5),  # TypeError before
        ("inspect", ("samples", 0, "metadata", "case_id"), {"a": 1}),  # TypeError (unhashable) before
        ("inspect", ("samples", 0, "metadata", "case_id"), [1]),
        ("langfuse traces", ("data", 0, "input"), "[" * 5000),  # RecursionError before
    ],
)
def test_shapes_that_were_tracebacks_are_read_or_skipped_with_a_reason(door, path, value, tmp_path):
    from tests.imports.attack_tools import replaced

    (_, valid), _, _read = DOORS[door]
    paths = door_files(tmp_path, door, replaced(valid, path, value))
    read_and_import(door, paths, tmp_path)


def test_text_is_data_a_bare_cr_nul_and_escapes_in_a_reason_are_kept(tmp_path):
    """Issue 24: a bare \\r in a reason refused the whole import (the ratings file split the row)."""
    runs = write(
        tmp_path / "runs.json", [{"id": "r1", "inputs": {"question": "Q" + NASTY}, "outputs": {"answer": "A" + NASTY}}]
    )
    feedback = write(
        tmp_path / "feedback.json",
        [
            {
                "id": "f1",
                "run_id": "r1",
                "key": "faithfulness",
                "score": 1,
                "comment": "R" + NASTY,
                "feedback_source": {"type": "app", "user_name": "alice"},
            }
        ],
    )
    folder = write_campaign(tmp_path / "campaign", TOML, "case_id,metric,rater,rater_kind,value\n")
    assert import_batch(folder, read_langsmith_export(runs, feedback))["ratings"]["new"] == 1
    campaign = load_campaign(folder)
    [reason] = campaign.ratings["reason"].tolist()
    [case] = campaign.cases.values()
    assert reason == "R" + NASTY and case["input"] == "Q" + NASTY and case["actual_output"] == "A" + NASTY
    # and importing again changes nothing
    assert import_batch(folder, read_langsmith_export(runs, feedback))["ratings"]["unchanged"] == 1


def test_a_judge_renamed_as_a_human_of_the_source_is_refused_not_dropped(tmp_path):
    """Issue 24: --rater equal to the source's own annotator dropped the human labels (the judge's rating
    and the human's were one rater's, and one was skipped as a repeat)."""
    output = copy.deepcopy(PROMPTFOO_OUTPUT)  # one judge, graded by a model, and the viewer's rating
    del output["results"]["results"][0]["gradingResult"]["componentResults"][2]
    path = write(tmp_path / "results.json", output)
    folder = write_campaign(tmp_path / "campaign", TOML, "case_id,metric,rater,rater_kind,value\n")
    with pytest.raises(ValueError, match="rater='promptfoo-viewer' is also the human_rater"):
        import_promptfoo(folder, path, metric_map={"human": "faithfulness"}, rater="promptfoo-viewer")
    batch = read_promptfoo_results(path)  # the same through any door: import_batch refuses it too
    with pytest.raises(ValueError, match="holds human ratings by 'promptfoo-viewer' too"):
        import_batch(folder, batch, metric_map={"human": "faithfulness"}, rater="promptfoo-viewer")
    # a source naming a judge and a human alike is refused too
    both = write(
        tmp_path / "both.json",
        [
            {
                "id": "f1",
                "run_id": "r1",
                "key": "faithfulness",
                "score": 1,
                "feedback_source": {"type": "app", "user_name": "gpt-4o"},
            },
            {
                "id": "f2",
                "run_id": "r1",
                "key": "faithfulness",
                "score": 0,
                "feedback_source": {"type": "model", "metadata": {"ls_model_name": "gpt-4o"}},
            },
        ],
    )
    runs = write(tmp_path / "runs.json", LANGSMITH_RUNS)
    with pytest.raises(ValueError, match=r"names a judge and a human alike \(gpt-4o\)"):
        import_batch(folder, read_langsmith_export(runs, both), metric_map={"human": "faithfulness"})
    assert not (folder / "imported_ratings.csv").exists()
    # kept apart, both import
    doc = import_batch(folder, batch, metric_map={"human": "faithfulness"}, rater=None)
    assert doc["raters"]["promptfoo-viewer"]["kind"] == "human" and doc["raters"]["openai:gpt-4o"]["kind"] == "judge"
