"""HTTP recall under load: ``episodic serve`` over 100k memories, driven by wrk, against
the in-process ceiling measured in the same run at the same concurrency.

    .venv/bin/python benchmarks/bench_http.py [--memories 100000] [--connections 8]
        [--threads 2] [--duration 30] [--workers 1 2] [--policy default] [--profile]

1. builds (once, then reuses) a database of N memories in one workspace: journal events
   with ~18-word summaries and clustered 384-d vectors stored under the local MiniLM's
   model id (embedding 100k texts with the real model would take ~9 minutes here; the
   recall path does the same work either way);
2. starts ``episodic serve`` on a free loopback port with the real local embedder, so every
   query is embedded by MiniLM inside the request;
3. warms it up (the dense matrix loads and the IVF probe trains on first use), then runs
   Debian's ``wrk`` (installed with apt-get when missing) against ``POST /v1/recall`` with
   an admin key: each request a different query of 3-7 words from a pool of 50,000, so the
   service's query-embedding LRU never answers;
4. prints wrk's own output, with p50/p90/p95/p99 from its Lua ``done`` hook, and the
   recalls/s as a share of the in-process ceiling and p95 as a multiple of its p95.

The ceiling, before any server starts: ``--connections`` threads recalling in-process on
the same database for ``--duration`` seconds (query embedding included, the query
embeddings batched and the marks deferred as the server does), its recalls/s and
p50/p95; and the old bound, one recall at a time times the cores.

``--variants branch no-metrics no-otel against --against <src> --rounds 3`` compares
servers instead: each variant (``variant_env``) under the same load, interleaved rounds,
medians side by side with their ratio, each round's figure and the load average.

``--profile`` runs py-spy (``py-spy`` on the PATH or beside the interpreter; it is not a
dependency of the project: ``pip download py-spy`` and unpack the wheel's script) on the
server of the first ``--workers`` value during the load, and prints where its time goes:
the share of samples in HTTP/JSON/validation, recall, query embedding and the store, and
the top functions by cumulative time.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import numpy as np

from episodic import Episodic, Settings
from episodic.store import open_store

ROOT = Path(__file__).resolve().parents[1]
NOW = datetime(2026, 11, 21, tzinfo=UTC)
MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"
DIM = 384
QUERY_POOL = 50_000
sys.path.insert(0, str(Path(__file__).parent))
from bench_spine import sentence  # noqa: E402

LUA = """
local queries = {%(queries)s}
local counter = 0
local threads = {}
function setup(thread)
  thread:set("tid", #threads)
  table.insert(threads, thread)
end
function init(args)
  counter = tid * 7919
end
function request()
  counter = counter + 1
  local q = queries[(counter %% #queries) + 1]
  local body = '{"query": "' .. q .. '", "k": 5, "policy": "%(policy)s"}'
  return wrk.format("POST", "/v1/recall", {
    ["Content-Type"] = "application/json",
    ["Authorization"] = "Bearer %(key)s"}, body)
end
function done(summary, latency, requests)
  local secs = summary.duration / 1e6
  io.write(string.format("requests %%d in %%.1fs: %%.1f recalls/s; errors: connect %%d, "
    .. "read %%d, write %%d, status %%d, timeout %%d\\n", summary.requests, secs,
    summary.requests / secs, summary.errors.connect, summary.errors.read,
    summary.errors.write, summary.errors.status, summary.errors.timeout))
  for _, p in pairs({50, 90, 95, 99}) do
    io.write(string.format("latency p%%d: %%.2f ms\\n", p, latency:percentile(p) / 1000))
  end
end
"""


def ensure_wrk() -> str:
    found = shutil.which("wrk")
    if found:
        return found
    print("installing Debian's wrk ...", file=sys.stderr)
    sudo = [] if os.geteuid() == 0 else ["sudo"]
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    subprocess.run([*sudo, "apt-get", "update", "-qq"], check=True, env=env)
    subprocess.run([*sudo, "apt-get", "install", "-y", "-qq", "wrk"], check=True, env=env)
    found = shutil.which("wrk")
    assert found, "wrk did not install"
    return found


def build(db: Path, n: int) -> None:
    """The database as a server that has run a while leaves it: every memory vectored and
    checked for supersession (the server's indexer would otherwise spend its first minutes
    checking 100k memories the in-process ceiling never checks)."""
    if db.exists():
        with open_store(f"sqlite:///{db}") as store:
            if store.stats("big").vectors >= n:
                print(f"reusing {db} ({n} memories with vectors)")
                store.mark_supersession_checked([f"m{i}" for i in range(n)])
                return
        db.unlink()
    t0 = time.perf_counter()
    rng = np.random.default_rng(3)
    centers = rng.standard_normal((200, DIM)).astype(np.float32)
    with Episodic.open(f"sqlite:///{db}", settings=Settings(embedder="none")) as mem:
        for start in range(0, n, 10_000):
            ids = range(start, min(n, start + 10_000))
            mem.ingest(
                [
                    {
                        "id": f"m{i}",
                        "workspace": "big",
                        "agent": f"agent{i % 20}",
                        "crew": f"crew{i % 5}",
                        "type": "peer.escalation",
                        "summary": sentence(18),
                        "ts": (NOW - timedelta(minutes=i)).isoformat(),
                    }
                    for i in ids
                ]
            )
            vecs = centers[rng.integers(0, 200, len(ids))] + 0.6 * rng.standard_normal(
                (len(ids), DIM)
            ).astype(np.float32)
            vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
            mem.store.put_vectors(MODEL_ID, DIM, [(f"m{i}", vecs[j]) for j, i in enumerate(ids)])
            mem.store.mark_supersession_checked([f"m{i}" for i in ids])
    print(f"built {n} memories with vectors in {time.perf_counter() - t0:.0f}s")


def ceiling(db: Path, policy: str, n: int = 100) -> None:
    """One recall at a time, in-process, on the same database: what a recall costs without
    HTTP or concurrency, and so the most two cores can do."""
    with Episodic.open(f"sqlite:///{db}", settings=Settings(embedder="local")) as mem:
        rnd = random.Random(23)
        queries = [sentence(rnd.randint(3, 7)) for _ in range(n)]
        embedder = mem.embedder
        assert embedder is not None
        mem.recall("warm up", workspace="big", policy=policy, mark=False)
        embed_ms, recall_ms = [], []
        for q in queries:
            t0 = time.perf_counter()
            embedder.embed_batch([q])
            t1 = time.perf_counter()
            mem.recall(q + " .", workspace="big", k=5, policy=policy, mark=False)
            t2 = time.perf_counter()
            embed_ms.append((t1 - t0) * 1000)
            recall_ms.append((t2 - t1) * 1000)
    embed_ms.sort()
    recall_ms.sort()
    cores = os.cpu_count() or 1
    print(
        f"in-process, one at a time: query embedding p50 {embed_ms[n // 2]:.1f} ms; a whole "
        f"recall (its embedding included) p50 {recall_ms[n // 2]:.1f} ms, "
        f"p95 {recall_ms[int(n * 0.95)]:.1f} ms; {cores} cores at that cost do at most "
        f"~{1000 * cores / recall_ms[n // 2]:.0f} recalls/s"
    )


@dataclass(frozen=True)
class Rate:
    """Recalls/s and latency percentiles of one way of recalling."""

    per_s: float
    p50_ms: float
    p95_ms: float


def percentile(sorted_ms: list[float], q: float) -> float:
    return sorted_ms[min(len(sorted_ms) - 1, round(q / 100 * (len(sorted_ms) - 1)))]


def concurrent_ceiling(db: Path, policy: str, threads: int, seconds: float) -> Rate:
    """``threads`` threads recalling in-process on the same database for ``seconds``,
    each query new and embedded in the call: the most the server could do at that
    concurrency with no HTTP in the way."""
    with Episodic.open(f"sqlite:///{db}", settings=Settings(embedder="local")) as mem:
        mem.defer_marks()
        mem.batch_query_embeddings()
        mem.recall("warm up", workspace="big", policy=policy)
        latencies: list[float] = []
        lock = threading.Lock()
        start = threading.Barrier(threads + 1)
        deadline = [0.0]

        def loop(seed: int) -> None:
            rnd = random.Random(seed)
            start.wait()
            while time.perf_counter() < deadline[0]:
                q = f"{sentence(rnd.randint(3, 7))} {seed}"
                t0 = time.perf_counter()
                mem.recall(q, workspace="big", k=5, policy=policy)
                took = (time.perf_counter() - t0) * 1000
                with lock:
                    latencies.append(took)

        workers = [threading.Thread(target=loop, args=(101 + i,)) for i in range(threads)]
        for w in workers:
            w.start()
        deadline[0] = time.perf_counter() + seconds
        t0 = time.perf_counter()
        start.wait()
        for w in workers:
            w.join()
        elapsed = time.perf_counter() - t0
        mem.flush_marks(stop=True)
    latencies.sort()
    rate = Rate(len(latencies) / elapsed, percentile(latencies, 50), percentile(latencies, 95))
    print(
        f"in-process, {threads} threads for {elapsed:.0f}s: {rate.per_s:.1f} recalls/s, "
        f"p50 {rate.p50_ms:.1f} ms, p95 {rate.p95_ms:.1f} ms ({len(latencies)} recalls)"
    )
    return rate


def wrk_rate(output: str) -> Rate:
    """Successful recalls/s and p50/p95 from the Lua ``done`` hook's lines."""
    done = re.search(r"requests (\d+) in ([\d.]+)s: .* status (\d+), timeout (\d+)", output)
    p50 = re.search(r"latency p50: ([\d.]+) ms", output)
    p95 = re.search(r"latency p95: ([\d.]+) ms", output)
    if not (done and p50 and p95):
        raise SystemExit(f"wrk's output lacks its summary:\n{output}")
    requests, secs, failed, timeouts = (float(g) for g in done.groups())
    return Rate((requests - failed - timeouts) / secs, float(p50.group(1)), float(p95.group(1)))


# Where a sampled stack's time goes: the innermost frame whose file matches decides.
CATEGORIES = (
    ("query embedding", ("episodic/embed/", "onnxruntime", "tokenizers")),
    ("store", ("episodic/store/", "sqlite3", "psycopg", "faiss")),
    ("recall", ("episodic/recall/", "episodic/scoring/", "episodic/service/")),
    (
        "HTTP/JSON/validation",
        (
            "episodic/http/",
            "fastapi",
            "starlette",
            "pydantic",
            "uvicorn",
            "h11",
            "httptools",
            "json",
            "anyio",
            "asyncio",
        ),
    ),
)


def category(stack: list[str]) -> str:
    for frame in reversed(stack):
        for name, marks in CATEGORIES:
            if any(mark in frame for mark in marks):
                return name
    return "other"


def profile_report(raw: str, top: int = 20) -> None:
    """Print the shares of py-spy's raw (collapsed) samples per category and the
    functions with the most cumulative samples."""
    shares: Counter[str] = Counter()
    cumulative: Counter[str] = Counter()
    total = 0
    for line in raw.splitlines():
        stack_text, _, count_text = line.rpartition(" ")
        if not stack_text or not count_text.isdigit():
            continue
        count = int(count_text)
        stack = stack_text.split(";")
        total += count
        shares[category(stack)] += count
        for frame in set(stack):
            cumulative[frame] += count
    if not total:
        print("profile: no samples")
        return
    print(f"profile of one worker: {total} samples of its busy threads")
    for name, count in shares.most_common():
        print(f"  {name:>22}: {100 * count / total:5.1f}%")
    print("  top functions by cumulative samples:")
    for frame, count in cumulative.most_common(top):
        print(f"    {100 * count / total:5.1f}%  {frame[:150]}")


def py_spy() -> str | None:
    return shutil.which("py-spy") or next(
        (str(p) for p in [Path(sys.executable).with_name("py-spy")] if p.exists()), None
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def http_load(
    args: argparse.Namespace,
    key: str,
    workers: int,
    profile: bool,
    extra_env: dict[str, str] | None = None,
) -> Rate:
    """``episodic serve --workers N`` on the database, warmed up, under wrk; with
    ``profile``, py-spy samples the server meanwhile; ``extra_env`` on top of ours."""
    port = free_port()
    env = {**os.environ, "EPISODIC_EMBEDDER": "local", "EPISODIC_SWEEP_INTERVAL": "3600"}
    env.update(extra_env or {})
    server = subprocess.Popen(
        [
            str(Path(sys.executable).with_name("episodic")),
            "--db",
            f"sqlite:///{args.db}",
            "serve",
            "--port",
            str(port),
            "--workers",
            str(workers),
            "--log-level",
            "warning",
        ],
        env=env,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    spy: subprocess.Popen[bytes] | None = None
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                health = httpx.get(f"{base}/healthz", timeout=5).json()
                break
            except httpx.HTTPError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise SystemExit("the server did not come up") from None
                time.sleep(0.5)
        print(f"server: {health}, workers {workers}")
        rnd = random.Random(11)
        pool = list(dict.fromkeys(sentence(rnd.randint(3, 7)) for _ in range(QUERY_POOL)))
        # A new connection each time, so that every worker process gets some and loads its
        # dense matrix before the clock starts (keep-alive would pin them all to one).
        headers = {"Authorization": f"Bearer {key}", "Connection": "close"}
        t0 = time.perf_counter()
        for i in range(40 * workers):
            r = httpx.post(
                f"{base}/v1/recall",
                headers=headers,
                json={"query": f"warm up {i}", "policy": args.policy},
                timeout=120,
            )
            r.raise_for_status()
            assert r.json()["mode"] == "vector", r.text
        print(f"warm-up: {time.perf_counter() - t0:.1f}s")
        with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as fh:
            fh.write(
                LUA
                % {
                    "queries": ",".join(json.dumps(q) for q in pool),
                    "policy": args.policy,
                    "key": key,
                }
            )
            script = fh.name
        cmd = [
            ensure_wrk(),
            f"-t{args.threads}",
            f"-c{args.connections}",
            f"-d{args.duration}s",
            "--latency",
            "--timeout",
            "10s",
            "-s",
            script,
            f"{base}/v1/recall",
        ]
        raw = Path(tempfile.mkdtemp(prefix="bench-http-")) / "profile.txt"
        if profile:
            spy = start_py_spy(server.pid, args.duration, raw)
        print("$ " + " ".join([*cmd[:-2], "bench_http.lua", cmd[-1]]))
        load = subprocess.run(cmd, capture_output=True, text=True, check=True)
        print(load.stdout, end="")
        print(
            f"(queries: {len(pool)} distinct, 3-7 words, each request a new one; "
            f"{args.memories} memories; policy {args.policy}; k=5; load average "
            f"{os.getloadavg()[0]:.2f})"
        )
        os.unlink(script)
        if spy is not None:
            spy.wait(60)
            profile_report(raw.read_text() if raw.exists() else "")
        return wrk_rate(load.stdout)
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(30)


def start_py_spy(pid: int, seconds: int, out: Path) -> subprocess.Popen[bytes] | None:
    spy = py_spy()
    if spy is None:
        print("--profile: py-spy not found (pip download py-spy; unpack its script on PATH)")
        return None
    return subprocess.Popen(
        [
            *(spy, "record", "--pid", str(pid), "--subprocesses", "--duration", str(seconds)),
            *("--rate", "200", "--format", "raw", "--output", str(out), "--nonblocking"),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


# What ``--variants`` can run: the server's environment for each. ``without/`` holds a
# sitecustomize that makes the modules of EPISODIC_BENCH_WITHOUT unimportable, in the
# server and in its recall processes alike.
WITHOUT = str(Path(__file__).parent / "without")


def variant_env(name: str, against: Path | None) -> dict[str, str]:
    """``branch``: this tree as installed (metrics on, traces off: no OTEL_* variable);
    ``no-metrics``: prometheus_client unimportable (every metric does nothing);
    ``no-otel``: the OpenTelemetry SDK unimportable (traces absent, as without the
    extra); ``against``: the tree at ``--against`` (code without this tree's changes)."""
    here = os.environ.get("PYTHONPATH", "")
    clean = {k: "" for k in os.environ if k.startswith("OTEL_")}
    if name == "branch":
        return clean
    if name == "no-metrics":
        return {
            **clean,
            "PYTHONPATH": f"{WITHOUT}:{here}",
            "EPISODIC_BENCH_WITHOUT": "prometheus_client",
        }
    if name == "no-otel":
        return {
            **clean,
            "PYTHONPATH": f"{WITHOUT}:{here}",
            "EPISODIC_BENCH_WITHOUT": "opentelemetry.sdk,opentelemetry.exporter",
        }
    if name == "against":
        if against is None:
            raise SystemExit("--variants against needs --against <src folder>")
        return {**clean, "PYTHONPATH": ":".join(filter(None, [str(against), here]))}
    raise SystemExit(f"unknown variant {name!r}: branch, no-metrics, no-otel, against")


def median(values: list[float]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def compare(args: argparse.Namespace, key: str) -> None:
    """Each variant's server under the same wrk load, ``--rounds`` times, interleaved
    (each round in another order, so that a drift of the machine's load is shared); the
    medians side by side, their ratio to the first variant, and the noise: how far one
    variant's own rounds spread."""
    runs: dict[str, list[tuple[Rate, float]]] = {v: [] for v in args.variants}
    for n in range(args.rounds):
        order = args.variants[n % len(args.variants) :] + args.variants[: n % len(args.variants)]
        for name in order:
            print(f"\n== round {n + 1}, {name}")
            rate = http_load(args, key, 1, False, variant_env(name, args.against))
            runs[name].append((rate, os.getloadavg()[0]))
    first = args.variants[0]
    base = median([r.per_s for r, _ in runs[first]])
    print(
        f"\n{args.rounds} rounds, {args.memories} memories, {args.connections} connections, "
        f"{args.duration} s each, interleaved"
    )
    print("| variant | recalls/s, median | each round | vs " + first + " | p95 ms, median | load |")
    print("|---|---|---|---|---|---|")
    for name, found in runs.items():
        per_s = [r.per_s for r, _ in found]
        mid = median(per_s)
        spread = (max(per_s) - min(per_s)) / mid if mid else 0.0
        loads = [load for _, load in found]
        print(
            f"| {name} | {mid:.2f} | {', '.join(f'{x:.1f}' for x in per_s)} (spread "
            f"{100 * spread:.0f}%) | {100 * (mid / base - 1):+.1f}% | "
            f"{median([r.p95_ms for r, _ in found]):.0f} | {min(loads):.1f}-{max(loads):.1f} |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--memories", type=int, default=100_000)
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--duration", type=int, default=30)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--policy", default="default")
    parser.add_argument("--profile", action="store_true", help="py-spy on the first server")
    parser.add_argument("--db", type=Path, default=ROOT / ".episodic" / "bench_http.db")
    parser.add_argument(
        "--variants",
        nargs="+",
        help="compare servers instead (one worker, no ceiling): branch, no-metrics, "
        "no-otel, against",
    )
    parser.add_argument("--rounds", type=int, default=3, help="with --variants")
    parser.add_argument("--against", type=Path, help="the src folder of --variants against")
    args = parser.parse_args()
    ensure_wrk()
    args.db.parent.mkdir(parents=True, exist_ok=True)
    build(args.db, args.memories)
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    if args.variants:
        with Episodic.open(f"sqlite:///{args.db}", settings=Settings(embedder="none")) as mem:
            _, key = mem.create_key("big", role="admin", label="bench_http")
        compare(args, key)
        return
    ceiling(args.db, args.policy)
    inproc = concurrent_ceiling(args.db, args.policy, args.connections, args.duration)
    with Episodic.open(f"sqlite:///{args.db}", settings=Settings(embedder="none")) as mem:
        _, key = mem.create_key("big", role="admin", label="bench_http")
    results = []
    for n, workers in enumerate(args.workers):
        rate = http_load(args, key, workers, args.profile and n == 0)
        results.append((workers, rate))
    print(
        f"\nin-process ceiling at {args.connections} threads: {inproc.per_s:.1f} recalls/s, "
        f"p50 {inproc.p50_ms:.1f} ms, p95 {inproc.p95_ms:.1f} ms"
    )
    for workers, rate in results:
        print(
            f"HTTP, {args.connections} connections, --workers {workers}: {rate.per_s:.1f} "
            f"recalls/s = {100 * rate.per_s / inproc.per_s:.0f}% of the ceiling; p50 "
            f"{rate.p50_ms:.1f} ms, p95 {rate.p95_ms:.1f} ms = "
            f"{rate.p95_ms / inproc.p95_ms:.2f}x the in-process p95"
        )
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
