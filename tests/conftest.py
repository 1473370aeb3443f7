"""Fixtures shared across test modules: a real throwaway PostgreSQL 16 with pgvector.

``pgserver`` (PyPI) ships the server binaries: no root, no system packages. One server runs
for the whole session; each test that asks for ``pg_url`` gets a fresh database cloned
from a migrated template (cheaper than migrating every time), dropped afterwards."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

TEMPLATE = "episodic_template"
_counter = itertools.count()


def _with_db(uri: str, dbname: str) -> str:
    # pgserver's URI: postgresql://postgres:@/postgres?host=/tmp/...
    head, _, query = uri.partition("?")
    base = head.rsplit("/", 1)[0]
    return f"{base}/{dbname}?{query}" if query else f"{base}/{dbname}"


@pytest.fixture(scope="session")
def pg_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    import pgserver

    from episodic.store.postgres import PostgresStore

    # Unix sockets have a short path limit: keep the data directory's path short.
    pgdata = Path(tmp_path_factory.mktemp("pg"))
    server = pgserver.get_server(pgdata, cleanup_mode="delete")
    admin = server.get_uri()
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {TEMPLATE}")
        conn.execute(f"CREATE DATABASE {TEMPLATE}")
    PostgresStore(_with_db(admin, TEMPLATE)).close()
    yield server
    server.cleanup()


@pytest.fixture
def pg_url(pg_server: Any) -> Iterator[str]:
    """The URL of a new, migrated, empty database."""
    admin = pg_server.get_uri()
    name = f"t_{next(_counter)}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name} TEMPLATE {TEMPLATE}")
    yield _with_db(admin, name)
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
