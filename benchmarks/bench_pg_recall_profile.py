"""Where a recall's time goes on PostgreSQL: every store method a recall calls, timed.

    .venv/bin/python benchmarks/bench_pg_recall_profile.py [--n 1000000] [--server 18]
        [--queries 100] [--warm-up 20] [--own] [--vectors clustered|minilm]

Needs the database bench_postgres.py built for size N (kept under .episodic/bench_pg).
Runs bench_postgres's queries through ``Episodic.recall`` (default policy, k = 5, the query
vectors given, so no embedding), the first ``--warm-up`` untimed (the server starts with
empty shared buffers: at 1M, 20 warm-up recalls leave the dense leg ~4x its steady
time), then ``--queries`` timed, with each public method of the
store wrapped in a timer; prints the recall's p50/p95 and, per method, its calls per
recall and p50/p95/mean milliseconds per recall. ``--own``: in one agent's scope.
``--vectors minilm``: the database bench_postgres built with ``--vectors minilm``, queried
with its held-out real turns.
"""

from __future__ import annotations

import argparse
import functools
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from bench_pg_sparse import pct
from bench_postgres import (
    NOW,
    WS,
    FixedVectors,
    Source,
    loadavg,
    machine,
    own_server,
    queries,
    server_dir,
    with_db,
)
from episodic import Episodic, Settings
from episodic.store.postgres import PostgresStore

WARM_UP = 20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--server", choices=("16", "18"), default="18")
    parser.add_argument("--queries", type=int, default=100, help="timed recalls")
    parser.add_argument("--warm-up", type=int, default=WARM_UP, help="untimed recalls first")
    parser.add_argument("--own", action="store_true", help="recall in one agent's scope")
    parser.add_argument("--vectors", choices=("clustered", "minilm"), default="clustered")
    args = parser.parse_args()
    print(f"$ {' '.join([Path(sys.executable).name, *sys.argv])}")
    print(f"machine: {machine()}; load average before: {loadavg()}")
    texts, qv = queries(args.warm_up + args.queries, Source(args.vectors))
    dbname = f"bench_{args.n}" + ("" if args.vectors == "clustered" else f"_{args.vectors}")
    spent: dict[str, float] = defaultdict(float)
    calls: dict[str, int] = defaultdict(int)

    def timed(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def inner(*a: Any, **k: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                spent[name] += (time.perf_counter() - t0) * 1000
                calls[name] += 1

        return inner

    with (
        own_server(server_dir(args.server), args.server) as admin,
        PostgresStore(with_db(admin, dbname)) as store,
    ):
        for name in dir(store):
            attr = getattr(store, name)
            if not name.startswith("_") and callable(attr) and not isinstance(attr, type):
                setattr(store, name, timed(name, attr))
        memory = Episodic(
            store=store,
            embedder=FixedVectors(dict(zip(texts, qv, strict=True))),
            settings=Settings(),
            clock=lambda: NOW,
        )
        scope: dict[str, Any] = {"agent": "agent3", "scope": "own"} if args.own else {}
        for text in texts[: args.warm_up]:
            memory.recall(text, workspace=WS, k=5, **scope)
        totals: list[float] = []
        per: dict[str, list[float]] = defaultdict(list)
        count: dict[str, int] = defaultdict(int)
        for text in texts[args.warm_up :]:
            spent.clear()
            calls.clear()
            t0 = time.perf_counter()
            memory.recall(text, workspace=WS, k=5, **scope)
            totals.append((time.perf_counter() - t0) * 1000)
            for name, ms in spent.items():
                per[name].append(ms)
                count[name] += calls[name]
    n = len(totals)
    where = "one agent's scope" if args.own else "the whole workspace"
    print(f"\n{args.n:,} memories, PostgreSQL {args.server}, {n} recalls over {where}:")
    print(f"recall p50 {statistics.median(totals):.1f} ms, p95 {pct(totals, 0.95):.1f} ms")
    print("| store method | calls per recall | p50 | p95 | mean (ms per recall) |")
    print("|---|---|---|---|---|")
    for name in sorted(per, key=lambda m: -sum(per[m])):
        each = per[name] + [0.0] * (n - len(per[name]))
        print(
            f"| {name} | {count[name] / n:.2f} | {statistics.median(each):.1f} | "
            f"{pct(each, 0.95):.1f} | {statistics.mean(each):.1f} |"
        )
    print(f"load average after: {loadavg()}")


if __name__ == "__main__":
    main()
