"""``/healthz`` reports the recall mode as it is now, and the log says when it changes.

The embedder is the controllable Ollama-speaking server of tests/embed_server.py behind
the real ``OllamaEmbedder``; the API is served by uvicorn with its background jobs, as
``episodic serve`` runs it. An outage that starts after boot turns ``/healthz`` to
``sparse-only`` and its end turns it back to ``vector``, with or without traffic (the
indexer's sweeps, or only ``/healthz`` polls); each change is logged once, never once per
sweep or per request while the state lasts.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from embed_server import EmbedServer, running_embed_server
from episodic import Episodic, Settings
from episodic.http import asgi
from episodic.recall.engine import MODE_SPARSE_ONLY, MODE_VECTOR
from episodic.store import open_store
from outage_support import settings_for
from servers import serve

SWEEP_S = 0.05
SPARSE_WARNING = "episodic is running sparse-only"
BACK_WARNING = "the embedder answers again"


@pytest.fixture
def embed_server() -> Iterator[EmbedServer]:
    with running_embed_server() as srv:
        yield srv


def journal(tag: str, n: int) -> list[dict[str, Any]]:
    now = datetime.now(UTC).isoformat()
    return [
        {
            "id": f"{tag}-{i}",
            "workspace": "acme",
            "type": "peer.escalation",
            "summary": f"{tag} checkout incident {i}",
            "ts": now,
        }
        for i in range(n)
    ]


def healthz(base: str) -> str:
    r = httpx.get(f"{base}/healthz", timeout=10)
    assert r.status_code == 200, r.text
    mode: str = r.json()["episodic"]
    return mode


def wait_for(base: str, mode: str, timeout_s: float = 20.0) -> None:
    """Poll /healthz (as a load balancer would) until it says ``mode``."""
    deadline = time.monotonic() + timeout_s
    seen = healthz(base)
    while seen != mode:
        assert time.monotonic() < deadline, f"/healthz still says {seen!r}, not {mode!r}"
        time.sleep(0.02)
        seen = healthz(base)


def logged(caplog: pytest.LogCaptureFixture, *, level: int, text: str) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.levelno == level and r.name.startswith("episodic") and text in r.getMessage()
    ]


def warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.levelno >= logging.WARNING and r.name.startswith("episodic")
    ]


def poll_while(base: str, seconds: float) -> None:
    """Keep polling /healthz for a while: every poll may start a probe."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        healthz(base)
        time.sleep(0.02)


def test_healthz_follows_an_outage_after_boot_and_logs_each_change_once(
    db_url: str, embed_server: EmbedServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="episodic")
    srv = embed_server
    mem = Episodic(store=open_store(db_url), settings=settings_for(srv, sweep_interval_s=SWEEP_S))
    count: Callable[[], int] = lambda: mem.stats("acme").pending_vectors  # noqa: E731
    try:
        with serve(asgi(mem, background=True)) as base:
            assert healthz(base) == MODE_VECTOR
            assert warnings(caplog) == []

            # Down while the indexer has work: its sweeps see the outage.
            srv.set("down")
            assert mem.ingest(journal("during", 3)).admitted == 3
            wait_for(base, MODE_SPARSE_ONLY)
            poll_while(base, 0.5)  # about ten failed sweeps, and a poll every 20 ms
            assert count() >= 3  # (upkeep's consolidation may have added one)
            assert len(warnings(caplog)) == 1
            assert logged(caplog, level=logging.WARNING, text=SPARSE_WARNING)

            srv.set("up")
            wait_for(base, MODE_VECTOR)
            deadline = time.monotonic() + 20
            while count() and time.monotonic() < deadline:
                time.sleep(0.02)
            assert count() == 0
            # At the default level (WARNING), as the line that said it went away.
            assert len(logged(caplog, level=logging.WARNING, text=BACK_WARNING)) == 1

            # Down and back with no traffic at all: only /healthz polls, and the probe
            # they start now and then, see it.
            srv.set("down")
            wait_for(base, MODE_SPARSE_ONLY)
            poll_while(base, 0.3)
            srv.set("up")
            wait_for(base, MODE_VECTOR)
            poll_while(base, 0.3)
            assert len(logged(caplog, level=logging.WARNING, text=SPARSE_WARNING)) == 2
            assert len(logged(caplog, level=logging.WARNING, text=BACK_WARNING)) == 2
            assert len(warnings(caplog)) == 4, warnings(caplog)
    finally:
        mem.close()


@pytest.mark.parametrize("start", ["no embedder configured", "embedder down"])
def test_a_sparse_only_boot_is_logged_once(
    tmp_path: Path, embed_server: EmbedServer, caplog: pytest.LogCaptureFixture, start: str
) -> None:
    caplog.set_level(logging.INFO, logger="episodic")
    srv = embed_server
    if start == "embedder down":
        srv.set("down")
        settings = settings_for(srv, sweep_interval_s=SWEEP_S)
    else:
        settings = Settings(embedder="none", sweep_interval_s=SWEEP_S)
    mem = Episodic(store=open_store(f"sqlite:///{tmp_path}/m.db"), settings=settings)
    try:
        with serve(asgi(mem, background=True)) as base:
            assert mem.ingest(journal("boot", 3)).admitted == 3
            poll_while(base, 0.5)
            assert healthz(base) == MODE_SPARSE_ONLY
        assert len(warnings(caplog)) == 1, warnings(caplog)
        assert logged(caplog, level=logging.WARNING, text=SPARSE_WARNING)
    finally:
        mem.close()
