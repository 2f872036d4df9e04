"""The CI gate as an assertion: a pytest test that fails with the gate's reasons, one a line.

``calibrate gate`` is a command for a pipeline's step; a team that tests its evaluation with pytest
wants the same decision inside a test, failing with the same words. :func:`assert_gate_passes` runs
:func:`calibrate.review.gate.run_gate` and raises ``AssertionError`` with every failing check and
its reasons, the rules applied and the defaults the gate chose, so the test's failure says what the
command would have said.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from calibrate.campaign import Campaign, load_campaign
from calibrate.review.gate import DEFAULT_MIN_LABELS, GateRules, run_gate
from calibrate.review.results import GateResult
from calibrate.stats import N_BOOT

__all__ = ["assert_gate_passes", "gate_failure_text"]


def _names(value: str | Sequence[str] | None, what: str) -> list[str] | None:
    """One name or several as a list (None for none); anything else is a ``TypeError`` naming ``what``."""
    if value is None:
        return None
    if isinstance(value, str):
        return [value]
    if isinstance(value, Sequence) and value and all(isinstance(v, str) for v in value):
        return list(value)
    raise TypeError(f"{what}={value!r}: expected a name, or a non-empty list of names")


def _check_name(check: dict) -> str:
    if check.get("metric") is None:
        return f"{check['judge']} (no metric checked)"
    return f"{check['metric']} / {check['judge'] if check.get('judge') is not None else '(no judge)'}"


def gate_failure_text(doc: Mapping[str, Any]) -> str:
    """A gate document (:func:`~calibrate.review.gate.run_gate`) as the lines a failed test shows:
    each failing check with its reasons, the checks that passed, the rules and the defaults applied.

    Examples
    --------
    >>> print(gate_failure_text({"campaign": "c", "passed": False, "rules": ["at least 50 human labels"],
    ...                          "defaults": [], "checks": [{"metric": "faithfulness", "judge": "j", "passed": False,
    ...                          "reasons": ["12 human-labelled cases, fewer than the minimum 50"]}]}))
    calibrate gate failed on campaign c:
      FAIL faithfulness / j
        - 12 human-labelled cases, fewer than the minimum 50
    rules: at least 50 human labels
    """
    lines = [f"calibrate gate {'passed' if doc.get('passed') else 'failed'} on campaign {doc.get('campaign')}:"]
    if not doc.get("checks"):
        lines.append("  no check: no metric and judge to check (the gate fails closed)")
    for check in doc.get("checks", []):
        if check["passed"]:
            lines.append(f"  pass {_check_name(check)}")
            continue
        lines.append(f"  FAIL {_check_name(check)}")
        lines += [f"    - {reason}" for reason in check["reasons"]]
    lines.append("rules: " + "; ".join(doc.get("rules", [])))
    lines += [f"default: {note}" for note in doc.get("defaults", [])]
    return "\n".join(lines)


def assert_gate_passes(
    campaign: Campaign | str | Path,
    *,
    judge: str | Sequence[str] | None = None,
    metric: str | Sequence[str] | None = None,
    min_labels: int = DEFAULT_MIN_LABELS,
    min_spearman: float | None = None,
    min_kappa: float | None = None,
    max_false_pass: float | None = None,
    forbid_self_eval: bool = False,
    require_fingerprint: bool = False,
    seed: int = 0,
    n_boot: int = N_BOOT,
    confidence: float = 0.95,
) -> GateResult:
    """Assert that the CI gate passes (``calibrate gate``), failing with its reasons.

    Parameters
    ----------
    campaign : Campaign, str or Path
        A campaign, or its folder (read with :func:`~calibrate.load_campaign`).
    judge, metric : str or list of str, optional
        The judge(s) the pipeline uses (``rater`` or ``rater@run_id``) and the metric(s) to check, as
        ``--judge`` and ``--metric``: with a judge and no metric, the metrics that judge scores.
    min_labels, min_spearman, min_kappa, max_false_pass, forbid_self_eval, require_fingerprint
        The gate's rules (:class:`~calibrate.review.gate.GateRules`); a setting no judge could meet is a
        ``ValueError`` naming it.
    seed, n_boot, confidence
        As ``calibrate gate`` takes them.

    Returns
    -------
    GateResult
        The gate's document (``calibrate gate --json``), when it passed.

    Raises
    ------
    AssertionError
        The gate failed: the message is :func:`gate_failure_text` (every failing check and its
        reasons, one a line).
    CampaignError, ValueError
        The campaign cannot be read, or a rule or a name is refused (a judge no rater has): not a
        verdict on the judge, an error in the test.

    Examples
    --------
    >>> import calibrate
    >>> folder = calibrate.demo_campaign_path()
    >>> assert_gate_passes(folder, judge="Olz-gpt4o", min_spearman=0.55, n_boot=200)
    Traceback (most recent call last):
    ...
    AssertionError: calibrate gate failed on campaign trec-dl-2023-llmjudge:
      FAIL relevance / Olz-gpt4o
        - Spearman rho 0.511: its one-sided lower bound 0... is below the floor 0.55
    ...
    >>> assert_gate_passes(folder, judge="Olz-gpt4o", min_spearman=0.45, n_boot=200)["passed"]
    True
    """
    __tracebackhide__ = True  # pytest shows the test's line, not this function's
    rules = GateRules(
        min_labels=min_labels,
        min_spearman=min_spearman,
        min_kappa=min_kappa,
        max_false_pass=max_false_pass,
        forbid_self_eval=forbid_self_eval,
        require_fingerprint=require_fingerprint,
    )
    loaded = campaign if isinstance(campaign, Campaign) else load_campaign(campaign)
    doc = run_gate(
        loaded,
        rules,
        metrics=_names(metric, "metric"),
        judges=_names(judge, "judge"),
        seed=seed,
        n_boot=n_boot,
        confidence=confidence,
    )
    if not doc["passed"]:
        raise AssertionError(gate_failure_text(doc))
    return doc
