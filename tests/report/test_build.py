"""The report is computed once: one bootstrap per metric feeds both its statistics and its
recommendations, which equal what the separate functions give."""

import json

import calibrate
from calibrate.analysis import agreement, recommendations, rules


def test_the_report_bootstraps_each_metric_once_and_matches_the_separate_functions(monkeypatch, tmp_path):
    campaign = calibrate.load_campaign(calibrate.demo_campaign_path())
    calls = []
    original = agreement.bootstrap_runs

    def counted(runs, design, **kwargs):
        calls.append(kwargs["label"])
        return original(runs, design, **kwargs)

    monkeypatch.setattr(agreement, "bootstrap_runs", counted)
    monkeypatch.setattr(recommendations, "bootstrap_runs", counted)
    documents, paths = calibrate.build_report(campaign, tmp_path / "out", n_boot=200, seed=3)
    assert calls == ["relevance"]  # stats and recommendations from the same resamples
    separate = recommendations.recommend_thresholds(
        campaign, metric="relevance", n_boot=200, seed=3, rule=rules.default_rule(campaign.metrics["relevance"])
    )
    assert json.dumps([r.to_dict() for r in documents.recommendations]) == json.dumps(separate["recommendations"])
    assert documents.recommendations == tuple(separate.recommendations)
    stats = agreement.compute_stats(campaign, n_boot=200, seed=3)
    assert json.dumps(documents.stats["metrics"]) == json.dumps(stats["metrics"])
    written = json.loads(paths["json"].read_text())
    assert written["recommendations"] == json.loads(json.dumps(separate["recommendations"]))


# --------------------------------------------------------------------------------------- issue 26, item 8
def _timed(n: int = 80):
    """Every case labelled and timed: no baseline for any monitor, so no judge can be watched."""
    import numpy as np
    import pandas as pd

    from calibrate.campaign import campaign_from_frames

    rng = np.random.default_rng(0)
    human = (rng.random(n) < 0.5).astype(float)
    ids = [f"c{i:03d}" for i in range(n)]
    rows = pd.DataFrame(
        {
            "case_id": ids * 3,
            "metric": "m",
            "rater": ["ann"] * n + ["a"] * n + ["b"] * n,
            "rater_kind": ["human"] * n + ["judge"] * 2 * n,
            "value": np.r_[human, np.clip(human * 0.6 + rng.random(n) * 0.4, 0, 1), rng.random(n)],
        }
    )
    cases = [
        {"case_id": c, "input": f"q {c}", "metadata": {"time": f"2026-11-{1 + i % 28:02d}T10:00:00Z"}}
        for i, c in enumerate(ids)
    ]
    return campaign_from_frames(
        {"name": "timed", "metrics": {"m": {"scale": "binary", "max_false_pass": 0.1}}}, rows, cases
    )


def test_nothing_to_watch_is_one_line_not_one_per_judge(tmp_path):
    from calibrate.report.build import since_threshold

    campaign = _timed()
    since = since_threshold(campaign)
    assert since["monitors"] == [] and len(since["not_monitored"]) == 2
    [group] = since["not_watched"]
    assert group["judges"] == ["m / a", "m / b"] and group["reason"].startswith(
        "every labelled case it scored is in the stream"
    )
    _, paths = calibrate.build_report(campaign, tmp_path / "r", n_boot=0)
    md, html = paths["md"].read_text(), paths["html"].read_text()
    for text in (md, html):
        assert text.count("Nothing watched: every labelled case it scored is in the stream") == 1
        assert "Not watched" not in text and "2 judges: m / a, m / b" in text
    assert "Each judge watched over the cases" not in html  # no monitor ran: no word on how they run


def test_a_judge_with_no_threshold_lists_no_worst_misses(tmp_path):
    """A 0-1 judge on an ordinal metric with no rule gets no threshold: it listed every human pass as a miss."""
    import numpy as np
    import pandas as pd

    from calibrate.campaign import campaign_from_frames

    rng = np.random.default_rng(1)
    human = rng.integers(0, 4, 120).astype(float)
    ids = [f"c{i:03d}" for i in range(120)]
    rows = pd.DataFrame(
        {
            "case_id": ids * 2,
            "metric": "m",
            "rater": ["ann"] * 120 + ["j"] * 120,
            "rater_kind": ["human"] * 120 + ["judge"] * 120,
            "value": np.r_[human, rng.random(120)],
        }
    )
    campaign = campaign_from_frames(
        {"name": "o", "metrics": {"m": {"scale": "ordinal", "levels": [0, 1, 2, 3], "human_pass": 2}}},
        rows,
        [{"case_id": c, "input": f"question {c}"} for c in ids],
    )
    documents, paths = calibrate.build_report(campaign, tmp_path / "r", n_boot=0)
    misses = documents.stats.metrics[0].judges[0].extra["worst_misses"]
    assert misses["threshold"] is None and misses["false_passes"] == misses["false_fails"] == []
    assert misses["reason"].startswith("no pass threshold (no rule declared") and "every case fails" in misses["reason"]
    html, md = paths["html"].read_text(), paths["md"].read_text()
    assert '<table class="misses">' not in html and "question c0" not in html
    assert "<strong>j</strong>: no pass threshold (no rule declared" in html
    assert "| j | 12 |" in md and "no miss to list, since every case fails |" in md


def test_the_report_starts_from_the_threshold_the_user_runs(tmp_path):
    import subprocess
    import sys

    import pandas as pd

    from tests.analysis.test_verdicts import _deepeval_campaign
    from tests.conftest import BINARY_TOML, write_campaign

    _, paths = calibrate.build_report(_deepeval_campaign(), tmp_path / "r", n_boot=0)
    md, html = paths["md"].read_text(), paths["html"].read_text()
    line = (
        "at your current threshold 0.5 (DeepEval's default): passes 21 of 27 answers the annotators failed "
        "(0.78 \\[0.59, 0.89\\]) and fails 3 of 33 answers they passed (0.09 \\[0.03, 0.24\\]); past the 0.1 ceiling"
    )
    assert "\n  - " + line + "\n" in md
    assert '<span class="current">at your current threshold 0.5 (DeepEval&#39;s default): passes 21 of 27' in html
    # given on the command line, for one judge
    rows = pd.DataFrame(
        {
            "case_id": [f"c{i}" for i in range(40)] * 2,
            "metric": "faithfulness",
            "rater": ["ann"] * 40 + ["judge-a"] * 40,
            "rater_kind": ["human"] * 40 + ["judge"] * 40,
            "value": [i % 2 for i in range(40)] + [0.3 + 0.4 * (i % 2) for i in range(40)],
        }
    )
    folder = write_campaign(tmp_path / "c", BINARY_TOML, rows)
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "calibrate",
            "report",
            str(folder),
            "--out",
            str(tmp_path / "o"),
            "--n-boot",
            "0",
            "--current",
            "judge-a=0.6",
        ],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr
    assert "    at your current threshold 0.6 (given): passes 0 of 20 answers the annotators failed" in run.stdout
    assert "at your current threshold 0.6 (given)" in (tmp_path / "o" / "report.md").read_text()
    assert json.loads((tmp_path / "o" / "report.json").read_text())["manifest"]["current"] == {"judge-a": 0.6}
    bad = subprocess.run(
        [
            sys.executable,
            "-m",
            "calibrate",
            "report",
            str(folder),
            "--out",
            str(tmp_path / "x"),
            "--current",
            "judge-a=high",
        ],
        capture_output=True,
        text=True,
    )
    assert bad.returncode == 2 and "'judge-a=high': high is not a finite number" in bad.stderr
    assert "Traceback" not in bad.stderr and not (tmp_path / "x").exists()
