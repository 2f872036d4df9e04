"""calibrate collect never writes down the service's credentials (the ``${VAR}`` header values) a service
echoes back: not in collect.sqlite's stored reply, answer or contexts, nor in cases.jsonl, whether the
reply is an error (401 echoing the request's headers) or a success (the answer quoting the header), and
whatever the header's name."""

from __future__ import annotations

import json

import pytest

from tests.base.adversary import Adversary
from tests.conftest import run_cli

TOKEN = "rag-Tok3n-0f-the-service"
CUSTOM = "sv7Cred"  # 7 characters: short, but a credential calibrate holds


def campaign(tmp_path, url):
    folder = tmp_path / "campaign"
    folder.mkdir()
    (folder / "campaign.toml").write_text(f'''name = "c"
[metrics.faithfulness]
scale = "binary"
[service]
url = "{url}"
method = "POST"
headers = {{ Authorization = "Bearer ${{RAG_TOKEN}}", X-Svc = "${{SVC_CRED}}" }}
body = {{ query = "{{input}}" }}
answer = "data.answer"
contexts = "data.chunks"
timeout_s = 5
''')
    goldens = tmp_path / "goldens.jsonl"
    goldens.write_text("".join(json.dumps({"case_id": f"g{i}", "input": f"q{i}"}) + "\n" for i in range(3)))
    return folder, goldens


def echo_401(h):
    h.send(401, {"oops": {"headers": dict(h.headers)}})


def echo_200(h):
    token = h.headers["Authorization"].split(" ", 1)[1]
    h.send(
        200,
        {
            "data": {"answer": f"ok {token} and {h.headers['X-Svc']}", "chunks": [f"ctx {h.headers['X-Svc']}"]},
            "debug": {"auth": token, "svc": h.headers["X-Svc"]},
        },
    )


@pytest.mark.parametrize("reply", [echo_401, echo_200])
def test_a_service_echoing_its_credentials_gets_them_stored_nowhere(tmp_path, reply):
    with Adversary() as service:
        service.route("/ask", reply)
        folder, goldens = campaign(tmp_path, service.url + "/ask")
        result = run_cli(
            "collect", folder, "--goldens", goldens, "--retries", "0", env={"RAG_TOKEN": TOKEN, "SVC_CRED": CUSTOM}
        )
    assert result.returncode == 0, result.stderr
    assert len(service.seen) == 3  # the credentials went out
    for secret in (TOKEN, CUSTOM):
        assert secret not in result.stdout + result.stderr
        for path in folder.iterdir():
            assert secret.encode() not in path.read_bytes(), (secret, path.name)
    if reply is echo_200:
        cases = [json.loads(line) for line in (folder / "cases.jsonl").read_text().splitlines()]
        assert [c["actual_output"] for c in cases] == ["ok [redacted] and [redacted]"] * 3
        assert cases[0]["retrieval_context"] == ["ctx [redacted]"]
