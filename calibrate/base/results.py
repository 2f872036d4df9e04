"""What every command's function returns: the document its ``--json`` prints, as a dict that also
gives a tidy table.

A :class:`Result` *is* that document (a ``dict``: index it, ``json.dumps`` it, compare it), with two
methods: :meth:`Result.to_dict` (a plain deep copy of it) and :meth:`Result.to_frame` (a tidy
:class:`pandas.DataFrame`: one row per metric x judge x statistic, with its estimate and interval).

A :class:`Document` is the typed, versioned form some commands return instead: a frozen dataclass whose
fields are the document's parts (figures as :class:`~calibrate.base.estimates.Estimate`), whose
:meth:`Document.to_dict` is the ``--json`` document with its ``schema_version`` first, and whose
:meth:`Document.to_frame` is built from the figures its fields hold, each named by where it sits (no key
names guessed). Read as a mapping, it is that document too. Every ``--json`` document carries a
``schema_version`` (:func:`versioned`).
"""

from __future__ import annotations

import abc
import copy
import functools
import json
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from calibrate.base.estimates import Estimate

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "FRAME_COLUMNS",
    "RESULT_SCHEMA_VERSION",
    "Deferred",
    "DictView",
    "Document",
    "FigureAt",
    "Result",
    "json_text",
    "nested",
    "records_frame",
    "single_row",
    "statistics_rows",
    "typed",
    "versioned",
]

#: The ``schema_version`` of the documents still returned as a :class:`Result` (untyped): changing a
#: key's name or meaning in one changes this.
RESULT_SCHEMA_VERSION = 1

#: The columns of :meth:`Result.to_frame` for a document of statistics.
FRAME_COLUMNS = ("metric", "judge", "slice", "statistic", "estimate", "ci_low", "ci_high", "method", "n", "reason")

#: Lists whose items are the same figures at points (curves, cases, tertiles): not rows of the table.
_NOT_ROWS = frozenset(
    {
        "curve",
        "cases",
        "false_passes",
        "false_fails",
        "scores",
        "tertiles",
        "most_apart",
        "rules",
        "reasons",
        "warnings",
        "defaults",
        "notes",
        "sample_designs",
        "manifest",
        "disagreements",
    }
)


def _is_figure(value: Any) -> bool:
    return isinstance(value, dict) and "estimate" in value and not isinstance(value["estimate"], (dict, list))


def _row(context: dict[str, Any], statistic: str, figure: dict[str, Any]) -> dict[str, Any]:
    estimate = figure.get("estimate")
    n = figure.get("n", figure.get("n_items", context.get("n")))
    return {
        "metric": context.get("metric"),
        "judge": context.get("judge"),
        "slice": context.get("slice"),
        "statistic": statistic,
        "estimate": float("nan") if estimate is None else float(estimate),
        "ci_low": figure.get("ci_low"),
        "ci_high": figure.get("ci_high"),
        "method": figure.get("ci_method", figure.get("method")),
        "n": n,
        "reason": figure.get("reason", figure.get("ci_reason")),
    }


def _context(node: dict[str, Any], context: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """The context a dict sets for the figures under it, and the prefix its list item adds."""
    context = dict(context)
    prefix = ""
    if isinstance(node.get("metric"), str):
        context["metric"] = node["metric"]
    if isinstance(node.get("judge"), str):
        context["judge"] = node["judge"]
    elif isinstance(node.get("a"), str) and isinstance(node.get("b"), str):
        context["judge"] = f"{node['a']} vs {node['b']}"
    if isinstance(node.get("annotator"), str):
        prefix = f"[{node['annotator']}]"
    if "key" in node and "value" in node and not isinstance(node["value"], (dict, list)):
        context["slice"] = f"{node['key']}={node['value']}"
    for key in ("n", "n_cases", "n_labelled"):
        if isinstance(node.get(key), int) and not isinstance(node.get(key), bool):
            context["n"] = node[key]
            break
    return context, prefix


def statistics_rows(document: Any, context: dict[str, Any] | None = None, path: str = "") -> Iterator[dict]:
    """Every figure (a dict with an ``estimate``) of a statistics document, as a row of
    :data:`FRAME_COLUMNS`: the metric, judge and slice it sits under, and its path as the statistic.

    Examples
    --------
    >>> doc = {"metrics": [{"metric": "f", "judges": [{"judge": "j", "n": 40, "kappa": {
    ...     "estimate": 0.5, "ci_low": 0.3, "ci_high": 0.7, "ci_method": "BCa"}}]}]}
    >>> [(r["metric"], r["judge"], r["statistic"], r["estimate"], r["n"]) for r in statistics_rows(doc)]
    [('f', 'j', 'kappa', 0.5, 40)]
    """
    context = context or {}
    if not isinstance(document, dict):
        return
    context, _ = _context(document, context)
    old, new = document.get("old"), document.get("new")
    versus = (
        f"{new['judge']} vs {old['judge']}"
        if isinstance(old, dict)
        and isinstance(new, dict)
        and isinstance(old.get("judge"), str)
        and isinstance(new.get("judge"), str)
        else None
    )
    if isinstance(document.get("threshold"), (int, float)) and isinstance(document.get("threshold_ci"), list):
        low, high = (document["threshold_ci"] + [None, None])[:2]
        yield _row(
            context,
            _name(path, "threshold"),
            {
                "estimate": document["threshold"],
                "ci_low": low,
                "ci_high": high,
                "method": document.get("threshold_ci_method"),
            },
        )
    for key, value in document.items():
        if key in _NOT_ROWS:
            continue
        name = _name(path, key)
        here = context if versus is None or key in ("old", "new") else {**context, "judge": versus}
        if _is_figure(value):
            yield _row(here, name, value)
        elif isinstance(value, (dict, list)):
            for item in value if isinstance(value, list) else [value]:
                if isinstance(item, dict):
                    inner, prefix = _context(item, here)
                    # a named thing (a judge, a slice, a pair) starts the statistic's name afresh
                    fresh = any(inner.get(k) != here.get(k) for k in ("metric", "judge", "slice"))
                    yield from statistics_rows(item, inner, "" if fresh and not prefix else name + prefix)


def _name(path: str, key: str) -> str:
    if key == "overall":  # the whole population, beside its slices
        return path
    key = key.removesuffix("_detail")
    return f"{path}.{key}" if path else key


def _statistics_frame(document: dict[str, Any]) -> pd.DataFrame:
    import pandas as pd

    return typed(pd.DataFrame(list(statistics_rows(document)), columns=list(FRAME_COLUMNS)))


def typed(frame: pd.DataFrame) -> pd.DataFrame:
    """The columns of :data:`FRAME_COLUMNS` in their types: figures as floats (NaN where undefined),
    ``n`` as a nullable integer, the names as text (None where a row has none)."""
    for column in ("estimate", "ci_low", "ci_high"):
        frame[column] = frame[column].astype(float)
    frame["n"] = frame["n"].astype("Int64")
    for column in ("metric", "judge", "slice", "statistic", "method", "reason"):
        frame[column] = frame[column].astype(object).where(frame[column].notna(), None)
    return frame


class Result(dict):
    """A command's result: the document its ``--json`` prints (this dict), and a tidy table of it.

    Parameters
    ----------
    document : dict
        The document.
    frame : callable, optional
        How :meth:`to_frame` turns the document into a table; by default every figure with an
        ``estimate`` becomes a row (:func:`statistics_rows`).

    Examples
    --------
    >>> r = Result({"metric": "f", "judge": "j", "n": 10, "auc": {"estimate": 0.8, "ci_low": 0.6,
    ...             "ci_high": 0.9, "ci_method": "BCa"}})
    >>> r["auc"]["estimate"], r.to_frame()[["statistic", "estimate", "n"]].values.tolist()
    (0.8, [['auc', 0.8, 10]])
    >>> type(r.to_dict()) is dict
    True
    """

    def __init__(self, document: dict[str, Any], frame: Callable[[dict[str, Any]], pd.DataFrame] | None = None):
        super().__init__(document)
        self._frame = frame or _statistics_frame

    def to_dict(self) -> dict[str, Any]:
        """The document ``--json`` prints, as plain dicts and lists (a copy: changing it changes nothing here)."""
        return copy.deepcopy(dict(self))

    def to_frame(self) -> pd.DataFrame:
        """A tidy table of the result: for statistics, one row per metric x judge x (slice) x statistic
        with ``estimate``, ``ci_low``, ``ci_high``, ``method``, ``n`` and, where a figure is undefined, the
        ``reason`` (its estimate NaN)."""
        return self._frame(self)

    def __repr__(self) -> str:
        keys = ", ".join(list(self)[:8]) + (", ..." if len(self) > 8 else "")
        return f"<calibrate Result with {keys}: .to_frame() for a table, .to_dict() for the document>"

    def __reduce__(self):  # the table's shape travels with the document (pickle, multiprocessing)
        return (Result, (dict(self), self._frame))


def _records(key: str, document: dict[str, Any]) -> pd.DataFrame:
    import pandas as pd

    return pd.json_normalize(document.get(key) or [], max_level=1)


def records_frame(key: str) -> Callable[[dict[str, Any]], pd.DataFrame]:
    """A ``frame`` for :class:`Result` that tabulates the list ``document[key]`` (one row per item)."""
    return functools.partial(_records, key)


def single_row(document: dict[str, Any]) -> pd.DataFrame:
    """A ``frame`` for :class:`Result`: the document's plain fields (counts, names) as one row."""
    import pandas as pd

    return pd.DataFrame([{k: v for k, v in document.items() if not isinstance(v, (dict, list))}])


@dataclass(frozen=True)
class FigureAt:
    """A figure of a typed document and where it sits: a row of :meth:`Document.to_frame`.

    ``n`` is what the figure rests on when it does not say (the judge's labelled cases, say).
    """

    metric: str | None
    judge: str | None
    slice: str | None
    statistic: str
    estimate: Estimate
    n: int | None = None

    def row(self) -> dict[str, Any]:
        """The row of :data:`FRAME_COLUMNS`: the figure's own ``n`` (or ``n_items``) before the one it sits under.

        Examples
        --------
        >>> FigureAt("f", "j", None, "auc", Estimate.interval(0.8, 0.7, 0.9, "BCa"), n=40).row()["n"]
        40
        """
        e = self.estimate
        n = e.n if "n" in e.keys else e.extra["n_items"] if "n_items" in e.keys else self.n
        return {
            "metric": self.metric,
            "judge": self.judge,
            "slice": self.slice,
            "statistic": self.statistic,
            "estimate": float("nan") if e.value is None else float(e.value),
            "ci_low": e.ci_low,
            "ci_high": e.ci_high,
            "method": e.method if "ci_method" in e.keys else e.extra.get("method"),
            "n": n,
            "reason": e.reason,
        }


class Deferred(Sequence[Any], abc.ABC):
    """A long list of a document (a curve's points: up to one per case) kept as columns until it is read:
    each item is made when asked for (:meth:`items`), :meth:`to_list` makes them all, and :func:`json_text`
    writes them a chunk at a time, so a document of millions of points is never held as Python objects.
    A subclass defines ``__len__`` and :meth:`items`."""

    #: Items made and written at once by :meth:`json_chunks`.
    CHUNK = 20_000

    @abc.abstractmethod
    def items(self, first: int, last: int) -> list[Any]:
        """The items ``first`` to ``last`` (excluded), as the document holds them."""

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return [self.items(i, i + 1)[0] for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(f"item {index} of {len(self)}")
        return self.items(index, index + 1)[0]

    def to_list(self) -> list[Any]:
        """Every item, as a plain list."""
        return self.items(0, len(self))

    def __iter__(self) -> Iterator[Any]:
        for first in range(0, len(self), self.CHUNK):
            yield from self.items(first, first + self.CHUNK)

    def __eq__(self, other: object) -> bool:
        """Equal to the same items, deferred or in a list (as the document's list would be)."""
        if isinstance(other, Deferred):
            other = other.to_list()
        return self.to_list() == other if isinstance(other, list) else NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def json_chunks(self) -> Iterator[str]:
        """The list's JSON text (as ``json.dumps(self.to_list())`` writes it), :data:`CHUNK` items at a time."""
        yield "["
        for first in range(0, len(self), self.CHUNK):
            yield (", " if first else "") + json.dumps(self.items(first, first + self.CHUNK), allow_nan=False)[1:-1]
        yield "]"


def json_text(document: Any) -> Iterator[str]:
    """The JSON text of ``document`` (``json.dumps(document, allow_nan=False)``), in pieces: each
    :class:`Deferred` list in it is written a chunk at a time, and the rest at once.

    Examples
    --------
    >>> class Squares(Deferred):
    ...     def __len__(self): return 3
    ...     def items(self, first, last): return [i * i for i in range(first, min(last, 3))]
    >>> "".join(json_text({"a": Squares(), "b": [Squares(), 1]}))
    '{"a": [0, 1, 4], "b": [[0, 1, 4], 1]}'
    """
    found: list[Deferred] = []
    mark = f"deferred-{uuid.uuid4().hex}"

    def placeholder(value: Any) -> str:
        if not isinstance(value, Deferred):
            raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")
        found.append(value)
        return mark

    pieces = json.dumps(document, allow_nan=False, default=placeholder).split(json.dumps(mark))
    if len(pieces) != len(found) + 1:  # the mark is random: it cannot be text of the document
        raise ValueError("a deferred list's place in the JSON text was not found once")
    yield pieces[0]
    for deferred, after in zip(found, pieces[1:]):
        yield from deferred.json_chunks()
        yield after


class DictView(Mapping[str, Any]):
    """Read as a mapping, an object is its ``to_dict()`` (computed once, on the first read; do not change
    it): the dict a typed result replaced, for code that still indexes it."""

    @abc.abstractmethod
    def to_dict(self) -> dict[str, Any]:
        """The dict the object reads as."""

    @functools.cached_property
    def _view(self) -> dict[str, Any]:
        return self.to_dict()

    def __getitem__(self, key: str) -> Any:
        return self._view[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._view)

    def __len__(self) -> int:
        return len(self._view)


class Document(DictView):
    """The base of the typed, versioned documents: a frozen dataclass (each subclass is one) that writes
    its ``--json`` document and tabulates its figures.

    A subclass defines :meth:`body` (the document without its version, as plain dicts and lists) and
    :meth:`figures` (every :class:`FigureAt` it holds); ``SCHEMA_VERSION`` says which shape ``body``
    writes: changing a field's name, meaning or order changes it. Read as a mapping (``doc["passed"]``),
    a document is its :meth:`to_dict` (computed once; do not change it).
    """

    SCHEMA_VERSION: ClassVar[int] = 1

    def body(self) -> dict[str, Any]:
        """The ``--json`` document without ``schema_version``, as plain dicts and lists."""
        raise NotImplementedError

    def figures(self) -> Iterator[FigureAt]:
        """Every figure the document holds, with the metric, judge, slice and statistic it sits at."""
        raise NotImplementedError

    def to_dict(self, *, schema_version: bool = True) -> dict[str, Any]:
        """The ``--json`` document: ``schema_version`` first, then :meth:`body` (a fresh copy each call).

        Parameters
        ----------
        schema_version : bool
            False: the body alone, for a document nested in another (the report's audits).
        """
        body = self.body()
        return {"schema_version": self.SCHEMA_VERSION, **body} if schema_version else body

    def json_document(self) -> dict[str, Any]:
        """:meth:`to_dict`, with its long lists (if any) left :class:`Deferred`: what ``--json`` writes
        with :func:`json_text`, without making their items all at once."""
        return self.to_dict()

    def rows(self) -> Iterator[dict[str, Any]]:
        """The rows of :meth:`to_frame`: one per figure (a document with an untyped part adds its rows)."""
        return (f.row() for f in self.figures())

    def to_frame(self) -> pd.DataFrame:
        """One row per figure, in :data:`FRAME_COLUMNS` and their types (:func:`typed`)."""
        import pandas as pd

        return typed(pd.DataFrame(list(self.rows()), columns=list(FRAME_COLUMNS)))


def nested(document: Mapping[str, Any]) -> Mapping[str, Any]:
    """A document as a part of another (the report's audits): a :class:`Document`'s body, without a
    ``schema_version`` of its own, as plain dicts; any other document as it is."""
    return document.to_dict(schema_version=False) if isinstance(document, Document) else document


def versioned(document: Mapping[str, Any], *, deferred: bool = False) -> dict[str, Any]:
    """The ``--json`` document of a command's result, with its ``schema_version`` first: a
    :class:`Document`'s own, or :data:`RESULT_SCHEMA_VERSION` for a :class:`Result` or plain dict.
    ``deferred``: a :class:`Document`'s long lists left :class:`Deferred` (:meth:`Document.json_document`),
    for :func:`json_text` to write.

    Examples
    --------
    >>> versioned({"campaign": "c"})
    {'schema_version': 1, 'campaign': 'c'}
    """
    if isinstance(document, Document):
        return document.json_document() if deferred else document.to_dict()
    return {"schema_version": RESULT_SCHEMA_VERSION, **{k: v for k, v in document.items() if k != "schema_version"}}
