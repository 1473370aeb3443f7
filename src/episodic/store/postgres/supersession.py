"""PostgresStore: supersession (``SupersessionStore``; see ``episodic.store.supersession``)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from episodic import metrics
from episodic.errors import InvalidInput, NotFound
from episodic.model import Memory
from episodic.store.postgres.connection import PgBase, _has_nul
from episodic.store.postgres.writes import _MEMORY_WITH_SOURCES
from episodic.store.rows import memory_from_row, ts_text, unique
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


class SupersessionMixin(PgBase):
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
        for memory_id in (old_id, new_id):
            if _has_nul(workspace_id, memory_id):
                raise NotFound(memory_id)
        with self._write() as conn:
            # Locked in id order, as every other writer of two memories does.
            found = {
                row[0]: row[1:]
                for row in self._exec(
                    conn,
                    "SELECT id, status, ts, valid_from FROM memories "
                    "WHERE workspace_id = %s AND id IN (%s, %s) ORDER BY id FOR UPDATE",
                    (workspace_id, old_id, new_id),
                ).fetchall()
            }
            for memory_id in (old_id, new_id):
                if memory_id not in found:
                    raise NotFound(memory_id)
            if found[old_id][0] != "active":
                return None
            # A replacement undone before is not made again, but on explicit request.
            reverted = {r[0] for r in self._exec(conn, reverted_sql("%s"), (new_id,)).fetchall()}
            if old_id in reverted and not overrule:
                return None
            _, new_ts, new_from = found[new_id]
            until = new_from or new_ts
            derived = [
                r[0]
                for r in self._exec(
                    conn,
                    derived_sql("%s"),
                    (old_id, workspace_id, old_id, new_id, new_ts, new_id, new_id),
                ).fetchall()
                if r[0] not in reverted
            ]
            row = self._exec(
                conn,
                "UPDATE memories m SET status = 'superseded', valid_to = %s, superseded_by = %s, "
                f"updated_at = %s WHERE m.id = %s RETURNING {_MEMORY_WITH_SOURCES}",
                (until, new_id, ts_text(at), old_id),
            ).fetchone()
            if derived:
                self._exec(
                    conn,
                    "UPDATE memories SET status = 'superseded', valid_to = %s, "
                    "superseded_by = %s, updated_at = %s WHERE id = ANY(%s)",
                    (until, new_id, ts_text(at), derived),
                )
            links = [(old_id, reason)] + [(d, derived_reason(old_id, reason)) for d in derived]
            self._executemany(
                conn,
                insert_link_sql("%s"),
                [(workspace_id, m, new_id, decided_by, why, ts_text(at)) for m, why in links],
            )
        if row is None:
            return None
        metrics.superseded(decided_by)
        return memory_from_row(row[:-1], row[-1] or ())

    def revert_supersession(
        self, workspace_id: str, memory_id: str, *, by: str, at: datetime
    ) -> list[str] | None:
        if _has_nul(workspace_id, memory_id):
            raise NotFound(memory_id)
        with self._write() as conn:
            row = self._exec(
                conn,
                "SELECT status, superseded_by FROM memories WHERE workspace_id = %s AND id = %s "
                "FOR UPDATE",
                (workspace_id, memory_id),
            ).fetchone()
            if row is None:
                raise NotFound(memory_id)
            status, new_id = row
            if status != "superseded" or new_id is None:
                return None
            ids = [memory_id] + [
                r[0]
                for r in self._exec(
                    conn, restored_with_sql("%s"), (memory_id, workspace_id, new_id, memory_id)
                ).fetchall()
            ]
            self._exec(conn, reactivate_sql("%s", len(ids)), (ts_text(at), *ids))
            self._exec(conn, mark_reverted_sql("%s", len(ids)), (ts_text(at), by, new_id, *ids))
        return ids

    def supersessions(self, workspace_id: str, memory_ids: Sequence[str]) -> list[Supersession]:
        return self._decision_links("supersessions", workspace_id, memory_ids)

    def _decision_links(
        self, table: str, workspace_id: str, memory_ids: Sequence[str]
    ) -> list[Supersession]:
        """The links of ``table`` (supersessions, partial_changes) with either end among
        ``memory_ids``, oldest decision first."""
        wanted = [i for i in unique(memory_ids) if not _has_nul(i)]
        if not wanted or _has_nul(workspace_id):
            return []
        with self._read() as conn:
            rows = self._exec(
                conn,
                f"SELECT {SUPERSESSION_COLUMNS} FROM {table} WHERE workspace_id = %s "
                "AND (old_id = ANY(%s) OR new_id = ANY(%s)) "
                "ORDER BY decided_at, old_id, new_id",
                (workspace_id, wanted, wanted),
            ).fetchall()
        return [link_from_row(r) for r in rows]

    def restore_supersessions(self, workspace_id: str, links: Sequence[Supersession]) -> int:
        for link in links:
            said = (link.old_id, link.new_id, link.decided_by, link.reason, link.reverted_by or "")
            if _has_nul(*said):
                raise InvalidInput("supersedes", "cannot hold a NUL (0x00) character")
        ends = unique([i for link in links for i in (link.old_id, link.new_id)])
        with self._write() as conn:
            stored = {
                row[0]
                for row in self._exec(
                    conn,
                    "SELECT id FROM memories WHERE workspace_id = %s AND id = ANY(%s)",
                    (workspace_id, ends),
                ).fetchall()
            }
            absent = missing_end(links, stored)
            if absent is not None:
                raise InvalidInput("supersedes", f"memory {absent} is not stored in {workspace_id}")
            self._executemany(
                conn,
                restore_link_sql("%s"),
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
        for memory_id in (old_id, new_id):
            if _has_nul(workspace_id, memory_id):
                raise NotFound(memory_id)
        with self._write() as conn:
            # Locked (in id order, as every writer of two memories does) so a forget or
            # a supersession of either cannot land between the check and the insert.
            found = dict(
                self._exec(
                    conn,
                    "SELECT id, status FROM memories WHERE workspace_id = %s AND id IN (%s, %s) "
                    "ORDER BY id FOR UPDATE",
                    (workspace_id, old_id, new_id),
                ).fetchall()
            )
            for memory_id in (old_id, new_id):
                if memory_id not in found:
                    raise NotFound(memory_id)
            if found[old_id] != "active":
                return False
            cursor = self._exec(
                conn,
                insert_partial_sql("%s"),
                (workspace_id, old_id, new_id, decided_by, reason, ts_text(at)),
            )
            return bool(cursor.rowcount == 1)

    def partial_changes(self, workspace_id: str, memory_ids: Sequence[str]) -> list[Supersession]:
        return self._decision_links("partial_changes", workspace_id, memory_ids)

    def partly_changed_by(self, workspace_id: str, old_ids: Sequence[str]) -> dict[str, list[str]]:
        wanted = [i for i in unique(old_ids) if not _has_nul(i)]
        if not wanted or _has_nul(workspace_id):
            return {}
        with self._read() as conn:
            rows = self._exec(
                conn, partly_by_sql("%s", len(wanted)), (workspace_id, *wanted)
            ).fetchall()
        return partly_by(rows)

    def revert_partial_changes(
        self, workspace_id: str, old_id: str, *, by: str, at: datetime
    ) -> list[str]:
        if _has_nul(workspace_id, old_id, by):
            return []
        with self._write() as conn:
            rows = self._exec(
                conn, revert_partial_sql("%s"), (ts_text(at), by, workspace_id, old_id)
            ).fetchall()
        return sorted(r[0] for r in rows)

    def pending_supersession(self, limit: int, *, vectored_only: bool) -> list[Memory]:
        vectored = " AND m.has_vector = 1" if vectored_only else ""
        with self._read() as conn:
            rows = self._exec(
                conn,
                f"SELECT {_MEMORY_WITH_SOURCES} FROM memories m "
                f"WHERE m.supersession_pending = 1{vectored} ORDER BY m.seq LIMIT %s",
                (limit,),
            ).fetchall()
        return [memory_from_row(row[:-1], row[-1] or ()) for row in rows]

    def mark_supersession_checked(self, ids: Sequence[str]) -> None:
        wanted = [i for i in unique(ids) if not _has_nul(i)]
        if not wanted:
            return
        with self._write() as conn:
            self._exec(
                conn,
                "UPDATE memories SET supersession_pending = 0 WHERE id = ANY(%s)",
                (wanted,),
            )
