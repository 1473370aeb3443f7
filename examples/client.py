"""Talk to a running ``episodic serve`` from another process with ``episodic.Client``.

    python examples/client.py          # starts a server of its own (needs the [server] extra)

or, against a server of yours:

    episodic serve &                                        # needs the [server] extra
    episodic keys create --workspace acme --role admin      # prints a key
    EPISODIC_URL=http://127.0.0.1:8765 EPISODIC_KEY=<key> python examples/client.py

It remembers a note, recalls it, corrects it, shows its history and forgets it. The
client needs only the core install (or ``pip install 'episodic-agent-memory[client]'``)."""

from __future__ import annotations

import os
import sys
from contextlib import nullcontext

from own_server import own_server

from episodic import Client, EpisodicError


def talk(url: str, key: str) -> None:
    with Client(url, key) as mem:
        print("server:", mem.health())
        note = mem.remember("deploys of payments need the VPN up first", agent="ops")
        for hit in mem.recall("how do I deploy payments?", mark=False).hits:
            print(f"recalled {hit.score:.3f}  {hit.memory.content}")
        mem.update(note.id, content="deploys of payments need the VPN and a change ticket")
        for version in mem.history(note.id):
            print(f"version {version.version}: {version.content}")
        print(mem.render("deploying payments", mark=False))
        print("forgot:", mem.forget(memory=note.id).memories, "memory")


def main() -> int:
    key = os.environ.get("EPISODIC_KEY")
    url = os.environ.get("EPISODIC_URL", "http://127.0.0.1:8765")
    server = own_server("examples/client.py") if not key else nullcontext((url, key))
    try:
        with server as (url, key):
            talk(url, key)
    except EpisodicError as exc:
        print(f"episodic: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
