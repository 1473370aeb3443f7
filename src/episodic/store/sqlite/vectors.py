"""SqliteStore: vectors, the embedding cache and the edges the indexer draws
(``VectorStore``; see ``episodic.store.vectors``). The indexer's claim is
``episodic.store.sqlite.claims``.

Vectors are little-endian float32 BLOBs of one model and dimension per store; the
in-process dense index (``SearchMixin._fresh_index``) picks up what is written here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from episodic.errors import InvalidInput, ModelMismatch, NotFound
from episodic.model import Candidate, ScopeFilter, utcnow
from episodic.scoring.passages import PASSAGE_CHARS
from episodic.store.dense import LE_FLOAT32, unit_vector
from episodic.store.migrations import index_text_passages
from episodic.store.rows import ts_text, unique
from episodic.store.sql import normalise_scope
from episodic.store.sqlite.connection import SqliteBase, chunks, placeholders
from episodic.store.vectors import PendingVector, Relation, Vector

if TYPE_CHECKING:
    import numpy as np
else:
    from episodic.lazy import np


class VectorsMixin(SqliteBase):
    # -- vectors ---------------------------------------------------------------------
    def pending_vectors(self, limit: int) -> list[PendingVector]:
        """Active memories without a vector, in the order they were stored."""
        if limit <= 0:
            return []
        with self._read():
            rows = self._execute(
                "SELECT id, workspace_id, content FROM memories "
                "WHERE has_vector = 0 AND status = 'active' ORDER BY seq LIMIT ?",
                (limit,),
            ).fetchall()
        return [PendingVector(memory_id=r[0], workspace_id=r[1], content=r[2]) for r in rows]

    def _stored_model(self) -> tuple[str, int] | None:
        row = self._execute("SELECT model, dim FROM memory_vectors LIMIT 1").fetchone()
        return None if row is None else (str(row[0]), int(row[1]))

    def vector_model(self) -> tuple[str, int] | None:
        with self._read():
            return self._stored_model()

    def put_vectors(self, model_id: str, dim: int, rows: Sequence[tuple[str, Vector]]) -> int:
        """Store vectors (normalised here if they are not unit length already) for
        memories by id; ids with no memory are skipped. ``BadEmbedding`` for a vector of
        the wrong length or with NaN/inf values, ``ModelMismatch`` when the store holds
        vectors of another model or dimension. Returns rows written."""
        if not model_id:
            raise InvalidInput("model_id", "required: vectors are only comparable per model")
        if dim <= 0:
            raise InvalidInput("dim", f"must be positive, got {dim}")
        indexed_at = ts_text(utcnow())
        params = [
            (
                unit_vector(vector, dim).astype(LE_FLOAT32).tobytes(),
                dim,
                model_id,
                indexed_at,
                memory_id,
            )
            for memory_id, vector in rows
        ]
        if not params:
            return 0
        with self._write():
            stored = self._stored_model()
            if stored is not None and stored != (model_id, dim):
                raise ModelMismatch(stored[0], stored[1], model_id, dim)
            # REPLACE of a re-embedded memory gets a fresh, higher seq: readers pick it up
            # incrementally and overwrite the old row in place.
            written = self._executemany(
                "INSERT OR REPLACE INTO memory_vectors "
                "(memory_id, workspace_id, vector, dim, model, indexed_at) "
                "SELECT id, workspace_id, ?, ?, ?, ? FROM memories WHERE id = ?",
                params,
            ).rowcount
        return int(written)

    def put_passages(
        self, dim: int, rows: Sequence[tuple[str, Sequence[tuple[int, int, Vector]]]]
    ) -> int:
        """Replace the passages of memories by id: each ``(start, stop, vector)`` the
        characters [start, stop) of its content and their vector (normalised here). Ids
        with no memory are skipped. Returns passages written."""
        if dim <= 0:
            raise InvalidInput("dim", f"must be positive, got {dim}")
        params = [
            (n, start, stop, unit_vector(vector, dim).astype(LE_FLOAT32).tobytes(), memory_id)
            for memory_id, spans in rows
            for n, (start, stop, vector) in enumerate(spans, start=1)
        ]
        ids = unique([memory_id for memory_id, _ in rows])
        if not ids:
            return 0
        with self._write():
            for chunk in chunks(ids):
                self._execute(
                    f"DELETE FROM memory_passages WHERE memory_id IN ({placeholders(len(chunk))})",
                    tuple(chunk),
                )
            written = self._executemany(
                "INSERT INTO memory_passages "
                "(memory_id, n, workspace_id, start_char, stop_char, vector) "
                "SELECT id, ?, workspace_id, ?, ?, ? FROM memories WHERE id = ?",
                [(n, start, stop, blob, memory_id) for n, start, stop, blob, memory_id in params],
            ).rowcount
        return int(written)

    def clear_vectors(self) -> int:
        with self._write():
            dropped = self._execute("DELETE FROM memory_vectors").rowcount
            self._dense.clear()
        return int(dropped)

    def rebuild_text_passages(self) -> int:
        with self._write():
            self._execute("DELETE FROM passages_fts")
            rows = self._execute(
                f"SELECT seq, content FROM memories WHERE length(content) > {PASSAGE_CHARS}"
            )
            return index_text_passages(self._conn, rows)

    def get_vectors(self, workspace_id: str, memory_ids: Sequence[str]) -> dict[str, Vector]:
        found: dict[str, Vector] = {}
        with self._read():
            for chunk in chunks(unique(memory_ids)):
                for memory_id, blob in self._execute(
                    "SELECT memory_id, vector FROM memory_vectors WHERE workspace_id = ? "
                    f"AND memory_id IN ({placeholders(len(chunk))})",
                    (workspace_id, *chunk),
                ):
                    found[memory_id] = np.frombuffer(blob, LE_FLOAT32).astype(np.float32)
        return found

    # -- embedding cache -------------------------------------------------------------
    def cache_get(self, model_id: str, content_hashes: Sequence[str]) -> dict[str, Vector]:
        found: dict[str, Vector] = {}
        with self._read():
            for chunk in chunks(unique(content_hashes)):
                for content_hash, blob in self._execute(
                    "SELECT content_hash, vector FROM embedding_cache WHERE model = ? "
                    f"AND content_hash IN ({placeholders(len(chunk))})",
                    (model_id, *chunk),
                ):
                    found[content_hash] = np.frombuffer(blob, LE_FLOAT32).astype(np.float32)
        return found

    def cache_put(self, model_id: str, items: Mapping[str, Vector]) -> None:
        created_at = ts_text(utcnow())
        rows = []
        for content_hash, vector in items.items():
            arr = np.asarray(vector, dtype=LE_FLOAT32).reshape(-1)
            rows.append((content_hash, model_id, int(arr.size), arr.tobytes(), created_at))
        if not rows:
            return
        with self._write():
            self._executemany(
                "INSERT OR REPLACE INTO embedding_cache "
                "(content_hash, model, dim, vector, created_at) VALUES (?, ?, ?, ?, ?)",
                rows,
            )

    # -- similar edges (seed 000: linked on index) ----------------------------------
    def search_dense_many(
        self,
        flt: ScopeFilter,
        queries: Vector,
        limit: int,
        min_score: float | None = None,
        exclude: Sequence[Sequence[str]] | None = None,
    ) -> list[list[Candidate]]:
        scope = normalise_scope(flt)
        index = self._fresh_index(flt.workspace_id)
        return index.search_many(flt, scope, queries, limit, min_score, exclude)

    def add_relations(self, workspace_id: str, edges: Sequence[Relation]) -> int:
        if not edges:
            return 0
        ends = unique([e.src for e in edges] + [e.dst for e in edges])
        now = ts_text(utcnow())
        with self._write():
            known = {
                row[0]
                for chunk in chunks(ends)
                for row in self._execute(
                    f"SELECT id FROM memories WHERE +workspace_id = ? "
                    f"AND id IN ({placeholders(len(chunk))})",
                    (workspace_id, *chunk),
                )
            }
            for e in edges:
                for end in (e.src, e.dst):
                    if end not in known:
                        raise NotFound(end)
            return self._insert_edges(edges, now)

    def _insert_edges(self, edges: Sequence[Relation], now: str) -> int:
        """Upsert edges inside the caller's write (ends already checked by the caller)."""
        before = self._conn.total_changes
        self._executemany(
            "INSERT INTO memory_relations (src, dst, relation, weight, created_at) "
            "VALUES (?, ?, ?, ?, ?) ON CONFLICT (src, dst, relation) "
            "DO UPDATE SET weight = excluded.weight",
            [(e.src, e.dst, e.relation, float(e.weight), now) for e in edges],
        )
        return self._conn.total_changes - before
