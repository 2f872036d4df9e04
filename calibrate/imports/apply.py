"""One import into a campaign: a source's batch matched, checked, stored and written, or nothing.

:func:`import_batch` matches the source's metric names to the campaign's, names the judge where
asked, refuses a rating another file or source already gives under the same rater, stores the new
and changed ratings as revisions (:class:`~calibrate.imports.store.ImportStore`), and checks the
campaign the import would leave by loading it in a scratch folder: the one load of the campaign an
import makes (campaign.toml is read alone before, for the metrics; the campaign as it was is loaded
only to say why an import is refused). Only a campaign that loads is written; a ``dry_run`` writes
nothing and says what the import would do.

:func:`import_files` is the import of files (a DeepEval test run, a RAGAS result, ...): it keeps a
receipt of what it read and the state it left (:mod:`~calibrate.imports.receipts`), and the same files
imported again into a campaign still in that state do nothing: they are not even read.

A metric removed from campaign.toml does not strand an import: the source's ratings of a metric the
store already holds (imported while it was declared) are stored as any other and set aside with it;
its ratings are never withdrawn while it is away. A whole read (an MLflow experiment, a Phoenix
project) withdraws what the source no longer holds — every withdrawal listed in the result, and undone
by :func:`undo_withdrawals` — but never more than :func:`~calibrate.imports.store.withdraw_limit` of
what the origin held without ``allow_withdraw``: a partial reply must not pass for deletions.
"""

from __future__ import annotations

import datetime as _dt
import os
import secrets
import shutil
import tempfile
from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from calibrate.base.errors import CampaignError, Problem
from calibrate.base.files import write_all, writes_campaign
from calibrate.base.results import Result, single_row
from calibrate.base.secrets import redact
from calibrate.base.times import latest_first
from calibrate.campaign import CASES_FILE, IMPORTED_META_FILE, IMPORTED_RATINGS_FILE, load_campaign
from calibrate.campaign.declared import read_declared
from calibrate.campaign.readers import id_problem
from calibrate.cases.datasets import plan_merge, read_cases_file
from calibrate.imports.receipts import campaign_state, repeated, source_key, unchanged
from calibrate.imports.records import ImportedRating, Skip, SourceBatch, match_metric
from calibrate.imports.store import STORE_NAME, ImportStore, withdraw_limit

__all__ = ["declared_metrics", "grouped_skips", "import_batch", "import_files", "undo_withdrawals"]

#: the files an import writes; a scratch copy of the campaign gets these, and links to the rest
WRITTEN = (CASES_FILE, IMPORTED_RATINGS_FILE, IMPORTED_META_FILE)
LISTED = 5


def grouped_skips(skipped: list[Skip]) -> list[dict[str, Any]]:
    """The skipped items grouped by reason, most frequent first: reason, count, the first few items.

    >>> grouped_skips([Skip("a", "r1"), Skip("b", "r1"), Skip("c", "r2")])
    [{'reason': 'r1', 'count': 2, 'examples': ['a', 'b']}, {'reason': 'r2', 'count': 1, 'examples': ['c']}]
    """
    groups: dict[str, list[str]] = defaultdict(list)
    for skip in skipped:
        groups[skip.reason].append(skip.what)
    return [
        {"reason": reason, "count": len(items), "examples": items[:LISTED]}
        for reason, items in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))
    ]


def _campaign_folder(folder: Path) -> None:
    if not folder.is_dir():
        raise CampaignError(
            [
                Problem(
                    str(folder),
                    "the campaign folder does not exist: nothing was imported",
                    expected="a campaign folder: check its name, or start one with calibrate init FOLDER --metric NAME",
                )
            ]
        )
    if not (folder / "campaign.toml").is_file():
        raise CampaignError(
            [
                Problem(
                    str(folder),
                    "no campaign here (no campaign.toml): nothing was imported",
                    expected="a campaign folder: check its name, or start one with calibrate init FOLDER --metric NAME",
                )
            ]
        )


def declared_metrics(campaign_folder: str | Path) -> list[str]:
    """The metrics the campaign declares (sorted), from its campaign.toml alone: an import checks its
    options against them before it reads a source (a mistyped metric asks no server).

    Examples
    --------
    >>> import tempfile, pathlib, calibrate
    >>> folder = pathlib.Path(tempfile.mkdtemp()) / "c"
    >>> _ = calibrate.init_campaign(folder, ["faithfulness", "answer_relevancy"])
    >>> declared_metrics(folder)
    ['answer_relevancy', 'faithfulness']
    """
    folder = Path(campaign_folder)
    _campaign_folder(folder)
    return sorted(read_declared(folder).metrics)


def _names(batch: SourceBatch, rater: str | None) -> list[Problem]:
    """The ratings whose case id or rater the campaign's loader would refuse (a control character: the
    rule of :func:`~calibrate.campaign.readers.id_problem`), or whose rater's name holds a credential (it
    would be stored in imported_ratings.csv and shown): each names the source, the rating's id there and
    the field, before anything is written."""
    problems = []
    if rater is not None and (why := id_problem(rater)):
        problems.append(
            Problem(
                batch.source,
                f"the rater name given {why}",
                field="rater",
                value=rater,
                expected="a judge's name without control characters",
            )
        )
    for r in batch.ratings:
        where = f"{batch.kind} rating {r.source_id!r}"
        for name in ("case_id", "rater"):
            why = id_problem(getattr(r, name))
            if why:
                problems.append(
                    Problem(
                        batch.source,
                        f"{where}: its {name} {why}",
                        field=name,
                        value=getattr(r, name),
                        expected="text without control characters: fix it in the source",
                    )
                )
        if r.rater and redact(r.rater) != r.rater:
            problems.append(
                Problem(
                    batch.source,
                    f"{where}: its rater's name holds a credential (shown redacted), "
                    "and rater names are stored in the campaign's files and shown",
                    field="rater",
                    value=redact(r.rater),
                    expected="an annotator's or a judge's name: fix it in the "
                    "source" + (" (or name the judge with --rater NAME)" if r.rater_kind == "judge" else ""),
                )
            )
    return problems


def _named(batch: SourceBatch, rater: str | None, skipped: list[Skip]) -> list[ImportedRating]:
    """The batch's ratings, its judge renamed ``rater`` where asked (a source naming one judge, or none);
    a judge rating the source names no judge for is skipped when no ``rater`` is given."""
    if rater is None:
        unnamed = [r for r in batch.ratings if not r.rater]
        if unnamed and len(unnamed) == len(batch.ratings):
            raise ValueError(f"rater: {batch.source} names no judge for its ratings: name it (--rater NAME)")
        skipped += [Skip(r.source_id, "the source names no judge for it: import with --rater NAME") for r in unnamed]
        return _apart([r for r in batch.ratings if r.rater], batch, rater)
    judges = sorted({r.rater for r in batch.ratings if r.rater_kind == "judge"})
    if len(judges) > 1:
        raise ValueError(
            f"rater={rater!r}: {batch.source} holds the ratings of {len(judges)} judges "
            f"({', '.join(judges[:LISTED])}{' ...' if len(judges) > LISTED else ''}); a rater name "
            "replaces one judge's (import without it: the judges keep their own names)"
        )
    return _apart(
        [
            replace(r, rater=rater, facts={**r.facts, "named_in_source": r.rater} if r.rater else r.facts)
            if r.rater_kind == "judge"
            else r
            for r in batch.ratings
        ],
        batch,
        rater,
    )


def _apart(ratings: list[ImportedRating], batch: SourceBatch, rater: str | None) -> list[ImportedRating]:
    """The ratings, when no name is both a judge's and a human's: one rater of two kinds would keep
    only one of their ratings of a case (the other silently dropped), so the import is refused."""
    humans = {r.rater for r in ratings if r.rater_kind == "human"}
    judges = {r.rater for r in ratings if r.rater_kind == "judge"}
    both = sorted(humans & judges)
    if not both:
        return ratings
    if rater is not None:
        raise ValueError(
            f"rater={rater!r}: {batch.source} holds human ratings by {rater!r} too; a judge and a "
            "human of one name would be one rater, and one's ratings would replace the other's: give "
            "the judge another name"
        )
    way = (
        "give the judge another name (--rater NAME)"
        if len(judges) == 1
        else f"the source holds {len(judges)} judges, and a rater name replaces one judge's only: rename the judge or "
        "the annotator in the source"
    )
    raise ValueError(
        f"{batch.source} names a judge and a human alike ({', '.join(both[:LISTED])}): one rater of "
        f"two kinds would keep only one of their ratings of a case: {way}"
    )


def _latest(ratings: list[tuple[str, ImportedRating]], skipped: list[Skip]) -> list[tuple[str, ImportedRating]]:
    """One rating per (case, metric, rater): where the source has several (a case twice in a test run, two
    feedbacks of one annotator), the one it updated last (its times read as times, not compared as texts:
    :func:`~calibrate.base.times.latest_first`), else its last; the others skipped."""
    chosen: dict[tuple[str, str, str], int] = {}
    for i, (metric, rating) in enumerate(ratings):
        key = (rating.case_id, metric, rating.rater)
        j = chosen.get(key)
        if j is None or latest_first(rating.updated) >= latest_first(ratings[j][1].updated):
            chosen[key] = i
    for _i, (metric, rating) in enumerate(ratings):
        kept = ratings[chosen[(rating.case_id, metric, rating.rater)]][1]
        if kept is not rating:
            skipped.append(
                Skip(
                    rating.source_id,
                    f"the source rates case {rating.case_id!r} on {metric!r} by "
                    f"{rating.rater!r} again ({kept.source_id}): that later one is kept",
                )
            )
    return [ratings[i] for i in sorted(chosen.values())]


def _matched(
    ratings: list[ImportedRating],
    metrics: list[str],
    mapping: Mapping[str, str],
    skipped: list[Skip],
    removed: list[str] = (),
) -> list[tuple[str, ImportedRating]]:
    """(campaign metric, rating) for each rating whose metric the campaign has, or had (``removed``: the
    metrics the store holds that campaign.toml no longer declares, kept and set aside); the others skipped."""
    found = []
    for rating in ratings:
        metric = match_metric(rating.metric, metrics, mapping)
        if metric is None and removed:
            metric = match_metric(rating.metric, list(removed), {})
        alike = [m for m in metrics if match_metric(rating.metric, [m], {}) == m] if metric is None else []
        if len(alike) > 1:
            skipped.append(
                Skip(
                    f"{rating.source_id} ({rating.metric!r} by {rating.rater})",
                    f"its metric {rating.metric!r} is {' and '.join(alike)} alike, up to case and "
                    f"punctuation: give --map '{rating.metric}=METRIC' to say which",
                )
            )
        elif metric is None:
            skipped.append(
                Skip(
                    f"{rating.source_id} ({rating.metric!r} by {rating.rater})",
                    f"its metric {rating.metric!r} is none of the campaign's ({', '.join(metrics)}): "
                    f"give --map '{rating.metric}=METRIC' to import it",
                )
            )
        else:
            found.append((metric, rating))
    return found


def _taken(campaign, store: ImportStore, origin: str, ratings: list[tuple[str, ImportedRating]]) -> list[Problem]:
    """A rating another file or source already gives (same case, metric and rater): refused, not shadowed."""
    held: dict[tuple[str, str, str], str] = {}
    own = campaign.ratings[
        (campaign.ratings["file"] != IMPORTED_RATINGS_FILE)
        & ((campaign.ratings["rater_kind"] == "human") | (campaign.ratings["run_id"] == ""))
    ]
    for case_id, metric, rater, file, line in zip(
        own["case_id"], own["metric"], own["rater"], own["file"], own["line"]
    ):
        held.setdefault((case_id, metric, rater), f"{file} (line {line})")
    for row in store.current():
        if row["origin"] != origin and not row["withdrawn"]:
            held.setdefault((row["case_id"], row["metric"], row["rater"]), f"the import from {row['origin']}")
    problems = []
    for metric, rating in ratings:
        where = held.get((rating.case_id, metric, rating.rater))
        if where:
            problems.append(
                Problem(
                    origin,
                    f"rater {rating.rater!r} already rates case {rating.case_id!r} on metric {metric!r} in {where}",
                    field="rater",
                    value=rating.rater,
                    expected="one rating per case, metric and rater: import this source's judge under "
                    "another name (--rater NAME), or remove the other rating",
                )
            )
    return problems


def _check_in_scratch(folder: Path, texts: dict[str, str], taken: Callable[[Any], list[Problem]]) -> None:
    """Load the campaign as the import would leave it, in a scratch folder (links to every other file),
    and refuse the ratings it gives that ``taken`` finds given by another file or source; a problem is
    reported against the real folder's file. A campaign that would not load is loaded as it is, to
    say first what the import would take from another file (or what is wrong with it already)."""
    with tempfile.TemporaryDirectory(prefix="calibrate-import-") as scratch:
        root = Path(scratch) / folder.name
        root.mkdir()
        for entry in folder.iterdir():
            if entry.name not in texts and entry.name not in WRITTEN and not entry.name.startswith(STORE_NAME):
                os.symlink(entry.resolve(), root / entry.name)
        for name in WRITTEN:
            if name in texts:
                (root / name).write_text(texts[name], encoding="utf-8")
            elif (folder / name).is_file():
                os.symlink((folder / name).resolve(), root / name)
        try:
            problems = taken(load_campaign(root))
        except CampaignError as exc:
            moved = [replace(p, file=p.file.replace(str(root), str(folder))) for p in exc.problems]
        else:
            if problems:
                raise CampaignError(problems)
            return
    problems = taken(load_campaign(folder))  # only when refused: the campaign as it is
    if problems:
        raise CampaignError(problems)
    raise CampaignError(
        [Problem(str(folder), "the import was not applied: the campaign would not load with it, for the reasons below")]
        + moved
    ) from None


def _move_store(scratch: Path, target: Path) -> None:
    """The new store, checkpointed, copied into the campaign folder (a scratch folder may be on another disk)."""
    import sqlite3

    db = sqlite3.connect(scratch)
    try:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        db.execute("PRAGMA journal_mode=DELETE")
    finally:
        db.close()
    partial = target.with_name(target.name + ".tmp")
    partial.unlink(missing_ok=True)  # a leftover, or a link planted to lead the copy elsewhere: never followed
    try:
        shutil.copyfile(scratch, partial)
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)


def _checked_mapping(metric_map: Mapping[str, str] | None, metrics: list[str]) -> dict[str, str]:
    """``metric_map`` as a dict, every metric it maps to declared by the campaign (``metrics``)."""
    mapping = dict(metric_map or {})
    for name, metric in mapping.items():
        if metric not in metrics:
            raise ValueError(
                f"metric_map: {name!r} maps to {metric!r}, which the campaign does not declare ({', '.join(metrics)})"
            )
    return mapping


def _removed_metrics(folder: Path, metrics: list[str]) -> list[str]:
    """The metrics this origin's store holds that campaign.toml no longer declares."""
    if not (folder / STORE_NAME).is_file():
        return []
    held = ImportStore(folder)
    try:
        return sorted({r["metric"] for r in held.current()} - set(metrics))
    finally:
        held.close()


def _of_known_cases(
    ratings: list[tuple[str, ImportedRating]], known: set[str], skipped: list[Skip]
) -> list[tuple[str, ImportedRating]]:
    """The ratings of a case the source or cases.jsonl holds; the others skipped."""
    kept = []
    for metric, rating in ratings:
        if rating.case_id in known:
            kept.append((metric, rating))
        else:
            skipped.append(
                Skip(
                    rating.source_id, f"its case {rating.case_id!r} is neither in the source's cases nor in cases.jsonl"
                )
            )
    return kept


def _store_and_write(
    folder: Path,
    batch: SourceBatch,
    kept: list[tuple[str, ImportedRating]],
    *,
    import_id: str,
    metrics: list[str],
    skip_records: list[dict[str, str]],
    cases_text: str | None,
    dry_run: bool,
    allow_withdraw: bool,
    report: Callable[[dict[str, int], list[dict[str, Any]], int, dict[str, str]], dict[str, Any]],
    receipt: str | None,
) -> dict[str, Any]:
    """Store the ratings, check the campaign they leave, and write its files (a dry run keeps nothing);
    what ``report`` makes of the counts, the ratings withdrawn, the withdraw limit and the files' texts.
    With a ``receipt`` (the :func:`~calibrate.imports.receipts.source_key` of what was read), the
    import's receipt is kept with it."""
    created = not (folder / STORE_NAME).is_file()
    # a dry run makes no store, and a refused import leaves none behind
    scratch = tempfile.TemporaryDirectory(prefix="calibrate-import-store-") if created else None
    store = ImportStore(folder, path=Path(scratch.name) / STORE_NAME if scratch else None)
    try:
        with store.transaction(keep=not dry_run):
            counts = store.add(
                import_id, batch, kept, metrics=metrics, skipped=skip_records, allow_withdraw=allow_withdraw
            )
            withdrawn = store.withdrawn_by(import_id)
            limit = withdraw_limit(sum(1 for r in store.current(batch.origin) if r["metric"] in metrics))
            texts = store.export_texts()
            if cases_text is not None:
                texts[CASES_FILE] = cases_text
            _check_in_scratch(folder, texts, lambda campaign: _taken(campaign, store, batch.origin, kept))
            doc = report(counts, withdrawn, limit, texts)
            if receipt is not None and not dry_run:
                store.add_receipt(import_id, receipt, campaign_state(folder, store.marker(), texts), repeated(doc))
            if not dry_run and scratch is None:  # written before the store commits: a failed write keeps neither
                write_all({folder / name: text for name, text in texts.items()})
        if not dry_run and scratch is not None:  # the first import: the store moves in, then the files it explains
            store.close()
            _move_store(Path(scratch.name) / STORE_NAME, folder / STORE_NAME)
            write_all({folder / name: text for name, text in texts.items()})
    finally:
        store.close()
        if scratch is not None:
            scratch.cleanup()
    return doc


def _by_metric(kept: list[tuple[str, ImportedRating]]) -> dict[str, dict[str, int]]:
    """The human and judge ratings imported, per metric."""
    by_metric: dict[str, dict[str, int]] = {}
    for metric, rating in kept:
        entry = by_metric.setdefault(metric, {"human": 0, "judge": 0})
        entry[rating.rater_kind] += 1
    return by_metric


def _raters(kept: list[tuple[str, ImportedRating]]) -> dict[str, dict[str, Any]]:
    """Each rater imported: its kind, ratings, metrics and model, by name."""
    raters: dict[str, dict[str, Any]] = {}
    for metric, rating in kept:
        entry = raters.setdefault(
            rating.rater,
            {"kind": rating.rater_kind, "ratings": 0, "metrics": set(), "model": rating.facts.get("model")},
        )
        entry["ratings"] += 1
        entry["metrics"].add(metric)
    return {name: {**e, "metrics": sorted(e["metrics"])} for name, e in sorted(raters.items())}


@writes_campaign("calibrate import")
def import_batch(
    campaign_folder: str | Path,
    batch: SourceBatch,
    *,
    metric_map: Mapping[str, str] | None = None,
    rater: str | None = None,
    dry_run: bool = False,
    allow_withdraw: bool = False,
    receipt: str | None = None,
) -> Result:
    """Bring a source's cases and ratings into a campaign (the common end of every ``calibrate import``).

    Parameters
    ----------
    campaign_folder : str or Path
        The campaign, with its ``campaign.toml``.
    batch : SourceBatch
        What a reader got from the source.
    metric_map : mapping, optional
        Source metric name -> campaign metric, for the names that do not match
        (:func:`~calibrate.imports.records.match_metric` matches the others).
    rater : str, optional
        The name of the source's judge in the campaign, instead of the name the source gives it (a
        RAGAS result names none); refused when the source holds several judges.
    dry_run : bool
        Check everything and say what the import would do; write nothing.
    allow_withdraw : bool
        Let a whole read withdraw more than :func:`~calibrate.imports.store.withdraw_limit` of the
        ratings the origin held (they were deleted there, not lost in a partial reply).
    receipt : str, optional
        The :func:`~calibrate.imports.receipts.source_key` of the files the batch was read from, kept
        with the import (:func:`import_files` gives it).

    Returns
    -------
    Result
        ``{"kind", "origin", "source", "import_id", "unchanged_since", "dry_run", "cases": {"added", "unchanged",
        "completed"}, "ratings": {"new", "changed", "unchanged", "restored", "withdrawn",
        "absent_kept", "absent_held"}, "withdrawn": [{"origin", "case_id", "metric", "rater", "value",
        "source_id"}], "withdraw_limit", "set_aside": {"ratings", "metrics"}, "by_metric", "raters",
        "skipped", "skipped_by_reason", "files"}``: ``absent_held`` counts the ratings a whole read no
        longer holds that were kept for being more than ``withdraw_limit``; ``set_aside`` the ratings of
        metrics campaign.toml no longer declares (stored, left out of the statistics);
        ``unchanged_since`` is None (:func:`import_files` says when nothing was done).

    Raises
    ------
    CampaignError
        A case already in the campaign with other content, a rating another file or source gives
        under the same rater, or a campaign that would not load with the import (nothing is written).
    ValueError
        A ``metric_map`` naming a metric the campaign lacks, or a ``rater`` for several judges.

    Examples
    --------
    >>> import tempfile, pathlib, calibrate
    >>> from calibrate.imports.records import ImportedRating
    >>> folder = pathlib.Path(tempfile.mkdtemp()) / "c"
    >>> _ = calibrate.init_campaign(folder, ["faithfulness"])
    >>> batch = SourceBatch("mytool", "mytool", "by hand", cases=[{"case_id": "c1", "input": "q?"}],
    ...     ratings=[ImportedRating("c1", "Faithfulness", "ann", "human", 1.0, "r1")])
    >>> import_batch(folder, batch)["ratings"]["new"], import_batch(folder, batch)["ratings"]["unchanged"]
    (1, 1)
    >>> calibrate.load_campaign(folder).ratings[["case_id", "metric", "rater", "value", "source"]].values.tolist()
    [['c1', 'faithfulness', 'ann', 1.0, 'mytool']]
    """
    folder = Path(campaign_folder)
    metrics = declared_metrics(folder)  # campaign.toml alone: the campaign is loaded once, as the import leaves it
    mapping = _checked_mapping(metric_map, metrics)
    named = _names(batch, rater)
    if named:
        raise CampaignError(
            [Problem(str(folder), "the import was not applied: the source's names below cannot be kept")] + named
        )
    skipped = list(batch.skipped)
    removed = _removed_metrics(folder, metrics)
    ratings = _latest(_matched(_named(batch, rater, skipped), metrics, mapping, skipped, removed), skipped)
    existing = read_cases_file(folder)
    kept = _of_known_cases(ratings, {c["case_id"] for c in batch.cases} | set(existing), skipped)
    unique: dict[str, dict] = {}
    for case in batch.cases:  # the same case twice in a source (a test run's two test functions): once
        unique.setdefault(case["case_id"], case)
    cases_text, case_counts = plan_merge(folder, list(unique.values()), complete=True, existing=existing)
    import_id = f"{batch.kind}-{_dt.datetime.now(_dt.UTC):%Y%m%dT%H%M%S}-{secrets.token_hex(3)}"
    skip_records = [{"what": s.what, "reason": s.reason} for s in skipped]
    aside = [(metric, rating) for metric, rating in kept if metric not in metrics]
    declared = [(metric, rating) for metric, rating in kept if metric in metrics]

    def report(counts: dict, withdrawn: list, limit: int, texts: dict) -> dict[str, Any]:
        return {
            "kind": batch.kind,
            "origin": batch.origin,
            "source": batch.source,
            "import_id": import_id,
            "unchanged_since": None,
            "dry_run": dry_run,
            "cases": case_counts,
            "ratings": counts,
            "withdrawn": withdrawn,
            "withdraw_limit": limit,
            "set_aside": {"ratings": len(aside), "metrics": sorted({m for m, _ in aside})},
            "by_metric": _by_metric(declared),
            "raters": _raters(declared),
            "skipped": skip_records,
            "skipped_by_reason": grouped_skips(skipped),
            "files": [] if dry_run else sorted(texts),
        }

    doc = _store_and_write(
        folder,
        batch,
        kept,
        import_id=import_id,
        metrics=metrics,
        skip_records=skip_records,
        cases_text=cases_text,
        dry_run=dry_run,
        allow_withdraw=allow_withdraw,
        report=report,
        receipt=receipt,
    )
    return Result(doc, single_row)


@writes_campaign("calibrate import")
def import_files(
    campaign_folder: str | Path,
    kind: str,
    files: Mapping[str, str | Path | None],
    read: Callable[[], SourceBatch],
    *,
    options: Mapping[str, Any] | None = None,
    metric_map: Mapping[str, str] | None = None,
    rater: str | None = None,
    dry_run: bool = False,
) -> Result:
    """Import what ``read`` makes of ``files`` with :func:`import_batch`, unless nothing would change:
    the same files (path and bytes), with the same options, imported before into a campaign that is
    still as that import left it (:func:`~calibrate.imports.receipts.unchanged`). Then nothing is read,
    checked or written, and the result is that import's as a second import would give it, with
    ``unchanged_since`` its ``import_id`` (and ``import_id`` None).

    Parameters
    ----------
    campaign_folder : str or Path
    kind : str
        The tool (``"deepeval"``, ...).
    files : mapping
        Each file read (its role -> path; None for one not given).
    read : callable
        Reads the files: the batch to import.
    options : mapping, optional
        The reader's options (JSON-able): a different option is a different import.
    metric_map, rater, dry_run
        As :func:`import_batch` takes them.

    Returns
    -------
    Result
        As :func:`import_batch` returns it.

    Examples
    --------
    >>> import tempfile, pathlib, calibrate
    >>> from calibrate.imports.records import ImportedRating
    >>> tmp = pathlib.Path(tempfile.mkdtemp())
    >>> _ = calibrate.init_campaign(tmp / "c", ["faithfulness"])
    >>> _ = (tmp / "scores.txt").write_text("c1 1.0")
    >>> def read():
    ...     case_id, value = (tmp / "scores.txt").read_text().split()
    ...     return SourceBatch("mytool", "mytool", "scores.txt", cases=[{"case_id": case_id, "input": "q?"}],
    ...         ratings=[ImportedRating(case_id, "faithfulness", "ann", "human", float(value), "r1")])
    >>> first = import_files(tmp / "c", "mytool", {"scores": tmp / "scores.txt"}, read)
    >>> again = import_files(tmp / "c", "mytool", {"scores": tmp / "scores.txt"}, read)
    >>> again["unchanged_since"] == first["import_id"], again["ratings"]["unchanged"], again["files"]
    (True, 1, [])
    """
    folder = Path(campaign_folder)
    _campaign_folder(folder)
    try:
        key = source_key(kind, files, {**(options or {}), "metric_map": dict(metric_map or {}), "rater": rater})
    except OSError:
        key = None  # a file that cannot be read: its reader says why
    done = unchanged(folder, key, dry_run=dry_run) if key is not None else None
    if done is not None:
        return Result(done, single_row)
    return import_batch(folder, read(), metric_map=metric_map, rater=rater, dry_run=dry_run, receipt=key)


@writes_campaign("calibrate import undo-withdrawals")
def undo_withdrawals(campaign_folder: str | Path, import_id: str) -> Result:
    """Bring back the ratings an import withdrew (each appended again as it was: the withdrawal stays
    in the history), and write ``imported_ratings.csv`` again.

    Parameters
    ----------
    campaign_folder : str or Path
    import_id : str
        The import whose withdrawals to undo (``import_id`` of its result, or of
        :meth:`~calibrate.imports.store.ImportStore.imports`).

    Returns
    -------
    Result
        ``{"import_id", "reinstated", "ratings": [{"origin", "case_id", "metric", "rater", "value",
        "source_id"}], "files"}``.

    Raises
    ------
    CampaignError
        No import store, or no import of that id.

    Examples
    --------
    >>> import tempfile, pathlib, calibrate
    >>> from calibrate.imports.records import ImportedRating
    >>> folder = pathlib.Path(tempfile.mkdtemp()) / "c"
    >>> _ = calibrate.init_campaign(folder, ["faithfulness"])
    >>> cases = [{"case_id": "c1", "input": "q?"}, {"case_id": "c2", "input": "r?"}]
    >>> rating = lambda c: ImportedRating(c, "faithfulness", "ann", "human", 1.0, f"r-{c}")
    >>> _ = import_batch(folder, SourceBatch("tool", "tool:x", "x", cases, [rating("c1"), rating("c2")], whole=True))
    >>> later = import_batch(folder, SourceBatch("tool", "tool:x", "x", cases, [rating("c1")], whole=True))
    >>> later["ratings"]["withdrawn"], len(calibrate.load_campaign(folder).ratings)
    (1, 1)
    >>> undo_withdrawals(folder, later["import_id"])["reinstated"], len(calibrate.load_campaign(folder).ratings)
    (1, 2)
    """
    folder = Path(campaign_folder)
    _campaign_folder(folder)
    if not (folder / STORE_NAME).is_file():
        raise CampaignError(
            [
                Problem(
                    str(folder / STORE_NAME),
                    "no import store: nothing was ever imported",
                    expected="a campaign calibrate import wrote to",
                )
            ]
        )
    store = ImportStore(folder)
    try:
        if import_id not in {i["import_id"] for i in store.imports()}:
            known = [i["import_id"] for i in store.imports() if i["counts"].get("withdrawn")]
            raise CampaignError(
                [
                    Problem(
                        str(folder / STORE_NAME),
                        "no import of this id",
                        value=import_id,
                        expected="an import that withdrew ratings: " + (", ".join(known) or "none"),
                    )
                ]
            )
        ratings = store.withdrawn_by(import_id)
        by = f"undo-{import_id}-{secrets.token_hex(3)}"
        with store.transaction(keep=True):
            reinstated = store.reinstate(import_id, by)
            texts = store.export_texts()
            write_all({folder / name: text for name, text in texts.items()})
    finally:
        store.close()
    return Result(
        {"import_id": import_id, "reinstated": reinstated, "ratings": ratings, "files": sorted(texts)}, single_row
    )
