"""An Inspect AI eval log (``.eval`` or ``.json``, as ``inspect eval`` writes it) read as cases, judge
ratings, and the human ratings its score edits hold.

Each sample (and epoch) is a case: its ``input`` (a string, or the last user message of a chat) is the
input, its output's completion the actual output, its ``target`` the expected output, the retrieved
context the sample metadata key named by ``context_key`` (else ``retrieval_context``, ``contexts``,
``context``, ...); the rest of the sample metadata, the sample id and epoch, the task and the eval id
are kept in the case's metadata. Each score is a rating of the metric of its scorer's name (a
dict-valued score gives one rating per key):

- the scorer's own value is a judge rating: by the grader model its options name (``model``, or the
  ``model_role`` the eval's ``model_roles`` give), else the model that answered in the score's grading
  transcript; a scorer with no model (``includes``, ``match``, ...) is a judge by code, named
  ``inspect:SCORER``. Inspect's values read as numbers: ``C`` 1, ``I`` 0, ``P`` 0.5, ``N`` 0, and
  ``yes`` / ``no``, ``true`` / ``false``. An unscored value (NaN) is a failed rating when the grader
  or scorer failed, and skipped when Inspect blames the model under test (a refusal, no response);
- an edit of the score (``inspect_ai.log.edit_score``, or the log viewer) made by someone is a human
  rating by the edit's ``provenance.author``, their latest edit kept.

A ``.eval`` log is a ZIP archive whose entries Inspect compresses with Zstandard; reading one needs
the ``zstandard`` package (``pip install 'calibrate-judges[imports]'``). A ``.json`` log needs nothing.
"""

from __future__ import annotations

import io
import json
import math
import struct
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from calibrate.base.errors import CampaignError, Problem
from calibrate.base.results import Result
from calibrate.cases.datasets import content_id, external_case
from calibrate.imports.apply import import_batch
from calibrate.imports.records import ImportedRating, Skip, SourceBatch, rating_value
from calibrate.imports.texts import CONTEXT_KEYS, documents_of, problem_text, text_of

__all__ = ["read_inspect_log", "import_inspect", "inspect_value"]

#: Inspect's letter grades, as its ``value_to_float`` reads them
GRADES = {"C": 1.0, "I": 0.0, "P": 0.5, "N": 0.0}
#: unscored reasons Inspect puts on the model under test, not on the grader: skipped, not failures
UNDER_TEST = {"invalid_response_format", "refusal", "no_response"}
ZSTANDARD = 93   # the ZIP compression method Inspect writes
EXPECTED = "an Inspect AI eval log: a .eval archive or a .json log, as inspect eval writes it"


def inspect_value(value: Any) -> float | None:
    """A score value as Inspect's ``value_to_float`` reads it; None for NaN (unscored) and for anything
    that is not a scalar.

    >>> inspect_value("C"), inspect_value("P"), inspect_value("yes"), inspect_value(0.25), inspect_value(True)
    (1.0, 0.5, 1.0, 0.25, 1.0)
    >>> inspect_value(float("nan")) is None, inspect_value(["C"]) is None
    (True, True)
    """
    if isinstance(value, str) and value.strip().upper() in GRADES:
        return GRADES[value.strip().upper()]
    return rating_value(value)


def _member(archive: zipfile.ZipFile, raw: io.BufferedReader, info: zipfile.ZipInfo) -> bytes:
    """One entry of an ``.eval`` archive: read by :mod:`zipfile`, or, for Zstandard (which Python's
    :mod:`zipfile` reads only from 3.14), its compressed bytes decompressed with ``zstandard``."""
    if info.compress_type != ZSTANDARD:
        return archive.read(info)
    try:
        import zstandard
    except ImportError:
        raise CampaignError([Problem(str(raw.name), "a .eval log compressed with Zstandard, and the zstandard "
                                       "package is not installed", expected="pip install 'calibrate-judges[imports]' "
                                       "(or a .json log: inspect log convert --to json)")]) from None
    raw.seek(info.header_offset)
    header = raw.read(30)
    if header[:4] != b"PK\x03\x04":
        raise zipfile.BadZipFile(f"no local header for {info.filename}")
    name_length, extra_length = struct.unpack("<HH", header[26:30])
    raw.seek(info.header_offset + 30 + name_length + extra_length)
    data = raw.read(info.compress_size)
    with zstandard.ZstdDecompressor().stream_reader(io.BytesIO(data), read_across_frames=True) as reader:
        return reader.read()


def _load(path: Path) -> tuple[dict[str, Any], list[tuple[str, Any]]]:
    """The log's header (eval spec, results) and its samples, each with its place in the file."""
    if path.suffix == ".eval":
        try:
            with path.open("rb") as raw, zipfile.ZipFile(raw) as archive:
                names = archive.namelist()
                if "header.json" in names:
                    header = json.loads(_member(archive, raw, archive.getinfo("header.json")))
                elif "_journal/start.json" in names:   # a log still being written
                    header = json.loads(_member(archive, raw, archive.getinfo("_journal/start.json")))
                else:
                    raise CampaignError([Problem(str(path), "a ZIP archive without header.json", expected=EXPECTED)])
                samples = [(name, json.loads(_member(archive, raw, archive.getinfo(name)))) for name in names
                           if name.startswith("samples/") and name.endswith(".json")]
        except (zipfile.BadZipFile, OSError, EOFError, struct.error) as exc:
            raise CampaignError([Problem(str(path), f"not a readable .eval archive ({exc})", expected=EXPECTED)]) from None
        except (ValueError, UnicodeDecodeError) as exc:   # JSON, or zstandard's own errors
            raise CampaignError([Problem(str(path), f"an entry of the archive is not readable JSON ({exc})",
                                           expected=EXPECTED)]) from None
        except RuntimeError as exc:   # zipfile: an encrypted entry
            raise CampaignError([Problem(str(path), str(exc), expected=EXPECTED)]) from None
    else:
        try:
            header = json.loads(path.read_text(encoding="utf-8"))
        except UnicodeDecodeError:
            raise CampaignError([Problem(str(path), "not UTF-8 text", expected=EXPECTED)]) from None
        except json.JSONDecodeError as exc:
            raise CampaignError([Problem(str(path), f"not valid JSON: {exc.msg}", row=exc.lineno,
                                           expected=EXPECTED)]) from None
        samples = [(f"samples[{i}]", s) for i, s in enumerate(header.get("samples") or [])] \
            if isinstance(header, dict) and isinstance(header.get("samples") or [], list) else []
    if not isinstance(header, dict) or not isinstance(header.get("eval"), dict):
        raise CampaignError([Problem(str(path), "not an Inspect eval log (no eval spec)",
                                       value=type(header).__name__, expected=EXPECTED)])
    return header, samples


def _model_name(value: Any) -> str | None:
    """A model as a scorer's options record it: ``"openai/gpt-4o"``, ``{"model": ...}``, or a list (the
    first)."""
    if isinstance(value, list):
        return _model_name(value[0]) if value else None
    if isinstance(value, dict):
        return _model_name(value.get("model"))
    return value if isinstance(value, str) and value else None


def _graders(spec: dict[str, Any]) -> dict[str, tuple[str, str | None]]:
    """Each score name in the samples -> (its scorer's name, the grader model its options name): the
    scorers in order, named as Inspect's ``unique_scorer_name`` names them."""
    roles = spec.get("model_roles") if isinstance(spec.get("model_roles"), dict) else {}
    found: dict[str, tuple[str, str | None]] = {}
    for scorer in spec.get("scorers") if isinstance(spec.get("scorers"), list) else []:
        if not isinstance(scorer, dict) or not isinstance(scorer.get("name"), str):
            continue
        base = scorer["name"].rsplit("/", 1)[-1]
        name, count = base, 1
        while name in found:
            name, count = f"{base}{count}", count + 1
        options = scorer.get("options") if isinstance(scorer.get("options"), dict) else {}
        model = _model_name(options.get("model"))
        if model is None and isinstance(options.get("model_role"), str):
            model = _model_name(roles.get(options["model_role"]))
        found[name] = (base, model)
    return found


def _transcript_model(score: dict[str, Any]) -> str | None:
    """The model that answered in a model-graded score's grading transcript (``metadata.grading``)."""
    grading = (score.get("metadata") or {}).get("grading") if isinstance(score.get("metadata"), dict) else None
    if isinstance(grading, list):
        said = [m.get("model") for m in grading if isinstance(m, dict) and m.get("role") == "assistant"]
        if said and isinstance(said[-1], str) and said[-1]:
            return said[-1]
    return None


def _message_text(value: Any) -> Any:
    """A chat input with content parts (``[{"type": "text", "text": ...}]``) as messages of plain text."""
    if not isinstance(value, list):
        return value
    messages = []
    for message in value:
        if isinstance(message, dict) and isinstance(message.get("content"), list):
            texts = [p.get("text") for p in message["content"] if isinstance(p, dict) and isinstance(p.get("text"), str)]
            message = {**message, "content": "\n".join(texts)}
        messages.append(message)
    return messages


def _case(sample: dict[str, Any], spec: dict[str, Any], where: str, context_key: str | None) -> tuple[dict | None, str | None]:
    if sample.get("error"):
        error = sample["error"].get("message") if isinstance(sample["error"], dict) else sample["error"]
        return None, f"the sample failed in Inspect ({str(error)[:200]}): no output to rate"
    output = sample.get("output") if isinstance(sample.get("output"), dict) else {}
    metadata = dict(sample.get("metadata")) if isinstance(sample.get("metadata"), dict) else {}
    target = sample.get("target")
    record: dict[str, Any] = {
        "input": text_of(_message_text(sample.get("input")), (), chat_role="user"),
        "actual_output": output.get("completion") if isinstance(output.get("completion"), str) else None,
        "expected_output": "\n".join(map(str, target)) if isinstance(target, list) else target or None}
    key = context_key if context_key else next((k for k in CONTEXT_KEYS if k in metadata), None)
    if key is not None and key in metadata:
        context = metadata.pop(key)
        record["retrieval_context"] = [context] if isinstance(context, str) else documents_of(context)
    record["metadata"] = {k: v for k, v in {
        **metadata, "sample_id": sample.get("id"), "epoch": sample.get("epoch"), "task": spec.get("task"),
        "eval_id": spec.get("eval_id"), "model": spec.get("model")}.items() if v is not None}
    record["metadata"].pop("case_id", None)
    case, problems = external_case({k: v for k, v in record.items() if v is not None}, source="deepeval", where=where)
    if case is None:
        return None, problem_text(problems)
    return case, None


def _ratings(name: str, score: dict[str, Any], case_id: str, source_id: str,
             graders: dict[str, tuple[str, str | None]]) -> tuple[list[ImportedRating], list[Skip]]:
    base, model = graders.get(name, (name, None))
    model = model or _transcript_model(score)
    rater = model or f"inspect:{base}"
    facts = {"library": "inspect_ai", "scorer": base, "model": model, "source_type": "LLM" if model else "CODE"}
    facts = {k: v for k, v in facts.items() if v is not None}
    history = [h for h in score.get("history") if isinstance(h, dict)] if isinstance(score.get("history"), list) else []
    original = next((h for h in history if not h.get("provenance")), None)
    value = original["value"] if original is not None and original.get("value", "UNCHANGED") != "UNCHANGED" \
        else score.get("value")
    explanation = score.get("explanation") if isinstance(score.get("explanation"), str) else None
    ratings: list[ImportedRating] = []
    skipped: list[Skip] = []
    values = value if isinstance(value, dict) else {None: value}
    for key, item in values.items():
        metric, where = (base, source_id) if key is None else (str(key), f"{source_id}/{key}")
        number = inspect_value(item)
        unscored = isinstance(item, float) and math.isnan(item)
        reason = score.get("reason") or ((score.get("metadata") or {}).get("unscored_reason")
                                         if isinstance(score.get("metadata"), dict) else None)
        if unscored and reason in UNDER_TEST:
            skipped.append(Skip(where, f"unscored by {base}: {reason} (Inspect puts it on the model under test, "
                                       "not on the grader)"))
        elif unscored:
            ratings.append(ImportedRating(case_id=case_id, metric=metric, rater=rater, rater_kind="judge", value=None,
                                          error=f"unscored: {reason or 'the scorer gave no value'}"
                                                + (f" ({explanation[:300]})" if explanation else ""),
                                          source_id=where, facts=facts))
        elif number is None:
            skipped.append(Skip(where, f"its value {item!r} reads as no number (C / I / P / N, yes / no, a number)"))
        else:
            ratings.append(ImportedRating(case_id=case_id, metric=metric, rater=rater, rater_kind="judge",
                                          value=number, reason=explanation, source_id=where, facts=facts))
    for i, edit in enumerate(history):
        provenance = edit.get("provenance")
        if not isinstance(provenance, dict):
            continue
        author = provenance.get("author")
        what = f"{source_id}/edit{i}"
        if not isinstance(author, str) or not author.strip():
            skipped.append(Skip(what, "a score edit without an author"))
            continue
        if edit.get("value", "UNCHANGED") == "UNCHANGED":
            skipped.append(Skip(what, "a score edit that changed no value (an explanation or metadata)"))
            continue
        edited = edit["value"] if isinstance(edit["value"], dict) else {None: edit["value"]}
        for key, item in edited.items():
            number = inspect_value(item)
            metric = base if key is None else str(key)
            if number is None:
                skipped.append(Skip(what, f"its value {item!r} reads as no number"))
                continue
            ratings.append(ImportedRating(
                case_id=case_id, metric=metric, rater=author.strip(), rater_kind="human", value=number,
                source_id=f"{what}" + ("" if key is None else f"/{key}"),
                reason=provenance.get("reason") if isinstance(provenance.get("reason"), str) else None,
                facts={"library": "inspect_ai", "scorer": base, "source_type": "HUMAN"},
                updated=provenance.get("timestamp") if isinstance(provenance.get("timestamp"), str) else None))
    return ratings, skipped


def read_inspect_log(path: str | Path, *, context_key: str | None = None) -> SourceBatch:
    """The cases and ratings of an Inspect AI eval log (see the module docstring).

    Parameters
    ----------
    path : str or Path
        A ``.eval`` log (needs ``zstandard``) or a ``.json`` log.
    context_key : str, optional
        The sample metadata key holding the retrieved context (a string or a list of chunks); by default
        the first of ``retrieval_context``, ``retrieved_contexts``, ``contexts``, ``context``, ``documents``.

    Returns
    -------
    SourceBatch
        Origin ``inspect``: a later log's score of the same case by the same grader is a new revision.
        A case's id is its sample's ``metadata.case_id`` when the log holds that sample once, else a
        hash of its content (sample ids repeat across tasks and epochs).

    Raises
    ------
    CampaignError
        A file that is not an Inspect log, named with the problem.

    Examples
    --------
    >>> import json, tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "log.json"
    >>> log = {"eval": {"task": "qa", "eval_id": "e1", "scorers": [{"name": "model_graded_qa",
    ...        "options": {"model": "openai/gpt-4o"}}]}, "samples": [{"id": 1, "epoch": 1, "input": "q?",
    ...        "target": "a", "output": {"completion": "a."}, "scores": {"model_graded_qa": {"value": "C",
    ...        "history": [{"value": "C"}, {"value": "I", "provenance": {"author": "alice"}}]}}}]}
    >>> _ = path.write_text(json.dumps(log))
    >>> [(r.metric, r.rater, r.rater_kind, r.value) for r in read_inspect_log(path).ratings]
    [('model_graded_qa', 'openai/gpt-4o', 'judge', 1.0), ('model_graded_qa', 'alice', 'human', 0.0)]
    """
    path = Path(path)
    header, samples = _load(path)
    spec = header["eval"]
    graders = _graders(spec)
    eval_id = str(spec.get("eval_id") or path.stem)
    batch = SourceBatch(kind="inspect", origin="inspect", source=str(path))
    if header.get("status") not in (None, "success"):
        batch.skipped.append(Skip(f"{eval_id} (status {header.get('status')!r})",
                                  "the eval did not finish: its samples are imported as they are"))
    seen: dict[Any, int] = {}
    for _, sample in samples:
        if isinstance(sample, dict):
            own = (sample.get("metadata") or {}).get("case_id") if isinstance(sample.get("metadata"), dict) else None
            seen[own] = seen.get(own, 0) + 1
    for place, sample in samples:
        if not isinstance(sample, dict):
            batch.skipped.append(Skip(f"{eval_id}#{place}", "not a sample (an object)"))
            continue
        label = f"{eval_id}#{sample.get('id')}/epoch{sample.get('epoch', 1)}"
        case, why = _case(sample, spec, str(path), context_key)
        if case is None:
            batch.skipped.append(Skip(label, why))
            continue
        own = (sample.get("metadata") or {}).get("case_id") if isinstance(sample.get("metadata"), dict) else None
        usable = isinstance(own, (str, int)) and not isinstance(own, bool) and str(own) and seen.get(own) == 1
        case["case_id"] = str(own) if usable else content_id(case)
        case["metadata"] = {**case["metadata"], "source": f"inspect:{eval_id}"}
        batch.cases.append(case)
        scores = sample.get("scores") if isinstance(sample.get("scores"), dict) else {}
        for name, score in scores.items():
            if not isinstance(score, dict):
                batch.skipped.append(Skip(f"{label}/{name}", "a score that is not an object"))
                continue
            ratings, skipped = _ratings(str(name), score, case["case_id"], f"{label}/{name}", graders)
            batch.ratings += ratings
            batch.skipped += skipped
    return batch


def import_inspect(campaign_folder: str | Path, path: str | Path, *, context_key: str | None = None,
                   metric_map: Mapping[str, str] | None = None, rater: str | None = None,
                   dry_run: bool = False) -> Result:
    """The ``calibrate import inspect`` command: an Inspect AI eval log read by :func:`read_inspect_log`,
    brought into the campaign by :func:`~calibrate.imports.apply.import_batch`.

    Parameters
    ----------
    campaign_folder : str or Path
    path : str or Path
        The eval log (``.eval`` or ``.json``).
    context_key : str, optional
        The sample metadata key holding the retrieved context.
    metric_map : mapping, optional
        Scorer name -> campaign metric (``{"model_graded_qa": "correctness"}``).
    rater : str, optional
        The judge's name in the campaign, for a log of one grader.
    dry_run : bool
        Say what the import would do; write nothing.

    Returns
    -------
    Result
        As :func:`~calibrate.imports.apply.import_batch` returns it.

    Examples
    --------
    >>> import json, tempfile, pathlib, calibrate
    >>> tmp = pathlib.Path(tempfile.mkdtemp())
    >>> _ = calibrate.init_campaign(tmp / "c", ["correctness"])
    >>> log = {"eval": {"scorers": [{"name": "model_graded_qa", "options": {"model": "openai/gpt-4o"}}]},
    ...        "samples": [{"id": 1, "input": "q?", "output": {"completion": "a."},
    ...                     "scores": {"model_graded_qa": {"value": "I"}}}]}
    >>> _ = (tmp / "log.json").write_text(json.dumps(log))
    >>> import_inspect(tmp / "c", tmp / "log.json", metric_map={"model_graded_qa": "correctness"})["by_metric"]
    {'correctness': {'human': 0, 'judge': 1}}
    """
    return import_batch(campaign_folder, read_inspect_log(path, context_key=context_key), metric_map=metric_map,
                        rater=rater, dry_run=dry_run)
