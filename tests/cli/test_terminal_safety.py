"""Terminal safety: control characters and escape sequences that come from data — case ids, case texts,
reasons, rater, metric and campaign names, file names, dates, values on the command line — never reach
the terminal raw. Every read command runs on a campaign that holds them (a screen clear, an OSC 8
hyperlink, an OSC 52 clipboard write, a one-byte CSI, carriage returns, backspaces, NUL, right-to-left
overrides), through the command line as a user runs it; its stdout and stderr may hold no control
character but the newline, its ``--json`` stays valid JSON with the text whole, and what it shows holds
the text escaped (``\\x1b[2J``), not dropped. In a real terminal (a pseudo-terminal, styles on), rich's
own styling gets through and the data's escapes still do not.

And the other way round: in the files calibrate writes (cases.jsonl from ``cases import`` and from a
RAGAS import, an adjudication template), a carriage return and a NUL are kept as data.
"""

from __future__ import annotations

import csv
import json
import os
import pty
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rich.table import Table

from calibrate import load_campaign
from calibrate.cli import main
from calibrate.cli.console import UNSAFE, SafeConsole, shown, styled

#: every attack at once: a screen clear, an OSC 8 hyperlink, an OSC 52 clipboard write, a carriage return,
#: a backspace, a NUL, a bell, a right-to-left override and isolate, a one-byte CSI (C1), DEL
ATTACK = (
    "\x1b[2J\x1b[H\x1b]8;;http://evil.example/\x07click\x1b]8;;\x07\x1b]52;c;cm0gLXJmIH4=\x07"
    "\rover\bwrite\x00nul\x07\u202egnp.exe\u2066iso\u2069\x9b31mred\x7f"
)
#: what may pass through names (ids, raters, metrics): the campaign refuses C0 controls there, not bidi marks
NAME_ATTACK = "\u202eevil\u2066x\u2069\u200f"
#: a control character, as the terminal must never get one from data (the newline is the one allowed)
RAW = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def campaign(folder: Path, *, names: bool = False) -> Path:
    """A campaign of 120 cases whose name, case texts, reasons and a second annotator's name hold
    :data:`ATTACK` (and, with ``names``, whose ids, judge and metric names hold :data:`NAME_ATTACK`): the
    first 60 cases are labelled without a time (a monitor's baseline), the last 60 are timed and every
    other one audited, so that every read command has something to read."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(3)
    n = 120
    human = (np.arange(n) % 2).astype(float)
    tag = NAME_ATTACK if names else ""
    ids = [f"c{i:03d}{tag}" for i in range(n)]
    judge, metric = f"judge{tag}", f"m{tag}"
    rows = []
    for i, case in enumerate(ids):
        labelled = i < 60 or i % 2 == 0
        if labelled:
            rows.append((case, metric, "ann", "human", human[i], "", ""))
            rows.append((case, metric, "bob" + NAME_ATTACK, "human", human[i] if i % 9 else 1 - human[i], "", ""))
        rows.append(
            (case, metric, judge, "judge", round(0.1 + 0.7 * human[i] + 0.2 * rng.random(), 3), "", "because " + ATTACK)
        )
        rows.append((case, metric, "coin", "judge", round(rng.random(), 3), "", ATTACK))
    with (folder / "ratings.csv").open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["case_id", "metric", "rater", "rater_kind", "value", "error", "reason"])
        writer.writerows(rows)
    (folder / "campaign.toml").write_text(
        f'name = {json.dumps("campaign " + ATTACK)}\n[metrics.{json.dumps(metric)}]\nscale = "binary"\n'
        f"max_false_pass = 0.2\ndescription = {json.dumps(ATTACK)}\n",
        encoding="utf-8",
    )
    t0 = pd.Timestamp("2026-11-01", tz="UTC")
    with (folder / "cases.jsonl").open("w", encoding="utf-8") as handle:
        for i, case in enumerate(ids):
            meta = {"topic": ATTACK} | ({"time": (t0 + pd.Timedelta(hours=i)).isoformat()} if i >= 60 else {})
            handle.write(
                json.dumps({"case_id": case, "input": "q " + ATTACK, "actual_output": "a " + ATTACK, "metadata": meta})
                + "\n"
            )
    return folder


def invoke(*args) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, [str(a) for a in args])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError(f"calibrate {args[0]}: a traceback") from result.exception
    return result.exit_code, result.stdout, result.stderr


def assert_safe(where: str, text: str) -> None:
    found = RAW.search(text)
    assert found is None, (
        f"{where}: raw {found.group()!r} at {found.start()}: {text[max(0, found.start() - 80) : found.start() + 40]!r}"
    )


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    base = tmp_path_factory.mktemp("hostile")
    return {"texts": campaign(base / "texts"), "names": campaign(base / "names", names=True)}


def commands(folder: Path, out: Path, names: bool) -> list[tuple]:
    """Every read command of the campaign, and a few that write beside it (report, adjudication template,
    sample), with the options each needs."""
    tag = NAME_ATTACK if names else ""
    metric, judge = f"m{tag}", f"judge{tag}"
    return [
        ("validate",),
        ("validate", "--json"),
        ("stats", "--n-boot", 20),
        ("stats", "--n-boot", 20, "--json"),
        ("stats", "--n-boot", 20, "--by", "topic"),
        ("thresholds", "--n-boot", 0),
        ("thresholds", "--n-boot", 0, "--json"),
        ("report", "--out", out / "report", "--n-boot", 20),
        ("adjudicate",),
        ("adjudicate", "--json"),
        ("adjudicate", "--template", out / "template.csv"),
        ("gate", "--n-boot", 20),
        ("gate", "--n-boot", 20, "--json"),
        ("gate", "--n-boot", 20, "--max-false-pass", 0),
        ("audit", "--metric", metric, "--old", "coin", "--new", judge, "--n-boot", 20),
        ("audit", "--metric", metric, "--old", "coin", "--new", judge, "--n-boot", 20, "--json"),
        ("monitor", "--metric", metric, "--judge", judge),
        ("monitor", "--metric", metric, "--judge", "coin", "--threshold", 0.5),
        ("monitor", "--metric", metric, "--judge", judge, "--json"),
        ("compare",),
        ("compare", "--json"),
        ("calibration", "--metric", metric, "--judge", judge),
        ("pass-rate", "--metric", metric, "--judge", judge),
        ("bias", "--metric", metric),
        ("repeatability",),
        ("sample", "--n", 5, "--name", "five"),
        # errors that quote data: an unknown judge (the message lists the campaign's), an unknown metric
        ("monitor", "--metric", metric, "--judge", "nobody" + ATTACK),
        ("stats", "--metric", "nothing" + ATTACK),
        ("audit", "--metric", metric, "--old", judge, "--new", judge),
    ]


@pytest.mark.parametrize("kind", ["texts", "names"])
def test_no_command_sends_a_control_character_from_data_to_the_terminal(folders, kind, tmp_path):
    folder = folders[kind]
    shown_escaped = 0
    for args in commands(folder, tmp_path, kind == "names"):
        code, stdout, stderr = invoke(args[0], folder, *args[1:])
        assert code in (0, 1, 2), (args, code)
        assert_safe(f"{args} stdout", stdout)
        assert_safe(f"{args} stderr", stderr)
        if "--json" in args and code in (0, 1):
            json.loads(stdout)  # valid JSON, its text escaped by the encoder
        shown_escaped += "\\x1b[2J" in stdout + stderr or "\\u202e" in stdout + stderr
    assert shown_escaped >= 10  # the text is shown, escaped, not dropped


def test_json_output_keeps_the_text_whole(folders):
    code, stdout, _ = invoke("stats", folders["names"], "--n-boot", 0, "--json")
    assert code == 0
    doc = json.loads(stdout)
    assert doc["campaign"] == "campaign " + ATTACK
    assert doc["metrics"][0]["metric"] == "m" + NAME_ATTACK
    assert {j["judge"] for j in doc["metrics"][0]["judges"]} == {"judge" + NAME_ATTACK, "coin"}


def test_the_terminal_shows_the_text_escaped(folders):
    code, stdout, _ = invoke("validate", folders["texts"])
    assert code == 0
    assert "campaign \\x1b[2J\\x1b[H\\x1b]8;;http://evil.example/\\x07click" in stdout
    assert "\\rover\\x08write\\x00nul\\x07\\u202egnp.exe\\u2066iso\\u2069\\x9b31mred\\x7f" in stdout


@pytest.mark.parametrize(
    "args",
    [
        ("validate", "{folder}" + "\x1b[2J\u202e"),  # a folder that does not exist, its name quoted
        ("no-such-command" + ATTACK,),  # click's own errors
        ("stats", "{folder}", "--n-boot", "x" + ATTACK),
        ("sample", "{folder}", "--n", 3, "--name", "../" + ATTACK),
        ("gate", "{folder}", "--metric", ATTACK),
    ],
)
def test_error_messages_escape_what_they_quote(folders, args):
    folder = str(folders["texts"])
    code, stdout, stderr = invoke(*[str(a).replace("{folder}", folder) for a in args])
    assert code == 2, (stdout, stderr)
    assert_safe("stdout", stdout)
    assert_safe("stderr", stderr)
    assert "\\x1b" in stderr or "\\u202e" in stderr, stderr


def test_a_date_that_is_no_date_is_quoted_escaped(tmp_path):
    folder = campaign(tmp_path / "c")
    cases = [json.loads(line) for line in (folder / "cases.jsonl").read_text().splitlines()]
    cases[70]["metadata"]["time"] = "tomorrow" + ATTACK
    (folder / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    code, _stdout, stderr = invoke("monitor", folder, "--metric", "m", "--judge", "judge")
    assert code == 2 and "tomorrow\\x1b[2J" in stderr.replace("\n", "")
    assert_safe("stderr", stderr)


def test_a_folder_name_with_escapes_is_shown_escaped(tmp_path):
    folder = campaign(tmp_path / ("camp\x1b]0;title\x07\u202e"))
    for args in (("validate",), ("report", "--out", folder / "out", "--n-boot", 0), ("sample", "--n", 3)):
        code, stdout, stderr = invoke(args[0], folder, *args[1:])
        assert code == 0, stderr
        assert_safe(f"{args}", stdout + stderr)
        if args[0] != "validate":  # the files written are named, escaped
            assert "camp\\x1b]0;title\\x07\\u202e" in stdout.replace("\n", ""), stdout


# ------------------------------------------------------------------------------------ a real terminal
def in_a_terminal(args: list[str]) -> tuple[int, str]:
    """``calibrate ARGS`` in a pseudo-terminal (styles, progress bars and all), its bytes as text."""
    master, slave = pty.openpty()
    env = {**os.environ, "COLUMNS": "140", "LINES": "50", "TERM": "xterm-256color"}
    env.pop("NO_COLOR", None)
    proc = subprocess.Popen(
        [str(Path(sys.executable).parent / "calibrate"), *args],
        stdout=slave,
        stderr=slave,
        stdin=subprocess.DEVNULL,
        env=env,
    )
    os.close(slave)
    chunks = []
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(master)
    return proc.wait(timeout=300), b"".join(chunks).decode()


#: what rich itself sends a terminal: colours and styles (SGR), the cursor hidden and shown, lines erased
#: and the cursor moved up (the progress bar), carriage returns (the terminal's own newline, and the bar)
RICH = re.compile(r"\x1b\[[0-9;]*m|\x1b\[\?25[lh]|\x1b\[2K|\x1b\[[0-9]*A|\r")


@pytest.mark.parametrize(
    "command",
    [["stats", "--n-boot", "200"], ["gate", "--n-boot", "200"], ["thresholds", "--n-boot", "200"], ["adjudicate"]],
)
def test_in_a_real_terminal_styles_pass_and_the_data_escapes_do_not(folders, command):
    code, text = in_a_terminal([command[0], str(folders["names"]), *command[1:]])
    assert code in (0, 1), text
    assert "\x1b[" in text  # rich styled it: this is a terminal
    assert_safe(" ".join(command), RICH.sub("", text))
    for raw in ("\x1b[2J", "\x1b]8;;", "\x1b]52;", "\x00", "\u202e", "\x9b", "\x08"):
        assert raw not in text, repr(raw)


# ------------------------------------------------------------------------------------ the console itself
hostile = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=30) | st.sampled_from(
    [ATTACK, NAME_ATTACK, "\x1b", "\r\n", "\x1b[31mred\x1b[0m", "[bold]x[/bold]", ":smile:"]
)


@settings(max_examples=200, deadline=None)
@given(label=hostile, text=hostile, cell=hostile, title=hostile)
def test_the_console_escapes_every_text_it_is_given_and_keeps_its_own_styles(label, text, cell, title):
    import io

    buffer = io.StringIO()
    console = SafeConsole(file=buffer, force_terminal=True, color_system="truecolor", width=100)
    table = Table(title=title, caption=cell)
    table.add_column(cell)
    table.add_column("n")
    table.add_row(cell, styled("red", label, text))
    console.print(table)
    console.print(styled("bold red", "error: ", text), soft_wrap=True)
    console.print(label + text)
    printed = buffer.getvalue()
    assert_safe("console", re.sub(r"\x1b\[[0-9;]*m", "", printed))
    assert "\x1b[1;31m" in printed  # rich's own style, untouched
    assert shown(shown(text)) == shown(text)  # escaping is done once
    assert not UNSAFE.search(shown(text)) and (shown(text) == text) == (not UNSAFE.search(text))


@settings(
    max_examples=int(os.environ.get("ATTACK_EXAMPLES", 15)), deadline=None, suppress_health_check=list(HealthCheck)
)
@given(text=hostile, name=st.text(st.characters(whitelist_categories=("Cf", "Zl", "Zp", "Ll")), min_size=1, max_size=8))
def test_any_text_in_any_field_never_reaches_the_terminal_raw(tmp_path_factory, text, name):
    folder = tmp_path_factory.mktemp("any")
    ids = [f"c{i}" for i in range(12)]
    rows = [(c, "m", "ann", "human", i % 2, "", "") for i, c in enumerate(ids)]
    rows += [
        (c, "m", "j" + name, "judge", round(0.3 + 0.4 * (i % 2) + 0.01 * i, 2), "", text) for i, c in enumerate(ids)
    ]
    with (folder / "ratings.csv").open("w", newline="", encoding="utf-8") as handle:
        csv.writer(handle).writerows([("case_id", "metric", "rater", "rater_kind", "value", "error", "reason"), *rows])
    (folder / "campaign.toml").write_text(f'name = {json.dumps(text or "x")}\n[metrics.m]\nscale = "binary"\n')
    (folder / "cases.jsonl").write_text("".join(json.dumps({"case_id": c, "input": text}) + "\n" for c in ids))
    for args in (
        ("validate",),
        ("thresholds", "--n-boot", 0),
        ("gate", "--n-boot", 0, "--min-labels", 2),
        ("stats", "--n-boot", 0, "--judge", "j" + name),
    ):
        _code, stdout, stderr = invoke(args[0], folder, *args[1:])
        assert_safe(f"{args} stdout", stdout)
        assert_safe(f"{args} stderr", stderr)


# ------------------------------------------------------------------------------------ files keep the text
KEPT = ["a\rb", "nul\x00byte", "crlf\r\nline", "esc\x1b[2J", "\u202eright-to-left", "tab\there", "bell\x07"]


def test_cases_import_keeps_carriage_returns_and_nul_in_cases_jsonl(tmp_path):
    folder = campaign(tmp_path / "c")
    source = tmp_path / "goldens.jsonl"
    source.write_text(
        "".join(json.dumps({"input": t, "actual_output": "out " + t, "expected_output": t}) + "\n" for t in KEPT)
    )
    code, stdout, stderr = invoke("cases", "import", folder, source)
    assert code == 0, stderr
    assert_safe("stdout", stdout + stderr)
    cases = load_campaign(folder).cases
    found = {c["input"]: c for c in cases.values() if c["input"] in KEPT}
    assert sorted(found) == sorted(KEPT)
    assert all(found[t]["actual_output"] == "out " + t for t in KEPT)


def test_a_ragas_import_keeps_carriage_returns_and_nul_in_cases_jsonl(tmp_path):
    folder = tmp_path / "c"
    folder.mkdir()
    (folder / "campaign.toml").write_text(
        'name = "r"\n[metrics.faithfulness]\nscale = "continuous"\nrange = [0, 1]\nhuman_pass = 0.5\n'
    )
    (folder / "ratings.csv").write_text("case_id,metric,rater,rater_kind,value\n")
    result = tmp_path / "ragas.csv"
    with result.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["user_input", "response", "retrieved_contexts", "faithfulness"])
        for i, t in enumerate(KEPT):
            writer.writerow([f"q{i} {t}", f"a{i} {t}", json.dumps([f"ctx {t}"]), 0.5])
    code, stdout, stderr = invoke("import", "ragas", folder, result, "--rater", "ragas-judge")
    assert code == 0, stderr
    assert_safe("output", stdout + stderr)
    cases = load_campaign(folder).cases
    inputs = sorted(c["input"] for c in cases.values())
    assert inputs == sorted(f"q{i} {t}" for i, t in enumerate(KEPT))
    assert sorted(c["actual_output"] for c in cases.values()) == sorted(f"a{i} {t}" for i, t in enumerate(KEPT))


def test_an_adjudication_template_keeps_the_case_text_whole(folders, tmp_path):
    template = tmp_path / "template.csv"
    code, _stdout, stderr = invoke("adjudicate", folders["texts"], "--template", template)
    assert code == 0, stderr
    with template.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert rows and all(row["input"] == "q " + ATTACK and row["actual_output"] == "a " + ATTACK for row in rows)


def test_clicks_own_errors_go_through_the_console_too():
    """A usage error whose message quotes data raw (a check that forgot to quote it) is escaped as well."""
    import click

    @click.command("raw-usage-error")
    def raw() -> None:
        raise click.BadParameter("no such name: " + ATTACK)

    main.add_command(raw)
    try:
        code, stdout, stderr = invoke("raw-usage-error")
    finally:
        main.commands.pop("raw-usage-error")
    assert code == 2 and "Usage: " in stderr and "no such name: \\x1b[2J" in stderr
    assert_safe("stderr", stdout + stderr)
