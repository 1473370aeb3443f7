"""What the PostgreSQL store's plumbing costs a small call: one version of episodic against
another, side by side in one run.

    .venv/bin/python benchmarks/bench_pg_reads.py [--base main] [--rounds 3]
        [--memories 2000] [--calls 2000] [--server 18|16]

1. starts a throwaway PostgreSQL (``tests/pg_servers.py``: 18 with pgvector 0.8 by
   default) and fills one workspace with ``--memories`` journal memories, indexed with the
   hashing fake embedder (64 dimensions: the store's round trips are measured here, not
   the model);
2. extracts ``src/`` of ``--base`` (``git archive``) as "before" and takes this checkout's
   ``src/`` as "after";
3. runs each version in a fresh process, alternating, ``--rounds`` times; each times, one
   call after another on an idle store:
   - a read transaction of one statement (``SELECT 1`` in the store's ``_read``);
   - a write transaction of one statement (the same in ``_write``);
   - ``get_memories`` of 10 ids;
   - ``search_dense`` of the whole workspace, limit 20;
   - a recall (k=5, the default policy, nothing marked, so the database stays the same
     for every version), three words of the memories' vocabulary;
4. prints the median over rounds of each call's median (microseconds) and after/before.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg

from side_by_side import ROOT, extract_src, run_child

WORDS = [
    "deploy",
    "gateway",
    "payment",
    "stalled",
    "retry",
    "cache",
    "pod",
    "checkout",
    "latency",
    "queue",
    "worker",
    "index",
    "vector",
    "shard",
    "disk",
    "rollout",
    "canary",
    "quota",
    "token",
    "billing",
]
WORKSPACE = "bench"


def seed(url: str, memories: int) -> None:
    from episodic import Episodic
    from episodic.embed.fake import FakeEmbedder
    from episodic.store import open_store
    from episodic.store.urls import libpq_url

    rnd = random.Random(7)
    with Episodic(store=open_store(url), embedder=FakeEmbedder(dim=64)) as mem:
        events = [
            {
                "id": f"e{i}",
                "workspace": WORKSPACE,
                "agent": f"agent{i % 5}",
                "type": "peer.escalation",
                "summary": " ".join(rnd.choice(WORDS) for _ in range(8)),
                "ts": "2026-11-20T10:00:00Z",
            }
            for i in range(memories)
        ]
        report = mem.ingest(events)
        assert not report.errors, report.errors
        while mem.index_once().embedded:
            pass
    # Statistics now, not when autovacuum gets to it a minute later: the plans of the
    # first rounds would otherwise differ from the last ones'.
    with psycopg.connect(libpq_url(url), autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE")


def _median_us(call: Callable[[], object], count: int) -> float:
    for _ in range(min(50, count)):
        call()
    took = []
    for _ in range(count):
        started = time.perf_counter()
        call()
        took.append((time.perf_counter() - started) * 1e6)
    return statistics.median(took)


def child(url: str, calls: int) -> dict[str, float]:
    """One version's medians (microseconds), run in a process of its own."""
    from episodic import Episodic
    from episodic.embed.fake import FakeEmbedder
    from episodic.model import ScopeFilter
    from episodic.store.postgres import PostgresStore

    store = PostgresStore(url)
    rnd = random.Random(1)
    with Episodic(store=store, embedder=FakeEmbedder(dim=64)) as mem:
        memory_ids = [h.memory.id for h in mem.recall("deploy", workspace=WORKSPACE, k=10).hits]

        everyone = ScopeFilter(WORKSPACE)
        vector = FakeEmbedder(dim=64).embed_batch(["deploy stalled on the gateway"])[0]

        def read() -> None:
            with store._read() as conn:
                conn.execute("SELECT 1").fetchall()

        def write() -> None:
            with store._write() as conn:
                conn.execute("SELECT 1").fetchall()

        def recall() -> None:
            query = " ".join(rnd.sample(WORDS, 3))
            mem.recall(query, workspace=WORKSPACE, k=5, mark=False)

        return {
            "read": _median_us(read, calls),
            "write": _median_us(write, calls),
            "get_memories": _median_us(lambda: store.get_memories(WORKSPACE, memory_ids), calls),
            "search_dense": _median_us(lambda: store.search_dense(everyone, vector, 20), calls),
            "recall": _median_us(recall, max(100, calls // 4)),
        }


def run_version(src: Path, url: str, calls: int) -> dict[str, Any]:
    code = (
        "import json, sys; import bench_pg_reads as b; "
        "print(json.dumps(b.child(sys.argv[1], int(sys.argv[2]))))"
    )
    return run_child(src, code, [url, str(calls)])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default="main", help="the git revision measured as before")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--memories", type=int, default=2000)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--server", choices=("18", "16"), default="18")
    args = parser.parse_args()

    sys.path.insert(0, str(ROOT / "tests"))
    import pg_servers

    with tempfile.TemporaryDirectory(prefix="pgr") as tmp:
        server = pg_servers.start(Path(tmp) / "pg", version=args.server)
        try:
            url = server.get_uri()
            seed(url, args.memories)
            before_src = extract_src(args.base, Path(tmp))
            versions = {"before": before_src, "after": ROOT / "src"}
            runs: dict[str, list[dict[str, Any]]] = {name: [] for name in versions}
            for r in range(args.rounds):
                # Alternating, and the other way round every other round.
                order = list(versions) if r % 2 == 0 else list(reversed(versions))
                for name in order:
                    runs[name].append(run_version(versions[name], url, args.calls))
                    print(f"round {r + 1} {name}: {json.dumps(runs[name][-1])}", flush=True)
        finally:
            server.cleanup()

    print(
        f"\nPostgreSQL {args.server}, {args.memories} memories, medians of {args.rounds} "
        f"rounds, microseconds ({args.base} vs this checkout)"
    )
    print("call".ljust(16) + "before".rjust(10) + "after".rjust(10) + "after/before".rjust(14))
    for key in ("read", "write", "get_memories", "search_dense", "recall"):
        before = statistics.median(run[key] for run in runs["before"])
        after = statistics.median(run[key] for run in runs["after"])
        print(f"{key:<16}{before:10.0f}{after:10.0f}{after / before:14.2f}")


if __name__ == "__main__":
    main()
