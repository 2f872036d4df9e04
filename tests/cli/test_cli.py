"""The command line end to end: each command run in process by click's runner (``run_cli``), with the
exit code, stdout and stderr a user sees; the installed entry point and ``python -m calibrate`` run as
users run them, in a subprocess."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import run_cli

CALIBRATE = shutil.which("calibrate", path=str(Path(sys.executable).parent)) or "calibrate"


def run(*args, check=True):
    result = run_cli(*args)
    if check and result.returncode != 0:
        raise AssertionError(f"exit {result.returncode}\nstdout:{result.stdout}\nstderr:{result.stderr}")
    return result


def test_validate_ok_and_error(small_campaign, tmp_path):
    ok = run("validate", small_campaign)
    assert "valid" in ok.stdout and "faithfulness" in ok.stdout
    (small_campaign / "ratings.csv").write_text(
        (small_campaign / "ratings.csv").read_text() + "c001,faithfulness,ann1,human,7,\n"
    )
    bad = run("validate", small_campaign, check=False)
    assert bad.returncode == 2
    assert "ratings.csv, line" in bad.stderr and "value outside the scale" in bad.stderr
    assert "duplicate rating" in bad.stderr


def test_stats_json_document(small_campaign):
    doc = json.loads(
        run("stats", small_campaign, "--json", "--n-boot", 200, "--seed", 3, "--by", "question_type").stdout
    )
    metric = doc["metrics"][0]
    assert {"metric", "scale", "n_cases", "judges", "slices"} <= set(metric)
    judge = metric["judges"][0]
    for key in ("judge", "n", "spearman", "kendall", "kappa", "kappa_quadratic", "alpha", "pass_kappa", "auc", "curve"):
        assert key in judge
    assert set(judge["spearman"]) >= {"estimate", "ci_low", "ci_high"}
    assert judge["kappa"]["estimate"] is None and judge["kappa"]["reason"]
    assert doc["manifest"]["seed"] == 3 and doc["manifest"]["n_boot"] == 200


def test_stats_table_and_filters(small_campaign):
    text = run("stats", small_campaign, "--judge", "judge-a", "--n-boot", 100).stdout
    assert "judge-a" in text and "judge-b" not in text and "Spearman" in text
    bad = run("stats", small_campaign, "--metric", "nope", check=False)
    assert bad.returncode == 2 and "unknown metric nope" in bad.stderr


def test_thresholds_rules(small_campaign):
    doc = json.loads(
        run(
            "thresholds",
            small_campaign,
            "--metric",
            "faithfulness",
            "--max-false-pass",
            0.2,
            "--confidence",
            0.9,
            "--json",
            "--n-boot",
            200,
        ).stdout
    )
    rec = doc["recommendations"][0]
    assert rec["rule"]["kind"] == "constraint" and rec["rule"]["confidence"] == 0.9
    cost = json.loads(
        run(
            "thresholds",
            small_campaign,
            "--metric",
            "faithfulness",
            "--cost-false-pass",
            5,
            "--cost-false-fail",
            1,
            "--prevalence",
            0.3,
            "--json",
            "--n-boot",
            100,
        ).stdout
    )
    assert cost["recommendations"][0]["rule"]["prevalence"] == 0.3
    table = run("thresholds", small_campaign, "--metric", "faithfulness", "--max-false-pass", 0.2, "--n-boot", 100)
    assert "threshold recommendations" in table.stdout
    # no rule given: the rule campaign.toml declares (max_false_pass = 0.2), not an error
    declared = json.loads(run("thresholds", small_campaign, "--json", "--n-boot", 100).stdout)["recommendations"][0]
    assert declared["rule"]["kind"] == "constraint" and declared["rule"]["max_false_pass"] == 0.2
    both = run("thresholds", small_campaign, "--max-false-pass", 0.1, "--cost-false-pass", 2, check=False)
    assert both.returncode == 2 and "either --max-false-pass" in both.stderr
    half = run("thresholds", small_campaign, "--metric", "faithfulness", "--cost-false-pass", 2, check=False)
    assert half.returncode == 2 and "both" in half.stderr


def test_report_writes_three_files(small_campaign, tmp_path):
    run("report", small_campaign, "--out", tmp_path / "rep", "--n-boot", 100)
    document = json.loads((tmp_path / "rep" / "report.json").read_text())
    assert document["recommendations"] and document["stats"]["metrics"]
    assert "<html" in (tmp_path / "rep" / "report.html").read_text()
    assert "## Metric faithfulness" in (tmp_path / "rep" / "report.md").read_text()


def test_demo_runs_offline_and_reports(tmp_path):
    result = run("demo", "--out", tmp_path / "demo")
    assert "willia-umbrela1" in result.stdout and "threshold recommendations" in result.stdout
    assert "2 out-of-scale value(s) dropped" in result.stdout
    document = json.loads((tmp_path / "demo" / "report.json").read_text())
    metric = document["stats"]["metrics"][0]
    assert metric["n_cases"] == 4423 and len(metric["judges"]) == 9 and metric["slices"]
    # the demo report also audits a judge upgrade, maps scores to probabilities and compares the judges
    assert [(a["old"]["judge"], a["new"]["judge"]) for a in document["audits"]] == [("RMITIR-llama70B", "RMITIR-GPT4o")]
    assert len(document["calibrations"]) == 9 and len(document["versus"][0]["pairs"]) == 36
    assert "worse on other statistics" in result.stdout  # Spearman within the margin, the AUC and alpha not


def test_help_is_fast_and_lists_commands():
    result = subprocess.run([CALIBRATE, "--help"], capture_output=True, text=True, timeout=300, check=True)
    for command in (
        "validate",
        "stats",
        "thresholds",
        "report",
        "demo",
        "sample",
        "plan",
        "audit",
        "gate",
        "pass-rate",
        "calibration",
        "compare",
        "repeatability",
        "bias",
        "probe",
        "collect",
    ):
        assert command in result.stdout


def test_python_dash_m_calibrate_is_the_command_line():
    result = subprocess.run([sys.executable, "-m", "calibrate", "--help"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and "Commands:" in result.stdout and "thresholds" in result.stdout


#: what a command imports only where it is used (issue 29): the report's templates and the progress bars
NOT_FOR_HELP = ("jinja2", "rich.progress", "numpy", "pandas", "scipy", "sklearn", "numba", "pydantic")
NOT_FOR_STATS = ("jinja2",)


@pytest.mark.parametrize(("args", "absent"), [(["--help"], NOT_FOR_HELP), (["stats", "DEMO"], NOT_FOR_STATS)])
def test_a_command_imports_no_heavy_module_it_does_not_use(args, absent):
    from calibrate import demo_campaign_path

    args = [str(demo_campaign_path()) if a == "DEMO" else a for a in args]
    code = (
        "import sys, runpy; sys.argv = ['calibrate', *sys.argv[1:]]\n"
        "try:\n    runpy.run_module('calibrate', run_name='__main__')\n"
        "except SystemExit:\n    pass\n"
        f"sys.stderr.write('\\nLOADED ' + ' '.join(m for m in {absent!r} if m in sys.modules))"
    )
    result = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=600)
    assert "LOADED" in result.stderr, result.stderr
    assert result.stderr.rsplit("LOADED", 1)[1].split() == []


@pytest.mark.parametrize("command", [["thresholds"], ["compare"], ["stats"]])
def test_an_unknown_metric_is_an_error_naming_the_declared_ones(command):
    from calibrate import demo_campaign_path

    result = run_cli(*command, demo_campaign_path(), "--metric", "nope")
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert "unknown metric nope; the campaign declares relevance" in result.stderr
