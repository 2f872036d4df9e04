"""Loading a campaign: a folder (:func:`load_campaign`) or Python objects (:func:`campaign_from_frames`),
read (:mod:`~calibrate.campaign.readers`), every rating checked (:data:`~calibrate.campaign.checks.CHECKS`)
and built into a :class:`~calibrate.campaign.model.Campaign` (:func:`build`).
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from calibrate.base.errors import CampaignError, Problem
from calibrate.campaign.checks import CHECKS, CheckContext, set_aside_reasons
from calibrate.campaign.config import nesting_problem, read_toml
from calibrate.campaign.declared import Declared, parse_config
from calibrate.campaign.juries import jury_ratings
from calibrate.campaign.model import (
    ADJUDICATIONS_FILE,
    CASES_FILE,
    EXPORTED_RATINGS_FILES,
    IMPORTED_META_FILE,
    IMPORTED_RATINGS_FILE,
    LABELSTUDIO_META_FILE,
    LABELSTUDIO_RATINGS_FILE,
    OPTIONAL_COLUMNS,
    OUT_OF_SCALE,
    RATINGS_FILES,
    REQUIRED_COLUMNS,
    SAMPLES_FOLDER,
    Campaign,
    OutOfScale,
    Rater,
    SetAside,
)
from calibrate.campaign.own_files import read_imported_raters, read_sample, read_shown_judge
from calibrate.campaign.readers import plain_text, read_adjudications, read_jsonl, read_ratings, typed_ratings

__all__ = ["build", "campaign_from_frames", "load_campaign", "missing_cell"]


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
    present, exported = _ratings_paths(folder)
    raw = _read_all_ratings(present + exported)
    ratings_path = present[0] if present else exported[0] if exported else folder / RATINGS_FILES[0]
    cases_path = folder / CASES_FILE
    case_rows = read_jsonl(cases_path) if cases_path.is_file() else None
    samples = {p.stem: p for p in sorted((folder / SAMPLES_FOLDER).glob("*.json")) if p.with_suffix(".csv").is_file()}
    hashed = [toml_path, *present, *exported, cases_path, folder / ADJUDICATIONS_FILE]
    digest = _files_digest(hashed + [q for s in samples.values() for q in (s, s.with_suffix(".csv"))])
    campaign = build(
        config,
        raw,
        case_rows,
        out_of_scale=out_of_scale,
        config_file=str(toml_path),
        ratings_file=str(ratings_path),
        cases_file=str(cases_path),
        data_hash=digest,
        path=folder,
    )
    _read_own_files(campaign, folder, samples)
    return campaign


def _read_all_ratings(paths: list[Path]) -> pd.DataFrame:
    """The rows of every ratings file, one table, with the ``file`` each came from (a categorical: each
    path held once, not once per row)."""
    frames = [read_ratings(path) for path in paths]
    raw = (
        pd.concat(frames, ignore_index=True)
        if len(frames) > 1
        else frames[0]  # one file: its frame itself, not a copy
        if frames
        else pd.DataFrame({c: pd.Series(dtype=str) for c in REQUIRED_COLUMNS} | {"line": pd.Series(dtype=int)})
    )
    codes = np.repeat(np.arange(len(frames)), [len(f) for f in frames])
    raw["file"] = pd.Categorical.from_codes(codes, categories=[str(p) for p in paths])
    return raw


def _ratings_paths(folder: Path) -> tuple[list[Path], list[Path]]:
    """The folder's own ratings file (one of :data:`RATINGS_FILES`), and the ratings calibrate exports
    beside it (judges', Label Studio's, imported); a folder with several of its own, or with none and no
    cases either, is an error."""
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
    return present, exported


def _files_digest(paths: list[Path]) -> str:
    """The hash of the files that exist among ``paths``, each by its name and content."""
    digest = hashlib.sha256()
    for p in paths:
        if p.is_file():  # in three parts: the content is not copied to be joined
            for part in (p.name.encode() + b"\0", p.read_bytes(), b"\0"):
                digest.update(part)
    return "sha256:" + digest.hexdigest()


def _read_own_files(campaign: Campaign, folder: Path, samples: dict[str, Path]) -> None:
    """calibrate's own files a person may have edited, each through its schema
    (:mod:`calibrate.campaign.own_files`): adjudications, samples, what imported raters and Label Studio's
    annotators were shown."""
    adjudications_path = folder / ADJUDICATIONS_FILE
    if adjudications_path.is_file():
        campaign.adjudications = read_adjudications(adjudications_path, campaign)
    for name, sample in samples.items():
        campaign.samples[name] = read_sample(sample, cases=campaign.cases, samples=samples)
    imported_meta = folder / IMPORTED_META_FILE
    if imported_meta.is_file() and (folder / IMPORTED_RATINGS_FILE).is_file():
        campaign.imported_raters = read_imported_raters(imported_meta)
    meta_path = folder / LABELSTUDIO_META_FILE
    if meta_path.is_file() and (folder / LABELSTUDIO_RATINGS_FILE).is_file():
        campaign.shown_judge = read_shown_judge(meta_path)


def campaign_from_frames(
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
    >>> c = campaign_from_frames({"name": "x", "metrics": {"faithfulness": {"scale": "binary"}}}, ratings)
    >>> len(c.ratings)
    2
    """
    if not isinstance(ratings, pd.DataFrame):
        raise TypeError(f"ratings must be a pandas DataFrame, not {type(ratings).__name__}")
    raw = ratings.copy()
    if "value" in raw.columns:  # pass / fail labels as booleans
        raw["value"] = raw["value"].map(lambda v: int(v) if isinstance(v, (bool, np.bool_)) else v)
    if isinstance(cases, pd.DataFrame):
        cases = [{k: v for k, v in row.items() if not missing_cell(v)} for row in cases.to_dict("records")]
    for col in raw.columns:
        raw[col] = raw[col].map(lambda v: "" if v is None or (isinstance(v, float) and math.isnan(v)) else v)
    raw["line"] = np.arange(len(raw)) + 1
    if (too_deep := nesting_problem(config, "config")) is not None:
        raise CampaignError([too_deep])
    digest = hashlib.sha256(json.dumps(config, sort_keys=True, default=str).encode())
    digest.update(raw.to_csv(index=False).encode())
    digest.update(json.dumps(cases or [], sort_keys=True, default=str).encode())
    case_rows = [(i + 1, c) for i, c in enumerate(cases)] if cases is not None else None
    return build(
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


def missing_cell(value: Any) -> bool:
    """A DataFrame cell that holds nothing: None, NaN or pandas' NA (lists and arrays hold something)."""
    if value is None:
        return True
    if isinstance(value, (list, tuple, dict, np.ndarray)):
        return False
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):
        return False


def build(
    config: dict,
    raw: pd.DataFrame,
    case_rows: list[tuple[int, Any]] | None,
    *,
    out_of_scale: OutOfScale | None,
    config_file: str,
    ratings_file: str,
    cases_file: str,
    data_hash: str,
    path: Path | None,
) -> Campaign:
    """A campaign from what campaign.toml declares (``config``), the ratings rows read (``raw``, with
    the ``line``, and the ``file`` of each when several) and ``cases.jsonl``'s lines, every rating
    checked by :data:`~calibrate.campaign.checks.CHECKS`; a :class:`~calibrate.base.errors.CampaignError`
    lists every problem found. ``path``: the campaign folder, None for Python objects."""
    if out_of_scale is not None and out_of_scale not in OUT_OF_SCALE:
        raise ValueError(f"out_of_scale must be 'error', 'clip' or 'drop', not {out_of_scale!r}")
    declared = parse_config(config, config_file)
    _require_columns(raw, ratings_file)
    # each rating's file, held once per file (a Categorical read by position: files[i] is a path)
    files = (
        pd.Categorical(raw["file"])
        if "file" in raw
        else pd.Categorical.from_codes(np.zeros(len(raw), dtype=np.int8), categories=[ratings_file])
    )
    # what calibrate exported of a metric, a judge or a case since removed is set aside (kept in its file
    # and store, out of every statistic); the user's own ratings file must agree with campaign.toml
    ratings, values, blank, invalid = typed_ratings(raw, files, in_folder=path is not None)
    exported = ratings["file"].isin(EXPORTED_RATINGS_FILES).to_numpy() & (path is not None)
    ctx = CheckContext(
        raw=raw,
        declared=declared,
        out_of_scale=out_of_scale or declared.out_of_scale,
        config_file=config_file,
        ratings_file=ratings_file,
        cases_file=cases_file,
        case_rows=case_rows,
        files=files,
        lines=raw["line"].to_numpy(),
        exported=exported,
        values=values,
        blank=blank,
        invalid=invalid,
        reasons=set_aside_reasons(ratings, exported, declared, in_folder=path is not None),
    )
    problems = [problem for check in CHECKS for problem in check(ratings, ctx)]
    aside = ctx.aside
    set_aside = [
        SetAside(
            files[i],
            int(ctx.lines[i]),
            ratings["case_id"].iat[i],
            ratings["metric"].iat[i],
            ratings["rater"].iat[i],
            ctx.reasons[i],
        )
        for i in np.flatnonzero(aside)
    ]
    if problems:
        raise CampaignError(problems)
    ratings, raters = _with_juries(_kept_as_text(ratings, ~(ctx.drop | aside)), declared, config_file)
    return Campaign(
        name=declared.name,
        metrics=declared.metrics,
        raters=raters,
        ratings=ratings,
        cases=ctx.cases,
        judges=declared.judges,
        adjustments=ctx.adjustments,
        data_hash=data_hash,
        path=path,
        out_of_scale=ctx.out_of_scale,
        juries=declared.juries,
        service=declared.service,
        set_aside=set_aside,
    )


def _kept_as_text(ratings: pd.DataFrame, kept: np.ndarray) -> pd.DataFrame:
    """The ``kept`` ratings, their categorical columns (names checked once each) as pandas' text; the
    ``file`` stays categorical."""
    ratings = ratings[kept].reset_index(drop=True) if not kept.all() else ratings
    for column in ratings.columns.drop("file"):
        if isinstance(ratings[column].dtype, pd.CategoricalDtype):
            ratings[column] = plain_text(ratings[column])
    return ratings


def _require_columns(raw: pd.DataFrame, ratings_file: str) -> None:
    """Raise, naming them, when the ratings lack a required column."""
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


def _with_juries(ratings: pd.DataFrame, declared: Declared, config_file: str) -> tuple[pd.DataFrame, dict[str, Rater]]:
    """The ratings and raters with each jury's: a jury's ratings join the campaign as a judge's."""
    if not declared.juries:
        return ratings, declared.raters
    problems: list[Problem] = []
    added, facts = jury_ratings(ratings, declared.juries, declared.raters, declared.metrics, config_file, problems)
    if problems:
        raise CampaignError(problems)
    raters = {**declared.raters, **{n: Rater(name=n, family="jury", **f) for n, f in facts.items()}}
    return pd.concat([ratings, added], ignore_index=True), raters
