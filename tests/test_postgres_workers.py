"""Several indexing workers against one PostgreSQL database: 20,000 memories, 4 worker
processes, one of them killed with SIGKILL mid-sweep. Every memory ends up with exactly
one vector, none is missed, and no committed batch is indexed twice (the workers claim
rows with FOR UPDATE SKIP LOCKED).

Here the workers embed with the deterministic hashing embedder, so the run takes seconds
and tests the claims; tests/stress/test_postgres_workers.py (``make stress``) runs the same
scenario with the real local model, where each claim is held through ~0.1 s of embedding
(about four minutes on two cores)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg

from episodic.model import Event, Memory
from episodic.store.postgres import PostgresStore

WORKER = Path(__file__).parent / "workers" / "index_worker.py"
MEMORIES = 20_000
WORKERS = 4
BATCH = 64
T0 = datetime(2026, 5, 1, tzinfo=UTC)
_WORDS = [
    "deploy",
    "rollback",
    "cache",
    "queue",
    "index",
    "schema",
    "billing",
    "invoice",
    "tenant",
    "quota",
    "retry",
    "timeout",
    "alert",
    "pager",
    "shard",
    "replica",
    "backup",
    "restore",
    "token",
    "session",
    "latency",
    "budget",
    "canary",
    "flag",
]


def _memories(n: int) -> tuple[list[Event], list[Memory]]:
    events, memories = [], []
    for i in range(n):
        words = " ".join(_WORDS[(i * 7 + k * 3) % len(_WORDS)] for k in range(6))
        e = Event(
            id=f"ev-{i:05d}",
            workspace=f"ws{i % 3}",
            ts=T0 + timedelta(seconds=i),
            type="note",
            summary=f"run {i}: {words}",
        )
        events.append(e)
        memories.append(
            Memory(
                id=e.id,
                workspace=e.workspace,
                ts=e.ts,
                type=e.type,
                content=e.summary,
                base_importance=0.5,
                importance=0.5,
                source_event_ids=(e.id,),
                created_at=e.ts,
            )
        )
    return events, memories


def _ids(log: Path) -> list[str]:
    if not log.exists():
        return []
    return [line for line in log.read_text().splitlines() if line and line != "started"]


def test_four_workers_index_each_memory_exactly_once_even_when_one_is_killed(
    pg_url: str, tmp_path: Path
) -> None:
    four_workers_one_killed(pg_url, tmp_path, "fake")


def four_workers_one_killed(pg_url: str, tmp_path: Path, embedder: str) -> None:
    events, memories = _memories(MEMORIES)
    with PostgresStore(pg_url) as store:
        for start in range(0, MEMORIES, 2000):
            store.append(events[start : start + 2000], memories[start : start + 2000])

    # One model thread per worker: four workers share two cores.
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "EPISODIC_EMBED_THREADS": "1"}
    logs = [tmp_path / f"worker{i}.log" for i in range(WORKERS)]
    procs = [
        subprocess.Popen(
            [sys.executable, str(WORKER), pg_url, str(log), str(BATCH), embedder],
            env=env,
            stderr=subprocess.PIPE,
        )
        for log in logs
    ]
    victim = procs[0]
    # Kill worker 0 once it has committed a few batches: it is then almost always inside
    # a claim (embedding with rows locked), the case that must lose nothing.
    deadline = time.monotonic() + 240
    while len(_ids(logs[0])) < 3 * BATCH and time.monotonic() < deadline:
        assert victim.poll() is None, victim.stderr.read() if victim.stderr else ""
        time.sleep(0.05)
    victim.send_signal(signal.SIGKILL)
    victim.wait(30)
    for p in procs[1:]:
        _, stderr = p.communicate(timeout=600)
        assert p.returncode == 0, stderr.decode()

    logged = Counter(i for log in logs for i in _ids(log))
    assert logged, "no worker indexed anything"
    assert max(logged.values()) == 1, [i for i, n in logged.items() if n > 1][:5]
    # Every worker that survived took a share of the work.
    assert all(_ids(log) for log in logs[1:])
    with psycopg.connect(pg_url) as conn:
        (vectors,) = conn.execute("SELECT count(*) FROM memory_vectors").fetchone() or (0,)
        (distinct,) = conn.execute(
            "SELECT count(DISTINCT memory_id) FROM memory_vectors"
        ).fetchone() or (0,)
        (pending,) = conn.execute(
            "SELECT count(*) FROM memories WHERE has_vector = 0"
        ).fetchone() or (0,)
    assert vectors == distinct == MEMORIES and pending == 0
    # What the logs hold was committed; at most the victim's last batch (committed, then
    # killed before it wrote its log line) is missing from them.
    assert MEMORIES - BATCH <= len(logged) <= MEMORIES
