"""The threshold-selection report: one self-contained HTML file, its Markdown twin, and JSON.

The HTML carries its styles and plots inline and a Content-Security-Policy that forbids every script
and every network request; jinja2's autoescaping turns any case text into text.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

from markupsafe import Markup

from calibrate.analysis.recommendation_results import recommendation_dicts
from calibrate.base.errors import NO_VALUE, FileError, ParameterText
from calibrate.base.files import write_all
from calibrate.base.results import nested
from calibrate.report.documents import ReportDocuments
from calibrate.report.format import (
    RATE_NAMES,
    STAT_LABELS,
    case_fields,
    clipped,
    curve_rows,
    defined_columns,
    fmt_estimate,
    fmt_estimate_html,
    fmt_interval,
    fmt_number,
    fmt_rate,
    fmt_rate_html,
    not_watched,
    slice_notes,
    undefined_everywhere,
    undefined_notes,
)

if TYPE_CHECKING:
    import jinja2

__all__ = ["ReportDocuments", "markdown_text", "render_html", "render_markdown", "write_report"]

CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'"


def _environment() -> jinja2.Environment:
    # imported here, when a report is rendered: every command imports this package (its figures' formats),
    # and jinja2 is a tenth of calibrate --help's import time
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.PackageLoader("calibrate.report", "templates"),
        autoescape=jinja2.select_autoescape(["html", "j2"], default_for_string=True),
        trim_blocks=True,
        lstrip_blocks=True,
        undefined=jinja2.StrictUndefined,
    )
    env.filters.update(
        est=fmt_estimate,
        est_html=fmt_estimate_html,
        num=fmt_number,
        rate=fmt_rate,
        rate_html=fmt_rate_html,
        interval=fmt_interval,
    )
    return env


def _context(documents: ReportDocuments, plots: dict | None) -> dict:
    # the templates index plain dicts: the statistics', and any typed recommendation's or audit's
    recs = {(r["metric"], r["judge"]): r for r in recommendation_dicts(documents.recommendations)}
    return {
        "stats": documents.stats_document,
        "recs": recs,
        "cases": documents.cases or {},
        "plots": plots or {},
        "manifest": documents.manifest,
        "csp": CSP,
        "undefined_notes": undefined_notes,
        "curve_rows": curve_rows,
        "defined_columns": defined_columns,
        "stat_labels": STAT_LABELS,
        "undefined_everywhere": undefined_everywhere,
        "slice_notes": slice_notes,
        "clipped": clipped,
        "case_fields": case_fields,
        "judge_runs": list(documents.judge_runs),
        "audits": [nested(a) for a in documents.audits],
        "calibrations": list(documents.calibrations),
        "versus": list(documents.versus),
        "since": documents.since or {},
        "rate_names": RATE_NAMES,
        "not_watched": not_watched,
    }


_P = ParamSpec("_P")
_R = TypeVar("_R")


def _documents_first(usage: str) -> Callable[[Callable[_P, _R]], Callable[_P, _R]]:
    """Refuse a call of before :class:`ReportDocuments` (the statistics, the recommendations and each
    section apart) with a TypeError that says how to call ``usage`` now."""

    def decorate(function: Callable[_P, _R]) -> Callable[_P, _R]:
        @functools.wraps(function)
        def call(*args: _P.args, **kwargs: _P.kwargs) -> _R:
            documents = args[0] if args else kwargs.get("documents")
            if not isinstance(documents, ReportDocuments):
                raise TypeError(
                    f"{function.__name__} takes the report's documents in one object now, not the statistics, "
                    f"the recommendations and the sections apart: {usage}, with documents = "
                    "calibrate.ReportDocuments(stats, recommendations, cases=..., audits=..., ...) "
                    f"(got {type(documents).__name__} first); calibrate.build_report(campaign, out_dir) "
                    "computes and writes them all"
                )
            return function(*args, **kwargs)

        return call

    return decorate


@_documents_first("render_html(documents)")
def render_html(documents: ReportDocuments) -> str:
    """The report as one HTML string (plots inline as SVG: :mod:`calibrate.report.plots`).

    Parameters
    ----------
    documents : ReportDocuments
        What the report shows.

    Examples
    --------
    >>> import calibrate
    >>> c = calibrate.load_campaign(calibrate.demo_campaign_path())
    >>> stats = calibrate.compute_stats(c, judges=["Olz-gpt4o"], n_boot=0)
    >>> render_html(ReportDocuments(stats, stats.recommendations)).startswith("<!DOCTYPE html>")
    True
    """
    from calibrate.report.plots import report_plots

    return _environment().get_template("report.html.j2").render(**_context(documents, report_plots(documents)))


_MARKDOWN_ESCAPES = {
    "&": "&amp;",
    "<": "&lt;",
    ">": "&gt;",
    "|": "\\|",
    "\\": "\\\\",
    "`": "\\`",
    "*": "\\*",
    "_": "\\_",
    "[": "\\[",
    "]": "\\]",
}


def markdown_text(value: Any, *, keep: str = "") -> Markup:
    """Text as it reads in any Markdown viewer: HTML, emphasis, code, links and table pipes escaped,
    line breaks as spaces (a cell stays in its table row); ``keep`` names characters left as they are.

    Examples
    --------
    >>> str(markdown_text("<script>x</script> | *a*\\nb"))
    '&lt;script&gt;x&lt;/script&gt; \\\\| \\\\*a\\\\* b'
    """
    if isinstance(value, Markup):
        return value
    text = " ".join(str(value).splitlines()) if value is not None else ""
    return Markup("".join(_MARKDOWN_ESCAPES.get(ch, ch) if ch not in keep else ch for ch in text))


def _markdown_environment() -> jinja2.Environment:
    """The Markdown report's environment: every value put in the page is escaped for Markdown, and the
    figures (``est``, ``num``, ``rate``, ``interval``) keep their interval brackets."""
    env = _environment()
    env.autoescape = False
    env.finalize = markdown_text
    for name, format_value in (
        ("est", fmt_estimate),
        ("num", fmt_number),
        ("rate", fmt_rate),
        ("interval", fmt_interval),
    ):
        env.filters[name] = (lambda f: lambda *a, **k: markdown_text(f(*a, **k), keep="[]"))(format_value)
    return env


@_documents_first("render_markdown(documents)")
def render_markdown(documents: ReportDocuments) -> str:
    """The report as Markdown (tables, no plots); everything a user wrote is escaped, as in the HTML.

    Parameters
    ----------
    documents : ReportDocuments
        What the report shows.

    Examples
    --------
    >>> import calibrate
    >>> c = calibrate.load_campaign(calibrate.demo_campaign_path())
    >>> stats = calibrate.compute_stats(c, judges=["Olz-gpt4o"], n_boot=0)
    >>> render_markdown(ReportDocuments(stats, [])).splitlines()[0]
    '# Judge calibration report: trec-dl-2023-llmjudge'
    """
    env = _markdown_environment()
    return env.get_template("report.md.j2").render(**_context(documents, None))


@_documents_first("write_report(documents, out_dir)")
def write_report(documents: ReportDocuments, out_dir: str | Path) -> dict[str, Path]:
    """Write ``report.html``, ``report.md`` and ``report.json`` into ``out_dir``.

    Parameters
    ----------
    documents : ReportDocuments
        What the report shows: the statistics, the recommendations and the sections a campaign adds
        (:func:`calibrate.report.build.report_documents` gathers them from a campaign).
    out_dir : path
        Created if missing.

    Returns
    -------
    dict
        ``{"html": path, "md": path, "json": path}``.

    Raises
    ------
    calibrate.base.errors.FileError
        A file cannot be written (a full disk, a read-only folder): every earlier report is kept whole.
    TypeError
        ``documents`` is not a :class:`ReportDocuments`: the call of before, with the statistics and the
        recommendations apart (the message says how to call it now).

    Examples
    --------
    >>> import calibrate, tempfile
    >>> c = calibrate.load_campaign(calibrate.demo_campaign_path())
    >>> stats = calibrate.compute_stats(c, judges=["Olz-gpt4o"], n_boot=0)
    >>> documents = calibrate.ReportDocuments(stats, stats.recommendations, cases=c.cases)
    >>> sorted(calibrate.write_report(documents, tempfile.mkdtemp()))
    ['html', 'json', 'md']
    """
    out = Path(out_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise FileError(
            out,
            f"cannot be made ({exc.strerror})",
            ParameterText("choose a writable place with {out_dir}", out_dir=NO_VALUE),
        ) from None
    paths = {"html": out / "report.html", "md": out / "report.md", "json": out / "report.json"}
    # everything is rendered before anything is written, and all three files are moved in together
    write_all(
        {
            paths["html"]: render_html(documents),
            paths["md"]: render_markdown(documents),
            paths["json"]: json.dumps(documents.to_dict(), allow_nan=False) + "\n",
        }
    )  # one line: the C encoder, 10x faster
    return paths
