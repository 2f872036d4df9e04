"""What a campaign holds, counted per metric: the document ``calibrate validate`` shows."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

from calibrate.base.results import Result, records_frame
from calibrate.campaign.judge_readiness import judge_readiness
from calibrate.campaign.load import load_campaign
from calibrate.campaign.model import RATINGS_FILES, Campaign

__all__ = ["rating_provenance", "validate_campaign"]

#: what each file calibrate reads ratings from holds
FILE_ORIGINS = {
    "judge_ratings.csv": "calibrate judge",
    "labelstudio_ratings.csv": "Label Studio (calibrate labelstudio pull)",
    "": "juries of campaign.toml",
}
SHOWN_RATERS = 10


def rating_provenance(campaign: Campaign) -> list[dict]:
    """Where the campaign's ratings came from: one row per origin and kind of rater (the campaign's own
    ratings file, calibrate judge, Label Studio, each source ``calibrate import`` read, juries).

    Examples
    --------
    >>> import calibrate
    >>> [(r["origin"], r["kind"], r["raters"], r["ratings"]) for r in rating_provenance(
    ...     calibrate.load_campaign(calibrate.demo_campaign_path()))]
    [('ratings.parquet (the campaign’s own file)', 'human', 1, 4423), ('ratings.parquet (the campaign’s own file)', 'judge', 9, 39805)]
    """
    rows = []
    ratings = campaign.ratings
    for (file, source, kind), group in ratings.groupby(["file", "source", "rater_kind"], sort=True):
        if file == "imported_ratings.csv":
            origin = f"calibrate import: {source}"
        elif file in RATINGS_FILES:
            origin = f"{file} (the campaign’s own file)"
        else:
            origin = FILE_ORIGINS.get(file, file) + (f" ({source})" if source else "")
        raters = sorted(group["rater"].unique())
        rows.append(
            {
                "origin": origin,
                "file": file,
                "source": source or None,
                "kind": kind,
                "raters": len(raters),
                "rater_names": raters[:SHOWN_RATERS],
                "ratings": len(group),
                "failed": int(group["value"].isna().sum()),
                "metrics": sorted(group["metric"].unique()),
            }
        )
    return rows


def validate_campaign(campaign: Campaign | str | Path, *, out_of_scale: str | None = None) -> Result:
    """Read and check a campaign folder (every problem is a :class:`~calibrate.CampaignError` naming
    its file, line and field), and count what it holds.

    Parameters
    ----------
    campaign : Campaign, str or Path
        A campaign folder (read with :func:`~calibrate.load_campaign`), or a campaign already read.
    out_of_scale : {"error", "clip", "drop"}, optional
        For a folder: what to do with a value outside its metric's scale (default: the campaign's
        ``out_of_scale``, else ``"error"``).

    Returns
    -------
    Result
        ``{"campaign", "metrics": [{"metric", "scale", "human_ratings", "judge_ratings", "failed",
        "labelled_cases", "judges", "judges_declared"}], "cases", "data_hash", "adjustments", "set_aside",
        "provenance", "judges"}`` (``judges``: the raters with judge ratings on the metric; ``judges_declared``:
        the ``[judges]`` that score into it; ``provenance``: :func:`rating_provenance`; the top-level
        ``judges``: whether each of ``[judges]`` can run here,
        :func:`~calibrate.campaign.judge_readiness.judge_readiness`);
        ``.to_frame()`` gives one row per metric.

    Raises
    ------
    CampaignError
        The folder cannot be used as it is; its ``problems`` list every problem.

    Examples
    --------
    >>> import calibrate
    >>> doc = calibrate.validate_campaign(calibrate.demo_campaign_path())
    >>> doc.to_frame()[["metric", "human_ratings", "judges"]].values.tolist(), len(doc["adjustments"])
    ([['relevance', 4423, 9]], 2)
    """
    c = campaign if isinstance(campaign, Campaign) else load_campaign(campaign, out_of_scale=out_of_scale)
    metrics = []
    for name, metric in sorted(c.metrics.items()):
        rows = c.ratings[c.ratings["metric"] == name]
        human, judge = rows[rows["rater_kind"] == "human"], rows[rows["rater_kind"] == "judge"]
        metrics.append(
            {
                "metric": name,
                "scale": metric.scale,
                "human_ratings": len(human),
                "judge_ratings": len(judge),
                "failed": int(rows["value"].isna().sum()),
                "labelled_cases": int(human.loc[human["value"].notna(), "case_id"].nunique()),
                "judges": int(judge["rater"].nunique()),
                "judges_declared": sorted(n for n, spec in c.judges.items() if spec.into == name),
            }
        )
    return Result(
        {
            "campaign": c.name,
            "metrics": metrics,
            "cases": len(c.cases) if c.cases is not None else None,
            "data_hash": c.data_hash,
            "adjustments": [asdict(a) for a in c.adjustments],
            "set_aside": [asdict(s) for s in c.set_aside],
            "set_aside_note": c.set_aside_note(),
            "provenance": rating_provenance(c),
            "judges": judge_readiness(c),
        },
        records_frame("metrics"),
    )
