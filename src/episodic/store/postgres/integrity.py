"""PostgresStore: what ``episodic doctor`` reads: ``stats``, ``meta`` and the deep check
(``episodic doctor --deep``; the checks both backends share are
``episodic.store.integrity``). PostgreSQL's own checks:

- ``postgres.indexes``: every index of the schema is valid and ready (``pg_index``; a
  ``CREATE INDEX CONCURRENTLY`` or a ``REINDEX`` that died leaves one invalid, and the
  planner then ignores it), the HNSW index exists once the vectors are typed, and no
  index is still waiting for an unfinished ``episodic migrate`` to build it.
- ``postgres.tsv``: the keyword leg reads the generated ``tsv`` column: it must still be
  generated, and every row's value must be what its text gives now.
- ``journal.mirror``: the journal's search text (migration 6) is the generated ``tsv``
  column of ``events`` and ``events_archive``, each with its GIN index; a generated
  column cannot drift from its row, so what is checked is that both are still there.
- ``vectors.shape``: one model per store, each vector of its row's ``dim`` and of the
  column's type, finite and unit length (pgvector refuses NaN on input; checked anyway).

Everything runs in one repeatable-read snapshot, beside live writers.
"""

from __future__ import annotations

from typing import Any

from episodic.scoring.passages import PASSAGE_CHARS
from episodic.store.base import StoreStats
from episodic.store.deferred_indexes import pending_indexes
from episodic.store.integrity import (
    ERROR,
    FIX_REINDEX,
    MODELS_SQL,
    OK,
    UNIT_TOLERANCE,
    IntegrityCheck,
    model_problems,
    portable_checks,
    text_passages_check,
    verdict,
)
from episodic.store.migrations import _PG_JOURNAL_TSV, _PG_TSV_V3
from episodic.store.postgres.connection import Conn, current_version
from episodic.store.postgres.pgvector import PgvectorMixin, index_to_build
from episodic.store.postgres.vectors import COLUMN_DIM_SQL
from episodic.store.rows import parse_ts
from episodic.store.urls import display_url

_TSV_PREFIX = "ALTER TABLE memories ADD COLUMN tsv tsvector GENERATED ALWAYS AS "
# The expression the tsv column is generated from (migration 3).
TSV_EXPRESSION = _PG_TSV_V3.removeprefix(_TSV_PREFIX).removesuffix(" STORED")
FIX_TSV = (
    "recreate the column: ALTER TABLE memories DROP COLUMN tsv; "
    f"{_PG_TSV_V3}; CREATE INDEX memories_tsv ON memories USING GIN (tsv)"
)

_JOURNAL_TABLES = ("events", "events_archive")
FIX_JOURNAL_TSV = "recreate what is missing: " + "; ".join(
    f"ALTER TABLE {t} DROP COLUMN IF EXISTS tsv; {_PG_JOURNAL_TSV.format(table=t)}; "
    f"CREATE INDEX {t}_tsv ON {t} USING GIN (tsv)"
    for t in _JOURNAL_TABLES
)

_BAD_INDEXES_SQL = (
    "SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
    "JOIN pg_class t ON t.oid = i.indrelid JOIN pg_namespace n ON n.oid = t.relnamespace "
    "WHERE n.nspname = current_schema() AND NOT (i.indisvalid AND i.indisready) "
    "ORDER BY c.relname"
)


class IntegrityMixin(PgvectorMixin):
    def stats(self, workspace_id: str | None = None) -> StoreStats:
        where, params = ("WHERE workspace_id = %s", [workspace_id]) if workspace_id else ("", [])
        both = "AND workspace_id = %s" if workspace_id else ""
        with self._read() as conn:
            row = self._exec(
                conn,
                f"SELECT (SELECT count(*) FROM events {where}), "
                f"(SELECT count(*) FROM memories {where}), "
                f"(SELECT count(*) FROM memories WHERE status = 'active' {both}), "
                f"(SELECT count(*) FROM memory_vectors {where}), "
                "(SELECT count(*) FROM memories WHERE has_vector = 0 AND status = 'active' "
                f"{both}), "
                "(SELECT created_at FROM memories WHERE has_vector = 0 AND status = 'active' "
                f"{both} ORDER BY seq LIMIT 1), "
                "pg_database_size(current_database())",
                params * 6,
            ).fetchone()
            model = self._stored_model(conn)
            version = current_version(conn)
        assert row is not None
        events, memories, active, vectors, pending = (int(v) for v in row[:5])
        oldest, size = row[5], row[6]
        return StoreStats(
            events=events,
            memories=memories,
            active_memories=active,
            vectors=vectors,
            pending_vectors=pending,
            vector_model=None if model is None else model[0],
            vector_dim=None if model is None else model[1],
            schema_version=version,
            oldest_pending_at=None if oldest is None else parse_ts(oldest),
            size_bytes=int(size),
        )

    def meta(self) -> dict[str, Any]:
        with self._read() as conn:
            row = self._exec(
                conn,
                "SELECT current_setting('server_version'), "
                "(SELECT extversion FROM pg_extension WHERE extname = 'vector'), "
                "current_database(), pg_database_size(current_database()), "
                "pg_total_relation_size('memory_vectors'), current_setting('wal_level'), "
                "to_regclass('memory_vectors_hnsw') IS NOT NULL",
            ).fetchone()
            version = current_version(conn)
            dim = self._column_dim(conn)
        assert row is not None
        server, pgvector, database, db_bytes, vector_bytes, wal_level, hnsw = row
        pools = (self._read_pool, self._write_pool)
        stats = [p.get_stats() for p in pools]
        return {
            "backend": "postgresql",
            "url": display_url(self.url),
            # SQLite's file path; here the database on the server.
            "path": str(database),
            "read_only": self.read_only,
            "server_version": str(server),
            "pgvector_version": None if pgvector is None else str(pgvector),
            "schema_version": version,
            # PostgreSQL always journals through its write-ahead log.
            "journal_mode": "wal",
            "wal_level": str(wal_level),
            "database_bytes": int(db_bytes),
            "vector_bytes": int(vector_bytes),
            "vector_column_dim": dim,
            "hnsw_index": bool(hnsw),
            # Both pools together, then each (reads and writes have a pool each).
            "pool_max": sum(p.max_size for p in pools),
            "pool_size": sum(int(s.get("pool_size", 0)) for s in stats),
            "pool_available": sum(int(s.get("pool_available", 0)) for s in stats),
            "read_pool_max": self._read_pool.max_size,
            "write_pool_max": self._write_pool.max_size,
        }

    def deep_check(self) -> list[IntegrityCheck]:
        with self._read() as conn:

            def count(sql: str) -> int:
                row = self._exec(conn, sql).fetchone()
                return int(row[0]) if row else 0

            return [
                self._index_check(conn),
                self._tsv_check(conn),
                self._journal_tsv_check(conn),
                self._vector_shape_check(conn),
                *portable_checks(count),
                text_passages_check(count(_TEXT_PASSAGES_MISSING), count(_TEXT_PASSAGES_STRAY)),
            ]

    def _index_check(self, conn: Conn) -> IntegrityCheck:
        bad = [str(r[0]) for r in self._exec(conn, _BAD_INDEXES_SQL).fetchall()]
        row = self._exec(conn, COLUMN_DIM_SQL).fetchone()
        typed = row is not None and int(row[0]) > 0
        # Expected where this pgvector builds one: up to 2,000 dimensions, 4,000 on
        # halfvec from 0.7.
        wants_hnsw = (
            row is not None
            and typed
            and index_to_build(self.pgvector_version(conn), int(row[0])) is not None
        )
        hnsw = self._exec(conn, "SELECT to_regclass('memory_vectors_hnsw') IS NOT NULL").fetchone()
        missing = wants_hnsw and not (hnsw and hnsw[0])
        unbuilt = [name for name, _ in pending_indexes(conn)]
        if not bad and not missing and not unbuilt:
            return IntegrityCheck("postgres.indexes", OK, 0, "every index is valid and ready")
        parts = []
        fixes = []
        if unbuilt:
            parts.append(
                f"{len(unbuilt)} indexes an unfinished `episodic migrate` has yet to build: "
                + ", ".join(unbuilt)
            )
            fixes.append("the same `episodic migrate` command again (it builds them)")
        if bad:
            parts.append(f"{len(bad)} invalid indexes: {', '.join(bad)}")
            fixes.append(f"REINDEX INDEX {bad[0]}" + (" (and each other one)" if bad[1:] else ""))
        if missing:
            parts.append("1 missing HNSW index memory_vectors_hnsw (dense search scans)")
            fixes.append("`episodic reindex` (it builds the HNSW index again)")
        return IntegrityCheck(
            "postgres.indexes",
            ERROR,
            len(bad) + int(missing) + len(unbuilt),
            "; ".join(parts),
            "run " + "; ".join(fixes),
        )

    def _tsv_check(self, conn: Conn) -> IntegrityCheck:
        row = self._exec(
            conn,
            "SELECT attgenerated FROM pg_attribute "
            "WHERE attrelid = 'memories'::regclass AND attname = 'tsv' AND NOT attisdropped",
        ).fetchone()
        if row is None:
            return IntegrityCheck(
                "postgres.tsv", ERROR, 1, "memories.tsv is missing: keyword recall fails", FIX_TSV
            )
        not_generated = 0 if str(row[0]) == "s" else 1
        stale = self._exec(
            conn, f"SELECT count(*) FROM memories WHERE tsv IS DISTINCT FROM ({TSV_EXPRESSION})"
        ).fetchone()
        return verdict(
            "postgres.tsv",
            [
                (not_generated, "tsv column no longer generated from the text (writes skip it)"),
                (int(stale[0]) if stale else 0, "memories whose tsv differs from their text"),
            ],
            fix=FIX_TSV,
            clean="every memory's tsv matches its text",
        )

    def _journal_tsv_check(self, conn: Conn) -> IntegrityCheck:
        problems: list[tuple[int, str]] = []
        for table in _JOURNAL_TABLES:
            row = self._exec(
                conn,
                "SELECT (SELECT attgenerated FROM pg_attribute WHERE attrelid = %s::regclass "
                "AND attname = 'tsv' AND NOT attisdropped), to_regclass(%s) IS NOT NULL",
                (table, f"{table}_tsv"),
            ).fetchone()
            generated, indexed = (row[0], row[1]) if row else (None, False)
            problems.append((int(generated != "s"), f"{table}.tsv missing or not generated"))
            problems.append((int(not indexed), f"{table}_tsv GIN index missing"))
        return verdict(
            "journal.mirror",
            problems,
            fix=FIX_JOURNAL_TSV,
            clean="the journal and its archive keep their generated, indexed search text",
        )

    def _vector_shape_check(self, conn: Conn) -> IntegrityCheck:
        models = [(str(m), int(d), int(n)) for m, d, n in self._exec(conn, MODELS_SQL).fetchall()]
        row = self._exec(conn, COLUMN_DIM_SQL).fetchone()
        column_dim = int(row[0]) if row is not None and int(row[0]) > 0 else None
        measured = self._exec(
            conn,
            "SELECT "
            "count(*) FILTER (WHERE vector_dims(vector) <> dim), "
            "count(*) FILTER (WHERE %s::int IS NOT NULL AND vector_dims(vector) <> %s::int), "
            "count(*) FILTER (WHERE EXISTS (SELECT 1 FROM unnest(vector::real[]) AS x "
            "WHERE x = 'NaN'::real OR x = 'Infinity'::real OR x = '-Infinity'::real)), "
            "count(*) FILTER (WHERE abs(vector_norm(vector) - 1.0) > %s) "
            "FROM memory_vectors",
            (column_dim, column_dim, UNIT_TOLERANCE),
        ).fetchone()
        wrong_dim, wrong_type, bad_values, not_unit = (int(v) for v in (measured or (0,) * 4))
        return verdict(
            "vectors.shape",
            [
                *model_problems(models),
                (wrong_dim, "vectors whose length is not their dim"),
                (wrong_type, f"vectors not of the column's type vector({column_dim})"),
                (bad_values, "vectors holding NaN or infinity"),
                (not_unit, "vectors that are not unit length"),
            ],
            fix=FIX_REINDEX,
            clean="one model, every vector of its dimension, finite and unit length",
        )


_TEXT_PASSAGES_MISSING = (
    f"SELECT count(*) FROM memories m WHERE char_length(m.content) > {PASSAGE_CHARS} "
    "AND NOT EXISTS (SELECT 1 FROM memory_text_passages p WHERE p.memory_id = m.id)"
)
_TEXT_PASSAGES_STRAY = (
    "SELECT count(*) FROM memory_text_passages p JOIN memories m ON m.id = p.memory_id "
    f"WHERE char_length(m.content) <= {PASSAGE_CHARS} OR p.workspace_id <> m.workspace_id "
    "OR p.stop_char > char_length(m.content)"
)
