"""An output a command writes (``report --out``, ``calibration --save/--out``, ``adjudicate --template``)
named under the campaign stays in the campaign, or is refused: a symbolic link planted there never leads
the write elsewhere.

The reproduction: ``report CAMPAIGN --out CAMPAIGN/report`` with ``report`` a link to a folder outside
wrote report.html, report.md and report.json there (the check followed the link, found the folder
outside the campaign, so took no lock and refused nothing).
"""

from __future__ import annotations

import itertools
import os
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from calibrate.base.names import OutsideFolder, writes_into
from calibrate.cli import main
from tests.conftest import write_campaign


def campaign_with_labels(folder: Path) -> Path:
    rows = [
        {"case_id": f"c{i}", "metric": "f", "rater": rater, "rater_kind": kind, "value": value}
        for i in range(30)
        for rater, kind, value in (
            ("ann", "human", i % 2),
            ("bob", "human", (i // 3) % 2),
            ("j", "judge", ((i * 7) % 30) / 30),
        )
    ]
    return write_campaign(
        folder,
        'name = "c"\n[metrics.f]\nscale = "binary"\n',
        pd.DataFrame(rows),
        [{"case_id": f"c{i}", "input": f"q{i}?", "actual_output": f"a{i}."} for i in range(30)],
    )


def everything(folder: Path) -> dict[str, bytes | None]:
    return {str(p.relative_to(folder)): (p.read_bytes() if p.is_file() else None) for p in folder.rglob("*")}


@pytest.mark.parametrize(
    "command",
    [
        ["report", "{campaign}", "--out", "{campaign}/report", "--n-boot", "0"],
        ["report", "{campaign}", "--out", "{campaign}/report/deeper", "--n-boot", "0"],
        ["calibration", "{campaign}", "--metric", "f", "--judge", "j", "--save", "{campaign}/report/map.json"],
        [
            "calibration",
            "{campaign}",
            "--metric",
            "f",
            "--judge",
            "j",
            "--scores",
            "{tmp}/scores.csv",
            "--out",
            "{campaign}/report/scored.csv",
        ],
        ["adjudicate", "{campaign}", "--template", "{campaign}/report/template.csv"],
    ],
)
def test_an_output_under_the_campaign_that_a_link_leads_outside_is_refused(tmp_path, command):
    campaign = campaign_with_labels(tmp_path / "campaign")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "mine.txt").write_text("the user's own file\n")
    (campaign / "report").symlink_to(outside, target_is_directory=True)
    (tmp_path / "scores.csv").write_text("score\n0.2\n0.9\n")
    before = everything(outside)
    done = CliRunner().invoke(main, [a.format(campaign=campaign, tmp=tmp_path) for a in command])
    assert everything(outside) == before  # nothing written through the link
    assert done.exit_code == 2, done.output
    flag = next(a for a, b in itertools.pairwise(command) if b.startswith("{campaign}/report"))
    assert f"{flag} {campaign}/report" in done.output and "leads outside the campaign folder" in done.output
    assert "remove the link" in done.output


def test_a_report_in_the_campaign_or_elsewhere_is_written(tmp_path):
    campaign = campaign_with_labels(tmp_path / "campaign")
    runner = CliRunner()
    for out in (campaign / "report", tmp_path / "elsewhere"):
        done = runner.invoke(main, ["report", str(campaign), "--out", str(out), "--n-boot", "0"])
        assert done.exit_code == 0, done.output
        assert (out / "report.html").is_file()


# ------------------------------------------------------------------ writes_into, attacked
parts = st.lists(st.sampled_from(["a", "b", "link-in", "link-out", "..", "."]), min_size=1, max_size=5)


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(named=parts, under=st.booleans())
def test_attack_writes_into_never_lets_a_path_named_in_the_campaign_resolve_outside(tmp_path_factory, named, under):
    root = tmp_path_factory.mktemp("w")
    campaign, outside = root / "campaign", root / "outside"
    for folder in (campaign / "a" / "b", outside / "a" / "b"):
        folder.mkdir(parents=True)
    for base in (campaign, campaign / "a", outside):
        (base / "link-in").symlink_to(campaign / "a", target_is_directory=True)
        (base / "link-out").symlink_to(outside / "a", target_is_directory=True)
    path = (campaign if under else outside).joinpath(*named)
    resolved = Path(os.path.realpath(path))
    lands_inside = resolved == campaign or campaign in resolved.parents
    try:
        into = writes_into(path, campaign)
    except OutsideFolder:
        assert under and not lands_inside  # refused: named in the campaign, leading out
        return
    assert into == lands_inside  # held exactly when the write lands in the campaign
    if under:
        assert lands_inside
