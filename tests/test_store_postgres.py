"""PostgresStore: the Store contract on a real PostgreSQL + pgvector (tests/pg_servers.py), plus
what only the server backend has."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from episodic.errors import StoreUnavailable
from episodic.store import open_store
from episodic.store.postgres import PostgresStore
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
