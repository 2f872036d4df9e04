"""A small real RAG service on 127.0.0.1 for the collection tests.

A BM25 retriever (``rank_bm25``) over ``tests/data/rag_corpus.jsonl`` answers ``POST /api/ask`` with
``{"query", "top_k", "session"}``: the answer is the top chunk, the chunks are the top ``top_k`` in rank
order, ``{"data": {"answer", "chunks": [{"id", "text"}]}}``. Every request body is recorded as received.
Faults by marker in the query, each per session: ``[[429xN]]`` answers 429 (with Retry-After 0) the first
N times, ``[[500xN]]`` 500, ``[[slowxN]]`` waits ``slow_s`` the first N times, ``[[notjson]]`` answers
text, ``[[noanswer]]`` leaves the answer out, ``[[badcontexts]]`` gives the chunks as one string.
``delay_s`` slows every reply (for interrupting a run).
"""

from __future__ import annotations

import json
import re
import sys
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from rank_bm25 import BM25Okapi

CORPUS = Path(__file__).resolve().parents[1] / "data" / "rag_corpus.jsonl"
FAULT = re.compile(r"\[\[(429|500|slow)x(\d+)\]\]")


def tokens(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower())


class RagService:
    def __init__(self, *, delay_s: float = 0.0, slow_s: float = 2.0, port: int = 0):
        self.docs = [json.loads(line) for line in CORPUS.read_text().splitlines() if line.strip()]
        self.bm25 = BM25Okapi([tokens(d["text"]) for d in self.docs])
        self.delay_s, self.slow_s = delay_s, slow_s
        self.bodies: list[str] = []
        self.seen: Counter = Counter()
        self.lock = threading.Lock()
        service = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True

            def log_message(self, *args):
                pass

            def _send(self, status: int, body: str, content_type: str = "application/json", extra=None):
                data = body.encode("utf-8")
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(data)))
                for k, v in (extra or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):  # the same service, its parameters in the query string
                from urllib.parse import parse_qsl, urlsplit

                request = dict(parse_qsl(urlsplit(self.path).query))
                with service.lock:
                    service.bodies.append(json.dumps(request))
                return self._answer(request)

            def do_POST(self):
                raw = self.rfile.read(int(self.headers.get("Content-Length", 0))).decode("utf-8")
                with service.lock:
                    service.bodies.append(raw)
                return self._answer(json.loads(raw))

            def _answer(self, request: dict):
                query, session = request["query"], str(request.get("session", ""))
                with service.lock:
                    service.seen[session] += 1
                    count = service.seen[session]
                if service.delay_s:
                    time.sleep(service.delay_s)
                for kind, times in FAULT.findall(query):
                    if count <= int(times):
                        if kind == "slow":
                            time.sleep(service.slow_s)
                        else:
                            return self._send(int(kind), json.dumps({"error": kind}), extra={"Retry-After": "0"})
                if "[[notjson]]" in query:
                    return self._send(200, "Internal answer: sorry, not JSON", "text/plain")
                scores = service.bm25.get_scores(tokens(query))
                order = sorted(range(len(service.docs)), key=lambda i: -scores[i])[: int(request.get("top_k", 3))]
                chunks = [{"id": service.docs[i]["id"], "text": service.docs[i]["text"]} for i in order]
                data = {"answer": chunks[0]["text"], "chunks": chunks}
                if "[[noanswer]]" in query:
                    del data["answer"]
                if "[[badcontexts]]" in query:
                    data["chunks"] = " ".join(c["text"] for c in chunks)
                return self._send(200, json.dumps({"data": data}))

        class Server(ThreadingHTTPServer):
            request_queue_size = 256
            daemon_threads = True

        self.server = Server(("127.0.0.1", port), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/api/ask"

    def __enter__(self) -> RagService:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()


if __name__ == "__main__":  # a service of its own, for a test that interrupts a collection run
    with RagService(delay_s=float(sys.argv[1]), port=int(sys.argv[2])) as s:
        print(s.url, flush=True)
        threading.Event().wait()
