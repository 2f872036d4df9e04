"""DeepEval DAG judges: the decision tree a DAG judge names (``settings.dag = "FILE.json"``, as
DeepEval's ``DeepAcyclicGraph.to_json()`` writes it), read from the campaign folder, checked for shape
(:func:`dag_problems`) and made into nested nodes without their random ids (:func:`dag_tree`, for the
cache key).
"""

from __future__ import annotations

import json
from pathlib import Path, PurePath
from typing import Any, Literal

from pydantic import JsonValue

from calibrate.base.documents import DocumentError, Schema, read_json
from calibrate.base.documents import check as check_document
from calibrate.base.errors import Problem
from calibrate.base.names import OutsideFolder, UnsafeName, inside

__all__ = [
    "DAG_EXPECTED",
    "DagDocument",
    "DagLinks",
    "dag_problems",
    "dag_tree",
    "evaluation_params",
    "load_dag",
]

#: what a DAG file holds
DAG_EXPECTED = '{"nodes": {...}} as DeepAcyclicGraph.to_json() writes it'


def evaluation_params(value: Any) -> set[str]:
    """Every case field named by an ``evaluation_params`` anywhere in a DAG document."""
    if isinstance(value, dict):
        found = set(value.get("evaluation_params") or [])
        return found.union(*(evaluation_params(v) for v in value.values()))
    if isinstance(value, list):
        return set().union(*(evaluation_params(v) for v in value))
    return set()


def dag_tree(document: dict[str, Any]) -> list[Any]:
    """A DAG document (``{"nodes": {id: node}}``) as nested nodes from its roots, ids left out.

    Examples
    --------
    >>> dag_tree({"nodes": {"b": {"type": "VerdictNode", "verdict": True, "score": 1},
    ...                     "a": {"type": "BinaryJudgementNode", "criteria": "c", "children": ["b"]}}})
    [{'children': [{'score': 1, 'type': 'VerdictNode', 'verdict': True}], 'criteria': 'c', 'type': 'BinaryJudgementNode'}]
    """
    nodes = document["nodes"]

    def nest(node_id: str, depth: int = 0) -> dict[str, Any]:
        if depth > len(nodes):
            raise ValueError("the DAG has a cycle")
        node = dict(nodes[node_id])
        if node.get("children") is not None:
            node["children"] = [nest(child, depth + 1) for child in node["children"]]
        child = node.get("child")
        if isinstance(child, dict) and child.get("type") == "node":
            node["child"] = nest(child["ref"], depth + 1)
        return dict(sorted(node.items()))

    referenced = {c for n in nodes.values() for c in n.get("children") or []}
    referenced |= {
        n["child"]["ref"]
        for n in nodes.values()
        if isinstance(n.get("child"), dict) and n["child"].get("type") == "node"
    }
    return [
        nest(node_id)
        for node_id in sorted(nodes, key=lambda i: json.dumps(nodes[i], sort_keys=True))
        if node_id not in referenced
    ]


class DagDocument(Schema):
    """A DeepEval DAG file (``DeepAcyclicGraph.to_json()``): its nodes by id, each kept whole for
    DeepEval, their links to other nodes (:class:`DagLinks`) checked by :func:`dag_problems`."""

    nodes: dict[str, dict[str, JsonValue]]


class DagLinks(Schema):
    """How a node names others: ``children`` (node ids), or a ``child`` that is a node reference."""

    children: list[str] | None = None
    child: JsonValue = None


class _NodeRef(Schema):
    type: Literal["node"]
    ref: str


def dag_problems(document: Any, *, source: str) -> list[Problem]:
    """What in a DAG document is not the shape :func:`dag_tree` reads, each naming its field
    (``nodes.a.children[0]``): a node that is not an object, children that are not node ids, a node
    named that the document does not have.

    Examples
    --------
    >>> [p.field for p in dag_problems({"nodes": {"a": {"children": ["b"]}, "c": 3}}, source="dag.json")]
    ['nodes.c']
    >>> print(*dag_problems({"nodes": {"a": {"children": ["b"]}}}, source="dag.json"))
    dag.json, field 'nodes.a.children[0]': no node 'b' in the document; expected {"nodes": {...}} as DeepAcyclicGraph.to_json() writes it
    """
    shaped, problems = check_document(document, DagDocument, source=source, expected=DAG_EXPECTED)
    if shaped is None:
        return problems
    for node_id, node in shaped.nodes.items():
        where = f"nodes.{node_id}"
        links, found = check_document(node, DagLinks, source=source, expected=DAG_EXPECTED, field=where)
        problems += found
        if links is None:
            continue
        named = [(f"{where}.children[{i}]", child) for i, child in enumerate(links.children or [])]
        if isinstance(links.child, dict) and links.child.get("type") == "node":
            ref, found = check_document(
                links.child, _NodeRef, source=source, expected=DAG_EXPECTED, field=f"{where}.child"
            )
            problems += found
            named += [(f"{where}.child.ref", ref.ref)] if ref is not None else []
        problems += [
            Problem(source, f"no node {target!r} in the document", field=path, expected=DAG_EXPECTED)
            for path, target in named
            if target not in shaped.nodes
        ]
    return problems


def load_dag(
    settings: dict[str, Any], folder: Path, where: str, file: str, problems: list[Problem]
) -> dict[str, Any] | None:
    """The DAG file a judge names, relative to the campaign folder, checked for shape."""
    name = settings.get("dag")
    if not isinstance(name, str):
        problems.append(
            Problem(
                file,
                "a DAG judge needs its tree",
                field=f"{where}.settings.dag",
                value=name,
                expected='dag = "FILE.json", written by DeepEval: DeepAcyclicGraph.to_json()',
            )
        )
        return None
    try:  # a file of the campaign folder: a name leading elsewhere is refused, never read
        path = inside(folder, *PurePath(name).parts)
    except (UnsafeName, OutsideFolder):
        problems.append(
            Problem(
                file,
                "the DAG file must be inside the campaign folder",
                field=f"{where}.settings.dag",
                value=name,
                expected='a path relative to the campaign folder, such as "dag.json"',
            )
        )
        return None
    try:
        if not path.is_file():
            raise FileNotFoundError(2, "No such file or directory")
        try:  # size and depth limited: a JSON object of anything, its shape checked by dag_problems
            document = read_json(path, dict[str, Any], expected="a DeepEval DAG document")
        except DocumentError as exc:
            raise json.JSONDecodeError("; ".join(p.message for p in exc.problems[:3]), "", 0) from None
        shape = dag_problems(document, source=str(path))
        if shape:
            raise ValueError(
                "; ".join(f"field '{p.field}': {p.message}" if p.field else p.message for p in shape[:5])
                + (f"; and {len(shape) - 5} more" if len(shape) > 5 else "")
            )
        tree = dag_tree(document)
    except OSError as exc:
        why = f"cannot read the DAG file {path}: {exc.strerror}"
    except json.JSONDecodeError as exc:
        why = f"the DAG file {path} is not JSON: {exc.msg}"
    except RecursionError:
        why = f"the DAG file {path} nests its nodes too deeply"
    except ValueError as exc:  # its shape (dag_problems), or a cycle (dag_tree)
        why = f"the DAG file {path} is not a DeepEval DAG document ({exc})"
    else:
        if tree:
            return document
        why = f"the DAG file {path} has no root node"
    problems.append(
        Problem(
            file,
            why,
            field=f"{where}.settings.dag",
            value=name,
            expected='{"nodes": {...}} as DeepAcyclicGraph.to_json() writes it',
        )
    )
    return None
