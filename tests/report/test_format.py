"""Long case texts in the worst-miss tables (issue 26, item 8: LLMBar's long texts made report.html 3.53 MB):
report.html holds at most FULL_AT characters of each text, says how many more there are and where, and
report.json keeps the whole text of every case the tables list."""

import html
import json
import re

import numpy as np
import pandas as pd

import calibrate
from calibrate.campaign import Campaign, campaign_from_frames
from calibrate.report.format import CLIP_AT, FULL_AT, clipped


def long_campaign(n: int = 120, chars: int = 4 * FULL_AT) -> Campaign:
    rng = np.random.default_rng(7)
    human = (rng.random(n) < 0.5).astype(float)
    ids = [f"c{i:03d}" for i in range(n)]
    rows = pd.DataFrame(
        {
            "case_id": ids * 2,
            "metric": "m",
            "rater": ["ann"] * n + ["j"] * n,
            "rater_kind": ["human"] * n + ["judge"] * n,
            "value": np.r_[human, np.clip(0.5 * human + rng.random(n) * 0.6, 0, 1).round(3)],
        }
    )

    def text(kind: str, case: str, size: int) -> str:
        words = " ".join(rng.choice(["alpha", "beta", "gamma", "delta"], size=size // 6 + 1))
        return f"{kind} of {case}: {words}"[:size]

    cases = [
        {
            "case_id": c,
            "input": text("input", c, chars),
            "actual_output": text("output", c, chars // 2),
            "retrieval_context": [text("first passage", c, chars // 3), text("second passage", c, chars)],
            "expected_output": "short",
        }
        for c in ids
    ]
    return campaign_from_frames(
        {"name": "long", "metrics": {"m": {"scale": "binary", "max_false_pass": 0.1}}}, rows, cases
    )


def test_report_html_clips_long_texts_and_report_json_keeps_them_whole(tmp_path):
    campaign = long_campaign()
    documents, paths = calibrate.build_report(campaign, tmp_path / "r", n_boot=0)
    misses = documents.stats.metrics[0].judges[0].extra["worst_misses"]
    listed = [row["case_id"] for row in misses["false_passes"] + misses["false_fails"]]
    assert len(listed) >= 10
    page = paths["html"].read_text(encoding="utf-8")
    kept = json.loads(paths["json"].read_text(encoding="utf-8"))["worst_miss_cases"]
    assert sorted(kept) == sorted(set(listed))
    for cid in listed:
        case = campaign.cases[cid]
        assert kept[cid] == {k: case[k] for k in ("input", "actual_output", "expected_output", "retrieval_context")}
        whole = case["input"]
        assert whole[:FULL_AT] + " … <em>(" in page and whole[: FULL_AT + 20] not in page
        first, second = case["retrieval_context"]  # numbered, up to the budget: the first passage uses it up
        assert f"[1] {first[: FULL_AT - 4]} … <em>(" in page and second[:60] not in page
    assert page.count("more characters: the whole text is in report.json") >= 2 * len(listed)
    assert "<td>short</td>" in page  # short texts are untouched


def test_the_report_grows_with_the_listed_cases_not_with_their_length(tmp_path):
    sizes = {}
    for chars in (2 * FULL_AT, 20 * FULL_AT):
        _, paths = calibrate.build_report(long_campaign(chars=chars), tmp_path / str(chars), n_boot=0)
        sizes[chars] = paths["html"].stat().st_size
    assert sizes[20 * FULL_AT] < 1.05 * sizes[2 * FULL_AT], sizes


def test_a_clipped_cell_holds_a_bounded_text_whatever_it_is():
    for text in ("é" * (3 * FULL_AT), "<b>" * FULL_AT, ["x" * FULL_AT] * 5, ["a"] * 3000, "\n" * (2 * FULL_AT)):
        cell = str(clipped(text, "id"))
        shown = html.unescape(re.sub(r"<[^>]+>", "", cell))  # the preview, the text up to FULL_AT, the note
        assert len(shown) <= CLIP_AT + 1 + FULL_AT + 80, (text[:10], len(shown))
        assert "whole text is in report.json" in cell
