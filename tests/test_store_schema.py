"""One schema for both backends: the PostgreSQL rendering of the migrations has the same
tables and columns as SQLite's (but for the few each documents as its own), at the same
version."""

from __future__ import annotations

import sqlite3

import psycopg

from episodic.store.migrations import (
    LATEST_VERSION,
    MIGRATIONS,
    POSTGRES_ONLY_COLUMNS,
    SQLITE_ONLY_TABLE_PREFIX,
    migrate,
)
from episodic.store.postgres import PostgresStore


def _sqlite_columns() -> set[tuple[str, str]]:
    conn = sqlite3.connect(":memory:", isolation_level=None)
    migrate(conn)
    tables = [
        r[0]
        for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        if not r[0].startswith(SQLITE_ONLY_TABLE_PREFIX) and r[0] != "sqlite_sequence"
    ]
    return {(t, c[1]) for t in tables for c in conn.execute(f"PRAGMA table_info({t})")}


def _postgres_columns(url: str) -> set[tuple[str, str]]:
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT table_name, column_name FROM information_schema.columns"
            " WHERE table_schema = 'public'"
        ).fetchall()
    return {(str(t), str(c)) for t, c in rows}


def test_both_backends_have_the_same_tables_and_columns(pg_url: str) -> None:
    sqlite_cols = _sqlite_columns()
    pg_cols = _postgres_columns(pg_url)
    assert pg_cols - POSTGRES_ONLY_COLUMNS == sqlite_cols
    assert pg_cols >= POSTGRES_ONLY_COLUMNS
    assert ("memories", "content") in pg_cols and ("api_keys", "key_hash") in pg_cols


def test_postgres_is_at_the_latest_version_and_reopening_applies_nothing(pg_url: str) -> None:
    with PostgresStore(pg_url) as store:
        assert store.schema_version() == LATEST_VERSION
    with psycopg.connect(pg_url) as conn:
        versions = [r[0] for r in conn.execute("SELECT version FROM schema_migrations")]
    assert sorted(versions) == sorted(v for v, _, _ in MIGRATIONS)
