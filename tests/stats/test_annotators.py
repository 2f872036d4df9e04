"""The agreement statistics of calibrate/stats/annotators.py: published values and reference implementations
(statsmodels, krippendorff), with and without item weights."""

import warnings

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from calibrate.stats.annotators import cohen_kappa, fleiss_kappa, krippendorff_alpha, percent_agreement

# Fleiss (1971) as tabulated on Wikipedia's "Fleiss' kappa" page: 10 items, 14 raters, 5 categories
FLEISS_COUNTS = [
    [0, 0, 0, 0, 14],
    [0, 2, 6, 4, 2],
    [0, 0, 3, 5, 6],
    [0, 3, 9, 2, 0],
    [2, 2, 8, 1, 1],
    [7, 7, 0, 0, 0],
    [3, 2, 6, 3, 0],
    [2, 5, 3, 2, 2],
    [6, 5, 2, 1, 0],
    [0, 2, 2, 3, 7],
]


def counts_to_matrix(counts):
    return np.array([[c for c, k in enumerate(row, start=1) for _ in range(k)] for row in counts], dtype=float)


def test_fleiss_kappa_reproduces_the_published_example():
    assert fleiss_kappa(counts_to_matrix(FLEISS_COUNTS)) == pytest.approx(0.210, abs=5e-4)


@settings(max_examples=60, deadline=None)
@given(st.integers(5, 40), st.integers(2, 6), st.integers(2, 4), st.integers(0, 10_000))
def test_fleiss_kappa_matches_statsmodels_on_complete_data(n_items, n_raters, n_categories, seed):
    from statsmodels.stats.inter_rater import aggregate_raters
    from statsmodels.stats.inter_rater import fleiss_kappa as reference

    labels = np.random.default_rng(seed).integers(0, n_categories, size=(n_items, n_raters))
    table, _ = aggregate_raters(labels)
    expected = reference(table, method="fleiss")
    got = fleiss_kappa(labels.astype(float))
    assert (np.isnan(got) and np.isnan(expected)) or got == pytest.approx(expected, abs=1e-12)


def test_missing_labels_are_allowed_and_single_labels_ignored():
    m = np.array([[1, 1, np.nan], [0, 0, 1], [1, np.nan, np.nan], [0, 1, 0]])
    assert percent_agreement(m) == pytest.approx((1 + 1 / 3 + 1 / 3) / 3)
    assert cohen_kappa(m[:, 0], m[:, 1]) == pytest.approx(0.4)  # items 1, 2 and 4: (2/3 - 4/9) / (5/9)
    import krippendorff

    assert krippendorff_alpha(m, "nominal") == pytest.approx(
        krippendorff.alpha(reliability_data=m[[0, 1, 3]].T, level_of_measurement="nominal")
    )


@settings(max_examples=60, deadline=None)
@given(
    st.integers(3, 25).flatmap(
        lambda n: st.tuples(
            st.lists(
                st.lists(st.sampled_from([0.0, 1.0, 2.0, 3.0, np.nan]), min_size=3, max_size=3), min_size=n, max_size=n
            ),
            st.lists(st.integers(1, 3), min_size=n, max_size=n),
        )
    )
)
def test_item_weights_equal_repeating_the_items(data):
    """An item of weight k counts as k items, for every statistic; weights of one give the package's alpha."""
    rows, weights = np.array(data[0]), np.array(data[1])
    repeated = np.repeat(rows, weights, axis=0)
    w = weights.astype(float)
    with warnings.catch_warnings(action="ignore"):
        pairs = [
            (percent_agreement(rows, w), percent_agreement(repeated)),
            (fleiss_kappa(rows, w), fleiss_kappa(repeated)),
        ]
        if np.sum((~np.isnan(rows[:, :2])).all(axis=1)) >= 2:
            # (two items labelled by both, not one item of weight 2: kappa needs two items)
            pairs.append(
                (cohen_kappa(rows[:, 0], rows[:, 1], sample_weight=w), cohen_kappa(repeated[:, 0], repeated[:, 1]))
            )
        for level in ("nominal", "ordinal", "interval"):
            pairs.append((krippendorff_alpha(rows, level, w), krippendorff_alpha(repeated, level)))
            pairs.append((krippendorff_alpha(rows, level, np.ones(len(rows))), krippendorff_alpha(rows, level)))
    for got, expected in pairs:
        assert (np.isnan(got) and np.isnan(expected)) or got == pytest.approx(expected, abs=1e-9)


@settings(max_examples=80, deadline=None)
@given(
    st.integers(2, 40).flatmap(
        lambda n: st.lists(
            st.lists(st.one_of(st.floats(0, 1).map(lambda v: round(v, 2)), st.just(np.nan)), min_size=3, max_size=3),
            min_size=n,
            max_size=n,
        )
    )
)
def test_interval_alpha_in_closed_form_matches_the_package(rows):
    import krippendorff

    data = np.array(rows)
    keep = np.sum(~np.isnan(data), axis=1) >= 2
    assume(keep.sum() >= 1 and np.unique(data[keep][~np.isnan(data[keep])]).size >= 2)
    with warnings.catch_warnings(action="ignore"):
        expected = krippendorff.alpha(reliability_data=data[keep].T, level_of_measurement="interval")
    got = krippendorff_alpha(data, "interval")
    assert (np.isnan(got) and np.isnan(expected)) or got == pytest.approx(expected, abs=1e-9)
