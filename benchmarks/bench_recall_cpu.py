"""What a recall costs in CPU, all threads of the process counted: the figure that bounds a
recall worker's throughput on a machine that is full.

    .venv/bin/python benchmarks/bench_recall_cpu.py [--memories 12000] [--against SRC ...]

Builds one SQLite store like the one the 64-client load grows (tests/stress/load.py: four
workspaces, 20 agents in 3 crews, journal lines of 5-15 words from its vocabulary, indexed
with the local MiniLM), then asks recalls as the load does (every policy, k 1-12, a fifth
with `explain`, the agents' and crews' scopes, a tenth with the walk, some time hints), in
batches of --batch, with a --gap ms pause after each recall (the HTTP and the queue between
a worker's recalls: what a thread that spins after its work, as OpenBLAS's do, spends
CPU in). Per tree: the wall time of a recall (p50 / p95) and the process's CPU per recall,
over the batch, gaps included, and the share of it taken by threads other than the
caller's and the keyword leg's helper. Medians over the rounds.

`--against SRC [SRC ...]` compares source trees (each a `src` folder, e.g. of a detached
worktree of main) in one run: each tree answers in a process of its own, on its own copy
of the store, and the trees take the batches in turn, so all of them see the same load.
The hits of every recall are checked to be the same in every tree.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from bench_recall_latency import percentile

ROOT = Path(__file__).resolve().parents[1]
HERE = ROOT / "src"
sys.path.insert(0, str(ROOT / "tests" / "stress"))
from load import ADMITTED, POLICIES, TIME_HINTS, words  # noqa: E402

WORKSPACES = 4
AGENTS = 20
CREWS = 3


def build(path: Path, memories: int, seed: int) -> None:
    from episodic import Episodic

    rnd = random.Random(seed)
    with Episodic.open(f"sqlite:///{path}") as mem:
        batch: list[dict[str, Any]] = []
        for i in range(memories):
            agent = rnd.randrange(AGENTS)
            kind, severity = ADMITTED[rnd.randrange(2)]
            batch.append(
                {
                    "id": f"e{i}",
                    "workspace": f"ws{i % WORKSPACES}",
                    "agent": f"agent{agent}",
                    "crew": f"crew{agent % CREWS}",
                    "type": kind,
                    "severity": severity,
                    "summary": f"{words(rnd, rnd.randint(5, 15))} n{i}",
                }
            )
            if len(batch) == 1000:
                mem.ingest(batch)
                batch = []
        if batch:
            mem.ingest(batch)
        mem.index_once()


def recalls(count: int, seed: int) -> list[tuple[str, dict[str, Any]]]:
    rnd = random.Random(seed)
    asked = []
    for _ in range(count):
        agent = rnd.randrange(AGENTS)
        kw: dict[str, Any] = {
            "workspace": f"ws{rnd.randrange(WORKSPACES)}",
            "k": rnd.randint(1, 12),
            "policy": rnd.choice(POLICIES),
            "explain": rnd.random() < 0.2,
            "mark": False,
        }
        who = rnd.random()
        if who < 0.4:
            kw.update(scope="own", agent=f"agent{agent}", crew=f"crew{agent % CREWS}")
        elif who < 0.7:
            kw.update(scope="crew_shared", agent=f"agent{agent}", crew=f"crew{agent % CREWS}")
        if rnd.random() < 0.1:
            kw["walk"] = 1
        query = f"{words(rnd, rnd.randint(2, 7))} {rnd.choice(TIME_HINTS)}".strip()
        asked.append((query, kw))
    return asked


def _thread_cpu() -> dict[int, float]:
    """CPU seconds of each thread of this process (Linux)."""
    out: dict[int, float] = {}
    tick = os.sysconf("SC_CLK_TCK")
    for task in Path(f"/proc/{os.getpid()}/task").iterdir():
        try:
            fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        out[int(task.name)] = (int(fields[11]) + int(fields[12])) / tick
    return out


def worker(db: Path, count: int, seed: int, gap_ms: float) -> None:
    """Open the store, then answer each batch "start end" read from stdin with one JSON
    line: the recalls' wall times, the CPU over the batch and the hits."""
    from episodic import Episodic

    asked = recalls(count, seed)
    with Episodic.open(f"sqlite:///{db}") as mem:
        for query, kw in asked[:20]:  # load the model and the dense indexes
            mem.recall(query, **kw)
        print(json.dumps({"ready": True}), flush=True)
        me = threading.get_native_id()
        for line in sys.stdin:
            start, end = (int(x) for x in line.split())
            ms: list[float] = []
            hits: list[list[str]] = []
            before, cpu0 = _thread_cpu(), time.process_time()
            for query, kw in asked[start:end]:
                t0 = time.perf_counter()
                result = mem.recall(query, **kw)
                ms.append((time.perf_counter() - t0) * 1000.0)
                hits.append([h.id for h in result.hits])
                time.sleep(gap_ms / 1000.0)
            cpu = time.process_time() - cpu0
            after = _thread_cpu()
            names = {t.native_id: t.name for t in threading.enumerate()}
            # Threads that are neither this one nor episodic's own Python threads (the
            # keyword leg's helper): native pools, the BLAS library's among them.
            native = sum(
                after[tid] - before.get(tid, 0.0) for tid in after if tid != me and tid not in names
            )
            print(json.dumps({"ms": ms, "cpu": cpu, "native": native, "hits": hits}), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=12_000)
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--gap", type=float, default=2.0, help="ms between recalls")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--against", type=Path, nargs="+", default=[HERE])
    parser.add_argument("--worker", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    count = args.batch * args.rounds
    if args.worker is not None:
        worker(args.worker, count, args.seed, args.gap)
        return

    trees = [p.resolve() for p in args.against]
    with tempfile.TemporaryDirectory(prefix="bench-recall-cpu-") as tmp:
        base = Path(tmp) / "store.db"
        started = time.perf_counter()
        build(base, args.memories, args.seed)
        print(f"built {args.memories} memories in {time.perf_counter() - started:.0f} s")
        procs = []
        for i, tree in enumerate(trees):
            db = Path(tmp) / f"tree{i}.db"
            shutil.copy(base, db)
            procs.append(
                subprocess.Popen(
                    [
                        sys.executable,
                        __file__,
                        "--worker",
                        str(db),
                        "--batch",
                        str(args.batch),
                        "--rounds",
                        str(args.rounds),
                        "--gap",
                        str(args.gap),
                        "--seed",
                        str(args.seed),
                    ],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    text=True,
                    env={**os.environ, "PYTHONPATH": str(tree)},
                )
            )
        for proc in procs:
            assert proc.stdout is not None
            json.loads(proc.stdout.readline())
        load = os.getloadavg()[0]
        walls: list[list[float]] = [[] for _ in trees]
        cpus: list[list[float]] = [[] for _ in trees]
        natives: list[list[float]] = [[] for _ in trees]
        differ = 0
        for r in range(args.rounds):
            start, end = r * args.batch, (r + 1) * args.batch
            answers = []
            for i, proc in enumerate(procs):
                assert proc.stdin is not None and proc.stdout is not None
                time.sleep(0.5)  # the last tree's spinning threads, if any, go to sleep
                proc.stdin.write(f"{start} {end}\n")
                proc.stdin.flush()
                answer = json.loads(proc.stdout.readline())
                answers.append(answer)
                walls[i].extend(answer["ms"])
                cpus[i].append(answer["cpu"] * 1000.0 / args.batch)
                natives[i].append(answer["native"] * 1000.0 / args.batch)
            differ += sum(
                a != b
                for answer in answers[1:]
                for a, b in zip(answer["hits"], answers[0]["hits"], strict=True)
            )
        for proc in procs:
            assert proc.stdin is not None
            proc.stdin.close()
            proc.wait()

    print(
        f"{count} recalls as the 64-client load asks them, {args.memories} memories (SQLite), "
        f"{args.gap:g} ms between recalls; load average {load:.2f} -> {os.getloadavg()[0]:.2f}"
    )
    print(f"{'tree':<40} {'p50':>7} {'p95':>7} {'CPU/recall':>11} {'native threads':>15}")
    for tree, wall, cpu, native in zip(trees, walls, cpus, natives, strict=True):
        print(
            f"{tree!s:<40} {percentile(wall, 50):>6.2f}  {percentile(wall, 95):>6.2f}  "
            f"{statistics.median(cpu):>8.2f} ms  {statistics.median(native):>11.2f} ms"
        )
    if len(trees) > 1:
        print(f"recalls whose hits differ between the trees: {differ}")


if __name__ == "__main__":
    main()
