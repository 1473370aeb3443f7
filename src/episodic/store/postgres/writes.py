"""PostgresStore: appending events and memories, vectors and the embedding cache, reading
them back (see the package docstring).

``SqliteStore``'s behaviour. Where SQLite relied on one writer per file, this module
relies on ``INSERT ... ON CONFLICT``, row locks and two advisory locks:

- Vectors: ``memory_vectors.vector`` has no fixed dimension until the first vectors are
  stored; that first store types the column (``vector(dim)``) and builds the HNSW index.
  Every vector write holds ``_VECTORS_LOCK`` shared, which ``clear_vectors`` takes
  exclusively, so a reindex never interleaves with a write of the old model. A write that
  finds no vectors stored, or the column typed for another dimension, takes ``_SETUP_LOCK``
  exclusively before it decides the model, so two processes starting on an empty store
  cannot store two models (or both alter the column): the second waits, sees the first
  one's model and is refused like on SQLite.
- Re-storing a memory's vector replaces it (``ON CONFLICT (memory_id) DO UPDATE``): a
  memory another worker has just vectored is neither an error nor a second row.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import numpy as np
from pgvector import Vector as PgVector

from episodic.errors import IdTaken, InvalidInput, ModelMismatch, NotFound
from episodic.model import Event, Memory, ScopeFilter, utcnow
from episodic.store.base import (
    AppendResult,
    PendingConversation,
    PendingVector,
    StoreStats,
    Vector,
    taken_ids,
)
from episodic.store.dense import LE_FLOAT32, unit_vector
from episodic.store.postgres.connection import (
    Conn,
    PgBase,
    _has_nul,
    current_version,
)
from episodic.store.sql import scope_where
from episodic.store.sqlite import (
    _EVENT_COLUMNS,
    _MEMORY_COLUMNS,
    _event,
    _json,
    _memory,
    _memory_row,
    _parse_ts,
    _unique,
    ts_text,
)
from episodic.store.urls import display_url

# pg_advisory_xact_lock keys (the migration lock is "epmi").
_VECTORS_LOCK = 0x6570_7663  # "epvc": shared by vector writes, exclusive for clear_vectors
_SETUP_LOCK = 0x6570_7673  # "epvs": deciding the model of an empty vector table
# pgvector (0.6) builds HNSW indexes on vectors of at most this many dimensions; wider
# ones are stored unindexed and searched by a scan.
HNSW_MAX_DIM = 2000

# A memory's columns followed by its source events in the order they were stored
# (``FROM memories m``): whole memories in one query.
_MEMORY_WITH_SOURCES = (
    f"{_MEMORY_COLUMNS}, ARRAY(SELECT s.event_id FROM memory_sources s "
    "WHERE s.memory_id = m.id ORDER BY s.seq)"
)
# Batches of at least this many rows are staged with COPY (``_copy_insert``).
COPY_MIN_ROWS = 200
_EVENT_INSERT_COLUMNS = (
    "id",
    "workspace_id",
    "crew_id",
    "agent_id",
    "resource_id",
    "conversation_id",
    "ts",
    "type",
    "severity",
    "summary",
    "payload",
    "refs",
    "admitted",
    "created_at",
)
_MEMORY_INSERT_COLUMNS = (
    "id",
    "workspace_id",
    "crew_id",
    "agent_id",
    "resource_id",
    "conversation_id",
    "ts",
    "type",
    "severity",
    "content",
    "payload",
    "base_importance",
    "importance",
    "reference_count",
    "last_referenced_at",
    "status",
    "created_at",
    "updated_at",
    "keys",
    "content_hash",
    "stability",
    "difficulty",
    "last_reviewed_at",
    "consolidated_at",
)
INSERT_EVENT_SQL = (
    f"INSERT INTO events ({', '.join(_EVENT_INSERT_COLUMNS)}) "
    f"SELECT {', '.join(['%s'] * len(_EVENT_INSERT_COLUMNS))} "
    # An id already archived (upkeep compaction) counts as a duplicate too.
    "WHERE NOT EXISTS (SELECT 1 FROM events_archive WHERE id = %s) ON CONFLICT (id) DO NOTHING"
)
INSERT_MEMORY_SQL = (
    f"INSERT INTO memories ({', '.join(_MEMORY_INSERT_COLUMNS)}) "
    f"VALUES ({', '.join(['%s'] * len(_MEMORY_INSERT_COLUMNS))}) ON CONFLICT DO NOTHING"
)
_STAGED_EVENTS_SQL = (
    f"INSERT INTO events ({', '.join(_EVENT_INSERT_COLUMNS)}) "
    f"SELECT {', '.join('s.' + c for c in _EVENT_INSERT_COLUMNS)} FROM _stage s "
    "WHERE NOT EXISTS (SELECT 1 FROM events_archive a WHERE a.id = s.id) "
    "ORDER BY s.ord ON CONFLICT (id) DO NOTHING"
)
_STAGED_MEMORIES_SQL = (
    f"INSERT INTO memories ({', '.join(_MEMORY_INSERT_COLUMNS)}) "
    f"SELECT {', '.join('s.' + c for c in _MEMORY_INSERT_COLUMNS)} FROM _stage s "
    "ORDER BY s.ord ON CONFLICT DO NOTHING"
)
# FOR KEY SHARE: a memory deleted meanwhile is skipped (like an unknown id) instead of
# failing the foreign key check. The seq of a replaced row stays, as SQLite's in-process
# index keeps a re-embedded memory in its place.
_PUT_VECTOR_SQL = (
    "INSERT INTO memory_vectors (memory_id, workspace_id, vector, dim, model, indexed_at) "
    "SELECT id, workspace_id, %s, %s, %s, %s FROM memories WHERE id = %s FOR KEY SHARE "
    "ON CONFLICT (memory_id) DO UPDATE SET workspace_id = EXCLUDED.workspace_id, "
    "vector = EXCLUDED.vector, dim = EXCLUDED.dim, model = EXCLUDED.model, "
    "indexed_at = EXCLUDED.indexed_at"
)
# The staged form (``_copy_vectors``): the last row of each id, locked in id order like
# the row-by-row path; the count is of staged rows whose memory exists.
_STAGED_VECTORS_SQL = (
    "WITH written AS (INSERT INTO memory_vectors "
    "(memory_id, workspace_id, vector, dim, model, indexed_at) "
    "SELECT m.id, m.workspace_id, s.vector, %s, %s, %s FROM (SELECT DISTINCT ON (memory_id) "
    "memory_id, vector FROM _stage ORDER BY memory_id, ord DESC) s "
    "JOIN memories m ON m.id = s.memory_id ORDER BY m.id FOR KEY SHARE OF m "
    "ON CONFLICT (memory_id) DO UPDATE SET workspace_id = EXCLUDED.workspace_id, "
    "vector = EXCLUDED.vector, dim = EXCLUDED.dim, model = EXCLUDED.model, "
    "indexed_at = EXCLUDED.indexed_at RETURNING memory_id) "
    "SELECT count(*) FROM _stage WHERE memory_id IN (SELECT memory_id FROM written)"
)
_COLUMN_DIM_SQL = (
    "SELECT atttypmod FROM pg_attribute "
    "WHERE attrelid = 'memory_vectors'::regclass AND attname = 'vector'"
)


def _array(value: PgVector) -> Vector:
    """A vector column's value (pgvector's ``Vector``) as a float32 array."""
    out: Vector = np.array(value.to_numpy(), dtype=np.float32)
    return out


class WritesMixin(PgBase):
    # -- writing ---------------------------------------------------------------------
    def append(self, events: Sequence[Event], memories: Sequence[Memory]) -> AppendResult:
        now = ts_text(utcnow())
        admitted: set[str] = set()
        for m in memories:
            admitted.add(m.id)
            admitted.update(m.source_event_ids)
        event_rows = [
            (
                e.id,
                e.workspace_id,
                e.crew_id,
                e.agent_id,
                e.resource_id,
                e.conversation_id,
                ts_text(e.ts),
                e.type,
                e.severity,
                e.summary,
                _json("payload", e.payload),
                _json("refs", e.refs),
                1 if e.id in admitted else 0,
                now,
                e.id,
            )
            for e in events
        ]
        memory_rows = [_memory_row(m, now) for m in memories]
        with self._write() as conn:
            # Row by row: a duplicate inside the batch, or one another process is
            # inserting right now, waits for that row and is then skipped and not counted.
            if len(event_rows) >= COPY_MIN_ROWS:
                inserted = self._copy_insert(
                    conn,
                    "events",
                    _EVENT_INSERT_COLUMNS,
                    [r[:-1] for r in event_rows],
                    _STAGED_EVENTS_SQL,
                )
            else:
                inserted = self._executemany(conn, INSERT_EVENT_SQL, event_rows)
            memories_inserted = self._insert_memory_rows(conn, memory_rows)
            if inserted < len(event_rows) or memories_inserted < len(memory_rows):
                self._refuse_taken(conn, events, memories)
            self._insert_sources(conn, memories)
        return AppendResult(
            events_inserted=inserted,
            events_duplicate=len(events) - inserted,
            memories_inserted=memories_inserted,
        )

    def _refuse_taken(
        self, conn: Conn, events: Sequence[Event], memories: Sequence[Memory]
    ) -> None:
        """Raise ``IdTaken`` (the transaction rolls back) when a skipped id is another
        workspace's: see ``taken_ids``. Only runs when something was skipped."""
        event_ids = [i for i in _unique([e.id for e in events]) if not _has_nul(i)]
        memory_ids = [i for i in _unique([m.id for m in memories]) if not _has_nul(i)]
        journal = self._exec(
            conn,
            "SELECT id, workspace_id FROM events WHERE id = ANY(%s) "
            "UNION ALL SELECT id, workspace_id FROM events_archive WHERE id = ANY(%s)",
            (event_ids, event_ids),
        ).fetchall()
        stored = self._exec(
            conn, "SELECT id, workspace_id FROM memories WHERE id = ANY(%s)", (memory_ids,)
        ).fetchall()
        taken = taken_ids(
            events,
            memories,
            [(str(i), str(w)) for i, w in journal],
            [(str(i), str(w)) for i, w in stored],
        )
        if taken:
            raise IdTaken(taken)

    def _insert_memories(self, conn: Conn, memories: Sequence[Memory], now: str) -> int:
        """Insert the memories (an id already stored is skipped) and their sources, inside
        the caller's transaction; returns the memories inserted."""
        inserted = self._insert_memory_rows(conn, [_memory_row(m, now) for m in memories])
        self._insert_sources(conn, memories)
        return inserted

    def _insert_memory_rows(self, conn: Conn, rows: Sequence[Sequence[Any]]) -> int:
        if len(rows) >= COPY_MIN_ROWS:
            return self._copy_insert(
                conn, "memories", _MEMORY_INSERT_COLUMNS, rows, _STAGED_MEMORIES_SQL
            )
        return self._executemany(conn, INSERT_MEMORY_SQL, rows)

    def _copy_insert(
        self,
        conn: Conn,
        table: str,
        columns: Sequence[str],
        rows: Sequence[Sequence[Any]],
        insert_sql: str,
    ) -> int:
        """Insert many rows with one ``COPY`` into a temporary table shaped like
        ``table``'s ``columns`` plus their order, then ``insert_sql`` (which reads
        ``_stage`` in that order, so duplicates resolve as they do row by row); returns
        the rows it inserted. A statement per row costs ~0.2 ms of parsing and round
        trip; a bulk import of a million memories spent most of its time there."""
        cols = ", ".join(columns)
        self._exec(
            conn,
            f"CREATE TEMP TABLE _stage ON COMMIT DROP AS "
            f"SELECT 0::bigint AS ord, {cols} FROM {table} WITH NO DATA",
        )
        with conn.cursor() as cur, cur.copy(f"COPY _stage (ord, {cols}) FROM STDIN") as copy:
            for i, row in enumerate(rows):
                copy.write_row((i, *row))
        inserted = max(self._exec(conn, insert_sql).rowcount, 0)
        self._exec(conn, "DROP TABLE _stage")
        return inserted

    def _insert_sources(self, conn: Conn, memories: Sequence[Memory]) -> None:
        source_rows = [(m.id, event_id) for m in memories for event_id in m.source_event_ids]
        if not source_rows:
            return
        self._check_sources(conn, source_rows)
        # In order: memory_sources.seq then gives each memory's sources as they were cited.
        self._executemany(
            conn,
            "INSERT INTO memory_sources (memory_id, event_id) VALUES (%s, %s) "
            "ON CONFLICT DO NOTHING",
            source_rows,
        )

    def _check_sources(self, conn: Conn, source_rows: Sequence[tuple[str, str]]) -> None:
        # The only guard since migration 4 dropped the foreign key: a source is an event
        # in the journal or in its archive (compaction moves aged rows there).
        wanted = _unique([event_id for _, event_id in source_rows])
        found = {
            row[0]
            for row in self._exec(
                conn,
                "SELECT id FROM events WHERE id = ANY(%s) "
                "UNION ALL SELECT id FROM events_archive WHERE id = ANY(%s)",
                (wanted, wanted),
            ).fetchall()
        }
        for memory_id, event_id in source_rows:
            if event_id not in found:
                raise InvalidInput(
                    "source_event_ids",
                    f"memory {memory_id} cites event {event_id}, which is not stored; "
                    "append the event in the same call or before",
                )

    def mark_referenced(self, workspace_id: str, ids: Sequence[str], at: datetime) -> None:
        wanted = _unique(ids)
        if not wanted:
            return
        with self._write() as conn:
            # The rows are locked in id order first: two recalls of overlapping memories
            # then always lock them in the same order and never deadlock.
            self._exec(
                conn,
                "WITH hit AS (SELECT seq FROM memories WHERE workspace_id = %s "
                "AND id = ANY(%s) ORDER BY id FOR NO KEY UPDATE) "
                "UPDATE memories m SET reference_count = m.reference_count + 1, "
                "last_referenced_at = %s, updated_at = %s FROM hit WHERE m.seq = hit.seq",
                (workspace_id, wanted, ts_text(at), ts_text(utcnow())),
            )

    # -- reading ---------------------------------------------------------------------
    def get_memories(self, workspace_id: str, ids: Sequence[str]) -> list[Memory]:
        wanted = [i for i in _unique(ids) if not _has_nul(i)]
        if not wanted or _has_nul(workspace_id):
            return []
        with self._read() as conn:
            rows = self._exec(
                conn,
                f"SELECT {_MEMORY_WITH_SOURCES} FROM memories m "
                "WHERE m.workspace_id = %s AND m.id = ANY(%s)",
                (workspace_id, wanted),
            ).fetchall()
        found = {row[0]: _memory(row[:-1], row[-1]) for row in rows}
        return [found[memory_id] for memory_id in wanted if memory_id in found]

    def get_memory(self, workspace_id: str, memory_id: str) -> Memory:
        found = self.get_memories(workspace_id, [memory_id])
        if not found:
            raise NotFound(memory_id)
        return found[0]

    def get_events(self, workspace_id: str, ids: Sequence[str]) -> list[Event]:
        wanted = [i for i in _unique(ids) if not _has_nul(i)]
        if not wanted or _has_nul(workspace_id):
            return []
        with self._read() as conn:
            rows = self._exec(
                conn,
                f"SELECT {_EVENT_COLUMNS} FROM events WHERE workspace_id = %s AND id = ANY(%s)",
                (workspace_id, wanted),
            ).fetchall()
        found = {row[0]: row for row in rows}
        return [_event(found[event_id]) for event_id in wanted if event_id in found]

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
                f"{both})",
                params * 5,
            ).fetchone()
            model = self._stored_model(conn)
            version = current_version(conn)
        assert row is not None
        events, memories, active, vectors, pending = (int(v) for v in row)
        return StoreStats(
            events=events,
            memories=memories,
            active_memories=active,
            vectors=vectors,
            pending_vectors=pending,
            vector_model=None if model is None else model[0],
            vector_dim=None if model is None else model[1],
            schema_version=version,
        )

    def workspaces(self) -> list[str]:
        # A skip scan down the (workspace_id, ...) index: one probe per workspace instead
        # of DISTINCT over every memory.
        with self._read() as conn:
            rows = self._exec(
                conn,
                "WITH RECURSIVE w (ws) AS (SELECT min(workspace_id) FROM memories "
                "UNION ALL SELECT (SELECT min(workspace_id) FROM memories "
                "WHERE workspace_id > w.ws) FROM w WHERE w.ws IS NOT NULL) "
                "SELECT ws FROM w WHERE ws IS NOT NULL",
            ).fetchall()
        return [str(r[0]) for r in rows]

    def known_hashes(self, flt: ScopeFilter, hashes: Sequence[str]) -> set[str]:
        where, params = scope_where(flt, alias="m", mark="%s")
        wanted = _unique(hashes)
        if not wanted:
            return set()
        with self._read() as conn:
            rows = self._exec(
                conn,
                "SELECT DISTINCT m.content_hash FROM memories m "
                f"WHERE {where} AND m.status = 'active' AND m.content_hash = ANY(%s)",
                (*params, wanted),
            ).fetchall()
        return {str(r[0]) for r in rows}

    # -- vectors ---------------------------------------------------------------------
    def pending_vectors(self, limit: int) -> list[PendingVector]:
        """Active memories without a vector, in the order they were stored."""
        if limit <= 0:
            return []
        with self._read() as conn:
            # Reads the partial index memories_pending_vector, which holds only these rows.
            rows = self._exec(
                conn,
                "SELECT id, workspace_id, content FROM memories "
                "WHERE has_vector = 0 AND status = 'active' ORDER BY seq LIMIT %s",
                (limit,),
            ).fetchall()
        return [PendingVector(memory_id=r[0], workspace_id=r[1], content=r[2]) for r in rows]

    def _stored_model(self, conn: Conn) -> tuple[str, int] | None:
        row = self._exec(conn, "SELECT model, dim FROM memory_vectors LIMIT 1").fetchone()
        return None if row is None else (str(row[0]), int(row[1]))

    def _column_dim(self, conn: Conn) -> int | None:
        """The dimension memory_vectors.vector is typed with, None while untyped."""
        row = self._exec(conn, _COLUMN_DIM_SQL).fetchone()
        return None if row is None or int(row[0]) <= 0 else int(row[0])

    def vector_model(self) -> tuple[str, int] | None:
        with self._read() as conn:
            return self._stored_model(conn)

    def put_vectors(self, model_id: str, dim: int, rows: Sequence[tuple[str, Vector]]) -> int:
        """Store vectors (normalised here if they are not unit length already) for
        memories by id; ids with no memory are skipped. ``BadEmbedding`` for a vector of
        the wrong length or with NaN/inf values, ``ModelMismatch`` when the store holds
        vectors of another model or dimension. Returns rows written."""
        with self._write() as conn:
            return self._store_vectors(conn, model_id, dim, rows)

    def _store_vectors(
        self, conn: Conn, model_id: str, dim: int, rows: Sequence[tuple[str, Any]]
    ) -> int:
        if not model_id:
            raise InvalidInput("model_id", "required: vectors are only comparable per model")
        if dim <= 0:
            raise InvalidInput("dim", f"must be positive, got {dim}")
        indexed_at = ts_text(utcnow())
        # Sorted by memory id (stable, so a repeated id still ends with its last vector):
        # two writers of overlapping ids lock their rows in the same order.
        params = [
            (unit_vector(vector, dim), dim, model_id, indexed_at, memory_id)
            for memory_id, vector in sorted(rows, key=lambda r: r[0])
        ]
        if not params:
            return 0
        self._exec(conn, "SELECT pg_advisory_xact_lock_shared(%s)", (_VECTORS_LOCK,))
        # The column's type is read first, from the catalog: a writer that will alter the
        # table takes _SETUP_LOCK before it has locked memory_vectors in any mode, so it
        # never waits for a lock while holding one the other writer's ALTER needs.
        stored = None
        if self._column_dim(conn) != dim or (stored := self._stored_model(conn)) is None:
            self._exec(conn, "SELECT pg_advisory_xact_lock(%s)", (_SETUP_LOCK,))
            stored = self._stored_model(conn)
            if stored is None and self._column_dim(conn) != dim:
                self._type_vectors(conn, dim)
        if stored is not None and stored != (model_id, dim):
            raise ModelMismatch(stored[0], stored[1], model_id, dim)
        if len(params) >= COPY_MIN_ROWS:
            return self._copy_vectors(conn, params)
        return self._executemany(conn, _PUT_VECTOR_SQL, params)

    def _copy_vectors(self, conn: Conn, params: Sequence[tuple[Any, ...]]) -> int:
        """``_PUT_VECTOR_SQL`` for many rows: COPY them into a staging table, then one
        upsert of each id's last vector. Counts like row by row: every row whose memory
        exists, a repeated id as often as it was given."""
        _, dim, model_id, indexed_at, _ = params[0]
        self._exec(
            conn,
            "CREATE TEMP TABLE _stage ON COMMIT DROP AS "
            "SELECT 0::bigint AS ord, memory_id, vector FROM memory_vectors WITH NO DATA",
        )
        with (
            conn.cursor() as cur,
            cur.copy("COPY _stage (ord, memory_id, vector) FROM STDIN") as cp,
        ):
            for i, (vector, _dim, _model, _at, memory_id) in enumerate(params):
                cp.write_row((i, memory_id, vector))
        row = self._exec(conn, _STAGED_VECTORS_SQL, (dim, model_id, indexed_at)).fetchone()
        written = row[0] if row else 0
        self._exec(conn, "DROP TABLE _stage")
        return int(written)

    def _type_vectors(self, conn: Conn, dim: int) -> None:
        """Give the (empty) vector column its dimension and build the HNSW index."""
        self._exec(conn, "DROP INDEX IF EXISTS memory_vectors_hnsw")
        self._exec(conn, f"ALTER TABLE memory_vectors ALTER COLUMN vector TYPE vector({dim:d})")
        if dim <= HNSW_MAX_DIM:
            self._exec(
                conn,
                "CREATE INDEX IF NOT EXISTS memory_vectors_hnsw ON memory_vectors "
                "USING hnsw (vector vector_cosine_ops)",
            )

    def clear_vectors(self) -> int:
        with self._write() as conn:
            self._exec(conn, "SELECT pg_advisory_xact_lock(%s)", (_VECTORS_LOCK,))
            self._exec(conn, "LOCK TABLE memory_vectors IN ACCESS EXCLUSIVE MODE")
            row = self._exec(conn, "SELECT count(*) FROM memory_vectors").fetchone()
            dropped = int(row[0]) if row else 0
            # TRUNCATE fires no row trigger: has_vector is reset in one statement instead
            # of one trigger update per vector.
            self._exec(conn, "TRUNCATE memory_vectors")
            self._exec(conn, "UPDATE memories SET has_vector = 0 WHERE has_vector = 1")
            self._exec(conn, "DROP INDEX IF EXISTS memory_vectors_hnsw")
            self._exec(conn, "ALTER TABLE memory_vectors ALTER COLUMN vector TYPE vector")
        return dropped

    def get_vectors(self, workspace_id: str, memory_ids: Sequence[str]) -> dict[str, Vector]:
        wanted = [i for i in _unique(memory_ids) if not _has_nul(i)]
        if not wanted or _has_nul(workspace_id):
            return {}
        with self._read() as conn:
            rows = self._exec(
                conn,
                "SELECT memory_id, vector FROM memory_vectors "
                "WHERE workspace_id = %s AND memory_id = ANY(%s)",
                (workspace_id, wanted),
            ).fetchall()
        found = {str(r[0]): _array(r[1]) for r in rows}
        return {memory_id: found[memory_id] for memory_id in wanted if memory_id in found}

    def vector_matrix(self, flt: ScopeFilter) -> Vector:
        where, params = scope_where(flt, alias="m", mark="%s")
        sql = (
            "SELECT v.vector FROM memory_vectors v JOIN memories m ON m.id = v.memory_id "
            f"WHERE v.workspace_id = %s AND {where} AND m.status = 'active' ORDER BY v.seq"
        )
        args = (flt.workspace_id, *params)
        with self._read() as conn:
            if self._tracer is not None:
                self._tracer(sql, args)
            # Binary: a whole workspace's vectors, parsed from text, cost several times more.
            with conn.cursor(binary=True) as cur:
                rows = cur.execute(sql, args).fetchall()
        if not rows:
            return np.zeros((0, 0), np.float32)
        matrix: Vector = np.stack([_array(r[0]) for r in rows])
        return matrix

    # -- embedding cache -------------------------------------------------------------
    def cache_get(self, model_id: str, content_hashes: Sequence[str]) -> dict[str, Vector]:
        wanted = _unique(content_hashes)
        if not wanted:
            return {}
        with self._read() as conn:
            rows = self._exec(
                conn,
                "SELECT content_hash, vector FROM embedding_cache "
                "WHERE model = %s AND content_hash = ANY(%s)",
                (model_id, wanted),
            ).fetchall()
        return {
            str(content_hash): np.frombuffer(bytes(blob), LE_FLOAT32).astype(np.float32)
            for content_hash, blob in rows
        }

    def cache_put(self, model_id: str, items: Mapping[str, Vector]) -> None:
        created_at = ts_text(utcnow())
        rows = []
        # Sorted by hash: two processes caching overlapping texts lock rows in one order.
        for content_hash, vector in sorted(items.items(), key=lambda kv: kv[0]):
            arr = np.asarray(vector, dtype=LE_FLOAT32).reshape(-1)
            rows.append((content_hash, model_id, int(arr.size), arr.tobytes(), created_at))
        if not rows:
            return
        with self._write() as conn:
            self._executemany(
                conn,
                "INSERT INTO embedding_cache (content_hash, model, dim, vector, created_at) "
                "VALUES (%s, %s, %s, %s, %s) ON CONFLICT (content_hash, model) DO UPDATE SET "
                "dim = EXCLUDED.dim, vector = EXCLUDED.vector, created_at = EXCLUDED.created_at",
                rows,
            )

    # -- conversations ---------------------------------------------------------------
    # Messages of one instant keep the order they were stored in: ctid is that order for
    # rows never updated (a pending message; SQLite orders by rowid).
    def pending_conversations(
        self, limit: int, workspace_id: str | None = None
    ) -> list[PendingConversation]:
        if limit <= 0:
            return []
        where, params = ("AND workspace_id = %s", [workspace_id]) if workspace_id else ("", [])
        with self._read() as conn:
            rows = self._exec(
                conn,
                "SELECT workspace_id, conversation_id, count(*), min(ts), max(ts) FROM events "
                f"WHERE type = 'message' AND episode_id IS NULL {where} "
                "GROUP BY workspace_id, conversation_id "
                "ORDER BY min(ts), 1, 2 NULLS FIRST LIMIT %s",
                (*params, limit),
            ).fetchall()
        return [
            PendingConversation(ws, conv, int(n), _parse_ts(oldest), _parse_ts(newest))
            for ws, conv, n, oldest, newest in rows
        ]

    def pending_messages(self, workspace_id: str, conversation_id: str) -> list[Event]:
        with self._read() as conn:
            rows = self._exec(
                conn,
                f"SELECT {_EVENT_COLUMNS} FROM events "
                "WHERE workspace_id = %s AND conversation_id = %s AND type = 'message' "
                "AND episode_id IS NULL ORDER BY ts, ctid",
                (workspace_id, conversation_id),
            ).fetchall()
        return [_event(row) for row in rows]

    def conversation_messages(
        self, workspace_id: str, conversation_id: str, *, after: datetime, limit: int
    ) -> list[Event]:
        if limit <= 0:
            return []
        with self._read() as conn:
            rows = self._exec(
                conn,
                f"SELECT {_EVENT_COLUMNS} FROM events "
                "WHERE workspace_id = %s AND conversation_id = %s AND ts > %s "
                "AND type = 'message' ORDER BY ts, ctid LIMIT %s",
                (workspace_id, conversation_id, ts_text(after), limit),
            ).fetchall()
        return [_event(row) for row in rows]

    def close_episode(
        self,
        episode: Memory,
        message_ids: Sequence[str],
        derived: Sequence[Memory],
        keys: Mapping[str, str],
    ) -> bool:
        ws = episode.workspace_id
        for m in derived:
            if m.workspace_id != ws:
                raise InvalidInput(
                    "workspace_id", f"memory {m.id} is not of the episode's workspace {ws}"
                )
        now = ts_text(utcnow())
        wanted = _unique(message_ids)
        with self._write() as conn:
            # Tables in forget's order (events, then memories): this transaction writes
            # both, and taking memories first deadlocked with a forget holding events
            # (found under load).
            self._exec(conn, "LOCK TABLE events IN ROW EXCLUSIVE MODE")
            # The episode's row is the claim: a second closer of the same episode waits
            # for the first one's insert, then inserts nothing and changes nothing.
            if not self._exec(conn, INSERT_MEMORY_SQL, _memory_row(episode, now)).rowcount:
                return False
            found = {
                row[0]
                for row in self._exec(
                    conn,
                    "SELECT id FROM events WHERE workspace_id = %s AND type = 'message' "
                    "AND id = ANY(%s)",
                    (ws, wanted),
                ).fetchall()
            }
            missing = [i for i in wanted if i not in found]
            if missing:
                raise NotFound(missing[0])
            self._executemany(conn, INSERT_MEMORY_SQL, [_memory_row(m, now) for m in derived])
            self._insert_sources(conn, [episode, *derived])
            self._exec(
                conn,
                "UPDATE events SET episode_id = %s WHERE workspace_id = %s AND id = ANY(%s)",
                (episode.id, ws, wanted),
            )
            self._executemany(
                conn,
                "UPDATE memories SET keys = %s, updated_at = %s "
                "WHERE workspace_id = %s AND id = %s",
                [(text, now, ws, memory_id) for memory_id, text in sorted(keys.items())],
            )
        return True

    # -- diagnostics -----------------------------------------------------------------
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
        pool = self._pool.get_stats()
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
            "pool_max": self._pool.max_size,
            "pool_size": int(pool.get("pool_size", 0)),
            "pool_available": int(pool.get("pool_available", 0)),
        }
