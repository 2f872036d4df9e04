"""What the cases' metadata say, read one way: a key's value for a case, the cases per value (and the one
error without cases.jsonl), and the cases a generator of a family wrote."""

from __future__ import annotations

import pandas as pd
import pytest

from calibrate.campaign import campaign_from_frames
from calibrate.campaign.metadata import (
    MISSING,
    cases_by_generator_family,
    generator_family,
    metadata_value,
    require_cases,
    slices,
)

CONFIG = {"name": "n", "metrics": {"f": {"scale": "binary"}}}
CASES = [
    {"case_id": "a", "input": "q", "metadata": {"topic": "tax", "generator_family": "GPT", "turns": 2}},
    {"case_id": "b", "input": "q", "metadata": {"topic": "tax", "generator_family": "llama"}},
    {"case_id": "c", "input": "q", "metadata": {"topic": None, "generator_family": "gpt"}},
    {"case_id": "d", "input": "q"},
]


def campaign(cases=CASES):
    ids = ["a", "b", "c", "d"]
    ratings = pd.DataFrame({"case_id": ids, "metric": "f", "rater": "h", "rater_kind": "human", "value": [1, 0, 1, 0]})
    return campaign_from_frames(CONFIG, ratings, cases)


@pytest.fixture(scope="module")
def tiny():
    return campaign()


@pytest.fixture(scope="module")
def no_cases():
    return campaign(None)


def test_a_value_is_text_and_missing_where_the_case_metadata_or_key_is_absent_or_null(tiny):
    assert metadata_value(tiny, "a", "topic") == "tax" and metadata_value(tiny, "a", "turns") == "2"
    assert metadata_value(tiny, "c", "topic") == MISSING == "(missing)"  # null
    assert metadata_value(tiny, "d", "topic") == MISSING  # no metadata
    assert metadata_value(tiny, "a", "language") == MISSING  # no such key
    assert metadata_value(tiny, "zz", "topic") == MISSING  # no such case


def test_slices_are_the_cases_per_value_in_sorted_order(tiny):
    got = slices(tiny, "topic")
    assert list(got) == ["(missing)", "tax"]
    assert got == {"(missing)": frozenset({"c", "d"}), "tax": frozenset({"a", "b"})}
    assert slices(tiny, "language") == {MISSING: frozenset("abcd")}


def test_slicing_without_cases_jsonl_is_one_error_naming_the_key(no_cases):
    with pytest.raises(ValueError) as raised:
        slices(no_cases, "topic")
    assert str(raised.value) == "by='topic': slicing needs cases.jsonl with a metadata object per case"
    assert (
        raised.value.args[0].for_command_line()
        == "--by topic: slicing needs cases.jsonl with a metadata object per case"
    )
    require_cases(no_cases, None)  # nothing to slice by: no error
    require_cases(campaign(), "topic")


def test_a_generator_family_is_read_in_lower_case():
    assert generator_family({"metadata": {"generator_family": "Llama"}}) == "llama"
    assert generator_family({}) == generator_family({"metadata": None}) == generator_family({"metadata": {}}) == ""


def test_the_cases_of_a_family_case_aside(tiny, no_cases):
    assert cases_by_generator_family(tiny, "gpt") == cases_by_generator_family(tiny, "GPT") == ["a", "c"]
    assert cases_by_generator_family(tiny, "llama") == ["b"]
    assert cases_by_generator_family(tiny, "claude") == []
    assert cases_by_generator_family(tiny, None) == cases_by_generator_family(tiny, "") == []
    assert cases_by_generator_family(no_cases, "gpt") == []
