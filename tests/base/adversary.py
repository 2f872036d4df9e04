"""An adversarial HTTP server on 127.0.0.1 for the tests of calibrate's HTTP client and of the readers of
servers' replies: each path answers as a test scripts it (redirects, trickles, endless pages, huge,
malformed or non-UTF-8 bodies), and every request it gets is recorded with its headers.

``with Adversary() as server:``, then ``server.route(path, behaviour)`` (``"*"``: every other path);
``server.url`` is its origin and
``server.seen`` the requests (method, raw path with query, headers, body).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class Adversary:
    """A threaded HTTP/1.1 server; ``routes`` maps a path (without its query) to a behaviour, called
    with the request handler (``handler.send(...)`` and friends below); anything else is a 404."""

    def __init__(self) -> None:
        self.routes: dict[str, Callable[[Any], None]] = {}
        self.seen: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _any(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                with outer.lock:
                    outer.seen.append(
                        {
                            "method": self.command,
                            "path": self.path,
                            "headers": {k.lower(): v for k, v in self.headers.items()},
                            "body": body,
                        }
                    )
                self.body = body
                behaviour = outer.routes.get(self.path.split("?", 1)[0]) or outer.routes.get("*")
                if behaviour is None:
                    return self.send(404, {"message": f"no route {self.path}"})
                try:
                    behaviour(self)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            do_GET = do_POST = do_PUT = do_HEAD = do_DELETE = _any

            def send(
                self, status: int, body: Any = b"", headers: dict[str, str] | None = None, length: int | None = None
            ) -> None:
                data = body if isinstance(body, bytes) else json.dumps(body).encode()
                self.send_response(status)
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(data) if length is None else length))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)

            def redirect(self, status: int, location: str) -> None:
                self.send(status, {"moved": location}, {"Location": location})

            def trickle(self, every_s: float = 0.2, total: int = 10_000) -> None:
                """Announce ``total`` bytes and send one every ``every_s`` seconds."""
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(total))
                self.end_headers()
                for _ in range(total):
                    self.wfile.write(b" ")
                    self.wfile.flush()
                    time.sleep(every_s)

            def flood(self, chunk: int = 1 << 20, chunks: int = 10_000) -> None:
                """Send megabytes without end and without a length (the connection closes at the end)."""
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Connection", "close")
                self.end_headers()
                self.close_connection = True
                block = b"[" + b"0," * (chunk // 2 - 1) + b"0]"
                for _ in range(chunks):
                    self.wfile.write(block)

        class Server(ThreadingHTTPServer):
            daemon_threads = True
            request_queue_size = 64

            def handle_error(self, request, client_address):
                pass  # a client hanging up on a trickle or a flood is what the tests do

        self.httpd = Server(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def route(self, path: str, behaviour: Callable[[Any], None]) -> None:
        self.routes[path] = behaviour

    def json(self, path: str, document: Any, status: int = 200) -> None:
        """``path`` answers ``document`` as JSON (bytes as they are)."""
        self.routes[path] = lambda h: h.send(status, document, {"Content-Type": "application/json"})

    def requests_to(self, path: str) -> list[dict[str, Any]]:
        with self.lock:
            return [r for r in self.seen if r["path"].split("?", 1)[0] == path]

    def __enter__(self) -> Adversary:
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
