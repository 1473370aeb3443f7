"""A controllable embedding server speaking Ollama's ``POST /api/embed`` protocol.

Healthy, it answers with ``FakeEmbedder`` vectors (deterministic, text-dependent), so a
recall against what it indexed finds things. Its ``mode`` makes it fail the ways a real
server does: gone (nothing listens on the port: connection refused), slow (answers after
the client's timeout), or answering garbage (wrong dimension, wrong count, NaN, inf,
all-zero vectors, a body that is not JSON, HTTP 500). ``restart()`` brings it back on the
same port, as a restarted Ollama would come back.

    with running_embed_server() as srv:
        srv.mode = "nan"
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from episodic.embed.fake import FakeEmbedder

DIM = 64
MODEL = "fake-embed"
# Every way it can be unhealthy; "down" is the only one where nothing listens.
FAILURES = (
    "down",
    "slow",
    "http500",
    "malformed",
    "wrong_dim",
    "wrong_count",
    "nan",
    "inf",
    "zero",
)
SLOW_S = 3.0


@dataclass
class EmbedServer:
    port: int = 0
    mode: str = "up"
    requests: int = 0
    release: threading.Event = field(default_factory=threading.Event)
    _httpd: ThreadingHTTPServer | None = None
    _thread: threading.Thread | None = None
    _fake: FakeEmbedder = field(default_factory=lambda: FakeEmbedder(dim=DIM))

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def answer(self, body: Any) -> tuple[int, bytes, float]:
        texts = list(body.get("input") or []) if isinstance(body, dict) else []
        rows = self._fake.embed_batch(texts).tolist() if texts else []
        mode = self.mode
        if mode == "slow":
            return 200, json.dumps({"embeddings": rows}).encode(), SLOW_S
        if mode == "http500":
            return 500, b'{"error": "model crashed"}', 0.0
        if mode == "malformed":
            return 200, b'{"embeddings": [[0.1, 0.2', 0.0
        if mode == "wrong_dim":
            rows = [[*r, 0.5] for r in rows]
        elif mode == "wrong_count":
            rows = rows[:-1] if len(rows) > 1 else rows + rows
        elif mode == "nan":
            rows = [[float("nan"), *r[1:]] for r in rows]
        elif mode == "inf":
            rows = [[float("inf"), *r[1:]] for r in rows]
        elif mode == "zero":
            rows = [[0.0] * len(r) for r in rows]
        # json.dumps writes NaN and Infinity, as a sloppy server would.
        return 200, json.dumps({"embeddings": rows}).encode(), 0.0

    # -- lifecycle ----------------------------------------------------------------------
    def start(self) -> None:
        srv = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                srv.requests += 1
                status, payload, delay = srv.answer(json.loads(raw) if raw else None)
                if delay:
                    srv.release.wait(delay)
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except OSError:
                    pass  # the client gave up (slow mode)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.release.clear()
        httpd = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        httpd.daemon_threads = True
        self.port = int(httpd.server_address[1])
        self._httpd = httpd
        self._thread = threading.Thread(target=httpd.serve_forever, args=(0.02,), daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop listening: connections to the port are refused from now on."""
        self.release.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(5)
            self._thread = None

    def set(self, mode: str) -> None:
        """Switch to ``mode`` ("up" or one of ``FAILURES``), stopping or restarting the
        listener as "down" requires."""
        if mode == "down":
            self.stop()
        elif self._httpd is None:
            self.start()
        if mode != "slow":
            self.release.set()  # let requests still waiting in slow mode finish
        else:
            self.release.clear()
        self.mode = mode


@contextmanager
def running_embed_server() -> Iterator[EmbedServer]:
    srv = EmbedServer()
    srv.start()
    try:
        yield srv
    finally:
        srv.stop()
