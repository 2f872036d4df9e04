"""annotator_agreement: the campaign-level figures of the annotators with each other (the statistics
themselves are tested in tests/stats/test_annotators.py); at engine speed, the figures of the previous
implementation (the reference libraries called once per resample) on a fixed campaign, without a library
call per resample, and computed once per command."""

import numpy as np
import pandas as pd
import pytest

from calibrate.analysis import annotators as analysis_annotators
from calibrate.analysis.annotators import annotator_agreement
from calibrate.campaign import Campaign, campaign_from_frames
from calibrate.campaign.reference import computed_once
from calibrate.stats.annotators import cohen_kappa


def panel_campaign(design: bool) -> Campaign:
    """60 cases; three annotators on an ordinal 0-3 metric (one reads the guideline a level higher, a
    sixth of the labels missing), two on a binary metric, three on a continuous one; with ``design``,
    every case drawn by a targeted sample (weighted, stratified)."""
    rng = np.random.default_rng(26)
    truth = rng.choice(4, size=60, p=[0.3, 0.3, 0.25, 0.15])
    rows = []
    for i, t in enumerate(truth):
        case = f"c{i:02d}"
        for rater, shift in (("ann", 0), ("bo", 0), ("cy", 1)):
            if rng.random() < 1 / 6:
                continue
            label = int(np.clip(t + shift + (rng.random() < 0.2) * rng.choice([-1, 1]), 0, 3))
            rows.append((case, "relevance", rater, float(label)))
        for rater in ("ann", "bo"):
            rows.append((case, "faithful", rater, float((t >= 2) != (rng.random() < 0.15))))
        for rater in ("ann", "bo", "cy"):
            if rng.random() < 0.9:
                rows.append((case, "fluency", rater, round(float(np.clip(t / 3 + rng.normal(0, 0.15), 0, 1)), 2)))
    frame = pd.DataFrame(rows, columns=["case_id", "metric", "rater", "value"]).assign(rater_kind="human")
    cases = [f"c{i:02d}" for i in range(60)]
    c = campaign_from_frames(
        {
            "name": "panel",
            "metrics": {
                "relevance": {"scale": "ordinal", "levels": [0, 1, 2, 3], "human_pass": 2},
                "faithful": {"scale": "binary"},
                "fluency": {"scale": "continuous", "range": [0, 1], "human_pass": 0.5},
            },
        },
        frame,
        [{"case_id": k} for k in cases],
    )
    if design:
        near = truth >= 2
        c.samples["t"] = {
            "design": {"strategy": "threshold"},
            "case_ids": cases,
            "strata": ["near" if k else "far" for k in near],
            "inclusion_probability": np.where(near, 0.6, 0.2),
        }
    return c


# annotator_agreement(panel_campaign(...), metric, n_boot=400, seed=7) as the previous implementation gave it
# (calibrate at 3e56a32, calling scikit-learn and krippendorff once per resample): estimate, ci_low, ci_high
PREVIOUS = {
    "relevance": {
        "percent_agreement": (0.3859649122807017, 0.2982456140350877, 0.4882838964016377),
        "alpha": (0.5973960606533157, 0.46328522835659086, 0.7232598043038336),
        "fleiss_kappa": (0.16243591899384724, 0.04443290559839969, 0.30922276270502763),
        "kappa_with_others/ann": (0.7400346620450606, 0.594306049822064, 0.8689540236334674),
        "kappa_with_others/bo": (0.7887323943661972, 0.6471289919553871, 0.8766827482873105),
        "kappa_with_others/cy": (0.5151382185168933, 0.39457598767196017, 0.6333882042510954),
    },
    "faithful": {
        "percent_agreement": (0.65, 0.5254480871417109, 0.7666666666666667),
        "alpha": (0.30564045568213394, 0.06783293679733646, 0.5447693585420674),
        "cohen_kappa": (0.3152173913043478, 0.08813981033734382, 0.5393558869051731),
        "kappa_with_others/ann": (0.3152173913043478, 0.08813981033734382, 0.5393558869051731),
        "kappa_with_others/bo": (0.3152173913043478, 0.08813981033734382, 0.5393558869051731),
    },
    "fluency": {
        "percent_agreement": (0.8424242424242425, 0.7457783117051231, 0.915151515151515),
        "alpha": (0.8743112732825337, 0.8095899204360426, 0.9229301379887217),
        "fleiss_kappa": (0.6753495360236935, 0.4887060911360482, 0.8282305053771277),
        "kappa_with_others/ann": (0.7863247863247863, 0.5330251509508208, 0.9188994354442124),
        "kappa_with_others/bo": (0.7272727272727273, 0.5045871559633027, 0.874427993151746),
        "kappa_with_others/cy": (0.7894736842105263, 0.6175196502614269, 0.9166666666666666),
    },
    "relevance/weighted": {
        "percent_agreement": (0.3197831978319783, 0.2384823848238482, 0.40650406504065034),
        "alpha": (0.4085299741534977, 0.2567902450785231, 0.531329446200043),
        "fleiss_kappa": (0.04824081501732418, -0.06788005183805237, 0.17721839199980277),
        "kappa_with_others/ann": (0.6446049871824749, 0.4099720555877567, 0.795384623064665),
        "kappa_with_others/bo": (0.7108781687881057, 0.5053846555675646, 0.8251964033337469),
        "kappa_with_others/cy": (0.4072840035628278, 0.30666953669346153, 0.5206891947435444),
    },
    "faithful/weighted": {
        "percent_agreement": (0.623076923076923, 0.4846153846153846, 0.7384615384615385),
        "alpha": (0.17850098619329435, -0.0495676124511403, 0.4387668441909856),
        "cohen_kappa": (0.18687771253510344, -0.035379898453607866, 0.420339125505955),
        "kappa_with_others/ann": (0.18687771253510344, -0.035379898453607866, 0.420339125505955),
        "kappa_with_others/bo": (0.18687771253510355, -0.03537989845360783, 0.42033912550595487),
    },
    "fluency/weighted": {
        "percent_agreement": (0.859943977591036, 0.7647058823529412, 0.9243697478991596),
        "alpha": (0.8087507362010793, 0.7073135634578146, 0.8737928155090968),
        "fleiss_kappa": (0.5995451358234598, 0.3988080592900844, 0.7806037015152829),
        "kappa_with_others/ann": (0.7818696883852692, 0.4992112375086485, 0.9364161849710982),
        "kappa_with_others/bo": (0.7007837713231906, 0.47787610619469023, 0.8796555629492511),
        "kappa_with_others/cy": (0.7023933402705516, 0.4618369987063389, 0.9121621621621622),
    },
}


def figures(doc) -> dict:
    found = {key: doc[key] for key in ("percent_agreement", "alpha", "cohen_kappa", "fleiss_kappa") if key in doc}
    found |= {f"kappa_with_others/{p['annotator']}": p["kappa_with_others"] for p in doc["per_annotator"]}
    return {key: (f["estimate"], f["ci_low"], f["ci_high"]) for key, f in found.items()}


@pytest.mark.parametrize("design", [False, True])
@pytest.mark.parametrize("metric", ["relevance", "faithful", "fluency"])
def test_same_seed_same_figures_as_the_previous_implementation(metric, design):
    doc = annotator_agreement(panel_campaign(design), metric, n_boot=400, seed=7)
    expected = PREVIOUS[metric + ("/weighted" if design else "")]
    got = figures(doc)
    assert sorted(got) == sorted(expected)
    for key, values in expected.items():
        assert got[key] == pytest.approx(values, abs=1e-12, rel=1e-12), key
    assert doc.get("weighted", False) == design
    assert {f["ci_method"] for f in [doc["percent_agreement"], doc["alpha"]]} == {
        "BCa bootstrap (400 resamples of cases)"
    }


def test_no_library_call_per_resample(monkeypatch):
    """scikit-learn and krippendorff check the full-sample figures; the resamples are the engine's (a
    replicate within rounding of the estimate is settled by the reference: a few)."""
    import krippendorff
    import sklearn.metrics

    calls = []
    kappa, alpha = sklearn.metrics.cohen_kappa_score, krippendorff.alpha
    monkeypatch.setattr(sklearn.metrics, "cohen_kappa_score", lambda *a, **k: calls.append("kappa") or kappa(*a, **k))
    monkeypatch.setattr(krippendorff, "alpha", lambda *a, **k: calls.append("alpha") or alpha(*a, **k))
    campaign = panel_campaign(False)
    for metric in ("relevance", "faithful"):
        annotator_agreement(campaign, metric, n_boot=400, seed=7)
    # three figures per annotator and panel, on 400 resamples and up to 60 leave-one-out sets each:
    # the reference once per resample made thousands of calls
    assert 0 < len(calls) < 60, len(calls)


def test_computed_once_per_command(monkeypatch):
    """Within one command (stats, then the thresholds' verdicts, say), a metric's agreement is computed
    once; every caller gets its own copy."""
    computed = []
    original = analysis_annotators.agreement_intervals
    monkeypatch.setattr(
        analysis_annotators, "agreement_intervals", lambda *a, **k: computed.append(1) or original(*a, **k)
    )
    campaign = panel_campaign(False)
    with computed_once():
        first = annotator_agreement(campaign, "relevance", n_boot=100, seed=1)
        first["percent_agreement"]["estimate"] = -1.0  # a caller changing its copy changes no other
        second = annotator_agreement(campaign, "relevance", n_boot=100, seed=1)
        assert len(computed) == 4  # the panel's figures, and each of three annotators against the others
        assert second["percent_agreement"]["estimate"] == pytest.approx(PREVIOUS["relevance"]["percent_agreement"][0])
        annotator_agreement(campaign, "relevance", n_boot=100, seed=2)  # another seed: other figures
        assert len(computed) == 8
    annotator_agreement(campaign, "relevance", n_boot=100, seed=1)  # outside a command: afresh
    assert len(computed) == 12


def campaign(rows, scale="binary", **metric):
    frame = pd.DataFrame(rows, columns=["case_id", "rater", "value"]).assign(metric="m", rater_kind="human")
    return campaign_from_frames({"name": "n", "metrics": {"m": {"scale": scale, **metric}}}, frame)


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
    from calibrate import ReportDocuments, compute_stats, load_campaign, write_report

    c = load_campaign(small_campaign)
    stats = compute_stats(c, n_boot=100)
    ceiling = stats["metrics"][0]["annotators"]
    assert ceiling["n_items_multiply_labelled"] == 12 and ceiling["cohen_kappa"]["estimate"] == 1.0
    paths = write_report(ReportDocuments(stats, [], cases=c.cases), tmp_path / "report")
    html = paths["html"].read_text()
    assert "annotators with each other" in html and "<h3>Annotator agreement</h3>" in html
    assert "<td>ann2</td>" in html
    assert "**annotators with each other** (human ceiling)" in paths["md"].read_text()


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
    c = campaign_from_frames({"name": "n", "metrics": {"f": {"scale": "binary"}}}, r, [{"case_id": k} for k in cases])
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
