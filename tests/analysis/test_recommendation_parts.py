"""The small typed parts of a recommendation (calibrate/analysis/recommendation_parts.py): each written as
its recommendation's entry and read back equal; the rates at a threshold named as figures; the counts a rate
rests on, weighted or not, and an undefined rate refused."""

from __future__ import annotations

import json
import re

import pytest

import calibrate
from calibrate.analysis.recommendation_parts import CurrentRates, LowestFalsePass, RatesAt, Separation, rate_counts
from calibrate.base.estimates import Estimate


@pytest.fixture(scope="module")
def doc():
    demo = calibrate.load_campaign(calibrate.demo_campaign_path())
    return calibrate.thresholds(demo, judges=["Olz-gpt4o"], n_boot=0, current=0.5)


def test_each_part_is_its_recommendations_entry_and_reads_back_equal(doc):
    rec = doc.recommendation("relevance", "Olz-gpt4o")
    entry = json.loads(json.dumps(rec.to_dict()))
    parts = {
        "deepeval_default": RatesAt,
        "separation": Separation,
        "lowest_false_pass": LowestFalsePass,
        "defensible_alternative": RatesAt,
    }
    written = [key for key in parts if entry.get(key) is not None]
    assert {"deepeval_default", "separation"} <= set(written)
    for key in written:
        part = getattr(rec, key)
        assert isinstance(part, parts[key]) and part.to_dict() == entry[key]
        assert parts[key].from_dict(entry[key]) == part
    (current,) = rec.current
    assert current.to_dict() == entry["current"][0] and CurrentRates.from_dict(entry["current"][0]) == current
    assert rec.deepeval_default.accuracy is None and "accuracy" not in entry["deepeval_default"]


def test_the_rates_at_a_threshold_are_named_figures(doc):
    rec = doc.recommendation("relevance", "Olz-gpt4o")
    names = [f.statistic for f in rec.deepeval_default.figures("relevance", "Olz-gpt4o", "deepeval_default", rec.n)]
    assert names == ["deepeval_default.false_pass_rate", "deepeval_default.false_fail_rate"]


def test_rate_counts_read_a_weighted_rate_at_its_effective_size_and_refuse_an_undefined_one():
    weighted = Estimate.from_dict({"estimate": 0.25, "n": 8, "effective_n": 4.0, "weighted": True})
    assert rate_counts(weighted) == (1.0, 4.0)
    assert rate_counts(Estimate.from_dict({"estimate": 0.25, "k": 2, "n": 8})) == (2, 8)
    with pytest.raises(ValueError, match=re.escape("a rate without its counts: {'estimate': None, 'reason': 'r'}")):
        rate_counts(Estimate.undefined("r"))
