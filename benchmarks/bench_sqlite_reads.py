"""In-process recalls from several threads over one SQLite store, and small writes
beside them: one version of episodic against another, side by side in one run.

    .venv/bin/python benchmarks/bench_sqlite_reads.py [--memories 100000] [--base main]
        [--rounds 3] [--seconds 6]

1. builds (once, then reuses) the database ``benchmarks/bench_http.py`` builds: N journal
   memories in one workspace with clustered 384-d vectors under the local MiniLM's id;
2. extracts ``src/`` of ``--base`` (``git archive``) as "before" and takes this checkout's
   ``src/`` as "after";
3. runs each version in a fresh process, alternating, ``--rounds`` times: the process opens
   the store with the real local embedder and embeds its pool of queries once (so the
   timed recalls find their query vectors in the service's embedding cache: the numbers
   are the recall without its embedding), loads the dense index, then
   - recalls as fast as it can from 1, 4 and 8 threads for ``--seconds`` each (a recall
     as ``POST /v1/recall`` makes it: k=5, the default policy, marking what it returns);
   - ingests one event at a time, 20 a second, alone and then while 8 threads recall;
   - searches the dense leg alone (``Store.search_dense``, the whole workspace and one
     agent's memories) from 1, 4 and 8 threads;
4. prints the median over rounds of calls/s and p50/p95 (ms) per thread count, and of the
   write latencies, for the base, this checkout, and this checkout with
   ``EPISODIC_SQLITE_READERS=0`` (one connection, as before the read pool).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from side_by_side import ROOT, extract_src, run_child

THREADS = (1, 4, 8)
QUERIES = 400
WRITE_EVERY_S = 0.05


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * p))] if ordered else float("nan")


def hammer(threads: int, stop: threading.Event, call: Callable[[int], object]) -> list[float]:
    """``call(i)`` in a loop on each of ``threads`` threads until ``stop``; the latencies
    in ms."""
    latencies: list[float] = []

    def loop(n: int) -> None:
        i = n * 97
        while not stop.is_set():
            i += 1
            t0 = time.perf_counter()
            call(i)
            latencies.append((time.perf_counter() - t0) * 1000)

    workers = [threading.Thread(target=loop, args=(n,)) for n in range(threads)]
    for w in workers:
        w.start()
    stop.wait()
    for w in workers:
        w.join()
    return latencies


def timed(threads: int, seconds: float, call: Callable[[int], object]) -> dict[str, float]:
    stop = threading.Event()
    threading.Timer(seconds, stop.set).start()
    latencies = hammer(threads, stop, call)
    return {
        "per_s": len(latencies) / seconds,
        "p50": percentile(latencies, 0.5),
        "p95": percentile(latencies, 0.95),
    }


def child(db: Path, seconds: float) -> dict[str, Any]:
    """One version's numbers (runs in a process whose path starts at that version)."""
    from bench_spine import sentence
    from episodic import Episodic, Settings
    from episodic.model import ScopeFilter

    rnd = random.Random(23)
    queries = [sentence(rnd.randint(3, 7)) for _ in range(QUERIES)]
    out: dict[str, Any] = {}
    with Episodic.open(f"sqlite:///{db}", settings=Settings(embedder="local")) as mem:
        for q in queries:  # the embedding cache now holds every query's vector
            mem.recall(q, workspace="big", k=5, mark=False)

        def recall(i: int) -> None:
            mem.recall(queries[i % QUERIES], workspace="big", k=5)

        for threads in THREADS:
            out[f"recall_{threads}"] = timed(threads, seconds, recall)

        # The dense leg alone: the whole workspace (the inverted file) and one agent's
        # memories (the exact gathered scan).
        embedder = mem.embedder
        assert embedder is not None
        vectors = embedder.embed_batch(queries[:64])
        scopes = {"whole": ScopeFilter("big"), "agent": ScopeFilter("big", agent_id="agent3")}
        for name, flt in scopes.items():

            def dense(i: int, flt: ScopeFilter = flt) -> None:
                mem.store.search_dense(flt, vectors[i % 64], 10)

            dense(0)
            for threads in THREADS:
                out[f"dense_{name}_{threads}"] = timed(threads, seconds / 2, dense)

        def writes(label: str) -> list[float]:
            latencies = []
            deadline = time.perf_counter() + seconds
            n = 0
            while time.perf_counter() < deadline:
                n += 1
                event = {
                    "id": f"w-{label}-{time.time_ns()}-{n}",
                    "workspace": "writes",
                    "type": "note",
                    "summary": "a small write beside the recalls",
                    "ts": datetime.now(UTC).isoformat(),
                }
                t0 = time.perf_counter()
                mem.ingest([event])
                latencies.append((time.perf_counter() - t0) * 1000)
                time.sleep(WRITE_EVERY_S)
            return latencies

        alone = writes("alone")
        stop = threading.Event()
        background = threading.Thread(target=hammer, args=(8, stop, recall))
        background.start()
        time.sleep(0.5)
        beside = writes("beside")
        stop.set()
        background.join()
        for name, latencies in (("write_alone", alone), ("write_beside_8", beside)):
            out[name] = {"p50": percentile(latencies, 0.5), "p95": percentile(latencies, 0.95)}
    return out


def run_version(src: Path, db: Path, seconds: float, env: dict[str, str]) -> dict[str, Any]:
    code = (
        "import json, sys; from pathlib import Path; import bench_sqlite_reads as b; "
        "print(json.dumps(b.child(Path(sys.argv[1]), float(sys.argv[2]))))"
    )
    return run_child(src, code, [str(db), str(seconds)], env)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=100_000)
    parser.add_argument("--base", default="main", help="the git revision measured as before")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=6.0)
    parser.add_argument("--db", type=Path, default=Path(tempfile.gettempdir()) / "episodic-bench")
    args = parser.parse_args()

    sys.path.insert(0, str(Path(__file__).parent))
    from bench_http import build

    args.db.mkdir(parents=True, exist_ok=True)
    db = args.db / f"reads-{args.memories}.db"
    build(db, args.memories)
    with tempfile.TemporaryDirectory() as before:
        before_src = extract_src(args.base, Path(before))
        # The third column: this version held to one connection, to tell what the pool
        # does from whatever else changed since the base.
        versions = {
            "before": (before_src, {}),
            "after": (ROOT / "src", {}),
            "after, 0 readers": (ROOT / "src", {"EPISODIC_SQLITE_READERS": "0"}),
        }
        runs: dict[str, list[dict[str, Any]]] = {name: [] for name in versions}
        for r in range(args.rounds):
            for name, (src, env) in versions.items():
                runs[name].append(run_version(src, db, args.seconds, env))
                print(f"round {r + 1} {name}: {json.dumps(runs[name][-1])}", flush=True)

    def median(name: str, key: str, field: str) -> float:
        return statistics.median(run[key][field] for run in runs[name])

    def rates(key: str) -> list[str]:
        return [
            f"{median(n, key, 'per_s'):7.1f}/s p50 {median(n, key, 'p50'):6.1f} "
            f"p95 {median(n, key, 'p95'):6.1f}"
            for n in versions
        ]

    print(f"\n{args.memories} memories, medians of {args.rounds} rounds ({args.base} vs this)")
    print(" " * 26 + "".join(name.rjust(30) for name in versions))
    rows = [(f"recall, {t} thread(s)", rates(f"recall_{t}")) for t in THREADS]
    for scope in ("whole", "agent"):
        rows += [(f"dense {scope}, {t} thr", rates(f"dense_{scope}_{t}")) for t in THREADS]
    writes = {"write_alone": "ingest 1, alone", "write_beside_8": "ingest 1, 8 recall"}
    for key, label in writes.items():
        cells = [
            f"p50 {median(n, key, 'p50'):6.1f} p95 {median(n, key, 'p95'):6.1f} ms"
            for n in versions
        ]
        rows.append((label, cells))
    for label, cells in rows:
        print(label.ljust(26) + "".join(c.rjust(30) for c in cells))


if __name__ == "__main__":
    main()
