"""calibrate import langfuse: no server can run here, so the files are what its API returns, built with
the SDK's own data classes (in its own virtual environment, .langfuse-venv) and serialised as the SDK
serialises them. Two judges of different models disagree with the human on their own planted traces: each
judge's kappa equals scikit-learn's; API scores, which a user alone can vouch for, are skipped unless
named; imports are idempotent, and a changed score is a new revision."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from calibrate import load_campaign
from calibrate.imports.store import ImportStore
from tests.conftest import need
from tests.imports.common import HUMAN, MISSES, USERS, N, check_kappas, run, written
from tests.imports.common import new_campaign as make_campaign

LANGFUSE_PYTHON = Path(__file__).resolve().parents[2] / ".langfuse-venv" / "bin" / "python"


def new_campaign(tmp_path):
    return make_campaign(tmp_path / "bot", "correctness")


# ----------------------------------------------------------------------------------------------- Langfuse

LANGFUSE_EXPORT = """
import datetime as dt, json, sys
from langfuse.api import (GetScoresV3Meta, GetScoresV3Response, ObservationV2, ObservationsV2Meta,
                          ObservationsV2Response, ScoreSubjectV3_Observation, ScoreSubjectV3_Session,
                          ScoreSubjectV3_Trace, ScoreV3_Boolean, ScoreV3_Categorical, ScoreV3_Correction,
                          ScoreV3_Numeric, ScoreV3_Text, Score_Boolean, Score_Categorical, Score_Numeric)

human, misses, users, out = json.loads(sys.argv[1]), json.loads(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
t0 = dt.datetime(2026, 11, 30, 9, 0, tzinfo=dt.timezone.utc)
at = lambda minutes: t0 + dt.timedelta(minutes=minutes)
common = dict(project_id="proj-1", environment="production")

pages, observations = [], []
for i in range(len(human)):
    trace = f"trace-{i:03d}"
    observations += [
        ObservationV2(id=f"root-{i}", trace_id=trace, start_time=at(i), type="AGENT", name="rag",
                      is_root_observation=True, input=json.dumps({"question": f"question {i}?"}),
                      output=json.dumps(f"The answer to question {i}"), metadata={"release": "v2"}, **common),
        ObservationV2(id=f"retrieve-{i}", trace_id=trace, start_time=at(i), type="RETRIEVER",
                      parent_observation_id=f"root-{i}",
                      output=json.dumps([{"page_content": f"Passage {i}."}, {"page_content": "Another passage."}]),
                      **common),
        ObservationV2(id=f"generate-{i}", trace_id=trace, start_time=at(i), type="GENERATION", model="gpt-4o",
                      parent_observation_id=f"root-{i}", input="[]", output=json.dumps(f"The answer to question {i}"),
                      **common)]
half = len(observations) // 2
with open(out + "/observations.jsonl", "w") as f:   # two pages of the v2 observations API, a page a line
    f.write(ObservationsV2Response(data=observations[:half], meta=ObservationsV2Meta(cursor="next")).json() + "\\n")
    f.write(ObservationsV2Response(data=observations[half:], meta=ObservationsV2Meta()).json() + "\\n")

def scores(version, flip=None):
    found = []
    for i, label in enumerate(human):
        trace, stamp = f"trace-{i:03d}", at(100 + i)
        changed = at(500) if flip == i else stamp
        value = (not label) if flip == i else bool(label)
        if version == 3:
            subject = ScoreSubjectV3_Trace(id=trace)
            found.append(ScoreV3_Boolean(id=f"alice-{i}", name="correctness", value=value, source="ANNOTATION",
                                         author_user_id="user-alice", queue_id="queue-1", subject=subject,
                                         timestamp=stamp, created_at=stamp, updated_at=changed, comment="read it",
                                         **common))
            a = int(bool(label) != (i in misses["gpt-4o-mini"]))
            found.append(ScoreV3_Numeric(id=f"eval-a-{i}", name="Correctness", value=float(a), source="EVAL",
                                         subject=subject, metadata={"model": "gpt-4o-mini"},
                                         comment="The judge's reasoning.",
                                         timestamp=stamp, created_at=stamp, updated_at=stamp, **common))
            b = bool(label) != (i in misses["claude-3-5-haiku"])
            found.append(ScoreV3_Categorical(id=f"eval-b-{i}", name="correctness", value="pass" if b else "fail",
                                             source="EVAL", subject=subject, metadata={"model": "claude-3-5-haiku"},
                                             timestamp=stamp, created_at=stamp, updated_at=stamp, **common))
            if i < users:
                found.append(ScoreV3_Numeric(id=f"thumbs-{i}", name="correctness", value=1.0, source="API",
                                             subject=subject, timestamp=stamp, created_at=stamp, updated_at=stamp,
                                             **common))
        else:   # the v2 scores API: traceId on each score
            found.append(Score_Boolean(id=f"alice-{i}", trace_id=trace, name="correctness", value=float(value),
                                       string_value=str(value), source="ANNOTATION", author_user_id="user-alice",
                                       queue_id="queue-1",
                                       timestamp=stamp, created_at=stamp, updated_at=changed, comment="read it",
                                       environment="production"))
    if version == 3:
        stamp = at(300)
        found += [
            ScoreV3_Numeric(id="inner", name="correctness", value=1.0, source="EVAL", metadata={"model": "gpt-4o-mini"},
                            subject=ScoreSubjectV3_Observation(id="generate-0", trace_id="trace-000"), timestamp=stamp,
                            created_at=stamp, updated_at=stamp, **common),
            ScoreV3_Numeric(id="session", name="correctness", value=1.0, source="ANNOTATION",
                            author_user_id="user-alice", subject=ScoreSubjectV3_Session(id="session-1"),
                            timestamp=stamp, created_at=stamp, updated_at=stamp, **common),
            ScoreV3_Text(id="note", name="correctness", value="fine", source="ANNOTATION", author_user_id="user-alice",
                         subject=ScoreSubjectV3_Trace(id="trace-001"), timestamp=stamp, created_at=stamp,
                         updated_at=stamp, **common),
            ScoreV3_Correction(id="fix", name="correctness", value="The answer is 4.", source="ANNOTATION",
                               author_user_id="user-alice", subject=ScoreSubjectV3_Trace(id="trace-002"),
                               timestamp=stamp, created_at=stamp, updated_at=stamp, **common)]
    return found

with open(out + "/scores.json", "w") as f:
    f.write(GetScoresV3Response(data=scores(3), meta=GetScoresV3Meta(limit=100)).json())
with open(out + "/scores-v2-later.jsonl", "w") as f:   # later, alice changed her mind on trace 1
    f.write("\\n".join(s.json() for s in scores(2, flip=1)) + "\\n")
print(json.dumps({"observations": len(observations)}))
"""


@pytest.fixture(scope="module")
def langfuse_files(tmp_path_factory):
    need(LANGFUSE_PYTHON.exists(), f"the Langfuse SDK ({LANGFUSE_PYTHON}; run scripts/install-langfuse.sh)")
    folder = tmp_path_factory.mktemp("langfuse")
    (folder / "export.py").write_text(LANGFUSE_EXPORT)
    done = subprocess.run(
        [
            str(LANGFUSE_PYTHON),
            "export.py",
            json.dumps(HUMAN),
            json.dumps({k: sorted(v) for k, v in MISSES.items()}),
            str(USERS),
            str(folder),
        ],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONNOUSERSITE": "1", "LANGFUSE_TRACING_ENABLED": "false"},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return folder


def test_langfuse_annotations_are_humans_evals_judges_and_api_scores_wait_for_a_word(langfuse_files, tmp_path):
    folder = new_campaign(tmp_path)
    doc = json.loads(
        run(
            "import",
            "langfuse",
            str(folder),
            "--traces",
            str(langfuse_files / "observations.jsonl"),
            "--scores",
            str(langfuse_files / "scores.json"),
            "--json",
        )
    )
    assert doc["cases"]["added"] == N
    assert doc["by_metric"] == {"correctness": {"human": N, "judge": 2 * N}}
    assert set(doc["raters"]) == {"user-alice", *MISSES}
    reasons = {g["reason"]: g["count"] for g in doc["skipped_by_reason"]}
    assert (
        reasons[
            "source API holds whatever an application sent (user feedback or its own evaluations): say which "
            "with --api-scores human or --api-scores judge"
        ]
        == USERS
    )
    assert reasons["a score of an observation inside the trace, not of the trace"] == 1
    assert reasons["a score of a session, not of a trace"] == 1
    assert reasons["a text score, not a rating"] == reasons["a correction score, not a rating"] == 1
    c = load_campaign(folder)
    case = c.cases["trace-000"]
    assert case["input"] == "question 0?" and case["actual_output"] == "The answer to question 0"
    assert case["retrieval_context"] == ["Passage 0.", "Another passage."]
    assert case["metadata"]["release"] == "v2" and case["metadata"]["time"].startswith("2026-11-30T09:00")
    alice = c.ratings[c.ratings["rater"] == "user-alice"]
    assert alice["rater_kind"].eq("human").all() and set(alice["reason"]) == {"read it"}
    check_kappas(folder)
    other = tmp_path / "other"
    run("init", str(other), "--metric", "correctness")
    with_thumbs = json.loads(
        run(
            "import",
            "langfuse",
            str(other),
            "--traces",
            str(langfuse_files / "observations.jsonl"),
            "--scores",
            str(langfuse_files / "scores.json"),
            "--api-scores",
            "human",
            "--json",
        )
    )
    assert with_thumbs["raters"]["langfuse-api"] == {
        "kind": "human",
        "ratings": USERS,
        "metrics": ["correctness"],
        "model": None,
    }


def test_langfuse_imports_are_idempotent_and_a_later_score_is_a_revision(langfuse_files, tmp_path):
    folder = new_campaign(tmp_path)
    args = ("import", "langfuse", str(folder), "--traces", str(langfuse_files / "observations.jsonl"))
    run(*args, "--scores", str(langfuse_files / "scores.json"))
    files = written(folder)
    again = json.loads(run(*args, "--scores", str(langfuse_files / "scores.json"), "--json"))
    assert again["ratings"]["new"] == again["ratings"]["changed"] == 0 and written(folder) == files
    later = json.loads(run(*args, "--scores", str(langfuse_files / "scores-v2-later.jsonl"), "--json"))
    assert later["ratings"]["changed"] == 1 and later["ratings"]["unchanged"] == N - 1
    assert later["ratings"]["absent_kept"] == 2 * N  # the judges' scores are not in this file: they stay
    store = ImportStore(folder)
    history = [h["value"] for h in store.history() if h["case_id"] == "trace-001" and h["rater"] == "user-alice"]
    store.close()
    assert history == [float(HUMAN[1]), float(not HUMAN[1])]
    c = load_campaign(folder)
    assert len(c.ratings[c.ratings["rater_kind"] == "judge"]) == 2 * N
