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
