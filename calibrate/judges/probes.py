"""Bias probes that re-run a judge: does its score move when it should not, or stay when it should move?

A probe takes a seeded sample of the campaign's cases, makes a perturbed copy of each, and scores the
originals and the copies with the campaign's declared judges in one run:

- ``order``: the retrieved contexts in reverse order. Contextual precision weighs relevant chunks by
  rank, so it should move; faithfulness, answer relevancy, contextual recall and relevancy read the
  contexts as a set and should not.
- ``padding``: the answer followed by a sentence that has nothing to do with the question. Answer
  relevancy should drop; a judge whose score does not is rewarding length.

Everything runs in ``CAMPAIGN/probes/PROBE/`` — its own cases, store and cache, so the campaign's
ratings are never touched and an unchanged re-run makes no call. Per judge: the mean change (copy
minus original) with a paired t interval, the share of cases whose score changed, the Wilcoxon
signed-rank test, the share of pass/fail verdicts that flip, and whether that is what the metric
should do.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from calibrate.base.files import writes_campaign
from calibrate.base.names import inside, path_component
from calibrate.base.params import checked
from calibrate.base.results import Result
from calibrate.campaign import Campaign
from calibrate.stats.thresholds import DEEPEVAL_DEFAULT_THRESHOLD

__all__ = ["EXPECTED", "PROBES", "PROBES_FOLDER", "perturb", "run_probe"]

PROBES = ("order", "padding")
PROBES_FOLDER = "probes"
SEPARATOR = "~"
#: Sentences with nothing to say about any question a RAG system answers.
PADDING = (
    "Many towns hold a small market on Saturday mornings.",
    "The colour of a kettle does not change how fast it boils.",
    "Some people prefer to read the last page of a novel first.",
    "A well-kept garden needs water more often in summer.",
)
#: What each probe should do to each metric: "moves", "invariant" or "drops".
EXPECTED = {
    ("order", "contextual_precision"): "moves",
    ("order", "context_precision"): "moves",
    ("order", "faithfulness"): "invariant",
    ("order", "answer_relevancy"): "invariant",
    ("order", "contextual_recall"): "invariant",
    ("order", "contextual_relevancy"): "invariant",
    ("order", "context_recall"): "invariant",
    ("padding", "answer_relevancy"): "drops",
}
NEEDS = {"order": "retrieval_context", "padding": "actual_output"}


def perturb(case: dict[str, Any], probe: str, rng: np.random.Generator) -> dict[str, Any] | None:
    """The perturbed copy of a case (``None`` when the case lacks what the probe changes).

    Examples
    --------
    >>> perturb({"case_id": "a", "retrieval_context": ["x", "y", "z"]}, "order", np.random.default_rng(0))
    {'case_id': 'a~order', 'retrieval_context': ['z', 'y', 'x'], 'metadata': {'probe': 'order', 'probe_of': 'a'}}
    """
    if probe == "order":
        contexts = case.get("retrieval_context")
        if not contexts or len(contexts) < 2:
            return None
        changed = {"retrieval_context": list(reversed(contexts))}
    elif probe == "padding":
        if not case.get("actual_output"):
            return None
        changed = {"actual_output": case["actual_output"].rstrip() + " " + PADDING[int(rng.integers(len(PADDING)))]}
    else:
        raise ValueError(f"unknown probe {probe!r}: one of {', '.join(PROBES)}")
    return {
        **case,
        **changed,
        "case_id": f"{case['case_id']}{SEPARATOR}{probe}",
        "metadata": {**(case.get("metadata") or {}), "probe": probe, "probe_of": case["case_id"]},
    }


def _verdict(expected: str | None, change: dict[str, Any], n_changed: int) -> str | None:
    if expected is None or change.get("ci_low") is None:
        return None
    excludes_zero = change["ci_low"] > 0 or change["ci_high"] < 0
    if expected == "invariant":
        return "unexpected: the score moved" if excludes_zero else "as expected: no systematic change"
    if expected == "moves":
        return "as expected: the score moved" if n_changed else "unexpected: no score changed"
    return "as expected: the score dropped" if change["ci_high"] < 0 else "unexpected: no clear drop"


def _specs(campaign: Campaign, judges: list[str] | None) -> dict[str, Any]:
    """The judges to probe: those of ``[judges]`` that ``judges`` names (every one when None)."""
    specs = {name: s for name, s in campaign.judges.items() if judges is None or name in judges}
    if not specs:
        raise ValueError(
            "no judge to probe: declare [judges.NAME] in campaign.toml"
            + (f" (asked for {', '.join(judges)})" if judges else "")
        )
    return specs


def _sample(
    campaign_cases: dict[str, dict[str, Any]], probe: str, n: int, seed: int
) -> tuple[list[str], dict[str, dict]]:
    """The ``n`` cases sampled among those the probe changes, and the cases to score: each and its copy."""
    eligible = sorted(c for c, case in campaign_cases.items() if perturb(case, probe, np.random.default_rng(0)))
    if not eligible:
        raise ValueError(
            f"the {probe} probe changes {NEEDS[probe]}, and no case has "
            + ("two or more of them" if probe == "order" else "one")
        )
    rng = np.random.default_rng(seed)
    chosen = sorted(rng.choice(eligible, size=min(n, len(eligible)), replace=False).tolist())
    cases = {}
    for case_id in chosen:
        copy = perturb(campaign_cases[case_id], probe, rng)
        cases[case_id] = campaign_cases[case_id]
        cases[copy["case_id"]] = copy
    return chosen, cases


def _probe_campaign(campaign: Campaign, path: Path, probe: str, cases: dict[str, dict]) -> tuple[Campaign, Path]:
    """The campaign the probe runs (its cases, no ratings), and its own folder ``probes/PROBE`` in ``path``."""
    folder = inside(path, PROBES_FOLDER, path_component(probe, what="probe"))
    folder.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256(json.dumps(cases, sort_keys=True, default=str).encode()).hexdigest()
    probe_campaign = dataclasses.replace(
        campaign,
        name=f"{campaign.name} ({probe} probe)",
        ratings=campaign.ratings.iloc[0:0],
        cases=cases,
        path=folder,
        samples={},
        juries={},
        data_hash="sha256:" + digest,
        adjudications=campaign.adjudications.iloc[0:0],
    )
    return probe_campaign, folder


def _mean_change(diff: np.ndarray) -> dict[str, Any]:
    """The mean change (copy minus original) with its paired t interval."""
    if np.ptp(diff) == 0:
        return {
            "estimate": float(diff.mean()),
            "ci_low": float(diff.mean()),
            "ci_high": float(diff.mean()),
            "ci_method": "every difference equal",
        }
    test = stats.ttest_1samp(diff, 0.0)
    ci = test.confidence_interval(0.95)
    return {
        "estimate": float(diff.mean()),
        "ci_low": float(ci.low),
        "ci_high": float(ci.high),
        "ci_method": "paired t",
    }


def _judge_entry(
    name: str, spec: Any, values: dict[tuple[str, str], float], chosen: list[str], probe: str
) -> dict[str, Any]:
    """One judge's finding: how its score and its verdicts moved from each original to its copy."""
    pairs = [
        (values[(name, c)], values[(name, f"{c}{SEPARATOR}{probe}")])
        for c in chosen
        if (name, c) in values and (name, f"{c}{SEPARATOR}{probe}") in values
    ]
    expected = EXPECTED.get((probe, spec.metric))
    entry: dict[str, Any] = {
        "judge": name,
        "metric": spec.into,
        "library_metric": f"{spec.library} {spec.metric}",
        "n_pairs": len(pairs),
        "expected": expected,
    }
    if len(pairs) < 2:
        entry["reason"] = f"{len(pairs)} case(s) scored both ways (failed ratings are in the probe's store)"
        return entry
    original, perturbed = np.array(pairs).T
    diff = perturbed - original
    changed = int(np.sum(np.abs(diff) > 1e-12))
    change = _mean_change(diff)
    threshold = DEEPEVAL_DEFAULT_THRESHOLD
    flips = int(np.sum((original >= threshold) != (perturbed >= threshold)))
    entry |= {
        "mean_change": change,
        "mean_absolute_change": float(np.abs(diff).mean()),
        "share_changed": changed / len(pairs),
        "wilcoxon_p": float(stats.wilcoxon(diff).pvalue) if changed else 1.0,
        "verdict_flips": {"threshold": threshold, "k": flips, "share": flips / len(pairs)},
        "finding": _verdict(expected, change, changed),
    }
    return entry


@writes_campaign("calibrate probe")
@checked("seed")
def run_probe(
    campaign: Campaign,
    *,
    probe: str,
    judges: list[str] | None = None,
    n: int = 50,
    seed: int = 0,
    policy=None,
    progress=None,
) -> Result:
    """Score ``n`` sampled cases and their perturbed copies with the campaign's judges; see the module
    docstring.

    Parameters
    ----------
    campaign : Campaign
        A campaign read from its folder, with ``cases.jsonl`` and ``[judges]``.
    probe : {"order", "padding"}
        ``order``: the retrieved contexts reversed; ``padding``: an irrelevant sentence added to the answer.
    judges : list of str, optional
        Only these judges of ``[judges]``.
    n, seed : int
        Cases sampled, and the sample's seed.
    policy : CallPolicy, optional
        Calls in flight, timeout and retries.
    progress : callable, optional

    Returns
    -------
    Result
        ``{"probe", "n_cases", "folder", "run_id", "judges": [...]}``: per judge the ``mean_change`` of
        its score with its interval, the share changed, the verdict flips and a ``finding``.

    Examples
    --------
    >>> import calibrate
    >>> c = calibrate.load_campaign("my-campaign")                      # doctest: +SKIP
    >>> calibrate.run_probe(c, probe="order", n=50).to_frame()           # doctest: +SKIP
    """
    from calibrate.campaign import JUDGE_RATINGS_FILE
    from calibrate.judges.runner import run_judges

    if probe not in PROBES:
        raise ValueError(f"unknown probe {probe!r}: one of {', '.join(PROBES)}")
    if campaign.path is None or not campaign.cases:
        raise ValueError("a probe needs a campaign folder with cases.jsonl")
    specs = _specs(campaign, judges)
    chosen, cases = _sample(campaign.cases, probe, n, seed)
    probe_campaign, folder = _probe_campaign(campaign, campaign.path, probe, cases)
    run = run_judges(probe_campaign, judges=sorted(specs), policy=policy, progress=progress)
    # the rating of every (judge, case), as the run exported it (an original and its copy may share a
    # cache entry when the judge does not read what the probe changed)
    exported = pd.read_csv(folder / JUDGE_RATINGS_FILE, dtype={"case_id": str, "rater": str}, keep_default_na=False)
    exported = exported[pd.to_numeric(exported["value"], errors="coerce").notna()]
    values = {(r, c): float(v) for r, c, v in zip(exported["rater"], exported["case_id"], exported["value"])}
    out = [_judge_entry(name, spec, values, chosen, probe) for name, spec in sorted(specs.items())]
    return Result(
        {
            "campaign": campaign.name,
            "probe": probe,
            "n_cases": len(chosen),
            "seed": seed,
            "folder": str(folder),
            "run_id": run["run_id"],
            "judges": out,
        }
    )
