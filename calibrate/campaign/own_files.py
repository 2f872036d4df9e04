"""calibrate's own files in a campaign that a person can open and edit, read back through declared schemas.

- ``samples/NAME.json`` (:class:`SampleDesign`) and ``samples/NAME.csv`` (:class:`SampleRow`), which
  ``calibrate sample`` writes: the statistics weight every labelled case by the inclusion probability
  they record, so each is checked, and the two against each other (a stratum's probability in the
  table is the design's, its count the design's ``sampled``), before any figure rests on them;
- ``imported_ratings.json`` (:class:`ImportedMeta`), what ``calibrate import`` learnt of its raters;
- ``labelstudio_ratings.json`` (:class:`LabelStudioMeta`), the judge Label Studio showed the annotators.

A file that does not hold what its format declares is a :class:`~calibrate.base.errors.CampaignError`
naming the file, the line or field, the value found and what was expected; never a traceback, never a
value quietly converted. Each reader keeps only the fields it declares.

Examples
--------
>>> import tempfile
>>> folder = Path(tempfile.mkdtemp())
>>> _ = (folder / "labelstudio_ratings.json").write_text('{"shown_judge": ["j"]}')
>>> try:
...     read_shown_judge(folder / "labelstudio_ratings.json")
... except CampaignError as exc:
...     print(exc.problems[0].field, "|", exc.problems[0].message, "|", exc.problems[0].expected)
shown_judge | Input should be a valid string | the file calibrate labelstudio pull writes
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection
from pathlib import Path
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import BeforeValidator, ConfigDict, Field, JsonValue, StrictInt, model_validator
from pydantic_core import PydanticCustomError

from calibrate.base.documents import DocumentError, Schema, check, parse_json, read_bytes, read_csv_rows
from calibrate.base.errors import CampaignError, Problem
from calibrate.base.fields import Count, FiniteNumber, Name, Probability, Text, TimestampText

__all__ = [
    "SAMPLE_COLUMNS",
    "SAMPLE_STRATEGIES",
    "ImportedMeta",
    "ImportedRater",
    "LabelStudioMeta",
    "SampleDesign",
    "SampleRow",
    "StratumDesign",
    "read_case_ids",
    "read_imported_raters",
    "read_sample",
    "read_shown_judge",
]

#: the designs ``calibrate sample`` draws (:data:`calibrate.sampling.designs.STRATEGIES`), and the queue of the
#: cases a band escalates that ``calibrate escalate --sample`` writes (:mod:`calibrate.sampling.escalated`)
SAMPLE_STRATEGIES = ("random", "stratified", "threshold", "disagreement", "neyman", "escalated")
#: the columns of ``samples/NAME.csv``
SAMPLE_COLUMNS = ("case_id", "stratum", "inclusion_probability")
#: the largest file of this kind read (a sample of a million cases is some 40 MB)
MAX_FILE_BYTES = 256 * 2**20
#: how close a stratum's probability in the table must be to the design's
TOLERANCE = 1e-9


class StratumDesign(Schema):
    """A stratum of a design: the cases in it, drawn now and before (a Neyman series), and the
    probability that each was drawn, ``(drawn_before + sampled) / size``."""

    model_config = ConfigDict(extra="allow")
    size: Count
    sampled: Count
    drawn_before: Count = 0
    inclusion_probability: Probability

    @model_validator(mode="after")
    def _adds_up(self) -> StratumDesign:
        drawn = self.drawn_before + self.sampled
        if drawn > self.size:
            raise PydanticCustomError(
                "counts", "{drawn} case(s) drawn from a stratum of {size}", {"drawn": drawn, "size": self.size}
            )
        if abs(self.inclusion_probability - drawn / max(self.size, 1)) > TOLERANCE:
            raise PydanticCustomError(
                "probability",
                "inclusion_probability {p} is not (drawn_before + sampled) / size = {q}",
                {"p": self.inclusion_probability, "q": drawn / max(self.size, 1)},
            )
        return self


class SampleDesign(Schema):
    """``samples/NAME.json``: the design a sample was drawn by. Fields it does not declare are kept as
    they are (they describe the design; nothing computes with them)."""

    model_config = ConfigDict(extra="allow")
    strategy: Literal["random", "stratified", "threshold", "disagreement", "neyman", "escalated"]
    created: TimestampText
    strata: Annotated[dict[str, StratumDesign], Field(min_length=1)]
    n: Count | None = None
    seed: StrictInt | None = None
    by: Text | None = None
    metric: Text | None = None
    judge: Text | None = None
    phase: Literal["pilot", "allocation"] | None = None
    edges: list[FiniteNumber] | None = None
    series: list[Name] = []
    #: a queue's frame: every case the band escalated (the part of the cases it stands for), and those of them
    #: humans had labelled before the draw (left out of it); absent in a queue written before frames were
    frame: list[Name] | None = None
    frame_labelled: list[Name] = []

    @model_validator(mode="after")
    def _frame_adds_up(self) -> SampleDesign:
        if self.frame is None:
            if self.frame_labelled:
                raise PydanticCustomError("frame", "frame_labelled needs the frame it is part of")
            return self
        frame = set(self.frame)
        if self.strategy != "escalated":
            raise PydanticCustomError("frame", "only a queue of escalated cases records a frame")
        if len(frame) != len(self.frame) or len(set(self.frame_labelled)) != len(self.frame_labelled):
            raise PydanticCustomError("frame", "frame and frame_labelled list each case once")
        if not frame.issuperset(self.frame_labelled):
            raise PydanticCustomError("frame", "frame_labelled lists cases of the frame only")
        drawn_from = sum(s.size for s in self.strata.values())
        if len(frame) - len(self.frame_labelled) != drawn_from:
            raise PydanticCustomError(
                "frame",
                "the frame's unlabelled cases ({k}) are not the {n} the strata were drawn from",
                {"k": len(frame) - len(self.frame_labelled), "n": drawn_from},
            )
        return self

    @model_validator(mode="after")
    def _strategy_needs(self) -> SampleDesign:
        if self.strategy == "stratified" and not self.by:
            raise PydanticCustomError("design", "a stratified design names its metadata key (by)")
        if self.strategy == "escalated" and (not self.metric or not self.judge):
            raise PydanticCustomError("design", "a queue of escalated cases names its metric and judge")
        if self.strategy == "neyman":
            if self.edges is None or not self.metric or not self.judge:
                raise PydanticCustomError("design", "a Neyman design records its score edges, metric and judge")
            if sorted(self.edges) != self.edges or len(self.strata) != len(self.edges) + 1:
                raise PydanticCustomError("design", "a Neyman design's edges are ascending, one fewer than its strata")
        return self


class SampleRow(Schema):
    """A row of ``samples/NAME.csv`` (its values are text; the probability is read as a number)."""

    case_id: Name
    stratum: Text
    inclusion_probability: Annotated[float, Field(allow_inf_nan=False, gt=0, le=1)]


class CaseIdRow(Schema):
    """A row of a table of cases (``labelstudio push --sample FILE``)."""

    case_id: Name


def _name_text(value: Any) -> Any:
    """A model's name as a tool gave it: a number (``4``) is its text; a list or an object is refused."""
    return str(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else value


#: a model's or a family's name (a number a tool gave is kept as its text)
ModelName = Annotated[Text, BeforeValidator(_name_text)]


class ImportedRater(Schema):
    """What ``calibrate import`` learnt of a rater: ``model`` and ``family`` are what calibrate reads
    (the rater's facts); the rest is shown as it was recorded."""

    kind: Text | None = None
    model: ModelName | None = None
    family: ModelName | None = None
    models: list[ModelName] = []
    origins: list[Text] = []
    thresholds: dict[str, list[JsonValue]] = {}
    source_types: list[Text] = []
    ratings: Count = 0


class ImportedMeta(Schema):
    """``imported_ratings.json``."""

    raters: dict[Name, ImportedRater]


class LabelStudioMeta(Schema):
    """``labelstudio_ratings.json``."""

    shown_judge: Name | None = None


def _document(path: Path, schema: Any, expected: str) -> Any:
    data = read_bytes(path, expected=expected, max_bytes=MAX_FILE_BYTES)
    return parse_json(
        data.removeprefix(b"\xef\xbb\xbf"), schema, source=str(path), expected=expected, max_bytes=MAX_FILE_BYTES
    )


def _design(path: Path, samples: Collection[str]) -> tuple[SampleDesign | None, list[Problem]]:
    expected = (
        "the design calibrate sample writes (strategy, created, strata with size, sampled, inclusion_probability)"
    )
    try:
        design = _document(path, SampleDesign, expected)
    except DocumentError as exc:
        return None, exc.problems
    unknown = [name for name in design.series if name not in samples]
    if unknown:
        return None, [
            Problem(
                str(path),
                "a Neyman series step that is not a sample of the campaign",
                field="series",
                value=", ".join(unknown[:5]),
                expected="the names of the series' earlier samples, each with its samples/NAME.csv and NAME.json",
            )
        ]
    return design, []


def _table(
    path: Path,
    columns: tuple[str, ...] = SAMPLE_COLUMNS,
    schema: Any = SampleRow,
    expected: str = "a case id, its stratum, and its inclusion probability: a number in (0, 1]",
) -> tuple[list[tuple[int, Any]], list[Problem]]:
    """Each row of a table with its line, read into ``schema``, or the problems (the header, each row's fields)."""
    expected_header = "the header " + ",".join(columns)
    try:
        header, records = read_csv_rows(path, expected=expected_header, max_bytes=MAX_FILE_BYTES)
    except DocumentError as exc:
        return [], exc.problems
    missing = [c for c in columns if c not in header]
    if missing:
        return [], [Problem(str(path), f"missing column(s) {', '.join(missing)}", row=1, expected=expected_header)]
    rows, problems = [], []
    for line, record in records:
        row, found = check(dict(zip(header, record)), schema, source=str(path), line=line, expected=expected)
        problems += found
        if row is not None:
            rows.append((line, row))
    return rows, problems


def _stratum_problems(
    design: SampleDesign, row: SampleRow, line: int, table_path: Path, design_path: Path
) -> list[Problem]:
    """A row of a sample's table against its design: a stratum it lacks, or another inclusion probability."""
    stratum = design.strata.get(row.stratum)
    if stratum is None:
        return [
            Problem(
                str(table_path),
                "a stratum the design does not have",
                row=line,
                field="stratum",
                value=row.stratum,
                expected=f"one of the strata of {design_path.name}",
            )
        ]
    if abs(row.inclusion_probability - stratum.inclusion_probability) > TOLERANCE:
        return [
            Problem(
                str(table_path),
                "not the stratum's inclusion probability in the design",
                row=line,
                field="inclusion_probability",
                value=row.inclusion_probability,
                expected=f"{stratum.inclusion_probability!r}, as {design_path.name} records",
            )
        ]
    return []


def _frame_problems(
    pool: set[str] | None, row: SampleRow, line: int, table_path: Path, design_path: Path
) -> list[Problem]:
    """A row of a queue's table outside ``pool``, the frame's unlabelled cases it was drawn from (None: no frame)."""
    if pool is None or row.case_id in pool:
        return []
    return [
        Problem(
            str(table_path),
            "a case that is not among the frame's unlabelled cases the queue was drawn from",
            row=line,
            field="case_id",
            value=row.case_id,
            expected=f"a case of frame and not of frame_labelled in {design_path.name}",
        )
    ]


def read_sample(design_path: Path, *, cases: Collection[str] | None, samples: Collection[str]) -> dict[str, Any]:
    """A sample ``calibrate sample`` wrote: ``samples/NAME.json`` and ``samples/NAME.csv``, each checked,
    and checked against each other and against the campaign's cases.

    Parameters
    ----------
    design_path : Path
        ``samples/NAME.json`` (the table is ``NAME.csv`` beside it).
    cases : collection of str, optional
        The campaign's case ids (None: the campaign has no cases.jsonl).
    samples : collection of str
        The names of every sample of the campaign (a Neyman series names its earlier steps).

    Returns
    -------
    dict
        ``{"design": dict, "case_ids", "strata", "inclusion_probability": ndarray, "name"}``.

    Raises
    ------
    CampaignError
        Every problem of either file, each naming the file, the line or field, and what was expected.
    """
    design_path = Path(design_path)
    table_path = design_path.with_suffix(".csv")
    design, problems = _design(design_path, samples)
    rows, found = _table(table_path)
    problems += found
    pool = None if design is None or design.frame is None else set(design.frame) - set(design.frame_labelled)
    seen: dict[str, int] = {}
    for line, row in rows:
        if row.case_id in seen:
            problems.append(
                Problem(
                    str(table_path),
                    f"case drawn twice (first on line {seen[row.case_id]})",
                    row=line,
                    field="case_id",
                    value=row.case_id,
                    expected="each case once",
                )
            )
        seen.setdefault(row.case_id, line)
        if cases is not None and row.case_id not in cases:
            problems.append(
                Problem(
                    str(table_path),
                    f"case {row.case_id!r} is not in cases.jsonl",
                    row=line,
                    field="case_id",
                    expected="a case of the campaign",
                )
            )
        if design is not None:
            problems += _stratum_problems(design, row, line, table_path, design_path)
            problems += _frame_problems(pool, row, line, table_path, design_path)
    if design is not None and not [p for p in problems if p.file == str(table_path)]:
        drawn = Counter(row.stratum for _, row in rows)
        problems += [
            Problem(
                str(table_path),
                f"{drawn.get(name, 0)} case(s) of stratum {name!r}",
                expected=f"the {stratum.sampled} its design ({design_path.name}) says were drawn",
            )
            for name, stratum in design.strata.items()
            if drawn.get(name, 0) != stratum.sampled
        ]
    if problems:
        raise CampaignError(problems, heading=f"the sample {design_path.stem}")
    return {
        "design": design.model_dump(mode="json"),
        "case_ids": [r.case_id for _, r in rows],
        "strata": [r.stratum for _, r in rows],
        "inclusion_probability": np.array([r.inclusion_probability for _, r in rows], dtype=float),
        "name": design_path.stem,
    }


def read_imported_raters(path: Path) -> dict[str, dict[str, Any]]:
    """``imported_ratings.json``: rater name -> ``{"kind", "model", "family", "models", "origins",
    "thresholds", "source_types", "ratings"}``.

    Raises
    ------
    DocumentError
        A file that is not what ``calibrate import`` writes, naming the field.
    """
    meta = _document(
        Path(path),
        ImportedMeta,
        'the file calibrate import writes: {"raters": {NAME: {"kind", "model", "family", ...}}}',
    )
    return {name: rater.model_dump() for name, rater in meta.raters.items()}


def read_shown_judge(path: Path) -> str | None:
    """``labelstudio_ratings.json``: the judge Label Studio showed the annotators, if any.

    Raises
    ------
    DocumentError
        A file that is not what ``calibrate labelstudio pull`` writes, naming the field.
    """
    return _document(Path(path), LabelStudioMeta, "the file calibrate labelstudio pull writes").shown_judge


def read_case_ids(path: str | Path) -> list[str]:
    """The ``case_id`` column of a CSV file (a sample's table, or any table of cases), in its order.

    Raises
    ------
    CampaignError
        A file that cannot be read, has no ``case_id`` column, or a row without a case id: each named,
        with the line.

    Examples
    --------
    >>> import tempfile
    >>> path = Path(tempfile.mkdtemp()) / "s.csv"
    >>> _ = path.write_text("case_id,stratum\\nc1,all\\nc2,all\\n")
    >>> read_case_ids(path)
    ['c1', 'c2']
    """
    rows, problems = _table(Path(path), ("case_id",), CaseIdRow, "a case id")
    if problems:
        raise CampaignError(problems, heading=str(path))
    return [row.case_id for _, row in rows]
