"""The threshold each judge runs at today: given, recorded by an imported run, or DeepEval's
(calibrate/analysis/current.py)."""

from types import SimpleNamespace

import pytest

from calibrate.analysis.current import check_current, current_thresholds, parse_current, unmatched
from calibrate.stats.thresholds import DEEPEVAL_DEFAULT_THRESHOLD


def judge(name, rater=None):
    return SimpleNamespace(name=name, rater=SimpleNamespace(name=rater or name))


def campaign(imported=None, **judges):
    specs = {
        name: SimpleNamespace(library=lib, into=into, settings=settings)
        for name, (lib, into, settings) in judges.items()
    }
    return SimpleNamespace(imported_raters=imported or {}, judges=specs)


def sources(found):
    return [(t["threshold"], t["source"]) for t in found]


def test_checked_where_it_enters():
    assert check_current(0.5) == {None: 0.5} and check_current({"gpt": 1, None: 0.2}) == {"gpt": 1.0, None: 0.2}
    assert check_current(None) == {}
    for bad in (True, "0.5", float("inf"), {"gpt": "high"}, {3: 0.5}):
        with pytest.raises(ValueError, match=r"a threshold is a finite number; give one per judge"):
            check_current(bad)
    with pytest.raises(ValueError, match=r"such as \{'gpt': 0\.5\}"):
        check_current({"gpt": None})


def test_command_line_values_are_judge_equals_value():
    assert parse_current(["0.5", "gpt-4o-mini=0.7", "a=b=0.3"]) == {None: 0.5, "gpt-4o-mini": 0.7, "a=b": 0.3}
    for texts, message in [
        (["=0.5"], "'=0.5': no judge before '='"),
        (["gpt=high"], "'gpt=high': high is not a finite number"),
        (["gpt="], "'gpt=': no value"),
        (["gpt=nan"], "nan is not a finite number"),
        (["gpt=1", "gpt=2"], "'gpt=2': judge gpt has a threshold already"),
        (["1", "2"], "'2': a threshold for every judge is given already"),
    ]:
        with pytest.raises(ValueError, match=message):
            parse_current(texts)


def test_a_given_threshold_comes_first_by_judge_then_rater_then_for_all():
    c = campaign({"gpt": {"thresholds": {"m": [0.9]}}})
    j = judge("gpt@run1", rater="gpt")
    assert sources(current_thresholds(c, "m", j, {None: 0.1, "gpt": 0.2, "gpt@run1": 0.3})) == [(0.3, "given")]
    assert sources(current_thresholds(c, "m", j, {None: 0.1, "gpt": 0.2})) == [(0.2, "given")]
    assert sources(current_thresholds(c, "m", j, {None: 0.1})) == [(0.1, "given")]


def test_an_imported_run_gives_each_threshold_it_recorded_for_the_metric():
    c = campaign({"gpt": {"thresholds": {"m": [0.7, 0.5, 0.7, "x", True], "other": [0.1]}}})
    found = current_thresholds(c, "m", judge("gpt"))
    assert sources(found) == [(0.5, "imported"), (0.7, "imported")]
    assert found[0]["source_text"] == "one of 2 recorded in the imported runs"
    one = current_thresholds(campaign({"gpt": {"thresholds": {"m": [0.6]}}}), "m", judge("gpt"))
    assert one[0]["source_text"] == "recorded in the imported run"


def test_a_deepeval_judge_runs_at_strict_mode_its_setting_or_the_default():
    c = campaign(
        strict=("deepeval", "m", {"strict_mode": True, "threshold": 0.3}),
        set=("deepeval", "m", {"threshold": 0.3}),
        default=("deepeval", "m", None),
        ragas=("ragas", "m", {"threshold": 0.3}),
        elsewhere=("deepeval", "other", {}),
    )
    assert sources(current_thresholds(c, "m", judge("strict"))) == [(1.0, "deepeval_strict_mode")]
    assert sources(current_thresholds(c, "m", judge("set"))) == [(0.3, "deepeval_setting")]
    assert sources(current_thresholds(c, "m", judge("default"))) == [(DEEPEVAL_DEFAULT_THRESHOLD, "deepeval_default")]
    assert current_thresholds(c, "m", judge("ragas")) == []
    assert current_thresholds(c, "m", judge("elsewhere")) == []
    assert current_thresholds(c, "m", judge("imported-only")) == []


def test_a_threshold_for_no_judge_is_refused_naming_the_judges():
    judges = [judge("gpt@run1", rater="gpt"), judge("claude")]
    unmatched({None: 0.5, "gpt": 0.5, "claude": 0.1, "gpt@run1": 0.2}, judges)
    with pytest.raises(
        ValueError, match=r"current names llama, mistral: no such judge .* \(their judges: claude, gpt@run1\)"
    ):
        unmatched({"llama": 0.5, "mistral": 0.5}, judges)
    with pytest.raises(ValueError, match=r"their judges: none"):
        unmatched({"llama": 0.5}, [])
