"""The campaign: a folder of ``campaign.toml``, ``ratings.{csv,jsonl,parquet}`` and ``cases.jsonl``.

One tidy table of ratings is the heart of it: one row per (case, metric, rater). Humans and judges
are both raters; ``rater_kind`` tells them apart. Everything is validated before any statistic, and
every problem names the file, the line, the field, the value found and what was expected.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd
from pydantic import JsonValue

from calibrate.base.documents import read_csv_rows, read_json_lines
from calibrate.base.errors import CampaignError, Problem
from calibrate.base.secrets import clip
from calibrate.campaign.config import (
    CampaignFile,
    MetricTable,
    RaterTable,
    nesting_problem,
    read_toml,
    table,
    tables,
)
from calibrate.campaign.judge_settings import JudgeSpec, parse_judges
from calibrate.campaign.juries import jury_ratings, parse_juries
from calibrate.campaign.own_files import (
    read_imported_raters,
    read_sample,
    read_shown_judge,
)
from calibrate.campaign.service import parse_service

__all__ = [
    "CASE_FIELDS",
    "RATING_COLUMNS",
    "Adjustment",
    "Campaign",
    "Metric",
    "Rater",
    "SetAside",
    "id_problem",
    "load_campaign",
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
#: the keys campaign.toml's tables take (their schemas: calibrate.campaign.config)
METRIC_KEYS = set(MetricTable.model_fields)
RATER_KEYS = set(RaterTable.model_fields)
TOP_KEYS = set(CampaignFile.model_fields)
OUT_OF_SCALE = ("error", "clip", "drop")


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
            return "one of " + ", ".join(_fmt(v) for v in self.levels)
        if self.range is not None:
            return f"a number from {_fmt(self.range[0])} to {_fmt(self.range[1])}"
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
    """A validated campaign. Build one with :func:`load_campaign` or :meth:`Campaign.from_frames`.

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
        What the folder holds and how it was read (:func:`load_campaign` fills them).

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
    >>> c = Campaign.from_frames({"name": "n", "metrics": {"f": {"scale": "binary"}}}, pd.DataFrame(
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

    @classmethod
    def from_frames(
        cls,
        config: dict[str, Any],
        ratings: pd.DataFrame,
        cases: pd.DataFrame | list[dict] | None = None,
        *,
        out_of_scale: OutOfScale | None = None,
    ) -> Campaign:
        """Build and validate a campaign from Python objects (the API twin of :func:`load_campaign`).

        Parameters
        ----------
        config : dict
            What ``campaign.toml`` would hold.
        ratings : pandas.DataFrame
            One row per rating, with the ratings-file columns. A ``value`` that is ``True`` or
            ``False`` (a pass / fail label) is read as 1 or 0.
        cases : pandas.DataFrame or list of dict, optional
            One row (or dict) per case, with ``case_id`` and DeepEval's field names; a missing value
            (NaN, None) in a DataFrame row is a field the case does not have.
        out_of_scale : {"error", "clip", "drop"}, optional, keyword-only
            As for :func:`load_campaign`.

        Returns
        -------
        Campaign
            Validated; a :class:`~calibrate.base.errors.CampaignError` lists every problem otherwise,
            naming the DataFrame row or list item.

        Examples
        --------
        >>> ratings = pd.DataFrame({"case_id": ["a", "b"], "metric": "faithfulness",
        ...     "rater": "ann", "rater_kind": "human", "value": [1, 0]})
        >>> c = Campaign.from_frames({"name": "x", "metrics": {"faithfulness": {"scale": "binary"}}}, ratings)
        >>> len(c.ratings)
        2
        """
        if not isinstance(ratings, pd.DataFrame):
            raise TypeError(f"ratings must be a pandas DataFrame, not {type(ratings).__name__}")
        raw = ratings.copy()
        if "value" in raw.columns:  # pass / fail labels as booleans
            raw["value"] = raw["value"].map(lambda v: int(v) if isinstance(v, (bool, np.bool_)) else v)
        if isinstance(cases, pd.DataFrame):
            cases = [{k: v for k, v in row.items() if not _missing(v)} for row in cases.to_dict("records")]
        for col in raw.columns:
            raw[col] = raw[col].map(lambda v: "" if v is None or (isinstance(v, float) and math.isnan(v)) else v)
        raw["line"] = np.arange(len(raw)) + 1
        if (too_deep := nesting_problem(config, "config")) is not None:
            raise CampaignError([too_deep])
        digest = hashlib.sha256(json.dumps(config, sort_keys=True, default=str).encode())
        digest.update(raw.to_csv(index=False).encode())
        digest.update(json.dumps(cases or [], sort_keys=True, default=str).encode())
        case_rows = [(i + 1, c) for i, c in enumerate(cases)] if cases is not None else None
        return _build(
            config,
            raw,
            case_rows,
            out_of_scale=out_of_scale,
            config_file="config",
            ratings_file="ratings (DataFrame row)",
            cases_file="cases (list item)",
            data_hash="sha256:" + digest.hexdigest(),
            path=None,
        )


def _missing(value: Any) -> bool:
    """A DataFrame cell that holds nothing: None, NaN or pandas' NA (lists and arrays hold something)."""
    if value is None:
        return True
    if isinstance(value, (list, tuple, dict, np.ndarray)):
        return False
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):
        return False


def load_campaign(path: str | Path, *, out_of_scale: OutOfScale | None = None) -> Campaign:
    """Read and validate a campaign folder.

    Parameters
    ----------
    path : str or Path
        The folder holding ``campaign.toml``, one ratings file and optionally ``cases.jsonl``.
    out_of_scale : {"error", "clip", "drop"}, optional, keyword-only
        What to do with a value outside the metric's declared scale: report it as an error, clip it
        to the scale, or drop the rating. By default, what ``campaign.toml`` declares as its
        ``out_of_scale``, else ``"error"``. Clipped and dropped values are listed in
        :attr:`Campaign.adjustments` and in the report.

    Returns
    -------
    Campaign

    Raises
    ------
    CampaignError
        Listing every problem found, each naming the file, line, field, value and what was expected.

    Examples
    --------
    >>> from calibrate.demo import demo_campaign_path
    >>> c = load_campaign(demo_campaign_path())  # it declares out_of_scale = "drop"
    >>> sorted(c.metrics), c.out_of_scale, len(c.adjustments)
    (['relevance'], 'drop', 2)
    """
    folder = Path(path)
    if not folder.is_dir():
        raise CampaignError(
            [
                Problem(
                    str(folder),
                    "the campaign folder does not exist",
                    expected="a folder holding campaign.toml and ratings.csv",
                )
            ]
        )
    toml_path = folder / "campaign.toml"
    if not toml_path.is_file():
        raise CampaignError(
            [
                Problem(
                    str(toml_path),
                    "campaign.toml is missing",
                    expected="a campaign.toml declaring the name and the metrics",
                )
            ]
        )
    config = read_toml(toml_path)  # size, encoding and nesting limited
    present = [folder / name for name in RATINGS_FILES if (folder / name).is_file()]
    # the ratings calibrate itself exports beside the user's own file: judges' and Label Studio's
    exported = [folder / name for name in EXPORTED_RATINGS_FILES if (folder / name).is_file()]
    # a campaign of cases alone (collected or imported, not yet rated) has no ratings yet
    cases_only = not (present or exported) and (folder / CASES_FILE).is_file()
    if len(present) > 1 or not (present or exported or cases_only):
        found = ", ".join(p.name for p in present) or "none"
        raise CampaignError(
            [
                Problem(
                    str(folder),
                    "the campaign needs exactly one ratings file of its own",
                    value=found,
                    expected="one of " + ", ".join(RATINGS_FILES) + " (or labels pulled from "
                    "Label Studio, or judge ratings, or cases.jsonl alone before any rating)",
                )
            ]
        )
    frames = [_read_ratings(path).assign(file=str(path)) for path in present + exported]
    raw = (
        pd.concat(frames, ignore_index=True)
        if frames
        else pd.DataFrame({c: pd.Series(dtype=str) for c in REQUIRED_COLUMNS} | {"line": pd.Series(dtype=int)})
    )
    ratings_path = present[0] if present else exported[0] if exported else folder / RATINGS_FILES[0]
    cases_path = folder / CASES_FILE
    case_rows = _read_jsonl(cases_path) if cases_path.is_file() else None
    adjudications_path = folder / ADJUDICATIONS_FILE
    samples = {p.stem: p for p in sorted((folder / SAMPLES_FOLDER).glob("*.json")) if p.with_suffix(".csv").is_file()}
    digest = hashlib.sha256()
    for p in [
        toml_path,
        *present,
        *exported,
        cases_path,
        adjudications_path,
        *(q for s in samples.values() for q in (s, s.with_suffix(".csv"))),
    ]:
        if p.is_file():
            digest.update(p.name.encode() + b"\0" + p.read_bytes() + b"\0")
    campaign = _build(
        config,
        raw,
        case_rows,
        out_of_scale=out_of_scale,
        config_file=str(toml_path),
        ratings_file=str(ratings_path),
        cases_file=str(cases_path),
        data_hash="sha256:" + digest.hexdigest(),
        path=folder,
    )
    if adjudications_path.is_file():
        campaign.adjudications = _read_adjudications(adjudications_path, campaign)
    # calibrate's own files a person may have edited, each through its schema (calibrate.campaign.own_files)
    for name, sample in samples.items():
        campaign.samples[name] = read_sample(sample, cases=campaign.cases, samples=samples)
    imported_meta = folder / IMPORTED_META_FILE
    if imported_meta.is_file() and (folder / IMPORTED_RATINGS_FILE).is_file():
        campaign.imported_raters = read_imported_raters(imported_meta)
    meta_path = folder / LABELSTUDIO_META_FILE
    if meta_path.is_file() and (folder / LABELSTUDIO_RATINGS_FILE).is_file():
        campaign.shown_judge = read_shown_judge(meta_path)
    return campaign


def _read_adjudications(path: Path, campaign: Campaign) -> pd.DataFrame:
    """The current decisions ``calibrate adjudicate`` wrote, checked against the campaign."""
    frame = pd.read_csv(path, dtype={"case_id": str, "metric": str, "adjudicator": str})
    problems = []
    if list(frame.columns) != ADJUDICATION_COLUMNS:
        problems.append(
            Problem(
                str(path),
                "unexpected columns",
                value=", ".join(frame.columns),
                expected=", ".join(ADJUDICATION_COLUMNS) + " (the file calibrate adjudicate writes)",
            )
        )
    else:
        removed = ~frame["metric"].isin(list(campaign.metrics)).to_numpy()
        for line, row in enumerate(frame.itertuples(), start=2):  # a removed metric's decisions: set aside
            if removed[line - 2]:
                campaign.set_aside.append(
                    SetAside(str(path), line, str(row.case_id), str(row.metric), str(row.adjudicator), "metric")
                )
        for line, row in enumerate(frame.itertuples(), start=2):
            metric = campaign.metrics.get(row.metric)
            if metric is None and removed[line - 2]:
                continue
            if metric is None or not bool(metric.in_scale(np.array([row.value], float))[0]):
                problems.append(
                    Problem(
                        str(path),
                        "a decision for an unknown metric or off its scale",
                        row=line,
                        field="value",
                        value=f"{row.metric}={row.value}",
                    )
                )
    if problems:
        raise CampaignError(problems)
    return frame[~removed].reset_index(drop=True) if list(frame.columns) == ADJUDICATION_COLUMNS else frame


# ---------------------------------------------------------------------------------------- reading
def _read_jsonl(path: Path) -> list[tuple[int, Any]]:
    """Each line of a JSON Lines file (``cases.jsonl``, ``ratings.jsonl``) with its number, read by
    :func:`~calibrate.base.documents.read_json_lines`: a line ends at ``\\n`` only (U+2028, U+2029 and
    U+0085 are text inside a JSON string), within the size and depth limits of every document; each line
    that is not JSON is a problem naming the file and the line. Whether a line is an object is checked
    by the caller, which names what it should hold."""
    return read_json_lines(path, JsonValue, expected="one JSON object per line")


def _read_csv(path: Path) -> pd.DataFrame:
    """A CSV file as text columns, each row with the physical line it starts on (a quoted field may span
    lines, and blank lines are skipped, so a row's line is not its index)."""
    header, rows = read_csv_rows(path, expected="a header line: " + ", ".join(REQUIRED_COLUMNS))
    frame = pd.DataFrame([record for _, record in rows], columns=header, dtype=object)
    frame["line"] = [line for line, _ in rows]
    return frame


def _read_ratings(path: Path) -> pd.DataFrame:
    if path.suffix == ".csv":
        return _read_csv(path)
    if path.suffix == ".parquet":
        try:
            frame = pd.read_parquet(path)
        except Exception as exc:  # noqa: BLE001 - pyarrow raises many kinds for a file that is not Parquet
            raise CampaignError(
                [
                    Problem(
                        str(path),
                        f"not a readable Parquet file ({type(exc).__name__}: {clip(exc, 200)})",
                        expected="a Parquet file of ratings",
                    )
                ]
            ) from None
        frame = frame.astype(object)
        frame["line"] = np.arange(len(frame)) + 1
        return frame
    rows = _read_jsonl(path)
    problems = [
        Problem(
            str(path),
            "each line must be a JSON object",
            row=n,
            value=type(obj).__name__,
            expected="an object with case_id, metric, rater, rater_kind, value",
        )
        for n, obj in rows
        if not isinstance(obj, dict)
    ]
    if problems:
        raise CampaignError(problems)
    if not rows:
        raise CampaignError(
            [
                Problem(
                    str(path),
                    "the file holds no rating",
                    expected="one JSON object per line with " + ", ".join(REQUIRED_COLUMNS),
                )
            ]
        )
    frame = pd.DataFrame([obj for _, obj in rows], dtype=object)  # object: ids stay exactly as written
    frame["line"] = [n for n, _ in rows]
    return frame


# ------------------------------------------------------------------------------------- validation
def _fmt(value: float) -> str:
    return f"{value:g}" if isinstance(value, (int, float)) else str(value)


def _parse_metric(name: str, spec: MetricTable, file: str, problems: list[Problem]) -> Metric | None:
    """A ``[metrics.NAME]`` table (read by :class:`~calibrate.campaign.config.MetricTable`), checked for
    what ties its fields together: levels and range to the scale, ``human_pass`` inside them, both costs."""
    where = f"metrics.{name}"
    scale = spec.scale
    levels = rng = None
    if scale == "binary":
        levels = (0.0, 1.0)
        if spec.levels is not None and list(spec.levels) != [0, 1]:
            problems.append(
                Problem(
                    file,
                    "a binary scale has the levels [0, 1]",
                    field=f"{where}.levels",
                    value=list(spec.levels),
                    expected="[0, 1] or nothing",
                )
            )
    elif scale == "ordinal":
        raw = spec.levels
        if raw is None or len(raw) < 2 or len(set(raw)) != len(raw):
            problems.append(
                Problem(
                    file,
                    "an ordinal scale needs its levels",
                    field=f"{where}.levels",
                    value=None if raw is None else list(raw),
                    expected="a list of at least two distinct numbers, such as [0, 1, 2, 3]",
                )
            )
            return None
        levels = tuple(sorted(float(v) for v in raw))
    if spec.levels is not None and scale == "continuous":
        problems.append(
            Problem(
                file,
                "a continuous scale has no levels",
                field=f"{where}.levels",
                expected="range = [low, high] or nothing",
            )
        )
    if spec.range is not None:
        raw = list(spec.range)
        if scale != "continuous":
            problems.append(Problem(file, "only a continuous scale takes a range", field=f"{where}.range"))
        elif len(raw) != 2 or raw[0] >= raw[1]:
            problems.append(
                Problem(
                    file, "invalid range", field=f"{where}.range", value=raw, expected="[low, high] with low < high"
                )
            )
        else:
            rng = (float(raw[0]), float(raw[1]))
    human_pass = spec.human_pass if spec.human_pass is not None else (1 if scale == "binary" else None)
    if human_pass is None:
        problems.append(
            Problem(
                file,
                "human_pass is missing or not a number",
                field=f"{where}.human_pass",
                expected="the lowest human value that counts as a pass",
            )
        )
        return None
    if scale == "binary" and human_pass != 1:
        problems.append(
            Problem(file, "a binary scale passes at 1", field=f"{where}.human_pass", value=human_pass, expected="1")
        )
    low_high = (levels[0], levels[-1]) if levels else rng
    if low_high and not (low_high[0] < human_pass <= low_high[1]):
        problems.append(
            Problem(
                file,
                "human_pass makes every human label a pass or every one a fail",
                field=f"{where}.human_pass",
                value=human_pass,
                expected=f"a value above {_fmt(low_high[0])} and at most {_fmt(low_high[1])}",
            )
        )
    costs = [spec.cost_false_pass, spec.cost_false_fail]
    if (costs[0] is None) != (costs[1] is None):
        problems.append(
            Problem(
                file,
                "the cost rule needs both costs",
                field=f"{where}.cost_false_pass",
                expected="cost_false_pass and cost_false_fail together",
            )
        )
    return Metric(
        name=name,
        scale=scale,
        human_pass=float(human_pass),
        levels=levels,
        range=rng,
        max_false_pass=spec.max_false_pass,
        cost_false_pass=costs[0],
        cost_false_fail=costs[1],
        description=spec.description,
    )


def _section(config: Any, key: str) -> Any:
    """A section of campaign.toml, when it is a table (one that is not was named by the top level's schema)."""
    value = config.get(key) if isinstance(config, dict) else None
    return value if isinstance(value, dict) else None


@dataclass(frozen=True)
class _Config:
    """What campaign.toml declares, read and checked."""

    name: str
    metrics: dict[str, Metric]
    raters: dict[str, Rater]
    judges: dict[str, JudgeSpec]
    out_of_scale: OutOfScale
    juries: dict[str, dict[str, Any]]
    service: Any


def _parse_config(config: Any, file: str) -> _Config:
    """campaign.toml read through its schemas (:mod:`calibrate.campaign.config`): the top level, every
    ``[metrics.NAME]``, ``[raters.NAME]`` and ``[judges.NAME]``, and the rules across their fields; every
    problem of every table listed in one :class:`CampaignError`."""
    problems: list[Problem] = []
    top = table(config, CampaignFile, "", file, problems)
    name = top.name if top is not None else None
    if top is not None and not top.name.strip():
        problems.append(
            Problem(file, "the campaign needs a name", field="name", value=top.name, expected='name = "..."')
        )
    metric_specs = tables(_section(config, "metrics"), MetricTable, "metrics", file, problems)
    metrics = {n: m for n, s in metric_specs.items() if (m := _parse_metric(n, s, file, problems))}
    raters = {
        n: Rater(
            name=n,
            family=r.family,
            model=r.model,
            higher_is_better=r.higher_is_better,
            on_metric_scale=r.on_metric_scale,
            description=r.description,
        )
        for n, r in tables(_section(config, "raters"), RaterTable, "raters", file, problems).items()
    }
    declared = set(metrics) | set(_section(config, "metrics") or {})  # a metric with a problem is reported once
    judges = parse_judges(_section(config, "judges"), declared, file, problems)
    juries = parse_juries(_section(config, "juries"), file, problems)
    service = parse_service(_section(config, "service"), file, problems)
    if problems:
        raise CampaignError(problems)
    return _Config(name, metrics, raters, judges, top.out_of_scale, juries, service)


def _as_text(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, bytes):  # a Parquet binary column: its text (an undecodable one is refused first)
        return value.decode("utf-8", errors="replace")
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


ID_COLUMNS = ("case_id", "metric", "rater", "rater_kind", "run_id")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def id_problem(value: Any) -> str | None:
    """Why a value cannot serve as an id (a case's, a metric's, a rater's) kept exactly as written, or None:
    the rule every loader applies, for what writes ids to check them first.

    >>> id_problem("c1"), id_problem(7), id_problem("c\x1b[2J").startswith("holds a control character")
    (None, None, True)
    """
    if value is None or isinstance(value, (str, np.str_)):
        text = "" if value is None else str(value)
        found = _CONTROL.search(text)
        return (
            f"holds a control character ({found.group()!r}): ids that differ only by one would be shown as one"
            if found
            else None
        )
    if isinstance(value, bytes):
        try:
            return id_problem(value.decode("utf-8"))
        except UnicodeDecodeError:
            return "bytes that are not UTF-8 text"
    if isinstance(value, (bool, np.bool_)):
        return "a true/false value"
    if isinstance(value, (int, np.integer)):
        return None
    if isinstance(value, (float, np.floating)):
        if math.isnan(value):
            return None
        if float(value).is_integer() and abs(value) >= 2**53:
            return "a number too large to be kept exactly (write ids as text)"
        return None if math.isfinite(value) else "not a finite number"
    return f"a {type(value).__name__}, not text"


def _text_column(frame: pd.DataFrame, column: str) -> pd.Series:
    """A column as text ("" where missing; whole floats such as ids 12.0 as "12")."""
    if column not in frame:
        return pd.Series("", index=frame.index, dtype="str")
    col = frame[column]
    if pd.api.types.is_string_dtype(col.dtype) and col.dtype != object:
        return col.fillna("")
    if pd.api.types.is_integer_dtype(col.dtype):
        return col.astype("str")
    return pd.Series([_as_text(v) for v in col.tolist()], index=frame.index, dtype="str")


def _parse_values(raw: pd.Series) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Numbers from a column of strings or numbers: (values, is_blank, is_invalid)."""
    if pd.api.types.is_bool_dtype(raw.dtype):
        invalid = np.ones(len(raw), dtype=bool)
        return np.full(len(raw), np.nan), np.zeros(len(raw), dtype=bool), invalid
    if pd.api.types.is_numeric_dtype(raw.dtype):
        values = raw.to_numpy(dtype=float, na_value=np.nan)
        blank = np.isnan(values)
        invalid = np.isinf(values)
        return np.where(invalid, np.nan, values), blank, invalid
    objects = raw.to_numpy(dtype=object)
    blank = pd.isna(raw).to_numpy() | (objects == "")
    as_bool = np.array([isinstance(v, bool) for v in objects.tolist()], dtype=bool)
    values = pd.to_numeric(pd.Series(np.where(blank | as_bool, None, objects)), errors="coerce").to_numpy(float)
    invalid = (~blank & ~np.isfinite(values)) | as_bool
    return np.where(blank | invalid, np.nan, values), blank, invalid


def _build(
    config: dict,
    raw: pd.DataFrame,
    case_rows,
    *,
    out_of_scale: OutOfScale,
    config_file: str,
    ratings_file: str,
    cases_file: str,
    data_hash: str,
    path: Path | None,
) -> Campaign:
    if out_of_scale is not None and out_of_scale not in OUT_OF_SCALE:
        raise ValueError(f"out_of_scale must be 'error', 'clip' or 'drop', not {out_of_scale!r}")
    declared = _parse_config(config, config_file)
    name, metrics, raters, judges = declared.name, declared.metrics, declared.raters, declared.judges
    out_of_scale = out_of_scale or declared.out_of_scale
    problems: list[Problem] = []
    missing = [c for c in REQUIRED_COLUMNS if c not in raw.columns]
    if missing:
        raise CampaignError(
            [
                Problem(
                    ratings_file,
                    "missing column" + ("s" if len(missing) > 1 else ""),
                    value=", ".join(missing),
                    expected="columns "
                    + ", ".join(REQUIRED_COLUMNS)
                    + " (and optionally "
                    + ", ".join(OPTIONAL_COLUMNS)
                    + ")",
                )
            ]
        )
    lines = raw["line"].to_numpy()
    files = raw["file"].to_numpy() if "file" in raw else np.full(len(raw), ratings_file, dtype=object)
    # what calibrate exported of a metric, a judge or a case since removed is set aside (kept in its file
    # and store, out of every statistic); the user's own ratings file must agree with campaign.toml
    exported = np.array([path is not None and Path(f).name in EXPORTED_RATINGS_FILES for f in files], dtype=bool)
    for column in ID_COLUMNS:
        if column in raw:
            for i, value in enumerate(raw[column].tolist()):
                why = id_problem(value)
                if why:
                    problems.append(
                        Problem(
                            files[i],
                            why,
                            row=int(lines[i]),
                            field=column,
                            value=value,
                            expected="text, or a whole number",
                        )
                    )

    several_files = len(set(files)) > 1

    def at(i: int) -> str:
        """Where row i came from, for messages that point at another row."""
        return f"line {lines[i]}" + (f" of {Path(files[i]).name}" if several_files else "")

    ratings = pd.DataFrame({c: _text_column(raw, c) for c in ("case_id", "metric", "rater", "rater_kind")})
    values, blank, invalid = _parse_values(raw["value"])
    for c in OPTIONAL_COLUMNS:
        ratings[c] = _text_column(raw, c)
    ratings["value"] = values
    ratings["line"] = lines
    # where each rating came from: the file's name, and the tool it was imported from (calibrate import)
    ratings["file"] = [Path(f).name if path is not None else f for f in files]
    ratings["source"] = _text_column(raw, "source")

    def report(mask, message, column, expected, value_from=None):
        for i in np.flatnonzero(mask):
            value = (value_from if value_from is not None else raw[column]).iloc[i]
            problems.append(Problem(files[i], message, row=int(lines[i]), field=column, value=value, expected=expected))

    for column in ("case_id", "metric", "rater"):
        report((ratings[column] == "").to_numpy(), "empty", column, "a non-empty " + column)
    report(
        ~ratings["rater_kind"].isin(["human", "judge"]).to_numpy(),
        "unknown rater_kind",
        "rater_kind",
        '"human" or "judge"',
    )
    known = ratings["metric"].isin(list(metrics)).to_numpy()
    report(
        ~known & (ratings["metric"] != "").to_numpy() & ~exported,
        "unknown metric",
        "metric",
        "a metric declared in campaign.toml: "
        + ", ".join(sorted(metrics))
        + " (to remove a metric, take its rows out of your own ratings file too)",
    )
    reasons = np.full(len(ratings), "", dtype=object)
    reasons[exported & ~known] = "metric"
    of_judges = np.array([Path(f).name == JUDGE_RATINGS_FILE for f in files], dtype=bool) & (path is not None)
    reasons[(reasons == "") & of_judges & ~ratings["rater"].isin(list(judges)).to_numpy()] = "judge"
    aside = reasons != ""
    report(invalid, "not a number", "value", "a finite number, or an empty value with an error")
    has_error = (ratings["error"] != "").to_numpy()
    report(blank & ~has_error, "no value and no error", "value", "a value, or an 'error' saying why the rating failed")
    report(
        ~blank & ~invalid & has_error, "a rating has both a value and an error", "error", "either a value or an error"
    )

    # out-of-scale values: every human value, and judges that declare on_metric_scale = true
    adjustments: list[Adjustment] = []
    on_scale_judges = {n for n, r in raters.items() if r.on_metric_scale}
    checked = ((ratings["rater_kind"] == "human") | ratings["rater"].isin(on_scale_judges)).to_numpy() & ~aside
    drop = np.zeros(len(ratings), dtype=bool)
    for metric in metrics.values():
        rows = checked & (ratings["metric"] == metric.name).to_numpy() & np.isfinite(values)
        bad = rows & ~metric.in_scale(np.nan_to_num(values, nan=0.0))
        if out_of_scale == "error":
            report(bad, f"value outside the scale of metric '{metric.name}'", "value", metric.scale_text())
            continue
        new = metric.nearest_in_scale(values[bad]) if bad.any() else np.array([])
        for i, new_value in zip(np.flatnonzero(bad), new):
            row = ratings.iloc[i]
            adjustments.append(
                Adjustment(
                    files[i],
                    int(lines[i]),
                    row.case_id,
                    row.metric,
                    row.rater,
                    float(values[i]),
                    "clipped" if out_of_scale == "clip" else "dropped",
                    float(new_value) if out_of_scale == "clip" else None,
                )
            )
        if out_of_scale == "clip":
            ratings.loc[bad, "value"] = new
        else:
            drop |= bad

    # a rater is either a human or a judge
    kinds = (
        ratings[ratings["rater_kind"].isin(["human", "judge"]).to_numpy() & ~aside]
        .groupby("rater")["rater_kind"]
        .nunique()
    )
    for rater in kinds[kinds > 1].index:
        rows = ratings.index[(ratings["rater"] == rater).to_numpy() & ~aside]
        first = {kind: rows[(ratings.loc[rows, "rater_kind"] == kind).to_numpy()][0] for kind in ("human", "judge")}
        later = max(first.values())
        problems.append(
            Problem(
                files[later],
                f"rater '{rater}' is declared both human (first at "
                f"{at(first['human'])}) and judge (first at {at(first['judge'])})",
                row=int(lines[later]),
                field="rater_kind",
                value=rater,
                expected="one rater_kind per rater",
            )
        )
    for rater in sorted(set(ratings.loc[ratings["rater_kind"] == "human", "rater"]) & set(judges)):
        problems.append(
            Problem(
                config_file,
                f"judge '{rater}' has the name of a human rater in the ratings",
                field=f"judges.{rater}",
                expected="a name no human annotator uses",
            )
        )
    for rater in sorted(set(ratings.loc[ratings["rater_kind"] == "human", "rater"]) & set(raters)):
        if not raters[rater].higher_is_better:
            problems.append(
                Problem(
                    config_file,
                    "a human rater rates on the metric's own scale",
                    field=f"raters.{rater}.higher_is_better",
                    value=False,
                    expected="true",
                )
            )

    # duplicates: one rating per (case, metric, rater) -- per run for judges
    key = ratings[["case_id", "metric", "rater"]].copy()
    key["run"] = np.where(ratings["rater_kind"] == "judge", ratings["run_id"], "")
    key.loc[aside, "run"] = [f"\0{i}" for i in np.flatnonzero(aside)]  # a set-aside rating is no duplicate
    duplicated = key.duplicated(keep="first").to_numpy()
    if duplicated.any():
        position = pd.Series(np.arange(len(ratings)), index=ratings.index)
        first_row = position.groupby([key[c] for c in key.columns]).transform("min").to_numpy()
        for i in np.flatnonzero(duplicated):
            r = ratings.iloc[i]
            problems.append(
                Problem(
                    files[i],
                    f"duplicate rating of case '{r.case_id}', metric '{r.metric}' "
                    f"by rater '{r.rater}' (first at {at(first_row[i])})",
                    row=int(lines[i]),
                    field="case_id",
                    expected="one rating per (case_id, metric, rater"
                    + (", run_id)" if r.rater_kind == "judge" else ")"),
                )
            )

    # a judge's run is shown as RATER@RUN: no two (rater, run) may be shown under one name
    judged = ratings[(ratings["rater_kind"] == "judge").to_numpy() & ~aside]
    shown = pd.Series(
        np.where(judged["run_id"] != "", judged["rater"] + "@" + judged["run_id"], judged["rater"]), index=judged.index
    )
    pairs = pd.DataFrame({"shown": shown, "rater": judged["rater"], "run": judged["run_id"]}).drop_duplicates()
    for shown_as, group in pairs.groupby("shown"):
        if len(group) > 1:
            described = " and ".join(
                f"rater {r!r}" + (f" with run_id {u!r}" if u else "") for r, u in zip(group["rater"], group["run"])
            )
            problems.append(
                Problem(
                    ratings_file if not several_files else files[group.index[0]],
                    f"{described} would both be shown as {shown_as!r}",
                    field="rater",
                    row=int(lines[group.index[-1]]),
                    expected="rater names without '@' where runs are named, or other run_ids",
                )
            )

    cases = None
    if case_rows is not None:
        cases = _validate_cases(case_rows, cases_file, problems)
        unknown = ~ratings["case_id"].isin(list(cases)).to_numpy() & (ratings["case_id"] != "").to_numpy()
        report(
            unknown & ~exported,
            "a rating for a case that is not in cases.jsonl",
            "case_id",
            "a case_id listed in " + Path(cases_file).name,
        )
        reasons[(reasons == "") & unknown & exported] = "case"
    aside = reasons != ""
    set_aside = [
        SetAside(
            files[i],
            int(lines[i]),
            ratings["case_id"].iat[i],
            ratings["metric"].iat[i],
            ratings["rater"].iat[i],
            reasons[i],
        )
        for i in np.flatnonzero(aside)
    ]
    drop |= aside
    if problems:
        raise CampaignError(problems)
    ratings = ratings[~drop].reset_index(drop=True)
    juries, service = declared.juries, declared.service
    if juries:  # a jury's ratings join the campaign as a judge's
        added, facts = jury_ratings(ratings, juries, raters, metrics, config_file, problems)
    if problems:
        raise CampaignError(problems)
    if juries:
        ratings = pd.concat([ratings, added], ignore_index=True)
        raters = {**raters, **{n: Rater(name=n, family="jury", **f) for n, f in facts.items()}}
    return Campaign(
        name=name,
        metrics=metrics,
        raters=raters,
        ratings=ratings,
        cases=cases,
        judges=judges,
        adjustments=adjustments,
        data_hash=data_hash,
        path=path,
        out_of_scale=out_of_scale,
        juries=juries,
        service=service,
        set_aside=set_aside,
    )


def _validate_cases(case_rows, file: str, problems: list[Problem]) -> dict[str, dict]:
    cases: dict[str, dict] = {}
    first_line: dict[str, int] = {}
    for line, obj in case_rows:
        if not isinstance(obj, dict):
            problems.append(
                Problem(
                    file,
                    "each case must be a JSON object",
                    row=line,
                    value=type(obj).__name__,
                    expected="an object with case_id and DeepEval's field names",
                )
            )
            continue
        case_id = obj.get("case_id")
        if isinstance(case_id, int) and not isinstance(case_id, bool):
            case_id = str(case_id)
        if not isinstance(case_id, str) or not case_id:
            problems.append(
                Problem(
                    file,
                    "missing or empty case_id",
                    row=line,
                    field="case_id",
                    value=case_id,
                    expected="a non-empty string",
                )
            )
            continue
        if why := id_problem(case_id):
            problems.append(
                Problem(
                    file,
                    f"case_id {why}",
                    row=line,
                    field="case_id",
                    value=case_id,
                    expected="text without control characters",
                )
            )
            continue
        for key, types in CASE_FIELDS.items():
            if key in obj and not isinstance(obj[key], types):
                problems.append(
                    Problem(
                        file,
                        f"wrong type for case '{case_id}'",
                        row=line,
                        field=key,
                        value=type(obj[key]).__name__,
                        expected=" or ".join("null" if t is type(None) else t.__name__ for t in types),
                    )
                )
        for key in ("retrieval_context", "context"):
            if isinstance(obj.get(key), list) and not all(isinstance(x, str) for x in obj[key]):
                problems.append(
                    Problem(
                        file,
                        f"case '{case_id}' has a non-string chunk",
                        row=line,
                        field=key,
                        expected="a list of strings",
                    )
                )
        if case_id in cases:
            problems.append(
                Problem(
                    file,
                    f"duplicate case_id (first at line {first_line[case_id]})",
                    row=line,
                    field="case_id",
                    value=case_id,
                    expected="each case once",
                )
            )
            continue
        cases[case_id] = {**obj, "case_id": case_id}
        first_line[case_id] = line
    return cases
