"""From the ratings table to the two sides of every comparison: the human reference, each judge, and
the one join of the two that every analysis uses (:func:`pair`: a judge against the humans on a
metric, over the cases both rated, with their design weights)."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from functools import cached_property
from typing import TypeVar

import numpy as np
import pandas as pd

from calibrate.campaign import Campaign, Metric, Rater
from calibrate.campaign.weights import DesignWeights, design_weights

__all__ = [
    "HumanReference",
    "JudgeScores",
    "Pairing",
    "computed_once",
    "find_judge",
    "human_reference",
    "judge_scores",
    "once_per_command",
    "pair",
    "select_judges",
]

_T = TypeVar("_T")
#: Within :func:`computed_once`: (what, campaign id, metric) -> (the campaign, what was computed).
_computed: ContextVar[dict | None] = ContextVar("calibrate_computed_once", default=None)


@contextmanager
def computed_once():
    """Within this block (one command's work), each metric's human reference and judge scores are
    computed once per campaign and shared by every function that asks for them; their arrays are
    read-only. Outside it, each call computes them afresh from the campaign as it then is.

    Examples
    --------
    >>> import calibrate
    >>> c = calibrate.load_campaign(calibrate.demo_campaign_path())
    >>> with computed_once():
    ...     human_reference(c, "relevance") is human_reference(c, "relevance")
    True
    >>> human_reference(c, "relevance") is human_reference(c, "relevance")
    False
    """
    if _computed.get() is not None:  # already inside one: share its results
        yield
        return
    token = _computed.set({})
    try:
        yield
    finally:
        _computed.reset(token)


def _once(what: str, campaign: Campaign, metric: str, compute: Callable[[], _T]) -> _T:
    memo = _computed.get()
    if memo is None:
        return compute()
    key = (what, id(campaign), metric)
    if key not in memo:  # the campaign is kept with its result, so its id is not reused meanwhile
        memo[key] = (campaign, _read_only(compute()))
    return memo[key][1]


def once_per_command(what: str, campaign: Campaign, key: Hashable, compute: Callable[[], _T]) -> _T:
    """``compute()`` once per ``(what, campaign, key)`` within a :func:`computed_once` block, shared by every
    function of the command that asks for it (afresh outside one): a result several of them read, such as
    the annotators' agreement of a metric. Arrays it holds as attributes become read-only.

    Examples
    --------
    >>> import calibrate
    >>> c = calibrate.load_campaign(calibrate.demo_campaign_path())
    >>> with computed_once():
    ...     once_per_command("figure", c, ("relevance", 1), list) is once_per_command("figure", c, ("relevance", 1), list)
    True
    """
    return _once(what, campaign, key, compute)


def _read_only(value):
    for item in value if isinstance(value, list) else [value]:
        for array in vars(item).values():
            if isinstance(array, np.ndarray):
                array.flags.writeable = False
    return value


@dataclass(frozen=True)
class HumanReference:
    """One reference label per case: the majority (binary), low median (ordinal) or mean (continuous).

    A binary tie or an even-sized ordinal panel resolves to the lower value, so a case passes only
    when a strict majority of its annotators pass it; ``n_ties`` counts such cases.
    """

    metric: Metric
    case_ids: np.ndarray
    values: np.ndarray
    n_raters: np.ndarray
    n_multiply_labelled: int
    n_failed_ratings: int
    raters: tuple[str, ...]
    n_adjudicated: int = 0
    #: the cases whose tied panel took the lower label
    tied_cases: tuple[str, ...] = ()
    #: the cases of the human ratings recorded as failed (no value)
    failed_rating_cases: tuple[str, ...] = ()

    @property
    def n_ties(self) -> int:
        return len(self.tied_cases)

    @property
    def passes(self) -> np.ndarray:
        return self.values >= self.metric.human_pass


@dataclass(frozen=True)
class JudgeScores:
    """One judge's scores on a metric; ``oriented`` is the score with higher meaning better."""

    name: str
    rater: Rater
    run_id: str
    case_ids: np.ndarray
    values: np.ndarray
    errors: pd.DataFrame  # case_id, error of the failed ratings

    @property
    def sign(self) -> float:
        return 1.0 if self.rater.higher_is_better else -1.0

    @cached_property
    def _increasing(self) -> bool:
        """Whether ``case_ids`` are sorted and distinct (:func:`judge_scores` makes them so; a judge's
        scores made elsewhere may not be); checked once, as every join of the judge asks."""
        return _strictly_increasing(self.case_ids)

    @property
    def oriented(self) -> np.ndarray:
        return self.sign * self.values


def human_reference(campaign: Campaign, metric: str) -> HumanReference:
    """The human reference of ``metric``, one value per case, sorted by case id (computed once per
    command: :func:`computed_once`).

    Examples
    --------
    >>> import pandas as pd
    >>> from calibrate.campaign import campaign_from_frames
    >>> r = pd.DataFrame({"case_id": ["a", "a", "b"], "metric": "f", "rater": ["x", "y", "x"],
    ...                   "rater_kind": "human", "value": [1, 0, 1]})
    >>> ref = human_reference(campaign_from_frames({"name": "n", "metrics": {"f": {"scale": "binary"}}}, r), "f")
    >>> ref.values.tolist(), ref.n_ties
    ([0.0, 1.0], 1)
    """
    return _once("reference", campaign, metric, lambda: _human_reference(campaign, metric))


def _human_reference(campaign: Campaign, metric: str) -> HumanReference:
    spec = campaign.metrics[metric]
    ratings = campaign.ratings
    # by row positions, as the judges' scores are read: no copy of the rows, no sorted copy of them, no
    # Python object per id
    chosen = np.flatnonzero(((ratings["metric"] == metric) & (ratings["rater_kind"] == "human")).to_numpy(dtype=bool))
    values_of = ratings["value"].to_numpy(dtype=float)
    missing = np.isnan(values_of[chosen])
    failed = int(missing.sum())
    failed_cases = tuple(sorted(set(ratings["case_id"].iloc[chosen[missing]].astype(str))))
    rows = chosen[~missing]
    case_ids, starts, counts, labels = _label_runs(_text_array(ratings["case_id"].iloc[rows]), values_of[rows])
    if spec.scale == "continuous":
        values = np.add.reduceat(labels, starts) / counts if labels.size else labels
        tied = np.zeros(case_ids.size, dtype=bool)
    else:
        # the low median; for 0/1 labels it is the majority, a tie resolving to 0
        values = labels[starts + (counts - 1) // 2]
        even = counts % 2 == 0
        tied = even & (labels[starts + counts // 2 - 1] != labels[np.minimum(starts + counts // 2, labels.size - 1)])
    values, adjudicated = _adjudicated(values, case_ids, campaign.adjudications, metric)
    return HumanReference(
        metric=spec,
        case_ids=case_ids,
        values=values,
        n_raters=counts,
        n_multiply_labelled=int((counts > 1).sum()),
        n_failed_ratings=failed,
        raters=tuple(sorted(ratings["rater"].iloc[rows].unique())),
        n_adjudicated=adjudicated,
        tied_cases=tuple(case_ids[tied].tolist()),
        failed_rating_cases=failed_cases,
    )


def _label_runs(ids: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The labels sorted by case, then value (each case's labels one contiguous run, in ascending order),
    as ``(case_ids, starts, counts, labels)``: the distinct ids, where each one's run starts, its length.
    Ids sorted and distinct already (one label per case, written in case order) need no sort.

    >>> _label_runs(np.array(["b", "a", "b"]), np.array([2.0, 1.0, 0.0]))
    (array(['a', 'b'], dtype='<U1'), array([0, 1]), array([1, 2]), array([1., 0., 2.]))
    """
    if not _strictly_increasing(ids):
        order = np.lexsort((labels, ids))  # stable: by id, then value
        ids, labels = ids[order], labels[order]
    starts = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]]) if ids.size else np.zeros(0, dtype=np.intp)
    return ids[starts], starts, np.diff(np.r_[starts, ids.size]), labels


def _adjudicated(
    values: np.ndarray, case_ids: np.ndarray, adjudications: pd.DataFrame, metric: str
) -> tuple[np.ndarray, int]:
    """An adjudicator's decision replaces the annotators' majority where they disagreed: the values with
    the decisions on ``metric`` in place (a copy, when there is one), and how many were applied."""
    decided = adjudications[adjudications["metric"] == metric]
    if not len(decided):
        return values, 0
    position = {case_id: i for i, case_id in enumerate(case_ids)}
    values, adjudicated = values.copy(), 0
    for case_id, value in zip(decided["case_id"].astype(str), decided["value"].astype(float)):
        if case_id in position:
            values[position[case_id]] = value
            adjudicated += 1
    return values, adjudicated


def judge_scores(campaign: Campaign, metric: str) -> list[JudgeScores]:
    """Every judge's scores on ``metric``; a judge with several ``run_id`` values gives one per run,
    named ``rater@run_id`` (computed once per command: :func:`computed_once`)."""
    return list(_once("judges", campaign, metric, lambda: _judge_scores(campaign, metric)))


def _judge_scores(campaign: Campaign, metric: str) -> list[JudgeScores]:
    ratings = campaign.ratings
    # by row positions, not copies of the table: at 10 million judge ratings each copy of the rows
    # selected cost a second and a gigabyte; the ids become one array of text, made once
    chosen = np.flatnonzero(((ratings["metric"] == metric) & (ratings["rater_kind"] == "judge")).to_numpy(dtype=bool))
    groups = _rater_runs(ratings, chosen)
    runs_of = {rater: sum(r == rater for r, _ in groups) for rater, _ in groups}
    values = ratings["value"].to_numpy(dtype=float)
    judges = []
    for (rater, run), at in groups.items():
        failed = np.isnan(values[at])
        # the scored rows' ids, and apart the few failed ones': no copy of the many to leave the few out
        case_ids, scored = _by_case(ratings, at[~failed])
        judges.append(
            JudgeScores(
                name=rater if runs_of[rater] == 1 else f"{rater}@{run}",
                rater=campaign.rater(rater),
                run_id=run,
                case_ids=case_ids,
                values=values[scored],
                errors=ratings[["case_id", "error"]].iloc[_by_case(ratings, at[failed])[1]].reset_index(drop=True),
            )
        )
    return judges


def _by_case(ratings: pd.DataFrame, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The case ids of the ratings' ``rows`` (positions), sorted, and the rows in that order."""
    case_ids, order = _sorted_ids(_text_array(ratings["case_id"].iloc[rows]))
    return case_ids, rows if order is None else rows[order]


def _rater_runs(ratings: pd.DataFrame, rows: np.ndarray) -> dict[tuple[str, str], np.ndarray]:
    """The ratings' ``rows`` (positions) of each (rater, run_id) among them, by rater then run."""
    # codes of the whole columns, then of the rows: no copy of the rows' text (half the time)
    rater_codes, raters = pd.factorize(ratings["rater"])
    run_codes, runs = pd.factorize(ratings["run_id"])
    key = rater_codes[rows].astype(np.int64) * max(len(runs), 1) + run_codes[rows]
    present = np.flatnonzero(np.bincount(key, minlength=1)) if key.size else np.array([], dtype=np.int64)
    named = {(str(raters[k // len(runs)]), str(runs[k % len(runs)])): k for k in present.tolist()}
    return {name: rows if len(named) == 1 else rows[key == named[name]] for name in sorted(named)}


def _text_array(column: pd.Series) -> np.ndarray:
    """``column.to_numpy(dtype=str)``, the same array; for a column of ASCII text held by pyarrow, made
    from its bytes directly (10 million ids: a tenth of a second instead of two seconds, through a
    Python object per id)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    dtype = column.dtype
    if not (isinstance(dtype, pd.StringDtype) and dtype.storage == "pyarrow") or column.hasnans or not len(column):
        return column.to_numpy(dtype=str)
    text = pa.array(column.array)
    text = text.combine_chunks() if isinstance(text, pa.ChunkedArray) else text
    if not pc.all(pc.string_is_ascii(text)).as_py():
        return column.to_numpy(dtype=str)
    lengths = pc.binary_length(text)
    width = max(int(pc.max(lengths).as_py()), 1)
    if pc.min(lengths).as_py() != width:  # padded with NUL, as a numpy string is
        text = pc.utf8_rpad(text, width=width, padding="\0")
    offsets = np.frombuffer(text.buffers()[1], dtype=np.int64 if pa.types.is_large_string(text.type) else np.int32)
    first, last = offsets[text.offset], offsets[text.offset + len(text)]
    data = np.frombuffer(text.buffers()[2], dtype=np.uint8)[first:last]
    return data.astype("<u4").view(f"<U{width}")


def _strictly_increasing(ids: np.ndarray) -> bool:
    return ids.size < 2 or bool(np.all(ids[1:] > ids[:-1]))


def _sorted_ids(ids: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """``ids`` sorted, and the order that sorts them (None when they are sorted already: a ratings file
    written in case order is, and a sort of 10 million ids costs seconds)."""
    if _strictly_increasing(ids):
        return ids, None
    order = np.argsort(ids, kind="stable")
    return ids[order], order


def _found(haystack: np.ndarray, needles: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Where each of ``needles`` is in the sorted ``haystack`` (any index where absent), and whether
    it is there."""
    at = np.searchsorted(haystack, needles)
    if not haystack.size:
        return at, np.zeros(needles.size, dtype=bool)
    return at, haystack[np.minimum(at, haystack.size - 1)] == needles


def select_judges(
    campaign: Campaign, metric: str, names: list[str] | None = None, *, strict: bool = False
) -> list[JudgeScores]:
    """The judges of ``metric`` a command reads: those ``names`` names (a run, ``rater@run_id``, or a
    rater, all its runs), in :func:`judge_scores`'s order; every judge of it for None.

    Parameters
    ----------
    campaign : Campaign
    metric : str
    names : list of str, optional
    strict : bool, keyword-only
        Whether a name no judge of ``metric`` answers to is an error (else it is left out).

    Returns
    -------
    list of JudgeScores

    Raises
    ------
    ValueError
        With ``strict``, naming the unknown judges and the metric's.

    Examples
    --------
    >>> import calibrate
    >>> c = calibrate.load_campaign(calibrate.demo_campaign_path())
    >>> [j.name for j in select_judges(c, "relevance", ["Olz-gpt4o", "nobody"])]
    ['Olz-gpt4o']
    """
    found = judge_scores(campaign, metric)
    if names is None:
        return found
    if strict:
        unknown = [j for j in names if not any(j in (s.name, s.rater.name) for s in found)]
        if unknown:
            raise ValueError(
                f"judge(s) {', '.join(unknown)} did not rate {metric}; its judges are: "
                + ", ".join(s.name for s in found)
            )
    return [s for s in found if s.name in names or s.rater.name in names]


def find_judge(campaign: Campaign, metric: str, name: str) -> JudgeScores:
    """A judge of ``metric`` by name (``rater`` or ``rater@run_id``; a rater with one run)."""
    judges = judge_scores(campaign, metric)
    found = [j for j in judges if j.name == name] or [j for j in judges if j.rater.name == name]
    if len(found) == 1:
        return found[0]
    if found:
        raise ValueError(f"judge {name} has several runs on {metric}: name one as " + ", ".join(j.name for j in found))
    raise ValueError(
        f"judge {name} did not rate {metric}; its judges are: " + (", ".join(j.name for j in judges) or "none")
    )


@dataclass(frozen=True)
class Pairing:
    """One judge against the human reference on one metric, over the cases both rated (sorted by id).

    ``human`` and ``score`` are the reference value and the judge's score of each case (``oriented``:
    higher is better); ``weights`` their design weights (``None``: every case counts once);
    ``positions`` each case's index in the ``universe`` the weights were drawn from, whose
    :class:`~calibrate.campaign.weights.DesignWeights` is ``design``; ``n_unreferenced`` counts the
    judge's cases left out (no reference in the universe).
    """

    judge: JudgeScores
    reference: HumanReference
    case_ids: np.ndarray
    human: np.ndarray
    score: np.ndarray
    weights: np.ndarray | None
    positions: np.ndarray
    design: DesignWeights
    n_unreferenced: int

    @property
    def n(self) -> int:
        return int(self.case_ids.size)

    @property
    def oriented(self) -> np.ndarray:
        return self.judge.sign * self.score

    @property
    def passes(self) -> np.ndarray:
        return self.human >= self.reference.metric.human_pass

    @property
    def unlabelled(self) -> np.ndarray:
        """The judge's cases outside the pairing (no human reference): a mask over ``judge.case_ids``."""
        ids = self.judge.case_ids
        if not self.judge._increasing:
            return ~np.isin(ids, self.case_ids)
        # the few paired cases looked up among the judge's many (sorted): no sort of the many
        at, hit = _found(ids, self.case_ids)
        mask = np.ones(ids.size, dtype=bool)
        mask[at[hit]] = False
        return mask


def pair(
    campaign: Campaign,
    metric: str,
    judge: str | JudgeScores,
    *,
    reference: HumanReference | None = None,
    universe: np.ndarray | None = None,
    design: DesignWeights | None = None,
) -> Pairing:
    """``judge`` against the human reference of ``metric``, over the cases both rated, with weights.

    Parameters
    ----------
    campaign : Campaign
    metric : str
    judge : str or JudgeScores
        A judge of the metric (a name or ``rater@run_id``: :func:`find_judge`), or its scores.
    reference : HumanReference, optional
        The metric's human reference, when the caller has it already.
    universe : array of str, optional
        The sorted labelled cases the comparison draws from (a slice, or the cases two judges share):
        the weights are the universe's design weights at the judge's cases, scaled to mean 1 over them.
        By default the universe is the cases both rated, and the weights theirs.
    design : DesignWeights, optional
        The universe's design weights, when the caller has them already.

    Returns
    -------
    Pairing

    Examples
    --------
    >>> r = pd.DataFrame({"case_id": ["a", "b", "c", "a", "b", "d"], "metric": "f", "rater": list("hhhjjj"),
    ...                   "rater_kind": ["human"] * 3 + ["judge"] * 3, "value": [1, 0, 1, 0.9, 0.2, 0.5]})
    >>> from calibrate.campaign import campaign_from_frames
    >>> p = pair(campaign_from_frames({"name": "n", "metrics": {"f": {"scale": "binary"}}}, r), "f", "j")
    >>> p.case_ids.tolist(), p.human.tolist(), p.score.tolist(), p.weights, p.n_unreferenced
    (['a', 'b'], [1.0, 0.0], [0.9, 0.2], None, 1)
    """
    ref = reference if reference is not None else human_reference(campaign, metric)
    scores = judge if isinstance(judge, JudgeScores) else find_judge(campaign, metric, judge)
    own = universe is None
    ids = scores.case_ids
    # a judge's cases are sorted by id (judge_scores): the few labelled ones are looked up among its many,
    # which are neither sorted again nor searched one by one (10 million cases: seconds each way)
    fast = scores._increasing and _strictly_increasing(ref.case_ids if universe is None else universe)
    if universe is None:
        universe = ref.case_ids[_found(ids, ref.case_ids)[1]] if fast else np.intersect1d(ref.case_ids, ids)
    design = design if design is not None else design_weights(campaign, universe)
    if fast:
        at, hit = _found(ids, universe)
        keep = np.zeros(ids.size, dtype=bool)
        keep[at[hit]] = True
        positions = np.flatnonzero(hit).astype(np.int64)  # both sorted: the kept cases in universe order
    else:  # the universe is sorted by case id: find each judged case in it
        found, keep = _found(universe, ids)
        positions = found[keep].astype(np.int64)
    # every case of the judge's in the universe (the usual case): its own arrays, not copies of them
    everything = bool(keep.all())
    case_ids = ids if everything else ids[keep]
    weights = design.weights
    if weights is not None and not own:  # the universe's weights at these cases, scaled to mean 1 over them
        weights = weights[positions] * (case_ids.size / weights[positions].sum()) if case_ids.size else None
    return Pairing(
        judge=scores,
        reference=ref,
        case_ids=case_ids,
        human=ref.values[np.searchsorted(ref.case_ids, case_ids)],
        score=scores.values if everything else scores.values[keep],
        weights=weights,
        positions=positions,
        design=design,
        n_unreferenced=int((~keep).sum()),
    )
