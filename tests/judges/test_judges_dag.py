"""calibrate judge with DeepEval's DAG metric: the user's tree, written by DeepEval, scored per case."""

import warnings

import pandas as pd
import pytest

from calibrate import CampaignError, load_campaign
from calibrate.judges.runner import JudgeSetupError, run_judges
from tests.conftest import write_campaign

CASES = [
    {"case_id": "france", "input": "Where is Paris?", "actual_output": "Paris is in France. It is big."},
    {"case_id": "spain", "input": "Where is Paris?", "actual_output": "Paris is in Spain."},
    {"case_id": "rome", "input": "Where is Paris?", "actual_output": "Rome is in Italy."},
]


def write_dag(path) -> None:
    """The tree a user builds with DeepEval and saves with its own serialisation."""
    from deepeval.metrics.dag import (
        BinaryJudgementNode,
        DeepAcyclicGraph,
        NonBinaryJudgementNode,
        TaskNode,
        VerdictNode,
    )
    from deepeval.test_case import SingleTurnParams

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        country = NonBinaryJudgementNode(
            criteria="Which country does the answer put Paris in?",
            children=[VerdictNode(verdict="France", score=10), VerdictNode(verdict="Spain", score=3)],
            evaluation_params=[SingleTurnParams.ACTUAL_OUTPUT],
        )
        mentions = BinaryJudgementNode(
            criteria="Does the answer mention 'Paris'?",
            children=[VerdictNode(verdict=False, score=0), VerdictNode(verdict=True, child=country)],
        )
        task = TaskNode(
            instructions="Extract the first sentence of the actual output.",
            output_label="answer",
            children=[mentions],
            evaluation_params=[SingleTurnParams.ACTUAL_OUTPUT],
        )
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
    humans = pd.DataFrame(
        {
            "case_id": [c["case_id"] for c in CASES],
            "metric": "capital",
            "rater": "ann",
            "rater_kind": "human",
            "value": [1.0, 0.0, 0.0],
        }
    )
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


@pytest.mark.parametrize(
    "content, message",
    [
        (None, "cannot read the DAG file"),
        ("{not json", "is not JSON"),
        ('{"graph": {}}', "is not a DeepEval DAG document"),
    ],
)
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


# Issue 24: the DAG file (a person's own file) is read through its declared shape: a damaged tree is an
# error naming the node and field, not a Python exception's name ("KeyError: 'zz'", "AttributeError: 'list'
# object has no attribute 'values'").
import json  # noqa: E402
import os  # noqa: E402
import re  # noqa: E402

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

PYTHON_ERROR = re.compile(r"\b(KeyError|TypeError|AttributeError|IndexError|RecursionError)\b")


@pytest.mark.parametrize(
    "document, words",
    [
        (
            {"nodes": {"a": {"type": "BinaryJudgementNode", "criteria": "c", "children": ["zz"]}}},
            "field 'nodes.a.children[0]': no node 'zz'",
        ),
        ({"nodes": {"a": {"type": "VerdictNode", "verdict": True, "child": {"type": "node"}}}}, "nodes.a.child.ref"),
        ({"nodes": [1]}, "field 'nodes'"),
        ({"nodes": {"a": {"type": "X", "children": "b"}}}, "nodes.a.children"),
        ({"nodes": {"a": 3}}, "nodes.a"),
        ({"nodes": {"a": {"type": "X", "children": ["b"]}, "b": {"type": "X", "children": ["a"]}}}, "has no root node"),
    ],
)
def test_a_damaged_dag_names_the_node_and_field(tmp_path, document, words):
    folder = folder_for(tmp_path, "http://127.0.0.1:9", dag="broken.json")
    (folder / "broken.json").write_text(json.dumps(document))
    with pytest.raises(CampaignError) as raised:
        load_campaign(folder)
    text = str(raised.value)
    assert words in text and "judges.dag-llama.settings.dag" in text and not PYTHON_ERROR.search(text), text


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-3, 3)
    | st.text(max_size=6)
    | st.sampled_from(["node", "a", "b", "VerdictNode"]),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from(["type", "ref", "children", "child", "nodes", "a", "b"]), inner, max_size=3)
    ),
    max_leaves=10,
)


@settings(
    max_examples=int(os.environ.get("ATTACK_EXAMPLES", 200)),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(data=st.data())
def test_any_edit_of_a_dag_loads_or_names_what_is_wrong(tmp_path_factory, data):
    folder = folder_for(tmp_path_factory.mktemp("dag"), "http://127.0.0.1:9")
    document = json.loads((folder / "capital.dag.json").read_text())
    node = data.draw(st.sampled_from(sorted(document["nodes"])))
    key = data.draw(st.sampled_from(["children", "child", "type", "ref", None]))
    value = data.draw(json_values)
    if key is None:
        document["nodes"][node] = value
    else:
        document["nodes"][node][key] = value
    (folder / "capital.dag.json").write_text(json.dumps(document))
    try:
        load_campaign(folder)
    except CampaignError as exc:
        assert "judges.dag-llama.settings.dag" in str(exc) and not PYTHON_ERROR.search(str(exc)), str(exc)
