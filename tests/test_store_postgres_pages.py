"""PostgreSQL: the memories table keeps room on its pages, so the update every recall makes
(the reference counts of what it returned) stays on the row's page instead of going into
every index of the table (schema v11)."""

from __future__ import annotations

import time
from datetime import timedelta

import psycopg

from episodic.store.migrations import LATEST_VERSION
from episodic.store.postgres import PostgresStore
from store_contract import T0, event, memory_of


def fillfactor(url: str) -> str | None:
    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT reloptions FROM pg_class WHERE oid = 'memories'::regclass"
        ).fetchone()
    return None if row is None or row[0] is None else ",".join(row[0])


def page_of(url: str, memory_id: str) -> int:
    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT (ctid::text::point)[0]::int FROM memories WHERE id = %s", (memory_id,)
        ).fetchone()
    assert row is not None
    return int(row[0])


def without_autovacuum(url: str) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        tables = conn.execute(
            "SELECT quote_ident(relname) FROM pg_class"
            " WHERE relkind = 'r' AND relnamespace = 'public'::regnamespace"
        ).fetchall()
        for (table,) in tables:
            conn.execute(f"ALTER TABLE {table} SET (autovacuum_enabled = false)")


def wait_for_other_snapshots(url: str, timeout_s: float = 30.0) -> None:
    """Until no other session of this database holds a snapshot (an autovacuum worker
    already started, a pooled connection inside a transaction), which would keep the
    rows' old versions from being pruned on their page."""
    deadline = time.monotonic() + timeout_s
    with psycopg.connect(url, autocommit=True) as conn:
        while True:
            holders = conn.execute(
                "SELECT pid, backend_type, state FROM pg_stat_activity"
                " WHERE datname = current_database() AND pid <> pg_backend_pid()"
                " AND backend_xmin IS NOT NULL"
            ).fetchall()
            if not holders:
                return
            assert time.monotonic() < deadline, f"snapshots still held: {holders}"
            time.sleep(0.05)


def test_a_recalled_memory_is_marked_on_its_own_page(pg_url: str) -> None:
    # 300 rows of a few hundred bytes fill many pages, all but the last one completely
    # but for the room the table keeps.
    words = "the deploy of the payment service failed on host seven after the cache warmed"
    events = [event(f"e{i:03d}", summary=f"{words} {i}", minutes=i) for i in range(300)]
    with PostgresStore(pg_url) as store:
        # An autovacuum ANALYZE of the new rows in any table of this database, should it
        # start meanwhile, holds a snapshot that keeps the old versions from being pruned,
        # and the updates spill over (seen twice in full runs): not what this test is
        # about. So no table is vacuumed on its own, and each mark waits out any snapshot
        # another session still holds.
        without_autovacuum(pg_url)
        store.append(events, [memory_of(e) for e in events])
        pages = {e.id: page_of(pg_url, e.id) for e in events}
        last = max(pages.values())
        # One memory on each full page, as a recall's hits are spread over the table.
        hits = list({p: i for i, p in pages.items() if p < last - 1}.values())
        assert len(hits) >= 5
        for day in (1, 2, 3):
            wait_for_other_snapshots(pg_url)
            store.mark_referenced("acme", hits, T0 + timedelta(days=day))
        got = store.get_memories("acme", hits)
    assert {m.reference_count for m in got} == {3}
    # Full pages would have sent every new version to the end of the table.
    assert {i: page_of(pg_url, i) for i in hits} == {i: pages[i] for i in hits}


def test_new_and_upgraded_databases_keep_the_room(pg_url: str) -> None:
    PostgresStore(pg_url).close()
    assert fillfactor(pg_url) == "fillfactor=90"
    # A database from before the step (v10) gets it when a store opens it.
    with psycopg.connect(pg_url) as conn:
        conn.execute("ALTER TABLE memories RESET (fillfactor)")
        conn.execute("DELETE FROM schema_migrations WHERE version = 11")
    assert fillfactor(pg_url) is None
    with PostgresStore(pg_url) as store:
        assert store.schema_version() == LATEST_VERSION
    assert fillfactor(pg_url) == "fillfactor=90"
