"""When another tool says it last changed something: one reading of its timestamps, for every "latest wins".

Tools write times in many ISO 8601 shapes: ``2026-01-01T12:00:00Z``, ``...12:00:00.500Z`` (fractions of
any length), ``...12:00:00+01:00`` (an offset), ``2026-01-01`` (a date), ``...12:00:00.123456`` (no time
zone: LangSmith's, Inspect's local times). Compared as texts, ``12:00:00Z`` sorts after ``12:00:00.500Z``
and ``13:00+01:00`` after ``12:30Z``: the older revision would win. :func:`instant` reads each as an
aware :class:`~datetime.datetime` (a time without a zone is taken as UTC, so two times of one tool
compare as that tool meant them), and :func:`latest_first` orders by it; an integer is read as
milliseconds since the epoch only where the format says so (``epoch_ms=True``). A text that is no time
is a :class:`ValueError` saying what was found and what was expected.

Schemas declare such a field :data:`SourceTime` (or :data:`SourceTimeOrEpochMs`): a document whose time
does not read is a :class:`~calibrate.base.documents.DocumentError` naming its source, line and field,
and the text is kept as the tool wrote it.

Examples
--------
>>> instant("2026-01-01T12:00:00Z") < instant("2026-01-01T12:00:00.500Z")
True
>>> instant("2026-01-01T12:30:00+01:00") < instant("2026-01-01T12:00:00Z")
True
>>> instant("2026-01-01"), instant(1767268800000, epoch_ms=True)
(datetime.datetime(2026, 1, 1, 0, 0, tzinfo=datetime.timezone.utc), datetime.datetime(2026, 1, 1, 12, 0, tzinfo=datetime.timezone.utc))
>>> instant("yesterday")
Traceback (most recent call last):
...
ValueError: 'yesterday' is not a time: expected an ISO 8601 time such as 2026-01-01T12:00:00.500Z or 2026-01-01T13:00:00+01:00
"""

from __future__ import annotations

import datetime as _dt
from typing import Annotated, Any

from pydantic import BeforeValidator
from pydantic_core import PydanticCustomError

__all__ = ["EXPECTED_TIME", "SourceTime", "SourceTimeOrEpochMs", "instant", "latest_first"]

EXPECTED_TIME = "an ISO 8601 time such as 2026-01-01T12:00:00.500Z or 2026-01-01T13:00:00+01:00"
#: longer text is no timestamp (and is not quoted whole in an error)
MAX_TEXT = 64
#: the earliest time, for what has none
NEVER = _dt.datetime.min.replace(tzinfo=_dt.UTC)


def instant(value: Any, *, epoch_ms: bool = False) -> _dt.datetime:
    """The moment a tool's timestamp stands for, as an aware datetime (UTC where it gives no zone).

    Parameters
    ----------
    value : str, datetime or int
        ISO 8601 text (a date, a time with fractions of a second of any length, ``Z`` or an offset), a
        datetime, or (``epoch_ms``) an integer of milliseconds since 1970-01-01 UTC.
    epoch_ms : bool
        Whether the format gives integers of milliseconds (MLflow's ``*_time_ms``).

    Raises
    ------
    ValueError
        Anything else, quoting it (shortened) and saying what was expected.

    Examples
    --------
    >>> instant("2026-01-01T12:00:00.123456789Z").isoformat()
    '2026-01-01T12:00:00.123456+00:00'
    >>> instant("2026-01-01 12:00:00")  # no zone: UTC
    datetime.datetime(2026, 1, 1, 12, 0, tzinfo=datetime.timezone.utc)
    >>> instant(5)
    Traceback (most recent call last):
    ...
    ValueError: 5 is not a time: expected an ISO 8601 time such as 2026-01-01T12:00:00.500Z or 2026-01-01T13:00:00+01:00
    """
    if isinstance(value, _dt.datetime):
        found = value
    elif epoch_ms and isinstance(value, int) and not isinstance(value, bool):
        try:
            found = _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC) + _dt.timedelta(milliseconds=value)
        except OverflowError:
            raise ValueError(
                f"{value!r:.{MAX_TEXT}} milliseconds since 1970 is no time: expected a time between "
                "the years 1 and 9999"
            ) from None
    elif isinstance(value, str) and len(value) <= MAX_TEXT:
        try:
            found = _dt.datetime.fromisoformat(value.strip())
        except ValueError:
            raise ValueError(f"{value!r} is not a time: expected {EXPECTED_TIME}") from None
    else:
        also = " (or an integer of milliseconds since 1970)" if epoch_ms else ""
        raise ValueError(f"{value!r:.{MAX_TEXT}} is not a time: expected {EXPECTED_TIME}{also}")
    return found if found.tzinfo is not None else found.replace(tzinfo=_dt.UTC)


def latest_first(value: Any, *, epoch_ms: bool = False) -> _dt.datetime:
    """:func:`instant`, with no time (None, empty text) the earliest: a sort key for "the one updated last".

    >>> sorted(["2026-01-01T12:00:00.5Z", None, "2026-01-01T12:00:00Z"], key=latest_first)
    [None, '2026-01-01T12:00:00Z', '2026-01-01T12:00:00.5Z']
    """
    return NEVER if value is None or value == "" else instant(value, epoch_ms=epoch_ms)


def _checked(epoch_ms: bool) -> Any:
    def check(value: Any) -> Any:
        if value is None:
            return None
        try:
            moment = instant(value, epoch_ms=epoch_ms)
        except ValueError as exc:
            raise PydanticCustomError("source_time", "{why}", {"why": str(exc)}) from None
        # an integer is written as the time it stands for, so that every kept time is ISO 8601 text
        return value if isinstance(value, str) else moment.isoformat()

    return check


#: A tool's ISO 8601 timestamp (or null), checked to read as a time by :func:`instant` and kept as written.
SourceTime = Annotated[str | None, BeforeValidator(_checked(False))]
#: As :data:`SourceTime`, or an integer of milliseconds since the epoch (kept as ISO 8601 text in UTC).
SourceTimeOrEpochMs = Annotated[str | None, BeforeValidator(_checked(True))]
