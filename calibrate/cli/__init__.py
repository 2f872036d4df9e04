"""The ``calibrate`` command line: parse arguments, make one library call, print.

Exit codes: 0 success, 1 a judge run in which a judge failed on every rating or an endpoint was given up
on, 2 a campaign, usage or file error (every problem is listed on stderr). This module holds the
group; the commands live in one module per folder of the library (:mod:`.campaign`, :mod:`.cases`,
:mod:`.sampling`, :mod:`.humans`, :mod:`.imports`, :mod:`.judges`, :mod:`.analysis`, :mod:`.review`, :mod:`.report`),
each listing its ``COMMANDS``, and what they share in :mod:`.console`.
"""

from __future__ import annotations

import sys

import click

from calibrate.base.errors import FileError
from calibrate.cli import (
    analysis,
    campaign,
    cases,
    humans,
    imports,
    judges,
    report,
    review,
    sampling,
)
from calibrate.cli.console import err, fail, usage_error


class _Commands(click.Group):
    """The command group; a file that cannot be read or written ends a command with its message, and
    click's own errors are shown through the console (escaped, as every message is)."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except FileError as exc:
            fail(exc)

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode, **extra)
        try:
            code = super().main(args, prog_name, complete_var, False, **extra)
        except click.ClickException as exc:
            usage_error(exc)
            sys.exit(exc.exit_code)
        except click.exceptions.Abort:
            err.print("Aborted!")
            sys.exit(1)
        sys.exit(code if type(code) is int else 0)


@click.group(cls=_Commands, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="calibrate-judges")
def main() -> None:
    """Calibrate LLM judges against human labels: agreement, error-rate curves, thresholds, reports."""


for _module in (campaign, cases, sampling, humans, imports, judges, analysis, review, report):
    for _command in _module.COMMANDS:
        main.add_command(_command)
