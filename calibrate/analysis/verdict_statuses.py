"""The statuses a judge's verdict can have (:func:`calibrate.analysis.verdicts.judge_verdict`), from the
best to the one with nothing to defend."""

from __future__ import annotations

__all__ = ["DEFENSIBLE", "NEEDS_LABELS", "NOT_DEFENSIBLE", "NOT_SHOWN", "NO_CRITERION", "STATUSES", "STRICTER"]

#: a reviewer can hold the recommendation to the rule
DEFENSIBLE = "defensible"
#: not yet: more human labels (``labels_needed``) would settle it
NEEDS_LABELS = "needs labels"
#: not shown better than chance on fewer than ``min_labels`` labels, with no sign of separating: no label count
NOT_SHOWN = "not shown"
#: defensible at a threshold stricter than the rule's (whose interval reaches past the ceiling)
STRICTER = "defensible if stricter"
#: no number of labels makes it defensible as the judge scores now
NOT_DEFENSIBLE = "not defensible"
#: the rule (fixed, or none declared) gives nothing to defend
NO_CRITERION = "no criterion"
#: every status, from the best to the one with nothing to defend
STATUSES = (DEFENSIBLE, STRICTER, NEEDS_LABELS, NOT_SHOWN, NOT_DEFENSIBLE, NO_CRITERION)
