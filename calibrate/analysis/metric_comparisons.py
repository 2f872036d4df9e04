"""The judges of a metric against its human reference on one case universe, resampled together.

For each metric, the case universe is the set of cases with a human reference (or a slice of them).
Bootstrap resample ``r`` of that universe is the same for every judge (seeded by ``(seed, r)``), so
differences between judges can later be bootstrapped pairwise; each judge's statistic uses the cases
of the resample it rated. :func:`judge_comparisons` pairs every chosen judge with the humans (a
:class:`~calibrate.analysis.judge_comparison.JudgeComparison`, or
:class:`~calibrate.analysis.judge_comparison.TooFewCases` under two cases); :func:`bootstrap_runs`
gives them their replicates.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

import numpy as np

from calibrate.analysis.judge_comparison import ROW_BUDGET, JudgeComparison, TooFewCases
from calibrate.analysis.rules import Rule
from calibrate.campaign import Campaign
from calibrate.campaign.reference import HumanReference, JudgeScores, human_reference, pair, select_judges
from calibrate.campaign.weights import DesignWeights, design_weights
from calibrate.stats.bootstrap import case_counts, resample_indices
from calibrate.stats.paired import together

__all__ = ["MetricComparisons", "ProgressCallback", "bootstrap_runs", "chosen_judges", "judge_comparisons"]

ProgressCallback = Callable[[int, int, str], None]


@dataclass(frozen=True)
class MetricComparisons:
    """The chosen judges of a metric against its human reference on one case universe (the labelled
    cases, or a slice of them) drawn under ``design``: ``judges`` in the campaign's order, each a
    :class:`JudgeComparison`, or :class:`TooFewCases` when it shares fewer than two cases with the humans."""

    reference: HumanReference
    universe: np.ndarray
    design: DesignWeights
    judges: list[JudgeComparison | TooFewCases]

    @property
    def comparisons(self) -> list[JudgeComparison]:
        """The judges with figures (two cases or more)."""
        return [j for j in self.judges if isinstance(j, JudgeComparison)]


def chosen_judges(campaign: Campaign, metrics: list[str], judges: list[str] | None) -> list[JudgeScores]:
    """The judges of ``metrics`` a command reads (those named in ``judges``, by name or rater, or all)."""
    return [j for m in metrics for j in select_judges(campaign, m, judges)]


def judge_comparisons(
    campaign: Campaign, metric: str, judges: list[str] | None, rule: Rule, case_filter: Collection[str] | None = None
) -> MetricComparisons:
    """Every chosen judge of ``metric`` against its human reference, on the labelled cases (those in
    ``case_filter`` only, when given), its threshold picked by ``rule``."""
    ref = human_reference(campaign, metric)
    universe = ref.case_ids if case_filter is None else ref.case_ids[np.isin(ref.case_ids, list(case_filter))]
    design = design_weights(campaign, universe)
    pairings = [
        pair(campaign, metric, j, reference=ref, universe=universe, design=design)
        for j in chosen_judges(campaign, [metric], judges)
    ]
    compared = [JudgeComparison(p, rule) if p.n >= 2 else TooFewCases(p) for p in pairings]
    return MetricComparisons(ref, universe, design, compared)


def bootstrap_runs(
    runs: list[JudgeComparison],
    design: DesignWeights,
    *,
    n_boot: int,
    seed: int,
    progress: ProgressCallback | None,
    label: str,
    slices: Sequence[tuple[list[JudgeComparison], DesignWeights]] = (),
) -> None:
    """Resample the cases of a metric once (within the design's strata) and give every judge comparison
    its replicates of every statistic on the same resamples, so that differences between judges pair up.

    ``slices`` (the comparisons and design of each slice's case universe) are resampled along: each
    universe from its own seeded resamples, as if bootstrapped alone, but every judge of every universe in
    the same kernel launches (a few per batch of resamples, the batches as large as :data:`ROW_BUDGET`
    allows).
    """
    groups = [(group, d) for group, d in [(runs, design), *slices] if group and d.strata.size]
    if not groups:
        return
    offsets = np.r_[0, np.cumsum([d.strata.size for _, d in groups])]
    batch = int(np.clip(ROW_BUDGET // max(int(offsets[-1]), 1), 1, max(n_boot, 1)))
    weighted = any(d.weights is not None for _, d in groups)
    active = [(run, offsets[g] + run.positions) for g, (group, _) in enumerate(groups) for run in group]
    # each launch's tables laid out once for every batch
    launches = [
        (
            [run for run, _ in launch],
            together(
                [run.paired for run, _ in launch],
                [positions for _, positions in launch],
                tables=[run.on_scale for run, _ in launch],
            ),
        )
        for launch in _launches(active, batch)
    ]
    done = 0
    for parts in zip(
        *(resample_indices(d.strata.size, n_boot, seed=seed, batch_size=batch, strata=d.strata) for _, d in groups)
    ):
        dtype = np.int32 if offsets[-1] < 2**31 else np.int64
        indices = (
            np.concatenate([(part + offset).astype(dtype, copy=False) for part, offset in zip(parts, offsets)], axis=1)
            if len(parts) > 1
            else parts[0]
        )
        counts = case_counts(indices, int(offsets[-1]))
        if weighted:  # weighted sums of counts are not whole: accumulate in float64
            counts = counts.astype(np.float64)
        for launched, tables in launches:
            for run, summary in zip(launched, tables.summarize(counts)):
                run.add_summary(summary)
        done += parts[0].shape[0]
        if progress:
            progress(done, n_boot, f"bootstrap {label}")


def _launches(
    active: list[tuple[JudgeComparison, np.ndarray]], batch: int
) -> list[list[tuple[JudgeComparison, np.ndarray]]]:
    """The comparisons in groups whose kernel outputs for ``batch`` resamples stay within
    :data:`ROW_BUDGET` values (all of them in one group, unless their tables are large)."""
    groups: list[list[tuple[JudgeComparison, np.ndarray]]] = [[]]
    size = 0
    for run, positions in active:
        p = run.paired
        cost = batch * (2 * p.m + p.K + (p.C if run.on_scale else 0))
        if groups[-1] and size + cost > ROW_BUDGET:
            groups.append([])
            size = 0
        groups[-1].append((run, positions))
        size += cost
    return groups
