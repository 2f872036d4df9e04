"""calibrate.base.http against an adversarial server on 127.0.0.1: credentials never follow a redirect to
another origin (sync client, async client, the httpx client given to SDKs), a trickled reply fails at
the deadline, a huge reply at the cap, endless pages at their bound, a malformed reply names the server,
the request and the field, names never change a URL's path; and a hypothesis attack of random replies
gives a reply or an HttpError, never another exception or a hang."""

from __future__ import annotations

import asyncio
import base64
import json
import time
import urllib.parse

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import JsonValue

from calibrate.base.documents import Schema
from calibrate.base.http import (
    AsyncHttp,
    HttpClient,
    HttpError,
    HttpPolicy,
    Reply,
    httpx_client,
    path_segment,
    run_sync,
)
from tests.base.adversary import Adversary

KEY = "zq81PLmv42Wt-local-key"  # shaped like no known key format: only remembering it can redact it
CREDENTIALS = {
    "bearer": {"Authorization": f"Bearer {KEY}"},
    "basic": {"Authorization": "Basic " + base64.b64encode(f"me:{KEY}".encode()).decode()},
    "x-api-key": {"x-api-key": KEY},
}
QUICK = HttpPolicy(timeout_s=1.0, command_timeout_s=30.0, max_reply_bytes=3 * 2**20, max_pages=50)


@pytest.fixture
def servers():
    with Adversary() as first, Adversary() as other:
        yield first, other


def via_client(url: str, path: str, headers: dict, method: str = "GET", policy: HttpPolicy = QUICK):
    body = {"q": "the case's question"} if method in ("POST", "PUT") else None
    return HttpClient(url, name="Tool", headers=headers, policy=policy).send(method, path, body=body)


def via_async(url: str, path: str, headers: dict, method: str = "GET", policy: HttpPolicy = QUICK):
    async def ask():
        http = AsyncHttp(name="Tool", headers=headers, policy=policy)
        try:
            data = b'{"q": "the case\'s question"}' if method in ("POST", "PUT") else None
            return await http.request(method, url + path, data=data)
        finally:
            await http.close()

    return run_sync(ask)


def via_httpx(url: str, path: str, headers: dict, method: str = "GET", policy: HttpPolicy = QUICK):
    client = httpx_client(url, name="Tool", policy=policy)
    try:
        response = client.request(
            method, url + path, headers=headers, content=b'{"q": 1}' if method in ("POST", "PUT") else None
        )
        response.read()
        return response
    finally:
        client.close()


TRANSPORTS = {"client": via_client, "async": via_async, "httpx": via_httpx}


@pytest.mark.parametrize("transport", sorted(TRANSPORTS))
@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
@pytest.mark.parametrize("credential", sorted(CREDENTIALS))
def test_credentials_never_follow_a_redirect_to_another_origin(servers, transport, status, credential):
    first, other = servers
    other.json("/steal", {"experiment": {"experiment_id": "1"}})
    first.route("/api", lambda h: h.redirect(status, other.url + "/steal?sig=s3cr3tsignature"))
    for method in ("GET", "POST"):
        with pytest.raises(HttpError) as caught:
            TRANSPORTS[transport](first.url, "/api", CREDENTIALS[credential], method)
        error = caught.value
        assert error.kind == "redirect" and other.url + "/steal" in str(error), str(error)
        assert "another server" in str(error) and f"if {other.url} is the right server, give its address" in str(error)
        assert "s3cr3tsignature" not in str(error) and KEY not in str(error)
    assert other.seen == []  # nothing, credentials least of all, went there
    assert all(KEY in str(r["headers"]) or "Basic" in str(r["headers"]) for r in first.seen)


@pytest.mark.parametrize("transport", sorted(TRANSPORTS))
def test_a_redirect_to_another_port_or_scheme_is_another_origin(servers, transport):
    first, _ = servers
    port = int(first.url.rsplit(":", 1)[1])
    for target in (
        f"http://127.0.0.1:{port + 1}/x",
        f"https://127.0.0.1:{port}/x",
        f"http://localhost:{port}/x",
        "file:///etc/passwd",
        "//evil.example/x",
    ):
        first.route("/api", lambda h, target=target: h.redirect(302, target))
        with pytest.raises(HttpError, match="another server") as caught:
            TRANSPORTS[transport](first.url, "/api", CREDENTIALS["bearer"])
        assert caught.value.kind == "redirect"


@pytest.mark.parametrize("transport", sorted(TRANSPORTS))
def test_same_origin_redirects_are_followed_a_few_times(servers, transport):
    first, _ = servers
    first.route("/old", lambda h: h.redirect(307, "/new"))
    first.route("/new", lambda h: h.send(200, {"method": h.command, "body": h.body.decode()}))
    reply = TRANSPORTS[transport](first.url, "/old", CREDENTIALS["bearer"], "POST")
    assert (reply.status_code if transport == "httpx" else reply.status) == 200
    new = first.requests_to("/new")
    assert new[0]["method"] == "POST" and new[0]["body"] and new[0]["headers"]["authorization"] == f"Bearer {KEY}"
    first.route("/moved", lambda h: h.redirect(302, "/new"))  # a POST moved by 302 / 303 becomes a GET
    TRANSPORTS[transport](first.url, "/moved", {}, "POST")
    assert first.requests_to("/new")[-1]["method"] == "GET"
    first.route("/loop", lambda h: h.redirect(302, "/loop"))
    with pytest.raises(HttpError, match="redirected more than 3 times"):
        TRANSPORTS[transport](first.url, "/loop", {})
    assert len(first.requests_to("/loop")) == 4


@pytest.mark.parametrize("transport", sorted(TRANSPORTS))
def test_a_trickled_reply_fails_at_the_deadline(servers, transport):
    first, _ = servers
    first.route("/slow", lambda h: h.trickle(every_s=0.1, total=600))  # a minute of one byte at a time
    started = time.monotonic()
    with pytest.raises(HttpError, match="no complete reply within 1 s") as caught:
        TRANSPORTS[transport](first.url, "/slow", {})
    assert caught.value.kind == "timeout" and time.monotonic() - started < 4


@pytest.mark.parametrize("transport", sorted(TRANSPORTS))
def test_a_huge_reply_fails_at_the_cap_as_it_streams(servers, transport):
    first, _ = servers
    first.route("/announced", lambda h: h.send(200, b"{}", length=10**12))
    first.route("/flood", lambda h: h.flood())  # ten gigabytes, without a length
    for path in ("/announced", "/flood"):
        started = time.monotonic()
        with pytest.raises(HttpError, match="more than the 3,145,728 calibrate reads") as caught:
            TRANSPORTS[transport](first.url, path, {})
        assert caught.value.kind == "too_large" and time.monotonic() - started < 5


class Page(Schema):
    items: list[int]
    next: str | None = None


def test_replies_that_cannot_be_read_name_the_server_the_request_and_the_field(servers):
    first, _ = servers
    client = HttpClient(first.url, name="Tool", policy=QUICK)
    where = f"Tool at {first.url}: GET /x"
    cases = {
        b"\xff\xfe{}": "is not UTF-8 text (byte 0xff at position 0)",
        b"<html>login</html>": "not valid JSON",
        b"[" * 100_000 + b"]" * 100_000: "nested deeper than 200 levels",
        b'{"items": {"a": 1}}': "field 'items'",
        b'[{"items": [1]}]': "Input should be an object",
        b'{"items": [1, "two"]}': "field 'items[1]'",
        b"": "not valid JSON",
    }
    for body, said in cases.items():
        first.json("/x", body)
        with pytest.raises(HttpError) as caught:
            client.call("GET", "/x", Page, expected="a page of items")
        assert where in str(caught.value) and said in str(caught.value), str(caught.value)
    first.json("/x", {"items": [1, 2]})
    assert client.call("GET", "/x", Page, expected="a page").items == [1, 2]


def test_an_error_reply_is_said_with_the_servers_words_and_no_secret(servers):
    first, _ = servers
    first.json("/x", {"message": f"invalid token {KEY} for user me"}, status=401)
    with pytest.raises(HttpError) as caught:
        HttpClient(first.url, name="Tool", headers=CREDENTIALS["bearer"], policy=QUICK).call("GET", "/x")
    assert caught.value.status == 401 and "refused GET /x (HTTP 401): invalid token [redacted]" in str(caught.value)
    assert KEY not in str(caught.value)


def test_pages_that_repeat_a_token_or_never_end_are_errors(servers):
    first, _ = servers
    counter = iter(range(10**9))
    first.route("/same", lambda h: h.send(200, {"items": [1], "next": "again"}))
    first.route("/new", lambda h: h.send(200, {"items": [1], "next": f"token-{next(counter)}"}))
    client = HttpClient(first.url, name="Tool", policy=QUICK)

    def read(path):
        def fetch(token):
            page = client.call("GET", path, Page, expected="a page", query=[("cursor", token)] if token else None)
            return page.items, page.next

        return [x for page in client.pages(fetch, request=f"GET {path}") for x in page]

    with pytest.raises(HttpError, match="page 2 gives the next-page token 'again' again"):
        read("/same")
    assert len(first.requests_to("/same")) == 2
    with pytest.raises(HttpError, match="more than 50 pages"):
        read("/new")
    assert len(first.requests_to("/new")) == 50


def test_a_command_of_many_requests_has_its_own_deadline(servers):
    first, _ = servers
    first.route("/slowish", lambda h: (time.sleep(0.3), h.send(200, {"items": []})))
    client = HttpClient(first.url, name="Tool", policy=HttpPolicy(timeout_s=5, command_timeout_s=1.0))
    started = time.monotonic()
    with pytest.raises(HttpError, match="ran past its deadline of 1 s"):
        while True:
            client.call("GET", "/slowish", Page, expected="a page")
    assert time.monotonic() - started < 3


def test_the_client_works_inside_a_running_event_loop(servers):
    first, _ = servers
    first.json("/x", {"items": [3]})

    async def notebook_cell():
        return HttpClient(first.url, name="Tool").call("GET", "/x", Page, expected="a page").items

    assert asyncio.run(notebook_cell()) == [3]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.text(min_size=1, max_size=30).filter(lambda n: not any(0xD800 <= ord(c) <= 0xDFFF for c in n)))
def test_a_name_in_a_path_never_changes_the_path(servers, name):
    first, _ = servers
    first.route("*", lambda h: h.send(200, {"items": []}))
    HttpClient(first.url, name="Tool", policy=QUICK).call("GET", f"/v1/projects/{path_segment(name)}/spans")
    path = first.seen[-1]["path"]
    assert path.startswith("/v1/projects/") and path.endswith("/spans") and path.count("/") == 4, path
    segment = path.split("/")[3]
    assert urllib.parse.unquote(segment) == name and segment not in (".", "..")


REPLY_STATUSES = st.sampled_from([200, 201, 204, 301, 302, 303, 307, 308, 400, 401, 404, 429, 500, 503]) | st.integers(
    200, 599
)
JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)
BODIES = (
    st.binary(max_size=300)
    | JSONISH.map(lambda v: json.dumps(v).encode())
    | st.sampled_from([b"[" * 5000, b'{"items": [1, 2]}', b"\xff" * 10, b'{"items": [1], "next": "n"}'])
)
LOCATIONS = (
    st.none()
    | st.text(alphabet=st.characters(min_codepoint=33, max_codepoint=126), max_size=40)
    | st.sampled_from(["/x", "/elsewhere", "http://127.0.0.1:1/x", "https://evil.example/", ""])
)


@pytest.mark.slow  # 300 replies from a live stand-in: about 50 s
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    status=REPLY_STATUSES,
    body=BODIES,
    location=LOCATIONS,
    short=st.booleans(),
    transport=st.sampled_from(sorted(TRANSPORTS)),
)
def test_any_reply_gives_a_reply_or_an_http_error_never_a_traceback_or_a_hang(
    servers, status, body, location, short, transport
):
    first, other = servers
    headers = {"Content-Type": "application/json"} | ({"Location": location} if location is not None else {})
    first.route("*", lambda h: h.send(status, body, headers, length=len(body) + (5 if short else 0)))
    started = time.monotonic()
    try:
        if transport == "client":
            HttpClient(first.url, name="Tool", headers=CREDENTIALS["bearer"], policy=HttpPolicy(timeout_s=0.5)).call(
                "GET", "/x", Page, expected="a page"
            )
        else:
            TRANSPORTS[transport](first.url, "/x", CREDENTIALS["bearer"], policy=HttpPolicy(timeout_s=0.5))
    except HttpError as exc:
        assert str(exc) and KEY not in str(exc)
    assert time.monotonic() - started < 5
    assert other.seen == []


@given(payload=JSONISH)
@settings(max_examples=200, deadline=None)
def test_any_json_is_read_into_the_schema_or_refused_naming_the_field(payload):
    reply = Reply(200, {}, json.dumps(payload).encode(), "Tool at http://h:1", "GET /x")
    try:
        page = reply.json(Page, expected="a page")
    except HttpError as exc:
        assert exc.kind == "document" and "Tool at http://h:1: GET /x" in str(exc) and exc.problems
    else:
        assert isinstance(page.items, list)
    assert reply.json(JsonValue, expected="anything") == payload
