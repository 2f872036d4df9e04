"""``calibrate labelstudio push`` and ``pull``: the campaign's cases to a Label Studio project and the
annotators' labels back, through the Label Studio SDK.

The URL and API key come from the caller (flags, or ``LABEL_STUDIO_URL`` / ``LABEL_STUDIO_API_KEY``);
legacy tokens and personal access tokens both work (the SDK tells them apart). The key is kept in
memory only: the store records the server's URL and the project id, nothing else.

The SDK is given an httpx client made by :func:`calibrate.base.http.httpx_client`, so its requests keep
calibrate's rules: a redirect to another server is refused (the key never leaves the server given), each
reply has a deadline and a size cap. The key (and the access token a personal access token is exchanged
for) is redacted from every error.
"""

from __future__ import annotations

import datetime as _dt
import uuid
from pathlib import Path
from typing import Any

import numpy as np

from calibrate.base.documents import DocumentError, short
from calibrate.base.errors import NO_VALUE, ParameterText
from calibrate.base.files import writes_campaign
from calibrate.base.http import HttpPolicy, httpx_client
from calibrate.base.results import Result, single_row
from calibrate.base.secrets import redact, remember
from calibrate.campaign import Campaign
from calibrate.humans.adjudication import append_decisions, decision_history
from calibrate.humans.labelstudio.interface import PER_ITEM, Interface, build_interface, task_data
from calibrate.humans.labelstudio.labels import (
    Label,
    LabelError,
    Task,
    export_projects,
    parse_export,
    read_export,
    read_export_file,
    shown_model_version,
    task_case_id,
)
from calibrate.humans.labelstudio.store import LabelStore, Project

__all__ = ["LabelStudioError", "connect", "pull", "pull_file", "push"]

IMPORT_BATCH = 1000
#: seconds for each request to Label Studio, the whole reply included (an export can be slow)
TIMEOUT_S = 120.0


class LabelStudioError(RuntimeError):
    """Label Studio could not be reached or refused a request; says which and why."""


def connect(url: str | None, api_key: str | None):
    """A Label Studio SDK client, or :class:`LabelStudioError` naming what is missing."""
    if not url:
        raise LabelStudioError(ParameterText("no Label Studio URL: pass {url} or set LABEL_STUDIO_URL", url=NO_VALUE))
    if not api_key:
        raise LabelStudioError(
            ParameterText(
                "no Label Studio API key: pass {api_key} or set LABEL_STUDIO_API_KEY "
                "(a legacy token or a personal access token)",
                api_key=NO_VALUE,
            )
        )
    try:
        from label_studio_sdk import LabelStudio
    except ImportError:
        raise LabelStudioError(
            "talking to Label Studio needs its SDK: pip install 'calibrate-judges[labelstudio]' "
            "(reading an export file does not)"
        ) from None
    remember(api_key)
    base = url.rstrip("/")
    http = httpx_client(base, name="Label Studio", policy=HttpPolicy(timeout_s=TIMEOUT_S))
    return LabelStudio(base_url=base, api_key=api_key, timeout=TIMEOUT_S, httpx_client=http)


def _export(client, project_id: int) -> list[Task]:
    """The whole project: Label Studio's JSON export, read by
    :func:`~calibrate.humans.labelstudio.labels.parse_export`."""
    data = b"".join(client.projects.exports.download_sync(project_id, export_type="JSON", download_all_tasks=True))
    try:
        return parse_export(data, source=f"Label Studio's export of project {project_id}")
    except DocumentError as exc:
        raise LabelStudioError(str(exc)) from None


def _with_removed_metrics(
    campaign: Campaign, interface: Interface, had: list[Interface]
) -> tuple[Interface, list[str]]:
    """``interface`` with the metrics the project ``had`` (the interfaces recorded for it) that
    campaign.toml no longer declares: their labels are read as the project asked for them, kept and set
    aside (see "Removing cases, metrics and judges" in the README); and those metrics."""
    removed: list[str] = []
    for recorded in had:
        names = [m for m in recorded.metrics if m not in campaign.metrics and m not in interface.metrics]
        interface = interface.joined(recorded, names)
        removed += names
    return interface, sorted(removed)


def _call(what: str, function, *args, **kwargs):
    try:
        return function(*args, **kwargs)
    except LabelStudioError:
        raise
    except Exception as exc:  # noqa: BLE001 - the SDK's ApiError, httpx's connection errors: said with what was asked
        raise _refused(what, exc) from None


def _refused(what: str, exc: Exception) -> LabelStudioError:
    """A failed SDK call (``exc``: the SDK's ApiError, httpx's connection errors) said with what was asked."""
    status = getattr(exc, "status_code", None)
    body = getattr(exc, "body", None)
    return LabelStudioError(
        redact(
            f"Label Studio refused to {what}"
            + (f" (HTTP {status}: {short(body, 500)})" if status else f": {type(exc).__name__}: {exc}")
        )
    )


def _predictions(
    campaign: Campaign, interface: Interface, judge: str, threshold: float
) -> tuple[dict[str, list[dict]], list[str]]:
    """A judge's ratings as Label Studio results per case, for the metrics a case-level score can
    pre-fill (not those labelled per chunk), and the metrics it cannot."""
    ratings = campaign.ratings[(campaign.ratings["rater"] == judge) & campaign.ratings["value"].notna()]
    rater = campaign.rater(judge)
    by_case: dict[str, list[dict]] = {}
    skipped = []
    for metric, kind in interface.metrics.items():
        spec = campaign.metrics[metric]
        control = interface.controls.get(metric)
        if control is None or kind in PER_ITEM or (spec.scale != "binary" and not rater.on_metric_scale):
            skipped.append(metric)
            continue
        for row in ratings[ratings["metric"] == metric].itertuples():
            score = float(row.value)
            if spec.scale == "binary":
                value = {"choices": ["pass" if score >= threshold else "fail"]}
            elif control.type == "rating":
                value = {"rating": int(spec.nearest_in_scale(np.array([score]))[0])}
            elif control.type == "choices":
                level = float(spec.nearest_in_scale(np.array([score]))[0])
                value = {"choices": [str(int(level)) if level.is_integer() else repr(level)]}
            else:
                value = {"number": score}
            by_case.setdefault(str(row.case_id), []).append(
                {"from_name": metric, "to_name": control.to_name, "type": control.type, "value": value}
            )
    return by_case, skipped


def _checked_push(
    campaign: Campaign, metrics: list[str] | None, *, overlap: float, show_judge: str | None
) -> Interface:
    """The labeling interface to push, once ``overlap`` and ``show_judge`` are checked."""
    if not 0 <= overlap <= 1:
        raise LabelStudioError(
            ParameterText(
                "{overlap} is a share of tasks between 0 and 1, not {_value}", overlap=NO_VALUE, _value=overlap
            )
        )
    interface = build_interface(campaign, metrics)
    if show_judge is not None and show_judge not in set(
        campaign.ratings.loc[campaign.ratings["rater_kind"] == "judge", "rater"]
    ):
        raise LabelStudioError(
            ParameterText("{show_judge}: no judge of that name has ratings in the campaign", show_judge=show_judge)
        )
    return interface


def _known_project(client, known: Project | None):
    """The project this campaign pushed to before, or None (none yet, or deleted on the server)."""
    project = None
    if known:
        try:
            project = client.projects.get(known.project_id)
        except Exception as exc:  # noqa: BLE001 - the SDK's ApiError (imported with the SDK), httpx's errors
            if getattr(exc, "status_code", None) != 404:  # not "deleted": said, not taken for a deletion
                raise _refused(f"read project {known.project_id}", exc) from None
            project = None  # deleted on the server: a new project is made
    return project


def _project_settings(overlap: float, annotators_per_overlap: int, show_judge: str | None) -> dict[str, Any]:
    """The project's overlap settings, and the model version whose predictions pre-fill its tasks."""
    settings: dict[str, Any] = {
        "maximum_annotations": annotators_per_overlap if overlap > 0 else 1,
        "overlap_cohort_percentage": round(overlap * 100),
    }
    if show_judge:  # Label Studio pre-fills a task with the predictions of the project's model version
        settings |= {"model_version": show_judge, "show_collab_predictions": True}
    return settings


def _create_or_update(client, campaign: Campaign, interface: Interface, project, settings: dict[str, Any]):
    """A new project (``project`` None) with the interface, or the existing one's interface updated."""
    if project is None:
        return _call(
            "create the project",
            client.projects.create,
            title=campaign.name[:50],
            description=f"calibrate campaign {campaign.name}",
            label_config=interface.xml,
            expert_instruction=interface.instructions,
            show_instruction=True,
            **settings,
        )
    _call(
        "update the project's interface",
        client.projects.update,
        project.id,
        label_config=interface.xml,
        expert_instruction=interface.instructions,
        **settings,
    )
    return project


def _new_tasks(
    cases: dict[str, dict],
    existing: set,
    predictions: dict[str, list[dict]],
    show_judge: str | None,
    case_ids: list[str] | None,
) -> list[dict]:
    """The tasks of the cases not in the project yet (among ``case_ids``), pre-filled where predicted."""
    chosen = set(case_ids or ())
    return [
        {
            "data": task_data(case_id, case),
            **(
                {"predictions": [{"model_version": show_judge, "result": predictions[case_id]}]}
                if case_id in predictions
                else {}
            ),
        }
        for case_id, case in sorted(cases.items())
        if case_id not in existing and (case_ids is None or case_id in chosen)
    ]


@writes_campaign("calibrate labelstudio push")
def push(
    campaign: Campaign,
    *,
    url: str | None,
    api_key: str | None,
    metrics: list[str] | None = None,
    overlap: float = 0.0,
    annotators_per_overlap: int = 2,
    show_judge: str | None = None,
    show_threshold: float = 0.5,
    case_ids: list[str] | None = None,
) -> Result:
    """Create the campaign's project (or update its interface), and import the cases it lacks.

    Pushing again adds only cases whose id is not in the project yet: never a duplicate task. Judge
    scores are not sent (blind labeling) unless ``show_judge`` names a judge: its ratings then pre-fill
    the new tasks (pass at ``show_threshold`` on a binary metric), the project is recorded as showing
    it, and every later statistic warns that the labels may be anchored on it. ``overlap`` is the
    share of tasks that go to ``annotators_per_overlap`` annotators. ``case_ids`` (a sample) limits
    the cases pushed.

    Parameters
    ----------
    campaign : Campaign
        A campaign read from its folder, with ``cases.jsonl``.
    url, api_key : str
        Label Studio's address and a legacy or personal access token (never stored).
    metrics : list of str, optional
        Only these metrics get a labeling control.
    overlap : float
        Share of tasks that go to several annotators.
    annotators_per_overlap : int
    show_judge : str, optional
        Pre-fill the new tasks with this judge's ratings (not blind).
    show_threshold : float
        With ``show_judge``: the score from which a binary metric is pre-filled as pass.
    case_ids : list of str, optional
        Push only these cases (a sample).

    Returns
    -------
    Result
        ``{"url", "project_id", "created", "metrics", "tasks_added", "tasks_already_there", ...}``.

    Examples
    --------
    >>> import calibrate
    >>> c = calibrate.load_campaign("my-campaign")                      # doctest: +SKIP
    >>> calibrate.push_to_label_studio(c, url="http://127.0.0.1:8080", api_key="...")["tasks_added"]  # doctest: +SKIP
    """
    if campaign.path is None or not campaign.cases:
        raise LabelStudioError("pushing needs a campaign folder with cases.jsonl")
    interface = _checked_push(campaign, metrics, overlap=overlap, show_judge=show_judge)
    predictions, not_shown = _predictions(campaign, interface, show_judge, show_threshold) if show_judge else ({}, [])
    client = connect(url, api_key)
    store = LabelStore(campaign.path)
    try:
        known = store.project(url)
        project = _known_project(client, known)
        created = project is None
        settings = _project_settings(overlap, annotators_per_overlap, show_judge)
        project = _create_or_update(client, campaign, interface, project, settings)
        shown = show_judge if created else (show_judge or known.shown_judge)
        # the interface pushed, with the metrics the project had that campaign.toml no longer declares
        recorded, _ = _with_removed_metrics(
            campaign, interface, [] if created else store.interfaces(_source(url, project.id), known)
        )
        store.set_project(url, project.id, sorted(interface.metrics), shown, recorded)
        existing = {task_case_id(task) for task in _call("export the project", _export, client, project.id)}
        new = _new_tasks(campaign.cases, existing, predictions, show_judge, case_ids)
        for start in range(0, len(new), IMPORT_BATCH):
            _call(
                "import tasks", client.projects.import_tasks, id=project.id, request=new[start : start + IMPORT_BATCH]
            )
        return Result(
            {
                "url": url,
                "project_id": project.id,
                "created": created,
                "metrics": sorted(interface.metrics),
                "tasks_added": len(new),
                "tasks_already_there": len(existing),
                "overlap": overlap,
                "shown_judge": shown,
                "pre_annotated": sum("predictions" in t for t in new),
                "not_pre_annotated_metrics": not_shown,
            },
            single_row,
        )
    finally:
        store.close()


def _source(url: str, project_id: int) -> str:
    """How the label store names a project of a Label Studio server."""
    return f"{url.rstrip('/')}#project-{project_id}"


def _decisions(labels: list[Label], deciders: set[str]) -> list[dict[str, Any]]:
    """The labels of the adjudicators as decisions; an adjudicator with no label is a ``LabelStudioError``."""
    annotators = {label.annotator for label in labels}
    if deciders - annotators:
        raise LabelStudioError(
            ParameterText(
                "{adjudicators}: no label of theirs in the project (annotators: {_known})",
                adjudicators=", ".join(sorted(deciders - annotators)),
                _known=", ".join(sorted(annotators)),
            )
        )
    return [
        {
            "case_id": label.case_id,
            "metric": label.metric,
            "value": label.value,
            "adjudicator": label.annotator,
            "note": "decided in Label Studio",
        }
        for label in labels
        if label.annotator in deciders
    ]


@writes_campaign("calibrate labelstudio pull")
def _pull(
    campaign: Campaign,
    tasks: list[Task],
    source: str,
    project: Project | None,
    users: dict[int, str],
    shown_judge: str | None = None,
    adjudicators: list[str] | None = None,
    *,
    whole: bool,
) -> Result:
    """Read ``tasks`` (an export of ``source``, a ``project`` this campaign pushed or None) into the label
    store and export the current labels; ``whole``: the tasks are the whole project, so a label no longer
    there was deleted. A metric the project had and campaign.toml no longer declares is read with the
    interface recorded for it; its labels are kept, set aside, and counted (``set_aside``)."""
    metrics = project.metrics if project else None
    declared = [m for m in metrics if m in campaign.metrics] if metrics is not None else None
    interface = build_interface(campaign, declared) if declared is None or declared else Interface(xml="", metrics={})
    store = LabelStore(campaign.path)
    try:
        interface, removed = _with_removed_metrics(campaign, interface, store.interfaces(source, project))
    finally:
        store.close()
    reading = read_export(tasks, campaign, interface, users=users, source=source)
    aside = [label for label in reading.labels if label.metric in removed]
    deciders = set(adjudicators or ())
    decisions = _decisions(reading.labels, deciders)
    # an adjudicator's labels are decisions (the reference label of their cases), not annotations; one
    # who decided in an earlier pull of this source still is one
    if (campaign.path / "adjudications.sqlite").is_file():
        deciders |= {h["adjudicator"] for h in decision_history(campaign.path) if h["source"] == source}
    store = LabelStore(campaign.path)
    try:
        pull_id = _dt.datetime.now(_dt.UTC).strftime("%Y%m%dT%H%M%SZ-") + uuid.uuid4().hex[:6]
        counts = store.add_pull(
            pull_id,
            source,
            reading.labels,
            metrics=sorted(interface.metrics),
            whole=whole,
            shown_judge=shown_judge,
            adjudicators=deciders,
            interface=interface,
        )
        exported = store.export()
    finally:
        store.close()
    return Result(
        {
            "pull_id": pull_id,
            "source": source,
            "tasks": reading.tasks,
            "annotations": reading.annotations,
            "cancelled": reading.cancelled,
            "drafts": reading.drafts,
            "labels": len(reading.labels),
            "unlabelled_metrics": reading.unlabelled_metrics,
            "replaced": reading.replaced,
            **counts,
            "ratings_written": exported,
            "shown_judge": shown_judge,
            "set_aside": {"labels": len(aside), "metrics": sorted({label.metric for label in aside})},
            "decisions": append_decisions(campaign.path, decisions, source=source) if decisions else None,
        },
        single_row,
    )


@writes_campaign("calibrate labelstudio pull")
def pull(campaign: Campaign, *, url: str | None, api_key: str | None, adjudicators: list[str] | None = None) -> Result:
    """Read every annotation of the campaign's project through the API. The labels of
    ``adjudicators`` become decisions (``calibrate adjudicate``), not annotators' ratings.

    Parameters
    ----------
    campaign : Campaign
        A campaign read from its folder, pushed before.
    url, api_key : str
        As for :func:`push`.
    adjudicators : list of str, optional
        Annotators whose labels are decisions on disagreements.

    Returns
    -------
    Result
        ``{"annotations", "tasks", "labels", "new", "changed", "unchanged", "withdrawn", ...}``: every
        label kept as a revision, the current ones in ``labelstudio_ratings.csv``.

    Examples
    --------
    >>> import calibrate
    >>> c = calibrate.load_campaign("my-campaign")                      # doctest: +SKIP
    >>> calibrate.pull_from_label_studio(c, url="http://127.0.0.1:8080", api_key="...")["new"]  # doctest: +SKIP
    """
    if campaign.path is None:
        raise LabelStudioError("pulling needs a campaign folder")
    client = connect(url, api_key)
    store = LabelStore(campaign.path)
    known = store.project(url)
    store.close()
    if known is None:
        raise LabelStudioError(f"no project of this campaign on {url}: push first")
    tasks = _call("export the project", _export, client, known.project_id)
    users = {user.id: user.email for user in _call("list users", lambda: list(client.users.list()))}
    return _pull(
        campaign, tasks, _source(url, known.project_id), known, users, known.shown_judge, adjudicators, whole=True
    )


@writes_campaign("calibrate labelstudio pull")
def pull_file(
    campaign: Campaign, path: str | Path, *, url: str | None = None, adjudicators: list[str] | None = None
) -> Result:
    """Read a Label Studio JSON export file (for users without API access). Annotators are named
    ``ls-user-ID`` unless the file names them.

    Parameters
    ----------
    campaign : Campaign
        A campaign read from its folder.
    path : str or Path
        The JSON export (Label Studio's "Export" -> JSON).
    url : str, optional
        The Label Studio it came from, to name its source as a pull through the API would.
    adjudicators : list of str, optional
        As for :func:`pull`.

    Returns
    -------
    Result
        As :func:`pull`; labels of the project not in the file are kept (a file may hold part of it).

    Examples
    --------
    >>> import calibrate
    >>> c = calibrate.load_campaign("my-campaign")                      # doctest: +SKIP
    >>> calibrate.pull_label_studio_file(c, "export.json")["labels"]     # doctest: +SKIP
    """
    if campaign.path is None:
        raise LabelStudioError("pulling needs a campaign folder")
    try:
        tasks = read_export_file(path)
    except DocumentError as exc:  # not JSON, too large or deep, or not the export's shape: naming the file
        raise LabelStudioError(f"cannot read the export {path}: {exc}") from None
    projects = export_projects(tasks)
    store = LabelStore(campaign.path)
    known = store.project(url) if url else None
    if known is None and len(projects) == 1:  # an export of a project this campaign pushed: the same source
        found = store.project_of(next(iter(projects)))
        if found is not None:
            url, known = found
    store.close()
    source = _source(url, known.project_id) if known else f"export#project-{min(projects)}" if projects else "export"
    shown = (known.shown_judge if known else None) or shown_model_version(tasks)  # what the file says was shown
    # a file may hold part of a project: a label it lacks is kept, never taken for a deletion
    try:
        return _pull(campaign, tasks, source, known, {}, shown, adjudicators, whole=False)
    except LabelError as exc:  # named by the file it is in
        raise LabelError(exc.problems, source=str(path)) from None
