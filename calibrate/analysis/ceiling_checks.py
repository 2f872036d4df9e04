"""A constraint rule's checks on a judge's verdict (:func:`ceiling_checks`, a step of
:func:`calibrate.analysis.verdicts.judge_verdict`): a threshold under the false-pass ceiling at all, and the
upper end of its false-pass interval at most the ceiling; else a stricter threshold that stays under it, the
human fails that would bring the bound under (:func:`~calibrate.stats.thresholds.fails_for_ceiling`), or not
defensible.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from calibrate.analysis.verdict_reading import Shortfall, VerdictReading, beyond_reach_text, labels_to_settle
from calibrate.analysis.verdict_results import JudgeVerdict
from calibrate.analysis.verdict_statuses import NOT_DEFENSIBLE, STRICTER
from calibrate.analysis.verdict_text import fails_most_text, number_text, pass_rule_text, rate_text, rates_text

__all__ = ["ceiling_checks"]


def ceiling_checks(r: VerdictReading) -> JudgeVerdict | Shortfall:
    """A constraint rule's checks: a threshold under the ceiling at all, and its false-pass bound under it."""
    if r.rec.get("threshold") is None:
        return _no_threshold(r)
    if r.fp.get("ci_high") is not None and r.fp["ci_high"] > r.ceiling + 1e-12:
        return _past_ceiling(r)
    return Shortfall()


def _no_threshold(r: VerdictReading) -> JudgeVerdict | Shortfall:
    """No threshold under the ceiling short of failing every case: too few human fails to tell, or not
    defensible (with the fewest false passes found)."""
    needed = r.fails_needed(0.0)
    if needed is not None and r.fail_n < needed:
        text = f"{r.n_fail} human fails: a {r.ceiling:g} ceiling needs at least {needed} even with no false pass"
        return Shortfall((text,), needed - r.fail_n)
    lowest = r.rec.get("lowest_false_pass") or {}
    where = (
        f" (lowest: {number_text(lowest['rate'])} at {pass_rule_text({**r.rec, 'threshold': lowest['threshold']})})"
        if lowest.get("rate") is not None
        else ""
    )
    why = f"no threshold keeps false passes at or under {r.ceiling:g} short of failing every case{where}"
    return r.verdict(NOT_DEFENSIBLE, f"not defensible: {why}", why)


def _past_ceiling(r: VerdictReading) -> JudgeVerdict | Shortfall:
    """The rule's threshold has a false-pass bound past the ceiling: a stricter threshold that stays under
    it, or the human fails that would bring the bound under, or not defensible."""
    needed = r.fails_needed(r.fp["estimate"])
    alternative = r.rec.get("defensible_alternative")
    if alternative and r.n >= r.min_labels and not r.chance:
        return _stricter(r, alternative, needed)
    lowest = (r.rec.get("lowest_false_pass") or {}).get("rate")
    if needed is None and lowest is not None and (stricter := r.fails_needed(lowest)) is not None:
        return _stricter_on_more_labels(r, lowest, stricter)
    if needed is None:
        return _at_ceiling(r)
    return _more_fails(r, needed)


def _stricter(r: VerdictReading, alternative: Mapping[str, Any], needed: int | None) -> JudgeVerdict:
    """A stricter threshold's interval stays under the ceiling: that is the defensible one (and the labels
    that would keep the rule's, while they are few)."""
    rec, fp = r.rec, r.fp
    shown = {**rec, "threshold": alternative["threshold"]}
    most = fails_most_text(alternative["false_fail_rate"])
    warnings = (f"it fails most human passes: false fails {rate_text(alternative['false_fail_rate'])}",) if most else ()
    text = (
        f"defensible at a stricter threshold{', though it fails most human passes' if most else ''}: "
        f"pass at {pass_rule_text(shown)}; "
        f"{rates_text(alternative['false_pass_rate'], alternative['false_fail_rate'])} (the rule's "
        f"{pass_rule_text(rec)} has false passes {rate_text(fp)}, past the {r.ceiling:g} ceiling"
    )
    labels = None
    if needed is not None and needed - r.fail_n <= r.fail_n:  # labels help only while they are few
        labels = labels_to_settle(needed - r.fail_n, r.fail_share)
        text += f"; keeping {pass_rule_text(rec)} needs about {labels.cases} more labelled cases"
    return r.verdict(
        STRICTER,
        text + ")" + most,
        f"the rule's threshold has false passes {rate_text(fp)}, past the ceiling",
        threshold=alternative["threshold"],
        rule_threshold=rec["threshold"],
        labels_needed=labels,
        warnings=warnings,
    )


def _stricter_on_more_labels(r: VerdictReading, lowest: float, stricter: int) -> Shortfall:
    """This threshold's rate sits at the ceiling, but a stricter one has fewer false passes: on more labels
    its bound comes under the ceiling (a perfect judge on too few labels, say)."""
    strictest = pass_rule_text({**r.rec, "threshold": r.rec["lowest_false_pass"]["threshold"]})
    text = (
        f"at {pass_rule_text(r.rec)} false passes {rate_text(r.fp)} sit at the {r.ceiling:g} ceiling; a "
        f"stricter threshold (false passes {number_text(lowest)} at {strictest}) needs at least "
        f"{stricter} human fails, {r.n_fail} labelled"
    )
    return Shortfall((text,), max(stricter - r.fail_n, 1))


def _at_ceiling(r: VerdictReading) -> JudgeVerdict | Shortfall:
    """No number of fails brings the bound under the ceiling: not defensible, or, on too few labels, one
    more thing the rule lacks."""
    fp, ceiling = r.fp, r.ceiling
    why = f"at {pass_rule_text(r.rec)} false passes {rate_text(fp)}: " + (
        beyond_reach_text(ceiling)
        if fp["estimate"] < ceiling and r.fails_needed(0.0) is None
        else f"the rate sits at the {ceiling:g} ceiling, so no number of labels brings its upper bound under it"
    )
    if r.n >= r.min_labels:
        return r.verdict(NOT_DEFENSIBLE, f"not defensible: {why}", why)
    return Shortfall((why,))


def _more_fails(r: VerdictReading, needed: int) -> Shortfall:
    """The human fails that would bring the bound under the ceiling: at least those a threshold with no false
    pass needs; more at the rule's threshold's rate."""
    least = r.fails_needed(0.0) or needed
    estimate = r.fp["estimate"]
    text = f"{r.n_fail} human fails: a {r.ceiling:g} ceiling needs at least {least}" + (
        "" if estimate == 0 else f" ({needed} at this rate of {number_text(estimate)})"
    )
    # enough fails for a threshold without false passes, but none has one: keep this threshold
    # (at least one more fail: the bound shown is past the ceiling)
    return Shortfall((text,), max((least if least > r.fail_n else needed) - r.fail_n, 1))
