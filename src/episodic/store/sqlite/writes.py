"""SqliteStore: appending events and memories, closing episodes, reading them back
(``WriteStore`` and ``MemoryReader``; see ``episodic.store.writes``).

One writer per file: ``append`` and ``close_episode`` are one ``BEGIN IMMEDIATE``
transaction each, so a concurrent writer waits for the lock instead of interleaving.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

from episodic.errors import IdTaken, InvalidInput, NotFound
from episodic.model import Event, Memory, ScopeFilter, utcnow
from episodic.scoring.passages import PASSAGE_CHARS
from episodic.store.migrations import index_text_passages
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
from episodic.store.sqlite.connection import SqliteBase, chunks, placeholders
from episodic.store.writes import AppendResult, PendingConversation, WorkspaceCounts, taken_ids

# Events go in by the hundred per statement. The journal's keyword index (migration 6)
# is fed by a trigger, and FTS5 writes its pending terms out at the end of every statement
# that fires one: one statement per event made ingest ~2.5x slower (bench_spine's ingest),
# a statement per hundred costs a fraction of that.
EVENT_ROWS_PER_INSERT = 500
# What ``get_memories`` joins a memory's source event ids with (the unit separator).
_SOURCE_SEP = "\x1f"


@functools.lru_cache(maxsize=8)
def _insert_events(n: int) -> str:
    """INSERT OR IGNORE of ``n`` events (``event_row`` each); an id already archived
    (upkeep compaction) counts as a duplicate too. ``column1`` is a VALUES row's id."""
    row = f"({placeholders(len(EVENT_INSERT_COLUMNS))})"
    return (
        f"INSERT OR IGNORE INTO events ({', '.join(EVENT_INSERT_COLUMNS)}) "
        f"SELECT * FROM (VALUES {', '.join([row] * n)}) AS v "
        "WHERE NOT EXISTS (SELECT 1 FROM events_archive AS a WHERE a.id = v.column1)"
    )


def write_text_passages(store: SqliteBase, ids: Sequence[str]) -> int:
    """(Re)write the keyword index's passages (``passages_fts``, migration 17) of the long
    memories among ``ids``, inside the caller's write; returns how many rows it wrote.
    Every writer of a memory's text calls it: triggers drop a memory's passage rows when
    it is deleted or its text changes, and only Python cuts passages."""
    written = 0
    for chunk in chunks(unique(ids)):
        rows = store._execute(
            f"SELECT seq, content FROM memories WHERE id IN ({placeholders(len(chunk))}) "
            f"AND length(content) > {PASSAGE_CHARS}",
            chunk,
        ).fetchall()
        written += index_text_passages(store._conn, rows)
    return written


_INSERT_MEMORY = (
    f"INSERT OR IGNORE INTO memories ({', '.join(MEMORY_INSERT_COLUMNS)}) "
    f"VALUES ({placeholders(len(MEMORY_INSERT_COLUMNS))})"
)


class WritesMixin(SqliteBase):
    # -- writing ---------------------------------------------------------------------
    def append(self, events: Sequence[Event], memories: Sequence[Memory]) -> AppendResult:
        now = ts_text(utcnow())
        admitted: set[str] = set()
        for m in memories:
            admitted.add(m.id)
            admitted.update(m.source_event_ids)
        event_rows = [event_row(e, admitted=e.id in admitted, now=now) for e in events]
        with self._write():
            inserted = 0
            for start in range(0, len(event_rows), EVENT_ROWS_PER_INSERT):
                part = event_rows[start : start + EVENT_ROWS_PER_INSERT]
                flat = [value for row in part for value in row]
                inserted += self._execute(_insert_events(len(part)), flat).rowcount
            memories_inserted = self._insert_memories(memories, now)
            if inserted < len(event_rows) or memories_inserted < len(memories):
                self._refuse_taken(events, memories)
        return AppendResult(
            events_inserted=inserted,
            events_duplicate=len(events) - inserted,
            memories_inserted=memories_inserted,
        )

    def _refuse_taken(self, events: Sequence[Event], memories: Sequence[Memory]) -> None:
        """Raise ``IdTaken`` (the caller's write rolls back) when a skipped id is another
        workspace's: see ``taken_ids``. Only runs when something was skipped."""
        journal: list[tuple[str, str]] = []
        stored: list[tuple[str, str]] = []
        for table, ids, into in (
            ("events", [e.id for e in events], journal),
            ("events_archive", [e.id for e in events], journal),
            ("memories", [m.id for m in memories], stored),
        ):
            for chunk in chunks(unique(ids)):
                marks = placeholders(len(chunk))
                into += self._execute(
                    f"SELECT id, workspace_id FROM {table} WHERE id IN ({marks})", chunk
                ).fetchall()
        taken = taken_ids(events, memories, journal, stored)
        if taken:
            raise IdTaken(taken)

    def _insert_memories(self, memories: Sequence[Memory], now: str) -> int:
        """INSERT OR IGNORE the memories and their sources, inside the caller's write."""
        rows = [memory_row(m, now) for m in memories]
        if not rows:
            return 0
        inserted = int(self._executemany(_INSERT_MEMORY, rows).rowcount)
        long_ids = [m.id for m in memories if len(m.content) > PASSAGE_CHARS]
        if long_ids:
            write_text_passages(self, long_ids)
        source_rows = [(m.id, event_id) for m in memories for event_id in m.source_event_ids]
        if source_rows:
            self._check_sources(source_rows)
            self._executemany(
                "INSERT OR IGNORE INTO memory_sources (memory_id, event_id) VALUES (?, ?)",
                source_rows,
            )
        return inserted

    def _check_sources(self, source_rows: Sequence[tuple[str, str]]) -> None:
        # The only guard since migration 4 dropped the foreign key: a source is an event
        # in the journal or in its archive (compaction moves aged rows there).
        wanted = unique([event_id for _, event_id in source_rows])
        found: set[str] = set()
        for chunk in chunks(wanted):
            marks = placeholders(len(chunk))
            found.update(
                row[0]
                for row in self._execute(
                    f"SELECT id FROM events WHERE id IN ({marks}) "
                    f"UNION ALL SELECT id FROM events_archive WHERE id IN ({marks})",
                    (*chunk, *chunk),
                )
            )
        for memory_id, event_id in source_rows:
            if event_id not in found:
                raise InvalidInput(
                    "source_event_ids",
                    f"memory {memory_id} cites event {event_id}, which is not stored; "
                    "append the event in the same call or before",
                )

    # -- reading ---------------------------------------------------------------------
    def get_memories(self, workspace_id: str, ids: Sequence[str]) -> list[Memory]:
        wanted = unique(ids)
        if not wanted:
            return []
        rows: dict[str, tuple[Any, ...]] = {}
        sources: dict[str, list[str]] = {}
        several: list[str] = []
        with self._read():
            for chunk in chunks(wanted):
                for row in self._execute(
                    # "+workspace_id" keeps the planner on the id key: left to itself it
                    # walks the workspace index, every row of a large workspace. The
                    # sources come in the same statement (a recall reads rows two or
                    # three times, and a second statement each time cost as much as
                    # the rows): one source is the whole list; a memory with several
                    # (whose order group_concat does not keep) reads them again in order.
                    f"SELECT {MEMORY_COLUMNS}, (SELECT group_concat(s.event_id, char(31)) "
                    "FROM memory_sources s WHERE s.memory_id = memories.id) "
                    f"FROM memories WHERE +workspace_id = ? AND id IN ({placeholders(len(chunk))})",
                    (workspace_id, *chunk),
                ):
                    rows[row[0]] = row[:-1]
                    joined = row[-1]
                    if joined is None:
                        continue
                    if _SOURCE_SEP in joined:
                        several.append(row[0])
                    else:
                        sources[row[0]] = [joined]
            if several:
                sources.update(self._sources_of(several))
        return [
            memory_from_row(rows[memory_id], sources.get(memory_id, ()))
            for memory_id in wanted
            if memory_id in rows
        ]

    def get_memory(self, workspace_id: str, memory_id: str) -> Memory:
        found = self.get_memories(workspace_id, [memory_id])
        if not found:
            raise NotFound(memory_id)
        return found[0]

    def get_events(self, workspace_id: str, ids: Sequence[str]) -> list[Event]:
        wanted = unique(ids)
        rows: dict[str, tuple[Any, ...]] = {}
        with self._read():
            for chunk in chunks(wanted):
                for row in self._execute(
                    f"SELECT {EVENT_COLUMNS} FROM events WHERE +workspace_id = ? "
                    f"AND id IN ({placeholders(len(chunk))})",
                    (workspace_id, *chunk),
                ):
                    rows[row[0]] = row
        return [event_from_row(rows[event_id]) for event_id in wanted if event_id in rows]

    def _sources_of(self, ids: Sequence[str]) -> dict[str, list[str]]:
        sources: dict[str, list[str]] = {}
        for chunk in chunks(list(ids)):
            for memory_id, event_id in self._execute(
                "SELECT memory_id, event_id FROM memory_sources "
                f"WHERE memory_id IN ({placeholders(len(chunk))}) ORDER BY rowid",
                chunk,
            ):
                sources.setdefault(memory_id, []).append(event_id)
        return sources

    def memory_ids_starting(self, workspace_id: str, prefix: str, limit: int) -> list[str]:
        # substr, not LIKE: SQLite's LIKE ignores case and reads "_" as any character.
        with self._read():
            rows = self._execute(
                "SELECT id FROM memories WHERE workspace_id = ? AND substr(id, 1, ?) = ? "
                "ORDER BY id LIMIT ?",
                (workspace_id, len(prefix), prefix, limit),
            ).fetchall()
        return [str(r[0]) for r in rows]

    def workspaces(self) -> list[str]:
        with self._read():
            rows = self._execute(
                "SELECT DISTINCT workspace_id FROM memories ORDER BY workspace_id"
            ).fetchall()
        return [str(r[0]) for r in rows]

    def workspace_counts(self) -> list[WorkspaceCounts]:
        with self._read():
            rows = self._execute(WORKSPACE_COUNTS).fetchall()
        return [WorkspaceCounts(str(w), int(m), int(e)) for w, m, e in rows]

    def known_hashes(self, flt: ScopeFilter, hashes: Sequence[str]) -> set[str]:
        where, params = scope_where(flt, alias="m")
        found: set[str] = set()
        with self._read():
            for chunk in chunks(unique(hashes)):
                found.update(
                    row[0]
                    for row in self._execute(
                        "SELECT DISTINCT m.content_hash FROM memories m "
                        f"WHERE {where} AND m.status = 'active' "
                        f"AND m.content_hash IN ({placeholders(len(chunk))})",
                        (*params, *chunk),
                    )
                )
        return found

    # -- conversations ---------------------------------------------------------------
    def pending_conversations(
        self, limit: int, workspace_id: str | None = None
    ) -> list[PendingConversation]:
        if limit <= 0:
            return []
        where, params = ("AND workspace_id = ?", (workspace_id,)) if workspace_id else ("", ())
        with self._read():
            rows = self._execute(
                "SELECT workspace_id, conversation_id, count(*), min(ts), max(ts) FROM events "
                "INDEXED BY events_pending_messages "
                f"WHERE type = 'message' AND episode_id IS NULL {where} "
                "GROUP BY workspace_id, conversation_id ORDER BY min(ts), 1, 2 LIMIT ?",
                (*params, limit),
            ).fetchall()
        return [
            PendingConversation(ws, conv, int(n), parse_ts(oldest), parse_ts(newest))
            for ws, conv, n, oldest, newest in rows
        ]

    def pending_messages(self, workspace_id: str, conversation_id: str) -> list[Event]:
        with self._read():
            rows = self._execute(
                f"SELECT {EVENT_COLUMNS} FROM events INDEXED BY events_pending_messages "
                "WHERE workspace_id = ? AND conversation_id = ? AND type = 'message' "
                "AND episode_id IS NULL ORDER BY ts, rowid",
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
        with self._write():
            if self._execute("SELECT 1 FROM memories WHERE id = ?", (episode.id,)).fetchone():
                return False
            wanted = unique(message_ids)
            found = {
                row[0]
                for chunk in chunks(wanted)
                for row in self._execute(
                    "SELECT id FROM events WHERE +workspace_id = ? AND type = 'message' "
                    f"AND id IN ({placeholders(len(chunk))})",
                    (ws, *chunk),
                )
            }
            missing = [i for i in wanted if i not in found]
            if missing:
                raise NotFound(missing[0])
            self._insert_memories([episode, *derived], now)
            self._executemany(
                "UPDATE events SET episode_id = ? WHERE id = ?",
                [(episode.id, message_id) for message_id in wanted],
            )
            if keys:
                self._executemany(
                    "UPDATE memories SET keys = ?, updated_at = ? "
                    "WHERE +workspace_id = ? AND id = ?",
                    [(text, now, ws, memory_id) for memory_id, text in keys.items()],
                )
        return True
