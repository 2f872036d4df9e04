"""A tool's timestamps read as moments (calibrate.base.times): however a time is written (fractions of a
second, Z or an offset, no zone), the later moment sorts later; what is no time is a clear error."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given
from hypothesis import strategies as st

from calibrate.base.documents import DocumentError, Schema, validate
from calibrate.base.times import SourceTime, SourceTimeOrEpochMs, instant, latest_first

UTC = dt.UTC
moments = st.datetimes(min_value=dt.datetime(1990, 1, 1), max_value=dt.datetime(2090, 1, 1), timezones=st.just(UTC))
offsets = st.integers(-14 * 60, 14 * 60).map(lambda m: dt.timezone(dt.timedelta(minutes=m)))


def written(moment: dt.datetime, zone: dt.timezone, style: int) -> str:
    """One moment written the ways tools write it: an offset or Z, with or without a fraction."""
    local = moment.astimezone(zone)
    text = local.isoformat(timespec="microseconds" if style % 2 else "auto")
    if style >= 2 and local.utcoffset() == dt.timedelta(0):
        text = text.replace("+00:00", "Z")
    return text


@given(a=moments, b=moments, zone_a=offsets, zone_b=offsets, style_a=st.integers(0, 3), style_b=st.integers(0, 3))
def test_the_later_moment_sorts_later_however_it_is_written(a, b, zone_a, zone_b, style_a, style_b):
    text_a, text_b = written(a, zone_a, style_a), written(b, zone_b, style_b)
    assert instant(text_a) == a and instant(text_b) == b
    assert (latest_first(text_a) < latest_first(text_b)) == (a < b)


def test_the_attacks_that_string_order_got_wrong():
    # found by the attack on issue 24: compared as texts, each of these kept the older one
    assert instant("2026-01-01T12:00:00.500Z") > instant("2026-01-01T12:00:00Z")
    assert instant("2026-01-01T12:30:00Z") > instant("2026-01-01T13:00:00+01:00")
    assert instant("2026-11-01T10:00:00.500Z") > instant("2026-11-01T10:00:00Z")
    assert latest_first(None) < latest_first("0001-01-02T00:00:00Z")


@given(text=st.text(max_size=40))
def test_any_text_is_a_time_or_a_value_error_quoting_it(text):
    try:
        found = instant(text)
    except ValueError as exc:
        assert "is not a time" in str(exc) and "ISO 8601" in str(exc)
    else:
        assert found.tzinfo is not None


@given(value=st.integers())
def test_epoch_milliseconds_where_the_format_says_so(value):
    with pytest.raises(ValueError):
        instant(value)  # an integer is no ISO 8601 time
    try:
        found = instant(value, epoch_ms=True)
    except ValueError as exc:
        assert "milliseconds since 1970" in str(exc)
    else:
        assert found == dt.datetime(1970, 1, 1, tzinfo=UTC) + dt.timedelta(milliseconds=value)


class _Stamped(Schema):
    updated: SourceTime = None
    changed: SourceTimeOrEpochMs = None


def test_a_schema_field_that_is_no_time_names_the_source_and_the_field():
    with pytest.raises(DocumentError) as caught:
        validate({"updated": "yesterday"}, _Stamped, source="scores.json", expected="a score", line=7)
    text = str(caught.value)
    assert "scores.json" in text and "line 7" in text and "'updated'" in text and "'yesterday' is not a time" in text
    kept = validate({"updated": "2026-01-01T12:00:00.5Z", "changed": 1767268800000}, _Stamped, source="s", expected="x")
    assert kept.updated == "2026-01-01T12:00:00.5Z"  # kept as the tool wrote it
    assert kept.changed == "2026-01-01T12:00:00+00:00"  # milliseconds written as the time they stand for
