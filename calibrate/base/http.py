"""The one way calibrate talks to other servers: model endpoints (``calibrate judge``), a RAG service
(``calibrate collect``), MLflow and Phoenix (``calibrate import``, ``calibrate export mlflow``), and
Label Studio (through its SDK, given a client that keeps the same rules).

One :class:`HttpPolicy` holds the rules, and both transports keep them: aiohttp for calibrate's own
requests (asynchronous for the judges and collect; :class:`HttpClient` runs it for one request at a
time for the importers), and an httpx transport for SDKs that take an httpx client
(:func:`httpx_client`).

- **Redirects stay on the server given.** A redirect to another origin (scheme, host and port) is
  refused, naming its target: the request's credentials (``Authorization``, ``x-api-key``, Basic
  credentials) and its data go only to the address the user gave. A redirect on the same origin is
  followed, at most :data:`MAX_REDIRECTS` times.
- **A total deadline per request**: connecting, sending and reading the whole reply, so that a server
  trickling its reply a byte at a time fails at the deadline; and one per command for commands made of
  many requests (an import's pages), :attr:`HttpPolicy.command_timeout_s`.
- **A size cap on replies**, counted while the reply streams in (not after it is all read).
- **Pages end**: :func:`paginate` refuses a page token given twice, and more pages than a bound.
- **Names in URLs are encoded** by :func:`path_segment`: a name never changes the path it is put in.
- **A reply read as JSON goes through a declared schema** (:meth:`Reply.json`, with
  :mod:`calibrate.base.documents`): a reply that is not UTF-8, not JSON, or not the shape declared is an
  :class:`HttpError` naming the server, the request and the field.
- **Secrets are never shown**: every credential header is registered with
  :func:`calibrate.base.secrets.remember`, and every error text is redacted.

The limits can be changed for a whole session through the environment: ``CALIBRATE_HTTP_TIMEOUT_S``
(per request, 60 s), ``CALIBRATE_COMMAND_TIMEOUT_S`` (per command, 3600 s) and
``CALIBRATE_MAX_REPLY_MB`` (256 MB), each a number above 0 read when a policy is made (one that is
not is a :class:`~calibrate.base.settings.SettingError` naming it, never a silent default).

A server's text is put in a message only redacted first and then cut (:func:`~calibrate.base.secrets.clip`),
so that a credential straddling the cut leaves none of its characters.

Examples
--------
>>> path_segment("rag app/../x")
'rag%20app%2F..%2Fx'
>>> path_segment("..")
'%2E%2E'
>>> origin("https://Example.com/api"), origin("http://127.0.0.1:5000/x?y=1")
('https://example.com:443', 'http://127.0.0.1:5000')
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import concurrent.futures
import json
import os
import time
import urllib.parse
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pydantic import JsonValue

from calibrate.base.documents import DocumentError, Schema, parse_json
from calibrate.base.errors import Problem
from calibrate.base.secrets import clip, redact, remember
from calibrate.base.settings import env_number

__all__ = [
    "EXCERPT_MARGIN",
    "MAX_PAGES",
    "MAX_REDIRECTS",
    "REDIRECTS",
    "AsyncHttp",
    "HttpClient",
    "HttpError",
    "HttpPolicy",
    "Reply",
    "credential_headers",
    "httpx_client",
    "origin",
    "paginate",
    "path_segment",
    "redirect_target",
    "run_sync",
]

T = TypeVar("T")

#: same-origin redirects followed in a row, at most
MAX_REDIRECTS = 3
#: pages a paginated read follows, at most (:func:`paginate`)
MAX_PAGES = 10_000
REDIRECTS = frozenset({301, 302, 303, 307, 308})
#: bytes of a body decoded past an excerpt's cut, so that a credential straddling it is redacted whole
EXCERPT_MARGIN = 8192
#: headers that carry a credential (any header a caller marks as secret is one too)
CREDENTIAL_HEADERS = frozenset(
    {"authorization", "proxy-authorization", "x-api-key", "api-key", "x-auth-token", "cookie"}
)


def _http_timeout() -> float:
    return env_number(
        "CALIBRATE_HTTP_TIMEOUT_S", 60.0, unit="seconds", meaning="one request may take, its whole reply included"
    )


def _command_timeout() -> float:
    return env_number(
        "CALIBRATE_COMMAND_TIMEOUT_S",
        3600.0,
        unit="seconds",
        meaning="a command made of many requests (an import's pages) may take",
    )


def _max_reply_bytes() -> int:
    return int(env_number("CALIBRATE_MAX_REPLY_MB", 256, unit="megabytes", meaning="one reply may hold") * 2**20)


@dataclass(frozen=True)
class HttpPolicy:
    """The rules every request keeps (see the module docstring).

    Parameters
    ----------
    timeout_s : float
        The whole of one request (connect, send, every byte of the reply), in seconds.
    command_timeout_s : float, optional
        The whole of a command made of many requests (:class:`HttpClient` counts from its creation).
    max_reply_bytes : int
        The longest reply read; longer is an error as soon as the count passes it.
    max_redirects : int
        Same-origin redirects followed in a row.
    max_pages : int
        Pages :meth:`HttpClient.pages` follows.

    Examples
    --------
    >>> HttpPolicy(timeout_s=5).timeout_s, HttpPolicy().max_redirects
    (5, 3)
    """

    timeout_s: float = field(default_factory=_http_timeout)
    command_timeout_s: float | None = field(default_factory=_command_timeout)
    max_reply_bytes: int = field(default_factory=_max_reply_bytes)
    max_redirects: int = MAX_REDIRECTS
    max_pages: int = MAX_PAGES


class HttpError(RuntimeError):
    """A request that failed: the server could not be reached, did not answer in time, redirected
    elsewhere, sent too much, or sent what cannot be read. The message (redacted) names the server and
    the request.

    ``kind`` says which: ``"connect"`` (never reached), ``"connection"`` (dropped), ``"timeout"``,
    ``"status"`` (an error status; ``status`` and ``retry_after`` say more), ``"redirect"`` (``target``
    names it), ``"too_large"``, ``"encoding"``, ``"document"`` (not JSON or not the shape declared;
    ``problems`` lists where), ``"pages"`` (a pagination that does not end), ``"request"`` (one that
    cannot be sent). ``reason`` is the short cause without the server's name.

    Examples
    --------
    >>> str(HttpError("refused: key sk-abcdefghijklmnopqrstu echoed", kind="status", status=401))
    'refused: key [redacted] echoed'
    """

    def __init__(
        self,
        message: str,
        *,
        kind: str = "request",
        status: int | None = None,
        retry_after: float | None = None,
        target: str | None = None,
        reason: str | None = None,
        problems: list[Problem] | None = None,
    ):
        super().__init__(redact(str(message)))
        self.kind, self.status, self.retry_after, self.target = kind, status, retry_after, target
        self.reason = redact(reason) if reason else str(self)
        self.problems = list(problems or [])

    @property
    def retryable(self) -> bool:
        """Whether trying again may help: a dropped or refused connection, a timeout, 429 or 5xx."""
        return self.kind in ("connect", "connection", "timeout") or (
            self.kind == "status" and self.status is not None and (self.status == 429 or self.status >= 500)
        )


def origin(url: Any) -> str:
    """``scheme://host:port`` of a URL, the port written out (what "the same server" means here).

    >>> origin("http://a.example/x"), origin("HTTP://A.example:80")
    ('http://a.example:80', 'http://a.example:80')
    """
    from yarl import URL

    url = url if isinstance(url, URL) else URL(str(url))
    return f"{(url.scheme or '').lower()}://{(url.host or '').lower()}:{url.port}"


def path_segment(name: str, *, what: str = "name") -> str:
    """A name as one segment of a URL's path: every character that could end the segment, start a query
    or fragment, or walk the path (``/``, ``?``, ``#``, ``%``, spaces, ``.`` and ``..``) is encoded.

    Raises
    ------
    ValueError
        An empty name (it would join the segments on either side), or text that is not Unicode.

    Examples
    --------
    >>> [path_segment(n) for n in ("rag app", "a/b", "../x", "50%", "é")]
    ['rag%20app', 'a%2Fb', '..%2Fx', '50%25', '%C3%A9']
    >>> path_segment("")
    Traceback (most recent call last):
    ...
    ValueError: an empty name cannot be put in a URL
    """
    if not isinstance(name, str) or not name:
        raise ValueError(f"an empty {what} cannot be put in a URL")
    if name in (".", ".."):
        return name.replace(".", "%2E")
    try:
        return urllib.parse.quote(name, safe="")
    except UnicodeEncodeError:
        raise ValueError(
            f"the {what} {name!r} holds a character that is not Unicode text (a lone surrogate): it "
            "cannot be put in a URL"
        ) from None


def credential_headers(headers: Mapping[str, str] | None, secret: tuple[str, ...] = ()) -> list[str]:
    """The names of the headers that carry a credential, each value registered with
    :func:`~calibrate.base.secrets.remember` (with the token of ``Bearer X``, ``Basic X`` or ``Token X``,
    and the password inside Basic credentials).

    >>> credential_headers({"Authorization": "Bearer abcdefgh12345", "Accept": "text/plain"})
    ['Authorization']
    """
    names = []
    for name, value in (headers or {}).items():
        if name.lower() not in CREDENTIAL_HEADERS and name.lower() not in {s.lower() for s in secret}:
            continue
        names.append(name)
        value = str(value)
        remember(value)
        scheme, _, token = value.partition(" ")
        if token and scheme.lower() in ("bearer", "basic", "token"):
            remember(token.strip())
            if scheme.lower() == "basic":
                try:
                    remember(base64.b64decode(token.strip(), validate=True).decode("utf-8").partition(":")[2])
                except (binascii.Error, UnicodeDecodeError):
                    pass
    return names


def _no_query(url: Any) -> str:
    """A URL to show: without its query and fragment (where signed URLs keep their signatures)."""
    from yarl import URL

    url = url if isinstance(url, URL) else URL(str(url))
    return str(url.with_query(None).with_fragment(None)) + ("?..." if url.raw_query_string else "")


def redirect_target(
    current: Any,
    location: str,
    *,
    status: int,
    server: str,
    request: str,
    hops: int,
    policy: HttpPolicy,
    credentials: list[str],
) -> Any:
    """Where a redirect leads, when calibrate may follow it: on the same origin, within
    ``policy.max_redirects``; otherwise :class:`HttpError` (``kind="redirect"``) naming the target and
    what to do. Shared by both transports.

    Examples
    --------
    >>> from yarl import URL
    >>> redirect_target(URL("http://a:1/x"), "/y", status=307, server="S", request="GET /x", hops=0,
    ...                 policy=HttpPolicy(), credentials=[])
    URL('http://a:1/y')
    >>> redirect_target(URL("http://a:1/x"), "http://b:2/y", status=302, server="S at http://a:1",
    ...                 request="GET /x", hops=0, policy=HttpPolicy(), credentials=["Authorization"])
    Traceback (most recent call last):
    ...
    calibrate.base.http.HttpError: S at http://a:1: GET /x was answered with a redirect (HTTP 302) to http://b:2/y, another server: calibrate does not follow it, so that the request's credentials (Authorization) and its data go only to the address given; if http://b:2 is the right server, give its address instead
    """
    from yarl import URL

    try:
        target = current.join(URL(location))
    except (ValueError, TypeError):
        raise HttpError(
            f"{server}: {request} was answered with a redirect (HTTP {status}) to {clip(location, 200)!r}, "
            "which is not a URL",
            kind="redirect",
            target=clip(location, 200),
        ) from None
    shown = _no_query(target)
    if origin(target) != origin(current) or target.scheme not in ("http", "https"):
        what = (
            f"the request's credentials ({', '.join(credentials)}) and its data"
            if credentials
            else "the request and its data"
        )
        base = f"{target.scheme}://{target.raw_authority}" if target.host else shown
        raise HttpError(
            f"{server}: {request} was answered with a redirect (HTTP {status}) to {shown}, another "
            f"server: calibrate does not follow it, so that {what} go only to the address given; if "
            f"{base} is the right server, give its address instead",
            kind="redirect",
            target=shown,
        )
    if hops >= policy.max_redirects:
        raise HttpError(
            f"{server}: {request} was redirected more than {policy.max_redirects} times (last to "
            f"{shown}): give the address the redirects end at",
            kind="redirect",
            target=shown,
        )
    return target


def _too_large(server: str, request: str, size: int, limit: int, *, announced: bool) -> HttpError:
    how = "announces" if announced else "passed"
    return HttpError(
        f"{server}: {request}: the reply {how} {size:,} bytes, more than the {limit:,} calibrate reads "
        "(CALIBRATE_MAX_REPLY_MB raises the limit)",
        kind="too_large",
    )


@dataclass(frozen=True)
class Reply:
    """A whole reply: ``status``, ``headers`` (case-insensitive), ``body`` (bytes, within the cap), and
    the ``server`` and ``request`` it answers (for messages).

    Examples
    --------
    >>> reply = Reply(200, {}, b'{"id": 3}', "S at http://h:1", "GET /x")
    >>> reply.json(dict[str, int], expected="a count")
    {'id': 3}
    >>> Reply(200, {}, b"\\xff", "S at http://h:1", "GET /x").text()
    Traceback (most recent call last):
    ...
    calibrate.base.http.HttpError: S at http://h:1: GET /x: the reply is not UTF-8 text (byte 0xff at position 0)
    """

    status: int
    headers: Mapping[str, str]
    body: bytes
    server: str
    request: str

    def text(self) -> str:
        """The body as UTF-8 text; :class:`HttpError` (``kind="encoding"``) when it is not."""
        try:
            return self.body.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise HttpError(
                f"{self.server}: {self.request}: the reply is not UTF-8 text (byte "
                f"0x{self.body[exc.start]:02x} at position {exc.start})",
                kind="encoding",
            ) from None

    def json(self, schema: Any, *, expected: str) -> Any:
        """The body read into ``schema`` (:func:`~calibrate.base.documents.parse_json`); an
        :class:`HttpError` (``kind="document"``) names the server, the request and the field."""
        text = self.text()
        try:
            return parse_json(
                text,
                schema,
                source=f"{self.server}: {self.request}",
                expected=expected,
                max_bytes=max(len(self.body), 1),
            )
        except DocumentError as exc:
            raise HttpError(str(exc), kind="document", problems=exc.problems) from None

    def excerpt(self, limit: int = 200) -> str:
        """The start of the body as text, for a message or a record (undecodable bytes replaced),
        redacted before it is cut (:func:`~calibrate.base.secrets.clip`).

        >>> from calibrate.base.secrets import remember
        >>> remember("tok-0123456789")
        >>> Reply(401, {}, b"x" * 10 + b" bad key tok-0123456789", "S", "GET /").excerpt(24)
        'xxxxxxxxxx bad key [reda'
        """
        return clip(self.body[: limit * 4 + EXCERPT_MARGIN].decode("utf-8", errors="replace"), limit)

    @property
    def retry_after(self) -> float | None:
        """The ``Retry-After`` header in seconds, when it is a number."""
        try:
            return max(0.0, float(self.headers.get("retry-after") or ""))
        except ValueError:
            return None

    def status_error(self, message: str | None = None) -> HttpError:
        """The :class:`HttpError` (``kind="status"``) of an error status: ``message``, or
        ``HTTP STATUS from the server: BODY``."""
        return HttpError(
            message or f"HTTP {self.status} from the server: {self.excerpt()}",
            kind="status",
            status=self.status,
            retry_after=self.retry_after,
        )


def _connect_reason(exc: BaseException) -> str:
    error = getattr(exc, "os_error", None)
    errno = getattr(error, "errno", None)
    why = (
        os.strerror(errno)
        if isinstance(errno, int) and errno > 0
        else getattr(error, "strerror", None) or str(error or exc) or type(error or exc).__name__
    )
    host, port = getattr(exc, "host", "?"), getattr(exc, "port", "?")
    return f"{type(exc).__name__} to {host}:{port} ({why})"


class AsyncHttp:
    """An aiohttp session under an :class:`HttpPolicy`: ``await http.request(...)`` gives a whole
    :class:`Reply` (any status), or raises :class:`HttpError`. Made in the event loop that uses it;
    ``name`` says what the servers are in messages (``"the model server"``).

    Examples
    --------
    >>> async def ask():
    ...     http = AsyncHttp(name="a server")
    ...     try:
    ...         return await http.request("GET", "http://127.0.0.1:9/x", timeout_s=5)
    ...     finally:
    ...         await http.close()
    >>> asyncio.run(ask())  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    calibrate.base.http.HttpError: cannot reach a server at http://127.0.0.1:9 (ClientConnectorError to 127.0.0.1:9 (...)): GET /x
    """

    def __init__(
        self,
        *,
        name: str = "the server",
        headers: Mapping[str, str] | None = None,
        policy: HttpPolicy | None = None,
        connections: int = 0,
        keepalive_s: float = 15.0,
        secret_headers: tuple[str, ...] = (),
    ):
        self.name, self.policy = name, policy or HttpPolicy()
        self.headers = dict(headers or {})
        self.secret_headers = secret_headers
        self.credentials = credential_headers(self.headers, secret_headers)
        self._limits = (connections, keepalive_s)
        self._session = None

    def session(self):
        """The aiohttp session (made at the first request, in the running loop)."""
        import aiohttp

        if self._session is None:
            self._session = aiohttp.ClientSession(
                headers=self.headers,
                timeout=aiohttp.ClientTimeout(total=None),
                cookie_jar=aiohttp.DummyCookieJar(),
                connector=aiohttp.TCPConnector(limit=self._limits[0], keepalive_timeout=self._limits[1]),
            )
        return self._session

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def request(
        self,
        method: str,
        url: Any,
        *,
        data: bytes | str | None = None,
        headers: Mapping[str, str] | None = None,
        params: Mapping[str, str] | None = None,
        timeout_s: float | None = None,
    ) -> Reply:
        """One request under the policy: redirects checked, the whole exchange within ``timeout_s``
        (the policy's by default), the reply within the size cap.

        Raises
        ------
        HttpError
            Every failure, its ``kind`` saying which (see :class:`HttpError`).
        """
        from yarl import URL

        try:
            target = url if isinstance(url, URL) else URL(url)
        except (ValueError, TypeError) as exc:
            raise HttpError(f"{clip(url, 200)!r} is not a URL calibrate can send to ({exc})") from None
        if target.scheme not in ("http", "https") or not target.host:
            raise HttpError(f"{_no_query(target)}: calibrate sends requests over http:// or https:// only, to a host")
        limit = timeout_s or self.policy.timeout_s
        server = f"{self.name} at {target.scheme}://{target.host_port_subcomponent}"
        try:
            async with asyncio.timeout(limit):
                return await self._exchange(method, target, data, headers, params, server)
        except TimeoutError:
            raise HttpError(
                f"{server}: {method} {target.raw_path}: no complete reply within {limit:g} s (the server "
                "is slow, or trickles its reply)",
                kind="timeout",
                reason=f"no complete reply within {limit:g} s",
            ) from None

    async def _exchange(self, method: str, target, data, headers, params, server: str) -> Reply:
        import aiohttp

        extra = credential_headers(headers, self.secret_headers) if headers else []
        hops = 0
        while True:
            request = f"{method} {target.raw_path}"
            try:
                async with self.session().request(
                    method, target, data=data, headers=headers, params=params, allow_redirects=False
                ) as response:
                    if response.status in REDIRECTS and "Location" in response.headers:
                        target = redirect_target(
                            response.url,
                            response.headers["Location"],
                            status=response.status,
                            server=server,
                            request=request,
                            hops=hops,
                            policy=self.policy,
                            credentials=self.credentials + extra,
                        )
                        hops += 1
                        params = None
                        if response.status == 303 or (response.status in (301, 302) and method == "POST"):
                            method, data = ("HEAD" if method == "HEAD" else "GET"), None
                        continue
                    return Reply(
                        response.status, response.headers, await self._read(response, server, request), server, request
                    )
            except aiohttp.ClientConnectorError as exc:
                reason = _connect_reason(exc)
                raise HttpError(f"cannot reach {server} ({reason}): {request}", kind="connect", reason=reason) from None
            except (aiohttp.ClientError, OSError) as exc:
                reason = f"{type(exc).__name__} {exc}".strip()
                raise HttpError(
                    f"{server}: {request}: the connection failed ({reason})", kind="connection", reason=reason
                ) from None
            except (ValueError, UnicodeError) as exc:  # a header or URL aiohttp cannot send
                raise HttpError(
                    f"{server}: {request}: the request cannot be sent ({type(exc).__name__}: {exc})", kind="request"
                ) from None

    async def _read(self, response, server: str, request: str) -> bytes:
        limit = self.policy.max_reply_bytes
        announced = response.content_length
        if announced is not None and announced > limit:
            raise _too_large(server, request, announced, limit, announced=True)
        chunks, size = [], 0
        async for chunk in response.content.iter_any():
            size += len(chunk)
            if size > limit:
                raise _too_large(server, request, size, limit, announced=False)
            chunks.append(chunk)
        return b"".join(chunks)


def run_sync(make: Callable[[], Awaitable[T]]) -> T:
    """``await make()`` from synchronous code: in a new event loop, or, when this thread already runs
    one (a notebook), in a new loop on a worker thread.

    >>> async def three():
    ...     return 3
    >>> run_sync(three)
    3
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(make())
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(lambda: asyncio.run(make())).result()


def paginate(
    fetch: Callable[[str | None], tuple[T, str | None]],
    *,
    where: str,
    max_pages: int = MAX_PAGES,
    error: type[HttpError] = HttpError,
) -> Iterator[T]:
    """Each page ``fetch(token)`` gives, following the next page's token until there is none; a token
    given twice (the server's pages loop), or more than ``max_pages`` pages, is an ``error`` naming
    ``where``, never an endless loop.

    Examples
    --------
    >>> pages = {None: ([1, 2], "b"), "b": ([3], None)}
    >>> [x for page in paginate(pages.get, where="S: GET /items") for x in page]
    [1, 2, 3]
    >>> loop = {None: ([1], "b"), "b": ([2], "b")}
    >>> list(paginate(loop.get, where="S: GET /items"))
    Traceback (most recent call last):
    ...
    calibrate.base.http.HttpError: S: GET /items: page 2 gives the next-page token 'b' again (page 1 gave it): the server's pages go round in a loop; calibrate stops rather than read forever
    """
    seen: dict[str, int] = {}
    token: str | None = None
    number = 0
    while True:
        number += 1
        page, following = fetch(token)
        yield page
        if not following:
            return
        if following in seen:
            raise error(
                f"{where}: page {number} gives the next-page token {_shown(following)!r} again (page "
                f"{seen[following]} gave it): the server's pages go round in a loop; calibrate stops rather "
                "than read forever",
                kind="pages",
            )
        if number >= max_pages:
            raise error(
                f"{where}: more than {max_pages:,} pages, each giving another next-page token: calibrate "
                "stops rather than read without end (is this the server's pagination?)",
                kind="pages",
            )
        seen[following] = number
        token = following


def _shown(text: str, limit: int = 60) -> str:
    text = redact(text)
    return text if len(text) <= limit else text[:limit] + "..."


class HttpClient:
    """Requests to one server, one at a time, each under the policy, with a deadline for the whole
    command (counted from the client's creation); replies read through schemas.

    Parameters
    ----------
    base : str
        The server's address, ``http(s)://host:port`` (a path prefix allowed).
    name : str
        The tool (``"MLflow"``), in messages.
    headers : dict, optional
        Sent with every request; credential headers are registered as secrets.
    error : type
        The :class:`HttpError` subclass raised (``MlflowError``).
    policy : HttpPolicy, optional

    Examples
    --------
    >>> HttpClient("ftp://x", name="MLflow")
    Traceback (most recent call last):
    ...
    calibrate.base.http.HttpError: 'ftp://x': give the MLflow server's http:// or https:// address
    >>> HttpClient("http://me:pw@host:5000", name="MLflow")
    Traceback (most recent call last):
    ...
    calibrate.base.http.HttpError: 'http://host:5000': give the MLflow server's address without a user name or password in it (calibrate reads credentials from the environment)
    """

    def __init__(
        self,
        base: str,
        *,
        name: str,
        headers: Mapping[str, str] | None = None,
        error: type[HttpError] = HttpError,
        policy: HttpPolicy | None = None,
    ):
        from yarl import URL

        self.name, self.error, self.policy = name, error, policy or HttpPolicy()
        try:
            url = URL(str(base).strip())
        except (ValueError, TypeError):
            url = None
        if url is None or url.scheme not in ("http", "https") or not url.host:
            raise error(f"{clip(base, 200)!r}: give the {name} server's http:// or https:// address")
        if url.user is not None or url.password is not None:
            remember(url.password)
            raise error(
                f"{str(url.with_user(None))!r}: give the {name} server's address without a user name or "
                "password in it (calibrate reads credentials from the environment)"
            )
        self.uri = str(url.with_query(None).with_fragment(None)).rstrip("/")
        self.headers = {"Accept": "application/json", **(headers or {})}
        self.credentials = credential_headers(self.headers)
        self.started = time.monotonic()
        self.requests = 0

    @property
    def server(self) -> str:
        return f"{self.name} at {self.uri}"

    def _past_deadline(self, request: str) -> HttpError:
        return self.error(
            f"{self.server}: {request}: the command ran past its deadline of "
            f"{self.policy.command_timeout_s:g} s after {self.requests} requests "
            "(CALIBRATE_COMMAND_TIMEOUT_S changes it)",
            kind="timeout",
        )

    def _timeout(self, request: str) -> float:
        limit = self.policy.timeout_s
        if self.policy.command_timeout_s is not None:
            left = self.policy.command_timeout_s - (time.monotonic() - self.started)
            if left <= 0:
                raise self._past_deadline(request)
            limit = min(limit, left)
        return limit

    def send(
        self,
        method: str,
        path: str,
        *,
        query: list[tuple[str, str]] | None = None,
        body: Any = None,
        data: bytes | None = None,
        content_type: str | None = None,
    ) -> Reply:
        """One request; the whole :class:`Reply`, whatever its status. ``path`` is already encoded (build
        it with :func:`path_segment`); ``query`` pairs are encoded here; ``body`` is sent as JSON.

        Raises
        ------
        error
            The server cannot be reached, does not answer within the deadline, redirects to another
            server, or sends more than the cap.
        """
        from yarl import URL

        request = f"{method} {path}"
        try:
            encoded = urllib.parse.urlencode(query or [], quote_via=urllib.parse.quote)
        except UnicodeEncodeError:
            raise self.error(
                f"{self.server}: {request}: a query value is not Unicode text (a lone surrogate)"
            ) from None
        url = URL(self.uri + path + ("?" + encoded if encoded else ""), encoded=True)
        headers = {}
        payload = data
        if body is not None and data is None:
            payload = json.dumps(body).encode("utf-8")
            headers["Content-Type"] = "application/json"
        if content_type:
            headers["Content-Type"] = content_type
        limit = self._timeout(request)
        http = AsyncHttp(name=self.name, headers=self.headers, policy=self.policy)

        async def exchange() -> Reply:
            try:
                return await http.request(method, url, data=payload, headers=headers or None, timeout_s=limit)
            finally:
                await http.close()

        self.requests += 1
        try:
            reply = run_sync(exchange)
        except HttpError as exc:
            if exc.kind == "connect":
                raise self.error(
                    f"cannot reach {self.server} ({exc.reason}; {request}): is the server running, and "
                    "is this its address?",
                    kind="connect",
                    reason=exc.reason,
                ) from None
            if exc.kind == "timeout" and limit < self.policy.timeout_s:
                raise self._past_deadline(request) from None
            raise self.error(
                str(exc), kind=exc.kind, status=exc.status, target=exc.target, reason=exc.reason, problems=exc.problems
            ) from None
        return Reply(reply.status, reply.headers, reply.body, self.server, request)

    def call(self, method: str, path: str, schema: Any = None, *, expected: str = "", **options: Any) -> Any:
        """:meth:`send`, an error status raised as ``error`` (with the server's own message), and the
        reply read into ``schema`` (None: the reply is not read).

        Raises
        ------
        error
            As :meth:`send`; an error status (``kind="status"``, ``status`` set); a reply that is not
            UTF-8, not JSON or not ``schema`` (``kind="document"``, naming the field).
        """
        reply = self.send(method, path, **options)
        if reply.status >= 400 or (300 <= reply.status < 400):
            raise self.error(
                f"{self.server} refused {reply.request} (HTTP {reply.status}): {_detail(reply)}",
                kind="status",
                status=reply.status,
                retry_after=reply.retry_after,
            )
        if schema is None:
            return None
        try:
            return reply.json(schema, expected=expected or f"a {self.name} reply")
        except HttpError as exc:
            raise self.error(str(exc), kind=exc.kind, problems=exc.problems) from None

    def pages(self, fetch: Callable[[str | None], tuple[T, str | None]], *, request: str) -> Iterator[T]:
        """:func:`paginate` for this server (``request`` names it in the error)."""
        return paginate(fetch, where=f"{self.server}: {request}", max_pages=self.policy.max_pages, error=self.error)


class _Said(Schema):
    """An error reply's own words, where servers put them."""

    message: JsonValue = None
    detail: JsonValue = None
    error: JsonValue = None
    error_code: JsonValue = None


def _detail(reply: Reply) -> str:
    """What a server said about an error: the ``message``, ``detail`` or ``error`` of its JSON reply, else
    the start of its text."""
    try:
        said = parse_json(reply.body, _Said, source="reply", expected="an error", max_bytes=max(len(reply.body), 1))
    except DocumentError:
        return reply.excerpt(500) or "(no message)"
    for value in (said.message, said.detail, said.error, said.error_code):
        if isinstance(value, str) and value.strip():
            return clip(value, 500)
        if isinstance(value, dict) and isinstance(value.get("message"), str):
            return clip(value["message"], 500)
    return reply.excerpt(500) or "(no message)"


# ---------------------------------------------------------------------------------------------- httpx
def httpx_client(base_url: str, *, name: str, policy: HttpPolicy | None = None, secret_headers: tuple[str, ...] = ()):
    """An ``httpx.Client`` for an SDK that takes one (``label_studio_sdk.LabelStudio(httpx_client=...)``),
    keeping the same rules as calibrate's own requests: a redirect to another origin refused (naming
    it), same-origin ones followed a few times, the whole of each reply within the deadline and the size
    cap, error texts redacted. Needs httpx (the SDK's dependency).

    Examples
    --------
    >>> client = httpx_client("http://127.0.0.1:9", name="Label Studio", policy=HttpPolicy(timeout_s=5))
    >>> client.get("http://127.0.0.1:9/api/projects")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    calibrate.base.http.HttpError: cannot reach Label Studio at http://127.0.0.1:9 (ConnectError...): GET /api/projects
    >>> client.close()
    """
    import httpx

    policy = policy or HttpPolicy()
    transport = _httpx_transport()(name, policy, secret_headers)
    limit = httpx.Timeout(policy.timeout_s)
    return httpx.Client(base_url=base_url, transport=transport, timeout=limit, follow_redirects=False)


_TRANSPORT: list[type] = []


def _httpx_transport() -> type:
    """The httpx transport class (made once, when httpx is first needed)."""
    if _TRANSPORT:
        return _TRANSPORT[0]
    import httpx

    transport = _policy_transport(httpx, _capped_stream(httpx))
    _TRANSPORT.append(transport)
    return transport


def _capped_stream(httpx: Any) -> type:
    """The class of a reply's stream that keeps the size cap and the deadline (``httpx``: the module)."""

    class CappedStream(httpx.SyncByteStream):
        """A reply's bytes, counted against the cap and the request's deadline as they arrive."""

        def __init__(self, stream, *, limit: int, deadline: float, timeout_s: float, server: str, request: str):
            self.stream, self.limit, self.deadline, self.timeout_s = stream, limit, deadline, timeout_s
            self.server, self.request = server, request

        def __iter__(self):
            try:
                yield from self._chunks()
            except httpx.TimeoutException:
                raise HttpError(
                    f"{self.server}: {self.request}: no complete reply within {self.timeout_s:g} s", kind="timeout"
                ) from None
            except httpx.TransportError as exc:
                raise HttpError(
                    f"{self.server}: {self.request}: the connection failed while reading the reply "
                    f"({type(exc).__name__}: {exc})",
                    kind="connection",
                ) from None

        def _chunks(self):
            size = 0
            for chunk in self.stream:
                size += len(chunk)
                if size > self.limit:
                    raise _too_large(self.server, self.request, size, self.limit, announced=False)
                if time.monotonic() > self.deadline:
                    raise HttpError(
                        f"{self.server}: {self.request}: no complete reply within {self.timeout_s:g} s "
                        "(the server is slow, or trickles its reply)",
                        kind="timeout",
                    )
                yield chunk

        def close(self) -> None:
            self.stream.close()

    return CappedStream


def _redirected(httpx: Any, request: Any, status: int, target: Any) -> Any:
    """The request to send to ``target`` after a redirect of ``status``: a 303 (and a 301 or 302 after a
    POST) becomes a GET without a body, as browsers do."""
    request.read()
    method, content = request.method, request.content
    if status == 303 or (status in (301, 302) and method == "POST"):
        method, content = ("HEAD" if method == "HEAD" else "GET"), b""
    headers = [
        (k, v)
        for k, v in request.headers.multi_items()
        if not (content == b"" and k.lower() in ("content-length", "content-type"))
    ]
    return httpx.Request(method, str(target), headers=headers, content=content, extensions=request.extensions)


def _policy_transport(httpx: Any, capped_stream: type) -> type:
    """The transport class: httpx's own, with calibrate's rules around it (``httpx``: the module)."""
    from yarl import URL

    class PolicyTransport(httpx.BaseTransport):
        """httpx's own transport, with calibrate's rules around it."""

        def __init__(self, name: str, policy: HttpPolicy, secret_headers: tuple[str, ...]):
            self.name, self.policy, self.secret_headers = name, policy, secret_headers
            self.inner = httpx.HTTPTransport()

        def handle_request(self, request: httpx.Request) -> httpx.Response:
            started = time.monotonic()
            credentials = credential_headers(dict(request.headers), self.secret_headers)
            request.headers["Accept-Encoding"] = "identity"  # the cap counts the bytes as they are read
            current = URL(str(request.url), encoded=True)
            server = f"{self.name} at {current.scheme}://{current.host_port_subcomponent}"
            for hops in range(self.policy.max_redirects + 2):
                what = f"{request.method} {current.raw_path}"
                response = self._send(request, server, what)
                location = response.headers.get("location")
                if response.status_code in REDIRECTS and location:
                    response.close()
                    current = redirect_target(
                        current,
                        location,
                        status=response.status_code,
                        server=server,
                        request=what,
                        hops=hops,
                        policy=self.policy,
                        credentials=credentials,
                    )
                    request = _redirected(httpx, request, response.status_code, current)
                    continue
                announced = response.headers.get("content-length", "")
                if announced.isdigit() and int(announced) > self.policy.max_reply_bytes:
                    response.close()
                    raise _too_large(server, what, int(announced), self.policy.max_reply_bytes, announced=True)
                return httpx.Response(
                    response.status_code,
                    headers=response.headers,
                    extensions=response.extensions,
                    stream=capped_stream(
                        response.stream,
                        limit=self.policy.max_reply_bytes,
                        deadline=started + self.policy.timeout_s,
                        timeout_s=self.policy.timeout_s,
                        server=server,
                        request=what,
                    ),
                )
            raise AssertionError("unreachable: redirect_target refuses more hops")  # pragma: no cover

        def _send(self, request: httpx.Request, server: str, what: str) -> httpx.Response:
            """One request through httpx's transport, its failures said as an ``HttpError`` naming the server."""
            try:
                return self.inner.handle_request(request)
            except httpx.ConnectError as exc:
                reason = f"{type(exc).__name__}: {exc}"
                raise HttpError(f"cannot reach {server} ({reason}): {what}", kind="connect", reason=reason) from None
            except httpx.TimeoutException:
                raise HttpError(
                    f"{server}: {what}: no complete reply within {self.policy.timeout_s:g} s", kind="timeout"
                ) from None
            except httpx.TransportError as exc:
                raise HttpError(
                    f"{server}: {what}: the connection failed ({type(exc).__name__}: {exc})", kind="connection"
                ) from None

        def close(self) -> None:
            self.inner.close()

    return PolicyTransport
