"""A PostgreSQL pool with every connection in use is busy, not down: requests that
waited too long get 503 ``store_busy`` with a Retry-After, a message that says busy and
names the pool, and the next request once a connection is free goes through. Reads and
writes have a pool each: reads holding every read connection do not delay a write, and
an indexer holding every write connection does not stop a recall."""

from __future__ import annotations

import threading
import time

import httpx
import numpy as np
import pytest

from episodic import Episodic, Settings
from episodic.embed.fake import FakeEmbedder
from episodic.errors import StoreBusy, StoreError
from episodic.http import BUSY_RETRY_AFTER_S, asgi
from episodic.store.postgres import PostgresStore
from episodic.store.postgres.connection import pool_sizes
from servers import serve
from store_contract import event, remember


def test_a_drained_pool_answers_busy_then_recovers(pg_url: str) -> None:
    # One connection per role; the write one held by an indexer's batch for as long as
    # the test likes.
    store = PostgresStore(pg_url, pool_max=2)
    mem = Episodic(store=store, embedder=FakeEmbedder(dim=8), settings=Settings())
    _, key = mem.create_key("acme", role="admin")
    remember(store, event("e1", summary="deploy stalled on the payment gateway"))
    embedding, release = threading.Event(), threading.Event()

    def slow(texts: list[str]) -> np.ndarray:
        embedding.set()
        release.wait(60)
        return np.ones((len(texts), 8), dtype=np.float32)

    model = mem.embedder.model_id if mem.embedder else ""
    holder = threading.Thread(target=lambda: store.index_pending(10, model, 8, slow))
    try:
        with (
            serve(asgi(mem)) as base,
            httpx.Client(
                base_url=base, headers={"Authorization": f"Bearer {key}"}, timeout=30
            ) as c,
        ):
            holder.start()
            assert embedding.wait(10)
            r = c.post("/v1/memories", json={"content": "the gateway needs a new key"})
            assert r.status_code == 503, r.text
            error = r.json()["error"]
            assert error["code"] == "store_busy"
            assert "busy" in error["message"] and "unreachable" not in error["message"]
            assert "write pool" in error["message"]
            assert r.headers["Retry-After"] == str(BUSY_RETRY_AFTER_S)
            # Reads have their own pool: a recall is answered meanwhile.
            r = c.post("/v1/recall", json={"query": "payment gateway", "mark": False})
            assert r.status_code == 200 and r.json()["hits"], r.text
            release.set()
            holder.join(10)
            r = c.post("/v1/memories", json={"content": "the gateway needs a new key"})
            assert r.status_code == 201, r.text
    finally:
        release.set()
        holder.join(10)
        mem.close()


def test_the_store_raises_busy_not_unavailable(pg_url: str) -> None:
    with PostgresStore(pg_url, read_pool=1, write_pool=1) as store:
        remember(store, event("e1", summary="one pending memory"))
        inside = threading.Event()
        release = threading.Event()

        def hold(texts: list[str]) -> np.ndarray:
            inside.set()
            release.wait(60)
            return np.ones((len(texts), 4), dtype=np.float32)

        holder = threading.Thread(target=lambda: store.index_pending(10, "m", 4, hold))
        holder.start()
        try:
            assert inside.wait(10)
            try:
                remember(store, event("e2", summary="a second memory"))
            except StoreBusy as exc:
                assert "write pool" in str(exc) and "EPISODIC_PG_WRITE_POOL" in str(exc)
                assert "EPISODIC_PG_POOL" in str(exc)
            else:
                raise AssertionError("a call on a drained pool did not fail")
        finally:
            release.set()
            holder.join(10)
        assert store.stats("acme").vectors == 1
        remember(store, event("e2", summary="a second memory"))  # a connection is free again


def test_reads_holding_every_read_connection_do_not_delay_a_write(pg_url: str) -> None:
    with PostgresStore(pg_url, read_pool=3, write_pool=1) as store:
        remember(store, event("e1", summary="a memory to read"))
        held = threading.Barrier(4)
        release = threading.Event()

        def hold_a_read() -> None:
            with store._read():
                held.wait(10)
                release.wait(60)

        readers = [threading.Thread(target=hold_a_read) for _ in range(3)]
        for t in readers:
            t.start()
        try:
            held.wait(10)  # every read connection is lent out now
            start = time.perf_counter()
            remember(store, event("e2", summary="written while the reads hold on"))
            took = time.perf_counter() - start
            with pytest.raises(StoreBusy, match="read pool"):
                store.stats("acme")
        finally:
            release.set()
            for t in readers:
                t.join(10)
        assert took < 1.0, f"the write waited {took:.2f} s for the reads"
        assert {m.id for m in store.get_memories("acme", ["e1", "e2"])} == {"e1", "e2"}


@pytest.mark.parametrize(
    ("env", "sizes"),
    [
        ({}, (9, 6)),
        ({"EPISODIC_PG_POOL": "8"}, (4, 4)),
        ({"EPISODIC_PG_POOL": "5"}, (3, 2)),
        ({"EPISODIC_PG_POOL": "1"}, (1, 1)),
        ({"EPISODIC_PG_POOL": "8", "EPISODIC_PG_READ_POOL": "12"}, (12, 4)),
        ({"EPISODIC_PG_WRITE_POOL": "3"}, (9, 3)),
    ],
)
def test_pool_sizes_per_role_from_the_environment(
    env: dict[str, str], sizes: tuple[int, int]
) -> None:
    assert pool_sizes(env) == sizes


@pytest.mark.parametrize("name", ["EPISODIC_PG_POOL", "EPISODIC_PG_READ_POOL"])
@pytest.mark.parametrize("raw", ["0", "many", "-3"])
def test_a_bad_pool_size_names_the_variable(name: str, raw: str) -> None:
    with pytest.raises(StoreError, match=name):
        pool_sizes({name: raw})
