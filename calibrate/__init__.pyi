"""The typed face of calibrate's lazy top-level names (written by scripts/write_api_stub.py from
``_EXPORTS`` in calibrate/__init__.py; do not edit by hand)."""

from calibrate.campaign import Campaign as Campaign
from calibrate.campaign import Metric as Metric
from calibrate.campaign import Rater as Rater
from calibrate.campaign import load_campaign as load_campaign
from calibrate.campaign import campaign_from_frames as campaign_from_frames
from calibrate.campaign.starter import init_campaign as init_campaign
from calibrate.campaign.summary import validate_campaign as validate_campaign
from calibrate.base.errors import CampaignError as CampaignError
from calibrate.base.errors import Problem as Problem
from calibrate.base.results import Result as Result
from calibrate.demo import demo_campaign_path as demo_campaign_path
from calibrate.demo import demo_stream_path as demo_stream_path
from calibrate.cases.datasets import import_cases as import_cases
from calibrate.cases.datasets import read_external_cases as read_external_cases
from calibrate.cases.collect import collect as collect_cases
from calibrate.sampling.designs import sample_cases as sample_cases
from calibrate.sampling.designs import draw_sample as draw_sample
from calibrate.sampling.planning import plan_labels as plan_labels
from calibrate.humans.labelstudio.client import push as push_to_label_studio
from calibrate.humans.labelstudio.client import pull as pull_from_label_studio
from calibrate.humans.labelstudio.client import pull_file as pull_label_studio_file
from calibrate.humans.adjudication import adjudicate as adjudicate
from calibrate.imports.deepeval_runs import import_deepeval_run as import_deepeval_run
from calibrate.imports.ragas_results import import_ragas_result as import_ragas_result
from calibrate.imports.mlflow_traces import import_mlflow as import_mlflow
from calibrate.imports.phoenix_spans import import_phoenix as import_phoenix
from calibrate.imports.promptfoo_results import import_promptfoo as import_promptfoo
from calibrate.imports.inspect_logs import import_inspect as import_inspect
from calibrate.imports.langfuse_scores import import_langfuse as import_langfuse
from calibrate.imports.langsmith_feedback import import_langsmith as import_langsmith
from calibrate.imports.apply import import_batch as import_batch
from calibrate.imports.apply import undo_withdrawals as undo_withdrawals
from calibrate.judges.runner import run_judges as run_judges
from calibrate.judges.store import clear_judge_cache as clear_judge_cache
from calibrate.judges.probes import run_probe as run_probe
from calibrate.analysis.agreement import compute_stats as compute_stats
from calibrate.analysis.recommendations import thresholds as thresholds
from calibrate.analysis.recommendations import recommend_thresholds as recommend_thresholds
from calibrate.analysis.slice_thresholds import slice_thresholds as slice_thresholds
from calibrate.analysis.rules import Rule as Rule
from calibrate.analysis.rules import default_rule as default_rule
from calibrate.analysis.annotators import annotator_agreement as annotator_agreement
from calibrate.analysis.repeatability import repeatability as repeatability
from calibrate.analysis.pass_rate import estimate_pass_rate as estimate_pass_rate
from calibrate.analysis.escalate import escalate as escalate
from calibrate.analysis.case_verdicts import case_verdicts as case_verdicts
from calibrate.analysis.calibration import fit_calibration as fit_calibration
from calibrate.analysis.calibration import CalibrationMap as CalibrationMap
from calibrate.analysis.versus import compare_judges as compare_judges
from calibrate.analysis.bias import bias_probes as bias_probes
from calibrate.review.audit import audit_judges as audit_judges
from calibrate.review.monitor import monitor_judge as monitor_judge
from calibrate.review.fingerprint import fingerprint_judge as fingerprint_judge
from calibrate.analysis.systems import compare_systems as compare_systems
from calibrate.review.gate import run_gate as run_gate
from calibrate.review.gate import GateRules as GateRules
from calibrate.report.build import build_report as build_report
from calibrate.report.build import report_documents as report_documents
from calibrate.report.build import demo_report as demo_report
from calibrate.report import write_report as write_report
from calibrate.report.documents import ReportDocuments as ReportDocuments
from calibrate.report.mlflow_run import export_to_mlflow as export_to_mlflow

DISTRIBUTION: str
_EXPORTS: dict[str, tuple[str, str]]
__version__: str

__all__ = [
    "CalibrationMap",
    "Campaign",
    "CampaignError",
    "GateRules",
    "Metric",
    "Problem",
    "Rater",
    "ReportDocuments",
    "Result",
    "Rule",
    "adjudicate",
    "annotator_agreement",
    "audit_judges",
    "bias_probes",
    "build_report",
    "campaign_from_frames",
    "case_verdicts",
    "clear_judge_cache",
    "collect_cases",
    "compare_judges",
    "compare_systems",
    "compute_stats",
    "default_rule",
    "demo_campaign_path",
    "demo_report",
    "demo_stream_path",
    "draw_sample",
    "escalate",
    "estimate_pass_rate",
    "export_to_mlflow",
    "fingerprint_judge",
    "fit_calibration",
    "import_batch",
    "import_cases",
    "import_deepeval_run",
    "import_inspect",
    "import_langfuse",
    "import_langsmith",
    "import_mlflow",
    "import_phoenix",
    "import_promptfoo",
    "import_ragas_result",
    "init_campaign",
    "load_campaign",
    "monitor_judge",
    "plan_labels",
    "pull_from_label_studio",
    "pull_label_studio_file",
    "push_to_label_studio",
    "read_external_cases",
    "recommend_thresholds",
    "repeatability",
    "report_documents",
    "run_gate",
    "run_judges",
    "run_probe",
    "sample_cases",
    "slice_thresholds",
    "thresholds",
    "undo_withdrawals",
    "validate_campaign",
    "write_report",
]
