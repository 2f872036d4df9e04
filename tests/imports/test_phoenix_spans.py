"""calibrate import phoenix against a real Phoenix server on 127.0.0.1, on traces logged with OpenTelemetry
through phoenix.otel and annotations logged with Phoenix's own client: two judges of different models that
disagree with the human on known cases, one named by its identifier and one by its metadata, a label-only
judge, a child span's annotation (skipped), a trace annotation, and an annotation changed in Phoenix."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from sklearn.metrics import cohen_kappa_score

from calibrate import load_campaign
from calibrate.cli import main
from calibrate.imports.store import ImportStore
from tests.imports.common import run

N = 40
HUMAN = [0 if i % 4 == 0 else 1 for i in range(N)]
MISSES = {"gpt-4o-mini": {1, 5, 12, 33}, "haiku-judge": set(range(0, N, 4)) | {3, 7, 18}}

LOG = """
import json, sys
from phoenix.client import Client
from phoenix.otel import register

human, misses = json.loads(sys.argv[1]), json.loads(sys.argv[2])
provider = register(project_name="rag-app", endpoint=URL + "/v1/traces", batch=False,
                    set_global_tracer_provider=False, verbose=False)
tracer = provider.get_tracer("calibrate-test")
roots, children, traces = [], [], []
for i in range(len(human)):
    with tracer.start_as_current_span("answer", openinference_span_kind="chain") as root:
        root.set_input(f"question {i}?")
        with tracer.start_as_current_span("retrieve", openinference_span_kind="retriever") as retriever:
            retriever.set_input(f"question {i}?")
            retriever.set_attribute("retrieval.documents.0.document.content", f"Passage about {i}.")
            retriever.set_attribute("retrieval.documents.1.document.content", "Another passage.")
            children.append(format(retriever.get_span_context().span_id, "016x"))
        root.set_output(f"The answer to {i}.")
        roots.append(format(root.get_span_context().span_id, "016x"))
        traces.append(format(root.get_span_context().trace_id, "032x"))
provider.force_flush()
client = Client(base_url=URL)
for i, (span, label) in enumerate(zip(roots, human)):
    client.spans.add_span_annotation(span_id=span, annotation_name="correctness", annotator_kind="HUMAN",
                                     score=float(label), identifier="alice", sync=True)
    miss = misses["gpt-4o-mini"]
    client.spans.add_span_annotation(span_id=span, annotation_name="correctness", annotator_kind="LLM",
                                     score=float(bool(label) != (i in miss)), explanation="by the rubric",
                                     metadata={"model": "gpt-4o-mini"}, sync=True)
    miss = misses["haiku-judge"]
    client.spans.add_span_annotation(span_id=span, annotation_name="correctness", annotator_kind="LLM",
                                     label="correct" if bool(label) != (i in miss) else "incorrect",
                                     identifier="haiku-judge", sync=True)
client.spans.add_span_annotation(span_id=children[0], annotation_name="relevance", annotator_kind="LLM",
                                 score=1.0, identifier="doc-judge", sync=True)
client.spans.add_span_annotation(span_id=roots[1], annotation_name="correctness", annotator_kind="HUMAN",
                                 label="meh", identifier="carol", sync=True)
print(json.dumps({"traces": traces, "roots": roots}))
"""

CHANGE = """
import json, sys
from phoenix.client import Client
client = Client(base_url=URL)
client.spans.add_span_annotation(span_id=sys.argv[1], annotation_name="correctness", annotator_kind="HUMAN",
                                 score=float(sys.argv[2]), identifier="alice", sync=True)
print(json.dumps(True))
"""


@pytest.fixture(scope="module")
def logged(phoenix_server):
    return phoenix_server.client(LOG, json.dumps(HUMAN), json.dumps({k: sorted(v) for k, v in MISSES.items()}))


def test_phoenix_traces_and_annotations_import_and_kappa_is_sklearns(phoenix_server, logged, tmp_path):
    folder = tmp_path / "campaign"
    run("init", str(folder), "--metric", "correctness")
    args = ["import", "phoenix", str(folder), "--endpoint", phoenix_server.url, "--project", "rag-app"]
    out = run(*args)
    assert "cases: 40 added" in out and "ratings: 120 new" in out
    assert "an annotation of a child span" in out and "its label 'meh' reads as neither pass nor fail" in out
    c = load_campaign(folder)
    assert sorted(c.cases) == sorted(logged["traces"])
    case = c.cases[logged["traces"][2]]
    assert case["input"] == "question 2?" and case["actual_output"] == "The answer to 2."
    assert case["retrieval_context"] == ["Passage about 2.", "Another passage."]
    assert case["metadata"]["span_id"] == logged["roots"][2] and case["metadata"]["time"].startswith("20")
    assert set(c.ratings.loc[c.ratings["rater_kind"] == "human", "rater"]) == {"alice"}
    doc = json.loads(run("stats", str(folder), "--json", "--n-boot", "0"))
    judges = {j["judge"]: j for j in doc["metrics"][0]["judges"]}
    assert set(judges) == set(MISSES)  # named by metadata.model, and by identifier
    for judge, missed in MISSES.items():
        verdicts = [int(bool(h) != (i in missed)) for i, h in enumerate(HUMAN)]
        assert judges[judge]["kappa"]["estimate"] == pytest.approx(cohen_kappa_score(HUMAN, verdicts), abs=1e-12)
    assert judges["gpt-4o-mini"]["family"] == "gpt"
    # importing again changes nothing; an annotation changed in Phoenix (an upsert) is a new revision
    files = {p.name: p.read_bytes() for p in folder.iterdir() if p.suffix in (".csv", ".jsonl")}
    again = json.loads(run(*args, "--json"))
    assert again["ratings"]["new"] == 0 and again["ratings"]["unchanged"] == 120
    assert {p.name: p.read_bytes() for p in folder.iterdir() if p.suffix in (".csv", ".jsonl")} == files
    phoenix_server.client(CHANGE, logged["roots"][5], str(1.0 - HUMAN[5]))
    doc = json.loads(run(*args, "--json"))
    assert doc["ratings"]["changed"] == 1 and doc["ratings"]["unchanged"] == 119
    store = ImportStore(folder)
    history = [h["value"] for h in store.history(logged["traces"][5]) if h["rater"] == "alice"]
    store.close()
    assert history == [float(HUMAN[5]), 1.0 - HUMAN[5]]


def test_a_missing_project_is_named_with_those_there(phoenix_server, logged, tmp_path):
    folder = tmp_path / "campaign"
    run("init", str(folder), "--metric", "correctness")
    result = CliRunner().invoke(
        main, ["import", "phoenix", str(folder), "--endpoint", phoenix_server.url, "--project", "rag-ap"]
    )
    assert result.exit_code == 2 and "no project of that name (it has" in result.output and "'rag-app'" in result.output


WEIRD = "rag app/../x"  # a project name with a space, a slash and a walk up
LOG_WEIRD = """
import json, sys
from phoenix.otel import register
provider = register(project_name=sys.argv[1], endpoint=URL + "/v1/traces", batch=False,
                    set_global_tracer_provider=False, verbose=False)
tracer = provider.get_tracer("calibrate-test")
for i in range(2):
    with tracer.start_as_current_span("answer", openinference_span_kind="chain") as root:
        root.set_input(f"odd question {i}?")
        root.set_output(f"odd answer {i}.")
provider.force_flush()
print(json.dumps(True))
"""


def test_a_project_name_with_a_space_a_slash_or_dots_is_found_and_never_becomes_a_path(
    phoenix_server, logged, tmp_path
):
    phoenix_server.client(LOG_WEIRD, WEIRD)
    folder = tmp_path / "campaign"
    run("init", str(folder), "--metric", "correctness")
    doc = json.loads(
        run("import", "phoenix", str(folder), "--endpoint", phoenix_server.url, "--project", WEIRD, "--json")
    )
    assert doc["cases"]["added"] == 2
    assert sorted(c["input"] for c in load_campaign(folder).cases.values()) == ["odd question 0?", "odd question 1?"]


# ---------------------------------------------------------------- a Phoenix stand-in that attacks the import
import time as _time  # noqa: E402

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from calibrate.base.http import HttpPolicy  # noqa: E402
from calibrate.imports.phoenix_spans import PhoenixClient, PhoenixError, read_phoenix_project  # noqa: E402
from calibrate.imports.records import SourceBatch  # noqa: E402
from tests.base.adversary import Adversary  # noqa: E402
from tests.imports.test_mlflow_traces import mutate_json  # noqa: E402

KEY = "zq81PLmv42Wt-phoenix-key"
PID = "UHJvamVjdDox"
PROJECTS, SPANS = "/v1/projects", f"/v1/projects/{PID}/spans"
SPAN_NOTES, TRACE_NOTES = f"/v1/projects/{PID}/span_annotations", f"/v1/projects/{PID}/trace_annotations"


#: what the stand-in answers, by path: one trace, its retriever span, a human's and a judge's annotation
REPLIES = {
    PROJECTS: {"data": [{"id": PID, "name": "rag-app"}], "next_cursor": None},
    SPANS: {
        "data": [
            {
                "context": {"trace_id": "t0", "span_id": "s0"},
                "parent_id": None,
                "span_kind": "CHAIN",
                "start_time": "2025-01-01T00:00:00Z",
                "attributes": {"input.value": "q?", "output.value": "a."},
            },
            {
                "context": {"trace_id": "t0", "span_id": "s1"},
                "parent_id": "s0",
                "span_kind": "RETRIEVER",
                "attributes": {"retrieval.documents.0.document.content": "passage"},
            },
        ],
        "next_cursor": None,
    },
    SPAN_NOTES: {
        "data": [
            {
                "id": "n0",
                "name": "correctness",
                "span_id": "s0",
                "annotator_kind": "HUMAN",
                "identifier": "alice",
                "result": {"score": 1.0},
            },
            {
                "id": "n1",
                "name": "correctness",
                "span_id": "s0",
                "annotator_kind": "LLM",
                "metadata": {"model": "gpt-4o"},
                "result": {"label": "incorrect", "explanation": "why"},
            },
        ],
        "next_cursor": None,
    },
    TRACE_NOTES: {
        "data": [
            {"id": "n2", "name": "correctness", "trace_id": "t0", "annotator_kind": "CODE", "result": {"score": 0}}
        ],
        "next_cursor": None,
    },
}


def fake_phoenix(server: Adversary) -> None:
    for path, reply in REPLIES.items():
        server.json(path, reply)


@pytest.mark.parametrize("status", [302, 307])
def test_the_phoenix_key_never_follows_a_redirect_to_another_server(tmp_path, monkeypatch, status):
    monkeypatch.setenv("PHOENIX_API_KEY", KEY)
    folder = tmp_path / "campaign"
    run("init", str(folder), "--metric", "correctness")
    with Adversary() as phoenix, Adversary() as elsewhere:
        elsewhere.json("*", {"data": "unexpected"})
        phoenix.route("*", lambda h: h.redirect(status, elsewhere.url + h.path))
        result = CliRunner().invoke(
            main, ["import", "phoenix", str(folder), "--endpoint", phoenix.url, "--project", "rag-app"]
        )
        assert result.exit_code == 2 and f"to {elsewhere.url}/v1/projects" in result.output
        assert "Traceback" not in result.output and KEY not in result.output
        assert elsewhere.seen == [] and phoenix.seen[0]["headers"]["authorization"] == f"Bearer {KEY}"


MALFORMED = {
    "a null span context": (SPANS, {"data": [{"context": None, "parent_id": None}]}),
    "a span without its span id": (SPANS, {"data": [{"context": {"trace_id": "t0"}}]}),
    "a list for an object": (PROJECTS, [{"id": PID, "name": "rag-app"}]),
    "a project without an id": (PROJECTS, {"data": [{"name": "rag-app"}]}),
    "annotations as an object": (SPAN_NOTES, {"data": {"id": "n0"}}),
    "a result that is a list": (SPAN_NOTES, {"data": [{"id": "n0", "span_id": "s0", "result": [1.0]}]}),
    "not UTF-8": (SPANS, b'{"data": ["\xff"]}'),
    "not JSON": (TRACE_NOTES, b"Internal Server Error"),
}


@pytest.mark.parametrize("what", sorted(MALFORMED))
def test_a_malformed_phoenix_reply_is_an_error_naming_the_request_and_the_field(what):
    path, reply = MALFORMED[what]
    with Adversary() as phoenix:
        fake_phoenix(phoenix)
        phoenix.json(path, reply)
        with pytest.raises(PhoenixError) as caught:
            read_phoenix_project(phoenix.url, "rag-app")
    assert f"Phoenix at {phoenix.url}: GET {path}" in str(caught.value), str(caught.value)
    assert caught.value.kind in ("document", "encoding")


def test_phoenix_cursors_that_loop_or_never_end_are_errors():
    with Adversary() as phoenix:
        fake_phoenix(phoenix)
        assert len(read_phoenix_project(phoenix.url, "rag-app").ratings) == 3
        phoenix.json(SPANS, {"data": [], "next_cursor": "again"})
        with pytest.raises(PhoenixError, match="next-page token 'again' again"):
            read_phoenix_project(phoenix.url, "rag-app")
        counter = iter(range(10**9))
        phoenix.route(SPAN_NOTES, lambda h: h.send(200, {"data": [], "next_cursor": f"c{next(counter)}"}))
        fake_spans = {"data": [{"context": {"trace_id": "t0", "span_id": "s0"}}], "next_cursor": None}
        phoenix.json(SPANS, fake_spans)
        with pytest.raises(PhoenixError, match="more than 20 pages"):
            read_phoenix_project(
                phoenix.url, "rag-app", client=PhoenixClient(phoenix.url, policy=HttpPolicy(max_pages=20))
            )
        phoenix.route(SPANS, lambda h: h.trickle(every_s=0.1))
        started = _time.monotonic()
        with pytest.raises(PhoenixError, match="no complete reply within 1 s"):
            read_phoenix_project(
                phoenix.url, "rag-app", client=PhoenixClient(phoenix.url, policy=HttpPolicy(timeout_s=1))
            )
        assert _time.monotonic() - started < 4


@pytest.fixture(scope="module")
def attacked_phoenix():
    with Adversary() as phoenix:
        yield phoenix


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_phoenix_reply_gives_a_batch_or_a_clear_error(attacked_phoenix, data):
    for path, reply in REPLIES.items():
        attacked_phoenix.json(path, mutate_json(data, reply))
    try:
        batch = read_phoenix_project(
            attacked_phoenix.url, "rag-app", client=PhoenixClient(attacked_phoenix.url, policy=HttpPolicy(max_pages=5))
        )
    except PhoenixError as exc:
        assert f"Phoenix at {attacked_phoenix.url}" in str(exc) or "project 'rag-app'" in str(exc)
        return
    assert isinstance(batch, SourceBatch)
    cases = {c["case_id"] for c in batch.cases}
    assert all(r.case_id in cases for r in batch.ratings)
