"""Selective evaluation: the band of scores in which a judge may decide alone, with a guaranteed agreement
with the humans on the cases it decides (*Trust or Escalate*, Jung, Brahman & Choi, ICLR 2025).

A judge gives case ``i`` a score ``o_i`` (oriented: higher is better) and its verdict is pass when
``o_i >= threshold``. A **band** ``(fail_below, pass_at)`` lets the judge decide a case alone when
``o_i >= pass_at`` (pass) or ``o_i < fail_below`` (fail); the cases between go to people. The judge's
disagreement with the human verdict on the cases a band decides is ``r = P(judge != human | decided)``.

**The candidate bands** (:func:`candidate_bands`) are nested and ordered from the most confident (deciding
the fewest cases) to the least (deciding every case), from the judge's scores alone, never the labels:

- the **boundary** ``b`` is halfway between the highest score the judge fails and the lowest it passes, over
  every case it scored (on a 0-3 scale passing at 2, ``b = 1.5``; on a continuous score, about the
  threshold). A case's **distance** is ``|o_i - b|``: how far the judge's score is from its own boundary;
- band ``j`` decides the cases at distance ``>= D_j``, ``D_1 > D_2 > ...`` the distinct distances (the
  last band decides every case); with more than ``max_bands`` of them, the bands kept are those whose
  share of the cases decided crosses a step of ``1 / max_bands``;
- the edges are written as scores the judge gave: ``pass_at`` the lowest score it passes alone,
  ``fail_below`` the lowest score it does not fail alone; the last band's are both the threshold (the judge
  decides every case, as it does today).

The bands depend on every judge-scored case's score (labelled or not), which the labels cannot move; the
bands that could not pass even with no disagreement at all (too few labelled cases in them: a function of
the labelled cases' scores and weights, not of their labels) are left out of the front of the sequence,
where they would end it at once.

**The test** (:func:`select_band`) is fixed-sequence testing (Bauer 1991; the Learn-then-Test form of
Angelopoulos et al. 2021, as Trust or Escalate uses it): band ``j``'s null hypothesis is ``r_j > 1 - A``;
the bands are tested in order, each at level ``delta = 1 - C``, and testing stops at the first band whose
null hypothesis stands. The last band rejected is the band chosen (none: the judge decides nothing). Since
the order is fixed before the labels are read, the probability that *any* band rejected has ``r_j > 1 - A``
is at most ``delta``: with probability at least ``C`` the judge's agreement on the cases the chosen band
decides is at least ``A``. Each test is

- **exact binomial** (unweighted labels): the one-sided Clopper-Pearson upper bound of ``r_j`` at level
  ``C`` from the ``k_j`` disagreements among the ``n_j`` labelled cases band ``j`` decides, at most
  ``1 - A`` (the same as the binomial test's ``P(X <= k_j; n_j, 1 - A) <= delta``);
- **betting, design-weighted** (labels of a targeted sample, each case weighted by ``w_i = 1 / pi_i`` up to
  a constant): the e-value ``E = mean_f prod_i (1 + lambda_f w_i d_i (1 - A - x_i))`` (``d_i`` decided,
  ``x_i`` disagreement, ``lambda_f = f / (w_max A)`` for the bets ``f`` of :data:`BET_FRACTIONS`) at
  least ``1 / delta`` (Waudby-Smith & Ramdas, "Estimating means of bounded random variables by betting",
  2024, at a fixed number of cases: Markov's inequality). Under ``r_j > 1 - A`` each factor has mean at
  most 1, so ``P(E >= 1 / delta) <= delta``. The bets are a fixed grid (no bet learns from earlier
  cases), so ``E`` does not depend on the cases' order; ``w_max`` is the largest weight of the labelled
  cases, known before their labels. Its upper bound (:func:`betting_upper_bound`) is the smallest rate
  the same e-value rejects;
- **exact binomial on the leading bands of one inclusion probability** (design-weighted labels, with
  ``equal_probability``): a band every case of which (labelled or not) had the same probability of being
  labelled holds a uniform sample of its cases, so it takes the exact test, as if unweighted; the bands after
  the first that decides another case take the betting test. Each test keeps its level, so fixed-sequence
  testing does too.

**Other orders** (:func:`signal_bands`, :func:`select_signal_band`). The bands may be ordered by any
confidence the judge gives each case without the labels (the agreement among its repeats, among judges of
other families: :mod:`calibrate.analysis.escalate_signals`), ties broken by the score's distance: band ``j``
decides the cases ranked at or above its cut by (signal, distance), and the tests are the same. The order
must still be fixed before the labels are read; choosing the best of several orders on the same labels
needs the level split between them (Bonferroni: each at ``delta / S``).

**Assumptions.** The labelled cases are drawn from the judge-scored cases at random: uniformly (the
exact binomial test), or each with a known inclusion probability (the betting test, which treats them as
independent draws with probability proportional to it: the with-replacement form of a stratified design,
a close and usual approximation of one drawn without replacement); the human verdict is fixed per case
(its noise is part of ``r``); and the cases the band will decide later are exchangeable with these. The
guarantee is over the draw of the labelled cases: it is about the agreement on *all* the cases the band
decides (the population, not the labelled ones, whose own agreement is shown beside it); it says nothing
of a slice of them, of cases of another kind (a new application, a drifted judge), or of the cases sent to
people.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from calibrate.stats.intervals import clopper_pearson_upper

__all__ = [
    "BET_FRACTIONS",
    "MAX_BANDS",
    "BandSelection",
    "CandidateBands",
    "SignalBands",
    "betting_log_evidence",
    "betting_upper_bound",
    "candidate_bands",
    "fixed_sequence",
    "labels_to_pass",
    "select_band",
    "select_signal_band",
    "signal_bands",
]

#: the bets mixed in the betting test, as fractions of the largest bet that keeps every factor positive
BET_FRACTIONS = (0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
#: at most about this many candidate bands: finer steps of the scores are merged
MAX_BANDS = 100
#: bisection steps of an upper bound (to about 1e-12)
_STEPS = 42


@dataclass(frozen=True)
class CandidateBands:
    """The nested candidate bands, most confident first (see the module docstring); scores oriented.

    Attributes
    ----------
    threshold, boundary : float
        The judge's pass threshold, and the boundary ``b`` the distances are measured from.
    cut : ndarray
        Band ``j`` decides the cases at distance above ``cut[j]`` (the last: every case, ``cut`` -1).
    pass_at, fail_below : ndarray
        Each band's edges: it passes a case alone at ``o >= pass_at``, fails it at ``o < fail_below``.
    n_decided : ndarray of int
        The cases of ``scores`` each band decides (non-decreasing), of ``n_cases``.
    """

    threshold: float
    boundary: float
    cut: np.ndarray
    pass_at: np.ndarray
    fail_below: np.ndarray
    n_decided: np.ndarray
    n_cases: int

    def distance(self, scores: ArrayLike) -> np.ndarray:
        """Each score's distance from the boundary."""
        return np.abs(np.asarray(scores, dtype=float) - self.boundary)

    def decided(self, scores: ArrayLike, band: int) -> np.ndarray:
        """Whether band ``band`` decides each of ``scores`` (by its edges: new scores too)."""
        o = np.asarray(scores, dtype=float)
        return (o >= self.pass_at[band]) | (o < self.fail_below[band])

    def first_band(self, scores: ArrayLike) -> np.ndarray:
        """The first band that decides each of ``scores`` (by the edges; the last band decides every score)."""
        o = np.asarray(scores, dtype=float)
        passes = np.searchsorted(-self.pass_at, -o, side="left")  # the first band with pass_at <= o
        fails = np.searchsorted(self.fail_below, o, side="right")  # the first band with fail_below > o
        return np.minimum(np.minimum(passes, fails), self.cut.size - 1)


def candidate_bands(scores: ArrayLike, threshold: float, *, max_bands: int = MAX_BANDS) -> CandidateBands:
    """The nested candidate bands of a judge's (oriented) ``scores`` of every case, passing at ``threshold``.

    Examples
    --------
    >>> b = candidate_bands([0, 1, 1, 2, 3, 3], 2)
    >>> b.boundary, b.pass_at.tolist(), b.fail_below.tolist(), b.n_decided.tolist()
    (1.5, [3.0, 2.0], [1.0, 2.0], [3, 6])
    """
    o = np.asarray(scores, dtype=float)
    if o.ndim != 1 or o.size == 0 or not np.all(np.isfinite(o)):
        raise ValueError("scores: one finite score a case, at least one case")
    if max_bands < 1:
        raise ValueError(f"max_bands={max_bands}: at least 1")
    below, above = o[o < threshold], o[o >= threshold]
    boundary = float((below.max() + above.min()) / 2) if below.size and above.size else float(threshold)
    ordered = np.sort(np.abs(o - boundary))
    levels = np.unique(ordered)[::-1]
    cut = np.r_[(levels[:-1] + levels[1:]) / 2, -1.0]
    n_decided = np.asarray(o.size - np.searchsorted(ordered, cut, side="right"))
    if cut.size > max_bands:
        keep = _thinned(n_decided, o.size, max_bands)
        cut, n_decided = cut[keep], n_decided[keep]
    values = np.unique(o)
    reach = np.maximum(cut, 0.0)
    at = np.searchsorted(values, boundary + reach, side="left")
    pass_at = np.where(at < values.size, values[np.minimum(at, values.size - 1)], boundary + reach)
    at = np.searchsorted(values, boundary - reach, side="right")
    fail_below = np.where(at < values.size, values[np.minimum(at, values.size - 1)], boundary - reach)
    every = cut < 0  # the band that decides every case is the judge's own verdict: both edges at its threshold
    bands = CandidateBands(
        float(threshold),
        boundary,
        cut,
        np.where(every, threshold, np.maximum(pass_at, threshold)),
        np.where(every, threshold, np.minimum(fail_below, threshold)),
        n_decided.astype(np.int64),
        int(o.size),
    )
    # the counts by the edges, which decide (the distances agree with them but for rounding at a tie)
    counted = np.cumsum(np.bincount(bands.first_band(o), minlength=cut.size))
    return dataclasses.replace(bands, n_decided=counted.astype(np.int64))


def _thinned(n_decided: np.ndarray, n_cases: int, max_bands: int) -> np.ndarray:
    """Which bands to keep: the last band of each step of ``1 / max_bands`` of the cases decided."""
    step = np.floor(n_decided * max_bands / n_cases + 1e-9)
    return np.r_[step[1:] != step[:-1], True]


@dataclass(frozen=True)
class SignalBands:
    """Nested candidate bands ordered by a label-free confidence signal (see :func:`signal_bands`).

    Attributes
    ----------
    rank : ndarray of int
        Each case's rank by (signal, distance), 0 the least confident.
    cut : ndarray of int
        Band ``j`` decides the cases of rank at least ``cut[j]`` (descending; the last is 0: every case).
    signal_at, distance_at : ndarray
        The least (signal, distance) band ``j`` decides: it decides a case of a higher signal, or of this
        signal at this distance or farther (new cases too: :meth:`decides`).
    n_decided : ndarray of int
        The cases each band decides (non-decreasing), of ``n_cases``.
    """

    rank: np.ndarray
    cut: np.ndarray
    signal_at: np.ndarray
    distance_at: np.ndarray
    n_decided: np.ndarray
    n_cases: int

    def first_band(self, rank: ArrayLike) -> np.ndarray:
        """The first band that decides each case of rank ``rank``."""
        return np.searchsorted(-self.cut, -np.asarray(rank), side="left")

    def decided(self, rank: ArrayLike, band: int) -> np.ndarray:
        """Whether band ``band`` decides each case of rank ``rank``."""
        return np.asarray(rank) >= self.cut[band]

    def decides(self, signal: ArrayLike, distance: ArrayLike, band: int) -> np.ndarray:
        """Whether band ``band`` decides cases of these signals and distances (new cases too)."""
        s, d = np.asarray(signal, dtype=float), np.asarray(distance, dtype=float)
        at = self.signal_at[band]
        return (s > at) | ((s == at) & (d >= self.distance_at[band]))


def signal_bands(signal: ArrayLike, distance: ArrayLike, *, max_bands: int = MAX_BANDS) -> SignalBands:
    """The nested candidate bands of every judge-scored case ordered by a confidence ``signal`` (higher: more
    sure), ties broken by ``distance`` (the score's distance from the judge's threshold): band ``j`` decides
    the cases ranked at or above its cut, most confident first, the last band every case. Neither input is a
    label, so the order is fixed before the labels are read, as fixed-sequence testing needs.

    Examples
    --------
    >>> b = signal_bands([1.0, 1.0, 0.6, 0.8, 0.6], [0.3, 0.1, 0.5, 0.2, 0.1])
    >>> b.rank.tolist(), b.signal_at.tolist(), b.n_decided.tolist()
    ([4, 3, 1, 2, 0], [1.0, 1.0, 0.8, 0.6, 0.6], [1, 2, 3, 4, 5])
    """
    s, d = np.asarray(signal, dtype=float), np.asarray(distance, dtype=float)
    if s.ndim != 1 or s.size == 0 or s.shape != d.shape or not np.all(np.isfinite(s) & np.isfinite(d)):
        raise ValueError("signal and distance: one finite value of each a case, at least one case")
    if max_bands < 1:
        raise ValueError(f"max_bands={max_bands}: at least 1")
    levels, rank = np.unique(np.column_stack([s, d]), axis=0, return_inverse=True)
    rank = rank.reshape(-1)
    cut = np.arange(len(levels))[::-1]
    n_decided = np.cumsum(np.bincount(rank, minlength=len(levels))[::-1])
    if cut.size > max_bands:
        keep = _thinned(n_decided, s.size, max_bands)
        cut, n_decided = cut[keep], n_decided[keep]
    return SignalBands(
        rank.astype(np.int64), cut, levels[cut, 0], levels[cut, 1], n_decided.astype(np.int64), int(s.size)
    )


@dataclass(frozen=True)
class BandSelection:
    """What :func:`select_band` found. Per candidate band (``bands``): the labelled cases it decides
    (``n_labelled``), their disagreements (``disagreements``), their weighted disagreement rate
    (``rate``), the upper bound of the disagreement rate (``upper``: nan for a band not tested, or not
    computed) and whether its test passed (``passed``: False for a band not tested); ``tested`` says which
    were tested (from ``start``, the first, to the first that failed), ``chosen`` the band chosen (-1: none), ``method`` the test's name."""

    bands: CandidateBands | SignalBands
    agreement: float
    confidence: float
    method: str
    n_labelled: np.ndarray
    disagreements: np.ndarray
    rate: np.ndarray
    upper: np.ndarray
    passed: np.ndarray
    tested: np.ndarray
    start: int
    chosen: int


def betting_log_evidence(errors: ArrayLike, ratios: ArrayLike, rate: ArrayLike, *, counts=None) -> np.ndarray:
    """The log of the betting e-value against "the disagreement rate is at least ``rate``", one per bet of
    :data:`BET_FRACTIONS` (last axis), from the cases' disagreements and weight ratios ``w_i / w_max``.

    With ``counts`` (groups x kinds), ``errors`` and ``ratios`` are the distinct kinds of case and
    ``counts`` how many of each every group holds; ``rate`` then has one value per group.

    Examples
    --------
    >>> betting_log_evidence([0] * 40, [1.0] * 40, 0.1).round(2).tolist()[-3:]   # log(20) = 3.00
    [3.0, 3.41, 3.81]
    """
    x = np.asarray(errors, dtype=float)
    r = np.asarray(ratios, dtype=float)
    theta = np.asarray(rate, dtype=float)
    f = np.asarray(BET_FRACTIONS)
    odds = (theta / (1 - theta))[..., None, None]  # groups x 1 x 1 (or 1 x 1)
    logs = np.where(x[:, None] > 0, np.log1p(-f * r[:, None]), np.log1p(f * r[:, None] * odds))
    if counts is None:
        return logs.sum(axis=-2)
    return np.einsum(
        "gk,gkf->gf", np.asarray(counts, dtype=float), np.broadcast_to(logs, (len(counts), *logs.shape[-2:]))
    )


def _log_mix(logs: np.ndarray) -> np.ndarray:
    """log of the mean over the bets (last axis) of exp(logs)."""
    top = logs.max(axis=-1, keepdims=True)
    return (top + np.log(np.mean(np.exp(logs - top), axis=-1, keepdims=True)))[..., 0]


def betting_upper_bound(errors: ArrayLike, ratios: ArrayLike, *, confidence: float = 0.95, counts=None) -> np.ndarray:
    """The one-sided betting upper bound of a (design-weighted) disagreement rate at a fixed number of
    cases: the smallest rate whose e-value (:func:`betting_log_evidence`) reaches ``1 / (1 - confidence)``
    (the e-value rises with the rate, so bisection finds it); 1 when none below 1 does.

    Examples
    --------
    >>> round(float(betting_upper_bound([0] * 97 + [1] * 3, [1.0] * 100)), 4)   # Clopper-Pearson: 0.0757
    0.1025
    """
    goal = np.log(1 / (1 - confidence))
    groups = 1 if counts is None else len(counts)
    low: np.ndarray = np.zeros(groups)
    high: np.ndarray = np.ones(groups)
    for _ in range(_STEPS):
        middle = (low + high) / 2
        theta = middle if counts is not None else middle[0]
        rejected = _log_mix(betting_log_evidence(errors, ratios, theta, counts=counts)) >= goal
        high, low = np.where(rejected, middle, high), np.where(rejected, low, middle)
    return high if counts is not None else high[0]


def _binomial(order_errors, k, allowed, confidence):
    """Per band of ``k`` decided cases (the first of the order): disagreements, upper bound, whether it could
    pass with none, whether it passes."""
    cumulative = np.r_[0, np.cumsum(order_errors)]
    disagreements = cumulative[k]
    upper = np.where(k > 0, clopper_pearson_upper(disagreements, np.maximum(k, 1), confidence=confidence), 1.0)
    possible = np.where(k > 0, clopper_pearson_upper(0, np.maximum(k, 1), confidence=confidence), 1.0) <= allowed
    return disagreements, upper, possible, upper <= allowed + 1e-12


def _kinds(order_errors, order_ratios, k):
    """The distinct kinds of case (disagreement, weight ratio), and how many of each the first ``k[j]``
    cases of the order hold (bands x kinds)."""
    table = np.column_stack([order_errors, order_ratios])
    kinds, code = np.unique(table, axis=0, return_inverse=True)
    code = code.reshape(-1)
    band_of = np.searchsorted(k, np.arange(code.size), side="right")  # the first band deciding each case
    first = np.zeros((k.size + 1, len(kinds)))
    np.add.at(first, (band_of, code), 1.0)
    return kinds, np.cumsum(first, axis=0)[:-1]


def _betting(order_errors, order_ratios, k, allowed, confidence, bounds):
    """:func:`_binomial` for the betting test of design-weighted cases."""
    kinds, counts = _kinds(order_errors, order_ratios, k)
    goal = np.log(1 / (1 - confidence))
    theta = np.full(k.size, allowed)
    passes = _log_mix(betting_log_evidence(kinds[:, 0], kinds[:, 1], theta, counts=counts)) >= goal
    clean = counts.copy()
    clean[:, kinds[:, 0] > 0] = 0  # the same cases without a disagreement
    possible = _log_mix(betting_log_evidence(kinds[:, 0], kinds[:, 1], theta, counts=clean)) >= goal
    disagreements = counts[:, kinds[:, 0] > 0].sum(axis=1).round().astype(np.int64)
    upper = betting_upper_bound(kinds[:, 0], kinds[:, 1], confidence=confidence, counts=counts) if bounds else None
    return disagreements, upper, possible, passes


def fixed_sequence(possible: np.ndarray, passes: np.ndarray) -> tuple[int, int, np.ndarray]:
    """Fixed-sequence testing over bands in their order: from the first band that could pass at all
    (``possible``), while each passes; the first tested, the last passed (-1: none), and which were tested.

    Examples
    --------
    >>> start, chosen, tested = fixed_sequence(np.array([0, 1, 1, 1, 1], bool), np.array([0, 1, 1, 0, 1], bool))
    >>> start, chosen, tested.tolist()
    (1, 2, [False, True, True, True, False])
    """
    n = possible.size
    start = int(np.argmax(possible)) if possible.any() else n
    failed = np.flatnonzero(~passes[start:])
    chosen = start + (int(failed[0]) if failed.size else n - start) - 1
    chosen = chosen if chosen >= start else -1
    tested = np.zeros(n, dtype=bool)
    tested[start : (chosen + 2 if chosen >= 0 else start + 1)] = True
    return start, chosen, tested


def _checked(score_labelled, human_pass, agreement, confidence) -> tuple[np.ndarray, np.ndarray]:
    """The labelled cases' scores and verdicts as arrays, the target and confidence checked."""
    for name, value in (("agreement", agreement), ("confidence", confidence)):
        if not 0 < value < 1:
            raise ValueError(f"{name}={value!r}: expected a probability between 0 and 1 (both excluded)")
    o = np.asarray(score_labelled, dtype=float)
    human = np.asarray(human_pass, dtype=bool)
    if o.shape != human.shape or o.ndim != 1:
        raise ValueError("score_labelled and human_pass: one of each a labelled case")
    return o, human


def _exact_bands(first_all, equal_probability, ratios: np.ndarray, k: np.ndarray) -> int:
    """How many leading bands decide only cases of one inclusion probability (``equal_probability``, per case
    of all, each decided first by band ``first_all``; None: 0). Their labelled cases weigh alike, as they then
    must (a ValueError otherwise)."""
    if equal_probability is None:
        return 0
    equal = np.asarray(equal_probability, dtype=bool)
    if equal.shape != np.shape(first_all):
        raise ValueError("equal_probability: one value a case of score_all")
    exact = int(first_all[~equal].min()) if (~equal).any() else int(k.size)
    if exact and k[exact - 1] and np.ptp(ratios[: k[exact - 1]]) > 1e-9:
        raise ValueError("equal_probability: the labelled cases of a band of one inclusion probability weigh unalike")
    return exact


def _ratios(weights: ArrayLike, shape: tuple[int, ...], order: np.ndarray) -> np.ndarray:
    """The labelled cases' weights over the largest, in ``order``."""
    w = np.asarray(weights, dtype=float)
    if w.shape != shape or np.any(~(w > 0)) or not np.all(np.isfinite(w)):
        raise ValueError("weights: one positive, finite weight a labelled case")
    return (w / w.max())[order]


def _weighted(errors, ratios, k, allowed, confidence, bounds, exact: int):
    """The betting test of each band, the exact binomial one of the first ``exact``, and the method's name."""
    disagreements, upper, possible, passes = _betting(errors, ratios, k, allowed, confidence, bounds)
    method = "betting (one-sided, design-weighted, fixed n)"
    if exact:
        lead = np.arange(k.size) < exact
        tests = zip(_binomial(errors, k, allowed, confidence), (disagreements, upper, possible, passes))
        disagreements, upper, possible, passes = (None if b is None else np.where(lead, a, b) for a, b in tests)
        method += f"; exact binomial on the first {exact} band(s), whose cases had one inclusion probability"
    return disagreements, upper, possible, passes, method


def select_band(
    score_labelled: ArrayLike,
    human_pass: ArrayLike,
    score_all: ArrayLike,
    threshold: float,
    *,
    agreement: float,
    confidence: float = 0.95,
    weights: ArrayLike | None = None,
    equal_probability: ArrayLike | None = None,
    max_bands: int = MAX_BANDS,
    bounds: bool = True,
) -> BandSelection:
    """The band chosen by fixed-sequence testing (see the module docstring).

    Parameters
    ----------
    score_labelled, human_pass : array_like
        The labelled cases' oriented scores and human verdicts (True: pass).
    score_all : array_like
        The oriented scores of every case the judge scored (the labelled ones among them).
    threshold : float
        The judge's pass threshold (oriented), chosen without these labels.
    agreement, confidence : float
        The target ``A`` and the probability ``C`` of reaching it, both in (0, 1).
    weights : array_like, optional
        The labelled cases' design weights (inverse inclusion probabilities, up to a constant): the betting
        test; None: the exact binomial one.
    equal_probability : array_like of bool, optional
        With ``weights``, per case of ``score_all``: it is where cases had one inclusion probability (module docstring).
    max_bands : int
        About this many candidate bands at most.
    bounds : bool
        Whether to compute the betting test's upper bounds (nan otherwise; a simulation reads the tests only).

    Returns
    -------
    BandSelection

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> s = rng.random(2000); h = rng.random(2000) < 1 / (1 + np.exp(-12 * (s - 0.5)))
    >>> found = select_band(s[:500], h[:500], s, 0.5, agreement=0.9)
    >>> c = found.chosen
    >>> round(float(found.bands.pass_at[c]), 2), round(float(found.bands.fail_below[c]), 2), found.method
    (0.57, 0.44, 'Clopper-Pearson (exact binomial)')
    """
    o, human = _checked(score_labelled, human_pass, agreement, confidence)
    bands = candidate_bands(score_all, threshold, max_bands=max_bands)
    errors = (o >= threshold) != human
    first_all = None if equal_probability is None else bands.first_band(score_all)
    return _tested(
        bands, bands.first_band(o), errors, weights, agreement, confidence, bounds, first_all, equal_probability
    )


def select_signal_band(
    signal: ArrayLike,
    distance: ArrayLike,
    labelled: ArrayLike,
    judge_pass: ArrayLike,
    human_pass: ArrayLike,
    *,
    agreement: float,
    confidence: float = 0.95,
    weights: ArrayLike | None = None,
    max_bands: int = MAX_BANDS,
    bounds: bool = True,
) -> BandSelection:
    """The band chosen by fixed-sequence testing over bands ordered by a confidence signal
    (:func:`signal_bands`) instead of the score's distance from the threshold; the tests are
    :func:`select_band`'s.

    Parameters
    ----------
    signal, distance : array_like
        Every judge-scored case's confidence (higher: more sure) and its score's distance from the threshold
        (the tie-break), neither from the labels.
    labelled : array_like of int
        The positions of the labelled cases among them.
    judge_pass, human_pass : array_like of bool
        The labelled cases' verdicts: the judge's own (at its threshold) and the humans'.
    agreement, confidence, weights, max_bands, bounds
        As for :func:`select_band`.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> sure = rng.random(2000); judge = rng.random(2000) < 0.5
    >>> human = np.where(rng.random(2000) < 0.5 + sure / 2, judge, ~judge)
    >>> found = select_signal_band(sure, np.zeros(2000), np.arange(500), judge[:500], human[:500], agreement=0.8)
    >>> round(float(found.bands.signal_at[found.chosen]), 2), int(found.bands.n_decided[found.chosen])
    (0.36, 1279)
    """
    at = np.asarray(labelled, dtype=np.int64)
    judge = np.asarray(judge_pass, dtype=bool)
    if judge.shape != at.shape:
        raise ValueError("labelled and judge_pass: one of each a labelled case")
    _, human = _checked(judge.astype(float), human_pass, agreement, confidence)
    bands = signal_bands(signal, distance, max_bands=max_bands)
    if at.size and (at.min() < 0 or at.max() >= bands.n_cases):
        raise ValueError(f"labelled: positions among the {bands.n_cases} cases")
    return _tested(bands, bands.first_band(bands.rank[at]), judge != human, weights, agreement, confidence, bounds)


def _tested(
    bands, first, errors_labelled, weights, agreement, confidence, bounds, first_all=None, equal_probability=None
) -> BandSelection:
    """Fixed-sequence testing of nested ``bands``, each labelled case decided first by band ``first`` (and
    each case of all, ``first_all``, where ``equal_probability`` says which had one inclusion probability)."""
    order = np.argsort(first, kind="stable")  # each band decides a prefix of this order
    k = np.searchsorted(first[order], np.arange(bands.cut.size), side="right")  # the labelled cases each decides
    errors = errors_labelled[order]
    allowed = 1 - agreement
    if weights is None:
        ratios = np.ones(errors.size)
        disagreements, upper, possible, passes = _binomial(errors, k, allowed, confidence)
        method = "Clopper-Pearson (exact binomial)"
    else:
        ratios = _ratios(weights, errors.shape, order)
        exact = _exact_bands(first_all, equal_probability, ratios, k)
        tests = _weighted(errors, ratios, k, allowed, confidence, bounds, exact)
        disagreements, upper, possible, passes, method = tests
    weighted = np.r_[0, np.cumsum(ratios * errors)][k] / np.where(k > 0, np.r_[0, np.cumsum(ratios)][k], np.nan)
    start, chosen, tested = fixed_sequence(possible, passes)
    return BandSelection(
        bands=bands,
        agreement=float(agreement),
        confidence=float(confidence),
        method=method,
        n_labelled=k.astype(np.int64),
        disagreements=np.asarray(disagreements, dtype=np.int64),
        rate=weighted,
        upper=np.where(tested, upper, np.nan) if upper is not None else np.full(k.size, np.nan),
        passed=tested & passes,
        tested=tested,
        start=start,
        chosen=chosen,
    )


def labels_to_pass(
    errors: ArrayLike, ratios: ArrayLike, *, agreement: float, confidence: float = 0.95, weighted: bool = False
) -> float | None:
    """How many times as many labelled cases a band needs for its test to pass, if more labels were like these
    (the same disagreement rate, the same mix of weights): ``s`` with the test passing on ``s * n`` such cases;
    None when no number does (their disagreement rate is at or above ``1 - agreement``).

    Exact binomial: the smallest ``s`` with the Clopper-Pearson bound of ``s * k`` disagreements in ``s * n``
    at most ``1 - agreement``; betting: with each bet's log e-value times ``s``.

    Examples
    --------
    >>> round(labels_to_pass([0] * 19 + [1], [1.0] * 20, agreement=0.9), 2)
    5.34
    >>> labels_to_pass([0, 1], [1.0, 1.0], agreement=0.9) is None
    True
    """
    x = np.asarray(errors, dtype=float)
    r = np.asarray(ratios, dtype=float)
    allowed, goal = 1 - agreement, np.log(1 / (1 - confidence))
    if weighted:
        logs = betting_log_evidence(x, r, allowed)
        if logs.max() <= 0:
            return None

        def passes(s):
            return _log_mix(s[:, None] * logs[None, :]) >= goal
    else:
        n, k = x.size, x.sum()
        if n == 0 or k / n >= allowed:
            return None

        def passes(s):
            return clopper_pearson_upper(s * k, s * n, confidence=confidence) <= allowed

    low, high = np.array([0.0]), np.array([1.0])
    while not passes(high)[0]:
        low, high = high, high * 2
        if high[0] > 1e9:
            return None
    for _ in range(_STEPS):
        middle = (low + high) / 2
        ok = passes(middle)
        high, low = np.where(ok, middle, high), np.where(ok, low, middle)
    return float(high[0])
