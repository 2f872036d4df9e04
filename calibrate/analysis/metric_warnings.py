"""The warnings of a metric's entry in the statistics document: too few labels, tied or failed human
ratings, adjusted values, anchored annotators, failed judge ratings, judges of the generator's own family,
labelled cases from no recorded sample. Each warning about cases names them (the first ten)."""

from __future__ import annotations

from collections.abc import Iterable

from calibrate.analysis.metric_comparisons import MetricComparisons
from calibrate.campaign import Campaign
from calibrate.campaign.metadata import cases_by_generator_family
from calibrate.campaign.reference import HumanReference

__all__ = ["MIN_TRUSTED_LABELS", "listed", "metric_warnings"]

#: Under this many human labels, no judge figure or threshold of a metric is trustworthy yet.
MIN_TRUSTED_LABELS = 50


def metric_warnings(campaign: Campaign, metric: str, compared: MetricComparisons) -> list[str]:
    """The warnings of a metric's entry: those of its human reference, of its judges (their failed
    ratings, and the cases a generator of their own family wrote), and of its sample design."""
    notes = reference_warnings(campaign, metric, compared.reference)
    for judge in (j.judge for j in compared.judges):
        if len(judge.errors):
            failed = sorted(set(judge.errors["case_id"].astype(str)))
            notes.append(
                f"judge {judge.name}: {len(judge.errors)} failed rating(s) (errors, excluded from the figures): "
                + listed(failed)
            )
        same = cases_by_generator_family(campaign, judge.rater.family)
        if same:
            every = len(same) == len(campaign.cases or {})
            notes.append(
                f"judge {judge.name} is of the {judge.rater.family} family, as the generator of "
                + (
                    f"every case ({len(same)}): a judge may favour its own family's answers; rate them "
                    "with a judge of another family to compare"
                    if every
                    else f"{len(same)} case(s): a judge may favour its own family's answers: {listed(same)}"
                )
            )
    design = compared.design
    if design.weights is not None and design.n_outside:
        notes.append(
            f"{design.n_outside} labelled case(s) came from no recorded sample: they are "
            "taken as a uniform random sample of the campaign's cases: " + listed(design.outside_cases)
        )
    return notes


def reference_warnings(campaign: Campaign, metric: str, ref: HumanReference) -> list[str]:
    """The warnings about a metric's human labels, whatever the judges."""
    notes = []
    n_ref = ref.case_ids.size
    if n_ref < MIN_TRUSTED_LABELS:
        notes.append(
            f"only {n_ref} human-labelled cases: under {MIN_TRUSTED_LABELS}, no judge figure or "
            "threshold here is trustworthy yet"
        )
    if ref.n_ties:
        notes.append(
            f"{ref.n_ties} case(s) with a tied human panel took the lower label (a pass needs a "
            f"strict majority): {listed(ref.tied_cases)}"
        )
    if ref.n_failed_ratings:
        notes.append(
            f"{ref.n_failed_ratings} human rating(s) recorded as failed (an error, no value): "
            + listed(ref.failed_rating_cases)
        )
    adjusted = [a for a in campaign.adjustments if a.metric == metric]
    if adjusted:
        what = ", ".join(
            f"{a.rater}/{a.case_id}: {a.value:g}" + (f" -> {a.new_value:g}" if a.new_value is not None else "")
            for a in adjusted[:10]
        )
        notes.append(
            f"{len(adjusted)} out-of-scale value(s) {adjusted[0].action} (out_of_scale "
            f"{campaign.out_of_scale}): {what}" + (" ..." if len(adjusted) > 10 else "")
        )
    set_aside = campaign.set_aside_note(metric)
    if set_aside:
        notes.append(set_aside)
    if campaign.shown_judge:
        notes.append(
            f"the annotators saw judge {campaign.shown_judge}'s scores as pre-annotations in Label Studio: "
            "their labels may be anchored on it, so every judge's agreement with humans (that judge's "
            "most of all) may be overstated; label blind to measure a judge"
        )
    return notes


def listed(case_ids: Iterable[str], shown: int = 10) -> str:
    """The first ``shown`` case ids, and how many more.

    >>> listed([f"c{i}" for i in range(12)], shown=3)
    'c0, c1, c2 and 9 more'
    """
    ids = list(case_ids)
    return ", ".join(ids[:shown]) + (f" and {len(ids) - shown} more" if len(ids) > shown else "")
