"""Forgetting on a large store, and the writes sent meanwhile: one version of
episodic against another, side by side in one run.

    .venv/bin/python benchmarks/bench_forget.py [--sizes 10000,100000] [--base main]
        [--forgets 12] [--backend sqlite|postgres] [--server 18]

For each size and version (``src/`` of ``--base`` from ``git archive`` as "before", this
checkout's as "after"), a fresh process:
1. builds a store (embedder none; on PostgreSQL a database of its own on a server this
   script starts, ``--server`` as in ``bench_postgres.py``): ``size`` journal events of
   one workspace, each also a memory (so both of SQLite's FTS5 indexes hold ``size``
   rows), and ``--forgets`` conversations of 6 messages segmented into episodes;
2. ingests one event every 10 ms from a second thread for 2 s alone, then while it
   forgets the conversations one after another (``Episodic.forget(conversation=...)``);
3. reports the forget's time (p50, max) and the ingests' latency alone and beside the
   forgets (p50 / p95 / max).

On SQLite a forget does its deletes, then drops the forgotten terms from the FTS5 indexes
by merging their segments (the work grows with the index), then empties the WAL.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
from contextlib import ExitStack
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg

from side_by_side import ROOT, extract_src, run_child

NOW = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)
WRITE_EVERY_S = 0.01
WORDS = [
    "deploy",
    "rollback",
    "cache",
    "latency",
    "budget",
    "invoice",
    "meeting",
    "travel",
    "paris",
    "berlin",
    "tokyo",
    "python",
    "rust",
    "deadline",
    "review",
    "launch",
    "customer",
    "billing",
    "pod",
    "nightly",
    "batch",
    "window",
    "incident",
]


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * p))] if ordered else float("nan")


def summary(i: int) -> str:
    # Varied text, so the indexes hold many terms (a word and a number per event).
    words = [WORDS[(i * 7 + j * 3) % len(WORDS)] for j in range(10)]
    return " ".join(words) + f" ticket{i} host{i % 997}"


def build(url: str, size: int, forgets: int) -> None:
    from episodic import Episodic, Settings

    with Episodic.open(url, settings=Settings(embedder="none"), clock=lambda: NOW) as mem:
        for start in range(0, size, 2000):
            batch = [
                {
                    "id": f"e{i}",
                    "workspace": "w",
                    "agent": f"agent{i % 9}",
                    "type": "peer.escalation",
                    "summary": summary(i),
                    "ts": (NOW - timedelta(days=2, seconds=i)).isoformat(),
                }
                for i in range(start, min(size, start + 2000))
            ]
            report = mem.ingest(batch)
            assert not report.errors, report.errors[:3]
        for c in range(forgets):
            for j in range(6):
                mem.add_message(
                    f"conversation {c} line {j}: {summary(c * 10 + j)}",
                    workspace="w",
                    conversation=f"conv-{c}",
                    ts=NOW - timedelta(hours=1, minutes=-j),
                )
        mem.segment(workspace="w", flush=True)


def child(url: str, size: int, forgets: int) -> dict[str, Any]:
    from episodic import Episodic, Settings

    started = time.perf_counter()
    build(url, size, forgets)
    built_s = time.perf_counter() - started
    out: dict[str, Any] = {"build_s": built_s}
    with Episodic.open(url, settings=Settings(embedder="none"), clock=lambda: NOW) as mem:
        stop = threading.Event()
        latencies: list[tuple[float, float]] = []  # (sent at, ms)

        def writes() -> None:
            n = 0
            while not stop.is_set():
                sent = time.perf_counter()
                mem.ingest(
                    [
                        {
                            "id": f"late{n}",
                            "workspace": "w",
                            "agent": "writer",
                            "type": "peer.escalation",
                            "summary": summary(10_000_000 + n),
                            "ts": NOW.isoformat(),
                        }
                    ]
                )
                latencies.append((sent, (time.perf_counter() - sent) * 1000))
                n += 1
                time.sleep(max(0.0, WRITE_EVERY_S - (time.perf_counter() - sent)))

        writer = threading.Thread(target=writes)
        writer.start()
        time.sleep(2.0)
        forgets_from = time.perf_counter()
        took: list[float] = []
        for c in range(forgets):
            t = time.perf_counter()
            mem.forget(workspace="w", conversation=f"conv-{c}")
            took.append((time.perf_counter() - t) * 1000)
        forgets_to = time.perf_counter()
        stop.set()
        writer.join()
        alone = [ms for at, ms in latencies if at < forgets_from]
        beside = [ms for at, ms in latencies if forgets_from <= at < forgets_to]
        out["forget"] = {"p50": statistics.median(took), "max": max(took)}
        for name, values in (("write_alone", alone), ("write_beside", beside)):
            out[name] = {
                "p50": percentile(values, 0.5),
                "p95": percentile(values, 0.95),
                "max": max(values) if values else float("nan"),
                "n": len(values),
            }
    return out


def run_version(src: Path, url: str, size: int, forgets: int) -> dict[str, Any]:
    code = (
        "import json, sys; import bench_forget as b; "
        "print(json.dumps(b.child(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))))"
    )
    return run_child(src, code, [url, str(size), str(forgets)])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--base", default="main", help="the git revision measured as before")
    parser.add_argument("--forgets", type=int, default=12)
    parser.add_argument("--backend", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument("--server", default="18", help="PostgreSQL: 16 or 18")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    rows: list[tuple[int, str, dict[str, Any]]] = []
    with tempfile.TemporaryDirectory() as work, ExitStack() as stack:
        server = ""
        if args.backend == "postgres":
            sys.path.insert(0, str(Path(__file__).parent))
            from bench_postgres import own_server, with_db

            server = stack.enter_context(own_server(Path(work) / "pg", args.server))
        versions = {"before": extract_src(args.base, Path(work)), "after": ROOT / "src"}
        for size in sizes:
            for name, src in versions.items():
                if server:
                    dbname = f"forget_{name}_{size}"
                    with psycopg.connect(server, autocommit=True) as conn:
                        conn.execute(f"CREATE DATABASE {dbname}")
                    url = with_db(server, dbname)
                else:
                    url = f"sqlite:///{Path(work) / f'{name}-{size}.db'}"
                result = run_version(src, url, size, args.forgets)
                rows.append((size, name, result))
                print(f"{size} {name}: {json.dumps(result)}", flush=True)
    print(
        f"\n{args.backend}: {args.forgets} forgets of a 6-message conversation "
        f"({args.base} vs this), ms"
    )
    print(
        "size".rjust(8)
        + "version".rjust(9)
        + "forget p50 / max".rjust(20)
        + "write alone p50/p95/max".rjust(28)
        + "write beside p50/p95/max".rjust(28)
    )
    for size, name, r in rows:

        def cells(key: str, r: dict[str, Any] = r) -> str:
            return f"{r[key]['p50']:.1f} / {r[key]['p95']:.1f} / {r[key]['max']:.1f}"

        print(
            str(size).rjust(8)
            + name.rjust(9)
            + f"{r['forget']['p50']:.1f} / {r['forget']['max']:.1f}".rjust(20)
            + cells("write_alone").rjust(28)
            + cells("write_beside").rjust(28)
        )


if __name__ == "__main__":
    main()
