"""Recall latency: a policy's p50/p95/p99 per question and its CPU time, embedding excluded.

    .venv/bin/python benchmarks/bench_recall_latency.py [--rounds 5] [--against SRC ...]
        [--format locomo|beam] [--data PATH] [--backend sqlite|postgres]
        [--policy default] [--profile FILE]

The database is built once per tree (`prepare_locomo`: one turn per memory, with the
all-MiniLM-L6-v2 vectors from the benchmark's embedding cache, a long turn's passages
included; `EPISODIC_EMBEDDER=none` for keyword-only), then every scored question is asked
under the policy once per round, timing `Episodic.recall` alone, as `episodic bench
locomo` does (each workspace's first, untimed recall loads its vectors). A question
whose time expressions the dense leg takes out embeds that shorter text during the
recall: its embedding's time is taken out of the recall's. `--format beam`
reads BEAM (user-assistant conversations with long answers) instead of LoCoMo.
`--backend postgres` starts a throwaway PostgreSQL (the tests' embedded server) and gives
each tree a database of its own on it. Reported: p50, p95 and p99 of the wall time over
all questions and over the questions of the longest conversations (at least --long
turns), each the median over the rounds, and the median CPU time per question (the
process's, every thread counted: what a noisy shared machine distorts least).

`--against SRC [SRC ...]` compares source trees (each a `src` folder, e.g. of a detached
worktree of main) in one run: each tree runs in its own worker process with its own
database, and the questions go to the trees in turn, one question each, so that all of
them see the same load on a shared machine. The hits of each question are checked to be
the same in every tree. Without it, the tree this script belongs to is measured.

`--every N` asks every Nth question only (a shorter run on a busy machine).

`--exact` (PostgreSQL) drops the HNSW index once the database is built, so that the dense
leg scans every vector: each tree's index is a graph of its own, and an approximate
search over two such graphs can find different neighbours. (Two databases built alike
still answer a few questions differently without it: see benchmarks/README.md.)

`--profile FILE` (one tree) writes a cProfile of the timed recalls to FILE and prints its
30 most expensive functions by cumulative time.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
DATA = {"locomo": SHARED / "locomo10.json", "beam": SHARED / "beam"}
HERE = Path(__file__).resolve().parents[1] / "src"
TESTS = Path(__file__).resolve().parents[1] / "tests"
DEPTH = 20  # what `episodic bench locomo` asks for: its deepest metric


def worker(
    data: Path, form: str, policy: str, db_url: str | None, profile: str | None, exact: bool
) -> None:
    """Build the database, say how many questions there are, then answer each question
    index read from stdin with its latency and CPU time (ms) and hit ids, one JSON line
    each."""
    import cProfile

    from episodic.bench.locomo import load_locomo, prepare_locomo
    from episodic.config import Settings

    def say(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    if form == "beam":
        from episodic.bench.beam import load_beam

        load = load_beam
    else:
        load = load_locomo
    profiler = cProfile.Profile() if profile else None
    embedding = _time_embedding()
    with prepare_locomo(data, Settings.from_env(), say=say, db_url=db_url, load=load) as run:
        mem, clock = run.mem, run.clock
        if exact and db_url:
            import psycopg

            with psycopg.connect(db_url, autocommit=True) as conn:
                conn.execute("DROP INDEX IF EXISTS memory_vectors_hnsw")
            say("dropped the HNSW index: the dense leg scans every vector")
        warmed: set[str] = set()
        long_turns = [len(conv.turns) for conv, _ in run.asked]
        print(json.dumps({"questions": len(run.asked), "turns": long_turns}), flush=True)
        for line in sys.stdin:
            conv, question = run.asked[int(line)]
            clock.now = conv.end
            if conv.workspace not in warmed:
                mem.recall(
                    question.text, workspace=conv.workspace, k=DEPTH, policy=policy, mark=False
                )
                warmed.add(conv.workspace)
            if profiler is not None:
                profiler.enable()
            embedding[:] = [0.0, 0.0]
            cpu = time.process_time()
            started = time.perf_counter()
            result = mem.recall(
                question.text, workspace=conv.workspace, k=DEPTH, policy=policy, mark=False
            )
            ms = (time.perf_counter() - started - embedding[0]) * 1000.0
            cpu_ms = (time.process_time() - cpu - embedding[1]) * 1000.0
            if profiler is not None:
                profiler.disable()
            answer = {"ms": ms, "cpu": cpu_ms, "hits": [h.id for h in result.hits]}
            print(json.dumps(answer), flush=True)
    if profiler is not None and profile:
        import pstats

        profiler.dump_stats(profile)
        pstats.Stats(profile, stream=sys.stderr).sort_stats("cumulative").print_stats(30)


def _time_embedding() -> list[float]:
    """[wall, CPU] seconds spent embedding queries since the caller last zeroed it.

    The texts stored and the questions are embedded before the clock starts, but the
    dense leg embeds a question with its time expressions taken out ("what did she do
    last week"): those texts miss the precomputed vectors and are looked up in the
    benchmark's embedding cache (or embedded) inside the timed recall, ~2.6 ms on one
    LoCoMo question in five. That time is the embedding's, and is taken out: its own
    thread's CPU, so that the keyword leg's helper thread still counts."""
    from episodic.bench.harness import Precomputed

    spent = [0.0, 0.0]
    embed = Precomputed.embed_batch

    def timed(self: Precomputed, texts: Any) -> Any:
        wall, cpu = time.perf_counter(), time.thread_time()
        try:
            return embed(self, texts)
        finally:
            spent[0] += time.perf_counter() - wall
            spent[1] += time.thread_time() - cpu

    Precomputed.embed_batch = timed  # type: ignore[method-assign]
    return spent


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    at = (len(ordered) - 1) * p / 100.0
    low = int(at)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (at - low)


def start(
    src: Path, args: argparse.Namespace, db_url: str | None, profile: str | None
) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(src)}
    command = [sys.executable, __file__, "--worker", "--data", str(args.data)]
    command += ["--format", args.format, "--policy", args.policy]
    command += ["--db-url", db_url] if db_url else []
    command += ["--profile", profile] if profile else []
    command += ["--exact"] if args.exact else []
    return subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env
    )


def ask(proc: subprocess.Popen[str], index: int) -> dict[str, Any]:
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(f"{index}\n")
    proc.stdin.flush()
    answer: dict[str, Any] = json.loads(proc.stdout.readline())
    return answer


@contextmanager
def databases(backend: str, count: int) -> Iterator[list[str | None]]:
    """One empty database per tree: none for SQLite (each worker makes a throwaway file),
    else one each on a throwaway PostgreSQL server."""
    if backend == "sqlite":
        yield [None] * count
        return
    import psycopg

    sys.path.insert(0, str(TESTS))
    import pg_servers

    with tempfile.TemporaryDirectory(prefix="pgl-") as tmp:
        server = pg_servers.start(Path(tmp))
        try:
            admin = server.get_uri()
            head, _, query = admin.partition("?")
            base = head.rsplit("/", 1)[0]
            urls: list[str | None] = []
            with psycopg.connect(admin, autocommit=True) as conn:
                for i in range(count):
                    conn.execute(f"CREATE DATABASE latency_{i}")
                    urls.append(f"{base}/latency_{i}?{query}" if query else f"{base}/latency_{i}")
            yield urls
        finally:
            server.cleanup()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--format", choices=sorted(DATA), default="locomo")
    parser.add_argument("--data", type=Path, default=None)
    parser.add_argument("--backend", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument("--policy", default="default")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--every", type=int, default=1, help="ask every Nth question only")
    parser.add_argument("--long", type=int, default=660, help="turns of a long conversation")
    parser.add_argument("--against", type=Path, nargs="+", default=[HERE])
    parser.add_argument("--profile", default=None, help="cProfile output file (one tree)")
    parser.add_argument(
        "--exact", action="store_true", help="PostgreSQL: no HNSW index, exact dense search"
    )
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--db-url", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    args.data = args.data or DATA[args.format]
    if args.worker:
        worker(args.data, args.format, args.policy, args.db_url, args.profile, args.exact)
        return

    trees = [p.resolve() for p in args.against]
    if args.profile and len(trees) > 1:
        sys.exit("--profile measures one tree")
    with databases(args.backend, len(trees)) as urls:
        report(args, trees, urls)


def report(args: argparse.Namespace, trees: list[Path], urls: list[str | None]) -> None:
    procs = [start(tree, args, url, args.profile) for tree, url in zip(trees, urls, strict=True)]
    heads = []
    for proc in procs:
        assert proc.stdout is not None
        heads.append(json.loads(proc.stdout.readline()))
    if any(h["questions"] != heads[0]["questions"] for h in heads):
        sys.exit("the trees disagree on the questions")
    asked = range(0, heads[0]["questions"], max(1, args.every))
    turns = heads[0]["turns"]
    long_ones = [n for n, i in enumerate(asked) if turns[i] >= args.long]
    # latencies[tree][round][question], and the CPU time alike
    latencies: list[list[list[float]]] = [[] for _ in trees]
    cpus: list[list[list[float]]] = [[] for _ in trees]
    differ: list[int] = []
    load = os.getloadavg()[0]
    for _ in range(args.rounds):
        rows: list[list[float]] = [[] for _ in trees]
        cpu_rows: list[list[float]] = [[] for _ in trees]
        for i in asked:
            answers = [ask(proc, i) for proc in procs]
            if any(a["hits"] != answers[0]["hits"] for a in answers) and i not in differ:
                differ.append(i)
            for row, cpu_row, answer in zip(rows, cpu_rows, answers, strict=True):
                row.append(answer["ms"])
                cpu_row.append(answer["cpu"])
        for tree_rounds, row in zip(latencies, rows, strict=True):
            tree_rounds.append(row)
        for tree_cpus, cpu_row in zip(cpus, cpu_rows, strict=True):
            tree_cpus.append(cpu_row)
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait()
    count = len(asked)

    print(
        f"{args.policy} recall latency on {args.format} ({args.backend}), {count} questions "
        f"({len(long_ones)} of conversations of >= {args.long} turns), k={DEPTH}, median of "
        f"{args.rounds} rounds; load average {load:.2f} -> {os.getloadavg()[0]:.2f}"
    )
    print(
        f"{'tree':<40} {'p50':>7} {'p95':>7} {'p99':>7} | long: {'p50':>6} {'p95':>7} "
        f"{'p99':>7} | cpu: {'p50':>6} {'p95':>7} {'mean':>7}"
    )
    for tree, rounds, cpu_rounds in zip(trees, latencies, cpus, strict=True):
        cells = []
        for subset in (range(count), long_ones):
            for p in (50, 95, 99):
                per_round = (
                    [percentile([r[i] for i in subset], p) for r in rounds] if subset else []
                )
                cells.append(statistics.median(per_round) if per_round else float("nan"))
        for p in (50, 95):
            cells.append(statistics.median(percentile(r, p) for r in cpu_rounds))
        cells.append(statistics.median(statistics.fmean(r) for r in cpu_rounds))
        print(
            f"{tree!s:<40} "
            + " ".join(f"{c:7.2f}" for c in cells[:3])
            + " | "
            + " ".join(f"{c:7.2f}" for c in cells[3:6])
            + " | "
            + " ".join(f"{c:7.2f}" for c in cells[6:])
        )
    if len(trees) > 1:
        named = f" (question {', '.join(map(str, differ[:10]))})" if differ else ""
        print(f"questions whose hits differ between the trees: {len(differ)}{named}")


if __name__ == "__main__":
    main()
