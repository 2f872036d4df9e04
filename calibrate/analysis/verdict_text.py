"""The words of a verdict: rates, thresholds and pass rules as short text, the line for a threshold the user
runs today (:func:`current_text`), and why a false-pass ceiling of 0 can never be shown."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = [
    "MOST",
    "current_text",
    "fails_most_text",
    "number_text",
    "pass_rule_text",
    "rate_text",
    "rates_text",
    "threshold_text",
    "zero_ceiling_text",
]

#: a false-fail rate above this is "most human passes"
MOST = 0.5


def zero_ceiling_text() -> str:
    """Why a false-pass ceiling of 0 (``max_false_pass = 0``) can never be shown, and what to give instead.

    Examples
    --------
    >>> zero_ceiling_text()[:44]
    'a false-pass ceiling of 0 can never be shown'
    """
    return (
        "a false-pass ceiling of 0 can never be shown: on any finite number of human fails, even with no false "
        "pass, the false-pass rate's upper bound is above 0, so no judge and no number of labels meets it; "
        "give a ceiling above 0 (at 95% confidence, 0.05 takes about 73 human fails with no false pass, "
        "0.01 about 380)"
    )


def number_text(x: float | None) -> str:
    """A rate or threshold, short: two decimals, three below 0.01, as given when whole."""
    if x is None:
        return "-"
    if float(x).is_integer():
        return f"{x:.0f}"
    return f"{x:.3f}" if 0 < abs(x) < 0.005 else f"{x:.2f}"


def threshold_text(x: float) -> str:
    """A threshold to at most three decimals (report.json has it whole): ``3``, ``0.7``, ``0.896``."""
    return f"{x:.3f}".rstrip("0").rstrip(".")


def rate_text(detail: Mapping[str, Any] | None) -> str:
    """``0.06 [0.04, 0.09]``, or ``0.06`` without an interval, or ``-``."""
    if not detail or detail.get("estimate") is None:
        return "-"
    text = number_text(detail["estimate"])
    if detail.get("ci_low") is not None:
        text += f" [{number_text(detail['ci_low'])}, {number_text(detail['ci_high'])}]"
    return text


def pass_rule_text(rec: Mapping[str, Any]) -> str:
    """``score >= 0.7`` (``<=`` for a judge whose lower scores are better)."""
    return rec["pass_rule"].replace("threshold", threshold_text(rec["threshold"])).replace(">=", "≥").replace("<=", "≤")


def rates_text(rec_or_fp: Mapping[str, Any], ff: Mapping[str, Any] | None = None) -> str:
    """``false passes 0.06 [0.04, 0.09], false fails ...`` of a recommendation, or of two rate figures."""
    fp = rec_or_fp if ff is not None else rec_or_fp.get("false_pass_rate_detail")
    ff = ff if ff is not None else rec_or_fp.get("false_fail_rate_detail")
    return f"false passes {rate_text(fp)}, false fails {rate_text(ff)}"


def _count(detail: dict[str, Any], whose: str) -> str:
    """``21 of 27 answers the annotators failed (0.78 [0.59, 0.89])``; weighted rates give their share."""
    if detail.get("k") is not None and not detail.get("weighted"):
        return f"{detail['k']} of {detail['n']} answers {whose} ({rate_text(detail)})"
    cases = f", {detail['n']} cases" if detail.get("n") is not None else ""
    return f"{rate_text(detail)} of the answers {whose} (weighted{cases})"


def current_text(current: dict[str, Any], rule: dict[str, Any]) -> str:
    """The line for a threshold the user runs today: its false passes and false fails as counts of the
    annotators' verdicts, with their intervals, and where it stands against a false-pass ceiling.

    Examples
    --------
    >>> cur = {"threshold": 0.5, "source_text": "DeepEval's default", "pass_rule": "score >= threshold",
    ...        "false_pass_rate": {"estimate": 21 / 27, "ci_low": 0.59, "ci_high": 0.89, "k": 21, "n": 27},
    ...        "false_fail_rate": {"estimate": 3 / 33, "ci_low": 0.03, "ci_high": 0.24, "k": 3, "n": 33}}
    >>> current_text(cur, {"kind": "constraint", "max_false_pass": 0.1})  # doctest: +NORMALIZE_WHITESPACE
    "at your current threshold 0.5 (DeepEval's default): passes 21 of 27 answers the annotators failed
     (0.78 [0.59, 0.89]) and fails 3 of 33 answers they passed (0.09 [0.03, 0.24]); past the 0.1 ceiling"
    """
    shown = (
        current["pass_rule"]
        .replace("threshold", threshold_text(current["threshold"]))
        .replace(">=", "≥")
        .replace("<=", "≤")
    )
    where = threshold_text(current["threshold"]) if current["pass_rule"] == "score >= threshold" else shown
    head = f"at your current threshold {where} ({current['source_text']})"
    fp, ff = current.get("false_pass_rate") or {}, current.get("false_fail_rate") or {}
    parts = []
    if fp.get("estimate") is not None:
        parts.append("passes " + _count(fp, "the annotators failed"))
    if ff.get("estimate") is not None:
        parts.append("fails " + _count(ff, "they passed" if parts else "the annotators passed"))
    if not parts:
        return f"{head}: no rates ({fp.get('reason') or ff.get('reason') or 'no labelled case'})"
    text = f"{head}: {' and '.join(parts)}"
    ceiling = rule.get("max_false_pass") if rule.get("kind") == "constraint" else None
    if ceiling is not None and fp.get("estimate") is not None:
        if fp["estimate"] > ceiling + 1e-12:
            text += f"; past the {ceiling:g} ceiling"
        elif fp.get("ci_high") is not None and fp["ci_high"] > ceiling + 1e-12:
            text += f"; its interval reaches past the {ceiling:g} ceiling"
        else:
            text += f"; within the {ceiling:g} ceiling"
    if ff.get("estimate") is not None and ff["estimate"] > MOST:
        text += "; it fails most human passes"
    return text


def fails_most_text(ff: Mapping[str, Any] | None) -> str:
    """``: a gate there blocks 78% of the answers the annotators passed``, or empty (it fails few)."""
    if not ff or ff.get("estimate") is None or ff["estimate"] <= MOST:
        return ""
    return f": a gate there blocks {ff['estimate']:.0%} of the answers the annotators passed"
