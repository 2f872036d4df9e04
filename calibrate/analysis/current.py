"""The threshold a user runs today, for each judge of a metric: the verdict starts from it.

In order, the first that applies:

1. one given (``current``: a number for every judge, or ``{judge: number}``; ``--current`` on the command
   line, ``VALUE`` or ``JUDGE=VALUE``);
2. the thresholds recorded in an imported run of the judge (``imported_ratings.json``: DeepEval's
   ``metricsData`` and promptfoo's assertions record the threshold they passed at), one line each;
3. for a judge ``calibrate judge`` runs with a DeepEval metric (``[judges.NAME]``, ``library =
   "deepeval"``): its ``strict_mode`` (DeepEval then passes a score of 1 only), its ``threshold`` setting,
   or DeepEval's default 0.5.

A judge with none (a RAGAS judge, an imported judge whose tool recorded no threshold) gets no line.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from typing import Any

from calibrate.base.errors import NO_VALUE, ParameterText
from calibrate.campaign import Campaign
from calibrate.campaign.reference import JudgeScores
from calibrate.stats.thresholds import DEEPEVAL_DEFAULT_THRESHOLD

__all__ = ["check_current", "current_thresholds", "parse_current", "unmatched"]


def _number(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)


def check_current(current: Any) -> dict[str | None, float]:
    """``current`` as ``{judge or None: threshold}`` (``None``: every judge not named), checked where it
    enters: finite numbers, judge names as text.

    Raises
    ------
    ValueError
        A value that is not a finite number, or a key that is not a judge's name, naming it.

    Examples
    --------
    >>> check_current(0.5), check_current({"gpt": 0.7}), check_current(None)
    ({None: 0.5}, {'gpt': 0.7}, {})
    >>> check_current({"gpt": float("nan")})
    Traceback (most recent call last):
    ...
    ValueError: current={'gpt': nan}: a threshold is a finite number; give one per judge, such as {'gpt': 0.5}
    """
    if current is None:
        return {}
    if _number(current):
        return {None: float(current)}
    if isinstance(current, Mapping) and all(
        (k is None or isinstance(k, str)) and _number(v) for k, v in current.items()
    ):
        return {k: float(v) for k, v in current.items()}
    named = next((k for k in current if isinstance(k, str)), None) if isinstance(current, Mapping) else None
    example = {named or "judge": 0.5}
    raise ValueError(
        ParameterText(
            "{current}: a threshold is a finite number; give one per judge, such as {_example}",
            current=current,
            _example=repr(example),
        )
    )


def parse_current(texts: tuple[str, ...] | list[str]) -> dict[str | None, float]:
    """``--current`` options (``VALUE`` or ``JUDGE=VALUE``, repeatable) as :func:`check_current` gives them.

    Raises
    ------
    ValueError
        A value that is not a finite number, or a judge named twice, naming the option's text.

    Examples
    --------
    >>> parse_current(["0.5", "gpt-4o-mini=0.7", "a=b=0.3"])
    {None: 0.5, 'gpt-4o-mini': 0.7, 'a=b': 0.3}
    >>> parse_current(["=0.5"])
    Traceback (most recent call last):
    ...
    ValueError: '=0.5': no judge before '=' (give VALUE for every judge, or JUDGE=VALUE)
    >>> parse_current(["gpt=high"])
    Traceback (most recent call last):
    ...
    ValueError: 'gpt=high': high is not a finite number (give VALUE for every judge, or JUDGE=VALUE)
    """
    out: dict[str | None, float] = {}
    for text in texts:
        judge, equals, value = text.rpartition("=")
        if equals and not judge:
            raise ValueError(f"{text!r}: no judge before '=' (give VALUE for every judge, or JUDGE=VALUE)")
        try:
            number = float(value)
        except ValueError:
            number = math.nan
        if not math.isfinite(number):
            raise ValueError(
                f"{text!r}: "
                + (f"{value} is not a finite number" if value.strip() else "no value")
                + " (give VALUE for every judge, or JUDGE=VALUE)"
            )
        key = judge or None
        if key in out:
            raise ValueError(
                f"{text!r}: "
                + (f"judge {key} has a threshold already" if key else "a threshold for every judge is given already")
            )
        out[key] = number
    return out


def current_thresholds(
    campaign: Campaign, metric: str, judge: JudgeScores, given: Mapping[str | None, float] | None = None
) -> list[dict[str, Any]]:
    """The thresholds ``judge`` runs at today on ``metric`` (see the module docstring), each
    ``{"threshold", "source", "source_text"}``; ``source`` one of ``given``, ``imported``,
    ``deepeval_strict_mode``, ``deepeval_setting``, ``deepeval_default``.

    Examples
    --------
    >>> import calibrate
    >>> from calibrate.campaign.reference import judge_scores
    >>> c = calibrate.load_campaign(calibrate.demo_campaign_path())
    >>> j = judge_scores(c, "relevance")[0]
    >>> current_thresholds(c, "relevance", j), current_thresholds(c, "relevance", j, {None: 2})
    ([], [{'threshold': 2.0, 'source': 'given', 'source_text': 'given'}])
    """
    given = given or {}
    for key in (judge.name, judge.rater.name, None):
        if key in given:
            return [{"threshold": float(given[key]), "source": "given", "source_text": "given"}]
    imported = (campaign.imported_raters.get(judge.rater.name) or {}).get("thresholds") or {}
    recorded = sorted({float(t) for t in imported.get(metric) or [] if _number(t)})
    if recorded:
        text = (
            "recorded in the imported run"
            if len(recorded) == 1
            else f"one of {len(recorded)} recorded in the imported runs"
        )
        return [{"threshold": t, "source": "imported", "source_text": text} for t in recorded]
    spec = campaign.judges.get(judge.rater.name)
    if spec is None or spec.library != "deepeval" or spec.into != metric:
        return []
    settings = spec.settings or {}
    if settings.get("strict_mode"):
        return [
            {
                "threshold": 1.0,
                "source": "deepeval_strict_mode",
                "source_text": "DeepEval's strict_mode: only a score of 1 passes",
            }
        ]
    if _number(settings.get("threshold")):
        return [
            {
                "threshold": float(settings["threshold"]),
                "source": "deepeval_setting",
                "source_text": "the threshold in campaign.toml's settings",
            }
        ]
    return [
        {"threshold": DEEPEVAL_DEFAULT_THRESHOLD, "source": "deepeval_default", "source_text": "DeepEval's default"}
    ]


def unmatched(given: Mapping[str | None, float], judges: list[JudgeScores]) -> None:
    """Refuse a threshold given for a judge that none of ``judges`` is (by name, or by rater name).

    Raises
    ------
    ValueError
        Naming the judges given and the judges there are.
    """
    names = {j.name for j in judges} | {j.rater.name for j in judges}
    unknown = sorted(k for k in given if k is not None and k not in names)
    if unknown:
        raise ValueError(
            ParameterText(
                "{current} names {_unknown}: no such judge rated the metrics chosen (their judges: {_names})",
                current=NO_VALUE,
                _unknown=", ".join(unknown),
                _names=", ".join(sorted({j.name for j in judges})) or "none",
            )
        )
