"""Every rating checked before any statistic: :data:`CHECKS`, run in order by
:func:`~calibrate.campaign.load.build`.

Each check is a function ``(ratings, ctx) -> list[Problem]`` of the typed ratings table
(:func:`~calibrate.campaign.readers.typed_ratings`) and a :class:`CheckContext` (what campaign.toml
declares, the raw rows, where each came from); every problem names the file, the line, the field, the
value found and what was expected. The scale check also clips or drops what ``out_of_scale`` says, and
the cases check reads ``cases.jsonl``: they leave what they find on the context.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from calibrate.base.errors import Problem
from calibrate.campaign.declared import Declared
from calibrate.campaign.model import JUDGE_RATINGS_FILE, Adjustment, OutOfScale
from calibrate.campaign.readers import id_problem, id_problem_rows, plain_text, read_cases

__all__ = [
    "CHECKS",
    "ID_COLUMNS",
    "Check",
    "CheckContext",
    "check_cases",
    "check_duplicates",
    "check_ids",
    "check_rater_kinds",
    "check_run_names",
    "check_scale",
    "check_values",
    "in_case_order",
    "rater_run_keys",
    "rating_keys",
]

ID_COLUMNS = ("case_id", "metric", "rater", "rater_kind", "run_id")
#: why a rating is set aside (:func:`set_aside_reasons`); "" first: kept
REASONS = ("", "metric", "judge", "case")


@dataclass
class CheckContext:
    """What the checks read beside the typed ratings, and what they leave for
    :func:`~calibrate.campaign.load.build`.

    Parameters
    ----------
    raw : pandas.DataFrame
        The rows as read (the values a problem shows).
    declared : Declared
        What campaign.toml declares.
    out_of_scale : {"error", "clip", "drop"}
    config_file, ratings_file, cases_file : str
        The names the problems give.
    case_rows : list of (int, object), optional
        ``cases.jsonl``'s lines, when there is one.
    files : pandas.Categorical
        The file each rating came from (``files[i]``: a path; each path held once).
    lines : numpy.ndarray
        The line each rating came from.
    exported : numpy.ndarray of bool
        The ratings calibrate exported (``judge_ratings.csv``, ...): set aside, not refused, when what
        they need left the campaign.
    values, blank, invalid : numpy.ndarray
        The values parsed (:func:`~calibrate.campaign.readers.parse_values`).
    reasons : pandas.Categorical
        Why each rating is set aside (``"case"``, ``"metric"``, ``"judge"``), ``""`` if it is kept
        (:func:`set_aside_reasons`).

    Attributes
    ----------
    several_files : bool
        Whether the ratings came from more than one file (the messages then name it).
    drop : numpy.ndarray of bool
        The ratings ``out_of_scale = "drop"`` removes (:func:`check_scale`).
    adjustments : list of Adjustment
        What ``clip`` or ``drop`` changed (:func:`check_scale`).
    cases : dict or None
        The cases of ``cases.jsonl`` (:func:`check_cases`).
    """

    raw: pd.DataFrame
    declared: Declared
    out_of_scale: OutOfScale
    config_file: str
    ratings_file: str
    cases_file: str
    case_rows: list[tuple[int, Any]] | None
    files: pd.Categorical
    lines: np.ndarray
    exported: np.ndarray
    values: np.ndarray
    blank: np.ndarray
    invalid: np.ndarray
    reasons: pd.Categorical
    drop: np.ndarray = field(init=False)
    several_files: bool = field(init=False)
    adjustments: list[Adjustment] = field(default_factory=list)
    cases: dict[str, dict[str, Any]] | None = None

    def __post_init__(self) -> None:
        self.drop = np.zeros(len(self.raw), dtype=bool)
        self.several_files = int((np.bincount(self.files.codes + 1) > 0).sum()) > 1

    @property
    def aside(self) -> np.ndarray:
        """The ratings set aside so far (out of every statistic, kept in their files)."""
        return self.reasons.codes != 0  # the reason "" (a categorical: codes compared, not texts)

    def at(self, i: int) -> str:
        """Where row i came from, for messages that point at another row."""
        return f"line {self.lines[i]}" + (f" of {Path(self.files[i]).name}" if self.several_files else "")

    def report(self, mask: np.ndarray, message: str, column: str, expected: str) -> list[Problem]:
        """One problem per row of ``mask``, showing the row's raw ``column``."""
        return [
            Problem(
                self.files[i],
                message,
                row=int(self.lines[i]),
                field=column,
                value=_as_read(self.raw[column].iat[i]),
                expected=expected,
            )
            for i in np.flatnonzero(mask)
        ]


def _as_read(value: Any) -> Any:
    """A raw cell as the file held it: a NumPy scalar of a typed column as the Python value it is."""
    return value.item() if isinstance(value, np.generic) else value


def set_aside_reasons(
    ratings: pd.DataFrame, exported: np.ndarray, declared: Declared, *, in_folder: bool
) -> np.ndarray:
    """Why each exported rating is set aside before the cases are read: its metric (``"metric"``) or,
    in ``judge_ratings.csv`` (the ratings' ``file``), its judge (``"judge"``) is no longer declared;
    ``""`` for the others (a categorical of these four: a small integer a rating)."""
    known = ratings["metric"].isin(list(declared.metrics)).to_numpy()
    reasons = pd.Categorical.from_codes(np.zeros(len(ratings), dtype=np.int8), categories=REASONS)
    reasons[exported & ~known] = "metric"
    of_judges = (ratings["file"] == JUDGE_RATINGS_FILE).to_numpy() & in_folder
    reasons[(reasons == "") & of_judges & ~ratings["rater"].isin(list(declared.judges)).to_numpy()] = "judge"
    return reasons


def check_ids(ratings: pd.DataFrame, ctx: CheckContext) -> list[Problem]:
    """Ids kept exactly as written (:func:`~calibrate.campaign.readers.id_problem`), none empty; a known rater kind and metric."""
    problems = [
        Problem(ctx.files[i], why, row=int(ctx.lines[i]), field=column, value=value, expected="text, or a whole number")
        for column in ID_COLUMNS
        if column in ctx.raw
        for i in np.flatnonzero(id_problem_rows(ctx.raw[column]))  # only the rows that may have one
        if (why := id_problem(value := _as_read(ctx.raw[column].iat[i])))
    ]
    for column in ("case_id", "metric", "rater"):
        problems += ctx.report((ratings[column] == "").to_numpy(), "empty", column, "a non-empty " + column)
    problems += ctx.report(
        ~ratings["rater_kind"].isin(["human", "judge"]).to_numpy(),
        "unknown rater_kind",
        "rater_kind",
        '"human" or "judge"',
    )
    metrics = ctx.declared.metrics
    known = ratings["metric"].isin(list(metrics)).to_numpy()
    problems += ctx.report(
        ~known & (ratings["metric"] != "").to_numpy() & ~ctx.exported,
        "unknown metric",
        "metric",
        "a metric declared in campaign.toml: "
        + ", ".join(sorted(metrics))
        + " (to remove a metric, take its rows out of your own ratings file too)",
    )
    return problems


def check_values(ratings: pd.DataFrame, ctx: CheckContext) -> list[Problem]:
    """A number, or an empty value with an error saying why the rating failed; never both."""
    has_error = (ratings["error"] != "").to_numpy()
    blank, invalid = ctx.blank, ctx.invalid
    return [
        *ctx.report(invalid, "not a number", "value", "a finite number, or an empty value with an error"),
        *ctx.report(
            blank & ~has_error, "no value and no error", "value", "a value, or an 'error' saying why the rating failed"
        ),
        *ctx.report(
            ~blank & ~invalid & has_error,
            "a rating has both a value and an error",
            "error",
            "either a value or an error",
        ),
    ]


def check_scale(ratings: pd.DataFrame, ctx: CheckContext) -> list[Problem]:
    """Values inside their metric's scale: every human value, and those of judges that declare
    ``on_metric_scale = true``. Outside it, a problem, or (``out_of_scale``) clipped in ``ratings`` or
    marked in ``ctx.drop``, each listed in ``ctx.adjustments``."""
    problems: list[Problem] = []
    values, out_of_scale = ctx.values, ctx.out_of_scale
    on_scale_judges = {n for n, r in ctx.declared.raters.items() if r.on_metric_scale}
    checked = ((ratings["rater_kind"] == "human") | ratings["rater"].isin(on_scale_judges)).to_numpy() & ~ctx.aside
    for metric in ctx.declared.metrics.values():
        rows = checked & (ratings["metric"] == metric.name).to_numpy() & np.isfinite(values)
        bad = rows & ~metric.in_scale(np.nan_to_num(values, nan=0.0))
        if out_of_scale == "error":
            problems += ctx.report(
                bad, f"value outside the scale of metric '{metric.name}'", "value", metric.scale_text()
            )
            continue
        new = metric.nearest_in_scale(values[bad]) if bad.any() else np.array([])
        for i, new_value in zip(np.flatnonzero(bad), new):
            row = ratings.iloc[i]
            ctx.adjustments.append(
                Adjustment(
                    ctx.files[i],
                    int(ctx.lines[i]),
                    row.case_id,
                    row.metric,
                    row.rater,
                    float(values[i]),
                    "clipped" if out_of_scale == "clip" else "dropped",
                    float(new_value) if out_of_scale == "clip" else None,
                )
            )
        if out_of_scale == "clip":
            ratings.loc[bad, "value"] = new
        else:
            ctx.drop |= bad
    return problems


def check_rater_kinds(ratings: pd.DataFrame, ctx: CheckContext) -> list[Problem]:
    """A rater is either a human or a judge; no judge of campaign.toml has a human's name; a human
    rates with higher values better."""
    problems = []
    aside, files, lines = ctx.aside, ctx.files, ctx.lines
    known = ratings["rater_kind"].isin(["human", "judge"]).to_numpy() & ~aside
    pairs = _distinct(ratings, ("rater", "rater_kind"), known)
    kinds = pairs.groupby("rater")["rater_kind"].nunique()
    for rater in kinds[kinds > 1].index:
        rows = ratings.index[(ratings["rater"] == rater).to_numpy() & ~aside]
        first = {kind: rows[(ratings.loc[rows, "rater_kind"] == kind).to_numpy()][0] for kind in ("human", "judge")}
        later = max(first.values())
        problems.append(
            Problem(
                files[later],
                f"rater '{rater}' is declared both human (first at "
                f"{ctx.at(first['human'])}) and judge (first at {ctx.at(first['judge'])})",
                row=int(lines[later]),
                field="rater_kind",
                value=rater,
                expected="one rater_kind per rater",
            )
        )
    humans = set(ratings.loc[ratings["rater_kind"] == "human", "rater"].unique())
    for rater in sorted(humans & set(ctx.declared.judges)):
        problems.append(
            Problem(
                ctx.config_file,
                f"judge '{rater}' has the name of a human rater in the ratings",
                field=f"judges.{rater}",
                expected="a name no human annotator uses",
            )
        )
    raters = ctx.declared.raters
    for rater in sorted(humans & set(raters)):
        if not raters[rater].higher_is_better:
            problems.append(
                Problem(
                    ctx.config_file,
                    "a human rater rates on the metric's own scale",
                    field=f"raters.{rater}.higher_is_better",
                    value=False,
                    expected="true",
                )
            )
    return problems


def rating_keys(ratings: pd.DataFrame, rows: np.ndarray) -> np.ndarray:
    """One integer per rating of ``rows``, equal for two ratings of the same (case, metric, rater, run),
    the run counted for judges only (a human's is ``""``): the case's code among ``rows`` (equal text,
    equal code) combined with :func:`rater_run_keys`.

    >>> r = pd.DataFrame({"case_id": ["a", "a", "a"], "metric": "m", "rater": "x",
    ...                   "rater_kind": ["judge", "judge", "human"], "run_id": ["1", "2", "2"]})
    >>> rating_keys(r, np.arange(3)).tolist()
    [0, 1, 2]
    """
    column = ratings["case_id"]
    cases, case_ids = _codes(column if len(rows) == len(column) else column.iloc[rows])
    groups, n_groups = rater_run_keys(ratings)
    return _combined([cases, groups[rows]], [len(case_ids), n_groups])


def rater_run_keys(ratings: pd.DataFrame) -> tuple[np.ndarray, int]:
    """One integer per rating, equal for two ratings of the same (metric, rater, run), the run counted
    for judges only; and a bound of them (every integer is below it). A categorical column's codes serve
    as they are: no text hashed.

    >>> r = pd.DataFrame({"metric": "m", "rater": ["x", "x", "y"], "rater_kind": ["judge", "human", "judge"],
    ...                   "run_id": ["1", "2", "2"]})
    >>> rater_run_keys(r)[0].tolist()
    [0, 2, 4]
    """
    parts = [_codes(ratings[c]) for c in ("metric", "rater")]
    runs, run_ids = _codes(ratings["run_id"])
    empty = np.flatnonzero(np.asarray(run_ids == ""))
    no_run = int(empty[0]) if empty.size else len(run_ids)
    judged = (ratings["rater_kind"] == "judge").to_numpy()
    sizes = [len(u) for _, u in parts] + [len(run_ids) + 1]
    keys = _combined([c for c, _ in parts] + [np.where(judged, runs, no_run)], sizes)
    return keys, int(np.prod(np.asarray(sizes, dtype=float))) if _fits(sizes) else max(len(ratings), 1)


def _codes(column: pd.Series) -> tuple[np.ndarray, pd.Index | np.ndarray]:
    """``pd.factorize(column)``, but a categorical's own codes and names (of a ratings' text column: its
    names differ and none is missing), with no pass over the rows."""
    if isinstance(column.dtype, pd.CategoricalDtype):
        return column.cat.codes.to_numpy(), column.cat.categories
    return pd.factorize(column)


def _fits(sizes: list[int]) -> bool:
    return float(np.prod(np.asarray(sizes, dtype=float))) < 2.0**62


def _combined(codes: list[np.ndarray], sizes: list[int]) -> np.ndarray:
    """Codes (of one row each) combined into one integer a row (equal codes, equal integer): in 64 bits,
    else numbered by pandas' grouping (then below the number of rows)."""
    if not _fits(sizes):  # too many to combine in 64 bits: grouped
        frame = pd.DataFrame(dict(enumerate(codes)))
        return frame.groupby(list(frame.columns), sort=False).ngroup().to_numpy()
    key = codes[0].astype(np.int64)
    for column, size in zip(codes[1:], sizes[1:]):
        key *= size
        key += column
    return key


def _distinct(ratings: pd.DataFrame, columns: tuple[str, ...], mask: np.ndarray) -> pd.DataFrame:
    """``ratings[mask][list(columns)].drop_duplicates()`` as text, each combination at its first row (its
    index): found on the columns' codes (a categorical's own), not by hashing the text of every row."""
    rows = np.flatnonzero(mask)
    codes = [_codes(ratings[c]) for c in columns]
    _, first = _firsts(_combined([c[rows] for c, _ in codes], [len(u) for _, u in codes]))
    at = rows[np.sort(first[first < len(rows)])]
    return pd.DataFrame({c: plain_text(ratings[c].iloc[at]) for c in columns})


def _first_of_each(key: np.ndarray) -> np.ndarray:
    """For each position, the first position holding the same key (itself for a first one).

    >>> _first_of_each(np.array([5, 2, 5, 5, 2])).tolist()
    [0, 1, 0, 0, 1]
    """
    key, first = _firsts(key)
    return first[key]


def _firsts(key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The keys numbered densely (as they are, unless sparse), and the first position of each number
    (``key.size`` for a number no position holds)."""
    if key.size and key.max() >= 4 * key.size + 2**20:  # sparse keys: numbered 0, 1, ... first
        key = pd.factorize(key)[0]
    first = np.full(int(key.max()) + 1 if key.size else 0, key.size, dtype=np.int64)
    np.minimum.at(first, key, np.arange(key.size))
    return key, first


def check_duplicates(ratings: pd.DataFrame, ctx: CheckContext) -> list[Problem]:
    """One rating per (case, metric, rater): per run for judges. A set-aside rating is no duplicate."""
    kept = np.flatnonzero(~ctx.aside)
    checked = kept[~in_case_order(ratings, kept)]  # those in case order have no duplicate: no id hashed
    first_checked = _first_of_each(rating_keys(ratings, checked))
    duplicated = first_checked != np.arange(len(checked))
    if not duplicated.any():
        return []
    problems = []
    for j in np.flatnonzero(duplicated):
        i, first_row = checked[j], checked[first_checked[j]]
        r = ratings.iloc[i]
        problems.append(
            Problem(
                ctx.files[i],
                f"duplicate rating of case '{r.case_id}', metric '{r.metric}' "
                f"by rater '{r.rater}' (first at {ctx.at(first_row)})",
                row=int(ctx.lines[i]),
                field="case_id",
                expected="one rating per (case_id, metric, rater" + (", run_id)" if r.rater_kind == "judge" else ")"),
            )
        )
    return problems


def in_case_order(ratings: pd.DataFrame, rows: np.ndarray) -> np.ndarray:
    """Which of ``rows`` (positions, ascending) are of a (metric, rater, run) whose ratings among them
    come in strictly increasing order of their case id, as a file written in case order holds them:
    no two of those are of one case. One comparison of text a rating, where finding duplicates in any
    order hashes every id (seconds for 10 million); none, for ids not held by pyarrow.

    >>> r = pd.DataFrame({"case_id": pd.Series(["a", "b", "b", "a"], dtype="str"), "metric": "m",
    ...                   "rater": ["x", "x", "y", "y"], "rater_kind": "judge", "run_id": ""})
    >>> in_case_order(r, np.arange(4)).tolist()  # y's ratings are not in case order
    [True, True, False, False]
    """
    column = ratings["case_id"]
    if not (isinstance(column.dtype, pd.StringDtype) and column.dtype.storage == "pyarrow") or column.hasnans:
        return np.zeros(len(rows), dtype=bool)
    keys, bound = rater_run_keys(ratings)
    group = keys[rows]
    if len(group) < 2 or bool((group[1:] >= group[:-1]).all()):  # together already: no sort, no copy
        at, sorted_group = rows, group
    else:  # each (metric, rater, run) together, in the order of the rows (a stable sort: radix for few keys)
        order = np.argsort(group.astype(np.int16) if bound < 2**15 else group, kind="stable")
        at, sorted_group = rows[order], group[order]
    ids = _in_order(column, at)
    increasing = _increasing(ids)
    broken = sorted_group[1:][~increasing & (sorted_group[1:] == sorted_group[:-1])]
    return ~np.isin(group, np.unique(broken))


def _in_order(column: pd.Series, at: np.ndarray):
    """The pyarrow text of ``column`` at positions ``at``: slices of it where ``at`` runs on by one (no
    text copied), else taken."""
    import pyarrow as pa

    text = pa.array(column.array)  # the column's own arrays
    starts = np.flatnonzero(np.diff(at) != 1) + 1
    if len(starts) >= 4096:  # scattered rows: one copy of theirs
        return text.take(pa.array(at))
    bounds = [0, *starts.tolist(), len(at)]
    parts = [text.slice(int(at[a]), b - a) for a, b in pairwise(bounds) if b > a]
    return pa.chunked_array([c for p in parts for c in getattr(p, "chunks", [p])], type=text.type)


def _increasing(ids) -> np.ndarray:
    """Whether each text of ``ids`` (pyarrow) comes before the next one (one fewer than ``ids``)."""
    import pyarrow.compute as pc

    if len(ids) < 2:
        return np.zeros(0, dtype=bool)
    return pc.less(ids.slice(0, len(ids) - 1), ids.slice(1)).to_numpy(zero_copy_only=False)


def check_run_names(ratings: pd.DataFrame, ctx: CheckContext) -> list[Problem]:
    """A judge's run is shown as RATER@RUN: no two (rater, run) may be shown under one name."""
    # each (rater, run) at its first row: one shown name each
    judged = _distinct(ratings, ("rater", "run_id"), (ratings["rater_kind"] == "judge").to_numpy() & ~ctx.aside)
    shown = pd.Series(
        np.where(judged["run_id"] != "", judged["rater"] + "@" + judged["run_id"], judged["rater"]), index=judged.index
    )
    pairs = pd.DataFrame({"shown": shown, "rater": judged["rater"], "run": judged["run_id"]})
    problems = []
    for shown_as, group in pairs.groupby("shown"):
        if len(group) > 1:
            described = " and ".join(
                f"rater {r!r}" + (f" with run_id {u!r}" if u else "") for r, u in zip(group["rater"], group["run"])
            )
            problems.append(
                Problem(
                    ctx.ratings_file if not ctx.several_files else ctx.files[group.index[0]],
                    f"{described} would both be shown as {shown_as!r}",
                    field="rater",
                    row=int(ctx.lines[group.index[-1]]),
                    expected="rater names without '@' where runs are named, or other run_ids",
                )
            )
    return problems


def check_cases(ratings: pd.DataFrame, ctx: CheckContext) -> list[Problem]:
    """``cases.jsonl``, when there is one (:func:`~calibrate.campaign.readers.read_cases`, kept in ``ctx.cases``), and every rating
    of a case it lists; an exported rating of a case it no longer lists is set aside."""
    if ctx.case_rows is None:
        return []
    problems: list[Problem] = []
    ctx.cases = read_cases(ctx.case_rows, ctx.cases_file, problems)
    unknown = ~ratings["case_id"].isin(list(ctx.cases)).to_numpy() & (ratings["case_id"] != "").to_numpy()
    problems += ctx.report(
        unknown & ~ctx.exported,
        "a rating for a case that is not in cases.jsonl",
        "case_id",
        "a case_id listed in " + Path(ctx.cases_file).name,
    )
    ctx.reasons[(ctx.reasons == "") & unknown & ctx.exported] = "case"
    return problems


#: a check of the ratings: the problems it finds
Check = Callable[[pd.DataFrame, CheckContext], list[Problem]]
#: every check, in the order their problems are listed
CHECKS: tuple[Check, ...] = (
    check_ids,
    check_values,
    check_scale,
    check_rater_kinds,
    check_duplicates,
    check_run_names,
    check_cases,
)
