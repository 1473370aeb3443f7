"""Upkeep's numbers, measured in one run.

    .venv/bin/python benchmarks/bench_upkeep.py [--decay-memories 1000000] [--memories 100000]
                                                [--only decay,health,link,review]

1. **decay**: ``Store.decay_importance`` (seed 000's formula, set-based SQL in chunks of
   50k rows) over N memories in a SQLite file; median of 3 runs, the first on fresh rows
   (every row changes), the next two a day later each (rows past the 180-day floor keep
   their value and are not rewritten); plus a run at the same time again (idempotent:
   nothing to write).
2. **health**: the health snapshot of one workspace of M memories with 384-d vectors in
   clustered directions, 4 crews and relations on 60% of them: ``compute_health`` on a
   cold store (first use loads the vectors from SQLite) and warm (median of 3), and the
   whole daily ``snapshot_workspace`` (the workspace and its 4 crews).
3. **link**: ``similar`` edges for memories indexed into that workspace, as the indexer
   does it: sweeps of 64 (one batched search per sweep) and single ``index_one`` calls;
   per memory, median over the sweeps (or calls). The dense index picks up each batch's
   new vectors inside the timed call, as it does in a real sweep. Also: the share of
   the edges an exact scan would find that the sweeps found.
4. **review**: what recording a pending review adds to a marked recall (BM25 leg).
"""

from __future__ import annotations

import argparse
import os
import random
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

from episodic import Episodic, Settings
from episodic.model import Memory, ScopeFilter
from episodic.store import SqliteStore
from episodic.store.base import Relation
from episodic.upkeep.health import compute_health, snapshot_workspace
from episodic.upkeep.relations import SIMILAR_MIN_COSINE, link_similar, similar_edges

NOW = datetime(2026, 11, 24, 3, 0, tzinfo=UTC)
DIM = 384
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
    "dns",
    "ranking",
    "model",
    "eval",
    "regression",
    "latency",
    "timeout",
    "retry",
    "queue",
    "kafka",
    "postgres",
    "replica",
    "failover",
    "memory",
    "leak",
    "container",
    "restart",
    "rollback",
    "canary",
]
CREWS = ("platform", "payments", "search", "ml")
LINK_BATCH = 64
LINK_SWEEPS = 30
LINK_SINGLES = 50


def timed(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 14)))


def memories(n: int, rng: random.Random, *, prefix: str, ws: str = "acme") -> list[Memory]:
    out = []
    for i in range(n):
        ts = NOW - timedelta(days=rng.uniform(0, 400))
        base = rng.choice((0.5, 0.5, 0.55, 0.65, 0.7, 0.9))
        out.append(
            Memory(
                id=f"{prefix}{i}",
                workspace_id=ws,
                ts=ts,
                type="peer.escalation",
                content=sentence(rng),
                agent_id=f"agent-{i % 40}",
                crew_id=CREWS[i % len(CREWS)],
                base_importance=base,
                importance=base,
                reference_count=rng.choice((0, 0, 0, 1, 2, 7)),
                created_at=ts,
            )
        )
    return out


# N memories of one workspace, written by SQLite itself (a Python loop over 1M rows would
# take minutes of the benchmark's time, not the job's): ages uniform over 400 days, base
# importances and reference counts drawn like the journal's. The store's triggers (FTS
# mirror) run as for any insert; the store migrates the file first.
_DECAY_ROWS_SQL = """
WITH RECURSIVE k(x) AS (SELECT 0 UNION ALL SELECT x + 1 FROM k WHERE x < ?2 - 1),
r(x, age, pick, refs) AS (
  SELECT x, abs(random()) % 34560000, abs(random()) % 6, abs(random()) % 6 FROM k)
INSERT INTO memories (id, workspace_id, crew_id, agent_id, ts, type, severity, content,
  payload, base_importance, importance, reference_count, status, created_at, updated_at)
SELECT ?1 || x, 'acme', 'crew-' || (x % 4), 'agent-' || (x % 40),
  strftime('%Y-%m-%dT%H:%M:%f000Z', '2026-11-24T03:00:00', '-' || age || ' seconds'),
  'peer.escalation', 'info', 'checkout deploy cache ttl oom memory ' || x, '{}',
  CASE pick WHEN 0 THEN 0.5 WHEN 1 THEN 0.5 WHEN 2 THEN 0.55 WHEN 3 THEN 0.65
            WHEN 4 THEN 0.7 ELSE 0.9 END,
  0.5, CASE refs WHEN 4 THEN 1 WHEN 5 THEN 7 ELSE 0 END, 'active',
  '2026-11-24T03:00:00.000000Z', '2026-11-24T03:00:00.000000Z'
FROM r
"""


def bench_decay(path: Path, n: int) -> None:
    SqliteStore(path).close()  # create and migrate
    t0 = time.perf_counter()
    conn = sqlite3.connect(path, isolation_level=None)
    for start in range(0, n, 100_000):
        conn.execute("BEGIN")
        conn.execute(_DECAY_ROWS_SQL, (f"d{start}-", min(100_000, n - start)))
        conn.execute("COMMIT")
    conn.close()
    print(f"decay: built {n:,} memories in {time.perf_counter() - t0:.1f}s")
    with SqliteStore(path) as store:
        runs = []
        for day in (1, 2, 3):
            changed = 0

            def run(day: int = day) -> None:
                nonlocal changed
                changed = store.decay_importance(NOW + timedelta(days=day))

            runs.append(timed(run))
            print(f"  run at day +{day}: {runs[-1]:.2f}s, {changed:,} rows changed")
        again = timed(lambda: store.decay_importance(NOW + timedelta(days=3)))
        print(
            f"decay over {n:,} memories: median {statistics.median(runs):.2f}s "
            f"(runs {', '.join(f'{r:.2f}' for r in runs)}); the same time again {again:.2f}s "
            "(goal <= 10 s)"
        )


def clustered(n: int, rng: np.random.Generator, centroids: np.ndarray) -> np.ndarray:
    """Unit vectors near random centroids: same-centroid pairs have cosine ~0.85."""
    picks = rng.integers(0, centroids.shape[0], n)
    noise = rng.standard_normal((n, DIM), dtype=np.float32) * (0.42 / np.sqrt(DIM))
    v = centroids[picks] + noise.astype(np.float32)
    out: np.ndarray = (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)
    return out


def build_workspace(path: Path, n: int) -> np.ndarray:
    rng = random.Random(2)
    np_rng = np.random.default_rng(2)
    centroids = np_rng.standard_normal((max(1, n // 50), DIM)).astype(np.float32)
    centroids /= np.linalg.norm(centroids, axis=1, keepdims=True)
    vectors = clustered(n, np_rng, centroids)
    t0 = time.perf_counter()
    with SqliteStore(path) as store:
        for start in range(0, n, 10_000):
            batch = memories(min(10_000, n - start), rng, prefix=f"m{start}-")
            store.append([], batch)
            store.put_vectors(
                "bench", DIM, [(m.id, vectors[start + i]) for i, m in enumerate(batch)]
            )
        ids = [f"m{s}-{i}" for s in range(0, n, 10_000) for i in range(min(10_000, n - s))]
        edges = [
            Relation(ids[i], ids[rng.randrange(i)], "similar", 0.85)
            for i in range(1, n)
            if rng.random() < 0.6
        ]
        for start in range(0, len(edges), 20_000):
            store.add_relations("acme", edges[start : start + 20_000])
    print(f"workspace: built {n:,} memories with vectors in {time.perf_counter() - t0:.1f}s")
    return centroids


def bench_health(path: Path, n: int) -> None:
    with SqliteStore(path) as store:
        cold = timed(lambda: compute_health(store, "acme", None, NOW))
        warm = [timed(lambda: compute_health(store, "acme", None, NOW)) for _ in range(3)]
        snap = compute_health(store, "acme", None, NOW)
        daily = [timed(lambda: snapshot_workspace(store, "acme", NOW)) for _ in range(3)]
    print(
        f"health of a {n:,}-memory workspace: cold {cold:.2f}s (incl. loading vectors), "
        f"warm median {statistics.median(warm):.2f}s; with its 4 crews (daily job) "
        f"median {statistics.median(daily):.2f}s (goal <= 5 s)"
    )
    print(
        f"  score {snap.score:.1f}: freshness {snap.freshness:.1f}, coverage "
        f"{snap.coverage:.1f}, coherence {snap.coherence:.1f}, efficiency "
        f"{snap.efficiency:.1f}, reachability {snap.reachability:.1f}"
    )


def bench_link(path: Path, n: int, centroids: np.ndarray) -> None:
    rng = random.Random(3)
    np_rng = np.random.default_rng(3)
    with SqliteStore(path) as store:
        store.search_dense(ScopeFilter("acme"), centroids[0], 1)  # load the index once
        per_memory: list[float] = []
        edges = exact_edges = probe_hits = 0
        for sweep in range(LINK_SWEEPS):
            batch = memories(LINK_BATCH, rng, prefix=f"new{sweep}-")
            vectors = clustered(LINK_BATCH, np_rng, centroids)
            store.append([], batch)
            store.put_vectors("bench", DIM, [(m.id, vectors[i]) for i, m in enumerate(batch)])
            rows = [(m.id, "acme", vectors[i]) for i, m in enumerate(batch)]
            ids = [m.id for m in batch]
            found = 0

            def link(rows: list[tuple[str, str, np.ndarray]] = rows) -> None:
                nonlocal found
                found = link_similar(store, rows)

            per_memory.append(timed(link) / LINK_BATCH)
            edges += found
            # What an exact scan would have linked (the timed path probes the nearest
            # lists of the inverted file past 20k rows).
            exact = store.search_dense_many(
                ScopeFilter("acme"), vectors, LINK_BATCH + 3, None,
                exclude=[ids[i:] for i in range(len(ids))],
            )  # fmt: skip
            want = {
                (ids[j], c.memory_id) for j, found_j in enumerate(exact)
                for c in found_j[:3] if c.score >= SIMILAR_MIN_COSINE
            }  # fmt: skip
            got = {(e.src, e.dst) for e in similar_edges(store, "acme", ids, vectors)}
            exact_edges += len(want)
            probe_hits += len(want & got)
        singles: list[float] = []
        for i in range(LINK_SINGLES):
            (m,) = memories(1, rng, prefix=f"one{i}-")
            vector = clustered(1, np_rng, centroids)[0]
            store.append([], [m])
            store.put_vectors("bench", DIM, [(m.id, vector)])
            singles.append(timed(lambda m=m, v=vector: link_similar(store, [(m.id, "acme", v)])))
    print(
        f"similar-edge linking at {n:,}: sweeps of {LINK_BATCH}: median "
        f"{statistics.median(per_memory) * 1000:.2f} ms per memory "
        f"(p95 {np.percentile(per_memory, 95) * 1000:.2f}); index_one: median "
        f"{statistics.median(singles) * 1000:.2f} ms (goal <= 2 ms per memory); "
        f"{edges / (LINK_SWEEPS * LINK_BATCH):.2f} edges per memory"
    )
    share = probe_hits / exact_edges if exact_edges else 1.0
    print(f"  the sweeps found {share:.3f} of the {exact_edges} edges an exact scan finds")


def bench_review_cost(path: Path, queries: int = 300) -> None:
    """What recording a pending review adds to a recall: the same marked recalls (BM25
    leg, k=5) with and without the insert, interleaved, on the health workspace."""
    rng = random.Random(4)
    texts = [" ".join(rng.sample(WORDS, 3)) for _ in range(queries)]
    with SqliteStore(path) as store:
        settings_on, settings_off = Settings(review_recalls=True), Settings(review_recalls=False)
        on = Episodic(store=store, embedder=None, settings=settings_on, clock=lambda: NOW)
        off = Episodic(store=store, embedder=None, settings=settings_off, clock=lambda: NOW)
        with_review, without = [], []
        for text in texts:
            with_review.append(timed(lambda t=text: on.recall(t, workspace="acme", policy="bm25")))
            without.append(timed(lambda t=text: off.recall(t, workspace="acme", policy="bm25")))
    p50_on, p50_off = statistics.median(with_review), statistics.median(without)
    print(
        f"recall with a pending review recorded: p50 {p50_on * 1000:.2f} ms, without "
        f"{p50_off * 1000:.2f} ms (+{(p50_on - p50_off) * 1000:.2f} ms; p95 "
        f"{np.percentile(with_review, 95) * 1000:.2f} vs {np.percentile(without, 95) * 1000:.2f})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--decay-memories", type=int, default=1_000_000)
    parser.add_argument("--memories", type=int, default=100_000)
    parser.add_argument("--only", default="decay,health,link,review")
    args = parser.parse_args()
    parts = set(args.only.split(","))
    print(f"load average {os.getloadavg()[0]:.2f}, {os.cpu_count()} cpus")
    with tempfile.TemporaryDirectory(prefix="bench_upkeep_") as tmp:
        if "decay" in parts:
            bench_decay(Path(tmp) / "decay.db", args.decay_memories)
        if parts & {"health", "link", "review"}:
            path = Path(tmp) / "workspace.db"
            centroids = build_workspace(path, args.memories)
            if "health" in parts:
                bench_health(path, args.memories)
            if "link" in parts:
                bench_link(path, args.memories, centroids)
            if "review" in parts:
                bench_review_cost(path)


if __name__ == "__main__":
    main()
