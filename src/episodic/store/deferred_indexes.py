"""Indexes a bulk copy builds after its rows (`episodic migrate` into an empty database).

Keeping a table's b-tree and GIN indexes up to date row by row costs more than building
them once over the copied rows (the GIN index over the generated ``tsv`` column most of
all). So the secondary indexes of the tables a copy fills are dropped before it and built
after it. Their definitions wait in a table of the target, ``episodic_migrate_indexes``,
until each is built: a copy killed in between builds them when it is run again, and a
verification refuses a target that still has some to build.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING

from episodic.errors import StoreError

if TYPE_CHECKING:  # a type only: the PostgreSQL store's doctor imports this module
    from episodic.store.postgres.connection import Conn

DEFERRED_TABLE = "episodic_migrate_indexes"
# Sorting for a b-tree or GIN build: more than the server's default 64MB, never lower.
BUILD_MEMORY_KB = 256 * 1024


def owns(conn: Conn, table: str) -> bool:
    """Whether this session may alter ``table`` (drop its indexes, pause its triggers)."""
    row = conn.execute(
        "SELECT pg_has_role(relowner, 'USAGE') FROM pg_class WHERE oid = %s::regclass", (table,)
    ).fetchone()
    return bool(row and row[0])


def raise_build_memory(conn: Conn, want_kb: int) -> None:
    """maintenance_work_mem for this session: at least ``want_kb``, never lowered."""
    row = conn.execute(
        "SELECT setting::bigint FROM pg_settings WHERE name = 'maintenance_work_mem'"
    ).fetchone()
    if row is not None and int(row[0]) < want_kb:
        conn.execute(f"SET maintenance_work_mem = '{want_kb}kB'")


def defer_indexes(conn: Conn, counts: Mapping[str, int]) -> None:
    """On a target that holds no rows yet, drop the secondary indexes of each table the
    copy will fill (``counts``: the source's rows per table), keeping their definitions.
    Unique indexes and those behind constraints stay (the copy's ``ON CONFLICT`` and the
    foreign keys use them), and so does anything on a table this session does not own.
    A target holding rows is left alone: it is a copy in progress, whose dropped indexes
    are already listed, or another database, which the copy refuses."""
    if any(conn.execute(f"SELECT 1 FROM {table} LIMIT 1").fetchone() for table in counts):
        return
    with conn.transaction():
        conn.execute(
            f"CREATE TABLE IF NOT EXISTS {DEFERRED_TABLE} "
            "(name TEXT PRIMARY KEY, definition TEXT NOT NULL)"
        )
        for table in (t for t, n in counts.items() if n > 0 and owns(conn, t)):
            found = conn.execute(
                "SELECT c.relname, pg_get_indexdef(c.oid) FROM pg_index x "
                "JOIN pg_class c ON c.oid = x.indexrelid "
                "JOIN pg_am am ON am.oid = c.relam "
                "WHERE x.indrelid = %s::regclass AND NOT x.indisunique "
                "AND am.amname IN ('btree', 'gin') "
                "AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = c.oid)",
                (table,),
            ).fetchall()
            for name, definition in found:
                conn.execute(
                    f"INSERT INTO {DEFERRED_TABLE} (name, definition) VALUES (%s, %s)",
                    (name, definition),
                )
                conn.execute(f'DROP INDEX "{name}"')


def pending_indexes(conn: Conn) -> list[tuple[str, str]]:
    """(name, definition) of each index still to be built, in the order it will be."""
    if conn.execute("SELECT to_regclass(%s)", (DEFERRED_TABLE,)).fetchone() == (None,):
        return []
    rows = conn.execute(f"SELECT name, definition FROM {DEFERRED_TABLE} ORDER BY name")
    return [(str(name), str(definition)) for name, definition in rows.fetchall()]


def build_pending(conn: Conn, pending: Sequence[tuple[str, str]]) -> Iterator[str]:
    """Build the indexes ``pending_indexes`` listed, each in the transaction that strikes
    it from the list, yielding its name once built; then drop the list."""
    if pending:
        raise_build_memory(conn, BUILD_MEMORY_KB)
    for name, definition in pending:
        with conn.transaction():
            conn.execute(definition)
            conn.execute(f"DELETE FROM {DEFERRED_TABLE} WHERE name = %s", (name,))
        yield name
    conn.execute(f"DROP TABLE IF EXISTS {DEFERRED_TABLE}")


def refuse_unfinished(conn: Conn) -> None:
    """``StoreError`` when a copy into this database still has indexes to build."""
    pending = [name for name, _ in pending_indexes(conn)]
    if pending:
        raise StoreError(
            f"the copy into this database is not finished: indexes {', '.join(pending)} are "
            "still to be built; run the same migrate command again (without --verify-only) "
            "to finish it"
        )
