"""Writing the files calibrate exports so that a crash or a full disk leaves the previous version
whole, and holding a campaign folder for one process at a time."""

from __future__ import annotations

import datetime as _dt
import os
import socket
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO

from calibrate.base.errors import FileError, FolderInUse

__all__ = ["replacing", "write_all", "holding", "LOCK_NAME"]

#: the lock file of a campaign folder's judge runs (a file lock, released by the system when the
#: process ends however it ends, so a killed run never leaves it stuck)
LOCK_NAME = ".calibrate-judge.lock"


@contextmanager
def replacing(path: str | Path) -> Iterator[TextIO]:
    """A text handle (UTF-8, no newline translation) on ``PATH.tmp``, moved over ``path`` when the
    block ends without an error, and removed when it does not.

    Examples
    --------
    >>> import tempfile
    >>> target = Path(tempfile.mkdtemp()) / "out.csv"
    >>> with replacing(target) as handle:
    ...     _ = handle.write("a,b\\n")
    >>> target.read_text(), sorted(p.name for p in target.parent.iterdir())
    ('a,b\\n', ['out.csv'])
    """
    path = Path(path)
    temporary = path.with_name(path.name + ".tmp")
    try:
        with temporary.open("w", newline="", encoding="utf-8") as handle:
            yield handle
        os.replace(temporary, path)
    except OSError as exc:
        if exc.filename not in (None, str(path), str(temporary)):
            raise  # a file the block itself opened, not this one
        kept = "the previous version is kept whole" if path.exists() else "nothing was written"
        raise FileError(path, f"cannot be written ({exc.strerror or exc})",
                        f"{kept}; free some space or choose a writable place, and run again") from None
    finally:
        temporary.unlink(missing_ok=True)


def write_all(texts: dict[Path, str]) -> None:
    """Write several files together: each to ``PATH.tmp`` first, then all moved into place, so that
    a full disk leaves every previous version whole (nothing new is moved in until all is written).

    Examples
    --------
    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> write_all({folder / "a.md": "# a\\n", folder / "a.json": "{}"})
    >>> sorted(p.name for p in folder.iterdir())
    ['a.json', 'a.md']
    """
    temporaries = {path: path.with_name(path.name + ".tmp") for path in texts}
    current = None
    try:
        for path, text in texts.items():
            current = path
            with temporaries[path].open("w", newline="", encoding="utf-8") as handle:
                handle.write(text)
        for path, temporary in temporaries.items():
            current = path
            os.replace(temporary, path)
    except OSError as exc:
        kept = "the previous version is kept whole" if current.exists() else "nothing was written"
        raise FileError(current, f"cannot be written ({exc.strerror or exc})",
                        f"{kept}; free some space or choose a writable place, and run again") from None
    finally:
        for temporary in temporaries.values():
            temporary.unlink(missing_ok=True)


@contextmanager
def holding(folder: str | Path, what: str) -> Iterator[None]:
    """Hold the campaign ``folder`` for one process (``what`` says for what) for the block, or raise
    :class:`~calibrate.base.errors.FolderInUse` naming the process that holds it.

    Examples
    --------
    >>> import tempfile
    >>> folder = tempfile.mkdtemp()
    >>> with holding(folder, "a judge run"):
    ...     try:
    ...         with holding(folder, "another judge run"):
    ...             pass
    ...     except FolderInUse as exc:
    ...         print(exc.problem.split(" (")[0])
    in use by a judge run
    """
    import fcntl

    path = Path(folder) / LOCK_NAME
    try:
        handle = path.open("a+", encoding="utf-8")
    except OSError as exc:
        raise FileError(path, f"cannot be made ({exc.strerror})", "make the campaign folder writable") from None
    try:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "another process"
            raise FolderInUse(folder, f"in use by {holder}",
                              "wait for it to finish (or stop it) and run again: two runs at once would pay "
                              "for every model call twice") from None
        handle.seek(0)
        handle.truncate()
        started = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
        handle.write(f"{what} (process {os.getpid()} on {socket.gethostname()}, started {started}: "
                     f"{' '.join(sys.argv[:3])[:200]})\n")
        handle.flush()
        try:
            yield
        finally:
            handle.seek(0)
            handle.truncate()
            fcntl.flock(handle, fcntl.LOCK_UN)
    finally:
        handle.close()
