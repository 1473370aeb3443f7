"""PostgresStore: appending events and memories, closing episodes, reading them back
(``WriteStore`` and ``MemoryReader``; see ``episodic.store.writes``).

``SqliteStore``'s behaviour. Where SQLite relied on one writer per file, this module
relies on ``INSERT ... ON CONFLICT`` and row locks: a duplicate inside a batch, or one
another process is inserting right now, waits for that row and is then skipped and not
counted. Large batches are staged with one ``COPY`` (``_copy_insert``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from episodic.errors import IdTaken, InvalidInput, NotFound
from episodic.model import Event, Memory, ScopeFilter, utcnow
from episodic.store.postgres.connection import Conn, PgBase, _has_nul
from episodic.store.rows import (
    event_from_row,
    event_row,
    memory_from_row,
    memory_row,
    parse_ts,
    ts_text,
    unique,
)
from episodic.store.sql import (
    EVENT_COLUMNS,
    EVENT_INSERT_COLUMNS,
    MEMORY_COLUMNS,
    MEMORY_INSERT_COLUMNS,
    WORKSPACE_COUNTS,
    scope_where,
)
from episodic.store.writes import AppendResult, PendingConversation, WorkspaceCounts, taken_ids

# A memory's columns followed by its source events in the order they were stored
# (``FROM memories m``): whole memories in one query.
_MEMORY_WITH_SOURCES = (
    f"{MEMORY_COLUMNS}, ARRAY(SELECT s.event_id FROM memory_sources s "
    "WHERE s.memory_id = m.id ORDER BY s.seq)"
)
INSERT_EVENT_SQL = (
    f"INSERT INTO events ({', '.join(EVENT_INSERT_COLUMNS)}) "
    f"SELECT {', '.join(['%s'] * len(EVENT_INSERT_COLUMNS))} "
    # An id already archived (upkeep compaction) counts as a duplicate too.
    "WHERE NOT EXISTS (SELECT 1 FROM events_archive WHERE id = %s) ON CONFLICT (id) DO NOTHING"
)
INSERT_MEMORY_SQL = (
    f"INSERT INTO memories ({', '.join(MEMORY_INSERT_COLUMNS)}) "
    f"VALUES ({', '.join(['%s'] * len(MEMORY_INSERT_COLUMNS))}) ON CONFLICT DO NOTHING"
)
_STAGED_EVENTS_SQL = (
    f"INSERT INTO events ({', '.join(EVENT_INSERT_COLUMNS)}) "
    f"SELECT {', '.join('s.' + c for c in EVENT_INSERT_COLUMNS)} FROM _stage s "
    "WHERE NOT EXISTS (SELECT 1 FROM events_archive a WHERE a.id = s.id) "
    "ORDER BY s.ord ON CONFLICT (id) DO NOTHING"
)
_STAGED_MEMORIES_SQL = (
    f"INSERT INTO memories ({', '.join(MEMORY_INSERT_COLUMNS)}) "
    f"SELECT {', '.join('s.' + c for c in MEMORY_INSERT_COLUMNS)} FROM _stage s "
    "ORDER BY s.ord ON CONFLICT DO NOTHING"
)


class WritesMixin(PgBase):
    # -- writing ---------------------------------------------------------------------
    def append(self, events: Sequence[Event], memories: Sequence[Memory]) -> AppendResult:
        now = ts_text(utcnow())
        admitted: set[str] = set()
        for m in memories:
            admitted.add(m.id)
            admitted.update(m.source_event_ids)
        # The id again: the archive check of ``INSERT_EVENT_SQL``.
        event_rows = [(*event_row(e, admitted=e.id in admitted, now=now), e.id) for e in events]
        memory_rows = [memory_row(m, now) for m in memories]
        with self._write() as conn:
            # Row by row: a duplicate inside the batch, or one another process is
            # inserting right now, waits for that row and is then skipped and not counted.
            if self._bulk(len(event_rows)):
                inserted = self._copy_insert(
                    conn,
                    "events",
                    EVENT_INSERT_COLUMNS,
                    [r[:-1] for r in event_rows],
                    _STAGED_EVENTS_SQL,
                )
            else:
                inserted = self._executemany(conn, INSERT_EVENT_SQL, event_rows)
            memories_inserted = self._insert_memory_rows(conn, memory_rows)
            if inserted < len(event_rows) or memories_inserted < len(memory_rows):
                self._refuse_taken(conn, events, memories)
            self._insert_sources(conn, memories)
        return AppendResult(
            events_inserted=inserted,
            events_duplicate=len(events) - inserted,
            memories_inserted=memories_inserted,
        )

    def _refuse_taken(
        self, conn: Conn, events: Sequence[Event], memories: Sequence[Memory]
    ) -> None:
        """Raise ``IdTaken`` (the transaction rolls back) when a skipped id is another
        workspace's: see ``taken_ids``. Only runs when something was skipped."""
        event_ids = [i for i in unique([e.id for e in events]) if not _has_nul(i)]
        memory_ids = [i for i in unique([m.id for m in memories]) if not _has_nul(i)]
        journal = self._exec(
            conn,
            "SELECT id, workspace_id FROM events WHERE id = ANY(%s) "
            "UNION ALL SELECT id, workspace_id FROM events_archive WHERE id = ANY(%s)",
            (event_ids, event_ids),
        ).fetchall()
        stored = self._exec(
            conn, "SELECT id, workspace_id FROM memories WHERE id = ANY(%s)", (memory_ids,)
        ).fetchall()
        taken = taken_ids(
            events,
            memories,
            [(str(i), str(w)) for i, w in journal],
            [(str(i), str(w)) for i, w in stored],
        )
        if taken:
            raise IdTaken(taken)

    def _insert_memories(self, conn: Conn, memories: Sequence[Memory], now: str) -> int:
        """Insert the memories (an id already stored is skipped) and their sources, inside
        the caller's transaction; returns the memories inserted."""
        inserted = self._insert_memory_rows(conn, [memory_row(m, now) for m in memories])
        self._insert_sources(conn, memories)
        return inserted

    def _insert_memory_rows(self, conn: Conn, rows: Sequence[Sequence[Any]]) -> int:
        if self._bulk(len(rows)):
            return self._copy_insert(
                conn, "memories", MEMORY_INSERT_COLUMNS, rows, _STAGED_MEMORIES_SQL
            )
        return self._executemany(conn, INSERT_MEMORY_SQL, rows)

    def _copy_insert(
        self,
        conn: Conn,
        table: str,
        columns: Sequence[str],
        rows: Sequence[Sequence[Any]],
        insert_sql: str,
    ) -> int:
        """Insert many rows with one ``COPY`` into a temporary table shaped like
        ``table``'s ``columns`` plus their order, then ``insert_sql`` (which reads
        ``_stage`` in that order, so duplicates resolve as they do row by row); returns
        the rows it inserted. A statement per row costs ~0.2 ms of parsing and round
        trip; a bulk import of a million memories spent most of its time there."""
        cols = ", ".join(columns)
        self._exec(
            conn,
            f"CREATE TEMP TABLE _stage ON COMMIT DROP AS "
            f"SELECT 0::bigint AS ord, {cols} FROM {table} WITH NO DATA",
        )
        with conn.cursor() as cur, cur.copy(f"COPY _stage (ord, {cols}) FROM STDIN") as copy:
            for i, row in enumerate(rows):
                copy.write_row((i, *row))
        inserted = max(self._exec(conn, insert_sql).rowcount, 0)
        self._exec(conn, "DROP TABLE _stage")
        return inserted

    def _insert_sources(self, conn: Conn, memories: Sequence[Memory]) -> None:
        source_rows = [(m.id, event_id) for m in memories for event_id in m.source_event_ids]
        if not source_rows:
            return
        self._check_sources(conn, source_rows)
        # In order: memory_sources.seq then gives each memory's sources as they were cited.
        self._executemany(
            conn,
            "INSERT INTO memory_sources (memory_id, event_id) VALUES (%s, %s) "
            "ON CONFLICT DO NOTHING",
            source_rows,
        )

    def _check_sources(self, conn: Conn, source_rows: Sequence[tuple[str, str]]) -> None:
        # The only guard since migration 4 dropped the foreign key: a source is an event
        # in the journal or in its archive (compaction moves aged rows there).
        wanted = unique([event_id for _, event_id in source_rows])
        found = {
            row[0]
            for row in self._exec(
                conn,
                "SELECT id FROM events WHERE id = ANY(%s) "
                "UNION ALL SELECT id FROM events_archive WHERE id = ANY(%s)",
                (wanted, wanted),
            ).fetchall()
        }
        for memory_id, event_id in source_rows:
            if event_id not in found:
                raise InvalidInput(
                    "source_event_ids",
                    f"memory {memory_id} cites event {event_id}, which is not stored; "
                    "append the event in the same call or before",
                )

    # -- reading ---------------------------------------------------------------------
    def get_memories(self, workspace_id: str, ids: Sequence[str]) -> list[Memory]:
        wanted = [i for i in unique(ids) if not _has_nul(i)]
        if not wanted or _has_nul(workspace_id):
            return []
        with self._read() as conn:
            rows = self._exec(
                conn,
                f"SELECT {_MEMORY_WITH_SOURCES} FROM memories m "
                "WHERE m.workspace_id = %s AND m.id = ANY(%s)",
                (workspace_id, wanted),
            ).fetchall()
        found = {row[0]: memory_from_row(row[:-1], row[-1]) for row in rows}
        return [found[memory_id] for memory_id in wanted if memory_id in found]

    def get_memory(self, workspace_id: str, memory_id: str) -> Memory:
        found = self.get_memories(workspace_id, [memory_id])
        if not found:
            raise NotFound(memory_id)
        return found[0]

    def get_events(self, workspace_id: str, ids: Sequence[str]) -> list[Event]:
        wanted = [i for i in unique(ids) if not _has_nul(i)]
        if not wanted or _has_nul(workspace_id):
            return []
        with self._read() as conn:
            rows = self._exec(
                conn,
                f"SELECT {EVENT_COLUMNS} FROM events WHERE workspace_id = %s AND id = ANY(%s)",
                (workspace_id, wanted),
            ).fetchall()
        found = {row[0]: row for row in rows}
        return [event_from_row(found[event_id]) for event_id in wanted if event_id in found]

    def memory_ids_starting(self, workspace_id: str, prefix: str, limit: int) -> list[str]:
        if _has_nul(workspace_id) or _has_nul(prefix):
            return []
        # left(), not LIKE: "_" and "%" in an id are its own characters. Code point
        # order (COLLATE "C"), as SQLite sorts.
        with self._read() as conn:
            rows = self._exec(
                conn,
                "SELECT id FROM memories WHERE workspace_id = %s AND left(id, %s) = %s "
                'ORDER BY id COLLATE "C" LIMIT %s',
                (workspace_id, len(prefix), prefix, limit),
            ).fetchall()
        return [str(r[0]) for r in rows]

    def workspaces(self) -> list[str]:
        # A skip scan down the (workspace_id, ...) index: one probe per workspace instead
        # of DISTINCT over every memory.
        with self._read() as conn:
            rows = self._exec(
                conn,
                "WITH RECURSIVE w (ws) AS (SELECT min(workspace_id) FROM memories "
                "UNION ALL SELECT (SELECT min(workspace_id) FROM memories "
                "WHERE workspace_id > w.ws) FROM w WHERE w.ws IS NOT NULL) "
                "SELECT ws FROM w WHERE ws IS NOT NULL",
            ).fetchall()
        return [str(r[0]) for r in rows]

    def workspace_counts(self) -> list[WorkspaceCounts]:
        with self._read() as conn:
            rows = self._exec(conn, WORKSPACE_COUNTS).fetchall()
        return [WorkspaceCounts(str(w), int(m), int(e)) for w, m, e in rows]

    def known_hashes(self, flt: ScopeFilter, hashes: Sequence[str]) -> set[str]:
        where, params = scope_where(flt, alias="m", mark="%s")
        wanted = unique(hashes)
        if not wanted:
            return set()
        with self._read() as conn:
            rows = self._exec(
                conn,
                "SELECT DISTINCT m.content_hash FROM memories m "
                f"WHERE {where} AND m.status = 'active' AND m.content_hash = ANY(%s)",
                (*params, wanted),
            ).fetchall()
        return {str(r[0]) for r in rows}

    # -- conversations ---------------------------------------------------------------
    # Messages of one instant keep the order they were stored in: ctid is that order for
    # rows never updated (a pending message; SQLite orders by rowid).
    def pending_conversations(
        self, limit: int, workspace_id: str | None = None
    ) -> list[PendingConversation]:
        if limit <= 0:
            return []
        where, params = ("AND workspace_id = %s", [workspace_id]) if workspace_id else ("", [])
        with self._read() as conn:
            rows = self._exec(
                conn,
                "SELECT workspace_id, conversation_id, count(*), min(ts), max(ts) FROM events "
                f"WHERE type = 'message' AND episode_id IS NULL {where} "
                "GROUP BY workspace_id, conversation_id "
                "ORDER BY min(ts), 1, 2 NULLS FIRST LIMIT %s",
                (*params, limit),
            ).fetchall()
        return [
            PendingConversation(ws, conv, int(n), parse_ts(oldest), parse_ts(newest))
            for ws, conv, n, oldest, newest in rows
        ]

    def pending_messages(self, workspace_id: str, conversation_id: str) -> list[Event]:
        with self._read() as conn:
            rows = self._exec(
                conn,
                f"SELECT {EVENT_COLUMNS} FROM events "
                "WHERE workspace_id = %s AND conversation_id = %s AND type = 'message' "
                "AND episode_id IS NULL ORDER BY ts, ctid",
                (workspace_id, conversation_id),
            ).fetchall()
        return [event_from_row(row) for row in rows]

    def close_episode(
        self,
        episode: Memory,
        message_ids: Sequence[str],
        derived: Sequence[Memory],
        keys: Mapping[str, str],
    ) -> bool:
        ws = episode.workspace
        for m in derived:
            if m.workspace != ws:
                raise InvalidInput(
                    "workspace_id", f"memory {m.id} is not of the episode's workspace {ws}"
                )
        now = ts_text(utcnow())
        wanted = unique(message_ids)
        with self._write() as conn:
            # Tables in forget's order (events, then memories): this transaction writes
            # both, and taking memories first deadlocked with a forget holding events
            # (found under load).
            self._exec(conn, "LOCK TABLE events IN ROW EXCLUSIVE MODE")
            # The episode's row is the claim: a second closer of the same episode waits
            # for the first one's insert, then inserts nothing and changes nothing.
            if not self._exec(conn, INSERT_MEMORY_SQL, memory_row(episode, now)).rowcount:
                return False
            found = {
                row[0]
                for row in self._exec(
                    conn,
                    "SELECT id FROM events WHERE workspace_id = %s AND type = 'message' "
                    "AND id = ANY(%s)",
                    (ws, wanted),
                ).fetchall()
            }
            missing = [i for i in wanted if i not in found]
            if missing:
                raise NotFound(missing[0])
            self._executemany(conn, INSERT_MEMORY_SQL, [memory_row(m, now) for m in derived])
            self._insert_sources(conn, [episode, *derived])
            self._exec(
                conn,
                "UPDATE events SET episode_id = %s WHERE workspace_id = %s AND id = ANY(%s)",
                (episode.id, ws, wanted),
            )
            self._executemany(
                conn,
                "UPDATE memories SET keys = %s, updated_at = %s "
                "WHERE workspace_id = %s AND id = %s",
                [(text, now, ws, memory_id) for memory_id, text in sorted(keys.items())],
            )
        return True
