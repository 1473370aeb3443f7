"""PostgreSQL lost mid-run: requests fail fast with a 503 that says why, the background
sweeper backs off and resumes when the server is back, and no acknowledged write is lost.
The server is one of this test's own (``pg_servers``), stopped and started again on the
same data directory."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import httpx

import pg_servers
from episodic import Episodic, Settings
from episodic.embed.fake import FakeEmbedder
from episodic.http import asgi
from episodic.store import open_store
from servers import serve


def _event(i: int) -> dict[str, Any]:
    return {
        "id": f"e{i}",
        "type": "peer.escalation",
        "summary": f"deploy {i} stalled on the payment gateway",
        "ts": "2026-11-20T10:00:00Z",
    }


def test_requests_fail_fast_while_the_database_is_down_and_nothing_acknowledged_is_lost(
    tmp_path: Path,
) -> None:
    pgdata = tmp_path / "pg"
    server = pg_servers.start(pgdata, cleanup_mode="stop")
    url = server.get_uri()
    mem = Episodic(
        store=open_store(url),
        embedder=FakeEmbedder(dim=64),
        settings=Settings(sweep_interval_s=0.2),
    )
    _, key = mem.create_key("acme", role="admin")
    acked: list[str] = []
    indexer = mem.indexer()
    assert indexer is not None
    try:
        with (
            serve(asgi(mem)) as base,
            httpx.Client(
                base_url=base, headers={"Authorization": f"Bearer {key}"}, timeout=30
            ) as c,
        ):
            for i in range(10):
                r = c.post("/v1/events", json={"events": [_event(i)]})
                assert r.status_code == 200, r.text
                acked.append(f"e{i}")
            indexer.start()

            server.cleanup()  # the database goes away under a running service
            for path, body in (
                ("/v1/events", {"events": [_event(100)]}),
                ("/v1/recall", {"query": "deploy stalled"}),
            ):
                started = time.monotonic()
                r = c.post(path, json=body)
                assert time.monotonic() - started < 12, "a request hung on the lost database"
                assert r.status_code == 503, (path, r.status_code, r.text)
                error = r.json()["error"]
                assert error["code"] == "store_unavailable"  # down, not busy
                assert "unreachable" in error["message"] and "PostgreSQL" in error["message"]
            time.sleep(1.0)  # the sweeper meets the outage too

            server = pg_servers.start(pgdata, cleanup_mode="stop")  # back again
            deadline = time.monotonic() + 30
            while True:
                r = c.post("/v1/events", json={"events": [_event(200)]})
                if r.status_code == 200:
                    acked.append("e200")
                    break
                assert time.monotonic() < deadline, r.text
                time.sleep(0.2)
            for i in range(201, 206):
                r = c.post("/v1/events", json={"events": [_event(i)]})
                assert r.status_code == 200, r.text
                acked.append(f"e{i}")

            found = {e.id for e in mem.store.get_events("acme", acked)}
            assert found == set(acked)
            # The sweeper resumed by itself and indexed what arrived around the outage.
            deadline = time.monotonic() + 30
            while mem.store.stats("acme").pending_vectors:
                assert time.monotonic() < deadline, "the sweeper did not resume"
                time.sleep(0.2)
            assert mem.store.stats("acme").vectors == len(acked)
            hits = c.post("/v1/recall", json={"query": "payment gateway stalled", "k": 3})
            assert hits.status_code == 200 and hits.json()["hits"]
    finally:
        indexer.stop()
        mem.close()
        server.cleanup()
