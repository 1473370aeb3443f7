"""Fixtures shared across test modules: a real throwaway PostgreSQL with pgvector.

``tests/pg_servers.py`` says which (PostgreSQL 18 + pgvector 0.8 by default, 16 + 0.6 with
``EPISODIC_TEST_PG=16``). One server runs for the whole session; each test that asks for
``pg_url`` gets a fresh database cloned from a migrated template (cheaper than migrating
every time), dropped afterwards."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

TEMPLATE = "episodic_template"
_counter = itertools.count()


def _with_db(uri: str, dbname: str) -> str:
    # The server's URI: postgresql://postgres:@/postgres?host=/tmp/...
    head, _, query = uri.partition("?")
    base = head.rsplit("/", 1)[0]
    return f"{base}/{dbname}?{query}" if query else f"{base}/{dbname}"


@pytest.fixture(scope="session")
def pg_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    import pg_servers
    from episodic.store.postgres import PostgresStore

    # Unix sockets have a short path limit: keep the data directory's path short.
    pgdata = Path(tmp_path_factory.mktemp("pg"))
    server = pg_servers.start(pgdata)
    admin = server.get_uri()
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {TEMPLATE}")
        conn.execute(f"CREATE DATABASE {TEMPLATE}")
    PostgresStore(_with_db(admin, TEMPLATE)).close()
    yield server
    server.cleanup()


def _create_db(server: Any, prefix: str = "t") -> str:
    """A new, migrated, empty database cloned from the template; returns its name."""
    name = f"{prefix}_{next(_counter)}"
    with psycopg.connect(server.get_uri(), autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name} TEMPLATE {TEMPLATE}")
    return name


def _drop_db(server: Any, name: str) -> None:
    with psycopg.connect(server.get_uri(), autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@pytest.fixture
def pg_url(pg_server: Any) -> Iterator[str]:
    """The URL of a new, migrated, empty database."""
    name = _create_db(pg_server)
    yield _with_db(pg_server.get_uri(), name)
    _drop_db(pg_server, name)


@pytest.fixture(scope="module")
def pg_module_url(pg_server: Any) -> Iterator[str]:
    """Like ``pg_url``, but one database for a whole module (for module-scoped stores)."""
    name = _create_db(pg_server, "m")
    yield _with_db(pg_server.get_uri(), name)
    _drop_db(pg_server, name)


@pytest.fixture(params=["sqlite", "postgres"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh database on each backend: the end-to-end suites take this fixture, so every
    test of theirs runs on SQLite and on PostgreSQL."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/memory.db"
    url: str = request.getfixturevalue("pg_url")
    return url


@pytest.fixture(params=["sqlite", "postgres"])
def empty_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A database no migration has touched (the pg_url fixture's is already migrated): a
    SQLite path with no file yet, or a PostgreSQL database with no tables."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path}/empty.db"
        return
    server = request.getfixturevalue("pg_server")
    name = f"e_{next(_counter)}"
    with psycopg.connect(server.get_uri(), autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    yield _with_db(server.get_uri(), name)
    _drop_db(server, name)


def raw_rows(url: str, sql: str) -> list[tuple[Any, ...]]:
    """Rows of one parameterless SQL query against either backend, bypassing the store
    (for tests that prove what is or is not left in the tables)."""
    if url.startswith("sqlite:///"):
        import sqlite3

        conn = sqlite3.connect(url.removeprefix("sqlite:///"))
        try:
            return [tuple(r) for r in conn.execute(sql).fetchall()]
        finally:
            conn.close()
    with psycopg.connect(url) as pg:
        return [tuple(r) for r in pg.execute(sql).fetchall()]


@pytest.fixture
def new_db_url(
    db_url: str, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[Callable[[], str]]:
    """Makes more fresh databases on ``db_url``'s backend, for tests that move data from
    one database to another."""
    made: list[str] = []

    def make() -> str:
        if db_url.startswith("sqlite:///"):
            return f"sqlite:///{tmp_path}/more-{next(_counter)}.db"
        server = request.getfixturevalue("pg_server")
        made.append(_create_db(server))
        return _with_db(server.get_uri(), made[-1])

    yield make
    if made:
        server = request.getfixturevalue("pg_server")
        for name in made:
            _drop_db(server, name)


def raw_execute(url: str, sql: str) -> None:
    """Run and commit one parameterless statement against either backend, bypassing the
    store (for tests that plant rows no public method writes)."""
    if url.startswith("sqlite:///"):
        import sqlite3

        conn = sqlite3.connect(url.removeprefix("sqlite:///"))
        try:
            with conn:
                conn.execute(sql)
        finally:
            conn.close()
        return
    with psycopg.connect(url) as pg:
        pg.execute(sql)


def sql_text(value: str) -> str:
    """``value`` as a SQL string literal (for the parameterless helpers above)."""
    return "'" + value.replace("'", "''") + "'"
