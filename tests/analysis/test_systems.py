"""calibrate compare-systems: a planted difference in one slice is found there and nowhere else; a coin-flip
judge saves nothing, a perfect one almost everything; errors that name what is wrong. (Each version's rate,
the differences and the labels a width needs: tests/analysis/test_system_rates.py.)"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
from click.testing import CliRunner

from calibrate.analysis.systems import compare_systems
from calibrate.campaign import Campaign, campaign_from_frames
from calibrate.cli import main
from tests.conftest import assert_clear_error


def campaign(rng, *, effect: dict[str, float], n=2400, audit=0.2, judge="good") -> Campaign:
    """Cases of versions v1 and v2 in three topics; v2's human pass rate is v1's plus ``effect[topic]``."""
    topics = np.array(["billing", "shipping", "returns"])[rng.integers(0, 3, n)]
    version = np.where(rng.random(n) < 0.5, "v1", "v2")
    rate = 0.5 + np.array([effect.get(t, 0.0) if v == "v2" else 0.0 for t, v in zip(topics, version)])
    y = rng.random(n) < rate
    if judge == "perfect":
        score = y.astype(float)
    else:  # (each draw in this order, as the seeds of the tests below were drawn)
        score = np.clip(0.4 * y + rng.normal(0.3, 0.15, n), 0, 1) if judge == "good" else rng.random(n)
    ids = [f"c{i:05d}" for i in range(n)]
    labelled = rng.random(n) < audit
    rows = pd.concat(
        [
            pd.DataFrame(
                {"case_id": ids, "metric": "helpful", "rater": "judge", "rater_kind": "judge", "value": score}
            ),
            pd.DataFrame(
                {
                    "case_id": np.array(ids)[labelled],
                    "metric": "helpful",
                    "rater": "ann",
                    "rater_kind": "human",
                    "value": y[labelled].astype(float),
                }
            ),
        ]
    )
    cases = [{"case_id": c, "input": c, "metadata": {"app": v, "topic": t}} for c, v, t in zip(ids, version, topics)]
    return campaign_from_frames(
        {"name": "ab", "metrics": {"helpful": {"scale": "binary", "max_false_pass": 0.2}}}, rows, cases
    )


def test_a_planted_difference_in_one_slice_is_found_there_alone():
    rng = np.random.default_rng(21)
    c = campaign(rng, effect={"shipping": 0.25})
    doc = compare_systems(c, metric="helpful", judge="judge", by="app", a="v1", b="v2", slice_by="topic")
    slices = {s["value"]: s["difference"] for s in doc["slices"]}
    assert (
        slices["shipping"]["differs_after_holm"] and slices["shipping"]["ci_low"] < 0.25 < slices["shipping"]["ci_high"]
    )
    assert not slices["billing"]["differs_after_holm"] and not slices["returns"]["differs_after_holm"]
    assert all(s["p_value_holm"] >= s["p_value"] for s in slices.values())
    assert all(
        s["simultaneous_ci"][0] <= s["ci_low"] and s["simultaneous_ci"][1] >= s["ci_high"] for s in slices.values()
    )
    overall = doc["overall"]
    assert overall["difference"]["ci_low"] < 0.25 / 3 < overall["difference"]["ci_high"]
    # the judge's scores on the unlabelled cases narrow the interval, and save labels for a given width
    assert overall["difference"]["se"] < overall["humans_only_difference"]["se"]
    assert overall["labels"]["with_the_judge"] < overall["labels"]["humans_only"]


def test_a_coin_flip_judge_saves_nothing_and_its_interval_still_covers():
    rng = np.random.default_rng(8)
    doc = compare_systems(
        campaign(rng, effect={}, judge="coin"), metric="helpful", judge="judge", by="app", a="v1", b="v2"
    )
    overall = doc["overall"]
    assert overall["a"]["ppi"]["lam"] < 0.3 and overall["b"]["ppi"]["lam"] < 0.3  # power tuning ignores it
    assert overall["difference"]["ci_low"] < 0 < overall["difference"]["ci_high"]
    assert overall["labels"]["with_the_judge"] >= 0.9 * overall["labels"]["humans_only"]


def test_a_perfect_judge_leaves_almost_nothing_to_the_labels():
    rng = np.random.default_rng(8)
    overall = compare_systems(
        campaign(rng, effect={"billing": 0.2}, judge="perfect"),
        metric="helpful",
        judge="judge",
        by="app",
        a="v1",
        b="v2",
    )["overall"]
    assert overall["a"]["ppi"]["lam"] > 0.7 and overall["b"]["ppi"]["lam"] > 0.7  # power tuning trusts it
    assert overall["difference"]["se"] < 0.5 * overall["humans_only_difference"]["se"]
    assert overall["labels"]["with_the_judge"] < 0.3 * overall["labels"]["humans_only"]


def test_the_command_line_and_its_errors(tmp_path):
    rng = np.random.default_rng(2)
    c = campaign(rng, effect={"shipping": 0.2}, n=600)
    folder = tmp_path / "ab"
    folder.mkdir()
    (folder / "campaign.toml").write_text('name = "ab"\n[metrics.helpful]\nscale = "binary"\nmax_false_pass = 0.2\n')
    c.ratings[["case_id", "metric", "rater", "rater_kind", "value"]].to_csv(folder / "ratings.csv", index=False)
    (folder / "cases.jsonl").write_text("".join(json.dumps(case) + "\n" for case in c.cases.values()))
    runner = CliRunner()
    args = ["compare-systems", str(folder), "--metric", "helpful", "--judge", "judge", "--by", "app"]
    done = runner.invoke(main, args + ["--a", "v1", "--b", "v2", "--slice", "topic", "--width", "0.3"])
    assert done.exit_code == 0, done.output
    assert "v2 - v1 (PPI++)" in done.output and "labels per version with the judge" in done.output
    doc = json.loads(runner.invoke(main, args + ["--a", "v1", "--b", "v2", "--json"]).output)
    assert doc["overall"]["a"]["n_labelled"] + doc["overall"]["b"]["n_labelled"] == int(
        c.ratings["rater_kind"].eq("human").sum()
    )
    for extra, message in (
        (["--a", "v1", "--b", "v3"], "--b v3: no case the judge scored has metadata.app = 'v3' (its values: v1, v2)"),
        (["--a", "v1", "--b", "v1"], "--b v1: the same version as --a v1"),
        (["--a", "v1", "--b", "v2", "--slice", "app"], "--slice app: the key of the versions"),
        (["--a", "v1", "--b", "v2", "--width", "0"], "Invalid value for '--width'"),
    ):
        done = runner.invoke(main, args + extra)
        assert done.exit_code == 2 and message in done.output, done.output


from hypothesis import HealthCheck, example, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

VALUE = (
    st.none()
    | st.booleans()
    | st.integers(-3, 3)
    | st.text(max_size=4)
    | st.lists(st.integers(0, 2), max_size=2)
    | st.dictionaries(st.text(max_size=2), st.integers(0, 1), max_size=1)
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    tags=st.lists(st.sampled_from(["v1", "v2", None, True, 1, [0]]) | VALUE, min_size=40, max_size=40),
    a=st.sampled_from(["v1", "None", "True", "1", "[0]"]) | st.text(max_size=3),
    b=st.sampled_from(["v2", "v1", "(missing)", "1"]) | st.text(max_size=3),
    slice_by=st.none() | st.sampled_from(["app", "topic", "nothing"]),
    width=st.sampled_from([0.1, 0.3]) | st.floats(allow_nan=True, allow_infinity=True),
    confidence=st.sampled_from([0.95, 0.8]) | st.floats(allow_nan=True),
)
@example(
    tags=["v1"] * 32 + [None] * 7 + [""], a="v1", b="", slice_by=None, width=0.1, confidence=7.806931378766568e-90
)  # found by a long run: a level near 0 divided by zero
def test_any_version_tags_and_options_give_a_result_or_an_error_that_says_why(tags, a, b, slice_by, width, confidence):
    rng = np.random.default_rng(0)
    c = campaign(rng, effect={}, n=40, audit=0.5)
    for case, tag in zip(c.cases.values(), tags):
        case["metadata"]["app"] = tag
    try:
        doc = compare_systems(
            c,
            metric="helpful",
            judge="judge",
            by="app",
            a=a,
            b=b,
            slice_by=slice_by,
            width=width,
            confidence=confidence,
        )
    except ValueError as exc:
        assert_clear_error(exc, "by", "a=", "b=", "slice_by", "width", "confidence", "app", "helpful", "judge")
        return
    json.dumps(doc.to_dict() if hasattr(doc, "to_dict") else dict(doc), allow_nan=False)
