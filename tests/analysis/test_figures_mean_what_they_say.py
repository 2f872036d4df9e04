"""Numbers that agree with themselves: no zero-width interval passed off as one, one number of resamples
everywhere, tiny samples said to be tiny, repeats never guessed."""

import inspect

import numpy as np
import pandas as pd
import pytest

from calibrate import Campaign, campaign_from_frames, compute_stats
from calibrate.report.format import fmt_estimate
from tests.conftest import run_cli, write_campaign


def frames(human, judges: dict, run_ids: dict | None = None) -> Campaign:
    ids = [f"c{i:03d}" for i in range(len(human))]
    rows = [(c, "m", "ann", "human", h, "") for c, h in zip(ids, human)]
    for name, values in judges.items():
        rows += [(c, "m", name, "judge", v, (run_ids or {}).get(name, "")) for c, v in zip(ids, values)]
    frame = pd.DataFrame(rows, columns=["case_id", "metric", "rater", "rater_kind", "value", "run_id"])
    return campaign_from_frames({"name": "t", "metrics": {"m": {"scale": "binary"}}}, frame)


def test_seven_perfect_cases_give_no_interval_rather_than_a_zero_width_one():
    """n = 7 gave 1.000 [1.000, 1.000] for Spearman, AUC and kappa."""
    human = [1, 0, 1, 1, 0, 0, 1]
    judge = compute_stats(frames(human, {"j": human}), n_boot=200)["metrics"][0]["judges"][0]
    for key in ("spearman", "auc", "kappa", "pass_kappa"):
        figure = judge[key]
        assert figure["estimate"] == pytest.approx(1.0) and figure["ci_low"] is None and figure["ci_reason"], key
        assert fmt_estimate(figure) == "1.000 [no interval]"
    # the bound a decision may read still exists, and says how little seven cases show
    assert judge["kappa"]["lower_bound"] < 0.5


def test_one_number_of_resamples_for_every_command():
    from calibrate.analysis.agreement import compute_stats as stats
    from calibrate.analysis.annotators import annotator_agreement
    from calibrate.analysis.recommendations import recommend_thresholds
    from calibrate.analysis.repeatability import repeatability
    from calibrate.review.audit import audit_judges
    from calibrate.review.gate import run_gate
    from calibrate.stats import N_BOOT

    for function in (stats, recommend_thresholds, annotator_agreement, audit_judges, run_gate, repeatability):
        assert inspect.signature(function).parameters["n_boot"].default == N_BOOT, function.__name__
    for command in ("stats", "thresholds", "audit", "gate", "report", "repeatability"):
        shown = run_cli(command, "--help").stdout
        assert f"default: {N_BOOT}" in " ".join(shown.split()), command


def test_the_audit_prints_how_its_intervals_were_made(tmp_path):
    rng = np.random.default_rng(0)
    n = 60
    human = (rng.random(n) < 0.5).astype(int)
    ids = [f"c{i:03d}" for i in range(n)]
    frame = pd.DataFrame(
        {
            "case_id": ids * 3,
            "metric": "m",
            "rater": ["ann"] * n + ["old"] * n + ["new"] * n,
            "rater_kind": ["human"] * n + ["judge"] * 2 * n,
            "value": np.r_[human, human * 0.6 + rng.random(n) * 0.4, rng.random(n)],
        }
    )
    folder = write_campaign(tmp_path / "c", 'name = "a"\n[metrics.m]\nscale = "binary"\n', frame)
    result = run_cli("audit", str(folder), "--metric", "m", "--old", "old", "--new", "new")
    assert "95% paired BCa intervals, 1000 resamples of cases" in " ".join(result.stdout.split()), result.stdout
    stats = run_cli("stats", str(folder))
    assert "95% intervals: BCa bootstrap, 1000 resamples of cases" in " ".join(stats.stdout.split())


def test_a_calibration_map_on_few_cases_says_so():
    from calibrate.analysis.calibration import fit_calibration

    rng = np.random.default_rng(1)
    human = (rng.random(18) < 0.5).astype(int)
    fit = fit_calibration(frames(human, {"j": human * 0.5 + rng.random(18) * 0.5}), metric="m", judge="j", n_folds=2)
    assert fit["warnings"] and "fitted on 18 labelled cases" in fit["warnings"][0]


def test_repeatability_never_takes_other_runs_for_repeats(tmp_path):
    """Runs not named repeat-N were silently ignored: {"judges": []}, exit 0."""
    from calibrate.analysis.repeatability import repeatability

    human = [1, 0, 1, 0, 1, 0]
    c = frames(human, {"j": [0.9, 0.1, 0.8, 0.2, 0.7, 0.3]}, {"j": "2025-06"})
    with pytest.raises(ValueError, match=r"no judge was scored with repeats.*j@2025-06, are not named repeat-N"):
        repeatability(c)
    ids = [f"c{i:03d}" for i in range(6)]
    frame = pd.DataFrame(
        {
            "case_id": ids * 2,
            "metric": "m",
            "rater": ["ann"] * 6 + ["j"] * 6,
            "rater_kind": ["human"] * 6 + ["judge"] * 6,
            "value": human + [0.9, 0.1, 0.8, 0.2, 0.7, 0.3],
            "run_id": [""] * 6 + ["2025-06"] * 6,
        }
    )
    folder = write_campaign(tmp_path / "c", 'name = "r"\n[metrics.m]\nscale = "binary"\n', frame)
    result = run_cli("repeatability", str(folder), "--json")
    assert result.returncode == 2 and "not named repeat-N" in result.stderr and not result.stdout
