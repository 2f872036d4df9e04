"""Hypothesis attacks on what the import readers accept: any file gives a batch or a CampaignError naming
the file, never a traceback; every batch imports or is refused whole."""

from __future__ import annotations

import json

import pandas as pd
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from calibrate import CampaignError
from calibrate.imports.apply import import_batch
from calibrate.imports.deepeval_runs import read_deepeval_run
from calibrate.imports.ragas_results import read_ragas_result
from tests.conftest import write_campaign

JSON = st.recursive(st.none() | st.booleans() | st.floats(allow_nan=False) | st.integers() | st.text(max_size=8),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
                    max_leaves=12)
METRIC_DATA = st.fixed_dictionaries({"name": st.sampled_from(["Faithfulness", "Answer Relevancy", "x"]) | JSON},
                                    optional={"score": JSON | st.floats(0, 1), "error": JSON,
                                              "evaluationModel": st.sampled_from(["gpt-4o", ""]) | JSON,
                                              "threshold": JSON, "reason": JSON})
TEST_CASE = st.fixed_dictionaries({}, optional={
    "name": st.sampled_from(["a", "a", "test_case_0"]) | JSON, "input": st.sampled_from(["q?", ""]) | JSON,
    "actualOutput": JSON, "retrievalContext": JSON | st.lists(st.text(max_size=5), max_size=2),
    "metadata": JSON, "metricsData": JSON | st.lists(METRIC_DATA, max_size=3)})
RUN = st.fixed_dictionaries({"testCases": st.lists(TEST_CASE, max_size=4) | JSON},
                            optional={"conversationalTestCases": JSON}) | JSON
TOML = 'name = "x"\n[metrics.faithfulness]\nscale = "binary"\n[metrics.answer_relevancy]\nscale = "binary"\n'


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(run=RUN)
def test_any_test_run_file_is_read_or_refused_with_its_name(tmp_path_factory, run):
    tmp = tmp_path_factory.mktemp("run")
    path = tmp / "test_run.json"
    path.write_text(json.dumps(run))
    try:
        batch = read_deepeval_run(path)
    except CampaignError as exc:
        assert all(str(path) in p.file for p in exc.problems)
        return
    folder = write_campaign(tmp / "campaign", TOML, "case_id,metric,rater,rater_kind,value\n")
    try:
        doc = import_batch(folder, batch)
    except (CampaignError, ValueError) as exc:
        assert str(exc)
        assert not (folder / "imported_ratings.csv").exists()
        return
    assert doc["ratings"]["new"] + len(doc["skipped"]) >= len(batch.ratings)


CELL = st.none() | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=6) | st.booleans() | st.integers()


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(columns=st.lists(st.sampled_from(["user_input", "response", "retrieved_contexts", "faithfulness", "other",
                                         "Unnamed: 0"]), min_size=1, max_size=5, unique=True),
       cells=st.lists(st.lists(CELL, min_size=5, max_size=5), max_size=4))
def test_any_ragas_table_is_read_or_refused_with_its_name(tmp_path_factory, columns, cells):
    tmp = tmp_path_factory.mktemp("ragas")
    path = tmp / "result.csv"
    pd.DataFrame([row[:len(columns)] for row in cells], columns=columns).to_csv(path, index=False)
    try:
        batch = read_ragas_result(path, rater="r")
    except CampaignError as exc:
        assert all(str(path) in p.file for p in exc.problems)
        return
    folder = write_campaign(tmp / "campaign", TOML, "case_id,metric,rater,rater_kind,value\n")
    try:
        import_batch(folder, batch, metric_map={"other": "answer_relevancy"})
    except (CampaignError, ValueError) as exc:
        assert str(exc)
