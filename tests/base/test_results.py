"""What every command's function returns: the document, and a tidy table of it (calibrate/base/results.py)."""

import json
import math
import pickle

import pytest

from calibrate.base.results import (
    FRAME_COLUMNS,
    Deferred,
    Result,
    json_text,
    records_frame,
    single_row,
    statistics_rows,
)

DOCUMENT = {
    "n_cases": 40,
    "metrics": [
        {
            "metric": "faithful",
            "judges": [
                {
                    "judge": "gpt",
                    "n": 40,
                    "kappa": {"estimate": 0.5, "ci_low": 0.3, "ci_high": 0.7, "ci_method": "BCa"},
                    "auc": {"estimate": None, "reason": "one class only"},
                    "curve": [{"threshold": 0.5, "estimate": 0.1}],  # points of a curve, not rows
                    "threshold": 0.6,
                    "threshold_ci": [0.5, 0.8],
                    "threshold_ci_method": "percentile",
                    "slices": [{"key": "topic", "value": "tax", "n": 12, "kappa": {"estimate": 0.2}}],
                }
            ],
            "annotators": {
                "per_annotator": [{"annotator": "ann", "n_items": 9, "kappa_with_others": {"estimate": 0.4}}]
            },
        }
    ],
}


def test_every_figure_is_a_row_under_its_metric_judge_and_slice():
    rows = {(r["judge"], r["slice"], r["statistic"]): r for r in statistics_rows(DOCUMENT)}
    assert set(rows) == {
        ("gpt", None, "threshold"),
        ("gpt", None, "kappa"),
        ("gpt", None, "auc"),
        ("gpt", "topic=tax", "kappa"),
        (None, None, "annotators.per_annotator[ann].kappa_with_others"),
    }
    kappa = rows["gpt", None, "kappa"]
    assert (kappa["metric"], kappa["ci_low"], kappa["ci_high"], kappa["method"], kappa["n"]) == (
        "faithful",
        0.3,
        0.7,
        "BCa",
        40,
    )
    assert math.isnan(rows["gpt", None, "auc"]["estimate"]) and rows["gpt", None, "auc"]["reason"] == "one class only"
    threshold = rows["gpt", None, "threshold"]
    assert (threshold["estimate"], threshold["ci_low"], threshold["ci_high"], threshold["method"]) == (
        0.6,
        0.5,
        0.8,
        "percentile",
    )
    assert rows["gpt", "topic=tax", "kappa"]["n"] == 12
    annotator = rows[None, None, "annotators.per_annotator[ann].kappa_with_others"]
    assert annotator["metric"] == "faithful" and annotator["n"] == 40  # the document's n_cases: no n of its own


def test_a_result_is_its_document_and_a_typed_table():
    result = Result(DOCUMENT)
    assert result == DOCUMENT and json.loads(json.dumps(result)) == DOCUMENT
    frame = result.to_frame()
    assert list(frame.columns) == list(FRAME_COLUMNS) and len(frame) == 5
    assert frame["estimate"].dtype == float and str(frame["n"].dtype) == "Int64"
    copy = result.to_dict()
    copy["metrics"][0]["metric"] = "changed"
    assert type(copy) is dict and result["metrics"][0]["metric"] == "faithful"
    assert "calibrate Result with n_cases, metrics" in repr(result)


def test_a_result_keeps_its_table_shape_through_pickle():
    result = Result({"designs": [{"name": "a", "n": 3}, {"name": "b", "n": 5}]}, records_frame("designs"))
    again = pickle.loads(pickle.dumps(result))
    assert again == result and again.to_frame().to_dict("records") == [{"name": "a", "n": 3}, {"name": "b", "n": 5}]
    row = Result({"added": 3, "folder": "c", "cases": [1]}, single_row).to_frame()
    assert row.to_dict("records") == [{"added": 3, "folder": "c"}]


class Points(Deferred):
    """A deferred list of points made from a range, read in chunks of 3."""

    CHUNK = 3

    def __init__(self, n: int):
        self.n = n

    def __len__(self) -> int:
        return self.n

    def items(self, first: int, last: int) -> list:
        return [{"i": i, "half": i / 2 if i % 4 else None} for i in range(first, min(last, self.n))]


@pytest.mark.parametrize("n", [0, 1, 3, 7])
def test_a_deferred_list_is_written_as_json_writes_its_items(n):
    """Chunk by chunk, the text json.dumps writes for the whole list, wherever the list sits."""
    items = Points(n).to_list()
    document = {"a": Points(n), "b": [1, {"c": Points(n)}], "text": "x"}
    plain = {"a": items, "b": [1, {"c": items}], "text": "x"}
    assert "".join(json_text(document)) == json.dumps(plain)
    assert len(list(Points(n).json_chunks())) == 2 + math.ceil(n / 3)


def test_a_deferred_list_reads_as_its_list():
    points = Points(7)
    assert list(points) == points.to_list() and len(points) == 7 and bool(Points(0)) is False
    assert points[-1] == {"i": 6, "half": 3.0} and points[1:6:2] == points.to_list()[1:6:2]
    assert points == points.to_list() and points == Points(7) and points != Points(6) and points != "x"
    with pytest.raises(IndexError):
        points[7]


def test_json_text_refuses_what_json_refuses():
    with pytest.raises(TypeError, match="set is not JSON serializable"):
        "".join(json_text({"a": {1}}))
    with pytest.raises(ValueError):
        "".join(json_text({"a": float("nan")}))
