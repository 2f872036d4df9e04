"""calibrate import deepeval / ragas: files the real libraries wrote (against the scripted judge server on
127.0.0.1, each judge model with its own persona), imported, idempotent, revised, skipped with reasons."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pandas as pd
import pytest

from calibrate import CampaignError, load_campaign
from calibrate.imports.apply import import_batch
from calibrate.imports.deepeval_runs import read_deepeval_run
from calibrate.imports.ragas_results import read_ragas_result
from calibrate.imports.store import ImportStore
from tests.conftest import write_campaign

CASES = [
    {
        "name": "paris",
        "input": "Where is Paris located?",
        "actual_output": "Paris is located in France.",
        "retrieval_context": ["Paris is located in France.", "Bananas grow in warm places."],
    },
    {
        "name": "rome",
        "input": "Where is Rome located?",
        "actual_output": "Rome is located in Spain. Rome is old.",
        "retrieval_context": ["Rome is located in Italy.", "Rome is old."],
    },
    {
        "name": None,
        "input": "Where is Oslo located?",
        "actual_output": "Oslo is located in Norway.",
        "retrieval_context": ["Oslo is located in Norway."],
    },
]
TOML = 'name = "imports"\n[metrics.faithfulness]\nscale = "binary"\n[metrics.answer_relevancy]\nscale = "binary"\n'

DEEPEVAL_SCRIPT = textwrap.dedent("""
    import json, sys
    from deepeval import evaluate
    from deepeval.evaluate.configs import AsyncConfig, CacheConfig, DisplayConfig, ErrorConfig
    from deepeval.metrics import AnswerRelevancyMetric, FaithfulnessMetric
    from deepeval.models import LocalModel
    from deepeval.test_case import LLMTestCase

    url, model, cases = sys.argv[1], sys.argv[2], json.load(open(sys.argv[3]))
    judge = LocalModel(model=model, base_url=url, api_key="scripted")
    test_cases = [LLMTestCase(input=c["input"], actual_output=c["actual_output"],
                              retrieval_context=c["retrieval_context"], **({"name": c["name"]} if c["name"] else {}))
                  for c in cases]
    evaluate(test_cases, [FaithfulnessMetric(model=judge, threshold=0.7),
                          AnswerRelevancyMetric(model=judge, threshold=0.5)],
             async_config=AsyncConfig(run_async=False), display_config=DisplayConfig(print_results=False,
             show_indicator=False), error_config=ErrorConfig(ignore_errors=True),
             cache_config=CacheConfig(write_cache=False, use_cache=False))
""")


def deepeval_run(tmp_path: Path, url: str, model: str, cases=CASES) -> Path:
    """A test run written by DeepEval's own evaluate() (in its own process: DeepEval keeps global state)."""
    work = tmp_path / f"deepeval-{model}"
    work.mkdir()
    (work / "cases.json").write_text(json.dumps(cases))
    (work / "run.py").write_text(DEEPEVAL_SCRIPT)
    env = {
        **os.environ,
        "DEEPEVAL_RESULTS_FOLDER": str(work / "results"),
        "DEEPEVAL_TELEMETRY_OPT_OUT": "1",
        "DEEPEVAL_DISABLE_DOTENV": "1",
        "CONFIDENT_TRACING_ENABLED": "NO",
    }
    done = subprocess.run(
        [sys.executable, "run.py", url, model, "cases.json"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    [path] = sorted((work / "results").glob("test_run_*.json"))
    return path


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Two judges on one endpoint, DeepEval's test run of each: a careful and a lenient one; the careful
    one's Oslo calls get malformed replies, so DeepEval records its errors."""
    from tests.servers.judge_server import JudgeServer

    tmp = tmp_path_factory.mktemp("runs")
    with JudgeServer() as server:
        lenient = deepeval_run(tmp, server.url, "llama-lenient")
        server.inject("Oslo", "malformed", times=1000)
        careful = deepeval_run(tmp, server.url, "qwen-careful")
    return {"careful": careful, "lenient": lenient}


def campaign(tmp_path: Path) -> Path:
    return write_campaign(tmp_path / "campaign", TOML, "case_id,metric,rater,rater_kind,value\n")


def test_deepeval_runs_import_as_judge_ratings_of_each_model(runs, tmp_path):
    folder = campaign(tmp_path)
    raw = {p: json.loads(path.read_text()) for p, path in runs.items()}
    doc = import_batch(folder, read_deepeval_run(runs["lenient"]))
    assert doc["cases"] == {"added": 3, "unchanged": 0, "completed": 0}
    assert doc["ratings"]["new"] == 6 and doc["by_metric"] == {
        "faithfulness": {"human": 0, "judge": 3},
        "answer_relevancy": {"human": 0, "judge": 3},
    }
    doc = import_batch(folder, read_deepeval_run(runs["careful"]))
    assert doc["cases"]["unchanged"] == 3 and doc["ratings"]["new"] == 6
    c = load_campaign(folder)
    # the judges are named after DeepEval's evaluation model, and score differently (the lenient one passes all)
    judged = c.ratings[c.ratings["rater_kind"] == "judge"]
    assert set(judged["rater"]) == {"llama-lenient (Local Model)", "qwen-careful (Local Model)"}
    assert set(judged["source"]) == {"deepeval"} and set(judged["file"]) == {"imported_ratings.csv"}
    # every value is DeepEval's own, and the ids: named test cases keep their name, the unnamed gets a content id
    for _persona, data in raw.items():
        for tc in data["testCases"]:
            case_id = (
                tc["name"] if tc["name"] in ("paris", "rome") else next(k for k in c.cases if k.startswith("case-"))
            )
            for m in tc["metricsData"]:
                row = judged[
                    (judged["case_id"] == case_id)
                    & (judged["rater"] == m["evaluationModel"])
                    & (judged["metric"] == m["name"].lower().replace(" ", "_"))
                ]
                assert len(row) == 1
                if m.get("error"):
                    assert row["value"].isna().all() and row["error"].iloc[0] == m["error"]
                else:
                    assert row["value"].iloc[0] == pytest.approx(m["score"]) and row["error"].iloc[0] == ""
    lenient = judged[judged["rater"].str.startswith("llama")]
    careful = judged[judged["rater"].str.startswith("qwen")]
    assert (lenient["value"] == 1).all()
    faith = careful[(careful["metric"] == "faithfulness")].set_index("case_id")["value"]
    assert faith["paris"] == 1 and faith["rome"] == pytest.approx(0.5)  # "in Spain" is not in the context
    failed = careful[careful["value"].isna()]
    assert len(failed) == 2 and (failed["case_id"].str.startswith("case-")).all()  # Oslo's malformed replies
    # what DeepEval said of the judge: its model, the family told from it, the metric's threshold
    facts = c.imported_raters["qwen-careful (Local Model)"]
    assert facts["family"] == "qwen" and facts["thresholds"] == {"answer_relevancy": [0.5], "faithfulness": [0.7]}
    assert c.rater("qwen-careful (Local Model)").family == "qwen"


def test_importing_twice_changes_nothing_and_a_new_run_is_a_revision(runs, tmp_path):
    folder = campaign(tmp_path)
    import_batch(folder, read_deepeval_run(runs["careful"]))
    files = {p.name: p.read_bytes() for p in folder.iterdir() if p.suffix in (".csv", ".jsonl")}
    again = import_batch(folder, read_deepeval_run(runs["careful"]))
    assert again["ratings"] == {
        "new": 0,
        "changed": 0,
        "unchanged": 6,
        "restored": 0,
        "withdrawn": 0,
        "absent_kept": 0,
        "absent_held": 0,
    }
    assert {p.name: p.read_bytes() for p in folder.iterdir() if p.suffix in (".csv", ".jsonl")} == files
    # a later test run of the same judge with another score: a new revision, the old one kept in the store
    data = json.loads(runs["careful"].read_text())
    data["testCases"][0]["metricsData"][0]["score"] = 0.25
    later = tmp_path / "test_run_later.json"
    later.write_text(json.dumps(data))
    doc = import_batch(folder, read_deepeval_run(later))
    assert doc["ratings"]["changed"] == 1 and doc["ratings"]["unchanged"] == 5
    store = ImportStore(folder)
    case_id = data["testCases"][0]["name"] if data["testCases"][0]["name"] in ("paris", "rome") else None
    history = [
        h
        for h in store.history()
        if h["metric"] == "faithfulness"
        and h["rater"].startswith("qwen")
        and (case_id is None or h["case_id"] == case_id)
    ]
    store.close()
    assert [h["source_id"].split("#")[0] for h in history].count("test_run_later.json") == 1
    assert len(store_rows := [h for h in history if h["case_id"] == history[-1]["case_id"]]) == 2
    assert store_rows[-1]["value"] == 0.25
    c = load_campaign(folder)
    assert 0.25 in c.ratings["value"].tolist()


def test_dry_run_writes_nothing_and_says_what_it_would_do(runs, tmp_path):
    folder = campaign(tmp_path)
    before = sorted(p.name for p in folder.iterdir())
    doc = import_batch(folder, read_deepeval_run(runs["careful"]), dry_run=True)
    assert doc["dry_run"] and doc["ratings"]["new"] == 6 and doc["cases"]["added"] == 3 and doc["files"] == []
    assert sorted(p.name for p in folder.iterdir()) == before


def test_unmatched_metrics_are_skipped_with_the_map_to_give(runs, tmp_path):
    folder = write_campaign(
        tmp_path / "campaign",
        'name = "x"\n[metrics.grounded]\nscale = "binary"\n',
        "case_id,metric,rater,rater_kind,value\n",
    )
    doc = import_batch(folder, read_deepeval_run(runs["lenient"]))
    assert doc["ratings"]["new"] == 0
    reasons = [g["reason"] for g in doc["skipped_by_reason"]]
    assert any(
        "'Faithfulness' is none of the campaign's (grounded): give --map 'Faithfulness=METRIC'" in r for r in reasons
    )
    doc = import_batch(folder, read_deepeval_run(runs["lenient"]), metric_map={"Faithfulness": "grounded"})
    assert doc["ratings"]["new"] == 3 and doc["by_metric"] == {"grounded": {"human": 0, "judge": 3}}


def test_a_rating_another_file_gives_is_refused_not_shadowed(runs, tmp_path):
    lenient = read_deepeval_run(runs["lenient"])
    rater = lenient.ratings[0].rater
    folder = write_campaign(
        tmp_path / "campaign",
        TOML,
        pd.DataFrame(
            [{"case_id": "paris", "metric": "faithfulness", "rater": rater, "rater_kind": "judge", "value": 0}]
        ),
        [
            {
                "case_id": "paris",
                "input": CASES[0]["input"],
                "actual_output": CASES[0]["actual_output"],
                "retrieval_context": CASES[0]["retrieval_context"],
            }
        ],
    )
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    with pytest.raises(
        CampaignError, match=r"already rates case 'paris' on metric 'faithfulness' in ratings.csv \(line 2\)"
    ):
        import_batch(folder, lenient)
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before
    # under another name it comes in beside it
    doc = import_batch(folder, lenient, rater="lenient-judge")
    assert doc["ratings"]["new"] == 6 and list(doc["raters"]) == ["lenient-judge"]
    assert load_campaign(folder).imported_raters["lenient-judge"]["model"] == rater


def test_a_case_changed_in_the_source_is_refused(runs, tmp_path):
    folder = campaign(tmp_path)
    import_batch(folder, read_deepeval_run(runs["careful"]))
    data = json.loads(runs["careful"].read_text())
    named = next(tc for tc in data["testCases"] if tc["name"] == "paris")
    named["actualOutput"] = "Paris is in Texas."
    changed = tmp_path / "test_run_changed.json"
    changed.write_text(json.dumps(data))
    with pytest.raises(CampaignError, match="case paris is already in the campaign with other content"):
        import_batch(folder, read_deepeval_run(changed))


@pytest.mark.parametrize(
    "text, message",
    [
        ("{", "not valid JSON"),
        ("[1, 2]", "not a DeepEval test run"),
        ('{"testCases": [{"name": "x"}]}', "testCases\\[0\\]: a case without input"),
        (
            '{"testCases": [{"input": "q", "metricsData": [{"name": "F", "score": "high"}]}]}',
            "field 'testCases\\[0\\].metricsData\\[0\\].score': Input should be a valid number \\(found 'high'\\)",
        ),
        (
            '{"testCases": [{"input": "q", "metricsData": [{"name": "F", "score": 1, "evaluationModel": 3}]}]}',
            "field 'testCases\\[0\\].metricsData\\[0\\].evaluationModel': Input should be a valid string",
        ),
        (
            '{"testCases": [{"input": "q", "metricsData": [{"name": "F", "score": 1, "threshold": []}]}]}',
            "metricsData\\[0\\].threshold': Input should be a valid number",
        ),
        ('{"testCases": [' * 300 + "]" * 300, "nested deeper than 200 levels"),
        ("\ufeff[1]", "not a DeepEval test run"),
    ],
)
def test_bad_test_runs_are_named(tmp_path, text, message):
    path = tmp_path / "run.json"
    path.write_text(text)
    with pytest.raises(CampaignError, match=message):
        read_deepeval_run(path)


RAGAS_SCRIPT = textwrap.dedent("""
    import sys
    from openai import AsyncOpenAI
    from ragas import EvaluationDataset, evaluate
    from ragas.llms import llm_factory
    from ragas.metrics import Faithfulness

    url, model, out = sys.argv[1], sys.argv[2], sys.argv[3]
    llm = llm_factory(model, client=AsyncOpenAI(base_url=url, api_key="scripted"))
    rows = [{"user_input": "Where is Paris located?", "response": "Paris is located in France.",
             "retrieved_contexts": ["Paris is located in France.", "Bananas grow in warm places."]},
            {"user_input": "Where is Rome located?", "response": "Rome is located in Spain. Rome is old.",
             "retrieved_contexts": ["Rome is located in Italy.", "Rome is old."]}]
    result = evaluate(EvaluationDataset.from_list(rows), metrics=[Faithfulness(llm=llm)], show_progress=False)
    frame = result.to_pandas()
    frame.to_csv(out + ".csv", index=False)
    frame.to_parquet(out + ".parquet")
""")


@pytest.fixture(scope="module")
def ragas_files(tmp_path_factory):
    """RAGAS's evaluate() of two samples by a careful judge, saved by to_pandas() as CSV and Parquet."""
    from tests.servers.judge_server import JudgeServer

    work = tmp_path_factory.mktemp("ragas")
    (work / "run.py").write_text(RAGAS_SCRIPT)
    with JudgeServer() as server:
        done = subprocess.run(
            [sys.executable, "run.py", server.url, "qwen-careful", "result"],
            cwd=work,
            env={**os.environ, "RAGAS_DO_NOT_TRACK": "true"},
            capture_output=True,
            text=True,
            timeout=300,
        )
    assert done.returncode == 0, done.stderr[-3000:]
    return work / "result.csv", work / "result.parquet"


def test_ragas_results_import_from_csv_and_parquet_alike(ragas_files, tmp_path):
    csv_path, parquet_path = ragas_files
    frame = pd.read_csv(csv_path)
    assert "faithfulness" in frame.columns  # what RAGAS wrote
    with pytest.raises(ValueError, match="does not record its judge"):
        read_ragas_result(csv_path, rater="")
    folder = campaign(tmp_path)
    doc = import_batch(folder, read_ragas_result(csv_path, rater="ragas-qwen", model="qwen-careful"))
    assert doc["ratings"]["new"] == 2 and doc["cases"]["added"] == 2
    # the Parquet file is the same result: the same cases and ratings, nothing new
    doc = import_batch(folder, read_ragas_result(parquet_path, rater="ragas-qwen", model="qwen-careful"))
    assert doc["cases"]["unchanged"] == 2 and doc["ratings"]["unchanged"] == 2 and doc["ratings"]["new"] == 0
    c = load_campaign(folder)
    scores = sorted(c.ratings["value"].tolist())
    assert scores == pytest.approx(sorted(frame["faithfulness"].tolist()))
    assert scores == pytest.approx([0.5, 1.0])
    assert all(case["retrieval_context"] for case in c.cases.values())
    assert c.imported_raters["ragas-qwen"]["family"] == "qwen"


def test_a_ragas_nan_is_a_failed_rating_saying_so(tmp_path):
    path = tmp_path / "result.csv"
    pd.DataFrame({"user_input": ["q?", "r?"], "response": ["a.", "b."], "faithfulness": [0.5, float("nan")]}).to_csv(
        path
    )  # with the index, as to_csv writes by default
    folder = campaign(tmp_path)
    import_batch(folder, read_ragas_result(path, rater="r"))
    ratings = load_campaign(folder).ratings
    failed = ratings[ratings["value"].isna()]
    assert len(failed) == 1 and "RAGAS recorded no score" in failed["error"].iloc[0]


def test_the_command_line_imports_says_what_it_did_and_refuses_bad_input(runs, ragas_files, tmp_path):
    from click.testing import CliRunner

    from calibrate.cli import main

    folder = campaign(tmp_path)
    runner = CliRunner()
    dry = runner.invoke(main, ["import", "deepeval", str(folder), str(runs["careful"]), "--dry-run"])
    assert dry.exit_code == 0, dry.output
    assert "dry run, nothing written: would import" in dry.output and "6 new" in dry.output
    assert not (folder / "imported_ratings.csv").exists()
    done = runner.invoke(main, ["import", "deepeval", str(folder), str(runs["careful"]), "--json"])
    assert done.exit_code == 0 and json.loads(done.output)["ratings"]["new"] == 6
    again = runner.invoke(main, ["import", "deepeval", str(folder), str(runs["careful"])])
    assert "unchanged, nothing to do" in again.output and "ratings: 6 unchanged" in again.output
    bad_map = runner.invoke(
        main, ["import", "ragas", str(folder), str(ragas_files[0]), "--rater", "r", "--map", "faithfulness=nothing"]
    )
    assert bad_map.exit_code == 2 and "the campaign has no metric 'nothing'" in bad_map.output
    skipped = runner.invoke(
        main,
        [
            "import",
            "ragas",
            str(folder),
            str(ragas_files[0]),
            "--rater",
            "r",
            "--map",
            "faithfulness=answer_relevancy",
            "--dry-run",
        ],
    )
    assert skipped.exit_code == 0 and "2 new" in skipped.output
    no_campaign = runner.invoke(main, ["import", "deepeval", str(tmp_path / "nowhere"), str(runs["careful"])])
    assert no_campaign.exit_code == 2 and "the campaign folder does not exist" in no_campaign.output
