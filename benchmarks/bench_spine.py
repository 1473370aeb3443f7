"""The spine's three numbers, measured side by side in one run.

    .venv/bin/python benchmarks/bench_spine.py [--memories 100000] [--events 100000]

1. journal ingest through the service (parse, validate, admit, store), no embedding;
2. the local MiniLM embedder: sentences/s at batch 64 (~30-word sentences) and one query;
3. recall over N memories in one workspace, embedding excluded (the query vector is
   precomputed), hybrid dense + BM25 + RRF + fetch + mark-referenced, p50/p95.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

from episodic import Episodic, Settings
from episodic.embed.base import Matrix
from episodic.store import open_store

NOW = datetime(2026, 11, 21, tzinfo=UTC)
RNG = random.Random(7)
WORDS = [
    "checkout",
    "deploy",
    "oom",
    "cache",
    "ttl",
    "keeper",
    "denied",
    "approval",
    "payment",
    "gateway",
    "flaky",
    "test",
    "migration",
    "schema",
    "lock",
    "table",
    "dns",
    "resolver",
    "ranking",
    "model",
    "eval",
    "regression",
    "feature",
    "drop",
    "latency",
    "p99",
    "timeout",
    "retry",
    "queue",
    "backlog",
    "consumer",
    "lag",
    "kafka",
    "postgres",
    "replica",
    "failover",
    "memory",
    "leak",
    "heap",
    "container",
    "restart",
    "crashloop",
    "rollback",
    "canary",
    "release",
    "config",
    "secret",
    "rotation",
    "certificate",
    "expired",
    "tls",
    "ingress",
    "budget",
    "cost",
    "spike",
    "alert",
    "pager",
    "oncall",
    "runbook",
    "incident",
    "review",
]
WORDS += [f"term{i}" for i in range(4000)]  # a long tail, like real vocabularies
WEIGHTS = [1.0 / (rank + 1) ** 0.9 for rank in range(len(WORDS))]


def sentence(n_words: int) -> str:
    return " ".join(RNG.choices(WORDS, weights=WEIGHTS, k=n_words))


def pct(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def bench_ingest(n: int) -> float:
    types = (
        ["exec.output_chunk"] * 50
        + ["container.metrics"] * 25
        + ["tool.call"] * 20
        + [
            "peer.escalation",
            "summary.generated",
            "approval.denied",
            "keeper.decision",
            "eval.regression_detected",
        ]
    )
    lines = [
        json.dumps(
            {
                "id": f"e{i}",
                "workspace": f"ws{i % 3}",
                "agent": f"agent{i % 17}",
                "crew": f"crew{i % 4}",
                "type": RNG.choice(types),
                "severity": RNG.choice(["info", "info", "warn", "error"]),
                "ts": (NOW - timedelta(seconds=i)).isoformat(),
                "summary": sentence(20),
                "payload": {"exit": i % 3, "host": f"node{i % 9}"},
            }
        ).encode()
        for i in range(n)
    ]
    rates = []
    for _ in range(3):
        with (
            tempfile.TemporaryDirectory() as tmp,
            Episodic.open(
                f"sqlite:///{tmp}/ingest.db", embedder=None, settings=Settings(embedder="none")
            ) as mem,
        ):
            t0 = time.perf_counter()
            report = mem.ingest_lines(lines)
            elapsed = time.perf_counter() - t0
            assert report.stored == n and not report.errors
            rates.append(n / elapsed)
    admitted = report.admitted
    rate = statistics.median(rates)
    print(
        f"ingest: {n} events ({admitted} admitted), median of 3: {rate:,.0f} events/s "
        f"(runs: {', '.join(f'{r:,.0f}' for r in rates)})"
    )
    return rate


def bench_embedder() -> None:
    from episodic.embed.local import MiniLMEmbedder

    t0 = time.perf_counter()
    emb = MiniLMEmbedder()
    emb.embed_batch(["warm up"])
    print(f"embedder: loaded in {time.perf_counter() - t0:.2f}s")
    natural = (
        "the checkout service ran out of memory after the cache ttl change and the deployer "
        "rolled back the release while oncall paged the payment team about failed card "
        "authorisations"
    )
    words = natural.split(" ")
    batches = [[" ".join(RNG.sample(words, 28)) + "." for _ in range(64)] for _ in range(6)]
    rates = []
    for batch in batches:
        t0 = time.perf_counter()
        emb.embed_batch(batch)
        rates.append(len(batch) / (time.perf_counter() - t0))
    single = []
    for i in range(100):
        text = f"why did checkout fail {i}"
        t0 = time.perf_counter()
        emb.embed_batch([text])
        single.append((time.perf_counter() - t0) * 1000)
    print(
        f"embedder: batch 64 x ~30 words: median {statistics.median(rates):.0f} sentences/s; "
        f"one query: p50 {pct(single, 50):.2f} ms, p95 {pct(single, 95):.2f} ms"
    )


class FixedVectors:
    """Answers queries with precomputed vectors so recall timing excludes embedding."""

    model_id = "bench/fixed"

    def __init__(self, dim: int, table: dict[str, np.ndarray]) -> None:
        self.dim = dim
        self.table = table

    def embed_batch(self, texts: Sequence[str]) -> Matrix:
        return np.stack([self.table[t] for t in texts]).astype(np.float32)


def bench_recall(n: int, dim: int = 384, queries: int = 300, policy: str = "default") -> None:
    np_rng = np.random.default_rng(3)
    # Clustered vectors look more like real embeddings than uniform noise does.
    centers = np_rng.standard_normal((200, dim)).astype(np.float32)
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{Path(tmp)}/recall.db"
        store = open_store(url)
        t0 = time.perf_counter()
        mem = Episodic(
            store=store, embedder=None, settings=Settings(embedder="none"), clock=lambda: NOW
        )
        events = [
            {
                "id": f"m{i}",
                "workspace": "big",
                "agent": f"agent{i % 20}",
                "crew": f"crew{i % 5}",
                "type": "peer.escalation",
                "summary": sentence(18),
                "ts": (NOW - timedelta(minutes=i)).isoformat(),
            }
            for i in range(n)
        ]
        report = mem.ingest(events)
        assert report.admitted == n
        for start in range(0, n, 5000):
            ids = [f"m{i}" for i in range(start, min(n, start + 5000))]
            vecs = centers[np_rng.integers(0, 200, len(ids))] + 0.6 * np_rng.standard_normal(
                (len(ids), dim)
            ).astype(np.float32)
            vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
            store.put_vectors("bench/fixed", dim, list(zip(ids, vecs, strict=True)))
        print(f"recall: built {n} memories with vectors in {time.perf_counter() - t0:.1f}s")
        texts = [sentence(RNG.randint(3, 7)) for _ in range(queries)]
        qv = centers[np_rng.integers(0, 200, queries)] + 0.6 * np_rng.standard_normal(
            (queries, dim)
        ).astype(np.float32)
        qv /= np.linalg.norm(qv, axis=1, keepdims=True)
        embedder = FixedVectors(dim, dict(zip(texts, qv, strict=True)))
        fast = Episodic(store=store, embedder=embedder, settings=Settings(), clock=lambda: NOW)
        fast.recall(texts[0], workspace="big")  # loads the matrix once
        for label, kwargs in (
            ("workspace", {}),
            ("own scope", {"agent": "agent3", "scope": "own"}),
        ):
            times = []
            for text in texts:
                t0 = time.perf_counter()
                result = fast.recall(text, workspace="big", k=5, policy=policy, **kwargs)  # type: ignore[arg-type]
                times.append((time.perf_counter() - t0) * 1000)
                assert result.mode == "vector"
            print(
                f"recall ({policy}, {label}, k=5, {n} memories): p50 {pct(times, 50):.2f} ms, "
                f"p95 {pct(times, 95):.2f} ms"
            )
        store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--memories", type=int, default=100_000)
    parser.add_argument("--skip-embedder", action="store_true")
    parser.add_argument("--policy", default="default,crewship", help="comma-separated")
    args = parser.parse_args()
    bench_ingest(args.events)
    if not args.skip_embedder:
        bench_embedder()
    for policy in args.policy.split(","):
        bench_recall(args.memories, policy=policy)


if __name__ == "__main__":
    main()
