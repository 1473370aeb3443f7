"""HTTP recall under load: ``episodic serve`` over 100k memories, driven by wrk.

    .venv/bin/python benchmarks/bench_http.py [--memories 100000] [--connections 16]
        [--threads 2] [--duration 30] [--workers 1] [--policy default]

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
4. prints wrk's own output, with p50/p90/p95/p99 from its Lua ``done`` hook.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
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
    if db.exists():
        with open_store(f"sqlite:///{db}") as store:
            if store.stats("big").vectors >= n:
                print(f"reusing {db} ({n} memories with vectors)")
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
    print(f"built {n} memories with vectors in {time.perf_counter() - t0:.0f}s")


def ceiling(db: Path, policy: str, n: int = 200) -> None:
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


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--memories", type=int, default=100_000)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--duration", type=int, default=30)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--policy", default="default")
    parser.add_argument("--db", type=Path, default=ROOT / ".episodic" / "bench_http.db")
    args = parser.parse_args()
    wrk = ensure_wrk()
    args.db.parent.mkdir(parents=True, exist_ok=True)
    build(args.db, args.memories)
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    ceiling(args.db, args.policy)
    with Episodic.open(f"sqlite:///{args.db}", settings=Settings(embedder="none")) as mem:
        _, key = mem.create_key("big", role="admin", label="bench_http")
    port = free_port()
    env = {**os.environ, "EPISODIC_EMBEDDER": "local", "EPISODIC_SWEEP_INTERVAL": "3600"}
    server = subprocess.Popen(
        [
            str(Path(sys.executable).with_name("episodic")),
            "--db",
            f"sqlite:///{args.db}",
            "serve",
            "--port",
            str(port),
            "--workers",
            str(args.workers),
            "--log-level",
            "warning",
        ],
        env=env,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
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
        print(f"server: {health}, workers {args.workers}")
        rnd = random.Random(11)
        pool = list(dict.fromkeys(sentence(rnd.randint(3, 7)) for _ in range(QUERY_POOL)))
        # A new connection each time, so that every worker process gets some and loads its
        # dense matrix before the clock starts (keep-alive would pin them all to one).
        headers = {"Authorization": f"Bearer {key}", "Connection": "close"}
        t0 = time.perf_counter()
        for i in range(40 * args.workers):
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
            wrk,
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
        print("$ " + " ".join([*cmd[:-2], "bench_http.lua", cmd[-1]]))
        load = subprocess.run(cmd, capture_output=True, text=True, check=True)
        print(load.stdout, end="")
        print(
            f"(queries: {len(pool)} distinct, 3-7 words, each request a new one; "
            f"{args.memories} memories; policy {args.policy}; k=5; load average "
            f"{os.getloadavg()[0]:.2f})"
        )
        os.unlink(script)
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(30)


if __name__ == "__main__":
    main()
