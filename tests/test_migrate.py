"""`episodic migrate`: a whole SQLite memory copied to PostgreSQL, resumably, verified.

The source is built through the store's public methods so that every copied table holds
rows; the copy is compared with raw SQL on both sides."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
import pytest
from typer.testing import CliRunner

from episodic.cli import app
from episodic.errors import InvalidInput, StoreError
from episodic.model import Memory, MemoryStatus, Role, ScopeFilter
from episodic.store.base import HealthSnapshot, ImportedFile, Merge, Relation, ReviewRequest
from episodic.store.migrations import LATEST_VERSION
from episodic.store.postgres import PostgresStore
from episodic.store.sqlite import SqliteStore
from episodic.store.transfer import TABLES, migrate
from episodic.tenancy import ApiKey, hash_secret
from store_contract import DIM, MODEL, T0, event, memory_of, vec

NOW = T0 + timedelta(days=400)
NOT_COPIED = ("upkeep_leases", "vector_generations", "ui_sessions")


def build_source(path: Path, n: int = 24) -> str:
    """A memory with rows in every table the copy carries, and in the two it leaves."""
    url = f"sqlite:///{path}"
    store = SqliteStore(url)
    try:
        events = [
            event(
                f"e{i:02d}",
                "acme" if i % 3 else "beta",
                summary=f"déploiement {i} ✓ — cache miss on host h{i % 4} 🚀",
                minutes=i,
                payload={"n": i, "note": 'quote " and newline \n', "ratio": i / 7},
                agent=f"a{i % 2}",
                crew=None if i % 5 == 0 else "c1",
                resource="r1" if i % 4 == 0 else None,
            )
            for i in range(n)
        ]
        old = [
            event(f"old{i}", "acme", minutes=-(200 * 24 * 60), summary=f"ancient {i}")
            for i in range(3)
        ]
        memories = [
            memory_of(
                e,
                base=0.1 + 0.2,  # 0.30000000000000004: floats must survive exactly
                keys=f"speaker a{i % 2}",
                content_hash=f"{i:064x}",
                stability=1 / 3 if i % 2 else None,
                difficulty=5.5,
                last_reviewed_at=NOW if i % 2 else None,
            )
            for i, e in enumerate(events)
        ]
        # Sources out of key order: a memory lists them in the order they were written.
        episode = Memory(
            id="ep1",
            workspace="acme",
            ts=T0,
            type="episode",
            content="an episode of three events",
            source_event_ids=("e07", "e01", "e04"),
            created_at=T0,
        )
        store.append([*events, *old], [*memories, episode, memory_of(old[0])])
        store.put_vectors(
            MODEL, DIM, [(m.id, vec(1, i / 10, -i / 7)) for i, m in enumerate(memories[:12])]
        )
        store.put_passages(DIM, [("e02", [(5, 20, vec(0, 1)), (15, 30, vec(0, 0, 1))])])
        store.cache_put(MODEL, {f"hash{i}": vec(i, 1) for i in range(4)})
        store.add_relations(
            "acme",
            [
                Relation("e01", "e02", "similar", 0.91),
                Relation("e02", "e01", "similar", 0.91),
                Relation("ep1", "e04", "supports", 1.0),
            ],
        )
        assert store.archive_events(T0 - timedelta(days=30), workspace_id="acme") == 3
        merge = Merge("e01", (("e04", 0.93),), "merged content", 0.8, 0.8, 3, NOW, T0)
        assert store.compact_memories("acme", [merge], NOW) == 1
        for day, crew in ((1, None), (2, None), (2, "c1")):
            store.put_health_snapshot(
                HealthSnapshot("acme", crew, date(2026, 3, day), 0.5, 0.25, 1, 0, 0.125, 61.5)
            )
        store.add_review(ReviewRequest("acme", "why did deploy fail", ("e02", "e05"), NOW))
        store.add_review(
            ReviewRequest("acme", "cache", ("e08",), NOW, (0.8,), agent_id="a0", crew_id="c1")
        )
        store.record_run("decay", "", "host:1", T0, T0 + timedelta(seconds=2), "ok", {"n": 3})
        store.record_run("health", "acme", "host:1", NOW, NOW, "error", {"error": "boom"})
        assert store.claim_nudge("acme", "a1", "session-1", 61, NOW)
        key = ApiKey("k1", "acme", Role.LEAD, crew_id="c1", label="ci", created_at=T0)
        store.add_api_key(key, hash_secret("secret-1"))
        store.revoke_api_key("k1", NOW)
        store.add_api_key(ApiKey("k2", "beta", Role.ADMIN, created_at=T0), hash_secret("s2"))
        store.add_ui_session(
            hash_secret("ep_s_1"), hash_secret("s2"), NOW, NOW + timedelta(hours=1)
        )
        files = [ImportedFile("a/x.md", 10**18, 42, "ab" * 32, "acme", "e02")]
        store.save_import_state("/notes", [*files, ImportedFile("y.md", 5, 6, "cd" * 32)])
        assert store.acquire_lease("decay", "", "host:1", NOW, 600)
        # A replacement, one undone (the pair is never replaced again), a partial change.
        for old_id, new_id in (("e05", "e07"), ("e10", "e11")):
            store.supersede("acme", old_id, new_id, decided_by="offline:instead", reason="r", at=T0)
        assert store.revert_supersession("acme", "e10", by="k1", at=NOW)
        assert store.link_partial_change(
            "acme", "e14", "e16", decided_by="offline:says-more:not-but", reason="r", at=NOW
        )
        edited = store.get_memory("acme", "e13")  # one with no vector
        assert store.revise_memory(
            replace(edited, content="déploiement 13, corrigé ✓", importance=0.9), by="k1", at=NOW
        )
    finally:
        store.close()
    with lite(url) as conn:  # the copy's premise: every table has rows
        for name in (*(t.name for t in TABLES), *NOT_COPIED):
            assert conn.execute(f"SELECT count(*) FROM {name}").fetchone()[0] > 0, name
    return url


@pytest.fixture
def source(tmp_path: Path) -> str:
    return build_source(tmp_path / "memory.db")


@contextmanager
def lite(url: str) -> Iterator[sqlite3.Connection]:
    """A plain connection to the source file, committed and closed at the end."""
    conn = sqlite3.connect(url.removeprefix("sqlite:///"))
    try:
        with conn:
            yield conn
    finally:
        conn.close()


def lite_rows(url: str, table: str, order: str, columns: str = "*") -> list[tuple[Any, ...]]:
    with lite(url) as conn:
        return conn.execute(f"SELECT {columns} FROM {table} ORDER BY {order}").fetchall()


def pg_rows(url: str, table: str, order: str, columns: str = "*") -> list[tuple[Any, ...]]:
    with psycopg.connect(url) as conn:
        return conn.execute(f"SELECT {columns} FROM {table} ORDER BY {order}").fetchall()


def pg_value(url: str, sql: str) -> Any:
    with psycopg.connect(url) as conn:
        row = conn.execute(sql).fetchone()
        return None if row is None else row[0]


def trigger_state(url: str) -> str:
    """'O' while the has_vector trigger fires, 'D' while it is disabled."""
    return str(
        pg_value(url, "SELECT tgenabled FROM pg_trigger WHERE tgname = 'memory_vectors_flag'")
    )


def lite_columns(url: str, table: str) -> str:
    with lite(url) as conn:
        return ", ".join(r[1] for r in conn.execute(f"PRAGMA table_info({table})"))


# -- the copy -----------------------------------------------------------------------------
# Derived on both sides, or SQLite's own: nothing to copy.
DERIVED = ("memories_fts", "passages_fts", "journal_fts", "memory_lengths", "schema_migrations")


def test_every_table_of_the_schema_is_copied_or_named_as_left(source: str) -> None:
    """A table a migration adds is copied by ``migrate``, or left by a decision written
    down here: a new table is never dropped on the way to PostgreSQL by oversight."""
    with lite(source) as conn:
        tables = {
            r[0]
            for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            if not r[0].startswith("sqlite_")
            and not any(
                r[0].startswith(f"{fts}_")
                for fts in ("memories_fts", "passages_fts", "journal_fts")
            )
        }
    assert tables == {t.name for t in TABLES} | set(NOT_COPIED) | set(DERIVED)


def test_replacements_and_their_undoing_come_along(source: str, pg_url: str) -> None:
    assert migrate(source, pg_url).ok
    store = PostgresStore(pg_url)
    try:
        links = {(s.old_id, s.new_id): s for s in store.supersessions("acme", ["e05", "e10"])}
        assert links[("e05", "e07")].reverted_at is None
        assert links[("e10", "e11")].reverted_at is not None
        assert store.get_memory("acme", "e10").status is MemoryStatus.ACTIVE
        # Undone before the move, still never made again after it.
        assert store.supersede("acme", "e10", "e11", decided_by="x", reason="r", at=NOW) is None
        [partial] = store.partial_changes("acme", ["e14"])
        assert (partial.old_id, partial.new_id) == ("e14", "e16")
    finally:
        store.close()


def test_every_table_is_copied_value_for_value(source: str, pg_url: str) -> None:
    report = migrate(source, pg_url, batch=5)
    assert report.ok, report.to_json()
    assert [t.name for t in report.tables] == [t.name for t in TABLES]
    for t in report.tables:
        assert t.source_rows == t.target_rows == t.copied > 0, t

    for table in TABLES:
        if table.name in ("memory_vectors", "memory_sources", "memory_passages"):
            continue
        columns = lite_columns(source, table.name)
        order = ", ".join(table.key)
        assert pg_rows(pg_url, table.name, order, columns) == lite_rows(
            source, table.name, order, columns
        ), table.name

    # Sources keep SQLite's rowid order (the order a memory lists them in) as seq.
    assert pg_rows(pg_url, "memory_sources", "seq", "seq, memory_id, event_id") == lite_rows(
        source, "memory_sources", "rowid", "rowid, memory_id, event_id"
    )
    episode = pg_rows(pg_url, "memory_sources WHERE memory_id = 'ep1'", "seq", "event_id")
    assert episode == [("e07",), ("e01",), ("e04",)]

    # Passages: where each lies, and its vector's float32 values exactly.
    columns = "memory_id, n, workspace_id, start_char, stop_char"
    assert (
        pg_rows(pg_url, "memory_passages", "memory_id, n", columns)
        == lite_rows(source, "memory_passages", "memory_id, n", columns)
        == [("e02", 1, "acme", 5, 20), ("e02", 2, "acme", 15, 30)]
    )
    copied = pg_rows(pg_url, "memory_passages", "n", "vector::text")
    assert [tuple(float(x) for x in v[0].strip("[]").split(",")) for v in copied] == [
        tuple(float(x) for x in np.frombuffer(blob, "<f4"))
        for (blob,) in lite_rows(source, "memory_passages", "n", "vector")
    ]

    # Vectors: the float32 values exactly, in a vector(dim) column under an HNSW index.
    columns = "seq, memory_id, workspace_id, dim, model, indexed_at"
    assert pg_rows(pg_url, "memory_vectors", "seq", columns) == lite_rows(
        source, "memory_vectors", "seq", columns
    )
    with psycopg.connect(pg_url) as conn:
        got = conn.execute("SELECT vector::real[] FROM memory_vectors ORDER BY seq").fetchall()
    want = lite_rows(source, "memory_vectors", "seq", "vector")
    assert len(got) == len(want) == 11  # twelve stored, the compaction survivor's dropped
    for (g,), (w,) in zip(got, want, strict=True):
        np.testing.assert_array_equal(np.asarray(g, np.float32), np.frombuffer(w, "<f4"))
    assert (
        pg_value(
            pg_url,
            "SELECT format_type(atttypid, atttypmod) FROM pg_attribute "
            "WHERE attrelid = 'memory_vectors'::regclass AND attname = 'vector'",
        )
        == f"vector({DIM})"
    )
    assert "hnsw" in pg_value(
        pg_url, "SELECT indexdef FROM pg_indexes WHERE indexname = 'memory_vectors_hnsw'"
    )
    # The has_vector trigger was paused only during the batches that needed it.
    assert trigger_state(pg_url) == "O"
    # The generated search column was computed for every copied memory.
    assert pg_value(pg_url, "SELECT count(*) FROM memories WHERE tsv IS NULL") == 0
    ancient = "SELECT id FROM memories WHERE tsv @@ to_tsquery('english', 'ancient')"
    assert pg_value(pg_url, ancient) == "old0"
    # Each memory's kept length (what recall ranks candidates by) came with it: the
    # target's triggers filled it, the same as the source's.
    lengths = ("memory_lengths", "memory_id", "memory_id, chars")
    assert pg_rows(pg_url, *lengths) == lite_rows(source, *lengths)
    assert pg_value(pg_url, "SELECT count(*) FROM memory_lengths") == pg_value(
        pg_url, "SELECT count(*) FROM memories"
    )

    for name in NOT_COPIED:
        assert pg_value(pg_url, f"SELECT count(*) FROM {name}") == 0


def test_both_stores_answer_the_same_after_the_copy(source: str, pg_url: str) -> None:
    assert migrate(source, pg_url).ok
    lite_store, pg_store = SqliteStore(source), PostgresStore(pg_url)
    try:
        for ws in ("acme", "beta"):
            ids = [
                i for i, w in lite_rows(source, "memories", "seq", "id, workspace_id") if w == ws
            ]
            events = [i for (i,) in lite_rows(source, "events", "id", "id")]
            for store in (lite_store, pg_store):
                assert len(store.get_memories(ws, ids)) == len(ids)
            assert pg_store.get_memories(ws, ids) == lite_store.get_memories(ws, ids)
            assert pg_store.get_events(ws, events) == lite_store.get_events(ws, events)
            assert pg_store.api_keys(ws) == lite_store.api_keys(ws)
            assert pg_store.health_snapshots(ws, None, 9) == lite_store.health_snapshots(
                ws, None, 9
            )
            flt = ScopeFilter(ws)
            assert pg_store.related(flt, ids) == lite_store.related(flt, ids)
            query = vec(1, 0.3, -0.4)
            assert [c.memory_id for c in pg_store.search_dense(flt, query, 5)] == [
                c.memory_id for c in lite_store.search_dense(flt, query, 5)
            ]
        old = ["old0", "old1", "old2"]
        assert pg_store.archived_events("acme", old) == lite_store.archived_events("acme", old)
        assert pg_store.get_memory("acme", "ep1").source_event_ids == ("e07", "e01", "e04")
    finally:
        lite_store.close()
        pg_store.close()


def test_identity_sequences_continue_after_the_copied_keys(source: str, pg_url: str) -> None:
    # A deleted review leaves SQLite's AUTOINCREMENT mark above the largest id left.
    with lite(source) as conn:
        conn.execute("DELETE FROM memory_reviews WHERE id = 2")
    assert migrate(source, pg_url).ok
    for table, column, floor in (
        ("memories", "seq", "SELECT max(seq) FROM memories"),
        ("memory_vectors", "seq", "SELECT max(seq) FROM memory_vectors"),
        ("memory_sources", "seq", "SELECT max(seq) FROM memory_sources"),
        ("upkeep_runs", "id", "SELECT max(id) FROM upkeep_runs"),
        ("memory_reviews", "id", "SELECT 2"),
    ):
        top = pg_value(pg_url, floor)
        sequence = f"pg_get_serial_sequence('{table}', '{column}')"
        assert pg_value(pg_url, f"SELECT nextval({sequence})") == top + 1, table


def test_vectors_too_wide_for_hnsw_are_copied_unindexed(tmp_path: Path, pg_url: str) -> None:
    # Wider than any pgvector indexes (as halfvec from 0.7: 4000; as vector: 2000).
    url = f"sqlite:///{tmp_path / 'wide.db'}"
    store = SqliteStore(url)
    try:
        wide = [event("w1"), event("w2")]
        store.append(wide, [memory_of(e) for e in wide])
        rng = np.random.default_rng(7)
        store.put_vectors("wide-model", 4096, [(e.id, rng.normal(size=4096)) for e in wide])
    finally:
        store.close()
    assert migrate(url, pg_url).ok
    assert pg_value(pg_url, "SELECT to_regclass('memory_vectors_hnsw')") is None
    assert pg_value(pg_url, "SELECT vector_dims(vector) FROM memory_vectors LIMIT 1") == 4096


def test_a_second_run_copies_nothing_and_still_verifies(source: str, pg_url: str) -> None:
    assert migrate(source, pg_url, batch=4).ok
    again = migrate(source, pg_url, batch=4)
    assert again.ok
    assert [t.copied for t in again.tables] == [0] * len(TABLES)
    assert all(t.target_rows == t.source_rows > 0 for t in again.tables)


class Interrupt:
    """A progress listener that stops the copy (as Ctrl-C would) after some batches."""

    def __init__(self, after: int) -> None:
        self.left = after

    def start(self, label: str, total: int | None, done: int = 0) -> None:
        pass

    def advance(self, label: str, rows: int) -> None:
        if label.startswith("copy"):
            self.left -= 1
            if self.left == 0:
                raise KeyboardInterrupt


@pytest.mark.parametrize("after", [1, 6, 9, 14, 20])
def test_an_interrupted_copy_resumes_exactly(source: str, pg_url: str, after: int) -> None:
    with pytest.raises(KeyboardInterrupt):
        migrate(source, pg_url, batch=3, listener=Interrupt(after))
    partial = sum(pg_value(pg_url, f"SELECT count(*) FROM {t.name}") for t in TABLES)
    assert partial > 0
    report = migrate(source, pg_url, batch=3)
    assert report.ok, report.to_json()
    total = sum(t.source_rows for t in report.tables)
    assert sum(t.copied for t in report.tables) == total - partial  # nothing copied twice


def kill_during(source: str, pg_url: str, label: str, nth: int, batch: int = 2) -> None:
    """Run the copy in a child process and SIGKILL it at the ``nth`` progress step of
    ``label``: no cleanup runs, the connection just drops."""
    script = textwrap.dedent(
        """
        import os, signal, sys
        from episodic.store.transfer import migrate

        class Kill:
            seen = 0
            def start(self, label, total, done=0):
                pass
            def advance(self, label, rows):
                if label == sys.argv[3]:
                    Kill.seen += 1
                    if Kill.seen == int(sys.argv[4]):
                        os.kill(os.getpid(), signal.SIGKILL)

        migrate(sys.argv[1], sys.argv[2], batch=int(sys.argv[5]), listener=Kill())
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script, source, pg_url, label, str(nth), str(batch)],
        capture_output=True,
        timeout=120,
    )
    assert done.returncode == -signal.SIGKILL, done.stderr.decode()


def test_a_killed_copy_resumes_exactly(source: str, pg_url: str) -> None:
    kill_during(source, pg_url, "copy memory_vectors", 2)
    assert pg_value(pg_url, "SELECT count(*) FROM memory_vectors") == 4
    assert pg_value(pg_url, "SELECT count(*) FROM memory_relations") == 0
    report = migrate(source, pg_url, batch=2)
    assert report.ok, report.to_json()
    vectors = next(t for t in report.tables if t.name == "memory_vectors")
    assert (vectors.copied, vectors.target_rows) == (7, 11)


def indexes(url: str) -> dict[str, str]:
    """Every index of the target's schema: name -> definition."""
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = current_schema()"
        ).fetchall()
    return {str(name): str(definition) for name, definition in rows}


def test_the_copy_ends_with_every_index_the_store_made(source: str, pg_url: str) -> None:
    # The copy builds the secondary indexes after the rows (faster than keeping them up
    # to date row by row); a finished copy must have every one, as the store defined it,
    # plus the HNSW index it builds over the copied vectors.
    PostgresStore(pg_url).close()
    made = indexes(pg_url)
    assert "memories_tsv" in made and "memories_workspace_agent" in made
    assert migrate(source, pg_url, batch=5).ok
    after = indexes(pg_url)
    assert {n: d for n, d in after.items() if n in made} == made
    assert set(after) - set(made) == {"memory_vectors_hnsw"}
    assert pg_value(pg_url, "SELECT to_regclass('episodic_migrate_indexes')") is None


def test_a_copy_killed_before_its_indexes_are_built_builds_them_when_run_again(
    source: str, pg_url: str
) -> None:
    PostgresStore(pg_url).close()
    made = indexes(pg_url)
    kill_during(source, pg_url, "copy memories", 3)
    # What the killed copy left cannot be taken for a finished one.
    assert "memories_tsv" not in indexes(pg_url)
    with pytest.raises(StoreError, match=r"not finished: indexes .*memories_tsv") as caught:
        migrate(source, pg_url, verify_only=True)
    assert "run the same migrate command again" in str(caught.value)
    result = CliRunner().invoke(app, ["migrate", "--from", source, "--to", pg_url, "--verify-only"])
    assert result.exit_code != 0 and "memories_tsv" in result.stderr
    # `episodic doctor --deep` names what is missing and how to finish.
    with PostgresStore(pg_url) as store:
        check = next(c for c in store.deep_check() if c.name == "postgres.indexes")
    assert check.status == "error" and "memories_tsv" in check.detail, check
    assert check.fix is not None and "episodic migrate" in check.fix

    report = migrate(source, pg_url, batch=2)
    assert report.ok, report.to_json()
    after = indexes(pg_url)
    assert {n: d for n, d in after.items() if n in made} == made
    assert migrate(source, pg_url, verify_only=True).ok
    # The store searches the copy through them.
    with PostgresStore(pg_url) as store:
        hits = store.search_sparse(ScopeFilter("acme"), "déploiement", 5)
    assert hits


def test_a_re_run_picks_up_rows_the_source_gained_since(source: str, pg_url: str) -> None:
    assert migrate(source, pg_url, batch=4).ok
    store = SqliteStore(source)
    try:
        # "a..." sorts before every copied event id, "z..." after: both must arrive.
        new = [event("a-new", summary="new first"), event("z-new", summary="new last")]
        store.append(new, [memory_of(e) for e in new])
        store.put_vectors(MODEL, DIM, [("a-new", vec(0, 1))])
    finally:
        store.close()
    report = migrate(source, pg_url, batch=4)
    assert report.ok, report.to_json()
    copied = {t.name: t.copied for t in report.tables if t.copied}
    assert copied == {"events": 2, "memories": 2, "memory_sources": 2, "memory_vectors": 1}


def test_a_batch_that_fails_is_rolled_back_whole(source: str, pg_url: str) -> None:
    # A NaN vector (which pgvector refuses) fails the copy in the third vectors batch.
    bad = np.full(DIM, np.nan, np.float32).tobytes()
    with lite(source) as conn:
        seq = conn.execute("SELECT seq FROM memory_vectors ORDER BY seq LIMIT 1 OFFSET 5")
        (fifth,) = seq.fetchone()
        good = conn.execute("SELECT vector FROM memory_vectors WHERE seq = ?", (fifth,))
        (good_blob,) = good.fetchone()
        conn.execute("UPDATE memory_vectors SET vector = ? WHERE seq = ?", (bad, fifth))
    with pytest.raises(StoreError, match="NaN"):
        migrate(source, pg_url, batch=2)
    assert pg_value(pg_url, "SELECT count(*) FROM memory_vectors") == 4
    assert trigger_state(pg_url) == "O"
    with lite(source) as conn:
        conn.execute("UPDATE memory_vectors SET vector = ? WHERE seq = ?", (good_blob, fifth))
    assert migrate(source, pg_url, batch=2).ok


# -- verification and refusals ---------------------------------------------------------------
def test_verification_names_a_table_that_differs(source: str, pg_url: str) -> None:
    assert migrate(source, pg_url).ok
    with psycopg.connect(pg_url) as conn:
        conn.execute("UPDATE memories SET importance = importance + 1e-12 WHERE id = 'e05'")
    report = migrate(source, pg_url, verify_only=True)
    assert report.mismatched == ["memories"]
    memories = next(t for t in report.tables if t.name == "memories")
    assert memories.source_rows == memories.target_rows  # the checksum caught it
    assert migrate(source, pg_url).mismatched == ["memories"]  # a re-run does not hide it


def test_verify_only_copies_nothing(source: str, pg_url: str) -> None:
    report = migrate(source, pg_url, verify_only=True)
    assert report.mismatched == [t.name for t in TABLES]
    assert all(t.target_rows == t.copied == 0 for t in report.tables)


def test_a_target_holding_other_data_is_refused(source: str, tmp_path: Path, pg_url: str) -> None:
    other = build_source(tmp_path / "other.db", n=30)  # same keys and more, other values
    assert migrate(other, pg_url).ok
    before = indexes(pg_url)
    with pytest.raises(StoreError, match="events holds rows the source does not have"):
        migrate(source, pg_url)
    assert indexes(pg_url) == before  # the refused copy dropped nothing


def test_a_source_at_an_older_schema_is_refused(source: str) -> None:
    with lite(source) as conn:
        conn.execute("DELETE FROM schema_migrations WHERE version = ?", (LATEST_VERSION,))
    with pytest.raises(StoreError, match="open it once with this episodic"):
        migrate(source, "postgresql://nobody@127.0.0.1:1/never")


@pytest.mark.parametrize(
    ("src", "dst", "field"),
    [
        ("postgresql://me@db/x", "postgresql://me@db/y", "from"),
        ("sqlite:///:memory:", "postgresql://me@db/y", "from"),
        ("sqlite:///no/such/file.db", "postgresql://me@db/y", "from"),
        ("SOURCE", "sqlite:///other.db", "to"),
        ("SOURCE", "/tmp/x.db", "to"),
    ],
)
def test_urls_that_are_not_sqlite_to_postgresql_are_refused(
    source: str, src: str, dst: str, field: str
) -> None:
    with pytest.raises(InvalidInput) as caught:
        migrate(source if src == "SOURCE" else src, dst)
    assert caught.value.field == field
    with pytest.raises(InvalidInput) as caught:
        migrate(source, "postgresql://me@db/y", batch=0)
    assert caught.value.field == "batch"


# -- the command ---------------------------------------------------------------------------
def test_the_command_copies_verifies_and_reports(source: str, pg_url: str) -> None:
    runner = CliRunner()
    result = runner.invoke(app, ["migrate", "--from", source, "--to", pg_url, "--batch", "7"])
    assert result.exit_code == 0, result.stderr
    assert "memory_health_snapshots" in result.stdout and "DIFFERENT" not in result.stdout

    result = runner.invoke(app, ["migrate", "--from", source, "--to", pg_url, "--json"])
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["ok"] and {t["copied"] for t in report["tables"]} == {0}

    with psycopg.connect(pg_url) as conn:
        conn.execute("DELETE FROM api_keys WHERE id = 'k2'")
    result = runner.invoke(app, ["migrate", "--from", source, "--to", pg_url, "--verify-only"])
    assert result.exit_code == 1
    assert "DIFFERENT" in result.stdout and "api_keys" in result.stderr

    result = runner.invoke(app, ["migrate", "--from", source, "--to", "mysql://x/y"])
    assert result.exit_code == 2 and "to: not a PostgreSQL URL" in result.stderr
