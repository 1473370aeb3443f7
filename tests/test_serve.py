"""``episodic serve`` as a user runs it: a subprocess on a free loopback port, with the
background indexer embedding what the API receives (the real local model)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from conftest import raw_rows
from episodic import Episodic, Settings


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_serving(
    db: str, *extra: str, env: dict[str, str], **popen: Any
) -> tuple[subprocess.Popen[bytes], str]:
    """``episodic serve`` of ``db`` in a session of its own, once it answers /healthz;
    the process and its base URL."""
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
        **popen,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                httpx.get(f"{base}/healthz", timeout=2)
                return proc, base
            except httpx.HTTPError:
                assert proc.poll() is None and time.monotonic() < deadline, "serve did not start"
                time.sleep(0.2)
    except BaseException:
        os.killpg(proc.pid, signal.SIGKILL)
        raise


@contextmanager
def served(db: str, *extra: str, env: dict[str, str]) -> Iterator[str]:
    proc, base = start_serving(db, *extra, env=env)
    try:
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
        # A sign-in to the operator's page holds in every process, and so does a sign-out:
        # the sessions are rows in the database, not in one process's memory.
        signed = httpx.post(f"{base}/ui/login", data={"key": key})
        assert signed.status_code == 303
        cookie = {"episodic_session": signed.cookies["episodic_session"]}
        for _ in range(8):  # a new connection each time: either process may answer
            assert httpx.get(f"{base}/ui/memories", cookies=cookie).status_code == 200
        assert httpx.post(f"{base}/ui/logout", cookies=cookie).status_code == 303
        for _ in range(8):
            assert httpx.get(f"{base}/ui/memories", cookies=cookie).status_code == 401


def _serving(db: str) -> int:
    """The pid of the ``episodic serve`` of ``db`` (Linux)."""
    for proc in Path("/proc").iterdir():
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
        except (OSError, ValueError):
            continue
        if db.encode() in argv and b"serve" in argv:
            return int(proc.name)
    raise AssertionError(f"no episodic serve of {db}")


def _workers(pid: int) -> list[int]:
    """The worker processes ``pid`` spawned that still run (Linux): multiprocessing's
    own resource tracker is not one."""
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        for child in (task / "children").read_text().split():
            if b"spawn_main" in Path(f"/proc/{child}/cmdline").read_bytes():
                found.append(int(child))
    return found


@pytest.mark.parametrize(
    ("extra", "workers"),
    [((), 1), (("--recall-processes", "0"), 0), (("--recall-processes", "2"), 2)],
)
def test_serve_recalls_in_processes_of_its_own(
    tmp_path: Path, extra: tuple[str, ...], workers: int
) -> None:
    db = f"sqlite:///{tmp_path}/recalls.db"
    with Episodic.open(db, settings=Settings(embedder="none")) as mem:
        _, key = mem.create_key("acme", role="admin")
        mem.ingest([{"workspace": "acme", "type": "peer.escalation", "summary": "disk full"}])
    env = {"EPISODIC_EMBEDDER": "none", "EPISODIC_RECALL_PROCESSES": ""}
    with served(db, *extra, env=env) as base:
        auth = {"Authorization": f"Bearer {key}"}
        for _ in range(3):
            r = httpx.post(f"{base}/v1/recall", headers=auth, json={"query": "disk full"})
            assert r.status_code == 200
            assert [h["content"] for h in r.json()["hits"]] == ["disk full"]
        spawned = _workers(_serving(db))
        assert len(spawned) == workers
    # Ctrl-C ends the workers with the server, and the marks of their recalls are kept.
    assert not [pid for pid in spawned if Path(f"/proc/{pid}").exists()]
    assert raw_rows(db, "SELECT reference_count FROM memories") == [(3,)]


@pytest.mark.model
def test_a_sigterm_to_the_process_group_ends_server_and_workers_cleanly(tmp_path: Path) -> None:
    """systemd's KillMode=control-group and `kill -- -<pgid>` signal every process of the
    group: the workers wait for the server to end them, so no recall in flight fails over
    and no worker is started again while the server stops."""
    db = f"sqlite:///{tmp_path}/term.db"
    with Episodic.open(db, settings=Settings(embedder="none")) as mem:
        _, key = mem.create_key("acme", role="admin")
        mem.ingest([{"workspace": "acme", "type": "peer.escalation", "summary": "disk full"}])
    log = tmp_path / "serve.log"
    with log.open("wb") as out:
        env = {"EPISODIC_EMBEDDER": "none", "EPISODIC_RECALL_PROCESSES": "1"}
        proc, base = start_serving(db, env=env, stdout=out, stderr=subprocess.STDOUT)
        auth = {"Authorization": f"Bearer {key}"}
        try:
            r = httpx.post(f"{base}/v1/recall", headers=auth, json={"query": "disk full"})
            assert r.status_code == 200 and len(r.json()["hits"]) == 1
            (worker,) = _workers(proc.pid)
            stop = threading.Event()
            answered: list[int] = []

            def recall_until_stopped() -> None:
                with httpx.Client(base_url=base, headers=auth, timeout=10) as client:
                    while not stop.is_set():
                        try:
                            answer = client.post("/v1/recall", json={"query": "disk full"})
                        except httpx.HTTPError:
                            return  # the server has stopped listening
                        answered.append(answer.status_code)

            # Recalls in flight when the signal comes, as under a real load.
            callers = [threading.Thread(target=recall_until_stopped) for _ in range(8)]
            for caller in callers:
                caller.start()
            while len(answered) < 50:
                time.sleep(0.01)
            os.killpg(proc.pid, signal.SIGTERM)
            code = proc.wait(30)
            stop.set()
            for caller in callers:
                caller.join(30)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
    said = log.read_text(errors="replace")
    # uvicorn stops gracefully, then dies of the signal it caught, as a service should.
    assert code in (0, -signal.SIGTERM), said
    assert "died" not in said, said
    assert set(answered) == {200}
    deadline = time.monotonic() + 10
    while Path(f"/proc/{worker}").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not Path(f"/proc/{worker}").exists()
    # Every answered recall's mark was written before the server ended.
    assert raw_rows(db, "SELECT reference_count FROM memories") == [(1 + len(answered),)]


def _upkeep_due(db: str) -> None:
    """Memories written 100 days ago and no upkeep run yet: a scheduler that starts on
    this database decays them and runs the day's consolidation at once."""
    then = datetime.now(UTC) - timedelta(days=100)
    with Episodic.open(db, settings=Settings(embedder="none"), clock=lambda: then) as mem:
        for text in ("checkout OOM after cache change", "keeper denied the deploy"):
            mem.remember(text, workspace="acme", agent="deployer", importance=0.8)


def _state(db: str) -> list[list[tuple[Any, ...]]]:
    """What upkeep would change: every memory's importance, the run log, leases, health
    snapshots and the memories consolidation adds."""
    return [
        raw_rows(db, sql)
        for sql in (
            "SELECT id, importance, reference_count, status FROM memories ORDER BY id",
            "SELECT count(*) FROM upkeep_runs",
            "SELECT count(*) FROM upkeep_leases",
            "SELECT count(*) FROM memory_health_snapshots",
        )
    ]


def _serve_once(db: str, port: int) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(Path(sys.executable).with_name("episodic")), "--db", db, "serve", "--port", str(port)],
        env={**os.environ, "EPISODIC_EMBEDDER": "none"},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_serve_on_a_port_in_use_exits_3_and_leaves_the_database_alone(db_url: str) -> None:
    _upkeep_due(db_url)
    before = _state(db_url)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = _serve_once(db_url, port)
    assert done.returncode == 3
    assert "serving" not in done.stdout
    assert f"127.0.0.1:{port}" in done.stderr and "--port" in done.stderr
    assert _state(db_url) == before


def test_a_server_started_twice_on_one_port_the_second_exits_3(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path}/twice.db"
    _upkeep_due(db)
    with served(db, env={"EPISODIC_EMBEDDER": "none"}) as base:
        port = int(base.rsplit(":", 1)[1])
        deadline = time.monotonic() + 30
        while not raw_rows(db, "SELECT 1 FROM upkeep_runs WHERE job = 'daily'"):
            assert time.monotonic() < deadline, "the first server's upkeep never finished"
            time.sleep(0.2)
        before = _state(db)
        done = _serve_once(db, port)
        assert done.returncode == 3 and "serving" not in done.stdout
        assert _state(db) == before
        assert httpx.get(f"{base}/healthz").status_code == 200  # the first one serves on


def test_serve_says_which_database_it_serves_without_its_password(db_url: str) -> None:
    Episodic.open(db_url, settings=Settings(embedder="none")).close()
    url = db_url.replace("postgres:@", "postgres:hunter2@", 1)  # trusted: any password works
    proc = subprocess.Popen(
        [str(Path(sys.executable).with_name("episodic")), "--db", url, "serve", "--port", "0"],
        env={**os.environ, "EPISODIC_EMBEDDER": "none"},
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        base = line.split(" on ", 1)[1].split()[0]
        deadline = time.monotonic() + 60
        while True:  # the port printed is the one served
            try:
                assert httpx.get(f"{base}/healthz", timeout=2).status_code == 200
                break
            except httpx.HTTPError:
                assert time.monotonic() < deadline, "serve did not start"
                time.sleep(0.2)
    finally:
        proc.send_signal(signal.SIGINT)
        code = proc.wait(30)
    assert code == 0
    shown = db_url.replace("postgres:@", "postgres:***@", 1)
    if db_url.startswith("sqlite:///"):
        shown = f"sqlite:///{Path(db_url.removeprefix('sqlite:///')).resolve()}"
    assert line.startswith(f"episodic serving {shown} on http://127.0.0.1:")
    assert "hunter2" not in line


def test_a_first_server_says_it_has_no_key_and_its_401_says_how_to_get_one(
    tmp_path: Path,
) -> None:
    """A newcomer's first `episodic serve` answers every /v1 request with 401: the start
    says no key exists yet and how to create one, and so does the 401 itself. Once a key
    exists, the start no longer says it."""
    db = f"sqlite:///{tmp_path}/m.db"
    Episodic.open(db, settings=Settings(embedder="none")).close()

    def first_lines() -> tuple[str, str]:
        proc = subprocess.Popen(
            [str(Path(sys.executable).with_name("episodic")), "--db", db, "serve", "--port", "0"],
            env={**os.environ, "EPISODIC_EMBEDDER": "none"},
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            start_new_session=True,
        )
        try:
            assert proc.stdout is not None
            base = proc.stdout.readline().split(" on ", 1)[1].split()[0]
            deadline = time.monotonic() + 60
            while True:
                try:
                    answer = httpx.get(f"{base}/v1/memories", timeout=2)
                    break
                except httpx.HTTPError:
                    assert time.monotonic() < deadline, "serve did not start"
                    time.sleep(0.2)
        finally:
            proc.send_signal(signal.SIGINT)
            proc.wait(timeout=30)
            assert proc.stdout is not None
            # Read through the same buffered reader as the first line: lines that came
            # in one read with it wait in its buffer, which communicate() would skip.
            rest = proc.stdout.read()
        assert proc.returncode == 0
        assert answer.status_code == 401
        return rest, answer.json()["error"]["message"]

    said, refused = first_lines()
    assert said.startswith("no API key in this database yet")
    assert "episodic keys create --workspace W --role admin" in said
    assert "episodic keys create" in refused
    with Episodic.open(db, settings=Settings(embedder="none")) as mem:
        mem.create_key("acme", role="admin")
    assert "no API key" not in first_lines()[0]
