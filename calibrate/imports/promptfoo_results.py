"""A promptfoo eval, as ``promptfoo eval -o results.json`` (or ``promptfoo export eval ID``) writes it,
read as cases, judge ratings and the human ratings given in promptfoo's viewer.

The file holds ``results.results``: one result per test, prompt and provider, with the test's
``vars``, the provider's ``response.output`` and, in ``gradingResult.componentResults``, one graded
assertion each (its ``assertion``, ``pass``, ``score``, ``reason``). Each result is a case: its input
is the var named by ``input_var`` (else ``question``, ``query``, ``input``, ... or the only var; else
the rendered prompt), its output the provider's, its retrieval context and expected output the vars
of those names. Each graded assertion is a rating of the metric its ``metric`` names (else its type):

- a model-graded assertion (``llm-rubric``, ``g-eval``, ``factuality``, ``context-faithfulness``, ...)
  is a judge rating by its grader: the assertion's ``provider``, else the test's or the default
  test's ``options.provider`` (a grader promptfoo chose by itself is named nowhere in the file: the
  rating is skipped unless ``--rater`` names it); a grading that failed (promptfoo marks it
  ``graderError``) is a failed rating with promptfoo's reason;
- a manual rating given in ``promptfoo view`` (an assertion of type ``human``) is a human rating of
  the metric ``human`` (map it with ``--map human=METRIC``) by ``human_rater``: promptfoo does not
  record who rated;
- any other assertion (``contains``, ``javascript``, ``similar``, ...) is a judge rating by code,
  named ``promptfoo:TYPE``.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from calibrate.base.errors import CampaignError, Problem
from calibrate.base.results import Result
from calibrate.cases.datasets import content_id, external_case
from calibrate.imports.apply import import_batch
from calibrate.imports.records import ImportedRating, Skip, SourceBatch
from calibrate.imports.texts import (CONTEXT_KEYS, EXPECTED_OUTPUT_NAMES, INPUT_KEYS, OUTPUT_KEYS, documents_of,
                                     problem_text, text_of)

__all__ = ["read_promptfoo_results", "import_promptfoo", "MODEL_GRADED", "HUMAN_METRIC"]

#: promptfoo's assertion types graded by a model (``not-`` variants included)
MODEL_GRADED = {"llm-rubric", "g-eval", "factuality", "model-graded-factuality", "model-graded-closedqa",
                "answer-relevance", "context-faithfulness", "context-recall", "context-relevance", "search-rubric",
                "conversation-relevance", "pi", "select-best", "max-score", "trajectory:goal-success"}
#: the source's metric name of a manual rating given in promptfoo's viewer
HUMAN_METRIC = "human"
EXPECTED = "promptfoo's JSON output: promptfoo eval -o results.json, or promptfoo export eval ID -o file.json"


def _load(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The file's eval (id, config) and its results; a JSON Lines output is results alone."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise CampaignError([Problem(str(path), "not UTF-8 text", expected=EXPECTED)]) from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as whole:
        results = []
        for number, line in enumerate(text.splitlines(), 1):   # -o results.jsonl: a result a line
            if line.strip():
                try:
                    results.append(json.loads(line))
                except json.JSONDecodeError:
                    raise CampaignError([Problem(str(path), f"not valid JSON: {whole.msg}", row=whole.lineno,
                                                 expected=EXPECTED)]) from None
        data = {"results": {"results": results}}
    inner = data.get("results") if isinstance(data, dict) else None
    results = inner.get("results") if isinstance(inner, dict) else None
    if not isinstance(results, list):
        raise CampaignError([Problem(str(path), "not a promptfoo eval output (no results.results list)",
                                     value=type(data).__name__, expected=EXPECTED)])
    wrong = [f"results.results[{i}]" for i, r in enumerate(results) if not isinstance(r, dict)]
    if wrong:
        raise CampaignError([Problem(str(path), "not a promptfoo result", field=w, expected="an object")
                             for w in wrong[:10]])
    return data, results


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _provider_id(provider: Any) -> str | None:
    """A grader as promptfoo's config names it: ``"openai:gpt-4o"``, ``{"id": ...}``, or a map of
    providers by purpose (``{"text": ..., "embedding": ...}``: the text one grades)."""
    if isinstance(provider, str):
        return provider or None
    if isinstance(provider, dict):
        if isinstance(provider.get("id"), str):
            return provider["id"] or None
        for purpose in ("text", "chat", "classification"):
            if purpose in provider:
                return _provider_id(provider[purpose])
    return None


def _var(vars_: dict[str, Any], chosen: str | None, usual: tuple[str, ...]) -> tuple[str | None, Any]:
    if chosen:
        return (chosen, vars_[chosen]) if chosen in vars_ else (None, None)
    lowered = {str(k).lower(): k for k in vars_}
    key = next((lowered[k] for k in usual if k in lowered), None)
    return (key, vars_[key]) if key is not None else (None, None)


def _components(grading: dict[str, Any]) -> list[dict[str, Any]]:
    """The graded assertions of a result, those inside an ``assert-set`` included."""
    found = []
    for component in grading.get("componentResults") or []:
        if not isinstance(component, dict):
            continue
        nested = component.get("componentResults")
        if _mapping(component.get("assertion")).get("type") == "assert-set" and isinstance(nested, list):
            found += _components(component)
        else:
            found.append(component)
    return found


def _case(result: dict[str, Any], where: str, *, input_var: str | None, context_var: str | None,
          expected_var: str | None) -> tuple[dict | None, str | None]:
    """The case a result is, or why it is none."""
    test = _mapping(result.get("testCase"))
    vars_ = _mapping(test.get("vars")) or _mapping(result.get("vars"))
    response = _mapping(result.get("response"))
    if response.get("error") or ("output" not in response):
        return None, f"the provider gave no output ({str(response.get('error') or result.get('error'))[:200]})"
    used = set()
    key, value = _var(vars_, input_var, INPUT_KEYS)
    if key is None and input_var is None:
        strings = [(k, v) for k, v in vars_.items() if isinstance(v, str)]
        key, value = strings[0] if len(strings) == 1 else (None, None)
    if key is None:
        if input_var is not None:
            return None, f"no var {input_var!r} (its vars: {', '.join(map(str, vars_)) or 'none'})"
        value = _mapping(result.get("prompt")).get("raw")
    used.add(key)
    record: dict[str, Any] = {"input": text_of(value, INPUT_KEYS, chat_role="user"),
                              "actual_output": text_of(response.get("output"), OUTPUT_KEYS, chat_role=None)}
    key, value = _var(vars_, context_var, CONTEXT_KEYS)
    if key is not None:
        used.add(key)
        record["retrieval_context"] = documents_of(value) if not isinstance(value, str) else [value]
    key, value = _var(vars_, expected_var, EXPECTED_OUTPUT_NAMES)
    if key is not None:
        used.add(key)
        record["expected_output"] = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    provider = _mapping(result.get("provider"))
    record["metadata"] = {k: v for k, v in {
        **_mapping(test.get("metadata")), "description": test.get("description"),
        "provider": provider.get("label") or provider.get("id"), "prompt": _mapping(result.get("prompt")).get("label"),
        "test_index": result.get("testIdx"), "prompt_index": result.get("promptIdx"), "result_id": result.get("id"),
        "vars": {k: v for k, v in vars_.items() if k not in used} or None}.items() if v is not None}
    record["metadata"].pop("case_id", None)
    case, problems = external_case(record, source="deepeval", where=where)
    if case is None:
        return None, problem_text(problems)
    return case, None


def _rating(component: dict[str, Any], case_id: str, source_id: str, grader: str | None,
            human_rater: str) -> ImportedRating | Skip:
    assertion = _mapping(component.get("assertion"))
    kind = assertion.get("type")
    if not isinstance(kind, str) or not kind:
        return Skip(source_id, "a graded result without its assertion (promptfoo names none)")
    metric = assertion.get("metric") if isinstance(assertion.get("metric"), str) and assertion["metric"] else kind
    score, passed = component.get("score"), component.get("pass")
    value = (float(score) if isinstance(score, (int, float)) and not isinstance(score, bool)
             else float(passed) if isinstance(passed, bool) else None)
    failed = bool(_mapping(component.get("metadata")).get("graderError"))
    reason = component.get("reason") if isinstance(component.get("reason"), str) else None
    if value is None and not failed:
        return Skip(source_id, f"its {kind} assertion has neither a score nor pass / fail")
    facts = {"library": "promptfoo", "assertion": kind, "threshold": assertion.get("threshold"),
             "success": passed if isinstance(passed, bool) else None}
    if kind == "human":
        return ImportedRating(case_id=case_id, metric=HUMAN_METRIC, rater=human_rater, rater_kind="human",
                              value=value, source_id=source_id,
                              reason=component.get("comment") if isinstance(component.get("comment"), str) else None,
                              facts={"library": "promptfoo", "success": facts["success"]})
    base = kind.removeprefix("not-")
    if base in MODEL_GRADED:
        rater = _provider_id(assertion.get("provider")) or grader or ""
        facts |= {"model": rater.rsplit(":", 1)[-1] if rater else None, "source_type": "LLM"}
    else:
        rater = f"promptfoo:{kind}"
        facts["source_type"] = "CODE"
    return ImportedRating(case_id=case_id, metric=metric, rater=rater, rater_kind="judge",
                          value=None if failed else value, error=(reason or "the grader failed") if failed else None,
                          reason=None if failed else reason, source_id=source_id,
                          facts={k: v for k, v in facts.items() if v is not None})


def read_promptfoo_results(path: str | Path, *, input_var: str | None = None, context_var: str | None = None,
                           expected_var: str | None = None, human_rater: str = "promptfoo-viewer") -> SourceBatch:
    """The cases and ratings of a promptfoo eval's JSON output (see the module docstring).

    Parameters
    ----------
    path : str or Path
        ``promptfoo eval -o results.json`` (or ``.jsonl``), or ``promptfoo export eval ID -o file.json``.
    input_var, context_var, expected_var : str, optional
        The test vars holding the question, the retrieved context (a string or a list) and the expected
        answer; by default the first of the usual names (``question``, ``query``, ``input``, ...;
        ``context``, ``contexts``, ...; ``expected_output``, ``reference``, ``expected``, ...).
    human_rater : str
        The name of whoever rated in promptfoo's viewer (promptfoo does not record it).

    Returns
    -------
    SourceBatch
        Origin ``promptfoo``: a later eval's rating of the same case by the same grader is a new
        revision. A case's id is its test's ``metadata.case_id`` when the test has one result in the
        file, else a hash of its content (the same answer to the same question is the same case).

    Raises
    ------
    CampaignError
        A file that is not promptfoo's output, named with the problem.

    Examples
    --------
    >>> import json, tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "results.json"
    >>> result = {"id": "r1", "testIdx": 0, "promptIdx": 0, "vars": {"question": "Where is Paris?"},
    ...           "testCase": {"vars": {"question": "Where is Paris?"}, "options": {"provider": "openai:gpt-4o"}},
    ...           "response": {"output": "In France."}, "gradingResult": {"componentResults": [
    ...               {"pass": True, "score": 1, "reason": "ok", "assertion": {"type": "llm-rubric", "metric": "correctness"}},
    ...               {"pass": False, "score": 0, "reason": "Manual result", "assertion": {"type": "human"}}]}}
    >>> _ = path.write_text(json.dumps({"evalId": "eval-1", "results": {"version": 3, "results": [result]}}))
    >>> [(r.metric, r.rater, r.rater_kind, r.value) for r in read_promptfoo_results(path).ratings]
    [('correctness', 'openai:gpt-4o', 'judge', 1.0), ('human', 'promptfoo-viewer', 'human', 0.0)]
    """
    path = Path(path)
    if not str(human_rater).strip():
        raise ValueError("human_rater: name whoever rated in promptfoo's viewer (--human-rater NAME)")
    data, results = _load(path)
    eval_id = str(data.get("evalId") or path.name)
    default_grader = _provider_id(_mapping(_mapping(_mapping(data.get("config")).get("defaultTest")).get("options"))
                                  .get("provider"))
    batch = SourceBatch(kind="promptfoo", origin="promptfoo", source=str(path))
    tests = Counter(json.dumps(r.get("testIdx"), default=str) for r in results)   # results of each test
    for i, result in enumerate(results):
        place = result.get("id") or f"test{result.get('testIdx', i)}-prompt{result.get('promptIdx', 0)}"
        label = f"{eval_id}#{place}"
        case, why = _case(result, str(path), input_var=input_var, context_var=context_var, expected_var=expected_var)
        if case is None:
            batch.skipped.append(Skip(label, why))
            continue
        own = _mapping(_mapping(result.get("testCase")).get("metadata")).get("case_id")
        case["case_id"] = (str(own) if isinstance(own, (str, int)) and not isinstance(own, bool) and str(own)
                           and tests[json.dumps(result.get("testIdx"), default=str)] == 1 else content_id(case))
        case["metadata"] = {**case["metadata"], "source": f"promptfoo:{eval_id}"}
        batch.cases.append(case)
        grader = _provider_id(_mapping(_mapping(result.get("testCase")).get("options")).get("provider")) or default_grader
        for j, component in enumerate(_components(_mapping(result.get("gradingResult")))):
            found = _rating(component, case["case_id"], f"{label}/{j}", grader, str(human_rater))
            (batch.skipped if isinstance(found, Skip) else batch.ratings).append(found)
    return batch


def import_promptfoo(campaign_folder: str | Path, path: str | Path, *, input_var: str | None = None,
                     context_var: str | None = None, expected_var: str | None = None,
                     human_rater: str = "promptfoo-viewer", metric_map: Mapping[str, str] | None = None,
                     rater: str | None = None, dry_run: bool = False) -> Result:
    """The ``calibrate import promptfoo`` command: a promptfoo eval output read by
    :func:`read_promptfoo_results`, brought into the campaign by :func:`~calibrate.imports.apply.import_batch`.

    Parameters
    ----------
    campaign_folder : str or Path
    path : str or Path
        promptfoo's JSON output of an eval.
    input_var, context_var, expected_var, human_rater : str, optional
        As :func:`read_promptfoo_results` takes them.
    metric_map : mapping, optional
        Assertion metric (or type) -> campaign metric; ``{"human": METRIC}`` imports the viewer's ratings.
    rater : str, optional
        The judge's name in the campaign, for a file whose grader promptfoo chose by itself.
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
    >>> result = {"id": "r1", "testCase": {"vars": {"question": "q?"}}, "response": {"output": "a."},
    ...           "gradingResult": {"componentResults": [{"pass": True, "score": 1, "assertion": {"type": "human"}}]}}
    >>> _ = (tmp / "r.json").write_text(json.dumps({"results": {"results": [result]}}))
    >>> import_promptfoo(tmp / "c", tmp / "r.json", metric_map={"human": "correctness"})["by_metric"]
    {'correctness': {'human': 1, 'judge': 0}}
    """
    batch = read_promptfoo_results(path, input_var=input_var, context_var=context_var, expected_var=expected_var,
                                   human_rater=human_rater)
    return import_batch(campaign_folder, batch, metric_map=metric_map, rater=rater, dry_run=dry_run)
