"""The evaluator manifest: everything a result depends on, recorded beside it."""

from __future__ import annotations

import datetime as _dt
import functools
import platform
from importlib import metadata
from typing import Any

__all__ = ["MANIFEST_VERSION", "build_manifest", "package_version"]

MANIFEST_VERSION = 1
_PACKAGES = ("calibrate-judges", "numpy", "scipy", "scikit-learn", "pandas", "krippendorff", "numba")


@functools.cache
def package_version(package: str) -> str | None:
    """The installed version of a distribution, or None when it is not installed (read once per
    process: reading a distribution's metadata parses a file, and every result records seven)."""
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def build_manifest(campaign, **options: Any) -> dict[str, Any]:
    """Versions, the campaign's data hash and the options of a run.

    Examples
    --------
    >>> from calibrate.campaign import campaign_from_frames
    >>> import pandas as pd
    >>> c = campaign_from_frames({"name": "n", "metrics": {"f": {"scale": "binary"}}},
    ...     pd.DataFrame({"case_id": ["a"], "metric": "f", "rater": "h", "rater_kind": "human", "value": [1]}))
    >>> m = build_manifest(c, seed=3)
    >>> m["seed"], m["data_hash"].startswith("sha256:")
    (3, True)
    """
    return {
        "manifest_version": MANIFEST_VERSION,
        "campaign": campaign.name,
        "campaign_path": str(campaign.path) if campaign.path else None,
        "data_hash": campaign.data_hash,
        "out_of_scale": campaign.out_of_scale,
        **options,
        "versions": {"python": platform.python_version(), **{p: package_version(p) for p in _PACKAGES}},
        "created": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
    }
