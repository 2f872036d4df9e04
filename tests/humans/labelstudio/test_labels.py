"""A Label Studio export file, attacked: whatever JSON it holds, a pull reads it or refuses it with a
message naming what is wrong, and never loses a label pulled before. No server needed."""

import json
import os

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from calibrate import load_campaign
from calibrate.humans.labelstudio.client import LabelStudioError, pull_file
from calibrate.humans.labelstudio.labels import LabelError
from calibrate.humans.labelstudio.store import RATINGS_FILE
from tests.conftest import write_campaign

TOML = 'name = "files"\n[metrics.faithfulness]\nscale = "binary"\n'
CASES = [{"case_id": f"c{i}", "input": f"q{i}", "actual_output": f"a{i}"} for i in range(3)]


def annotation(i: int, case: int, who: int, verdict: str = "pass") -> dict:
    return {
        "id": 100 * case + who,
        "completed_by": who,
        "project": 7,
        "updated_at": f"2026-11-0{i + 1}T10:00:00Z",
        "result": [
            {"from_name": "faithfulness", "to_name": "answer", "type": "choices", "value": {"choices": [verdict]}}
        ],
    }


def export(annotations_per_case: dict[int, list[dict]]) -> list[dict]:
    return [
        {"id": case + 1, "data": {"case_id": f"c{case}", "input": f"q{case}"}, "annotations": anns, "drafts": []}
        for case, anns in annotations_per_case.items()
    ]


GOOD = export(
    {0: [annotation(0, 0, 1), annotation(0, 0, 2, "fail")], 1: [annotation(1, 1, 1)], 2: [annotation(2, 2, 2)]}
)

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 10**12) | st.floats(allow_nan=True) | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=12,
)


def mutate(document, paths: list[list], value):
    """``document`` with the value at one path (a list of keys and indexes into it) replaced."""
    document = json.loads(json.dumps(document))
    for path in paths:
        node = document
        try:
            for step in path[:-1]:
                node = node[step]
            node[path[-1]] = json.loads(json.dumps(value))  # a copy each time: no value inside itself
        except (KeyError, IndexError, TypeError):
            pass
    return document


PATHS = [
    [0],
    [0, "id"],
    [0, "data"],
    [0, "data", "case_id"],
    [0, "annotations"],
    [0, "annotations", 0],
    [0, "annotations", 0, "id"],
    [0, "annotations", 0, "completed_by"],
    [0, "annotations", 0, "result"],
    [0, "annotations", 0, "result", 0],
    [0, "annotations", 0, "result", 0, "value"],
    [0, "annotations", 0, "result", 0, "value", "choices"],
    [0, "annotations", 0, "updated_at"],
    [0, "annotations", 0, "project"],
    [0, "annotations", 0, "was_cancelled"],
    [0, "drafts"],
    [1, "predictions"],
    [1, "annotations", 0, "result", 0, "from_name"],
    [1, "annotations", 0, "result", 0, "type"],
]


@pytest.mark.slow
@settings(
    max_examples=int(os.environ.get("ATTACK_EXAMPLES", 300)),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(paths=st.lists(st.sampled_from(PATHS), min_size=1, max_size=3), value=json_values, whole=json_values)
def test_any_export_file_is_read_or_refused_with_a_message(tmp_path_factory, paths, value, whole):
    folder = write_campaign(
        tmp_path_factory.mktemp("c") / "campaign",
        TOML,
        pd.DataFrame(
            {"case_id": ["c0"], "metric": "faithfulness", "rater": "lead", "rater_kind": "human", "value": [1]}
        ),
        CASES,
    )
    first = folder / "first.json"
    first.write_text(json.dumps(GOOD))
    assert pull_file(load_campaign(folder), first)["ratings_written"] == 4
    before = pd.read_csv(folder / RATINGS_FILE)
    for document in (mutate(GOOD, paths, value), whole):
        attacked = folder / "attacked.json"
        attacked.write_text(json.dumps(document))
        try:
            pull_file(load_campaign(folder), attacked)
        except (LabelStudioError, LabelError) as exc:
            assert "attacked.json" in str(exc) or "task" in str(exc) or "annotation" in str(exc), str(exc)
        after = pd.read_csv(folder / RATINGS_FILE)
        # nothing pulled before is lost: every earlier (case, annotator) is still there
        assert set(zip(before["case_id"], before["rater"])) <= set(zip(after["case_id"], after["rater"]))
    load_campaign(folder)  # and the campaign still loads


def test_a_file_that_is_not_json_or_not_utf8_is_refused(tmp_path):
    folder = write_campaign(
        tmp_path / "campaign",
        TOML,
        pd.DataFrame(
            {"case_id": ["c0"], "metric": "faithfulness", "rater": "lead", "rater_kind": "human", "value": [1]}
        ),
        CASES,
    )
    for content in (b"", b"[{", b"\xff\xfe[]", b'{"tasks": []}'):
        path = tmp_path / "bad.json"
        path.write_bytes(content)
        try:
            pull_file(load_campaign(folder), path)
        except LabelStudioError as exc:
            assert "bad.json" in str(exc)
        else:
            raise AssertionError(f"{content!r} was read")


# Issue 24: the export is read through its declared format (labels.Task), within the limits of every
# document; whatever the file holds, the pull reads it or refuses it naming the file, and loses nothing.

from hypothesis import strategies as st  # noqa: E402

from tests.imports.attack_tools import DEEP, attacked  # noqa: E402


def pulled_before(tmp_path):
    folder = write_campaign(
        tmp_path / "campaign",
        TOML,
        pd.DataFrame(
            {"case_id": ["c0"], "metric": "faithfulness", "rater": "lead", "rater_kind": "human", "value": [1]}
        ),
        CASES,
    )
    first = folder / "first.json"
    first.write_text(json.dumps(GOOD))
    assert pull_file(load_campaign(folder), first)["ratings_written"] == 4
    return folder


@pytest.mark.parametrize(
    "content, words",
    [
        (DEEP.encode(), "nested deeper than 200 levels"),  # a RecursionError traceback before
        (json.dumps(mutate(GOOD, [[0, "id"]], 10**30)).encode(), "less than or equal to 9223372036854775807"),
        (json.dumps(mutate(GOOD, [[0, "annotations", 0, "id"]], 2**63)).encode(), "[0].annotations[0].id"),
        (b"[" + b"9" * 5000 + b"]", "not valid JSON"),  # a ValueError traceback before
        (b"\xef\xbb\xbf[]", None),  # a byte-order mark: an empty export
    ],
)
def test_an_export_that_was_a_traceback_is_read_or_refused_naming_the_file(tmp_path, content, words):
    folder = pulled_before(tmp_path)
    path = tmp_path / "attacked.json"
    path.write_bytes(content)
    if words is None:
        assert pull_file(load_campaign(folder), path)["tasks"] == 0
        return
    with pytest.raises(LabelStudioError) as caught:
        pull_file(load_campaign(folder), path)
    assert str(path) in str(caught.value) and words in str(caught.value)


def test_a_label_that_does_not_fit_the_interface_names_the_file(tmp_path):
    folder = pulled_before(tmp_path)
    path = tmp_path / "attacked.json"
    path.write_text(json.dumps(mutate(GOOD, [[0, "annotations", 0, "result", 0, "value", "choices"]], ["maybe"])))
    with pytest.raises(LabelError) as caught:
        pull_file(load_campaign(folder), path)
    assert f"1 annotation problem(s) in {path}:" in str(caught.value)
    assert "task 1 (case c0), annotator ls-user-1: faithfulness chose ['maybe']" in str(caught.value)


@settings(
    max_examples=int(os.environ.get("ATTACK_EXAMPLES", 60)),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(data=st.data())
def test_any_attacked_export_bytes_are_read_or_refused_naming_the_file(tmp_path_factory, data):
    folder = pulled_before(tmp_path_factory.mktemp("c"))
    before = pd.read_csv(folder / RATINGS_FILE)
    path = folder / "attacked.json"
    path.write_bytes(data.draw(attacked(GOOD)))
    try:
        pull_file(load_campaign(folder), path)
    except (LabelStudioError, LabelError) as exc:
        assert str(path) in str(exc), str(exc)
    after = pd.read_csv(folder / RATINGS_FILE)
    assert set(zip(before["case_id"], before["rater"])) <= set(zip(after["case_id"], after["rater"]))
    load_campaign(folder)


@pytest.mark.parametrize(
    "column, value", [("interface", '{"metrics": [1]}'), ("interface", "not json"), ("adjudicators", '{"a": 1}')]
)
def test_a_label_store_edited_by_hand_is_a_clear_error(tmp_path, column, value):
    """The store's JSON columns (the interface a source was read with, its adjudicators) are read through
    their declared types: a damaged one was a traceback from `calibrate labelstudio pull`."""
    import sqlite3
    import subprocess
    import sys
    from pathlib import Path

    folder = pulled_before(tmp_path)
    db = sqlite3.connect(folder / "labelstudio.sqlite")
    db.execute(f"UPDATE sources SET {column} = ?", (value,))
    db.commit()
    db.close()
    pulled = subprocess.run(
        [
            str(Path(sys.executable).parent / "calibrate"),
            "labelstudio",
            "pull",
            str(folder),
            "--file",
            str(folder / "first.json"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert pulled.returncode == 2 and "Traceback" not in pulled.stderr, pulled.stderr
    assert f"labelstudio.sqlite: sources.{column}" in pulled.stderr
