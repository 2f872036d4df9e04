"""A judge's fingerprint: has the judge itself changed since its threshold was chosen? (``calibrate
fingerprint``)

Providers move the model behind an alias, and a judge's scores move with it, announced or not. The
fingerprint re-scores a fixed **anchor set** of cases and compares the new scores with the ones stored
when the anchors were chosen:

- The anchors are chosen once, by calibrate, among the cases the judge has scored: half the nearest
  to its threshold (where a change shows first), half spread over its scores. They are stored in
  ``fingerprints/JUDGE/anchors.json`` with their scores then, the threshold and the judge's settings.
- Each fingerprint re-scores them ``repeats`` times through ``calibrate judge``'s own machinery, in a
  folder of its own (``fingerprints/JUDGE/STAMP/``, its store keeping every attempt), and never
  touches the campaign's ratings.
- **FLAKY** when repeats of an anchor straddle the threshold: the judge does not give one verdict to
  one case, and no comparison with it means much.
- **CHANGED** when the verdicts moved more than the judge's own noise explains: more anchors whose
  majority verdict differs from the stored one than a binomial test allows at the noise floor (the
  share of verdicts that flip between repeats, from ``calibrate repeatability``'s runs where the
  campaign has them, else from these repeats), or a shift of the scores (Wilcoxon's signed-rank test on
  the anchors' mean new minus stored score) larger than the mean difference between repeats.
- **SAME** otherwise.

The result is written to ``fingerprints/JUDGE/STAMP.json``; ``calibrate gate --require-fingerprint``
refuses a judge whose latest fingerprint is not SAME.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import os
from pathlib import Path
from typing import Any

import numpy as np

from calibrate.base.errors import CampaignError, ParameterText, Problem
from calibrate.base.files import write_all
from calibrate.base.results import Result
from calibrate.campaign import CASES_FILE, Campaign, load_campaign

__all__ = ["fingerprint_judge", "latest_fingerprint", "choose_anchors", "FINGERPRINTS_FOLDER", "LEVEL"]

FINGERPRINTS_FOLDER = "fingerprints"
ANCHORS_FILE = "anchors.json"
#: the level of the tests that call a judge CHANGED
LEVEL = 0.05


def choose_anchors(case_ids: np.ndarray, oriented: np.ndarray, threshold: float, n: int) -> list[str]:
    """``n`` anchors: half the cases nearest the threshold (oriented: higher is better), half at evenly
    spaced ranks of the scores; ties broken by case id.

    >>> choose_anchors(np.array(list("abcdefgh")), np.arange(8.0), 3.5, 4)
    ['a', 'd', 'e', 'h']
    """
    order = np.lexsort((case_ids, np.abs(oriented - threshold)))
    near = [str(case_ids[i]) for i in order[: n - n // 2]]
    ranked = [str(case_ids[i]) for i in np.lexsort((case_ids, oriented)) if str(case_ids[i]) not in near]
    spread = [ranked[int(round(k))] for k in np.linspace(0, len(ranked) - 1, n // 2)] if ranked and n // 2 else []
    return sorted(set(near) | set(spread))


def _folder(campaign: Campaign, judge: str) -> Path:
    return campaign.path / FINGERPRINTS_FOLDER / judge


def _read(path: Path, what: str) -> dict[str, Any]:
    """A file calibrate wrote, or a CampaignError naming it (a damaged file is never guessed at)."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, OSError) as exc:
        raise CampaignError([Problem(str(path), f"cannot be read ({type(exc).__name__}: {str(exc)[:120]})",
                                     expected=f"{what}, as calibrate fingerprint wrote it: remove it to start again")]) \
            from None
    needed = ("anchors", "threshold", "created") if what == "the anchor set" else ("verdict", "created")
    if not isinstance(document, dict) or any(k not in document for k in needed):
        raise CampaignError([Problem(str(path), "not what calibrate fingerprint writes", field=", ".join(needed),
                                     expected=f"{what}: remove it to start again")])
    return document


def latest_fingerprint(campaign: Campaign, judge: str) -> dict[str, Any] | None:
    """The judge's latest fingerprint document, or None.

    Raises
    ------
    CampaignError
        The latest fingerprint file is damaged (named, with what to do).
    """
    if campaign.path is None:
        return None
    found = sorted(p for p in _folder(campaign, judge).glob("*.json") if p.name != ANCHORS_FILE)
    return _read(found[-1], "a fingerprint") if found else None


def _stored_scores(campaign: Campaign, judge: str, metric: str) -> dict[str, float]:
    rows = campaign.ratings[(campaign.ratings["rater"] == judge) & (campaign.ratings["metric"] == metric)
                            & campaign.ratings["value"].notna()]
    runs = sorted(rows["run_id"].unique())
    first = rows[rows["run_id"] == ("" if "" in runs else runs[0])] if runs else rows
    return dict(zip(first["case_id"].astype(str), first["value"].astype(float)))


def _noise_floor(campaign: Campaign, metric: str, judge: str, verdicts: list[list[bool]]) -> tuple[float, str]:
    """The share of verdicts that flip between two repeats: the campaign's repeat runs, else these."""
    from calibrate.analysis.repeatability import repeatability

    try:
        doc = repeatability(campaign, metrics=[metric], judges=[judge], n_boot=0)
        found = [j for j in doc["judges"] if j.get("flip_share", {}).get("estimate") is not None]
    except ValueError:
        found = []
    if found:
        return float(found[0]["flip_share"]["estimate"]), "calibrate repeatability (the campaign's repeat runs)"
    pairs = [(a != b) for row in verdicts for i, a in enumerate(row) for b in row[i + 1:]]
    return (float(np.mean(pairs)) if pairs else 0.0), "these repeats"


def _scratch(campaign: Campaign, judge: str, anchors: list[str], where: Path) -> Campaign:
    """A campaign folder holding the judge's settings and the anchor cases alone."""
    where.mkdir(parents=True)
    os.symlink((campaign.path / "campaign.toml").resolve(), where / "campaign.toml")
    for spec in campaign.judges.values():   # the files a judge's settings name (a DAG)
        name = spec.settings.get("dag")
        if isinstance(name, str) and (campaign.path / name).is_file() and not (where / name).exists():
            os.symlink((campaign.path / name).resolve(), where / name)
    write_all({where / CASES_FILE: "".join(json.dumps(campaign.cases[c]) + "\n" for c in anchors),
               where / "ratings.csv": "case_id,metric,rater,rater_kind,value\n"})
    return load_campaign(where)


def fingerprint_judge(campaign: Campaign, *, judge: str, anchors: int = 24, repeats: int = 3,
                      threshold: float | None = None, policy: Any = None, progress: Any = None) -> Result:
    """The ``calibrate fingerprint`` command: re-score the judge's anchor cases and say SAME, CHANGED or
    FLAKY, with the evidence (see the module docstring).

    Parameters
    ----------
    campaign : Campaign
        Loaded from its folder, with the judge declared in ``[judges]``.
    judge : str
    anchors : int
        How many anchors to choose, the first time (later fingerprints use the stored ones).
    repeats : int
        How many times each anchor is scored now.
    threshold : float, optional
        The judge's threshold, the first time; by default the one the metric's rule recommends.
    policy : CallPolicy, optional
        As for :func:`~calibrate.judges.runner.run_judges`.

    Returns
    -------
    Result
        ``{"judge", "metric", "verdict", "reasons", "threshold", "anchors": [{"case_id", "stored",
        "now", "stored_pass", "now_pass", "straddles"}], "flips", "straddles", "noise_floor",
        "flip_test", "shift_test", "run", "created", "file"}``.

    Raises
    ------
    ValueError
        A judge that is not declared, has no stored score, or no threshold.

    Examples
    --------
    >>> import calibrate
    >>> c = calibrate.load_campaign("my-campaign")                                # doctest: +SKIP
    >>> calibrate.fingerprint_judge(c, judge="faithfulness-gpt")["verdict"]       # doctest: +SKIP
    'SAME'
    """
    from calibrate.judges.runner import run_judges

    if campaign.path is None:
        raise ValueError("a fingerprint needs a campaign folder (load_campaign): it keeps its anchors there")
    if judge not in campaign.judges:
        raise ValueError(ParameterText("{judge}: not a judge of [judges] in campaign.toml (its judges: {_known})",
                                       judge=judge, _known=", ".join(sorted(campaign.judges)) or "none"))
    if anchors < 4 or repeats < 2:
        raise ValueError(ParameterText("{anchors} and {repeats}: at least 4 anchors and 2 repeats",
                                       anchors=anchors, repeats=repeats))
    spec = campaign.judges[judge]
    metric = spec.into
    folder = _folder(campaign, judge)
    stored_file = folder / ANCHORS_FILE
    sign = 1.0 if campaign.rater(judge).higher_is_better else -1.0
    if stored_file.is_file():
        stored = _read(stored_file, "the anchor set")
    else:
        scores = _stored_scores(campaign, judge, metric)
        scores = {c: s for c, s in scores.items() if c in (campaign.cases or {})}
        if len(scores) < anchors:
            raise ValueError(f"judge {judge} has {len(scores)} stored score(s) of cases in cases.jsonl: score the "
                             f"campaign first (calibrate judge), or ask for fewer anchors")
        source = "given"
        if threshold is None:
            from calibrate.analysis.agreement import recommended_threshold

            threshold = recommended_threshold(campaign, metric, judge)
            source = "recommended under the metric's rule"
        if threshold is None or not math.isfinite(threshold):
            raise ValueError(ParameterText("the judge has no threshold under the metric's rule: give {threshold}",
                                           threshold=threshold))
        ids = np.array(sorted(scores))
        chosen = choose_anchors(ids, sign * np.array([scores[c] for c in ids]), sign * threshold, anchors)
        stored = {"judge": judge, "metric": metric, "threshold": float(threshold), "threshold_source": source,
                  "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
                  "settings": spec.public(), "anchors": [{"case_id": c, "score": scores[c]} for c in chosen]}
        folder.mkdir(parents=True, exist_ok=True)
        write_all({stored_file: json.dumps(stored, indent=2) + "\n"})
    threshold = float(stored["threshold"])
    anchor_ids = [a["case_id"] for a in stored["anchors"]]
    missing = [c for c in anchor_ids if c not in (campaign.cases or {})]
    if missing:
        raise ValueError(f"{len(missing)} anchor case(s) are no longer in cases.jsonl ({', '.join(missing[:5])}): "
                         f"remove {stored_file} to choose new anchors")
    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")
    scratch = _scratch(campaign, judge, anchor_ids, folder / stamp)
    run = run_judges(scratch, judges=[judge], repeats=repeats, use_cache=False, policy=policy, progress=progress)
    now: dict[str, list[float | None]] = {c: [None] * repeats for c in anchor_ids}
    errors = []
    for r in run["ratings"]:
        now[r["case_id"]][r["repeat"]] = r["value"]
        if r["error"]:
            errors.append(f"{r['case_id']} (repeat {r['repeat']}): {r['error']}")
    rows, verdicts = [], []
    for anchor in stored["anchors"]:
        values = [v for v in now[anchor["case_id"]] if v is not None]
        passes = [bool(sign * v >= sign * threshold) for v in values]
        stored_pass = bool(sign * anchor["score"] >= sign * threshold)
        majority = (sum(passes) * 2 > len(passes)) if passes else None
        rows.append({"case_id": anchor["case_id"], "stored": anchor["score"], "now": now[anchor["case_id"]],
                     "stored_pass": stored_pass, "now_pass": majority, "straddles": len(set(passes)) > 1})
        if passes:
            verdicts.append(passes)
    scored = [r for r in rows if r["now_pass"] is not None]
    doc: dict[str, Any] = {"judge": judge, "metric": metric, "threshold": threshold,
                           "threshold_source": stored["threshold_source"], "anchors_chosen": stored["created"],
                           "settings_then": stored["settings"], "settings_now": spec.public(),
                           "repeats": repeats, "anchors": rows, "run": run["run_id"], "errors": errors,
                           "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")}
    reasons = []
    if len(scored) < max(4, len(rows) // 2):
        doc |= {"verdict": "FAILED", "reasons": [f"only {len(scored)} of {len(rows)} anchors could be scored: "
                                                 + "; ".join(errors[:5])]}
    else:
        straddles = [r["case_id"] for r in scored if r["straddles"]]
        flips = [r["case_id"] for r in scored if r["now_pass"] != r["stored_pass"]]
        floor, floor_source = _noise_floor(campaign, metric, judge, verdicts)
        from scipy.stats import binomtest, wilcoxon

        flip_p = float(binomtest(len(flips), len(scored), max(floor, 1e-9), alternative="greater").pvalue) \
            if flips else 1.0
        values_now = [[x for x in r["now"] if x is not None] for r in scored]
        diffs = np.array([np.mean(v) - r["stored"] for v, r in zip(values_now, scored)])
        repeat_mad = float(np.mean([abs(a - b) for v in values_now for i, a in enumerate(v) for b in v[i + 1:]]
                                   or [0.0]))
        shift_p = float(wilcoxon(diffs).pvalue) if np.any(diffs != 0) else 1.0
        shift = float(np.median(diffs))
        doc |= {"straddles": straddles, "flips": flips,
                "noise_floor": {"flip_share": floor, "source": floor_source, "repeat_mean_absolute_difference":
                                repeat_mad},
                "flip_test": {"flips": len(flips), "anchors": len(scored), "p_value": flip_p,
                              "method": "one-sided binomial test at the noise floor's flip share"},
                "shift_test": {"median_shift": shift, "p_value": shift_p,
                               "method": "Wilcoxon signed-rank test of the mean new score minus the stored one"}}
        if straddles:
            reasons.append(f"{len(straddles)} of {len(scored)} anchors got both verdicts in {repeats} repeats "
                           f"({', '.join(straddles[:5])}): the judge does not give one case one verdict")
            doc["verdict"] = "FLAKY"
        else:
            if flip_p < LEVEL:
                reasons.append(f"{len(flips)} of {len(scored)} anchors changed verdict since "
                               f"{stored['created'][:10]} ({', '.join(flips[:5])}); its own noise flips "
                               f"{floor:.1%} (binomial p = {flip_p:.2g})")
            if shift_p < LEVEL and abs(shift) > repeat_mad:
                reasons.append(f"its scores moved by a median {shift:+.3g} (Wilcoxon p = {shift_p:.2g}), more than "
                               f"repeats differ ({repeat_mad:.3g})")
            doc["verdict"] = "CHANGED" if reasons else "SAME"
            if not reasons:
                reasons.append(f"{len(flips)} of {len(scored)} anchors changed verdict and the scores moved by a "
                               f"median {shift:+.3g}: within the judge's own noise")
        doc["reasons"] = reasons
    out = folder / f"{stamp}.json"
    doc["file"] = str(out)
    write_all({out: json.dumps(doc, indent=2, default=str) + "\n"})
    return Result(doc)
