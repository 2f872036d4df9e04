"""`labelstudio push --sample samples/NAME.csv` finds the sample in the campaign, as `calibrate sample`
printed it, from any working directory (it was read relative to the working directory)."""

from __future__ import annotations

from pathlib import Path

import pytest

from calibrate import load_campaign
from calibrate.sampling.designs import draw_sample, read_sample_ids, sample_file, write_sample
from tests.conftest import run_cli
from tests.sampling.test_designs import make


@pytest.fixture()
def drawn(tmp_path):
    folder = make(tmp_path)
    campaign = load_campaign(folder)
    write_sample(folder, draw_sample(campaign, 10, seed=1), "pilot")
    return folder


def test_the_sample_is_found_in_the_campaign_from_anywhere(drawn, tmp_path, monkeypatch):
    campaign = load_campaign(drawn)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    expected = drawn / "samples" / "pilot.csv"
    for given in ("samples/pilot.csv", "pilot", "pilot.csv", str(expected)):
        assert Path(sample_file(given, campaign)).resolve() == expected.resolve(), given
    assert len(read_sample_ids("samples/pilot.csv", campaign)) == 10
    # inside the campaign folder, the same path names the same file
    monkeypatch.chdir(drawn)
    assert Path(sample_file("samples/pilot.csv", campaign)).resolve() == expected.resolve()


def test_a_name_that_is_no_file_or_two_files_is_refused_naming_them(drawn, tmp_path, monkeypatch):
    campaign = load_campaign(drawn)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(
        ValueError,
        match=r"case_ids='pilots': no sample file there: looked for pilots, .*; the "
        r"campaign's samples are samples/pilot.csv",
    ):
        sample_file("pilots", campaign)
    (tmp_path / "samples").mkdir()
    (tmp_path / "samples" / "pilot.csv").write_text("case_id\nc0000\n")
    with pytest.raises(ValueError, match=r"names two different files, samples/pilot.csv and .*samples/pilot.csv"):
        sample_file("samples/pilot.csv", campaign)


def test_push_reads_the_sample_before_it_calls_label_studio(drawn, tmp_path, monkeypatch):
    """From another folder, the push gets past the sample and fails only on the server nobody runs."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    env = {"LABEL_STUDIO_API_KEY": "t0ken"}
    push = ("labelstudio", "push", drawn, "--url", "http://127.0.0.1:9", "--sample")
    result = run_cli(*push, "samples/pilot.csv", env=env)
    assert result.returncode != 0
    assert "does not exist" not in result.stderr and "no sample file" not in result.stderr, result.stderr
    assert "127.0.0.1:9" in result.stderr, result.stderr
    missing = run_cli(*push, "samples/pilots.csv", env=env)
    assert missing.returncode == 2 and "--sample samples/pilots.csv: no sample file there" in missing.stderr
