"""Numbers as people read them: an estimate with its interval, or why there is none."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from markupsafe import Markup

__all__ = [
    "FULL_AT",
    "STAT_LABELS",
    "case_fields",
    "case_texts",
    "clipped",
    "defined_columns",
    "fmt_estimate",
    "fmt_estimate_html",
    "fmt_interval",
    "fmt_number",
    "fmt_rate",
    "fmt_rate_html",
    "not_watched",
    "slice_notes",
    "undefined_everywhere",
    "undefined_notes",
]


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
    elif "ci_reason" in stat or "ci_method" in stat:  # an estimate whose interval could not be made
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
        text += Markup('<br><span class="ci">[{}, {}]</span>').format(
            f"{stat['ci_low']:.{digits}f}", f"{stat['ci_high']:.{digits}f}"
        )
    elif "ci_reason" in stat or "ci_method" in stat:
        text += Markup('<br><span class="ci" title="{}">[no interval]</span>').format(stat.get("ci_reason", ""))
    return text


#: the rates ``calibrate monitor`` watches, as the report names them
RATE_NAMES = {
    "false_pass_rate": "false-pass rate",
    "false_fail_rate": "false-fail rate",
    "human_pass_rate": "human pass rate",
}
STAT_LABELS = {
    "spearman": "Spearman ρ",
    "kendall": "Kendall τ-b",
    "kappa": "Cohen κ",
    "kappa_quadratic": "κ quadratic",
    "alpha": "Krippendorff α",
    "auc": "ROC AUC",
    "pass_kappa": "pass κ",
    "accuracy": "accuracy",
    "balanced_accuracy": "balanced accuracy",
}


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


def defined_columns(judges: list[dict], keys: list[str]) -> list[str]:
    """The statistics of ``keys`` that some judge has a value of (a column of dashes is left out).

    >>> defined_columns([{"auc": {"estimate": 0.7}, "kappa": {"estimate": None}}], ["kappa", "auc"])
    ['auc']
    """
    return [key for key in keys if any((j.get(key) or {}).get("estimate") is not None for j in judges)]


def undefined_everywhere(judges: list[dict]) -> list[tuple[str, str]]:
    """(statistic, reason) of every statistic no judge has a value of: said once, beside the table
    that leaves its column out (the reasons of different judges joined).

    >>> undefined_everywhere([{"judge": "a", "kappa": {"estimate": None, "reason": "continuous"}}])
    [('Cohen κ', 'continuous')]
    """
    if not judges:
        return []
    out = []
    for key, label in STAT_LABELS.items():
        if all(key in j and (j.get(key) or {}).get("estimate") is None for j in judges):
            reasons = dict.fromkeys((j.get(key) or {}).get("reason", "undefined") for j in judges)
            out.append((label, "; ".join(reasons)))
    return out


def slice_notes(slices: list[dict], keys: list[str]) -> list[tuple[str, str, list[str]]]:
    """(statistic, reason, where) for every undefined cell of a slices table: each reason said once,
    with the slices and judges it holds for (``value / judge``, or ``value`` for all its judges).

    >>> slices = [{"value": "how", "judges": [{"judge": "a", "auc": {"estimate": None, "reason": "one class"}},
    ...                                       {"judge": "b", "auc": {"estimate": None, "reason": "one class"}}]}]
    >>> slice_notes(slices, ["auc"])
    [('ROC AUC', 'one class', ['how'])]
    """
    notes: dict[tuple[str, str], list[str]] = {}
    for s in slices:
        for key in keys:
            by_reason: dict[str, list[str]] = {}
            for j in s["judges"]:
                stat = j.get(key) or {}
                if stat.get("estimate") is None:
                    by_reason.setdefault(stat.get("reason", "undefined"), []).append(j["judge"])
            for reason, names in by_reason.items():
                places = [str(s["value"])] if len(names) == len(s["judges"]) else [f"{s['value']} / {n}" for n in names]
                notes.setdefault((STAT_LABELS[key], reason), []).extend(places)
    return [(label, reason, places) for (label, reason), places in notes.items()]


def fmt_rate_html(stat: dict | None) -> Markup:
    """A rate with its counts, over its interval (smaller, on its own line), for HTML tables.

    >>> str(fmt_rate_html({"estimate": 0.25, "ci_low": 0.1, "ci_high": 0.5, "k": 2, "n": 8}))
    '0.250 (2/8)<br><span class="ci">[0.100, 0.500]</span>'
    """
    if not stat or stat.get("estimate") is None:
        return Markup("—")
    counts = f"weighted, effective n {stat['effective_n']:.1f}" if stat.get("weighted") else f"{stat['k']}/{stat['n']}"
    return Markup('{} ({})<br><span class="ci">[{}, {}]</span>').format(
        f"{stat['estimate']:.3f}", counts, f"{stat['ci_low']:.3f}", f"{stat['ci_high']:.3f}"
    )


#: characters of a case's text shown before it is clipped (the rest is one click away)
CLIP_AT = 280
#: characters of a case's text report.html holds at most (long texts of many cases made it megabytes);
#: report.json holds the whole text of every case a worst-miss table lists (:func:`case_texts`)
FULL_AT = 1000


#: the text of a case a reviewer reads beside a miss, in table order
CASE_FIELDS = (
    ("input", "input"),
    ("actual_output", "actual output"),
    ("expected_output", "expected output"),
    ("retrieval_context", "retrieved context"),
    ("context", "context"),
)


def case_fields(rows: list[dict], cases: dict[str, dict]) -> list[tuple[str, str]]:
    """(field, label) of the case texts some listed case has (a column every case lacks is left out).

    >>> case_fields([{"case_id": "a"}], {"a": {"input": "q", "retrieval_context": ["p"]}})
    [('input', 'input'), ('retrieval_context', 'retrieved context')]
    """
    present = [cases.get(r["case_id"], {}) for r in rows]
    return [(key, label) for key, label in CASE_FIELDS if any(c.get(key) not in (None, "", []) for c in present)]


def clipped(text: Any, uid: str, limit: int = CLIP_AT) -> Markup:
    """A case's text for a table cell, escaped: whole when short, else its first ``limit`` characters
    and a "full text" toggle (a checkbox and CSS, no script; print shows the full text). A list (a
    retrieval context) is numbered, one passage per line.

    Examples
    --------
    >>> str(clipped("<b>hi</b>", "x"))
    '&lt;b&gt;hi&lt;/b&gt;'
    >>> str(clipped(["one", "two"], "x"))
    '[1] one<br>[2] two'
    >>> 'data-characters="20"' in clipped("a" * 20, "x", limit=5)   # its label reads "full text (20 characters)"
    True
    >>> "1000 more characters: the whole text is in report.json" in clipped("a" * (FULL_AT + 1000), "x")
    True
    """
    if text is None or text == "" or text == []:
        return Markup("")
    budget = max(limit, FULL_AT)
    if isinstance(text, (list, tuple)):
        chunks = [f"[{i}] {chunk}" for i, chunk in enumerate(text, 1)]
        plain, kept, left = "\n".join(chunks), [], budget
        for chunk in chunks:
            if left <= 0:
                break
            kept.append(chunk[:left])
            left -= len(chunk) + 1
        whole = Markup("<br>").join(kept)
    else:
        plain = str(text)
        whole = Markup("{}").format(plain[:budget])
    if len(plain) > budget:
        whole += Markup(" … <em>({} more characters: the whole text is in report.json)</em>").format(
            len(plain) - budget
        )
    if len(plain) <= limit:
        return whole
    return Markup(
        '<span class="clip"><input type="checkbox" id="{id}"><span class="short">{short}…</span>'
        '<span class="full">{whole}</span><label for="{id}" data-characters="{n}"></label></span>'
    ).format(id=uid, short=plain[:limit], whole=whole, n=len(plain))


def case_texts(case_ids: Iterable[str], cases: Mapping[str, Mapping[str, Any]] | None) -> dict[str, dict]:
    """The whole text (the fields of :data:`CASE_FIELDS`) of each case of ``case_ids`` that ``cases``
    holds, by case id in order: what report.json keeps of the texts of the cases a worst-miss table
    lists, which report.html clips at :data:`FULL_AT` characters.

    Examples
    --------
    >>> case_texts(["b", "a", "a", "z"], {"a": {"input": "q", "metadata": {}}, "b": {"input": "r"}})
    {'a': {'input': 'q'}, 'b': {'input': 'r'}}
    """
    cases = cases or {}
    return {
        cid: {key: cases[cid][key] for key, _ in CASE_FIELDS if key in cases[cid]}
        for cid in sorted(set(case_ids))
        if cid in cases
    }


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
    for i in range(len(curve)):  # spacing that fell on a chosen point leaves room: fill in order
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
    counts = (
        f"weighted, {stat['n']} cases, effective n {stat['effective_n']:.1f}"
        if stat.get("weighted")
        else f"{stat['k']}/{stat['n']}"
    )
    return f"{stat['estimate']:.3f} ({counts}) [{stat['ci_low']:.3f}, {stat['ci_high']:.3f}]"


def not_watched(since: dict) -> list[dict]:
    """The judges no monitor could watch, grouped by reason: ``[{"reason", "judges": ["metric / judge"]}]``
    (``since["not_watched"]``, or grouped here from ``not_monitored``).

    Examples
    --------
    >>> not_watched({"not_monitored": [{"metric": "m", "judge": "a", "reason": "no baseline"},
    ...                                {"metric": "m", "judge": "b", "reason": "no baseline"}]})
    [{'reason': 'no baseline', 'judges': ['m / a', 'm / b']}]
    """
    if since.get("not_watched") is not None:
        return list(since["not_watched"])
    grouped: dict[str, list[str]] = {}
    for n in since.get("not_monitored") or []:
        grouped.setdefault(n["reason"], []).append(f"{n['metric']} / {n['judge']}")
    return [{"reason": reason, "judges": judges} for reason, judges in grouped.items()]
