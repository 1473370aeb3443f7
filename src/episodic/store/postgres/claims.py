"""PostgresStore: work shared by several processes, claimed row by row.

Several ``episodic index`` / ``episodic serve`` processes may sweep one database. Each
claims a batch of pending memories with a transaction-scoped advisory lock per row (keyed
by the row's ``seq``), tried and never waited for: another worker skips the claimed rows
and takes the next ones, and a worker that dies mid-batch (even by SIGKILL) loses its
connection, which releases its claims for the others. Nothing is marked done before its
vector is committed, so no memory is missed and none is stored twice.

The claim is held through its batch's embedding (seconds on a busy machine), so it takes
no lock on the rows themselves: with ``FOR UPDATE`` a recall's reference count bump on a
memory being indexed, a forget (which locks the tables) and every append queued behind
that forget all waited for the model. The rows are locked only for the store at the end,
in one short statement, and a row forgotten, archived, indexed or rewritten meanwhile is
left out of the store (its vector would describe text that is no longer there).
"""

from __future__ import annotations

from collections.abc import Callable

from episodic.store.postgres.connection import CLAIM_LOCK, PgBase
from episodic.store.vectors import PendingVector, Vector

# A worker looks for unclaimed rows among this many times its batch of the oldest
# pending ones: enough for a dozen workers sweeping side by side.
CLAIM_WINDOW = 16


class ClaimsMixin(PgBase):
    def index_pending(
        self,
        limit: int,
        model_id: str,
        dim: int,
        embed: Callable[[list[str]], Vector],
    ) -> list[tuple[PendingVector, Vector]]:
        if limit <= 0:
            return []
        with self._write() as conn:
            # The LIMIT in the subquery keeps the planner from trying the lock on every
            # pending row; the outer LIMIT stops trying once the batch is full. Two seqs
            # 2^31 apart share a key: the later one just waits for the next sweep.
            claimed = [
                int(r[0])
                for r in self._exec(
                    conn,
                    "SELECT seq FROM (SELECT seq FROM memories"
                    " WHERE has_vector = 0 AND status = 'active' ORDER BY seq LIMIT %s) c"
                    " WHERE pg_try_advisory_xact_lock(%s, (seq %% 2147483647)::int) LIMIT %s",
                    (limit * CLAIM_WINDOW, CLAIM_LOCK, limit),
                ).fetchall()
            ]
            if not claimed:
                return []
            # Read again, in a statement that starts after the locks were taken: a worker
            # that committed these rows between the search and the lock is seen now.
            rows = self._exec(
                conn,
                "SELECT id, workspace_id, content FROM memories"
                " WHERE seq = ANY(%s) AND has_vector = 0 AND status = 'active' ORDER BY seq",
                (claimed,),
            ).fetchall()
            if not rows:
                return []
            pending = [PendingVector(str(r[0]), str(r[1]), str(r[2])) for r in rows]
            vectors = embed([p.content for p in pending])
            current = {
                (str(r[0]), str(r[1]))
                for r in self._exec(
                    conn,
                    "SELECT id, content FROM memories WHERE id = ANY(%s)"
                    " AND has_vector = 0 AND status = 'active' ORDER BY id FOR NO KEY UPDATE",
                    ([p.memory_id for p in pending],),
                ).fetchall()
            }
            done = [
                (p, vectors[i])
                for i, p in enumerate(pending)
                if (p.memory_id, p.content) in current
            ]
            self._store_vectors(conn, model_id, dim, [(p.memory_id, v) for p, v in done])
        return done
