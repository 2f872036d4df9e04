"""calibrate: calibrate LLM-as-a-judge metrics against human labels.

No file or network access happens on import, and the heavy modules (scipy, scikit-learn, numba)
load when a function that needs them is first used, so ``calibrate --help`` is fast.
"""

from __future__ import annotations

import importlib
from typing import Any

#: the distribution whose installed metadata gives ``calibrate.__version__``
DISTRIBUTION = "calibrate-judges"

#: Every public name, in the order of the flow: name -> (module, attribute). Each command of the command
#: line has its function here; what it returns is the document its ``--json`` prints (a :class:`Result`
#: with ``.to_dict()`` and ``.to_frame()``).
_EXPORTS = {
    # the data model, and the results every function returns
    "Campaign": ("calibrate.campaign", "Campaign"),
    "Metric": ("calibrate.campaign", "Metric"),
    "Rater": ("calibrate.campaign", "Rater"),
    "load_campaign": ("calibrate.campaign", "load_campaign"),
    "campaign_from_frames": ("calibrate.campaign", "campaign_from_frames"),
    "init_campaign": ("calibrate.campaign.starter", "init_campaign"),  # calibrate init
    "validate_campaign": ("calibrate.campaign.summary", "validate_campaign"),  # calibrate validate
    "CampaignError": ("calibrate.base.errors", "CampaignError"),
    "Problem": ("calibrate.base.errors", "Problem"),
    "Result": ("calibrate.base.results", "Result"),
    "demo_campaign_path": ("calibrate.demo", "demo_campaign_path"),
    "demo_stream_path": ("calibrate.demo", "demo_stream_path"),
    # where cases come from
    "import_cases": ("calibrate.cases.datasets", "import_cases"),  # calibrate cases import
    "read_external_cases": ("calibrate.cases.datasets", "read_external_cases"),
    "collect_cases": ("calibrate.cases.collect", "collect"),  # calibrate collect
    # which cases humans label, and how many
    "sample_cases": ("calibrate.sampling.designs", "sample_cases"),  # calibrate sample
    "draw_sample": ("calibrate.sampling.designs", "draw_sample"),
    "plan_labels": ("calibrate.sampling.planning", "plan_labels"),  # calibrate plan
    # human labels
    "push_to_label_studio": ("calibrate.humans.labelstudio.client", "push"),  # calibrate labelstudio push
    "pull_from_label_studio": ("calibrate.humans.labelstudio.client", "pull"),  # calibrate labelstudio pull
    "pull_label_studio_file": ("calibrate.humans.labelstudio.client", "pull_file"),  # ... pull --file
    "adjudicate": ("calibrate.humans.adjudication", "adjudicate"),  # calibrate adjudicate
    # what other tools already hold
    "import_deepeval_run": ("calibrate.imports.deepeval_runs", "import_deepeval_run"),  # calibrate import deepeval
    "import_ragas_result": ("calibrate.imports.ragas_results", "import_ragas_result"),  # calibrate import ragas
    "import_mlflow": ("calibrate.imports.mlflow_traces", "import_mlflow"),  # calibrate import mlflow
    "import_phoenix": ("calibrate.imports.phoenix_spans", "import_phoenix"),  # calibrate import phoenix
    "import_promptfoo": ("calibrate.imports.promptfoo_results", "import_promptfoo"),  # calibrate import promptfoo
    "import_inspect": ("calibrate.imports.inspect_logs", "import_inspect"),  # calibrate import inspect
    "import_langfuse": ("calibrate.imports.langfuse_scores", "import_langfuse"),  # calibrate import langfuse
    "import_langsmith": ("calibrate.imports.langsmith_feedback", "import_langsmith"),  # calibrate import langsmith
    "import_batch": ("calibrate.imports.apply", "import_batch"),
    "undo_withdrawals": ("calibrate.imports.apply", "undo_withdrawals"),  # calibrate import undo-withdrawals
    # judges
    "run_judges": ("calibrate.judges.runner", "run_judges"),  # calibrate judge
    "clear_judge_cache": ("calibrate.judges.store", "clear_judge_cache"),  # calibrate cache clear
    "run_probe": ("calibrate.judges.probes", "run_probe"),  # calibrate probe
    # judges against humans
    "compute_stats": ("calibrate.analysis.agreement", "compute_stats"),  # calibrate stats
    "thresholds": ("calibrate.analysis.recommendations", "thresholds"),  # calibrate thresholds
    "recommend_thresholds": ("calibrate.analysis.recommendations", "recommend_thresholds"),
    "slice_thresholds": ("calibrate.analysis.slice_thresholds", "slice_thresholds"),  # calibrate thresholds --by
    "Rule": ("calibrate.analysis.rules", "Rule"),
    "default_rule": ("calibrate.analysis.rules", "default_rule"),
    "annotator_agreement": ("calibrate.analysis.annotators", "annotator_agreement"),
    "repeatability": ("calibrate.analysis.repeatability", "repeatability"),  # calibrate repeatability
    "estimate_pass_rate": ("calibrate.analysis.pass_rate", "estimate_pass_rate"),  # calibrate pass-rate
    "escalate": ("calibrate.analysis.escalate", "escalate"),  # calibrate escalate
    "case_verdicts": ("calibrate.analysis.case_verdicts", "case_verdicts"),  # calibrate case-verdicts
    "fit_calibration": ("calibrate.analysis.calibration", "fit_calibration"),  # calibrate calibration
    "CalibrationMap": ("calibrate.analysis.calibration", "CalibrationMap"),
    "compare_judges": ("calibrate.analysis.versus", "compare_judges"),  # calibrate compare
    "bias_probes": ("calibrate.analysis.bias", "bias_probes"),  # calibrate bias
    # decisions
    "audit_judges": ("calibrate.review.audit", "audit_judges"),  # calibrate audit
    "monitor_judge": ("calibrate.review.monitor", "monitor_judge"),  # calibrate monitor
    "fingerprint_judge": ("calibrate.review.fingerprint", "fingerprint_judge"),  # calibrate fingerprint
    "compare_systems": ("calibrate.analysis.systems", "compare_systems"),  # calibrate compare-systems
    "run_gate": ("calibrate.review.gate", "run_gate"),
    "GateRules": ("calibrate.review.gate", "GateRules"),  # gate
    # the report
    "build_report": ("calibrate.report.build", "build_report"),  # calibrate report
    "report_documents": ("calibrate.report.build", "report_documents"),
    "demo_report": ("calibrate.report.build", "demo_report"),  # calibrate demo
    "write_report": ("calibrate.report", "write_report"),
    "ReportDocuments": ("calibrate.report.documents", "ReportDocuments"),
    "export_to_mlflow": ("calibrate.report.mlflow_run", "export_to_mlflow"),  # calibrate export mlflow
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name == "__version__":  # read from the installed package's metadata when asked, not on import
        from importlib.metadata import PackageNotFoundError, version

        try:
            return version(DISTRIBUTION)
        except PackageNotFoundError:  # a source tree on sys.path, not installed
            return "0+unknown"
    if name in _EXPORTS:
        module, attribute = _EXPORTS[name]
        return getattr(importlib.import_module(module), attribute)
    raise AttributeError(f"module 'calibrate' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), "__version__", *__all__])
