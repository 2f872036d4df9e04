"""The statuses a judge's verdict can have: distinct words, listed once each from the best."""

from calibrate.analysis import verdict_statuses
from calibrate.analysis.verdict_statuses import (
    DEFENSIBLE,
    NEEDS_LABELS,
    NO_CRITERION,
    NOT_DEFENSIBLE,
    NOT_SHOWN,
    STATUSES,
    STRICTER,
)


def test_every_status_is_listed_once_from_the_best():
    assert STATUSES == (DEFENSIBLE, STRICTER, NEEDS_LABELS, NOT_SHOWN, NOT_DEFENSIBLE, NO_CRITERION)
    assert len(set(STATUSES)) == len(STATUSES) and all(isinstance(s, str) and s for s in STATUSES)
    named = {getattr(verdict_statuses, name) for name in verdict_statuses.__all__ if name != "STATUSES"}
    assert named == set(STATUSES)


def test_the_words_the_documents_write():
    assert STATUSES == (
        "defensible",
        "defensible if stricter",
        "needs labels",
        "not shown",
        "not defensible",
        "no criterion",
    )
