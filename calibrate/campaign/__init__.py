"""The data model: everything ``campaign.toml`` and a campaign folder hold.

:mod:`~calibrate.campaign.folder` reads and validates the folder (metrics, raters, ratings, cases,
samples); :mod:`~calibrate.campaign.judge_settings`, :mod:`~calibrate.campaign.juries` and
:mod:`~calibrate.campaign.service` parse its ``[judges]``, ``[juries]`` and ``[service]`` tables;
:mod:`~calibrate.campaign.reference` makes the human reference and each judge's scores and joins
them (:func:`~calibrate.campaign.reference.pair`, the one join every analysis uses),
:mod:`~calibrate.campaign.weights` gives the labelled cases their design weights, and
:mod:`~calibrate.campaign.summary` counts what a campaign holds (``calibrate validate``). It imports no other
folder but ``base``; every other folder reads campaigns through it.
"""

from calibrate.campaign.folder import (
    ADJUDICATIONS_FILE,
    CASES_FILE,
    IMPORTED_META_FILE,
    IMPORTED_RATINGS_FILE,
    JUDGE_RATINGS_FILE,
    LABELSTUDIO_META_FILE,
    LABELSTUDIO_RATINGS_FILE,
    SAMPLES_FOLDER,
    Campaign,
    Metric,
    Rater,
    load_campaign,
)

__all__ = [
    "ADJUDICATIONS_FILE",
    "CASES_FILE",
    "IMPORTED_META_FILE",
    "IMPORTED_RATINGS_FILE",
    "JUDGE_RATINGS_FILE",
    "LABELSTUDIO_META_FILE",
    "LABELSTUDIO_RATINGS_FILE",
    "SAMPLES_FOLDER",
    "Campaign",
    "Metric",
    "Rater",
    "load_campaign",
]
