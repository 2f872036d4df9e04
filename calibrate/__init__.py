"""calibrate: calibrate LLM-as-a-judge metrics against human labels.

No file or network access happens on import, and the heavy modules (scipy, scikit-learn, numba,
matplotlib) load when a function that needs them is first used, so ``calibrate --help`` is fast.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_EXPORTS = {
    "Campaign": "calibrate.campaign", "Metric": "calibrate.campaign", "Rater": "calibrate.campaign",
    "load_campaign": "calibrate.campaign", "CampaignError": "calibrate.base.errors",
    "Problem": "calibrate.base.errors", "Rule": "calibrate.analysis.agreement",
    "compute_stats": "calibrate.analysis.agreement", "default_rule": "calibrate.analysis.agreement",
    "recommend_thresholds": "calibrate.analysis.agreement", "demo_campaign_path": "calibrate.demo",
    "stats_and_recommendations": "calibrate.analysis.agreement", "write_report": "calibrate.report",
    "build_report": "calibrate.report.build", "report_documents": "calibrate.report.build",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'calibrate' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(list(globals()) + __all__)
