"""Secrets are never written: API keys, tokens and ``Authorization`` values are redacted from every
text calibrate stores, exports, logs or shows.

Two nets catch them. The values themselves: every credential calibrate sends is registered with
:func:`remember` where it is read (a judge's API key, a tracking server's token), and every
environment variable whose name says it holds one (``*_KEY``, ``*_TOKEN``, ``*_SECRET``,
``*_PASSWORD``, ...) is known too; each is replaced wherever it appears, however a server echoed it.
And their shapes: ``Bearer ...`` and ``Basic ...`` credentials, ``sk-...`` keys, and ``api_key: ...``,
``"authorization": "..."`` style pairs, for keys calibrate never saw.

A remembered credential is replaced however a server wrote it back: as it is, in capitals or small
letters (from 8 characters), URL-encoded, base64-encoded, or escaped in JSON. One of 4 to 7 characters
is replaced where it stands as a word of its own (not inside a longer word); one of 1 to 3 characters
only where it stands in a credential's place (``Bearer X``, ``api_key=X``, ``"authorization": "X"``),
since elsewhere it would be any short word. A credential split by a server (``sk-ab...cdef``) or
written in another encoding (HTML entities) is not recognised.

Outside text is cut short for messages only after it is redacted (:func:`clip`): a credential that
straddled the cut would otherwise keep its first characters.

Examples
--------
>>> remember("s3cr3t-token-value")
>>> redact('HTTP 401: invalid key s3cr3t-token-value (header "Authorization: Bearer abc.def.ghi")')
'HTTP 401: invalid key [redacted] (header "Authorization: Bearer [redacted]")'
>>> redact('{"api_key": "sk-proj-0123456789abcdefXYZ", "model": "gpt-4o"}')
'{"api_key": "[redacted]", "model": "gpt-4o"}'
"""

from __future__ import annotations

import base64
import json
import os
import re
import threading
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = [
    "MIN_REMEMBERED",
    "MIN_SECRET",
    "REDACTED",
    "clip",
    "looks_like_credential",
    "redact",
    "redact_any",
    "redact_known",
    "remember",
    "remembered_scope",
    "secret_env_name",
]

REDACTED = "[redacted]"
#: the shortest value of an environment variable named like a credential treated as one (shorter ones
#: would redact ordinary words: ``SOME_TOKEN=none``); and the shortest remembered credential matched
#: in capitals or small letters alike
MIN_SECRET = 8
#: the shortest credential calibrate holds (:func:`remember`) replaced wherever it stands as a word;
#: shorter ones are replaced only in a credential's place (``Bearer X``, ``api_key=X``)
MIN_REMEMBERED = 4

_SECRET_NAME = re.compile(r"(?:^|_)(?:API_?KEY|KEY|TOKEN|SECRET|PASSWORD|PASSWD|PASS|CREDENTIALS?|AUTH)(?:_|$)", re.I)
_SCHEME = re.compile(r"(?i)\b(bearer|basic|token)(\s+)([A-Za-z0-9._~+/=:-]{8,})")
# API keys of known formats, and JSON Web Tokens (the access tokens Label Studio's SDK and others exchange)
_KEY_FORMATS = re.compile(
    r"\b(?:sk|pk|rk)-[A-Za-z0-9_-]{16,}|\blsv2_[A-Za-z0-9_]{16,}|\bhf_[A-Za-z0-9]{16,}"
    r"|\bgh[pousr]_[A-Za-z0-9]{20,}|\bAKIA[0-9A-Z]{16}\b|\bAIza[0-9A-Za-z_-]{30,}"
    r"|\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*"
)
# key: value pairs in JSON, headers, query strings and reprs; a name that always holds a credential...
_PAIR = re.compile(r"""(?ix)
    (["']?(?:x-)?(?:api[_-]?key|apikey|access[_-]?token|auth[_-]?token|refresh[_-]?token|session[_-]?token
                  |id[_-]?token|authorization|password|passwd|client[_-]?secret|private[_-]?key|secret[_-]?key)
     ["']?\s*[:=]\s*["']?)
    (?!\[redacted\])(?!bearer\s|basic\s|token\s)([^"'\s,;&}{)]{4,})""")
# ... and one that may be a word in a sentence ("secret: ..."), whose value must look like a credential
_LOOSE_PAIR = re.compile(r"""(?ix)(["']?(?:secret|token|key)["']?\s*[:=]\s*["']?)(?!\[redacted\])([^"'\s,;&}{)]{8,})""")


def looks_like_credential(text: str) -> bool:
    """Whether a word looks like a credential rather than a word of prose: a digit, one of ``=+/_-.``,
    or capitals inside it.

    >>> [looks_like_credential(w) for w in ("arithmetic", "Arithmetic", "dXNlcjpwYXNz", "abc.def.ghi", "a1b2c3d4")]
    [False, False, True, True, True]
    """
    return any(c.isdigit() for c in text) or any(c in "=+/_-.:~" for c in text) or any(c.isupper() for c in text[1:])


def _credential_or_word(match: re.Match, group: int) -> str:
    if not looks_like_credential(match.group(group)):
        return match.group(0)
    return match.group(0)[: match.start(group) - match.start(0)] + REDACTED


_lock = threading.Lock()
_remembered: set[str] = set()
# bumped on every change of _remembered: the compiled patterns are rebuilt when it moves (a count of
# the values would miss one value forgotten and another remembered)
_generation = 0
# where a credential stands: after a scheme word or a credential's name (for the shortest remembered ones)
_PLACE = (
    r"""(?i)((?:\b(?:bearer|basic|token)\s+)|(?:["']?(?:x-)?(?:api[_-]?key|apikey|access[_-]?token|auth[_-]?token"""
    r"""|authorization|password|passwd|secret|token|key)["']?\s*[:=]\s*["']?))"""
)
_NOT_WORD = r"[A-Za-z0-9]"


class _Known:
    """The known credentials, compiled: ``long`` (any case), ``words`` (4 to 7 characters, as words),
    ``placed`` (1 to 3 characters, in a credential's place); None where there are none."""

    def __init__(self, values: set[str], short: set[str]):
        forms: set[str] = set()
        for value in values:
            forms |= _forms(value)
        long = sorted((f for f in forms if len(f) >= MIN_SECRET), key=len, reverse=True)
        words = sorted((f for f in forms if len(f) < MIN_SECRET), key=len, reverse=True)
        self.long = re.compile("|".join(map(re.escape, long)), re.I) if long else None
        self.words = (
            re.compile(f"(?<!{_NOT_WORD})(?:{'|'.join(map(re.escape, words))})(?!{_NOT_WORD})") if words else None
        )
        self.placed = (
            re.compile(
                _PLACE + f"(?:{'|'.join(map(re.escape, sorted(short, key=len, reverse=True)))})(?![A-Za-z0-9._~+/=-])"
            )
            if short
            else None
        )
        self.values = tuple(sorted(values, key=len, reverse=True))


def _forms(value: str) -> set[str]:
    """A credential as a server may write it back: as it is, URL-encoded, base64-encoded (with and
    without padding, standard and URL-safe alphabets), JSON-escaped."""
    forms = {
        value,
        urllib.parse.quote(value, safe=""),
        urllib.parse.quote_plus(value, safe=""),
        urllib.parse.quote(value),
        json.dumps(value)[1:-1],
    }
    try:
        raw = value.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: only its own form
        return {value}
    for encoded in (base64.b64encode(raw), base64.urlsafe_b64encode(raw)):
        text = encoded.decode("ascii")
        forms |= {text, text.rstrip("=")}
    return {f for f in forms if f}


#: (the environment and the remembered values it was computed from, the known values compiled)
_known_values: tuple[tuple, _Known] = ((), _Known(set(), set()))
# words one of which every pattern below needs: a text without any is not searched (redact runs on every
# judge's reason, so it must cost little)
_SCHEME_HINTS = ("bearer", "basic", "token")
_KEY_HINTS = ("sk-", "pk-", "rk-", "lsv2_", "hf_", "gh", "AKIA", "AIza", "eyJ")
_PAIR_HINTS = ("key", "token", "authorization", "passw", "secret")


def secret_env_name(name: str) -> bool:
    """Whether an environment variable's name says it holds a credential.

    >>> [secret_env_name(n) for n in ("OPENAI_API_KEY", "MLFLOW_TRACKING_TOKEN", "PATH", "KEYBOARD_LAYOUT")]
    [True, True, False, False]
    """
    return bool(_SECRET_NAME.search(name))


def remember(value: str | None) -> None:
    """Register a credential calibrate holds (read from the environment or a file, sent in a header)
    so that :func:`redact` removes it from every text, whatever its length (see the module docstring
    for how the shortest ones are matched).

    >>> remember("k3Y!"); redact("bad key k3Y! sent")
    'bad key [redacted] sent'
    """
    global _generation
    if isinstance(value, str) and value.strip():
        with _lock:
            if value.strip() not in _remembered:
                _remembered.add(value.strip())
                _generation += 1


@contextmanager
def remembered_scope() -> Iterator[None]:
    """Credentials remembered inside the block are forgotten when it ends; those remembered before stay.
    For tests that remember made-up credentials (a four-letter one would otherwise be redacted from
    every later text as a word), and for a process that serves one campaign after another.

    >>> with remembered_scope():
    ...     remember("zQ7!x"); redact("a zQ7!x b")
    'a [redacted] b'
    >>> redact("a zQ7!x b")
    'a zQ7!x b'
    """
    global _generation
    with _lock:
        before = set(_remembered)
    try:
        yield
    finally:
        with _lock:
            _remembered.intersection_update(before)
            _generation += 1


def _known() -> _Known:
    """Every known credential, compiled (recomputed only when the environment or the remembered
    values changed)."""
    global _known_values
    data = getattr(os.environ, "_data", None)  # CPython's raw environment: compared without decoding it
    environment = tuple(data.items()) if isinstance(data, dict) else tuple(os.environ.items())
    state = (environment, _generation)
    if state != _known_values[0]:
        with _lock:
            remembered = set(_remembered)
        values = {v for v in remembered if len(v) >= MIN_REMEMBERED}
        values |= {v.strip() for k, v in os.environ.items() if secret_env_name(k) and len(v.strip()) >= MIN_SECRET}
        _known_values = (state, _Known(values, remembered - values))
    return _known_values[1]


def redact_known(text: str) -> str:
    """``text`` with every known credential (remembered, or in an environment variable named like one)
    replaced by ``[redacted]``, in every form :func:`redact` knows; credential-shaped text that is no
    known credential is kept. For data under evaluation (a service's answer), where a phrase such as
    ``token: abc-123`` may be the answer itself.

    >>> remember("collect-token-0042")
    >>> redact_known("the answer, token: abc-123, and collect-token-0042")
    'the answer, token: abc-123, and [redacted]'
    """
    if not text:
        return text
    known = _known()
    if known.long is not None:
        text = known.long.sub(REDACTED, text)
    if known.words is not None:
        text = known.words.sub(REDACTED, text)
    if known.placed is not None:
        text = known.placed.sub(lambda m: m.group(1) + REDACTED, text)
    return text


def redact(text: str) -> str:
    """``text`` with every known credential, and everything shaped like one, replaced by ``[redacted]``.

    >>> redact("no secret here"), redact("")
    ('no secret here', '')
    """
    if not text:
        return text
    text = redact_known(text)
    lower = text.lower()
    if any(hint in lower for hint in _SCHEME_HINTS):
        text = _SCHEME.sub(lambda m: _credential_or_word(m, 3), text)
    if any(hint in text for hint in _KEY_HINTS):
        text = _KEY_FORMATS.sub(REDACTED, text)
    if any(hint in lower for hint in _PAIR_HINTS):
        text = _PAIR.sub(lambda m: m.group(1) + REDACTED, text)
        text = _LOOSE_PAIR.sub(lambda m: _credential_or_word(m, 2), text)
    return text


def clip(text: Any, limit: int) -> str:
    """The start of an outside text, at most ``limit`` characters, for a message: redacted *before* it
    is cut, so that a credential straddling the cut leaves none of its characters. Every place that
    shortens a server's reply or another tool's text goes through it.

    >>> remember("Zq81PLmv42Wt-straddle")
    >>> clip("x" * 10 + " key Zq81PLmv42Wt-straddle", 20)
    'xxxxxxxxxx key [reda'
    """
    return redact(str(text))[: max(int(limit), 0)]


def redact_any(value: Any) -> Any:
    """:func:`redact` applied to every string in a JSON-like value (dicts, lists, tuples), keys kept.

    >>> redact_any({"error": "Bearer abcdef-ghijkl", "n": 1, "items": ["api_key=0123456789"]})
    {'error': 'Bearer [redacted]', 'n': 1, 'items': ['api_key=[redacted]']}
    """
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {k: redact_any(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(redact_any(v) for v in value)
    return value
