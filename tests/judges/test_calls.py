"""Model calls under a run's limits: retried when worth it, counted, failures named; one client per
model over one session per endpoint (calibrate/judges/calls.py). Against the scripted judge server:
tests/judges/test_runner.py and tests/judges/test_structured.py."""

import asyncio

import pytest

from calibrate.base.http import HttpError
from calibrate.campaign.judge_specs import ModelSpec
from calibrate.judges.calls import (
    CallPolicy,
    ClientPool,
    JudgeCallError,
    NotSent,
    Usage,
    classify,
    endpoint_name,
    usage,
)

BUSY = HttpError("HTTP 503 from the server: busy", kind="status", status=503, retry_after=0.0)


def run(policy, make_call):
    spent = Usage()

    async def go():
        usage.set(spent)
        return await policy.call("openai:http://h/v1", make_call)

    return asyncio.run(go()), spent


def failing(*errors, then="ok"):
    left = list(errors)

    def make_call():
        async def call():
            if left:
                raise left.pop(0)
            return then

        return call()

    return make_call


def test_a_retryable_failure_is_retried_and_every_call_counted():
    result, spent = run(CallPolicy(retries=3, backoff_s=0), failing(BUSY, BUSY))
    assert result == "ok" and spent.calls == 3


def test_retries_run_out_with_the_status_in_the_summary():
    with pytest.raises(JudgeCallError) as failed:
        run(CallPolicy(retries=2, backoff_s=0), failing(BUSY, BUSY, BUSY))
    assert str(failed.value) == "HTTP 503 from the server: busy after 3 attempts"
    assert failed.value.summary == "HTTP 503 from the server after 3 attempts"
    assert failed.value.endpoint == "openai:http://h/v1" and not failed.value.connection


def test_a_failure_not_worth_retrying_fails_at_once():
    calls = []

    def make_call():
        calls.append(1)

        async def call():
            raise ValueError("the reply made no sense")

        return call()

    with pytest.raises(JudgeCallError, match="ValueError: the reply made no sense"):
        run(CallPolicy(retries=5), make_call)
    assert len(calls) == 1
    refused = HttpError("nowhere", kind="connect", reason="refused")
    with pytest.raises(JudgeCallError) as unreachable:
        run(CallPolicy(retries=0), failing(refused))
    assert unreachable.value.connection


def test_a_slow_reply_times_out_and_is_retried():
    async def slow():
        await asyncio.sleep(5)

    attempts = []

    def make_call():
        attempts.append(1)
        return slow() if len(attempts) == 1 else failing()()

    result, spent = run(CallPolicy(timeout_s=0.05, retries=1, backoff_s=0), make_call)
    assert result == "ok" and spent.calls == 2


def test_a_call_not_sent_raises_its_own_error_uncounted():
    def make_call():
        raise NotSent(JudgeCallError("the endpoint refuses json_schema"))

    with pytest.raises(JudgeCallError, match="refuses json_schema"):
        run(CallPolicy(), make_call)


def test_the_wait_before_a_retry():
    policy = CallPolicy(backoff_s=0.5, max_backoff_s=4)
    assert policy.delay(1, 2.5) == 2.5 and policy.delay(1, 100) == 4  # Retry-After, within the cap
    assert all(0 <= policy.delay(3, None) <= 2 for _ in range(50))  # full jitter up to 0.5 * 2**2
    assert all(policy.delay(10, None) <= 4 for _ in range(50))


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (TimeoutError(), (True, None, "no reply within 60 s")),
        (HttpError("x", kind="timeout"), (True, None, "no reply within 60 s")),
        (HttpError("x", kind="connect", reason="refused"), (True, None, "connection failed: refused")),
        (HttpError("busy", kind="status", status=429, retry_after=3.0), (True, 3.0, "busy")),
        (HttpError("bad key", kind="status", status=401), (False, None, "bad key")),
        (HttpError("x", kind="redirect"), (False, None, "x")),
        (KeyError("k"), (False, None, "KeyError: 'k'")),
    ],
)
def test_each_failure_is_classified(error, expected):
    assert classify(error, 60) == expected


def test_usage_adds_what_each_call_reports():
    spent = Usage()
    spent.add_tokens(10, None)
    spent.add_tokens(5, 7, 0.01)
    assert (spent.prompt_tokens, spent.completion_tokens, spent.cost) == (15, 7, 0.01)
    assert Usage().prompt_tokens is None


def test_a_call_error_never_shows_a_credential():
    key = "sk-" + "z1x2c3v4b5n6" * 4
    error = JudgeCallError(f"401 for {key}", summary=f"refused {key}")
    assert key not in str(error) and key not in error.summary


def test_one_client_per_model_over_one_session_per_endpoint():
    pool = ClientPool()
    a = pool(ModelSpec("openai", "gpt-4.1", base_url="http://127.0.0.1:8000/v1"))
    b = pool(ModelSpec("openai", "llama-3.3-70b", base_url="http://127.0.0.1:8000/v1", temperature=0.7))
    c = pool(ModelSpec("anthropic", "claude-3-5-haiku"))
    assert (a.body("hi")["model"], b.body("hi")["model"], b.body("hi")["temperature"]) == (
        "gpt-4.1",
        "llama-3.3-70b",
        0.7,
    )
    assert a._session is b._session and c._session is not a._session and pool(a.spec) is a
    assert endpoint_name(a.spec) == "openai:http://127.0.0.1:8000/v1"
    assert endpoint_name(c.spec).startswith("anthropic:https://")
    assert pool.modes(ModelSpec("openai", "never-called")) is None
    with pytest.raises(JudgeCallError, match="no client for provider 'cohere'"):
        pool(ModelSpec("cohere", "command-r"))
    asyncio.run(pool.close())
