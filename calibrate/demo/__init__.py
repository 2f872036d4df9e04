"""The embedded demo campaign: TREC DL 2023 passage relevance, NIST assessors and nine LLM judges
(MIT license; see ``data/LICENSE`` and ``data/SOURCE.md``)."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

__all__ = ["demo_campaign_path", "DEMO_SLICE_KEY", "DEMO_OUT_OF_SCALE", "DEMO_AUDIT"]

#: The metadata key the demo slices by, and how it treats the two published out-of-scale labels.
DEMO_SLICE_KEY = "question_type"
DEMO_OUT_OF_SCALE = "drop"
#: The judge upgrade the demo report audits: one team's prompt, Llama-3-70B to GPT-4o.
DEMO_AUDIT = ("RMITIR-llama70B", "RMITIR-GPT4o")


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
