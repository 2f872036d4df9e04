"""The embedded demo campaigns and the names the demo report relies on (calibrate/demo/__init__.py): the
files are inside the installed package, and every judge, key and time the constants name is in them."""

import json
import tomllib

import pandas as pd

from calibrate.demo import (
    DEMO_AUDIT,
    DEMO_DRIFT,
    DEMO_OUT_OF_SCALE,
    DEMO_SLICE_KEY,
    demo_campaign_path,
    demo_stream_path,
)


def judges_in(folder) -> set[str]:
    ratings = pd.read_parquet(folder / "ratings.parquet", columns=["rater", "rater_kind"])
    return set(ratings.loc[ratings["rater_kind"] == "judge", "rater"])


def test_the_demo_campaign_is_a_campaign_folder_with_its_licence():
    folder = demo_campaign_path()
    assert {"campaign.toml", "cases.jsonl", "ratings.parquet", "LICENSE", "SOURCE.md"} <= {
        p.name for p in folder.iterdir()
    }
    config = tomllib.loads((folder / "campaign.toml").read_text())
    assert config["out_of_scale"] == DEMO_OUT_OF_SCALE == "drop"
    assert set(DEMO_AUDIT) <= judges_in(folder) and DEMO_AUDIT[0] != DEMO_AUDIT[1]


def test_every_demo_case_has_the_key_the_demo_slices_by():
    with (demo_campaign_path() / "cases.jsonl").open() as lines:
        keys = {json.loads(line)["metadata"].get(DEMO_SLICE_KEY) for line in lines}
    assert None not in keys and len(keys) > 1


def test_the_stream_demo_has_its_audit_sample_and_the_drifting_judge():
    folder = demo_stream_path()
    assert (folder / "samples" / "audit.csv").is_file() and (folder / "samples" / "audit.json").is_file()
    since, judge = DEMO_DRIFT
    assert judge in judges_in(folder)
    with (folder / "cases.jsonl").open() as lines:
        times = sorted(t for line in lines if (t := json.loads(line)["metadata"].get("time")))
    assert times[0] < since <= times[-1]  # the drift starts inside the stream (ISO times, all in UTC)
