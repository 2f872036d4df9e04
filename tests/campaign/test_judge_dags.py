"""DAG judges' trees: the fields their nodes read, the tree without its random ids, the shape checked
(dag_problems, each problem naming its node and field), and the file a judge names read from the campaign
folder (load_dag) or refused with the reason. The judge scoring with one: tests/judges/test_judges_dag.py."""

from __future__ import annotations

import json

import pytest

from calibrate.base.errors import Problem
from calibrate.campaign.judge_dags import DAG_EXPECTED, dag_problems, dag_tree, evaluation_params, load_dag

#: a small tree as DeepEval writes it: a task node, a binary judgement under it, two verdicts
DAG = {
    "nodes": {
        "id-task": {
            "type": "TaskNode",
            "instructions": "first sentence",
            "evaluation_params": ["actual_output"],
            "children": ["id-binary"],
        },
        "id-binary": {
            "type": "BinaryJudgementNode",
            "criteria": "mentions Paris?",
            "evaluation_params": ["input"],
            "children": ["id-no", "id-yes"],
        },
        "id-no": {"type": "VerdictNode", "verdict": False, "score": 0},
        "id-yes": {"type": "VerdictNode", "verdict": True, "score": 10},
    }
}


def renamed(document: dict, prefix: str) -> dict:
    """The same tree with other node ids, as DeepEval writes each time it saves."""
    text = json.dumps(document)
    for node_id in document["nodes"]:
        text = text.replace(f'"{node_id}"', f'"{prefix}{node_id}"')
    return json.loads(text)


def test_evaluation_params_are_gathered_from_every_node():
    assert evaluation_params(DAG) == {"actual_output", "input"}
    assert evaluation_params({"nodes": {}}) == set() and evaluation_params([{"evaluation_params": None}]) == set()


def test_the_tree_is_nested_from_its_root_without_ids():
    (root,) = dag_tree(DAG)
    assert root["type"] == "TaskNode" and root["children"][0]["type"] == "BinaryJudgementNode"
    assert [v["verdict"] for v in root["children"][0]["children"]] == [False, True]
    assert "id-task" not in json.dumps(root)
    assert dag_tree(renamed(DAG, "x")) == dag_tree(DAG)


def test_a_verdicts_child_node_is_nested_and_a_cycle_is_refused():
    document = {
        "nodes": {
            "v": {"type": "VerdictNode", "verdict": True, "child": {"type": "node", "ref": "n"}},
            "n": {"type": "VerdictNode", "verdict": "France", "score": 10},
            "b": {"type": "BinaryJudgementNode", "children": ["v"]},
        }
    }
    (root,) = dag_tree(document)
    assert root["children"][0]["child"] == {"score": 10, "type": "VerdictNode", "verdict": "France"}
    loop = {"nodes": {"a": {"children": ["b"]}, "b": {"children": ["a"]}, "r": {"children": ["a"]}}}
    with pytest.raises(ValueError, match="the DAG has a cycle"):
        dag_tree(loop)


def test_a_well_shaped_tree_has_no_problems():
    assert dag_problems(DAG, source="dag.json") == []


@pytest.mark.parametrize(
    ("document", "fields", "message"),
    [
        ({"nodes": {"a": {"children": ["zz"]}}}, ["nodes.a.children[0]"], "no node 'zz' in the document"),
        ({"nodes": {"a": {"child": {"type": "node", "ref": "zz"}}}}, ["nodes.a.child.ref"], "no node 'zz'"),
        ({"nodes": {"a": {"child": {"type": "node"}}}}, ["nodes.a.child.ref"], ""),
        ({"nodes": {"a": 3}}, ["nodes.a"], ""),
        ({"nodes": {"a": {"children": "b"}}}, ["nodes.a.children"], ""),
        ({"nodes": [1]}, ["nodes"], ""),
        ({"graph": {}}, None, ""),
    ],
)
def test_a_damaged_tree_names_the_node_and_field(document, fields, message):
    problems = dag_problems(document, source="dag.json")
    assert problems and all(p.file == "dag.json" and p.expected == DAG_EXPECTED for p in problems)
    if fields is not None:
        assert [p.field for p in problems] == fields
    assert message in problems[0].message


def loaded(tmp_path, name, content=None) -> tuple[dict | None, list[Problem]]:
    if content is not None:
        (tmp_path / "dag.json").write_text(content if isinstance(content, str) else json.dumps(content))
    problems: list[Problem] = []
    return load_dag({"dag": name}, tmp_path, "judges.d", "campaign.toml", problems), problems


def test_a_dag_file_of_the_folder_is_read(tmp_path):
    document, problems = loaded(tmp_path, "dag.json", DAG)
    assert problems == [] and document == DAG


@pytest.mark.parametrize(
    ("name", "content", "why"),
    [
        (None, None, "a DAG judge needs its tree"),
        ("../dag.json", None, "the DAG file must be inside the campaign folder"),
        ("/etc/passwd", None, "the DAG file must be inside the campaign folder"),
        ("missing.json", None, "cannot read the DAG file"),
        ("dag.json", "{not json", "is not JSON"),
        (
            "dag.json",
            {"nodes": {"a": {"children": ["zz"]}}},
            "is not a DeepEval DAG document (field 'nodes.a.children[0]'",
        ),
        ("dag.json", {"nodes": {"a": {"children": ["b"]}, "b": {"children": ["a"]}}}, "has no root node"),
        ("dag.json", {"nodes": {}}, "has no root node"),
    ],
)
def test_a_dag_file_that_cannot_serve_is_refused_with_why(tmp_path, name, content, why):
    document, problems = loaded(tmp_path, name, content)
    (problem,) = problems
    assert document is None and problem.field == "judges.d.settings.dag" and problem.file == "campaign.toml"
    assert why in problem.message, problem.message
