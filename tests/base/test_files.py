"""One writer at a time, for every writer: every command that writes a campaign holds it (a file lock) from
the moment it reads the campaign until its last write; a second writer waits, up to CALIBRATE_LOCK_TIMEOUT
seconds (60 by default), then refuses naming the holder; a killed holder leaves nothing stuck; a writer
calling another writer in the same process holds it again at once.

The issue's race: two first imports into one campaign at once both said "added", and in ~40% of trials
one import's cases and ratings were gone. Here they run as two processes at once, again and again, and
both imports must be there every time (or one refuse, saying so); never a silent loss.

A new writer cannot forget the lock: every command of the command line is classified here (one that
writes must reach its library function through ``@writes_campaign``), and a scan of the source finds
every library function that writes a file or a store and checks that each is declared a writer or only
ever called by one."""

from __future__ import annotations

import ast
import hashlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import click
import pandas as pd
import pytest
from click.testing import CliRunner

import calibrate
from calibrate import load_campaign
from calibrate.cli import main
from tests.conftest import run_cli, write_campaign

CALIBRATE = str(Path(sys.executable).parent / "calibrate")
TRIALS = int(os.environ.get("RACE_TRIALS", 8))

#: a process that holds a campaign (as a writer would) until it is told to stop, or killed
HOLDER = """
import select, sys
from calibrate.base.files import holding
with holding(sys.argv[1], "calibrate test-holder"):
    print("held", flush=True)
    select.select([sys.stdin], [], [], float(sys.argv[2]))
"""


class Holder:
    """Another process holding the campaign ``folder`` for ``seconds``."""

    def __init__(self, folder: Path, seconds: float = 60):
        self.process = subprocess.Popen(
            [sys.executable, "-c", HOLDER, str(folder), str(seconds)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        line = self.process.stdout.readline()
        assert line.strip() == "held", self.process.stderr.read()
        self.pid = self.process.pid

    def finish(self) -> None:
        """Tell the holder to finish its work now (it leaves the campaign as a writer that is done would)."""
        self.process.stdin.write("\n")
        self.process.stdin.flush()
        self.process.wait(timeout=60)

    def __enter__(self) -> Holder:
        return self

    def __exit__(self, *exc) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()


def new_campaign(folder: Path) -> Path:
    calibrate.init_campaign(folder, ["faithfulness"])
    return folder


def goldens(path: Path, tag: str, n: int = 5) -> Path:
    path.write_text(
        "".join(
            json.dumps({"input": f"{tag} question {i}?", "actual_output": f"{tag} answer {i}."}) + "\n"
            for i in range(n)
        )
    )
    return path


def deepeval_run(path: Path, tag: str, n: int = 5) -> Path:
    """A DeepEval test run of ``n`` cases of its own, each scored by the judge ``judge-TAG``."""
    cases = [
        {
            "name": f"{tag}-{i}",
            "input": f"{tag} question {i}?",
            "actualOutput": f"{tag} answer {i}.",
            "metricsData": [
                {
                    "name": "Faithfulness",
                    "score": (i % 3) / 2,
                    "evaluationModel": f"judge-{tag}",
                    "success": True,
                    "threshold": 0.5,
                }
            ],
        }
        for i in range(n)
    ]
    path.write_text(json.dumps({"testCases": cases}))
    return path


def files_of(folder: Path) -> dict[str, str]:
    """Every file of the campaign (the lock file aside), by content hash."""
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.name != ".calibrate.lock"
    }


# ---- the race ------------------------------------------------------------------------------------------------


def test_two_first_imports_at_once_both_land_every_time(tmp_path):
    """The issue's race, as a user meets it: two `calibrate import deepeval` of two test runs into a new
    campaign at once. Each must end with all its cases and ratings, or refuse saying so."""
    losses, refusals = [], 0
    for trial in range(TRIALS):
        folder = new_campaign(tmp_path / f"c{trial}")
        runs = [deepeval_run(tmp_path / f"run-{trial}-{tag}.json", tag) for tag in ("a", "b")]
        processes = [
            subprocess.Popen(
                [CALIBRATE, "import", "deepeval", str(folder), str(run)],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for run in runs
        ]
        results = [(p.wait(timeout=300), p.stderr.read()) for p in processes]
        landed = set()
        for (code, stderr), tag in zip(results, ("a", "b")):
            if code == 2 and "in use by" in stderr:
                refusals += 1
                continue
            assert code == 0, stderr
            landed.add(tag)
        c = load_campaign(folder)
        for tag in landed:
            cases = {cid for cid, case in c.cases.items() if case["input"].startswith(f"{tag} ")}
            ratings = c.ratings[c.ratings["rater"] == f"judge-{tag}"]
            if len(cases) != 5 or len(ratings) != 5:
                losses.append((trial, tag, len(cases), len(ratings)))
    assert losses == [], f"{len(losses)} import(s) of {2 * TRIALS} lost: {losses}"
    assert refusals == 0  # the second waited for the first (60 s by default), then imported


def test_two_cases_imports_at_once_keep_both(tmp_path):
    losses = []
    for trial in range(TRIALS // 2):
        folder = new_campaign(tmp_path / f"c{trial}")
        files = [goldens(tmp_path / f"g-{trial}-{tag}.jsonl", tag) for tag in ("a", "b")]
        processes = [
            subprocess.Popen(
                [CALIBRATE, "cases", "import", str(folder), str(f)],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for f in files
        ]
        assert [p.wait(timeout=300) for p in processes] == [0, 0], [p.stderr.read() for p in processes]
        inputs = [json.loads(line)["input"] for line in (folder / "cases.jsonl").read_text().splitlines()]
        if len(inputs) != 10:
            losses.append((trial, len(inputs)))
    assert losses == []


COUNTER = """
import sys, time
from pathlib import Path
from calibrate.base.files import holding
folder = Path(sys.argv[1])
for _ in range(int(sys.argv[2])):
    with holding(folder, "calibrate counter"):
        n = int((folder / "counter").read_text())
        time.sleep(0.001)
        (folder / "counter").write_text(str(n + 1))
"""


def test_many_writers_hammering_one_campaign_never_overlap(tmp_path):
    """Read, wait, write back plus one, in four processes at once: any overlap loses a count. (Each
    holder removes the lock file as it lets go; one waiting on the removed file takes the new one.)"""
    folder = new_campaign(tmp_path / "c")
    (folder / "counter").write_text("0")
    processes = [subprocess.Popen([sys.executable, "-c", COUNTER, str(folder), "40"]) for _ in range(4)]
    assert [p.wait(timeout=300) for p in processes] == [0] * 4
    assert (folder / "counter").read_text() == "160"
    assert not (folder / ".calibrate.lock").exists()  # the last one out removed it


# ---- waiting, refusing, a killed holder ------------------------------------------------------------------------


def test_a_second_writer_waits_then_refuses_naming_the_holder(tmp_path):
    folder = new_campaign(tmp_path / "c")
    before = files_of(folder)
    with Holder(folder) as holder:
        start = time.monotonic()
        result = run_cli(
            "cases", "import", folder, goldens(tmp_path / "g.jsonl", "a"), env={"CALIBRATE_LOCK_TIMEOUT": "1.5"}
        )
        waited = time.monotonic() - start
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert 1.5 <= waited < 30
    error = result.stderr.replace("\n", " ")
    assert f"in use by calibrate test-holder (process {holder.pid} on " in error and ", since 20" in error
    assert "waited 1.5 s for it" in error and f"kill {holder.pid}" in error
    assert "CALIBRATE_LOCK_TIMEOUT=SECONDS" in error
    assert "waiting for" in error  # said while it waited, not only at the end
    assert files_of(folder) == before


def test_a_second_writer_waits_for_the_first_to_finish_then_writes(tmp_path):
    folder = new_campaign(tmp_path / "c")
    with Holder(folder) as holder:
        # the first writer finishes only once the second has said it waits, however slow the machine
        process = subprocess.Popen(
            [CALIBRATE, "cases", "import", str(folder), str(goldens(tmp_path / "g.jsonl", "a"))],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        said: list[str] = []
        reader = threading.Thread(target=lambda: said.extend(iter(lambda: process.stderr.read(1), "")))
        reader.start()
        deadline = time.monotonic() + 120
        while "waiting for" not in "".join(said) and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert "waiting for" in "".join(said), "".join(said)
        assert process.poll() is None  # still waiting while the first writer holds the campaign
        holder.finish()
        returncode = process.wait(timeout=300)
        reader.join(timeout=60)
    assert returncode == 0, "".join(said)
    assert len((folder / "cases.jsonl").read_text().splitlines()) == 5


def test_a_killed_holder_leaves_nothing_stuck(tmp_path):
    folder = new_campaign(tmp_path / "c")
    with Holder(folder) as holder:
        os.kill(holder.pid, signal.SIGKILL)
        holder.process.wait()
    assert "calibrate test-holder" in (folder / ".calibrate.lock").read_text()  # its note stays, its lock does not
    result = run_cli("cases", "import", folder, goldens(tmp_path / "g.jsonl", "a"), env={"CALIBRATE_LOCK_TIMEOUT": "0"})
    assert result.returncode == 0, result.stderr


def test_a_writer_killed_while_writing_leaves_nothing_stuck_and_nothing_half_written(tmp_path):
    folder = new_campaign(tmp_path / "c")
    big = deepeval_run(tmp_path / "big.json", "a", n=3000)
    process = subprocess.Popen(
        [CALIBRATE, "import", "deepeval", str(folder), str(big)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    deadline = time.monotonic() + 60
    lock = folder / ".calibrate.lock"
    while time.monotonic() < deadline and not (lock.is_file() and "calibrate import" in lock.read_text()):
        time.sleep(0.01)
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    load_campaign(folder)  # what is there loads: the previous version or the whole import
    result = run_cli(
        "import", "deepeval", folder, deepeval_run(tmp_path / "small.json", "b"), env={"CALIBRATE_LOCK_TIMEOUT": "0"}
    )
    assert result.returncode == 0, result.stderr
    assert not list(folder.glob("*.tmp"))  # what the killed writer left half-written, the next one replaced


def test_a_bad_timeout_is_a_clear_error(tmp_path):
    folder = new_campaign(tmp_path / "c")
    result = run_cli(
        "cases", "import", folder, goldens(tmp_path / "g.jsonl", "a"), env={"CALIBRATE_LOCK_TIMEOUT": "soon"}
    )
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "CALIBRATE_LOCK_TIMEOUT='soon'" in result.stderr and "not a number of seconds" in result.stderr


# ---- one process: reentrant, threads take turns -----------------------------------------------------------------


def within(seconds: float, function, *args, **kwargs):
    """``function(*args)`` in a thread that must end within ``seconds`` (a deadlock fails, never hangs)."""
    out: dict = {}
    thread = threading.Thread(target=lambda: out.setdefault("value", function(*args, **kwargs)), daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"{function.__name__} did not end within {seconds} s: a deadlock"
    return out.get("value")


def test_a_writer_calling_another_writer_holds_the_campaign_again_at_once(tmp_path, monkeypatch):
    from calibrate.base.files import held, holding
    from calibrate.cases.datasets import import_cases, merge_cases

    monkeypatch.setenv("CALIBRATE_LOCK_TIMEOUT", "0")
    folder = new_campaign(tmp_path / "c")
    source = goldens(tmp_path / "g.jsonl", "a")
    assert import_cases.writes_campaign and merge_cases.writes_campaign  # one calls the other
    assert within(30, import_cases, folder, source)["added"] == 5

    def nested() -> bool:
        with holding(folder, "outer"):
            # the same folder spelt another way (relative, through a link): the same hold
            link = tmp_path / "link"
            link.symlink_to(folder)
            with holding(link, "inner"), holding(os.path.relpath(folder), "inner"):
                inner = held(folder)
            return inner and held(folder)

    assert within(30, nested) is True
    assert not held(folder)
    assert within(30, merge_cases, folder, [{"case_id": "x", "input": "x?"}])["added"] == 1


def test_threads_of_one_process_take_turns(tmp_path, monkeypatch):
    from calibrate.base.errors import FolderInUse
    from calibrate.base.files import holding

    folder = new_campaign(tmp_path / "c")
    inside, overlaps = [], []

    def writer(i: int) -> None:
        with holding(folder, f"thread {i}", timeout=30):
            inside.append(i)
            overlaps.append(len(inside))
            time.sleep(0.05)
            inside.remove(i)

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert overlaps == [1] * 6
    refused = []

    def second() -> None:
        try:
            with holding(folder, "second", timeout=0.2):
                pass
        except FolderInUse as exc:
            refused.append(str(exc))

    with holding(folder, "first"):
        t = threading.Thread(target=second)
        t.start()
        t.join(30)
    assert refused and "in use by first (another thread of this process" in refused[0]


# ---- every writer holds it: the command line, classified ------------------------------------------------------

#: every command that writes a campaign -> the library functions it writes through (each must be declared
#: with @writes_campaign); a Campaign-taking one must also be called inside the CLI's `writing`/`hold`, so
#: the campaign it reads is read under the lock
WRITES = {
    "init": ["calibrate.campaign.starter.init_campaign"],  # a new folder, held while it is made
    "cases import": ["calibrate.cases.datasets.import_cases"],
    "collect": ["calibrate.cases.collect.collect"],
    "sample": ["calibrate.sampling.designs.sample_cases"],
    # writes only with --save-band or --sample (the queue): then it loads the campaign under the lock
    "escalate": ["calibrate.sampling.escalated.save_band", "calibrate.sampling.escalated.write_queue"],
    "adjudicate": ["calibrate.humans.adjudication.adjudicate"],
    "labelstudio push": ["calibrate.humans.labelstudio.client.push"],
    "labelstudio pull": ["calibrate.humans.labelstudio.client.pull", "calibrate.humans.labelstudio.client.pull_file"],
    **{
        f"import {kind}": ["calibrate.imports.apply.import_batch"]
        for kind in ("deepeval", "ragas", "mlflow", "phoenix", "promptfoo", "inspect", "langfuse", "langsmith")
    },
    "judge": ["calibrate.judges.runner.run_judges"],
    "cache clear": ["calibrate.judges.store.clear_judge_cache"],
    "import undo-withdrawals": ["calibrate.imports.apply.undo_withdrawals"],
    "probe": ["calibrate.judges.probes.run_probe"],
    "fingerprint": ["calibrate.review.fingerprint.fingerprint_judge"],
    "report": [],  # writes the campaign only when --out lies inside it: then it holds it
    "calibration": [],  # the same, for --save and --out
}
#: the commands that only read a campaign (a report of the demo goes to its own folder; an MLflow export
#: writes its report to a temporary folder)
READS = {
    "validate",
    "stats",
    "thresholds",
    "plan",
    "audit",
    "gate",
    "monitor",
    "pass-rate",
    "compare-systems",
    "compare",
    "repeatability",
    "case-verdicts",
    "bias",
    "demo",
    "export mlflow",
}


def leaves(group: click.Group, prefix: tuple = ()):
    for name, command in sorted(group.commands.items()):
        if isinstance(command, click.Group):
            yield from leaves(command, prefix + (name,))
        else:
            yield " ".join(prefix + (name,)), command


def function(qualified: str):
    import importlib

    module, _, name = qualified.rpartition(".")
    return getattr(importlib.import_module(module), name)


def test_every_command_is_classified_and_every_writer_holds_the_campaign():
    import inspect

    from calibrate.base.files import WRITERS

    commands = dict(leaves(main))
    unclassified = sorted(set(commands) - set(WRITES) - READS)
    assert not unclassified, f"classify these commands: do they write the campaign? {unclassified}"
    assert not (set(WRITES) | READS) - set(commands)
    for name, functions in WRITES.items():
        source = inspect.getsource(commands[name].callback)
        for qualified in functions:
            if qualified == "calibrate.campaign.starter.init_campaign":
                assert "holding(folder" in inspect.getsource(function(qualified))
                continue
            first = next(iter(inspect.signature(function(qualified)).parameters.values()))  # imported: registered
            assert qualified in WRITERS, f"{qualified} (calibrate {name}) is not declared @writes_campaign"
            if "Campaign" in str(first.annotation) and "Path" not in str(first.annotation):
                assert "writing(" in source or "hold(" in source, (
                    f"calibrate {name} loads the campaign outside the lock: load it in `writing(...)`"
                )
        if not functions:  # held when an output lies in the campaign (calibrate.cli.console.hold_outputs)
            assert "hold(" in source or "hold_outputs(" in source


@pytest.fixture
def full_campaign(tmp_path):
    """A campaign with cases, human labels, a judge, a judge store and a sample: something for every writer."""
    n = 12
    cases = [
        {"case_id": f"c{i}", "input": f"q{i}?", "actual_output": f"a{i}.", "retrieval_context": [f"a{i}."]}
        for i in range(n)
    ]
    ratings = pd.DataFrame(
        {
            "case_id": [c["case_id"] for c in cases] * 3,
            "metric": "faithfulness",
            "rater": ["ann"] * n + ["bob"] * n + ["j"] * n,
            "rater_kind": ["human"] * (2 * n) + ["judge"] * n,
            "value": [i % 2 for i in range(n)] + [(i // 2) % 2 for i in range(n)] + [0.1 + 0.08 * i for i in range(n)],
        }
    )
    toml = """name = "held"
[metrics.faithfulness]
scale = "binary"
[judges.j]
library = "deepeval"
metric = "faithfulness"
model = { provider = "openai", name = "m", base_url = "http://127.0.0.1:9" }
[service]
url = "http://127.0.0.1:9/ask"
body = { question = "{input}" }
answer = "answer"
contexts = "contexts"
"""
    folder = write_campaign(tmp_path / "campaign", toml, ratings, cases)
    (folder / "judge_ratings.sqlite").write_bytes(b"")
    (tmp_path / "decisions.csv").write_text("case_id,metric,decision,adjudicator\nc1,faithfulness,1,ada\n")
    (tmp_path / "export.json").write_text("[]")
    goldens(tmp_path / "goldens.jsonl", "g")
    deepeval_run(tmp_path / "run.json", "z")
    return folder


def writer_commands(folder: Path, tmp: Path) -> dict[str, list]:
    """The writers, each with arguments that would write the campaign (all offline)."""
    return {
        "cases import": ["cases", "import", folder, tmp / "goldens.jsonl"],
        "collect": ["collect", folder, "--goldens", tmp / "goldens.jsonl"],
        "sample": ["sample", folder, "--n", 3, "--include-labelled", "--name", "held"],
        "escalate": ["escalate", folder, "--metric", "faithfulness", "--judge", "j", "--agreement", 0.5]
        + ["--save-band", "held"],
        "adjudicate": ["adjudicate", folder, "--decisions", tmp / "decisions.csv"],
        "labelstudio push": ["labelstudio", "push", folder, "--url", "http://127.0.0.1:9", "--api-key", "k"],
        "labelstudio pull": ["labelstudio", "pull", folder, "--file", tmp / "export.json"],
        "import deepeval": ["import", "deepeval", folder, tmp / "run.json"],
        "judge": ["judge", folder],
        "cache clear": ["cache", "clear", folder],
        "import undo-withdrawals": ["import", "undo-withdrawals", folder, "some-import"],
        "probe": ["probe", folder, "--probe", "padding", "--n", 2],
        "fingerprint": ["fingerprint", folder, "--judge", "j", "--anchors", 4, "--repeats", 2],
        "report": ["report", folder, "--out", folder / "report", "--n-boot", 10],
        "calibration": [
            "calibration",
            folder,
            "--metric",
            "faithfulness",
            "--judge",
            "j",
            "--save",
            folder / "map.json",
        ],
    }


def test_every_writer_refuses_while_another_process_holds_the_campaign_and_writes_nothing(
    full_campaign, tmp_path, monkeypatch
):
    monkeypatch.setenv("CALIBRATE_LOCK_TIMEOUT", "0")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    folder = full_campaign
    before = files_of(folder)
    commands = writer_commands(folder, tmp_path)
    assert set(commands) | {"init"} | {c for c in WRITES if c.startswith("import ")} >= set(WRITES)
    with Holder(folder) as holder:
        for name, args in commands.items():
            result = CliRunner().invoke(main, [str(a) for a in args])
            assert not (result.exception and not isinstance(result.exception, SystemExit)), (
                f"calibrate {name}: a traceback: {result.exception!r}"
            )
            assert result.exit_code == 2, f"calibrate {name} did not wait for the holder: {result.output}"
            assert f"in use by calibrate test-holder (process {holder.pid}" in result.stderr, (name, result.stderr)
            assert files_of(folder) == before, f"calibrate {name} wrote while another process held the campaign"


def test_read_only_commands_take_no_lock(full_campaign, monkeypatch):
    monkeypatch.setenv("CALIBRATE_LOCK_TIMEOUT", "0")
    with Holder(full_campaign):
        for args in (["validate", full_campaign], ["stats", full_campaign, "--n-boot", 10, "--json"]):
            result = CliRunner().invoke(main, [str(a) for a in args])
            assert result.exit_code == 0, result.output


# ---- every writer holds it: the library, scanned ---------------------------------------------------------------

PACKAGE = Path(calibrate.__file__).parent
#: what writes a file or a store (a call of one of these, or of a store class, whose constructor opens one)
PRIMITIVES = {
    "replacing",
    "write_all",
    "open_store",
    "mkdir",
    "makedirs",
    "symlink",
    "symlink_to",
    "copyfile",
    "copytree",
    "rmtree",
    "unlink",
    "rename",
    "rmdir",
    "write_text",
    "write_bytes",
}
OS_PRIMITIVES = {"replace", "remove", "rename", "link"}  # os.replace, ... (str.replace and dataclasses.replace aside)
#: functions that write, but not the campaign: each goes where its caller says, and the command line
#: holds the campaign when that place lies inside it
NOT_THE_CAMPAIGN = {
    "calibrate.analysis.calibration.CalibrationMap.save": "the map goes where --save says",
    "calibrate.report.write_report": "the report goes to --out (held when that lies inside the campaign)",
}


def scanned() -> dict[str, dict]:
    """Every function of the library (base, cli and demo aside): the names it calls or passes on, the
    writing primitives it calls, and whether it is declared @writes_campaign or takes the lock itself."""

    def name_of(call: ast.Call) -> str | None:
        f = call.func
        return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None

    def read_only(call: ast.Call) -> bool:
        return any(
            k.arg == "read_only" and isinstance(k.value, ast.Constant) and k.value.value is True for k in call.keywords
        )

    trees = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        if parts[1] not in ("base", "cli", "demo"):
            trees[module] = ast.parse(path.read_text())
    stores = {
        node.name
        for tree in trees.values()
        for node in ast.walk(tree)
        if isinstance(node, ast.ClassDef)
        and any(isinstance(c, ast.Call) and name_of(c) in ("open_store", "connect") for c in ast.walk(node))
    }
    found = {}
    for module, tree in trees.items():

        def visit(node, owner=None, module=module):
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.ClassDef):
                    visit(child, child.name, module)
                elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    annotations = {
                        id(n)
                        for a in ast.walk(child)
                        if isinstance(a, ast.arg) and a.annotation
                        for n in ast.walk(a.annotation)
                    }
                    annotations |= {id(n) for n in ast.walk(child.returns)} if child.returns else set()
                    refers, writes = set(), set()
                    for n in ast.walk(child):
                        if id(n) in annotations:
                            continue
                        if isinstance(n, ast.Call):
                            called = name_of(n)
                            if owner in stores and child.name == "__init__":
                                pass  # a store's constructor: the writer is whoever makes a writable one
                            elif called in PRIMITIVES or (called in stores and not read_only(n)):
                                writes.add(called)
                            elif (
                                called in OS_PRIMITIVES
                                and isinstance(n.func, ast.Attribute)
                                and isinstance(n.func.value, ast.Name)
                                and n.func.value.id in ("os", "shutil")
                            ):
                                writes.add(f"os.{called}")
                        if isinstance(n, ast.Name):
                            refers.add(n.id)
                        elif isinstance(n, ast.Attribute):
                            refers.add(n.attr)
                    declared = any(
                        isinstance(d, ast.Call) and name_of(d) == "writes_campaign" for d in child.decorator_list
                    )
                    holds = any(isinstance(n, ast.Call) and name_of(n) == "holding" for n in ast.walk(child))
                    found[f"{module}.{owner + '.' if owner else ''}{child.name}"] = {
                        "name": owner if child.name == "__init__" else child.name,
                        "refers": refers,
                        "writes": writes,
                        "held": declared or holds,
                    }
            return found

        visit(tree)
    return found


def test_every_library_function_that_writes_is_a_declared_writer_or_called_only_by_one():
    functions = scanned()

    def covered(name: str, seen: tuple = ()) -> bool:
        f = functions[name]
        if f["held"]:
            return True
        if name in seen:
            return False
        callers = [c for c, g in functions.items() if c != name and f["name"] in g["refers"]]
        return bool(callers) and all(covered(c, seen + (name,)) for c in callers)

    writers = {name for name, f in functions.items() if f["writes"]}
    assert {
        "calibrate.imports.apply._store_and_write",  # import_batch's writing step
        "calibrate.sampling.designs.write_sample",
        "calibrate.cases.datasets.merge_cases",
    } <= writers  # the scan sees writes
    loose = {
        name: sorted(functions[name]["writes"])
        for name in writers
        if not covered(name) and name not in NOT_THE_CAMPAIGN
    }
    assert not loose, (
        "these functions write, and some caller reaches them without holding the campaign: declare "
        f"the entry point @writes_campaign (calibrate.base.files), or list it in NOT_THE_CAMPAIGN: {loose}"
    )
