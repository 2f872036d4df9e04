"""The README is the front page: its Quick start holds the two commands, and its examples run as written
(the command line's every flag exists; the Python example runs on the demo campaign)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import click
import pytest

import calibrate
from calibrate.cli import main

README = Path(__file__).resolve().parents[1] / "README.md"


def blocks(section: str) -> list[tuple[str, str]]:
    """(language, text) of the fenced blocks of the README's ``## section``."""
    text = README.read_text(encoding="utf-8")
    start = text.index(f"## {section}\n")
    end = text.find("\n## ", start + 4)
    return re.findall(r"```(\w*)\n(.*?)```", text[start : end if end > 0 else None], re.S)


def test_the_quick_start_is_two_commands():
    assert blocks("Quick start")[0] == ("bash", "make demo\nmake test\n")


def command_lines() -> list[list[str]]:
    (language, text), _ = blocks("A first look")
    assert language == "bash"
    lines = [shlex.split(line.split("#")[0]) for line in text.splitlines() if line.strip()]
    return [line for line in lines if line]


@pytest.mark.parametrize("args", command_lines(), ids=lambda a: " ".join(a[1:3]))
def test_every_command_and_flag_of_the_first_look_exists(args):
    assert args[0] == "calibrate"
    command, rest = main, args[1:]
    while isinstance(command, click.Group):  # calibrate cases import, calibrate labelstudio push, ...
        command = command.get_command(click.Context(command), rest[0])
        assert command is not None, args
        rest = rest[1:]
    flags = {opt for param in command.params for opt in param.opts}
    used = {word.split("=")[0] for word in rest if word.startswith("--")}
    assert used <= flags, (args, used - flags)


def test_the_python_example_runs_on_the_demo():
    code = next(text for language, text in blocks("A first look") if language == "python")
    code = code.replace('"support-bot"', repr(str(calibrate.demo_campaign_path())))
    code = code.replace(
        "calibrate.compute_stats(campaign, seed=0)", "calibrate.compute_stats(campaign, seed=0, n_boot=200)"
    )
    namespace: dict = {}
    exec(compile(code, str(README), "exec"), namespace)
    assert len(namespace["stats"].to_frame()) and namespace["recs"]["recommendations"]
