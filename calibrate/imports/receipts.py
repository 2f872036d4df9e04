"""Knowing that an import of files would change nothing, without reading them through their format.

An import of files (a DeepEval test run, a RAGAS result, ...) leaves a receipt in the import store
(:meth:`~calibrate.imports.store.ImportStore.add_receipt`): the :func:`source_key` of what it read, the
:func:`campaign_state` it left, and the result importing the same again would give (:func:`repeated`).
Importing twice changes nothing, byte for byte; so when the same files, with the same options, meet a
campaign still in the state an import of them left, :func:`unchanged` says so and nothing is read,
checked or written (a 100,000-case test run: under a second instead of a full import's half minute).

The state is what the campaign is made of: the content of every file the campaign loads from and an
import reads or writes (:data:`CONTENT`, and ``samples/``), the size and time of every other entry of the
folder, and where the import store's history stands (:meth:`~calibrate.imports.store.ImportStore.marker`).
Anything changed since, by hand or by any command (a rating edited, a case added, another import, a
withdrawal undone, a metric declared), and the import runs in full, as it always did: a receipt never
stands in for an import whose result could differ.

The key's contract: it hashes :data:`RECEIPT_VERSION`, calibrate's version, the tool, the options, and
each file's path as given and its bytes. Changing what a reader makes of a file, or what an import does
with it, without a new version of calibrate, changes :data:`RECEIPT_VERSION`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from calibrate.base.errors import StoreError
from calibrate.base.files import LOCK_NAME
from calibrate.base.manifest import package_version
from calibrate.campaign import (
    ADJUDICATIONS_FILE,
    CASES_FILE,
    IMPORTED_META_FILE,
    LABELSTUDIO_META_FILE,
    SAMPLES_FOLDER,
)
from calibrate.campaign.model import EXPORTED_RATINGS_FILES, RATINGS_FILES
from calibrate.imports.store import STORE_NAME, ImportStore

__all__ = ["CONTENT", "RECEIPT_VERSION", "campaign_state", "repeated", "source_key", "unchanged"]

#: changes when what a reader makes of a file, or what an import does with it, changes (every receipt
#: kept before is then no longer honoured, and the next import of each file runs in full)
RECEIPT_VERSION = "import-receipt-1"
#: the files of a campaign folder hashed by content: those ``load_campaign`` and an import read or write
CONTENT = frozenset(
    {
        "campaign.toml",
        *RATINGS_FILES,
        *EXPORTED_RATINGS_FILES,
        CASES_FILE,
        ADJUDICATIONS_FILE,
        IMPORTED_META_FILE,
        LABELSTUDIO_META_FILE,
    }
)
_CHUNK = 1 << 20
CALIBRATE = "calibrate-judges"  # the distribution (calibrate.DISTRIBUTION, above this folder)


def _hash_file(digest: Any, path: Path) -> None:
    with path.open("rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)


def source_key(kind: str, files: Mapping[str, str | Path | None], options: Mapping[str, Any]) -> str:
    """The hash of what an import of files reads: the tool ``kind``, each file (its role -> path, None
    for one not given) by its path as given and its bytes, and the ``options`` (JSON-able).

    Examples
    --------
    >>> import tempfile
    >>> path = Path(tempfile.mkdtemp()) / "run.json"
    >>> _ = path.write_text('{"testCases": []}')
    >>> key = source_key("deepeval", {"run": path}, {"rater": None})
    >>> key == source_key("deepeval", {"run": path}, {"rater": None}), key == source_key("deepeval", {"run": path}, {"rater": "x"})
    (True, False)
    >>> _ = path.write_text('{"testCases": [] }')
    >>> key == source_key("deepeval", {"run": path}, {"rater": None})
    False
    """
    digest = hashlib.sha256()
    head = {
        "receipt": RECEIPT_VERSION,
        "calibrate": package_version(CALIBRATE),
        "kind": kind,
        "options": dict(options),
        "files": {role: None if path is None else str(path) for role, path in files.items()},
    }
    digest.update(json.dumps(head, sort_keys=True, default=str).encode() + b"\0")
    for role, path in sorted(files.items()):
        if path is not None:
            digest.update(role.encode() + b"\0")
            _hash_file(digest, Path(path))
            digest.update(b"\0")
    return "sha256:" + digest.hexdigest()


def _entries(folder: Path, texts: Mapping[str, str]) -> list[str]:
    """The names in the campaign folder (and ``samples/NAME``) that make its state, with those about to be written."""
    names = {p.name for p in folder.iterdir()} | set(texts)
    samples = folder / SAMPLES_FOLDER
    if samples.is_dir():
        names.discard(SAMPLES_FOLDER)
        names |= {f"{SAMPLES_FOLDER}/{p.name}" for p in samples.iterdir()}
    # the lock, the import store (its history is the marker) and files half written are no part of it
    return sorted(n for n in names if n != LOCK_NAME and not n.startswith(STORE_NAME) and not n.endswith(".tmp"))


def campaign_state(folder: str | Path, marker: str, texts: Mapping[str, str] | None = None) -> str:
    """The hash of a campaign folder's state (the module docstring says what it holds): ``marker`` is
    the import store's, and ``texts`` (file name -> text) the files an import is about to write, hashed
    as they will be.

    Examples
    --------
    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> _ = (folder / "campaign.toml").write_text('name = "c"')
    >>> before = campaign_state(folder, "m", {"cases.jsonl": "{}\\n"})
    >>> _ = (folder / "cases.jsonl").write_text("{}\\n")
    >>> campaign_state(folder, "m") == before, campaign_state(folder, "n") == before
    (True, False)
    """
    folder = Path(folder)
    texts = texts or {}
    digest = hashlib.sha256(marker.encode() + b"\0")
    for name in _entries(folder, texts):
        path = folder / name
        digest.update(name.encode() + b"\0")
        if name in texts:
            digest.update(b"content\0" + texts[name].encode("utf-8"))
        elif not path.exists():
            digest.update(b"absent")
        elif name in CONTENT or name.startswith(SAMPLES_FOLDER + "/"):
            digest.update(b"content\0")
            if path.is_file():
                _hash_file(digest, path)
        else:  # another file of the folder (a store, a report): by size and time, not read
            info = path.stat()
            digest.update(f"stat {info.st_size} {info.st_mtime_ns} {path.is_dir()}".encode())
        digest.update(b"\0")
    return "sha256:" + digest.hexdigest()


def repeated(result: Mapping[str, Any]) -> dict[str, Any]:
    """What importing the same again gives, from an import's ``result``: every case and rating it
    brought unchanged, nothing withdrawn or written, and ``unchanged_since`` its ``import_id``.

    Examples
    --------
    >>> doc = {"import_id": "deepeval-1", "cases": {"added": 2, "unchanged": 1, "completed": 0}, "withdrawn": [],
    ...     "ratings": {"new": 3, "changed": 1, "unchanged": 2, "restored": 0, "withdrawn": 0, "absent_kept": 1,
    ...     "absent_held": 0}, "files": ["cases.jsonl"]}
    >>> again = repeated(doc)
    >>> again["cases"], again["ratings"]["unchanged"], again["ratings"]["absent_kept"], again["unchanged_since"]
    ({'added': 0, 'unchanged': 3, 'completed': 0}, 6, 1, 'deepeval-1')
    """
    cases, ratings = result["cases"], result["ratings"]
    return {
        **result,
        "import_id": None,
        "unchanged_since": result["import_id"],
        "cases": {"added": 0, "unchanged": sum(cases[k] for k in ("added", "unchanged", "completed")), "completed": 0},
        "ratings": {
            **ratings,
            **dict.fromkeys(("new", "changed", "restored", "withdrawn"), 0),
            "unchanged": sum(ratings[k] for k in ("new", "changed", "unchanged", "restored")),
        },
        "withdrawn": [],
        "files": [],
    }


def unchanged(folder: str | Path, key: str, *, dry_run: bool = False) -> dict[str, Any] | None:
    """The result of importing what ``key`` hashes into the campaign ``folder`` when an import of it
    left the campaign as it is now (nothing to do); None when the import must run.

    Examples
    --------
    >>> import tempfile
    >>> unchanged(tempfile.mkdtemp(), "sha256:0") is None   # no import store: nothing was imported
    True
    """
    folder = Path(folder)
    if not (folder / STORE_NAME).is_file():
        return None
    try:
        store = ImportStore(folder, read_only=True)
        try:
            found = store.receipt(key)
            if found is None or found["state"] != campaign_state(folder, store.marker()):
                return None
        finally:
            store.close()
    except StoreError:
        return None  # the import runs, and says what is wrong with the store
    return {**found["result"], "dry_run": dry_run}
