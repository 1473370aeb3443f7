"""SqliteStore: the recall legs (dense, recent, neighbours), relations one edge away,
and what a recall writes back (``SearchStore``; see ``episodic.store.search``). The BM25
leg is ``episodic.store.sqlite.sparse``.

The dense leg scans an in-process numpy matrix per workspace (``episodic.store.dense``);
each search first asks SQLite, cheaply, whether anything changed since it last looked
(``PRAGMA data_version`` sees commits of other connections, ``total_changes`` this one's;
both are per connection, so each connection's last values are kept) and then loads only
the vectors written since, or the whole workspace again when rows were deleted or changed
in place (see ``episodic.store.migrations`` for the bookkeeping). Refreshes run one at a
time, each on a snapshot taken inside that turn, so a refresh never goes back to an older
state than the last one loaded; searches share the index, which locks itself while rows
go in (see ``DenseIndex``).
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any

from episodic.model import Candidate, Memory, ScopeFilter, utcnow
from episodic.store.dense import DenseIndex, DenseRows
from episodic.store.passages import (
    PASSAGE_DEPTH,
    PASSAGE_SEP,
    PassageIndex,
    merge_dense,
    passage_key,
)
from episodic.store.rows import parse_ts, review_row, ts_text, unique
from episodic.store.search import RankRow
from episodic.store.sql import REVIEW_INSERT_COLUMNS, live_where, normalise_scope, scope_where
from episodic.store.sqlite.connection import IN_CHUNK, SqliteBase, placeholders
from episodic.store.upkeep import ReviewRequest
from episodic.store.vectors import Vector

# A recall runs its keyword leg beside its dense leg (on a helper thread) only where the
# workspace's dense index holds at least this many vectors, passages included. Both legs
# run in this process: handing one over costs a thread's wake-up, and the two legs then
# take turns at the GIL for their Python parts. On LoCoMo's and BEAM's workspaces (dense
# legs of 0.2-0.8 ms) one leg after the other spent 0.3-0.45 ms less CPU a recall, and
# 0.4-0.6 ms less wall time on average when recalls follow one another (2 cores, load
# 3-4; benchmarks/README.md). One thread's scan of 10,000 vectors of 384 dimensions takes
# ~0.4 ms, about what the hand-over costs: from there on the other leg runs beside it.
LEGS_APART_VECTORS = 10_000


class SearchMixin(SqliteBase):
    def legs_apart(self, workspace_id: str) -> bool:
        if not self.parallel_reads:
            return False
        with self._dense_lock:
            index = self._dense.get(workspace_id)
            passages = self._dense.get(f"{workspace_id}{PASSAGE_SEP}passages")
        if index is None:
            # Not searched yet in this process: its first dense leg loads every vector,
            # the slowest there is.
            return True
        return len(index) + (len(passages) if passages is not None else 0) >= LEGS_APART_VECTORS

    def reading(self) -> AbstractContextManager[None]:
        # Reads inside a transaction of this thread run in it (``_read``).
        return self._read(search=True)

    # -- dense ------------------------------------------------------------------------
    def search_dense(self, flt: ScopeFilter, query: Vector, limit: int) -> list[Candidate]:
        scope = normalise_scope(flt)
        if limit <= 0:
            return []
        index = self._fresh_index(flt.workspace_id)
        passages = self._fresh_passages(flt.workspace_id)
        if not len(passages):
            return index.search(flt, scope, query, limit)
        # One query, two indexes: normalised once.
        q = index.query_vector(query) if index.dim is not None else passages.query_vector(query)
        found = index.search_pairs(flt, scope, q, limit, unit=True)
        rows = passages.best(flt, scope, q, limit * PASSAGE_DEPTH)
        return merge_dense(found, rows, limit)

    def _fresh_passages(self, workspace_id: str) -> PassageIndex:
        """The workspace's passage index, brought up to date like ``_fresh_index`` (which
        must run first: it moves the epoch). Passages are only added, or deleted with a
        bump of the workspace's generation, so new rows load incrementally."""
        key = f"{workspace_id}{PASSAGE_SEP}passages"
        with self._dense_lock:
            # Up to date with what ``_fresh_index`` just saw: no read needed.
            index = self._dense.get(key)
            if isinstance(index, PassageIndex) and index.epoch == self._epoch:
                return index
        with self._read(search=True), self._dense_lock:
            index = self._dense.get(key)
            if isinstance(index, PassageIndex) and index.epoch == self._epoch:
                return index
            generation, max_seq = self._execute(
                "SELECT (SELECT generation FROM vector_generations WHERE workspace_id = ?), "
                "(SELECT max(rowid) FROM memory_passages WHERE workspace_id = ?)",
                (workspace_id, workspace_id),
            ).fetchone()
            generation, max_seq = int(generation or 0), int(max_seq or 0)
            if (
                not isinstance(index, PassageIndex)
                or index.generation != generation
                or max_seq < index.max_seq
            ):
                index = PassageIndex()
                self._load_passages(index, workspace_id, after=0)
            elif max_seq > index.max_seq:
                self._load_passages(index, workspace_id, after=index.max_seq)
            index.generation, index.max_seq, index.epoch = generation, max_seq, self._epoch
            self._dense[key] = index
            return index

    def _load_passages(self, index: PassageIndex, workspace_id: str, *, after: int) -> None:
        records = self._execute(
            "SELECT p.memory_id, p.n, p.start_char, p.stop_char, p.vector, v.model, "
            "m.agent_id, m.crew_id, m.resource_id, m.conversation_id, m.base_importance, "
            "m.status, m.type "
            "FROM memory_passages p JOIN memory_vectors v ON v.memory_id = p.memory_id "
            "JOIN memories m ON m.id = p.memory_id "
            "WHERE p.workspace_id = ? AND m.workspace_id = ? AND p.rowid > ? ORDER BY p.rowid",
            (workspace_id, workspace_id, after),
        ).fetchall()
        rows = []
        for memory_id, n, start, stop, *rest in records:
            key = passage_key(memory_id, n)
            index.spans[key] = (memory_id, int(start), int(stop))
            rows.append((key, *rest))
        index.upsert(DenseRows.from_records(rows))

    def _fresh_index(self, workspace_id: str) -> DenseIndex:
        """The workspace's dense index, brought up to date with every committed write.

        Costs one PRAGMA when nothing was written anywhere since the last search, plus two
        index lookups when something was; loads rows only when this workspace's vectors
        changed."""
        with self._read(search=True), self._dense_lock:
            conn = self._conn
            data_version = int(self._execute("PRAGMA data_version").fetchone()[0])
            stamp = (data_version, conn.total_changes)
            if stamp != self._seen_stamps.get(conn):
                self._seen_stamps[conn] = stamp
                self._epoch += 1
            index = self._dense.get(workspace_id)
            if index is not None and index.epoch == self._epoch:
                return index
            generation, max_seq = self._execute(
                "SELECT (SELECT generation FROM vector_generations WHERE workspace_id = ?), "
                "(SELECT max(seq) FROM memory_vectors WHERE workspace_id = ?)",
                (workspace_id, workspace_id),
            ).fetchone()
            generation, max_seq = int(generation or 0), int(max_seq or 0)
            if index is None or index.generation != generation or max_seq < index.max_seq:
                # A new index, swapped in whole: searches still on the old one finish there.
                index = DenseIndex()
                index.upsert(self._dense_rows(workspace_id, after_seq=0))
            elif max_seq > index.max_seq:
                index.upsert(self._dense_rows(workspace_id, after_seq=index.max_seq))
            index.generation, index.max_seq, index.epoch = generation, max_seq, self._epoch
            self._dense[workspace_id] = index
            return index

    def _dense_rows(self, workspace_id: str, *, after_seq: int) -> DenseRows:
        return DenseRows.from_records(
            self._execute(
                "SELECT v.memory_id, v.vector, v.model, m.agent_id, m.crew_id, m.resource_id, "
                "m.conversation_id, m.base_importance, m.status, m.type, "
                # json_valid first: an old row's payload may not be JSON at all.
                "CASE WHEN json_valid(m.payload) THEN CASE WHEN "
                "json_type(m.payload, '$.learning_type') = 'text' "
                "THEN json_extract(m.payload, '$.learning_type') END END "
                "FROM memory_vectors v JOIN memories m ON m.id = v.memory_id "
                "WHERE v.workspace_id = ? AND m.workspace_id = ? AND v.seq > ? "
                "ORDER BY v.seq",
                (workspace_id, workspace_id, after_seq),
            ).fetchall()
        )

    # -- recent and the conversation around a hit ----------------------------------
    def search_recent(
        self,
        flt: ScopeFilter,
        limit: int,
        *,
        start: datetime | None = None,
        end: datetime | None = None,
        types: Sequence[str] | None = None,
    ) -> list[Candidate]:
        where, params = live_where(flt, alias="m")
        if limit <= 0 or (types is not None and not types):
            return []
        bounds = ""
        if types is not None:
            bounds += f" AND m.type IN ({placeholders(len(types))})"
            params.extend(types)
        if start is not None:
            bounds += " AND m.ts >= ?"
            params.append(ts_text(start))
        if end is not None:
            bounds += " AND m.ts < ?"
            params.append(ts_text(end))
        with self._read():
            rows = self._execute(
                f"SELECT m.id, m.ts FROM memories m WHERE {where}"
                f"{bounds} ORDER BY m.ts DESC, m.seq DESC LIMIT ?",
                (*params, limit),
            ).fetchall()
        return [
            Candidate(memory_id=memory_id, score=parse_ts(ts).timestamp(), rank=rank)
            for rank, (memory_id, ts) in enumerate(rows, start=1)
        ]

    def neighbours(
        self, flt: ScopeFilter, ids: Sequence[str], radius: int
    ) -> dict[str, list[tuple[str, int]]]:
        if radius <= 0 or not ids:
            return {}
        wanted = unique(ids)
        where, params = scope_where(flt, alias="m")
        # One statement for every anchor, a row per neighbour: each side is a correlated
        # list of the turns' keys, walking the conversation's index, and the anchors come
        # once more alone (an anchor without neighbours still has its entry). Rows, not
        # JSON: decoding forty small JSON arrays cost a recall more than the statement.
        # The anchors are looked up by id once, into a materialised table the three parts
        # read (three lookups each cost the statement a sixth more).
        # "+m.status": walk the conversation's own index, not the workspace's timeline.
        # "+m.type": a turn's neighbours are the turns around it, not the episodes and
        # entries made from them.
        side = (
            "SELECT a.id, {sign}, n.id, n.ts, n.seq FROM a JOIN memories n "
            f"ON n.seq IN (SELECT m.seq FROM memories m WHERE {where} "
            "AND m.conversation_id = a.conversation_id AND +m.status = 'active' "
            "AND +m.type = a.type AND (m.ts, m.seq) {op} (a.ts, a.seq) "
            "ORDER BY m.ts {order}, m.seq {order} LIMIT ?)"
        )
        anchors = (
            "WITH a AS MATERIALIZED (SELECT id, seq, ts, type, conversation_id FROM memories "
            f"WHERE +workspace_id = ? AND id IN ({placeholders(len(wanted))}) "
            "AND conversation_id IS NOT NULL) SELECT a.id, 0, NULL, NULL, NULL FROM a"
        )
        before = side.format(sign=-1, op="<", order="DESC")
        after = side.format(sign=1, op=">", order="ASC")
        with self._read():
            rows = self._execute(
                f"{anchors} UNION ALL {before} UNION ALL {after}",
                (flt.workspace_id, *wanted, *params, radius, *params, radius),
            ).fetchall()
        found: dict[str, list[tuple[str, int]]] = {}
        sides: dict[tuple[str, int], list[tuple[str, int, str]]] = {}
        for memory_id, sign, neighbour, ts, seq in rows:
            if sign == 0:
                found[memory_id] = []
            else:
                sides.setdefault((memory_id, sign), []).append((ts, seq, neighbour))
        # Before the anchor nearest first in descending time (negative offsets), after it
        # ascending; the order is restored here, as a list subquery keeps none.
        for sign in (-1, 1):
            for memory_id in found:
                near = sides.get((memory_id, sign))
                if near:
                    near.sort(reverse=sign < 0)
                    found[memory_id] += [
                        (n[2], sign * offset) for offset, n in enumerate(near, start=1)
                    ]
        return found

    def longest(self, workspace_id: str) -> int:
        with self._read():
            row = self._execute(
                "SELECT max(chars) FROM memory_lengths WHERE workspace_id = ?", (workspace_id,)
            ).fetchone()
        return int(row[0] or 0)

    def memories_and_longest(
        self, workspace_id: str, ids: Sequence[str]
    ) -> tuple[list[Memory], int]:
        # Two statements in one snapshot: in process, the longest is one index lookup
        # (~10 us), and the rows' statement stays ``get_memories``' own.
        with self._read():
            return self.get_memories(workspace_id, ids), self.longest(workspace_id)

    def rank_rows(self, workspace_id: str, ids: Sequence[str]) -> dict[str, RankRow]:
        wanted = unique(ids)
        found: dict[str, RankRow] = {}
        with self._read():
            for start in range(0, len(wanted), IN_CHUNK):
                chunk = wanted[start : start + IN_CHUNK]
                for memory_id, importance, agent, crew, ts, chars in self._execute(
                    # No column of the text's: a long memory's text lies in overflow
                    # pages, and its length is a row of memory_lengths.
                    "SELECT m.id, m.importance, m.agent_id, m.crew_id, m.ts, l.chars "
                    "FROM memories m LEFT JOIN memory_lengths l ON l.memory_id = m.id "
                    f"WHERE +m.workspace_id = ? AND m.id IN ({placeholders(len(chunk))})",
                    (workspace_id, *chunk),
                ):
                    found[memory_id] = RankRow(
                        memory_id, importance, agent, crew, parse_ts(ts), chars
                    )
        return found

    def texts_of(self, workspace_id: str, ids: Sequence[str]) -> dict[str, str]:
        return self._column_of(workspace_id, unique(ids), "content")

    def conversations_of(self, workspace_id: str, ids: Sequence[str]) -> dict[str, str | None]:
        wanted = unique(ids)
        found: dict[str, str | None] = {}
        with self._dense_lock:
            index = self._dense.get(workspace_id)
        if isinstance(index, DenseIndex) and index.epoch == self._epoch:
            # The dense index holds every embedded memory's conversation, as of the last
            # look at the database (the dense leg's, in a recall); a changed conversation
            # reloads it. Only memories without a vector are read here.
            found = index.conversations(wanted)
            wanted = [i for i in wanted if i not in found]
        if wanted:
            found.update(self._column_of(workspace_id, wanted, "conversation_id"))
        return found

    def _column_of(self, workspace_id: str, wanted: Sequence[str], column: str) -> dict[str, Any]:
        """One column of the memories of ``wanted`` (ids, each once) in the workspace, by
        id (``column`` is one of this class's own names, never a caller's)."""
        found: dict[str, Any] = {}
        with self._read():
            for start in range(0, len(wanted), IN_CHUNK):
                chunk = wanted[start : start + IN_CHUNK]
                found.update(
                    self._execute(
                        f"SELECT id, {column} FROM memories WHERE +workspace_id = ? "
                        f"AND id IN ({placeholders(len(chunk))})",
                        (workspace_id, *chunk),
                    ).fetchall()
                )
        return found

    # -- the memory graph --------------------------------------------------------------
    def related(
        self, flt: ScopeFilter, ids: Sequence[str], relation: str = "similar"
    ) -> dict[str, list[tuple[str, float]]]:
        wanted = unique(ids)
        if not wanted:
            return {}
        where, params = scope_where(flt, alias="m")
        marks = placeholders(len(wanted))
        found: dict[str, list[tuple[str, float]]] = {}
        ws = flt.workspace_id
        with self._read():
            # Edges point from the newer memory to the older; both directions are related.
            # Both ends are joined to memories so neither can be another workspace's.
            # CROSS JOIN keeps the edges as the outer loop: left to itself the planner may
            # walk every active memory of the workspace instead (tens of ms at 1.5k).
            rows = self._execute(
                f"SELECT r.src, r.dst, r.weight FROM memory_relations r "
                f"CROSS JOIN memories a ON a.id = r.src AND a.workspace_id = ? "
                f"CROSS JOIN memories m ON m.id = r.dst AND m.status = 'active' AND {where} "
                f"WHERE r.relation = ? AND r.src IN ({marks}) "
                f"UNION ALL SELECT r.dst, r.src, r.weight FROM memory_relations r "
                f"CROSS JOIN memories a ON a.id = r.dst AND a.workspace_id = ? "
                f"CROSS JOIN memories m ON m.id = r.src AND m.status = 'active' AND {where} "
                f"WHERE r.relation = ? AND r.dst IN ({marks}) ORDER BY 3 DESC",
                (ws, *params, relation, *wanted, ws, *params, relation, *wanted),
            ).fetchall()
        for start, other, weight in rows:
            found.setdefault(start, []).append((other, float(weight)))
        return found

    # -- what a recall writes back ---------------------------------------------------
    def mark_referenced(self, workspace_id: str, ids: Sequence[str], at: datetime) -> None:
        stamp, now = ts_text(at), ts_text(utcnow())
        rows = [(stamp, now, workspace_id, memory_id) for memory_id in unique(ids)]
        if not rows:
            return
        with self._write():
            self._executemany(
                "UPDATE memories SET reference_count = reference_count + 1, "
                "last_referenced_at = ?, updated_at = ? WHERE +workspace_id = ? AND id = ?",
                rows,
            )

    def add_review(self, review: ReviewRequest) -> int:
        with self._write():
            cursor = self._execute(
                f"INSERT INTO memory_reviews ({REVIEW_INSERT_COLUMNS}) VALUES ({placeholders(8)})",
                review_row(review),
            )
            return int(cursor.lastrowid or 0)

    def add_reviews(self, reviews: Sequence[ReviewRequest]) -> None:
        if not reviews:
            return
        with self._write():
            self._executemany(
                f"INSERT INTO memory_reviews ({REVIEW_INSERT_COLUMNS}) VALUES ({placeholders(8)})",
                [review_row(r) for r in reviews],
            )
