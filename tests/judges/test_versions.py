"""Every judge run stays addressable: a judge's model swapped in place in campaign.toml, ``calibrate judge``
run again, then the earlier ratings named (``JUDGE@MODEL``, ``JUDGE@RUN_ID``) and audited against the new
ones, through the real DeepEval faithfulness metric and the scripted judge server on 127.0.0.1.

The old model (``gpt-4o-mini``) judges carefully; the new one (``claude-3-5-haiku-noisy``, another family)
flips a fifth of its verdicts, so the server tells the two apart and the audit must see the loss.
"""

import json
import shlex
import sqlite3
import subprocess
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import calibrate
from calibrate.cli import judges as judges_cli
from calibrate.cli import main
from calibrate.cli.console import SafeConsole
from calibrate.judges.store import STORE_NAME
from calibrate.judges.versions import find_version, judge_versions, version_scores
from tests.conftest import assert_clear_error, write_campaign
from tests.judges.test_runner import CALLS_PER_CASE, make_cases

OLD_MODEL, NEW_MODEL = "gpt-4o-mini", "claude-3-5-haiku-noisy"
JUDGE = "faith-gpt4omini"
N = 60


def toml(url: str, model: str, family: str, settings: str = "") -> str:
    return f"""
name = "swap"
[metrics.faithfulness]
scale = "binary"
[judges.{JUDGE}]
library = "deepeval"
metric = "faithfulness"
model = {{ provider = "openai", name = "{model}", base_url = "{url}" }}
family = "{family}"
{settings}
"""


def cli(*args, expect: int = 0) -> subprocess.CompletedProcess:
    """``calibrate ARGS`` run in this process (the same commands and outputs as a subprocess, without
    importing DeepEval again for each: about 4 s of CPU a command), its exit code checked."""
    done = CliRunner().invoke(main, [str(a) for a in args])
    assert done.exit_code == expect, (args, done.exit_code, done.stdout[-3000:], done.stderr[-3000:], done.exception)
    return subprocess.CompletedProcess(args, done.exit_code, done.stdout, done.stderr)


def judged(tmp_path: Path, url: str, n: int = N) -> Path:
    cases = make_cases(n)
    humans = pd.DataFrame(
        {
            "case_id": [c["case_id"] for c in cases],
            "metric": "faithfulness",
            "rater": "ann",
            "rater_kind": "human",
            "value": [1 if i % 2 == 0 else 0 for i in range(n)],
        }
    )
    folder = write_campaign(tmp_path / "swap", toml(url, OLD_MODEL, "gpt"), humans, cases)
    cli("judge", folder)
    return folder


def exported(folder: Path) -> dict[str, float]:
    rows = pd.read_csv(folder / "judge_ratings.csv", keep_default_na=False)
    assert set(rows["rater"]) == {JUDGE} and (rows["run_id"] == "").all()
    return dict(zip(rows["case_id"], rows["value"].astype(float)))


def test_an_in_place_model_swap_keeps_the_earlier_ratings_named_and_audited(tmp_path, server):
    folder = judged(tmp_path, server.url)
    before = exported(folder)
    assert len(before) == N and server.by_model[OLD_MODEL] == N * CALLS_PER_CASE
    [first_run] = [p.stem for p in (folder / "judge_runs").glob("*.json")]

    (folder / "campaign.toml").write_text(toml(server.url, NEW_MODEL, "claude"))
    swapped = cli("judge", folder)
    assert server.by_model[NEW_MODEL] == N * CALLS_PER_CASE  # the new model scored every case
    out = " ".join(swapped.stdout.split())
    assert (
        f"{JUDGE} changed since run {first_run}: model name: {OLD_MODEL} -> {NEW_MODEL}; family: gpt -> claude" in out
    )
    assert f"its {N} earlier rating(s) stay in the store as {JUDGE}@{OLD_MODEL}" in out
    command = next(line.strip() for line in swapped.stdout.splitlines() if line.strip().startswith("calibrate audit"))
    assert command == (
        f"calibrate audit {shlex.quote(str(folder))} --metric faithfulness --old {JUDGE}@{OLD_MODEL} --new {JUDGE}"
    )

    # the current ratings are the new model's only: no case keeps the old model's value under the name
    after = exported(folder)
    assert len(after) == N and after != before
    doc = json.loads(cli("judge", folder, "--json").stdout)  # a rerun: all cached, nothing changed
    assert {r["case_id"]: r["value"] for r in doc["ratings"]} == after
    [summary] = doc["judges"]
    assert summary["changed"] is None and summary["calls"] == 0
    assert [(e["name"], e["model"], e["ratings"], e["runs"]) for e in summary["earlier"]] == [
        (f"{JUDGE}@{OLD_MODEL}", OLD_MODEL, N, [first_run])
    ]

    # the natural move names the same ratings twice: refused, naming the earlier version and the audit
    refused = cli("audit", folder, "--metric", "faithfulness", "--old", JUDGE, "--new", JUDGE, expect=2)
    message = " ".join(refused.stderr.split())
    assert f"{JUDGE}@{OLD_MODEL} (model {OLD_MODEL}" in message
    assert f"--old {JUDGE}@{OLD_MODEL} --new {JUDGE}" in message

    # the command calibrate judge printed, run as printed: old and new paired on the same cases
    audit = json.loads(cli(*shlex.split(command)[1:], "--json", "--n-boot", 400, expect=1).stdout)
    assert audit["n"] == N and audit["old"]["model"] == OLD_MODEL and audit["new"]["model"] == NEW_MODEL
    assert audit["old"]["judge"] == f"{JUDGE}@{OLD_MODEL}" and audit["new"]["judge"] == JUDGE
    assert audit["old"]["auc"]["estimate"] == 1.0 and audit["new"]["auc"]["estimate"] < 0.95
    assert audit["decision"]["decision"] == "inferior" and audit["decision"]["exit_code"] == 1
    assert audit["versions"]["old"]["runs"] == [first_run] and not audit["versions"]["old"]["current"]
    assert audit["versions"]["new"]["model"] == NEW_MODEL and audit["versions"]["new"]["current"]
    # the same ratings, named by the run that made them (whole, or its last six characters)
    c = calibrate.load_campaign(folder)
    for name in (f"{JUDGE}@{first_run}", f"{JUDGE}@{first_run[-6:]}"):
        found = find_version(c, "faithfulness", name)
        assert dict(zip(found.scores.case_ids, found.scores.values)) == before
        assert found.source == find_version(c, "faithfulness", f"{JUDGE}@{OLD_MODEL}").source
    assert find_version(c, "faithfulness", f"{JUDGE}@{NEW_MODEL}").source == ("current", JUDGE)

    # validate and stats say which names reach the earlier ratings
    for command_name in ("validate", "stats"):
        shown = " ".join(
            cli(command_name, folder, *(["--n-boot", 100] if command_name == "stats" else [])).stdout.split()
        )
        assert f"{JUDGE}@{OLD_MODEL} (model {OLD_MODEL}, {N} rating(s) of the present cases" in shown


def test_the_earlier_version_has_no_rating_of_a_case_edited_since(tmp_path, server):
    folder = judged(tmp_path, server.url, n=8)
    (folder / "campaign.toml").write_text(toml(server.url, NEW_MODEL, "claude"))
    cases = [json.loads(line) for line in (folder / "cases.jsonl").read_text().splitlines()]
    cases[1]["actual_output"] = "Fact 1 is true."  # edited after the old model rated it
    (folder / "cases.jsonl").write_text("".join(json.dumps(case) + "\n" for case in cases))
    cli("judge", folder)
    c = calibrate.load_campaign(folder)
    old = find_version(c, "faithfulness", f"{JUDGE}@{OLD_MODEL}").scores
    assert "c001" not in old.case_ids and old.case_ids.size == 7  # its rating was of another text
    assert "c001" in find_version(c, "faithfulness", JUDGE).scores.case_ids


def test_a_settings_change_under_the_same_model_is_named_by_run(tmp_path, server):
    folder = judged(tmp_path, server.url, n=6)
    [first_run] = [p.stem for p in (folder / "judge_runs").glob("*.json")]
    (folder / "campaign.toml").write_text(toml(server.url, OLD_MODEL, "gpt", "settings = { threshold = 0.7 }"))
    doc = json.loads(cli("judge", folder, "--json").stdout)
    changed = doc["judges"][0]["changed"]
    assert changed["changes"] == ["settings threshold: none -> 0.7"] and changed["from"] == f"{JUDGE}@{first_run}"
    assert changed["audit"] == {"metric": "faithfulness", "old": f"{JUDGE}@{first_run}", "new": JUDGE}
    c = calibrate.load_campaign(folder)
    with pytest.raises(ValueError, match="fits 2 versions"):  # the model no longer tells them apart
        find_version(c, "faithfulness", f"{JUDGE}@{OLD_MODEL}")
    assert find_version(c, "faithfulness", f"{JUDGE}@{first_run}").version.runs == (first_run,)


def test_runs_stored_before_versions_were_recorded_are_named_alike(tmp_path, server):
    """A store written before the manifests held each judge's key template: the template is rebuilt from
    the settings the manifest recorded, the same version is found, and an unchanged rerun is no change."""
    folder = judged(tmp_path, server.url, n=6)
    with sqlite3.connect(folder / STORE_NAME) as db:
        for run_id, text in db.execute("SELECT run_id, manifest FROM runs").fetchall():
            manifest = json.loads(text)
            for judge in manifest["judges"]:
                del judge["key_template"], judge["fields"]
            db.execute("UPDATE runs SET manifest = ? WHERE run_id = ?", (json.dumps(manifest), run_id))
    c = calibrate.load_campaign(folder)
    [[legacy]] = judge_versions(c).values()
    assert legacy.current and legacy.name == JUDGE
    assert version_scores(c, legacy).case_ids.size == 6
    again = json.loads(cli("judge", folder, "--json").stdout)["judges"][0]
    assert again["changed"] is None and again["earlier"] == [] and again["from_cache"] == 6
    (folder / "campaign.toml").write_text(toml(server.url, NEW_MODEL, "claude"))
    cli("judge", folder)
    found = find_version(calibrate.load_campaign(folder), "faithfulness", f"{JUDGE}@{OLD_MODEL}")
    assert len(found.version.runs) == 2 and found.scores.case_ids.size == 6  # the legacy run and the new one


def test_a_version_run_with_repeats_is_named_per_repeat(tmp_path, server):
    folder = judged(tmp_path, server.url, n=4)
    cli("judge", folder, "--repeats", 2)
    (folder / "campaign.toml").write_text(toml(server.url, NEW_MODEL, "claude"))
    cli("judge", folder)
    c = calibrate.load_campaign(folder)
    with pytest.raises(ValueError, match="2 repeats: name one"):
        find_version(c, "faithfulness", f"{JUDGE}@{OLD_MODEL}")
    second = find_version(c, "faithfulness", f"{JUDGE}@{OLD_MODEL}@repeat-1").scores
    assert second.name == f"{JUDGE}@{OLD_MODEL}@repeat-1" and second.case_ids.size == 4
    with pytest.raises(ValueError, match="repeats 0 to 1, not 2"):
        find_version(c, "faithfulness", f"{JUDGE}@{OLD_MODEL}@repeat-2")


def test_an_unknown_version_lists_the_names_there_are(tmp_path, server):
    folder = judged(tmp_path, server.url, n=4)
    (folder / "campaign.toml").write_text(toml(server.url, NEW_MODEL, "claude"))
    cli("judge", folder)
    refused = cli("audit", folder, "--metric", "faithfulness", "--old", f"{JUDGE}@gpt-5", "--new", JUDGE, expect=2)
    message = " ".join(refused.stderr.split())
    assert "did not rate faithfulness" in message and f"{JUDGE}@{OLD_MODEL} (model {OLD_MODEL}, earlier" in message


# ------------------------------------------------------------------------------ the judge summary's display
def run_doc(**judge) -> dict:
    base = {
        "judge": "faithfulness-deepeval-claude-3-5-sonnet",
        "model": "anthropic/claude-3-5-sonnet-20241022-v2",
        "scored": 60,
        "failed": 0,
        "from_cache": 0,
        "skipped": 0,
        "unscored": 0,
        "self_eval": 0,
        "calls": 240,
        "tokens": 49_944,
        "cost": None,
        "seconds": 11.7,
        "errors": [],
        "rescored_suspect": 0,
        "earlier": [],
        "changed": None,
    }
    return {
        "run_id": "20261203T081942Z-f3d5d4",
        "seconds": 3.5,
        "stopped": [],
        "judges": [base | judge, base | {"judge": "answer-relevancy-ragas-gpt-4.1-mini", "model": "gpt-4.1-mini"}],
        "exported": {},
    }


def shown(doc: dict, width: int, monkeypatch) -> str:
    console = SafeConsole(width=width, record=True, file=open("/dev/null", "w"))
    monkeypatch.setattr(judges_cli, "out", console)
    judges_cli.print_run(doc, "my campaign")
    return console.export_text()


@pytest.mark.parametrize("width", [200, 120, 80, 40])
def test_the_judge_summary_cuts_no_name_nor_header(width, monkeypatch):
    """Long judge and model names, every column non-zero: a table where it fits, else one line per judge
    (which the terminal wraps): never a name or a header cut short."""
    text = shown(run_doc(failed=3, unscored=2, skipped=1, self_eval=4, cost=0.01234), width, monkeypatch)
    assert "…" not in text
    for whole in (
        "faithfulness-deepeval-claude-3-5-sonnet",
        "anthropic/claude-3-5-sonnet-20241022-v2",
        "answer-relevancy-ragas-gpt-4.1-mini",
        "gpt-4.1-mini",
        "failed",
        "unscored",
        "skipped",
        "own family",
        "cost (USD)",
        "0.0123",
        "49,944",
    ):
        assert whole in text, (whole, text)
    table = [line for line in text.splitlines() if line.split()[:2] == ["judge", "model"]]
    assert len(table) == (width == 200) and all(len(line) <= width for line in table)


def test_the_judge_summary_leaves_out_all_zero_columns_and_says_what_a_cached_run_cost(monkeypatch):
    text = shown(run_doc(judge="faith-gpt4omini", model="claude-3-5-haiku-20241022"), 120, monkeypatch)
    header = next(line for line in text.splitlines() if "judge" in line and "model" in line)
    assert header.split() == ["judge", "model", "scored", "cached", "calls", "tokens", "cost", "(USD)", "time", "(s)"]
    assert "cost unknown: the replies reported none and the model declares no price" in " ".join(text.split())
    cached = run_doc(judge="faith-gpt4omini", scored=0, from_cache=60, calls=0, tokens=0, seconds=0.0)
    cached["judges"] = [cached["judges"][0]]
    text = shown(cached, 120, monkeypatch)
    header = next(line for line in text.splitlines() if "judge" in line and "model" in line)
    assert header.split() == ["judge", "model", "scored", "cached"]
    assert "every rating came from the store: no model call, nothing spent" in text and " - " not in text


def test_the_judge_summary_prints_the_audit_to_run_quoted(monkeypatch):
    doc = run_doc(
        changed={
            "from": "j@gpt-4o-mini",
            "model": "gpt-4o-mini",
            "last_run": "r1",
            "ratings": 60,
            "changes": ["model name: gpt-4o-mini -> claude"],
            "audit": {"metric": "faithfulness", "old": "j@gpt-4o-mini", "new": "j"},
        }
    )
    text = shown(doc, 200, monkeypatch)
    assert "calibrate audit 'my campaign' --metric faithfulness --old j@gpt-4o-mini --new j" in text


# ------------------------------------------------------------------------------------------- attacks
@pytest.fixture(scope="module")
def swapped(tmp_path_factory):
    """A campaign whose judge ran with two models, for the attacks below (which do not call a model)."""
    from tests.servers.judge_server import JudgeServer

    with JudgeServer() as server:
        tmp_path = tmp_path_factory.mktemp("attacks")
        folder = judged(tmp_path, server.url, n=6)
        (folder / "campaign.toml").write_text(toml(server.url, NEW_MODEL, "claude"))
        cli("judge", folder)
    return folder


TEXT = st.text(st.characters(blacklist_categories=["Cs"]), max_size=40)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    name=st.one_of(
        TEXT,
        TEXT.map(lambda t: f"{JUDGE}@{t}"),
        TEXT.map(lambda t: f"{JUDGE}@{OLD_MODEL}@{t}"),
        st.sampled_from(
            [
                f"{JUDGE}@",
                "@",
                "@@",
                f"{JUDGE}@@",
                f"{JUDGE}@{OLD_MODEL}@repeat-",
                f"{JUDGE}@{OLD_MODEL}@repeat-99999999999999999999",
                f"{JUDGE}@repeat-0",
                f"{JUDGE}@{OLD_MODEL}@repeat-0@repeat-0",
                f"{JUDGE}\x00@{OLD_MODEL}",
            ]
        ),
    )
)
def test_any_name_is_found_or_refused_in_plain_words(swapped, name):
    c = calibrate.load_campaign(swapped)
    try:
        found = find_version(c, "faithfulness", name)
    except ValueError as exc:
        assert str(exc) and "Traceback" not in str(exc)
        return
    assert (
        name in (JUDGE, f"{JUDGE}@{NEW_MODEL}", f"{JUDGE}@{OLD_MODEL}", f"{JUDGE}@{OLD_MODEL}@repeat-0")
        or name.startswith(f"{JUDGE}@20")
        or len(name.rsplit("@", 1)[-1]) == 6
    ), name
    assert found.scores.case_ids.size == 6


def test_a_weird_name_on_the_command_line_is_a_usage_error(swapped):
    for name in (f"{JUDGE}@\x1b[2J\u202eevil", f"{JUDGE}@a\nb", "[red]x[/red]@y"):
        done = cli("audit", swapped, "--metric", "faithfulness", "--old", name, "--new", JUDGE, expect=2)
        assert "Traceback" not in done.stderr and "\x1b[2J" not in done.stderr and "\u202e" not in done.stderr


MANIFEST_ATTACKS = [
    "",
    "{",
    "not json",
    "\x00",
    "[]",
    "null",
    '{"judges": 3}',
    '{"judges": [1, 2]}',
    '{"judges": [{}]}',
    '{"judges": [{"name": "faith-gpt4omini", "library": "deepeval", "metric": "faithfulness", "model": "x"}]}',
    '{"repeats": -1, "judges": []}',
    '{"repeats": 1e300}',
    '{"repeats": 100000000000}',
    '{"repeats": "many", "judges": []}',
    "[" * 100_000 + "]" * 100_000,
]


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4),
    max_leaves=20,
)
JUDGE_ENTRIES = st.builds(
    lambda model, settings_, template, fields, repeats: json.dumps(
        {
            "repeats": repeats,
            "judges": [
                {
                    "name": JUDGE,
                    "library": "deepeval",
                    "metric": "faithfulness",
                    "into": "faithfulness",
                    "model": model,
                    "settings": settings_,
                    "key_template": template,
                    "fields": fields,
                    "dag_tree": settings_,
                }
            ],
        }
    ),
    st.dictionaries(TEXT, TEXT | st.integers(), max_size=3),
    st.dictionaries(TEXT, st.lists(TEXT | st.integers()), max_size=3),
    st.none() | st.dictionaries(TEXT, TEXT, max_size=3),
    st.none() | st.lists(TEXT, max_size=3),
    st.integers(-3, 5),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.sampled_from(MANIFEST_ATTACKS) | JSON_VALUES.map(json.dumps) | JUDGE_ENTRIES)
def test_a_run_manifest_edited_by_hand_is_read_or_left_out(swapped, tmp_path_factory, text):
    """A store's run manifests, edited by hand (a person can open the SQLite file): each is read through
    its schema or left out, the other runs stay named, and nothing raises but a plain ValueError."""
    import shutil

    folder = tmp_path_factory.mktemp("edited") / "swap"
    shutil.copytree(swapped, folder)
    with sqlite3.connect(folder / STORE_NAME) as db:
        first = db.execute("SELECT run_id FROM runs ORDER BY rowid").fetchone()[0]
        db.execute("INSERT INTO runs (run_id, started, manifest) VALUES ('edited', '2030-01-01', ?)", (text,))
    c = calibrate.load_campaign(folder)
    versions = judge_versions(c)
    assert first in {r for v in versions.get(JUDGE, []) for r in v.runs}  # the genuine runs are still named
    for name in (JUDGE, f"{JUDGE}@edited", f"{JUDGE}@{first}"):
        try:
            find_version(c, "faithfulness", name)
        except ValueError as exc:
            assert_clear_error(exc, name, JUDGE)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    campaign=st.text(st.characters(blacklist_categories=["Cc", "Cs", "Zl", "Zp"]), min_size=1, max_size=30),
    old=st.text(st.characters(blacklist_categories=["Cc", "Cs", "Zl", "Zp"]), min_size=1, max_size=30),
)
def test_the_printed_audit_command_runs_as_printed_whatever_the_names(campaign, old, monkeypatch):
    assume(not set(campaign + old) & set("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"))
    doc = run_doc(
        changed={
            "from": old,
            "model": "m",
            "last_run": "r1",
            "ratings": 6,
            "changes": ["x"],
            "audit": {"metric": "faithfulness", "old": old, "new": "j"},
        }
    )
    console = SafeConsole(width=10_000, record=True, file=open("/dev/null", "w"))
    monkeypatch.setattr(judges_cli, "out", console)
    judges_cli.print_run(doc, campaign)
    [line] = [line.strip() for line in console.export_text().splitlines() if line.strip().startswith("calibrate audit")]
    assert shlex.split(line) == ["calibrate", "audit", campaign, "--metric", "faithfulness", "--old", old, "--new", "j"]


def test_the_report_audits_an_earlier_version_by_name(swapped, tmp_path):
    cli(
        "report",
        swapped,
        "--out",
        tmp_path / "out",
        "--audit",
        f"{JUDGE}@{OLD_MODEL}",
        JUDGE,
        "--n-boot",
        100,
        expect=0,
    )
    [audit] = json.loads((tmp_path / "out" / "report.json").read_text())["audits"]
    assert (audit["old"]["judge"], audit["old"]["model"], audit["new"]["model"]) == (
        f"{JUDGE}@{OLD_MODEL}",
        OLD_MODEL,
        NEW_MODEL,
    )
