"""A process for the crash tests to SIGKILL (tests/test_crash.py, tests/stress/test_crash.py).

usage:
  crash_worker.py write URL TAG BATCH     ingest journal events TAG-0, TAG-1, ... in batches
                                          until killed; after each ``ingest`` returns, its
                                          ids are printed (one line each) and flushed: a
                                          printed id is an acknowledged write
  crash_worker.py index URL EMBEDDER BATCH [forever]
                                          sweep pending memories (fake | local embedder),
                                          printing "swept N" per committed batch; exits when
                                          nothing is left, or polls on with "forever"
  crash_worker.py upkeep URL JOB          run one upkeep job (decay | compact | consolidate |
                                          health | reviews) on every workspace; prints
                                          "start" before and "done" after
Every mode prints "started" once its store is open.
"""

from __future__ import annotations

import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from crash_support import NOW, fake_settings, journal_event
from episodic import Episodic
from episodic.config import Settings
from episodic.embed import FakeEmbedder, make_embedder
from episodic.embed.base import Embedder
from episodic.store import open_store
from episodic.write.indexer import Indexer


def say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def write(url: str, tag: str, batch: int) -> None:
    mem = Episodic(store=open_store(url), embedder=None, llm=None, settings=fake_settings())
    rng = random.Random(tag)
    say("started")
    i = 0
    while True:
        events = [journal_event(tag, i + j, rng) for j in range(batch)]
        report = mem.ingest(events)
        if report.errors:
            raise SystemExit(f"ingest refused: {report.errors}")
        say("\n".join(str(e["id"]) for e in events))
        i += batch


def embedder_of(name: str) -> Embedder:
    if name == "fake":
        return FakeEmbedder()
    made = make_embedder(Settings.from_env(embedder="local"))
    assert made is not None
    return made


def index(url: str, embedder_name: str, batch: int, forever: bool) -> None:
    embedder = embedder_of(embedder_name)
    indexer = Indexer(open_store(url), embedder, batch=batch)
    say("started")
    while True:
        result = indexer.sweep_once()
        if result.embedded:
            say(f"swept {result.embedded}")
        elif not forever:
            say("idle")
            return
        else:
            time.sleep(0.05)


def upkeep(url: str, job: str) -> None:
    mem = Episodic(
        store=open_store(url),
        embedder=FakeEmbedder(),
        llm=None,
        clock=lambda: NOW,
        settings=fake_settings(),
    )
    say("started")
    say("start")
    run = {
        "decay": lambda: [mem.decay()],
        "compact": mem.compact,
        "consolidate": mem.consolidate,
        "health": mem.health_snapshot,
        "reviews": lambda: [mem.run_reviews()],
    }[job]
    results = run()
    say("done " + " ".join(r.status for r in results))


def main() -> None:
    mode, url = sys.argv[1], sys.argv[2]
    if mode == "write":
        write(url, sys.argv[3], int(sys.argv[4]))
    elif mode == "index":
        index(url, sys.argv[3], int(sys.argv[4]), sys.argv[5:] == ["forever"])
    elif mode == "upkeep":
        upkeep(url, sys.argv[3])
    else:
        raise SystemExit(f"unknown mode {mode!r}")


if __name__ == "__main__":
    main()
