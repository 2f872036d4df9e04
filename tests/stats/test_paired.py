"""The vectorised engine against scipy, scikit-learn and krippendorff, published examples, properties."""

import warnings

import krippendorff
import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from scipy import stats
from sklearn.metrics import balanced_accuracy_score, cohen_kappa_score, roc_auc_score

from calibrate.stats.bootstrap import case_counts
from calibrate.stats.paired import PairedScores

LEVELS = [0.0, 1.0, 2.0, 3.0]


def ordinal_pairs(min_size=2, max_size=200):
    return st.integers(min_size, max_size).flatmap(
        lambda n: st.tuples(
            st.lists(st.sampled_from(LEVELS), min_size=n, max_size=n),
            st.lists(st.sampled_from(LEVELS), min_size=n, max_size=n),
        )
    )


def continuous_pairs(min_size=2, max_size=200):
    return st.integers(min_size, max_size).flatmap(
        lambda n: st.tuples(
            st.lists(st.sampled_from(LEVELS), min_size=n, max_size=n),
            st.lists(st.floats(0, 1).map(lambda v: round(v, 2)), min_size=n, max_size=n),
        )
    )


def close(a, b):
    return (np.isnan(a) and np.isnan(b)) or a == pytest.approx(b, abs=1e-9)


@settings(max_examples=150, deadline=None)
@given(ordinal_pairs())
def test_on_scale_statistics_match_the_libraries(pair):
    human, judge = map(np.array, pair)
    p = PairedScores(human, judge, human_pass=2, levels=LEVELS)
    T = p.full
    with warnings.catch_warnings(action="ignore"):
        assert close(p.spearman(T)[0], stats.spearmanr(human, judge).statistic)
        assert close(p.kendall(T)[0], stats.kendalltau(human, judge).statistic)
        assert close(p.kappa(T)[0], cohen_kappa_score(human, judge, labels=LEVELS))
        assert close(p.kappa(T, "quadratic")[0], cohen_kappa_score(human, judge, labels=LEVELS, weights="quadratic"))
        for level in ("nominal", "ordinal", "interval"):
            data = np.vstack([human, judge])
            if np.unique(data).size > 1:
                assert close(
                    p.alpha(T, level)[0], krippendorff.alpha(data, level_of_measurement=level, value_domain=LEVELS)
                )


@settings(max_examples=150, deadline=None)
@given(continuous_pairs(), st.integers(0, 2**31 - 1))
def test_continuous_scores_and_resamples_match_the_libraries(pair, seed):
    human, judge = map(np.array, pair)
    p = PairedScores(human, judge, human_pass=2)
    passes = human >= 2
    rng = np.random.default_rng(seed)
    indices = rng.integers(0, human.size, (3, human.size))
    tables = p.tables(case_counts(indices, human.size))
    with warnings.catch_warnings(action="ignore"):
        for row, idx in enumerate(indices):
            T = tables[row : row + 1]
            h, j = human[idx], judge[idx]
            assert close(p.spearman(T)[0], stats.spearmanr(h, j).statistic)
            assert close(p.kendall(T)[0], stats.kendalltau(h, j).statistic)
            if 0 < (h >= 2).sum() < h.size:
                assert close(p.auc(T)[0], roc_auc_score(h >= 2, j))
                decision = p.decision_stats(T, p.m // 2)
                judged = j >= p.j_values[p.m // 2]
                assert close(decision["balanced_accuracy"][0], balanced_accuracy_score(h >= 2, judged))
                assert close(decision["kappa"][0], cohen_kappa_score(h >= 2, judged, labels=[False, True]))
            else:
                assert np.isnan(p.auc(T)[0])
    assert passes.size == human.size


@settings(max_examples=60, deadline=None)
@given(
    st.integers(3, 80).flatmap(
        lambda n: st.tuples(
            st.lists(st.floats(-5, 5).map(lambda v: round(v, 1)), min_size=n, max_size=n),
            st.lists(st.floats(-5, 5).map(lambda v: round(v, 1)), min_size=n, max_size=n),
        )
    )
)
def test_continuous_humans_many_levels_match_the_libraries(pair):
    human, judge = map(np.array, pair)
    data = np.vstack([human, judge])
    assume(np.unique(data).size > 1)
    p = PairedScores(human, judge, human_pass=0.0)
    assert close(p.alpha(p.full, "interval")[0], krippendorff.alpha(data, level_of_measurement="interval"))
    with warnings.catch_warnings(action="ignore"):
        assert close(p.spearman(p.full)[0], stats.spearmanr(human, judge).statistic)
        assert close(p.kendall(p.full)[0], stats.kendalltau(human, judge).statistic)
        if 0 < (human >= 0).sum() < human.size:
            assert close(p.auc(p.full)[0], roc_auc_score(human >= 0, judge))


# ------------------------------------------------------------------------------ published examples
def test_krippendorff_two_coder_binary_example():
    """Krippendorff (2011), "Computing Krippendorff's alpha-reliability", section C: two observers,
    ten units, binary data; alpha = 0.095."""
    a = [0, 1, 0, 0, 0, 0, 0, 0, 1, 0]
    b = [1, 1, 1, 0, 0, 1, 0, 0, 0, 0]
    p = PairedScores(a, b, human_pass=1, levels=[0, 1])
    assert p.alpha(p.full, "nominal")[0] == pytest.approx(0.095, abs=5e-4)


def test_artstein_poesio_kappa_example():
    """Artstein & Poesio (2008), "Inter-coder agreement for computational linguistics", the dialogue-act
    example of section 2.4 (Stat / IReq / Chck, 100 utterances): observed agreement 0.88, kappa 0.8013,
    pi 0.7995 (alpha with two coders is pi corrected for the sample size: 0.8005)."""
    table = {(0, 0): 46, (0, 1): 6, (1, 1): 32, (2, 1): 6, (2, 2): 10}  # (coder B, coder A): count
    b = np.repeat([k[0] for k in table], list(table.values())).astype(float)
    a = np.repeat([k[1] for k in table], list(table.values())).astype(float)
    p = PairedScores(b, a, human_pass=1, levels=[0, 1, 2])
    assert (a == b).mean() == pytest.approx(0.88)
    assert p.kappa(p.full)[0] == pytest.approx(0.8013, abs=5e-5)
    assert p.alpha(p.full, "nominal")[0] == pytest.approx(1 - 199 / 200 * 0.12 / (1 - 0.4014), abs=5e-5)


def test_spearman_textbook_example():
    """A worked example with ties: scipy's documentation (x = [1, 2, 3, 4, 5], y = [5, 6, 7, 8, 7])
    gives rho = 0.8207826816681233."""
    p = PairedScores([1, 2, 3, 4, 5], [5, 6, 7, 8, 7], human_pass=3)
    assert p.spearman(p.full)[0] == pytest.approx(0.8207826816681233, abs=1e-12)


# ------------------------------------------------------------------------------------- properties
@settings(max_examples=80, deadline=None)
@given(continuous_pairs(min_size=5), st.randoms(use_true_random=False))
def test_statistics_do_not_depend_on_case_order(pair, random):
    human, judge = map(np.array, pair)
    order = list(range(human.size))
    random.shuffle(order)
    a = PairedScores(human, judge, human_pass=2)
    b = PairedScores(human[order], judge[order], human_pass=2)
    for name in ("spearman", "kendall", "auc"):
        assert close(getattr(a, name)(a.full)[0], getattr(b, name)(b.full)[0])


@settings(max_examples=80, deadline=None)
@given(ordinal_pairs(min_size=3))
def test_correlations_and_kappa_are_symmetric(pair):
    human, judge = map(np.array, pair)
    a = PairedScores(human, judge, human_pass=2, levels=LEVELS)
    b = PairedScores(judge, human, human_pass=2, levels=LEVELS)
    for name in ("spearman", "kendall", "kappa"):
        assert close(getattr(a, name)(a.full)[0], getattr(b, name)(b.full)[0])
    assert close(a.alpha(a.full, "ordinal")[0], b.alpha(b.full, "ordinal")[0])


@settings(max_examples=80, deadline=None)
@given(continuous_pairs(min_size=2))
def test_error_rates_lie_in_unit_interval_and_are_monotone(pair):
    human, judge = map(np.array, pair)
    p = PairedScores(human, judge, human_pass=2)
    counts = p.error_counts(p.full)
    fp, ff = counts["false_pass"][0], counts["false_fail"][0]
    assert np.all(np.diff(fp) <= 0) and np.all(np.diff(ff) >= 0)
    assert fp[-1] == 0 and ff[0] == 0
    assert 0 <= fp.max() <= counts["n_fail"][0] and 0 <= ff.max() <= counts["n_pass"][0]


def test_undefined_statistics_are_nan_not_errors():
    p = PairedScores([1, 1, 1, 1], [0.2, 0.4, 0.6, 0.8], human_pass=1)
    assert np.isnan(p.spearman(p.full)[0]) and np.isnan(p.auc(p.full)[0]) and np.isnan(p.kendall(p.full)[0])


def test_grouped_jackknife_for_many_cells():
    rng = np.random.default_rng(0)
    human = rng.integers(0, 4, 5000).astype(float)
    judge = rng.random(5000)
    p = PairedScores(human, judge, human_pass=2)
    summary, weights = p.jackknife(seed=1)
    assert summary.n.shape == (200,) and np.allclose(summary.n, 5000 - 25)
    assert weights.sum() == 200 and summary.T is None


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("case_groups", [False, True])
def test_the_jackknife_in_batches_is_the_jackknife_at_once(weighted, case_groups):
    """Batches of a few groups (what bounds a million cases' memory) leave out the same groups."""
    rng = np.random.default_rng(2)
    human, judge = rng.integers(0, 4, 3000).astype(float), rng.random(3000)
    weights = rng.choice([0.5, 2.0], 3000) if weighted else None
    p = PairedScores(human, judge, human_pass=2, weights=weights)
    whole, weights_whole = p.jackknife(seed=4, case_groups=case_groups)
    batches, weights_batched = p.jackknife_batches(seed=4, case_groups=case_groups, rows=7)
    parts = list(batches)
    assert [b.n.size for b in parts] == [7] * 28 + [4]
    assert np.array_equal(weights_whole, weights_batched)
    for statistic in (p.spearman, p.kendall, p.auc):
        assert np.array_equal(np.concatenate([statistic(b) for b in parts]), statistic(whole))
    assert np.array_equal(np.concatenate([b.cum_fails for b in parts]), whole.cum_fails)


# ---------------------------------------------------------------------------------- weighted cases
def _all_statistics(p, T, t):
    with warnings.catch_warnings(action="ignore"):
        out = {
            "spearman": p.spearman(T),
            "kendall": p.kendall(T),
            "auc": p.auc(T),
            "kappa": p.kappa(T),
            "kappa_quadratic": p.kappa(T, "quadratic"),
            **{f"alpha_{lv}": p.alpha(T, lv) for lv in ("nominal", "ordinal", "interval")},
            **{k: v for k, v in p.decision_stats(T, t).items()},
        }
    return {k: np.asarray(v, dtype=float) for k, v in out.items()}


@settings(max_examples=100, deadline=None)
@given(ordinal_pairs(max_size=60), st.data())
def test_whole_number_weights_equal_repeating_the_cases(pair, data):
    """A case of weight k is k copies of it: every statistic, the full table, resamples, the jackknife."""
    human, judge = map(np.array, pair)
    weights = np.array(data.draw(st.lists(st.integers(1, 4), min_size=human.size, max_size=human.size)))
    assume(weights.max() > 1)
    weighted = PairedScores(human, judge, human_pass=2, levels=LEVELS, weights=weights)
    expanded = PairedScores(np.repeat(human, weights), np.repeat(judge, weights), human_pass=2, levels=LEVELS)
    t = data.draw(st.integers(0, expanded.m))
    a, b = _all_statistics(weighted, weighted.full, t), _all_statistics(expanded, expanded.full, t)
    for key in a:
        assert np.allclose(a[key], b[key], equal_nan=True, atol=1e-9), key
    # resamples: counts of the weighted cases, gathered with their weights, against the expanded counts
    counts = case_counts(np.random.default_rng(0).integers(0, human.size, (4, human.size)), human.size)
    a = _all_statistics(weighted, weighted.tables(counts), t)
    b = _all_statistics(expanded, expanded.tables(np.repeat(counts, weights, axis=1)), t)
    from_counts = weighted.summarize_counts(counts)
    for key in a:
        assert np.allclose(a[key], b[key], equal_nan=True, atol=1e-6), key
    with warnings.catch_warnings(action="ignore"):
        assert np.allclose(weighted.spearman(from_counts), a["spearman"], equal_nan=True, atol=1e-9)


def test_the_weighted_jackknife_leaves_out_each_case_once():
    rng = np.random.default_rng(3)
    human, judge = rng.integers(0, 4, 40).astype(float), rng.random(40).round(1)
    weights = rng.choice([0.5, 1.5, 2.0], 40)
    p = PairedScores(human, judge, human_pass=2, weights=weights)
    summary, counts = p.jackknife()
    assert counts.sum() == 40
    direct = []
    for i in range(40):
        keep = np.arange(40) != i
        direct.append(
            PairedScores(human[keep], judge[keep], human_pass=2, weights=weights[keep]).spearman(
                PairedScores(human[keep], judge[keep], human_pass=2, weights=weights[keep]).full
            )[0]
        )
    assert sorted(np.repeat(p.spearman(summary), counts.astype(int))) == pytest.approx(sorted(direct), abs=1e-12)


def test_weights_are_checked_and_all_ones_is_unweighted():
    with pytest.raises(ValueError, match="positive"):
        PairedScores([0, 1], [0.2, 0.4], human_pass=1, weights=[1, 0])
    assert PairedScores([0, 1], [0.2, 0.4], human_pass=1, weights=[1, 1]).weights is None
