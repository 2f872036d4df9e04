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
    return {"id": 100 * case + who, "completed_by": who, "project": 7, "updated_at": f"2026-11-0{i + 1}T10:00:00Z",
            "result": [{"from_name": "faithfulness", "to_name": "answer", "type": "choices",
                        "value": {"choices": [verdict]}}]}


def export(annotations_per_case: dict[int, list[dict]]) -> list[dict]:
    return [{"id": case + 1, "data": {"case_id": f"c{case}", "input": f"q{case}"}, "annotations": anns,
             "drafts": []} for case, anns in annotations_per_case.items()]


GOOD = export({0: [annotation(0, 0, 1), annotation(0, 0, 2, "fail")], 1: [annotation(1, 1, 1)],
               2: [annotation(2, 2, 2)]})

json_values = st.recursive(st.none() | st.booleans() | st.integers(-3, 10 ** 12) | st.floats(allow_nan=True)
                           | st.text(max_size=12), lambda inner: st.lists(inner, max_size=3)
                           | st.dictionaries(st.text(max_size=8), inner, max_size=3), max_leaves=12)


def mutate(document, paths: list[list], value):
    """``document`` with the value at one path (a list of keys and indexes into it) replaced."""
    document = json.loads(json.dumps(document))
    for path in paths:
        node = document
        try:
            for step in path[:-1]:
                node = node[step]
            node[path[-1]] = json.loads(json.dumps(value))   # a copy each time: no value inside itself
        except (KeyError, IndexError, TypeError):
            pass
    return document


PATHS = [[0], [0, "id"], [0, "data"], [0, "data", "case_id"], [0, "annotations"], [0, "annotations", 0],
         [0, "annotations", 0, "id"], [0, "annotations", 0, "completed_by"], [0, "annotations", 0, "result"],
         [0, "annotations", 0, "result", 0], [0, "annotations", 0, "result", 0, "value"],
         [0, "annotations", 0, "result", 0, "value", "choices"], [0, "annotations", 0, "updated_at"],
         [0, "annotations", 0, "project"], [0, "annotations", 0, "was_cancelled"], [0, "drafts"],
         [1, "predictions"], [1, "annotations", 0, "result", 0, "from_name"], [1, "annotations", 0, "result", 0, "type"]]


@pytest.mark.slow
@settings(max_examples=int(os.environ.get("ATTACK_EXAMPLES", 300)), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(paths=st.lists(st.sampled_from(PATHS), min_size=1, max_size=3), value=json_values,
       whole=json_values)
def test_any_export_file_is_read_or_refused_with_a_message(tmp_path_factory, paths, value, whole):
    folder = write_campaign(tmp_path_factory.mktemp("c") / "campaign", TOML, pd.DataFrame(
        {"case_id": ["c0"], "metric": "faithfulness", "rater": "lead", "rater_kind": "human", "value": [1]}), CASES)
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
    load_campaign(folder)   # and the campaign still loads


def test_a_file_that_is_not_json_or_not_utf8_is_refused(tmp_path):
    folder = write_campaign(tmp_path / "campaign", TOML, pd.DataFrame(
        {"case_id": ["c0"], "metric": "faithfulness", "rater": "lead", "rater_kind": "human", "value": [1]}), CASES)
    for content in (b"", b"[{", b"\xff\xfe[]", b'{"tasks": []}'):
        path = tmp_path / "bad.json"
        path.write_bytes(content)
        try:
            pull_file(load_campaign(folder), path)
        except LabelStudioError as exc:
            assert "bad.json" in str(exc)
        else:
            raise AssertionError(f"{content!r} was read")
