"""``campaign.toml`` read through declared schemas: one :class:`Table` per kind of table.

The file is read with a size limit (:data:`MAX_CONFIG_BYTES`) and a nesting limit (:data:`MAX_NESTING`),
so that a huge or deeply nested file is a clear error, never a ``RecursionError``. Its top level is
:class:`CampaignFile`; each ``[metrics.NAME]`` is a :class:`MetricTable`, each ``[raters.NAME]`` a
:class:`RaterTable`, and the other sections are declared beside their parsers
(:class:`~calibrate.campaign.judge_settings.JudgeTable`, :class:`~calibrate.campaign.juries.JuryTable`,
:class:`~calibrate.campaign.service.ServiceTable`). A schema says the keys a table takes (any other is
an error: a typo is never ignored), their types (strict: ``"1"`` is no number, ``1`` no boolean, ``nan``
no value) and, in each field's description, what is expected; the rules that tie several fields
together (an ordinal scale's ``human_pass`` inside its levels, a judge's metric declared) stay in the
parsers. Every problem names the file, the field's path (``metrics.relevance.levels[2]``), the value
found and what was expected.

Examples
--------
>>> problems = []
>>> tables({"m": {"scale": "likert", "levles": [0, 1]}}, MetricTable, "metrics", "campaign.toml", problems)
{}
>>> for p in problems: print(p)
campaign.toml, field 'metrics.m.scale': unknown or missing scale (found 'likert'); expected "binary", "ordinal" or "continuous"
campaign.toml, field 'metrics.m.levles': unknown key; expected one of cost_false_fail, cost_false_pass, description, human_pass, levels, max_false_pass, range, scale
"""

from __future__ import annotations

import math
import tomllib
import types
import typing
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, PlainValidator, ValidationError
from pydantic_core import PydanticCustomError

from calibrate.base.documents import DocumentError, Schema, field_path, read_bytes, short
from calibrate.base.errors import CampaignError, Problem

__all__ = [
    "MAX_CONFIG_BYTES",
    "MAX_NESTING",
    "CampaignFile",
    "MetricTable",
    "NonNegative",
    "Number",
    "Positive",
    "Rate",
    "RaterTable",
    "Table",
    "Text",
    "nesting_problem",
    "read_toml",
    "table",
    "tables",
]

#: The largest ``campaign.toml`` read, in bytes: a hand-written file is a few kilobytes.
MAX_CONFIG_BYTES = 4 * 2**20
#: The deepest nesting of tables and lists read (a service's body template, a G-Eval rubric: a few levels).
MAX_NESTING = 32

T = TypeVar("T", bound=BaseModel)


def _number(value: Any) -> int | float:
    """A finite number, kept as written (an integer stays one: cache keys and manifests record it so)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise PydanticCustomError("number_type", "not a number")
    if not math.isfinite(value):
        raise PydanticCustomError("finite_number", "not a finite number")
    return value


def _bounded(low: float | None, high: float | None, *, low_open: bool, text: str):
    def check(value: Any) -> int | float:
        value = _number(value)
        if (low is not None and (value <= low if low_open else value < low)) or (high is not None and value > high):
            raise PydanticCustomError("number_range", text)
        return value

    return check


#: A finite number (not a boolean, not a string of digits), kept as written.
Number = Annotated[int | float, PlainValidator(_number)]
#: A number from 0 to 1.
Rate = Annotated[int | float, PlainValidator(_bounded(0, 1, low_open=False, text="not a number from 0 to 1"))]
#: A number above 0.
Positive = Annotated[int | float, PlainValidator(_bounded(0, None, low_open=True, text="not a number above 0"))]
#: A number of 0 or more.
NonNegative = Annotated[int | float, PlainValidator(_bounded(0, None, low_open=False, text="a negative number"))]
#: A non-empty string.
Text = Annotated[str, Field(min_length=1)]


class Table(Schema):
    """A table of ``campaign.toml``: strict types, and every key it does not declare is an error.

    ``messages`` (field -> message) replaces pydantic's wording for any problem with that field;
    ``unknown_key`` is the message for a key the table does not declare; ``key_hints`` (text in a
    key -> hint) adds a hint to it.
    """

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, populate_by_name=True)
    messages: ClassVar[dict[str, str]] = {}
    unknown_key: ClassVar[str] = "unknown key"
    key_hints: ClassVar[dict[str, str]] = {}


class CampaignFile(Table):
    """The top level of ``campaign.toml``; each section's tables are read by their own schema."""

    name: str = Field(description='name = "..." (the campaign\'s name)')
    description: str | None = Field(None, description="text")
    out_of_scale: Literal["error", "clip", "drop"] = Field("error", description="error, clip or drop")
    metrics: dict[str, Any] = Field(min_length=1, description="at least one [metrics.NAME] table")
    raters: dict[str, Any] = Field({}, description="[raters.NAME] tables")
    judges: dict[str, Any] = Field({}, description="[judges.NAME] tables")
    juries: dict[str, Any] = Field({}, description="[juries.NAME] tables")
    service: dict[str, Any] | None = Field(None, description="[service]: the RAG service's HTTP contract")

    unknown_key: ClassVar[str] = "unknown top-level key"
    messages: ClassVar[dict[str, str]] = {
        "name": "the campaign needs a name",
        "metrics": "the campaign declares no metric",
        "out_of_scale": "unknown out_of_scale",
        "raters": "raters must be tables",
        "judges": "judges must be tables",
        "juries": "juries must be tables",
        "service": "must be a table",
    }


class MetricTable(Table):
    """``[metrics.NAME]``: the scale of the human labels, and the metric's threshold rule."""

    scale: Literal["binary", "ordinal", "continuous"] = Field(description='"binary", "ordinal" or "continuous"')
    human_pass: Number | None = Field(None, description="the lowest human value that counts as a pass")
    levels: list[Number] | None = Field(
        None, description="a list of at least two distinct numbers, such as [0, 1, 2, 3] (ordinal scales)"
    )
    range: list[Number] | None = Field(None, description="[low, high] with low < high (continuous scales)")
    max_false_pass: Rate | None = Field(None, description="a number from 0 to 1")
    cost_false_pass: Positive | None = Field(None, description="a number above 0")
    cost_false_fail: Positive | None = Field(None, description="a number above 0")
    description: str | None = Field(None, description="text")

    messages: ClassVar[dict[str, str]] = {
        "scale": "unknown or missing scale",
        "human_pass": "human_pass is missing or not a number",
        "levels": "an ordinal scale needs its levels",
        "range": "invalid range",
        "max_false_pass": "max_false_pass must be a rate",
        "cost_false_pass": "a cost must be a positive number",
        "cost_false_fail": "a cost must be a positive number",
        "description": "must be a string",
    }


class RaterTable(Table):
    """``[raters.NAME]``: facts about a rater (optional; a rater needs no table)."""

    family: str | None = Field(None, description="a model family, such as gpt or llama")
    model: str | None = Field(None, description="the model's name")
    higher_is_better: bool = Field(True, description="true or false")
    on_metric_scale: bool = Field(False, description="true or false")
    description: str | None = Field(None, description="text")

    messages: ClassVar[dict[str, str]] = {
        "family": "must be a string",
        "model": "must be a string",
        "description": "must be a string",
        "higher_is_better": "must be true or false",
        "on_metric_scale": "must be true or false",
    }


# ------------------------------------------------------------------------------------------ reading
def read_toml(path: str | Path) -> dict[str, Any]:
    """A ``campaign.toml`` parsed, refused (a :class:`~calibrate.base.errors.CampaignError` naming it)
    when larger than :data:`MAX_CONFIG_BYTES`, not UTF-8, not TOML or nested deeper than :data:`MAX_NESTING`.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "campaign.toml"
    >>> _ = path.write_text("x = " + "[" * 5000 + "]" * 5000)
    >>> read_toml(path)
    Traceback (most recent call last):
    ...
    calibrate.base.errors.CampaignError: 1 problem in the campaign:
      .../campaign.toml: nested deeper than 32 levels; expected tables and lists a few levels deep
    """
    path = Path(path)
    expected = "a campaign.toml declaring the name and the metrics"
    try:
        data = read_bytes(path, expected=expected, max_bytes=MAX_CONFIG_BYTES)
    except DocumentError as exc:
        raise CampaignError(exc.problems) from None
    try:  # a byte order mark (Windows editors save one) is read past, as the JSON and CSV readers do
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise CampaignError(
            [
                Problem(
                    str(path),
                    f"not UTF-8 text (byte {data[exc.start]:#04x} at offset {exc.start})",
                    row=line,
                    expected="a file saved as UTF-8",
                )
            ]
        ) from None
    try:
        config = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise CampaignError([Problem(str(path), f"not valid TOML: {exc}")]) from None
    except RecursionError:
        raise CampaignError([_too_deep(str(path))]) from None
    problem = nesting_problem(config, str(path))
    if problem:
        raise CampaignError([problem])
    return config


def _too_deep(file: str, field: str | None = None) -> Problem:
    return Problem(
        file, f"nested deeper than {MAX_NESTING} levels", field=field, expected="tables and lists a few levels deep"
    )


def nesting_problem(value: Any, file: str) -> Problem | None:
    """A problem when ``value`` nests dicts and lists deeper than :data:`MAX_NESTING` (found without
    recursion), naming where.

    >>> nesting_problem({"a": [[1]]}, "c.toml") is None
    True
    >>> deep = 0
    >>> for _ in range(40): deep = [deep]
    >>> print(nesting_problem({"a": {"b": deep}}, "c.toml"))
    c.toml, field 'a.b': nested deeper than 32 levels; expected tables and lists a few levels deep
    """
    stack: list[tuple[Any, int, tuple]] = [(value, 0, ())]
    while stack:
        item, depth, where = stack.pop()
        if depth > MAX_NESTING:
            named = tuple(p for p in where if isinstance(p, str))
            return _too_deep(file, field_path(named[:4]) or None)
        if isinstance(item, dict):
            stack.extend((v, depth + 1, where + (k,)) for k, v in item.items())
        elif isinstance(item, (list, tuple)):
            stack.extend((v, depth + 1, where + (i,)) for i, v in enumerate(item))
    return None


# ------------------------------------------------------------------------------------------ checking
def _inner(annotation: Any) -> Any:
    """The type a value of ``annotation`` is checked against, without Optional and Annotated."""
    while True:
        origin = typing.get_origin(annotation)
        if origin is Annotated:
            annotation = typing.get_args(annotation)[0]
        elif origin in (typing.Union, types.UnionType):
            args = [a for a in typing.get_args(annotation) if a is not type(None)]
            if len(args) != 1:
                return annotation
            annotation = args[0]
        else:
            return annotation


def _where(schema: type[BaseModel], loc: tuple) -> tuple[type[BaseModel], str | None, bool]:
    """The deepest table of ``loc``, the field of it the error is about (None: the table itself), and
    whether the error is about the field's value as a whole (not an item or entry inside it)."""
    table, name, current, whole = schema, None, schema, True
    for part in loc:
        if isinstance(current, type) and issubclass(current, BaseModel):
            if isinstance(part, str) and part in current.model_fields:
                table, name, whole = current, part, True
                current = _inner(current.model_fields[part].annotation)
            else:
                return current, part if isinstance(part, str) else None, True
        elif typing.get_origin(current) is dict:
            current, whole = _inner(typing.get_args(current)[1]), False
        elif typing.get_origin(current) is list:
            current, whole = _inner(typing.get_args(current)[0]), False
        else:
            whole = False
            break
    return table, name, whole


def _problem(error: dict, schema: type[BaseModel], file: str, prefix: str) -> Problem:
    loc = tuple(error.get("loc", ()))
    path = field_path(loc)
    field = f"{prefix}.{path}" if prefix and path and not path.startswith("[") else prefix + path
    table, name, whole = _where(schema, loc)
    found = error.get("input")
    value = None if isinstance(found, dict) or error.get("type") == "missing" else short(found)
    if error.get("type") == "extra_forbidden":
        hints = (
            [hint for text, hint in table.key_hints.items() if text in str(loc[-1])] if issubclass(table, Table) else []
        )
        allowed = sorted(f.alias or n for n, f in table.model_fields.items())
        message = (table.unknown_key if issubclass(table, Table) else "unknown key") + "".join(f" ({h})" for h in hints)
        return Problem(file, message, field=field or None, expected="one of " + ", ".join(allowed))
    info = table.model_fields.get(name) if name else None
    messages = table.messages if issubclass(table, Table) else {}
    message = messages.get(name) if name and whole else None  # an item's problem: pydantic's words
    if message is None:
        message = str(error.get("msg", "invalid"))
        if error.get("type") == "missing":
            message = "missing"
    elif error.get("type") == "missing" and "missing" not in message:
        message += " (missing)"
    expected = info.description if info is not None and info.description else None
    return Problem(file, message, field=field or None, value=value, expected=expected)


def table(value: Any, schema: type[T], where: str, file: str, problems: list[Problem]) -> T | None:
    """``value`` read as ``schema`` (a table at ``where``, ``""`` for the top level); its problems
    appended to ``problems``, and None, when it does not fit (a table whose only problems are unknown
    keys is read without them, so that the caller checks the rest: its problems are listed all the same).

    Examples
    --------
    >>> problems = []
    >>> table({"family": 3}, RaterTable, "raters.j", "campaign.toml", problems), str(problems[0])
    (None, "campaign.toml, field 'raters.j.family': must be a string (found 3); expected a model family, such as gpt or llama")
    >>> table({"family": "gpt"}, RaterTable, "raters.j", "campaign.toml", problems).family
    'gpt'
    """
    if not isinstance(value, dict):
        kind = "[" + where + "]" if where else "the file"
        problems.append(
            Problem(
                file,
                f"{kind} must be a table",
                field=where or None,
                value=short(value),
                expected=f"[{where}]" if where else "TOML tables",
            )
        )
        return None
    problem = nesting_problem(value, file)
    if problem is not None:
        problems.append(
            Problem(
                file,
                problem.message,
                field=".".join(filter(None, (where, problem.field))) or None,
                expected=problem.expected,
            )
        )
        return None
    try:
        return schema.model_validate(value)
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
        problems += [_problem(error, schema, file, where) for error in errors]
    # unknown keys alone: the rest is read, so that the rules across its fields are checked too (the
    # problems listed make the whole read fail all the same)
    unknown = {e["loc"][0] for e in errors if e.get("type") == "extra_forbidden" and len(e.get("loc", ())) == 1}
    if len(unknown) != len(errors):
        return None
    try:
        return schema.model_validate({k: v for k, v in value.items() if k not in unknown})
    except ValidationError:
        return None


def tables(values: Any, schema: type[T], section: str, file: str, problems: list[Problem]) -> dict[str, T]:
    """Each ``[section.NAME]`` table read as ``schema``: the tables that fit, by name (the problems of
    the others appended to ``problems``)."""
    if values is None:
        return {}
    if not isinstance(values, dict):
        problems.append(
            Problem(
                file,
                f"{section} must be tables",
                field=section,
                value=short(values),
                expected=f"[{section}.NAME] tables",
            )
        )
        return {}
    found = {}
    for name, value in values.items():
        model = table(value, schema, f"{section}.{name}", file, problems)
        if model is not None:
            found[name] = model
    return found
