"""What every command shares: the consoles (user text shown as it is), the common options, loading a
campaign, progress bars, errors and JSON output."""

from __future__ import annotations

import json
import math
import sys
from contextlib import contextmanager
from typing import TYPE_CHECKING

import click
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from calibrate.base.errors import CampaignError, FileError, ParameterText
from calibrate.stats import N_BOOT

if TYPE_CHECKING:
    from calibrate.campaign import Campaign

# The statistics (scipy, scikit-learn, numba) and pandas are imported inside the commands that use
# them, so that `calibrate --help` answers at once.

# a pipe or a file gets a wide table rather than rich's 80 columns, and lines unbroken (for grep)
# (markup off: every piece of user text, in a table or a line, is shown as it is; styles go through Text)
out = Console(highlight=False, markup=False, width=None if sys.stdout.isatty() else 160,
              soft_wrap=not sys.stdout.isatty())
err = Console(stderr=True, highlight=False)


def styled(style: str, label: str, text: str = ""):
    """``label`` in ``style``, then ``text`` as it is (the way to colour a line that holds user text)."""
    from rich.text import Text

    return Text.assemble((label, style), text)

class FiniteRange(click.FloatRange):
    """A number in a range, and finite: ``nan`` and ``inf`` compare false with every bound, so a plain
    ``FloatRange`` lets them through."""

    name = "finite number"

    def convert(self, value, param, ctx):
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return number


out_of_scale_option = click.option(
    "--out-of-scale", type=click.Choice(["error", "clip", "drop"]), default=None,
    help="What to do with a value outside the metric's scale: report an error, clip it, or drop it "
         "[default: the campaign's out_of_scale, else error].")
seed_option = click.option("--seed", type=int, default=0, show_default=True, help="Bootstrap seed.")
n_boot_option = click.option("--n-boot", type=click.IntRange(min=0), default=N_BOOT, show_default=True,
                             help="Bootstrap resamples of cases.")
confidence_option = click.option("--confidence", type=FiniteRange(0, 1, min_open=True, max_open=True),
                                 default=0.95, show_default=True, help="Two-sided confidence level of every interval.")
json_option = click.option("--json", "as_json", is_flag=True, help="Print one JSON document instead of tables.")


def load(path: str, out_of_scale: str | None) -> Campaign:
    from calibrate.campaign import load_campaign

    try:
        return load_campaign(path, out_of_scale=out_of_scale)
    except CampaignError as exc:
        fail(exc)


@contextmanager
def progress(enabled: bool = True):
    """A rich progress bar on stderr, fed by the library's ``progress(done, total, label)`` callback."""
    if not enabled:
        yield None
        return
    with Progress(TextColumn("{task.description}", markup=False), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  TextColumn("left"), TimeRemainingColumn(), console=err, transient=True) as bar:
        tasks: dict[str, int] = {}

        def update(done: int, total: int, label: str) -> None:
            if label not in tasks:   # a bar per label: per metric and slice, per judge
                tasks[label] = bar.add_task(label, total=total)
            bar.update(tasks[label], completed=done)

        update.bar = bar   # the bars shown
        yield update


#: The library's parameters whose flag is not ``--`` and the name with dashes.
FLAGS = {"judges": "--judge", "metrics": "--metric", "adjudicators": "--adjudicator", "out_dir": "--out",
         "annotators_per_overlap": "--annotators", "case_ids": "--sample", "name": "--name", "slice_by": "--slice"}


def command_line_text(message: object) -> str:
    """An error's message as the command line says it: the parameters it names become their flags."""
    if isinstance(message, BaseException):
        found = [a for a in message.args if isinstance(a, ParameterText)]
        if found and len(message.args) == 1:
            return found[0].for_command_line(FLAGS)
        if isinstance(message, FileError) and isinstance(message.todo, ParameterText):
            return f"{message.path}: {message.problem}; {message.todo.for_command_line(FLAGS)}"
        return str(message)
    return message.for_command_line(FLAGS) if isinstance(message, ParameterText) else str(message)


def fail(message: object, code: int = 2) -> None:
    """Print ``message`` (a text or an exception) as an error, its parameters named as flags, and exit.

    The text is shown as it is: brackets in it are not markup."""
    from rich.text import Text

    err.print(Text.assemble(("error: ", "bold red"), command_line_text(message)), soft_wrap=True)
    sys.exit(code)


def with_progress(compute, show: bool, *args, **kwargs) -> dict:
    """``compute(*args, progress=..., **kwargs)`` under a progress bar; a ValueError is a usage error."""
    try:
        with progress(show) as update:
            return compute(*args, progress=update, **kwargs)
    except ValueError as exc:
        fail(exc)


def print_json(document: dict) -> None:
    sys.stdout.write(json.dumps(document, allow_nan=False) + "\n")
    sys.stdout.flush()


