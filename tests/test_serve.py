"""``episodic serve`` as a user runs it: a subprocess on a free loopback port, with the
background indexer embedding what the API receives (the real local model)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from episodic import Episodic, Settings


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def served(db: str, *extra: str, env: dict[str, str]) -> Iterator[str]:
    port = free_port()
    proc = subprocess.Popen(
        [
            str(Path(sys.executable).with_name("episodic")),
            "--db",
            db,
            "serve",
            "--port",
            str(port),
            "--log-level",
            "warning",
            *extra,
        ],
        env={**os.environ, **env},
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                httpx.get(f"{base}/healthz", timeout=2)
                break
            except httpx.HTTPError:
                assert proc.poll() is None and time.monotonic() < deadline, "serve did not start"
                time.sleep(0.2)
        yield base
    finally:
        proc.send_signal(signal.SIGINT)  # Ctrl-C
        code = proc.wait(30)
        if code != 0:
            os.killpg(proc.pid, signal.SIGKILL)
        assert code == 0  # a clean shutdown


@pytest.mark.model
def test_serve_runs_the_api_and_the_background_indexer(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path}/serve.db"
    with Episodic.open(db, settings=Settings(embedder="none")) as mem:
        _, key = mem.create_key("acme", role="admin")
    env = {"EPISODIC_EMBEDDER": "local", "EPISODIC_SWEEP_INTERVAL": "0.2"}
    with served(db, env=env) as base:
        assert httpx.get(f"{base}/healthz").json()["episodic"] == "vector"
        auth = {"Authorization": f"Bearer {key}"}
        r = httpx.post(
            f"{base}/v1/events",
            headers=auth,
            json={
                "events": [
                    {"type": "peer.escalation", "summary": "checkout OOM after cache change"}
                ]
            },
        )
        assert r.status_code == 200 and r.json()["admitted"] == 1
        deadline = time.monotonic() + 30
        while True:  # the sweeper embeds it without anyone asking
            with Episodic.open(db, settings=Settings(embedder="none")) as mem:
                if mem.stats("acme").vectors == 1:
                    break
            assert time.monotonic() < deadline, "the indexer never embedded the event"
            time.sleep(0.2)
        hits = httpx.post(
            f"{base}/v1/recall",
            headers=auth,
            json={"query": "memory exhausted in the shop", "policy": "dense"},
        ).json()
        assert hits["mode"] == "vector" and hits["hits"][0]["content"].startswith("checkout OOM")


def test_serve_with_two_worker_processes(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path}/workers.db"
    with Episodic.open(db, settings=Settings(embedder="none")) as mem:
        _, key = mem.create_key("acme", role="admin")
        mem.ingest([{"workspace": "acme", "type": "peer.escalation", "summary": "disk full"}])
    with served(db, "--workers", "2", env={"EPISODIC_EMBEDDER": "none"}) as base:
        auth = {"Authorization": f"Bearer {key}"}
        for _ in range(6):  # spread over both processes
            r = httpx.post(f"{base}/v1/recall", headers=auth, json={"query": "disk full"})
            assert r.status_code == 200 and r.json()["mode"] == "sparse-only"
            assert [h["content"] for h in r.json()["hits"]] == ["disk full"]
