"""The files of a judge's fingerprint folder, ``fingerprints/JUDGE/``, and which of them a decision trusts.

``calibrate fingerprint`` writes, in the folder of each judge of ``[judges]``:

- ``anchors.json``, the anchor set (:class:`AnchorSet`), the first time;
- ``STAMP.json``, each fingerprint (:class:`FingerprintDocument`), ``STAMP`` its UTC time;
- ``STAMP/``, the folder its judge run worked in (never read by a decision);
- ``index.json`` (:class:`FingerprintIndex`), written last: the SHA-256 of the content of each file
  above that it wrote.

**What is trusted.** A file that ``index.json`` lists with the hash of what it holds now, and that
holds what its format declares, for this judge. Everything else in the folder is *refused by name*:
a file the index does not list (planted, copied from another campaign, or written by a calibrate that
kept no index), a file whose content changed since it was written (edited by hand), a listed file that
is gone (deleted: the fingerprint before it would pass for the latest), a link, a damaged index.
Leftovers of an interrupted write (``*.tmp``), hidden files and folders are never read.

**The latest fingerprint** is the trusted one whose recorded time (``created``, inside the file) is
the latest; file names play no part. Of two recorded at the same time, one that is not SAME wins. A
folder with any file refused has no latest fingerprint and no anchor set.

The hash is of the document's canonical JSON (:func:`content_hash`): re-indenting a file or changing
its line endings (a checkout on Windows) is no edit; changing any value is.

The index is not a signature: whoever can write the folder can write an index to match. It keeps
stray, copied, stale, deleted, damaged and hand-edited files out of decisions; review a change to
``fingerprints/*/index.json`` as you review code.

Examples
--------
>>> import tempfile
>>> folder = Path(tempfile.mkdtemp()) / "fingerprints" / "j"
>>> found = read_folder(folder, "j")
>>> found.latest is None, found.refused
(True, ())
>>> folder.mkdir(parents=True)
>>> _ = (folder / "99999999T999999Z.json").write_text('{"verdict": "SAME"}')
>>> print(read_folder(folder, "j").refused[0].message)
not written by calibrate fingerprint: the folder has no index.json to vouch for it
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, JsonValue, model_validator
from pydantic_core import PydanticCustomError

from calibrate.base.documents import DocumentError, Schema, parse_json, read_bytes, validate
from calibrate.base.errors import Problem
from calibrate.base.fields import FiniteNumber, Name, Sha256, Text, Timestamp
from calibrate.base.files import write_all

__all__ = [
    "ANCHORS_FILE",
    "FINGERPRINTS_FOLDER",
    "INDEX_FILE",
    "INDEX_FORMAT",
    "MIN_ANCHORS",
    "VERDICTS",
    "AnchorCase",
    "AnchorSet",
    "FingerprintDocument",
    "FingerprintIndex",
    "Fingerprints",
    "IndexEntry",
    "case_hash",
    "content_hash",
    "read_folder",
    "store_anchors",
    "store_fingerprint",
]

FINGERPRINTS_FOLDER = "fingerprints"
ANCHORS_FILE = "anchors.json"
INDEX_FILE = "index.json"
INDEX_FORMAT = "calibrate fingerprint index 1"
#: the verdicts a fingerprint may hold
VERDICTS = ("SAME", "CHANGED", "FLAKY", "FAILED")
#: the fewest anchors a fingerprint compares (fewer cannot show a change)
MIN_ANCHORS = 4
#: the largest file of a fingerprint folder read (its documents are kilobytes)
MAX_FILE_BYTES = 16 * 2**20
#: a fingerprint's file name: its UTC time, to the second or the microsecond
FingerprintName = Annotated[str, Field(strict=True, pattern=r"^[0-9]{8}T[0-9]{6}([0-9]{6})?Z\.json$")]


class AnchorCase(Schema):
    """An anchor: a case, the judge's score of it when the anchors were chosen, and the hash of the
    case's content the judge read then (:func:`case_hash`; absent in anchor sets of an earlier calibrate)."""

    case_id: Name
    score: FiniteNumber
    case_sha256: Sha256 | None = None


class AnchorSet(Schema):
    """``anchors.json``: the cases a judge's fingerprints re-score, with their scores then."""

    judge: Name
    metric: Name
    threshold: FiniteNumber
    threshold_source: Text
    created: Timestamp
    settings: dict[str, JsonValue]
    #: the case fields whose content each anchor's ``case_sha256`` hashes
    case_fields: list[Name] | None = None
    anchors: Annotated[list[AnchorCase], Field(min_length=MIN_ANCHORS)]

    @model_validator(mode="after")
    def _each_case_once(self) -> AnchorSet:
        ids = [a.case_id for a in self.anchors]
        twice = sorted({c for c in ids if ids.count(c) > 1})
        if twice:
            raise PydanticCustomError(
                "duplicate",
                "anchors: case(s) listed twice ({twice}); each anchor is one case",
                {"twice": ", ".join(twice[:5])},
            )
        return self


class FingerprintDocument(Schema):
    """``STAMP.json``: what a decision reads of a fingerprint (the file holds its evidence too)."""

    judge: Name
    metric: Name
    verdict: Literal["SAME", "CHANGED", "FLAKY", "FAILED"]
    created: Timestamp
    reasons: list[Text]
    threshold: FiniteNumber
    anchors_sha256: Sha256 | None = None
    #: the judge's settings the fingerprint scored with (:func:`calibrate.review.fingerprint.judge_settings`)
    #: and their hash; absent in fingerprints of an earlier calibrate, which the gate therefore refuses
    judge_settings: dict[str, JsonValue] | None = None
    judge_settings_sha256: Sha256 | None = None


class IndexEntry(Schema):
    """A file ``calibrate fingerprint`` wrote, and the hash of its content (:func:`content_hash`)."""

    file: FingerprintName
    sha256: Sha256


class AnchorsEntry(Schema):
    file: Literal["anchors.json"]
    sha256: Sha256


class FingerprintIndex(Schema):
    """``index.json``: the files of the folder ``calibrate fingerprint`` wrote, with their hashes."""

    format: Literal["calibrate fingerprint index 1"]
    judge: Name
    anchors: AnchorsEntry | None = None
    fingerprints: list[IndexEntry] = []

    @model_validator(mode="after")
    def _each_file_once(self) -> FingerprintIndex:
        names = [e.file for e in self.fingerprints]
        if len(set(names)) != len(names):
            raise PydanticCustomError("duplicate", "fingerprints: a file listed twice")
        return self


@dataclass(frozen=True)
class Fingerprints:
    """What a judge's fingerprint folder holds that a decision may trust, and every file it refused.

    ``latest`` is the trusted fingerprint recorded last, read from ``latest_file``; ``anchors`` the
    anchor set; ``refused`` one problem per file refused, naming it and saying what to do. When any
    file is refused, ``latest`` and ``anchors`` are ``None``: the file refused might have been the
    latest (a damaged CHANGED must not leave the SAME before it standing)."""

    folder: Path
    index: FingerprintIndex | None = None
    anchors: AnchorSet | None = None
    anchors_sha256: str | None = None
    latest: FingerprintDocument | None = None
    latest_file: Path | None = None
    trusted: int = 0
    refused: tuple[Problem, ...] = ()


def content_hash(value: Any) -> str:
    """The SHA-256 of a JSON value's canonical text (keys sorted, no spaces, ASCII): what index.json records.

    Examples
    --------
    >>> content_hash({"b": [1, 2.5], "a": "x"}) == content_hash(json.loads('{ "a":"x",\\r\\n "b":[1,2.5]}'))
    True
    >>> content_hash({"a": 1}) == content_hash({"a": 2})
    False
    """
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=True)
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def case_hash(case: dict[str, Any], fields: list[str] | tuple[str, ...]) -> str:
    """The hash of the content a judge reads of a case: the case's ``fields`` (:func:`content_hash`).

    Examples
    --------
    >>> case = {"case_id": "c1", "input": "q", "actual_output": "a", "metadata": {"k": 1}}
    >>> case_hash(case, ["input", "actual_output"]) == case_hash({**case, "metadata": {}}, ["input", "actual_output"])
    True
    >>> case_hash(case, ["actual_output"]) == case_hash({**case, "actual_output": "b"}, ["actual_output"])
    False
    """
    return content_hash({field: case.get(field) for field in fields})


def _start_again(folder: Path) -> str:
    return f"remove the folder {folder} and take a new fingerprint (calibrate fingerprint)"


def _read_value(path: Path, expected: str) -> Any:
    """A file of the folder as a JSON value (size, depth and encoding checked), not followed if a link."""
    if path.is_symlink():
        raise DocumentError(
            [
                Problem(
                    str(path),
                    "a link, not a file calibrate fingerprint wrote",
                    expected=f"{expected}, not a link: remove the link",
                )
            ],
            source=str(path),
        )
    data = read_bytes(path, expected=expected, max_bytes=MAX_FILE_BYTES)
    return parse_json(data, JsonValue, source=str(path), expected=expected, max_bytes=MAX_FILE_BYTES)


def _todo(problems: list[Problem], todo: str) -> list[Problem]:
    return [dataclasses.replace(p, expected=f"{p.expected}: {todo}" if p.expected else todo) for p in problems]


def _read_index(folder: Path, judge: str) -> tuple[FingerprintIndex | None, list[Problem]]:
    path = folder / INDEX_FILE
    expected = f"the index calibrate fingerprint writes for judge {judge}"
    todo = "restore it from version control, or " + _start_again(folder)
    try:
        index = validate(_read_value(path, expected), FingerprintIndex, source=str(path), expected=expected)
    except DocumentError as exc:
        return None, _todo(exc.problems, todo)
    if index.judge != judge:
        return None, [
            Problem(
                str(path), "the index of another judge", field="judge", value=index.judge, expected=f"{judge}'s: {todo}"
            )
        ]
    return index, []


def _checked(path: Path, sha256: str | None, schema: Any, expected: str, todo: str) -> tuple[Any, str, list[Problem]]:
    """A listed file: its model and hash, or the problems that refuse it."""
    try:
        value = _read_value(path, expected)
    except DocumentError as exc:
        return None, "", _todo(exc.problems, todo)
    digest = content_hash(value)
    if digest != sha256:
        return (
            None,
            digest,
            [
                Problem(
                    str(path),
                    "changed since calibrate fingerprint wrote it (its content is not the "
                    "one whose hash index.json records)",
                    expected=f"what it wrote: {todo}",
                )
            ],
        )
    try:
        return validate(value, schema, source=str(path), expected=expected), digest, []
    except DocumentError as exc:
        return None, digest, _todo(exc.problems, todo)


def _files(folder: Path) -> list[Path]:
    """The files of a fingerprint folder besides its index (no hidden or temporary file, no folder)."""
    return sorted(
        p
        for p in folder.iterdir()
        if not p.name.startswith(".")
        and not p.name.endswith(".tmp")
        and p.name != INDEX_FILE
        and (p.is_symlink() or not p.is_dir())
    )


def _anchors(path: Path, index: FingerprintIndex, judge: str) -> tuple[AnchorSet | None, str | None, list[Problem]]:
    """The anchor set at ``path``, with its hash, if the index vouches for it and it is ``judge``'s; else the problems."""
    if index.anchors is None:
        return (
            None,
            None,
            [
                Problem(
                    str(path),
                    "not written by calibrate fingerprint: index.json lists no anchor set",
                    expected="an anchor set index.json lists: remove it to choose anchors anew (calibrate fingerprint)",
                )
            ],
        )
    anchors, anchors_sha256, problems = _checked(
        path,
        index.anchors.sha256,
        AnchorSet,
        f"the anchor set of judge {judge}",
        "restore it from version control, or remove it to choose anchors anew (calibrate fingerprint)",
    )
    if anchors is not None and anchors.judge != judge:
        problems = [
            *problems,
            Problem(
                str(path),
                "the anchor set of another judge",
                field="judge",
                value=anchors.judge,
                expected=f"{judge}'s: remove it to choose anchors anew (calibrate fingerprint)",
            ),
        ]
        anchors = None
    return anchors, anchors_sha256, problems


def _document(path: Path, sha256: str, judge: str, folder: Path) -> tuple[FingerprintDocument | None, list[Problem]]:
    """The fingerprint at ``path`` if its hash is the one the index lists and it is ``judge``'s; else the problems."""
    document, _, problems = _checked(
        path,
        sha256,
        FingerprintDocument,
        f"a fingerprint of judge {judge}",
        "restore it from version control, or " + _start_again(folder),
    )
    if document is not None and document.judge != judge:
        return None, [
            *problems,
            Problem(
                str(path),
                "a fingerprint of another judge",
                field="judge",
                value=document.judge,
                expected=f"{judge}'s: remove it",
            ),
        ]
    return document, problems


def _gone(folder: Path, listed: dict[str, str], files: list[Path]) -> list[Problem]:
    """A problem per file the index lists that the folder no longer holds."""
    present = {p.name for p in files}
    return [
        Problem(
            str(folder / name),
            "listed in index.json but gone: without it, an older fingerprint would pass for the latest",
            expected="the file calibrate fingerprint wrote: restore it from version "
            "control, or " + _start_again(folder),
        )
        for name in listed
        if name not in present
    ]


def read_folder(folder: str | Path, judge: str) -> Fingerprints:
    """A judge's fingerprint folder: the trusted anchor set and latest fingerprint, and every file refused.

    Never raises for what the folder holds: each file that cannot be trusted is in ``refused``, named,
    with what to do (see the module docstring for the rule).

    Parameters
    ----------
    folder : str or Path
        ``CAMPAIGN/fingerprints/JUDGE``.
    judge : str
        The judge whose fingerprints it must hold.

    Returns
    -------
    Fingerprints
    """
    folder = Path(folder)
    if not folder.exists() and not folder.is_symlink():
        return Fingerprints(folder)
    if folder.is_symlink() or not folder.is_dir():
        return Fingerprints(
            folder,
            refused=(
                Problem(
                    str(folder),
                    "not a folder calibrate fingerprint made (a link, or a file)",
                    expected="a folder: remove it and take a new fingerprint",
                ),
            ),
        )
    refused: list[Problem] = []
    index = None
    index_path = folder / INDEX_FILE
    files = _files(folder)
    if index_path.exists() or index_path.is_symlink():
        index, refused = _read_index(folder, judge)
        if index is None:  # nothing in the folder can be checked
            return Fingerprints(folder, refused=tuple(refused))
    listed = {e.file: e.sha256 for e in index.fingerprints} if index else {}
    anchors = anchors_sha256 = None
    documents: list[tuple[FingerprintDocument, Path]] = []
    for path in files:
        if index is None:
            refused.append(
                Problem(
                    str(path),
                    "not written by calibrate fingerprint: the folder has no index.json to vouch for it",
                    expected="a folder calibrate fingerprint wrote, with its index "
                    "(an earlier calibrate kept none): " + _start_again(folder),
                )
            )
        elif path.name == ANCHORS_FILE:
            anchors, anchors_sha256, problems = _anchors(path, index, judge)
            refused += problems
        elif path.name in listed:
            document, problems = _document(path, listed[path.name], judge, folder)
            refused += problems
            if document is not None:
                documents.append((document, path))
        else:
            refused.append(
                Problem(
                    str(path),
                    "not written by calibrate fingerprint: index.json does not list it",
                    expected=f"only the files calibrate fingerprint wrote in {folder}: remove it or move it elsewhere",
                )
            )
    refused += _gone(folder, listed, files)
    if refused:  # a folder with a file refused has no latest: the one refused might have been it
        return Fingerprints(folder, index, None, None, None, None, len(documents), tuple(refused))
    latest, latest_file = max(documents, key=lambda d: (d[0].created, d[0].verdict != "SAME"), default=(None, None))
    return Fingerprints(folder, index, anchors, anchors_sha256, latest, latest_file, len(documents))


def _texts(value: dict[str, Any]) -> tuple[str, Any]:
    """The text written for a document, and the JSON value a reader gets back from it."""
    text = json.dumps(value, indent=2, default=str) + "\n"
    return text, parse_json(text, JsonValue, source="the document written", expected="JSON")


def _index_text(index: FingerprintIndex) -> str:
    return json.dumps(index.model_dump(mode="json"), indent=2) + "\n"


def store_anchors(
    folder: Path, judge: str, index: FingerprintIndex | None, document: dict[str, Any]
) -> tuple[AnchorSet, str, FingerprintIndex]:
    """Write ``anchors.json`` and, last, ``index.json`` with its hash; the anchor set is checked as a
    reader would check it first. Returns the anchor set, its hash and the new index."""
    path = folder / ANCHORS_FILE
    text, value = _texts(document)
    anchors = validate(value, AnchorSet, source=str(path), expected=f"the anchor set of judge {judge}")
    digest = content_hash(value)
    index = (index or FingerprintIndex(format=INDEX_FORMAT, judge=judge)).model_copy(
        update={"anchors": AnchorsEntry(file=ANCHORS_FILE, sha256=digest)}
    )
    folder.mkdir(parents=True, exist_ok=True)
    write_all({path: text, folder / INDEX_FILE: _index_text(index)})
    return anchors, digest, index


def store_fingerprint(folder: Path, judge: str, index: FingerprintIndex, name: str, document: dict[str, Any]) -> Path:
    """Write the fingerprint ``NAME`` (``STAMP.json``) and, last, ``index.json`` listing it with its hash."""
    path = folder / name
    text, value = _texts(document)
    validate(value, FingerprintDocument, source=str(path), expected=f"a fingerprint of judge {judge}")
    entry = IndexEntry(file=name, sha256=content_hash(value))
    index = index.model_copy(update={"fingerprints": [e for e in index.fingerprints if e.file != name] + [entry]})
    write_all({path: text, folder / INDEX_FILE: _index_text(index)})
    return path
