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

The output's format is declared below (:class:`PromptfooOutput`, :class:`EvalResult`,
:class:`GradedAssertion`, ...): a file that is not JSON (or JSON Lines) or has no ``results.results``
list is refused, naming it; a result or graded assertion that does not fit is skipped, with where it is
and why.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import Field, JsonValue

from calibrate.base.documents import DocumentError, check
from calibrate.base.errors import Problem
from calibrate.base.results import Result
from calibrate.base.secrets import clip
from calibrate.cases.datasets import content_id, external_case
from calibrate.imports.apply import import_files
from calibrate.imports.records import ImportedRating, Skip, SourceBatch
from calibrate.imports.texts import (
    CONTEXT_KEYS,
    EXPECTED_OUTPUT_NAMES,
    INPUT_KEYS,
    OUTPUT_KEYS,
    OptionalId,
    Record,
    documents_of,
    fits,
    json_documents,
    problem_text,
    text_of,
)

__all__ = [
    "HUMAN_METRIC",
    "MODEL_GRADED",
    "EvalResult",
    "GradedAssertion",
    "PromptfooOutput",
    "import_promptfoo",
    "read_promptfoo_results",
]

#: promptfoo's assertion types graded by a model (``not-`` variants included)
MODEL_GRADED = {
    "llm-rubric",
    "g-eval",
    "factuality",
    "model-graded-factuality",
    "model-graded-closedqa",
    "answer-relevance",
    "context-faithfulness",
    "context-recall",
    "context-relevance",
    "search-rubric",
    "conversation-relevance",
    "pi",
    "select-best",
    "max-score",
    "trajectory:goal-success",
}
#: the source's metric name of a manual rating given in promptfoo's viewer
HUMAN_METRIC = "human"
EXPECTED = "promptfoo's JSON output: promptfoo eval -o results.json, or promptfoo export eval ID -o file.json"


# ------------------------------------------------------------------------------------ the format
class ResultsBlock(Record):
    results: list[JsonValue]


class PromptfooOutput(Record):
    """The output file: its eval id, config (the user's, read leniently: only the default grader), and
    ``results.results``, each result read on its own."""

    evalId: str | None = None
    results: ResultsBlock
    config: JsonValue = None


class PromptfooTest(Record):
    vars: dict[str, JsonValue] | None = None
    metadata: dict[str, JsonValue] | None = None
    options: JsonValue = None
    description: str | None = None


class Response(Record):
    """The provider's response: ``output`` (anything the provider gave), or an ``error``."""

    output: JsonValue = None
    error: JsonValue = None


class Prompt(Record):
    raw: JsonValue = None
    label: str | None = None


class Provider(Record):
    id: str | None = None
    label: str | None = None


class Grading(Record):
    componentResults: list[JsonValue] | None = None


class EvalResult(Record):
    """One result: a test's vars run through one prompt and provider, and its graded assertions (each
    read on its own)."""

    id: OptionalId = None
    testIdx: int | None = None
    promptIdx: int | None = None
    vars: dict[str, JsonValue] | None = None
    testCase: PromptfooTest | None = None
    prompt: Prompt | None = None
    provider: Provider | None = None
    response: Response | None = None
    error: JsonValue = None
    gradingResult: Grading | None = None


class Assertion(Record):
    type: str | None = None
    metric: str | None = None
    provider: JsonValue = None
    threshold: float | None = None


class GradedAssertion(Record):
    """One graded assertion (``componentResults``): pass / fail, score, reason, the viewer's comment,
    and its assertion (an ``assert-set`` holds its own ``componentResults``)."""

    passed: bool | None = Field(None, alias="pass")
    score: float | None = None
    reason: str | None = None
    comment: str | None = None
    assertion: Assertion | None = None
    metadata: dict[str, JsonValue] | None = None
    componentResults: list[JsonValue] | None = None


class _ProviderRef(Record):
    id: JsonValue = None
    text: JsonValue = None
    chat: JsonValue = None
    classification: JsonValue = None


class _Options(Record):
    provider: JsonValue = None


class _Test(Record):
    options: JsonValue = None


class _Config(Record):
    defaultTest: JsonValue = None


# ------------------------------------------------------------------------------------ reading
def _load(path: Path) -> tuple[PromptfooOutput, list[tuple[str, Any]]]:
    """The file's eval (id, config) and its results, each with its place; a JSON Lines output is results
    alone."""
    documents = json_documents(path, expected=EXPECTED)
    if len(documents) > 1:  # -o results.jsonl: a result a line
        return PromptfooOutput(results=ResultsBlock(results=[])), [(f"line {n}", r) for n, r in documents]
    output, problems = check(documents[0][1], PromptfooOutput, source=str(path), expected=EXPECTED)
    if output is None:
        raise DocumentError(
            [Problem(str(path), "not a promptfoo eval output (no results.results list)", expected=EXPECTED)] + problems,
            source=str(path),
        )
    return output, [(f"results.results[{i}]", r) for i, r in enumerate(output.results.results)]


def _provider_id(provider: Any) -> str | None:
    """A grader as promptfoo's config names it: ``"openai:gpt-4o"``, ``{"id": ...}``, or a map of
    providers by purpose (``{"text": ..., "embedding": ...}``: the text one grades)."""
    if isinstance(provider, str):
        return provider or None
    ref = fits(provider, _ProviderRef)
    if ref is None:
        return None
    if isinstance(ref.id, str):
        return ref.id or None
    for purpose in ("text", "chat", "classification"):
        if purpose in ref.model_fields_set:
            return _provider_id(getattr(ref, purpose))
    return None


def _grader_of(options: Any) -> str | None:
    """The grader a test's (or the default test's) ``options`` name."""
    found = fits(options, _Options)
    return _provider_id(found.provider) if found is not None else None


def _var(vars_: dict[str, Any], chosen: str | None, usual: tuple[str, ...]) -> tuple[str | None, Any]:
    if chosen:
        return (chosen, vars_[chosen]) if chosen in vars_ else (None, None)
    lowered = {str(k).lower(): k for k in vars_}
    key = next((lowered[k] for k in usual if k in lowered), None)
    return (key, vars_[key]) if key is not None else (None, None)


def _components(
    grading: Grading | GradedAssertion, where: str, path: str, skipped: list[Skip]
) -> list[tuple[str, GradedAssertion]]:
    """The graded assertions of a result, those inside an ``assert-set`` included, each with its place;
    those that do not fit skipped."""
    found = []
    for j, item in enumerate(grading.componentResults or []):
        place = f"{where}/{j}"
        component, problems = check(item, GradedAssertion, source=path, expected="a promptfoo graded assertion")
        if component is None:
            skipped.append(Skip(place, "not a promptfoo graded assertion: " + problem_text(problems)))
        elif (
            component.assertion is not None
            and component.assertion.type == "assert-set"
            and component.componentResults is not None
        ):
            found += _components(component, place, path, skipped)
        else:
            found.append((place, component))
    return found


def _case(
    result: EvalResult, where: str, *, input_var: str | None, context_var: str | None, expected_var: str | None
) -> tuple[dict | None, str | None]:
    """The case a result is, or why it is none."""
    test = result.testCase or PromptfooTest()
    vars_ = dict(test.vars or result.vars or {})
    response = result.response
    if response is None or response.error or "output" not in response.model_fields_set:
        error = response.error if response is not None and response.error else result.error
        return None, f"the provider gave no output ({clip(error, 200)})"
    used = set()
    key, value = _var(vars_, input_var, INPUT_KEYS)
    if key is None and input_var is None:
        strings = [(k, v) for k, v in vars_.items() if isinstance(v, str)]
        key, value = strings[0] if len(strings) == 1 else (None, None)
    if key is None:
        if input_var is not None:
            return None, f"no var {input_var!r} (its vars: {', '.join(map(str, vars_)) or 'none'})"
        value = result.prompt.raw if result.prompt is not None else None
    used.add(key)
    record: dict[str, Any] = {
        "input": text_of(value, INPUT_KEYS, chat_role="user"),
        "actual_output": text_of(response.output, OUTPUT_KEYS, chat_role=None),
    }
    key, value = _var(vars_, context_var, CONTEXT_KEYS)
    if key is not None:
        used.add(key)
        record["retrieval_context"] = documents_of(value) if not isinstance(value, str) else [value]
    key, value = _var(vars_, expected_var, EXPECTED_OUTPUT_NAMES)
    if key is not None:
        used.add(key)
        record["expected_output"] = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    provider = result.provider or Provider()
    record["metadata"] = {
        k: v
        for k, v in {
            **(test.metadata or {}),
            "description": test.description,
            "provider": provider.label or provider.id,
            "prompt": result.prompt.label if result.prompt is not None else None,
            "test_index": result.testIdx,
            "prompt_index": result.promptIdx,
            "result_id": result.id,
            "vars": {k: v for k, v in vars_.items() if k not in used} or None,
        }.items()
        if v is not None
    }
    record["metadata"].pop("case_id", None)
    case, problems = external_case(record, source="deepeval", where=where)
    if case is None:
        return None, problem_text(problems)
    return case, None


def _rating(
    component: GradedAssertion, case_id: str, source_id: str, grader: str | None, human_rater: str
) -> ImportedRating | Skip:
    assertion = component.assertion
    kind = assertion.type if assertion is not None else None
    if not kind:
        return Skip(source_id, "a graded result without its assertion (promptfoo names none)")
    metric = assertion.metric or kind
    passed = component.passed
    value = component.score if component.score is not None else float(passed) if passed is not None else None
    failed = bool((component.metadata or {}).get("graderError"))
    if value is None and not failed:
        return Skip(source_id, f"its {kind} assertion has neither a score nor pass / fail")
    facts = {"library": "promptfoo", "assertion": kind, "threshold": assertion.threshold, "success": passed}
    if kind == "human":
        return ImportedRating(
            case_id=case_id,
            metric=HUMAN_METRIC,
            rater=human_rater,
            rater_kind="human",
            value=value,
            source_id=source_id,
            reason=component.comment,
            facts={"library": "promptfoo", "success": passed},
        )
    if kind.removeprefix("not-") in MODEL_GRADED:
        rater = _provider_id(assertion.provider) or grader or ""
        facts |= {"model": rater.rsplit(":", 1)[-1] if rater else None, "source_type": "LLM"}
    else:
        rater = f"promptfoo:{kind}"
        facts["source_type"] = "CODE"
    return ImportedRating(
        case_id=case_id,
        metric=metric,
        rater=rater,
        rater_kind="judge",
        value=None if failed else value,
        error=(component.reason or "the grader failed") if failed else None,
        reason=None if failed else component.reason,
        source_id=source_id,
        facts={k: v for k, v in facts.items() if v is not None},
    )


def read_promptfoo_results(
    path: str | Path,
    *,
    input_var: str | None = None,
    context_var: str | None = None,
    expected_var: str | None = None,
    human_rater: str = "promptfoo-viewer",
) -> SourceBatch:
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
        file, else a hash of its content (the same answer to the same question is the same case). A
        result or graded assertion that does not fit its format is skipped, saying where and why.

    Raises
    ------
    DocumentError
        A file that is not promptfoo's output (not JSON, no ``results.results`` list), named with the
        problem.

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
    output, items = _load(path)
    eval_id = output.evalId or path.name
    config = fits(output.config, _Config)
    default = fits(config.defaultTest, _Test) if config is not None else None
    default_grader = _grader_of(default.options) if default is not None else None
    batch = SourceBatch(kind="promptfoo", origin="promptfoo", source=str(path))
    results: list[tuple[int, EvalResult]] = []
    for i, (place, item) in enumerate(items):
        result, problems = check(item, EvalResult, source=str(path), expected="a promptfoo result")
        if result is None:
            batch.skipped.append(Skip(f"{eval_id}#{place}", "not a promptfoo result: " + problem_text(problems)))
        else:
            results.append((i, result))
    tests = Counter(result.testIdx for _, result in results)  # results of each test
    for i, result in results:
        place = result.id or f"test{result.testIdx if result.testIdx is not None else i}-prompt{result.promptIdx or 0}"
        label = f"{eval_id}#{place}"
        case, why = _case(result, str(path), input_var=input_var, context_var=context_var, expected_var=expected_var)
        if case is None:
            batch.skipped.append(Skip(label, why))
            continue
        test = result.testCase or PromptfooTest()
        own = (test.metadata or {}).get("case_id")
        case["case_id"] = (
            str(own)
            if isinstance(own, (str, int)) and not isinstance(own, bool) and str(own) and tests[result.testIdx] == 1
            else content_id(case)
        )
        case["metadata"] = {**case["metadata"], "source": f"promptfoo:{eval_id}"}
        batch.cases.append(case)
        grader = _grader_of(test.options) or default_grader
        for source_id, component in _components(result.gradingResult or Grading(), label, str(path), batch.skipped):
            found = _rating(component, case["case_id"], source_id, grader, str(human_rater))
            (batch.skipped if isinstance(found, Skip) else batch.ratings).append(found)
    return batch


def import_promptfoo(
    campaign_folder: str | Path,
    path: str | Path,
    *,
    input_var: str | None = None,
    context_var: str | None = None,
    expected_var: str | None = None,
    human_rater: str = "promptfoo-viewer",
    metric_map: Mapping[str, str] | None = None,
    rater: str | None = None,
    dry_run: bool = False,
) -> Result:
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
        The judge's name in the campaign, for a file whose grader promptfoo chose by itself; it must
        differ from ``human_rater`` (a judge and a human are two raters).
    dry_run : bool
        Say what the import would do; write nothing.

    Returns
    -------
    Result
        As :func:`~calibrate.imports.apply.import_batch` returns it.

    Raises
    ------
    ValueError
        ``rater`` equal to ``human_rater``: the judge's ratings would replace the viewer's.

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
    >>> import_promptfoo(tmp / "c", tmp / "r.json", rater="promptfoo-viewer")
    Traceback (most recent call last):
    ...
    ValueError: rater='promptfoo-viewer' is also the human_rater: the judge and whoever rated in promptfoo's viewer would be one rater, and the judge's ratings would replace the human labels; give them different names (--rater, --human-rater)
    """
    if rater is not None and rater == human_rater:
        raise ValueError(
            f"rater={rater!r} is also the human_rater: the judge and whoever rated in promptfoo's viewer "
            "would be one rater, and the judge's ratings would replace the human labels; give them "
            "different names (--rater, --human-rater)"
        )
    options = {
        "input_var": input_var,
        "context_var": context_var,
        "expected_var": expected_var,
        "human_rater": human_rater,
    }
    return import_files(
        campaign_folder,
        "promptfoo",
        {"results": path},
        lambda: read_promptfoo_results(
            path, input_var=input_var, context_var=context_var, expected_var=expected_var, human_rater=human_rater
        ),
        options=options,
        metric_map=metric_map,
        rater=rater,
        dry_run=dry_run,
    )
