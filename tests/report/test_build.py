"""The report is computed once: one bootstrap per metric feeds both its statistics and its
recommendations, which equal what the separate functions give."""

import json

import calibrate
from calibrate.analysis import agreement


def test_the_report_bootstraps_each_metric_once_and_matches_the_separate_functions(monkeypatch, tmp_path):
    campaign = calibrate.load_campaign(calibrate.demo_campaign_path())
    calls = []
    original = agreement.bootstrap_runs

    def counted(runs, design, **kwargs):
        calls.append(kwargs["label"])
        return original(runs, design, **kwargs)

    monkeypatch.setattr(agreement, "bootstrap_runs", counted)
    documents, paths = calibrate.build_report(campaign, tmp_path / "out", n_boot=200, seed=3)
    assert calls == ["relevance"]  # stats and recommendations from the same resamples
    separate = agreement.recommend_thresholds(campaign, metric="relevance", n_boot=200, seed=3,
                                              rule=agreement.default_rule(campaign.metrics["relevance"]))
    assert json.dumps(documents["recommendations"]) == json.dumps(separate["recommendations"])
    stats = agreement.compute_stats(campaign, n_boot=200, seed=3)
    assert json.dumps(documents["stats"]["metrics"]) == json.dumps(stats["metrics"])
    written = json.loads(paths["json"].read_text())
    assert written["recommendations"] == json.loads(json.dumps(separate["recommendations"]))
