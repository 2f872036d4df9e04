"""Calibration maps: scikit-learn's isotonic regression, cross-validated Brier and ECE, the command line."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.calibration import calibration_curve
from sklearn.isotonic import IsotonicRegression
from sklearn.metrics import brier_score_loss
from sklearn.model_selection import KFold

from calibrate import load_campaign
from calibrate.analysis.calibration import CalibrationMap, expected_calibration_error, fit_calibration
from tests.conftest import run_cli, write_campaign

TOML = """name = "cal"
[metrics.faithfulness]
scale = "binary"
[raters.distance]
higher_is_better = false
"""


def make(tmp_path, n=600, seed=0):
    """An over-confident judge: its score is sqrt of the true probability of a human pass; and a judge
    scoring a distance (lower is better)."""
    rng = np.random.default_rng(seed)
    p = rng.random(n)
    human = (rng.random(n) < p).astype(int)
    confident = np.sqrt(p).round(3)
    distance = (1 - p).round(3)
    ids = [f"c{i:04d}" for i in range(n)]
    frame = pd.DataFrame(
        {
            "case_id": ids * 3,
            "metric": "faithfulness",
            "rater": ["ann"] * n + ["confident"] * n + ["distance"] * n,
            "rater_kind": ["human"] * n + ["judge"] * 2 * n,
            "value": np.r_[human, confident, distance],
        }
    )
    return write_campaign(tmp_path / "campaign", TOML, frame), human, confident, distance


@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    folder, human, confident, distance = make(tmp_path_factory.mktemp("cal"))
    return load_campaign(folder), folder, human, confident, distance


def test_the_map_is_scikit_learns_isotonic_regression(fitted):
    campaign, _, human, confident, distance = fitted
    fit = fit_calibration(campaign, metric="faithfulness", judge="confident")
    reference = IsotonicRegression(y_min=0, y_max=1, out_of_bounds="clip").fit(confident, human)
    new = np.linspace(-0.2, 1.2, 57)
    assert fit.map.predict(new) == pytest.approx(reference.predict(new), abs=1e-12)
    # a judge whose lower scores are better: the map runs the other way
    fit = fit_calibration(campaign, metric="faithfulness", judge="distance")
    reference = IsotonicRegression(y_min=0, y_max=1, out_of_bounds="clip", increasing=False).fit(distance, human)
    assert fit.map.predict(new) == pytest.approx(reference.predict(new), abs=1e-12)


def test_cross_validated_brier_ece_and_reliability(fitted):
    campaign, _, human, confident, _ = fitted
    fit = fit_calibration(campaign, metric="faithfulness", judge="confident", n_folds=5, seed=3)
    out_of_fold = np.empty(human.size)
    for train, test in KFold(5, shuffle=True, random_state=3).split(confident):
        model = IsotonicRegression(y_min=0, y_max=1, out_of_bounds="clip").fit(confident[train], human[train])
        out_of_fold[test] = model.predict(confident[test])
    cv = fit["cross_validated"]
    assert cv["brier"] == pytest.approx(brier_score_loss(human, out_of_fold))
    observed, predicted = calibration_curve(human, out_of_fold, n_bins=10, strategy="uniform")
    assert [b["observed"] for b in cv["reliability"]] == pytest.approx(observed.tolist())
    assert [b["mean_predicted"] for b in cv["reliability"]] == pytest.approx(predicted.tolist())
    assert cv["ece"] == pytest.approx(
        sum(b["n"] * abs(b["observed"] - b["mean_predicted"]) for b in cv["reliability"]) / human.size
    )
    # the over-confident raw score is far worse calibrated than the map, out of sample
    assert fit["raw_score"]["ece"] > 0.1 > 0.05 > cv["ece"] and fit["raw_score"]["brier"] > cv["brier"]
    assert expected_calibration_error(np.array([0.2, 0.8]), np.array([0.0, 1.0])) == pytest.approx(0.2)


def test_probabilities_for_new_scores_from_the_command_line(fitted, tmp_path):
    _, folder, _, _, _ = fitted
    (tmp_path / "new.csv").write_text("id,score\na,0.1\nb,0.95\nc,\n")
    run = run_cli(
        "calibration",
        str(folder),
        "--metric",
        "faithfulness",
        "--judge",
        "confident",
        "--score",
        "0.5",
        "--scores",
        str(tmp_path / "new.csv"),
        "--out",
        str(tmp_path / "out.csv"),
        "--save",
        str(tmp_path / "map.json"),
        "--json",
    )
    assert run.returncode == 0, run.stderr
    doc = json.loads(run.stdout)
    saved = CalibrationMap.load(tmp_path / "map.json")
    assert doc["scores"][0]["probability"] == pytest.approx(float(saved.predict([0.5])[0]))
    written = pd.read_csv(tmp_path / "out.csv")
    assert written["calibrated_probability"][:2].tolist() == pytest.approx(saved.predict([0.1, 0.95]).tolist())
    assert written["id"].tolist() == ["a", "b", "c"]
    again = run_cli(
        "calibration",
        str(folder),
        "--metric",
        "faithfulness",
        "--judge",
        "confident",
        "--scores",
        str(tmp_path / "new.csv"),
        "--out",
        str(tmp_path / "out.csv"),
    )
    assert again.returncode == 2 and "exists" in again.stderr
    (tmp_path / "bad.csv").write_text("score\n0.2\nhigh\n")
    bad = run_cli(
        "calibration",
        str(folder),
        "--metric",
        "faithfulness",
        "--judge",
        "confident",
        "--scores",
        str(tmp_path / "bad.csv"),
        "--out",
        str(tmp_path / "o2.csv"),
    )
    assert bad.returncode == 2 and "bad.csv, line 3, field 'score'" in bad.stderr
    assert not (tmp_path / "o2.csv").exists()


# Issue 24: a calibration map file (CalibrationMap.save writes it; a person may edit it, or another tool
# hand it over) is read through its declared schema: a damaged file is a DocumentError naming the file and
# the field, never a traceback (RecursionError), a map that fails only at predict, or a silent wrong one
# ("false" read as True, a probability of 5, scores out of order).
import math  # noqa: E402
import os  # noqa: E402

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from calibrate.base.documents import DocumentError  # noqa: E402

GOOD_MAP = {
    "metric": "faithfulness",
    "judge": "confident",
    "higher_is_better": False,
    "oriented_scores": [-0.9, -0.5, 0.2],
    "probabilities": [0.1, 0.4, 0.8],
}


def map_file(tmp_path, document) -> Path:
    path = tmp_path / "map.json"
    path.write_bytes(document if isinstance(document, bytes) else json.dumps(document).encode())
    return path


@pytest.mark.parametrize(
    "change, field",
    [
        ({"higher_is_better": "false"}, "higher_is_better"),  # bool("false") was True: the map ran backwards
        ({"probabilities": [0.1, 0.4, 5.0]}, "probabilities[2]"),  # a "probability" of 5 was given out
        ({"probabilities": [0.1, 0.4]}, "probabilities"),  # failed only at predict
        ({"oriented_scores": [0.2, -0.5, -0.9]}, "oriented_scores"),  # np.interp gave nonsense silently
        ({"probabilities": [0.8, 0.4, 0.1]}, "probabilities"),  # a map that falls as the score rises
        ({"oriented_scores": [], "probabilities": []}, "oriented_scores"),
        ({"oriented_scores": [-0.9, float("nan"), 0.2]}, "oriented_scores[1]"),
        ({"metric": ["faithfulness"]}, "metric"),
        ({"judge": None}, "judge"),
    ],
)
def test_a_damaged_calibration_map_names_the_file_and_field(tmp_path, change, field):
    path = map_file(tmp_path, GOOD_MAP | change)
    with pytest.raises(DocumentError) as caught:
        CalibrationMap.load(path)
    assert str(path) in str(caught.value) and any(p.field == field for p in caught.value.problems), str(caught.value)


@pytest.mark.parametrize(
    "content, words",
    [
        (b"[" * 100_000 + b"]" * 100_000, "nested deeper than 200 levels"),  # a RecursionError traceback before
        (b'{"metric": "f", ', "not valid JSON"),
        (b"\xff\xfe{}", "not UTF-8 text"),
        (b"", "not valid JSON"),
    ],
)
def test_a_calibration_map_that_is_not_json_is_a_clear_error(tmp_path, content, words):
    path = map_file(tmp_path, content)
    with pytest.raises(DocumentError) as caught:
        CalibrationMap.load(path)
    assert str(path) in str(caught.value) and words in str(caught.value)


def test_a_saved_map_reads_back_exactly(fitted, tmp_path):
    campaign = fitted[0]
    fit = fit_calibration(campaign, metric="faithfulness", judge="distance")
    back = CalibrationMap.load(fit.map.save(tmp_path / "map.json"))
    assert back == fit.map


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-10, 10) | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=10,
)


@settings(
    max_examples=int(os.environ.get("ATTACK_EXAMPLES", 300)),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    edits=st.lists(st.tuples(st.sampled_from([*GOOD_MAP, "other"]), st.none() | json_values), min_size=1, max_size=3)
)
def test_any_edit_of_a_calibration_map_loads_a_sound_map_or_names_the_file(tmp_path_factory, edits):
    document = dict(GOOD_MAP)
    for key, value in edits:
        if value is None:
            document.pop(key, None)
        else:
            document[key] = value
    path = map_file(tmp_path_factory.mktemp("m"), document)
    try:
        cmap = CalibrationMap.load(path)
    except DocumentError as exc:
        assert exc.problems and all(p.file == str(path) for p in exc.problems), str(exc)
        return
    # what was read is what the file says, and a sound map: probabilities in [0, 1], rising with the score
    assert (cmap.metric, cmap.judge, cmap.higher_is_better) == (
        document["metric"],
        document["judge"],
        document["higher_is_better"],
    )
    assert list(cmap.scores) == document["oriented_scores"] and list(cmap.probabilities) == document["probabilities"]
    predicted = cmap.predict(np.linspace(-2, 2, 41) * (1 if cmap.higher_is_better else -1))
    assert all(0 <= p <= 1 and not math.isnan(p) for p in predicted) and np.all(np.diff(predicted) >= 0)
