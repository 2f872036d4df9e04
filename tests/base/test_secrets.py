"""calibrate.base.secrets under attack: a remembered credential is redacted at any length from 4 characters
(shorter ones where a credential stands), in capitals, URL-encoded, base64-encoded or JSON-escaped; and
text cut short for a message is redacted *before* the cut, so that no credential straddling the cut leaves
its first characters (the helpers that shorten outside text: clip, short, Reply.excerpt, an error reply's
message)."""

from __future__ import annotations

import base64
import json
import urllib.parse

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from calibrate.base.documents import short
from calibrate.base.http import HttpClient, HttpError, HttpPolicy, Reply
from calibrate.base.secrets import (
    REDACTED,
    clip,
    redact,
    redact_known,
    remember,
    remembered_scope,
)
from tests.base.adversary import Adversary

# credential characters (no "~", which pads the texts below, and none of the letters of "[redacted]")
KEY_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZbfghijklmnopqsuvwxyz0123456789-_./+=!"
keys = st.text(alphabet=KEY_CHARS, min_size=8, max_size=60)
QUICK = HttpPolicy(timeout_s=5.0, command_timeout_s=30.0)


def leaked_prefix(key: str, text: str, shortest: int = 4) -> str | None:
    """The longest start of ``key`` (at least ``shortest`` characters) found in ``text``, the redaction
    marks taken out."""
    text = text.replace(REDACTED, "\0")
    return next((key[:n] for n in range(len(key), shortest - 1, -1) if key[:n] in text), None)


@settings(max_examples=80, deadline=None)
@given(key=keys, before=st.integers(0, 40), limit=st.integers(10, 120))
def test_text_cut_short_keeps_no_start_of_a_credential_straddling_the_cut(key, before, limit):
    remember(key)
    text = "~" * max(limit - before, 0) + " bad key " + key + " ~~"
    assert leaked_prefix(key, clip(text, limit)) is None
    assert leaked_prefix(key, str(short(text, limit))) is None
    assert leaked_prefix(key, str(short({"detail": text}, limit))) is None
    assert leaked_prefix(key, Reply(401, {}, text.encode(), "S", "GET /").excerpt(limit)) is None


@settings(max_examples=40, deadline=None)
@given(key=keys)
def test_a_remembered_credential_is_redacted_in_every_form_a_server_writes_it_back(key):
    remember(key)
    raw = key.encode()
    for form in (
        key,
        key.upper(),
        key.lower(),
        urllib.parse.quote(key, safe=""),
        urllib.parse.quote_plus(key),
        base64.b64encode(raw).decode(),
        base64.urlsafe_b64encode(raw).decode().rstrip("="),
        json.dumps(key)[1:-1],
    ):
        assert form not in redact(f"you sent {form} here"), form


def test_short_credentials_are_redacted_as_words_and_the_shortest_where_a_credential_stands():
    remember("k3Y!x9z")  # 7 characters: once kept out of the known values
    remember("Qw9")  # 3 characters: only in a credential's place
    assert redact("HTTP 401: bad key k3Y!x9z.") == f"HTTP 401: bad key {REDACTED}."
    assert redact("Authorization: Bearer Qw9") == f"Authorization: Bearer {REDACTED}"
    assert redact('{"api_key": "Qw9"}') == f'{{"api_key": "{REDACTED}"}}'
    assert redact("Qw9 is also a word here") == "Qw9 is also a word here"


def test_redact_known_keeps_credential_shaped_text_of_an_answer():
    remember("svc-known-0042xyz")
    answer = "Send the header Authorization: Bearer <your token>; api_key=abcd1234 is an example. svc-known-0042xyz"
    kept = redact_known(answer)
    assert "svc-known-0042xyz" not in kept and "api_key=abcd1234" in kept and "Bearer <your token>" in kept


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(key=keys, cut=st.integers(1, 7))
def test_an_error_reply_message_straddling_its_500_character_cut_is_redacted_whole(key, cut):
    """MLflow's 401 "message", Phoenix's 403 "detail": the server's words are cut at 500 characters."""
    with Adversary() as server:
        server.route("*", lambda h: h.send(401, {"message": "~" * (500 - cut) + " " + h.headers["x-api-key"]}))
        client = HttpClient(server.url, name="Tool", headers={"x-api-key": key}, policy=QUICK)
        try:
            client.call("GET", "/x")
        except HttpError as exc:
            assert leaked_prefix(key, str(exc)) is None
        else:
            raise AssertionError("a 401 was not an error")


def test_a_credential_forgotten_and_another_remembered_is_redacted():
    """The compiled patterns follow every change, not the count of credentials: one forgotten and another
    remembered in its place (the same count) must not leave the old patterns in force."""
    with remembered_scope():
        remember("first-made-up-credential")
        assert redact("x first-made-up-credential") == f"x {REDACTED}"
    with remembered_scope():
        remember("second-made-up-credential")
        assert redact("x second-made-up-credential") == f"x {REDACTED}"
    assert (
        redact("x first-made-up-credential and second-made-up-credential")
        == "x first-made-up-credential and second-made-up-credential"
    )
