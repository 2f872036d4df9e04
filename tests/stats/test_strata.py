"""The strata of a judge's scores and the percentile ranks the sample designs share (calibrate/stats/strata.py)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import rankdata

from calibrate.stats.strata import percentile_ranks, score_edges, score_strata


def test_percentile_ranks_are_midranks_inside_the_unit_interval():
    values = np.array([5.0, 1.0, 5.0, 3.0])
    assert percentile_ranks(values).tolist() == [0.75, 0.125, 0.75, 0.375]


@settings(max_examples=50, deadline=None)
@given(st.lists(st.integers(0, 6), min_size=1, max_size=60), st.integers(2, 8))
def test_strata_cover_every_score_and_never_split_a_tie(scores, n_strata):
    oriented = np.array(scores, dtype=float)
    edges = score_edges(oriented, n_strata)
    strata = score_strata(oriented, edges)
    assert edges == sorted(set(edges)) and len(edges) <= n_strata - 1
    assert all(e < oriented.max() for e in edges)
    assert strata.min() >= 0 and strata.max() <= len(edges)
    for value in np.unique(oriented):
        assert np.unique(strata[oriented == value]).size == 1  # a tied score stays in one stratum
    order = np.argsort(oriented, kind="stable")
    assert (np.diff(strata[order]) >= 0).all()  # strata follow the scores
    ranks = percentile_ranks(oriented)
    assert ((0 < ranks) & (ranks < 1)).all()
    assert ranks == pytest.approx((rankdata(oriented) - 0.5) / oriented.size)


def test_stratum_h_holds_the_scores_up_to_its_edge():
    edges = score_edges(np.arange(10.0), 5)
    assert edges == [1.0, 3.0, 5.0, 7.0]
    assert score_strata(np.array([0.0, 1.0, 1.5, 3.0, 7.0, 9.0]), edges).tolist() == [0, 0, 1, 1, 3, 4]


def test_a_judge_with_one_score_gives_one_stratum():
    scores = np.full(7, 0.8)
    assert score_edges(scores, 4) == []
    assert score_strata(scores, []).tolist() == [0] * 7
