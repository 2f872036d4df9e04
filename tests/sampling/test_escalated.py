"""The production loop of calibrate escalate (calibrate.sampling.escalated): the queue of escalated cases
written as a sample, the band stored and applied to new cases, another judge model refused, and band -> queue
-> labels -> band again."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import calibrate
from calibrate.analysis.escalate import escalate
from calibrate.campaign.weights import design_weights
from calibrate.sampling.designs import read_sample_ids
from calibrate.sampling.escalated import (
    ESCALATED,
    StoredBand,
    apply_band,
    band_verdicts,
    read_band,
    save_band,
)
from calibrate.stats.selective import candidate_bands
from tests.conftest import run_cli, write_campaign

TOML = """
name = "planted"
[metrics.ok]
scale = "binary"
[raters.j]
model = "{model}"
family = "m"
"""


def _truth(score: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Right below 0.3 and above 0.7 (the planted band), a coin flip between."""
    return np.where(np.abs(score - 0.5) > 0.2, score >= 0.5, rng.random(score.size) < 0.5)


def _rows(ids, values, rater, kind) -> pd.DataFrame:
    return pd.DataFrame({"case_id": ids, "metric": "ok", "rater": rater, "rater_kind": kind, "value": values})


@pytest.fixture
def planted(tmp_path) -> Path:
    """2,000 cases a 0-1 judge scored; humans labelled 700 of them drawn uniformly (outside any sample)."""
    rng = np.random.default_rng(3)
    n = 2000
    score = rng.random(n).round(3)
    truth = _truth(score, rng)
    ids = np.array([f"c{i:05d}" for i in range(n)])
    labelled = np.sort(rng.choice(n, size=700, replace=False))
    ratings = pd.concat(
        [_rows(ids, score, "j", "judge"), _rows(ids[labelled], truth[labelled].astype(int), "h", "human")]
    )
    folder = write_campaign(tmp_path / "c", TOML.format(model="m-1"), ratings, [{"case_id": c} for c in ids])
    (folder / "truth.json").write_text(json.dumps(dict(zip(ids.tolist(), truth.astype(int).tolist()))))
    return folder


def _add_rows(folder: Path, rows: pd.DataFrame) -> None:
    ratings = pd.concat([pd.read_csv(folder / "ratings.csv"), rows])
    ratings.to_csv(folder / "ratings.csv", index=False)


def _direct_queue(folder: Path, pass_at: float, fail_below: float, among=None) -> list[str]:
    """The escalated unlabelled cases computed from the ratings file and the candidate bands of
    calibrate.stats.selective (the band's own `decided`), not from the queue's code."""
    ratings = pd.read_csv(folder / "ratings.csv")
    judge = ratings[ratings.rater_kind == "judge"].sort_values("case_id")
    labelled = set(ratings.loc[ratings.rater_kind == "human", "case_id"])
    chosen_on = ~judge.case_id.str.startswith("n").to_numpy()  # the new cases came after the band
    bands = candidate_bands(judge.value.to_numpy()[chosen_on], 0.5)
    at = [j for j in range(bands.cut.size) if (bands.pass_at[j], bands.fail_below[j]) == (pass_at, fail_below)]
    assert at, "the band chosen is one of the candidate bands"
    decided = bands.decided(judge.value.to_numpy(), at[0])
    keep = np.ones(len(judge), bool) if among is None else judge.case_id.isin(among).to_numpy()
    return [c for c, d, k in zip(judge.case_id, decided, keep) if k and not d and c not in labelled]


def _cli_json(*args) -> dict:
    done = run_cli(*args, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_the_queue_is_the_bands_escalated_unlabelled_cases(planted):
    doc = _cli_json("escalate", planted, "--metric", "ok", "--judge", "j", "--agreement", "0.9", "--sample", "q")
    assert 0.25 < doc["fail_below"] < 0.5 < doc["pass_at"] < 0.75  # about the planted band
    expected = _direct_queue(planted, doc["pass_at"], doc["fail_below"])
    c = calibrate.load_campaign(planted)  # the loader reads the sample back, every row checked against its design
    sample = c.samples["q"]
    assert sample["case_ids"] == expected and len(expected) > 300
    assert sample["inclusion_probability"].tolist() == [1.0] * len(expected)
    assert set(sample["strata"]) == {ESCALATED} and sample["design"]["strategy"] == "escalated"
    assert sample["design"]["judge"] == "j" and sample["design"]["pass_at"] == doc["pass_at"]
    assert read_sample_ids("q", c) == expected  # what labelstudio push --sample q reads
    assert doc["queue"]["cases"] == doc["queue"]["escalated_unlabelled"] == len(expected)
    assert doc["queue"]["file"].endswith("samples/q.csv")


def test_a_capped_queue_is_a_uniform_draw_with_its_probability(planted):
    doc = _cli_json(
        "escalate", planted, "--metric", "ok", "--judge", "j", "--agreement", "0.9", "--sample", "q",
        "--max-cases", "50", "--seed", "7",
    )  # fmt: skip
    escalated = _direct_queue(planted, doc["pass_at"], doc["fail_below"])
    sample = calibrate.load_campaign(planted).samples["q"]
    assert len(sample["case_ids"]) == 50 and set(sample["case_ids"]) <= set(escalated)
    assert sample["inclusion_probability"] == pytest.approx([50 / len(escalated)] * 50)
    assert sample["design"]["strata"][ESCALATED] == {
        "size": len(escalated),
        "sampled": 50,
        "drawn_before": 0,
        "inclusion_probability": pytest.approx(50 / len(escalated)),
    }
    again = _cli_json(
        "escalate", planted, "--metric", "ok", "--judge", "j", "--agreement", "0.9", "--sample", "q2",
        "--max-cases", "50", "--seed", "8",
    )  # fmt: skip
    assert again["queue"]["cases"] == 50
    assert calibrate.load_campaign(planted).samples["q2"]["case_ids"] != sample["case_ids"]  # another seed, draw


def test_an_existing_sample_or_band_is_never_replaced(planted):
    args = ("escalate", planted, "--metric", "ok", "--judge", "j", "--agreement", "0.9")
    assert run_cli(*args, "--sample", "q", "--save-band", "b").returncode == 0
    before = {p: p.read_bytes() for p in (planted / "samples").iterdir()} | {
        p: p.read_bytes() for p in (planted / "bands").iterdir()
    }
    for extra, flag in (("--sample", "q"), ("--sample", "Q"), ("--save-band", "b"), ("--save-band", "B")):
        done = run_cli(*args, extra, flag)
        assert done.returncode == 2 and "exists: choose another " + extra in done.stderr, done.stderr
    done = run_cli(*args, "--sample", "fresh", "--save-band", "b")  # the band's name is taken: no queue either
    assert done.returncode == 2 and not (planted / "samples" / "fresh.csv").exists()
    after = {p: p.read_bytes() for p in (planted / "samples").iterdir()} | {
        p: p.read_bytes() for p in (planted / "bands").iterdir()
    }
    assert after == before


def test_the_stored_band_round_trips(planted):
    c = calibrate.load_campaign(planted)
    doc = escalate(c, metric="ok", judge="j", agreement=0.9)
    path = save_band(c, doc, "week-1")
    assert path == planted / "bands" / "week-1.json"
    raw = json.loads(path.read_text())
    assert raw["schema_version"] == 1 and raw["model"] == "m-1" and raw["rater"] == "j"
    band = read_band(calibrate.load_campaign(planted), "week-1")
    assert isinstance(band, StoredBand)
    assert (band.metric, band.judge, band.pass_at, band.fail_below) == ("ok", "j", doc.pass_at, doc.fail_below)
    assert (band.target, band.confidence, band.n_labels, band.threshold) == (0.9, 0.95, 700, 0.5)
    assert band.scored_cases == sorted(band.scored_cases) and band.n_scored == 2000
    raw["pass_at"] = None  # one edge without the other: refused, naming the file
    path.write_text(json.dumps(raw))
    with pytest.raises(calibrate.CampaignError, match=r"week-1\.json"):
        read_band(c, "week-1")
    with pytest.raises(ValueError, match="no band stored"):
        read_band(c, "nowhere")


def _new_cases(folder: Path, n: int, *, seed: int) -> list[str]:
    """``n`` new cases the judge scored (none labelled), appended to the campaign."""
    rng = np.random.default_rng(seed)
    ids = [f"n{i:05d}" for i in range(n)]
    _add_rows(folder, _rows(ids, rng.random(n).round(3), "j", "judge"))
    with (folder / "cases.jsonl").open("a") as handle:
        handle.writelines(json.dumps({"case_id": c}) + "\n" for c in ids)
    return ids


def test_a_stored_band_applied_to_new_cases(planted):
    run_cli("escalate", planted, "--metric", "ok", "--judge", "j", "--agreement", "0.9", "--save-band", "b", check=True)
    band = json.loads((planted / "bands" / "b.json").read_text())
    new = _new_cases(planted, 500, seed=11)
    doc = _cli_json("escalate", planted, "--metric", "ok", "--judge", "j", "--since", "b", "--sample", "week-2")
    ratings = pd.read_csv(planted / "ratings.csv")
    scores = ratings[(ratings.rater_kind == "judge") & ratings.case_id.isin(new)].value.to_numpy()
    passes, fails = int(np.sum(scores >= band["pass_at"])), int(np.sum(scores < band["fail_below"]))
    assert (doc["cases"], doc["pass"], doc["fail"], doc["people"]) == (500, passes, fails, 500 - passes - fails)
    assert doc["applied_to"] == "new" and doc["seen_before"] == 2000 and "same judge model, m-1" in doc["judge_check"]
    queue = calibrate.load_campaign(planted).samples["week-2"]
    assert queue["case_ids"] == _direct_queue(planted, band["pass_at"], band["fail_below"], among=new)
    assert queue["design"]["band"] == "b" and queue["design"]["cases"] == "new"
    every = _cli_json("escalate", planted, "--metric", "ok", "--judge", "j", "--since", "b", "--all-cases")
    assert every["cases"] == 2500 and every["seen_before"] == 0 and every["queue"]["file"] is None
    assert every["people_labelled"] == 700 - int(np.sum(_labelled_decided(planted, band)))


def _labelled_decided(folder: Path, band: dict) -> np.ndarray:
    ratings = pd.read_csv(folder / "ratings.csv")
    labelled = set(ratings.loc[ratings.rater_kind == "human", "case_id"])
    judge = ratings[(ratings.rater_kind == "judge") & ratings.case_id.isin(labelled)].value.to_numpy()
    return (judge >= band["pass_at"]) | (judge < band["fail_below"])


def test_a_band_is_not_applied_to_another_judge_model(planted):
    run_cli("escalate", planted, "--metric", "ok", "--judge", "j", "--agreement", "0.9", "--save-band", "b", check=True)
    _new_cases(planted, 50, seed=1)
    toml = planted / "campaign.toml"
    toml.write_text(TOML.format(model="m-2"))
    done = run_cli("escalate", planted, "--metric", "ok", "--judge", "j", "--since", "b", "--sample", "x")
    assert done.returncode == 2 and "chosen on the judge model m-1" in done.stderr and "not m-2" in done.stderr
    assert not (planted / "samples").exists()
    toml.write_text(TOML.format(model="m-1").replace('model = "m-1"\n', ""))  # no model recorded now
    _add_rows(planted, _rows(["n00000"], [0.9], "k", "judge"))
    done = run_cli("escalate", planted, "--metric", "ok", "--judge", "k", "--since", "b")
    assert done.returncode == 2 and "chosen on rater j" in done.stderr and "records no model" in done.stderr
    doc = _cli_json("escalate", planted, "--metric", "ok", "--judge", "j", "--since", "b")
    assert "no model recorded to check" in doc["judge_check"]


def test_the_options_that_go_together(planted):
    base = ("escalate", planted, "--metric", "ok", "--judge", "j")
    for extra, said in (
        ((), "give --agreement A to choose a band, or --since BAND"),
        (("--since", "b", "--agreement", "0.9"), "--agreement choose(s) a new one"),
        (("--agreement", "0.9", "--all-cases"), "--all-cases goes with --since"),
        (("--agreement", "0.9", "--max-cases", "3"), "give --sample NAME"),
        (("--since", "nowhere"), "no band stored"),
        (("--agreement", "0.9", "--sample", "../x"), "cannot be a file or folder name"),
    ):
        done = run_cli(*base, *extra)
        assert done.returncode == 2 and said in done.stderr, (extra, done.stderr)


def test_band_verdicts_against_the_candidate_bands():
    rng = np.random.default_rng(0)
    scores = rng.integers(0, 4, 300).astype(float)
    bands = candidate_bands(scores, 2)
    for j in range(bands.cut.size):
        verdict = band_verdicts(
            scores, higher_is_better=True, pass_at=float(bands.pass_at[j]), fail_below=float(bands.fail_below[j])
        )
        assert np.array_equal(verdict != "people", bands.decided(scores, j))
        assert np.all((verdict == "pass") == (bands.decided(scores, j) & (scores >= 2)))
    flipped = band_verdicts(-scores, higher_is_better=False, pass_at=-3.0, fail_below=-1.0)
    assert flipped.tolist() == band_verdicts(scores, higher_is_better=True, pass_at=3.0, fail_below=1.0).tolist()
    assert set(band_verdicts(scores, higher_is_better=True, pass_at=None, fail_below=None)) == {"people"}


def test_the_production_loop(planted):
    """Band -> queue -> the queue labelled as the humans labelled before -> band again: it decides no fewer
    cases, and the queue's labels are counted."""
    args = ("escalate", planted, "--metric", "ok", "--judge", "j", "--agreement", "0.9")
    first = _cli_json(*args, "--sample", "round-1", "--max-cases", "200", "--save-band", "band-1")
    truth = json.loads((planted / "truth.json").read_text())
    queue = calibrate.load_campaign(planted).samples["round-1"]["case_ids"]
    _add_rows(planted, _rows(queue, [truth[c] for c in queue], "h", "human"))  # labelstudio pull, simulated
    c = calibrate.load_campaign(planted)
    weights = design_weights(c, np.array(sorted(c.ratings.loc[c.ratings.rater_kind == "human", "case_id"])))
    assert {d["sample"]: d["labelled"] for d in weights.designs}["round-1"] == 200
    second = escalate(c, metric="ok", judge="j", agreement=0.9)
    assert second.n_labels == first["n_labels"] + 200
    assert second.n_decided >= first["n_decided"] and second.pass_at <= first["pass_at"]
    assert second.fail_below >= first["fail_below"]
    again = _cli_json(*args, "--sample", "round-2")  # the next queue leaves the labelled cases out
    assert set(c.samples["round-1"]["case_ids"]).isdisjoint(
        calibrate.load_campaign(planted).samples["round-2"]["case_ids"]
    )
    assert again["queue"]["escalated_labelled_left_out"] >= 200
    applied, _ = apply_band(c, "band-1", metric="ok", judge="j", all_cases=True)
    assert applied["people_labelled"] == applied["people"] - applied["people_unlabelled"]


def test_the_loop_widens_the_band_when_the_queue_shows_the_judge_right(tmp_path):
    """A judge right on every case, with too few labels to show it (no band): its queue labelled, the band
    decides every case."""
    rng = np.random.default_rng(5)
    ids = np.array([f"c{i:04d}" for i in range(1000)])
    score = rng.random(1000).round(3)
    labelled = rng.choice(1000, size=20, replace=False)
    ratings = pd.concat(
        [_rows(ids, score, "j", "judge"), _rows(ids[labelled], (score[labelled] >= 0.5) * 1, "h", "human")]
    )
    folder = write_campaign(tmp_path / "c", TOML.format(model="m-1"), ratings, [{"case_id": c} for c in ids])
    args = ("escalate", folder, "--metric", "ok", "--judge", "j", "--agreement", "0.9")
    first = _cli_json(*args, "--sample", "q", "--max-cases", "60")
    assert first["pass_at"] is None and first["queue"]["escalated_unlabelled"] == 980  # no band: every case
    queue = calibrate.load_campaign(folder).samples["q"]
    assert queue["inclusion_probability"] == pytest.approx([60 / 980] * 60)
    position = {c: i for i, c in enumerate(ids)}
    _add_rows(
        folder, _rows(queue["case_ids"], [int(score[position[c]] >= 0.5) for c in queue["case_ids"]], "h", "human")
    )
    second = _cli_json(*args)
    assert second["n_labels"] == 80 and second["n_decided"] == 1000


def test_the_queue_records_its_frame_and_is_weighted_as_part_of_the_cases(planted):
    """The queue's file lists every case the band escalated (its frame) and those labelled before; the frame
    is checked against the table when read, and a queue written before frames were still reads."""
    from calibrate.base.errors import CampaignError

    _cli_json(
        "escalate",
        planted,
        "--metric",
        "ok",
        "--judge",
        "j",
        "--agreement",
        "0.9",
        "--sample",
        "q",
        "--max-cases",
        "50",
    )
    c = calibrate.load_campaign(planted)
    design = c.samples["q"]["design"]
    labelled = set(c.ratings.loc[c.ratings.rater_kind == "human", "case_id"])
    assert set(design["frame_labelled"]) == set(design["frame"]) & labelled
    assert len(design["frame"]) - len(design["frame_labelled"]) == design["population"]
    assert set(c.samples["q"]["case_ids"]) <= set(design["frame"]) - labelled
    weights = design_weights(c, np.array(sorted(labelled)))  # the queue not labelled yet: its frame is at its size
    queue = {d["sample"]: d for d in weights.designs}["q"]
    assert queue["frame"] == "part" and queue["frame_size"] == len(design["frame"]) and queue["labelled"] == 0
    path = planted / "samples" / "q.json"
    document = json.loads(path.read_text())
    for change, message in (
        (lambda d: d["frame"].pop(), "the frame's unlabelled cases"),
        (lambda d: d.update(frame_labelled=["nowhere"]), "frame_labelled lists cases of the frame only"),
    ):
        damaged = json.loads(json.dumps(document))
        change(damaged)
        path.write_text(json.dumps(damaged))
        with pytest.raises(CampaignError, match=message):
            calibrate.load_campaign(planted)
    old = {k: v for k, v in document.items() if k not in ("frame", "frame_labelled")}
    path.write_text(json.dumps(old))
    design = calibrate.load_campaign(planted).samples["q"]["design"]
    assert design["frame"] is None and design["strategy"] == "escalated"
