"""`labelstudio push --sample samples/NAME.csv` finds the sample in the campaign, as `calibrate sample`
printed it, from any working directory (it was read relative to the working directory)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from calibrate import load_campaign
from calibrate.sampling.designs import draw_sample, read_sample_ids, sample_file, write_sample
from tests.sampling.test_designs import make

EXE = Path(sys.executable).parent / "calibrate"


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


def test_push_reads_the_sample_before_it_calls_label_studio(drawn, tmp_path):
    """From another folder, the push gets past the sample and fails only on the server nobody runs."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {**os.environ, "LABEL_STUDIO_API_KEY": "t0ken"}
    result = subprocess.run(
        [str(EXE), "labelstudio", "push", str(drawn), "--url", "http://127.0.0.1:9", "--sample", "samples/pilot.csv"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=elsewhere,
        env=env,
    )
    assert result.returncode != 0
    assert "does not exist" not in result.stderr and "no sample file" not in result.stderr, result.stderr
    assert "127.0.0.1:9" in result.stderr, result.stderr
    missing = subprocess.run(
        [str(EXE), "labelstudio", "push", str(drawn), "--url", "http://127.0.0.1:9", "--sample", "samples/pilots.csv"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=elsewhere,
        env=env,
    )
    assert missing.returncode == 2 and "--sample samples/pilots.csv: no sample file there" in missing.stderr
