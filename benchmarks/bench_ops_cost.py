"""What the metrics and the traces' hooks cost one recall, in CPU time, side by side.

    PYTHONPATH=src .venv/bin/python benchmarks/bench_ops_cost.py [--memories 5000]
        [--rounds 8] [--block 40]

On a shared machine a server's throughput swings by more than the few percent asked of
the metrics (benchmarks/README.md, "What the metrics cost"): this measures the thread's
own CPU time per recall instead, which other processes' load moves far less. One process,
the real local embedder, a database of ``--memories`` (bench_http.py's), recalls as the
server runs them (query embeddings batched, marks deferred) with the figures a server
records for each (the HTTP request's too), in multiprocess mode as ``episodic serve``
keeps them:

- **metrics on / off**: blocks of ``--block`` recalls, alternating, ``--rounds`` times
  (off: every metric function does nothing, as without prometheus-client);
- **against another tree** (``--against <src>``): the same recalls' CPU time in fresh
  processes of this tree and of that one, alternating (the code before these hooks);
- **traces off**: how many times one recall passes a tracing hook (``span``,
  ``begin``/``end``, ``in_context``, the hop's, and each database statement's check of
  ``tracing.ACTIVE``), times what the dearest of them (``span``) costs when off.

Prints each round's medians, the medians of the rounds, their ratio, the rounds' spread
(the noise) and the load average.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
import timeit
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
os.environ.setdefault("PROMETHEUS_MULTIPROC_DIR", tempfile.mkdtemp(prefix="bench-ops-"))

from bench_http import build
from bench_spine import sentence
from episodic import Episodic, Settings, metrics


def recall_cpu_ms(mem: Episodic, queries: list[str]) -> list[float]:
    """Each recall's CPU time on this thread (ms), with the server's per-request figures."""
    out = []
    for q in queries:
        t0 = time.thread_time()
        started = time.perf_counter()
        mem.recall(q, workspace="big", k=5)
        metrics.http_request("/v1/recall", "POST", 200, time.perf_counter() - started)
        out.append((time.thread_time() - t0) * 1000)
    return out


def figures_cpu_us(n: int = 3000) -> float:
    """CPU time (us) of the figures one recall request records, measured alone: the
    request's counter and histogram, the recall's, four stages', the query embedding's."""
    t0 = time.process_time()
    for _ in range(n):
        metrics.http_request("/v1/recall", "POST", 200, 0.1)
        metrics.recall_done("default", "vector", 0.1)
        for stage in ("query_embedding", "dense", "sparse", "ranking"):
            metrics.recall_stage(stage, 0.01)
        metrics.embedder_call("query", 0.01, failed=False)
    return (time.process_time() - t0) / n * 1e6


def set_metrics(on: bool, made: object) -> None:
    metrics._made = made if on else None  # type: ignore[assignment]
    metrics._absent = not on


def hooks_per_recall(mem: Episodic, query: str) -> int:
    """How many tracing hooks one recall passes (each wrapped to count, then restored)."""
    from episodic import tracing  # not in a tree from before it (--against's children)

    count = [0]
    names = ("span", "statement", "begin", "end", "carrier", "in_context")
    saved = {n: getattr(tracing, n) for n in names}

    def counting(fn):  # type: ignore[no-untyped-def]
        def wrapped(*a, **k):  # type: ignore[no-untyped-def]
            count[0] += 1
            return fn(*a, **k)

        return wrapped

    def statement(sql: str, params: object) -> None:  # each one reads tracing.ACTIVE
        count[0] += 1

    for n in names:
        setattr(tracing, n, counting(saved[n]))
    store = mem.store
    tracer, store._tracer = store._tracer, statement  # type: ignore[attr-defined]
    try:
        mem.recall(query, workspace="big", k=5)
    finally:
        store._tracer = tracer  # type: ignore[attr-defined]
        for n, fn in saved.items():
            setattr(tracing, n, fn)
    # A server's recall process adds the hop's three (span, carrier, attached).
    return count[0] + 3


def one_block(db: Path, block: int, seed: int) -> float:
    """``--child``: the median CPU ms of ``block`` recalls in a fresh process (whichever
    ``episodic`` its PYTHONPATH finds), after a warm-up."""
    rnd = random.Random(seed)
    with Episodic.open(f"sqlite:///{db}", settings=Settings(embedder="local")) as mem:
        mem.defer_marks()
        mem.batch_query_embeddings()
        for i in range(20):
            mem.recall(f"warm up {i}", workspace="big")
        found = statistics.median(
            recall_cpu_ms(mem, [sentence(rnd.randint(3, 7)) for _ in range(block)])
        )
        mem.flush_marks(stop=True)
    return found


def against(args: argparse.Namespace) -> None:
    """This tree and the one at ``--against``, each in fresh processes, alternating."""
    here = os.environ.get("PYTHONPATH", "")
    trees = {"this tree": here, "against": ":".join(filter(None, [str(args.against), here]))}
    found: dict[str, list[float]] = {name: [] for name in trees}
    loads = [os.getloadavg()[0]]
    for n in range(args.rounds):
        for name in list(trees) if n % 2 == 0 else list(trees)[::-1]:
            child = subprocess.run(
                [
                    *(sys.executable, __file__, "--child", "--db", str(args.db)),
                    *("--block", str(args.block), "--seed", str(n)),
                ],
                env={**os.environ, "PYTHONPATH": trees[name]},
                capture_output=True,
                text=True,
                check=True,
            )
            found[name].append(float(child.stdout.split()[-1]))
        loads.append(os.getloadavg()[0])
        print(f"round {n + 1}: " + ", ".join(f"{k} {v[-1]:.2f} ms" for k, v in found.items()))
    mine, theirs = (statistics.median(v) for v in found.values())
    print(
        f"\nCPU ms per recall, median of {args.rounds} processes each ({args.block} recalls "
        f"each): this tree {mine:.2f}, against {theirs:.2f}: {100 * (mine / theirs - 1):+.1f}%; "
        f"load average {min(loads):.1f}-{max(loads):.1f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--memories", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--block", type=int, default=40)
    parser.add_argument("--db", type=Path, default=Path("/tmp/bench-ops/bench_http.db"))
    parser.add_argument("--against", type=Path, help="compare with the src folder of another tree")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(f"{one_block(args.db, args.block, args.seed):.4f}")
        return
    args.db.parent.mkdir(parents=True, exist_ok=True)
    build(args.db, args.memories)
    if args.against is not None:
        against(args)
        return
    rnd = random.Random(5)
    loads = [os.getloadavg()[0]]
    with Episodic.open(f"sqlite:///{args.db}", settings=Settings(embedder="local")) as mem:
        mem.defer_marks()
        mem.batch_query_embeddings()
        for i in range(20):
            mem.recall(f"warm up {i}", workspace="big")
        made = metrics._metrics()
        assert made is not None, "prometheus-client is not installed"
        rounds: dict[str, list[float]] = {"on": [], "off": []}
        for n in range(args.rounds):
            for variant in ("on", "off") if n % 2 == 0 else ("off", "on"):
                set_metrics(variant == "on", made)
                queries = [sentence(rnd.randint(3, 7)) for _ in range(args.block)]
                rounds[variant].append(statistics.median(recall_cpu_ms(mem, queries)))
            loads.append(os.getloadavg()[0])
            print(
                f"round {n + 1}: CPU ms per recall, metrics on {rounds['on'][-1]:.2f}, "
                f"off {rounds['off'][-1]:.2f}"
            )
        set_metrics(True, made)
        hooks = hooks_per_recall(mem, sentence(5))
        mem.flush_marks(stop=True)
    from episodic import tracing

    assert not tracing.ACTIVE
    figures_us = min(figures_cpu_us() for _ in range(3))
    hook = timeit.Timer(lambda: tracing.span("x"), timer=time.process_time)
    per_hook_ns = min(hook.repeat(number=100_000, repeat=5)) * 1e4
    on, off = statistics.median(rounds["on"]), statistics.median(rounds["off"])
    diffs = [a - b for a, b in zip(rounds["on"], rounds["off"], strict=True)]
    print(
        f"\n{args.rounds} rounds of {args.block} recalls each way, {args.memories} memories, "
        f"multiprocess mode; load average {min(loads):.1f}-{max(loads):.1f}"
    )
    print(
        f"metrics on: {on:.2f} ms CPU per recall (median of round medians), off: {off:.2f} ms: "
        f"{100 * (on / off - 1):+.1f}%; per round, on - off: "
        f"{', '.join(f'{d:+.2f}' for d in diffs)} ms (the noise: rounds of either alone "
        f"spread {min(rounds['off']):.2f}-{max(rounds['off']):.2f} ms off)"
    )
    print(
        f"the figures of one recall request, recorded alone: {figures_us:.0f} us CPU = "
        f"{100 * figures_us / 1000 / off:.2f}% of a recall's CPU"
    )
    print(
        f"traces off: {hooks} hooks a recall x {per_hook_ns:.0f} ns each = "
        f"{hooks * per_hook_ns / 1000:.1f} us, {100 * hooks * per_hook_ns / 1e6 / off:.3f}% "
        "of a recall's CPU"
    )


if __name__ == "__main__":
    main()
