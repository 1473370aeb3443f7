"""SqliteStore: the service's operations (``ServiceStore``; see
``episodic.store.service``): API keys, listing and status, markdown import state, restore
and forget.

``forget`` works out everything derived from what it forgets in temporary tables and
deletes it in one transaction, then makes the deletion physical: freed pages are zeroed
(``secure_delete``), FTS5 segments merged and the WAL truncated, so forgotten text does
not linger in the file. Each of those steps is a transaction of its own, so writes go in
between them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from datetime import datetime
from typing import Any

from episodic.errors import InvalidInput, NotFound
from episodic.model import Event, Memory, MemoryStatus, ScopeFilter, utcnow
from episodic.scoring.fts import fts_terms
from episodic.store.rows import (
    api_key_from_row,
    event_from_row,
    event_row,
    history_row,
    memory_from_row,
    memory_row,
    revised,
    revision_row,
    text_sha256,
    ts_text,
    unique,
    version_from_row,
)
from episodic.store.service import (
    ForgetCounts,
    ForgetSpec,
    ImportedFile,
    MemoryVersion,
    RestoreResult,
)
from episodic.store.sql import (
    EVENT_COLUMNS,
    HISTORY_COLUMNS,
    KEY_COLUMNS,
    MEMORY_COLUMNS,
    RESTORE_EVENT_COLUMNS,
    history_insert_sql,
    revise_memory_sql,
    scope_where,
    update_memory_sql,
)
from episodic.store.sqlite.connection import SqliteBase, chunks, map_errors, placeholders
from episodic.store.sqlite.writes import write_text_passages
from episodic.store.supersession import revive_sql
from episodic.tenancy import ApiKey

_UPDATE_MEMORY = update_memory_sql("?")
_RESTORE_EVENT = (
    f"INSERT OR IGNORE INTO events ({', '.join(RESTORE_EVENT_COLUMNS)}) "
    f"VALUES ({placeholders(len(RESTORE_EVENT_COLUMNS))})"
)


class ServiceMixin(SqliteBase):
    # -- API keys --------------------------------------------------------------------
    def add_api_key(self, key: ApiKey, key_hash: str) -> None:
        with self._write():
            self._execute(
                "INSERT INTO api_keys (id, key_hash, workspace_id, role, agent_id, crew_id, "
                "label, created_at, revoked_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULL)",
                (
                    key.id,
                    key_hash,
                    key.workspace_id,
                    key.role.value,
                    key.agent_id,
                    key.crew_id,
                    key.label,
                    ts_text(key.created_at or utcnow()),
                ),
            )

    def api_key_by_hash(self, key_hash: str) -> ApiKey | None:
        with self._read():
            row = self._execute(
                f"SELECT {KEY_COLUMNS} FROM api_keys WHERE key_hash = ?", (key_hash,)
            ).fetchone()
        return None if row is None else api_key_from_row(row)

    def api_keys(self, workspace_id: str | None = None) -> list[ApiKey]:
        where, params = ("WHERE workspace_id = ?", (workspace_id,)) if workspace_id else ("", ())
        with self._read():
            rows = self._execute(
                f"SELECT {KEY_COLUMNS} FROM api_keys {where} ORDER BY created_at, id", params
            ).fetchall()
        return [api_key_from_row(row) for row in rows]

    def revoke_api_key(self, key_id: str, at: datetime) -> ApiKey | None:
        with self._write():
            self._execute(
                "UPDATE api_keys SET revoked_at = coalesce(revoked_at, ?) WHERE id = ?",
                (ts_text(at), key_id),
            )
            row = self._execute(
                f"SELECT {KEY_COLUMNS} FROM api_keys WHERE id = ?", (key_id,)
            ).fetchone()
        return None if row is None else api_key_from_row(row)

    # -- browsing --------------------------------------------------------------------
    def list_memories(
        self,
        flt: ScopeFilter,
        limit: int,
        *,
        statuses: Sequence[MemoryStatus] | None = None,
        before: tuple[datetime, str] | None = None,
        matching: str | None = None,
    ) -> list[Memory]:
        found = self._listing(flt, statuses, matching)
        if limit <= 0 or found is None:
            return []
        where, params = found
        if before is not None:
            stamp = ts_text(before[0])
            where += " AND (m.ts < ? OR (m.ts = ? AND m.id < ?))"
            params += [stamp, stamp, before[1]]
        with self._read():
            ids = [
                row[0]
                for row in self._execute(
                    f"SELECT m.id FROM memories m WHERE {where} "
                    "ORDER BY m.ts DESC, m.id DESC LIMIT ?",
                    (*params, limit),
                )
            ]
        return self.get_memories(flt.workspace_id, ids)

    def count_memories(
        self, flt: ScopeFilter, *, matching: str | None = None
    ) -> dict[tuple[str, str], int]:
        found = self._listing(flt, None, matching)
        if found is None:
            return {}
        where, params = found
        with self._read():
            rows = self._execute(
                f"SELECT m.type, m.status, COUNT(*) FROM memories m WHERE {where} "
                "GROUP BY m.type, m.status",
                params,
            ).fetchall()
        return {(str(t), str(s)): int(n) for t, s, n in rows}

    def _listing(
        self, flt: ScopeFilter, statuses: Sequence[MemoryStatus] | None, matching: str | None
    ) -> tuple[str, list[Any]] | None:
        """The WHERE clause (alias ``m``) of a listing, or None when nothing can match."""
        where, params = scope_where(flt, alias="m")
        if statuses is not None and not statuses:
            return None
        if matching is not None:
            terms = fts_terms(matching, drop_stopwords=True)
            if not terms:
                return None
            where += " AND m.seq IN (SELECT rowid FROM memories_fts WHERE memories_fts MATCH ?)"
            params.append(" AND ".join(terms))
        if statuses is not None:
            where += f" AND m.status IN ({placeholders(len(statuses))})"
            params.extend(MemoryStatus(s).value for s in statuses)
        return where, params

    def set_status(self, workspace_id: str, memory_id: str, status: MemoryStatus) -> Memory:
        with self._write():
            changed = self._execute(
                "UPDATE memories SET status = ?, updated_at = ? WHERE +workspace_id = ? AND id = ?",
                (MemoryStatus(status).value, ts_text(utcnow()), workspace_id, memory_id),
            ).rowcount
        if not changed:
            raise NotFound(memory_id)
        return self.get_memory(workspace_id, memory_id)

    # -- edits and their history ----------------------------------------------------
    def revise_memory(self, memory: Memory, *, by: str, at: datetime) -> bool:
        now = ts_text(at)
        with self._write():
            row = self._execute(
                f"SELECT {MEMORY_COLUMNS} FROM memories WHERE +workspace_id = ? AND id = ?",
                (memory.workspace, memory.id),
            ).fetchone()
            if row is None:
                raise NotFound(memory.id)
            old = memory_from_row(row, ())
            if not revised(old, memory):
                return False
            self._execute(history_insert_sql("?"), history_row(old, by, now))
            if old.content != memory.content:
                # New text: the old vector no longer describes it (the indexer embeds
                # the row again; FTS5 follows through its update trigger).
                self._execute("DELETE FROM memory_vectors WHERE memory_id = ?", (memory.id,))
            self._execute(revise_memory_sql("?"), revision_row(memory, now))
            if old.content != memory.content:
                # Its passage rows went with the old text (a trigger): the new text's.
                write_text_passages(self, [memory.id])
        return True

    def memory_history(self, workspace_id: str, memory_id: str) -> list[MemoryVersion]:
        with self._read():
            rows = self._execute(
                f"SELECT {HISTORY_COLUMNS} FROM memory_history "
                "WHERE memory_id = ? AND workspace_id = ? ORDER BY seq DESC",
                (memory_id, workspace_id),
            ).fetchall()
        return [version_from_row(row) for row in rows]

    def events_with_episodes(
        self, workspace_id: str, ids: Sequence[str]
    ) -> list[tuple[Event, str | None]]:
        wanted = unique(ids)
        rows: dict[str, tuple[Any, ...]] = {}
        with self._read():
            for chunk in chunks(wanted):
                for row in self._execute(
                    f"SELECT {EVENT_COLUMNS}, episode_id FROM events WHERE +workspace_id = ? "
                    f"AND id IN ({placeholders(len(chunk))})",
                    (workspace_id, *chunk),
                ):
                    rows[row[0]] = row
        return [(event_from_row(rows[i]), rows[i][-1]) for i in wanted if i in rows]

    # -- markdown import -------------------------------------------------------------
    def restore(
        self, memory: Memory, events: Sequence[tuple[Event, str | None]] = ()
    ) -> RestoreResult:
        now = ts_text(utcnow())
        ws = memory.workspace
        for event, _ in events:
            if event.workspace != ws:
                raise InvalidInput("events", f"event {event.id} is not of workspace {ws}")
        with self._write():
            events_inserted = 0
            if events:
                events_inserted = self._executemany(
                    _RESTORE_EVENT,
                    [(*event_row(e, admitted=True, now=now), episode) for e, episode in events],
                ).rowcount
            row = self._execute(
                f"SELECT {MEMORY_COLUMNS} FROM memories WHERE id = ?", (memory.id,)
            ).fetchone()
            if row is None:
                self._insert_memories([memory], now)
                return RestoreResult(inserted=1, events_inserted=events_inserted)
            if row[1] != ws:
                raise InvalidInput("id", f"memory {memory.id} is stored in another workspace")
            sources = [
                r[0]
                for r in self._execute(
                    "SELECT event_id FROM memory_sources WHERE memory_id = ? ORDER BY rowid",
                    (memory.id,),
                )
            ]
            if memory_from_row(row, sources) == memory:
                return RestoreResult(unchanged=1, events_inserted=events_inserted)
            if row[9] != memory.content:
                # New text: the old vector no longer describes it.
                self._execute("DELETE FROM memory_vectors WHERE memory_id = ?", (memory.id,))
            self._execute(_UPDATE_MEMORY, (*memory_row(memory, now)[2:], memory.id))
            if tuple(sources) != memory.source_event_ids:
                self._execute("DELETE FROM memory_sources WHERE memory_id = ?", (memory.id,))
                source_rows = [(memory.id, e) for e in memory.source_event_ids]
                if source_rows:
                    self._check_sources(source_rows)
                    self._executemany(
                        "INSERT OR IGNORE INTO memory_sources (memory_id, event_id) VALUES (?, ?)",
                        source_rows,
                    )
        return RestoreResult(updated=1, events_inserted=events_inserted)

    def import_state(self, root: str) -> dict[str, ImportedFile]:
        with self._read():
            rows = self._execute(
                "SELECT path, mtime_ns, size, sha256, workspace_id, memory_id FROM import_files "
                "WHERE root = ?",
                (root,),
            ).fetchall()
        return {r[0]: ImportedFile(r[0], int(r[1]), int(r[2]), r[3], r[4], r[5]) for r in rows}

    def save_import_state(
        self, root: str, files: Sequence[ImportedFile], removed: Sequence[str] = ()
    ) -> None:
        now = ts_text(utcnow())
        with self._write():
            if files:
                self._executemany(
                    "INSERT OR REPLACE INTO import_files (root, path, mtime_ns, size, sha256, "
                    "workspace_id, memory_id, imported_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    [
                        (
                            root,
                            f.path,
                            f.mtime_ns,
                            f.size,
                            f.sha256,
                            f.workspace_id,
                            f.memory_id,
                            now,
                        )
                        for f in files
                    ],
                )
            if removed:
                self._executemany(
                    "DELETE FROM import_files WHERE root = ? AND path = ?",
                    [(root, path) for path in removed],
                )

    def delete_memories(self, workspace_id: str, ids: Sequence[str]) -> int:
        deleted = 0
        with self._write():
            for chunk in chunks(unique(ids)):
                marks = placeholders(len(chunk))
                self._execute(f"DELETE FROM memory_sources WHERE memory_id IN ({marks})", chunk)
                self._execute(revive_sql(f"({marks})", "?"), (ts_text(utcnow()), *chunk, *chunk))
                deleted += self._execute(
                    f"DELETE FROM memories WHERE +workspace_id = ? AND id IN ({marks})",
                    (workspace_id, *chunk),
                ).rowcount
        return deleted

    # -- forgetting ------------------------------------------------------------------
    def forget(self, spec: ForgetSpec, *, rekey: Callable[[Event], str]) -> ForgetCounts:
        ws = spec.workspace_id
        if not ws or not ws.strip():
            raise InvalidInput("workspace", "required: forgetting runs inside one workspace")
        where = ["workspace_id = ?"]
        params: list[Any] = [ws]
        for column in ("agent_id", "resource_id", "conversation_id"):
            value = getattr(spec, column)
            if value is not None:
                where.append(f"{column} = ?")
                params.append(value)
        if spec.memory_id is not None:
            where.append("id = ?")
            params.append(spec.memory_id)
        if spec.before is not None:
            where.append("ts < ?")
            params.append(ts_text(spec.before))
        match = " AND ".join(where)
        with self._zeroing():
            with self._write():
                counts, contents = self._forget_rows(spec, match, params, rekey)
            with self._dense_lock:
                self._dense.pop(ws, None)
            counts = replace(counts, embedding_cache=self._forget_cache_entries(contents))
            self._purge_fts()
        # Outside the lock: the truncate waits for readers, and writes go on meanwhile.
        self._truncate_wal()
        return counts

    @contextmanager
    def _zeroing(self) -> Iterator[None]:
        """Freed pages are zeroed (``secure_delete``) for the block, so the forgotten text
        does not linger in the file; and for as long as any forget is in one, since the
        writes that run between its steps may free pages of the old FTS5 segments too (an
        automerge)."""
        with self._lock, map_errors():
            self._zeroing_forgets += 1
            if self._zeroing_forgets == 1:
                self._execute("PRAGMA secure_delete = ON")
        try:
            yield
        finally:
            with self._lock, map_errors():
                self._zeroing_forgets -= 1
                if self._zeroing_forgets == 0 and not self._closed:
                    self._execute("PRAGMA secure_delete = OFF")

    def _purge_fts(self) -> None:
        """Drop forgotten terms from the FTS5 indexes (memories, their passages, the
        journal). A deleted row leaves its terms in the old segments beside a tombstone
        until those merge; ``optimize`` merges them all. Each index in a transaction of
        its own, the writes waiting meanwhile let in before each, so a write waits for one
        merge at most, not the whole forget."""
        for table in ("memories_fts", "passages_fts", "journal_fts"):
            self._let_writes_in()
            with self._write():
                self._execute(f"INSERT INTO {table} ({table}) VALUES ('optimize')")

    def _forget_rows(
        self, spec: ForgetSpec, match: str, params: Sequence[Any], rekey: Callable[[Event], str]
    ) -> tuple[ForgetCounts, list[str]]:
        """Delete what ``match`` and what was derived from it (one transaction, the
        caller's); the counts and the texts of the memories it deleted."""
        ws = spec.workspace_id
        for table in ("forget_events", "forget_memories"):
            self._execute(f"CREATE TEMP TABLE IF NOT EXISTS {table} (id TEXT PRIMARY KEY)")
            self._execute(f"DELETE FROM {table}")
        self._execute(
            f"INSERT OR IGNORE INTO forget_events SELECT id FROM events WHERE {match}", params
        )
        self._execute(
            f"INSERT OR IGNORE INTO forget_memories SELECT id FROM memories WHERE {match}", params
        )
        # A journal memory shares its event's id, and what was derived from a forgotten
        # event (an episode, an entry, a learning) goes with it; one round reaches what
        # is derived from those. Each step starts from the few ids already found (CROSS
        # JOIN keeps that order): the planner, which has no statistics for the temporary
        # tables, otherwise walked every row of the workspace.
        for _ in range(2):
            self._execute(
                "INSERT OR IGNORE INTO forget_memories SELECT m.id FROM forget_events f "
                "CROSS JOIN memories m ON m.id = f.id WHERE m.workspace_id = ?",
                (ws,),
            )
            self._execute(
                "INSERT OR IGNORE INTO forget_memories SELECT s.memory_id FROM forget_events f "
                "CROSS JOIN memory_sources s ON s.event_id = f.id "
                "CROSS JOIN memories m ON m.id = s.memory_id WHERE m.workspace_id = ?",
                (ws,),
            )
            # A consolidated rule quotes its evidence: it goes with any of it.
            self._execute(
                "INSERT OR IGNORE INTO forget_memories SELECT r.src FROM forget_memories f "
                "CROSS JOIN memory_relations r ON r.dst = f.id "
                "CROSS JOIN memories m ON m.id = r.src "
                "WHERE r.relation = 'supports' AND m.workspace_id = ?",
                (ws,),
            )
            self._execute(
                "INSERT OR IGNORE INTO forget_events SELECT e.id FROM forget_memories f "
                "CROSS JOIN events e ON e.id = f.id WHERE e.workspace_id = ?",
                (ws,),
            )
        # The rest of a forgotten rule's evidence may be consolidated again.
        self._execute(
            "UPDATE memories SET consolidated_at = NULL WHERE +workspace_id = ? AND id IN "
            "(SELECT r.dst FROM forget_memories f CROSS JOIN memory_relations r "
            "ON r.src = f.id WHERE r.relation = 'supports') "
            "AND id NOT IN (SELECT id FROM forget_memories)",
            (ws,),
        )
        contents = [
            row[0]
            for row in self._execute(
                "SELECT content FROM memories WHERE id IN (SELECT id FROM forget_memories) "
                "UNION SELECT content FROM memory_history "
                "WHERE memory_id IN (SELECT id FROM forget_memories)"
            )
        ]
        # Messages that stay but whose episode goes keep only their own keys.
        orphans = self._execute(
            f"SELECT {EVENT_COLUMNS} FROM events WHERE +workspace_id = ? AND type = 'message' "
            "AND episode_id IS NOT NULL AND episode_id IN (SELECT id FROM forget_memories) "
            "AND id NOT IN (SELECT id FROM forget_events)",
            (ws,),
        ).fetchall()
        now = ts_text(utcnow())
        rekeyed = 0
        if orphans:
            rekeyed = self._executemany(
                "UPDATE memories SET keys = ?, updated_at = ? WHERE +workspace_id = ? AND id = ? "
                "AND id NOT IN (SELECT id FROM forget_memories)",
                [(rekey(event_from_row(row)), now, ws, row[0]) for row in orphans],
            ).rowcount
        in_memories = "(SELECT id FROM forget_memories)"
        vectors = self._execute(
            f"SELECT count(*) FROM memory_vectors WHERE memory_id IN {in_memories}"
        ).fetchone()[0]
        relations = self._execute(
            f"SELECT count(*) FROM memory_relations WHERE src IN {in_memories} "
            f"OR dst IN {in_memories}"
        ).fetchone()[0]
        history = self._execute(
            f"SELECT count(*) FROM memory_history WHERE memory_id IN {in_memories}"
        ).fetchone()[0]
        # Archived journal rows carry the same scope columns (m004): the spec's own
        # filter reaches them, and so does anything forgotten by id.
        # Three statements, not one with OR: each then takes its own index (an OR of the
        # filter and the ids read every archived row of the workspace).
        archived = self._execute(f"DELETE FROM events_archive WHERE {match}", params).rowcount
        for ids in ("(SELECT id FROM forget_events)", in_memories):
            archived += self._execute(
                f"DELETE FROM events_archive WHERE id IN {ids} AND +workspace_id = ?", (ws,)
            ).rowcount
        import_files = self._execute(
            f"DELETE FROM import_files WHERE memory_id IN {in_memories}"
        ).rowcount
        # Pending and past reviews (m004) hold the recall's query and the memory ids it
        # returned: a review goes when it names a forgotten memory or was made in the
        # forgotten scope. Nudges are per agent.
        scoped = [
            f"{column} = ?" for column in ("agent_id", "conversation_id") if getattr(spec, column)
        ]
        scoped_params = [
            getattr(spec, c) for c in ("agent_id", "conversation_id") if getattr(spec, c)
        ]
        if spec.before is not None and spec.age_only:
            scoped.append("recalled_at < ?")
            scoped_params.append(ts_text(spec.before))
        review_where = (
            "workspace_id = ?"
            if spec.whole_workspace
            else "workspace_id = ? AND (EXISTS (SELECT 1 FROM json_each(memory_reviews.memory_ids)"
            f" AS j WHERE j.value IN {in_memories})"
            + "".join(f" OR {clause}" for clause in scoped)
            + ")"
        )
        extensions = self._execute(
            f"DELETE FROM memory_reviews WHERE {review_where}",
            (ws, *([] if spec.whole_workspace else scoped_params)),
        ).rowcount
        if spec.whole_workspace or spec.agent_id is not None:
            extensions += self._execute(
                "DELETE FROM memory_nudges WHERE workspace_id = ?"
                + ("" if spec.whole_workspace else " AND agent_id = ?"),
                (ws,) if spec.whole_workspace else (ws, spec.agent_id),
            ).rowcount
        self._execute(
            f"DELETE FROM memory_sources WHERE memory_id IN {in_memories} "
            "OR event_id IN (SELECT id FROM forget_events)"
        )
        self._execute(revive_sql(in_memories, "?"), (ts_text(utcnow()),))
        memories = self._execute(f"DELETE FROM memories WHERE id IN {in_memories}").rowcount
        events = self._execute(
            "DELETE FROM events WHERE id IN (SELECT id FROM forget_events)"
        ).rowcount
        snapshots = 0
        if spec.whole_workspace:
            snapshots = self._execute(
                "DELETE FROM memory_health_snapshots WHERE workspace_id = ?", (ws,)
            ).rowcount
        counts = ForgetCounts(
            memories=memories,
            events=events,
            vectors=int(vectors),
            relations=int(relations),
            archived=archived,
            embedding_cache=0,  # forget() counts them, after this transaction
            import_files=import_files,
            health_snapshots=snapshots,
            extensions=extensions,
            rekeyed=rekeyed,
            history=int(history),
        )
        return counts, contents

    def _forget_cache_entries(self, contents: Sequence[str]) -> int:
        """Drop the cached embeddings of forgotten texts that no remaining memory (of any
        workspace: the cache is shared) still holds. Called once the rows are gone. The
        check reads every memory's text (no index covers it), so it runs on a read
        connection, and only the deletes take the writer; a memory of the same text
        stored in between only costs its text an embedding again."""
        kept: set[str] = set()
        with self._read():
            for chunk in chunks(list(contents)):
                kept.update(
                    row[0]
                    for row in self._execute(
                        "SELECT content FROM memories "
                        f"WHERE content IN ({placeholders(len(chunk))})",
                        chunk,
                    )
                )
        gone = [text_sha256(text) for text in contents if text not in kept]
        if not gone:
            return 0
        dropped = 0
        with self._write():
            for chunk in chunks(gone):
                dropped += self._execute(
                    "DELETE FROM embedding_cache "
                    f"WHERE content_hash IN ({placeholders(len(chunk))})",
                    chunk,
                ).rowcount
        return dropped
