"""G-Eval's score weighted by the probabilities of the tokens that write it.

G-Eval asks for an integer score (0-10 at most, DeepEval's rubric bounds) and, with logprobs, reads the
score as the expectation over the alternatives the model weighed for it. DeepEval's own rule
(``deepeval.metrics.g_eval.utils.calculate_weighted_summed_score``) looks for the *last* token of the
reply whose text equals the score and takes the alternatives at that position (its ``top_logprobs``)
that are decimal integers with a probability of at least 1%, each counting as ``int(token)``, their
probabilities summed per integer and normalised to 1; when no token equals the score, or no alternative
is left, it keeps the raw score, unweighted and unsaid.

A tokenizer that writes numbers digit by digit (Qwen, Llama 2, Mistral, SmolLM) writes 10 as two
tokens, ``"1"`` and ``"0"``, so DeepEval finds no token equal to 10 and keeps the raw 10. Calibrate
weights such a score itself (:func:`weigh`), by the same rule extended over the two positions:

- the first digit's alternatives (the ``top_logprobs`` of the ``"1"`` token), filtered as DeepEval
  filters them (decimal, probability of at least 1%), give ``P(first)``;
- the second position's alternatives (the ``top_logprobs`` of the ``"0"`` token, which the model
  weighed *after writing "1"*), filtered the same way (probability of at least 1%), split the first
  digit's ``"1"``: a token starting with ``"0"`` and holding no other digit continues it to 10, a token
  that does not start with a digit ends the number at 1, another digit (11-19: outside every G-Eval
  scale) is dropped. With ``q`` the share of "continues" among "continues" and "ends",
  ``P(10) = P("1") * q`` and ``P(1) = P("1") * (1 - q)``;
- every other first-digit alternative ``d`` counts as ``d`` (as in DeepEval's rule), and the weighted
  score is ``sum(s * P(s)) / sum(P(s))``.

A score written as one token is weighted by DeepEval's rule exactly, so that calibrate's number equals
DeepEval's there (tested against DeepEval's function). That rule's limit stays: under a digit-by-digit
tokenizer, a ``"1"`` among the alternatives of a one-digit score counts as 1, though the model may have
meant the first digit of 10 (the probability of its continuation was never asked for), which pulls high
scores down. A score spelled over tokens in any other way (``"7.5"``, a space inside a token) is not
weighted, and the rating says why.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from pydantic import ConfigDict, Field, JsonValue

from calibrate.base.documents import DocumentError, Schema, parse_json
from calibrate.base.documents import check as check_document
from calibrate.judges.replies import json_text

__all__ = ["MIN_PROBABILITY", "SCORE_TOKEN", "SPLIT_TEN", "LogprobReply", "TokenLogprob", "Weighting", "weigh"]

#: DeepEval's floor: an alternative less likely than this is left out
MIN_PROBABILITY = 0.01
#: how a score was weighted (``details.logprob_weighting``)
SCORE_TOKEN = "score token"
SPLIT_TEN = "10 as '1','0': first digit's alternatives, and after '1' the probability of '0'"


class _Message(Schema):
    content: str


class _Choice(Schema):
    message: _Message
    logprobs: JsonValue = None


class LogprobReply(Schema):
    """The parts of an OpenAI chat completion that tell whether a score can be weighted by its logprobs."""

    choices: list[_Choice] = Field(min_length=1)


class _Logprobs(Schema):
    content: list[JsonValue]


class TokenLogprob(Schema):
    """One token of a reply's ``logprobs.content``, with its ``top_logprobs`` alternatives."""

    model_config = ConfigDict(strict=True)
    token: str
    logprob: float | None = None
    top_logprobs: list[JsonValue] | None = None


class _Scored(Schema):
    score: JsonValue


@dataclass(frozen=True)
class Weighting:
    """What the logprobs of a G-Eval reply make of its score: the raw ``score`` the reply holds (None: none),
    the probability-``weighted`` score (None: not weighted), ``how`` it was weighted (:data:`SCORE_TOKEN`,
    :data:`SPLIT_TEN`), or ``why_not``."""

    score: Any = None
    weighted: float | None = None
    how: str | None = None
    why_not: str | None = None


def _read(value: Any, schema: Any) -> Any:
    """``value`` as ``schema``, or None when it is not one (a part that cannot be used)."""
    return check_document(value, schema, source="the judge's reply", expected="an OpenAI chat completion")[0]


def _alternatives(token: TokenLogprob) -> list[tuple[str, float]] | str:
    """(text, probability) of a token's alternatives of at least :data:`MIN_PROBABILITY`, or why they cannot
    be used."""
    found = []
    for item in token.top_logprobs or []:
        alternative = _read(item, TokenLogprob)
        if alternative is None or alternative.logprob is None:
            continue
        if not math.isfinite(alternative.logprob):
            if alternative.logprob == -math.inf:
                continue  # probability 0
            return f"an alternative of the score token {token.token!r} has logprob {alternative.logprob}"
        if alternative.logprob >= math.log(MIN_PROBABILITY):
            found.append((alternative.token, math.exp(alternative.logprob)))
    return found


def _expectation(probabilities: dict[int, float]) -> float | None:
    total = sum(probabilities.values())
    return sum(score * p for score, p in probabilities.items()) / total if total > 0 else None


def _first_digits(token: TokenLogprob) -> dict[int, float] | str:
    """The integer alternatives of a score's (first) token, by DeepEval's rule: decimal, summed per integer."""
    alternatives = _alternatives(token)
    if isinstance(alternatives, str):
        return alternatives
    probabilities: dict[int, float] = {}
    for text, p in alternatives:
        if text.isdecimal():
            probabilities[int(text)] = probabilities.get(int(text), 0.0) + p
    return probabilities


def _weigh_one(score: Any, token: TokenLogprob) -> Weighting:
    probabilities = _first_digits(token)
    if isinstance(probabilities, str):
        return Weighting(score, why_not=probabilities)
    weighted = _expectation(probabilities)
    if weighted is None:
        return Weighting(score, why_not="the score token has no usable alternatives")
    return Weighting(score, weighted, SCORE_TOKEN)


def _weigh_ten(first: TokenLogprob, second: TokenLogprob) -> Weighting:
    probabilities = _first_digits(first)
    if isinstance(probabilities, str):
        return Weighting(10, why_not=probabilities)
    after_one = _alternatives(second)
    if isinstance(after_one, str):
        return Weighting(10, why_not=after_one)
    continues = sum(p for text, p in after_one if text[:1] == "0" and not any(c.isdecimal() for c in text[1:]))
    ends = sum(p for text, p in after_one if not text[:1].isdecimal())
    if continues + ends <= 0:
        return Weighting(10, why_not="the token after the score's '1' has no usable alternatives")
    q = continues / (continues + ends)
    one = probabilities.pop(1, 0.0)
    if one:
        probabilities[1] = one * (1 - q)
        probabilities[10] = probabilities.get(10, 0.0) + one * q
    weighted = _expectation(probabilities)
    if weighted is None:
        return Weighting(10, why_not="the score's first token has no usable alternatives")
    return Weighting(10, weighted, SPLIT_TEN)


def weigh(reply: Any) -> Weighting:
    """The score of a G-Eval reply (an OpenAI chat completion as JSON values, with ``logprobs``) weighted by
    its tokens' probabilities, or why it cannot be (the rule: the module's docstring). The reply is read
    through its declared parts (:class:`LogprobReply`, :class:`TokenLogprob`): a part of another shape is a
    reason, never an exception.

    Examples
    --------
    >>> def alternatives(pairs):
    ...     return [{"token": t, "logprob": math.log(p)} for t, p in pairs]
    >>> def reply(tokens):
    ...     content = "".join(t["token"] for t in tokens)
    ...     return {"choices": [{"message": {"content": content}, "logprobs": {"content": tokens}}]}
    >>> one = [{"token": '{"score": '}, {"token": "8", "top_logprobs": alternatives([("8", 0.6), ("7", 0.4)])},
    ...        {"token": "}"}]
    >>> found = weigh(reply(one))
    >>> round(found.weighted, 6), found.how
    (7.6, 'score token')
    >>> ten = [{"token": '{"score": '}, {"token": "1", "top_logprobs": alternatives([("1", 0.8), ("9", 0.2)])},
    ...        {"token": "0", "top_logprobs": alternatives([("0", 0.75), ("}", 0.25)])}, {"token": "}"}]
    >>> found = weigh(reply(ten))   # P(10) = 0.8 * 0.75, P(1) = 0.8 * 0.25, P(9) = 0.2
    >>> round(found.weighted, 6), found.how == SPLIT_TEN
    (8.0, True)
    >>> weigh(reply(one[:1] + [{"token": "8"}, {"token": "}"}])).why_not
    'the score token has no usable alternatives'
    """
    whole = _read(reply, LogprobReply)
    if whole is None:
        return Weighting(why_not="the reply holds no score")
    try:
        score = parse_json(
            json_text(whole.choices[0].message.content),
            _Scored,
            source="the judge's reply",
            expected="a JSON object with a score",
        ).score
    except DocumentError:
        return Weighting(why_not="the reply holds no score")
    probabilities = _read(whole.choices[0].logprobs, _Logprobs)
    tokens = (
        [t for t in (_read(item, TokenLogprob) for item in probabilities.content) if t is not None]
        if probabilities is not None
        else []
    )
    wanted = str(score)
    for token in reversed(tokens):  # DeepEval's rule: the last token equal to the score
        if token.token == wanted:
            return _weigh_one(score, token)
    for at in range(len(tokens) - 2, -1, -1):  # the score over two tokens: the last such pair
        if tokens[at].token + tokens[at + 1].token == wanted:
            if wanted == "10" and tokens[at].token == "1":
                return _weigh_ten(tokens[at], tokens[at + 1])
            return Weighting(
                score,
                why_not=f"the score {wanted} is written as the tokens {tokens[at].token!r}, "
                f"{tokens[at + 1].token!r}: only 10 written '1','0' is weighted "
                f"over two tokens",
            )
    if not isinstance(score, int) or isinstance(score, bool):
        return Weighting(score, why_not=f"the score {wanted} is not an integer written as one token or as '1','0'")
    return Weighting(score, why_not="the server returned no logprobs for the score token")
