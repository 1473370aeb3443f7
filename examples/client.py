"""Talk to a running ``episodic serve`` from another process with ``episodic.Client``.

    episodic serve &                          # the server (needs the [server] extra)
    episodic keys create --workspace acme --role admin   # prints a key
    EPISODIC_URL=http://127.0.0.1:8765 EPISODIC_KEY=<key> python examples/client.py

It remembers a note, recalls it, corrects it, shows its history and forgets it. The
client needs only the core install (or ``pip install 'episodic-agent-memory[client]'``)."""

from __future__ import annotations

import os
import sys

from episodic import Client, EpisodicError


def main() -> int:
    url = os.environ.get("EPISODIC_URL", "http://127.0.0.1:8765")
    key = os.environ.get("EPISODIC_KEY")
    if not key:
        print("set EPISODIC_KEY to an API key (episodic keys create <workspace>)", file=sys.stderr)
        return 2
    try:
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
    except EpisodicError as exc:
        print(f"episodic: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
