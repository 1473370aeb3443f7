"""A busy connection pool is load, not an outage (found by tests/stress/test_load.py).

Under 64 concurrent HTTP clients on 2 cores, requests waited over ``CONNECT_TIMEOUT_S``
for one of the pool's connections while PostgreSQL was up and answering; they failed with
503 "PostgreSQL ... is unreachable", and the indexer backed off as if the database were
down. A caller now waits on while every connection is open and lent out (up to
``BUSY_WAIT_S``); a pool that cannot open connections still fails fast.
"""

from __future__ import annotations

import threading
import time

import pytest

from episodic.errors import StoreUnavailable
from episodic.store.postgres import PostgresStore
from episodic.store.postgres import connection as pgconn


def test_a_caller_waits_for_a_busy_pool_instead_of_failing(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pgconn, "CONNECT_TIMEOUT_S", 0.5)
    store = PostgresStore(pg_url, pool_max=1)
    try:
        held = threading.Event()

        def hold() -> None:
            with store._read():  # the pool's only connection, for 4 connect timeouts
                held.set()
                time.sleep(2.0)

        holder = threading.Thread(target=hold)
        holder.start()
        assert held.wait(5)
        start = time.monotonic()
        assert store.stats("acme").events == 0  # answered once the holder is done
        assert 1.0 < time.monotonic() - start < 10
        holder.join()
    finally:
        store.close()


def test_a_busy_pool_still_gives_up_after_the_busy_wait(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pgconn, "CONNECT_TIMEOUT_S", 0.3)
    monkeypatch.setattr(pgconn, "BUSY_WAIT_S", 1.0)
    store = PostgresStore(pg_url, pool_max=1)
    try:
        release = threading.Event()
        held = threading.Event()

        def hold() -> None:
            with store._read():
                held.set()
                release.wait(10)

        holder = threading.Thread(target=hold)
        holder.start()
        assert held.wait(5)
        start = time.monotonic()
        with pytest.raises(StoreUnavailable):
            store.stats("acme")
        assert 0.9 < time.monotonic() - start < 5
        release.set()
        holder.join()
    finally:
        store.close()
