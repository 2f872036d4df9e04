"""Field types the schemas of calibrate's own files share (:mod:`calibrate.base.documents`).

A file a person can edit is read strictly: a number is a JSON number (not ``"0.5"``, not ``true``,
not ``NaN``), a text is a JSON string, a count a whole number, and a time an ISO 8601 text with its
time zone. Whatever else is found is a :class:`~calibrate.base.documents.DocumentError` naming the
field, never a value quietly converted.

Examples
--------
>>> from calibrate.base.documents import Schema, validate
>>> class Stored(Schema):
...     score: FiniteNumber
...     created: Timestamp
>>> Stored.model_validate({"score": 1, "created": "2025-01-02T03:04:05+00:00"}).score
1.0
>>> from pydantic import TypeAdapter
>>> TypeAdapter(TimestampText).validate_python("2025-01-02T03:04:05.123456+00:00")
'2025-01-02T03:04:05.123456+00:00'
>>> validate({"score": "0.5", "created": 5}, Stored, source="x.json", expected="a stored score")
Traceback (most recent call last):
...
calibrate.base.documents.DocumentError: 2 problems in x.json:
  x.json, field 'score': Input should be a valid number (found '0.5'); expected a stored score
  x.json, field 'created': an ISO 8601 time with its time zone, as text (found 5); expected a stored score
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Annotated, Any

from pydantic import AfterValidator, AwareDatetime, BeforeValidator, Field, StrictInt, StrictStr
from pydantic_core import PydanticCustomError

__all__ = ["Count", "FiniteNumber", "Name", "Probability", "Sha256", "Text", "Timestamp", "TimestampText"]

#: A JSON number that is finite (an integer is read as a float; a text, a boolean, NaN or an infinity is not).
FiniteNumber = Annotated[float, Field(strict=True, allow_inf_nan=False)]
#: A probability of inclusion: a finite number in (0, 1].
Probability = Annotated[float, Field(strict=True, allow_inf_nan=False, gt=0, le=1)]
#: A JSON string.
Text = StrictStr
#: A JSON string that is not empty (a case id, a judge's or a metric's name).
Name = Annotated[StrictStr, Field(min_length=1)]
#: A whole number of at least 0 (not a boolean, not 2.0).
Count = Annotated[StrictInt, Field(ge=0)]
#: A SHA-256 digest as 64 lower-case hexadecimal digits.
Sha256 = Annotated[StrictStr, Field(pattern=r"^[0-9a-f]{64}$")]

_ISO_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}")


def _iso_text(value: Any) -> Any:
    if isinstance(value, datetime):
        return value
    if not isinstance(value, str) or not _ISO_TIME.match(value):
        raise PydanticCustomError("iso_time", "an ISO 8601 time with its time zone, as text")
    return value


#: An ISO 8601 time with its time zone, written as text (``2025-01-02T03:04:05+00:00``).
Timestamp = Annotated[AwareDatetime, BeforeValidator(_iso_text)]


def _aware_time_text(value: str) -> str:
    _iso_text(value)
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise PydanticCustomError("iso_time", "an ISO 8601 time with its time zone, as text") from None
    if parsed.tzinfo is None:
        raise PydanticCustomError("iso_time", "an ISO 8601 time with its time zone (this one has none)")
    return value


#: As :data:`Timestamp`, kept as the text it was written as (times written alike compare as texts).
TimestampText = Annotated[StrictStr, AfterValidator(_aware_time_text)]
