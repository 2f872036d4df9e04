"""What a judge is: the family a model name says, a model's cost and public record (no secret in it), the
fields a judge's metric reads and its public record."""

import pytest

from calibrate.campaign.judge_specs import CASE_FIELDS, SUPPORTED, JudgeSpec, ModelSpec, infer_family


def test_family_inference():
    assert infer_family("claude-3-5-sonnet") == "claude" and infer_family("qwen2.5-72b") == "qwen"
    assert infer_family("o3-mini") == "gpt" and infer_family("mixtral-8x7b") == "mistral"


@pytest.mark.parametrize(
    ("name", "family"),
    [
        ("meta-llama/Llama-3.3-70B-Instruct", "llama"),
        ("gpt-4.1-mini", "gpt"),
        ("openai/gpt-4o", "gpt"),
        ("my-gpt-clone", None),  # gpt only at the start of the name
        ("gemma-2-9b", "google"),
        ("deepseek-r1", "deepseek"),
        ("phi-3", "phi"),
        ("command-r", "cohere"),
        ("x", None),
    ],
)
def test_the_family_a_model_name_says(name, family):
    assert infer_family(name) == family


def test_a_models_cost_needs_a_price_and_tokens():
    priced = ModelSpec("openai", "m", price=(2.0, 8.0))
    assert priced.cost(1000, 500) == pytest.approx(0.006) and priced.cost(1000, None) == pytest.approx(0.002)
    assert priced.cost(None, 500) is None and ModelSpec("openai", "m").cost(1000, 500) is None


def test_a_models_public_record_leaves_out_what_is_unset_and_the_default_output():
    assert ModelSpec("openai", "m", api_key_env="K").public() == {
        "provider": "openai",
        "name": "m",
        "api_key_env": "K",
        "temperature": 0.0,
    }
    assert ModelSpec("openai", "m", structured_output="text").public()["structured_output"] == "text"


def judge(metric: str, **kwargs) -> JudgeSpec:
    return JudgeSpec("j", "deepeval", metric, "f", ModelSpec("openai", "gpt-4o"), "gpt", **kwargs)


def test_the_fields_a_judge_reads():
    assert judge("faithfulness").fields == SUPPORTED[("deepeval", "faithfulness")]["fields"]
    geval = judge("g_eval", settings={"evaluation_params": ["input", "expected_output"]})
    assert geval.fields == ("input", "expected_output")
    dag = {"nodes": {"a": {"type": "TaskNode", "evaluation_params": ["context", "input"]}}}
    assert judge("dag", dag=dag).fields == ("input", "context") and set(CASE_FIELDS) >= {"input", "context"}


def test_a_judges_public_record():
    plain = judge("faithfulness", settings={"threshold": 0.7}).public()
    assert plain == {
        "name": "j",
        "library": "deepeval",
        "metric": "faithfulness",
        "into": "f",
        "model": {"provider": "openai", "name": "gpt-4o", "temperature": 0.0},
        "family": "gpt",
        "settings": {"threshold": 0.7},
    }
    dag = {"nodes": {"id1": {"type": "VerdictNode", "verdict": True, "score": 1}}}
    with_dag = judge("dag", dag=dag, embeddings=ModelSpec("local", "all-MiniLM-L6-v2", temperature=None)).public()
    assert with_dag["dag_tree"] == [{"score": 1, "type": "VerdictNode", "verdict": True}]
    assert with_dag["embeddings"] == {"provider": "local", "name": "all-MiniLM-L6-v2"}
    assert judge("faithfulness").dag_tree is None
