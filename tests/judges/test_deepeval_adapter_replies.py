"""Issue 24: a judge's G-Eval reply with logprobs is read through its declared shape. Whatever the model
server puts in the reply's content or logprobs, deciding whether DeepEval can weight the score by the
token probabilities gives a reason or None, never an exception: an AttributeError made DeepEval silently
call the model again without the note, a TypeError or RecursionError failed the rating with a traceback's
words."""

import json
import math

from hypothesis import given, settings
from hypothesis import strategies as st

from calibrate.judges.logprobs import weigh
from tests.servers.judge_server import logprobs

CONTENT = '{"score": 8, "reason": "fine"}'


def why_not(reply: dict) -> str | None:
    """Why the reply's score cannot be weighted (None: it can)."""
    return weigh(reply).why_not


def reply(content=CONTENT, probs=None) -> dict:
    return {
        "id": "x",
        "object": "chat.completion",
        "created": 0,
        "model": "m",
        "choices": [
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {"role": "assistant", "content": content},
                "logprobs": logprobs(content, 5) if probs is None else probs,
            }
        ],
    }


def test_a_sound_reply_can_be_weighted_and_the_reasons_it_cannot():
    assert why_not(reply()) is None
    assert why_not(reply(probs={"content": []})) == "the server returned no logprobs for the score token"
    assert why_not(reply(content="no JSON here")) == "the reply holds no score"


def test_the_replies_that_raised_before():
    deep = '{"score": ' + "[" * 5000 + "]" * 5000 + "}"
    cases = [
        reply(content=deep),  # RecursionError
        reply(probs={"content": "8"}),  # AttributeError: 'str'.get
        reply(probs={"content": [None, 8]}),  # AttributeError
        reply(probs={"content": [{"token": "8", "top_logprobs": [{"token": "8", "logprob": "high"}]}]}),  # TypeError
        reply(probs={"content": [{"token": "8", "top_logprobs": [3]}]}),  # AttributeError
        reply(probs={"content": [{"token": "8", "top_logprobs": {"a": 1}}]}),
    ]
    for case in cases:
        assert isinstance(why_not(case), str)


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-5, 12)
    | st.floats()
    | st.text(max_size=6)
    | st.sampled_from(["8", "7", "9"]),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(["token", "logprob", "top_logprobs", "content", "score", "x"]), inner, max_size=3
        )
    ),
    max_leaves=12,
)


@settings(max_examples=500, deadline=None)
@given(
    content=st.none() | st.text(max_size=40) | json_values.map(json.dumps),
    probs=json_values,
    where=st.sampled_from(["probs", "tokens", "token", "top"]),
)
def test_any_reply_gives_a_reason_or_none(content, probs, where):
    whole = reply(CONTENT if content is None else content, logprobs(CONTENT, 5))
    good = whole["choices"][0]["logprobs"]["content"]
    at = next(i for i, token in enumerate(good) if token["token"] == "8")  # the score token
    if where == "probs":
        whole["choices"][0]["logprobs"] = probs
    elif where == "tokens":
        whole["choices"][0]["logprobs"]["content"] = probs
    elif where == "token":
        good[at] = probs
    else:
        good[at]["top_logprobs"] = probs
    why = why_not(whole)
    assert why is None or isinstance(why, str)
    if why is None:  # weighted only where DeepEval can: some alternative of the score token is a likely integer
        assert any(
            isinstance(t, dict)
            and str(t.get("token", "")).isdecimal()
            and isinstance(t.get("logprob"), (int, float))
            and t["logprob"] >= math.log(0.01)
            for token in whole["choices"][0]["logprobs"]["content"]
            if isinstance(token, dict)
            for t in (token.get("top_logprobs") or [])
            if isinstance(token.get("top_logprobs"), list)
        )
