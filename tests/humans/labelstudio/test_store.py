"""Issue 26's attacks on a Label Studio pull: the label updated last wins however its time is written, an older
export never replaces a newer label, two results of one control that disagree are refused, and one annotation id
on two tasks keeps both labels. No server needed."""

from __future__ import annotations

import copy
import datetime as dt
import json

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from calibrate import load_campaign
from calibrate.base.documents import DocumentError
from calibrate.humans.labelstudio.client import LabelStudioError, pull_file
from calibrate.humans.labelstudio.labels import LabelError
from calibrate.humans.labelstudio.store import RATINGS_FILE
from tests.conftest import write_campaign
from tests.humans.labelstudio.test_labels import CASES, TOML, annotation, export

UTC = dt.UTC


def campaign(folder):
    return write_campaign(
        folder,
        TOML,
        pd.DataFrame(
            {"case_id": ["c0"], "metric": "faithfulness", "rater": "lead", "rater_kind": "human", "value": [1]}
        ),
        CASES,
    )


def pull(folder, document, name="e.json"):
    path = folder.parent / name
    path.write_text(json.dumps(document))
    return pull_file(load_campaign(folder), path)


def labels(folder) -> dict[tuple[str, str], float]:
    rows = pd.read_csv(folder / RATINGS_FILE)
    return {(c, r): v for c, r, v in zip(rows["case_id"], rows["rater"], rows["value"])}


def written(moment: dt.datetime, minutes: int, fraction: bool) -> str:
    local = moment.astimezone(dt.timezone(dt.timedelta(minutes=minutes)))
    return local.isoformat(timespec="microseconds" if fraction else "auto").replace("+00:00", "Z")


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    base=st.datetimes(dt.datetime(2000, 1, 1), dt.datetime(2080, 1, 1), timezones=st.just(UTC)),
    later_by_ms=st.integers(1, 3_600_000),
    offsets=st.tuples(st.integers(-600, 600), st.integers(-600, 600)),
    fractions=st.tuples(st.booleans(), st.booleans()),
    later_first=st.booleans(),
    one_file=st.booleans(),
)
def test_the_label_updated_last_wins_however_its_time_is_written(
    tmp_path_factory, base, later_by_ms, offsets, fractions, later_first, one_file
):
    folder = campaign(tmp_path_factory.mktemp("ls") / "c")
    older, newer = annotation(0, 0, 1, "fail"), annotation(0, 0, 1, "pass")
    newer["id"] = 555
    older["updated_at"] = written(base, offsets[0], fractions[0])
    newer["updated_at"] = written(base + dt.timedelta(milliseconds=later_by_ms), offsets[1], fractions[1])
    pair = [newer, older] if later_first else [older, newer]
    if one_file:  # one export holding both annotations of the annotator
        pull(folder, export({0: pair}))
    else:  # one export each
        pull(folder, export({0: [pair[0]]}), "first.json")
        pull(folder, export({0: [pair[1]]}), "second.json")
    assert labels(folder)[("c0", "ls-user-1")] == 1.0


def test_an_older_export_never_replaces_a_newer_label(tmp_path):
    folder = campaign(tmp_path / "c")
    newer = annotation(5, 0, 1, "fail")  # updated 2026-11-06
    pull(folder, export({0: [newer]}), "new.json")
    doc = pull(folder, export({0: [annotation(0, 0, 1, "pass")]}), "old.json")  # the same annotation, 2026-11-01
    assert doc["changed"] == 0 and doc["older_kept"] == 1
    assert labels(folder)[("c0", "ls-user-1")] == 0.0
    later = annotation(8, 0, 1, "pass")  # updated since: a new revision
    assert pull(folder, export({0: [later]}), "later.json")["changed"] == 1
    assert labels(folder)[("c0", "ls-user-1")] == 1.0


def test_two_results_of_one_control_that_disagree_are_refused(tmp_path):
    folder = campaign(tmp_path / "c")
    twice = annotation(0, 0, 1, "pass")
    other = copy.deepcopy(twice["result"][0])
    other["value"]["choices"] = ["fail"]
    twice["result"].append(other)
    with pytest.raises(LabelError, match="faithfulness has two results that disagree \\('pass' and 'fail'\\)"):
        pull(folder, export({0: [twice]}))
    assert not (folder / RATINGS_FILE).exists()
    again = annotation(0, 0, 1, "pass")
    again["result"].append(copy.deepcopy(again["result"][0]))  # the same answer twice is one answer
    assert pull(folder, export({0: [again]}))["labels"] == 1


def test_one_annotation_id_on_two_tasks_keeps_both_labels(tmp_path):
    folder = campaign(tmp_path / "c")
    first, second = annotation(0, 0, 1, "fail"), annotation(0, 1, 2, "pass")
    second["id"] = first["id"]
    doc = pull(folder, export({0: [first], 1: [second]}))
    assert (doc["labels"], doc["new"], doc["ratings_written"]) == (2, 2, 2)
    assert labels(folder) == {("c0", "ls-user-1"): 0.0, ("c1", "ls-user-2"): 1.0}
    assert pull(folder, export({0: [first], 1: [second]}))["unchanged"] == 2


def test_an_update_time_that_is_no_time_is_named(tmp_path):
    folder = campaign(tmp_path / "c")
    bad = annotation(0, 0, 1)
    bad["updated_at"] = "yesterday"
    with pytest.raises((LabelStudioError, DocumentError)) as caught:
        pull(folder, export({0: [bad]}), "bad.json")
    text = str(caught.value)
    assert "bad.json" in text and "[0].annotations[0].updated_at" in text and "'yesterday' is not a time" in text
