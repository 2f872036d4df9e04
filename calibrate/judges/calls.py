"""Model calls: limits on calls in flight, a per-call timeout, retries with backoff, usage per rating.

One :class:`CallPolicy` is shared by every judge of a run: a global limit on calls in flight, one per
provider endpoint, an optional requests-per-minute pace, a timeout per call, and retries with
exponential backoff and jitter on 429, 5xx, timeouts and dropped connections (honouring
``Retry-After``). What each rating spent (calls, tokens, cost) is accumulated in a context variable,
so concurrent ratings never mix their counts.

The requests go through :mod:`calibrate.base.http` (aiohttp): an API key never follows a redirect to
another server, each call has a total deadline (the policy's timeout, the whole reply included), replies
have a size cap, and every reply is read through the schemas below. API keys are registered with
:func:`calibrate.base.secrets.remember` where they are read, and every error text is redacted, so that a
server echoing the key in its error body cannot put it into a store, a file or the terminal.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import math
import os
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import JsonValue

from calibrate.base.documents import DocumentError, Schema, validate
from calibrate.base.http import AsyncHttp, HttpError, Reply
from calibrate.base.secrets import redact, remember
from calibrate.campaign.judge_specs import ModelSpec
from calibrate.judges.replies import JudgeReplyError, complete_json, note_call
from calibrate.judges.structured import ResponseSchema, chain, refuses, response_schema

__all__ = [
    "AnthropicClient",
    "CallPolicy",
    "ClientPool",
    "JudgeCallError",
    "Modes",
    "OpenAICompatibleClient",
    "Usage",
    "endpoint_name",
    "usage",
]


class JudgeCallError(RuntimeError):
    """A model call that failed for good (after its retries, or at once for a non-retryable error).

    ``summary`` says what went wrong without what differs from case to case (the reply's text), so
    that a run can group its failures; ``connection`` is true when the endpoint could not be reached,
    and ``endpoint`` names it."""

    def __init__(
        self, message: str, *, summary: str | None = None, connection: bool = False, endpoint: str | None = None
    ):
        message = redact(str(message))
        super().__init__(message)
        self.summary = redact(summary) if summary else message
        self.connection, self.endpoint = connection, endpoint


@dataclass
class Usage:
    """What one rating spent."""

    calls: int = 0
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cost: float | None = None

    def add_tokens(self, prompt: int | None, completion: int | None, cost: float | None = None) -> None:
        if prompt is not None:
            self.prompt_tokens = (self.prompt_tokens or 0) + prompt
        if completion is not None:
            self.completion_tokens = (self.completion_tokens or 0) + completion
        if cost is not None:
            self.cost = (self.cost or 0.0) + cost


usage: contextvars.ContextVar[Usage] = contextvars.ContextVar("calibrate_judge_usage")


class NotSent(Exception):
    """Raised by a call's maker, when its slot comes, to say the call is not to be sent after all (its
    endpoint refused the only form it could take): :meth:`CallPolicy.call` raises ``error`` instead."""

    def __init__(self, error: Exception):
        super().__init__(str(error))
        self.error = error


@dataclass
class CallPolicy:
    """Limits and retries shared by all the model calls of a run (none of it enters a cache key)."""

    concurrency: int = 16
    per_provider: int | None = None
    requests_per_minute: float | None = None
    timeout_s: float = 60.0
    retries: int = 4
    backoff_s: float = 0.5
    max_backoff_s: float = 30.0
    _global: asyncio.Semaphore | None = field(default=None, init=False, repr=False)
    _providers: dict[str, asyncio.Semaphore] = field(default_factory=dict, init=False, repr=False)
    _next_slot: float = field(default=0.0, init=False, repr=False)
    _pace_lock: asyncio.Lock | None = field(default=None, init=False, repr=False)

    def _semaphores(self, endpoint: str) -> tuple[asyncio.Semaphore, asyncio.Semaphore | None]:
        if self._global is None:
            self._global = asyncio.Semaphore(self.concurrency)
            self._pace_lock = asyncio.Lock()
        if self.per_provider and endpoint not in self._providers:
            self._providers[endpoint] = asyncio.Semaphore(self.per_provider)
        return self._global, self._providers.get(endpoint)

    async def _pace(self) -> None:
        if not self.requests_per_minute:
            return
        async with self._pace_lock:
            wait = self._next_slot - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            self._next_slot = max(self._next_slot, time.monotonic()) + 60.0 / self.requests_per_minute

    def delay(self, attempt: int, retry_after: float | None) -> float:
        """Seconds to wait before retry number ``attempt`` (1-based): ``Retry-After`` when the server
        gave one, else exponential backoff with full jitter."""
        if retry_after is not None:
            return min(retry_after, self.max_backoff_s)
        return random.uniform(0, min(self.max_backoff_s, self.backoff_s * 2 ** (attempt - 1)))

    async def call(self, endpoint: str, make_call) -> Any:
        """Run ``await make_call()`` under the limits, retrying what is worth retrying."""
        global_limit, provider_limit = self._semaphores(endpoint)
        attempt = 0
        while True:
            attempt += 1
            retry_after = None
            async with global_limit:
                if provider_limit is not None:
                    await provider_limit.acquire()
                try:
                    await self._pace()
                    pending = make_call()  # a call that declines to be sent raises NotSent here, uncounted
                    current = usage.get(None)
                    if current is not None:
                        current.calls += 1
                    async with asyncio.timeout(self.timeout_s):  # no extra task per call, unlike wait_for
                        return await pending
                except NotSent as declined:
                    raise declined.error from None
                except Exception as exc:  # classified below, re-raised when final
                    retryable, retry_after, what = classify(exc, self.timeout_s)
                    if not retryable or attempt > self.retries:
                        suffix = f" after {attempt} attempts" if retryable else ""
                        status = exc.status if isinstance(exc, HttpError) and exc.kind == "status" else None
                        raise JudgeCallError(
                            f"{what}{suffix}",
                            summary=(f"HTTP {status} from the server{suffix}" if status else None),
                            connection=_unreachable(exc),
                            endpoint=endpoint,
                        ) from exc
                finally:
                    if provider_limit is not None:
                        provider_limit.release()
            await asyncio.sleep(self.delay(attempt, retry_after))


def classify(exc: BaseException, timeout_s: float) -> tuple[bool, float | None, str]:
    """(retryable, Retry-After seconds, description) of a failed call.

    >>> classify(HttpError("HTTP 503 from the server: busy", kind="status", status=503, retry_after=2.0), 60)
    (True, 2.0, 'HTTP 503 from the server: busy')
    >>> classify(HttpError("x", kind="redirect"), 60)
    (False, None, 'x')
    """
    if isinstance(exc, asyncio.TimeoutError):
        return True, None, f"no reply within {timeout_s:g} s"
    if isinstance(exc, HttpError):
        if exc.kind == "timeout":
            return True, None, f"no reply within {timeout_s:g} s"
        if exc.kind in ("connect", "connection"):
            return True, None, f"connection failed: {exc.reason}"
        return exc.retryable, exc.retry_after if exc.kind == "status" else None, str(exc)
    return False, None, f"{type(exc).__name__}: {exc}"


def _unreachable(exc: BaseException) -> bool:
    """Whether a failed call never reached the server (refused, unknown host, unreachable network)."""
    return isinstance(exc, HttpError) and exc.kind == "connect"


# ------------------------------------------------------------------ the replies calibrate reads
class _Usage(Schema):
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost: float | None = None


class _Message(Schema):
    content: str | None = None


class _Choice(Schema):
    message: _Message | None = None
    finish_reason: str | None = None


class ChatReply(Schema):
    """An OpenAI chat completion, as far as calibrate reads it (the first choice's text, the usage)."""

    choices: list[_Choice] = []
    usage: _Usage | None = None


class _Block(Schema):
    type: str | None = None
    text: str | None = None


class MessagesReply(Schema):
    """An Anthropic Messages reply, as far as calibrate reads it (the text blocks, the usage)."""

    content: list[_Block] = []
    stop_reason: str | None = None
    usage: _Usage | None = None


class _Embedding(Schema):
    index: int
    embedding: list[float]


class EmbeddingsReply(Schema):
    """An OpenAI embeddings reply."""

    data: list[_Embedding]
    usage: _Usage | None = None


def _cost(spec: ModelSpec, reply: Any, prompt_tokens: int | None, completion_tokens: int | None) -> float | None:
    """A call's cost: what the reply reports (``usage.cost``, as OpenRouter and LiteLLM proxies do), else
    its tokens at the model's declared price, else unknown (None)."""
    reported = reply.usage.cost if reply.usage is not None else None
    if reported is not None and math.isfinite(reported):
        return float(reported)
    return spec.cost(prompt_tokens, completion_tokens)


def _api_key(spec: ModelSpec) -> str | None:
    if not spec.api_key_env:
        return None
    key = os.environ.get(spec.api_key_env)
    if not key:
        raise JudgeCallError(f"the environment variable {spec.api_key_env} (model {spec.name}) is not set")
    remember(key)
    return key


class _Session:
    """The HTTP session of one endpoint (provider, base URL, API key), made in the run's event loop at
    the first call and shared by every model on that endpoint: connections are shared, request
    bodies never are."""

    def __init__(self, headers: dict[str, str]):
        self.headers = headers
        self.http = AsyncHttp(name="the model server", headers=headers, keepalive_s=30)

    async def close(self) -> None:
        await self.http.close()


class Modes:
    """What a run learnt of one model endpoint's structured output (shared by the clients of every judge of
    that model on that endpoint): the modes it refused, and the mode a request succeeded in.

    Requests do not wait for the first one to find out: an endpoint that takes the mode (nearly every one)
    costs nothing, and one that refuses it sees at most the requests already in flight when its first
    refusal came back (no more than the run's concurrency) refused, then none.
    """

    def __init__(self) -> None:
        self.refused: dict[str, str] = {}  # mode -> the refusal, as the server worded it
        self.settled: str | None = None


class _HTTPClient:
    """A model's client: its request bodies come from its own :class:`ModelSpec` (name, temperature,
    max_tokens, price), over the HTTP session of its endpoint; subclasses say how to ask and where the
    answer is.

    aiohttp, not httpx: measured here, httpcore's connection pool scans every pooled connection (with a
    socket poll each) for every queued request, which cost more CPU than DeepEval itself at 32 calls in
    flight; aiohttp's connector does not.
    """

    default_base_url = ""
    path = ""

    def __init__(self, spec: ModelSpec, session: _Session, modes: Modes | None = None):
        self.spec = spec
        self.endpoint = endpoint_name(spec)
        self.base_url = (spec.base_url or self.default_base_url).rstrip("/") + "/"
        self._session = session
        self.modes = modes or Modes()
        self.chain = chain(spec)

    @classmethod
    def session_headers(cls, spec: ModelSpec) -> dict[str, str]:
        """The headers of every request to the model's endpoint (its API key read from the environment)."""
        return {**cls.headers(_api_key(spec)), "Content-Type": "application/json"}

    @staticmethod
    def headers(key: str | None) -> dict[str, str]:
        raise NotImplementedError

    def body(self, prompt: str, mode: str | bool | None = None, schema: ResponseSchema | None = None) -> dict[str, Any]:
        """A request asking for ``prompt``'s completion in structured-output ``mode`` (``"json_schema"``
        with ``schema``, ``"json_object"``; ``"text"`` or None: plain; True: ``"json_object"``)."""
        raise NotImplementedError

    @property
    def mode(self) -> str:
        """The structured-output mode its requests with a schema take now: the first of its chain the
        endpoint has not refused in this run (the last one, which the refusal of every one leaves)."""
        return next((m for m in self.chain if m not in self.modes.refused), self.chain[-1])

    #: the reply's declared shape, and what it is (for messages)
    schema: Any = None
    what = ""

    def read(self, reply: Any) -> tuple[Any, int | None, int | None]:
        """(content, prompt tokens, completion tokens) of a reply read into :attr:`schema`."""
        raise NotImplementedError

    #: what a reply cut at ``max_tokens`` says it stopped for, and the field saying it (OpenAI's
    #: ``finish_reason``, Anthropic's ``stop_reason``)
    cut_reason, cut_field = "", ""

    def stopped(self, reply: Any) -> str | None:
        """Why the model stopped writing the reply (read into :attr:`schema`), as the reply says it."""
        raise NotImplementedError

    def check_cut(self, reply: Any, text: str, body: dict[str, Any]) -> None:
        """The one place a reply cut at ``max_tokens`` is told apart: when the model stopped for the length
        (:attr:`cut_reason`) before the JSON it was writing was complete, a :class:`JudgeReplyError` naming
        the model, the ``max_tokens`` the request carried and how to raise it (a cut reply whose JSON is
        whole, a looping model cut in trailing blanks, say, goes on to be read)."""
        if self.stopped(reply) != self.cut_reason or complete_json(text):
            return
        sent = body.get("max_tokens")
        allowed = (
            f"max_tokens = {sent}" if sent is not None else "the server's own limit (calibrate sent no max_tokens)"
        )
        suggestion = max(1024, 2 * sent) if isinstance(sent, int) else 1024
        raise JudgeReplyError(
            f"the judge's reply was cut at max_tokens: model {self.spec.name} stopped at {allowed} "
            f'({self.cut_field} "{self.cut_reason}") before its JSON was complete; it ends {redact(text)[-120:]!r}. '
            f"Raise max_tokens in the model's table in campaign.toml (model = {{ ..., max_tokens = {suggestion} }}); "
            f"a model that repeats itself is cut at any limit",
            summary=f"the judge's reply was cut at max_tokens ({allowed}, model {self.spec.name})",
        )

    async def _post(self, body: dict[str, Any], timeout_s: float, path: str | None = None) -> Reply:
        """One request; the reply, or :class:`~calibrate.base.http.HttpError` (an error status included)."""
        reply = await self._session.http.request(
            "POST", self.base_url + (path or self.path), data=json.dumps(body), timeout_s=timeout_s
        )
        if reply.status >= 400:
            raise reply.status_error()
        return reply

    def _read_reply(self, reply: Reply, schema: Any, what: str) -> Any:
        """The reply read into ``schema``, or a :class:`JudgeCallError` naming what is wrong in it."""
        try:
            return reply.json(schema, expected=what)
        except HttpError as exc:
            problem = (
                "is not UTF-8 text"
                if exc.kind == "encoding"
                else "is not JSON"
                if any("JSON" in p.message for p in exc.problems)
                else f"is not {what}"
            )
            raise JudgeCallError(
                str(exc)
                if exc.kind == "encoding"
                else f"the model server's reply {problem}: {exc.problems[0] if exc.problems else exc}; "
                f"it began {reply.excerpt()!r}",
                summary=f"the model server's reply {problem}",
                endpoint=self.endpoint,
            ) from None

    def _spent(self, reply: Any) -> tuple[Any, int | None, int | None]:
        """(content, prompt tokens, completion tokens) of a reply read, counted into the current rating's usage."""
        content, prompt_tokens, completion_tokens = self.read(reply)
        current = usage.get(None)
        if current is not None:
            current.add_tokens(
                prompt_tokens, completion_tokens, _cost(self.spec, reply, prompt_tokens, completion_tokens)
            )
        if not isinstance(content, str):
            raise JudgeCallError(
                "the model server's reply holds no message content",
                summary="the model server's reply holds no message content",
            )
        return content, prompt_tokens, completion_tokens

    async def _ask(
        self,
        make: Callable[[], tuple[dict[str, Any], str]],
        policy: CallPolicy,
        *,
        schema: bool = False,
        sent: dict[str, Any] | None = None,
    ) -> str:
        """One call whose request body and structured-output mode ``make()`` gives when the call gets its
        slot (so a request queued behind a refusal is not sent in the refused mode), the body and mode sent
        left in ``sent``; the reply's text, its tokens counted into the current rating's usage, the mode
        noted with the rating (:func:`~calibrate.judges.replies.note_call`; ``schema``: the request carried
        the metric's schema, in the mode the model's table chose)."""
        sent = {} if sent is None else sent

        def post() -> Any:
            sent["body"], sent["mode"] = make()
            return self._post(sent["body"], policy.timeout_s)

        reply = await policy.call(self.endpoint, post)
        read = self._read_reply(reply, self.schema, self.what)
        text = self._spent(read)[0]
        note_call(sent["mode"], schema=schema)
        self.check_cut(read, text, sent["body"])
        return text

    async def complete(self, prompt: str, policy: CallPolicy, *, json_mode: bool, schema: Any = None) -> str:
        """One completion's text: plain unless ``json_mode``; with ``schema`` (the pydantic model class the
        metric validates the reply with) in the model's structured-output mode (:attr:`mode`), noted with
        the rating (``structured_output``); without one, in JSON mode unless the model says ``text``."""
        if not json_mode:
            return await self._ask(lambda: (self.body(prompt), "text"), policy)
        if schema is None:
            mode = "text" if self.chain == ("text",) else "json_object"
            return await self._ask(lambda: (self.body(prompt, mode), mode), policy)
        wanted = response_schema(schema)

        def make() -> tuple[dict[str, Any], str]:
            mode = self.mode
            if mode in self.modes.refused:  # a mode the model's table names, refused already: not asked again
                raise NotSent(self._refusal(mode, self.modes.refused[mode]))
            return self.body(prompt, mode, wanted), mode

        while True:
            sent: dict[str, Any] = {}
            try:
                text = await self._ask(make, policy, schema=True, sent=sent)
            except JudgeReplyError:  # the server took the mode; what it wrote is what failed
                self.modes.settled = sent["mode"]
                raise
            except JudgeCallError as exc:
                if sent.get("mode", "text") == "text" or not refuses(exc):
                    raise
                self._refused(sent["mode"], exc)
                continue
            self.modes.settled = sent["mode"]
            return text

    def _refused(self, mode: str, exc: JudgeCallError) -> None:
        """Remember for the rest of the run that the endpoint refused ``mode``."""
        self.modes.refused.setdefault(mode, str(exc))
        if self.modes.settled == mode:
            self.modes.settled = None

    def _refusal(self, mode: str, said: str) -> JudgeCallError:
        return JudgeCallError(
            f"the model server refused structured output {mode} for model {self.spec.name} ({said}); "
            f'structured_output = "auto" in its model table falls back to the modes it accepts',
            summary=f"the model server refused structured output {mode}",
            endpoint=self.endpoint,
        )


class OpenAICompatibleClient(_HTTPClient):
    """One shared async HTTP client per endpoint speaking the OpenAI chat-completions API (OpenAI,
    vLLM, llama.cpp, Ollama, LM Studio, ...).

    A plain POST of the request JSON: measured here, the OpenAI SDK's per-call request
    transformation and response models cost CPU that limits the call rate on a small machine, and a
    chat completion needs neither. :class:`CallPolicy` retries each call. The API key is read from
    the environment variable the model names, and kept in memory only.
    """

    default_base_url = "https://api.openai.com/v1"
    path = "chat/completions"
    supports_logprobs = True
    schema = ChatReply
    what = "an OpenAI chat completion"

    @staticmethod
    def headers(key: str | None) -> dict[str, str]:
        return {"Authorization": f"Bearer {key}"} if key else {}

    def body(self, prompt: str, mode: str | bool | None = None, schema: ResponseSchema | None = None) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.spec.name, "messages": [{"role": "user", "content": prompt}]}
        if self.spec.temperature is not None:
            body["temperature"] = self.spec.temperature
        if self.spec.max_tokens is not None:
            body["max_tokens"] = self.spec.max_tokens
        if mode == "json_schema" and schema is not None:
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": schema.name, "schema": schema.schema, "strict": schema.strict},
            }
        elif mode is True or mode == "json_object":
            body["response_format"] = {"type": "json_object"}
        return body

    def read(self, reply: ChatReply) -> tuple[Any, int | None, int | None]:
        reported = reply.usage or _Usage()
        message = reply.choices[0].message if reply.choices else None
        return (message.content if message is not None else None, reported.prompt_tokens, reported.completion_tokens)

    cut_reason, cut_field = "length", "finish_reason"

    def stopped(self, reply: ChatReply) -> str | None:
        return reply.choices[0].finish_reason if reply.choices else None

    async def complete_with_logprobs(self, prompt: str, policy: CallPolicy, *, top_logprobs: int) -> dict[str, Any]:
        """One completion asking for each token's ``top_logprobs`` alternatives; returns the whole reply
        (as JSON values, checked to be a chat completion with a message)."""
        body = {**self.body(prompt), "logprobs": True, "top_logprobs": top_logprobs}
        reply = await policy.call(self.endpoint, lambda: self._post(body, policy.timeout_s))
        whole = self._read_reply(reply, dict[str, JsonValue], self.what)
        try:
            read = validate(whole, ChatReply, source=f"{reply.server}: {reply.request}", expected=self.what)
            text = self._spent(read)[0]
        except DocumentError as exc:
            raise JudgeCallError(
                f"the model server's reply is not {self.what}: {exc.problems[0]}",
                summary=f"the model server's reply is not {self.what}",
            ) from None
        note_call("text", schema=False)  # a logprob call asks for no response format
        self.check_cut(read, text, body)
        return whole

    async def embed(self, texts: list[str], policy: CallPolicy) -> list[list[float]]:
        """Embeddings of ``texts`` from the OpenAI-compatible ``/embeddings`` endpoint, in order."""
        body = {"model": self.spec.name, "input": texts}
        reply = await policy.call(self.endpoint, lambda: self._post(body, policy.timeout_s, "embeddings"))
        response = self._read_reply(reply, EmbeddingsReply, "an OpenAI embeddings reply")
        rows = sorted(response.data, key=lambda row: row.index)
        if len(rows) != len(texts) or [row.index for row in rows] != list(range(len(texts))):
            raise JudgeCallError(
                f"asked for {len(texts)} embeddings, the server returned "
                f"{len(rows)} (indices {[row.index for row in rows][:10]})"
            )
        current = usage.get(None)
        if current is not None:
            tokens = response.usage.prompt_tokens if response.usage is not None else None
            current.add_tokens(tokens, None, _cost(self.spec, response, tokens, None))
        return [row.embedding for row in rows]


class AnthropicClient(_HTTPClient):
    """Anthropic's Messages API (``x-api-key``; ``max_tokens`` is required, 1024 unless the model says).
    It has no JSON mode: in ``json_schema`` mode the metric's schema goes in ``output_config.format``
    (Anthropic's structured outputs, as DeepEval's own ``AnthropicModel`` sends it); in ``text`` mode the
    library's prompt asks for JSON, and the adapter reads it out of the text."""

    default_base_url = "https://api.anthropic.com"
    path = "v1/messages"
    supports_logprobs = False
    schema = MessagesReply
    what = "an Anthropic Messages reply"

    @staticmethod
    def headers(key: str | None) -> dict[str, str]:
        return {"anthropic-version": ANTHROPIC_VERSION, **({"x-api-key": key} if key else {})}

    def body(self, prompt: str, mode: str | bool | None = None, schema: ResponseSchema | None = None) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.spec.name,
            "max_tokens": self.spec.max_tokens or 1024,
            "messages": [{"role": "user", "content": prompt}],
        }
        if self.spec.temperature is not None:
            body["temperature"] = self.spec.temperature
        if mode == "json_schema" and schema is not None:
            body["output_config"] = {"format": {"type": "json_schema", "schema": schema.schema}}
        return body

    def read(self, reply: MessagesReply) -> tuple[Any, int | None, int | None]:
        reported = reply.usage or _Usage()
        text = "".join(block.text or "" for block in reply.content if block.type == "text")
        return text or None, reported.input_tokens, reported.output_tokens

    cut_reason, cut_field = "max_tokens", "stop_reason"

    def stopped(self, reply: MessagesReply) -> str | None:
        return reply.stop_reason


ANTHROPIC_VERSION = "2023-06-01"


#: provider -> the client that speaks its API (campaign.toml's providers are checked against
#: judge_specs.PROVIDERS where they are read; a provider not here is refused, not sent to another API)
CLIENTS: dict[str, type[_HTTPClient]] = {"openai": OpenAICompatibleClient, "anthropic": AnthropicClient}


def _client_class(spec: ModelSpec) -> type[_HTTPClient]:
    if spec.provider not in CLIENTS:
        raise JudgeCallError(f"no client for provider {spec.provider!r}; expected one of {sorted(CLIENTS)}")
    return CLIENTS[spec.provider]


def endpoint_name(spec: ModelSpec) -> str:
    """The endpoint a model is served from, as the per-endpoint limits and messages name it."""
    return f"{spec.provider}:{spec.base_url or _client_class(spec).default_base_url}"


class ClientPool:
    """The model clients of a run: one per model (each request carries its own model's name and
    settings), over one HTTP session per endpoint (provider, base URL and API key variable), so that
    judges of several models behind one gateway or server share connections, never a request body.

    Examples
    --------
    >>> pool = ClientPool()
    >>> a = pool(ModelSpec("openai", "gpt-4.1", base_url="http://127.0.0.1:8000/v1"))
    >>> b = pool(ModelSpec("openai", "llama-3.3-70b", base_url="http://127.0.0.1:8000/v1", temperature=0.7))
    >>> a.body("hi")["model"], b.body("hi")["model"], b.body("hi")["temperature"]
    ('gpt-4.1', 'llama-3.3-70b', 0.7)
    >>> a._session is b._session, pool(a.spec) is a
    (True, True)
    """

    def __init__(self) -> None:
        self._sessions: dict[tuple, _Session] = {}
        self._clients: dict[ModelSpec, _HTTPClient] = {}
        self._modes: dict[tuple, Modes] = {}

    def __call__(self, spec: ModelSpec) -> _HTTPClient:
        if spec not in self._clients:
            cls = _client_class(spec)
            endpoint = (spec.provider, spec.base_url, spec.api_key_env)
            if endpoint not in self._sessions:
                self._sessions[endpoint] = _Session(cls.session_headers(spec))
            modes = self._modes.setdefault((endpoint_name(spec), spec.name), Modes())
            self._clients[spec] = cls(spec, self._sessions[endpoint], modes)
        return self._clients[spec]

    def modes(self, spec: ModelSpec) -> Modes | None:
        """What the run learnt of the structured output of ``spec``'s model on its endpoint (None: not called)."""
        return self._modes.get((endpoint_name(spec), spec.name))

    async def close(self) -> None:
        for session in self._sessions.values():
            await session.close()
