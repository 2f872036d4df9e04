"""The data model: everything ``campaign.toml`` and a campaign folder hold.

:mod:`~calibrate.campaign.model` holds the data model (:class:`Campaign`, :class:`Metric`, :class:`Rater`)
and the names of the folder's files; :mod:`~calibrate.campaign.load` reads a folder (or Python objects)
through :mod:`~calibrate.campaign.readers`, checks every rating (:mod:`~calibrate.campaign.checks`) and
builds the campaign; :mod:`~calibrate.campaign.declared` reads ``campaign.toml`` through its schemas
(:mod:`~calibrate.campaign.config`), and :mod:`~calibrate.campaign.judge_settings`,
:mod:`~calibrate.campaign.juries` and :mod:`~calibrate.campaign.service` parse its ``[judges]``,
``[juries]`` and ``[service]`` tables;
:mod:`~calibrate.campaign.reference` makes the human reference and each judge's scores and joins
them (:func:`~calibrate.campaign.reference.pair`, the one join every analysis uses),
:mod:`~calibrate.campaign.weights` gives the labelled cases their design weights, and
:mod:`~calibrate.campaign.summary` counts what a campaign holds (``calibrate validate``). It imports no other
folder but ``base``; every other folder reads campaigns through it.
"""

from calibrate.campaign.load import campaign_from_frames, load_campaign
from calibrate.campaign.model import (
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
    "campaign_from_frames",
    "load_campaign",
]
