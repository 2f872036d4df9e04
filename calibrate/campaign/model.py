"""The campaign's data model: its metrics, raters and ratings, and the names of its files.

One tidy table of ratings is the heart of it: one row per (case, metric, rater). Humans and judges
are both raters; ``rater_kind`` tells them apart. :mod:`~calibrate.campaign.load` reads a folder (or
Python objects) into a :class:`Campaign`, every rating checked by :mod:`~calibrate.campaign.checks`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd

from calibrate.campaign.judge_specs import JudgeSpec

__all__ = [
    "ADJUDICATIONS_FILE",
    "ADJUDICATION_COLUMNS",
    "CASES_FILE",
    "CASE_FIELDS",
    "EXPORTED_RATINGS_FILES",
    "IMPORTED_META_FILE",
    "IMPORTED_RATINGS_FILE",
    "JUDGE_RATINGS_FILE",
    "LABELSTUDIO_META_FILE",
    "LABELSTUDIO_RATINGS_FILE",
    "OPTIONAL_COLUMNS",
    "OUT_OF_SCALE",
    "RATINGS_FILES",
    "RATING_COLUMNS",
    "REQUIRED_COLUMNS",
    "SAMPLES_FOLDER",
    "SET_ASIDE_REASONS",
    "Adjustment",
    "Campaign",
    "Metric",
    "OutOfScale",
    "Rater",
    "Scale",
    "SetAside",
    "number_text",
]

Scale = Literal["binary", "ordinal", "continuous"]
OutOfScale = Literal["error", "clip", "drop"]

REQUIRED_COLUMNS = ("case_id", "metric", "rater", "rater_kind", "value")
OPTIONAL_COLUMNS = ("error", "reason", "run_id")
RATING_COLUMNS = REQUIRED_COLUMNS + OPTIONAL_COLUMNS
RATINGS_FILES = ("ratings.csv", "ratings.jsonl", "ratings.parquet")
#: Written by `calibrate judge` (from its store), read beside the ratings file; not to be edited by hand.
JUDGE_RATINGS_FILE = "judge_ratings.csv"
CASES_FILE = "cases.jsonl"
LABELSTUDIO_RATINGS_FILE = "labelstudio_ratings.csv"
LABELSTUDIO_META_FILE = "labelstudio_ratings.json"  # what the annotators saw (a judge shown as pre-annotations)
#: Written by `calibrate import` (from its store): the ratings other tools hold, and what they say of their raters.
IMPORTED_RATINGS_FILE = "imported_ratings.csv"
IMPORTED_META_FILE = "imported_ratings.json"
SAMPLES_FOLDER = "samples"  # calibrate sample writes NAME.csv and NAME.json here
EXPORTED_RATINGS_FILES = (JUDGE_RATINGS_FILE, LABELSTUDIO_RATINGS_FILE, IMPORTED_RATINGS_FILE)
ADJUDICATIONS_FILE = "adjudications.csv"  # written by calibrate adjudicate
ADJUDICATION_COLUMNS = ["case_id", "metric", "value", "adjudicator", "decided"]
#: DeepEval's LLMTestCase field names, and the type each must have in ``cases.jsonl``.
CASE_FIELDS = {
    "input": (str,),
    "actual_output": (str, type(None)),
    "expected_output": (str, type(None)),
    "retrieval_context": (list, type(None)),
    "context": (list, type(None)),
    "metadata": (dict, type(None)),
}
OUT_OF_SCALE = ("error", "clip", "drop")


def number_text(value: float) -> str:
    """A number as messages show it: ``2`` for 2.0, ``0.5`` for 0.5.

    >>> number_text(2.0), number_text(0.5)
    ('2', '0.5')
    """
    return f"{value:g}" if isinstance(value, (int, float)) else str(value)


@dataclass(frozen=True)
class Metric:
    """A metric of the campaign and the scale of its *human* labels.

    Parameters
    ----------
    name : str
    scale : {"binary", "ordinal", "continuous"}
    human_pass : float
        The human label from which a case passes.
    levels : tuple of float, optional
        An ordinal scale's levels.
    range : (float, float), optional
        A continuous scale's bounds.
    max_false_pass, cost_false_pass, cost_false_fail : float, optional
        The metric's threshold rule: a ceiling on the false-pass rate, or the costs of the two errors.
    description : str, optional

    Examples
    --------
    >>> m = Metric("relevance", "ordinal", human_pass=2, levels=(0, 1, 2, 3))
    >>> m.in_scale(np.array([0, 2.5, 3, 4])).tolist()
    [True, False, True, False]
    >>> m.nearest_in_scale(np.array([-1, 2.4, 7])).tolist()
    [0.0, 2.0, 3.0]
    """

    name: str
    scale: Scale
    human_pass: float
    levels: tuple[float, ...] | None = None
    range: tuple[float, float] | None = None
    max_false_pass: float | None = None
    cost_false_pass: float | None = None
    cost_false_fail: float | None = None
    description: str | None = None

    @property
    def alpha_level(self) -> Literal["nominal", "ordinal", "interval"]:
        """Krippendorff's level of measurement for this scale."""
        return {"binary": "nominal", "ordinal": "ordinal", "continuous": "interval"}[self.scale]

    def scale_text(self) -> str:
        if self.levels is not None:
            return "one of " + ", ".join(number_text(v) for v in self.levels)
        if self.range is not None:
            return f"a number from {number_text(self.range[0])} to {number_text(self.range[1])}"
        return "a finite number"

    def in_scale(self, values: np.ndarray) -> np.ndarray:
        values = np.asarray(values, dtype=float)
        if self.levels is not None:
            return np.isin(values, np.asarray(self.levels, dtype=float))
        if self.range is not None:
            return (values >= self.range[0]) & (values <= self.range[1])
        return np.isfinite(values)

    def nearest_in_scale(self, values: np.ndarray) -> np.ndarray:
        """Clip to the scale: to the range, then to the nearest level (ties go to the lower one)."""
        values = np.asarray(values, dtype=float)
        if self.levels is not None:
            levels = np.asarray(self.levels, dtype=float)
            return levels[np.argmin(np.abs(values[:, None] - levels[None, :]), axis=1)]
        if self.range is not None:
            return np.clip(values, *self.range)
        return values


@dataclass(frozen=True)
class Rater:
    """Facts about a rater from ``[raters.NAME]``: model, family, orientation of its scores.

    Parameters
    ----------
    name : str
    family, model : str, optional
        The model family (``gpt``, ``llama``, ...) and model of a judge.
    higher_is_better : bool
        Whether a higher score means a better answer.
    on_metric_scale : bool
        Whether the judge rates on the metric's own levels (its kappa and alpha are then defined).
    description : str, optional

    Examples
    --------
    >>> Rater("judge-a", family="gpt", model="gpt-4o").higher_is_better
    True
    """

    name: str
    family: str | None = None
    model: str | None = None
    higher_is_better: bool = True
    on_metric_scale: bool = False
    description: str | None = None


@dataclass(frozen=True)
class Adjustment:
    """An out-of-scale value that ``out_of_scale`` ``clip`` or ``drop`` changed or removed."""

    file: str
    line: int
    case_id: str
    metric: str
    rater: str
    value: float
    action: Literal["clipped", "dropped"]
    new_value: float | None = None


#: why an exported rating is set aside: its case, its metric or its judge is no longer in the campaign
SET_ASIDE_REASONS = {
    "case": "of case(s) no longer in cases.jsonl",
    "metric": "of metric(s) no longer declared in campaign.toml",
    "judge": "by judge(s) no longer declared in campaign.toml",
}


@dataclass(frozen=True)
class SetAside:
    """A rating that calibrate exported (``judge_ratings.csv``, ``labelstudio_ratings.csv``,
    ``imported_ratings.csv``, ``adjudications.csv``) whose case left ``cases.jsonl`` (``why="case"``),
    whose metric left ``campaign.toml`` (``"metric"``) or whose judge left its ``[judges]`` (``"judge"``):
    left out of every statistic, kept in its file and its store, and back when what it needs is."""

    file: str
    line: int
    case_id: str
    metric: str
    rater: str
    why: Literal["case", "metric", "judge"] = "case"


@dataclass
class Campaign:
    """A validated campaign. Build one with :func:`~calibrate.campaign.load.load_campaign` or
    :func:`~calibrate.campaign.load.campaign_from_frames`.

    Parameters
    ----------
    name : str
    metrics : dict of str to Metric
    raters : dict of str to Rater
    ratings : pandas.DataFrame
        As below.
    judges : dict of str to JudgeSpec
        The ``[judges]`` of ``campaign.toml``: how ``calibrate judge`` scores the cases.
    cases, adjustments, data_hash, path, out_of_scale, ...
        What the folder holds and how it was read (:func:`~calibrate.campaign.load.load_campaign` fills them).

    Attributes
    ----------
    ratings : pandas.DataFrame
        Columns ``case_id, metric, rater, rater_kind, value, error, reason, run_id`` plus ``line``,
        the line of the ratings file each row came from. A failed rating has ``value`` NaN and a
        non-empty ``error``.
    cases : dict or None
        Case id -> the case's fields (DeepEval names), when the campaign has ``cases.jsonl``.

    Examples
    --------
    >>> import pandas as pd
    >>> from calibrate.campaign.load import campaign_from_frames
    >>> c = campaign_from_frames({"name": "n", "metrics": {"f": {"scale": "binary"}}}, pd.DataFrame(
    ...     {"case_id": ["a", "b"], "metric": "f", "rater": "h", "rater_kind": "human", "value": [True, False]}))
    >>> c.name, sorted(c.metrics), c.ratings["value"].tolist()
    ('n', ['f'], [1.0, 0.0])
    """

    name: str
    metrics: dict[str, Metric]
    raters: dict[str, Rater]
    ratings: pd.DataFrame
    judges: dict[str, JudgeSpec] = field(default_factory=dict)
    cases: dict[str, dict[str, Any]] | None = None
    adjustments: list[Adjustment] = field(default_factory=list)
    data_hash: str = ""
    path: Path | None = None
    out_of_scale: OutOfScale = "error"
    #: an adjudicator's decision per (case, metric) where annotators disagreed: the reference label
    adjudications: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=ADJUDICATION_COLUMNS))
    #: the judge whose scores Label Studio showed the annotators as pre-annotations, if any (anchoring)
    shown_judge: str | None = None
    #: the samples drawn by ``calibrate sample``: name -> {"design": {...}, "case_ids": [...]}
    samples: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: the juries of ``[juries.NAME]``: name -> {"judges", "combine", "metrics"} (their ratings are in ``ratings``)
    juries: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: the RAG service's HTTP contract of ``[service]`` (``calibrate collect``), if declared
    service: Any = None
    #: exported ratings of cases removed from ``cases.jsonl``: left out, and said so
    set_aside: list[SetAside] = field(default_factory=list)
    #: what ``calibrate import`` learnt of the raters it brought (model, threshold, source): name -> facts
    imported_raters: dict[str, dict[str, Any]] = field(default_factory=dict)

    def set_aside_note(self, metric: str | None = None, *, why: str | None = None) -> str | None:
        """One sentence per reason on the exported ratings left out (of ``metric``, or all; for the
        reason ``why``, or every one): because their cases were removed, or their metric or judge.

        Examples
        --------
        >>> c = Campaign("n", {}, {}, pd.DataFrame(), set_aside=[SetAside("judge_ratings.csv", 2, "c1", "tone", "j",
        ...     "metric"), SetAside("judge_ratings.csv", 3, "c2", "tone", "j", "metric")])
        >>> print(c.set_aside_note())
        2 rating(s) in judge_ratings.csv are of metric(s) no longer declared in campaign.toml (tone): left out of every statistic; kept in their files and stores, they come back when it is declared again
        """
        sentences = []
        for reason in SET_ASIDE_REASONS:
            aside = [
                s
                for s in self.set_aside
                if s.why == reason and (metric is None or s.metric == metric) and (why is None or why == reason)
            ]
            if not aside:
                continue
            names = sorted(
                {getattr(s, {"case": "case_id", "metric": "metric", "judge": "rater"}[reason]) for s in aside}
            )
            files = sorted({Path(s.file).name for s in aside})
            listed = f"{', '.join(names[:10])}{' ...' if len(names) > 10 else ''}"
            if reason == "case":
                sentences.append(
                    f"{len(aside)} rating(s) in {' and '.join(files)} are of {len(names)} case(s) no "
                    f"longer in cases.jsonl ({listed}): left out of every statistic; their stores keep "
                    "them, and the next judge run or pull leaves them out of the file"
                )
            else:
                sentences.append(
                    f"{len(aside)} rating(s) in {' and '.join(files)} are {SET_ASIDE_REASONS[reason]} "
                    f"({listed}): left out of every statistic; kept in their files and stores, they "
                    "come back when it is declared again"
                )
        return "; ".join(sentences) or None

    def metric_names(self, metrics: list[str] | None = None) -> list[str]:
        """The metrics named, checked against those the campaign declares; all of them (sorted) for None.

        Raises ``ValueError`` naming an unknown metric and the declared ones.
        """
        if metrics is None:
            return sorted(self.metrics)
        unknown = [m for m in metrics if m not in self.metrics]
        if unknown:
            raise ValueError(
                f"unknown metric {', '.join(unknown)}; the campaign declares " + ", ".join(sorted(self.metrics))
            )
        return list(metrics)

    def rater(self, name: str) -> Rater:
        """Facts about a rater: its ``[raters.NAME]`` table, else its ``[judges.NAME]`` model and family,
        else what the tool it was imported from said of it."""
        if name in self.raters:
            return self.raters[name]
        if name in self.judges:
            judge = self.judges[name]
            return Rater(name, family=judge.family, model=judge.model.name)
        if name in self.imported_raters:
            facts = self.imported_raters[name]
            return Rater(name, family=facts.get("family"), model=facts.get("model"))
        return Rater(name)
