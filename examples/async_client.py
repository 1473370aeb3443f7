"""The same conversation with a running ``episodic serve`` from asyncio, with
``episodic.AsyncClient``: several look-ups in flight at once on one connection pool.

    python examples/async_client.py    # starts a server of its own (needs the [server] extra)

or, against a server of yours:

    episodic serve &                                        # needs the [server] extra
    episodic keys create --workspace acme --role admin      # prints a key
    EPISODIC_URL=http://127.0.0.1:8765 EPISODIC_KEY=<key> python examples/async_client.py
"""

from __future__ import annotations

import asyncio
import os
import sys
from contextlib import nullcontext

from own_server import own_server

from episodic import AsyncClient, EpisodicError

QUESTIONS = ("how do I deploy payments?", "what does a payments deploy need?")


async def talk(url: str, key: str) -> None:
    async with AsyncClient(url, key) as mem:
        note = await mem.remember("deploys of payments need the VPN up first", agent="ops")
        answers = await asyncio.gather(*(mem.recall(q, mark=False) for q in QUESTIONS))
        for question, result in zip(QUESTIONS, answers, strict=True):
            top = result.hits[0].memory.content if result.hits else "(nothing)"
            print(f"{question} -> {top}")
        print("forgot:", (await mem.forget(memory=note.id)).memories, "memory")


def main() -> int:
    key = os.environ.get("EPISODIC_KEY")
    url = os.environ.get("EPISODIC_URL", "http://127.0.0.1:8765")
    server = own_server("examples/async_client.py") if not key else nullcontext((url, key))
    try:
        with server as (url, key):
            asyncio.run(talk(url, key))
    except EpisodicError as exc:
        print(f"episodic: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
