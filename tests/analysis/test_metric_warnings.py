"""The warnings of a metric's entry: too few labels, tied and failed human ratings, adjusted values, an
anchored panel, failed judge ratings and judges of the generator's family, each naming its cases."""

from __future__ import annotations

import pandas as pd

from calibrate.analysis.metric_comparisons import judge_comparisons
from calibrate.analysis.metric_warnings import MIN_TRUSTED_LABELS, listed, metric_warnings
from calibrate.analysis.rules import Rule
from calibrate.campaign import campaign_from_frames

IDS = [f"c{i}" for i in range(8)]
RULE = Rule("fixed", threshold=0.5)


def campaign(families: dict[str, str], *, extra: list[tuple] = (), raters: dict | None = None, **kwargs):
    rows = [(c, "m", "h1", "human", i % 2, "") for i, c in enumerate(IDS)]
    rows += [("c0", "m", "h2", "human", 1, ""), ("c1", "m", "h2", "human", None, "annotator skipped")]
    rows += [(c, "m", "j", "judge", 0.1 * i, "") for i, c in enumerate(IDS[:-1])]
    rows += [("c7", "m", "j", "judge", None, "timeout after 30 s"), *extra]
    frame = pd.DataFrame(rows, columns=["case_id", "metric", "rater", "rater_kind", "value", "error"])
    cases = [{"case_id": c, "input": "q", "metadata": {"generator_family": families.get(c)}} for c in IDS]
    config = {"name": "t", "metrics": {"m": {"scale": "binary"}}, "raters": raters or {"j": {"family": "gpt"}}}
    return campaign_from_frames(config, frame, cases, **kwargs)


def warnings_of(c) -> list[str]:
    return metric_warnings(c, "m", judge_comparisons(c, "m", None, RULE))


def test_listed_names_the_first_ten():
    assert listed([f"c{i}" for i in range(12)], shown=3) == "c0, c1, c2 and 9 more"
    assert listed(["a", "b"]) == "a, b" and listed([]) == ""


def test_each_warning_names_its_cases():
    notes = warnings_of(campaign({"c2": "GPT", "c5": "llama"}))
    assert notes == [
        f"only 8 human-labelled cases: under {MIN_TRUSTED_LABELS}, no judge figure or threshold here is trustworthy yet",
        "1 case(s) with a tied human panel took the lower label (a pass needs a strict majority): c0",
        "1 human rating(s) recorded as failed (an error, no value): c1",
        "judge j: 1 failed rating(s) (errors, excluded from the figures): c7",
        "judge j is of the gpt family, as the generator of 1 case(s): a judge may favour its own family's answers: c2",
    ]


def test_a_judge_of_every_cases_generator_family_is_told_to_compare():
    notes = warnings_of(campaign({c: "gpt" for c in IDS}))
    assert notes[-1] == (
        "judge j is of the gpt family, as the generator of every case (8): a judge may favour its own family's "
        "answers; rate them with a judge of another family to compare"
    )


def test_adjusted_values_and_an_anchored_panel_are_warned():
    c = campaign({}, extra=[("c2", "m", "h2", "human", 3, ""), ("c3", "m", "h2", "human", -1, "")], out_of_scale="clip")
    c.shown_judge = "j"
    notes = warnings_of(c)
    assert "2 out-of-scale value(s) clipped (out_of_scale clip): h2/c2: 3 -> 1, h2/c3: -1 -> 0" in notes
    # the human reference's warnings come first, then each judge's
    assert notes[-2].startswith("the annotators saw judge j's scores as pre-annotations in Label Studio")
    assert notes[-1].startswith("judge j: 1 failed rating(s)")


def test_the_family_warning_names_the_judges_own_family_only():
    families = {"c1": "gpt", "c4": "Gpt", "c6": "claude"}
    assert warnings_of(campaign(families))[-1].endswith("a judge may favour its own family's answers: c1, c4")
    assert not any("family" in note for note in warnings_of(campaign(families, raters={"j": {}})))
