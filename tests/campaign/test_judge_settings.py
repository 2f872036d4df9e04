"""[judges] in campaign.toml: parsing, validation, no default provider, no secret in the spec."""

import pytest

from calibrate import CampaignError, load_campaign
from tests.conftest import write_campaign

BASE = """
name = "j"
[metrics.faithfulness]
scale = "binary"
"""
HEADER = "case_id,metric,rater,rater_kind,value\na,faithfulness,ann,human,1\n"


def load(tmp_path, judges):
    return load_campaign(write_campaign(tmp_path / "c", BASE + judges, HEADER))


def test_a_judge_is_parsed_with_its_family_inferred(tmp_path):
    c = load(
        tmp_path,
        """
[judges.de-faith-llama]
library = "deepeval"
metric = "faithfulness"
model = { provider = "openai", name = "meta-llama/Llama-3.3-70B-Instruct", \
base_url = "http://127.0.0.1:8000/v1", api_key_env = "MY_KEY" }
settings = { include_reason = true, penalize_ambiguous_claims = true }
""",
    )
    judge = c.judges["de-faith-llama"]
    assert judge.family == "llama" and judge.into == "faithfulness" and judge.settings["penalize_ambiguous_claims"]
    assert judge.public()["model"]["api_key_env"] == "MY_KEY"
    assert c.rater("de-faith-llama").family == "llama"


@pytest.mark.parametrize(
    "judge, field, words",
    [
        ('library = "deepeval"\nmetric = "faithfulness"\n', "judges.x.model", "no default provider"),
        (
            'library = "deepeval"\nmetric = "faithfulness"\nmodel = { provider = "magic", name = "m" }\n',
            "judges.x.model.provider",
            "provider",
        ),
        (
            'library = "deepeval"\nmetric = "faithfulness"\n'
            'model = { provider = "openai", name = "m", api_key = "sk-1" }\n',
            "judges.x.model.api_key",
            "environment variable",
        ),
        (
            'library = "deepeval"\nmetric = "toxicity"\nmodel = { provider = "openai", name = "m" }\n',
            "judges.x.metric",
            "unsupported",
        ),
        (
            'library = "deepeval"\nmetric = "faithfulness"\ninto = "nope"\n'
            'model = { provider = "openai", name = "m" }\n',
            "judges.x.into",
            "does not declare",
        ),
        (
            'library = "deepeval"\nmetric = "faithfulness"\nmodel = { provider = "openai", name = "m" }\n'
            "settings = { strict = 1 }\n",
            "judges.x.settings.strict",
            "unknown setting",
        ),
        (
            'library = "deepeval"\nmetric = "faithfulness"\nmodel = { provider = "openai", name = "m" }\n'
            'settings = { include_reason = "yes" }\n',
            "judges.x.settings.include_reason",
            "wrong type",
        ),
    ],
)
def test_judge_configuration_errors(tmp_path, judge, field, words):
    with pytest.raises(CampaignError) as info:
        load(tmp_path, "[judges.x]\n" + judge)
    found = [p for p in info.value.problems if p.field == field]
    assert found and words in str(found[0]), info.value


def test_the_readme_judge_examples_are_valid(tmp_path):
    import re
    import tomllib
    from pathlib import Path

    from calibrate.campaign.judge_settings import parse_judges
    from tests.judges.test_judges_dag import write_dag

    root = Path(__file__).resolve().parents[2]
    readme = "".join(p.read_text() for p in [root / "README.md", *sorted((root / "docs").glob("*.md"))])
    examples = [tomllib.loads(b) for b in re.findall(r"```toml\n(.*?)```", readme, re.S) if "[judges." in b]
    assert len(examples) >= 2
    for example in examples:
        problems = []
        metrics = {spec.get("into", spec["metric"]) for spec in example["judges"].values()}
        for spec in example["judges"].values():
            if spec["metric"] == "dag":
                write_dag(tmp_path / spec["settings"]["dag"])
        judges = parse_judges(example["judges"], metrics, str(tmp_path / "campaign.toml"), problems)
        assert problems == [] and set(judges) == set(example["judges"])


def test_the_model_temperature_defaults_to_zero_and_embeddings_have_none(tmp_path):
    c = load(
        tmp_path,
        """
[judges.j]
library = "deepeval"
metric = "faithfulness"
model = { provider = "openai", name = "gpt-4.1", api_key_env = "K" }
""",
    )
    assert c.judges["j"].model.temperature == 0.0
    from calibrate.campaign.judge_settings import parse_judges

    problems = []
    judges = parse_judges(
        {
            "r": {
                "library": "ragas",
                "metric": "answer_relevancy",
                "model": {"provider": "openai", "name": "m", "temperature": 0.3},
                "embeddings": {"provider": "local", "name": "all-MiniLM-L6-v2"},
            }
        },
        {"answer_relevancy"},
        "campaign.toml",
        problems,
    )
    assert problems == [] and judges["r"].model.temperature == 0.3 and judges["r"].embeddings.temperature is None
