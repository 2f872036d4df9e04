"""Names that become files are portable: one name, one file on Linux, macOS and Windows disks.

The reproduction: judges "é" (composed) and "é" (decomposed) were both accepted, and "judge" and
"judge." -- one folder fingerprints/NAME on macOS or Windows; sample names "CON" and "dot." were
accepted (no such file on Windows).
"""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calibrate.base.names import RESERVED, UnsafeName, name_key, name_problem, path_component
from calibrate.campaign.judge_settings import parse_judges
from calibrate.sampling.designs import Sample, draw_sample, write_sample

DEVICES = sorted(RESERVED)


@settings(max_examples=300, deadline=None)
@given(
    device=st.sampled_from(["con", "prn", "aux", "nul", "com1", "com9", "lpt1", "lpt9", "com0", "com\u00b9"]),
    case=st.lists(st.booleans(), min_size=4, max_size=4),
    extension=st.sampled_from(["", ".csv", ".json", ".x.y"]),
)
def test_attack_a_name_windows_reserves_is_refused_in_any_case_and_with_any_extension(device, case, extension):
    name = "".join(c.upper() if up else c for c, up in zip(device, case + [False])) + extension
    with pytest.raises(UnsafeName, match="reserves for a device"):
        path_component(name, what="sample name")


@settings(max_examples=300, deadline=None)
@given(
    stem=st.text(st.characters(whitelist_categories=("L", "N")), min_size=1, max_size=20),
    tail=st.sampled_from([".", "..", " .", ". ", "x."]),
)
def test_attack_a_name_ending_in_a_dot_or_space_is_refused(stem, tail):
    assert name_problem(stem + tail) is not None


@pytest.mark.parametrize("name", ["CONSOLE", "con-judge", "com10", "lpt", "null", "auxiliary", "judge.v2", "a.b.c"])
def test_names_that_only_resemble_reserved_ones_are_kept(name):
    assert path_component(name) == name


@settings(max_examples=300, deadline=None)
@given(name=st.text(min_size=1, max_size=30))
def test_attack_case_and_unicode_form_never_tell_two_names_apart(name):
    for other in (
        unicodedata.normalize("NFD", name),
        unicodedata.normalize("NFC", name),
        name.upper(),
        name.lower(),
        name.casefold(),
    ):
        if unicodedata.normalize("NFC", other.casefold()) == unicodedata.normalize("NFC", name.casefold()):
            assert name_key(other) == name_key(name)
    assert name_key(unicodedata.normalize("NFD", name)) == name_key(name)


JUDGE = {
    "library": "deepeval",
    "metric": "faithfulness",
    "into": "f",
    "model": {"provider": "openai", "name": "m", "base_url": "http://127.0.0.1:9/v1"},
}


@pytest.mark.parametrize(
    "first, second",
    [
        ("é", unicodedata.normalize("NFD", "é")),
        ("Judge", "judge"),
        ("ﬁx", "fix"),
        ("K", "\u212a"),
        ("fidélité", unicodedata.normalize("NFD", "FIDÉLITÉ")),
    ],
)
def test_judges_one_folder_apart_are_refused(first, second):
    problems = []
    judges = parse_judges({first: JUDGE, second: JUDGE}, {"f"}, "campaign.toml", problems)
    assert len(judges) == 1 and len(problems) == 1
    assert "only by case or Unicode form" in str(problems[0])


@pytest.mark.parametrize("name", ["judge.", "CON", "aux.judge", "judge "])
def test_a_judge_name_no_folder_can_have_is_refused(name):
    problems = []
    parse_judges({name: JUDGE}, {"f"}, "campaign.toml", problems)
    assert problems and "cannot be a folder name" in str(problems[0])


def sample() -> Sample:
    import pandas as pd

    from calibrate.campaign import campaign_from_frames

    c = campaign_from_frames(
        {"name": "n", "metrics": {"f": {"scale": "binary"}}},
        pd.DataFrame(
            {"case_id": ["c1", "c2"], "metric": "f", "rater": "j", "rater_kind": "judge", "value": [0.1, 0.9]}
        ),
        [{"case_id": "c1", "input": "q"}, {"case_id": "c2", "input": "r"}],
    )
    return draw_sample(c, 1, include_labelled=True)


@pytest.mark.parametrize("first, second", [("é", unicodedata.normalize("NFD", "é")), ("Pilot", "pilot")])
def test_a_sample_one_file_apart_from_another_is_refused(tmp_path, first, second):
    write_sample(tmp_path, sample(), first)
    with pytest.raises(FileExistsError, match="only by case or Unicode form"):
        write_sample(tmp_path, sample(), second)
    assert len(list((tmp_path / "samples").iterdir())) == 2
