"""Load, full size: 64 concurrent clients for 10 minutes against ``episodic serve`` on
SQLite and on PostgreSQL, mixing writes and recalls (tests/stress/load.py): no error, no
lost write, the server's memory flat. Throughput and p50/p95/p99 per kind go to
RESULTS.md.

    EPISODIC_LOAD_SECONDS (default 600), EPISODIC_LOAD_CLIENTS (default 64)
"""

from __future__ import annotations

import os
from pathlib import Path

import httpx
import pytest
from load import RSS_TOLERANCE_BYTES, RSS_TOLERANCE_FRACTION, LoadConfig, run_load, shed_wait
from results import record

SECONDS = float(os.environ.get("EPISODIC_LOAD_SECONDS", "600"))
CLIENTS = int(os.environ.get("EPISODIC_LOAD_CLIENTS", "64"))


@pytest.mark.model
def test_load(db_url: str, tmp_path: Path) -> None:
    backend = "sqlite" if db_url.startswith("sqlite") else "postgres"
    config = LoadConfig(db=db_url, clients=CLIENTS, seconds=SECONDS, log_dir=tmp_path)
    report = run_load(config)
    problems = report.problems()
    figures = report.figures()
    figures["problems"] = "; ".join(problems) or "none"
    record(
        f"load-{backend}",
        f"Load: {CLIENTS} clients x {SECONDS:.0f} s against episodic serve ({backend})",
        f"EPISODIC_LOAD_SECONDS={SECONDS:.0f} EPISODIC_LOAD_CLIENTS={CLIENTS} "
        f".venv/bin/pytest -q tests/stress/test_load.py -k {backend}",
        figures,
        notes=(
            "Closed loop, no think time: each client sends its next request when the last "
            "one is answered, so the figures are the server's capacity on this machine, "
            "shared with the driver (latencies include the driver's own scheduling). Mix: "
            "30% writes (event batches of 1-5, conversation messages - half backfilled 6 h "
            "ago so the sweeper segments them mid-run - and remembered notes), 68% reads "
            "(recall and render over all policies, agent/lead/admin keys and scopes; recent "
            "episodes), 2% forgets of the client's latest finished conversation (nothing of "
            "it may be left afterwards). The server runs its default sweeper (30 s poll) and "
            "upkeep "
            "scheduler with the local MiniLM embedder. An error is any non-2xx, connection "
            "error, timeout (30 s) or cross-workspace hit; a lost write is an acknowledged "
            "id missing from the store afterwards (all of them are read back, and a sample "
            "through GET /v1/memories/{id}). RSS is flat when the last quarter's median is "
            f"at most the second quarter's plus max({RSS_TOLERANCE_FRACTION:.0%}, "
            f"{RSS_TOLERANCE_BYTES // 2**20} MB)."
        ),
    )
    assert problems == []


@pytest.mark.parametrize(
    ("status", "headers", "wait"),
    [
        (503, {"Retry-After": "2"}, 2.0),  # shed: wait and send it again
        (503, {}, None),  # a 503 that does not say when is a failure
        (503, {"Retry-After": "Wed, 21 Oct 2026 07:28:00 GMT"}, None),
        (200, {"Retry-After": "1"}, None),
        (429, {"Retry-After": "1"}, None),
    ],
)
def test_the_driver_waits_out_a_503_with_retry_after_only(
    status: int, headers: dict[str, str], wait: float | None
) -> None:
    assert shed_wait(httpx.Response(status, headers=headers)) == wait
