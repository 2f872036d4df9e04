"""Writing the files calibrate exports so that a crash or a full disk leaves the previous version
whole, and holding a campaign folder for one writer at a time (:func:`holding`,
:func:`writes_campaign`)."""

from __future__ import annotations

import datetime as _dt
import functools
import inspect
import os
import re
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TextIO

from calibrate.base.errors import FileError, FolderInUse

__all__ = [
    "LOCK_NAME",
    "LOCK_TIMEOUT_ENV",
    "LOCK_TIMEOUT_S",
    "WRITERS",
    "campaign_folder_of",
    "held",
    "holding",
    "lock_timeout",
    "on_wait",
    "replacing",
    "write_all",
    "writes_campaign",
]

#: the lock file of a campaign folder, held by every command that writes the campaign (a file lock,
#: released by the system when the process ends however it ends, so a killed writer never leaves it stuck)
LOCK_NAME = ".calibrate.lock"


def _fresh(temporary: Path) -> TextIO:
    """A new file at ``temporary``: what was there (a killed writer's leftover, or a link planted to lead
    the write elsewhere) is removed first, never written through."""
    temporary.unlink(missing_ok=True)
    return temporary.open("x", newline="", encoding="utf-8")


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
        with _fresh(temporary) as handle:
            yield handle
        os.replace(temporary, path)
    except OSError as exc:
        if exc.filename not in (None, str(path), str(temporary)):
            raise  # a file the block itself opened, not this one
        kept = "the previous version is kept whole" if path.exists() else "nothing was written"
        raise FileError(
            path,
            f"cannot be written ({exc.strerror or exc})",
            f"{kept}; free some space or choose a writable place, and run again",
        ) from None
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
            with _fresh(temporaries[path]) as handle:
                handle.write(text)
        for path, temporary in temporaries.items():
            current = path
            os.replace(temporary, path)
    except OSError as exc:
        kept = "the previous version is kept whole" if current.exists() else "nothing was written"
        raise FileError(
            current,
            f"cannot be written ({exc.strerror or exc})",
            f"{kept}; free some space or choose a writable place, and run again",
        ) from None
    finally:
        for temporary in temporaries.values():
            temporary.unlink(missing_ok=True)


#: how long a writer waits for the process that holds a campaign, in seconds, unless
#: ``CALIBRATE_LOCK_TIMEOUT`` says otherwise (0: refuse at once)
LOCK_TIMEOUT_S = 60.0
LOCK_TIMEOUT_ENV = "CALIBRATE_LOCK_TIMEOUT"
#: every library function that writes a campaign, as :func:`writes_campaign` registers it: its
#: qualified name -> the command it is
WRITERS: dict[str, str] = {}
_POLL_S = 0.05


class _Hold:
    """This process's hold on one campaign folder: the file lock, taken once, and a count of the
    blocks holding it (a writer calling another writer holds it twice, and waits for nothing)."""

    def __init__(self) -> None:
        self.thread_lock = threading.RLock()  # threads of one process take turns too
        self.handle: TextIO | None = None
        self.depth = 0
        self.what = ""
        self.folder: str | Path = ""


_held: dict[str, _Hold] = {}
_registry = threading.Lock()
_wait_notices: list[Callable[[str, str, float], None]] = []
# a forked child holds nothing of its parent's (it never unlocks the parent's file either)
os.register_at_fork(after_in_child=_held.clear)


def _key(folder: str | Path) -> str:
    return os.path.realpath(folder)


def lock_timeout() -> float:
    """How long a writer waits for a campaign another process holds: ``CALIBRATE_LOCK_TIMEOUT``
    (seconds, 0 to refuse at once), else :data:`LOCK_TIMEOUT_S`.

    >>> lock_timeout() >= 0
    True
    """
    from calibrate.base.settings import env_number

    return env_number(
        LOCK_TIMEOUT_ENV,
        LOCK_TIMEOUT_S,
        unit="seconds",
        zero="refuse at once",
        meaning="a writer waits for a campaign another process holds",
    )


def on_wait(notice: Callable[[str, str, float], None]) -> None:
    """Call ``notice(folder, holder, timeout)`` when a writer starts waiting for a campaign (the command
    line says so on stderr: the library itself prints nothing)."""
    _wait_notices.append(notice)


def held(folder: str | Path) -> bool:
    """Whether this process holds the campaign ``folder`` (:func:`holding`).

    >>> import tempfile
    >>> folder = tempfile.mkdtemp()
    >>> with holding(folder, "calibrate sample"):
    ...     held(folder)
    True
    >>> held(folder)
    False
    """
    hold = _held.get(_key(folder))
    return hold is not None and hold.depth > 0


def _holder(handle: TextIO) -> str:
    handle.seek(0)
    return handle.read(1000).strip() or "another calibrate process (starting)"


def _in_use(folder: str | Path, holder: str, timeout: float) -> FolderInUse:
    waited = f"waited {timeout:g} s for it; " if timeout > 0 else ""
    stop = re.search(r"process (\d+)", holder)
    return FolderInUse(
        folder,
        f"in use by {holder}",
        f"{waited}let it finish (or stop it{': kill ' + stop.group(1) if stop else ''}) and run "
        f"again, or wait longer with {LOCK_TIMEOUT_ENV}=SECONDS: two writers at once would lose "
        "one's work (or pay for every model call twice)",
    )


def _open_lock(path: Path) -> TextIO:
    try:  # never through a link: the holder's note would overwrite where it leads
        return os.fdopen(os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644), "a+", encoding="utf-8")
    except OSError as exc:
        if path.is_symlink():
            raise FileError(path, "is a symbolic link", "remove it: calibrate makes its own lock file") from None
        raise FileError(
            path,
            f"cannot be made ({exc.strerror})",
            "make the campaign folder writable (a campaign is locked while it is written)",
        ) from None


def _is_current(handle: TextIO, path: Path) -> bool:
    """Whether ``handle`` is still the file at ``path`` (a holder removes its lock file as it lets go:
    one locked after that is a file no one else will look at, and is opened again)."""
    try:
        now = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        return False
    mine = os.fstat(handle.fileno())
    return (now.st_dev, now.st_ino) == (mine.st_dev, mine.st_ino)


def _take(folder: str | Path, what: str, deadline: float, timeout: float) -> TextIO:
    """The campaign's lock file, locked (waiting until ``deadline``), with ``what`` holds it written in."""
    import fcntl

    path = Path(folder) / LOCK_NAME
    handle = _open_lock(path)
    told = False
    try:
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise _in_use(folder, _holder(handle), timeout) from None
                if not told:
                    told = True
                    for notice in _wait_notices:
                        notice(str(folder), _holder(handle), timeout)
                time.sleep(min(_POLL_S, max(deadline - time.monotonic(), 0)))
                continue
            if _is_current(handle, path):
                break
            handle.close()  # the holder let go and removed it: the lock is the file at the path now
            handle = _open_lock(path)
        handle.seek(0)
        handle.truncate()
        since = _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")
        handle.write(f"{what} (process {os.getpid()} on {socket.gethostname()}, since {since})\n")
        handle.flush()
    except BaseException:
        handle.close()
        raise
    return handle


def _let_go(handle: TextIO, folder: str | Path) -> None:
    """Remove the lock file (still holding it: no one else holds it meanwhile), then let go."""
    import fcntl

    path = Path(folder) / LOCK_NAME
    try:
        if _is_current(handle, path):
            path.unlink()
        fcntl.flock(handle, fcntl.LOCK_UN)
    except OSError:
        pass  # the folder went (an init that cleaned up): closing releases the lock
    finally:
        handle.close()


@contextmanager
def holding(folder: str | Path, what: str, *, timeout: float | None = None) -> Iterator[None]:
    """Hold the campaign ``folder`` for this process (``what``: the command, as others are told) for the
    block: a second writer waits for it, up to ``timeout`` seconds (default :func:`lock_timeout`), then
    raises :class:`~calibrate.base.errors.FolderInUse` naming the holder (command, process, since when).

    The lock is a file lock on ``.calibrate.lock`` in the folder, which says who holds it and is removed
    when the holder lets go. The system releases the lock when the process ends however it ends, so a
    killed writer leaves nothing stuck (only its note, which the next writer replaces). It is reentrant:
    a block inside another of the same process (a writer calling another writer) holds it once more,
    at once.

    Examples
    --------
    >>> import tempfile
    >>> folder = tempfile.mkdtemp()
    >>> with holding(folder, "calibrate import"):
    ...     with holding(folder, "calibrate cases import"):   # the same process: held at once
    ...         held(folder)
    True
    """
    limit = lock_timeout() if timeout is None else timeout
    deadline = time.monotonic() + limit
    with _registry:
        hold = _held.setdefault(_key(folder), _Hold())
    if not (hold.thread_lock.acquire(timeout=limit) if limit > 0 else hold.thread_lock.acquire(blocking=False)):
        raise _in_use(folder, f"{hold.what} (another thread of this process, process {os.getpid()})", limit)
    try:
        if hold.depth == 0:
            hold.handle, hold.what, hold.folder = _take(folder, what, deadline, limit), what, folder
        hold.depth += 1
    except BaseException:
        hold.thread_lock.release()
        raise
    try:
        yield
    finally:
        hold.depth -= 1
        if hold.depth == 0:
            handle, hold.handle = hold.handle, None
            _let_go(handle, hold.folder)
        hold.thread_lock.release()


def campaign_folder_of(value: Any) -> Path | None:
    """The folder of a campaign argument: a path, or an object with a ``path`` (a loaded Campaign)."""
    if isinstance(value, (str, os.PathLike)):
        return Path(value)
    path = getattr(value, "path", None)
    return Path(path) if isinstance(path, (str, os.PathLike)) else None


def writes_campaign(command: str, *, when: Callable[[inspect.BoundArguments], bool] | None = None):
    """Declare a library function that writes a campaign: it holds the campaign (its first argument, a
    folder or a loaded campaign, when it holds a ``campaign.toml``) for its whole run, read, compute and
    write, as ``command``.

    ``when`` (given the bound arguments) says when it writes at all, for a function that only reads
    with some arguments. Every such function is listed in :data:`WRITERS` (a test checks each writer
    of the campaign folder is).

    Examples
    --------
    >>> import tempfile
    >>> @writes_campaign("calibrate example")
    ... def example(folder):
    ...     return held(folder)
    >>> campaign = Path(tempfile.mkdtemp())
    >>> _ = (campaign / "campaign.toml").write_text('name = "c"')
    >>> example(campaign), WRITERS[f"{example.__module__}.{example.__qualname__}"]
    (True, 'calibrate example')
    """

    def decorate(function: Callable) -> Callable:
        signature = inspect.signature(function)

        @functools.wraps(function)
        def wrapper(*args, **kwargs):
            bound = signature.bind_partial(*args, **kwargs)
            folder = campaign_folder_of(next(iter(bound.arguments.values()), None))
            if folder is None or not (folder / "campaign.toml").is_file() or (when is not None and not when(bound)):
                return function(*args, **kwargs)  # no campaign there: the function says what is wrong
            with holding(folder, command):
                return function(*args, **kwargs)

        WRITERS[f"{function.__module__}.{function.__qualname__}"] = command
        wrapper.writes_campaign = command
        return wrapper

    return decorate
