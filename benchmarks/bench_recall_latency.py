"""Recall latency on LoCoMo: `default`'s p50/p95/p99 per question, embedding excluded.

    .venv/bin/python benchmarks/bench_recall_latency.py [--rounds 5] [--against SRC ...]

The LoCoMo database is built once (`prepare_locomo`: one turn per memory, SQLite, the
all-MiniLM-L6-v2 vectors from the benchmark's embedding cache), then every scored question
is asked under `default` once per round, timing `Episodic.recall` alone, as `episodic bench
locomo` does (each workspace's first, untimed recall loads its vectors). Reported: p50,
p95 and p99 over all questions and over the questions of the longest conversations (at
least --long turns), each the median over the rounds.

`--against SRC [SRC ...]` compares source trees (each a `src` folder, e.g. of a detached
worktree of main) in one run: each tree runs in its own worker process with its own
database, and the questions go to the trees in turn, one question each, so that all of
them see the same load on a shared machine. The hits of each question are checked to be
the same in every tree. Without it, the tree this script belongs to is measured.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo10.json"
HERE = Path(__file__).resolve().parents[1] / "src"
DEPTH = 20  # what `episodic bench locomo` asks for: its deepest metric


def worker(data: Path) -> None:
    """Build the database, say how many questions there are, then answer each question
    index read from stdin with its latency (ms) and hit ids, one JSON line each."""
    from episodic.bench.locomo import prepare_locomo
    from episodic.config import Settings

    def say(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    with prepare_locomo(data, Settings.from_env(), say=say) as run:
        mem, clock = run.mem, run.clock
        warmed: set[str] = set()
        long_turns = [len(conv.turns) for conv, _ in run.asked]
        print(json.dumps({"questions": len(run.asked), "turns": long_turns}), flush=True)
        for line in sys.stdin:
            conv, question = run.asked[int(line)]
            clock.now = conv.end
            if conv.workspace not in warmed:
                mem.recall(question.text, workspace=conv.workspace, k=DEPTH, mark=False)
                warmed.add(conv.workspace)
            started = time.perf_counter()
            result = mem.recall(question.text, workspace=conv.workspace, k=DEPTH, mark=False)
            ms = (time.perf_counter() - started) * 1000.0
            print(json.dumps({"ms": ms, "hits": [h.id for h in result.hits]}), flush=True)


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    at = (len(ordered) - 1) * p / 100.0
    low = int(at)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (at - low)


def start(src: Path, data: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(src)}
    return subprocess.Popen(
        [sys.executable, __file__, "--worker", "--data", str(data)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )


def ask(proc: subprocess.Popen[str], index: int) -> dict[str, Any]:
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(f"{index}\n")
    proc.stdin.flush()
    answer: dict[str, Any] = json.loads(proc.stdout.readline())
    return answer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--long", type=int, default=660, help="turns of a long conversation")
    parser.add_argument("--against", type=Path, nargs="+", default=[HERE])
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.data)
        return

    trees = [p.resolve() for p in args.against]
    procs = [start(tree, args.data) for tree in trees]
    heads = []
    for proc in procs:
        assert proc.stdout is not None
        heads.append(json.loads(proc.stdout.readline()))
    count = heads[0]["questions"]
    if any(h["questions"] != count for h in heads):
        sys.exit("the trees disagree on the questions")
    long_ones = [i for i, turns in enumerate(heads[0]["turns"]) if turns >= args.long]
    # latencies[tree][round][question]
    latencies: list[list[list[float]]] = [[] for _ in trees]
    differ = 0
    load = os.getloadavg()[0]
    for _ in range(args.rounds):
        rows: list[list[float]] = [[] for _ in trees]
        for i in range(count):
            answers = [ask(proc, i) for proc in procs]
            differ += any(a["hits"] != answers[0]["hits"] for a in answers)
            for row, answer in zip(rows, answers, strict=True):
                row.append(answer["ms"])
        for tree_rounds, row in zip(latencies, rows, strict=True):
            tree_rounds.append(row)
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait()

    print(
        f"default recall latency, {count} questions ({len(long_ones)} of conversations of "
        f">= {args.long} turns), k={DEPTH}, median of {args.rounds} rounds; "
        f"load average {load:.2f} -> {os.getloadavg()[0]:.2f}"
    )
    print(f"{'tree':<40} {'p50':>7} {'p95':>7} {'p99':>7} | long: {'p50':>6} {'p95':>7} {'p99':>7}")
    for tree, rounds in zip(trees, latencies, strict=True):
        cells = []
        for subset in (range(count), long_ones):
            for p in (50, 95, 99):
                per_round = [percentile([r[i] for i in subset], p) for r in rounds]
                cells.append(statistics.median(per_round))
        print(
            f"{tree!s:<40} "
            + " ".join(f"{c:7.2f}" for c in cells[:3])
            + " | "
            + " ".join(f"{c:7.2f}" for c in cells[3:])
        )
    if len(trees) > 1:
        print(f"questions whose hits differ between the trees: {differ}")


if __name__ == "__main__":
    main()
