"""What every command shares: the consoles (user text shown as it is, its control characters escaped),
the common options, loading a campaign, progress bars, errors and JSON output.

**Terminal safety.** Text that comes from data (case ids, case texts, reasons, rater and metric names,
file names, a server's messages) can hold control characters: an escape sequence that clears the
screen, rewrites the window title, plants a hyperlink (OSC 8) or writes the clipboard (OSC 52); a
carriage return or backspaces that overwrite what was printed; a right-to-left override that shows a
name reversed. The terminal must never receive them raw. One place sees to it: both consoles are
:class:`SafeConsole`, which passes every piece of text it is given through :func:`shown` before rich
lays it out (a string, a table cell, a title, a :class:`rich.text.Text` with its styles, a progress
label), and any segment a renderable made itself on the way out. Rich's own styling escapes are not
text and are untouched. JSON output (``--json``) escapes them by itself (``\\u001b``), and files keep
text as it is.
"""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import click
from rich.console import Console
from rich.segment import Segment
from rich.text import Span, Text

from calibrate.base.errors import CampaignError, FileError, ParameterText
from calibrate.base.results import json_text, versioned
from calibrate.stats import N_BOOT

if TYPE_CHECKING:
    from calibrate.campaign import Campaign

# The statistics (scipy, scikit-learn, numba) and pandas are imported inside the commands that use
# them, so that `calibrate --help` answers at once.

#: The characters never sent to the terminal raw: the C0 controls but the newline (NUL, BEL, BS, TAB,
#: CR, ESC, ...), DEL and the C1 controls (U+009B is a one-character CSI to some terminals), the bidi
#: embeddings, overrides, isolates and marks (U+202E shows a name reversed), and the line and paragraph
#: separators.
UNSAFE = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def _escape(found: re.Match) -> str:
    return repr(found.group())[1:-1]  # as Python writes it: \x1b, \r, \t, \x00, \u202e


def shown(text: str) -> str:
    r"""``text`` as the terminal may show it: each character of :data:`UNSAFE` written as Python escapes
    it, everything else (newlines, brackets, any script, emoji) as it is.

    Examples
    --------
    >>> shown("case\x1b[2J") == r"case\x1b[2J"
    True
    >>> print(shown("a\rb\u202ec\x00 [red]ok[/]\n日本"))
    a\rb\u202ec\x00 [red]ok[/]
    日本
    """
    return UNSAFE.sub(_escape, text)


def shown_text(text: Text) -> Text:
    """A :class:`rich.text.Text` with :func:`shown` text, its styles kept on the same characters."""
    plain = text.plain
    if not UNSAFE.search(plain):
        return text
    pieces = [shown(c) for c in plain]
    starts = [0]
    for piece in pieces:
        starts.append(starts[-1] + len(piece))
    safe = Text(
        "".join(pieces),
        style=text.style,
        justify=text.justify,
        overflow=text.overflow,
        no_wrap=text.no_wrap,
        end=text.end,
        tab_size=text.tab_size,
    )
    safe.spans = [Span(starts[span.start], starts[span.end], span.style) for span in text.spans]
    return safe


class SafeConsole(Console):
    """A rich console that never sends the terminal a control character from data (:func:`shown`).

    Strings are escaped before rich reads them (rich itself would silently drop a carriage return or
    a backspace, and pass an ESC through), :class:`rich.text.Text` objects are rebuilt with their
    styles, and every text segment a renderable produced on its own is checked on the way out.
    Markup and emoji codes are off: text is shown as it is.
    """

    def __init__(self, **options) -> None:
        super().__init__(**{"markup": False, "emoji": False, "highlight": False, **options})

    def render_str(self, text: str, **options) -> Text:
        return super().render_str(shown(text), **options)

    def render(self, renderable, options=None):
        if isinstance(renderable, Text):
            renderable = shown_text(renderable)
        for segment in super().render(renderable, options):
            if segment.control or not UNSAFE.search(segment.text):
                yield segment
            else:
                yield Segment(shown(segment.text), segment.style)


# a pipe or a file gets a wide table rather than rich's 80 columns, and lines unbroken (for grep)
# (markup off: every piece of user text, in a table or a line, is shown as it is; styles go through Text)
out = SafeConsole(width=None if sys.stdout.isatty() else 160, soft_wrap=not sys.stdout.isatty())
err = SafeConsole(stderr=True)


def styled(style: str, label: str, text: str = "") -> Text:
    """``label`` in ``style``, then ``text`` as it is (the way to colour a line that holds user text);
    both :func:`shown` (rich would drop a carriage return from a Text silently)."""
    return Text.assemble((shown(label), style), shown(text))


#: characters of a case's input shown beside an id that is a content hash
SNIPPET_LENGTH = 40


def case_label(case_id: str, cases: dict[str, dict] | None, limit: int = SNIPPET_LENGTH) -> str:
    """A case id as a person reads it: an id calibrate hashed from the content
    (:func:`~calibrate.cases.datasets.content_id`) gets the start of the case's input beside it; any other
    id, or a case not in ``cases``, is shown as it is.

    Examples
    --------
    >>> cases = {"case-d99b00e33d68": {"input": "How do I reset\\n my password   on the mobile app?"}}
    >>> case_label("case-d99b00e33d68", cases)
    'case-d99b00e33d68 ("How do I reset my password on the mobile…")'
    >>> case_label("refunds-3", {"refunds-3": {"input": "q"}}), case_label("case-000000000000", cases)
    ('refunds-3', 'case-000000000000')
    """
    from calibrate.cases.datasets import is_content_id

    case = (cases or {}).get(case_id)
    if case is None or not is_content_id(case_id):
        return case_id
    text = " ".join(str(case.get("input") or "").split())
    if not text:
        return case_id
    return f'{case_id} ("{text[:limit].rstrip()}{"…" if len(text) > limit else ""}")'


def with_snippets(text: str, cases: dict[str, dict] | None) -> str:
    """``text`` with every content-hash case id in it labelled by :func:`case_label` (the lists in
    warnings and reasons).

    Examples
    --------
    >>> with_snippets("failed on case-d99b00e33d68, b", {"case-d99b00e33d68": {"input": "q?"}})
    'failed on case-d99b00e33d68 ("q?"), b'
    """
    from calibrate.cases.datasets import CONTENT_ID

    if not cases:
        return text
    return CONTENT_ID.sub(lambda found: case_label(found.group(), cases), text)


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
    "--out-of-scale",
    type=click.Choice(["error", "clip", "drop"]),
    default=None,
    help="What to do with a value outside the metric's scale: report an error, clip it, or drop it "
    "[default: the campaign's out_of_scale, else error].",
)
seed_option = click.option("--seed", type=int, default=0, show_default=True, help="Bootstrap seed.")
n_boot_option = click.option(
    "--n-boot", type=click.IntRange(min=0), default=N_BOOT, show_default=True, help="Bootstrap resamples of cases."
)
confidence_option = click.option(
    "--confidence",
    type=FiniteRange(0, 1, min_open=True, max_open=True),
    default=0.95,
    show_default=True,
    help="Two-sided confidence level of every interval.",
)
json_option = click.option("--json", "as_json", is_flag=True, help="Print one JSON document instead of tables.")


def metric_option(*, multiple: bool = False, required: bool = False, help: str | None = None, **extra: Any):
    """``--metric``: one metric (the parameter ``metric``), or with ``multiple`` any number of them
    (``metrics``, repeatable); the commands' one declaration of it."""
    if multiple:
        default = "Only this metric (repeatable)."
        return click.option("--metric", "metrics", multiple=True, required=required, help=help or default, **extra)
    default = "The metric." if required else "Only this metric."
    return click.option("--metric", required=required, help=help or default, **extra)


def judge_option(*, multiple: bool = False, required: bool = False, help: str | None = None, **extra: Any):
    """``--judge``: one judge (the parameter ``judge``), or with ``multiple`` any number of them (``judges``,
    repeatable); the commands' one declaration of it."""
    if multiple:
        default = "Only this judge (repeatable)."
        return click.option("--judge", "judges", multiple=True, required=required, help=help or default, **extra)
    default = "The judge." if required else "Only this judge."
    return click.option("--judge", required=required, help=help or default, **extra)


def load(path: str, out_of_scale: str | None) -> Campaign:
    """The campaign at ``path``, or the command ends listing its problems (exit 2).

    Reading the ratings goes through pyarrow, whose allocator keeps the memory of what it freed (at
    100,000 ratings a judge, some 35 MB of the reading and checking) for its next allocation; the
    statistics that follow allocate through numpy, so that memory is handed back to the system here.
    """
    from calibrate.campaign import load_campaign

    try:
        campaign = load_campaign(path, out_of_scale=out_of_scale)
    except CampaignError as exc:
        fail(exc)
    if "pyarrow" in sys.modules:  # imported by the reading, never here
        sys.modules["pyarrow"].default_memory_pool().release_unused()
    return campaign


def hold(path: str, command: str):
    """Hold the campaign at ``path`` for ``command`` (:func:`~calibrate.base.files.holding`); where there
    is no campaign, nothing is held (and no lock file made): the command says what is wrong."""
    from contextlib import nullcontext
    from pathlib import Path

    from calibrate.base.files import holding

    return holding(path, command) if (Path(path) / "campaign.toml").is_file() else nullcontext()


def check_judges(campaign: Campaign, judges: tuple[str, ...] | list[str] | None) -> list[str] | None:
    """The ``--judge`` names given (None for none), each a judge of the campaign: a rater with judge
    ratings (or one of its runs, ``rater@run_id``), a judge of ``[judges]`` or a jury of ``[juries]``.
    Any other name is a usage error (exit 2) listing the judges there are, as an unknown ``--metric``
    is: a typo never narrows a command to nothing silently. The one place the command line resolves
    judge names given with ``--judge`` (repeatable)."""
    if not judges:
        return None
    from calibrate.campaign.reference import judge_scores

    found = [j for m in campaign.metrics for j in judge_scores(campaign, m)]
    known = {name for j in found for name in (j.name, j.rater.name)} | set(campaign.judges) | set(campaign.juries)
    unknown = [name for name in judges if name not in known]
    if unknown:
        # the raters (a run of one is named RATER@RUN_ID), not every run of each
        names = (
            ", ".join(sorted({j.rater.name for j in found} | set(campaign.judges) | set(campaign.juries)))
            or "none (no judge ratings yet)"
        )
        humans = set(campaign.ratings.loc[campaign.ratings["rater_kind"] == "human", "rater"].astype(str))
        why = (
            "{judges}: "
            + (
                "a human annotator of the campaign, not a judge"
                if set(unknown) <= humans
                else "no rater of the campaign has this name"
            )
            + "; its judges are {_names}"
        )
        fail(ParameterText(why, judges=", ".join(unknown), _names=names))
    return list(judges)


def hold_outputs(path: str, command: str, **outputs: str | None):
    """What a command writing files of its own (``--out``, ``--save``, ...) holds: the campaign at
    ``path``, when an output is written into it (:func:`~calibrate.base.names.writes_into`), else nothing.
    An output named under the campaign that a symbolic link leads outside is refused (exit 2, naming its
    flag, the link and where it leads): nothing is written through it. ``outputs`` maps each flag's
    name (``out``, ``save``) to its path, None when not given."""
    from contextlib import nullcontext

    from calibrate.base.names import OutsideFolder, writes_into

    into = False
    for flag, output in outputs.items():
        if output is None:
            continue
        try:
            into = writes_into(output, path) or into
        except OutsideFolder as exc:
            fail(f"--{flag.replace('_', '-')} {output}: {exc.problem}; {exc.todo}")
    return hold(path, command) if into else nullcontext()


@contextmanager
def writing(path: str, command: str, out_of_scale: str | None = None):
    """The campaign at ``path``, loaded and held for the block (no other writer at once: a command that
    writes the campaign reads it under the same lock)."""
    with hold(path, command):
        yield load(path, out_of_scale)


def file_name(value: str | None, what: str) -> str | None:
    """An option's value that becomes a file name, checked (a usage error naming the rule otherwise)."""
    from calibrate.base.names import UnsafeName, path_component

    try:
        return None if value is None else path_component(value, what=what)
    except UnsafeName as exc:
        raise click.BadParameter(str(exc)) from None


def _waiting(folder: str, holder: str, timeout: float) -> None:
    from rich.text import Text

    err.print(
        Text(f"waiting for {folder}: in use by {holder} (up to {timeout:g} s; CALIBRATE_LOCK_TIMEOUT changes it)"),
        soft_wrap=True,
    )


def _register_waiting() -> None:
    from calibrate.base.files import on_wait

    on_wait(_waiting)


_register_waiting()


@contextmanager
def progress(enabled: bool = True):
    """A rich progress bar on stderr, fed by the library's ``progress(done, total, label)`` callback."""
    if not enabled:
        yield None
        return
    # imported here: only the commands that compute long show a bar, and rich.progress costs every command
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    with Progress(
        TextColumn("{task.description}", markup=False),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("left"),
        TimeRemainingColumn(),
        console=err,
        transient=True,
    ) as bar:
        tasks: dict[str, int] = {}

        def update(done: int, total: int, label: str) -> None:
            if label not in tasks:  # a bar per label: per metric and slice, per judge (names from data: shown)
                tasks[label] = bar.add_task(shown(label), total=total)
            bar.update(tasks[label], completed=done)

        update.bar = bar  # the bars shown
        yield update


#: The library's parameters whose flag is not ``--`` and the name with dashes.
FLAGS = {
    "judges": "--judge",
    "metrics": "--metric",
    "adjudicators": "--adjudicator",
    "out_dir": "--out",
    "annotators_per_overlap": "--annotators",
    "case_ids": "--sample",
    "name": "--name",
    "slice_by": "--slice",
}


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

    The text is shown as it is: brackets in it are not markup, control characters are escaped."""
    err.print(styled("bold red", "error: ", command_line_text(message)), soft_wrap=True)
    sys.exit(code)


def usage_error(exc: click.ClickException) -> None:
    """Show one of click's errors (an unknown option, a bad value, a missing argument) as click shows it,
    through the console: the values it quotes came from the command line, or from names in data. (The
    text is click's ``ClickException.show``'s; click's echo would strip some escape sequences silently and
    pass the others.)"""
    text = ""
    ctx = getattr(exc, "ctx", None)
    if ctx is not None:
        hint = (
            f"Try '{ctx.command_path} {ctx.help_option_names[0]}' for help.\n"
            if ctx.command.get_help_option(ctx) is not None
            else ""
        )
        text = f"{ctx.get_usage()}\n{hint}\n"
    err.print(f"{text}Error: {exc.format_message()}", soft_wrap=True)


def with_progress(compute, show: bool, *args, **kwargs) -> dict:
    """``compute(*args, progress=..., **kwargs)`` under a progress bar; a ValueError is a usage error."""
    try:
        with progress(show) as update:
            return compute(*args, progress=update, **kwargs)
    except ValueError as exc:
        fail(exc)


def print_json(document: Mapping[str, Any]) -> None:
    """Print a command's ``--json`` document, with its ``schema_version`` first (:func:`versioned`); its
    long lists (a curve per judge) a chunk at a time (:func:`json_text`)."""
    for piece in json_text(versioned(document, deferred=True)):
        sys.stdout.write(piece)
    sys.stdout.write("\n")
    sys.stdout.flush()
