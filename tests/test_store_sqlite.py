"""SqliteStore: the Store contract on ``:memory:`` and on a file, plus what only SQLite has
(URLs, migrations, FTS triggers, other connections writing to the same file)."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from episodic.errors import InvalidInput, StoreError
from episodic.model import ScopeFilter
from episodic.store import SqliteStore, Store, open_store
from episodic.store.migrations import LATEST_VERSION, MIGRATIONS, migrate
from store_contract import (
    DIM,
    MODEL,
    T0,
    StoreContract,
    axis,
    dense_ids,
    event,
    memory_of,
    remember,
    sparse_ids,
    vec,
)

ACME = ScopeFilter("acme")


@pytest.fixture(params=["memory", "file"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SqliteStore]:
    target = ":memory:" if request.param == "memory" else str(tmp_path / "memory.db")
    s = SqliteStore(target)
    yield s
    s.close()


class TestSqliteStoreContract(StoreContract):
    pass


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "shared.db"


@pytest.fixture
def file_store(db_path: Path) -> Iterator[SqliteStore]:
    s = SqliteStore(db_path)
    yield s
    s.close()


@pytest.fixture
def raw(db_path: Path, file_store: SqliteStore) -> Iterator[sqlite3.Connection]:
    """Another connection to the same file, standing in for another process."""
    conn = sqlite3.connect(db_path, isolation_level=None)
    conn.execute("PRAGMA foreign_keys = ON")
    yield conn
    conn.close()


# -- URLs ------------------------------------------------------------------------------
def test_open_store_understands_the_documented_urls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    cases = {
        "sqlite:///rel/dir/a.db": tmp_path / "rel/dir/a.db",
        f"sqlite:///{tmp_path}/abs/b.db": tmp_path / "abs/b.db",  # four slashes in all
        "plain/c.db": tmp_path / "plain/c.db",
        str(tmp_path / "deep/er/d.db"): tmp_path / "deep/er/d.db",
    }
    for url, path in cases.items():
        s = open_store(url)
        try:
            assert s.url == f"sqlite:///{path}"
            assert s.schema_version() == LATEST_VERSION
        finally:
            s.close()
        assert path.is_file(), url
    mem = open_store("sqlite:///:memory:")
    assert mem.url == "sqlite:///:memory:" and mem.meta()["path"] == ":memory:"
    mem.close()


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("mysql://localhost/db", "unknown database URL scheme 'mysql'"),
        ("sqlite://host/x.db", "names a host"),
        ("sqlite:///", "no database path"),
        ("", "no database"),
    ],
)
def test_open_store_refuses_urls_it_cannot_serve(url: str, says: str) -> None:
    with pytest.raises(InvalidInput) as info:
        open_store(url)
    assert info.value.field == "db"
    assert says in info.value.message


def test_sqlite_store_is_a_store() -> None:
    with SqliteStore(":memory:") as s:
        assert isinstance(s, Store)


# -- migrations ------------------------------------------------------------------------
def test_migrations_are_recorded_and_applied_once(db_path: Path) -> None:
    SqliteStore(db_path).close()
    conn = sqlite3.connect(db_path, isolation_level=None)
    rows = conn.execute("SELECT version, name, applied_at FROM schema_migrations").fetchall()
    assert [(v, n) for v, n, _ in rows] == [(v, n) for v, n, _ in MIGRATIONS]
    assert rows[0][2].endswith("Z")
    assert migrate(conn) == []
    conn.close()
    with SqliteStore(db_path) as again:
        assert again.schema_version() == LATEST_VERSION


def test_a_failed_migration_leaves_nothing_behind(monkeypatch: pytest.MonkeyPatch) -> None:
    import episodic.store.migrations as migrations

    def broken(conn: sqlite3.Connection) -> None:
        conn.execute("CREATE TABLE half_done (x)")
        raise RuntimeError("boom")

    monkeypatch.setattr(migrations, "MIGRATIONS", (*MIGRATIONS, (99, "broken", broken)))
    conn = sqlite3.connect(":memory:", isolation_level=None)
    with pytest.raises(RuntimeError):
        migrations.migrate(conn)
    assert migrations.current_version(conn) == LATEST_VERSION
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
    assert "half_done" not in tables and "memories" in tables


def test_a_newer_schema_is_refused(db_path: Path) -> None:
    SqliteStore(db_path).close()
    conn = sqlite3.connect(db_path, isolation_level=None)
    conn.execute("INSERT INTO schema_migrations VALUES (999, 'future', 'x')")
    conn.close()
    with pytest.raises(StoreError, match="newer than this episodic"):
        SqliteStore(db_path)


def test_schema_constraints_for_later_tables(raw: sqlite3.Connection) -> None:
    raw.execute(
        "INSERT INTO memory_health_snapshots VALUES ('w', '', '2026-03-01', 1, 1, 1, 1, 1, 90)"
    )
    with pytest.raises(sqlite3.IntegrityError):  # '' makes the workspace aggregate unique
        raw.execute(
            "INSERT INTO memory_health_snapshots VALUES ('w', '', '2026-03-01', 1, 1, 1, 1, 1, 9)"
        )
    with pytest.raises(sqlite3.IntegrityError):
        raw.execute(
            "INSERT INTO events_archive (id, workspace_id, ts, type, severity, summary, payload, "
            "archived_at) VALUES ('e', 'w', 't', 'x', 'info', 's', ?, 't')",
            ("x" * 401,),
        )
    with pytest.raises(sqlite3.IntegrityError):
        raw.execute("INSERT INTO memory_relations VALUES ('a', 'b', 'likes', 1.0, 't')")


def test_stored_times_sort_as_text(file_store: SqliteStore, raw: sqlite3.Connection) -> None:
    from datetime import timedelta

    remember(file_store, event("late", minutes=90), event("early", minutes=-600))
    rows = raw.execute("SELECT id, ts FROM memories ORDER BY ts").fetchall()
    assert [r[0] for r in rows] == ["early", "late"]
    assert rows[1][1] == (T0 + timedelta(minutes=90)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def test_events_remember_whether_admission_kept_them(
    file_store: SqliteStore, raw: sqlite3.Connection
) -> None:
    kept, skipped = event("kept"), event("skipped")
    file_store.append([kept, skipped], [memory_of(kept)])
    assert dict(raw.execute("SELECT id, admitted FROM events").fetchall()) == {
        "kept": 1,
        "skipped": 0,
    }
    assert raw.execute("SELECT memory_id, event_id FROM memory_sources").fetchall() == [
        ("kept", "kept")
    ]


def test_a_memory_citing_an_unknown_event_rolls_the_batch_back(
    file_store: SqliteStore,
) -> None:
    e = event("e1")
    with pytest.raises(InvalidInput) as info:
        file_store.append([e], [memory_of(e, source_event_ids=("e1", "ghost"))])
    assert info.value.field == "source_event_ids" and "ghost" in info.value.message
    assert file_store.stats().events == 0


# -- FTS lockstep and other writers ---------------------------------------------------
def test_fts_follows_updates_and_deletes(file_store: SqliteStore, raw: sqlite3.Connection) -> None:
    remember(
        file_store,
        event("m1", summary="checkout OOM after cache change"),
        event("m2", summary="unrelated"),
    )
    assert sparse_ids(file_store, ACME, "checkout") == ["m1"]
    raw.execute("UPDATE memories SET content = 'payment gateway timeout' WHERE id = 'm1'")
    assert sparse_ids(file_store, ACME, "checkout") == []
    assert sparse_ids(file_store, ACME, "gateway") == ["m1"]
    raw.execute("UPDATE memories SET payload = '{\"note\": \"quarantined\"}' WHERE id = 'm2'")
    assert sparse_ids(file_store, ACME, "quarantined") == ["m2"]
    raw.execute("DELETE FROM memories WHERE id = 'm1'")
    assert sparse_ids(file_store, ACME, "gateway") == []
    # The index holds exactly what the table holds.
    raw.execute("INSERT INTO memories_fts (memories_fts) VALUES ('integrity-check')")


def test_a_second_store_on_the_same_file_sees_the_first_ones_vectors(db_path: Path) -> None:
    writer, reader = SqliteStore(db_path), SqliteStore(db_path)
    try:
        remember(writer, event("m1"), event("m2"), event("m3"))
        assert reader.search_dense(ACME, axis(0), 5) == []  # loads an empty index
        writer.put_vectors(MODEL, DIM, [("m1", axis(1)), ("m2", axis(0))])
        assert dense_ids(reader, ACME, axis(0)) == ["m2", "m1"]
        writer.put_vectors(MODEL, DIM, [("m3", vec(1, 0.2))])  # incremental
        assert dense_ids(reader, ACME, axis(0)) == ["m2", "m3", "m1"]
        writer.put_vectors(MODEL, DIM, [("m1", axis(0))])  # re-embedded: replaced, not added
        after = dense_ids(reader, ACME, axis(1))
        assert after[0] == "m3" and sorted(after) == ["m1", "m2", "m3"]
        writer.clear_vectors()  # rows disappeared: full reload
        assert reader.search_dense(ACME, axis(0), 5) == []
        assert reader.stats().pending_vectors == 3
    finally:
        writer.close()
        reader.close()


def test_dense_follows_status_and_scope_changes_made_elsewhere(
    file_store: SqliteStore, raw: sqlite3.Connection
) -> None:
    remember(file_store, event("m1", agent="a"), event("m2", agent="a"))
    file_store.put_vectors(MODEL, DIM, [("m1", axis(0)), ("m2", vec(1, 1))])
    own = ScopeFilter("acme", agent_id="a")
    assert dense_ids(file_store, own, axis(0)) == ["m1", "m2"]
    raw.execute("UPDATE memories SET status = 'retired' WHERE id = 'm1'")
    assert dense_ids(file_store, own, axis(0)) == ["m2"]
    raw.execute("UPDATE memories SET agent_id = 'b' WHERE id = 'm2'")
    assert dense_ids(file_store, own, axis(0)) == []
    raw.execute("UPDATE memories SET status = 'active', agent_id = 'a'")
    assert dense_ids(file_store, own, axis(0)) == ["m1", "m2"]
    raw.execute("DELETE FROM memories WHERE id = 'm1'")  # cascades to its vector
    assert dense_ids(file_store, ACME, axis(0)) == ["m2"]
    assert file_store.stats().vectors == 1


def test_dense_follows_changes_made_on_its_own_connection() -> None:
    # A :memory: store has no other connection; data_version never moves, total_changes does.
    with SqliteStore(":memory:") as s:
        remember(s, event("m1"))
        s.put_vectors(MODEL, DIM, [("m1", axis(0))])
        assert dense_ids(s, ACME, axis(0)) == ["m1"]
        s._conn.execute("UPDATE memories SET status = 'retired'")
        assert dense_ids(s, ACME, axis(0)) == []


def test_reference_bumps_do_not_reload_the_dense_index(file_store: SqliteStore) -> None:
    remember(file_store, event("m1"))
    file_store.put_vectors(MODEL, DIM, [("m1", axis(0))])
    file_store.search_dense(ACME, axis(0), 5)
    loaded = file_store._dense["acme"]
    file_store.mark_referenced("acme", ["m1"], T0)
    file_store.search_dense(ACME, axis(0), 5)
    assert file_store._dense["acme"] is loaded


def statements(seen: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
    """What a tracer saw, without the transactions' BEGIN and COMMIT."""
    return [(sql, p) for sql, p in seen if sql not in ("BEGIN", "COMMIT")]


def test_memory_rows_come_with_their_sources_in_one_statement(db_path: Path) -> None:
    seen: list[tuple[str, Any]] = []
    with SqliteStore(db_path, tracer=lambda sql, params: seen.append((sql, params))) as s:
        e1, e2, e3 = event("e1"), event("e2"), event("e3")
        single = memory_of(e1)
        # Several sources keep the order they were given in, which is not the events'.
        several = memory_of(e2, id="ep", source_event_ids=("e3", "e1", "e2"))
        s.append([e1, e2, e3], [single, several])
        seen.clear()
        assert s.get_memories("acme", ["e1"])[0].source_event_ids == ("e1",)
        assert len(statements(seen)) == 1  # a recall reads rows two or three times
        seen.clear()
        found = {m.id: m.source_event_ids for m in s.get_memories("acme", ["ep", "e1"])}
        assert found == {"ep": ("e3", "e1", "e2"), "e1": ("e1",)}
        # Only the memory with several sources reads them again, in their order.
        again = [p for sql, p in statements(seen) if "FROM memory_sources WHERE" in sql]
        assert again == [["ep"]]


def test_candidates_conversations_come_from_the_dense_index(
    db_path: Path, raw: sqlite3.Connection
) -> None:
    seen: list[tuple[str, Any]] = []
    with SqliteStore(db_path, tracer=lambda sql, params: seen.append((sql, params))) as s:
        remember(s, event("m1", conversation="c1"), event("m2", conversation="c2"), event("m3"))
        s.put_vectors(MODEL, DIM, [("m1", axis(0)), ("m3", axis(1))])  # m2 has none
        s.search_dense(ACME, axis(0), 5)  # the dense leg loads the index
        seen.clear()
        wanted = ["m1", "m2", "m3", "unknown"]
        assert s.conversations_of("acme", wanted) == {"m1": "c1", "m2": "c2", "m3": None}
        # Only the memory without a vector (and the unknown id) is read from the table.
        (read,) = statements(seen)
        assert "m2" in read[1] and "m1" not in read[1] and "m3" not in read[1]
        # A conversation changed elsewhere reloads the index at the next dense search.
        raw.execute("UPDATE memories SET conversation_id = 'c9' WHERE id = 'm1'")
        s.search_dense(ACME, axis(0), 5)
        assert s.conversations_of("acme", ["m1"]) == {"m1": "c9"}


# -- plumbing --------------------------------------------------------------------------
def test_tracer_sees_every_statement_with_its_params() -> None:
    seen: list[tuple[str, Any]] = []
    with SqliteStore(":memory:", tracer=lambda sql, params: seen.append((sql, params))) as s:
        assert any("CREATE VIRTUAL TABLE memories_fts" in sql for sql, _ in seen)
        seen.clear()
        s.search_sparse(ACME, "checkout", 3)
    params = next(p for q, p in seen if "bm25" in q)
    # The empty index lacks the word "checkout", so it is searched as a prefix.
    assert '"checkout"*' in params and "acme" in params and 3 in params


def test_meta_of_a_file_store(file_store: SqliteStore, db_path: Path) -> None:
    remember(file_store, event("m1"))
    meta = file_store.meta()
    assert meta["journal_mode"] == "wal"
    assert meta["path"] == str(db_path)
    assert meta["page_size"] > 0 and meta["file_bytes"] + meta["wal_bytes"] > 0
    assert meta["schema_version"] == LATEST_VERSION


def test_read_only_store_reads_and_refuses_writes(file_store: SqliteStore, db_path: Path) -> None:
    remember(file_store, event("m1", summary="checkout OOM"))
    with SqliteStore(db_path, read_only=True) as ro:
        assert sparse_ids(ro, ACME, "checkout") == ["m1"]
        with pytest.raises(StoreError, match="read-only") as info:
            remember(ro, event("m2"))
        assert isinstance(info.value.__cause__, sqlite3.Error)


def test_read_only_on_a_file_never_migrated_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "empty.db"
    sqlite3.connect(path).close()
    with pytest.raises(StoreError, match="episodic init"):
        SqliteStore(path, read_only=True)


def test_read_only_on_a_file_missing_a_lower_step_is_refused(tmp_path: Path) -> None:
    # Branches number their migrations apart: a file can hold the highest version and
    # still lack a lower one, which a reader that cannot migrate must not take for current.
    path = tmp_path / "gap.db"
    SqliteStore(path).close()
    lower = MIGRATIONS[-2][0]
    with closing(sqlite3.connect(path)) as conn, conn:
        conn.execute("DELETE FROM schema_migrations WHERE version = ?", (lower,))
    with pytest.raises(StoreError, match=f"lacks schema step\\(s\\) {lower} "):
        SqliteStore(path, read_only=True)


def test_a_closed_store_says_so() -> None:
    s = SqliteStore(":memory:")
    s.close()
    s.close()  # twice is fine
    with pytest.raises(StoreError, match="closed"):
        s.stats()
    with pytest.raises(StoreError, match="closed"):
        s.search_dense(ACME, axis(0), 3)


def test_threads_can_share_one_store(file_store: SqliteStore) -> None:
    errors: list[BaseException] = []

    def writer(n: int) -> None:
        try:
            for i in range(20):
                e = event(f"w{n}-{i}", summary=f"deploy step {i}")
                file_store.append([e], [memory_of(e)])
                file_store.put_vectors(MODEL, DIM, [(e.id, vec(1, i / 20))])
        except BaseException as exc:  # collected and re-raised in the main thread
            errors.append(exc)

    def reader() -> None:
        try:
            for _ in range(40):
                file_store.search_dense(ACME, axis(0), 5)
                file_store.search_sparse(ACME, "deploy", 5)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(3)]
    threads += [threading.Thread(target=reader) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert file_store.stats().vectors == 60
    assert len(file_store.search_dense(ACME, axis(0), 100)) == 60


def test_locked_database_becomes_a_store_error(
    file_store: SqliteStore, raw: sqlite3.Connection, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("episodic.store.sqlite.connection.BUSY_TIMEOUT_MS", 50)
    file_store._conn.execute("PRAGMA busy_timeout = 50")
    raw.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(StoreError, match="locked") as info:
            remember(file_store, event("m1"))
        assert isinstance(info.value.__cause__, sqlite3.OperationalError)
    finally:
        raw.execute("ROLLBACK")
    remember(file_store, event("m1"))
    assert file_store.stats().memories == 1


def test_large_id_lists_are_chunked(file_store: SqliteStore) -> None:
    events = [event(f"m{i:05d}") for i in range(1200)]
    file_store.append(events, [memory_of(e) for e in events])
    ids = [e.id for e in reversed(events)]
    assert [m.id for m in file_store.get_memories("acme", ids)] == ids
    assert len(file_store.get_events("acme", ids)) == 1200
    vectors = {e.id: np.full(DIM, 0.5, np.float32) for e in events}
    file_store.cache_put(MODEL, vectors)
    assert len(file_store.cache_get(MODEL, ids)) == 1200
