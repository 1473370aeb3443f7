"""PostgresStore: vectors, the embedding cache and the edges the indexer draws
(``VectorStore``; see ``episodic.store.vectors``). The indexer's claim is
``episodic.store.postgres.claims``; the batched dense search it links with is
``SearchMixin.search_dense_many``.

``memory_vectors.vector`` has no fixed dimension until the first vectors are stored; that
first store types the column (``vector(dim)``) and builds the HNSW index. Every vector
write holds ``_VECTORS_LOCK`` shared, which ``clear_vectors`` takes exclusively, so a
reindex never interleaves with a write of the old model. A write that finds no vectors
stored, or the column typed for another dimension, takes ``_SETUP_LOCK`` exclusively
before it decides the model, so two processes starting on an empty store cannot store two
models (or both alter the column): the second waits, sees the first one's model and is
refused like on SQLite. Re-storing a memory's vector replaces it (``ON CONFLICT
(memory_id) DO UPDATE``): a memory another worker has just vectored is neither an error
nor a second row.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from pgvector import Vector as PgVector

from episodic.errors import InvalidInput, ModelMismatch, NotFound
from episodic.model import utcnow
from episodic.store.dense import LE_FLOAT32, unit_vector
from episodic.store.migrations import PG_TEXT_PASSAGES_BACKFILL
from episodic.store.postgres.connection import Conn, _has_nul
from episodic.store.postgres.pgvector import HNSW_MAX_DIM as HNSW_MAX_DIM  # its old home
from episodic.store.postgres.pgvector import PgvectorMixin
from episodic.store.rows import ts_text, unique
from episodic.store.vectors import PendingVector, Relation, Vector

# pg_advisory_xact_lock keys (the migration lock is "epmi").
_VECTORS_LOCK = 0x6570_7663  # "epvc": shared by vector writes, exclusive for clear_vectors
_SETUP_LOCK = 0x6570_7673  # "epvs": deciding the model of an empty vector table
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
COLUMN_DIM_SQL = (
    "SELECT atttypmod FROM pg_attribute "
    "WHERE attrelid = 'memory_vectors'::regclass AND attname = 'vector'"
)


def array_of(value: PgVector) -> Vector:
    """A vector column's value (pgvector's ``Vector``) as a float32 array."""
    out: Vector = np.array(value.to_numpy(), dtype=np.float32)
    return out


class VectorsMixin(PgvectorMixin):
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
        row = self._exec(conn, COLUMN_DIM_SQL).fetchone()
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
        if self._bulk(len(params)):
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
        # Binary: pgvector's text form costs a float formatted per dimension, which made
        # COPY about 35x slower than the binary form (2.6k against 95k rows/s of 384-d
        # vectors) and the bulk load's bound.
        with (
            conn.cursor() as cur,
            cur.copy("COPY _stage (ord, memory_id, vector) FROM STDIN (FORMAT BINARY)") as cp,
        ):
            cp.set_types(["int8", "text", "vector"])
            for i, (vector, _dim, _model, _at, memory_id) in enumerate(params):
                cp.write_row((i, memory_id, vector))
        row = self._exec(conn, _STAGED_VECTORS_SQL, (dim, model_id, indexed_at)).fetchone()
        written = row[0] if row else 0
        self._exec(conn, "DROP TABLE _stage")
        return int(written)

    def _type_vectors(self, conn: Conn, dim: int) -> None:
        """Give the (empty) vector column its dimension and build the HNSW index (on
        halfvec where pgvector has it; see ``episodic.store.postgres.pgvector``)."""
        self._exec(conn, "DROP INDEX IF EXISTS memory_vectors_hnsw")
        self._exec(conn, f"ALTER TABLE memory_vectors ALTER COLUMN vector TYPE vector({dim:d})")
        self.build_index(conn, dim)

    def put_passages(
        self, dim: int, rows: Sequence[tuple[str, Sequence[tuple[int, int, Vector]]]]
    ) -> int:
        """Replace the passages of memories by id (see ``VectorStore.put_passages``)."""
        if dim <= 0:
            raise InvalidInput("dim", f"must be positive, got {dim}")
        ids = sorted({memory_id for memory_id, _ in rows})
        if not ids:
            return 0
        params = [
            (n, start, stop, unit_vector(vector, dim), memory_id)
            for memory_id, spans in sorted(rows, key=lambda r: r[0])
            for n, (start, stop, vector) in enumerate(spans, start=1)
        ]
        with self._write() as conn:
            self._exec(conn, "DELETE FROM memory_passages WHERE memory_id = ANY(%s)", (ids,))
            if not params:
                return 0
            return self._executemany(
                conn,
                "INSERT INTO memory_passages "
                "(memory_id, n, workspace_id, start_char, stop_char, vector) "
                "SELECT id, %s, workspace_id, %s, %s, %s FROM memories WHERE id = %s "
                "FOR KEY SHARE",
                params,
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
            self._exec(conn, "TRUNCATE memory_passages")
            self._exec(conn, "UPDATE memories SET has_vector = 0 WHERE has_vector = 1")
            self._exec(conn, "DROP INDEX IF EXISTS memory_vectors_hnsw")
            self._exec(conn, "ALTER TABLE memory_vectors ALTER COLUMN vector TYPE vector")
        # After the commit: a search meanwhile may have cached the index just dropped.
        self.forget_index()
        return dropped

    def rebuild_text_passages(self) -> int:
        with self._write() as conn:
            self._exec(conn, "DELETE FROM memory_text_passages")
            return int(self._exec(conn, PG_TEXT_PASSAGES_BACKFILL).rowcount)

    def get_vectors(self, workspace_id: str, memory_ids: Sequence[str]) -> dict[str, Vector]:
        wanted = [i for i in unique(memory_ids) if not _has_nul(i)]
        if not wanted or _has_nul(workspace_id):
            return {}
        with self._read() as conn:
            rows = self._exec(
                conn,
                "SELECT memory_id, vector FROM memory_vectors "
                "WHERE workspace_id = %s AND memory_id = ANY(%s)",
                (workspace_id, wanted),
            ).fetchall()
        found = {str(r[0]): array_of(r[1]) for r in rows}
        return {memory_id: found[memory_id] for memory_id in wanted if memory_id in found}

    # -- embedding cache -------------------------------------------------------------
    def cache_get(self, model_id: str, content_hashes: Sequence[str]) -> dict[str, Vector]:
        wanted = unique(content_hashes)
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

    # -- similar edges (seed 000: linked on index) ----------------------------------
    def add_relations(self, workspace_id: str, edges: Sequence[Relation]) -> int:
        if not edges:
            return 0
        ends = unique([e.src for e in edges] + [e.dst for e in edges])
        # One row per edge: an INSERT ... ON CONFLICT may not touch a row twice. The last
        # weight given wins, as it would edge by edge.
        weights = {(e.src, e.dst, e.relation): float(e.weight) for e in edges}
        with self._write() as conn:
            # KEY SHARE: a memory checked here cannot be deleted before its edges exist.
            known = {
                row[0]
                for row in self._exec(
                    conn,
                    "SELECT id FROM memories WHERE workspace_id = %s AND id = ANY(%s) "
                    "FOR KEY SHARE",
                    (workspace_id, ends),
                ).fetchall()
            }
            for e in edges:
                for end in (e.src, e.dst):
                    if end not in known:
                        raise NotFound(end)
            # In key order: two writers of overlapping edges lock them in the same order.
            keys = sorted(weights)
            cur = self._exec(
                conn,
                "INSERT INTO memory_relations (src, dst, relation, weight, created_at) "
                "SELECT e.src, e.dst, e.relation, e.weight, %s FROM unnest(%s::text[], "
                "%s::text[], %s::text[], %s::float8[]) AS e(src, dst, relation, weight) "
                "ON CONFLICT (src, dst, relation) DO UPDATE SET weight = excluded.weight",
                (
                    ts_text(utcnow()),
                    [k[0] for k in keys],
                    [k[1] for k in keys],
                    [k[2] for k in keys],
                    [weights[k] for k in keys],
                ),
            )
            return int(cur.rowcount)
