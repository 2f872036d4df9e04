"""Hashes where people need words: an id calibrate hashed from a case's content (`case-cd531ac66e1f`) is
shown with the start of the case's question in the terminal's lists: the warnings of stats, report and
thresholds, the adjudication list, validate's lines, the gate's reasons."""

from __future__ import annotations

import subprocess

import numpy as np
import pandas as pd
import pytest

from calibrate.cases.datasets import content_id
from calibrate.cli.console import case_label, out, with_snippets
from tests.conftest import run_cli, write_campaign

QUESTIONS = [
    "How do I reset my password on the mobile app?",
    "Can I get a refund after 30 days?",
    "Do you ship to Norway?\x1b[2J",
    "Why was my card declined twice?",
]
TOML = """name = "hashes"
[metrics.faithfulness]
scale = "binary"
[raters.faith-gpt]
family = "gpt"
"""


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """Cases imported without names: their ids are content hashes. Two annotators disagree on two cases
    and the judge failed on two."""
    rng = np.random.default_rng(0)
    cases = [{"input": q, "actual_output": f"answer {i}"} for i, q in enumerate(QUESTIONS)]
    cases += [{"input": f"question {i}", "actual_output": f"answer {i}"} for i in range(4, 60)]
    for case in cases:
        case["case_id"] = content_id(case)
    ids = [c["case_id"] for c in cases]
    human = (rng.random(len(ids)) < 0.5).astype(float)
    second = human.copy()
    second[:2] = 1 - second[:2]  # the annotators disagree on the first two
    judge = np.clip(0.7 * human + rng.normal(0.15, 0.1, len(ids)), 0, 1).round(3)
    judge[2:4] = np.nan  # and the judge failed on the next two
    frame = pd.DataFrame(
        {
            "case_id": ids * 3,
            "metric": "faithfulness",
            "rater": ["ana"] * len(ids) + ["ben"] * len(ids) + ["faith-gpt"] * len(ids),
            "rater_kind": ["human"] * 2 * len(ids) + ["judge"] * len(ids),
            "value": np.r_[human, second, judge],
            "error": [""] * 2 * len(ids) + ["" if v == v else "timeout" for v in judge],
        }
    )
    return write_campaign(tmp_path_factory.mktemp("hashes") / "campaign", TOML, frame, cases)


def label(question: str) -> str:
    case = {"input": question, "actual_output": f"answer {QUESTIONS.index(question)}"}
    return case_label(content_id(case), {content_id(case): case})


def test_a_hash_id_gets_the_start_of_its_question():
    case = {"input": "How do I reset my password\non the mobile app?"}
    assert (
        case_label("case-0123456789ab", {"case-0123456789ab": case})
        == 'case-0123456789ab ("How do I reset my password on the mobile…")'
    )
    # an id of the user's own needs no help; a hash-shaped piece of a longer name is not an id
    assert case_label("refund-3", {"refund-3": case}) == "refund-3"
    assert (
        with_snippets("xcase-0123456789ab, case-0123456789abc", {"case-0123456789ab": case})
        == "xcase-0123456789ab, case-0123456789abc"
    )


def test_the_snippet_is_data_escaped_on_the_terminal():
    case = {"input": "Ship\x1b]52;c;cGF5\x07 to \u202eNorway"}
    with out.capture() as captured:
        out.print(case_label("case-0123456789ab", {"case-0123456789ab": case}))
    shown = captured.get()
    assert "\x1b]52" not in shown and "\\x1b]52" in shown and "\\u202e" in shown


def run(*args: str) -> subprocess.CompletedProcess:
    return run_cli(*args)


def test_the_adjudication_list_shows_each_question(folder):
    result = run("adjudicate", str(folder))
    assert result.returncode == 0, result.stderr
    for question in QUESTIONS[:2]:
        assert label(question).split(" (")[1][:30] in result.stdout, result.stdout


def test_the_warnings_of_stats_show_each_question(folder):
    result = run("stats", str(folder), "--n-boot", "50")
    assert result.returncode == 0, result.stderr
    [failed] = [line for line in result.stdout.splitlines() if "failed rating" in line]
    assert label(QUESTIONS[3]) in failed
    # the escape sequence in the third question is shown escaped, not sent
    assert '("Do you ship to Norway?\\x1b[2J")' in failed and "\x1b[2J" not in result.stdout


def test_validate_lists_adjustments_with_the_question(tmp_path):
    case = {"input": "Is the warranty two years?", "actual_output": "Yes."}
    case["case_id"] = content_id(case)
    frame = pd.DataFrame(
        {"case_id": [case["case_id"]], "metric": "faithfulness", "rater": "ana", "rater_kind": "human", "value": [3]}
    )
    folder = write_campaign(tmp_path / "c", TOML, frame, [case])
    result = run("validate", str(folder), "--out-of-scale", "clip")
    assert result.returncode == 0, result.stderr
    assert f'rated case {case["case_id"]} ("Is the warranty two years?")' in result.stdout


def test_monitor_alarms_fingerprint_anchors_and_withdrawn_ratings_name_cases_with_their_question():
    from calibrate.cli.imports import print_import
    from calibrate.cli.review import print_fingerprint, print_monitor

    cases = {content_id(c): c for c in ({"input": q, "actual_output": f"answer {i}"} for i, q in enumerate(QUESTIONS))}
    first, second = list(cases)[:2]
    monitor = {
        "metric": "faithfulness",
        "judge": "faith-gpt",
        "passed": False,
        "alarmed": True,
        "not_watched": [],
        "stream": {"n_cases": 80, "first": "2026-11-01", "last": "2026-11-30", "n_audited": 20, "audit": "all"},
        "baseline": {"n_labelled": 60},
        "threshold": {"value": 0.5, "source": "given"},
        "guarantee": "g",
        "baseline_fitness": {"better_than_chance": True},
        "rates": [
            {
                "rate": "false_pass_rate",
                "watch": "above",
                "bound": 0.1,
                "basis": "audited",
                "current": None,
                "alarms": [
                    {
                        "time": "2026-11-20",
                        "case_id": second,
                        "change_time": "2026-11-15",
                        "change_case_id": first,
                        "cases_since_change": 10,
                        "audited_since_change": 4,
                        "evidence": 40.0,
                    }
                ],
            }
        ],
    }
    fingerprint = {
        "judge": "faith-gpt",
        "metric": "faithfulness",
        "anchors_chosen": "2026-11-01",
        "threshold": 0.5,
        "repeats": 3,
        "run": "r1",
        "verdict": "SAME",
        "reasons": [],
        "file": "f.json",
        "anchors": [
            {
                "case_id": first,
                "stored": 1.0,
                "now": [1.0, 1.0, 1.0],
                "stored_pass": True,
                "now_pass": True,
                "straddles": False,
            }
        ],
    }
    imported = {
        "dry_run": False,
        "source": "s.json",
        "kind": "inspect",
        "import_id": "imp-1",
        "by_metric": {},
        "skipped_by_reason": [],
        "raters": {},
        "cases": {"added": 0, "unchanged": 2, "completed": 0},
        "ratings": {"new": 0, "changed": 0, "unchanged": 0, "restored": 0, "withdrawn": 1, "absent_kept": 0},
        "withdrawn": [{"rater": "ana", "metric": "faithfulness", "case_id": second, "source_id": "x"}],
    }
    with out.capture() as captured:
        print_monitor(monitor, cases)
        print_fingerprint(fingerprint, cases)
        print_import(imported, cases)
    shown = " ".join(captured.get().split())
    assert f'(case {first} ("How do I reset my password on the mobile…"))' in shown  # the change
    assert f'(case {second} ("Can I get a refund after 30 days?"))' in shown  # the alarm
    assert f'{first} ("How do I reset' in shown  # the anchor table
    assert f'of case {second} ("Can I get a refund after 30 days?")' in shown  # the withdrawn rating
