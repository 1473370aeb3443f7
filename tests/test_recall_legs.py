"""A recall runs its sparse leg beside the query embedding and the dense leg when the
store says it is worth it (it serves parallel reads and, on SQLite, the workspace's dense
index is large), with the same answer as one after the other; with every
helper busy, or a store that cannot read twice at once, the caller runs it itself; a
failing leg fails the recall. Every test runs on SQLite and PostgreSQL."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from episodic import Episodic
from episodic.embed.fake import FakeEmbedder
from episodic.errors import StoreError
from episodic.model import Candidate, Query, ScopeFilter
from episodic.recall import engine, legs
from episodic.recall.policies import POLICIES, RecallPolicy
from episodic.store import open_store
from episodic.store.sqlite import SqliteStore
from episodic.store.sqlite import search as sqlite_search

NOW = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)
QUERIES = [
    "why did the database migration roll back",
    "payment gateway timeout last week",
    "who approved the deploy",
]


@pytest.fixture
def mem(db_url: str) -> Iterator[Episodic]:
    m = Episodic(
        store=open_store(db_url), embedder=FakeEmbedder(dim=64), clock=lambda: NOW, llm=None
    )
    topics = ["database migration rolled back", "payment gateway timed out", "deploy approved"]
    report = m.ingest(
        [
            {
                "id": f"e{i}",
                "workspace": "w",
                "agent": f"a{i % 3}",
                "type": "peer.escalation",
                "summary": f"{topics[i % 3]} on node {i}, ticket {i * 7}",
                "ts": (NOW - timedelta(hours=i)).isoformat(),
            }
            for i in range(60)
        ]
    )
    assert report.admitted == 60
    m.index_once()
    yield m
    m.close()


class Watched:
    """The store, with hooks around its dense and sparse searches."""

    def __init__(self, inner: Any, *, parallel: bool | None = None) -> None:
        self.inner = inner
        self.parallel = parallel
        self.sparse_threads: list[int] = []
        self.before_dense: Any = None
        self.before_sparse: Any = None
        self.sparse_error: Exception | None = None

    @property
    def parallel_reads(self) -> bool:
        return self.inner.parallel_reads if self.parallel is None else self.parallel

    def legs_apart(self, workspace_id: str) -> bool:
        apart: bool = self.inner.legs_apart(workspace_id)
        return apart if self.parallel is None else self.parallel

    def search_dense(self, flt: ScopeFilter, query: Any, limit: int) -> list[Candidate]:
        if self.before_dense is not None:
            self.before_dense()
        found: list[Candidate] = self.inner.search_dense(flt, query, limit)
        return found

    def search_sparse(self, flt: ScopeFilter, text: str, limit: int) -> list[Candidate]:
        self.sparse_threads.append(threading.get_ident())
        if self.before_sparse is not None:
            self.before_sparse()
        if self.sparse_error is not None:
            raise self.sparse_error
        found: list[Candidate] = self.inner.search_sparse(flt, text, limit)
        return found

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def recall(store: Any, text: str, policy: RecallPolicy = POLICIES["default"]) -> Any:
    vectors = engine.QueryVectors(FakeEmbedder(dim=64))
    query = Query(text=text, workspace_id="w", agent_id="a1", k=5)
    return engine.run_recall(store, vectors, query, policy, now=NOW, mark=False)


def answer(result: Any) -> tuple[list[tuple[str, float]], dict[str, list[tuple[str, float]]]]:
    return (
        [(h.id, h.score) for h in result.hits],
        {name: [(c.memory_id, c.score) for c in found] for name, found in result.legs.items()},
    )


def test_the_sparse_leg_runs_while_the_dense_leg_does(mem: Episodic) -> None:
    # Each search waits for the other to start: one after the other, the first would
    # wait out the barrier and break it.
    store = Watched(mem.store, parallel=True)
    meet = threading.Barrier(2, timeout=10)
    store.before_dense = meet.wait
    store.before_sparse = lambda: meet.wait() if len(store.sparse_threads) == 1 else None

    result = recall(store, QUERIES[0])

    assert result.mode == engine.MODE_VECTOR
    assert store.sparse_threads[0] != threading.get_ident()
    assert result.legs["dense"] and result.legs["sparse"]
    assert answer(result) == answer(recall(Watched(mem.store, parallel=False), QUERIES[0]))


@pytest.mark.parametrize("name", sorted(POLICIES))
def test_side_by_side_legs_give_the_answer_one_after_the_other_gives(
    mem: Episodic, name: str
) -> None:
    # (Whether the helper or the caller ran the sparse leg depends on which was first.)
    policy = POLICIES[name]
    for text in QUERIES:
        side_by_side = Watched(mem.store, parallel=True)
        in_turn = Watched(mem.store, parallel=False)
        assert answer(recall(side_by_side, text, policy)) == answer(recall(in_turn, text, policy))
        assert set(in_turn.sparse_threads) <= {threading.get_ident()}


def test_with_every_helper_busy_the_caller_runs_the_sparse_leg_itself(
    mem: Episodic, monkeypatch: pytest.MonkeyPatch
) -> None:
    busy = ThreadPoolExecutor(1)
    release = threading.Event()
    busy.submit(release.wait, 30)
    monkeypatch.setattr(legs, "_helpers", busy)
    try:
        store = Watched(mem.store, parallel=True)
        result = recall(store, QUERIES[1])
        assert store.sparse_threads == [threading.get_ident()]
        assert answer(result) == answer(recall(Watched(mem.store, parallel=False), QUERIES[1]))
    finally:
        release.set()
        busy.shutdown()


def test_a_failing_sparse_leg_fails_the_recall_with_its_error(mem: Episodic) -> None:
    store = Watched(mem.store, parallel=True)
    store.sparse_error = StoreError("the sparse index is gone")
    # The dense leg waits for the helper to start the sparse one: a fresh pool's thread
    # may start after a fast dense leg, and then the caller would run the leg itself.
    started = threading.Event()
    store.before_sparse = started.set
    store.before_dense = lambda: started.wait(10)
    with pytest.raises(StoreError, match="the sparse index is gone"):
        recall(store, QUERIES[0])
    assert store.sparse_threads and store.sparse_threads[0] != threading.get_ident()


def test_a_failing_dense_leg_waits_for_the_sparse_leg_before_it_fails(mem: Episodic) -> None:
    # The caller may close the store as soon as the recall fails: the helper must be done.
    store = Watched(mem.store, parallel=True)
    started, done = threading.Event(), threading.Event()

    def slow_sparse() -> None:
        started.set()
        done.wait(0.2)
        done.set()

    def broken_dense() -> None:
        started.wait(10)
        raise StoreError("the vector index is gone")

    store.before_sparse = slow_sparse
    store.before_dense = broken_dense
    with pytest.raises(StoreError, match="the vector index is gone"):
        recall(store, QUERIES[0])
    assert done.is_set()


def test_stores_say_whether_they_read_in_parallel(db_url: str, tmp_path: Path) -> None:
    with open_store(db_url) as store:
        assert store.parallel_reads
    with SqliteStore(tmp_path / "one.db", readers=0) as single:
        assert not single.parallel_reads
        # ... and its recalls still answer, one leg after the other.
        m = Episodic(store=single, embedder=FakeEmbedder(dim=64), clock=lambda: NOW, llm=None)
        m.remember("the payment gateway timed out", workspace="w")
        m.index_once()
        watched = Watched(single)
        result = recall(watched, "payment gateway")
        assert [h.memory.content for h in result.hits] == ["the payment gateway timed out"]
        assert watched.sparse_threads == [threading.get_ident()]
    with open_store("sqlite:///:memory:") as in_memory:
        assert not in_memory.parallel_reads


def test_a_small_sqlite_workspace_runs_its_legs_in_turn_a_large_one_side_by_side(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # In process, handing the keyword leg over costs more than a small dense leg takes.
    path = tmp_path / "legs.db"
    with SqliteStore(path) as writer:
        m = Episodic(store=writer, embedder=FakeEmbedder(dim=64), clock=lambda: NOW, llm=None)
        for i in range(3):
            m.remember(f"the payment gateway timed out on node {i}", workspace="w")
        m.index_once()
    with SqliteStore(path) as store:
        assert store.parallel_reads
        # Before its first dense leg a workspace's size is unknown: that leg loads every
        # vector, and the keyword leg runs beside it.
        assert store.legs_apart("w")
        recall(Watched(store), "payment gateway")
        assert not store.legs_apart("w")
        small = Watched(store)
        in_turn = recall(small, "payment gateway")
        assert small.sparse_threads == [threading.get_ident()]
        monkeypatch.setattr(sqlite_search, "LEGS_APART_VECTORS", 3)
        assert store.legs_apart("w")
        large = Watched(store)
        meet = threading.Barrier(2, timeout=10)
        large.before_dense = meet.wait
        large.before_sparse = meet.wait
        side_by_side = recall(large, "payment gateway")
        assert large.sparse_threads and large.sparse_threads[0] != threading.get_ident()
        assert answer(side_by_side) == answer(in_turn)


def test_postgres_runs_its_legs_side_by_side_whatever_the_workspace_size(pg_url: str) -> None:
    # Its legs wait on the server, not on this process.
    with open_store(pg_url) as store:
        assert store.parallel_reads
        assert store.legs_apart("w")
