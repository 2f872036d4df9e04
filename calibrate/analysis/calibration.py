"""Calibration map: from a judge's score to the probability that a human passes the case.

A score of 0.8 from a judge does not mean an 80% chance that a human would pass the answer. The map
is an isotonic regression (scikit-learn) of the human verdict on the judge's score, fitted on the
labelled cases (weighted by their sample designs): a non-decreasing step function, which is all a
score can promise. Its quality is measured out of sample, by k-fold cross-validation, as the Brier
score, the expected calibration error (ECE, over equal-width bins of the predicted probability) and a
reliability table; scores already on [0, 1] (DeepEval, RAGAS) are measured the same way as they
stand, for comparison.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import pandas as pd
from pydantic import ConfigDict, Field, FiniteFloat
from sklearn.isotonic import IsotonicRegression
from sklearn.model_selection import KFold

from calibrate.analysis.metric_warnings import MIN_TRUSTED_LABELS
from calibrate.base.documents import DocumentError, Schema, read_json, short
from calibrate.base.errors import Problem
from calibrate.base.files import replacing
from calibrate.base.params import checked
from calibrate.base.results import FRAME_COLUMNS, Result, typed
from calibrate.campaign import Campaign
from calibrate.campaign.reference import computed_once, judge_scores, pair

__all__ = [
    "CalibrationMap",
    "CalibrationResult",
    "MapFile",
    "calibration_maps",
    "expected_calibration_error",
    "fit_calibration",
    "reliability",
]


@dataclass(frozen=True)
class CalibrationMap:
    """A fitted map; :meth:`predict` gives the probability of a human pass for any score (linear
    between the fitted points, as scikit-learn's ``IsotonicRegression.predict``, flat beyond them).

    Parameters
    ----------
    metric, judge : str
        What the map was fitted for.
    higher_is_better : bool
        The judge's orientation: ``scores`` are oriented (higher is better).
    scores, probabilities : tuple of float
        The fitted points: oriented score -> probability of a human pass (non-decreasing).

    Examples
    --------
    >>> m = CalibrationMap("faithfulness", "gpt-judge", True, (0.2, 0.6, 0.9), (0.1, 0.5, 0.9))
    >>> m.predict([0.0, 0.4, 0.9, 1.0]).round(2).tolist()
    [0.1, 0.3, 0.9, 0.9]
    """

    metric: str
    judge: str
    higher_is_better: bool
    scores: tuple[float, ...]
    probabilities: tuple[float, ...]

    def predict(self, scores) -> np.ndarray:
        x = np.asarray(scores, dtype=float)
        sign = 1.0 if self.higher_is_better else -1.0
        return np.interp(sign * x, np.asarray(self.scores), np.asarray(self.probabilities))

    def to_dict(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "judge": self.judge,
            "higher_is_better": self.higher_is_better,
            "oriented_scores": list(self.scores),
            "probabilities": list(self.probabilities),
        }

    def save(self, path: str | Path) -> Path:
        path = Path(path)
        with replacing(path) as handle:
            handle.write(json.dumps(self.to_dict(), indent=1) + "\n")
        return path

    @classmethod
    def load(cls, path: str | Path) -> CalibrationMap:
        """A map :meth:`save` wrote, read through its declared format (:class:`MapFile`).

        Raises
        ------
        DocumentError
            A file that is not JSON (or too large, or nested too deep), or not a sound map: a field
            missing or of another type, a probability outside [0, 1], fewer probabilities than scores,
            scores not rising, probabilities falling; each problem names the file and the field.

        Examples
        --------
        >>> import tempfile, pathlib
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "map.json"
        >>> m = CalibrationMap("faithfulness", "gpt-judge", True, (0.2, 0.6, 0.9), (0.1, 0.5, 0.9))
        >>> CalibrationMap.load(m.save(path)) == m
        True
        >>> _ = path.write_text(json.dumps(m.to_dict() | {"probabilities": [0.1, 0.5, 9]}))
        >>> CalibrationMap.load(path)                                   # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        calibrate.base.documents.DocumentError: 1 problem in .../map.json:
          .../map.json, field 'probabilities[2]': Input should be less than or equal to 1 (found 9); expected a calibration map (calibrate calibration --save writes one)
        """
        source = str(path)
        d = read_json(path, MapFile, expected=MAP_EXPECTED, max_bytes=MAP_MAX_BYTES)
        problems = []
        if len(d.probabilities) != len(d.oriented_scores):
            problems.append(
                Problem(
                    source,
                    f"{len(d.probabilities)} probabilities for {len(d.oriented_scores)} scores",
                    field="probabilities",
                    expected="one probability per score",
                )
            )
        if any(b <= a for a, b in zip(d.oriented_scores, d.oriented_scores[1:])):
            problems.append(
                Problem(
                    source,
                    "the scores do not rise",
                    field="oriented_scores",
                    value=short(list(d.oriented_scores)),
                    expected="each score larger than the one before (scikit-learn's X_thresholds_)",
                )
            )
        if any(b < a for a, b in zip(d.probabilities, d.probabilities[1:])):
            problems.append(
                Problem(
                    source,
                    "the probabilities fall as the score rises",
                    field="probabilities",
                    value=short(list(d.probabilities)),
                    expected="each probability at least the one before (an isotonic map)",
                )
            )
        if problems:
            raise DocumentError(problems, source=source)
        return cls(d.metric, d.judge, d.higher_is_better, tuple(d.oriented_scores), tuple(d.probabilities))


#: what a calibration map file holds
MAP_EXPECTED = "a calibration map (calibrate calibration --save writes one)"
#: the largest map file read (a map has at most one point per labelled case)
MAP_MAX_BYTES = 64 * 2**20


class MapFile(Schema):
    """The file :meth:`CalibrationMap.save` writes: strict types (``"false"`` is no boolean), finite
    scores, probabilities in [0, 1], at least one point."""

    model_config = ConfigDict(strict=True)

    metric: str
    judge: str
    higher_is_better: bool
    oriented_scores: list[FiniteFloat] = Field(min_length=1)
    probabilities: list[Annotated[float, Field(ge=0.0, le=1.0)]] = Field(min_length=1)


def _bins(probability: np.ndarray, n_bins: int) -> np.ndarray:
    """Equal-width bins of [0, 1], an edge belonging to the bin below (scikit-learn's calibration_curve)."""
    return np.searchsorted(np.linspace(0.0, 1.0, n_bins + 1)[1:-1], np.asarray(probability))


def reliability(
    probability: np.ndarray, outcome: np.ndarray, weights: np.ndarray | None = None, n_bins: int = 10
) -> list[dict[str, float]]:
    """Per equal-width bin of the predicted probability: its cases, mean prediction and observed rate.

    Examples
    --------
    >>> reliability(np.array([0.05, 0.15, 0.95, 0.9]), np.array([0, 1, 1, 1]), n_bins=2)
    [{'low': 0.0, 'high': 0.5, 'n': 2, 'mean_predicted': 0.1, 'observed': 0.5}, {'low': 0.5, 'high': 1.0, 'n': 2, 'mean_predicted': 0.925, 'observed': 1.0}]
    """
    w = np.ones(probability.size) if weights is None else np.asarray(weights, float)
    index = _bins(probability, n_bins)
    out = []
    for b in range(n_bins):
        at = index == b
        if at.any():
            out.append(
                {
                    "low": b / n_bins,
                    "high": (b + 1) / n_bins,
                    "n": int(at.sum()),
                    "mean_predicted": float(np.average(probability[at], weights=w[at])),
                    "observed": float(np.average(outcome[at], weights=w[at])),
                }
            )
    return out


def expected_calibration_error(
    probability: np.ndarray, outcome: np.ndarray, weights: np.ndarray | None = None, n_bins: int = 10
) -> float:
    """``sum_b (weight of bin b) |mean prediction - observed rate|`` over equal-width bins."""
    w = np.ones(probability.size) if weights is None else np.asarray(weights, float)
    index = _bins(probability, n_bins)
    total = 0.0
    for b in np.unique(index):
        at = index == b
        total += w[at].sum() * abs(np.average(probability[at], weights=w[at]) - np.average(outcome[at], weights=w[at]))
    return float(total / w.sum())


def _quality(probability, outcome, weights, n_bins) -> dict[str, Any]:
    w = np.ones(probability.size) if weights is None else weights
    return {
        "brier": float(np.average((probability - outcome) ** 2, weights=w)),
        "ece": expected_calibration_error(probability, outcome, weights, n_bins),
        "reliability": reliability(probability, outcome, weights, n_bins),
    }


class CalibrationResult(Result):
    """What :func:`fit_calibration` returns: the ``calibrate calibration --json`` document, and the
    fitted :class:`CalibrationMap` as ``.map``."""

    def __init__(self, document: dict[str, Any], cmap: CalibrationMap):
        super().__init__(document | {"map": cmap.to_dict()}, _quality_frame)
        self.map = cmap

    def __reduce__(self):
        return (_rebuilt, (dict(self), self.map))


def _rebuilt(document: dict[str, Any], cmap: CalibrationMap) -> CalibrationResult:
    return CalibrationResult(document, cmap)


def _quality_frame(document: dict[str, Any]) -> pd.DataFrame:
    rows = [
        {
            "metric": document["metric"],
            "judge": document["judge"],
            "slice": None,
            "statistic": f"{part}.{measure}",
            "estimate": float(document[part][measure]),
            "ci_low": None,
            "ci_high": None,
            "method": method,
            "n": document["n"],
            "reason": None,
        }
        for part, method in (
            ("cross_validated", f"{document['cross_validated']['folds']}-fold cross-validation"),
            ("raw_score", "the raw score read as a probability"),
        )
        if document.get(part)
        for measure in ("brier", "ece")
    ]
    return typed(pd.DataFrame(rows, columns=list(FRAME_COLUMNS)))


@checked("seed")
def fit_calibration(
    campaign: Campaign,
    *,
    metric: str,
    judge: str,
    n_folds: int = 5,
    n_bins: int = 10,
    seed: int = 0,
    scores: Sequence[float] = (),
) -> CalibrationResult:
    """Fit the map of ``judge`` on ``metric`` and measure it by ``n_folds``-fold cross-validation.

    Parameters
    ----------
    campaign : Campaign
    metric, judge : str
        The metric, and its judge (a name or ``rater@run_id``).
    n_folds : int
        Folds of the cross-validation that measures the map (Brier score, calibration error).
    n_bins : int
        Bins of the reliability table and the expected calibration error.
    seed : int
        Seed of the folds.
    scores : sequence of float
        Scores to map now: each is listed with its probability under ``"scores"``.

    Returns
    -------
    CalibrationResult
        The ``calibrate calibration --json`` document: ``{"metric", "judge", "n", "map": {...},
        "cross_validated": {"brier", "ece", "reliability"}, "raw_score": {...} or None, "warnings",
        "scores"}``; ``.map`` is the :class:`CalibrationMap` (``.predict(scores)``, ``.save(path)``),
        ``.to_frame()`` the Brier scores and calibration errors.

    Examples
    --------
    >>> import calibrate
    >>> c = calibrate.load_campaign(calibrate.demo_campaign_path())
    >>> fit = fit_calibration(c, metric="relevance", judge="Olz-gpt4o", scores=[2])
    >>> fit.map.predict([0, 1, 2, 3]).round(2).tolist(), round(fit["scores"][0]["probability"], 2)
    ([0.09, 0.35, 0.54, 0.67], 0.54)
    """
    campaign.metric_names([metric])
    joined = pair(campaign, metric, judge)
    rated, ids = joined.judge, joined.case_ids
    if ids.size < max(2 * n_folds, 10):
        raise ValueError(
            f"judge {rated.name} on {metric}: {ids.size} labelled case(s) it scored; a calibration map "
            f"needs at least {max(2 * n_folds, 10)}"
        )
    y, x, weights = joined.passes.astype(float), joined.oriented, joined.weights

    def model() -> IsotonicRegression:
        return IsotonicRegression(y_min=0.0, y_max=1.0, increasing=True, out_of_bounds="clip")

    fitted = model().fit(x, y, sample_weight=weights)
    out_of_fold = np.empty(ids.size)
    for train, test in KFold(n_folds, shuffle=True, random_state=seed).split(x):
        part = model().fit(x[train], y[train], sample_weight=None if weights is None else weights[train])
        out_of_fold[test] = part.predict(x[test])
    cmap = CalibrationMap(
        metric,
        rated.name,
        rated.rater.higher_is_better,
        tuple(map(float, fitted.X_thresholds_)),
        tuple(map(float, fitted.y_thresholds_)),
    )
    doc: dict[str, Any] = {
        "metric": metric,
        "judge": rated.name,
        "n": int(ids.size),
        "weighted": weights is not None,
        "map": None,
        "cross_validated": {"folds": n_folds, **_quality(out_of_fold, y, weights, n_bins)},
        "base_rate": float(np.average(y, weights=weights)),
    }
    raw = joined.score
    doc["raw_score"] = (
        _quality(raw if rated.rater.higher_is_better else 1 - raw, y, weights, n_bins)
        if raw.min() >= 0 and raw.max() <= 1
        else None
    )
    doc["warnings"] = []
    if ids.size < MIN_TRUSTED_LABELS:
        doc["warnings"].append(
            f"fitted on {ids.size} labelled cases: under {MIN_TRUSTED_LABELS}, each probability "
            "rests on a handful of cases and carries no interval; it is not yet trustworthy"
        )
    doc["scores"] = [{"score": v, "probability": float(p)} for v, p in zip(scores, cmap.predict(list(scores)))]
    return CalibrationResult(doc, cmap)


@computed_once()
def calibration_maps(campaign: Campaign, *, n_folds: int = 5, seed: int = 0) -> list[dict[str, Any]]:
    """:func:`fit_calibration` of every judge of every metric with enough labels (the report's section)."""
    out = []
    for metric in sorted(campaign.metrics):
        for judge in judge_scores(campaign, metric):
            try:
                fit = fit_calibration(campaign, metric=metric, judge=judge.name, n_folds=n_folds, seed=seed)
            except ValueError:
                continue
            out.append({k: v for k, v in fit.items() if k != "scores"})
    return out
