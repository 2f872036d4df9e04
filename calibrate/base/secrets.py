"""Secrets are never written: API keys, tokens and ``Authorization`` values are redacted from every
text calibrate stores, exports, logs or shows.

Two nets catch them. The values themselves: every credential calibrate sends is registered with
:func:`remember` where it is read (a judge's API key, a tracking server's token), and every
environment variable whose name says it holds one (``*_KEY``, ``*_TOKEN``, ``*_SECRET``,
``*_PASSWORD``, ...) is known too; each is replaced wherever it appears, however a server echoed it.
And their shapes: ``Bearer ...`` and ``Basic ...`` credentials, ``sk-...`` keys, and ``api_key: ...``,
``"authorization": "..."`` style pairs, for keys calibrate never saw.

Examples
--------
>>> remember("s3cr3t-token-value")
>>> redact('HTTP 401: invalid key s3cr3t-token-value (header "Authorization: Bearer abc.def.ghi")')
'HTTP 401: invalid key [redacted] (header "Authorization: Bearer [redacted]")'
>>> redact('{"api_key": "sk-proj-0123456789abcdefXYZ", "model": "gpt-4o"}')
'{"api_key": "[redacted]", "model": "gpt-4o"}'
"""

from __future__ import annotations

import os
import re
import threading
from typing import Any

__all__ = ["REDACTED", "remember", "redact", "redact_any", "secret_env_name", "looks_like_credential"]

REDACTED = "[redacted]"
#: the shortest value treated as a secret (shorter ones would redact ordinary words)
MIN_SECRET = 8

_SECRET_NAME = re.compile(r"(?:^|_)(?:API_?KEY|KEY|TOKEN|SECRET|PASSWORD|PASSWD|PASS|CREDENTIALS?|AUTH)(?:_|$)", re.I)
_SCHEME = re.compile(r"(?i)\b(bearer|basic|token)(\s+)([A-Za-z0-9._~+/=:-]{8,})")
# API keys of known formats, and JSON Web Tokens (the access tokens Label Studio's SDK and others exchange)
_KEY_FORMATS = re.compile(r"\b(?:sk|pk|rk)-[A-Za-z0-9_-]{16,}|\blsv2_[A-Za-z0-9_]{16,}|\bhf_[A-Za-z0-9]{16,}"
                          r"|\bgh[pousr]_[A-Za-z0-9]{20,}|\bAKIA[0-9A-Z]{16}\b|\bAIza[0-9A-Za-z_-]{30,}"
                          r"|\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*")
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
    return (any(c.isdigit() for c in text) or any(c in "=+/_-.:~" for c in text)
            or any(c.isupper() for c in text[1:]))


def _credential_or_word(match: re.Match, group: int) -> str:
    if not looks_like_credential(match.group(group)):
        return match.group(0)
    return match.group(0)[: match.start(group) - match.start(0)] + REDACTED


_lock = threading.Lock()
_remembered: set[str] = set()
#: (the environment and the remembered values it was computed from, the known values longest first)
_known_values: tuple[tuple, tuple[str, ...]] = ((), ())
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
    """Register a credential calibrate holds (read from the environment or a file) so that
    :func:`redact` removes it from every text. Values shorter than 8 characters are not kept."""
    if isinstance(value, str) and len(value.strip()) >= MIN_SECRET:
        with _lock:
            _remembered.add(value.strip())


def _known() -> tuple[str, ...]:
    """Every known credential, longest first (recomputed only when the environment or the remembered
    values changed)."""
    global _known_values
    data = getattr(os.environ, "_data", None)   # CPython's raw environment: compared without decoding it
    environment = tuple(data.items()) if isinstance(data, dict) else tuple(os.environ.items())
    state = (environment, len(_remembered))
    if state != _known_values[0]:
        with _lock:
            values = set(_remembered)
        values |= {v.strip() for k, v in os.environ.items() if secret_env_name(k) and len(v.strip()) >= MIN_SECRET}
        _known_values = (state, tuple(sorted(values, key=len, reverse=True)))
    return _known_values[1]


def redact(text: str) -> str:
    """``text`` with every known credential, and everything shaped like one, replaced by ``[redacted]``.

    >>> redact("no secret here"), redact("")
    ('no secret here', '')
    """
    if not text:
        return text
    for value in _known():
        if value in text:
            text = text.replace(value, REDACTED)
    lower = text.lower()
    if any(hint in lower for hint in _SCHEME_HINTS):
        text = _SCHEME.sub(lambda m: _credential_or_word(m, 3), text)
    if any(hint in text for hint in _KEY_HINTS):
        text = _KEY_FORMATS.sub(REDACTED, text)
    if any(hint in lower for hint in _PAIR_HINTS):
        text = _PAIR.sub(lambda m: m.group(1) + REDACTED, text)
        text = _LOOSE_PAIR.sub(lambda m: _credential_or_word(m, 2), text)
    return text


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
