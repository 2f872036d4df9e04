"""Numbers as people read them: an estimate with its interval, or why there is none."""

from __future__ import annotations

from typing import Any

from markupsafe import Markup

__all__ = ["fmt_number", "fmt_estimate", "fmt_estimate_html", "fmt_rate", "fmt_interval", "undefined_notes",
           "STAT_LABELS"]


def fmt_number(value: Any, digits: int = 3) -> str:
    """
    >>> fmt_number(0.12345), fmt_number(None), fmt_number(3.0)
    ('0.123', '—', '3')
    """
    if value is None:
        return "—"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return f"{value:.{digits}f}" if isinstance(value, float) else str(value)


def fmt_interval(pair: Any, digits: int = 3) -> str:
    if not pair or pair[0] is None:
        return "—"
    return f"[{fmt_number(pair[0], digits)}, {fmt_number(pair[1], digits)}]"


def fmt_estimate(stat: dict | None, digits: int = 3) -> str:
    """An estimate with its interval, or a dash and the reason it is undefined.

    >>> fmt_estimate({"estimate": 0.5, "ci_low": 0.4, "ci_high": 0.61})
    '0.500 [0.400, 0.610]'
    >>> fmt_estimate({"estimate": None, "reason": "one class only"})
    '— (one class only)'
    >>> fmt_estimate({"estimate": 1.0, "ci_low": None, "ci_reason": "every resample gives 1"})
    '1.000 [no interval]'
    """
    if not stat:
        return "—"
    if stat.get("estimate") is None:
        return f"— ({stat.get('reason', 'undefined')})"
    text = f"{stat['estimate']:.{digits}f}"
    if stat.get("ci_low") is not None:
        text += f" [{stat['ci_low']:.{digits}f}, {stat['ci_high']:.{digits}f}]"
    elif "ci_reason" in stat or "ci_method" in stat:   # an estimate whose interval could not be made
        text += " [no interval]"
    return text


def fmt_estimate_html(stat: dict | None, digits: int = 3) -> Markup:
    """An estimate over its interval (smaller, on its own line) for HTML tables; everything escaped.
    An undefined statistic is a dash (the report lists the reasons under the table).

    >>> str(fmt_estimate_html({"estimate": 0.5, "ci_low": 0.4, "ci_high": 0.61}))
    '0.500<br><span class="ci">[0.400, 0.610]</span>'
    """
    if not stat or stat.get("estimate") is None:
        return Markup("—")
    text = Markup("{}").format(f"{stat['estimate']:.{digits}f}")
    if stat.get("ci_low") is not None:
        text += Markup('<br><span class="ci">[{}, {}]</span>').format(f"{stat['ci_low']:.{digits}f}",
                                                                    f"{stat['ci_high']:.{digits}f}")
    elif "ci_reason" in stat or "ci_method" in stat:
        text += Markup('<br><span class="ci" title="{}">[no interval]</span>').format(stat.get("ci_reason", ""))
    return text


STAT_LABELS = {"spearman": "Spearman ρ", "kendall": "Kendall τ-b", "kappa": "Cohen κ",
               "kappa_quadratic": "κ quadratic", "alpha": "Krippendorff α", "auc": "ROC AUC",
               "pass_kappa": "pass κ", "accuracy": "accuracy", "balanced_accuracy": "balanced accuracy"}


def undefined_notes(judges: list[dict]) -> list[tuple[str, str, list[str]]]:
    """(statistic, reason, judges) for every statistic some judge could not compute.

    >>> undefined_notes([{"judge": "a", "auc": {"estimate": None, "reason": "one class"}}])
    [('ROC AUC', 'one class', ['a'])]
    """
    notes: dict[tuple[str, str], list[str]] = {}
    for judge in judges:
        for key, label in STAT_LABELS.items():
            stat = judge.get(key) or {}
            if key in judge and stat.get("estimate") is None:
                notes.setdefault((label, stat.get("reason", "undefined")), []).append(judge["judge"])
    return [(label, reason, names) for (label, reason), names in notes.items()]


def curve_rows(curve: list[dict], threshold: float | None, n: int = 24) -> list[dict]:
    """At most ``n`` points of a curve for its table: the ``n // 2`` nearest the chosen threshold and
    the rest spread evenly over the whole range, in threshold order (report.json has every point).

    Examples
    --------
    >>> curve = [{"threshold": t / 10} for t in range(11)]
    >>> [p["threshold"] for p in curve_rows(curve, 0.5, n=4)]
    [0.0, 0.4, 0.5, 1.0]
    """
    if len(curve) <= n:
        return list(curve)
    chosen: set[int] = set()
    if threshold is not None:
        by_distance = sorted(range(len(curve)), key=lambda i: (abs(curve[i]["threshold"] - threshold), i))
        chosen.update(by_distance[: n // 2])
    spread = n - len(chosen)
    chosen.update(round(k * (len(curve) - 1) / max(spread - 1, 1)) for k in range(spread))
    for i in range(len(curve)):   # spacing that fell on a chosen point leaves room: fill in order
        if len(chosen) >= n:
            break
        chosen.add(i)
    return [curve[i] for i in sorted(chosen)]


def fmt_rate(stat: dict | None) -> str:
    """A rate with its counts (or, weighted, its cases and effective size) and interval.

    >>> fmt_rate({"estimate": 0.25, "ci_low": 0.1, "ci_high": 0.5, "k": 2, "n": 8})
    '0.250 (2/8) [0.100, 0.500]'
    >>> fmt_rate({"estimate": 0.25, "ci_low": 0.1, "ci_high": 0.5, "n": 8, "effective_n": 5.5, "weighted": True})
    '0.250 (weighted, 8 cases, effective n 5.5) [0.100, 0.500]'
    """
    if not stat or stat.get("estimate") is None:
        return fmt_estimate(stat)
    counts = (f"weighted, {stat['n']} cases, effective n {stat['effective_n']:.1f}" if stat.get("weighted")
              else f"{stat['k']}/{stat['n']}")
    return f"{stat['estimate']:.3f} ({counts}) [{stat['ci_low']:.3f}, {stat['ci_high']:.3f}]"
