"""A server of their own for the client examples, when no ``EPISODIC_KEY`` is set: what
``episodic serve`` runs, over a new database in a temporary folder, on a free loopback
port, with a new admin key for workspace ``acme``. Needs the [server] extra."""

from __future__ import annotations

import socket
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from episodic import Episodic
from episodic.extras import MissingExtra, require

HOW_TO_USE_YOURS = (
    "to use a server of yours instead:\n"
    "    episodic keys create --workspace acme --role admin   # prints a key\n"
    "    EPISODIC_URL=http://127.0.0.1:8765 EPISODIC_KEY=<key> python {script}"
)


@contextmanager
def own_server(script: str) -> Iterator[tuple[str, str]]:
    """(base URL, admin key) of a server that lives as long as the ``with`` block."""
    note = "EPISODIC_KEY is not set: starting a server of its own.\n" + HOW_TO_USE_YOURS
    print(note.format(script=script), file=sys.stderr)
    try:
        require("server", "this example's own server")
    except MissingExtra as exc:
        print(exc, file=sys.stderr)
        raise SystemExit(2) from None
    import uvicorn

    from episodic.http import asgi

    with tempfile.TemporaryDirectory() as folder:
        mem = Episodic.open(f"sqlite:///{Path(folder) / 'memory.db'}")
        _, key = mem.create_key("acme", role="admin")
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind(("127.0.0.1", 0))
        server = uvicorn.Server(uvicorn.Config(asgi(mem), log_level="warning"))
        thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
        thread.start()
        while not server.started and thread.is_alive():
            time.sleep(0.02)
        try:
            yield f"http://127.0.0.1:{sock.getsockname()[1]}", key
        finally:
            server.should_exit = True
            thread.join(10)
            sock.close()
            mem.close()
