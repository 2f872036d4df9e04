"""G-Eval's score weighted by its tokens' probabilities (calibrate/judges/logprobs.py): for a score of one
token, exactly DeepEval's number; for a 10 written as "1", "0" (Qwen's tokenizer), calibrate's rule; for
anything else, a reason, never a silent raw score."""

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calibrate.judges.logprobs import SCORE_TOKEN, SPLIT_TEN, weigh
from tests.judges.test_deepeval_adapter_replies import reply as chat_completion

DIGITS = [str(d) for d in range(11)]


def reply(tokens: list[dict]) -> dict:
    """A chat completion whose content is its tokens' text."""
    content = "".join(t["token"] for t in tokens)
    probs = {"content": [{"logprob": 0.0, "bytes": None, "top_logprobs": [], **t} for t in tokens]}
    return chat_completion(content, probs)


def alternatives(pairs) -> list[dict]:
    return [{"token": t, "logprob": lp, "bytes": None} for t, lp in pairs]


def scored(score_tokens: list[dict], reason: str = "fine") -> list[dict]:
    return [
        {"token": '{"reason": '},
        {"token": json.dumps(reason)},
        {"token": ', "score": '},
        *score_tokens,
        {"token": "}"},
    ]


logprob = st.one_of(st.floats(-12, 0), st.sampled_from([0.0, math.log(0.01), math.log(0.0099), -math.inf]))
alternative_text = st.one_of(st.sampled_from(DIGITS + ["}", " ", "a", "07", "٣", "1.5", "-1"]), st.text(max_size=3))


@settings(max_examples=400, deadline=None)
@given(
    score=st.integers(0, 10),
    pairs=st.lists(st.tuples(alternative_text, logprob), max_size=8),
    reason=st.sampled_from(["fine", "8 of 10", "it is 7"]),
)
def test_a_one_token_score_is_weighted_exactly_as_deepeval_weights_it(score, pairs, reason):
    from deepeval.metrics.g_eval.utils import calculate_weighted_summed_score
    from openai.types.chat import ChatCompletion

    whole = reply(scored([{"token": str(score), "top_logprobs": alternatives(pairs)}], reason))
    theirs = calculate_weighted_summed_score(score, ChatCompletion.model_validate(whole))
    ours = weigh(whole)
    assert ours.score == score
    if ours.weighted is None:  # DeepEval keeps the raw score exactly when calibrate says why it cannot weigh
        assert theirs == score and ours.why_not == "the score token has no usable alternatives"
    else:
        assert ours.how == SCORE_TOKEN and ours.weighted == pytest.approx(theirs, rel=1e-12, abs=1e-12)


def test_a_ten_written_as_two_tokens():
    first = alternatives([("1", math.log(0.7)), ("9", math.log(0.2)), ("8", math.log(0.1)), ("x", math.log(0.5))])
    after_one = alternatives(
        [
            ("0", math.log(0.6)),
            ("}", math.log(0.2)),
            ("5", math.log(0.15)),  # 15: dropped
            (",", math.log(0.005)),
        ]
    )  # under 1%: dropped
    found = weigh(reply(scored([{"token": "1", "top_logprobs": first}, {"token": "0", "top_logprobs": after_one}])))
    q = 0.6 / (0.6 + 0.2)
    assert found.how == SPLIT_TEN and found.score == 10 and found.why_not is None
    assert found.weighted == pytest.approx((10 * 0.7 * q + 1 * 0.7 * (1 - q) + 9 * 0.2 + 8 * 0.1) / 1.0)
    # DeepEval finds no token "10" and keeps the raw score
    from deepeval.metrics.g_eval.utils import calculate_weighted_summed_score
    from openai.types.chat import ChatCompletion

    with pytest.raises(AttributeError):  # its callers catch this and keep the raw 10
        calculate_weighted_summed_score(
            10,
            ChatCompletion.model_validate(
                reply(scored([{"token": "1", "top_logprobs": first}, {"token": "0", "top_logprobs": after_one}]))
            ),
        )


@pytest.mark.parametrize(
    "tokens, why",
    [
        (
            [{"token": "1", "top_logprobs": alternatives([("1", 0.0)])}, {"token": "0", "top_logprobs": []}],
            "the token after the score's '1' has no usable alternatives",
        ),
        (
            [{"token": "1", "top_logprobs": []}, {"token": "0", "top_logprobs": alternatives([("0", 0.0)])}],
            "the score's first token has no usable alternatives",
        ),
        ([{"token": "1"}, {"token": "0"}], "the token after the score's '1' has no usable alternatives"),
        ([{"token": "7"}, {"token": ".5"}], "the score 7.5 is written as the tokens '7', '.5'"),
        ([{"token": "7"}, {"token": "."}, {"token": "5"}], "the score 7.5 is not an integer"),
        ([{"token": " 8"}], "the server returned no logprobs for the score token"),
    ],
)
def test_a_score_that_cannot_be_weighted_says_why(tokens, why):
    found = weigh(reply(scored(tokens)))
    assert found.weighted is None and found.how is None and found.why_not.startswith(why)


@settings(max_examples=300, deadline=None)
@given(
    first=st.lists(st.tuples(alternative_text, logprob), max_size=6),
    second=st.lists(st.tuples(alternative_text, logprob), max_size=6),
)
def test_a_split_ten_is_a_weighted_score_within_the_alternatives_or_a_reason(first, second):
    found = weigh(
        reply(
            scored(
                [
                    {"token": "1", "top_logprobs": alternatives(first)},
                    {"token": "0", "top_logprobs": alternatives(second)},
                ]
            )
        )
    )
    assert (found.weighted is None) != (found.why_not is None)
    if found.weighted is not None:
        scores = {int(t) for t, lp in first if t.isdecimal() and lp >= math.log(0.01)} | {10}
        assert min(scores) - 1e-9 <= found.weighted <= max(scores) + 1e-9
