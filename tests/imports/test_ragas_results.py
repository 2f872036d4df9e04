"""A RAGAS evaluation result, saved as CSV or Parquet, read as cases and judge ratings
(calibrate/imports/ragas_results.py). Files the real library wrote: tests/imports/test_import_files.py."""

import pandas as pd
import pytest

import calibrate
from calibrate.base.errors import CampaignError
from calibrate.imports.ragas_results import INF_ERROR, NAN_ERROR, import_ragas_result, read_ragas_result

TABLE = pd.DataFrame(
    {
        "user_input": ["q?", "r?", "s?"],
        "response": ["a.", "b.", "c."],
        "retrieved_contexts": [["c1", "c2"], ["d"], []],
        "faithfulness": [1.0, float("nan"), float("inf")],
        "answer_relevancy": [0.25, 0.5, 0.75],
    }
)


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_each_row_is_a_case_and_each_metric_column_a_rating(tmp_path, suffix):
    path = tmp_path / f"result{suffix}"
    TABLE.to_csv(path) if suffix == ".csv" else TABLE.to_parquet(path)  # the CSV with its index, as saved
    batch = read_ragas_result(path, rater="ragas-gpt4o", model="gpt-4o")
    assert (batch.kind, batch.origin, len(batch.cases)) == ("ragas", "ragas", 3)
    assert batch.cases[0]["retrieval_context"] == ["c1", "c2"] and batch.cases[0]["input"] == "q?"
    assert (
        batch.cases[0]["case_id"].startswith("case-") and batch.cases[0]["metadata"]["source"] == f"ragas:{path.name}"
    )
    got = {(r.source_id.split("#")[1], r.metric): (r.value, r.error) for r in batch.ratings}
    first = 2 if suffix == ".csv" else 1
    assert got[f"row{first}/faithfulness", "faithfulness"] == (1.0, None)
    assert got[f"row{first + 1}/faithfulness", "faithfulness"] == (None, NAN_ERROR)
    assert got[f"row{first + 2}/faithfulness", "faithfulness"] == (None, INF_ERROR.format(score=float("inf")))
    assert got[f"row{first + 2}/answer_relevancy", "answer_relevancy"] == (0.75, None)
    assert all(r.rater == "ragas-gpt4o" and r.facts == {"library": "ragas", "model": "gpt-4o"} for r in batch.ratings)


def test_a_multi_turn_sample_is_skipped_saying_so(tmp_path):
    path = tmp_path / "result.csv"  # a list in a CSV cell is its Python text, as pandas writes it
    table = pd.DataFrame({"user_input": [[{"content": "hi", "type": "human"}], "q?"], "faithfulness": [1.0, 0.0]})
    table.to_csv(path, index=False)
    batch = read_ragas_result(path, rater="r")
    assert [(s.what, s.reason) for s in batch.skipped] == [
        ("result.csv#row2", "a multi-turn sample: calibrate rates single-turn cases")
    ]
    assert [r.value for r in batch.ratings] == [0.0]


@pytest.mark.parametrize(
    ("table", "name", "message"),
    [
        (pd.DataFrame({"question": ["q?"], "faithfulness": [1.0]}), "r.csv", "no user_input column"),
        (pd.DataFrame({"user_input": ["q?"], "response": ["a."]}), "r.csv", "no metric column"),
        (
            pd.DataFrame({"user_input": ["q?"], "faithfulness": ["high"]}),
            "r.csv",
            "line 2, field 'faithfulness': the score of 'faithfulness' is not a number",
        ),
        (pd.DataFrame({"user_input": ["q?"], "faithfulness": [1.0]}), "r.json", "not a .csv or .parquet file"),
    ],
)
def test_a_file_that_is_no_ragas_table_is_refused_naming_it(tmp_path, table, name, message):
    path = tmp_path / name
    table.to_csv(path, index=False)
    with pytest.raises(CampaignError) as refused:
        read_ragas_result(path, rater="r")
    assert message in str(refused.value) and str(path) in str(refused.value)


def test_the_judge_must_be_named(tmp_path):
    path = tmp_path / "r.csv"
    TABLE.to_csv(path, index=False)
    with pytest.raises(ValueError, match="a RAGAS result does not record its judge: name it"):
        read_ragas_result(path, rater=" ")


def test_imported_into_a_campaign_once(tmp_path):
    calibrate.init_campaign(tmp_path / "c", ["faithfulness"])
    path = tmp_path / "r.csv"
    TABLE[["user_input", "response", "faithfulness"]].to_csv(path, index=False)
    doc = import_ragas_result(tmp_path / "c", path, rater="ragas-judge")
    assert doc["ratings"]["new"] == 3
    assert import_ragas_result(tmp_path / "c", path, rater="ragas-judge")["ratings"]["unchanged"] == 3
