"""The campaign: a folder of ``campaign.toml``, ``ratings.{csv,jsonl,parquet}`` and ``cases.jsonl``.

One tidy table of ratings is the heart of it: one row per (case, metric, rater). Humans and judges
are both raters; ``rater_kind`` tells them apart. Everything is validated before any statistic, and
every problem names the file, the line, the field, the value found and what was expected.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd

from calibrate.base.errors import CampaignError, Problem
from calibrate.campaign.judge_settings import JudgeSpec, parse_judges
from calibrate.campaign.service import parse_service
from calibrate.campaign.juries import jury_ratings, parse_juries

__all__ = ["Metric", "Rater", "Adjustment", "SetAside", "Campaign", "load_campaign", "RATING_COLUMNS",
           "CASE_FIELDS"]

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
LABELSTUDIO_META_FILE = "labelstudio_ratings.json"   # what the annotators saw (a judge shown as pre-annotations)
#: Written by `calibrate import` (from its store): the ratings other tools hold, and what they say of their raters.
IMPORTED_RATINGS_FILE = "imported_ratings.csv"
IMPORTED_META_FILE = "imported_ratings.json"
SAMPLES_FOLDER = "samples"   # calibrate sample writes NAME.csv and NAME.json here
EXPORTED_RATINGS_FILES = (JUDGE_RATINGS_FILE, LABELSTUDIO_RATINGS_FILE, IMPORTED_RATINGS_FILE)
ADJUDICATIONS_FILE = "adjudications.csv"   # written by calibrate adjudicate
ADJUDICATION_COLUMNS = ["case_id", "metric", "value", "adjudicator", "decided"]
#: DeepEval's LLMTestCase field names, and the type each must have in ``cases.jsonl``.
CASE_FIELDS = {
    "input": (str,), "actual_output": (str, type(None)), "expected_output": (str, type(None)),
    "retrieval_context": (list, type(None)), "context": (list, type(None)), "metadata": (dict, type(None)),
}
METRIC_KEYS = {"scale", "human_pass", "levels", "range", "max_false_pass", "cost_false_pass",
               "cost_false_fail", "description"}
RATER_KEYS = {"family", "model", "higher_is_better", "on_metric_scale", "description"}
TOP_KEYS = {"name", "description", "out_of_scale", "metrics", "raters", "judges", "juries", "service"}
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


@dataclass(frozen=True)
class SetAside:
    """A rating that calibrate exported (from the judge or the Label Studio store) for a case that is
    no longer in ``cases.jsonl``: left out of every statistic, kept in its store."""

    file: str
    line: int
    case_id: str
    metric: str
    rater: str


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

    def set_aside_note(self, metric: str | None = None) -> str | None:
        """One sentence on the exported ratings (of ``metric``, or all) left out because their cases
        were removed, if any."""
        aside = [s for s in self.set_aside if metric is None or s.metric == metric]
        if not aside:
            return None
        cases = sorted({s.case_id for s in aside})
        files = sorted({Path(s.file).name for s in aside})
        return (f"{len(aside)} rating(s) in {' and '.join(files)} are of {len(cases)} case(s) no longer in "
                f"cases.jsonl ({', '.join(cases[:10])}{' ...' if len(cases) > 10 else ''}): left out of every "
                "statistic; their stores keep them, and the next judge run or pull leaves them out of the file")

    def metric_names(self, metrics: list[str] | None = None) -> list[str]:
        """The metrics named, checked against those the campaign declares; all of them (sorted) for None.

        Raises ``ValueError`` naming an unknown metric and the declared ones.
        """
        if metrics is None:
            return sorted(self.metrics)
        unknown = [m for m in metrics if m not in self.metrics]
        if unknown:
            raise ValueError(f"unknown metric {', '.join(unknown)}; the campaign declares "
                             + ", ".join(sorted(self.metrics)))
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
    def from_frames(cls, config: dict[str, Any], ratings: pd.DataFrame,
                    cases: pd.DataFrame | list[dict] | None = None, *,
                    out_of_scale: OutOfScale | None = None) -> "Campaign":
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
        digest = hashlib.sha256(json.dumps(config, sort_keys=True, default=str).encode())
        digest.update(raw.to_csv(index=False).encode())
        digest.update(json.dumps(cases or [], sort_keys=True, default=str).encode())
        case_rows = [(i + 1, c) for i, c in enumerate(cases)] if cases is not None else None
        return _build(config, raw, case_rows, out_of_scale=out_of_scale, config_file="config",
                      ratings_file="ratings (DataFrame row)", cases_file="cases (list item)",
                      data_hash="sha256:" + digest.hexdigest(), path=None)


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
        raise CampaignError([Problem(str(folder), "the campaign folder does not exist",
                                     expected="a folder holding campaign.toml and ratings.csv")])
    toml_path = folder / "campaign.toml"
    if not toml_path.is_file():
        raise CampaignError([Problem(str(toml_path), "campaign.toml is missing",
                                     expected="a campaign.toml declaring the name and the metrics")])
    try:
        config = tomllib.loads(toml_path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise CampaignError([Problem(str(toml_path), f"not valid TOML: {exc}")]) from None
    present = [folder / name for name in RATINGS_FILES if (folder / name).is_file()]
    # the ratings calibrate itself exports beside the user's own file: judges' and Label Studio's
    exported = [folder / name for name in EXPORTED_RATINGS_FILES if (folder / name).is_file()]
    # a campaign of cases alone (collected or imported, not yet rated) has no ratings yet
    cases_only = not (present or exported) and (folder / CASES_FILE).is_file()
    if len(present) > 1 or not (present or exported or cases_only):
        found = ", ".join(p.name for p in present) or "none"
        raise CampaignError([Problem(str(folder), "the campaign needs exactly one ratings file of its own", value=found,
                                     expected="one of " + ", ".join(RATINGS_FILES) + " (or labels pulled from "
                                     "Label Studio, or judge ratings, or cases.jsonl alone before any rating)")])
    frames = [_read_ratings(path).assign(file=str(path)) for path in present + exported]
    raw = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(
        {c: pd.Series(dtype=str) for c in REQUIRED_COLUMNS} | {"line": pd.Series(dtype=int)})
    ratings_path = present[0] if present else exported[0] if exported else folder / RATINGS_FILES[0]
    cases_path = folder / CASES_FILE
    case_rows = _read_jsonl(cases_path) if cases_path.is_file() else None
    adjudications_path = folder / ADJUDICATIONS_FILE
    samples = {p.stem: p for p in sorted((folder / SAMPLES_FOLDER).glob("*.json")) if p.with_suffix(".csv").is_file()}
    digest = hashlib.sha256()
    for p in [toml_path, *present, *exported, cases_path, adjudications_path,
              *(q for p in samples.values() for q in (p, p.with_suffix(".csv")))]:
        if p.is_file():
            digest.update(p.name.encode() + b"\0" + p.read_bytes() + b"\0")
    campaign = _build(config, raw, case_rows, out_of_scale=out_of_scale, config_file=str(toml_path),
                      ratings_file=str(ratings_path), cases_file=str(cases_path),
                      data_hash="sha256:" + digest.hexdigest(), path=folder)
    if adjudications_path.is_file():
        campaign.adjudications = _read_adjudications(adjudications_path, campaign)
    for name, sample in samples.items():
        campaign.samples[name] = _read_sample(folder, name, sample, campaign)
    imported_meta = folder / IMPORTED_META_FILE
    if imported_meta.is_file() and (folder / IMPORTED_RATINGS_FILE).is_file():
        try:
            campaign.imported_raters = dict(json.loads(imported_meta.read_text(encoding="utf-8"))["raters"])
        except (ValueError, KeyError, TypeError):
            raise CampaignError([Problem(str(imported_meta), "not the JSON calibrate import writes")]) from None
    meta_path = folder / LABELSTUDIO_META_FILE
    if meta_path.is_file() and (folder / LABELSTUDIO_RATINGS_FILE).is_file():
        try:
            campaign.shown_judge = json.loads(meta_path.read_text(encoding="utf-8")).get("shown_judge")
        except (ValueError, AttributeError):
            raise CampaignError([Problem(str(meta_path), "not the JSON calibrate labelstudio pull writes")]) from None
    return campaign


def _read_sample(folder: Path, name: str, design_path: Path, campaign: Campaign) -> dict[str, Any]:
    """A sample ``calibrate sample`` wrote: its design and, per case, the stratum and inclusion
    probability, each checked (the statistics weight cases by them)."""
    sample_path = design_path.with_suffix(".csv")
    try:
        design = json.loads(design_path.read_text(encoding="utf-8"))
        if not isinstance(design, dict):
            raise ValueError("expected a JSON object")
        table = pd.read_csv(sample_path, dtype={"case_id": str, "stratum": str}, keep_default_na=False)
    except ValueError as exc:
        raise CampaignError([Problem(str(design_path), f"not a sample calibrate sample wrote: {exc}")]) from None
    missing = [c for c in ("case_id", "stratum", "inclusion_probability") if c not in table.columns]
    if missing:
        raise CampaignError([Problem(str(sample_path), f"missing column(s) {', '.join(missing)}: expected "
                                     "case_id, stratum, inclusion_probability")])
    probability = pd.to_numeric(table["inclusion_probability"], errors="coerce")
    problems = [Problem(str(sample_path), f"inclusion_probability {table['inclusion_probability'][i]!r}: "
                        "expected a number in (0, 1]", row=int(i) + 2, field="inclusion_probability")
                for i in np.flatnonzero(~((probability > 0) & (probability <= 1)))[:20]]
    if campaign.cases is not None:
        problems += [Problem(str(sample_path), f"case {table['case_id'][i]!r} is not in cases.jsonl",
                             row=int(i) + 2, field="case_id")
                     for i in np.flatnonzero(~table["case_id"].isin(list(campaign.cases)))[:20]]
    if problems:
        raise CampaignError(problems)
    return {"design": design, "case_ids": table["case_id"].tolist(), "strata": table["stratum"].tolist(),
            "inclusion_probability": probability.to_numpy(float), "name": name}


def _read_adjudications(path: Path, campaign: Campaign) -> pd.DataFrame:
    """The current decisions ``calibrate adjudicate`` wrote, checked against the campaign."""
    frame = pd.read_csv(path, dtype={"case_id": str, "metric": str, "adjudicator": str})
    problems = []
    if list(frame.columns) != ADJUDICATION_COLUMNS:
        problems.append(Problem(str(path), "unexpected columns", value=", ".join(frame.columns),
                                expected=", ".join(ADJUDICATION_COLUMNS) + " (the file calibrate adjudicate writes)"))
    else:
        for line, row in enumerate(frame.itertuples(), start=2):
            metric = campaign.metrics.get(row.metric)
            if metric is None or not bool(metric.in_scale(np.array([row.value], float))[0]):
                problems.append(Problem(str(path), "a decision for an unknown metric or off its scale", row=line,
                                        field="value", value=f"{row.metric}={row.value}"))
    if problems:
        raise CampaignError(problems)
    return frame


# ---------------------------------------------------------------------------------------- reading
def _decode(path: Path) -> str:
    """A file's text (UTF-8, a byte-order mark allowed), or a problem naming the line of the first byte
    that is not UTF-8."""
    data = path.read_bytes()
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        raise CampaignError([Problem(str(path), f"not UTF-8 text (byte {data[exc.start]:#04x} at offset {exc.start})",
                                     row=line, expected="a file saved as UTF-8")]) from None


def _read_jsonl(path: Path) -> list[tuple[int, Any]]:
    rows, problems = [], []
    for number, line in enumerate(_decode(path).splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rows.append((number, json.loads(line)))
        except (json.JSONDecodeError, RecursionError) as exc:
            problems.append(Problem(str(path), f"not valid JSON: {getattr(exc, 'msg', 'nested too deeply')}", row=number,
                                    expected="one JSON object per line"))
    if problems:
        raise CampaignError(problems)
    return rows


def _read_csv(path: Path) -> pd.DataFrame:
    """A CSV file as text columns, each row with the physical line it starts on (a quoted field may span
    lines, and blank lines are skipped, so a row's line is not its index)."""
    reader = csv.reader(io.StringIO(_decode(path), newline=""))
    try:
        header = next(reader, None)
        if header is None:
            raise CampaignError([Problem(str(path), "the file is empty", row=1,
                                         expected="a header line: " + ", ".join(REQUIRED_COLUMNS))])
        problems = [Problem(str(path), "duplicate column (a second column of this name would be ignored)", row=1,
                            field=name, expected="each column once")
                    for name in sorted({n for n in header if header.count(n) > 1})]
        rows, lines, start = [], [], reader.line_num + 1
        for record in reader:
            if any(value != "" for value in record):
                if len(record) != len(header):
                    problems.append(Problem(str(path), f"{len(record)} field(s) where the header has {len(header)}",
                                            row=start, expected="one field per column"))
                else:
                    rows.append(record)
                    lines.append(start)
            start = reader.line_num + 1
    except csv.Error as exc:
        raise CampaignError([Problem(str(path), f"not a readable CSV file: {exc}", row=reader.line_num)]) from None
    if problems:
        raise CampaignError(problems)
    frame = pd.DataFrame(rows, columns=header, dtype=object)
    frame["line"] = lines
    return frame


def _read_ratings(path: Path) -> pd.DataFrame:
    if path.suffix == ".csv":
        return _read_csv(path)
    if path.suffix == ".parquet":
        try:
            frame = pd.read_parquet(path)
        except Exception as exc:  # noqa: BLE001 - pyarrow raises many kinds for a file that is not Parquet
            raise CampaignError([Problem(str(path), f"not a readable Parquet file ({type(exc).__name__}: "
                                         f"{str(exc)[:200]})", expected="a Parquet file of ratings")]) from None
        frame = frame.astype(object)
        frame["line"] = np.arange(len(frame)) + 1
        return frame
    rows = _read_jsonl(path)
    problems = [Problem(str(path), "each line must be a JSON object", row=n, value=type(obj).__name__,
                        expected="an object with case_id, metric, rater, rater_kind, value")
                for n, obj in rows if not isinstance(obj, dict)]
    if problems:
        raise CampaignError(problems)
    if not rows:
        raise CampaignError([Problem(str(path), "the file holds no rating",
                                     expected="one JSON object per line with " + ", ".join(REQUIRED_COLUMNS))])
    frame = pd.DataFrame([obj for _, obj in rows], dtype=object)   # object: ids stay exactly as written
    frame["line"] = [n for n, _ in rows]
    return frame


# ------------------------------------------------------------------------------------- validation
def _fmt(value: float) -> str:
    return f"{value:g}" if isinstance(value, (int, float)) else str(value)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _check_table(section: str, name: str, spec: Any, allowed: set[str], file: str,
                 problems: list[Problem]) -> bool:
    """A ``[section.name]`` table: is it a table, and are all its keys known (typos are errors)?"""
    where = f"{section}.{name}"
    if not isinstance(spec, dict):
        problems.append(Problem(file, f"[{where}] must be a table", field=where, expected=f"[{where}]"))
        return False
    for key in sorted(set(spec) - allowed):
        problems.append(Problem(file, "unknown key", field=f"{where}.{key}",
                                expected="one of " + ", ".join(sorted(allowed))))
    return True


def _parse_metric(name: str, spec: Any, file: str, problems: list[Problem]) -> Metric | None:
    where = f"metrics.{name}"
    if not _check_table("metrics", name, spec, METRIC_KEYS, file, problems):
        return None
    scale = spec.get("scale")
    if scale not in ("binary", "ordinal", "continuous"):
        problems.append(Problem(file, "unknown or missing scale", field=f"{where}.scale", value=scale,
                                expected='"binary", "ordinal" or "continuous"'))
        return None
    levels = rng = None
    if scale == "binary":
        levels = (0.0, 1.0)
        if spec.get("levels") not in (None, [0, 1]):
            problems.append(Problem(file, "a binary scale has the levels [0, 1]", field=f"{where}.levels",
                                    value=spec.get("levels"), expected="[0, 1] or nothing"))
    elif scale == "ordinal":
        raw = spec.get("levels")
        if (not isinstance(raw, list) or len(raw) < 2 or not all(_is_number(v) for v in raw)
                or len(set(raw)) != len(raw)):
            problems.append(Problem(file, "an ordinal scale needs its levels", field=f"{where}.levels", value=raw,
                                    expected="a list of at least two distinct numbers, such as [0, 1, 2, 3]"))
            return None
        levels = tuple(sorted(float(v) for v in raw))
    if "levels" in spec and scale == "continuous":
        problems.append(Problem(file, "a continuous scale has no levels", field=f"{where}.levels",
                                expected="range = [low, high] or nothing"))
    if "range" in spec:
        raw = spec["range"]
        if scale != "continuous":
            problems.append(Problem(file, "only a continuous scale takes a range", field=f"{where}.range"))
        elif (not isinstance(raw, list) or len(raw) != 2 or not all(_is_number(v) for v in raw)
              or raw[0] >= raw[1]):
            problems.append(Problem(file, "invalid range", field=f"{where}.range", value=raw,
                                    expected="[low, high] with low < high"))
        else:
            rng = (float(raw[0]), float(raw[1]))
    human_pass = spec.get("human_pass", 1 if scale == "binary" else None)
    if not _is_number(human_pass):
        problems.append(Problem(file, "human_pass is missing or not a number", field=f"{where}.human_pass",
                                value=human_pass, expected="the lowest human value that counts as a pass"))
        return None
    if scale == "binary" and human_pass != 1:
        problems.append(Problem(file, "a binary scale passes at 1", field=f"{where}.human_pass",
                                value=human_pass, expected="1"))
    low_high = (levels[0], levels[-1]) if levels else rng
    if low_high and not (low_high[0] < human_pass <= low_high[1]):
        problems.append(Problem(file, "human_pass makes every human label a pass or every one a fail",
                                field=f"{where}.human_pass", value=human_pass,
                                expected=f"a value above {_fmt(low_high[0])} and at most {_fmt(low_high[1])}"))
    mfp = spec.get("max_false_pass")
    if mfp is not None and not (_is_number(mfp) and 0 <= mfp <= 1):
        problems.append(Problem(file, "max_false_pass must be a rate", field=f"{where}.max_false_pass",
                                value=mfp, expected="a number from 0 to 1"))
    costs = [spec.get("cost_false_pass"), spec.get("cost_false_fail")]
    if (costs[0] is None) != (costs[1] is None):
        problems.append(Problem(file, "the cost rule needs both costs", field=f"{where}.cost_false_pass",
                                expected="cost_false_pass and cost_false_fail together"))
    for key, cost in zip(("cost_false_pass", "cost_false_fail"), costs):
        if cost is not None and not (_is_number(cost) and cost > 0):
            problems.append(Problem(file, "a cost must be a positive number", field=f"{where}.{key}", value=cost,
                                    expected="a number above 0"))
    return Metric(name=name, scale=scale, human_pass=float(human_pass), levels=levels, range=rng,
                  max_false_pass=mfp, cost_false_pass=costs[0], cost_false_fail=costs[1],
                  description=spec.get("description"))


def _parse_rater(name: str, spec: Any, file: str, problems: list[Problem]) -> Rater | None:
    where = f"raters.{name}"
    if not _check_table("raters", name, spec, RATER_KEYS, file, problems):
        return None
    for key in ("higher_is_better", "on_metric_scale"):
        if key in spec and not isinstance(spec[key], bool):
            problems.append(Problem(file, "must be true or false", field=f"{where}.{key}", value=spec[key],
                                    expected="true or false"))
    for key in ("family", "model", "description"):
        if key in spec and not isinstance(spec[key], str):
            problems.append(Problem(file, "must be a string", field=f"{where}.{key}", value=spec[key]))
    return Rater(name=name, family=spec.get("family"), model=spec.get("model"),
                 higher_is_better=spec.get("higher_is_better", True) is not False,
                 on_metric_scale=spec.get("on_metric_scale", False) is True, description=spec.get("description"))


def _parse_config(config: dict, file: str) -> tuple[str, dict[str, Metric], dict[str, Rater], dict[str, JudgeSpec]]:
    problems: list[Problem] = []
    for key in sorted(set(config) - TOP_KEYS):
        problems.append(Problem(file, "unknown top-level key", field=key,
                                expected="one of " + ", ".join(sorted(TOP_KEYS))))
    name = config.get("name")
    if not isinstance(name, str) or not name.strip():
        problems.append(Problem(file, "the campaign needs a name", field="name", value=name,
                                expected='name = "..."'))
    metric_specs = config.get("metrics")
    if not isinstance(metric_specs, dict) or not metric_specs:
        problems.append(Problem(file, "the campaign declares no metric", field="metrics",
                                expected="at least one [metrics.NAME] table"))
        metric_specs = {}
    metrics = {n: m for n, s in metric_specs.items() if (m := _parse_metric(n, s, file, problems))}
    rater_specs = config.get("raters", {})
    if not isinstance(rater_specs, dict):
        problems.append(Problem(file, "raters must be tables", field="raters", expected="[raters.NAME] tables"))
        rater_specs = {}
    raters = {n: r for n, s in rater_specs.items() if (r := _parse_rater(n, s, file, problems))}
    judges = parse_judges(config.get("judges"), set(metrics), file, problems)
    if problems:
        raise CampaignError(problems)
    return name, metrics, raters, judges


def _as_text(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, bytes):   # a Parquet binary column: its text (an undecodable one is refused first)
        return value.decode("utf-8", errors="replace")
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


ID_COLUMNS = ("case_id", "metric", "rater", "rater_kind", "run_id")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def _id_problem(value: Any) -> str | None:
    """Why a value cannot serve as an id kept exactly as written, or None."""
    if value is None or isinstance(value, (str, np.str_)):
        text = "" if value is None else str(value)
        found = _CONTROL.search(text)
        return (f"holds a control character ({found.group()!r}): ids that differ only by one would be shown as "
                "one" if found else None)
    if isinstance(value, bytes):
        try:
            return _id_problem(value.decode("utf-8"))
        except UnicodeDecodeError:
            return "bytes that are not UTF-8 text"
    if isinstance(value, (bool, np.bool_)):
        return "a true/false value"
    if isinstance(value, (int, np.integer)):
        return None
    if isinstance(value, (float, np.floating)):
        if math.isnan(value):
            return None
        if float(value).is_integer() and abs(value) >= 2 ** 53:
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


def _build(config: dict, raw: pd.DataFrame, case_rows, *, out_of_scale: OutOfScale, config_file: str,
           ratings_file: str, cases_file: str, data_hash: str, path: Path | None) -> Campaign:
    if out_of_scale is not None and out_of_scale not in OUT_OF_SCALE:
        raise ValueError(f"out_of_scale must be 'error', 'clip' or 'drop', not {out_of_scale!r}")
    declared = config.get("out_of_scale", "error")
    if declared not in OUT_OF_SCALE:
        raise CampaignError([Problem(config_file, "unknown out_of_scale", field="out_of_scale", value=declared,
                                     expected="error, clip or drop")])
    out_of_scale = out_of_scale or declared
    name, metrics, raters, judges = _parse_config(config, config_file)
    problems: list[Problem] = []
    missing = [c for c in REQUIRED_COLUMNS if c not in raw.columns]
    if missing:
        raise CampaignError([Problem(ratings_file, "missing column" + ("s" if len(missing) > 1 else ""),
                                     value=", ".join(missing), expected="columns " + ", ".join(REQUIRED_COLUMNS)
                                     + " (and optionally " + ", ".join(OPTIONAL_COLUMNS) + ")")])
    lines = raw["line"].to_numpy()
    files = raw["file"].to_numpy() if "file" in raw else np.full(len(raw), ratings_file, dtype=object)
    for column in ID_COLUMNS:
        if column in raw:
            for i, value in enumerate(raw[column].tolist()):
                why = _id_problem(value)
                if why:
                    problems.append(Problem(files[i], why, row=int(lines[i]), field=column, value=value,
                                            expected="text, or a whole number"))

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
            problems.append(Problem(files[i], message, row=int(lines[i]), field=column, value=value,
                                    expected=expected))

    for column in ("case_id", "metric", "rater"):
        report((ratings[column] == "").to_numpy(), "empty", column, "a non-empty " + column)
    report(~ratings["rater_kind"].isin(["human", "judge"]).to_numpy(), "unknown rater_kind", "rater_kind",
           '"human" or "judge"')
    known = ratings["metric"].isin(list(metrics)).to_numpy()
    report(~known & (ratings["metric"] != "").to_numpy(), "unknown metric", "metric",
           "a metric declared in campaign.toml: " + ", ".join(sorted(metrics)))
    report(invalid, "not a number", "value", "a finite number, or an empty value with an error")
    has_error = (ratings["error"] != "").to_numpy()
    report(blank & ~has_error, "no value and no error", "value",
           "a value, or an 'error' saying why the rating failed")
    report(~blank & ~invalid & has_error, "a rating has both a value and an error", "error",
           "either a value or an error")

    # out-of-scale values: every human value, and judges that declare on_metric_scale = true
    adjustments: list[Adjustment] = []
    on_scale_judges = {n for n, r in raters.items() if r.on_metric_scale}
    checked = ((ratings["rater_kind"] == "human") | ratings["rater"].isin(on_scale_judges)).to_numpy()
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
            adjustments.append(Adjustment(files[i], int(lines[i]), row.case_id, row.metric, row.rater,
                                          float(values[i]), "clipped" if out_of_scale == "clip" else "dropped",
                                          float(new_value) if out_of_scale == "clip" else None))
        if out_of_scale == "clip":
            ratings.loc[bad, "value"] = new
        else:
            drop |= bad

    # a rater is either a human or a judge
    kinds = ratings[ratings["rater_kind"].isin(["human", "judge"])].groupby("rater")["rater_kind"].nunique()
    for rater in kinds[kinds > 1].index:
        rows = ratings.index[ratings["rater"] == rater]
        first = {kind: rows[(ratings.loc[rows, "rater_kind"] == kind).to_numpy()][0] for kind in ("human", "judge")}
        later = max(first.values())
        problems.append(Problem(files[later], f"rater '{rater}' is declared both human (first at "
                                f"{at(first['human'])}) and judge (first at {at(first['judge'])})",
                                row=int(lines[later]), field="rater_kind", value=rater,
                                expected="one rater_kind per rater"))
    for rater in sorted(set(ratings.loc[ratings["rater_kind"] == "human", "rater"]) & set(judges)):
        problems.append(Problem(config_file, f"judge '{rater}' has the name of a human rater in the ratings",
                                field=f"judges.{rater}", expected="a name no human annotator uses"))
    for rater in sorted(set(ratings.loc[ratings["rater_kind"] == "human", "rater"]) & set(raters)):
        if not raters[rater].higher_is_better:
            problems.append(Problem(config_file, "a human rater rates on the metric's own scale",
                                    field=f"raters.{rater}.higher_is_better", value=False, expected="true"))

    # duplicates: one rating per (case, metric, rater) -- per run for judges
    key = ratings[["case_id", "metric", "rater"]].copy()
    key["run"] = np.where(ratings["rater_kind"] == "judge", ratings["run_id"], "")
    duplicated = key.duplicated(keep="first").to_numpy()
    if duplicated.any():
        position = pd.Series(np.arange(len(ratings)), index=ratings.index)
        first_row = position.groupby([key[c] for c in key.columns]).transform("min").to_numpy()
        for i in np.flatnonzero(duplicated):
            r = ratings.iloc[i]
            problems.append(Problem(files[i], f"duplicate rating of case '{r.case_id}', metric '{r.metric}' "
                                    f"by rater '{r.rater}' (first at {at(first_row[i])})", row=int(lines[i]),
                                    field="case_id", expected="one rating per (case_id, metric, rater"
                                    + (", run_id)" if r.rater_kind == "judge" else ")")))

    # a judge's run is shown as RATER@RUN: no two (rater, run) may be shown under one name
    judged = ratings[ratings["rater_kind"] == "judge"]
    shown = pd.Series(np.where(judged["run_id"] != "", judged["rater"] + "@" + judged["run_id"], judged["rater"]),
                      index=judged.index)
    pairs = pd.DataFrame({"shown": shown, "rater": judged["rater"], "run": judged["run_id"]}).drop_duplicates()
    for shown_as, group in pairs.groupby("shown"):
        if len(group) > 1:
            described = " and ".join(f"rater {r!r}" + (f" with run_id {u!r}" if u else "")
                                     for r, u in zip(group["rater"], group["run"]))
            problems.append(Problem(ratings_file if not several_files else files[group.index[0]],
                                    f"{described} would both be shown as {shown_as!r}", field="rater",
                                    row=int(lines[group.index[-1]]), expected="rater names without '@' where runs "
                                    "are named, or other run_ids"))

    cases = None
    set_aside: list[SetAside] = []
    if case_rows is not None:
        cases = _validate_cases(case_rows, cases_file, problems)
        unknown = ~ratings["case_id"].isin(list(cases)).to_numpy() & (ratings["case_id"] != "").to_numpy()
        # what calibrate exported for a case since removed is set aside; the user's own file must agree
        exported = np.array([path is not None and Path(f).name in EXPORTED_RATINGS_FILES for f in files], dtype=bool)
        report(unknown & ~exported, "a rating for a case that is not in cases.jsonl", "case_id",
               "a case_id listed in " + Path(cases_file).name)
        for i in np.flatnonzero(unknown & exported):
            set_aside.append(SetAside(files[i], int(lines[i]), ratings["case_id"].iat[i], ratings["metric"].iat[i],
                                      ratings["rater"].iat[i]))
        drop |= unknown & exported
    if problems:
        raise CampaignError(problems)
    ratings = ratings[~drop].reset_index(drop=True)
    juries = parse_juries(config.get("juries"), config_file, problems)
    service = parse_service(config.get("service"), config_file, problems)
    if juries:   # a jury's ratings join the campaign as a judge's
        added, facts = jury_ratings(ratings, juries, raters, metrics, config_file, problems)
    if problems:
        raise CampaignError(problems)
    if juries:
        ratings = pd.concat([ratings, added], ignore_index=True)
        raters = {**raters, **{n: Rater(name=n, family="jury", **f) for n, f in facts.items()}}
    return Campaign(name=name, metrics=metrics, raters=raters, ratings=ratings, cases=cases, judges=judges,
                    adjustments=adjustments, data_hash=data_hash, path=path, out_of_scale=out_of_scale,
                    juries=juries, service=service, set_aside=set_aside)


def _validate_cases(case_rows, file: str, problems: list[Problem]) -> dict[str, dict]:
    cases: dict[str, dict] = {}
    first_line: dict[str, int] = {}
    for line, obj in case_rows:
        if not isinstance(obj, dict):
            problems.append(Problem(file, "each case must be a JSON object", row=line, value=type(obj).__name__,
                                    expected="an object with case_id and DeepEval's field names"))
            continue
        case_id = obj.get("case_id")
        if isinstance(case_id, int) and not isinstance(case_id, bool):
            case_id = str(case_id)
        if not isinstance(case_id, str) or not case_id:
            problems.append(Problem(file, "missing or empty case_id", row=line, field="case_id", value=case_id,
                                    expected="a non-empty string"))
            continue
        if why := _id_problem(case_id):
            problems.append(Problem(file, f"case_id {why}", row=line, field="case_id", value=case_id,
                                    expected="text without control characters"))
            continue
        for key, types in CASE_FIELDS.items():
            if key in obj and not isinstance(obj[key], types):
                problems.append(Problem(file, f"wrong type for case '{case_id}'", row=line, field=key,
                                        value=type(obj[key]).__name__,
                                        expected=" or ".join("null" if t is type(None) else t.__name__ for t in types)))
        for key in ("retrieval_context", "context"):
            if isinstance(obj.get(key), list) and not all(isinstance(x, str) for x in obj[key]):
                problems.append(Problem(file, f"case '{case_id}' has a non-string chunk", row=line, field=key,
                                        expected="a list of strings"))
        if case_id in cases:
            problems.append(Problem(file, f"duplicate case_id (first at line {first_line[case_id]})", row=line,
                                    field="case_id", value=case_id, expected="each case once"))
            continue
        cases[case_id] = {**obj, "case_id": case_id}
        first_line[case_id] = line
    return cases
