"""The Python API: a function for every command, results that are the --json document and a tidy table,
numpydoc on every public name, and library errors that speak of parameters (the CLI of flags)."""

from __future__ import annotations

import inspect
import json

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

import calibrate
from calibrate.base.errors import NO_VALUE, ParameterText
from calibrate.base.results import FRAME_COLUMNS, Document, Result, versioned
from calibrate.cli import main
from calibrate.cli.console import command_line_text

#: every command of the command line -> the function of calibrate that does its work
COMMAND_FUNCTIONS = {
    "init": "init_campaign",
    "validate": "validate_campaign",
    "cases import": "import_cases",
    "collect": "collect_cases",
    "sample": "sample_cases",
    "plan": "plan_labels",
    "labelstudio push": "push_to_label_studio",
    "labelstudio pull": "pull_from_label_studio",
    "adjudicate": "adjudicate",
    "judge": "run_judges",
    "cache clear": "clear_judge_cache",
    "probe": "run_probe",
    "stats": "compute_stats",
    "thresholds": "thresholds",
    "repeatability": "repeatability",
    "pass-rate": "estimate_pass_rate",
    "escalate": "escalate",
    "case-verdicts": "case_verdicts",
    "calibration": "fit_calibration",
    "compare": "compare_judges",
    "bias": "bias_probes",
    "audit": "audit_judges",
    "gate": "run_gate",
    "report": "build_report",
    "demo": "demo_report",
    "import deepeval": "import_deepeval_run",
    "import ragas": "import_ragas_result",
    "import mlflow": "import_mlflow",
    "export mlflow": "export_to_mlflow",
    "import phoenix": "import_phoenix",
    "import promptfoo": "import_promptfoo",
    "import inspect": "import_inspect",
    "import langfuse": "import_langfuse",
    "import undo-withdrawals": "undo_withdrawals",
    "import langsmith": "import_langsmith",
    "monitor": "monitor_judge",
    "fingerprint": "fingerprint_judge",
    "compare-systems": "compare_systems",
}


def _commands(group, prefix=""):
    for name, command in group.commands.items():
        if hasattr(command, "commands"):
            yield from _commands(command, f"{prefix}{name} ")
        else:
            yield f"{prefix}{name}"


def test_every_command_has_a_function():
    assert sorted(_commands(main)) == sorted(COMMAND_FUNCTIONS)
    for function in COMMAND_FUNCTIONS.values():
        assert callable(getattr(calibrate, function)), function
    assert set(calibrate.__all__) == set(dir(calibrate)) & set(calibrate.__all__)


@pytest.mark.parametrize("name", sorted(calibrate.__all__))
def test_public_names_have_numpydoc(name):
    obj = getattr(calibrate, name)
    if not callable(obj):
        return
    doc = "\n" + (inspect.getdoc(obj) or "")
    wanted = ["Examples"] + ([] if inspect.isclass(obj) else ["Returns"])
    if inspect.signature(obj).parameters:
        wanted.append("Parameters")
    missing = [section for section in wanted if f"\n{section}\n---" not in doc]
    assert not missing, f"{name}: no numpydoc {', '.join(missing)} section"


@pytest.fixture(scope="module")
def demo():
    return calibrate.load_campaign(calibrate.demo_campaign_path())


def _cli_json(*args):
    result = CliRunner().invoke(main, [*args, "--json"])
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.stdout)


def test_results_are_the_json_documents(demo):
    """to_dict() is what --json prints, figure for figure, for the commands the demo can run."""
    path = str(calibrate.demo_campaign_path())
    pairs = [
        (
            calibrate.compute_stats(demo, judges=["Olz-gpt4o"], n_boot=50),
            ["stats", path, "--judge", "Olz-gpt4o", "--n-boot", "50"],
        ),
        (
            calibrate.thresholds(demo, judges=["Olz-gpt4o"], n_boot=50),
            ["thresholds", path, "--judge", "Olz-gpt4o", "--n-boot", "50"],
        ),
        (
            calibrate.compare_judges(demo, judges=["Olz-gpt4o", "RMITIR-llama70B"]),
            ["compare", path, "--judge", "Olz-gpt4o", "--judge", "RMITIR-llama70B"],
        ),
        (
            calibrate.fit_calibration(demo, metric="relevance", judge="Olz-gpt4o", scores=[2.0]),
            ["calibration", path, "--metric", "relevance", "--judge", "Olz-gpt4o", "--score", "2"],
        ),
        (calibrate.validate_campaign(demo), ["validate", path]),
    ]
    for result, args in pairs:
        assert isinstance(result, (Result, Document))
        document = json.loads(json.dumps(versioned(result)))  # --json prints the schema_version first
        printed = _cli_json(*args)
        for doc in (document, printed):
            doc.get("manifest", {}).pop("created", None)
            for rec in doc.get("recommendations", []):
                rec.get("manifest", {}).pop("created", None)
        assert document == printed, args[0]
        assert type(result.to_dict()) is dict and result.to_dict() is not result.to_dict()


def test_to_frame_is_tidy(demo):
    stats = calibrate.compute_stats(demo, n_boot=50)
    frame = stats.to_frame()
    assert list(frame.columns) == list(FRAME_COLUMNS)
    assert not frame.duplicated(["metric", "judge", "slice", "statistic"]).any()
    judges = {j["judge"] for j in stats["metrics"][0]["judges"]}
    assert set(frame["judge"].dropna()) == judges and len(judges) == 9
    # each figure is the document's, with its interval, method and n
    for judge in stats["metrics"][0]["judges"]:
        for statistic in ("spearman", "kappa", "auc"):
            row = frame[(frame["judge"] == judge["judge"]) & (frame["statistic"] == statistic)].iloc[0]
            figure = judge[statistic]
            found = [row["estimate"], row["ci_low"], row["ci_high"]]
            given = [np.nan if figure.get(k) is None else figure[k] for k in ("estimate", "ci_low", "ci_high")]
            assert np.array_equal(found, given, equal_nan=True)
            assert row["method"] == figure["ci_method"] and row["n"] == judge["n"] > 4400
    # an undefined figure keeps its reason, with a NaN estimate
    undefined = frame[frame["estimate"].isna()]
    assert len(undefined) and undefined["reason"].notna().all()
    # slices get their own rows
    sliced = calibrate.compute_stats(demo, judges=["Olz-gpt4o"], by="question_type", n_boot=0).to_frame()
    assert {"question_type=how", "question_type=what"} <= set(sliced["slice"].dropna())


def test_frames_of_other_results(demo):
    thresholds = calibrate.thresholds(demo, n_boot=0).to_frame()
    assert set(thresholds["statistic"]) >= {"threshold", "false_pass_rate", "false_fail_rate"}
    audit = calibrate.audit_judges(
        demo, metric="relevance", old="RMITIR-llama70B", new="RMITIR-GPT4o", n_boot=50
    ).to_frame()
    assert "RMITIR-GPT4o vs RMITIR-llama70B" in set(audit["judge"])
    assert {"RMITIR-llama70B", "RMITIR-GPT4o"} <= set(audit["judge"])
    plan = calibrate.plan_labels(demo, judge="Olz-gpt4o").to_frame()
    assert "statistic" in plan.columns and len(plan) >= 2
    fit = calibrate.fit_calibration(demo, metric="relevance", judge="Olz-gpt4o")
    assert set(fit.to_frame()["statistic"]) == {"cross_validated.brier", "cross_validated.ece"}
    assert fit.map.predict([3])[0] == pytest.approx(0.67, abs=0.01)


def test_from_frames_round_trip():
    ratings = pd.DataFrame(
        {
            "case_id": [f"c{i}" for i in range(40)] * 2,
            "metric": "m",
            "rater": ["h"] * 40 + ["j"] * 40,
            "rater_kind": ["human"] * 40 + ["judge"] * 40,
            "value": np.r_[np.tile([True, False], 20), np.linspace(0, 1, 40)],
        }
    )
    c = calibrate.campaign_from_frames(
        {"name": "n", "metrics": {"m": {"scale": "binary"}}},
        ratings,
        pd.DataFrame({"case_id": [f"c{i}" for i in range(40)]}),
    )
    frame = calibrate.compute_stats(c, n_boot=0).to_frame()
    assert frame.loc[frame["statistic"] == "auc", "n"].iloc[0] == 40


def test_library_errors_name_parameters_and_the_cli_flags(demo, tmp_path):
    with pytest.raises(ValueError) as caught:
        calibrate.plan_labels(demo, judge="Olz-gpt4o", width=3)
    assert str(caught.value).startswith("width=3: ") and "--" not in str(caught.value)
    assert command_line_text(caught.value).startswith("--width 3: ")
    with pytest.raises(ValueError, match=r"^by='topic': "):
        calibrate.draw_sample(demo, 5, strategy="stratified", by="topic", include_labelled=True)
    result = CliRunner().invoke(
        main,
        [
            "sample",
            str(calibrate.demo_campaign_path()),
            "--n",
            "5",
            "--strategy",
            "stratified",
            "--by",
            "topic",
            "--include-labelled",
        ],
    )
    assert result.exit_code == 2 and "--by topic: " in result.output
    text = ParameterText("{skip_incomplete} for {_who}", skip_incomplete=True, _who="judge {x}")
    assert (str(text), text.for_command_line()) == (
        "skip_incomplete=True for judge {x}",
        "--skip-incomplete for judge {x}",
    )
    assert ParameterText("with {threshold}", threshold=NO_VALUE).for_command_line() == "with --threshold"


def test_adjudication_template_is_never_replaced(tmp_path):
    ratings = pd.DataFrame(
        {"case_id": ["a", "a"], "metric": "f", "rater": ["x", "y"], "rater_kind": "human", "value": [1, 0]}
    )
    c = calibrate.campaign_from_frames({"name": "n", "metrics": {"f": {"scale": "binary"}}}, ratings)
    template = tmp_path / "decisions.csv"
    template.write_text("an adjudicator's work\n")
    with pytest.raises(FileExistsError, match="template="):
        calibrate.adjudicate(c, template=template)
    assert template.read_text() == "an adjudicator's work\n"
    assert calibrate.adjudicate(c)["disagreements"][0]["case_id"] == "a"


def test_a_result_keeps_its_table_through_pickling(demo):
    import pickle

    plan = calibrate.plan_labels(demo, judge="Olz-gpt4o")
    stats = calibrate.compute_stats(demo, judges=["Olz-gpt4o"], n_boot=0)
    for result in (plan, stats):
        again = pickle.loads(pickle.dumps(result))
        assert again == result and again.to_frame().equals(result.to_frame())
    assert "statistic" in pickle.loads(pickle.dumps(plan)).to_frame().columns
