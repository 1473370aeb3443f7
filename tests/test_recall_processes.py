"""Recalls in worker processes of their own (a server's: episodic.service.recall_processes),
on both backends: the same answers as in the server's process, the marks and reviews
written by the server's process (a worker writes nothing), errors raised as themselves,
a worker that dies replaced, and the cases where recalls stay in the server's process."""

from __future__ import annotations

import logging
import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from conftest import raw_rows
from episodic import Episodic, Settings
from episodic.config import whole_number
from episodic.embed.fake import FakeEmbedder
from episodic.errors import InvalidInput
from episodic.recall.engine import RecallResult
from episodic.service.recall_processes import INDEXING_BELOW_RECALLS, MAX_DEATHS
from episodic.store import open_store

# The server's clock, far from the machine's: workers must recall as of it.
NOW = datetime(2026, 5, 4, 12, 0, tzinfo=UTC)

JOURNAL = [
    ("deployer", "ops", "peer.escalation", 50, "deploy failed on friday: the migration timed out"),
    ("deployer", "ops", "peer.escalation", 30, "checkout latency doubled after the cache change"),
    ("deployer", "ops", "approval.denied", 20, "rolled back the checkout deploy to v41"),
    ("keeper", "ops", "peer.escalation", 10, "disk full on the build runner, cleaned the cache"),
    ("keeper", None, "peer.escalation", 5, "refunds are charged twice when the retry fires"),
    ("analyst", "data", "peer.escalation", 2, "refund volume rose 4% this week"),
    (None, None, "peer.escalation", 1, "the deploy freeze starts on the 20th"),
]

# (query, recall arguments): scopes, types, policies, time, the walk, explain and warnings.
RECALLS: list[tuple[str, dict[str, Any]]] = [
    ("deploy failed on friday", {}),
    ("checkout latency", {"agent": "deployer", "scope": "own"}),
    ("cache", {"crew": "ops", "scope": "crew_shared", "k": 2}),
    ("refunds", {"types": "peer.escalation", "explain": True}),
    ("deploy", {"policy": "dense"}),
    ("deploy", {"as_of": (NOW - timedelta(hours=25)).isoformat()}),
    ("deploy", {"k": 99}),
    ("refund charged twice", {"walk": 1}),
    ("", {}),
]


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def mem(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Episodic]:
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path_factory.mktemp('processes') / 'm.db'}"
    else:
        url = request.getfixturevalue("pg_module_url")
    m = Episodic(
        store=open_store(url), embedder=FakeEmbedder(dim=64), settings=Settings(), clock=lambda: NOW
    )
    m.ingest(
        [
            {
                "workspace": "acme",
                "agent": agent,
                "crew": crew,
                "type": kind,
                "summary": text,
                "ts": (NOW - timedelta(hours=hours)).isoformat(),
            }
            for agent, crew, kind, hours, text in JOURNAL
        ]
    )
    m.index_once()
    yield m
    m.close()


@pytest.fixture
def in_processes(mem: Episodic) -> Iterator[Episodic]:
    assert mem.recall_in_processes(1)
    try:
        yield mem
    finally:
        mem.recall_in_processes(0)
    assert multiprocessing.active_children() == []  # the worker has ended


def answer(result: RecallResult) -> dict[str, Any]:
    """What a caller sees of a recall."""
    return {
        "hits": [(h.id, round(h.score, 6), h.age_seconds, h.cosine) for h in result.hits],
        "mode": result.mode,
        "policy": result.policy,
        "warnings": result.warnings,
        "trace": None if result.trace is None else result.trace.to_json(),
    }


def recall_all(mem: Episodic) -> list[dict[str, Any]]:
    return [answer(mem.recall(q, workspace="acme", mark=False, **kw)) for q, kw in RECALLS]


def test_recalls_in_a_worker_answer_as_the_servers_process_does(mem: Episodic) -> None:
    here = recall_all(mem)
    assert any(a["hits"] for a in here) and any(a["warnings"] for a in here)
    assert any(a["trace"] for a in here)
    assert mem.recall_in_processes(1)
    try:
        there = recall_all(mem)
        worker = multiprocessing.active_children()
    finally:
        mem.recall_in_processes(0)
    assert len(worker) == 1 and worker[0].pid != os.getpid()
    assert there == here


def test_the_servers_process_marks_and_reviews_what_a_worker_recalled(
    in_processes: Episodic,
) -> None:
    mem = in_processes
    url = mem.store.url
    counts = "SELECT id, reference_count FROM memories"
    before = dict(raw_rows(url, counts))
    untouched = _commits_by_others(mem)
    assert mem.recall("disk full", workspace="acme", mark=False).hits
    # SQLite: no connection but the server's own committed while a worker recalled.
    assert _commits_by_others(mem) == untouched

    marked = mem.recall("refunds charged twice", workspace="acme", k=2)
    after = dict(raw_rows(url, counts))
    assert {i: after[i] - before[i] for i in after if after[i] != before[i]} == {
        h.id: 1 for h in marked.hits
    }
    pending = mem.store.claim_reviews("t", NOW, lease_s=1, limit=10, workspace_id="acme")
    assert [(p.request.query, p.request.memory_ids) for p in pending] == [
        ("refunds charged twice", tuple(h.id for h in marked.hits))
    ]


def test_an_error_a_worker_raises_is_raised_as_itself(in_processes: Episodic) -> None:
    with pytest.raises(InvalidInput) as caught:
        in_processes.recall("deploy", workspace="acme", detail="everything")
    assert caught.value.field == "detail"
    # Checked in the server's process before a worker is asked.
    with pytest.raises(InvalidInput) as early:
        in_processes.recall("deploy", workspace="acme", scope="everyone")
    assert early.value.field == "scope"


def test_a_worker_that_dies_is_replaced_and_no_recall_is_lost(in_processes: Episodic) -> None:
    mem = in_processes
    expected = answer(mem.recall("deploy failed on friday", workspace="acme", mark=False))
    (first,) = multiprocessing.active_children()
    assert first.pid is not None
    os.kill(first.pid, signal.SIGKILL)
    first.join(10)
    # Answered in the server's process this time, by workers again after.
    assert answer(mem.recall("deploy failed on friday", workspace="acme", mark=False)) == expected
    assert answer(mem.recall("deploy failed on friday", workspace="acme", mark=False)) == expected
    (second,) = multiprocessing.active_children()
    assert second.pid != first.pid


def test_recalls_stay_in_the_servers_process_when_workers_cannot_share(tmp_path: Any) -> None:
    with Episodic(
        store=open_store("sqlite:///:memory:"), embedder=FakeEmbedder(dim=16), settings=Settings()
    ) as memory_db:
        memory_db.remember("disk full on the runner", workspace="acme")
        assert memory_db.recall_in_processes(1) is False
        assert [h.memory.content for h in memory_db.recall("disk", workspace="acme").hits] == [
            "disk full on the runner"
        ]
    unpicklable = FakeEmbedder(dim=16)
    unpicklable.lock = threading.Lock()  # type: ignore[attr-defined]
    with Episodic(
        store=open_store(f"sqlite:///{tmp_path / 'x.db'}"),
        embedder=unpicklable,
        settings=Settings(),
    ) as objects:
        objects.remember("disk full on the runner", workspace="acme")
        assert objects.recall_in_processes(1) is False
        assert objects.recall("disk", workspace="acme").hits
    assert multiprocessing.active_children() == []


def _commits_by_others(mem: Episodic) -> int | None:
    """SQLite's ``data_version`` on the store's writer connection: it moves when another
    connection commits (None on PostgreSQL)."""
    store: Any = mem.store
    if not store.url.startswith("sqlite"):
        return None
    with store._write():
        return int(store._execute("PRAGMA data_version").fetchone()[0])


@pytest.mark.parametrize("raw", ["two", "-1", "1.5"])
def test_a_bad_count_of_recall_processes_is_named(raw: str) -> None:
    with pytest.raises(InvalidInput, match="EPISODIC_RECALL_PROCESSES"):
        whole_number({"EPISODIC_RECALL_PROCESSES": raw}, "EPISODIC_RECALL_PROCESSES", 1)
    assert whole_number({"EPISODIC_RECALL_PROCESSES": "0"}, "EPISODIC_RECALL_PROCESSES", 1) == 0
    assert whole_number({"EPISODIC_RECALL_PROCESSES": " "}, "EPISODIC_RECALL_PROCESSES", 1) == 1


class StaysInItsProcess(FakeEmbedder):
    """An embedder that pickles but cannot be loaded in another process: a worker
    given it dies as it starts."""

    def __init__(self) -> None:
        super().__init__(dim=16)
        self.home = os.getpid()

    def __setstate__(self, state: dict[str, Any]) -> None:
        if state["home"] != os.getpid():
            raise RuntimeError("not in this process")
        self.__dict__.update(state)


def children_left_after(seconds: float) -> list[multiprocessing.process.BaseProcess]:
    """The child processes still running once ``seconds`` have passed, or none as soon as
    none is: a worker that died is reaped a moment after its death is noticed."""
    deadline = time.monotonic() + seconds
    while (left := multiprocessing.active_children()) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


def test_workers_that_cannot_start_are_given_up_on(
    tmp_path: Any, caplog: pytest.LogCaptureFixture
) -> None:
    with Episodic(
        store=open_store(f"sqlite:///{tmp_path / 'x.db'}"),
        embedder=StaysInItsProcess(),
        settings=Settings(),
    ) as mem:
        mem.remember("disk full on the runner", workspace="acme")
        assert mem.recall_in_processes(1)
        for _ in range(MAX_DEATHS + 2):  # every recall answered, in the server's process
            hits = mem.recall("disk", workspace="acme", mark=False).hits
            assert [h.memory.content for h in hits] == ["disk full on the runner"]
        assert children_left_after(5.0) == []
        assert sum("died" in r.getMessage() for r in caplog.records) == MAX_DEATHS
        assert "recalls stay in the server's process" in caplog.records[-1].getMessage()


def test_with_recalls_in_workers_the_indexer_embeds_below_them(tmp_path: Any) -> None:
    """Recalls yield the cores to writes, and the indexer's backlog yields them to recalls
    (Linux: a thread's nice value)."""
    with Episodic(
        store=open_store(f"sqlite:///{tmp_path / 'x.db'}"),
        embedder=FakeEmbedder(dim=16),
        settings=Settings(),
    ) as mem:
        assert mem.recall_in_processes(1, nice=4)
        try:
            indexer = mem._models.indexer()
            assert indexer is not None
            own = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
            model_thread = indexer._model_thread()
            niced = model_thread.submit(
                lambda: os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
            ).result()
            assert niced == min(19, own + 4 + INDEXING_BELOW_RECALLS)
        finally:
            mem.recall_in_processes(0)


@pytest.mark.parametrize(("servers", "workers"), [(None, "1"), ("3", "3")])
def test_a_worker_embeds_on_one_thread_unless_told(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch, servers: str | None, workers: str
) -> None:
    """A query is a few tokens: a second model thread costs a worker a third more CPU for
    a tenth less time, cycles a saturated server lacks. ``EPISODIC_EMBED_THREADS`` set
    for the server still holds in its workers."""
    if servers is None:
        monkeypatch.delenv("EPISODIC_EMBED_THREADS", raising=False)
    else:
        monkeypatch.setenv("EPISODIC_EMBED_THREADS", servers)
    with Episodic(
        store=open_store(f"sqlite:///{tmp_path / 'x.db'}"),
        embedder=FakeEmbedder(dim=16),
        settings=Settings(),
    ) as mem:
        assert mem.recall_in_processes(1)
        try:
            processes = mem._recall_processes
            assert processes is not None
            told = processes._executor().submit(os.getenv, "EPISODIC_EMBED_THREADS").result()
            assert told == workers
            assert os.getenv("EPISODIC_EMBED_THREADS") == servers  # the server's own unchanged
        finally:
            mem.recall_in_processes(0)


def test_a_sparse_only_start_is_logged_once_for_the_server_and_its_workers(
    tmp_path: Any, caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> None:
    # A worker learns the mode too; only the server's process says it (and it learns
    # from each result what the worker found).
    caplog.set_level(logging.INFO, logger="episodic")
    with Episodic(
        store=open_store(f"sqlite:///{tmp_path / 's.db'}"),
        embedder=None,
        settings=Settings(embedder="none"),
    ) as mem:
        mem.warn_if_sparse_only()  # as `episodic serve` starts
        assert mem.recall_in_processes(1)
        try:
            assert mem.recall("refunds", workspace="acme", mark=False).mode == "sparse-only"
            assert mem.recall_mode() == "sparse-only"
        finally:
            mem.recall_in_processes(0)
    said = [r for r in caplog.records if "running sparse-only" in r.getMessage()]
    assert len(said) == 1
    assert "running sparse-only" not in capfd.readouterr().err
