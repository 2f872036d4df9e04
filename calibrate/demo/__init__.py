"""The embedded demo campaigns: TREC DL 2023 passage relevance, NIST assessors and nine LLM judges
(MIT license; see ``data/LICENSE`` and ``data/SOURCE.md``), and the same cases as a production stream
with times, a quarter of it audited and a planted drift (``stream/``, built by
``scripts/build_demo_stream.py``)."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

__all__ = [
    "DEMO_AUDIT",
    "DEMO_DRIFT",
    "DEMO_OUT_OF_SCALE",
    "DEMO_SLICE_KEY",
    "demo_campaign_path",
    "demo_stream_path",
]

#: The metadata key the demo slices by, and how it treats the two published out-of-scale labels.
DEMO_SLICE_KEY = "question_type"
DEMO_OUT_OF_SCALE = "drop"
#: The judge upgrade the demo report audits: one team's prompt, Llama-3-70B to GPT-4o.
DEMO_AUDIT = ("RMITIR-llama70B", "RMITIR-GPT4o")
#: The stream demo's planted drift: from when, and the judge whose false-pass rate it lifts.
DEMO_DRIFT = ("2026-11-02T00:00:00Z", "RMITIR-llama70B")


def demo_campaign_path() -> Path:
    """The folder of the embedded demo campaign (inside the installed package).

    Returns
    -------
    Path

    Examples
    --------
    >>> (demo_campaign_path() / "campaign.toml").is_file()
    True
    """
    return Path(str(resources.files("calibrate.demo") / "data"))


def demo_stream_path() -> Path:
    """The folder of the embedded stream demo: the demo's cases in production, with times and a drift.

    Returns
    -------
    Path

    Examples
    --------
    >>> (demo_stream_path() / "samples" / "audit.csv").is_file()
    True
    """
    return Path(str(resources.files("calibrate.demo") / "stream"))
