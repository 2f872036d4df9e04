"""Cases from files that DeepEval and RAGAS themselves wrote."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from calibrate import CampaignError
from calibrate.cases.datasets import merge_cases, read_external_cases


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    from deepeval.dataset import EvaluationDataset, Golden
    from ragas import EvaluationDataset as RagasDataset
    from ragas import SingleTurnSample

    folder = tmp_path_factory.mktemp("datasets")
    goldens = [Golden(input="Where is Paris?", actual_output="In France.", expected_output="France.",
                      retrieval_context=["Paris is in France.", "It is the capital."], context=["Geography."],
                      additional_metadata={"question_type": "where"}),
               Golden(input="Who wrote Hamlet?", expected_output="Shakespeare.")]
    dataset = EvaluationDataset(goldens=goldens)
    for kind in ("json", "jsonl", "csv"):
        dataset.save_as(file_type=kind, directory=str(folder), file_name=f"deepeval_{kind}")
    ragas = RagasDataset(samples=[SingleTurnSample(user_input="Where is Paris?", response="In France.",
                                                   reference="France.",
                                                   retrieved_contexts=["Paris is in France.", "It is the capital."])])
    ragas.to_jsonl(str(folder / "ragas.jsonl"))
    ragas.to_csv(str(folder / "ragas.csv"))
    return folder


@pytest.mark.parametrize("name", ["deepeval_json.json", "deepeval_jsonl.jsonl", "deepeval_csv.csv"])
def test_deepeval_files(files, name):
    cases = read_external_cases(files / name)
    assert len(cases) == 2
    first = cases[0]
    assert first["input"] == "Where is Paris?" and first["actual_output"] == "In France."
    assert first["retrieval_context"] == ["Paris is in France.", "It is the capital."]
    assert first["context"] == ["Geography."] and first["metadata"]["source"].startswith("deepeval:")
    assert "actual_output" not in cases[1] and cases[1]["expected_output"] == "Shakespeare."
    if name.endswith(".json"):
        assert first["metadata"]["question_type"] == "where"


@pytest.mark.parametrize("name", ["ragas.jsonl", "ragas.csv"])
def test_ragas_files_get_deepeval_names(files, name):
    (case,) = read_external_cases(files / name)
    assert case["input"] == "Where is Paris?" and case["actual_output"] == "In France."
    assert case["expected_output"] == "France."
    assert case["retrieval_context"] == ["Paris is in France.", "It is the capital."]


def test_the_same_case_gets_the_same_id_from_either_library(files):
    deepeval = read_external_cases(files / "deepeval_json.json")[0]
    ragas = read_external_cases(files / "ragas.jsonl")[0]
    assert deepeval["case_id"] != ragas["case_id"]  # DeepEval's case has a context RAGAS's lacks
    again = read_external_cases(files / "ragas.csv")[0]
    assert again["case_id"] == ragas["case_id"]


def test_merge_adds_skips_and_refuses_to_overwrite(files, tmp_path):
    cases = read_external_cases(files / "deepeval_json.json")
    assert merge_cases(tmp_path, cases) == {"added": 2, "unchanged": 0, "completed": 0}
    assert merge_cases(tmp_path, cases) == {"added": 0, "unchanged": 2, "completed": 0}
    changed = [{**cases[0], "actual_output": "In Germany."}]
    with pytest.raises(CampaignError, match=r"already in the campaign with other content \(actual_output differ"):
        merge_cases(tmp_path, changed, complete=True)
    lines = (tmp_path / "cases.jsonl").read_text().splitlines()
    assert len(lines) == 2 and json.loads(lines[0])["actual_output"] == "In France."
    # a field the source added since completes the case (only with complete=True), nothing else changes
    fuller = [{**{k: v for k, v in cases[1].items() if k != "expected_output"}, "expected_output": "Later."}]
    bare = {k: v for k, v in json.loads(lines[1]).items() if k != "expected_output"}
    (tmp_path / "cases.jsonl").write_text(lines[0] + "\n" + json.dumps(bare) + "\n")
    with pytest.raises(CampaignError):
        merge_cases(tmp_path, fuller)
    assert merge_cases(tmp_path, fuller, complete=True, dry_run=True)["completed"] == 1
    assert "expected_output" not in (tmp_path / "cases.jsonl").read_text().splitlines()[1]
    assert merge_cases(tmp_path, fuller, complete=True) == {"added": 0, "unchanged": 0, "completed": 1}
    completed = json.loads((tmp_path / "cases.jsonl").read_text().splitlines()[1])
    assert completed == {**bare, "expected_output": "Later."}


def test_bad_records_are_named(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"input": "ok?"}\n{"actual_output": "no input"}\n[1, 2]\n')
    with pytest.raises(CampaignError) as info:
        read_external_cases(path)
    assert [(p.row, p.field) for p in info.value.problems] == [(2, "input"), (3, None)]


def test_cli_import(files, tmp_path):
    calibrate = Path(sys.executable).parent / "calibrate"
    # a mistyped folder is refused, and not made
    result = subprocess.run([str(calibrate), "cases", "import", str(tmp_path / "campaign"), str(files / "ragas.csv")],
                            capture_output=True, text=True)
    assert result.returncode == 2 and "no campaign here" in result.stderr and "calibrate init" in result.stderr
    assert not (tmp_path / "campaign").exists()
    started = subprocess.run([str(calibrate), "init", str(tmp_path / "campaign"), "--metric", "faithfulness"],
                             capture_output=True, text=True)
    assert started.returncode == 0, started.stderr
    result = subprocess.run([str(calibrate), "cases", "import", str(tmp_path / "campaign"), str(files / "ragas.csv")],
                            capture_output=True, text=True)
    assert result.returncode == 0 and "1 case(s) added" in result.stdout
