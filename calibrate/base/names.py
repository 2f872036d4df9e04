"""Names that become file and folder names, and paths that must stay inside their campaign.

A judge's name becomes the folder ``fingerprints/JUDGE/``, a sample's the files ``samples/NAME.csv``
and ``samples/NAME.json``. A name is kept **as it is**, or refused where it is declared (in
``campaign.toml``, on the command line); it is never rewritten, so the folder on disk is the name a
person wrote and reads. The rule (:data:`RULE`) keeps every name a person would choose for a judge or
a sample (``faithfulness-gpt-4.1``, ``llama3:8b``, ``ann@example.com``, ``pilot 2``, ``fidélité``) and
refuses what could leave the folder or be misread:

- 1 to :data:`MAX_LENGTH` characters, at most :data:`MAX_BYTES` bytes in UTF-8 (a file name is at most
  255 bytes, with room for the suffixes calibrate adds: ``.csv``, ``.json``, ``.tmp``);
- letters and digits of any alphabet (with their accents), and ``.`` ``_`` ``-`` ``@`` ``+`` ``:``, and
  spaces between them; so no ``/`` or ``\\`` (a folder boundary), no NUL or other control character
  (a newline, an escape sequence), no invisible formatting character (a right-to-left override);
- not ``.`` or ``..`` and not starting with ``.`` (a hidden file, or the folder above), nor with or
  ending in a space, nor ending in ``.`` (Windows drops a trailing dot or space: ``judge.`` would be the
  folder ``judge``);
- not a name Windows reserves for a device, in any case and with any extension (``CON``, ``PRN``,
  ``AUX``, ``NUL``, ``COM0``-``COM9``, ``LPT0``-``LPT9``: ``CON.csv`` is no file there).

Two names that differ only by case or Unicode form (``Judge`` and ``judge``; ``é`` composed and
decomposed) are one file or folder on macOS and Windows disks: where names become files, compare them
by :func:`name_key` (NFC, then case folded) and refuse the second.

:func:`path_component` applies the rule; :func:`inside` joins components to a campaign folder and
checks that the path, its symbolic links followed, stays inside it (a link planted in the folder that
points elsewhere is refused, naming it).

Examples
--------
>>> path_component("faithfulness-gpt-4.1", what="judge name")
'faithfulness-gpt-4.1'
>>> path_component("../../x", what="judge name")
Traceback (most recent call last):
...
calibrate.base.names.UnsafeName: judge name '../../x' cannot be a file or folder name: it holds '/'; ...
"""

from __future__ import annotations

import os
import unicodedata
from pathlib import Path

from calibrate.base.errors import FileError

__all__ = [
    "MAX_BYTES",
    "MAX_LENGTH",
    "RESERVED",
    "RULE",
    "OutsideFolder",
    "UnsafeName",
    "inside",
    "is_inside",
    "name_key",
    "name_problem",
    "path_component",
    "writes_into",
]

#: the longest name kept, in characters, and in bytes of UTF-8
MAX_LENGTH, MAX_BYTES = 100, 200
#: the punctuation a name may hold besides letters and digits (a space only between other characters)
PUNCTUATION = "._-@+: "
#: the rule, as error messages state it
RULE = (
    f"1 to {MAX_LENGTH} characters ({MAX_BYTES} bytes in UTF-8) of letters, digits, '.', '_', '-', '@', '+', "
    "':' and spaces between them, not starting with '.' nor ending with '.', and not a name Windows reserves "
    "(CON, PRN, AUX, NUL, COM0-9, LPT0-9)"
)
#: the names Windows reserves for devices, whatever their case or extension (and the superscript digits
#: it takes for 1, 2 and 3)
RESERVED = frozenset(
    {"con", "prn", "aux", "nul"}
    | {f"{port}{digit}" for port in ("com", "lpt") for digit in "0123456789\u00b9\u00b2\u00b3"}
)


class UnsafeName(ValueError):
    """A name that cannot be kept as a file or folder name; the message names it, why, and the rule."""

    def __init__(self, name: object, what: str, why: str):
        self.name, self.what, self.why = name, what, why
        super().__init__(f"{what} {name!r} cannot be a file or folder name: {why}; a name that becomes one has {RULE}")


class OutsideFolder(FileError):
    """A path that would lead outside its campaign folder (through ``..`` or a symbolic link)."""


def _shown(character: str) -> str:
    return repr(character) if character.isprintable() else f"U+{ord(character):04X}"


def name_problem(name: object) -> str | None:
    """Why ``name`` cannot be kept as one file or folder name under :data:`RULE`, or None.

    Examples
    --------
    >>> [name_problem(n) for n in ("judge-a", "ann@example.com", "pilot 2", "fidélité")]
    [None, None, None, None]
    >>> name_problem(".."), name_problem("a\\nb"), name_problem("")
    ("it is '..'", 'it holds U+000A, a control character', 'it is empty')
    """
    if not isinstance(name, str):
        return f"it is a {type(name).__name__}, not text"
    if not name:
        return "it is empty"
    if name in (".", ".."):
        return f"it is {name!r}"
    if len(name) > MAX_LENGTH:
        return f"it has {len(name)} characters, more than {MAX_LENGTH}"
    if len(name.encode("utf-8", "surrogatepass")) > MAX_BYTES:
        return f"it takes {len(name.encode('utf-8', 'surrogatepass'))} bytes in UTF-8, more than {MAX_BYTES}"
    for character in name:
        if character in "/\\":
            return f"it holds {character!r}"
        category = unicodedata.category(character)
        if category[0] == "C":
            kind = "a control character" if category == "Cc" else "an invisible or unassigned character"
            return f"it holds {_shown(character)}, {kind}"
        if category[0] not in "LNM" and character not in PUNCTUATION:
            return f"it holds {_shown(character)}"
    if name.startswith("."):
        return "it starts with '.' (a hidden file)"
    if name != name.strip(" "):
        return "it starts or ends with a space"
    if name.endswith("."):
        return "it ends with '.' (Windows drops it: another name's file)"
    if name.split(".")[0].rstrip(" ").casefold() in RESERVED:
        return f"{name.split('.')[0]!r} is a name Windows reserves for a device"
    if unicodedata.category(name[0])[0] == "M":
        return f"it starts with {_shown(name[0])}, a combining mark"
    return None


def name_key(name: str) -> str:
    """What two names that become files are compared by: the same key, the same file on a macOS or
    Windows disk (Unicode NFC, then case folded).

    Examples
    --------
    >>> import unicodedata
    >>> name_key("Judge") == name_key("judge"), name_key("é") == name_key(unicodedata.normalize("NFD", "é"))
    (True, True)
    >>> name_key("judge-a") == name_key("judge-b")
    False
    """
    return unicodedata.normalize("NFC", unicodedata.normalize("NFC", name).casefold())


def path_component(name: object, *, what: str = "name") -> str:
    """``name`` itself, when it can be one file or folder name (:data:`RULE`); else :class:`UnsafeName`.

    Parameters
    ----------
    name : str
    what : str
        What the name is, for the message (``"judge name"``, ``"sample name"``).

    Examples
    --------
    >>> path_component("random-0", what="sample name")
    'random-0'
    >>> path_component("a/b", what="sample name")
    Traceback (most recent call last):
    ...
    calibrate.base.names.UnsafeName: sample name 'a/b' cannot be a file or folder name: it holds '/'; ...
    """
    why = name_problem(name)
    if why:
        raise UnsafeName(name, what, why)
    return name  # type: ignore[return-value]


def is_inside(path: str | Path, folder: str | Path) -> bool:
    """Whether ``path``, its symbolic links followed, is ``folder`` or lies under it.

    >>> is_inside("/tmp/campaign/samples/x.csv", "/tmp/campaign"), is_inside("/tmp/campaign/../x", "/tmp/campaign")
    (True, False)
    """
    base = Path(os.path.realpath(folder))
    resolved = Path(os.path.realpath(path))
    return resolved == base or base in resolved.parents


def _outside(path: Path, folder: str | Path) -> OutsideFolder:
    return OutsideFolder(
        path,
        f"leads outside the campaign folder {folder} (through a symbolic link, to {os.path.realpath(path)})",
        "nothing was written there; remove the link, or keep the folder inside the campaign",
    )


def writes_into(path: str | Path, folder: str | Path) -> bool:
    """Whether writing ``path`` (a file or folder a command writes, such as ``--out``) writes into the
    campaign ``folder``: then the write holds the campaign's lock. A path named under the folder that a
    symbolic link leads outside is refused, never followed.

    Raises
    ------
    OutsideFolder
        ``path`` is named under ``folder`` (``CAMPAIGN/report``) but resolves outside it.

    Examples
    --------
    >>> import tempfile
    >>> campaign = Path(tempfile.mkdtemp())
    >>> writes_into(campaign / "report", campaign), writes_into(campaign.parent / "elsewhere", campaign)
    (True, False)
    >>> (campaign / "planted").symlink_to(tempfile.mkdtemp())
    >>> writes_into(campaign / "planted", campaign)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    calibrate.base.names.OutsideFolder: .../planted: leads outside the campaign folder ...
    """
    named, base = Path(path).absolute(), Path(folder).absolute()
    if named == base or base in named.parents:  # as written, under the campaign: it must stay there
        if not is_inside(named, base):
            raise _outside(Path(path), folder)
        return True
    return is_inside(path, folder)  # named elsewhere, and perhaps a link into the campaign


def inside(folder: str | Path, *parts: str) -> Path:
    """``folder / part / ...``, checked to stay inside ``folder`` with every symbolic link followed.

    Each part is one component: not empty, ``.`` or ``..``, and without ``/``, ``\\`` or NUL (apply
    :func:`path_component` to a name first; fixed names such as ``"samples"`` pass as they are).

    Raises
    ------
    UnsafeName
        A part that is not one component.
    OutsideFolder
        A path that a symbolic link (on the way, or the file itself) leads outside ``folder``.

    Examples
    --------
    >>> import tempfile
    >>> campaign = Path(tempfile.mkdtemp())
    >>> inside(campaign, "fingerprints", "judge-a") == campaign / "fingerprints" / "judge-a"
    True
    >>> (campaign / "samples").symlink_to(tempfile.mkdtemp())
    >>> inside(campaign, "samples", "random-0.csv")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    calibrate.base.names.OutsideFolder: .../samples/random-0.csv: leads outside the campaign folder ...
    """
    for part in parts:
        if not isinstance(part, str) or part in ("", ".", "..") or any(c in part for c in "/\\\0"):
            raise UnsafeName(part, "path part", "it is not one file or folder name")
    path = Path(folder).joinpath(*parts)
    if not is_inside(path, folder):
        raise _outside(path, folder)
    return path
