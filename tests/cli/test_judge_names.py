"""An unknown --judge is a usage error listing the campaign's judges, in every command that takes it
repeatably, as an unknown --metric is (calibrate.cli.console.check_judges, the one place).

The reproduction: ``stats --judge typo`` and ``thresholds --judge typo`` exited 0 saying "no judge rated
this metric"; ``gate --judge typo`` printed "FAIL faith / None".
"""

from __future__ import annotations

import pandas as pd
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from calibrate.cli import main
from tests.conftest import write_campaign

COMMANDS = [
    ["stats", "{c}", "--n-boot", "0"],
    ["thresholds", "{c}", "--n-boot", "0"],
    ["gate", "{c}", "--n-boot", "0"],
    ["repeatability", "{c}"],
    ["compare", "{c}"],
    ["bias", "{c}", "--metric", "f"],
]


@pytest.fixture(scope="module")
def campaign(tmp_path_factory):
    rows = [
        {"case_id": f"c{i:02d}", "metric": "f", "rater": rater, "rater_kind": kind, "value": value}
        for i in range(30)
        for rater, kind, value in (
            ("ann", "human", i % 2),
            ("judge-a", "judge", ((i * 7) % 30) / 30),
            ("judge-b", "judge", (i % 5) / 4),
        )
    ]
    return write_campaign(
        tmp_path_factory.mktemp("j") / "c",
        'name = "c"\n[metrics.f]\nscale = "binary"\nmax_false_pass = 0.2\n',
        pd.DataFrame(rows),
        [{"case_id": f"c{i:02d}", "input": f"q{i}?", "actual_output": "a."} for i in range(30)],
    )


def run(command, campaign, *judges):
    args = [a.format(c=campaign) for a in command] + [x for j in judges for x in ("--judge", j)]
    return CliRunner().invoke(main, args)


@pytest.mark.parametrize("command", COMMANDS, ids=[c[0] for c in COMMANDS])
def test_an_unknown_judge_is_a_usage_error_listing_the_judges(campaign, command):
    done = run(command, campaign, "judge-a", "typo")
    assert done.exit_code == 2, done.output
    assert "--judge typo: no rater of the campaign has this name; its judges are judge-a, judge-b" in done.output
    human = run(command, campaign, "ann")
    assert human.exit_code == 2 and "--judge ann: a human annotator of the campaign, not a judge" in human.output
    known = run(command, campaign, "judge-a")  # a known judge runs (the gate may fail it; no repeats to read)
    assert "no rater of the campaign" not in known.output and "not a judge" not in known.output
    assert known.exception is None or isinstance(known.exception, SystemExit)


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    name=st.text(min_size=1, max_size=30).filter(lambda t: t not in ("judge-a", "judge-b", "ann")),
    command=st.sampled_from(COMMANDS[:2]),
)
def test_attack_no_name_but_a_judges_narrows_a_command_to_nothing(campaign, name, command):
    done = run(command, campaign, name)
    assert done.exit_code == 2 and "its judges are judge-a, judge-b" in done.output, done.output
    assert done.exception is None or isinstance(done.exception, SystemExit)
