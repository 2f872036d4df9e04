"""The JSON-over-HTTP calls the importers make to a tool's server, with the standard library only (no
tool's client package is needed beside calibrate)."""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

__all__ = ["JsonClient", "ServerError"]

TIMEOUT_S = 60.0


class ServerError(RuntimeError):
    """A tool's server cannot be reached, refuses a request, or lacks what was asked for."""


class JsonClient:
    """Requests to one server (``base``: ``http(s)://host:port``), each reply read as JSON.

    ``name`` is the tool (in messages), ``headers`` go with every request, and ``error`` is the
    exception class raised.
    """

    def __init__(self, base: str, *, name: str, headers: dict[str, str] | None = None,
                 error: type[ServerError] = ServerError, timeout_s: float = TIMEOUT_S):
        self.uri = base.rstrip("/")
        self.name, self.error, self.timeout_s = name, error, timeout_s
        self.headers = {"Content-Type": "application/json", **(headers or {})}

    def call(self, method: str, path: str, body: Any = None, *, query: list[tuple[str, str]] | None = None,
             data: bytes | None = None, content_type: str | None = None) -> Any:
        """One request; the JSON reply (None for an empty one). Raises ``error`` saying what failed."""
        url = self.uri + path + ("?" + urllib.parse.urlencode(query) if query else "")
        headers = dict(self.headers)
        if content_type:
            headers["Content-Type"] = content_type
        payload = data if data is not None else (json.dumps(body).encode() if body is not None else None)
        request = urllib.request.Request(url, data=payload, method=method, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as reply:
                text = reply.read().decode("utf-8")
        except urllib.error.HTTPError as exc:
            detail = exc.read().decode("utf-8", errors="replace")[:500]
            try:
                found = json.loads(detail)
                detail = found.get("message") or found.get("detail") or detail
            except (ValueError, AttributeError):
                pass
            raise self.error(f"{self.name} at {self.uri} refused {method} {path} (HTTP {exc.code}): {detail}") from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise self.error(f"cannot reach {self.name} at {self.uri} ({reason}): is the server running, and is this "
                             "its address?") from None
        try:
            return json.loads(text) if text.strip() else None
        except ValueError:
            raise self.error(f"{self.name} at {self.uri} answered {method} {path} with something that is not JSON "
                             f"({text[:100]!r}): is this the {self.name} server?") from None
