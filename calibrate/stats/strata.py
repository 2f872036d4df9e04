"""Strata of a judge's scores and ranks of values: the pure helpers the sample designs, the label
plans and the pass-rate estimates share."""

from __future__ import annotations

import numpy as np


def percentile_ranks(values: np.ndarray) -> np.ndarray:
    """Each value's midrank over the number of values, minus one half over it: in (0, 1)."""
    from scipy.stats import rankdata

    return (rankdata(values) - 0.5) / values.size


def score_edges(oriented: np.ndarray, n_strata: int) -> list[float]:
    """Stratum edges at the quantiles of a judge's (oriented) scores; tied scores stay in one stratum,
    so a judge with few distinct scores gives fewer strata.

    Examples
    --------
    >>> score_edges(np.arange(10.0), 5), score_edges(np.array([0, 0, 0, 1, 1, 2, 3.0]), 5)
    ([1.0, 3.0, 5.0, 7.0], [0.0, 1.0, 2.0])
    """
    interior = np.quantile(oriented, np.arange(1, n_strata) / n_strata, method="inverted_cdf")
    return [e for e in sorted(set(float(e) for e in interior)) if e < np.max(oriented)]


def score_strata(oriented: np.ndarray, edges: list[float]) -> np.ndarray:
    """The stratum of each score: stratum ``h`` holds the scores in ``(edges[h - 1], edges[h]]``."""
    return np.searchsorted(np.asarray(edges, dtype=float), oriented, side="left")
