"""The command line's console: text from data shown safely, numbers checked as options, errors named
by their flags (calibrate/cli/console.py). The commands themselves, end to end: tests/cli/."""

import io
import json

import click
import pytest
from click.testing import CliRunner
from rich.text import Text

from calibrate.base.errors import FileError, ParameterText
from calibrate.cli.console import (
    FiniteRange,
    SafeConsole,
    command_line_text,
    fail,
    file_name,
    print_json,
    shown,
    shown_text,
    with_progress,
)


def test_control_characters_are_escaped_and_everything_else_kept():
    assert shown("case\x1b[2J\rb\u202ec\x00\t") == r"case\x1b[2J\rb\u202ec\x00\t"
    assert shown("line\nnext [red]x[/] 日本 ✓") == "line\nnext [red]x[/] 日本 ✓"


def test_a_styled_text_keeps_its_styles_on_the_same_characters():
    text = Text.assemble(("ok\x1b", "bold"), " plain")
    safe = shown_text(text)
    assert safe.plain == r"ok\x1b plain"
    (span,) = safe.spans
    assert safe.plain[span.start : span.end] == r"ok\x1b" and span.style == "bold"
    clean = Text("nothing to escape")
    assert shown_text(clean) is clean


def test_the_console_never_sends_a_control_character_from_data():
    buffer = io.StringIO()
    console = SafeConsole(file=buffer, width=200, color_system="truecolor", force_terminal=True)
    console.print("name\x1b]52;c;evil\x07 [bold]not markup[/bold]")
    console.print("\rback", style="red")  # (a rich Text drops a carriage return itself)
    written = buffer.getvalue()
    data = written.replace("\x1b[31m", "").replace("\x1b[0m", "")  # rich's own style codes
    assert "\x07" not in written and "\r" not in written and "\x1b]52" not in written
    assert r"name\x1b]52;c;evil\x07 [bold]not markup[/bold]" in data and r"\rback" in data


def test_a_finite_range_refuses_nan_and_infinity():
    @click.command()
    @click.option("--confidence", type=FiniteRange(0, 1, min_open=True, max_open=True))
    @click.option("--weight", type=FiniteRange(min=0))
    def command(confidence, weight):
        click.echo(repr(confidence))

    runner = CliRunner()
    assert runner.invoke(command, ["--confidence", "0.9"]).output == "0.9\n"
    for value in ("nan", "inf"):
        result = runner.invoke(command, ["--weight", value])  # both pass a FloatRange's bounds
        assert result.exit_code == 2 and f"'{value}' is not a finite number" in result.output
    assert runner.invoke(command, ["--confidence", "1"]).exit_code == 2


def test_errors_name_the_flags_not_the_parameters():
    text = ParameterText("{judges}: no such judge; see {n_boot}", judges="x", n_boot=5)
    assert command_line_text(text) == "--judge x: no such judge; see --n-boot 5"
    assert command_line_text(ValueError(text)) == "--judge x: no such judge; see --n-boot 5"
    error = FileError("/c/out", "exists", ParameterText("give another ({out_dir})", out_dir="/c/out"))
    assert command_line_text(error) == "/c/out: exists; give another (--out /c/out)"
    assert command_line_text(KeyError("plain")) == "'plain'"


def test_fail_prints_the_error_and_exits_with_its_code(capsys):
    with pytest.raises(SystemExit) as exit_:
        fail(ValueError(ParameterText("{seed} is bad \x1b[2J", seed=-1)), code=3)
    assert exit_.value.code == 3
    assert capsys.readouterr().err.strip() == r"error: --seed -1 is bad \x1b[2J"


def test_a_value_that_becomes_a_file_name_is_checked():
    assert file_name(None, "a name") is None and file_name("run-1", "a name") == "run-1"
    with pytest.raises(click.BadParameter):
        file_name("../escape", "a name")


def test_a_library_value_error_is_a_usage_error(capsys):
    def compute(x, progress):
        if progress is not None:  # no bar asked for: no callback
            progress(1, 2, "judge")
        if x < 0:
            raise ValueError("x must be at least 0")
        return {"x": x}

    assert with_progress(compute, False, 1) == {"x": 1} and with_progress(compute, True, 2) == {"x": 2}
    with pytest.raises(SystemExit) as exit_:
        with_progress(compute, True, -1)
    assert exit_.value.code == 2 and "error: x must be at least 0" in capsys.readouterr().err


def test_json_is_one_line_and_never_nan(capsys):
    print_json({"a": [1, "é"]})
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and out.endswith("\n")
    assert list(json.loads(out).items()) == [("schema_version", 1), ("a", [1, "é"])]  # the version first
    with pytest.raises(ValueError):
        print_json({"a": float("nan")})
