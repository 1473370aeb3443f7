"""PostgresStore: consolidation's reads and writes (part of ``UpkeepStore``; see
``episodic.store.upkeep`` and ``episodic.upkeep.consolidate``): the memories a run
looks at, the trigger's backlog, the unclustered mark, and storing a cluster's rules with
its claim on the members, a row lock on each (``FOR UPDATE``) so two processes never
consolidate the same memory twice.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from episodic.errors import InvalidInput, NotFound
from episodic.model import Memory, utcnow
from episodic.store.postgres.connection import Conn, PgBase
from episodic.store.rows import memory_from_row, ts_text, unique
from episodic.store.sql import MEMORY_COLUMNS
from episodic.store.upkeep import ConsolidationBacklog
from episodic.store.vectors import Relation


class ConsolidationMixin(PgBase):
    def scan_memories(
        self,
        workspace_id: str,
        *,
        cursor: int = 0,
        limit: int,
        unconsolidated: bool = False,
        unclustered: bool | None = None,
        exclude_types: Sequence[str] = (),
        newest_first: bool = False,
    ) -> tuple[list[Memory], int]:
        if limit <= 0:
            return [], 0
        clauses = ["workspace_id = %s", "status = 'active'"]
        params: list[Any] = [workspace_id]
        if cursor:
            clauses.append("seq < %s" if newest_first else "seq > %s")
            params.append(cursor)
        if unconsolidated:
            clauses.append("consolidated_at IS NULL")
        if unclustered is not None:
            clauses.append(f"unclustered_at IS {'NOT ' if unclustered else ''}NULL")
        if exclude_types:
            clauses.append("type <> ALL(%s::text[])")
            params.append(list(exclude_types))
        order = "DESC" if newest_first else "ASC"
        with self._read() as conn:
            rows = self._exec(
                conn,
                f"SELECT seq, {MEMORY_COLUMNS} FROM memories WHERE {' AND '.join(clauses)} "
                f"ORDER BY seq {order} LIMIT %s",
                (*params, limit),
            ).fetchall()
            sources = self._upkeep_sources(conn, [r[1] for r in rows])
        page = [memory_from_row(row[1:], sources.get(row[1], ())) for row in rows]
        next_cursor = int(rows[-1][0]) if len(rows) == limit else 0
        return page, next_cursor

    def _upkeep_sources(self, conn: Conn, ids: Sequence[str]) -> dict[str, list[str]]:
        """Each memory's source events, in the order they were stored."""
        sources: dict[str, list[str]] = {}
        if not ids:
            return sources
        for memory_id, event_id in self._exec(
            conn,
            "SELECT memory_id, event_id FROM memory_sources WHERE memory_id = ANY(%s::text[]) "
            "ORDER BY seq",
            (list(ids),),
        ).fetchall():
            sources.setdefault(memory_id, []).append(event_id)
        return sources

    def consolidation_backlog(
        self, workspace_id: str, exclude_types: Sequence[str] = ()
    ) -> ConsolidationBacklog:
        # SQLite's json_extract(payload, '$.flashbulb') = 1 holds for true and for 1.
        with self._read() as conn:
            row = self._exec(
                conn,
                "SELECT count(*), count(*) FILTER (WHERE type = 'episode' "
                "AND episodic_jsonb(payload) -> 'flashbulb' IN ('true'::jsonb, '1'::jsonb)) "
                "FROM memories WHERE workspace_id = %s AND consolidated_at IS NULL "
                "AND unclustered_at IS NULL AND status = 'active' "
                "AND type <> ALL(%s::text[])",
                (workspace_id, list(exclude_types)),
            ).fetchone()
        count, flash = row if row else (0, 0)
        return ConsolidationBacklog(unconsolidated=int(count), flashbulbs=int(flash))

    def mark_unclustered(self, workspace_id: str, ids: Sequence[str], at: datetime) -> int:
        wanted = unique(ids)
        if not wanted:
            return 0
        with self._write() as conn:
            cur = self._exec(
                conn,
                "UPDATE memories SET unclustered_at = %s, updated_at = %s "
                "WHERE workspace_id = %s AND id = ANY(%s::text[]) "
                "AND consolidated_at IS NULL AND status = 'active'",
                (ts_text(at), ts_text(utcnow()), workspace_id, wanted),
            )
            return int(cur.rowcount)

    def store_consolidation(
        self,
        workspace_id: str,
        derived: Sequence[Memory],
        edges: Sequence[Relation],
        members: Sequence[str],
        at: datetime,
    ) -> bool:
        for m in derived:
            if m.workspace != workspace_id:
                raise InvalidInput(
                    "workspace_id", f"memory {m.id} is not of the workspace {workspace_id}"
                )
        wanted = unique(members)
        now = ts_text(utcnow())
        with self._write() as conn:
            # The claim: lock the members (in id order, so two consolidations naming
            # overlapping members queue instead of deadlocking). After waiting for a lock
            # PostgreSQL re-checks the row, so a member another process consolidated
            # meanwhile is not counted and this one is refused.
            open_members = self._exec(
                conn,
                "SELECT id FROM memories WHERE workspace_id = %s AND id = ANY(%s::text[]) "
                "AND status = 'active' AND consolidated_at IS NULL ORDER BY id FOR UPDATE",
                (workspace_id, wanted),
            ).fetchall()
            if len(open_members) != len(wanted):
                return False
            self._insert_memories(conn, derived, now)
            ends = set(wanted) | {m.id for m in derived}
            for e in edges:
                for end in (e.src, e.dst):
                    if end not in ends:
                        raise NotFound(end)
            self._executemany(
                conn,
                "INSERT INTO memory_relations (src, dst, relation, weight, created_at) "
                "VALUES (%s, %s, %s, %s, %s) ON CONFLICT (src, dst, relation) "
                "DO UPDATE SET weight = EXCLUDED.weight",
                [(e.src, e.dst, e.relation, float(e.weight), now) for e in edges],
            )
            if wanted:
                self._exec(
                    conn,
                    "UPDATE memories SET consolidated_at = %s, unclustered_at = NULL, "
                    "updated_at = %s WHERE workspace_id = %s AND id = ANY(%s::text[])",
                    (ts_text(at), now, workspace_id, wanted),
                )
        return True
