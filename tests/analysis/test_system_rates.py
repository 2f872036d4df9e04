"""One version's pass rate, the difference of two and the labels a width needs
(calibrate/analysis/system_rates.py): each version's estimate is ppi_python's; the difference's interval
covers the truth about 95% of the time, with uniform and targeted audits; Holm over the differences'
p-values keeps the chance of any false "differs" among slices under 5%; the labels a width needs."""

from __future__ import annotations

import numpy as np
import pytest

from calibrate.analysis.system_rates import labels_for_width, rate_difference, version_rate


def population(rng, n: int, rate: float):
    """``n`` cases with a human pass rate near ``rate`` and a judge score that knows them fairly well."""
    y = rng.random(n) < rate
    score = np.clip(0.35 * y + rng.normal(0.3, 0.2, n), 0, 1)
    return y, score


def draw(rng, y, score, n: int, targeted: bool):
    """Label ``n`` cases: uniformly, or three times likelier where the judge's score is middling."""
    weight = np.where(np.abs(score - 0.45) < 0.15, 3.0, 1.0) if targeted else np.ones(y.size)
    pi = np.minimum(1, n * weight / weight.sum())
    labelled = rng.random(y.size) < pi
    return labelled, 1 / pi[labelled]


def test_each_version_is_ppi_pythons_estimate():
    from ppi_py import ppi_mean_ci, ppi_mean_pointestimate

    rng = np.random.default_rng(4)
    for targeted in (False, True):
        y, score = population(rng, 3000, 0.4)
        labelled, w = draw(rng, y, score, 200, targeted)
        ours = version_rate(y[labelled], score[labelled], score[~labelled], w, 0.95)["ppi"]
        w_norm = w / w.mean()
        point = float(ppi_mean_pointestimate(y[labelled].astype(float), score[labelled], score[~labelled], w=w_norm)[0])
        low, high = ppi_mean_ci(y[labelled].astype(float), score[labelled], score[~labelled], alpha=0.05, w=w_norm)
        assert ours["estimate"] == pytest.approx(point, abs=1e-9)
        assert (ours["ci_low"], ours["ci_high"]) == pytest.approx((float(low[0]), float(high[0])), abs=1e-9)


@pytest.mark.slow
@pytest.mark.parametrize("targeted", [False, True])
def test_the_difference_covers_the_truth_about_95_percent_of_the_time(targeted):
    rng = np.random.default_rng(10 + targeted)
    (ya, sa), (yb, sb) = population(rng, 3000, 0.40), population(rng, 3000, 0.48)
    truth = yb.mean() - ya.mean()
    covered, widths, human_widths = 0, [], []
    runs = 1000
    for _ in range(runs):
        sides = []
        for y, s in ((ya, sa), (yb, sb)):
            labelled, w = draw(rng, y, s, 150, targeted)
            sides.append(version_rate(y[labelled], s[labelled], s[~labelled], w, 0.95))
        d = rate_difference(sides[0], sides[1], "ppi", 0.95)
        covered += d["ci_low"] <= truth <= d["ci_high"]
        widths.append(d["ci_high"] - d["ci_low"])
        h = rate_difference(sides[0], sides[1], "humans_only", 0.95)
        human_widths.append(h["ci_high"] - h["ci_low"])
    coverage = covered / runs
    print(
        f"{'targeted' if targeted else 'uniform'} audit, 150 labels per version of 3,000: the difference's 95% "
        f"interval covered the truth in {coverage:.1%} of {runs}; mean width {np.mean(widths):.3f} (humans alone "
        f"{np.mean(human_widths):.3f})"
    )
    assert 0.93 <= coverage <= 0.97
    assert np.mean(widths) < np.mean(human_widths)


@pytest.mark.slow
def test_holm_keeps_any_false_difference_among_slices_under_five_percent():
    rng = np.random.default_rng(33)
    runs, any_false = 300, 0
    slices = 4
    for _ in range(runs):
        false = False
        results = []
        for _ in range(slices):
            sides = []
            for _ in range(2):
                y, s = population(rng, 1500, 0.5)
                labelled, w = draw(rng, y, s, 80, False)
                sides.append(version_rate(y[labelled], s[labelled], s[~labelled], w, 0.95))
            results.append(rate_difference(sides[0], sides[1], "ppi", 0.95)["p_value"])
        from statsmodels.stats.multitest import multipletests

        false = bool(multipletests(results, method="holm")[0].any())
        any_false += false
    print(f"{any_false} of {runs} sets of {slices} slices with no difference had one declared different after Holm")
    assert any_false / runs <= 0.065  # 5%, with the Monte Carlo error of 300 runs


def test_labels_for_width_plans_within_the_cases_there_are():
    v = {
        "n_labelled": 10,
        "n_unlabelled": 290,
        "ppi": {"var_labelled": 0.1, "var_unlabelled": 0.02},
        "humans_only": {"var_labelled": 0.25},
    }
    plan = labels_for_width(0.05, [v, v], 0.95)
    assert plan["with_the_judge"] is None and plan["humans_only"] is None
    assert "even labelling all 300 cases" in plan["reason"]
    wide = labels_for_width(0.2, [v, v], 0.95)
    assert (wide["with_the_judge"], wide["humans_only"]) == (83, 193)
