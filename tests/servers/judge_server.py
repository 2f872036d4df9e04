"""A scripted OpenAI-compatible judge server on 127.0.0.1 for the tests.

No model can be reached from here, so this server answers the real prompts DeepEval and RAGAS send,
deterministically from the case text: the claims of an answer are its sentences, the truths of a
context are its sentences, and a claim is supported ("yes") when its words appear in the context.
Its ``/embeddings`` endpoint embeds a text as its hashed bag of words (unit length), so that texts
sharing words are similar.

The model name matters, as it does behind a gateway or a vLLM server hosting several models: each
model answers as the *persona* its name names (see :data:`PERSONAS`; a name naming none is
``careful``), so two judges on one endpoint give different, predictable scores, every request is
counted under the model it named (``server.by_model``), and a server started with ``models=`` refuses
any other name with a 404, as OpenAI and vLLM do. A persona changes the yes/no verdicts the careful
judge would give (supported, relevant, useful, attributed, committal) and G-Eval's score; extractions
(claims, truths, statements) and reasons are the same for every model.
Faults are injected by marker: a prompt containing a marker gets the fault for the next ``times``
requests (429 with Retry-After, 500, a reply slower than the timeout, a dropped connection,
malformed JSON, an answer whose lists are all empty, a 401 whose body quotes the API key sent:
``echo-key``; ``cut``: the answer's JSON cut in the middle, as a model stopped at ``max_tokens`` leaves it,
with ``finish_reason`` "length" (``stop_reason`` "max_tokens" on ``/v1/messages``)). A server started with
``digits=True`` writes numbers digit by digit in its logprobs, as Qwen's tokenizer does (see :func:`logprobs`).

Structured output: a request may carry ``response_format`` ``{"type": "json_schema", "json_schema":
{"name", "schema", "strict"}}`` (or, to ``/v1/messages``, Anthropic's ``output_config.format``); the
server records it (``seen``: ``response_format``, ``schema``) and counts in ``counts["schema_mismatch"]``
every answer whose keys the schema does not declare, or that lacks a key it requires (the schema is not
the metric's own). A server started with ``refuse={"json_schema", "json_object"}`` refuses those modes
with a 400 naming ``response_format`` (as an older llama.cpp or vLLM does; ``output_config`` on
``/v1/messages``), counted in ``counts["refused_json_schema"]`` and ``counts["refused_json_object"]``.
"""

from __future__ import annotations

import ast
import json
import math
import random
import re
import sys
import threading
import time
import zlib
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

CLAIMS = (
    "please extract a comprehensive list of FACTUAL, undisputed truths, "
    "that can inferred from the provided actual AI output"
)
TRUTHS = 'with the "truths" key as a list of strings'
VERDICTS = "indicate whether EACH claim contradicts any facts in the retrieval context"
STATEMENTS = "breakdown and generate a list of statements presented"
RELEVANT_STATEMENTS = "determine whether each statement is relevant to address the input"
PRECISION = "was remotely useful in arriving at the expected output"
RECALL = "can be attributed to the nodes of retrieval contexts"
CONTEXT_RELEVANCY = "is relevant to the provided input"
G_EVAL_STEPS = 'with the "steps" key as a list of strings'
G_EVAL_RESULTS = "return a JSON object with two fields"
G_EVAL_STRICT = "that is STRICTLY EITHER 1"
DAG_TASK = "with the 'output' key as the output from the instructions"
DAG_BINARY = "`verdict` (true or false)"
DAG_NON_BINARY = "only return a json with two keys: 'verdict' ["
DAG_REASON = "Given the metric name, the score of that metric, and the DAG traversal"
PROMPTFOO_RUBRIC = "</Output>\n<Rubric>\n"  # promptfoo's llm-rubric: the output, then the rubric
#: G-Eval: the probability of the score s given in the reply, and of its neighbours
SCORE_PROBABILITIES = {0: 0.6, -1: 0.25, +1: 0.15}
REASONS = (
    "Faithfulness Score:",
    "Answer Relevancy Score:",
    "Contextual Precision Score:",
    "Contextual Recall Score:",
    "Contextual Relevancy Score:",
)
STOPWORDS = {"this", "that", "with", "from", "what", "which", "have", "there", "their", "about", "does", "into"}

#: persona -> what a model of that persona does to the careful judge's verdicts (the first persona whose
#: name is in the model name wins; none: careful)
PERSONAS = {
    "careful": "every verdict as a careful judge gives it: a claim is supported when its words are in the context",
    "lenient": "every verdict positive: it passes everything",
    "strict": "all or nothing: when any item of a prompt is negative, every item is",
    "contrarian": "every verdict inverted",
    "numbers": "inverts the verdict on any item holding a digit, judges the others carefully",
    "noisy": f"flips each verdict with probability {0.2}, by a hash of the model name and the item",
    "verbose": "favours long answers: every verdict positive when the items of a prompt hold 20 words or more",
    "flaky": f"flips each verdict with probability {0.3} at random, afresh on every request (temperature above 0)",
}
NOISE = 0.2
LONG_WORDS = 20


def persona_of(model: str) -> str:
    """The persona a model name names.

    >>> persona_of("gpt-lenient"), persona_of("llama-3-scripted")
    ('lenient', 'careful')
    """
    return next((p for p in PERSONAS if p in model.lower()), "careful")


FLAKY = 0.3


class Judge:
    """How one model decides, from the verdicts and scores a careful judge would give; ``persona`` names
    its behaviour where a server's alias maps the model name to another one."""

    def __init__(self, model: str = "careful", persona: str | None = None):
        self.model, self.persona = model, persona or persona_of(model)

    def inverts(self, item: str) -> bool:
        """Whether this model turns the careful verdict on ``item`` around."""
        return (
            self.persona == "contrarian"
            or (self.persona == "numbers" and bool(re.search(r"\d", item)))
            or (self.persona == "noisy" and zlib.crc32(f"{self.model}|{item}".encode()) / 2**32 < NOISE)
            or (self.persona == "flaky" and random.random() < FLAKY)
        )

    def verdicts(self, careful: list[bool], items: list[str]) -> list[bool]:
        """The verdicts on the items of one prompt (claims, statements, chunks), ``careful`` the careful ones."""
        if self.persona == "lenient" or (
            self.persona == "verbose" and sum(len(i.split()) for i in items) >= LONG_WORDS
        ):
            return [True] * len(careful)
        if self.persona == "strict":
            return [all(careful)] * len(careful)
        return [ok != self.inverts(item) for ok, item in zip(careful, items)]

    def verdict(self, careful: bool, item: str) -> bool:
        return self.verdicts([careful], [item])[0]

    def score(self, careful: int, text: str) -> int:
        """G-Eval's 0-10 score of ``text`` (the actual output), from the careful judge's."""
        if self.persona == "strict":
            return 10 if careful == 10 else 0
        if self.persona == "lenient" or (self.persona == "verbose" and len(text.split()) >= LONG_WORDS):
            return 10
        return 10 - careful if self.inverts(text) else careful


CAREFUL = Judge()


def sentences(text: str) -> list[str]:
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+", text.strip()) if s.strip()]


def normalise(text: str) -> str:
    return " ".join(re.sub(r"[^a-z0-9 ]", " ", text.lower()).split())


def words(text: str) -> set[str]:
    return {w for w in normalise(text).split() if len(w) >= 4 and w not in STOPWORDS}


def section(prompt: str, start: str, end: str) -> str:
    """The text between the last ``start`` (after the template's examples) and the next ``end``."""
    after = prompt.rsplit(start, 1)[1]
    return after.split(end, 1)[0].strip() if end in after else after.strip()


def nodes(text: str) -> list[str]:
    """A list DeepEval rendered into the prompt (a Python list literal), or one text."""
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return [text]
    return [str(v) for v in value] if isinstance(value, list) else [str(value)]


def verdict(ok: bool, why: str, **extra) -> dict:
    return {**extra, "verdict": "yes" if ok else "no", "reason": why if not ok else "It does."}


def verdict_list(judge: Judge, careful: list[bool], items: list[str], why: str, **extra) -> list[dict]:
    """DeepEval's verdicts on ``items``, as ``judge`` gives them; ``why`` is formatted with the item."""
    return [
        verdict(ok, why.format(item), **({k: item for k in extra}))
        for ok, item in zip(judge.verdicts(careful, items), items)
    ]


RAGAS_SCHEMA = "as specified in JSON Schema:\n"
NONCOMMITTAL = ("i don't know", "not sure", "cannot answer")
DIMENSIONS = 256
COST_PER_CALL = 0.00125


def embed(text: str) -> list[float]:
    """A text's hashed bag of words, unit length (all zeros but one for a text without words)."""
    vector = [0.0] * DIMENSIONS
    for word in normalise(text).split():
        vector[zlib.crc32(word.encode()) % DIMENSIONS] += 1.0
    norm = sum(x * x for x in vector) ** 0.5
    return [x / norm for x in vector] if norm else [1.0] + [0.0] * (DIMENSIONS - 1)


def ragas_answer(prompt: str, judge: Judge = CAREFUL) -> dict:
    """The JSON ``judge`` gives to one of RAGAS's prompts (collections and legacy): the output model is
    named by the schema's title, the case by the JSON after the last ``input:``."""
    title = json.loads(prompt.split(RAGAS_SCHEMA, 1)[1].split("Do not use single quotes", 1)[0])["title"]
    given = json.loads(prompt.rsplit("\ninput: ", 1)[1].rsplit("\nOutput:", 1)[0])
    if title == "StatementGeneratorOutput":
        return {"statements": sentences(given["answer"])}
    if title == "NLIStatementOutput":
        context, statements = normalise(given["context"]), given["statements"]
        supported = judge.verdicts([normalise(s) in context for s in statements], statements)
        return {
            "statements": [
                {"statement": s, "verdict": int(ok), "reason": "In the context." if ok else "Not in the context."}
                for s, ok in zip(statements, supported)
            ]
        }
    if title == "AnswerRelevanceOutput":
        response = given["response"]
        committal = judge.verdict(not any(phrase in response.lower() for phrase in NONCOMMITTAL), response)
        return {"question": response.rstrip(".") + "?", "noncommittal": int(not committal)}
    if title in ("ContextPrecisionOutput", "Verification"):  # a context is useful when most of its words are
        context, reference = words(given["context"]), words(given["answer"])  # in the reference answer
        useful = judge.verdict(len(context & reference) * 2 >= max(1, len(context)), given["context"])
        return {"reason": "Useful." if useful else "Not useful.", "verdict": int(useful)}
    if title in ("ContextRecallOutput", "ContextRecallClassifications"):
        context, statements = normalise(given["context"]), sentences(given["answer"])
        found = judge.verdicts([normalise(s) in context for s in statements], statements)
        return {
            "classifications": [
                {"statement": s, "reason": "Found." if ok else "Missing.", "attributed": int(ok)}
                for s, ok in zip(statements, found)
            ]
        }
    raise ValueError("unknown RAGAS output model: " + title)


def g_eval_score(prompt: str, judge: Judge = CAREFUL) -> int:
    """G-Eval, 0-10: carefully, the share of the actual output's words found in the expected output
    (or, without one, in the input); then as ``judge`` gives it."""

    def field(name: str) -> str | None:
        found = re.search(rf"{name}:\n(.*?) \n\n", prompt, re.S)
        return found.group(1) if found else None

    actual = words(field("Actual Output") or "")
    reference = words(field("Expected Output") or field("Input") or "")
    return judge.score(round(10 * len(actual & reference) / max(1, len(actual))), field("Actual Output") or "")


#: ``digits=True``: after a "1" that begins the score 10, the probability that "0" follows (the number
#: ends there, a score of 1, otherwise)
TEN_AFTER_ONE = 0.9


def logprobs(content: str, top: int, digits: bool = False) -> dict:
    """OpenAI's ``logprobs`` of a reply: every token certain, but the last integer (G-Eval's score s) has
    the alternatives of SCORE_PROBABILITIES.

    ``digits``: numbers are written digit by digit, as Qwen's, Llama 2's or SmolLM's tokenizers write them:
    a score of 10 is the tokens "1" (alternatives "1" for 10, with s's probability, and "9") and "0"
    (alternatives "0", with TEN_AFTER_ONE, and "}" ending the number at 1); an alternative 10 of a
    one-digit score is the token "1"."""
    tokens = re.findall(r"\d|[A-Za-z]+|\s+|[^\w\s]" if digits else r"\d+|[A-Za-z]+|\s+|[^\w\s]", content)
    numbers = [m.span() for m in re.finditer(r"\d+", content)]
    starts = [sum(map(len, tokens[:i])) for i in range(len(tokens))]
    last = numbers[-1] if numbers else None
    score = int(content[last[0] : last[1]]) if last else None
    out = []
    for i, token in enumerate(tokens):
        alternatives = [{"token": token, "logprob": 0.0}]
        if last and starts[i] == last[0]:  # the score's (first) token
            weighed = [
                (str(score + d)[:1] if digits else str(score + d), p)
                for d, p in SCORE_PROBABILITIES.items()
                if 0 <= score + d <= 10
            ]
            alternatives = [{"token": t, "logprob": math.log(p)} for t, p in weighed]
        elif last and digits and score == 10 and starts[i] == last[0] + 1:  # the "0" after the "1" of 10
            alternatives = [
                {"token": "0", "logprob": math.log(TEN_AFTER_ONE)},
                {"token": "}", "logprob": math.log(1 - TEN_AFTER_ONE)},
            ]
        alternatives = [{**a, "bytes": list(a["token"].encode())} for a in alternatives]
        out.append(
            {
                "token": token,
                "logprob": alternatives[0]["logprob"],
                "bytes": list(token.encode()),
                "top_logprobs": alternatives[:top],
            }
        )
    return {"content": out}


def rubric_grade(prompt: str, judge: Judge = CAREFUL) -> dict:
    """promptfoo's llm-rubric: carefully, the output passes when each of its sentences is in the rubric's
    text (a rubric that quotes the context: "The answer is supported by: ..."); the score is the share
    of sentences found, after ``judge``'s verdicts."""
    output = section(prompt, "<Output>\n", PROMPTFOO_RUBRIC)
    rubric = normalise(section(prompt, PROMPTFOO_RUBRIC, "\n</Rubric>"))
    claims = sentences(output) or [output]
    found = judge.verdicts([normalise(c) in rubric for c in claims], claims)
    score = sum(found) / len(found)
    return {
        "reason": "Every sentence is supported." if all(found) else "Some sentences are not supported.",
        "pass": all(found),
        "score": score,
    }


def answer(prompt: str, judge: Judge = CAREFUL) -> dict:
    """The JSON ``judge`` gives to one of DeepEval's, RAGAS's or promptfoo's prompts."""
    if PROMPTFOO_RUBRIC in prompt and "<Output>\n" in prompt:
        return rubric_grade(prompt, judge)
    if RAGAS_SCHEMA in prompt and "\ninput: " in prompt:
        return ragas_answer(prompt, judge)
    if DAG_TASK in prompt:  # a task node's output: the first sentence of the actual output
        return {"output": sentences(re.search(r"Actual Output:\n(.*?)\n", prompt).group(1))[0]}
    if DAG_BINARY in prompt or DAG_NON_BINARY in prompt:
        criteria, content = prompt.strip().split("\n", 1)
        content = content.split("**\nIMPORTANT", 1)[0].lower()
        if DAG_BINARY in prompt:  # true when the term the criteria quotes is in the node's content
            term = re.search(r"'([^']+)'", criteria).group(1).lower()
            return {"reason": f"Looked for {term}.", "verdict": judge.verdict(term in content, content)}
        options = ast.literal_eval("[" + prompt.split(DAG_NON_BINARY, 1)[1].split("]", 1)[0] + "]")
        return {
            "reason": "The first option named.",
            "verdict": next((o for o in options if o.lower() in content), options[-1]),
        }
    if DAG_REASON in prompt:
        return {"reason": "The score follows the DAG traversal."}
    if G_EVAL_STEPS in prompt:
        return {"steps": ["Find the words of the actual output in the expected output.", "Score the share found."]}
    if G_EVAL_STRICT in prompt:  # strict: 1 only when every word is found
        return {"reason": "Strictly judged.", "score": int(g_eval_score(prompt, judge) == 10)}
    if G_EVAL_RESULTS in prompt:
        score = g_eval_score(prompt, judge)
        return {"reason": f"The scripted judge found {score} tenths of the words.", "score": score}
    if CLAIMS in prompt:
        return {"claims": sentences(section(prompt, "AI Output:\n", "\n\nJSON:"))}
    if TRUTHS in prompt:
        return {"truths": sentences(section(prompt, "Text:\n", "\n\nJSON:"))}
    if VERDICTS in prompt:
        context = normalise(section(prompt, "Retrieval Contexts:\n", "\n\nClaims:"))
        claims = ast.literal_eval(section(prompt, "Claims:\n", "\n\nJSON:"))
        supported = judge.verdicts([normalise(c) in context for c in claims], claims)
        return {
            "verdicts": [
                {"verdict": "yes"} if ok else {"verdict": "no", "reason": f"The context does not support: {c}"}
                for c, ok in zip(claims, supported)
            ]
        }
    if STATEMENTS in prompt:
        return {"statements": sentences(section(prompt, "Text:\n", "\n\nJSON:"))}
    if RELEVANT_STATEMENTS in prompt:  # answer relevancy: a statement is relevant when it shares a word with the input
        question = words(section(prompt, "Input:\n", "\n\nStatements:"))
        statements = nodes(section(prompt, "Statements:\n", "\n\nJSON:"))
        return {
            "verdicts": verdict_list(
                judge, [bool(words(s) & question) for s in statements], statements, "'{}' does not address the input"
            )
        }
    if PRECISION in prompt:  # a node is useful when most of its words are in the expected output
        expected = words(section(prompt, "Expected output:\n", "\n\nRetrieval Context"))
        context = nodes(section(prompt.rsplit("Retrieval Context", 1)[1], ":\n", "\n\nJSON:"))
        return {
            "verdicts": verdict_list(
                judge,
                [len(words(n) & expected) * 2 >= max(1, len(words(n))) for n in context],
                context,
                "'{}' does not help to reach the expected output",
            )
        }
    if RECALL in prompt:  # a sentence of the expected output is attributable when the context holds it
        context = normalise(" ".join(nodes(section(prompt, "Retrieval Context:\n", "\n\nJSON:"))))
        expected = sentences(section(prompt, "Expected Output:\n", "\n\nRetrieval Context:"))
        return {
            "verdicts": verdict_list(
                judge, [normalise(s) in context for s in expected], expected, "'{}' is not in the retrieval context"
            )
        }
    if CONTEXT_RELEVANCY in prompt:  # a context statement is relevant when it shares a word with the input
        question = words(section(prompt, "Input:\n", "\n\nContext:"))
        statements = [s for n in nodes(section(prompt, "Context:\n", "\n\nJSON:")) for s in sentences(n)]
        return {
            "verdicts": verdict_list(
                judge,
                [bool(words(s) & question) for s in statements],
                statements,
                "'{}' is unrelated to the input",
                statement=True,
            )
        }
    for marker in REASONS:
        if marker in prompt:
            score = section(prompt, marker + "\n", "\n")
            return {"reason": f"The score is {score} because of the verdicts above."}
    raise ValueError("unknown prompt: " + prompt[:120])


class JudgeServer:
    """Start with ``with JudgeServer() as server:``; ``server.url`` is the OpenAI base URL.

    ``models``: the model names the server hosts (any other gets a 404, as from OpenAI or vLLM); every
    name by default. ``aliases``: model name -> the persona it answers as, whatever the name says (a
    provider moving an alias to another model: change it while the server runs). ``by_model`` counts
    the requests (chat and embeddings) that named each model, and
    ``seen`` holds the settings of every request: model, path, temperature, max_tokens, JSON mode,
    logprobs, top_logprobs.
    """

    def __init__(
        self,
        *,
        delay_s: float = 0.0,
        models: set[str] | None = None,
        aliases: dict[str, str] | None = None,
        refuse: set[str] | frozenset[str] = frozenset(),
        digits: bool = False,
    ):
        self.delay_s = delay_s
        self.digits = digits
        self.refuse = set(refuse)
        self.models = models
        self.aliases = dict(aliases or {})
        self.faults: dict[str, list] = {}  # marker -> [kind, times left]
        self.counts: Counter = Counter()
        self.by_model: Counter = Counter()
        self.seen: list[dict] = []
        self.keys_seen: set[str] = set()
        self.lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            disable_nagle_algorithm = True
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _send(self, status: int, body: dict | str, headers: dict | None = None):
                data = (body if isinstance(body, str) else json.dumps(body)).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                model = str(body.get("model"))
                with outer.lock:
                    outer.by_model[model] += 1
                    outer.seen.append(
                        {
                            "model": model,
                            "path": self.path.rsplit("/", 1)[-1],
                            **{k: body.get(k) for k in ("temperature", "max_tokens", "logprobs", "top_logprobs")},
                            "json_mode": (body.get("response_format") or {}).get("type")
                            in ("json_object", "json_schema"),
                            "response_format": outer._mode(body),
                            "schema": outer._schema(body),
                        }
                    )
                if outer.models is not None and model not in outer.models:
                    with outer.lock:
                        outer.counts["unknown_model"] += 1
                    return self._send(
                        404,
                        {
                            "error": {
                                "message": f"The model `{model}` does not exist.",
                                "type": "invalid_request_error",
                                "code": "model_not_found",
                            }
                        },
                    )
                if self.path.endswith("/embeddings"):
                    texts = [body["input"]] if isinstance(body["input"], str) else body["input"]
                    fault = outer._take_fault(" ".join(texts))
                    with outer.lock:
                        outer.counts["embeddings"] += 1
                        outer.counts[fault or "ok"] += 1
                    if fault == "500":
                        return self._send(500, {"error": {"message": "internal error"}})
                    return self._send(
                        200,
                        {
                            "object": "list",
                            "model": body["model"],
                            "data": [
                                {"object": "embedding", "index": i, "embedding": embed(t)} for i, t in enumerate(texts)
                            ],
                            "usage": {
                                "prompt_tokens": sum(len(t.split()) for t in texts),
                                "total_tokens": sum(len(t.split()) for t in texts),
                            },
                        },
                    )
                anthropic = self.path.endswith("/v1/messages")
                if not (anthropic or self.path.endswith("/chat/completions")):
                    return self._send(404, {"error": {"message": "not found"}})
                with outer.lock:
                    outer.keys_seen.add(self.headers.get("x-api-key") or self.headers.get("Authorization") or "")
                prompt = body["messages"][-1]["content"]
                mode = outer._mode(body)
                if mode in outer.refuse:  # an older server: a 400 naming what it does not support
                    with outer.lock:
                        outer.counts[f"refused_{mode}"] += 1
                    if anthropic:
                        return self._send(
                            400,
                            {
                                "type": "error",
                                "error": {
                                    "type": "invalid_request_error",
                                    "message": "output_config: Extra inputs are not permitted",
                                },
                            },
                        )
                    return self._send(
                        400,
                        {
                            "error": {
                                "code": 400,
                                "type": "invalid_request_error",
                                "message": f"response_format type '{mode}' is not supported",
                            }
                        },
                    )
                fault = outer._take_fault(prompt)
                with outer.lock:
                    outer.counts["requests"] += 1
                    outer.counts[fault or "ok"] += 1
                if fault == "429":
                    return self._send(429, {"error": {"message": "rate limited"}}, {"Retry-After": "0.05"})
                if fault == "500":
                    return self._send(500, {"error": {"message": "internal error"}})
                if fault == "echo-key":  # a server that quotes the key it was sent in its error, as some do
                    sent = (self.headers.get("x-api-key") or self.headers.get("Authorization") or "").split()[-1:]
                    return self._send(
                        401,
                        {
                            "error": {
                                "message": f"Incorrect API key provided: {' '.join(sent)}. "
                                "You can find your API key in your account.",
                                "type": "invalid_request_error",
                                "code": "invalid_api_key",
                            }
                        },
                    )
                if fault == "drop":
                    self.close_connection = True
                    self.connection.shutdown(2)
                    return None
                if fault == "slow":
                    time.sleep(3.0)
                if outer.delay_s:
                    time.sleep(outer.delay_s)
                if fault == "malformed":
                    content = "this is not JSON {"
                elif fault == "empty":  # a judge that finds nothing: every list in its answer empty
                    content = json.dumps({k: [] if isinstance(v, list) else v for k, v in answer(prompt).items()})
                else:
                    given = answer(prompt, Judge(model, outer.aliases.get(model)))
                    outer._check_schema(outer._schema(body), given)
                    content = json.dumps(given)
                if fault == "cut":  # stopped at max_tokens in the middle of the JSON
                    content = content[: max(1, len(content) // 2)]
                stop = "length" if fault == "cut" else "stop"
                if anthropic:  # Anthropic's Messages API: no JSON mode, so the JSON comes in a Markdown fence
                    if fault not in ("malformed", "cut") and mode != "json_schema":
                        content = f"Here is the JSON:\n```json\n{content}\n```"
                    return self._send(
                        200,
                        {
                            "id": "msg-scripted",
                            "type": "message",
                            "role": "assistant",
                            "model": body["model"],
                            "content": [{"type": "text", "text": content}],
                            "stop_reason": "max_tokens" if stop == "length" else "end_turn",
                            "usage": {"input_tokens": len(prompt.split()), "output_tokens": len(content.split())},
                        },
                    )
                choice = {"index": 0, "finish_reason": stop, "message": {"role": "assistant", "content": content}}
                if body.get("logprobs"):
                    with outer.lock:
                        outer.counts["logprobs"] += 1
                    choice["logprobs"] = logprobs(content, body.get("top_logprobs") or 1, outer.digits)
                return self._send(
                    200,
                    {
                        "id": "chatcmpl-scripted",
                        "object": "chat.completion",
                        "created": 0,
                        "model": body["model"],
                        "choices": [choice],
                        "usage": {
                            "prompt_tokens": len(prompt.split()),
                            "completion_tokens": len(content.split()),
                            "total_tokens": len(prompt.split()) + len(content.split()),
                            # a proxy that reports each call's cost (OpenRouter, LiteLLM)
                            **({"cost": COST_PER_CALL} if body["model"].endswith("-costed") else {}),
                        },
                    },
                )

        class Server(ThreadingHTTPServer):
            request_queue_size = 256
            daemon_threads = True

            def handle_error(self, request, client_address):
                # a client closing an idle keep-alive connection is not an error of the server
                if not isinstance(sys.exc_info()[1], (ConnectionResetError, BrokenPipeError)):
                    super().handle_error(request, client_address)

        self.httpd = Server(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    @staticmethod
    def _mode(body: dict) -> str:
        """The structured-output mode of a request: json_schema, json_object or text."""
        if ((body.get("output_config") or {}).get("format") or {}).get("type") == "json_schema":
            return "json_schema"
        return (body.get("response_format") or {}).get("type") or "text"

    @staticmethod
    def _schema(body: dict) -> dict | None:
        """The JSON Schema a request sent (OpenAI's ``response_format``, Anthropic's ``output_config``)."""
        anthropic = ((body.get("output_config") or {}).get("format") or {}).get("schema")
        return anthropic or ((body.get("response_format") or {}).get("json_schema") or {}).get("schema")

    def _check_schema(self, schema: dict | None, given: dict) -> None:
        """Count an answer whose keys the request's schema does not declare, or that lacks one it requires."""
        if schema is None:
            return
        declared, required = set(schema.get("properties") or {}), set(schema.get("required") or [])
        if not set(given) <= declared or not required <= set(given):
            with self.lock:
                self.counts["schema_mismatch"] += 1

    def _take_fault(self, prompt: str) -> str | None:
        with self.lock:
            for marker, plan in self.faults.items():
                if marker in prompt and plan[1] > 0:
                    plan[1] -= 1
                    return plan[0]
        return None

    def inject(self, marker: str, kind: str, times: int = 1) -> None:
        """The next ``times`` requests whose prompt contains ``marker`` get fault ``kind``."""
        with self.lock:
            self.faults[marker] = [kind, times]

    def __enter__(self) -> JudgeServer:
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


if __name__ == "__main__":  # a server to point a campaign at by hand
    with JudgeServer(delay_s=float(sys.argv[1]) if len(sys.argv) > 1 else 0.0) as server:
        print(server.url, flush=True)
        threading.Event().wait()
