"""calibrate: calibrate LLM-as-a-judge metrics against human labels.

No file or network access happens on import; heavy modules load when first used.
"""

from calibrate.analysis import Rule, compute_stats, default_rule, recommend_thresholds
from calibrate.campaign import Campaign, Metric, Rater, load_campaign
from calibrate.demo import demo_campaign_path
from calibrate.errors import CampaignError, Problem

__version__ = "0.1.0"

__all__ = [
    "Campaign", "CampaignError", "Metric", "Problem", "Rater", "Rule", "compute_stats",
    "default_rule", "demo_campaign_path", "load_campaign", "recommend_thresholds", "write_report",
]


def write_report(stats, recommendations, out_dir, *, cases=None):
    """Write ``report.html``, ``report.md`` and ``report.json`` (see :func:`calibrate.report.write_report`);
    imported lazily, since the report needs matplotlib."""
    from calibrate.report import write_report as _write

    return _write(stats, recommendations, out_dir, cases=cases)
