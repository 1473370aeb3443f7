"""PostgresStore: the Store contract on a real PostgreSQL + pgvector (tests/pg_servers.py), plus
what only the server backend has."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import psycopg
import pytest

from episodic.errors import StoreUnavailable
from episodic.store import open_store
from episodic.store.postgres import PostgresStore, connection
from store_contract import StoreContract


@pytest.fixture
def store(pg_url: str) -> Iterator[PostgresStore]:
    s = PostgresStore(pg_url)
    yield s
    s.close()


class TestPostgresStoreContract(StoreContract):
    pass


def test_open_store_picks_postgres_for_its_urls(pg_url: str) -> None:
    for url in (pg_url, pg_url.replace("postgresql://", "postgres://", 1)):
        s = open_store(url)
        try:
            assert isinstance(s, PostgresStore)
        finally:
            s.close()


def test_a_database_that_is_down_at_start_gives_a_clear_error() -> None:
    import socket

    with socket.socket() as sock:  # a loopback port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"postgresql://episodic:secret@127.0.0.1:{port}/memory"
    with pytest.raises(StoreUnavailable) as info:
        open_store(url)
    message = str(info.value)
    assert f"127.0.0.1:{port}" in message and "unreachable" in message
    assert "secret" not in message  # the password never reaches a log line


def _round_trips(store: PostgresStore, work: Callable[[], object], trace: Path) -> list[str]:
    """What the store sends the server while ``work`` runs, one entry per round trip: the
    text of each simple query, or the statement of each extended-protocol one (the pools
    have one connection each, traced by libpq)."""
    conns = []
    for pool in (store._read_pool, store._write_pool):
        with pool.connection() as conn:
            conns.append(conn)
    with trace.open("w") as out:
        for conn in conns:
            conn.pgconn.trace(out.fileno())
        try:
            work()
        finally:
            for conn in conns:
                conn.pgconn.untrace()
    sent: list[str] = []
    for line in trace.read_text().splitlines():
        fields = line.split("\t")  # time, direction, length, message, its fields
        if len(fields) < 5 or fields[1] != "F" or fields[3] not in ("Query", "Parse"):
            continue
        quoted = re.findall(r'"([^"]*)"', fields[4])  # Parse: the statement's name, its text
        text = quoted[-1] if quoted else ""
        sent.append(text.split()[0].upper() if text.strip() else "")
    return sent


def test_a_read_and_a_write_take_three_round_trips_each(pg_url: str, tmp_path: Path) -> None:
    """BEGIN (which says the snapshot and read-only-ness), the statement, COMMIT: no
    statement of its own to set the transaction up, and no check of a connection whose
    last transaction ended a moment ago. Under load every round trip waits for the
    server's process to be scheduled."""
    store = PostgresStore(pg_url, read_pool=1, write_pool=1)
    try:

        def read() -> None:
            with store._read() as conn:
                conn.execute("SELECT 1").fetchall()

        def write() -> None:
            with store._write() as conn:
                conn.execute("SELECT 1").fetchall()

        read()  # each pool's one connection has just worked
        write()
        assert _round_trips(store, read, tmp_path / "r.txt") == ["BEGIN", "SELECT", "COMMIT"]
        assert _round_trips(store, write, tmp_path / "w.txt") == ["BEGIN", "SELECT", "COMMIT"]
    finally:
        store.close()


def test_a_read_is_one_read_only_snapshot_and_a_write_is_not(pg_url: str) -> None:
    def settings(store: PostgresStore, write: bool) -> tuple[str, str]:
        with store._write() if write else store._read() as conn:
            isolation = conn.execute("SHOW transaction_isolation").fetchone()
            read_only = conn.execute("SHOW transaction_read_only").fetchone()
            assert isolation is not None and read_only is not None
            return isolation[0], read_only[0]

    store = PostgresStore(pg_url)
    try:
        assert settings(store, write=False) == ("repeatable read", "on")
        assert settings(store, write=True) == ("read committed", "off")
    finally:
        store.close()
    read_only = PostgresStore(pg_url, read_only=True)
    try:
        assert settings(read_only, write=True) == ("read committed", "on")
    finally:
        read_only.close()


def test_a_dropped_connection_idle_for_a_while_is_replaced_before_use(
    pg_url: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A connection whose last transaction ended more than FRESH_CONNECTION_S ago is
    checked when lent again; one the server dropped meanwhile is replaced, and the read
    succeeds."""
    monkeypatch.setattr(connection, "FRESH_CONNECTION_S", 0.2)
    store = PostgresStore(pg_url, read_pool=1, write_pool=1)
    try:
        with store._read() as conn:
            dropped = conn.info.backend_pid
        with psycopg.connect(store._conninfo, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (dropped,))
        time.sleep(0.3)
        with store._read() as conn:
            assert conn.info.backend_pid != dropped
            assert conn.execute("SELECT 1").fetchone() == (1,)

        def read() -> None:
            with store._read() as conn:
                conn.execute("SELECT 1").fetchall()

        time.sleep(0.3)  # idle again: the check's round trip comes first
        assert _round_trips(store, read, tmp_path / "t.txt") == ["", "BEGIN", "SELECT", "COMMIT"]
    finally:
        store.close()
