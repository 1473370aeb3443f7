"""SqliteStore: consolidation's reads and writes (part of ``UpkeepStore``; see
``episodic.store.upkeep`` and ``episodic.upkeep.consolidate``): the memories a run
looks at, the trigger's backlog, the unclustered mark, and storing a cluster's rules with
its claim on the members. One writer at a time makes each claim a plain check in the
write transaction.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from episodic.errors import InvalidInput, NotFound
from episodic.model import Memory, utcnow
from episodic.store.rows import memory_from_row, ts_text, unique
from episodic.store.sql import MEMORY_COLUMNS
from episodic.store.sqlite.connection import SqliteBase, chunks, placeholders
from episodic.store.upkeep import ConsolidationBacklog
from episodic.store.vectors import Relation


class ConsolidationMixin(SqliteBase):
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
        clauses = ["workspace_id = ?", "status = 'active'"]
        params: list[Any] = [workspace_id]
        if cursor:
            clauses.append("seq < ?" if newest_first else "seq > ?")
            params.append(cursor)
        if unconsolidated:
            clauses.append("consolidated_at IS NULL")
        if unclustered is not None:
            clauses.append(f"unclustered_at IS {'NOT ' if unclustered else ''}NULL")
        if exclude_types:
            clauses.append(f"type NOT IN ({placeholders(len(exclude_types))})")
            params.extend(exclude_types)
        order = "DESC" if newest_first else "ASC"
        with self._read():
            rows = self._execute(
                f"SELECT seq, {MEMORY_COLUMNS} FROM memories WHERE {' AND '.join(clauses)} "
                f"ORDER BY seq {order} LIMIT ?",
                (*params, limit),
            ).fetchall()
            sources = self._sources_of([r[1] for r in rows])
        page = [memory_from_row(row[1:], sources.get(row[1], ())) for row in rows]
        next_cursor = int(rows[-1][0]) if len(rows) == limit else 0
        return page, next_cursor

    def consolidation_backlog(
        self, workspace_id: str, exclude_types: Sequence[str] = ()
    ) -> ConsolidationBacklog:
        skip = f"AND type NOT IN ({placeholders(len(exclude_types))})" if exclude_types else ""
        with self._read():
            count, flash = self._execute(
                "SELECT count(*), coalesce(sum(type = 'episode' "
                "AND json_extract(payload, '$.flashbulb') = 1), 0) "
                "FROM memories INDEXED BY memories_consolidation_backlog WHERE workspace_id = ? "
                "AND consolidated_at IS NULL AND unclustered_at IS NULL AND status = 'active' "
                f"{skip}",
                (workspace_id, *exclude_types),
            ).fetchone()
        return ConsolidationBacklog(unconsolidated=int(count), flashbulbs=int(flash))

    def mark_unclustered(self, workspace_id: str, ids: Sequence[str], at: datetime) -> int:
        stamp, now = ts_text(at), ts_text(utcnow())
        marked = 0
        with self._write():
            for chunk in chunks(unique(ids)):
                marked += self._execute(
                    "UPDATE memories SET unclustered_at = ?, updated_at = ? "
                    f"WHERE +workspace_id = ? AND id IN ({placeholders(len(chunk))}) "
                    "AND consolidated_at IS NULL AND status = 'active'",
                    (stamp, now, workspace_id, *chunk),
                ).rowcount
        return marked

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
        with self._write():
            open_members = sum(
                int(
                    self._execute(
                        "SELECT count(*) FROM memories WHERE +workspace_id = ? "
                        f"AND id IN ({placeholders(len(chunk))}) AND status = 'active' "
                        "AND consolidated_at IS NULL",
                        (workspace_id, *chunk),
                    ).fetchone()[0]
                )
                for chunk in chunks(wanted)
            )
            if open_members != len(wanted):
                return False
            self._insert_memories(derived, now)
            ends = set(wanted) | {m.id for m in derived}
            for e in edges:
                for end in (e.src, e.dst):
                    if end not in ends:
                        raise NotFound(end)
            if edges:
                self._insert_edges(edges, now)
            self._executemany(
                "UPDATE memories SET consolidated_at = ?, unclustered_at = NULL, updated_at = ? "
                "WHERE +workspace_id = ? AND id = ?",
                [(ts_text(at), now, workspace_id, memory_id) for memory_id in wanted],
            )
        return True
