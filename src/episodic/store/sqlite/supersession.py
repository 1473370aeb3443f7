"""SqliteStore: supersession (``SupersessionStore``; see ``episodic.store.supersession``)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from episodic import metrics
from episodic.errors import InvalidInput, NotFound
from episodic.model import Memory
from episodic.store.rows import ts_text, unique
from episodic.store.sqlite.connection import SqliteBase, chunks, placeholders
from episodic.store.supersession import (
    SUPERSESSION_COLUMNS,
    Supersession,
    derived_reason,
    derived_sql,
    insert_link_sql,
    insert_partial_sql,
    link_from_row,
    link_row,
    mark_reverted_sql,
    missing_end,
    partly_by,
    partly_by_sql,
    reactivate_sql,
    restore_link_sql,
    restored_with_sql,
    revert_partial_sql,
    reverted_sql,
)


class SupersessionMixin(SqliteBase):
    def supersede(
        self,
        workspace_id: str,
        old_id: str,
        new_id: str,
        *,
        decided_by: str,
        reason: str,
        at: datetime,
        overrule: bool = False,
    ) -> Memory | None:
        with self._write():
            found = {
                row[0]: row[1:]
                for row in self._execute(
                    "SELECT id, status, ts, valid_from FROM memories "
                    "WHERE +workspace_id = ? AND id IN (?, ?)",
                    (workspace_id, old_id, new_id),
                )
            }
            for memory_id in (old_id, new_id):
                if memory_id not in found:
                    raise NotFound(memory_id)
            if found[old_id][0] != "active":
                return None
            # A replacement undone before is not made again, but on explicit request.
            reverted = {row[0] for row in self._execute(reverted_sql("?"), (new_id,))}
            if old_id in reverted and not overrule:
                return None
            _, new_ts, new_from = found[new_id]
            until = new_from or new_ts
            derived = [
                row[0]
                for row in self._execute(
                    derived_sql("?"), (old_id, workspace_id, old_id, new_id, new_ts, new_id, new_id)
                )
                if row[0] not in reverted
            ]
            links = [(old_id, reason)] + [(d, derived_reason(old_id, reason)) for d in derived]
            for memory_id, why in links:
                self._execute(
                    "UPDATE memories SET status = 'superseded', valid_to = ?, "
                    "superseded_by = ?, updated_at = ? WHERE id = ?",
                    (until, new_id, ts_text(at), memory_id),
                )
                self._execute(
                    insert_link_sql("?"),
                    (workspace_id, memory_id, new_id, decided_by, why, ts_text(at)),
                )
        metrics.superseded(decided_by)
        return self.get_memory(workspace_id, old_id)

    def revert_supersession(
        self, workspace_id: str, memory_id: str, *, by: str, at: datetime
    ) -> list[str] | None:
        with self._write():
            row = self._execute(
                "SELECT status, superseded_by FROM memories WHERE +workspace_id = ? AND id = ?",
                (workspace_id, memory_id),
            ).fetchone()
            if row is None:
                raise NotFound(memory_id)
            status, new_id = row
            if status != "superseded" or new_id is None:
                return None
            ids = [memory_id] + [
                r[0]
                for r in self._execute(
                    restored_with_sql("?"), (memory_id, workspace_id, new_id, memory_id)
                )
            ]
            self._execute(reactivate_sql("?", len(ids)), (ts_text(at), *ids))
            self._execute(mark_reverted_sql("?", len(ids)), (ts_text(at), by, new_id, *ids))
        return ids

    def supersessions(self, workspace_id: str, memory_ids: Sequence[str]) -> list[Supersession]:
        return self._decision_links("supersessions", workspace_id, memory_ids)

    def _decision_links(
        self, table: str, workspace_id: str, memory_ids: Sequence[str]
    ) -> list[Supersession]:
        """The links of ``table`` (supersessions, partial_changes) with either end among
        ``memory_ids``, oldest decision first."""
        found: dict[tuple[str, str], Supersession] = {}
        with self._read():
            for chunk in chunks(unique(memory_ids)):
                marks = placeholders(len(chunk))
                for row in self._execute(
                    f"SELECT {SUPERSESSION_COLUMNS} FROM {table} WHERE workspace_id = ? "
                    f"AND (old_id IN ({marks}) OR new_id IN ({marks}))",
                    (workspace_id, *chunk, *chunk),
                ):
                    link = link_from_row(row)
                    found[(link.old_id, link.new_id)] = link
        return sorted(found.values(), key=lambda s: (s.decided_at, s.old_id, s.new_id))

    def restore_supersessions(self, workspace_id: str, links: Sequence[Supersession]) -> int:
        ends = unique([i for link in links for i in (link.old_id, link.new_id)])
        with self._write():
            stored: set[str] = set()
            for chunk in chunks(ends):
                stored.update(
                    row[0]
                    for row in self._execute(
                        "SELECT id FROM memories WHERE +workspace_id = ? "
                        f"AND id IN ({placeholders(len(chunk))})",
                        (workspace_id, *chunk),
                    )
                )
            absent = missing_end(links, stored)
            if absent is not None:
                raise InvalidInput("supersedes", f"memory {absent} is not stored in {workspace_id}")
            self._executemany(
                restore_link_sql("?"),
                [link_row(workspace_id, link) for link in links],
            )
        return len(links)

    def link_partial_change(
        self,
        workspace_id: str,
        old_id: str,
        new_id: str,
        *,
        decided_by: str,
        reason: str,
        at: datetime,
    ) -> bool:
        with self._write():
            found = dict(
                self._execute(
                    "SELECT id, status FROM memories WHERE +workspace_id = ? AND id IN (?, ?)",
                    (workspace_id, old_id, new_id),
                ).fetchall()
            )
            for memory_id in (old_id, new_id):
                if memory_id not in found:
                    raise NotFound(memory_id)
            if found[old_id] != "active":
                return False
            cursor = self._execute(
                insert_partial_sql("?"),
                (workspace_id, old_id, new_id, decided_by, reason, ts_text(at)),
            )
            return bool(cursor.rowcount == 1)

    def partial_changes(self, workspace_id: str, memory_ids: Sequence[str]) -> list[Supersession]:
        return self._decision_links("partial_changes", workspace_id, memory_ids)

    def partly_changed_by(self, workspace_id: str, old_ids: Sequence[str]) -> dict[str, list[str]]:
        wanted = unique(old_ids)
        if not wanted:
            return {}
        rows: list[Sequence[str]] = []
        with self._read():
            for chunk in chunks(wanted):
                rows += self._execute(
                    partly_by_sql("?", len(chunk)), (workspace_id, *chunk)
                ).fetchall()
        return partly_by(rows)

    def revert_partial_changes(
        self, workspace_id: str, old_id: str, *, by: str, at: datetime
    ) -> list[str]:
        with self._write():
            rows = self._execute(
                revert_partial_sql("?"), (ts_text(at), by, workspace_id, old_id)
            ).fetchall()
        return sorted(r[0] for r in rows)

    def pending_supersession(self, limit: int, *, vectored_only: bool) -> list[Memory]:
        vectored = " AND has_vector = 1" if vectored_only else ""
        with self._read():
            ids = [
                (row[0], row[1])
                for row in self._execute(
                    "SELECT workspace_id, id FROM memories INDEXED BY "
                    f"memories_supersession_pending WHERE supersession_pending = 1{vectored} "
                    "ORDER BY seq LIMIT ?",
                    (limit,),
                )
            ]
        found: list[Memory] = []
        for workspace_id, memory_id in ids:
            found += self.get_memories(workspace_id, [memory_id])
        return found

    def mark_supersession_checked(self, ids: Sequence[str]) -> None:
        with self._write():
            for chunk in chunks(unique(ids)):
                self._execute(
                    "UPDATE memories SET supersession_pending = 0 "
                    f"WHERE id IN ({placeholders(len(chunk))})",
                    chunk,
                )
