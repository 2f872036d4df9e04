"""calibrate import langsmith: no server can run here, so the files are what its Client returns, built
with the SDK's own schema classes (which calibrate's test environment has, in process) and serialised as
the SDK serialises them. Two judges of different models disagree with the human on their own planted
runs: each judge's kappa equals scikit-learn's; API feedback, which a user alone can vouch for, is
skipped unless named; a changed feedback is a new revision."""

from __future__ import annotations

import datetime as dt
import json
import uuid
from pathlib import Path

import pytest

from calibrate import load_campaign
from calibrate.imports.store import ImportStore
from tests.imports.common import HUMAN, MISSES, USERS, N, check_kappas, run, verdict, written
from tests.imports.common import new_campaign as make_campaign


def new_campaign(tmp_path):
    return make_campaign(tmp_path / "bot", "correctness")


def langsmith_export(folder: Path) -> dict[str, Path]:
    """Runs, examples and feedback as LangSmith's Client returns them (its own schema classes), a line each."""
    from langsmith import schemas

    t0 = dt.datetime(2026, 11, 30, 9, 0, tzinfo=dt.UTC)
    dataset = uuid.uuid5(uuid.NAMESPACE_URL, "dataset")
    runs, examples, feedback = [], [], []
    for i, label in enumerate(HUMAN):
        root, example = uuid.uuid5(uuid.NAMESPACE_URL, f"run-{i}"), uuid.uuid5(uuid.NAMESPACE_URL, f"example-{i}")
        retriever, llm = uuid.uuid5(uuid.NAMESPACE_URL, f"retriever-{i}"), uuid.uuid5(uuid.NAMESPACE_URL, f"llm-{i}")
        start = t0 + dt.timedelta(minutes=i)
        runs += [
            schemas.Run(
                id=root,
                trace_id=root,
                name="rag",
                run_type="chain",
                start_time=start,
                inputs={"question": f"question {i}?"},
                outputs={"answer": f"The answer to question {i}"},
                reference_example_id=example,
                extra={"metadata": {"release": "v2"}},
                tags=["prod"],
            ),
            schemas.Run(
                id=retriever,
                trace_id=root,
                parent_run_id=root,
                name="retrieve",
                run_type="retriever",
                start_time=start,
                inputs={"query": f"question {i}?"},
                outputs={"documents": [{"page_content": f"Passage {i}.", "metadata": {}, "type": "Document"}]},
            ),
            schemas.Run(
                id=llm,
                trace_id=root,
                parent_run_id=root,
                name="ChatOpenAI",
                run_type="llm",
                start_time=start,
                inputs={"messages": []},
                outputs={"generations": [[{"text": f"The answer to question {i}"}]]},
            ),
        ]
        examples.append(
            schemas.Example(
                id=example,
                dataset_id=dataset,
                inputs={"question": f"question {i}?"},
                outputs={"answer": f"Expected {i}"},
                created_at=t0,
            )
        )
        stamp = t0 + dt.timedelta(hours=2, minutes=i)
        feedback += [
            schemas.Feedback(
                id=uuid.uuid5(uuid.NAMESPACE_URL, f"alice-{i}"),
                run_id=root,
                trace_id=root,
                key="correctness",
                score=label,
                comment="read it",
                created_at=stamp,
                modified_at=stamp,
                feedback_source=schemas.FeedbackSourceBase(
                    type="app", user_id=uuid.uuid5(uuid.NAMESPACE_URL, "alice"), user_name="alice"
                ),
            ),
            schemas.Feedback(
                id=uuid.uuid5(uuid.NAMESPACE_URL, f"a-{i}"),
                run_id=root,
                trace_id=root,
                key="correctness",
                score=verdict("gpt-4o-mini", i),
                created_at=stamp,
                modified_at=stamp,
                feedback_source=schemas.ModelFeedbackSource(
                    metadata={"ls_model_name": "gpt-4o-mini", "__run": {"run_id": str(uuid.uuid4())}}
                ),
            ),
            schemas.Feedback(
                id=uuid.uuid5(uuid.NAMESPACE_URL, f"b-{i}"),
                run_id=root,
                trace_id=root,
                key="Correctness",
                value="pass" if verdict("claude-3-5-haiku", i) else "fail",
                created_at=stamp,
                modified_at=stamp,
                feedback_source=schemas.ModelFeedbackSource(metadata={"model": "claude-3-5-haiku"}),
            ),
        ]
        if i < USERS:
            feedback.append(
                schemas.Feedback(
                    id=uuid.uuid5(uuid.NAMESPACE_URL, f"thumbs-{i}"),
                    run_id=root,
                    trace_id=root,
                    key="correctness",
                    score=1,
                    created_at=stamp,
                    modified_at=stamp,
                    feedback_source=schemas.APIFeedbackSource(),
                )
            )
    feedback += [
        schemas.Feedback(
            id=uuid.uuid4(),
            run_id=uuid.uuid5(uuid.NAMESPACE_URL, "llm-0"),
            trace_id=runs[0].id,
            key="correctness",
            score=1,
            created_at=t0,
            modified_at=t0,
            feedback_source=schemas.ModelFeedbackSource(metadata={"model": "gpt-4o-mini"}),
        ),
        schemas.Feedback(
            id=uuid.uuid4(),
            run_id=None,
            trace_id=None,
            key="correctness",
            score=0.9,
            created_at=t0,
            modified_at=t0,
            feedback_source=schemas.ModelFeedbackSource(),
        ),
        schemas.Feedback(
            id=uuid.uuid4(),
            run_id=runs[3].id,
            trace_id=runs[3].id,
            key="correctness",
            correction={"answer": "Better."},
            created_at=t0,
            modified_at=t0,
            feedback_source=schemas.FeedbackSourceBase(type="app", user_name="alice"),
        ),
    ]
    paths = {}
    for name, items in (("runs", runs), ("examples", examples), ("feedback", feedback)):
        paths[name] = folder / f"{name}.jsonl"
        paths[name].write_text("".join(item.model_dump_json() + "\n" for item in items))
    return paths


@pytest.fixture(scope="module")
def langsmith_files(tmp_path_factory):
    return langsmith_export(tmp_path_factory.mktemp("langsmith"))


def test_langsmith_app_feedback_is_human_model_feedback_judges_and_api_feedback_waits(langsmith_files, tmp_path):
    folder = new_campaign(tmp_path)
    args = (
        "import",
        "langsmith",
        str(folder),
        "--runs",
        str(langsmith_files["runs"]),
        "--feedback",
        str(langsmith_files["feedback"]),
        "--examples",
        str(langsmith_files["examples"]),
    )
    doc = json.loads(run(*args, "--json"))
    assert doc["cases"]["added"] == N
    assert doc["by_metric"] == {"correctness": {"human": N, "judge": 2 * N}}
    assert set(doc["raters"]) == {"alice", *MISSES}
    reasons = {g["reason"]: g["count"] for g in doc["skipped_by_reason"]}
    assert (
        reasons[
            "source api holds whatever an application sent (user feedback or its own evaluations): say which "
            "with --api-feedback human or --api-feedback judge"
        ]
        == USERS
    )
    assert reasons["feedback on a run inside the trace, not on its root run"] == 1
    assert reasons["feedback on no run (a project's or an experiment's summary)"] == 1
    assert reasons["a correction of the output, not a rating"] == 1
    c = load_campaign(folder)
    root = str(uuid.uuid5(uuid.NAMESPACE_URL, "run-0"))
    case = c.cases[root]
    assert case["input"] == "question 0?" and case["actual_output"] == "The answer to question 0"
    assert case["retrieval_context"] == ["Passage 0."] and case["expected_output"] == "Expected 0"
    assert case["metadata"]["release"] == "v2" and case["metadata"]["tags"] == ["prod"]
    check_kappas(folder)
    files = written(folder)
    again = json.loads(run(*args, "--json"))
    assert again["ratings"]["new"] == again["ratings"]["changed"] == 0 and written(folder) == files


def test_langsmith_changed_feedback_is_a_revision_and_api_feedback_is_imported_when_named(langsmith_files, tmp_path):
    folder = new_campaign(tmp_path)
    args = ("import", "langsmith", str(folder), "--runs", str(langsmith_files["runs"]))
    run(*args, "--feedback", str(langsmith_files["feedback"]))
    lines = [json.loads(line) for line in langsmith_files["feedback"].read_text().splitlines()]
    target = str(uuid.uuid5(uuid.NAMESPACE_URL, "alice-2"))
    for item in lines:
        if item["id"] == target:
            item["score"], item["modified_at"] = 1 - item["score"], "2026-12-01T10:00:00Z"
    later = tmp_path / "feedback-later.jsonl"
    later.write_text("".join(json.dumps(item) + "\n" for item in lines))
    doc = json.loads(run(*args, "--feedback", str(later), "--api-feedback", "judge", "--json"))
    assert doc["ratings"]["changed"] == 1 and doc["ratings"]["new"] == USERS
    assert doc["raters"]["langsmith-api"]["ratings"] == USERS
    store = ImportStore(folder)
    history = [
        h["value"]
        for h in store.history()
        if h["rater"] == "alice" and h["case_id"] == str(uuid.uuid5(uuid.NAMESPACE_URL, "run-2"))
    ]
    store.close()
    assert history == [float(HUMAN[2]), float(1 - HUMAN[2])]
