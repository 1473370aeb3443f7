"""A stand-in for the Hugging Face hub: serves a model folder under the hub's URL layout
(``/{repo}/resolve/{revision}/{file}``) from a thread on a free loopback port.

``corrupt`` names files served with one byte changed; ``cut`` names files whose response
promises the whole file (Content-Length) and closes the connection halfway. Every request
is counted, so a test can show that nothing reached the network.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

MODEL_REPO = "sentence-transformers/all-MiniLM-L6-v2"


@dataclass
class Hub:
    root: Path  # the model folder (config.json, tokenizer.json, model.safetensors, ...)
    corrupt: frozenset[str] = frozenset()
    cut: frozenset[str] = frozenset()
    requests: list[str] = field(default_factory=list)
    url: str = ""


def _handler(hub: Hub) -> type[BaseHTTPRequestHandler]:
    prefix = f"/{MODEL_REPO}/resolve/"

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            hub.requests.append(self.path)
            if not self.path.startswith(prefix):
                self.send_error(404)
                return
            _revision, _, name = self.path[len(prefix) :].partition("/")
            path = hub.root / name
            if not name or not path.is_file():
                self.send_error(404)
                return
            data = path.read_bytes()
            if name in hub.corrupt:
                data = data[:-1] + bytes([data[-1] ^ 0xFF])
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if name in hub.cut:
                self.wfile.write(data[: len(data) // 2])
                self.wfile.flush()
                self.close_connection = True
                return
            self.wfile.write(data)

        def log_message(self, format: str, *args: object) -> None:
            pass  # keep test output clean

    return Handler


@contextmanager
def serve_hub(
    root: Path, *, corrupt: frozenset[str] = frozenset(), cut: frozenset[str] = frozenset()
) -> Iterator[Hub]:
    hub = Hub(root, corrupt, cut)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(hub))
    hub.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield hub
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
