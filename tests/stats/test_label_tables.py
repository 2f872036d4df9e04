"""Annotator agreement from label-pattern counts: every resample's figure equals the reference's
(scikit-learn, krippendorff, the written percent agreement and Fleiss' kappa) on the resampled items,
and the intervals equal those of calling the reference once per resample."""

import warnings

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from calibrate.stats.annotators import (
    agreement_intervals,
    agreement_with_interval,
    cohen_kappa,
    fleiss_kappa,
    krippendorff_alpha,
    percent_agreement,
    reference_value,
)
from calibrate.stats.bootstrap import case_counts, resample_indices
from calibrate.stats.label_tables import STATISTICS, LabelTables, multiply_labelled

SCALES = {"binary": [0.0, 1.0], "ordinal": [0.0, 1.0, 2.0, 3.0], "continuous": [0.0, 0.25, 0.3, 0.5, 0.9, 1.0]}
LEVEL = {"binary": "nominal", "ordinal": "ordinal", "continuous": "interval"}


@st.composite
def panels(draw, max_items=30):
    """A label matrix of a scale, with missing labels, optional item weights and strata."""
    scale = draw(st.sampled_from(sorted(SCALES)))
    n_annotators = draw(st.integers(2, 4))
    n = draw(st.integers(1, max_items))
    cell = st.one_of(st.sampled_from(SCALES[scale]), st.just(np.nan))
    matrix = np.array(
        draw(st.lists(st.lists(cell, min_size=n_annotators, max_size=n_annotators), min_size=n, max_size=n)),
        dtype=float,
    )
    weights = (
        np.array(draw(st.lists(st.sampled_from([0.5, 1.0, 2.0, 3.0]), min_size=n, max_size=n)))
        if draw(st.booleans())
        else None
    )
    strata = np.array(draw(st.lists(st.integers(0, 1), min_size=n, max_size=n))) if draw(st.booleans()) else None
    return scale, matrix, weights, strata


def statistics_of(scale: str, n_annotators: int) -> list[str]:
    names = ["percent_agreement", "fleiss_kappa", f"alpha_{LEVEL[scale]}"]
    if n_annotators == 2 and scale != "continuous":
        names.append("cohen_kappa_quadratic" if scale == "ordinal" else "cohen_kappa")
    return names


def reference_statistic(name: str):
    """The statistic as the previous implementation called it, once per resample."""
    if name.startswith("cohen_kappa"):
        weights = "quadratic" if name.endswith("quadratic") else None
        return lambda m, w: cohen_kappa(m[:, 0], m[:, 1], weights=weights, sample_weight=w)
    if name.startswith("alpha_"):
        return lambda m, w: krippendorff_alpha(m, name.removeprefix("alpha_"), w)
    return {"percent_agreement": percent_agreement, "fleiss_kappa": fleiss_kappa}[name]


def same(a, b, tol=1e-9):
    if a is None or b is None:
        return a is None and b is None
    return (np.isnan(a) and np.isnan(b)) or abs(a - b) <= tol * max(1.0, abs(a))


@settings(max_examples=100, deadline=None)
@given(panels(), st.integers(0, 10_000))
def test_every_resample_equals_the_reference_on_the_resampled_items(panel, seed):
    scale, matrix, weights, _ = panel
    keep = multiply_labelled(matrix)
    assume(keep.sum() >= 1)
    matrix, weights = matrix[keep], None if weights is None else weights[keep]
    tables = LabelTables(matrix, weights)
    indices = next(resample_indices(tables.n, 20, seed=seed, batch_size=20))
    counts = case_counts(indices, tables.n)
    with warnings.catch_warnings(action="ignore"):
        for name in statistics_of(scale, matrix.shape[1]):
            engine = tables.statistic(name, tables.tables(counts))
            for r, rows in enumerate(indices):
                assert same(engine[r], reference_value(tables, name, rows)), (name, r)
            left_out = tables.statistic(name, tables.jackknife(), n_items=tables.n - 1)
            for i in range(tables.n):
                rows = np.delete(np.arange(tables.n), i)
                assert same(left_out[i], reference_value(tables, name, rows) if rows.size else np.nan), (name, i)


@settings(max_examples=40, deadline=None)
@given(panels(), st.integers(0, 10_000), st.sampled_from([0, 1, 120]))
def test_intervals_equal_calling_the_reference_once_per_resample(panel, seed, n_boot):
    """Same seed, same figures as the previous implementation (the reference called per resample),
    to floating-point rounding: estimate, interval ends, method and resamples used."""
    scale, matrix, weights, strata = panel
    keep = multiply_labelled(matrix)
    tables = LabelTables(matrix[keep], None if weights is None else weights[keep])
    names = statistics_of(scale, matrix.shape[1])
    with warnings.catch_warnings(action="ignore"):
        found = agreement_intervals(
            {name: (tables, name) for name in names},
            n_boot=n_boot,
            seed=seed,
            strata=None if strata is None else strata[keep],
        )
        for name in names:
            before = agreement_with_interval(
                reference_statistic(name), matrix, n_boot=n_boot, seed=seed, weights=weights, strata=strata
            )
            now = found[name]
            assert same(now.estimate, before.estimate) and now.n_items == before.n_items, name
            assert (now.interval is None) == (before.interval is None), name
            if before.interval is not None:
                assert same(now.interval.low, before.interval.low), (name, now.interval, before.interval)
                assert same(now.interval.high, before.interval.high), (name, now.interval, before.interval)
                assert (now.interval.method, now.interval.n_valid, now.interval.reason) == (
                    before.interval.method,
                    before.interval.n_valid,
                    before.interval.reason,
                )


def test_more_than_bca_items_take_the_percentile_interval_as_before():
    rng = np.random.default_rng(5)
    truth = rng.integers(0, 4, 260)
    matrix = np.clip(truth[:, None] + rng.integers(-1, 2, (260, 3)), 0, 3).astype(float)
    tables = LabelTables(matrix)
    found = agreement_intervals({"k": (tables, "fleiss_kappa")}, n_boot=300, seed=2)["k"]
    before = agreement_with_interval(fleiss_kappa, matrix, n_boot=300, seed=2)
    assert "percentile" in found.interval.method
    assert (found.interval.low, found.interval.high) == pytest.approx(
        (before.interval.low, before.interval.high), abs=1e-12
    )


def test_the_engine_is_checked_against_the_reference(monkeypatch):
    from calibrate.stats.library import EngineMismatch

    tables = LabelTables([[1, 1], [0, 0], [1, 0], [0, 0]])
    original = LabelTables.statistic
    monkeypatch.setattr(LabelTables, "statistic", lambda self, name, T: original(self, name, T) + 1e-6)
    with pytest.raises(EngineMismatch, match="cohen_kappa of the annotators of m"):
        agreement_intervals({"cohen_kappa": (tables, "cohen_kappa")}, n_boot=10, seed=0, subject="the annotators of m")


def test_label_tables_refuse_what_they_cannot_read():
    with pytest.raises(ValueError, match="two labels or more"):
        LabelTables([[1, np.nan], [1, 1]])
    with pytest.raises(ValueError, match="two dimensions"):
        LabelTables([1, 0, 1])
    with pytest.raises(ValueError, match="positive and finite"):
        LabelTables([[1, 1], [0, 1]], weights=[1, -1])
    with pytest.raises(ValueError, match="not one of"):
        LabelTables([[1, 1], [0, 1]]).statistic("kappa", np.ones((1, 2)))
    with pytest.raises(ValueError, match="two annotators, not 3"):
        LabelTables([[1, 1, 0], [0, 1, 1]]).statistic("cohen_kappa", np.ones((1, 2)))
    empty = LabelTables(np.zeros((0, 2)))
    assert empty.n_patterns == 0 and all(
        empty.statistic(name, empty.full).tolist() == [] or np.isnan(empty.statistic(name, empty.full)).all()
        for name in STATISTICS
    )
