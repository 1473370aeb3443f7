"""Quick measurements of the SQLite store's hot paths.

    .venv/bin/python benchmarks/bench_store.py            # 100k events / vectors / memories
    .venv/bin/python benchmarks/bench_store.py --n 20000  # smaller, faster

Prints: append events/s (batches of 1000, ~5% admitted), search_dense p50/p95 over N x 384
random unit vectors in one workspace, search_sparse p50/p95 over N memories of short texts.
Only the store call is timed; building the events and vectors is not.
"""

from __future__ import annotations

import argparse
import itertools
import os
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path

import numpy as np

from episodic.model import Event, Memory, Scope, ScopeFilter
from episodic.store.sqlite import SqliteStore

DIM = 384
BATCH = 1000
ADMISSION_RATE = 0.05
QUERIES = 200
T0 = datetime(2026, 1, 1, tzinfo=UTC)

WORDS = [
    "deploy", "rollback", "checkout", "payment", "gateway", "cache", "ttl", "oom", "memory",
    "leak", "latency", "p99", "keeper", "denied", "approval", "production", "staging", "canary",
    "escalation", "timeout", "retry", "flaky", "test", "build", "pipeline", "migration", "schema",
    "index", "vector", "embedding", "queue", "backlog", "worker", "crash", "restart",
    "certificate", "expired", "dns", "resolver", "region", "failover", "database", "replica",
    "lag", "disk", "quota", "alert", "incident", "postmortem", "owner", "review", "merge",
    "conflict", "branch", "release", "hotfix", "feature", "flag",
]
AGENTS = [f"agent-{i}" for i in range(20)]
CREWS = [f"crew-{i}" for i in range(4)]
SYLLABLES = [c + v for c in "bdfgklmnprstvz" for v in "aeiou"]
ZIPF_VOCABULARY = 20_000


def vocabulary(rng: random.Random) -> tuple[list[str], list[float]]:
    """Journal-like word frequencies: a Zipf distribution (s = 1) over 20k words whose most
    frequent ranks are the domain words; the rest are made-up words. Returns the words and
    their cumulative weights."""
    made_up = {"".join(rng.choices(SYLLABLES, k=rng.randint(2, 4))) for _ in range(30_000)}
    words = WORDS + sorted(made_up - set(WORDS))[: ZIPF_VOCABULARY - len(WORDS)]
    return words, list(itertools.accumulate(1.0 / rank for rank in range(1, len(words) + 1)))


_VOCAB: tuple[list[str], list[float]] | None = None


def sentence(rng: random.Random) -> str:
    global _VOCAB
    if _VOCAB is None:
        _VOCAB = vocabulary(random.Random(0))
    words, cumulative = _VOCAB
    return " ".join(rng.choices(words, cum_weights=cumulative, k=rng.randint(6, 14)))


def make_events(n: int, rng: random.Random) -> list[Event]:
    return [
        Event(
            id=f"evt_{i:08d}", workspace_id="acme", ts=T0 + timedelta(seconds=i),
            type=rng.choice(("tool.call", "exec.output_chunk", "peer.conversation", "note")),
            severity=rng.choice(("debug", "info", "info", "notice", "warn")),
            summary=sentence(rng), payload={"step": i, "ok": rng.random() > 0.1},
            agent_id=rng.choice(AGENTS), crew_id=rng.choice(CREWS),
        )
        for i in range(n)
    ]


def memory_of(e: Event, base: float) -> Memory:
    return Memory(
        id=e.id, workspace_id=e.workspace_id, ts=e.ts, type=e.type, content=e.summary,
        severity=e.severity, payload=e.payload, agent_id=e.agent_id, crew_id=e.crew_id,
        base_importance=base, importance=base, source_event_ids=(e.id,), created_at=e.ts,
    )


def percentiles(samples_s: list[float]) -> str:
    ms = sorted(s * 1000 for s in samples_s)
    p95 = ms[min(len(ms) - 1, round(0.95 * (len(ms) - 1)))]
    return f"p50 {statistics.median(ms):6.2f} ms   p95 {p95:6.2f} ms"


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def bench_append(path: Path, n: int, rng: random.Random) -> None:
    events = make_events(n, rng)
    batches = []
    for start in range(0, n, BATCH):
        batch = events[start : start + BATCH]
        admitted = [memory_of(e, 0.5) for e in batch if rng.random() < ADMISSION_RATE]
        batches.append((batch, admitted))
    admitted_total = sum(len(m) for _, m in batches)
    with SqliteStore(path) as store:
        elapsed = sum(timed(partial(store.append, b, m)) for b, m in batches)
        assert store.stats().events == n
    print(f"append        {n / elapsed:10,.0f} events/s  ({n:,} events in batches of {BATCH}, "
          f"{admitted_total / n:.1%} admitted, {elapsed:.2f} s)")


def bench_dense(path: Path, n: int, rng: random.Random) -> None:
    np_rng = np.random.default_rng(7)
    events = make_events(n, rng)
    memories = [memory_of(e, rng.choice((0.5, 0.5, 0.6, 0.9))) for e in events]
    vectors = np_rng.standard_normal((n, DIM), dtype=np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    with SqliteStore(path) as store:
        for start in range(0, n, 5000):
            store.append(events[start : start + 5000], memories[start : start + 5000])
            store.put_vectors("bench", DIM, [
                (memories[i].id, vectors[i]) for i in range(start, min(n, start + 5000))
            ])
        queries = np_rng.standard_normal((QUERIES, DIM), dtype=np.float32)
        flt = ScopeFilter("acme")
        load = timed(lambda: store.search_dense(flt, queries[0], 10))
        print(f"dense load    {load * 1000:8.0f} ms  (first search: {n:,} x {DIM} from SQLite)")
        for label, f in (
            ("whole ws", flt),
            ("own", ScopeFilter("acme", Scope.OWN, agent_id=AGENTS[0])),
            ("crew_shared", ScopeFilter("acme", Scope.CREW_SHARED, agent_id=AGENTS[0],
                                        crew_id=CREWS[0])),
        ):
            samples = [timed(partial(store.search_dense, f, q, 15)) for q in queries]
            print(f"search_dense  {percentiles(samples)}  ({label}, {n:,} x {DIM}, k=15)")
        # A recall marks its hits; the next search must notice a write and stay cheap.
        samples = []
        for q in queries[:50]:
            store.mark_referenced("acme", [memories[0].id], T0)
            samples.append(timed(partial(store.search_dense, flt, q, 15)))
        print(f"search_dense  {percentiles(samples)}  (after a write on this connection)")


def bench_sparse(path: Path, n: int, rng: random.Random) -> None:
    events = make_events(n, rng)
    memories = [memory_of(e, 0.5) for e in events]
    with SqliteStore(path) as store:
        for start in range(0, n, 5000):
            store.append(events[start : start + 5000], memories[start : start + 5000])
        flt = ScopeFilter("acme")
        queries = [" ".join(sentence(rng).split()[:rng.randint(2, 4)]) for _ in range(QUERIES)]
        samples = [timed(partial(store.search_sparse, flt, q, 15)) for q in queries]
        print(f"search_sparse {percentiles(samples)}  (whole ws, {n:,} memories, 2-4 words "
              "drawn like the texts, k=15)")
        own = ScopeFilter("acme", Scope.OWN, agent_id=AGENTS[0])
        samples = [timed(partial(store.search_sparse, own, q, 15)) for q in queries]
        print(f"search_sparse {percentiles(samples)}  (same queries, own scope)")
        common = [" ".join(rng.sample(WORDS, 3)) for _ in range(QUERIES)]
        samples = [timed(partial(store.search_sparse, flt, q, 15)) for q in common]
        print(f"search_sparse {percentiles(samples)}  (3 of the 58 most frequent words, "
              "whole ws)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000, help="rows per measurement")
    parser.add_argument("--only", choices=("append", "dense", "sparse"), action="append",
                        help="run only these measurements (repeatable)")
    args = parser.parse_args()
    only = set(args.only or ("append", "dense", "sparse"))
    rng = random.Random(42)
    # Latencies on a shared machine move with its load; print it next to them.
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs, "
          f"numpy {np.__version__}")
    with tempfile.TemporaryDirectory() as tmp:
        if "append" in only:
            bench_append(Path(tmp) / "append.db", args.n, rng)
        if "dense" in only:
            bench_dense(Path(tmp) / "dense.db", args.n, rng)
        if "sparse" in only:
            bench_sparse(Path(tmp) / "sparse.db", args.n, rng)
    print(f"load average {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    main()
