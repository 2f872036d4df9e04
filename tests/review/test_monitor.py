"""calibrate monitor: the planted drift of the stream demo found, after how many cases and labels; the
monitor as a whole, on synthetic streams of the demo stream's length, ever alarms on at most alpha of
the streams with no change and always after a planted one; a perfect judge never alarms, a coin-flip
judge is refused or alarms; bad times and options are errors that name them."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from calibrate import CampaignError, demo_stream_path, load_campaign
from calibrate.campaign import campaign_from_frames
from calibrate.demo import DEMO_DRIFT
from calibrate.review.monitor import monitor_judge
from tests.conftest import assert_clear_error, run_cli

STREAM = demo_stream_path()


@pytest.fixture(scope="module")
def stream():
    return load_campaign(STREAM, out_of_scale="drop")


def test_the_planted_drift_is_found_soon_after_it_and_not_before(stream):
    drift, judge = pd.Timestamp(DEMO_DRIFT[0]), DEMO_DRIFT[1]
    doc = monitor_judge(stream, metric="relevance", judge=judge)
    assert doc["alarmed"] and doc["threshold"]["value"] == 3
    rates = {(r["rate"], r["watch"]): r for r in doc["rates"]}
    first = rates[("false_pass_rate", "above")]["alarms"][0]
    assert pd.Timestamp(first["time"]) > drift
    assert abs(pd.Timestamp(first["change_time"]) - drift) < pd.Timedelta(days=4)
    assert pd.Timestamp(first["time"]) - drift < pd.Timedelta(days=14)
    print(
        f"planted drift {drift:%Y-%m-%d}: alarm at {first['time'][:16]}, change found at "
        f"{first['change_time'][:16]}, {first['cases_since_change']} cases and {first['audited_since_change']} "
        "audited labels after it"
    )
    assert all(not r["alarms"] for key, r in rates.items() if key[0] != "false_pass_rate")
    # the current false-pass rate, since the alarm, is well above the ceiling; before it, within
    sequence = rates[("false_pass_rate", "above")]["sequence"]
    before = [p for p in sequence if pd.Timestamp(p["time"]) < drift and p["high"] is not None]
    assert before and before[-1]["low"] <= 0.1
    assert doc["stream"]["n_audited"] == 855 and "recorded sample" in doc["stream"]["audit"]


def test_a_judge_the_drift_does_not_touch_raises_no_alarm(stream):
    doc = monitor_judge(stream, metric="relevance", judge="Olz-gpt4o")
    assert not doc["alarmed"] and len(doc["rates"]) == 4


def test_the_command_line_exit_codes_and_json():
    def run(*args):
        return run_cli("monitor", STREAM, "--metric", "relevance", *args)

    drifting = run("--judge", DEMO_DRIFT[1])
    assert drifting.returncode == 1 and "ALARM false-pass rate above 0.100" in drifting.stdout
    assert "What to do" in drifting.stdout
    calm = run("--judge", "Olz-gpt4o", "--json")
    assert calm.returncode == 0 and json.loads(calm.stdout)["alarmed"] is False
    bad = run("--judge", "Olz-gpt4o", "--since", "yesterday")
    assert bad.returncode == 2 and "--since yesterday: not a date and time" in bad.stderr
    assert "Traceback" not in bad.stderr


def synthetic(
    rng, *, n_base=1000, n=3422, audit=0.25, change=None, fpr_after=0.05, judge="model", fpr_before=0.05, digits=None
):
    """A campaign like the stream demo's: baseline labels without a time, then a timed stream, a quarter
    audited. The judge passes human passes 90% of the time and human fails ``fpr_before`` (5%) of the time
    (after ``change``: ``fpr_after``); a coin-flip judge's score ignores the label, a perfect one is the label.
    ``digits``: the judge's scores rounded (a few distinct scores, as on a scale)."""
    t0 = pd.Timestamp("2026-09-07", tz="UTC")
    human = rng.random(n_base + n) < 0.3
    fpr = np.full(n_base + n, fpr_before)
    if change is not None:
        fpr[n_base + change :] = fpr_after
    passes = np.where(human, rng.random(n_base + n) < 0.9, rng.random(n_base + n) < fpr)
    score = np.where(passes, rng.uniform(0.55, 1, n_base + n), rng.uniform(0, 0.45, n_base + n))
    if judge == "coin":
        score = rng.random(n_base + n)
    if judge == "perfect":
        score = human.astype(float)
    if digits is not None:
        score = np.round(score, digits)
    ids = [f"c{i:05d}" for i in range(n_base + n)]
    audited = np.r_[np.ones(n_base, bool), rng.random(n) < audit]
    rows = pd.concat(
        [
            pd.DataFrame({"case_id": ids, "metric": "f", "rater": "j", "rater_kind": "judge", "value": score}),
            pd.DataFrame(
                {
                    "case_id": np.array(ids)[audited],
                    "metric": "f",
                    "rater": "h",
                    "rater_kind": "human",
                    "value": human[audited].astype(float),
                }
            ),
        ]
    )
    cases = [
        {
            "case_id": c,
            "input": c,
            "metadata": {} if i < n_base else {"time": (t0 + pd.Timedelta(minutes=35 * (i - n_base))).isoformat()},
        }
        for i, c in enumerate(ids)
    ]
    return campaign_from_frames(
        {"name": "s", "metrics": {"f": {"scale": "binary", "max_false_pass": 0.1}}}, rows, cases
    )


@pytest.mark.slow
def test_on_streams_of_the_demo_length_false_alarms_stay_under_alpha_and_changes_are_found():
    rng = np.random.default_rng(5)
    quiet = [monitor_judge(synthetic(rng), metric="f", judge="j")["alarmed"] for _ in range(120)]
    share = float(np.mean(quiet))
    delays, labels = [], []
    for _ in range(40):
        doc = monitor_judge(synthetic(rng, change=1500, fpr_after=0.30), metric="f", judge="j")
        [watch] = [r for r in doc["rates"] if r["rate"] == "false_pass_rate"]
        assert watch["alarms"], "a planted change was missed"
        first = watch["alarms"][0]
        delays.append(first["case_index"] - 1500)
        labels.append(first["audited_since_change"])
    print(
        f"no change: {share:.1%} of 120 streams of 3,422 cases ever alarmed (alpha 0.05, four watches); a jump of "
        f"the false-pass rate 0.05 -> 0.30 at case 1,500: found after a median {np.median(delays):.0f} cases "
        f"(90th percentile {np.percentile(delays, 90):.0f}), {np.median(labels):.0f} audited labels"
    )
    assert share <= 0.05
    assert min(delays) > -50 and np.median(delays) < 400


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.integers(0, 2**32 - 1),
    st.sampled_from([0.02, 0.1, 0.5]),
    st.sampled_from([0.05, 0.5, 0.9]),
    st.sampled_from([None, 1]),
)
def test_the_monitor_gives_the_numbers_of_every_step(monkeypatch, seed, audit, fpr_after, digits):
    """The monitor computes each confidence sequence at the steps it keeps only, and each detector up to
    its alarm; against every step of each (the same numbers), on streams that alarm and restart."""
    from calibrate.review import monitor
    from calibrate.stats import sequential

    campaign = synthetic(
        np.random.default_rng(seed), n_base=300, n=1200, audit=audit, change=400, fpr_after=fpr_after, digits=digits
    )

    def run(fast: bool) -> dict:
        with monkeypatch.context() as patch:
            patch.setattr(sequential, "WINDOW", 8 if fast else 10**6)  # one stretch: every step in one pass
            if not fast:  # the bounds after every step, then the kept ones picked
                every = sequential.confidence_sequence
                patch.setattr(monitor, "confidence_sequence", lambda *a, at, **k: tuple(b[at] for b in every(*a, **k)))
            doc = monitor_judge(campaign, metric="f", judge="j").to_dict()
        doc["manifest"].pop("created")
        return doc

    fast, every = run(True), run(False)
    assert fast == every


def test_a_perfect_judge_passes_and_a_coin_flip_never_does():
    rng = np.random.default_rng(9)
    perfect = monitor_judge(synthetic(rng, judge="perfect"), metric="f", judge="j")
    assert perfect["passed"] and not perfect["alarmed"] and perfect["baseline_fitness"]["auc"] == 1.0
    coin = synthetic(rng, judge="coin")
    # at the threshold its rule recommends (failing nine cases in ten) nothing changes, so nothing alarms; but the
    # monitor does not pass a judge no better than chance
    doc = monitor_judge(coin, metric="f", judge="j")
    assert not doc["passed"] and "not shown better than chance" in doc["baseline_fitness"]["reason"]
    doc = monitor_judge(coin, metric="f", judge="j", threshold=0.5)  # used anyway at 0.5: an alarm at once
    [watch] = [r for r in doc["rates"] if r["rate"] == "false_pass_rate"]
    assert not doc["passed"] and watch["alarms"] and watch["alarms"][0]["case_index"] < 300


def test_a_time_that_is_no_date_names_the_file_row_and_field(tmp_path, stream):
    cases = [json.loads(line) for line in (STREAM / "cases.jsonl").read_text().splitlines()]
    cases[3]["metadata"]["time"] = "last tuesday"
    folder = tmp_path / "broken"
    folder.mkdir()
    for name in ("campaign.toml", "ratings.parquet"):
        (folder / name).write_bytes((STREAM / name).read_bytes())
    (folder / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    with pytest.raises(CampaignError) as caught:
        monitor_judge(load_campaign(folder, out_of_scale="drop"), metric="relevance", judge="Olz-gpt4o")
    [problem] = caught.value.problems
    assert problem.file.endswith("cases.jsonl") and problem.row == 4 and problem.field == "metadata.time"
    assert problem.value == "last tuesday"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    time=st.one_of(
        st.text(max_size=12),
        st.integers(),
        st.none(),
        st.sampled_from(["2026-13-01", "2026-11-02", "2026-11-02T25:00:00Z"]),
    ),
    threshold=st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=True)),
    alpha=st.floats(allow_nan=True, allow_infinity=True),
    tolerance=st.floats(allow_nan=True, allow_infinity=True),
    since=st.one_of(st.none(), st.text(max_size=10), st.sampled_from(["2026-10-01", "2030-01-01"])),
)
def test_any_time_or_option_is_a_result_or_an_error_that_says_why(time, threshold, alpha, tolerance, since):
    rng = np.random.default_rng(1)
    c = synthetic(rng, n_base=60, n=120, audit=0.5)
    first = next(k for k, v in c.cases.items() if v["metadata"])
    c.cases[first]["metadata"]["time"] = time
    try:
        doc = monitor_judge(
            c, metric="f", judge="j", threshold=threshold, alpha=alpha, tolerance=tolerance, since=since
        )
    except (ValueError, CampaignError) as exc:
        assert_clear_error(exc, "time", "threshold", "alpha", "tolerance", "since")
        return
    assert isinstance(doc["alarmed"], bool)


def test_a_rate_never_in_range_on_the_baseline_alarms_without_a_change_point():
    """Issue 26: a false-pass rate already past the ceiling on the baseline was reported as a change."""
    rng = np.random.default_rng(3)
    c = synthetic(rng, n_base=400, n=1200, fpr_before=0.3, fpr_after=0.3)
    doc = monitor_judge(c, metric="f", judge="j", threshold=0.5)
    [watch] = [r for r in doc["rates"] if r["rate"] == "false_pass_rate"]
    assert doc["baseline"]["false_pass_rate"] > 0.2 and watch["baseline_in_range"] is False
    assert watch["alarms"] and not doc["passed"]
    for alarm in watch["alarms"]:
        assert alarm["change_time"] is None and alarm["change_case_id"] is None and alarm["cases_since_change"] is None
        assert alarm["no_change"].startswith("the rate was already above 0.1 on the baseline, so no change is found")
    assert "already above it" in watch["basis"]
    # the other watches start in their range (the baseline's rate, plus or minus the tolerance): their alarms,
    # if any, keep the change they found
    assert all(r["baseline_in_range"] for r in doc["rates"] if r["rate"] != "false_pass_rate")
    # a rate in range on the baseline that leaves it later keeps its change point
    moved = monitor_judge(
        synthetic(np.random.default_rng(3), n_base=400, n=1200, change=300, fpr_after=0.4), metric="f", judge="j"
    )
    [watch] = [r for r in moved["rates"] if r["rate"] == "false_pass_rate"]
    assert watch["baseline_in_range"] and watch["alarms"][0]["change_time"] is not None


def test_the_command_line_and_the_report_say_no_change_was_found(tmp_path):
    from calibrate.analysis.results import StatsResult
    from calibrate.report import ReportDocuments, render_markdown
    from calibrate.report.plots import report_plots

    rng = np.random.default_rng(3)
    c = synthetic(rng, n_base=400, n=1200, fpr_before=0.3, fpr_after=0.3)
    doc = monitor_judge(c, metric="f", judge="j", threshold=0.5)
    since = {"monitors": [{k: v for k, v in doc.items() if k != "manifest"}], "not_monitored": [], "fingerprints": []}
    from calibrate.base.manifest import build_manifest

    stats = StatsResult(
        campaign="s", metrics=(), manifest=build_manifest(c, seed=0, n_boot=0), provenance=(), set_aside_note=None
    )
    documents = ReportDocuments(stats, [], since=since)
    text = render_markdown(documents)
    assert "the rate was already above 0.1 on the baseline, so no change is found" in text
    assert "changed around" not in text
    plots = report_plots(documents)
    svg = str(plots[("since", "f", "j", "false_pass_rate")])
    assert 'class="alarm"' in svg and 'class="change"' not in svg
    from calibrate.cli.console import out
    from calibrate.cli.review import print_monitor

    with out.capture() as captured:
        print_monitor(doc)
    shown = captured.get()
    assert "no change is found" in shown and "changed around" not in shown
    assert "the threshold never kept the rate in its range" in shown


def test_a_judge_that_cannot_be_watched_names_the_flags_on_the_command_line_and_the_parameters_in_python():
    from calibrate.cli.console import command_line_text
    from calibrate.review.monitor import NotWatchable

    rng = np.random.default_rng(1)
    c = synthetic(rng, n_base=0, n=300, audit=0.5)  # every labelled case has a time: no baseline
    with pytest.raises(NotWatchable) as caught:
        monitor_judge(c, metric="f", judge="j")
    assert str(caught.value).endswith(
        "give the threshold used in production (threshold), or when it was chosen (since)"
    )
    assert command_line_text(caught.value).endswith(
        "give the threshold used in production (--threshold), or when it was chosen (--since)"
    )
    # the reason the report groups judges by names none of them
    assert caught.value.reason.startswith("every labelled case it scored is in the stream (has a metadata.time)")
