"""The threshold-selection report: one self-contained HTML file, its Markdown twin, and JSON.

The HTML carries its styles and plots inline and a Content-Security-Policy that forbids every script
and every network request; jinja2's autoescaping turns any case text into text.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup

from calibrate.analysis.recommendation_results import recommendation_dicts
from calibrate.base.errors import NO_VALUE, FileError, ParameterText
from calibrate.base.files import write_all
from calibrate.base.results import nested
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
    listed_case_texts,
    not_watched,
    slice_notes,
    undefined_everywhere,
    undefined_notes,
)

__all__ = ["markdown_text", "render_html", "render_markdown", "write_report"]

CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'"


def _environment() -> jinja2.Environment:
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


def _context(
    stats: Mapping[str, Any],
    recommendations: Sequence[Mapping[str, Any]],
    cases: dict | None,
    plots: dict | None,
    judge_runs: list[dict] | None = None,
    audits: list[dict] | None = None,
    calibrations: list[dict] | None = None,
    versus: list[dict] | None = None,
    since: dict | None = None,
) -> dict:
    # typed recommendations and statistics as dicts: the templates index them
    recs = {(r["metric"], r["judge"]): r for r in recommendation_dicts(recommendations)}
    stats = nested(stats)
    return {
        "stats": stats,
        "recs": recs,
        "cases": cases or {},
        "plots": plots or {},
        "manifest": stats["manifest"],
        "csp": CSP,
        "undefined_notes": undefined_notes,
        "curve_rows": curve_rows,
        "defined_columns": defined_columns,
        "stat_labels": STAT_LABELS,
        "undefined_everywhere": undefined_everywhere,
        "slice_notes": slice_notes,
        "clipped": clipped,
        "case_fields": case_fields,
        "judge_runs": judge_runs or [],
        "audits": [nested(a) for a in audits or []],  # typed audits as dicts: the templates index them
        "calibrations": calibrations or [],
        "versus": versus or [],
        "since": since or {},
        "rate_names": RATE_NAMES,
        "not_watched": not_watched,
    }


def render_html(
    stats: Mapping[str, Any],
    recommendations: Sequence[Mapping[str, Any]],
    cases: dict | None = None,
    judge_runs: list[dict] | None = None,
    audits: list[dict] | None = None,
    calibrations: list[dict] | None = None,
    versus: list[dict] | None = None,
    since: dict | None = None,
) -> str:
    """The report as one HTML string (plots inline as SVG: :mod:`calibrate.report.plots`)."""
    from calibrate.report.plots import report_plots

    stats, recs = dict(nested(stats)), recommendation_dicts(recommendations)

    context = _context(
        stats,
        recs,
        cases,
        report_plots(stats, recs, calibrations, since),
        judge_runs,
        audits,
        calibrations,
        versus,
        since,
    )
    return _environment().get_template("report.html.j2").render(**context)


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


def render_markdown(
    stats: Mapping[str, Any],
    recommendations: Sequence[Mapping[str, Any]],
    cases: dict | None = None,
    judge_runs: list[dict] | None = None,
    audits: list[dict] | None = None,
    calibrations: list[dict] | None = None,
    versus: list[dict] | None = None,
    since: dict | None = None,
) -> str:
    """The report as Markdown (tables, no plots); everything a user wrote is escaped, as in the HTML."""
    env = _markdown_environment()
    return env.get_template("report.md.j2").render(
        **_context(stats, recommendations, cases, None, judge_runs, audits, calibrations, versus, since)
    )


def write_report(
    stats: Mapping[str, Any],
    recommendations: Sequence[Mapping[str, Any]],
    out_dir: str | Path,
    *,
    cases: dict | None = None,
    judge_runs: list[dict] | None = None,
    audits: list[dict] | None = None,
    calibrations: list[dict] | None = None,
    versus: list[dict] | None = None,
    since: dict | None = None,
) -> dict[str, Path]:
    """Write ``report.html``, ``report.md`` and ``report.json`` into ``out_dir``.

    Parameters
    ----------
    stats : mapping
        The document of :func:`calibrate.compute_stats`.
    recommendations : list of Recommendation or dict
        Recommendations of :func:`calibrate.recommend_thresholds` (any metrics, any judges): its
        ``.recommendations``, or its document's (``doc["recommendations"]``).
    out_dir : path
        Created if missing.
    cases : dict, optional
        :attr:`Campaign.cases`, so that the worst misses show their text.
    judge_runs : list of dict, optional
        What each judge's runs cost (``JudgeStore.summary()``), shown in a section of its own.
    audits : list of dict, optional
        Judge-upgrade audits (:func:`calibrate.review.audit.audit_judges`), each in a section of its own.
    calibrations : list of dict, optional
        Calibration maps (:func:`calibrate.analysis.calibration.calibration_maps`), a section per metric.
    versus : list of dict, optional
        Judge-versus-judge matrices (:func:`calibrate.analysis.versus.judge_matrix`), a section per metric.
    since : dict, optional
        What happened since the threshold was chosen: ``monitors`` (:func:`calibrate.review.monitor.monitor_judge`
        documents), ``not_monitored`` and ``fingerprints``, in a section of its own.

    Returns
    -------
    dict
        ``{"html": path, "md": path, "json": path}``.

    Raises
    ------
    calibrate.base.errors.FileError
        A file cannot be written (a full disk, a read-only folder): every earlier report is kept whole.

    Examples
    --------
    >>> import calibrate, tempfile
    >>> c = calibrate.load_campaign(calibrate.demo_campaign_path())
    >>> stats = calibrate.compute_stats(c, judges=["Olz-gpt4o"], n_boot=0)
    >>> sorted(calibrate.write_report(stats, stats.recommendations, tempfile.mkdtemp()))
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
    # typed statistics and recommendations as dicts: the templates index them
    stats, recs = dict(nested(stats)), recommendation_dicts(recommendations)
    document: dict[str, Any] = {
        "stats": stats,
        "recommendations": recs,
        "manifest": stats["manifest"],
        "judge_runs": judge_runs or [],
        "audits": [nested(a) for a in audits or []],
        "calibrations": calibrations or [],
        "versus": versus or [],
        "since": since or {},
        # the whole text of the cases the worst misses list (report.html clips it)
        "worst_miss_cases": listed_case_texts(stats, cases),
    }
    # everything is rendered before anything is written, and all three files are moved in together
    write_all(
        {
            paths["html"]: render_html(stats, recs, cases, judge_runs, audits, calibrations, versus, since),
            paths["md"]: render_markdown(stats, recs, cases, judge_runs, audits, calibrations, versus, since),
            paths["json"]: json.dumps(document, allow_nan=False) + "\n",
        }
    )  # one line: the C encoder, 10x faster
    return paths
