"""calibrate collect against a real small RAG service (BM25 over a shipped corpus) on 127.0.0.1."""

import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from calibrate.base.errors import CampaignError
from calibrate.campaign.service import ContractError, ServiceContract, load_contract
from calibrate.cases.collect import STORE_NAME, collect
from calibrate.judges.calls import CallPolicy
from tests.conftest import run_cli
from tests.servers.rag_service import RagService

EXE = Path(sys.executable).parent / "calibrate"
QUESTIONS = [
    "When was the Eiffel Tower completed?",
    "How many hearts does an octopus have?",
    "What is the highest mountain?",
    "Which river carries the most water?",
    "Who developed the printing press?",
    "How fast is light in a vacuum?",
]


def campaign(tmp_path, url, timeout=2.0, extra=""):
    folder = tmp_path / "campaign"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "campaign.toml").write_text(f'''
name = "collected"
[metrics.faithfulness]
scale = "binary"
[service]
url = "{url}"
method = "POST"
headers = {{ Authorization = "Bearer ${{RAG_TOKEN}}" }}
body = {{ query = "{{input}}", top_k = 3, session = "{{case_id}}"{extra} }}
answer = "data.answer"
contexts = "data.chunks[*].text"
context_ids = "data.chunks[*].id"
timeout_s = {timeout}
''')
    return folder


def goldens(tmp_path, questions, name="goldens.jsonl"):
    path = tmp_path / name
    path.write_text(
        "".join(
            json.dumps({"case_id": f"g{i:02d}", "input": q, "metadata": {"topic": "facts"}}) + "\n"
            for i, q in enumerate(questions)
        )
    )
    return path


def run(*args, env_token="s3cret-token"):
    return run_cli(*args, env={"RAG_TOKEN": env_token})


def cases_of(folder):
    return [json.loads(line) for line in (folder / "cases.jsonl").read_text().splitlines()]


def test_a_full_collection_then_a_rerun_that_asks_nothing(tmp_path):
    with RagService() as service:
        folder = campaign(tmp_path, service.url)
        first = run("collect", folder, "--goldens", goldens(tmp_path, QUESTIONS), "--json")
        assert first.returncode == 0, first.stderr
        doc = json.loads(first.stdout)
        assert (doc["asked"], doc["collected"], doc["failed"], doc["cases"]) == (6, 6, 0, 6)
        cases = {c["case_id"]: c for c in cases_of(folder)}
        eiffel = cases["g00"]
        assert eiffel["actual_output"].startswith("The Eiffel Tower") and len(eiffel["retrieval_context"]) == 3
        assert eiffel["metadata"]["context_ids"][0] == "doc-00" and eiffel["metadata"]["topic"] == "facts"
        assert eiffel["metadata"]["service"]["status"] == 200 and eiffel["metadata"]["service"]["latency_s"] > 0
        assert "octopus" in cases["g01"]["actual_output"].lower()
        requests = len(service.bodies)
        again = json.loads(run("collect", folder, "--goldens", goldens(tmp_path, QUESTIONS), "--json").stdout)
        assert again["asked"] == 0 and again["already_collected"] == 6 and len(service.bodies) == requests
    # the token went out in the header and is stored nowhere
    for path in folder.iterdir():
        assert b"s3cret-token" not in path.read_bytes(), path
    # the collected campaign is ready to sample for labelling and to judge, before any rating exists
    from calibrate import load_campaign
    from calibrate.sampling.designs import draw_sample

    collected = load_campaign(folder)
    assert len(collected.cases) == 6 and collected.ratings.empty
    assert len(draw_sample(collected, 3, seed=1).case_ids) == 3


def test_replies_that_break_the_contract_are_errors_of_their_golden(tmp_path):
    questions = QUESTIONS[:3] + ["Eiffel [[notjson]]", "Eiffel [[noanswer]]", "Eiffel [[badcontexts]]"]
    with RagService() as service:
        folder = campaign(tmp_path, service.url)
        result = run("collect", folder, "--goldens", goldens(tmp_path, questions))
    assert result.returncode == 0, result.stderr
    assert "asked 6 golden(s): 3 collected, 3 failed" in result.stdout
    assert "golden g03: the reply is not JSON: 'Internal answer" in result.stdout
    assert "golden g04: no answer at 'data.answer': found nothing (reply keys: data)" in result.stdout
    assert "golden g05: contexts at 'data.chunks[*].text': expected a list of strings, found nothing" in result.stdout
    assert len(cases_of(folder)) == 3


def test_a_service_that_fails_some_calls(tmp_path):
    questions = ["Eiffel [[429x2]]", "Octopus [[500x1]]", "Everest [[slowx1]]", "Amazon [[500x9]]", "Nile"]
    with RagService(slow_s=1.5) as service:
        folder = campaign(tmp_path, service.url, timeout=0.5)
        doc = collect(
            folder,
            [json.loads(line) for line in goldens(tmp_path, questions).read_text().splitlines()],
            contract=_with_token(load_contract(folder)),
            policy=CallPolicy(concurrency=4, timeout_s=0.5, retries=3, backoff_s=0.01),
        )
        assert service.seen["g00"] == 3 and service.seen["g01"] == 2 and service.seen["g02"] == 2
    assert (doc["collected"], doc["failed"]) == (4, 1)
    assert (
        doc["errors"][0]["error"].startswith("golden g03: HTTP 500 from the server")
        and "after 4 attempts" in doc["errors"][0]["error"]
    )
    # the failed golden is asked again on the next run, the others are not
    with RagService() as service:
        contract = _with_token(ServiceContract(**{**load_contract(folder).__dict__, "url": service.url}))
        again = collect(
            folder,
            [json.loads(line) for line in goldens(tmp_path, questions).read_text().splitlines()],
            contract=contract,
            policy=CallPolicy(backoff_s=0.01, retries=0),
        )
    assert again["asked"] == 1 and again["failed"] == 1  # still failing: 500 for its first 9 calls


def _with_token(contract):
    os.environ["RAG_TOKEN"] = "t"
    return contract


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_an_interrupted_run_resumes_without_duplicate_or_loss(tmp_path):
    port = _free_port()
    service = subprocess.Popen(
        [sys.executable, "-m", "tests.servers.rag_service", "0.15", str(port)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).parents[2],
    )
    try:
        url = service.stdout.readline().strip()
        folder = campaign(tmp_path, url)
        questions = [f"Question {i} about the Eiffel Tower" for i in range(30)]
        path = goldens(tmp_path, questions)
        env = {**os.environ, "RAG_TOKEN": "t"}
        first = subprocess.Popen(
            [str(EXE), "collect", str(folder), "--goldens", str(path), "--concurrency", "2"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        store = folder / STORE_NAME
        deadline = time.time() + 60
        while time.time() < deadline:
            if store.exists() and _successes(store) >= 5:
                break
            time.sleep(0.05)
        first.send_signal(signal.SIGKILL)
        first.wait()
        stored = _successes(store)
        assert 5 <= stored < 30
        second = run("collect", folder, "--goldens", path, "--json", env_token="t")
        doc = json.loads(second.stdout)
        assert doc["asked"] == 30 - stored and doc["collected"] == 30 - stored
    finally:
        service.kill()
        service.wait()
    with sqlite3.connect(store) as db:
        per_golden = dict(db.execute("SELECT case_id, COUNT(*) FROM replies WHERE error IS NULL GROUP BY case_id"))
    assert len(per_golden) == 30 and set(per_golden.values()) == {1}
    assert sorted(c["case_id"] for c in cases_of(folder)) == [f"g{i:02d}" for i in range(30)]


def _successes(store: Path) -> int:
    try:
        with sqlite3.connect(store) as db:
            return db.execute("SELECT COUNT(*) FROM replies WHERE error IS NULL").fetchone()[0]
    except sqlite3.Error:
        return 0


def test_template_substitution_escapes_what_json_needs(tmp_path):
    tricky = 'He said "why?" \\ then\nleft — naïve 😀 {not a field} \t end'
    with RagService() as service:
        folder = campaign(
            tmp_path, service.url, extra=', prompt = "Q: {input} / id {case_id}", topic = "{metadata[topic]}"'
        )
        result = run("collect", folder, "--goldens", goldens(tmp_path, [tricky]), "--json")
        assert result.returncode == 0, result.stderr
        body = json.loads(service.bodies[0])
    assert body["query"] == tricky and body["prompt"] == f"Q: {tricky} / id g00" and body["topic"] == "facts"
    assert body["top_k"] == 3


def test_dry_run_shows_the_request_and_the_extraction_and_stores_nothing(tmp_path):
    with RagService() as service:
        folder = campaign(tmp_path, service.url)
        result = run("collect", folder, "--goldens", goldens(tmp_path, QUESTIONS), "--dry-run")
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["request"]["headers"] == {"Authorization": "Bearer ${RAG_TOKEN}"}
    assert doc["request"]["body"] == {"query": QUESTIONS[0], "top_k": 3, "session": "g00"}
    assert doc["extracted"]["answer"].startswith("The Eiffel Tower") and doc["status"] == 200
    assert sorted(p.name for p in folder.iterdir()) == ["campaign.toml"]


def test_refresh_keeps_the_earlier_replies_as_a_run(tmp_path):
    with RagService() as service:
        folder = campaign(tmp_path, service.url)
        first = json.loads(run("collect", folder, "--goldens", goldens(tmp_path, QUESTIONS[:2]), "--json").stdout)
        second = json.loads(
            run("collect", folder, "--goldens", goldens(tmp_path, QUESTIONS[:2]), "--refresh", "--json").stdout
        )
    assert second["asked"] == 2 and second["run_id"] != first["run_id"]
    with sqlite3.connect(folder / STORE_NAME) as db:
        runs = db.execute("SELECT run_id, COUNT(*) FROM replies GROUP BY run_id ORDER BY run_id").fetchall()
    assert [n for _, n in runs] == [2, 2]
    assert {c["metadata"]["service"]["run_id"] for c in cases_of(folder)} == {second["run_id"]}


def test_a_python_function_as_the_service(tmp_path):
    from rank_bm25 import BM25Okapi

    from tests.servers.rag_service import CORPUS, tokens

    docs = [json.loads(line)["text"] for line in CORPUS.read_text().splitlines()]
    bm25 = BM25Okapi([tokens(d) for d in docs])

    def ask(question: str):
        top = bm25.get_top_n(tokens(question), docs, n=2)
        return top[0], top

    async def ask_async(question: str):
        return ask(question)

    folder = tmp_path / "campaign"
    folder.mkdir()
    items = [{"case_id": f"g{i}", "input": q} for i, q in enumerate(QUESTIONS[:3])]
    doc = collect(folder, items, function=ask)
    assert (doc["collected"], doc["cases"]) == (3, 3)
    assert cases_of(folder)[0]["retrieval_context"][0].startswith("The Eiffel Tower")
    assert collect(folder, items, function=ask_async, refresh=True)["collected"] == 3
    bad = collect(folder, [{"case_id": "x", "input": "?"}], function=lambda q: "just text")
    assert bad["failed"] == 1 and "expected (answer, contexts)" in bad["errors"][0]["error"]


def test_contract_and_conflict_errors_name_what_is_wrong(tmp_path):
    folder = tmp_path / "c"
    folder.mkdir()
    (folder / "campaign.toml").write_text(
        'name = "x"\n[metrics.f]\nscale = "binary"\n[service]\nurl = "ftp://x"\n'
        'answer = "data.[answer"\ncontexts = "data.chunks"\nretry = 3\n'
    )
    with pytest.raises(CampaignError) as caught:
        load_contract(folder)
    text = str(caught.value)
    assert "field 'service.url'" in text and "field 'service.answer'" in text and "field 'service.retry'" in text
    with RagService() as service:
        folder = campaign(tmp_path, service.url)
        (folder / "cases.jsonl").write_text(
            json.dumps({"case_id": "g00", "input": "imported", "actual_output": "x"}) + "\n"
        )
        result = run("collect", folder, "--goldens", goldens(tmp_path, QUESTIONS[:1]))
    assert (
        result.returncode == 2
        and "case g00 is already in cases.jsonl and did not come from the service" in result.stderr
    )
    assert json.loads((folder / "cases.jsonl").read_text())["input"] == "imported"
    with pytest.raises(ContractError, match=r"asks for {nope}"):
        ServiceContract("http://x", "a", "c", body={"q": "{nope}"}).render({"input": "?"})


def test_a_get_service_takes_the_body_as_query_parameters(tmp_path):
    with RagService() as service:
        folder = campaign(tmp_path, service.url)
        toml = (folder / "campaign.toml").read_text().replace('method = "POST"', 'method = "GET"')
        (folder / "campaign.toml").write_text(toml)
        result = run("collect", folder, "--goldens", goldens(tmp_path, ['Eiffel & "tower"?']), "--json")
        assert result.returncode == 0, result.stderr
        assert json.loads(service.bodies[0]) == {"query": 'Eiffel & "tower"?', "top_k": "3", "session": "g00"}
    assert cases_of(folder)[0]["actual_output"].startswith("The Eiffel Tower")


def test_requests_per_minute_paces_the_calls(tmp_path):
    with RagService() as service:
        folder = campaign(tmp_path, service.url)
        start = time.perf_counter()
        doc = collect(
            folder,
            [json.loads(line) for line in goldens(tmp_path, QUESTIONS[:5]).read_text().splitlines()],
            contract=_with_token(load_contract(folder)),
            policy=CallPolicy(concurrency=5, requests_per_minute=600),
        )  # one every 0.1 s
        elapsed = time.perf_counter() - start
    assert doc["collected"] == 5 and elapsed >= 0.4


# Issue 24: collect reads the campaign's cases.jsonl (cases from elsewhere, kept beside the collected ones)
# through calibrate.base.documents, as load_campaign does: a line ends at "\n" only, and a line that is not
# a case is an error naming the file and the line, before any call (was a JSONDecodeError or AttributeError
# traceback).
def test_collect_keeps_cases_from_elsewhere_whatever_their_text(tmp_path):
    folder = tmp_path / "campaign"
    folder.mkdir()
    other = {"case_id": "imported", "input": "a\u2028b\u2029c\x85d", "metadata": {"note": "e\u2028f"}}
    (folder / "cases.jsonl").write_text(json.dumps(other, ensure_ascii=False) + "\n", encoding="utf-8")
    doc = collect(folder, [{"case_id": "g0", "input": "q"}], function=lambda q: ("answer", ["chunk"]))
    assert doc["collected"] == 1
    written = [json.loads(line) for line in (folder / "cases.jsonl").read_text(encoding="utf-8").split("\n") if line]
    assert {c["case_id"]: c for c in written}["imported"] == other and len(written) == 2


@pytest.mark.parametrize(
    "line, words",
    [
        (b"[1, 2]", "cases.jsonl, line 2: Input should be an object"),
        (b'{"case_id": "g0", "metadata": [1]}', "cases.jsonl, line 2, field 'metadata'"),
        (b'{"case_id": "g0", "metadata": {"service": "x"}}', "cases.jsonl, line 2, field 'metadata.service'"),
        (b'{"case_id": ', "cases.jsonl, line 2: not valid JSON"),
        (b"[" * 300 + b"]" * 300, "cases.jsonl, line 2: nested deeper than 200 levels"),
    ],
)
def test_a_damaged_cases_file_stops_collect_before_any_call(tmp_path, line, words):
    folder = tmp_path / "campaign"
    folder.mkdir()
    (folder / "cases.jsonl").write_bytes(b'{"case_id": "other", "input": "q"}\n' + line + b"\n")
    calls = []
    with pytest.raises(CampaignError) as caught:
        collect(folder, [{"case_id": "g0", "input": "q"}], function=lambda q: calls.append(q) or ("a", ["c"]))
    assert words in str(caught.value) and not calls
