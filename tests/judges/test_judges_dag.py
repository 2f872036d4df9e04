"""calibrate judge with DeepEval's DAG metric: the user's tree, written by DeepEval, scored per case."""

import warnings

import pandas as pd
import pytest

from calibrate import CampaignError, load_campaign
from calibrate.judges.runner import JudgeSetupError, run_judges
from tests.conftest import write_campaign

CASES = [{"case_id": "france", "input": "Where is Paris?", "actual_output": "Paris is in France. It is big."},
         {"case_id": "spain", "input": "Where is Paris?", "actual_output": "Paris is in Spain."},
         {"case_id": "rome", "input": "Where is Paris?", "actual_output": "Rome is in Italy."}]


def write_dag(path) -> None:
    """The tree a user builds with DeepEval and saves with its own serialisation."""
    from deepeval.metrics.dag import (BinaryJudgementNode, DeepAcyclicGraph, NonBinaryJudgementNode, TaskNode,
                                      VerdictNode)
    from deepeval.test_case import SingleTurnParams

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        country = NonBinaryJudgementNode(criteria="Which country does the answer put Paris in?", children=[
            VerdictNode(verdict="France", score=10), VerdictNode(verdict="Spain", score=3)],
            evaluation_params=[SingleTurnParams.ACTUAL_OUTPUT])
        mentions = BinaryJudgementNode(criteria="Does the answer mention 'Paris'?", children=[
            VerdictNode(verdict=False, score=0), VerdictNode(verdict=True, child=country)])
        task = TaskNode(instructions="Extract the first sentence of the actual output.", output_label="answer",
                        children=[mentions], evaluation_params=[SingleTurnParams.ACTUAL_OUTPUT])
    path.write_text(DeepAcyclicGraph(root_nodes=[task]).to_json())


def folder_for(tmp_path, url, dag="capital.dag.json"):
    config = f"""
name = "dag"
[metrics.capital]
scale = "continuous"
human_pass = 0.5
[judges.dag-llama]
library = "deepeval"
metric = "dag"
into = "capital"
model = {{ provider = "openai", name = "llama-scripted", base_url = "{url}" }}
settings = {{ dag = "{dag}" }}
"""
    humans = pd.DataFrame({"case_id": [c["case_id"] for c in CASES], "metric": "capital", "rater": "ann",
                           "rater_kind": "human", "value": [1.0, 0.0, 0.0]})
    folder = write_campaign(tmp_path / "campaign", config, humans, CASES)
    write_dag(folder / "capital.dag.json")
    return folder


def test_the_users_tree_scores_each_case(tmp_path, server):
    folder = folder_for(tmp_path, server.url)
    campaign = load_campaign(folder)
    assert campaign.judges["dag-llama"].fields == ("actual_output",)
    doc = run_judges(campaign)
    assert {r["case_id"]: r["value"] for r in doc["ratings"]} == {"france": 1.0, "spain": 0.3, "rome": 0.0}
    assert doc["judges"][0]["failed"] == 0
    # task, binary judgement, then the non-binary judgement where Paris is named; and a reason each
    assert doc["judges"][0]["calls"] == (3 + 1) + (3 + 1) + (2 + 1)


def test_the_cache_follows_the_tree_not_its_file(tmp_path, server):
    folder = folder_for(tmp_path, server.url)
    run_judges(load_campaign(folder))
    write_dag(folder / "copy.dag.json")  # the same tree, written again: new random node ids, new name
    toml = (folder / "campaign.toml").read_text()
    (folder / "campaign.toml").write_text(toml.replace("capital.dag.json", "copy.dag.json"))
    server.counts.clear()
    assert run_judges(load_campaign(folder))["judges"][0]["from_cache"] == 3 and server.counts["requests"] == 0
    changed = (folder / "copy.dag.json").read_text().replace('"score": 3', '"score": 4')
    (folder / "copy.dag.json").write_text(changed)
    doc = run_judges(load_campaign(folder))
    assert doc["judges"][0]["scored"] == 3
    assert {r["case_id"]: r["value"] for r in doc["ratings"]}["spain"] == 0.4


@pytest.mark.parametrize("content, message", [(None, "cannot read the DAG file"),
                                               ("{not json", "is not JSON"),
                                               ('{"graph": {}}', "is not a DeepEval DAG document")])
def test_a_bad_dag_file_is_a_configuration_error(tmp_path, server, content, message):
    folder = folder_for(tmp_path, server.url, dag="broken.json")
    if content is not None:
        (folder / "broken.json").write_text(content)
    with pytest.raises(CampaignError, match=message) as raised:
        load_campaign(folder)
    assert "judges.dag-llama.settings.dag" in str(raised.value)


def test_a_tree_deepeval_refuses_is_reported_before_any_call(tmp_path, server):
    folder = folder_for(tmp_path, server.url)
    text = (folder / "capital.dag.json").read_text().replace('"BinaryJudgementNode"', '"NoSuchNode"')
    (folder / "capital.dag.json").write_text(text)
    with pytest.raises(JudgeSetupError, match="DeepEval refuses these DAG"):
        run_judges(load_campaign(folder))
    assert server.counts["requests"] == 0
