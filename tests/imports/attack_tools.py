"""What the attacks on the file doors share: a valid document of each format, any JSON value put at any
level of it, the file truncated, made JSON Lines or not UTF-8; and the one rule every reader keeps: a
valid batch, or a CampaignError (a DocumentError among them) naming the file, never another
exception."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from calibrate import CampaignError

#: text that is data: a bare \r, NUL, an escape sequence, a line separator, right-to-left, markup, pipes
NASTY = "a\rb\x00c\x1b[31md\x1b]0;title\x07e\u2028f\x85g\u202eh<b>|i\x0bj"
#: any JSON value, its text any Unicode (control characters included), NaN and infinities too
JSON = st.recursive(
    st.none() | st.booleans() | st.floats() | st.integers(-(2**70), 2**70) | st.text(max_size=8) | st.just(NASTY),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=10,
)
#: deeper than any JSON reader allows, and than Python's stack
DEEP = "[" * 100_000 + "]" * 100_000


def paths_of(document: Any, prefix: tuple = ()) -> Iterator[tuple]:
    """Every path (keys and indexes) into a JSON document, the document itself first."""
    yield prefix
    if isinstance(document, dict):
        for key, value in document.items():
            yield from paths_of(value, prefix + (key,))
    elif isinstance(document, list):
        for i, value in enumerate(document):
            yield from paths_of(value, prefix + (i,))


def replaced(document: Any, path: tuple, value: Any) -> Any:
    """``document`` with ``value`` at ``path`` (unchanged when an earlier change removed the path)."""
    if not path:
        return copy.deepcopy(value)
    document = copy.deepcopy(document)
    node = document
    try:
        for step in path[:-1]:
            node = node[step]
        node[path[-1]] = copy.deepcopy(value)
    except (KeyError, IndexError, TypeError):
        pass
    return document


@st.composite
def attacked(draw, valid: Any) -> bytes:
    """The bytes of ``valid`` attacked: any JSON value at one to three places of its structure, then
    maybe truncated, written as JSON Lines, given a byte that is not UTF-8, or a byte-order mark."""
    document = valid
    paths = list(paths_of(valid))
    for _ in range(draw(st.integers(1, 3))):
        document = replaced(document, draw(st.sampled_from(paths)), draw(JSON))
    how = draw(st.sampled_from(["whole", "whole", "truncated", "lines", "not-utf8", "bom"]))
    data = json.dumps(document, ensure_ascii=draw(st.booleans())).encode("utf-8", "surrogatepass")
    if how == "truncated":
        data = data[: draw(st.integers(0, len(data)))]
    elif how == "lines" and isinstance(document, list):
        data = b"\n".join(json.dumps(item).encode() for item in document)
    elif how == "not-utf8":
        at = draw(st.integers(0, len(data)))
        data = data[:at] + draw(st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\x80"])) + data[at:]
    elif how == "bom":
        data = b"\xef\xbb\xbf" + data
    return data


def write(path: Path, document: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(document if isinstance(document, bytes) else json.dumps(document).encode())
    return path


def read_or_refused(read, path: Path, *, errors: tuple = (CampaignError,)) -> Any:
    """``read()``'s result, or None when it raised one of ``errors`` naming ``path`` (any other exception
    fails the test, as a refusal that does not name the file does)."""
    try:
        return read()
    except errors as exc:
        assert str(path) in str(exc), f"the error does not name {path}: {exc}"
        return None
