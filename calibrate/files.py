"""Writing the files calibrate exports so that a crash leaves the previous version whole."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO

__all__ = ["replacing"]


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
    finally:
        temporary.unlink(missing_ok=True)
