"""Cases from files that DeepEval and RAGAS themselves wrote."""

import json

import pytest

from calibrate import CampaignError
from calibrate.cases.datasets import merge_cases, read_external_cases
from tests.conftest import run_cli


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    from deepeval.dataset import EvaluationDataset, Golden
    from ragas import EvaluationDataset as RagasDataset
    from ragas import SingleTurnSample

    folder = tmp_path_factory.mktemp("datasets")
    goldens = [
        Golden(
            input="Where is Paris?",
            actual_output="In France.",
            expected_output="France.",
            retrieval_context=["Paris is in France.", "It is the capital."],
            context=["Geography."],
            additional_metadata={"question_type": "where"},
        ),
        Golden(input="Who wrote Hamlet?", expected_output="Shakespeare."),
    ]
    dataset = EvaluationDataset(goldens=goldens)
    for kind in ("json", "jsonl", "csv"):
        dataset.save_as(file_type=kind, directory=str(folder), file_name=f"deepeval_{kind}")
    ragas = RagasDataset(
        samples=[
            SingleTurnSample(
                user_input="Where is Paris?",
                response="In France.",
                reference="France.",
                retrieved_contexts=["Paris is in France.", "It is the capital."],
            )
        ]
    )
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
    # a mistyped folder is refused, and not made
    result = run_cli("cases", "import", tmp_path / "campaign", files / "ragas.csv")
    assert result.returncode == 2 and "no campaign here" in result.stderr and "calibrate init" in result.stderr
    assert not (tmp_path / "campaign").exists()
    started = run_cli("init", tmp_path / "campaign", "--metric", "faithfulness")
    assert started.returncode == 0, started.stderr
    result = run_cli("cases", "import", tmp_path / "campaign", files / "ragas.csv")
    assert result.returncode == 0 and "1 case(s) added" in result.stdout


# Issue 24: a dataset file is read through the declared case format (CaseRecord) within the limits of
# every document; text is data, kept whole through cases.jsonl; whatever the file holds, it is read or
# refused naming the file.

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from calibrate import import_cases, load_campaign  # noqa: E402
from calibrate.base.documents import DocumentError  # noqa: E402
from tests.imports.attack_tools import DEEP, NASTY, attacked  # noqa: E402

GOLDENS = [
    {
        "input": "q?",
        "actual_output": "a.",
        "retrieval_context": ["c1", "c2"],
        "name": "g1",
        "additional_metadata": {"k": 1},
    },
    {"user_input": "r?", "response": "b.", "retrieved_contexts": ["x"], "reference_contexts": '["y"]'},
]


@pytest.mark.parametrize(
    "name, content, words",
    [
        ("deep.json", DEEP, "nested deeper than 200 levels"),  # a RecursionError before
        ("deep.jsonl", '{"input": "q"}\n' + DEEP + "\n", "line 2: nested deeper than 200 levels"),
        ("digits.json", "[" + "9" * 5000 + "]", "not valid JSON"),  # a ValueError before
        ("latin1.json", '[{"input": "caf\xe9"}]', "not UTF-8 text"),  # a UnicodeDecodeError before
        ("latin1.csv", "input\ncaf\xe9\n", "not a readable CSV file"),  # a UnicodeDecodeError before
        ("metadata.json", json.dumps([{"input": "q", "metadata": "{" * 5000}]), None),  # metadata kept as text
        ("chunks.csv", "user_input,retrieved_contexts\nq," + "[" * 5000 + "\n", "not a list of chunks"),
    ],
)
def test_a_dataset_that_was_a_traceback_is_read_or_refused_naming_it(tmp_path, name, content, words):
    path = tmp_path / name
    path.write_bytes(content.encode("latin-1" if "latin1" in name else "utf-8"))
    if words is None:
        [case] = read_external_cases(path)
        assert case["metadata"]["additional_metadata"] == "{" * 5000
        return
    with pytest.raises(CampaignError) as caught:
        read_external_cases(path)
    assert str(path) in str(caught.value) and words in str(caught.value)


def test_text_is_data_kept_whole_through_the_campaign(tmp_path):
    """A line separator (U+2028) in a case's text split cases.jsonl: the campaign no longer loaded, and the
    next import was a JSONDecodeError traceback."""
    path = tmp_path / "goldens.json"
    path.write_text(
        json.dumps(
            [{"input": f"Q{NASTY}", "actual_output": f"A{NASTY}", "retrieval_context": [NASTY]}, {"input": "second"}]
        )
    )
    folder = tmp_path / "campaign"
    from calibrate import init_campaign

    init_campaign(folder, ["faithfulness"])
    assert import_cases(folder, path)["added"] == 2
    cases = load_campaign(folder).cases
    [case] = [c for c in cases.values() if c["input"] != "second"]
    assert (
        case["input"] == f"Q{NASTY}" and case["actual_output"] == f"A{NASTY}" and case["retrieval_context"] == [NASTY]
    )
    assert len((folder / "cases.jsonl").read_text(encoding="utf-8").splitlines()) == 2
    assert import_cases(folder, path)["unchanged"] == 2


def test_a_campaign_cases_file_edited_badly_is_a_clear_error(tmp_path):
    from calibrate.cases.datasets import read_cases_file

    (tmp_path / "cases.jsonl").write_text('{"case_id": "a", "input": "q"}\n[1, 2]\n{"case_id": \n')
    with pytest.raises(DocumentError) as caught:
        read_cases_file(tmp_path)
    assert [p.row for p in caught.value.problems] == [2, 3]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), suffix=st.sampled_from([".json", ".jsonl"]))
def test_any_attacked_dataset_is_read_or_refused_naming_it(tmp_path_factory, data, suffix):
    path = tmp_path_factory.mktemp("cases") / f"goldens{suffix}"
    path.write_bytes(data.draw(attacked(GOLDENS)))
    try:
        cases = read_external_cases(path)
    except CampaignError as exc:
        assert exc.problems and all(str(path) in p.file for p in exc.problems), str(exc)
        return
    for case in cases:
        assert isinstance(case["input"], str) and case["input"] and isinstance(case["case_id"], str)
        assert all(isinstance(chunk, str) for chunk in case.get("retrieval_context", []) + case.get("context", []))
