"""Plots for the report, drawn here as inline SVG: the error-rate curves as small panels per judge,
the agreement of every judge with the humans, the reliability of calibrated scores. A hundred plots
take milliseconds and a few kilobytes each, print sharp, load nothing and run no script; the only
text from users in them (judge names) is escaped."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from markupsafe import Markup, escape

from calibrate.analysis.results import JudgeAgreement
from calibrate.report.documents import ReportDocuments

FALSE_PASS_COLOUR, FALSE_FAIL_COLOUR = "#c0392b", "#2471a3"


#: The panel of one judge's curves (SVG user units; the page scales it) and the points drawn at most.
PANEL_W, PANEL_H, MARGIN_L, MARGIN_R, MARGIN_T, MARGIN_B = 300, 170, 34, 8, 8, 28
MAX_POINTS = 60


def _fmt(x: float) -> str:
    return f"{x:.0f}"


def _tick(value: float) -> str:
    return f"{value:.3g}"


def curve_svg(curve: Sequence[Mapping[str, Any]], pass_rule: str, recommendation: Mapping[str, Any] | None) -> Markup:
    """One judge's false-pass and false-fail rates over the threshold (its ``curve``: step lines, 95%
    Wilson bands; ``pass_rule`` as its entry says it), with the rule's false-pass ceiling, the recommended
    threshold and DeepEval's 0.5 marked: a small inline SVG panel (at most :data:`MAX_POINTS` thresholds
    drawn, spread evenly; report.json has them all)."""
    points = _shown_points(curve)
    frame = _Frame.around([p["threshold"] for p in points])
    parts = [
        f'<svg class="curve" viewBox="0 0 {PANEL_W} {PANEL_H}" role="img" xmlns="http://www.w3.org/2000/svg">',
        *_axes(frame, pass_rule),
    ]
    for key, colour in (("false_pass", FALSE_PASS_COLOUR), ("false_fail", FALSE_FAIL_COLOUR)):
        parts += _rate_lines(points, key, colour, frame)
    parts += _markers(frame, recommendation or {})
    parts.append("</svg>")
    return Markup("".join(parts))  # numbers and fixed words only: no user text inside


def _shown_points(curve: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The curve's points drawn: all of them, or :data:`MAX_POINTS` spread evenly."""
    index = (
        sorted({round(i * (len(curve) - 1) / (MAX_POINTS - 1)) for i in range(MAX_POINTS)})
        if len(curve) > MAX_POINTS
        else range(len(curve))
    )
    return [curve[i] for i in index]


@dataclass(frozen=True)
class _Frame:
    """The panel's plotting area: thresholds from ``low_x`` to ``high_x`` across, rates 0 to 1 up."""

    low_x: float
    high_x: float
    width: float = PANEL_W - MARGIN_L - MARGIN_R
    height: float = PANEL_H - MARGIN_T - MARGIN_B

    @classmethod
    def around(cls, xs: Sequence[float]) -> _Frame:
        low_x, high_x = (min(xs), max(xs)) if xs else (0.0, 1.0)
        if high_x - low_x < 1e-12:
            low_x, high_x = low_x - 0.5, high_x + 0.5
        return cls(low_x, high_x)

    def sx(self, x: float) -> float:
        return MARGIN_L + (x - self.low_x) / (self.high_x - self.low_x) * self.width

    def sy(self, y: float) -> float:
        return MARGIN_T + (1 - y) * self.height


def _axes(frame: _Frame, pass_rule: str) -> list[str]:
    """The panel's box, its middle line, the ticks of both axes and the threshold axis's label."""
    width, height, sx, sy = frame.width, frame.height, frame.sx, frame.sy
    low_x, high_x = frame.low_x, frame.high_x
    parts = [
        f'<rect x="{MARGIN_L}" y="{MARGIN_T}" width="{width}" height="{height}" fill="white" stroke="#bbb"/>',
        f'<line x1="{MARGIN_L}" x2="{MARGIN_L + width}" y1="{_fmt(sy(0.5))}" y2="{_fmt(sy(0.5))}" stroke="#eee"/>',
    ]
    for y in (0.0, 0.5, 1.0):
        parts.append(f'<text x="{MARGIN_L - 4}" y="{_fmt(sy(y) + 3)}" font-size="9" text-anchor="end">{y:g}</text>')
    for x in (low_x, (low_x + high_x) / 2, high_x):
        parts.append(
            f'<text x="{_fmt(sx(x))}" y="{MARGIN_T + height + 11}" font-size="9" text-anchor="middle">{_tick(x)}</text>'
        )
    parts.append(
        f'<text x="{MARGIN_L + width / 2}" y="{PANEL_H - 3}" font-size="9" text-anchor="middle" '
        f'fill="#555">threshold ({"score >= t" if pass_rule == "score >= threshold" else "score <= t"})'
        "</text>"
    )
    return parts


def _rate_lines(points: Sequence[Mapping[str, Any]], key: str, colour: str, frame: _Frame) -> list[str]:
    """One rate (``key``: false_pass or false_fail) as a step line with its interval as a band."""
    sx, sy = frame.sx, frame.sy
    steps, band_top, band_bottom = [], [], []
    previous_x = None
    for p in points:
        y, (low, high) = p[f"{key}_rate"], p[f"{key}_rate_ci"]
        if y is None or not math.isfinite(y):
            previous_x = p["threshold"]
            continue
        start = p["threshold"] if previous_x is None else previous_x  # a step before each threshold
        steps += [(sx(start), sy(y)), (sx(p["threshold"]), sy(y))]
        if low is not None and high is not None:
            band_top += [(sx(start), sy(high)), (sx(p["threshold"]), sy(high))]
            band_bottom += [(sx(start), sy(low)), (sx(p["threshold"]), sy(low))]
        previous_x = p["threshold"]
    parts = []
    if band_top:
        outline = band_top + band_bottom[::-1]
        parts.append(
            f'<polygon points="{" ".join(f"{_fmt(a)},{_fmt(b)}" for a, b in outline)}" fill="{colour}" '
            'fill-opacity="0.16" stroke="none"/>'
        )
    if steps:
        parts.append(
            f'<polyline points="{" ".join(f"{_fmt(a)},{_fmt(b)}" for a, b in steps)}" fill="none" '
            f'stroke="{colour}" stroke-width="1.6"/>'
        )
    return parts


def _markers(frame: _Frame, recommendation: Mapping[str, Any]) -> list[str]:
    """The rule's false-pass ceiling, DeepEval's 0.5 and the recommended threshold, where they fall."""
    sx, sy, height = frame.sx, frame.sy, frame.height
    parts = []
    rule = recommendation.get("rule") or {}
    if rule.get("kind") == "constraint" and rule.get("max_false_pass") is not None:
        y = sy(rule["max_false_pass"])
        parts.append(
            f'<line class="ceiling" x1="{MARGIN_L}" x2="{MARGIN_L + frame.width}" y1="{_fmt(y)}" y2="{_fmt(y)}" '
            f'stroke="{FALSE_PASS_COLOUR}" stroke-dasharray="4 3" stroke-width="1"/>'
        )
    if frame.low_x <= 0.5 <= frame.high_x:
        parts.append(
            f'<line x1="{_fmt(sx(0.5))}" x2="{_fmt(sx(0.5))}" y1="{MARGIN_T}" y2="{MARGIN_T + height}" '
            'stroke="#888" stroke-dasharray="2 3" stroke-width="1"/>'
        )
    threshold = recommendation.get("threshold")
    if threshold is not None and frame.low_x <= threshold <= frame.high_x:
        parts.append(
            f'<line class="chosen" x1="{_fmt(sx(threshold))}" x2="{_fmt(sx(threshold))}" y1="{MARGIN_T}" '
            f'y2="{MARGIN_T + height}" stroke="black" stroke-width="1.4"/>'
        )
    return parts


#: Colours of the judges in a reliability diagram (cycled).
PALETTE = ("#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e", "#e6ab02", "#a6761d", "#666666", "#1f78b4", "#b2df8a")


def agreement_svg(judges: Sequence[JudgeAgreement]) -> Markup:
    """Each judge's Spearman rho and kappa (or pass/fail kappa) with their intervals, one row per judge:
    an inline SVG (the judges' names escaped)."""
    row, left, right, top, width = 18, min(260, 12 + 6 * max([len(j.judge) for j in judges] + [5])), 16, 22, 700
    plot_w = width - left - right
    height = top + row * len(judges) + 24

    def sx(x: float) -> float:
        return left + (min(max(x, -0.2), 1.0) + 0.2) / 1.2 * plot_w

    parts = [f'<svg class="agreement" viewBox="0 0 {width} {height}" role="img" xmlns="http://www.w3.org/2000/svg">']
    for tick in (-0.2, 0, 0.2, 0.4, 0.6, 0.8, 1.0):
        x = _fmt(sx(tick))
        parts.append(
            f'<line x1="{x}" x2="{x}" y1="{top - 4}" y2="{height - 20}" stroke="{"#999" if tick == 0 else "#eee"}"/>'
            f'<text x="{x}" y="{height - 8}" font-size="10" text-anchor="middle">{tick:g}</text>'
        )
    for key, colour, label, offset in (
        ("spearman", "#1e8449", "Spearman rho", -3),
        ("kappa", "#7d3c98", "kappa", 3),
        ("pass_kappa", "#ca6f1e", "pass/fail kappa", 3),
    ):
        parts.append(
            f'<circle cx="{left + {"spearman": 10, "kappa": 130, "pass_kappa": 220}[key]}" cy="9" r="3.5" '
            f'fill="{colour}"/><text x="{left + {"spearman": 18, "kappa": 138, "pass_kappa": 228}[key]}" '
            f'y="13" font-size="10">{label}</text>'
        )
        for i, judge in enumerate(judges):
            stat = judge.statistic(key)
            if key == "pass_kappa" and judge.kappa.value is not None:
                continue
            if stat.value is None:
                continue
            y = top + row * i + row / 2 + offset
            low = stat.ci_low if stat.ci_low is not None else stat.value
            high = stat.ci_high if stat.ci_high is not None else stat.value
            parts.append(
                f'<line x1="{_fmt(sx(low))}" x2="{_fmt(sx(high))}" y1="{y}" y2="{y}" stroke="{colour}" '
                f'stroke-width="1.4"/><circle cx="{_fmt(sx(stat.value))}" cy="{y}" r="3.5" '
                f'fill="{colour}"/>'
            )
    for i, judge in enumerate(judges):
        parts.append(
            f'<text x="{left - 6}" y="{top + row * i + row / 2 + 4}" font-size="10" text-anchor="end">'
            f"{escape(judge.judge)}</text>"
        )
    parts.append("</svg>")
    return Markup("".join(parts))


def reliability_svg(metric: str, fits: Sequence[Mapping[str, Any]]) -> Markup:
    """Reliability diagram: per judge, the observed human pass rate against the cross-validated
    calibrated probability, bin by bin, beside the diagonal of perfect calibration (inline SVG, the
    judges named in a legend beside it, escaped)."""
    size, margin, legend_w = 260, 34, 300
    plot = size - margin - 10

    def sx(x: float) -> float:
        return margin + x * plot

    def sy(y: float) -> float:
        return 10 + (1 - y) * plot

    height = max(size, 20 + 14 * len(fits))
    parts = [
        f'<svg class="reliability" viewBox="0 0 {size + legend_w} {height}" role="img" '
        'xmlns="http://www.w3.org/2000/svg">',
        f'<rect x="{margin}" y="10" width="{plot}" height="{plot}" fill="white" stroke="#bbb"/>',
        f'<line x1="{_fmt(sx(0))}" y1="{_fmt(sy(0))}" x2="{_fmt(sx(1))}" y2="{_fmt(sy(1))}" stroke="#999" '
        'stroke-dasharray="4 3"/>',
    ]
    for tick in (0, 0.5, 1):
        parts.append(
            f'<text x="{margin - 4}" y="{_fmt(sy(tick) + 3)}" font-size="9" text-anchor="end">{tick:g}</text>'
            f'<text x="{_fmt(sx(tick))}" y="{size - 12}" font-size="9" text-anchor="middle">{tick:g}</text>'
        )
    parts.append(
        f'<text x="{margin + plot / 2}" y="{size - 1}" font-size="9" text-anchor="middle" fill="#555">'
        "calibrated probability (cross-validated) vs observed pass rate</text>"
    )
    for i, fit in enumerate(fits):
        colour = PALETTE[i % len(PALETTE)]
        bins = [b for b in fit["cross_validated"]["reliability"] if b.get("observed") is not None]
        line = " ".join(f"{_fmt(sx(b['mean_predicted']))},{_fmt(sy(b['observed']))}" for b in bins)
        parts.append(f'<polyline points="{line}" fill="none" stroke="{colour}" stroke-width="1.4"/>')
        parts += [
            f'<circle cx="{_fmt(sx(b["mean_predicted"]))}" cy="{_fmt(sy(b["observed"]))}" r="2.2" fill="{colour}"/>'
            for b in bins
        ]
        parts.append(
            f'<rect x="{size + 6}" y="{14 + 14 * i}" width="10" height="3" fill="{colour}"/>'
            f'<text x="{size + 20}" y="{19 + 14 * i}" font-size="10">{escape(fit["judge"])} '
            f"(ECE {fit['cross_validated']['ece']:.3f})</text>"
        )
    parts.append("</svg>")
    return Markup("".join(parts))


def _seconds(text: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def monitor_svg(watches: list[dict], first: str, last: str) -> Markup:
    """One rate over the stream (``calibrate monitor``), from its watches (the human pass rate has two,
    one each way): the running estimate and confidence sequence of the first (restarted after each of
    its alarms), the edge of every watch's accepted range (dashed), the alarms (red lines) and the
    change points they found (grey lines); time from the stream's first case to its last."""
    rate = watches[0]
    start, end = _seconds(first), _seconds(last)
    if end - start < 1:
        end = start + 1
    width, height = PANEL_W - MARGIN_L - MARGIN_R, PANEL_H - MARGIN_T - MARGIN_B

    def sx(t: float) -> float:
        return MARGIN_L + (t - start) / (end - start) * width

    def sy(y: float) -> float:
        return MARGIN_T + (1 - min(1.0, max(0.0, y))) * height

    colour = (
        FALSE_PASS_COLOUR
        if rate["rate"] == "false_pass_rate"
        else FALSE_FAIL_COLOUR
        if rate["rate"] == "false_fail_rate"
        else "#1b9e77"
    )
    parts = [
        f'<svg class="monitor" viewBox="0 0 {PANEL_W} {PANEL_H}" role="img" xmlns="http://www.w3.org/2000/svg">',
        f'<rect x="{MARGIN_L}" y="{MARGIN_T}" width="{width}" height="{height}" fill="white" stroke="#bbb"/>',
    ]
    for y in (0.0, 0.5, 1.0):
        parts.append(f'<text x="{MARGIN_L - 4}" y="{_fmt(sy(y) + 3)}" font-size="9" text-anchor="end">{y:g}</text>')
    for t, anchor in ((start, "start"), (end, "end")):
        parts.append(
            f'<text x="{_fmt(sx(t))}" y="{MARGIN_T + height + 11}" font-size="9" text-anchor="{anchor}">'
            f"{escape((first if t == start else last)[:10])}</text>"
        )
    points = [(sx(_seconds(p["time"])), p) for p in rate["sequence"]]
    band = [(x, p) for x, p in points if p["low"] is not None and p["high"] is not None]
    if band:
        outline = [(x, sy(p["high"])) for x, p in band] + [(x, sy(p["low"])) for x, p in band[::-1]]
        parts.append(
            f'<polygon points="{" ".join(f"{_fmt(a)},{_fmt(b)}" for a, b in outline)}" fill="{colour}" '
            'fill-opacity="0.16" stroke="none"/>'
        )
    line = [(x, sy(p["estimate"])) for x, p in points if p["estimate"] is not None]
    if line:
        parts.append(
            f'<polyline points="{" ".join(f"{_fmt(a)},{_fmt(b)}" for a, b in line)}" fill="none" '
            f'stroke="{colour}" stroke-width="1.4"/>'
        )
    for watch in watches:
        y = sy(watch["bound"])
        parts.append(
            f'<line class="bound" x1="{MARGIN_L}" x2="{MARGIN_L + width}" y1="{_fmt(y)}" y2="{_fmt(y)}" '
            'stroke="black" stroke-dasharray="4 3" stroke-width="1"/>'
        )
        for alarm in watch["alarms"]:
            for key, stroke in (("change_time", "#888"), ("time", "#c0392b")):
                if alarm.get(key) is None:  # no change found: the rate was out of its range on the baseline
                    continue
                x = _fmt(sx(_seconds(alarm[key])))
                parts.append(
                    f'<line class="{"alarm" if key == "time" else "change"}" x1="{x}" x2="{x}" '
                    f'y1="{MARGIN_T}" y2="{MARGIN_T + height}" stroke="{stroke}" stroke-width="1.2"/>'
                )
    parts.append("</svg>")
    return Markup("".join(parts))  # numbers, dates and fixed words only


def report_plots(documents: ReportDocuments) -> dict:
    """``{(metric, judge): uri, (metric, None): uri, (metric, "reliability"): uri, ("since", metric,
    judge, rate): uri}`` for every curve, every agreement plot, every metric's reliability diagram, and
    every rate a monitor watched."""
    recs = {(r.metric, r.judge): r for r in documents.recommendations}
    plots: dict = {}
    for monitor in (documents.since or {}).get("monitors", []):
        for name in dict.fromkeys(r["rate"] for r in monitor["rates"]):
            plots[("since", monitor["metric"], monitor["judge"], name)] = monitor_svg(
                [r for r in monitor["rates"] if r["rate"] == name],
                monitor["stream"]["first"],
                monitor["stream"]["last"],
            )
    by_metric: dict[str, list[Mapping[str, Any]]] = {}
    for fit in documents.calibrations:
        by_metric.setdefault(fit["metric"], []).append(fit)
    for metric, fits in by_metric.items():
        plots[(metric, "reliability")] = reliability_svg(metric, fits)
    for m in documents.stats.metrics:
        if m.judges:
            plots[(m.metric, None)] = agreement_svg(m.judges)
        for judge in m.judges:
            if judge.extra.get("curve"):
                plots[(m.metric, judge.judge)] = curve_svg(
                    judge.extra["curve"], judge.extra["pass_rule"], recs.get((m.metric, judge.judge))
                )
    return plots
