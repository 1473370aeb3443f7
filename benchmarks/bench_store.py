"""Quick measurements of the SQLite store's hot paths.

    .venv/bin/python benchmarks/bench_store.py            # 100k events / vectors / memories
    .venv/bin/python benchmarks/bench_store.py --n 20000  # smaller, faster

Prints: append events/s (batches of 1000, ~5% admitted), search_dense p50/p95 over N x 384
random unit vectors in one workspace, search_sparse p50/p95 over N memories of short
journal-like texts (with English function words in them) for three query sets, each run
through the store's sparse query modes side by side (seed 000's query, the same without
stopwords, and the budgeted default), whole workspace and own scope, with how far each
mode's top 15 agrees with the seed's and how good it is by exact BM25. Only the store call
is timed; building the events and vectors is not.
"""

from __future__ import annotations

import argparse
import itertools
import os
import random
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path

import numpy as np

from episodic.model import Event, Memory, Scope, ScopeFilter
from episodic.store.sqlite import SparseMode, SqliteStore

DIM = 384
BATCH = 1000
ADMISSION_RATE = 0.05
QUERIES = 200
T0 = datetime(2026, 1, 1, tzinfo=UTC)

WORDS = [
    "deploy",
    "rollback",
    "checkout",
    "payment",
    "gateway",
    "cache",
    "ttl",
    "oom",
    "memory",
    "leak",
    "latency",
    "p99",
    "keeper",
    "denied",
    "approval",
    "production",
    "staging",
    "canary",
    "escalation",
    "timeout",
    "retry",
    "flaky",
    "test",
    "build",
    "pipeline",
    "migration",
    "schema",
    "index",
    "vector",
    "embedding",
    "queue",
    "backlog",
    "worker",
    "crash",
    "restart",
    "certificate",
    "expired",
    "dns",
    "resolver",
    "region",
    "failover",
    "database",
    "replica",
    "lag",
    "disk",
    "quota",
    "alert",
    "incident",
    "postmortem",
    "owner",
    "review",
    "merge",
    "conflict",
    "branch",
    "release",
    "hotfix",
    "feature",
    "flag",
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


def make_events(
    n: int, rng: random.Random, text: Callable[[random.Random], str] | None = None
) -> list[Event]:
    text = text or sentence
    return [
        Event(
            id=f"evt_{i:08d}",
            workspace_id="acme",
            ts=T0 + timedelta(seconds=i),
            type=rng.choice(("tool.call", "exec.output_chunk", "peer.conversation", "note")),
            severity=rng.choice(("debug", "info", "info", "notice", "warn")),
            summary=text(rng),
            payload={"step": i, "ok": rng.random() > 0.1},
            agent_id=rng.choice(AGENTS),
            crew_id=rng.choice(CREWS),
        )
        for i in range(n)
    ]


def memory_of(e: Event, base: float) -> Memory:
    return Memory(
        id=e.id,
        workspace_id=e.workspace_id,
        ts=e.ts,
        type=e.type,
        content=e.summary,
        severity=e.severity,
        payload=e.payload,
        agent_id=e.agent_id,
        crew_id=e.crew_id,
        base_importance=base,
        importance=base,
        source_event_ids=(e.id,),
        created_at=e.ts,
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
    print(
        f"append        {n / elapsed:10,.0f} events/s  ({n:,} events in batches of {BATCH}, "
        f"{admitted_total / n:.1%} admitted, {elapsed:.2f} s)"
    )


def bench_dense(path: Path, n: int, rng: random.Random) -> None:
    np_rng = np.random.default_rng(7)
    events = make_events(n, rng)
    memories = [memory_of(e, rng.choice((0.5, 0.5, 0.6, 0.9))) for e in events]
    vectors = np_rng.standard_normal((n, DIM), dtype=np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    with SqliteStore(path) as store:
        for start in range(0, n, 5000):
            store.append(events[start : start + 5000], memories[start : start + 5000])
            store.put_vectors(
                "bench",
                DIM,
                [(memories[i].id, vectors[i]) for i in range(start, min(n, start + 5000))],
            )
        queries = np_rng.standard_normal((QUERIES, DIM), dtype=np.float32)
        flt = ScopeFilter("acme")
        load = timed(lambda: store.search_dense(flt, queries[0], 10))
        print(f"dense load    {load * 1000:8.0f} ms  (first search: {n:,} x {DIM} from SQLite)")
        for label, f in (
            ("whole ws", flt),
            ("own", ScopeFilter("acme", Scope.OWN, agent_id=AGENTS[0])),
            (
                "crew_shared",
                ScopeFilter("acme", Scope.CREW_SHARED, agent_id=AGENTS[0], crew_id=CREWS[0]),
            ),
        ):
            samples = [timed(partial(store.search_dense, f, q, 15)) for q in queries]
            print(f"search_dense  {percentiles(samples)}  ({label}, {n:,} x {DIM}, k=15)")
        # A recall marks its hits; the next search must notice a write and stay cheap.
        samples = []
        for q in queries[:50]:
            store.mark_referenced("acme", [memories[0].id], T0)
            samples.append(timed(partial(store.search_dense, flt, q, 15)))
        print(f"search_dense  {percentiles(samples)}  (after a write on this connection)")


# Function words as they occur between the content words of a journal line, weighted
# roughly by English frequency: "the" ends up in about half the memories.
FUNCTION_WORDS = {
    "the": 7.0,
    "to": 3.0,
    "of": 3.0,
    "and": 3.0,
    "a": 2.5,
    "in": 2.5,
    "it": 1.0,
    "for": 1.2,
    "on": 1.0,
    "is": 1.0,
    "was": 1.0,
    "with": 0.8,
    "after": 0.6,
    "from": 0.6,
    "at": 0.6,
    "by": 0.5,
    "not": 0.5,
    "before": 0.3,
    "no": 0.3,
    "again": 0.2,
    "while": 0.2,
}
FUNCTION_WORD_RATE = 0.4  # chance of a function word in each gap between content words
QUESTIONS = [
    "why did the {0} {1} fail in {2}",
    "what happened to the {0} after the {1}",
    "when was the last {0} {1}",
    "who approved the {0} for {1}",
    "is the {0} still {1} on {2}",
    "how do we fix the {0} in {1}",
    "did the {0} {1} again",
    "what caused the {0} {1} to {2}",
    "show me the {0} from {1}",
    "why is {0} so slow after the {1}",
]
SPARSE_MODES: tuple[SparseMode, ...] = ("seed", "stopwords", "budgeted")
SPARSE_K = 15


def journal_sentence(rng: random.Random) -> str:
    words = sentence(rng).split()
    names, weights = list(FUNCTION_WORDS), list(FUNCTION_WORDS.values())
    out = [words[0]]
    for word in words[1:]:
        if rng.random() < FUNCTION_WORD_RATE:
            out.append(rng.choices(names, weights)[0])
        out.append(word)
    return " ".join(out)


def query_sets(rng: random.Random) -> dict[str, list[str]]:
    """Natural-language questions (stopwords and all) around 1-3 words drawn like the
    texts, the previous run's 2-4 words drawn like the texts, and 3 of the most frequent
    words: the case where every term is common."""
    questions = ["why did the checkout deploy fail in production"]
    while len(questions) < QUERIES:
        template = rng.choice(QUESTIONS)
        questions.append(template.format(*sentence(rng).split()))
    return {
        "questions": questions,
        "2-4 words": [" ".join(sentence(rng).split()[: rng.randint(2, 4)]) for _ in range(QUERIES)],
        "3 top-58 words": [" ".join(rng.sample(WORDS, 3)) for _ in range(QUERIES)],
    }


def overlap(got: Sequence[str], reference: Sequence[str]) -> float | None:
    """Share of the reference's top k the other path also returned (None: no reference)."""
    return len(set(got) & set(reference)) / len(reference) if reference else None


def score_share(got: Sequence[str], best: Sequence[str], scores: dict[str, float]) -> float | None:
    """Exact BM25 (of the query without stopwords) summed over what a path returned, as a
    share of the same sum over the exact top k: 100% when a path returns memories as good
    as the best ones, even if not the same (ties are common among short journal lines)."""
    top = sum(scores[memory_id] for memory_id in best)
    return sum(scores.get(memory_id, 0.0) for memory_id in got) / top if top else None


def bench_sparse(path: Path, n: int, rng: random.Random) -> None:
    events = make_events(n, rng, journal_sentence)
    memories = [memory_of(e, 0.5) for e in events]
    with SqliteStore(path) as store:
        for start in range(0, n, 5000):
            store.append(events[start : start + 5000], memories[start : start + 5000])
        scopes = {
            "whole ws": ScopeFilter("acme"),
            "own": ScopeFilter("acme", Scope.OWN, agent_id=AGENTS[0]),
        }
        print(
            f"search_sparse over {n:,} memories, k={SPARSE_K}, {QUERIES} queries per set, "
            "one pass per mode over the same database and queries.\n"
            f"  agree: share of seed's top {SPARSE_K} also returned; bm25: exact BM25 of "
            "the query without stopwords, summed over the results, as a share of the "
            "best possible\n  (cold: budgeted again, its document-count cache emptied "
            "before each query)"
        )
        for set_name, queries in query_sets(rng).items():
            # bm25 depends on table-wide statistics only: one exact scoring serves both scopes.
            store.sparse_mode = "stopwords"
            exact = {
                q: {c.memory_id: c.score for c in store.search_sparse(scopes["whole ws"], q, n)}
                for q in queries
            }
            for scope_name, flt in scopes.items():
                samples: dict[str, list[float]] = {mode: [] for mode in SPARSE_MODES}
                ids: dict[str, dict[str, list[str]]] = {mode: {} for mode in SPARSE_MODES}
                # One pass per mode, so that no mode runs with pages another one evicted.
                for mode in SPARSE_MODES:
                    store.sparse_mode = mode
                    for q in queries:
                        t0 = time.perf_counter()
                        found = store.search_sparse(flt, q, SPARSE_K)
                        samples[mode].append(time.perf_counter() - t0)
                        ids[mode][q] = [c.memory_id for c in found]
                cold: list[float] = []
                for q in queries:
                    store._sparse_counts = None
                    cold.append(timed(partial(store.search_sparse, flt, q, SPARSE_K)))
                agree: dict[str, list[float]] = {mode: [] for mode in SPARSE_MODES}
                share: dict[str, list[float]] = {mode: [] for mode in SPARSE_MODES}
                for mode in SPARSE_MODES:
                    for q in queries:
                        for into, value in (
                            (agree, overlap(ids[mode][q], ids["seed"][q])),
                            (share, score_share(ids[mode][q], ids["stopwords"][q], exact[q])),
                        ):
                            if value is not None:
                                into[mode].append(value)
                for mode in SPARSE_MODES:
                    print(
                        f"  {set_name:15} {scope_name:8} {mode:9}  {percentiles(samples[mode])}"
                        f"   agree {statistics.fmean(agree[mode] or [0.0]):6.1%}"
                        f"   bm25 {statistics.fmean(share[mode] or [0.0]):6.1%}"
                    )
                print(f"  {set_name:15} {scope_name:8} {'cold':9}  {percentiles(cold)}")
        store.sparse_mode = "budgeted"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000, help="rows per measurement")
    parser.add_argument(
        "--only",
        choices=("append", "dense", "sparse"),
        action="append",
        help="run only these measurements (repeatable)",
    )
    args = parser.parse_args()
    only = set(args.only or ("append", "dense", "sparse"))
    rng = random.Random(42)
    # Latencies on a shared machine move with its load; print it next to them.
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs, numpy {np.__version__}")
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
