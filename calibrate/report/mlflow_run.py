"""A campaign's agreement statistics and recommended thresholds logged as an MLflow run
(``calibrate export mlflow``), with the report as its artifact.

The run's metrics are ``METRIC/JUDGE/STATISTIC`` (each statistic's estimate, and its interval's ends as
``..._ci_low`` / ``..._ci_high``: Spearman, Kendall, kappa, quadratic kappa, alpha, AUC, pass kappa,
accuracy, balanced accuracy; then the recommended ``threshold``, ``false_pass_rate`` and
``false_fail_rate``). Its params are the campaign, its data hash, the bootstrap settings and each
metric's threshold rule; its tags each judge's verdict (``METRIC/JUDGE/verdict``) and the best judge by
the rule (``METRIC/best``). ``report.html``, ``report.md`` and ``report.json`` go under the artifact
path ``calibrate-report`` when the server proxies artifacts (``mlflow server`` does by default).

The requests go through :mod:`calibrate.base.http` (credentials never follow a redirect to another
server, a deadline per request and for the export, replies read through the schemas below).
"""

from __future__ import annotations

import math
import re
import tempfile
import time
import urllib.parse
from pathlib import Path
from typing import Any, TypeGuard

from calibrate.analysis.recommendation_results import Recommendation
from calibrate.base.documents import Schema
from calibrate.base.http import path_segment
from calibrate.base.params import checked
from calibrate.base.results import Result, single_row
from calibrate.campaign import Campaign
from calibrate.imports.mlflow_traces import MlflowClient, MlflowError
from calibrate.imports.texts import Id
from calibrate.report import write_report
from calibrate.report.build import report_documents
from calibrate.report.documents import ReportDocuments
from calibrate.stats import N_BOOT

__all__ = ["STATISTICS", "export_to_mlflow", "mlflow_key"]

STATISTICS = (
    "spearman",
    "kendall",
    "kappa",
    "kappa_quadratic",
    "alpha",
    "auc",
    "pass_kappa",
    "accuracy",
    "balanced_accuracy",
)
RECOMMENDED = ("threshold", "false_pass_rate", "false_fail_rate")
ARTIFACT_PATH = "calibrate-report"
#: what MLflow's log-batch takes at once
BATCH = {"metrics": 1000, "params": 100, "tags": 100}


def mlflow_key(*parts: str) -> str:
    """A metric, param or tag key MLflow accepts (letters, digits, ``_ - . : /`` and spaces; the rest as ``_``).

    >>> mlflow_key("faithfulness", "qwen-careful (Local Model)", "kappa")
    'faithfulness/qwen-careful _Local Model_/kappa'
    """
    return "/".join(re.sub(r"[^0-9A-Za-z_\-. :]", "_", part) for part in parts)[:250]


def _finite(value: Any) -> TypeGuard[float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _recommended(rec: Recommendation) -> list[tuple[float | None, float | None, float | None]]:
    """The threshold and the two rates at it (:data:`RECOMMENDED`), each as its estimate and interval."""
    rates = [rec.false_pass_rate, rec.false_fail_rate]
    return [(rec.threshold, *rec.threshold_ci)] + [
        (None, None, None) if rate is None else (rate.value, rate.ci_low, rate.ci_high) for rate in rates
    ]


def _figures(documents: ReportDocuments) -> tuple[dict[str, float], dict[str, str], dict[str, str]]:
    """(metrics, params, tags) of the run, from the report's documents."""
    metrics: dict[str, float] = {}
    params: dict[str, str] = {}
    tags: dict[str, str] = {}
    manifest = documents.manifest
    for key in ("campaign", "data_hash", "seed", "n_boot", "confidence", "by"):
        if manifest.get(key) is not None:
            params[f"calibrate/{key}"] = str(manifest[key])
    params["calibrate/version"] = str(manifest.get("versions", {}).get("calibrate-judges", ""))
    for metric in documents.stats.metrics:
        for judge in metric.judges:
            for stat in STATISTICS:
                figure = judge.statistic(stat)
                for suffix, value in (("", figure.value), ("_ci_low", figure.ci_low), ("_ci_high", figure.ci_high)):
                    if _finite(value):
                        metrics[mlflow_key(metric.metric, judge.judge, stat + suffix)] = float(value)
    for rec in documents.recommendations:
        for field, values in zip(RECOMMENDED, _recommended(rec)):
            for suffix, value in zip(("", "_ci_low", "_ci_high"), values):
                if _finite(value):
                    metrics[mlflow_key(rec.metric, rec.judge, field + suffix)] = float(value)
        params[mlflow_key(rec.metric, "rule")] = str(rec.rule.get("description", rec.rule.get("kind")))[:6000]
        if rec.verdict:
            tags[mlflow_key(rec.metric, rec.judge, "verdict")] = rec.verdict.status
    for metric in documents.stats.metrics:
        best = metric.verdict.best.judge
        if best:
            tags[mlflow_key(metric.metric, "best")] = best
    return metrics, params, tags


class _RunInfo(Schema):
    run_id: Id
    artifact_uri: str = ""


class _Run(Schema):
    info: _RunInfo


class _RunCreated(Schema):
    run: _Run


def _artifact_url(artifact_uri: str, name: str) -> str | None:
    """Where the server takes an artifact of the run over HTTP (None when it does not proxy artifacts),
    each segment of the server's artifact path encoded (a segment ``..`` is refused).

    >>> _artifact_url("mlflow-artifacts:/1/abc 1/artifacts", "report.md")
    '/api/2.0/mlflow-artifacts/artifacts/1/abc%201/artifacts/calibrate-report/report.md'
    >>> _artifact_url("s3://bucket/1/abc/artifacts", "report.md") is None
    True
    """
    if not artifact_uri.startswith("mlflow-artifacts:"):
        return None
    segments = [urllib.parse.unquote(part) for part in urllib.parse.urlparse(artifact_uri).path.split("/") if part]
    if any(part in (".", "..") for part in segments):
        raise MlflowError(
            f"MLflow gave the run the artifact location {artifact_uri!r}, which walks up its folders: "
            "calibrate does not write there"
        )
    return "/api/2.0/mlflow-artifacts/artifacts/" + "/".join(
        path_segment(part) for part in segments + [ARTIFACT_PATH, name]
    )


@checked("n_boot", "seed")
def export_to_mlflow(
    campaign: Campaign,
    tracking_uri: str,
    experiment: str,
    *,
    run_name: str | None = None,
    seed: int = 0,
    n_boot: int = N_BOOT,
    by: str | None = None,
) -> Result:
    """The ``calibrate export mlflow`` command: the campaign's statistics, recommendations and report
    logged as one MLflow run (see the module docstring for its keys).

    Parameters
    ----------
    campaign : Campaign
    tracking_uri : str
        The MLflow tracking server's address.
    experiment : str
        The experiment to log the run in (made when missing).
    run_name : str, optional
        The run's name (default: ``calibrate CAMPAIGN``).
    seed, n_boot, by
        As :func:`~calibrate.report.build.report_documents` takes them.

    Returns
    -------
    Result
        ``{"run_id", "experiment_id", "tracking_uri", "metrics", "params", "tags", "artifacts",
        "artifacts_note"}``: the counts logged, and the artifact paths written.

    Raises
    ------
    MlflowError
        The server cannot be reached or refuses a request (the run, if made, is marked FAILED).

    Examples
    --------
    >>> import calibrate
    >>> c = calibrate.load_campaign(calibrate.demo_campaign_path())
    >>> export_to_mlflow(c, "http://127.0.0.1:9", "calibrate", n_boot=0)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    calibrate.imports.mlflow_traces.MlflowError: cannot reach MLflow at http://127.0.0.1:9 (...
    """
    client = MlflowClient(tracking_uri)
    try:
        experiment_id = client.experiment(experiment).experiment_id
    except MlflowError as exc:
        if exc.kind != "missing":
            raise
        experiment_id = client.create_experiment(experiment)
    documents = report_documents(campaign, by=by, seed=seed, n_boot=n_boot)
    metrics, params, tags = _figures(documents)
    now_ms = int(time.time() * 1000)
    run = client.call(
        "POST",
        "/api/2.0/mlflow/runs/create",
        _RunCreated,
        expected="a new MLflow run",
        body={
            "experiment_id": experiment_id,
            "run_name": run_name or f"calibrate {campaign.name}",
            "start_time": now_ms,
            "tags": [{"key": "calibrate.campaign", "value": campaign.name}],
        },
    ).run.info
    run_id = run.run_id
    try:
        _log_figures(client, run_id, metrics, params, tags, now_ms)
        artifacts, note = _log_report(client, run, documents)
    except BaseException:
        try:
            client.call(
                "POST",
                "/api/2.0/mlflow/runs/update",
                body={"run_id": run_id, "status": "FAILED", "end_time": int(time.time() * 1000)},
            )
        except MlflowError:
            pass  # the first failure is the one to tell
        raise
    client.call(
        "POST",
        "/api/2.0/mlflow/runs/update",
        body={"run_id": run_id, "status": "FINISHED", "end_time": int(time.time() * 1000)},
    )
    return Result(
        {
            "run_id": run_id,
            "experiment_id": experiment_id,
            "tracking_uri": client.uri,
            "metrics": len(metrics),
            "params": len(params),
            "tags": len(tags),
            "artifacts": artifacts,
            "artifacts_note": note,
        },
        single_row,
    )


def _log_figures(
    client: MlflowClient,
    run_id: str,
    metrics: dict[str, float],
    params: dict[str, str],
    tags: dict[str, str],
    now_ms: int,
) -> None:
    """The run's metrics, params and tags, sorted by key, in batches of at most :data:`BATCH` of each kind."""
    items = {
        "metrics": [{"key": k, "value": v, "timestamp": now_ms, "step": 0} for k, v in sorted(metrics.items())],
        "params": [{"key": k, "value": v} for k, v in sorted(params.items())],
        "tags": [{"key": k, "value": v} for k, v in sorted(tags.items())],
    }
    for kind, rows in items.items():
        for start in range(0, len(rows), BATCH[kind]):
            client.call(
                "POST",
                "/api/2.0/mlflow/runs/log-batch",
                body={"run_id": run_id, kind: rows[start : start + BATCH[kind]]},
            )


def _log_report(client: MlflowClient, run: Any, documents: ReportDocuments) -> tuple[list[str], str | None]:
    """The report's files as the run's artifacts: the paths logged, and why none were when the server
    keeps its artifacts where HTTP cannot reach."""
    artifacts: list[str] = []
    with tempfile.TemporaryDirectory(prefix="calibrate-mlflow-") as scratch:
        paths = write_report(documents, scratch)
        for path in sorted(paths.values()):
            url = _artifact_url(run.artifact_uri, Path(path).name)
            if url is None:
                return artifacts, (
                    f"the server keeps this run's artifacts at {run.artifact_uri!r}, which it does not "
                    "take over HTTP: the report was not logged (start mlflow server with --serve-artifacts, "
                    "the default, to log it)"
                )
            client.call("PUT", url, data=Path(path).read_bytes(), content_type="application/octet-stream")
            artifacts.append(f"{ARTIFACT_PATH}/{Path(path).name}")
    return artifacts, None
