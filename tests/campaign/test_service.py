"""The HTTP contract of a RAG service from ``[service]`` (calibrate/campaign/service.py)."""

import pytest

from calibrate.base.errors import CampaignError
from calibrate.campaign.service import ContractError, ServiceContract, load_contract, parse_service

TOML = """
name = "rag"
[metrics.faithfulness]
scale = "binary"
[service]
url = "https://rag.internal/api/ask"
method = "post"
headers = { Authorization = "Bearer ${RAG_TOKEN_FOR_TEST}" }
body = { query = "{input}", top_k = 5, topic = "{metadata[topic]}", ids = "{context_ids}" }
answer = "data.answer"
contexts = "data.chunks[*].text"
context_ids = "data.chunks[*].id"
timeout_s = 5
"""


@pytest.fixture
def contract(tmp_path) -> ServiceContract:
    (tmp_path / "campaign.toml").write_text(TOML)
    return load_contract(tmp_path)


def test_the_contract_is_read_from_campaign_toml(contract):
    assert (contract.url, contract.method, contract.timeout_s) == ("https://rag.internal/api/ask", "POST", 5.0)
    assert contract.masked_headers() == {"Authorization": "Bearer ${RAG_TOKEN_FOR_TEST}"}


def test_headers_take_their_secrets_from_the_environment_only_when_sent(contract, monkeypatch):
    monkeypatch.delenv("RAG_TOKEN_FOR_TEST", raising=False)
    with pytest.raises(
        ValueError, match="service header Authorization: the environment variable RAG_TOKEN_FOR_TEST is not set"
    ):
        contract.header_values()
    monkeypatch.setenv("RAG_TOKEN_FOR_TEST", "s3cret")
    assert contract.header_values() == {"Authorization": "Bearer s3cret"}
    assert "s3cret" not in repr(contract.masked_headers())


def test_the_body_is_filled_from_the_golden_a_whole_field_keeping_its_type(contract):
    golden = {"input": 'say "hi"\n', "metadata": {"topic": "tax"}, "context_ids": [3, 4]}
    assert contract.render(golden) == {"query": 'say "hi"\n', "top_k": 5, "topic": "tax", "ids": [3, 4]}
    with pytest.raises(
        ContractError, match=r"asks for \{context_ids\}, which the golden does not have \(it has input, metadata\)"
    ):
        contract.render({"input": "q", "metadata": {"topic": "x"}})
    with pytest.raises(ContractError, match="cannot be filled from the golden"):
        contract.render({"input": "q", "context_ids": [], "metadata": {}})


def test_a_reply_gives_the_answer_the_contexts_and_their_ids(contract):
    reply = {"data": {"answer": "Paris.", "chunks": [{"id": 7, "text": "Paris is..."}, {"id": "b", "text": "France"}]}}
    assert contract.extract(reply) == ("Paris.", ["Paris is...", "France"], ["7", "b"])


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        ({"error": "down"}, "no answer at 'data.answer': found nothing (reply keys: error)"),
        ({"data": {"answer": 3}}, "no answer at 'data.answer': found a int"),
        ({"data": {"answer": "a", "chunks": [{"text": 1}]}}, "expected a list of strings, found a list holding int"),
        ({"data": {"answer": "a"}}, "expected a list of strings, found nothing"),
        (
            {"data": {"answer": "a", "chunks": [{"text": "t"}]}},
            "expected a list as long as the contexts (1), found []",
        ),
    ],
)
def test_a_reply_that_does_not_fit_names_what_is_missing(contract, reply, message):
    with pytest.raises(ContractError) as refused:
        contract.extract(reply)
    assert message in str(refused.value)


def test_every_problem_of_the_table_is_named():
    problems = []
    assert (
        parse_service({"url": "ftp://x", "method": "PUT", "answer": "a[", "contexts": "c"}, "c.toml", problems) is None
    )
    assert [(p.field, p.message.split(":")[0]) for p in problems] == [
        ("service.url", "the service needs an http(s) URL"),
        ("service.method", "unsupported method"),
        ("service.answer", "not a valid JMESPath expression"),
    ]
    assert parse_service(None, "c.toml", problems) is None


def test_a_folder_without_a_service_says_what_to_declare(tmp_path):
    with pytest.raises(CampaignError, match=r"no campaign\.toml in the campaign folder"):
        load_contract(tmp_path)
    (tmp_path / "campaign.toml").write_text('name = "x"\n[metrics.f]\nscale = "binary"\n')
    with pytest.raises(CampaignError, match=r"no \[service\] table: declare the RAG service's HTTP contract"):
        load_contract(tmp_path)
