"""The field types of calibrate's own files, read strictly (calibrate/base/fields.py)."""

import datetime as dt

import pytest
from pydantic import TypeAdapter, ValidationError

from calibrate.base.fields import Count, FiniteNumber, Name, Probability, Sha256, Text, Timestamp, TimestampText


def reads(field, value):
    return TypeAdapter(field).validate_python(value)


@pytest.mark.parametrize(
    ("field", "good", "bad"),
    [
        (FiniteNumber, [0, -2.5, 1e300], ["0.5", True, float("nan"), float("inf"), None]),
        (Probability, [1, 0.001], [0, 1.5, -0.1, "1"]),
        (Text, ["", "x"], [1, None, b"x"]),
        (Name, ["a"], ["", 3]),
        (Count, [0, 12], [-1, 2.0, True, "3"]),
        (Sha256, ["0" * 64, "a1" * 32], ["A" * 64, "0" * 63, "g" * 64]),
    ],
)
def test_each_field_takes_its_values_and_nothing_converted(field, good, bad):
    for value in good:
        assert reads(field, value) == value
    for value in bad:
        with pytest.raises(ValidationError):
            reads(field, value)


def test_an_integer_number_is_read_as_a_float():
    assert isinstance(reads(FiniteNumber, 1), float)


def test_a_time_is_iso_text_with_its_time_zone():
    parsed = reads(Timestamp, "2025-01-02T03:04:05+02:00")
    assert parsed == dt.datetime(2025, 1, 2, 1, 4, 5, tzinfo=dt.UTC)
    assert reads(TimestampText, "2025-01-02 03:04:05.5Z") == "2025-01-02 03:04:05.5Z"  # kept as written
    for value in ["2025-01-02T03:04:05", "yesterday", 1735786800, "2025-13-40T03:04+00:00"]:
        for field in (Timestamp, TimestampText):
            with pytest.raises(ValidationError, match=r"ISO 8601|time zone|datetime|valid string"):
                reads(field, value)
    with pytest.raises(ValidationError, match="with its time zone \\(this one has none\\)"):
        reads(TimestampText, "2025-01-02T03:04:05")
