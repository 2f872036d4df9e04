"""Judges declared in ``campaign.toml``: a library metric, a judge model and the metric's settings.

```toml
[judges.deepeval-faithfulness-gpt]
library = "deepeval"
metric = "faithfulness"          # scored into the campaign metric of that name unless into = "..."
model = { provider = "openai", name = "gpt-4.1", base_url = "https://...", api_key_env = "OPENAI_API_KEY" }
family = "gpt"                   # inferred from the model name where possible
settings = { penalize_ambiguous_claims = true, include_reason = true }
```

There is no default provider: a judge without a model is a configuration error. API keys are read
from the environment variable the model names, at call time, and never stored.
This module only parses and validates (no network, no heavy import).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from pydantic import Field, create_model

from calibrate.base.errors import Problem
from calibrate.base.names import RULE, name_key, name_problem
from calibrate.campaign.config import Number, Table, table, tables
from calibrate.campaign.judge_dags import load_dag
from calibrate.campaign.judge_models import ModelTable, parse_model
from calibrate.campaign.judge_specs import CASE_FIELDS, EMBEDDING_PROVIDERS, SUPPORTED, JudgeSpec, infer_family

__all__ = ["JudgeTable", "parse_judges", "settings_schema"]


class JudgeTable(Table):
    """``[judges.NAME]``: a library metric, the model that scores with it, and the metric's settings
    (read by :func:`settings_schema` of the library metric)."""

    library: str | None = Field(None, description="deepeval or ragas")
    metric: str | None = Field(None, description="a metric the library supports")
    into: str | None = Field(None, description="a [metrics.NAME] of campaign.toml")
    model: ModelTable | None = Field(
        None, description='model = { provider = "openai", name = "...", base_url = "..." }'
    )
    embeddings: ModelTable | None = Field(None, description='embeddings = { provider = "local", name = "..." }')
    family: str | None = Field(None, description="a model family, such as gpt or llama")
    settings: dict[str, Any] = Field({}, description="a table of the metric's settings")
    description: str | None = Field(None, description="text")

    messages: ClassVar[dict[str, str]] = {
        "model": "the model must be a table",
        "embeddings": "the embeddings model must be a table",
        "settings": "settings must be a table",
        "family": "must be a string",
        "description": "must be a string",
    }


_SETTING_TYPES = {
    float: (Number, "a number"),
    bool: (bool, "true or false"),
    int: (int, "a whole number"),
    str: (str, "text"),
    list: (list[Any], "a list"),
}
_SETTINGS: dict[tuple[str, str], type[Table]] = {}


def settings_schema(library: str, metric: str) -> type[Table]:
    """The schema of a supported library metric's ``settings`` (from :data:`SUPPORTED`).

    >>> settings_schema("deepeval", "faithfulness").model_validate({"threshold": 0.7}).threshold
    0.7
    """
    if (library, metric) not in _SETTINGS:
        known = SUPPORTED[(library, metric)]["settings"]
        schema = create_model(
            f"{library}_{metric}_settings",
            __base__=Table,
            **{
                key: (_SETTING_TYPES[kind][0], Field(None, description=_SETTING_TYPES[kind][1]))
                for key, kind in known.items()
            },
        )
        schema.unknown_key = f"unknown setting of {library} {metric}"
        schema.messages = {key: "wrong type" for key in known}
        _SETTINGS[(library, metric)] = schema
    return _SETTINGS[(library, metric)]


def _check_g_eval(settings: dict[str, Any], where: str, file: str, problems: list[Problem]) -> None:
    """What G-Eval needs beyond types: the fields it reads, and criteria or evaluation steps."""
    params = settings.get("evaluation_params")
    if not (isinstance(params, list) and params and all(p in CASE_FIELDS for p in params)):
        problems.append(
            Problem(
                file,
                "G-Eval needs the case fields it reads",
                field=f"{where}.settings.evaluation_params",
                value=params,
                expected="a list of " + ", ".join(CASE_FIELDS),
            )
        )
    steps = settings.get("evaluation_steps")
    if "criteria" not in settings and steps is None:
        problems.append(
            Problem(
                file,
                "G-Eval needs criteria or evaluation_steps",
                field=f"{where}.settings",
                expected='criteria = "..." or evaluation_steps = ["...", ...]',
            )
        )
    if steps is not None and not (steps and all(isinstance(x, str) and x.strip() for x in steps)):
        problems.append(
            Problem(
                file,
                "evaluation steps must be non-empty strings",
                value=steps,
                field=f"{where}.settings.evaluation_steps",
                expected='["step one", "step two"]',
            )
        )
    for i, item in enumerate(settings.get("rubric") or []):
        if not (isinstance(item, dict) and set(item) == {"score_range", "expected_outcome"}):
            problems.append(
                Problem(
                    file,
                    "a rubric entry names a score range and its expected outcome",
                    field=f"{where}.settings.rubric[{i}]",
                    value=item,
                    expected='{ score_range = [0, 2], expected_outcome = "..." }',
                )
            )


def _foldable(name: str, judges: dict[str, JudgeSpec], where: str, file: str, problems: list[Problem]) -> bool:
    """Whether a judge's name can be its folder's (``fingerprints/NAME/``): kept as it is, or refused."""
    why, expected = name_problem(name), f"a name of {RULE}"
    twin = next((other for other in judges if name_key(other) == name_key(name)), None)
    if why is None and twin is not None:
        why = f"it differs from the judge {twin!r} only by case or Unicode form (one folder on macOS and Windows disks)"
        expected = "a name no other judge has, case and Unicode form aside"
    if why is not None:
        problems.append(
            Problem(
                file,
                f"the judge's name cannot be a folder name (fingerprints/NAME/): {why}",
                field=where,
                value=name,
                expected=expected,
            )
        )
    return why is None


def parse_judges(specs: Any, metrics: set[str], file: str, problems: list[Problem]) -> dict[str, JudgeSpec]:
    """The ``[judges]`` tables, each read by :class:`JudgeTable` and checked for what ties its fields
    together (a supported library metric, a declared metric to score into, the metric's settings); the
    problems are appended to ``problems``.

    Examples
    --------
    >>> problems = []
    >>> judges = parse_judges({"j": {"library": "deepeval", "metric": "faithfulness", "into": "faith",
    ...                              "model": {"provider": "openai", "name": "gpt-4.1", "temprature": 0}}},
    ...                       {"faithfulness"}, "campaign.toml", problems)
    >>> judges, [(p.field, p.message) for p in problems]
    ({}, [('judges.j.model.temprature', 'unknown key')])
    """
    judges: dict[str, JudgeSpec] = {}
    for name, spec in tables(specs, JudgeTable, "judges", file, problems).items():
        if not _foldable(name, judges, f"judges.{name}", file, problems):  # fingerprints/NAME/ is a folder
            continue
        judge = _parse_judge(name, spec, metrics, file, problems)
        if judge is not None:
            judges[name] = judge
    return judges


def _parse_judge(
    name: str, spec: JudgeTable, metrics: set[str], file: str, problems: list[Problem]
) -> JudgeSpec | None:
    """One ``[judges.NAME]`` table (read by :class:`JudgeTable`) checked across its fields, or None
    with its problems appended to ``problems``."""
    where = f"judges.{name}"
    library, metric = spec.library, spec.metric
    if (library, metric) not in SUPPORTED:
        supported = ", ".join(f"{lib} {metric}" for lib, metric in SUPPORTED)
        problems.append(
            Problem(
                file,
                "unsupported library metric",
                field=f"{where}.metric",
                value=f"{library} {metric}",
                expected=f"one of: {supported}",
            )
        )
        return None
    into = spec.into if spec.into is not None else metric
    if into not in metrics:
        problems.append(
            Problem(
                file,
                "the judge scores into a metric the campaign does not declare",
                field=f"{where}.into" if spec.into is not None else f"{where}.metric",
                value=into,
                expected="a [metrics.NAME] of campaign.toml: "
                + ", ".join(sorted(metrics))
                + " (a judge of a metric you removed goes with it: remove its [judges] table "
                "too; its ratings are kept, set aside, and come back with it)",
            )
        )
    settings_model = table(spec.settings, settings_schema(library, metric), f"{where}.settings", file, problems)
    settings = settings_model.model_dump(exclude_unset=True) if settings_model is not None else {}
    if (library, metric) == ("deepeval", "g_eval") and settings_model is not None:
        _check_g_eval(settings, where, file, problems)
    dag = load_dag(settings, Path(file).parent, where, file, problems) if metric == "dag" else None
    model = parse_model(name, spec.model, file, problems)
    embeddings = None
    if SUPPORTED[(library, metric)].get("embeddings"):
        embeddings = parse_model(
            name, spec.embeddings, file, problems, kind="embeddings", providers=EMBEDDING_PROVIDERS
        )
    elif spec.embeddings is not None:
        problems.append(
            Problem(
                file,
                f"{library} {metric} uses no embeddings",
                field=f"{where}.embeddings",
                expected="no embeddings key (only ragas answer_relevancy takes one)",
            )
        )
    if (
        model is None
        or settings_model is None
        or (embeddings is None and SUPPORTED[(library, metric)].get("embeddings"))
        or (metric == "dag" and dag is None)
    ):
        return None
    return JudgeSpec(
        name=name,
        library=library,
        metric=metric,
        into=into,
        model=model,
        family=spec.family or infer_family(model.name),
        settings=settings,
        description=spec.description,
        embeddings=embeddings,
        dag=dag,
    )
