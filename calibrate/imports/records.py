"""What an import reads from a source, before it meets the campaign: cases, ratings, and what it skipped.

Every reader (a DeepEval test run, a RAGAS result, an MLflow experiment, ...) returns one
:class:`SourceBatch`; :func:`calibrate.imports.apply.import_batch` checks it against the campaign,
stores it and writes the campaign's files. A reader keeps the source's own names: its metric names
(matched to the campaign's by :func:`match_metric`), its rater ids, its rating ids.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from calibrate.base.secrets import redact
from calibrate.base.times import instant

__all__ = ["ImportedRating", "Skip", "SourceBatch", "match_metric", "parse_map", "rating_value"]

RaterKind = Literal["human", "judge"]


@dataclass(frozen=True)
class ImportedRating:
    """One rating a source holds.

    Parameters
    ----------
    case_id : str
    metric : str
        The source's name of the metric (before it is matched to the campaign's).
    rater, rater_kind : str
        The source's id of the rater (an annotator's id, a judge's model), and ``"human"`` or ``"judge"``.
    value : float or None
        None for a failed rating, which then has an ``error``.
    source_id : str
        The source's id of this rating (an assessment id, a test case and metric), kept with it.
    error, reason : str, optional
        Why the rating failed; the rater's rationale.
    facts : dict
        What the source says of the rater for this rating (model, threshold, strict mode, source type).
    updated : str, optional
        When the source last changed the rating (ISO 8601, as :func:`calibrate.base.times.instant` reads
        it), if it says; a text that is no time is a ValueError naming the rating.
    """

    case_id: str
    metric: str
    rater: str
    rater_kind: RaterKind
    value: float | None
    source_id: str
    error: str | None = None
    reason: str | None = None
    facts: Mapping[str, Any] = field(default_factory=dict)
    updated: str | None = None

    def __post_init__(self) -> None:
        # a credential a source echoed into an error or a rationale is never stored (calibrate.base.secrets)
        for name in ("error", "reason"):
            text = getattr(self, name)
            if isinstance(text, str):
                object.__setattr__(self, name, redact(text))
        if self.updated is not None:
            try:
                instant(self.updated)
            except ValueError as exc:
                raise ValueError(f"rating {self.source_id!r:.200}, field 'updated': {exc}") from None


@dataclass(frozen=True)
class Skip:
    """Something a source holds that the import leaves out, and why (``what`` names it in the source)."""

    what: str
    reason: str

    def __post_init__(self) -> None:
        # a reason quotes what the source held: a credential in it is never stored or shown
        object.__setattr__(self, "reason", redact(self.reason) if isinstance(self.reason, str) else self.reason)


@dataclass
class SourceBatch:
    """Everything one read of a source gave.

    Parameters
    ----------
    kind : str
        The tool (``"deepeval"``, ``"ragas"``, ``"mlflow"``, ...).
    origin : str
        Which of the tool's stores: a rating is the same rating in a later import when its origin, case,
        metric and rater are (``"mlflow:http://host:5000#3"``; for files, the tool: a later test run of
        the same judge on the same case is a new revision of its rating).
    source : str
        What was read this time (a file's path, a server's URL and experiment), for the record.
    cases : list of dict
        The cases, with the campaign's field names and ``case_id``.
    ratings : list of ImportedRating
    skipped : list of Skip
    whole : bool
        Whether the read saw everything the origin holds (a whole MLflow experiment), so that a rating
        it no longer holds was deleted there and is withdrawn; a file may hold part of it.
    """

    kind: str
    origin: str
    source: str
    cases: list[dict[str, Any]] = field(default_factory=list)
    ratings: list[ImportedRating] = field(default_factory=list)
    skipped: list[Skip] = field(default_factory=list)
    whole: bool = False


def _key(name: str) -> str:
    return re.sub(r"[^0-9a-z]+", "_", name.lower()).strip("_")


def match_metric(name: str, metrics: list[str], mapping: Mapping[str, str]) -> str | None:
    """The campaign metric a source's metric name stands for: ``mapping``'s, else the one of exactly that
    name, else the one of the same name up to case and punctuation (DeepEval's ``Answer Relevancy`` is
    ``answer_relevancy``; a G-Eval metric's ``Correctness [GEval]`` is ``correctness``), else None (also
    when two of the campaign's metrics have that name up to case and punctuation: which one is meant is
    for ``--map`` to say).

    Examples
    --------
    >>> match_metric("Answer Relevancy", ["answer_relevancy", "faithfulness"], {})
    'answer_relevancy'
    >>> match_metric("Correctness [GEval]", ["correctness"], {}), match_metric("tone", ["correctness"], {})
    ('correctness', None)
    >>> match_metric("is_grounded", ["faithfulness"], {"is_grounded": "faithfulness"})
    'faithfulness'
    >>> [match_metric(n, ["faithfulness", "Faithfulness"], {}) for n in ("Faithfulness", "faithfulness", "FAITHFULNESS")]
    ['Faithfulness', 'faithfulness', None]
    """
    if name in mapping:
        return mapping[name]
    candidates = (name, re.sub(r"\s*[\[(][^\])]*[\])]\s*$", "", name))
    for candidate in candidates:
        if candidate in metrics:
            return candidate
    keys: dict[str, list[str]] = {}
    for m in metrics:
        keys.setdefault(_key(m), []).append(m)
    for candidate in candidates:
        found = keys.get(_key(candidate), [])
        if found:
            return found[0] if len(found) == 1 else None
    return None


def parse_map(items: list[str] | tuple[str, ...], metrics: list[str]) -> dict[str, str]:
    """``--map SOURCE_NAME=METRIC`` options as a mapping, each metric checked against the campaign's.

    >>> parse_map(["is_grounded=faithfulness"], ["faithfulness"])
    {'is_grounded': 'faithfulness'}
    >>> parse_map(["tone"], ["faithfulness"])
    Traceback (most recent call last):
    ...
    ValueError: --map tone: expected SOURCE_NAME=METRIC, e.g. --map is_grounded=faithfulness
    """
    mapping: dict[str, str] = {}
    for item in items:
        name, sep, metric = item.rpartition("=")
        if not sep or not name.strip() or not metric.strip():
            raise ValueError(f"--map {item}: expected SOURCE_NAME=METRIC, e.g. --map is_grounded=faithfulness")
        if metric.strip() not in metrics:
            raise ValueError(
                f"--map {item}: the campaign has no metric {metric.strip()!r} (it declares "
                + ", ".join(sorted(metrics))
                + ")"
            )
        if mapping.get(name.strip(), metric.strip()) != metric.strip():
            raise ValueError(f"--map {item}: {name.strip()!r} is mapped twice")
        mapping[name.strip()] = metric.strip()
    return mapping


PASS_WORDS = {
    "yes": 1.0,
    "true": 1.0,
    "pass": 1.0,
    "passed": 1.0,
    "correct": 1.0,
    "no": 0.0,
    "false": 0.0,
    "fail": 0.0,
    "failed": 0.0,
    "incorrect": 0.0,
}


def rating_value(value: Any, *, where: str = "a rating's value") -> float | None:
    """A source's rating value as a number: a number as it is, ``True`` / ``False`` and the words tools
    give for them (``yes`` / ``no``, ``pass`` / ``fail``, ``correct`` / ``incorrect``) as 1 / 0; None
    for anything else (NaN, an infinity, a list, another word). Every reader converts its values here.

    Parameters
    ----------
    value : Any
    where : str
        The source and field of the value (``"MLflow assessment a-1, field 'feedback.value'"``), for the
        error below.

    Raises
    ------
    ValueError
        An integer too large for any number calibrate computes with (JSON allows ``1000...0`` of 400
        digits), naming ``where``: the import is refused rather than the value guessed.

    Examples
    --------
    >>> rating_value(True), rating_value("Yes"), rating_value(0.25), rating_value("4"), rating_value("maybe")
    (1.0, 1.0, 0.25, 4.0, None)
    >>> rating_value(float("nan")) is None
    True
    >>> rating_value(10 ** 400, where="scores.json, score s1, field 'value'")
    Traceback (most recent call last):
    ...
    ValueError: scores.json, score s1, field 'value': an integer of about 401 digits is too large for a rating; expected a number, true / false, yes / no or pass / fail
    """
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int):
        try:
            return float(value)
        except OverflowError:
            digits = int(value.bit_length() * math.log10(2)) + 1
            raise ValueError(
                f"{where}: an integer of about {digits} digits is too large for a rating; expected a "
                "number, true / false, yes / no or pass / fail"
            ) from None
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, str):
        text = value.strip().lower()
        if text in PASS_WORDS:
            return PASS_WORDS[text]
        try:
            number = float(text)
        except ValueError:
            return None
        return number if math.isfinite(number) else None
    return None
