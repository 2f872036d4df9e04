"""What an import reads from a source before it meets the campaign: ratings, skips, metric names and
values (calibrate/imports/records.py)."""

import pytest

from calibrate.imports.records import ImportedRating, Skip, SourceBatch, match_metric, parse_map, rating_value

KEY = "sk-" + "q7w8e9r0t1y2" * 4


def rating(**kw):
    return ImportedRating(
        **{"case_id": "c1", "metric": "f", "rater": "gpt", "rater_kind": "judge", "value": 1.0, "source_id": "r1", **kw}
    )


def test_a_credential_in_an_error_a_reason_or_a_skip_is_never_kept():
    r = rating(value=None, error=f"401: bad key {KEY}", reason=f"used {KEY}")
    assert KEY not in r.error and KEY not in r.reason and r.error.startswith("401: bad key")
    assert KEY not in Skip("case 3", f"header held {KEY}").reason


def test_an_update_time_must_be_a_time():
    assert rating(updated="2026-01-02T03:04:05Z").updated == "2026-01-02T03:04:05Z"
    with pytest.raises(ValueError, match=r"rating 'r1', field 'updated':"):
        rating(updated="last tuesday")


def test_a_batch_starts_empty_and_partial():
    batch = SourceBatch("deepeval", "deepeval", "run.json")
    assert (batch.cases, batch.ratings, batch.skipped, batch.whole) == ([], [], [], False)


@pytest.mark.parametrize(
    ("name", "metrics", "mapping", "expected"),
    [
        ("Answer Relevancy", ["answer_relevancy", "faithfulness"], {}, "answer_relevancy"),
        ("Correctness [GEval]", ["correctness"], {}, "correctness"),
        ("Correctness (GEval)", ["correctness"], {}, "correctness"),
        ("tone", ["correctness"], {}, None),
        ("is_grounded", ["faithfulness"], {"is_grounded": "faithfulness"}, "faithfulness"),
        ("Faithfulness", ["faithfulness", "Faithfulness"], {}, "Faithfulness"),  # the exact name first
        ("FAITHFULNESS", ["faithfulness", "Faithfulness"], {}, None),  # two alike: for --map to say
    ],
)
def test_a_sources_metric_name_is_matched_to_the_campaigns(name, metrics, mapping, expected):
    assert match_metric(name, metrics, mapping) == expected


def test_map_options_are_checked_against_the_campaign():
    assert parse_map(["is_grounded = faithfulness", "a=b=faithfulness"], ["faithfulness"]) == {
        "is_grounded": "faithfulness",
        "a=b": "faithfulness",
    }
    for items, message in [
        (["tone"], "--map tone: expected SOURCE_NAME=METRIC"),
        (["tone="], "expected SOURCE_NAME=METRIC"),
        (["tone=style"], r"the campaign has no metric 'style' \(it declares faithfulness, relevance\)"),
        (["x=faithfulness", "x=relevance"], "'x' is mapped twice"),
    ]:
        with pytest.raises(ValueError, match=message):
            parse_map(items, ["faithfulness", "relevance"])


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (True, 1.0),
        (False, 0.0),
        (3, 3.0),
        (0.25, 0.25),
        (" Pass ", 1.0),
        ("incorrect", 0.0),
        ("4", 4.0),
        ("maybe", None),
        (float("nan"), None),
        ("inf", None),
        ([1], None),
        (None, None),
    ],
)
def test_a_value_is_a_number_a_pass_word_or_nothing(value, expected):
    assert rating_value(value) == expected


def test_an_integer_too_large_is_refused_naming_where():
    with pytest.raises(ValueError, match=r"scores\.json, score s1: an integer of about 401 digits is too large"):
        rating_value(10**400, where="scores.json, score s1")
