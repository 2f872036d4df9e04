"""The one join: a judge against the humans on a metric, over the cases both rated, with weights."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from calibrate.campaign import Campaign, campaign_from_frames
from calibrate.campaign.reference import human_reference, pair
from calibrate.campaign.weights import design_weights


def _campaign(with_sample: bool) -> Campaign:
    rng = np.random.default_rng(4)
    ids = [f"c{i:02d}" for i in range(30)]
    human = rng.integers(0, 2, 30)
    rows = [
        {"case_id": c, "metric": "m", "rater": "h", "rater_kind": "human", "value": float(v)}
        for c, v in zip(ids, human)
    ]
    # the judge skipped c00-c04 and scored two cases nobody labelled
    rows += [
        {"case_id": c, "metric": "m", "rater": "j", "rater_kind": "judge", "value": float(v)}
        for c, v in zip(ids[5:] + ["x1", "x2"], rng.random(27))
    ]
    c = campaign_from_frames(
        {"name": "n", "metrics": {"m": {"scale": "binary"}}},
        pd.DataFrame(rows),
        [{"case_id": x} for x in ids + ["x1", "x2"]],
    )
    if with_sample:  # of the first twenty cases, ten were drawn with probability 0.9, ten with 0.1; the rest
        c.samples["s"] = {
            "design": {"strategy": "threshold"},
            "case_ids": ids[:20],  # came from no sample
            "strata": ["a"] * 10 + ["b"] * 10,
            "inclusion_probability": np.r_[np.full(10, 0.9), np.full(10, 0.1)],
        }
    return c


def test_pair_is_the_cases_both_rated():
    c = _campaign(with_sample=False)
    p = pair(c, "m", "j")
    ref = human_reference(c, "m")
    assert p.case_ids.tolist() == [f"c{i:02d}" for i in range(5, 30)]
    assert p.human.tolist() == ref.values[5:].tolist()
    assert p.n == 25 and p.n_unreferenced == 2 and p.weights is None
    assert p.judge.case_ids[p.unlabelled].tolist() == ["x1", "x2"]
    assert (p.passes == (p.human >= 1)).all()


def test_weights_are_the_pairs_own_or_the_universes():
    c = _campaign(with_sample=True)
    own = pair(c, "m", "j")
    assert own.weights == pytest.approx(design_weights(c, own.case_ids).weights)
    ref = human_reference(c, "m")
    design = design_weights(c, ref.case_ids)
    in_universe = pair(c, "m", "j", reference=ref, universe=ref.case_ids, design=design)
    assert in_universe.positions.tolist() == list(range(5, 30))
    expected = design.weights[5:] * (25 / design.weights[5:].sum())
    assert in_universe.weights == pytest.approx(expected)
    assert in_universe.weights.mean() == pytest.approx(1.0)
    # the two differ: five cases of the dense stratum are not the judge's, so the sample's effective size
    # among its cases is not the same as among the universe's
    assert not np.allclose(own.weights, in_universe.weights)
    # a universe without the judge's cases leaves nothing to pair
    empty = pair(c, "m", "j", universe=np.array(["c00", "c01"]))
    assert empty.n == 0 and empty.weights is None and empty.n_unreferenced == 27


def _unsorted(scores):
    """The same judge with its cases in reverse order: pair() takes its straightforward path (a search of
    every judged case in the universe), not the lookup of the few labelled among the many sorted."""
    from dataclasses import replace

    return replace(scores, case_ids=scores.case_ids[::-1].copy(), values=scores.values[::-1].copy())


@pytest.mark.parametrize("seed", range(8))
def test_the_sorted_lookup_is_the_straightforward_join(seed):
    """Random campaigns (cases in any order in the file, failed judge calls, two runs, a judge without
    some labelled cases, labels on cases no judge scored): the join by lookup in the judge's sorted cases
    gives what the search of every judged case (and np.isin, np.intersect1d) gives, in the universe of
    its own cases and in a wider one."""
    from calibrate.campaign.reference import find_judge, judge_scores

    rng = np.random.default_rng(seed)
    ids = np.array([f"k{i:03d}" for i in rng.permutation(300)])
    labelled = rng.random(300) < 0.3
    rows = [
        {"case_id": c, "metric": "m", "rater": h, "rater_kind": "human", "value": float(rng.integers(0, 2))}
        for c in ids[labelled]
        for h in ["h1", "h2"][: int(rng.integers(1, 3))]
    ]
    for run in ("r1", "r2"):
        scored = ids[rng.random(300) < 0.8]
        failed = rng.random(scored.size) < 0.05
        rows += [
            {"case_id": c, "metric": "m", "rater": "j", "rater_kind": "judge", "run_id": run}
            | ({"value": None, "error": "timeout"} if f else {"value": float(rng.random())})
            for c, f in zip(scored, failed)
        ]
    order = rng.permutation(len(rows))
    c = campaign_from_frames({"name": "n", "metrics": {"m": {"scale": "binary"}}}, pd.DataFrame(rows).iloc[order])
    for scores in judge_scores(c, "m"):
        assert (np.sort(scores.case_ids) == scores.case_ids).all() and np.unique(
            scores.case_ids
        ).size == scores.case_ids.size
        by_row = c.ratings[(c.ratings["rater"] == "j") & (c.ratings["run_id"] == scores.run_id)]
        ok = by_row[by_row["value"].notna()].sort_values("case_id")
        assert scores.case_ids.tolist() == ok["case_id"].tolist() and scores.values.tolist() == ok["value"].tolist()
        assert sorted(scores.errors["case_id"]) == sorted(by_row.loc[by_row["value"].isna(), "case_id"])
    ref = human_reference(c, "m")
    for name in ("j@r1", "j@r2"):
        scores = find_judge(c, "m", name)
        fast, slow = pair(c, "m", scores), pair(c, "m", _unsorted(scores))
        assert fast.case_ids.tolist() == np.intersect1d(ref.case_ids, scores.case_ids).tolist()
        assert fast.case_ids.tolist() == slow.case_ids[::-1].tolist()
        assert (
            fast.score.tolist() == slow.score[::-1].tolist()
            and fast.positions.tolist() == slow.positions[::-1].tolist()
        )
        assert fast.unlabelled.tolist() == (~np.isin(scores.case_ids, fast.case_ids)).tolist()
        assert fast.unlabelled.tolist() == slow.unlabelled[::-1].tolist()
        wide = pair(c, "m", scores, reference=ref, universe=ref.case_ids)
        wide_slow = pair(c, "m", _unsorted(scores), reference=ref, universe=ref.case_ids)
        assert wide.positions.tolist() == wide_slow.positions[::-1].tolist()
        assert ref.case_ids[wide.positions].tolist() == wide.case_ids.tolist()
        assert wide.n_unreferenced == wide_slow.n_unreferenced == int((~np.isin(scores.case_ids, ref.case_ids)).sum())


@pytest.mark.parametrize(
    "texts",
    [
        ["c003", "c001", "c002"],  # one width
        ["a", "bb", "", "dddd", "c"],  # several, and empty
        ["é", "ab", "z"],  # not ASCII: the plain way
        [],
        ["x"] * 3,
    ],
)
@pytest.mark.parametrize("dtype", ["str", "string[pyarrow]", "string[python]", object, "category"])
def test_ids_as_text_are_to_numpys(texts, dtype):
    """The ids made from pyarrow's bytes are the array to_numpy(dtype=str) makes, of a column as it is,
    of part of it (an offset into its buffers), and of one held in several chunks."""
    import pyarrow as pa

    from calibrate.campaign.reference import _text_array

    column = pd.Series(texts * 3, dtype=dtype)
    for part in (column, column.iloc[2:], column.iloc[::2]):
        made = _text_array(part)
        assert made.dtype == part.to_numpy(dtype=str).dtype and made.tolist() == part.to_numpy(dtype=str).tolist()
    if dtype == "str" and texts:
        chunked = pd.Series(pd.arrays.ArrowStringArray(pa.chunked_array([texts, texts[::-1]])))
        assert _text_array(chunked).tolist() == chunked.to_numpy(dtype=str).tolist()


def _straightforward_reference(c: Campaign, metric: str) -> tuple:
    """The human reference by copies of the table: the rows selected, sorted by case then value, grouped."""
    rows = c.ratings[(c.ratings["metric"] == metric) & (c.ratings["rater_kind"] == "human")]
    failed = tuple(sorted(set(rows.loc[rows["value"].isna(), "case_id"].astype(str))))
    rows = rows[rows["value"].notna()].sort_values(["case_id", "value"], kind="stable")
    ids, starts, counts = np.unique(rows["case_id"].to_numpy(dtype=str), return_index=True, return_counts=True)
    labels = rows["value"].to_numpy(float)
    continuous = c.metrics[metric].scale == "continuous"
    values = np.add.reduceat(labels, starts) / counts if continuous else labels[starts + (counts - 1) // 2]
    return ids, values, counts, failed, tuple(sorted(rows["rater"].unique()))


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("scale", ["ordinal", "continuous"])
def test_the_reference_by_row_positions_is_the_sorted_copys(seed, scale):
    """Random campaigns (cases in any order or in case order, up to three annotators per case, failed ratings, a judge's
    rows between, another metric, an adjudication): the reference read by row positions is the one the
    sorted copy of the rows gives, ids of the same width, decisions applied."""
    rng = np.random.default_rng(seed)
    ids = np.array([f"k{i:0{1 + i % 3}d}" for i in rng.permutation(200)])  # ids of several widths
    ids = np.sort(ids) if seed % 3 == 0 else ids  # seed 0: one label per case, in case order (no sort)
    rows = [
        {"case_id": c, "metric": m, "rater": h, "rater_kind": "human"}
        | ({"value": None, "error": "lost"} if rng.random() < 0.05 else {"value": float(rng.integers(0, 4))})
        for c in ids[rng.random(200) < 0.7]
        for m in ("m", "other")
        for h in ["h1", "h2", "h3"][: int(rng.integers(1, 4)) if seed else 1]
    ]
    rows += [{"case_id": c, "metric": "m", "rater": "j", "rater_kind": "judge", "value": 1.0} for c in ids[:50]]
    metric = {"scale": scale, "human_pass": 2} | ({"levels": [0, 1, 2, 3]} if scale == "ordinal" else {})
    frame = pd.DataFrame(rows).iloc[rng.permutation(len(rows)) if seed % 2 else np.arange(len(rows))]
    c = campaign_from_frames({"name": "n", "metrics": {"m": metric, "other": metric}}, frame)
    ref = human_reference(c, "m")
    ids_, values, counts, failed, raters = _straightforward_reference(c, "m")
    assert ref.case_ids.dtype == ids_.dtype and ref.case_ids.tolist() == ids_.tolist()
    assert ref.values.tolist() == values.tolist() and ref.n_raters.tolist() == counts.tolist()
    assert ref.failed_rating_cases == failed and ref.raters == raters and ref.n_adjudicated == 0
    c.adjudications = pd.DataFrame({"case_id": [ids_[0], "nobody", ids_[1]], "metric": ["m", "m", "other"]})
    c.adjudications["value"] = 9.0
    ruled = human_reference(c, "m")
    assert ruled.n_adjudicated == 1 and ruled.values.tolist() == [9.0, *values[1:].tolist()]
    assert ref.values.tolist() == values.tolist()  # the reference's own array is left as it was
