"""Bulk writes to PostgreSQL: COPY through a staging table against row by row.

    .venv/bin/python benchmarks/bench_pg_bulk.py [--n 100000] [--server 16|18] [--pg-url URL]

N memories (bench_postgres's rows: journal events with ~18-word summaries and 384-d
clustered vectors) are written into two fresh databases on one server, chunk by chunk
and alternating between them, so both paths meet the same load: ``store.append`` in
batches of 10k, then ``store.put_vectors`` in batches of 5k. One database takes the
store's default path (COPY for batches of ``COPY_MIN_ROWS`` rows or more), the other is
forced row by row (pipelined ``executemany``, the path below that size). Prints the
seconds each path spent appending and storing vectors, and the ratio. Both databases
keep the HNSW index the store creates with the first vectors, so both pay for inserting
every vector into the graph (bench_postgres's bulk mode builds the index once instead).
``--server``: the server started (as bench_postgres starts it): PostgreSQL 16 + pgvector
0.6 (the default) or PostgreSQL 18 + pgvector 0.8 (a halfvec index).
"""

from __future__ import annotations

import argparse
import sys
import time
from contextlib import nullcontext
from pathlib import Path

import psycopg

sys.path.insert(0, str(Path(__file__).parent))

from bench_postgres import (
    APPEND_BATCH,
    DIM,
    MODEL_ID,
    Source,
    batch_rows,
    chunk_rows,
    loadavg,
    machine,
    own_server,
    server_dir,
    server_label,
    vector_batches,
    with_db,
)
from episodic.store.postgres import PostgresStore
from episodic.store.postgres import connection as pg_connection

ROW_BY_ROW = 10**12


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--server", choices=("16", "18"), default="16", help="the server started")
    parser.add_argument("--pg-url", default=None, help="an existing server (none started)")
    args = parser.parse_args()
    print(f"$ {' '.join([Path(sys.executable).name, *sys.argv])}")
    print(f"machine: {machine()}; load average before: {loadavg()}")
    src = Source("clustered")
    paths = {"copy": pg_connection.COPY_MIN_ROWS, "rows": ROW_BY_ROW}
    spent = {name: {"append": 0.0, "vectors": 0.0} for name in paths}
    server = (
        nullcontext(args.pg_url)
        if args.pg_url
        else own_server(server_dir(args.server), args.server)
    )
    with server as admin:
        print(f"server: {server_label(admin)}")
        urls = {}
        for name in paths:
            db = f"bulk_{name}"
            with psycopg.connect(admin, autocommit=True) as conn:
                conn.execute(f"DROP DATABASE IF EXISTS {db} WITH (FORCE)")
                conn.execute(f"CREATE DATABASE {db}")
            urls[name] = with_db(admin, db)
        stores = {name: PostgresStore(url) for name, url in urls.items()}
        try:
            for start in range(0, args.n, APPEND_BATCH):
                events, memories = chunk_rows(start, min(args.n, start + APPEND_BATCH))
                for name, store in stores.items():
                    pg_connection.COPY_MIN_ROWS = paths[name]
                    t0 = time.perf_counter()
                    store.append(events, memories)
                    spent[name]["append"] += time.perf_counter() - t0
            for start, vecs in vector_batches(args.n, src):
                rows = batch_rows(start, vecs)
                for name, store in stores.items():
                    pg_connection.COPY_MIN_ROWS = paths[name]
                    t0 = time.perf_counter()
                    store.put_vectors(MODEL_ID, DIM, rows)
                    spent[name]["vectors"] += time.perf_counter() - t0
            for name, store in stores.items():
                assert store.stats().vectors == args.n, name
        finally:
            for store in stores.values():
                store.close()
            pg_connection.COPY_MIN_ROWS = paths["copy"]
    print(f"\n{args.n:,} memories, one run, chunks alternating between the two paths:")
    print("| path | append | vectors | total | rows/s (total) |")
    print("|---|---|---|---|---|")
    for name, s in spent.items():
        total = s["append"] + s["vectors"]
        print(
            f"| {name} | {s['append']:.1f} s | {s['vectors']:.1f} s | {total:.1f} s | "
            f"{args.n / total:,.0f} |"
        )
    c, r = spent["copy"], spent["rows"]
    print(
        f"\nrow by row / COPY: append {r['append'] / c['append']:.2f}x, vectors "
        f"{r['vectors'] / c['vectors']:.2f}x, total "
        f"{(r['append'] + r['vectors']) / (c['append'] + c['vectors']):.2f}x"
    )
    print(f"load average after: {loadavg()}")


if __name__ == "__main__":
    main()
