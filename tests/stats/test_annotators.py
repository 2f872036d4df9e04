"""Annotator agreement: published values, reference implementations, and the campaign-level figures."""

import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from calibrate.analysis.annotators import annotator_agreement
from calibrate.campaign import Campaign
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


def campaign(rows, scale="binary", **metric):
    frame = pd.DataFrame(rows, columns=["case_id", "rater", "value"]).assign(metric="m", rater_kind="human")
    return Campaign.from_frames({"name": "n", "metrics": {"m": {"scale": scale, **metric}}}, frame)


def test_two_annotators_and_a_contrarian_among_three():
    rng = np.random.default_rng(3)
    truth = rng.integers(0, 2, 120)
    rows = []
    for i, t in enumerate(truth):
        rows += [(f"c{i}", "ann", t), (f"c{i}", "bea", t if rng.random() < 0.9 else 1 - t)]
        if i % 2 == 0:
            rows.append((f"c{i}", "cid", 1 - t if rng.random() < 0.8 else t))  # reads the guideline backwards
    two = annotator_agreement(campaign([r for r in rows if r[1] != "cid"]), "m", n_boot=300)
    a, b = (np.array([v for c, r, v in rows if r == name], float) for name in ("ann", "bea"))
    assert two["cohen_kappa"]["estimate"] == pytest.approx(cohen_kappa(a, b))
    assert two["percent_agreement"]["estimate"] == pytest.approx(np.mean(a == b))
    assert two["cohen_kappa"]["ci_low"] < two["cohen_kappa"]["estimate"] < two["cohen_kappa"]["ci_high"]
    assert "BCa" in two["cohen_kappa"]["ci_method"]
    three = annotator_agreement(campaign(rows), "m", n_boot=300)
    assert "fleiss_kappa" in three and three["n_annotators"] == 3
    per = {p["annotator"]: p for p in three["per_annotator"]}
    assert per["cid"]["kappa_with_others"]["estimate"] < 0 < per["bea"]["kappa_with_others"]["estimate"]
    assert per["cid"]["n_items"] == 60


def test_continuous_metrics_compare_pass_fail_and_alpha_uses_the_values():
    rows = [("a", "x", 0.9), ("a", "y", 0.8), ("b", "x", 0.1), ("b", "y", 0.3), ("c", "x", 0.6), ("c", "y", 0.2)]
    doc = annotator_agreement(campaign(rows, "continuous", human_pass=0.5), "m", n_boot=0)
    assert doc["percent_agreement"]["estimate"] == pytest.approx(2 / 3)
    assert doc["alpha"]["level"] == "interval" and "pass/fail at human_pass = 0.5" in doc["basis"]


def test_too_few_shared_cases_say_so():
    doc = annotator_agreement(campaign([("a", "x", 1), ("a", "y", 1), ("b", "x", 0)]), "m", n_boot=0)
    assert "reason" in doc and doc["n_items_multiply_labelled"] == 1


def test_the_report_shows_the_human_ceiling_beside_the_judges(small_campaign, tmp_path):
    from calibrate import compute_stats, load_campaign, write_report

    c = load_campaign(small_campaign)
    stats = compute_stats(c, n_boot=100)
    ceiling = stats["metrics"][0]["annotators"]
    assert ceiling["n_items_multiply_labelled"] == 12 and ceiling["cohen_kappa"]["estimate"] == 1.0
    paths = write_report(stats, [], tmp_path / "report", cases=c.cases)
    html = paths["html"].read_text()
    assert "annotators with each other" in html and "<h3>Annotator agreement</h3>" in html
    assert "<td>ann2</td>" in html
    assert "**annotators with each other** (human ceiling)" in paths["md"].read_text()


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


def test_annotator_agreement_is_weighted_by_the_sample_design():
    # 40 cases, two annotators: they agree on the 10 "easy" cases and on half of the 30 "hard" ones;
    # a targeted sample drew the hard ones with probability 0.6, the easy ones with 0.1
    cases = [f"c{i:02d}" for i in range(40)]
    easy = cases[:10]
    x = [1] * 40
    y = [1 if c in easy or i % 2 else 0 for i, c in enumerate(cases)]
    r = pd.DataFrame(
        {"case_id": cases * 2, "metric": "f", "rater": ["x"] * 40 + ["y"] * 40, "rater_kind": "human", "value": x + y}
    )
    c = Campaign.from_frames({"name": "n", "metrics": {"f": {"scale": "binary"}}}, r, [{"case_id": k} for k in cases])
    unweighted = annotator_agreement(c, "f", n_boot=0)["percent_agreement"]["estimate"]
    c.samples["t"] = {
        "design": {"strategy": "threshold"},
        "case_ids": cases,
        "strata": ["easy" if k in easy else "hard" for k in cases],
        "inclusion_probability": np.array([0.1 if k in easy else 0.6 for k in cases]),
    }
    doc = annotator_agreement(c, "f", n_boot=200)
    assert unweighted == pytest.approx(25 / 40) and doc["weighted"]
    # population: 100 easy cases (all agree) and 50 hard ones (half agree)
    assert doc["percent_agreement"]["estimate"] == pytest.approx((100 + 25) / 150)
    assert (
        doc["percent_agreement"]["ci_low"] < doc["percent_agreement"]["estimate"] < doc["percent_agreement"]["ci_high"]
    )


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
