"""Properties every public array statistic of ``calibrate.stats`` shares, in the manner of scikit-learn's
``sklearn/metrics/tests/test_common.py``: a registry of the statistics (:data:`STATISTICS`), named subsets
of it that say which property each has, a test that the subsets partition (or lie in) the registry and
that the registry covers the public API, and each property run over every member of its subset.

Each member is called on a sample of *cases*, a 2-d array with a row per case (its columns are the
statistic's per-case inputs), with optional integer-valued case weights: so permuting cases, repeating
them and weighting them are the same operations for every statistic.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import calibrate.stats as cs
from tests.conftest import assert_clear_error

#: fixed bootstrap replicates for the BCa member, whose cases are the leave-one-out values
REPLICATES = np.random.default_rng(0).normal(size=400)


@dataclass(frozen=True)
class Statistic:
    """How the common tests call one public statistic.

    ``call(cases, weights)`` returns its outputs as one flat float array; ``draw(rng, n)`` makes a sample
    of ``n`` cases; ``interval(output)`` reads ``(low, high)`` (intervals only) and ``estimate(cases)``
    the value it must contain; ``valid`` is a call of the function itself that succeeds, and ``refused``
    the changes to it each of which must be refused naming the parameter changed (``extra``: what else
    to change with a parameter).
    """

    function: Callable[..., Any]
    call: Callable[[np.ndarray, np.ndarray | None], np.ndarray]
    draw: Callable[[np.random.Generator, int], np.ndarray]
    valid: dict[str, Any]
    refused: list[tuple[str, Any]]
    min_cases: int = 2
    interval: Callable[[np.ndarray], tuple[float, float]] | None = None
    estimate: Callable[[np.ndarray], float] | None = None
    bounds: tuple[float, float] = (-np.inf, np.inf)
    extra: dict[str, dict[str, Any]] = field(default_factory=dict)


# ------------------------------------------------------------------------------------------- members
def _curve(cases: np.ndarray, weights: np.ndarray | None) -> np.ndarray:
    curve = cs.error_curve(cases[:, 0] == 1, cases[:, 1], sample_weight=weights)
    return np.concatenate([curve.thresholds, curve.false_pass, curve.false_fail, [curve.n_pass, curve.n_fail]])


def _judged(rng: np.random.Generator, n: int) -> np.ndarray:
    human = rng.random(n) < 0.5
    return np.column_stack([human, np.round(rng.normal(human, 1.0), 1)]).astype(float)


def _labels(rng: np.random.Generator, n: int, levels: int = 3) -> np.ndarray:
    truth = rng.integers(0, levels, n)
    matrix = np.where(rng.random((n, 3)) < 0.7, truth[:, None], rng.integers(0, levels, (n, 3))).astype(float)
    matrix[rng.random((n, 3)) < 0.15] = np.nan  # missing labels
    return matrix


def _outcomes(rng: np.random.Generator, n: int) -> np.ndarray:
    return (rng.random((n, 1)) < rng.uniform(0.05, 0.95)).astype(float)


def _agreement(function: Callable[..., float], **options: Any) -> Callable[[np.ndarray, np.ndarray | None], np.ndarray]:
    def call(cases: np.ndarray, weights: np.ndarray | None) -> np.ndarray:
        return np.array([function(cases, weights=weights, **options)])

    return call


MATRIX = np.array([[0, 0, 1], [1, 1, np.nan], [2, 1, 2], [0, 0, 0]], dtype=float)
MATRIX_REFUSED = [
    ("matrix", np.array([0.0, 1.0, 1.0])),  # one dimension
    ("matrix", np.array([[0.0, np.inf], [1.0, 1.0]])),
    ("weights", np.ones(3)),  # a weight short
    ("weights", np.array([1.0, -1.0, 1.0, 1.0])),
    ("weights", np.array([1.0, np.nan, 1.0, 1.0])),
]

STATISTICS: dict[str, Statistic] = {
    "error_curve": Statistic(
        cs.error_curve,
        _curve,
        _judged,
        valid={"human_pass": [1, 0, 1], "score": [0.2, 0.5, 0.9]},
        refused=[
            ("score", [0.2, 0.5]),
            ("score", [0.2, np.nan, 0.9]),
            ("human_pass", [1, 2, 0]),
            ("human_pass", []),
            ("sample_weight", [1.0, -1.0, 1.0]),
            ("sample_weight", [1.0, 1.0]),
        ],
    ),
    "wilson_interval": Statistic(
        cs.wilson_interval,
        lambda cases, _: np.array(cs.wilson_interval(cases[:, 0].sum(), cases.shape[0]), dtype=float),
        _outcomes,
        valid={"successes": 3, "trials": 10},
        refused=[("successes", [1, 2]), ("successes", -1), ("successes", 11), ("confidence", 1.5)],
        min_cases=1,
        interval=lambda out: (out[0], out[1]),
        estimate=lambda cases: cases[:, 0].mean(),
        bounds=(0.0, 1.0),
        extra={"successes": {"trials": [3, 4, 5]}},  # [1, 2] against three trials
    ),
    "clopper_pearson_upper": Statistic(
        cs.clopper_pearson_upper,
        lambda cases, _: np.atleast_1d(cs.clopper_pearson_upper(cases[:, 0].sum(), cases.shape[0])),
        _outcomes,
        valid={"successes": 3, "trials": 10},
        refused=[("successes", -1), ("successes", 11), ("trials", [10, np.inf]), ("confidence", 0)],
        min_cases=1,
        interval=lambda out: (0.0, out[0]),
        estimate=lambda cases: cases[:, 0].mean(),
        bounds=(0.0, 1.0),
    ),
    "percentile_interval": Statistic(
        cs.percentile_interval,
        lambda cases, _: (lambda iv: np.array([iv.low, iv.high]))(cs.percentile_interval(cases[:, 0], min_valid=5)),
        lambda rng, n: rng.normal(size=(n, 1)),
        valid={"replicates": np.arange(200.0)},
        refused=[("replicates", np.ones((2, 100))), ("confidence", 1.0), ("min_valid", 0), ("replicates", "many")],
        min_cases=5,
        interval=lambda out: (out[0], out[1]),
        estimate=lambda cases: float(np.median(cases[:, 0])),
    ),
    "bca_interval": Statistic(
        cs.bca_interval,
        lambda cases, weights: (lambda iv: np.array([iv.low, iv.high]))(
            cs.bca_interval(float(np.median(REPLICATES)), REPLICATES, cases[:, 0], weights)
        ),
        lambda rng, n: rng.normal(size=(n, 1)),
        valid={"estimate": 0.0, "replicates": REPLICATES, "jackknife": [0.1, -0.2, 0.3]},
        refused=[
            ("jackknife_weights", [1.0, 2.0]),
            ("jackknife_weights", [1.0, -2.0, 1.0]),
            ("jackknife", np.ones((3, 2))),
            ("replicates", np.ones((2, 200))),
            ("confidence", -0.5),
        ],
        min_cases=3,
        interval=lambda out: (out[0], out[1]),
        estimate=lambda _: float(np.median(REPLICATES)),
        bounds=(float(REPLICATES.min()), float(REPLICATES.max())),
    ),
    "fleiss_kappa": Statistic(
        cs.fleiss_kappa,
        _agreement(cs.fleiss_kappa),
        _labels,
        valid={"matrix": MATRIX},
        refused=MATRIX_REFUSED,
    ),
    "percent_agreement": Statistic(
        cs.percent_agreement,
        _agreement(cs.percent_agreement),
        _labels,
        valid={"matrix": MATRIX},
        refused=MATRIX_REFUSED,
        bounds=(0.0, 1.0),
    ),
    **{
        f"krippendorff_alpha[{level}]": Statistic(
            cs.krippendorff_alpha,
            _agreement(cs.krippendorff_alpha, level=level),
            _labels,
            valid={"matrix": MATRIX, "level": level},
            refused=[*MATRIX_REFUSED, ("level", "ratio")],
        )
        for level in ("nominal", "ordinal", "interval")
    },
    "e_detector": Statistic(
        cs.e_detector,
        lambda cases, _: cs.e_detector(cases[:, 0] - 0.05, np.full(cases.shape[0], -0.05)).statistic,
        _outcomes,
        valid={"increments": [0.0, -0.1, 0.9], "lower": -0.1},
        refused=[
            ("increments", []),
            ("increments", [0.0, np.nan, 0.9]),
            ("increments", np.zeros((3, 2))),
            ("lower", [-0.1, -0.1]),
            ("alpha", 1.0),
        ],
    ),
    "confidence_sequence": Statistic(
        cs.confidence_sequence,
        lambda cases, _: np.concatenate(cs.confidence_sequence(cases[:, 0], cases[:, 1])),
        lambda rng, n: np.column_stack([rng.random(n) < 0.3, rng.choice([0.0, 1.0, 2.0], n)]).astype(float),
        valid={"values": [0.0, 1.0, 1.0], "weights": [1.0, 1.0, 2.0]},
        refused=[
            ("weights", [1.0, 1.0]),
            ("weights", [1.0, -1.0, 1.0]),
            ("values", [0.0, np.nan, 1.0]),
            ("values", []),
            ("alpha", 0),
        ],
        interval=lambda out: (out[out.size // 2 - 1], out[-1]),  # after the last step
        estimate=lambda cases: float(np.average(cases[:, 0], weights=cases[:, 1])),
        bounds=(0.0, 1.0),
    ),
}

# ------------------------------------------------------------------------------------------- subsets
#: the order of the cases does not matter (the others read a stream in time order)
ORDER_FREE = {
    "error_curve",
    "wilson_interval",
    "clopper_pearson_upper",
    "percentile_interval",
    "bca_interval",
    "fleiss_kappa",
    "percent_agreement",
    "krippendorff_alpha[nominal]",
    "krippendorff_alpha[ordinal]",
    "krippendorff_alpha[interval]",
}
SEQUENTIAL = {"e_detector", "confidence_sequence"}

#: case weights that count cases: a weight of 2 is the case twice
FREQUENCY_WEIGHTED = {
    "error_curve",
    "bca_interval",  # its jackknife_weights: how many cases each leave-one-out value stands for
    "fleiss_kappa",
    "percent_agreement",
    "krippendorff_alpha[nominal]",
    "krippendorff_alpha[ordinal]",
    "krippendorff_alpha[interval]",
}
#: weights of a stream's steps (inverse inclusion probabilities, which also size the bets): not repetitions
STREAM_WEIGHTED = {"confidence_sequence"}
UNWEIGHTED = {"wilson_interval", "clopper_pearson_upper", "percentile_interval", "e_detector"}

#: what the statistic is
CURVES = {"error_curve"}
AGREEMENT = {
    "fleiss_kappa",
    "percent_agreement",
    *(f"krippendorff_alpha[{v}]" for v in ("nominal", "ordinal", "interval")),
}
INTERVALS = {"wilson_interval", "clopper_pearson_upper", "percentile_interval", "bca_interval", "confidence_sequence"}
DETECTORS = {"e_detector"}

#: symmetric in the annotators (the columns of the label matrix)
SYMMETRIC = set(AGREEMENT)
#: every output in [0, 1]
BOUNDED_0_1 = {"wilson_interval", "clopper_pearson_upper", "percent_agreement", "confidence_sequence"}

PARTITIONS = {
    "order": [ORDER_FREE, SEQUENTIAL],
    "weights": [FREQUENCY_WEIGHTED, STREAM_WEIGHTED, UNWEIGHTED],
    "kind": [CURVES, AGREEMENT, INTERVALS, DETECTORS],
}
SUBSETS = [SYMMETRIC, BOUNDED_0_1]

QUICK = settings(max_examples=15, deadline=None)


def sample(name: str, seed: int, most: int = 40) -> np.ndarray:
    member = STATISTICS[name]
    rng = np.random.default_rng(seed)
    return member.draw(rng, int(rng.integers(max(member.min_cases, 4), most)))


def same(a: np.ndarray, b: np.ndarray) -> None:
    np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12, equal_nan=True)


# --------------------------------------------------------------------------------- the registry
@pytest.mark.parametrize("partition", sorted(PARTITIONS))
def test_each_partition_splits_the_registry(partition):
    parts = PARTITIONS[partition]
    assert set().union(*parts) == set(STATISTICS), partition
    assert sum(len(p) for p in parts) == len(STATISTICS), f"{partition}: a statistic in two parts"


def test_subsets_lie_in_the_registry():
    for subset in SUBSETS:
        assert subset <= set(STATISTICS)


def test_the_registry_covers_the_public_functions():
    public = {name for name in cs.__all__ if inspect.isfunction(getattr(cs, name))}
    registered = {member.function.__name__ for member in STATISTICS.values()}
    assert public == registered


@pytest.mark.parametrize("name", sorted(cs.__all__))
def test_every_public_name_is_documented_with_shapes_and_an_example(name):
    found = getattr(cs, name)
    if not callable(found):
        return
    doc = inspect.getdoc(found) or ""
    assert "Examples\n--------" in doc or not inspect.isfunction(found), name
    if inspect.isfunction(found):
        for parameter in inspect.signature(found).parameters:
            assert f"{parameter} :" in doc or f", {parameter}" in doc, f"{name}: {parameter} undocumented"
        assert "of shape (" in doc, f"{name}: no array shape"


# ------------------------------------------------------------------------------------ properties
@pytest.mark.parametrize("name", sorted(ORDER_FREE))
@QUICK
@given(seed=st.integers(0, 2**32 - 1))
def test_order_of_cases_does_not_matter(name, seed):
    cases = sample(name, seed)
    order = np.random.default_rng(seed).permutation(cases.shape[0])
    same(STATISTICS[name].call(cases[order], None), STATISTICS[name].call(cases, None))


@pytest.mark.parametrize("name", sorted(FREQUENCY_WEIGHTED))
@QUICK
@given(seed=st.integers(0, 2**32 - 1))
def test_weights_of_one_are_no_weights(name, seed):
    cases = sample(name, seed)
    same(STATISTICS[name].call(cases, np.ones(cases.shape[0])), STATISTICS[name].call(cases, None))


@pytest.mark.parametrize("name", sorted(FREQUENCY_WEIGHTED))
@QUICK
@given(seed=st.integers(0, 2**32 - 1))
def test_integer_weights_are_repetitions(name, seed):
    cases = sample(name, seed, most=25)
    weights = np.random.default_rng(seed).integers(1, 4, cases.shape[0])
    same(STATISTICS[name].call(cases, weights.astype(float)), STATISTICS[name].call(np.repeat(cases, weights, 0), None))


@pytest.mark.parametrize("name", sorted(SYMMETRIC))
@QUICK
@given(seed=st.integers(0, 2**32 - 1))
def test_annotators_are_interchangeable(name, seed):
    cases = sample(name, seed)
    order = np.random.default_rng(seed).permutation(cases.shape[1])
    same(STATISTICS[name].call(cases[:, order], None), STATISTICS[name].call(cases, None))


@pytest.mark.parametrize("name", sorted(INTERVALS))
@QUICK
@given(seed=st.integers(0, 2**32 - 1))
def test_intervals_hold_their_estimate_within_their_bounds(name, seed):
    member = STATISTICS[name]
    cases = sample(name, seed, most=60)
    low, high = member.interval(member.call(cases, None))
    estimate = member.estimate(cases)
    slack = 1 / 200 if name == "confidence_sequence" else 1e-12  # its bounds lie on a grid of 201 rates
    assert member.bounds[0] <= low <= estimate + slack and estimate - slack <= high <= member.bounds[1]


@pytest.mark.parametrize("name", sorted(BOUNDED_0_1))
@QUICK
@given(seed=st.integers(0, 2**32 - 1))
def test_bounded_statistics_stay_in_0_1(name, seed):
    out = STATISTICS[name].call(sample(name, seed), None)
    out = out[np.isfinite(out)]
    assert np.all((out >= 0) & (out <= 1))


@pytest.mark.parametrize("name", sorted(AGREEMENT))
@QUICK
@given(seed=st.integers(0, 2**32 - 1))
def test_agreement_is_at_most_one_and_one_when_annotators_agree(name, seed):
    cases = sample(name, seed)
    assert STATISTICS[name].call(cases, None)[0] <= 1 + 1e-12
    unanimous = np.where(np.isnan(cases), np.nan, np.fmax.reduce(cases, axis=1)[:, None])
    unanimous[:2] = [[0, 0, 0], [2, 2, 2]]  # two values at least: agreement is defined
    assert STATISTICS[name].call(unanimous, None)[0] == pytest.approx(1.0)


@pytest.mark.parametrize("name", sorted(CURVES))
@QUICK
@given(seed=st.integers(0, 2**32 - 1))
def test_a_perfect_judge_makes_no_error_at_its_threshold(name, seed):
    rng = np.random.default_rng(seed)
    human = np.r_[True, False, rng.random(int(rng.integers(0, 50))) < 0.5]
    score = np.where(human, rng.uniform(0.5, 1, human.size), rng.uniform(0, 0.5, human.size))
    curve = cs.error_curve(human, score)
    at = np.searchsorted(curve.thresholds, score[human].min())
    assert curve.false_pass[at] == 0 and curve.false_fail[at] == 0
    assert [r[at] for r in curve.rates()] == [0.0, 0.0]


@pytest.mark.parametrize("name", sorted(CURVES))
def test_a_coin_flip_judge_lies_near_the_diagonal(name):
    rng = np.random.default_rng(7)
    human, score = rng.random(4000) < 0.4, rng.random(4000)
    false_pass_rate, false_fail_rate = cs.error_curve(human, score).rates()
    # a judge that ignores the case passes fails as often as passes: fpr + fnr = 1 up to sampling noise
    assert np.max(np.abs(false_pass_rate + false_fail_rate - 1)) < 0.06


@pytest.mark.parametrize("name", sorted(DETECTORS))
@QUICK
@given(seed=st.integers(0, 2**32 - 1))
def test_no_change_never_alarms(name, seed):
    n = int(np.random.default_rng(seed).integers(1, 300))
    found = cs.e_detector(np.full(n, -0.05), np.full(n, -0.05), alpha=0.05)  # no false pass at all
    assert found.alarm is None and np.all(found.statistic <= 1 + 1e-12)


@pytest.mark.parametrize(
    "name, parameter, value",
    [(name, p, v) for name, member in sorted(STATISTICS.items()) for p, v in member.refused],
    ids=[f"{name}-{p}-{i}" for name, member in sorted(STATISTICS.items()) for i, (p, _) in enumerate(member.refused)],
)
def test_invalid_input_is_refused_naming_the_parameter(name, parameter, value):
    member = STATISTICS[name]
    member.function(**member.valid)  # the call it changes is accepted
    with pytest.raises(ValueError) as raised:
        member.function(**(member.valid | member.extra.get(parameter, {}) | {parameter: value}))
    assert_clear_error(raised.value, parameter)
    assert str(raised.value).startswith(parameter), str(raised.value)
