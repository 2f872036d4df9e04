"""Settings read from the environment: limits and deadlines a user may change for a whole session.

Each is a number, read when it is needed (never when a module is imported), by :func:`env_number`:
a value that is not a number, not finite, or out of its range is a :class:`SettingError` naming the
variable, the value found and what is expected, and every command shows it as a clean error (it is a
:class:`~calibrate.base.errors.FileError`, which the command line reports with exit code 2), instead
of falling back to the default in silence or failing with a traceback.

=================================  ===========================================  =========
variable                           what it limits                               default
=================================  ===========================================  =========
``CALIBRATE_HTTP_TIMEOUT_S``       one HTTP request, the whole reply included   60 s
``CALIBRATE_COMMAND_TIMEOUT_S``    a command made of many requests (an import)  3600 s
``CALIBRATE_MAX_REPLY_MB``         one HTTP reply                               256 MB
``CALIBRATE_MAX_DOCUMENT_MB``      one document read (a file, a reply)          1024 MB
``CALIBRATE_LOCK_TIMEOUT``         the wait for a campaign another writer holds 60 s (0: none)
=================================  ===========================================  =========

Examples
--------
>>> env_number("CALIBRATE_EXAMPLE_S", 60.0, unit="seconds", meaning="one request may take", environ={})
60.0
>>> env_number("CALIBRATE_EXAMPLE_S", 60.0, unit="seconds", meaning="one request may take",
...            environ={"CALIBRATE_EXAMPLE_S": "4s"})
Traceback (most recent call last):
...
calibrate.base.settings.SettingError: CALIBRATE_EXAMPLE_S='4s': not a number of seconds above 0; set it to the seconds one request may take, or unset it for the default (60 seconds)
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping

from calibrate.base.errors import FileError

__all__ = ["SettingError", "env_number"]


class SettingError(FileError):
    """An environment setting calibrate cannot use: the message names the variable, the value found
    and what is expected."""


def env_number(
    name: str,
    default: float,
    *,
    unit: str,
    meaning: str,
    zero: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> float:
    """The number the environment variable ``name`` holds, or ``default`` when it is unset or empty.

    Parameters
    ----------
    name : str
        The variable (``CALIBRATE_HTTP_TIMEOUT_S``).
    default : float
    unit : str
        What it counts (``"seconds"``, ``"megabytes"``).
    meaning : str
        What it sets, for the message: "set it to the {unit} {meaning}".
    zero : str, optional
        What 0 means, when 0 is allowed (``"refuse at once"``); else the value must be above 0.
    environ : mapping, optional
        Where to read it (``os.environ``).

    Raises
    ------
    SettingError
        Not a number (``4s``, ``abc``), not finite (``nan``, ``inf``, ``1e400``), negative, or 0
        where 0 is not allowed.

    Examples
    --------
    >>> env_number("X_MB", 256, unit="megabytes", meaning="a reply may hold", environ={"X_MB": " 2.5 "})
    2.5
    >>> env_number("X_S", 60, unit="seconds", meaning="to wait", zero="do not wait", environ={"X_S": "0"})
    0.0
    >>> env_number("X_MB", 256, unit="megabytes", meaning="a reply may hold", environ={"X_MB": "-5"})
    Traceback (most recent call last):
    ...
    calibrate.base.settings.SettingError: X_MB='-5': not a number of megabytes above 0; set it to the megabytes a reply may hold, or unset it for the default (256 megabytes)
    """
    text = (os.environ if environ is None else environ).get(name, "")
    text = text.strip() if isinstance(text, str) else ""
    if not text:
        return float(default)
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0 or (value == 0 and not zero):
        raise SettingError(
            f"{name}={text[:80]!r}",
            f"not a number of {unit}{', 0 or more' if zero else ' above 0'}",
            f"set it to the {unit} {meaning}{f' (0: {zero})' if zero else ''}, or unset it for the "
            f"default ({default:g} {unit})",
        )
    return value
