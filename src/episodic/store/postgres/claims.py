"""PostgresStore: work shared by several processes, claimed row by row.

Several ``episodic index`` / ``episodic serve`` processes may sweep one database. Each
claims pending memories with ``FOR UPDATE SKIP LOCKED`` inside the transaction that also
stores their vectors: another worker skips the locked rows and takes the next ones, and a
worker that dies mid-batch (even by SIGKILL) loses its connection, which rolls the
transaction back and releases the rows for the others. Nothing is marked done before its
vector is committed, so no memory is missed and none is stored twice.

A claim is held through its batch's embedding (seconds on a busy machine), and forget
locks the journal and memory tables in EXCLUSIVE mode, which has to wait for it; every
append queued behind that waiting forget, each holding a pooled connection, until the
pool ran dry (503s with 16 HTTP clients). So a claim first *tries* ``FORGET_LOCK``
shared, and forget takes it exclusively before its table lock: a forget waits only for
the batches already being embedded, no new one starts meanwhile (the sweeper finds
nothing this round and comes back), and appends never queue behind a long wait.
"""

from __future__ import annotations

from collections.abc import Callable

from episodic.store.base import PendingVector, Vector
from episodic.store.postgres.connection import FORGET_LOCK, PgBase


class ClaimsMixin(PgBase):
    def index_pending(
        self,
        limit: int,
        model_id: str,
        dim: int,
        embed: Callable[[list[str]], Vector],
    ) -> list[tuple[PendingVector, Vector]]:
        with self._write() as conn:
            free = self._exec(
                conn, "SELECT pg_try_advisory_xact_lock_shared(%s)", (FORGET_LOCK,)
            ).fetchone()
            if not free or not free[0]:
                return []  # a forget is waiting: claim nothing until it is done
            rows = self._exec(
                conn,
                "SELECT id, workspace_id, content FROM memories"
                " WHERE has_vector = 0 AND status = 'active'"
                " ORDER BY seq LIMIT %s FOR UPDATE SKIP LOCKED",
                (limit,),
            ).fetchall()
            if not rows:
                return []
            pending = [PendingVector(str(r[0]), str(r[1]), str(r[2])) for r in rows]
            # The model runs while the rows stay locked: that is the claim.
            vectors = embed([p.content for p in pending])
            self._store_vectors(
                conn, model_id, dim, [(p.memory_id, vectors[i]) for i, p in enumerate(pending)]
            )
        return [(p, vectors[i]) for i, p in enumerate(pending)]
