"""A judge's fingerprint: has the judge itself changed since its threshold was chosen? (``calibrate
fingerprint``)

Providers move the model behind an alias, and a judge's scores move with it, announced or not. The
fingerprint re-scores a fixed **anchor set** of cases and compares the new scores with the ones stored
when the anchors were chosen:

- The anchors are chosen once, by calibrate, among the cases the judge has scored: half the nearest
  to its threshold (where a change shows first), half spread over its scores. They are stored in
  ``fingerprints/JUDGE/anchors.json`` with their scores then, the threshold, the judge's settings and
  the hash of each anchor case's content (the fields the judge reads). An anchor whose case was edited
  since (an ordinary fix of cases.jsonl) is not comparable: its stored score is of another text. It is
  left out, and not paid for, and the fingerprint says so; with too few anchors left, the fingerprint
  refuses before its first call.
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

The result is written to ``fingerprints/JUDGE/STAMP.json`` with the judge's settings it scored with
(:func:`judge_settings`: library, metric settings, model, ``base_url``, ...) and their hash, and its hash
to ``index.json`` beside it; ``calibrate gate --require-fingerprint`` refuses a judge whose latest
fingerprint (by the time recorded in it) is not SAME, whose settings in ``campaign.toml`` differ from
the ones that fingerprint recorded (or that records none: an earlier calibrate wrote it), or any file of
whose folder is not one calibrate wrote as it wrote it
(:mod:`calibrate.review.fingerprint_files`). Everything a fingerprint reads (the folder, the anchor
set, the judge, the cases) is checked before its first paid call.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import os
import shutil
from pathlib import Path, PurePath
from typing import Any

import numpy as np

from calibrate.base.errors import NO_VALUE, CampaignError, FileError, ParameterText, Problem
from calibrate.base.files import write_all, writes_campaign
from calibrate.base.names import inside, name_problem, path_component
from calibrate.base.results import Result
from calibrate.campaign import CASES_FILE, Campaign, load_campaign
from calibrate.judges.store import STORE_NAME
from calibrate.review.fingerprint_files import (
    ANCHORS_FILE,
    FINGERPRINTS_FOLDER,
    MIN_ANCHORS,
    AnchorCase,
    AnchorSet,
    FingerprintIndex,
    Fingerprints,
    case_hash,
    content_hash,
    read_folder,
    store_anchors,
    store_fingerprint,
)

__all__ = [
    "FINGERPRINTS_FOLDER",
    "LEVEL",
    "changed_anchors",
    "choose_anchors",
    "fingerprint_judge",
    "fingerprint_reasons",
    "judge_settings",
    "judge_settings_sha256",
    "latest_fingerprint",
    "read_fingerprints",
]

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


def judge_settings(spec: Any) -> dict[str, Any]:
    """Everything that defines a judge's scores, as ``campaign.toml`` sets it: the library, its metric
    and the metric's settings (criteria, evaluation steps, a DAG's tree: the prompt), the model (provider,
    name, ``base_url``, temperature, ...) and the embeddings; not the variable holding the key, nor the
    price, nor the installed library's version (a gate may run where the library is not installed).

    A fingerprint records them, and :func:`fingerprint_reasons` refuses a fingerprint whose record
    differs from the judge's settings now: it fingerprinted another judge.

    Parameters
    ----------
    spec : JudgeSpec
        A judge of ``[judges]`` (``campaign.judges[name]``).

    Examples
    --------
    >>> from calibrate.campaign.judge_specs import JudgeSpec, ModelSpec
    >>> spec = JudgeSpec("j", "deepeval", "faithfulness", "faithfulness",
    ...                  ModelSpec("openai", "m", base_url="http://h/v1", api_key_env="KEY"), None)
    >>> judge_settings(spec)["model"]
    {'provider': 'openai', 'name': 'm', 'base_url': 'http://h/v1', 'temperature': 0.0}
    """
    from calibrate.judges.versions import rating_template

    record = rating_template(spec.public(), None)
    record.pop("library_version", None)
    if "embeddings" in record:
        record["embeddings"] = {k: v for k, v in record["embeddings"].items() if k != "versions"}
    record["fields"] = list(spec.fields)
    return json.loads(json.dumps(record, default=str))  # as the fingerprint file holds it


def judge_settings_sha256(spec: Any) -> str:
    """The hash of :func:`judge_settings` (:func:`~calibrate.review.fingerprint_files.content_hash`).

    Examples
    --------
    >>> from calibrate.campaign.judge_specs import JudgeSpec, ModelSpec
    >>> a = JudgeSpec("j", "deepeval", "faithfulness", "faithfulness", ModelSpec("openai", "careful"), None)
    >>> b = JudgeSpec("j", "deepeval", "faithfulness", "faithfulness", ModelSpec("openai", "lenient"), None)
    >>> judge_settings_sha256(a) == judge_settings_sha256(b)
    False
    """
    return content_hash(judge_settings(spec))


def changed_anchors(stored: AnchorSet, campaign: Campaign) -> list[str]:
    """The anchors whose case content (the fields the judge reads) changed since the anchors were chosen:
    their stored score is of another text, so they are not comparable. Anchors of an anchor set that
    recorded no content (an earlier calibrate) are taken as unchanged."""
    fields = stored.case_fields or []
    return [
        a.case_id
        for a in stored.anchors
        if a.case_sha256 is not None
        and a.case_id in (campaign.cases or {})
        and case_hash(campaign.cases[a.case_id], fields) != a.case_sha256
    ]


def _folder(campaign: Campaign, judge: str) -> Path:
    """``fingerprints/JUDGE/``, checked to be one folder inside the campaign (never a path elsewhere)."""
    return inside(campaign.path, FINGERPRINTS_FOLDER, path_component(judge, what="judge name"))


def read_fingerprints(campaign: Campaign, judge: str) -> Fingerprints:
    """What the judge's fingerprint folder holds that a decision may trust, and every file it refuses
    (see :mod:`calibrate.review.fingerprint_files`). A name that cannot be a folder, or a judge not of
    ``[judges]``, has no fingerprint; a folder that leads outside the campaign is refused."""
    if campaign.path is None or name_problem(judge) or judge not in campaign.judges:
        return Fingerprints(Path(FINGERPRINTS_FOLDER) / "-")
    try:
        folder = _folder(campaign, judge)
    except (FileError, ValueError) as exc:  # a link planted in fingerprints/ that leads elsewhere
        where = campaign.path / FINGERPRINTS_FOLDER / judge
        return Fingerprints(where, refused=(Problem(str(where), f"refused: {exc}", expected="remove it"),))
    return read_folder(folder, judge)


def latest_fingerprint(campaign: Campaign, judge: str) -> dict[str, Any] | None:
    """The judge's latest trusted fingerprint (by the time recorded in it), or None.

    Returns
    -------
    dict or None
        ``{"judge", "metric", "verdict", "created", "reasons", "threshold", "anchors_sha256", "file"}``.

    Raises
    ------
    CampaignError
        A file of the judge's fingerprint folder is refused (each named, with what to do).
    """
    found = read_fingerprints(campaign, judge)
    if found.refused:
        raise CampaignError(list(found.refused), heading=f"the fingerprints of judge {judge}")
    if found.latest is None:
        return None
    return found.latest.model_dump(mode="json") | {"file": str(found.latest_file)}


def fingerprint_reasons(campaign: Campaign, judge: str, metric: str) -> list[str]:
    """Why the gate may not take the judge as unchanged on ``metric``: none when its latest trusted
    fingerprint says SAME and no file of its fingerprint folder is refused.

    Examples
    --------
    >>> import calibrate
    >>> c = calibrate.load_campaign(calibrate.demo_campaign_path())
    >>> fingerprint_reasons(c, "Olz-gpt4o", "relevance")[0][:45]
    'no fingerprint of the judge: run calibrate fi'
    """
    found = read_fingerprints(campaign, judge)
    reasons = [f"a file of its fingerprints is refused: {problem}" for problem in found.refused]
    latest = found.latest
    again = f"run calibrate fingerprint CAMPAIGN --judge {judge} again"
    if latest is None:
        if not reasons:
            reasons.append(
                f"no fingerprint of the judge: run calibrate fingerprint CAMPAIGN --judge {judge} (a judge of [judges])"
            )
        return reasons
    if latest.metric != metric:
        reasons.append(
            f"its latest fingerprint ({found.latest_file}) is of metric {latest.metric}, not {metric}: "
            f"take a new one (calibrate fingerprint CAMPAIGN --judge {judge})"
        )
        return reasons
    now = judge_settings(campaign.judges[judge])
    if latest.judge_settings_sha256 is None or latest.judge_settings is None:
        reasons.append(
            f"its latest fingerprint ({found.latest_file.name}) records no settings of the judge (an "
            "earlier calibrate wrote it), so whether it fingerprinted the judge as campaign.toml sets it "
            f"now cannot be told: {again}"
        )
    elif latest.judge_settings_sha256 != content_hash(latest.judge_settings):
        reasons.append(
            f"its latest fingerprint ({found.latest_file.name}) records settings that do not match their "
            f"own hash: {again}"
        )
    elif latest.judge_settings_sha256 != content_hash(now):
        from calibrate.judges.versions import settings_changes

        changes = settings_changes(latest.judge_settings, now) or ["(a change the fields do not show)"]
        reasons.append(
            f"the judge's settings changed since its latest fingerprint ({found.latest_file.name}: "
            f"{'; '.join(changes[:5])}): {again}"
        )
    if latest.verdict != "SAME":
        reasons.append(
            f"its latest fingerprint ({latest.created.isoformat()[:19]}, {found.latest_file.name}) says "
            f"{latest.verdict}: " + "; ".join(latest.reasons)[:300]
        )
    return reasons


def _check_anchors(stored: AnchorSet, campaign: Campaign, judge: str, metric: str, path: Path) -> None:
    """The anchor set against the campaign as it is now: the judge, its metric and every case (before any call)."""
    again = f"remove {path} to choose anchors anew (calibrate fingerprint)"
    problems = []
    if stored.judge != judge:
        problems.append(
            Problem(
                str(path),
                "the anchor set of another judge",
                field="judge",
                value=stored.judge,
                expected=f"{judge}; {again}",
            )
        )
    if stored.metric != metric:
        problems.append(
            Problem(
                str(path),
                f"the anchor set of metric {stored.metric}, while judge {judge} scores {metric} in campaign.toml",
                field="metric",
                value=stored.metric,
                expected=f"{metric}; {again}",
            )
        )
    missing = [(i, a.case_id) for i, a in enumerate(stored.anchors) if a.case_id not in (campaign.cases or {})]
    problems += [
        Problem(
            str(path),
            "an anchor case no longer in cases.jsonl",
            field=f"anchors[{i}].case_id",
            value=case,
            expected=f"a case of cases.jsonl; {again}",
        )
        for i, case in missing[:20]
    ]
    if problems:
        raise CampaignError(problems, heading=f"the anchor set of judge {judge} (nothing was scored)")


def _stored_scores(campaign: Campaign, judge: str, metric: str) -> dict[str, float]:
    rows = campaign.ratings[
        (campaign.ratings["rater"] == judge)
        & (campaign.ratings["metric"] == metric)
        & campaign.ratings["value"].notna()
    ]
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
    pairs = [(a != b) for row in verdicts for i, a in enumerate(row) for b in row[i + 1 :]]
    return (float(np.mean(pairs)) if pairs else 0.0), "these repeats"


def _scratch(campaign: Campaign, judge: str, anchors: list[str], where: Path) -> Campaign:
    """A campaign folder holding the judge's settings and the anchor cases alone."""
    where.mkdir(parents=True)
    os.symlink((campaign.path / "campaign.toml").resolve(), where / "campaign.toml")
    for spec in campaign.judges.values():  # the files a judge's settings name (a DAG), inside the campaign
        name = spec.settings.get("dag")
        if isinstance(name, str) and inside(campaign.path, *PurePath(name).parts).is_file():
            link = inside(where, *PurePath(name).parts)
            if not link.exists():
                link.parent.mkdir(parents=True, exist_ok=True)
                os.symlink((campaign.path / name).resolve(), link)
    write_all(
        {
            where / CASES_FILE: "".join(json.dumps(campaign.cases[c]) + "\n" for c in anchors),
            where / "ratings.csv": "case_id,metric,rater,rater_kind,value\n",
        }
    )
    return load_campaign(where)


def _check_request(campaign: Campaign, judge: str, anchors: int, repeats: int) -> None:
    if campaign.path is None:
        raise ValueError("a fingerprint needs a campaign folder (load_campaign): it keeps its anchors there")
    if judge not in campaign.judges:
        raise ValueError(
            ParameterText(
                "{judge}: not a judge of [judges] in campaign.toml (its judges: {_known})",
                judge=judge,
                _known=", ".join(sorted(campaign.judges)) or "none",
            )
        )
    if anchors < 4 or repeats < 2:
        raise ValueError(
            ParameterText("{anchors} and {repeats}: at least 4 anchors and 2 repeats", anchors=anchors, repeats=repeats)
        )


def _first_threshold(campaign: Campaign, metric: str, judge: str, threshold: float | None) -> tuple[float, str]:
    """The threshold the first anchors are chosen at, and where it came from: given, or the metric's rule's."""
    source = "given"
    if threshold is not None and not math.isfinite(threshold):
        raise ValueError(ParameterText("{threshold}: expected a finite number", threshold=threshold))
    if threshold is None:
        from calibrate.analysis.recommendations import recommended_threshold
        from calibrate.analysis.rules import default_rule

        threshold = recommended_threshold(campaign, metric, judge)
        source = "recommended under the metric's rule"
        if threshold is None:
            # named without a value: "(threshold)" to a library caller, "(--threshold)" on the command line
            raise ValueError(
                ParameterText(
                    "judge {_judge} has no threshold under the metric's rule ({_rule}): give the one it runs at "
                    "({threshold})",
                    _judge=judge,
                    _rule=default_rule(campaign.metrics[metric]).describe(),
                    threshold=NO_VALUE,
                )
            )
    return threshold, source


def _choose_and_store_anchors(
    campaign: Campaign,
    judge: str,
    folder: Path,
    index: FingerprintIndex | None,
    anchors: int,
    threshold: float | None,
    sign: float,
) -> tuple[AnchorSet, str, FingerprintIndex]:
    """The first fingerprint: choose the anchors among the judge's stored scores, and write them."""
    spec = campaign.judges[judge]
    metric = spec.into
    scores = _stored_scores(campaign, judge, metric)
    scores = {c: s for c, s in scores.items() if c in (campaign.cases or {})}
    if len(scores) < anchors:
        raise ValueError(
            f"judge {judge} has {len(scores)} stored score(s) of cases in cases.jsonl: score the "
            f"campaign first (calibrate judge), or ask for fewer anchors"
        )
    threshold, source = _first_threshold(campaign, metric, judge, threshold)
    ids = np.array(sorted(scores))
    chosen = choose_anchors(ids, sign * np.array([scores[c] for c in ids]), sign * threshold, anchors)
    return store_anchors(
        folder,
        judge,
        index,
        {
            "judge": judge,
            "metric": metric,
            "threshold": float(threshold),
            "threshold_source": source,
            "created": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
            "settings": spec.public(),
            "case_fields": list(spec.fields),
            "anchors": [
                {"case_id": c, "score": scores[c], "case_sha256": case_hash(campaign.cases[c], spec.fields)}
                for c in chosen
            ],
        },
    )


def _comparable_anchors(
    stored: AnchorSet, campaign: Campaign, judge: str, stored_file: Path
) -> tuple[list[str], list[AnchorCase]]:
    """The anchors whose case changed since they were chosen (left out), and the rest; too few left raises."""
    edited = changed_anchors(stored, campaign)  # their stored score is of another text: left out, not paid for
    comparable = [a for a in stored.anchors if a.case_id not in edited]
    if len(comparable) < max(MIN_ANCHORS, (len(stored.anchors) + 1) // 2):
        raise CampaignError(
            [
                Problem(
                    str(stored_file),
                    f"{len(edited)} of {len(stored.anchors)} anchor cases changed in cases.jsonl since the "
                    f"anchors were chosen ({', '.join(edited[:5])}{', ...' if len(edited) > 5 else ''}): their stored "
                    f"scores are of another text, and the {len(comparable)} left cannot show a change",
                    field="anchors",
                    expected=f"at least {max(MIN_ANCHORS, (len(stored.anchors) + 1) // 2)} anchors whose "
                    f"case is unchanged: remove {stored_file} to choose anchors anew (calibrate fingerprint)",
                )
            ],
            heading=f"the anchor set of judge {judge} (nothing was scored)",
        )
    return edited, comparable


def _rescore(
    campaign: Campaign, judge: str, anchor_ids: list[str], where: Path, repeats: int, policy: Any, progress: Any
) -> dict[str, Any]:
    """Score the anchors again, in a scratch campaign at ``where``."""
    from calibrate.judges.runner import run_judges

    try:
        scratch = _scratch(campaign, judge, anchor_ids, where)
        return run_judges(scratch, judges=[judge], repeats=repeats, use_cache=False, policy=policy, progress=progress)
    except BaseException:  # the scratch folder goes, unless it keeps paid attempts (its store)
        if not (where / STORE_NAME).is_file():
            shutil.rmtree(where, ignore_errors=True)
        raise


def _anchor_rows(
    run: dict[str, Any], comparable: list[AnchorCase], repeats: int, sign: float, threshold: float
) -> tuple[list[dict[str, Any]], list[list[bool]], list[str]]:
    """One row per anchor (its score then and now, its verdicts), each anchor's verdicts now, and the errors."""
    now: dict[str, list[float | None]] = {a.case_id: [None] * repeats for a in comparable}
    errors = []
    for r in run["ratings"]:
        now[r["case_id"]][r["repeat"]] = r["value"]
        if r["error"]:
            errors.append(f"{r['case_id']} (repeat {r['repeat']}): {r['error']}")
    rows, verdicts = [], []
    for anchor in comparable:
        values = [v for v in now[anchor.case_id] if v is not None]
        passes = [bool(sign * v >= sign * threshold) for v in values]
        stored_pass = bool(sign * anchor.score >= sign * threshold)
        majority = (sum(passes) * 2 > len(passes)) if passes else None
        rows.append(
            {
                "case_id": anchor.case_id,
                "stored": anchor.score,
                "now": now[anchor.case_id],
                "stored_pass": stored_pass,
                "now_pass": majority,
                "straddles": len(set(passes)) > 1,
            }
        )
        if passes:
            verdicts.append(passes)
    return rows, verdicts, errors


def _evidence(
    campaign: Campaign, metric: str, judge: str, scored: list[dict[str, Any]], verdicts: list[list[bool]]
) -> dict[str, Any]:
    """The straddling and flipped anchors, the judge's noise floor, and the tests of a flip and a shift."""
    straddles = [r["case_id"] for r in scored if r["straddles"]]
    flips = [r["case_id"] for r in scored if r["now_pass"] != r["stored_pass"]]
    floor, floor_source = _noise_floor(campaign, metric, judge, verdicts)
    from scipy.stats import binomtest, wilcoxon

    flip_p = float(binomtest(len(flips), len(scored), max(floor, 1e-9), alternative="greater").pvalue) if flips else 1.0
    values_now = [[x for x in r["now"] if x is not None] for r in scored]
    diffs = np.array([np.mean(v) - r["stored"] for v, r in zip(values_now, scored)])
    repeat_mad = float(np.mean([abs(a - b) for v in values_now for i, a in enumerate(v) for b in v[i + 1 :]] or [0.0]))
    shift_p = float(wilcoxon(diffs).pvalue) if np.any(diffs != 0) else 1.0
    shift = float(np.median(diffs))
    return {
        "straddles": straddles,
        "flips": flips,
        "noise_floor": {"flip_share": floor, "source": floor_source, "repeat_mean_absolute_difference": repeat_mad},
        "flip_test": {
            "flips": len(flips),
            "anchors": len(scored),
            "p_value": flip_p,
            "method": "one-sided binomial test at the noise floor's flip share",
        },
        "shift_test": {
            "median_shift": shift,
            "p_value": shift_p,
            "method": "Wilcoxon signed-rank test of the mean new score minus the stored one",
        },
    }


def _verdict(evidence: dict[str, Any], n_scored: int, repeats: int, stored: AnchorSet) -> tuple[str, list[str]]:
    """FLAKY, CHANGED or SAME from the evidence, and the reasons."""
    straddles, flips = evidence["straddles"], evidence["flips"]
    floor, repeat_mad = (
        evidence["noise_floor"]["flip_share"],
        evidence["noise_floor"]["repeat_mean_absolute_difference"],
    )
    flip_p = evidence["flip_test"]["p_value"]
    shift, shift_p = evidence["shift_test"]["median_shift"], evidence["shift_test"]["p_value"]
    reasons = []
    if straddles:
        reasons.append(
            f"{len(straddles)} of {n_scored} anchors got both verdicts in {repeats} repeats "
            f"({', '.join(straddles[:5])}): the judge does not give one case one verdict"
        )
        return "FLAKY", reasons
    if flip_p < LEVEL:
        reasons.append(
            f"{len(flips)} of {n_scored} anchors changed verdict since "
            f"{stored.created.date().isoformat()} ({', '.join(flips[:5])}); its own noise flips "
            f"{floor:.1%} (binomial p = {flip_p:.2g})"
        )
    if shift_p < LEVEL and abs(shift) > repeat_mad:
        reasons.append(
            f"its scores moved by a median {shift:+.3g} (Wilcoxon p = {shift_p:.2g}), more than "
            f"repeats differ ({repeat_mad:.3g})"
        )
    verdict = "CHANGED" if reasons else "SAME"
    if not reasons:
        reasons.append(
            f"{len(flips)} of {n_scored} anchors changed verdict and the scores moved by a "
            f"median {shift:+.3g}: within the judge's own noise"
        )
    return verdict, reasons


@writes_campaign("calibrate fingerprint")
def fingerprint_judge(
    campaign: Campaign,
    *,
    judge: str,
    anchors: int = 24,
    repeats: int = 3,
    threshold: float | None = None,
    policy: Any = None,
    progress: Any = None,
) -> Result:
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
    _check_request(campaign, judge, anchors, repeats)
    spec = campaign.judges[judge]
    metric = spec.into
    folder = _folder(campaign, judge)
    stored_file = folder / ANCHORS_FILE
    sign = 1.0 if campaign.rater(judge).higher_is_better else -1.0
    # everything the fingerprint reads is checked here, before the first paid call
    found = read_fingerprints(campaign, judge)
    if found.refused:
        raise CampaignError(list(found.refused), heading=f"the fingerprints of judge {judge} (nothing was scored)")
    index = found.index
    if found.anchors is not None:
        stored, anchors_sha256 = found.anchors, found.anchors_sha256
    else:
        stored, anchors_sha256, index = _choose_and_store_anchors(
            campaign, judge, folder, index, anchors, threshold, sign
        )
    _check_anchors(stored, campaign, judge, metric, stored_file)
    threshold = stored.threshold
    edited, comparable = _comparable_anchors(stored, campaign, judge, stored_file)
    stamp = _dt.datetime.now(_dt.UTC).strftime("%Y%m%dT%H%M%S%fZ")
    run = _rescore(campaign, judge, [a.case_id for a in comparable], folder / stamp, repeats, policy, progress)
    rows, verdicts, errors = _anchor_rows(run, comparable, repeats, sign, threshold)
    scored = [r for r in rows if r["now_pass"] is not None]
    doc: dict[str, Any] = {
        "judge": judge,
        "metric": metric,
        "threshold": threshold,
        "threshold_source": stored.threshold_source,
        "anchors_chosen": stored.created.isoformat(),
        "anchors_sha256": anchors_sha256,
        "settings_then": stored.settings,
        "settings_now": spec.public(),
        "judge_settings": judge_settings(spec),
        "judge_settings_sha256": judge_settings_sha256(spec),
        "left_out": [
            {"case_id": c, "why": "its case changed in cases.jsonl since the anchors were chosen"} for c in edited
        ],
        "repeats": repeats,
        "anchors": rows,
        "run": run["run_id"],
        "errors": errors,
        "created": _dt.datetime.now(_dt.UTC).isoformat(timespec="microseconds"),
    }
    if len(scored) < max(4, len(rows) // 2):
        doc |= {
            "verdict": "FAILED",
            "reasons": [f"only {len(scored)} of {len(rows)} anchors could be scored: " + "; ".join(errors[:5])],
        }
    else:
        doc |= _evidence(campaign, metric, judge, scored, verdicts)
        doc["verdict"], doc["reasons"] = _verdict(doc, len(scored), repeats, stored)
    if edited:
        doc["reasons"] = doc["reasons"] + [
            f"{len(edited)} of {len(stored.anchors)} anchors left out of the comparison: their case changed in "
            f"cases.jsonl since the anchors were chosen ({', '.join(edited[:5])}{', ...' if len(edited) > 5 else ''})"
        ]
    out = folder / f"{stamp}.json"
    doc["file"] = str(out)
    store_fingerprint(folder, judge, index, out.name, doc)
    return Result(doc)
