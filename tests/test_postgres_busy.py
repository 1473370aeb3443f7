"""A PostgreSQL pool with every connection in use is busy, not down: requests that
waited too long get 503 ``store_busy`` with a Retry-After, a message that says busy, and
the next request once a connection is free goes through."""

from __future__ import annotations

import threading

import httpx
import numpy as np

from episodic import Episodic, Settings
from episodic.embed.fake import FakeEmbedder
from episodic.errors import StoreBusy
from episodic.http import BUSY_RETRY_AFTER_S, asgi
from episodic.store.postgres import PostgresStore
from servers import serve
from store_contract import event, remember


def test_a_drained_pool_answers_busy_then_recovers(pg_url: str) -> None:
    # One connection, held by an indexer's batch for as long as the test likes.
    store = PostgresStore(pg_url, pool_max=1)
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
            r = c.post("/v1/recall", json={"query": "payment gateway"})
            assert r.status_code == 503, r.text
            error = r.json()["error"]
            assert error["code"] == "store_busy"
            assert "busy" in error["message"] and "unreachable" not in error["message"]
            assert r.headers["Retry-After"] == str(BUSY_RETRY_AFTER_S)
            release.set()
            holder.join(10)
            r = c.post("/v1/recall", json={"query": "payment gateway"})
            assert r.status_code == 200 and r.json()["hits"], r.text
    finally:
        release.set()
        holder.join(10)
        mem.close()


def test_the_store_raises_busy_not_unavailable(pg_url: str) -> None:
    with PostgresStore(pg_url, pool_max=1) as store:
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
                store.stats("acme")
            except StoreBusy as exc:
                assert "EPISODIC_PG_POOL" in str(exc)
            else:
                raise AssertionError("a call on a drained pool did not fail")
        finally:
            release.set()
            holder.join(10)
        assert store.stats("acme").vectors == 1
