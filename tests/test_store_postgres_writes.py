"""PostgresStore's writes beyond the Store contract: the vector column typed by the first
vectors and reset by clear_vectors, and writers in several processes (stores with their
own pools) racing on the same rows."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import psycopg
import pytest

from episodic.errors import ModelMismatch
from episodic.model import Memory
from episodic.store.postgres import PostgresStore
from episodic.store.postgres.pgvector import HALFVEC_MAX_DIM
from store_contract import DIM, MODEL, T0, axis, event, memory_of, remember

# How long a writer must stay blocked for the test to call it waiting on a lock.
BLOCKED_S = 0.5


@pytest.fixture
def store(pg_url: str) -> Iterator[PostgresStore]:
    s = PostgresStore(pg_url)
    yield s
    s.close()


@pytest.fixture
def other(pg_url: str) -> Iterator[PostgresStore]:
    """A second store on the same database: another process, as far as locks go."""
    s = PostgresStore(pg_url)
    yield s
    s.close()


def rows(url: str, sql: str) -> list[tuple[Any, ...]]:
    with psycopg.connect(url) as conn:
        return [tuple(r) for r in conn.execute(sql).fetchall()]


def column_type(url: str) -> str:
    return str(
        rows(
            url,
            "SELECT format_type(atttypid, atttypmod) FROM pg_attribute "
            "WHERE attrelid = 'memory_vectors'::regclass AND attname = 'vector'",
        )[0][0]
    )


def hnsw_exists(url: str) -> bool:
    return bool(rows(url, "SELECT to_regclass('memory_vectors_hnsw') IS NOT NULL")[0][0])


class Background:
    """Run ``call`` in a thread; ``result()`` joins it and returns or re-raises."""

    def __init__(self, call: Callable[[], Any]) -> None:
        self._out: list[Any] = []
        self._err: list[BaseException] = []

        def run() -> None:
            try:
                self._out.append(call())
            except BaseException as exc:
                self._err.append(exc)

        self._thread = threading.Thread(target=run, daemon=True)
        self._thread.start()

    def blocked(self) -> bool:
        self._thread.join(BLOCKED_S)
        return self._thread.is_alive()

    def result(self) -> Any:
        self._thread.join(30)
        assert not self._thread.is_alive(), "still blocked"
        if self._err:
            raise self._err[0]
        return self._out[0]


# -- the vector column -------------------------------------------------------------
def test_first_vectors_type_the_column_and_build_the_index(
    store: PostgresStore, pg_url: str
) -> None:
    remember(store, event("m1"), event("m2"))
    assert column_type(pg_url) == "vector" and not hnsw_exists(pg_url)
    assert store.meta()["hnsw_index"] is False
    store.put_vectors(MODEL, DIM, [("m1", axis(0))])
    assert column_type(pg_url) == f"vector({DIM})" and hnsw_exists(pg_url)
    meta = store.meta()
    assert (meta["vector_column_dim"], meta["hnsw_index"]) == (DIM, True)
    assert store.clear_vectors() == 1
    assert column_type(pg_url) == "vector" and not hnsw_exists(pg_url)
    assert rows(pg_url, "SELECT count(*) FROM memories WHERE has_vector = 1") == [(0,)]
    store.put_vectors("small", 4, [("m2", np.array([0, 0, 0, 1], np.float32))])
    assert column_type(pg_url) == "vector(4)" and hnsw_exists(pg_url)


def test_a_table_emptied_without_clear_takes_another_dimension(
    store: PostgresStore, pg_url: str
) -> None:
    # forget can delete every vector and leave the column typed.
    remember(store, event("m1"), event("m2"))
    store.put_vectors(MODEL, DIM, [("m1", axis(0))])
    with psycopg.connect(pg_url) as conn:
        conn.execute("DELETE FROM memory_vectors")
    assert store.put_vectors("small", 4, [("m2", np.array([0, 1, 0, 0], np.float32))]) == 1
    assert column_type(pg_url) == "vector(4)" and store.vector_model() == ("small", 4)


def test_vectors_too_wide_for_hnsw_are_stored_unindexed(store: PostgresStore) -> None:
    remember(store, event("m1"))
    # Wider than any pgvector indexes (as halfvec from 0.7; as vector: 2000).
    wide = np.ones(HALFVEC_MAX_DIM + 1, np.float32)
    assert store.put_vectors("wide", HALFVEC_MAX_DIM + 1, [("m1", wide)]) == 1
    assert store.meta()["hnsw_index"] is False
    (got,) = store.get_vectors("acme", ["m1"]).values()
    assert got.dtype == np.float32 and np.allclose(got, wide / np.linalg.norm(wide))


def test_a_cached_vector_is_little_endian_float32(store: PostgresStore, pg_url: str) -> None:
    v = (np.arange(DIM) / 7).astype(np.float32)
    store.cache_put(MODEL, {"h": v})
    assert rows(pg_url, "SELECT vector, dim FROM embedding_cache") == [
        (v.astype("<f4").tobytes(), DIM)
    ]


def test_sources_come_back_in_the_order_they_were_cited(store: PostgresStore) -> None:
    events = [event(i) for i in ("e3", "e1", "e2")]
    m = Memory(
        id="m",
        workspace="acme",
        ts=events[0].ts,
        type="note",
        content="x",
        source_event_ids=("e3", "e1", "e2"),
    )
    store.append(events, [m])
    assert store.get_memory("acme", "m").source_event_ids == ("e3", "e1", "e2")


# -- writers in several processes ----------------------------------------------------
def test_the_first_model_wins_a_race_for_an_empty_store(
    store: PostgresStore, other: PostgresStore
) -> None:
    remember(store, event("m1"), event("m2"), event("m3"))
    with store._write() as conn:
        store._store_vectors(conn, MODEL, DIM, [("m1", axis(0))])
        rival = Background(lambda: other.put_vectors("rival", 4, [("m2", axis(0)[:4])]))
        same = Background(lambda: other.put_vectors(MODEL, DIM, [("m3", axis(1))]))
        assert rival.blocked() and same.blocked()
    with pytest.raises(ModelMismatch) as info:
        rival.result()
    assert (info.value.stored, info.value.current) == (MODEL, "rival")
    assert same.result() == 1
    assert store.vector_model() == (MODEL, DIM) and store.stats().vectors == 2


def test_a_memory_another_worker_vectored_is_replaced_not_duplicated(
    store: PostgresStore, other: PostgresStore, pg_url: str
) -> None:
    remember(store, event("m1"))
    store.put_vectors(MODEL, DIM, [("m1", axis(0))])
    with store._write() as conn:
        store._store_vectors(conn, MODEL, DIM, [("m1", axis(1))])
        late = Background(lambda: other.put_vectors(MODEL, DIM, [("m1", axis(2))]))
        assert late.blocked()  # on the row the first writer holds
    assert late.result() == 1
    assert rows(pg_url, "SELECT count(*) FROM memory_vectors") == [(1,)]
    assert np.allclose(store.get_vectors("acme", ["m1"])["m1"], axis(2))
    assert store.pending_vectors(10) == []


def test_clear_vectors_waits_for_a_write_in_flight(
    store: PostgresStore, other: PostgresStore, pg_url: str
) -> None:
    remember(store, event("m1"), event("m2"))
    store.put_vectors(MODEL, DIM, [("m1", axis(0))])
    with store._write() as conn:
        store._store_vectors(conn, MODEL, DIM, [("m2", axis(1))])
        clear = Background(other.clear_vectors)
        assert clear.blocked()
    assert clear.result() == 2  # the write committed first, then went with the rest
    assert store.vector_model() is None and column_type(pg_url) == "vector"
    assert [p.memory_id for p in store.pending_vectors(10)] == ["m1", "m2"]


def test_racing_recalls_count_every_reference(store: PostgresStore, other: PostgresStore) -> None:
    ids = [f"m{i}" for i in range(20)]
    remember(store, *[event(i) for i in ids])
    rounds = 15

    def recall(s: PostgresStore, order: list[str]) -> None:
        for _ in range(rounds):
            s.mark_referenced("acme", order, T0)

    # Opposite orders: without a fixed lock order these two would deadlock.
    workers = [
        Background(lambda: recall(store, ids)),
        Background(lambda: recall(other, ids[::-1])),
    ]
    for w in workers:
        w.result()
    assert {m.reference_count for m in store.get_memories("acme", ids)} == {2 * rounds}


def test_an_episode_is_closed_once_by_racing_segmenters(
    store: PostgresStore, other: PostgresStore
) -> None:
    msgs = [event(f"t{i}", minutes=i, type="message", conversation="c1") for i in range(3)]
    store.append(msgs, [])
    episode = Memory(
        id="ep",
        workspace="acme",
        ts=msgs[0].ts,
        type="episode",
        content="a chat",
        conversation="c1",
        source_event_ids=tuple(m.id for m in msgs),
    )
    start = threading.Barrier(2)

    def close(s: PostgresStore) -> bool:
        start.wait()
        return s.close_episode(episode, [m.id for m in msgs], [], {})

    racers = [Background(lambda: close(store)), Background(lambda: close(other))]
    assert sorted(r.result() for r in racers) == [False, True]
    assert store.get_memory("acme", "ep").source_event_ids == ("t0", "t1", "t2")
    assert store.pending_messages("acme", "c1") == []


def test_appending_the_same_events_at_once_stores_each_once(
    store: PostgresStore, other: PostgresStore
) -> None:
    events = [event(f"e{i}") for i in range(50)]
    memories = [memory_of(e) for e in events]
    start = threading.Barrier(2)

    def append(s: PostgresStore) -> tuple[int, int]:
        start.wait()
        got = s.append(events, memories)
        return got.events_inserted, got.memories_inserted

    racers = [Background(lambda: append(store)), Background(lambda: append(other))]
    results = [r.result() for r in racers]
    assert sum(e for e, _ in results) == 50 and sum(m for _, m in results) == 50
    stats = store.stats()
    assert (stats.events, stats.memories) == (50, 50)
