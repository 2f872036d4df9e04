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

LOG = '''
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
'''

CHANGE = '''
import json, sys
from phoenix.client import Client
client = Client(base_url=URL)
client.spans.add_span_annotation(span_id=sys.argv[1], annotation_name="correctness", annotator_kind="HUMAN",
                                 score=float(sys.argv[2]), identifier="alice", sync=True)
print(json.dumps(True))
'''


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
    assert set(judges) == set(MISSES)   # named by metadata.model, and by identifier
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
    result = CliRunner().invoke(main, ["import", "phoenix", str(folder), "--endpoint", phoenix_server.url,
                                       "--project", "rag-ap"])
    assert result.exit_code == 2 and "no project of that name (it has" in result.output and "'rag-app'" in result.output
