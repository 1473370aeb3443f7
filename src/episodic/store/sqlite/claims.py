"""SqliteStore: the indexer's claim on pending memories (part of ``VectorStore``).

One writer per file: SQLite needs no claim. Several indexers on one file (a server and
``episodic index``) may embed the same row twice; the second store of its vector
replaces the first, which is harmless. PostgreSQL, shared by many processes, claims rows
(``episodic.store.postgres.claims``).
"""

from __future__ import annotations

from collections.abc import Callable

from episodic.store.sqlite.connection import SqliteBase
from episodic.store.vectors import PendingVector, Vector


class ClaimsMixin(SqliteBase):
    def index_pending(
        self,
        limit: int,
        model_id: str,
        dim: int,
        embed: Callable[[list[str]], Vector],
    ) -> list[tuple[PendingVector, Vector]]:
        # One writer per file: no claim needed, and embedding outside the write
        # transaction keeps ingest from waiting on the model.
        pending = self.pending_vectors(limit)
        if not pending:
            return []
        vectors = embed([p.content for p in pending])
        rows = [(p.memory_id, vectors[i]) for i, p in enumerate(pending)]
        self.put_vectors(model_id, dim, rows)
        return [(p, vectors[i]) for i, p in enumerate(pending)]
