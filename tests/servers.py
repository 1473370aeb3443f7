"""Real servers for tests: uvicorn on a free loopback port, in a thread, stopped after."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import uvicorn


@contextmanager
def serve(app: Any) -> Iterator[str]:
    """Serve ``app`` on 127.0.0.1 at a port the OS picks; yields the base URL."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


def call(
    base: str, secret: str, method: str, path: str, body: Any = None, **params: Any
) -> httpx.Response:
    """One request to the HTTP API at ``base`` as the API key ``secret``."""
    return httpx.request(
        method,
        f"{base}{path}",
        json=body,
        params=params or None,
        headers={"Authorization": f"Bearer {secret}"},
        timeout=30,
    )
