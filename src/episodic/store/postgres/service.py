"""PostgresStore: the service's part (see the package docstring): API keys, listing and
status, markdown import state, restore and forget.

``SqliteStore``'s behaviour. Two places needed more than a port, because several
processes share the database (a third, NUL characters, because PostgreSQL text cannot
hold them: see ``_has_nul``):

- ``restore`` inserts the memory or, in the same statement, locks the row already there
  before reading it, so two imports of the same memory never both insert or overwrite
  from a stale read.
- ``forget`` works out, inside the database, everything derived from what it forgets and
  deletes it in the same transaction. It holds the journal and memory tables in EXCLUSIVE
  mode meanwhile (reads go on; writes wait): a memory appended or indexed concurrently
  could otherwise cite an event forget is deleting, and survive it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from episodic.errors import InvalidInput, NotFound, StoreError
from episodic.model import Event, Memory, MemoryStatus, ScopeFilter, utcnow
from episodic.store.postgres.connection import Conn, PgBase, _has_nul
from episodic.store.postgres.sparse import tsquery_all
from episodic.store.rows import (
    api_key_from_row,
    event_from_row,
    event_row,
    history_row,
    memory_from_row,
    memory_row,
    revised,
    revision_row,
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
    MEMORY_INSERT_COLUMNS,
    RESTORE_EVENT_COLUMNS,
    history_insert_sql,
    revise_memory_sql,
    scope_where,
    update_memory_sql,
)
from episodic.store.supersession import revive_sql
from episodic.tenancy import ApiKey

# A memory's columns followed by its source events in the order they were stored, so one
# query gives whole memories (``FROM memories m``).
_MEMORY_WITH_SOURCES = (
    f"{MEMORY_COLUMNS}, (SELECT array_agg(s.event_id ORDER BY s.seq) FROM memory_sources s "
    "WHERE s.memory_id = m.id)"
)
_INSERT_MEMORY = (
    f"INSERT INTO memories ({', '.join(MEMORY_INSERT_COLUMNS)}) "
    f"VALUES ({', '.join(['%s'] * len(MEMORY_INSERT_COLUMNS))}) "
    # A row already there is locked, not changed ("WHERE false"): restore then compares
    # and overwrites it with no other import or forget in between.
    "ON CONFLICT (id) DO UPDATE SET id = EXCLUDED.id WHERE false"
)
_UPDATE_MEMORY = update_memory_sql("%s")
_RESTORE_EVENT = (
    f"INSERT INTO events ({', '.join(RESTORE_EVENT_COLUMNS)}) "
    f"VALUES ({', '.join(['%s'] * len(RESTORE_EVENT_COLUMNS))}) ON CONFLICT (id) DO NOTHING"
)
# The sets of ids one forget removes; dropped with its transaction.
_FORGET_TABLES = ("forget_events", "forget_memories")
_FORGOTTEN_MEMORIES = "(SELECT id FROM forget_memories)"
_FORGOTTEN_EVENTS = "(SELECT id FROM forget_events)"


def _whole(row: Sequence[Any]) -> Memory:
    """A ``_MEMORY_WITH_SOURCES`` row as a memory."""
    return memory_from_row(row[:-1], row[-1] or ())


def _refuse_nul(obj: Memory | Event | ApiKey, prefix: str = "") -> None:
    """``InvalidInput`` naming the first text field of ``obj`` that holds a NUL."""
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        if _has_nul(*(value if isinstance(value, tuple) else (value,))):
            raise InvalidInput(prefix + f.name, "cannot hold a NUL (0x00) character")


class ServiceMixin(PgBase):
    # -- API keys --------------------------------------------------------------------
    def add_api_key(self, key: ApiKey, key_hash: str) -> None:
        _refuse_nul(key)
        with self._write() as conn:
            self._exec(
                conn,
                "INSERT INTO api_keys (id, key_hash, workspace_id, role, agent_id, crew_id, "
                "label, created_at, revoked_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, NULL)",
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
        if _has_nul(key_hash):
            return None
        with self._read() as conn:
            row = self._exec(
                conn, f"SELECT {KEY_COLUMNS} FROM api_keys WHERE key_hash = %s", (key_hash,)
            ).fetchone()
        return None if row is None else api_key_from_row(row)

    def api_keys(self, workspace_id: str | None = None) -> list[ApiKey]:
        if _has_nul(workspace_id):
            return []
        where, params = ("WHERE workspace_id = %s", (workspace_id,)) if workspace_id else ("", ())
        with self._read() as conn:
            rows = self._exec(
                conn, f"SELECT {KEY_COLUMNS} FROM api_keys {where} ORDER BY created_at, id", params
            ).fetchall()
        return [api_key_from_row(row) for row in rows]

    def revoke_api_key(self, key_id: str, at: datetime) -> ApiKey | None:
        if _has_nul(key_id):
            return None
        # coalesce keeps the first revocation when two race: the second waits for the
        # first's row lock, then re-reads the row.
        with self._write() as conn:
            row = self._exec(
                conn,
                "UPDATE api_keys SET revoked_at = coalesce(revoked_at, %s) WHERE id = %s "
                f"RETURNING {KEY_COLUMNS}",
                (ts_text(at), key_id),
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
            where += " AND (m.ts < %s OR (m.ts = %s AND m.id < %s))"
            params += [stamp, stamp, before[1]]
        if _has_nul(*params):
            return []
        with self._read() as conn:
            rows = self._exec(
                conn,
                f"SELECT {_MEMORY_WITH_SOURCES} FROM memories m WHERE {where} "
                "ORDER BY m.ts DESC, m.id DESC LIMIT %s",
                (*params, limit),
            ).fetchall()
        return [_whole(row) for row in rows]

    def count_memories(
        self, flt: ScopeFilter, *, matching: str | None = None
    ) -> dict[tuple[str, str], int]:
        found = self._listing(flt, None, matching)
        if found is None or _has_nul(*found[1]):
            return {}
        where, params = found
        with self._read() as conn:
            rows = self._exec(
                conn,
                f"SELECT m.type, m.status, COUNT(*) FROM memories m WHERE {where} "
                "GROUP BY m.type, m.status",
                params,
            ).fetchall()
        return {(str(t), str(s)): int(n) for t, s, n in rows}

    def _listing(
        self, flt: ScopeFilter, statuses: Sequence[MemoryStatus] | None, matching: str | None
    ) -> tuple[str, list[Any]] | None:
        """The WHERE clause (alias ``m``) of a listing, or None when nothing can match."""
        where, params = scope_where(flt, alias="m", mark="%s")
        if statuses is not None and not statuses:
            return None
        if matching is not None:
            query = tsquery_all(matching)
            if query is None:
                return None
            where += " AND m.tsv @@ to_tsquery('english', %s)"
            params.append(query)
        if statuses is not None:
            where += " AND m.status = ANY(%s::text[])"
            params.append([MemoryStatus(s).value for s in statuses])
        return where, params

    # -- edits and their history ----------------------------------------------------
    def revise_memory(self, memory: Memory, *, by: str, at: datetime) -> bool:
        _refuse_nul(memory)
        if _has_nul(by):
            raise InvalidInput("by", "cannot hold a NUL (0x00) character")
        now = ts_text(at)
        with self._write() as conn:
            # Locked until commit: two edits of one memory each keep the other's version.
            row = self._exec(
                conn,
                f"SELECT {MEMORY_COLUMNS} FROM memories WHERE workspace_id = %s AND id = %s "
                "FOR UPDATE",
                (memory.workspace, memory.id),
            ).fetchone()
            if row is None:
                raise NotFound(memory.id)
            old = memory_from_row(row, ())
            if not revised(old, memory):
                return False
            self._exec(conn, history_insert_sql("%s"), history_row(old, by, now))
            if old.content != memory.content:
                # New text: the old vector no longer describes it (the indexer embeds the
                # row again; the tsvector is a generated column).
                self._exec(conn, "DELETE FROM memory_vectors WHERE memory_id = %s", (memory.id,))
            self._exec(conn, revise_memory_sql("%s"), revision_row(memory, now))
        return True

    def memory_history(self, workspace_id: str, memory_id: str) -> list[MemoryVersion]:
        if _has_nul(workspace_id, memory_id):
            return []
        with self._read() as conn:
            rows = self._exec(
                conn,
                f"SELECT {HISTORY_COLUMNS} FROM memory_history "
                "WHERE memory_id = %s AND workspace_id = %s ORDER BY seq DESC",
                (memory_id, workspace_id),
            ).fetchall()
        return [version_from_row(row) for row in rows]

    def set_status(self, workspace_id: str, memory_id: str, status: MemoryStatus) -> Memory:
        if _has_nul(workspace_id, memory_id):
            raise NotFound(memory_id)
        with self._write() as conn:
            row = self._exec(
                conn,
                "UPDATE memories m SET status = %s, updated_at = %s "
                f"WHERE m.workspace_id = %s AND m.id = %s RETURNING {_MEMORY_WITH_SOURCES}",
                (MemoryStatus(status).value, ts_text(utcnow()), workspace_id, memory_id),
            ).fetchone()
        if row is None:
            raise NotFound(memory_id)
        return _whole(row)

    def events_with_episodes(
        self, workspace_id: str, ids: Sequence[str]
    ) -> list[tuple[Event, str | None]]:
        wanted = [i for i in unique(ids) if not _has_nul(i)]
        if not wanted or _has_nul(workspace_id):
            return []
        with self._read() as conn:
            rows = {
                row[0]: row
                for row in self._exec(
                    conn,
                    f"SELECT {EVENT_COLUMNS}, episode_id FROM events WHERE workspace_id = %s "
                    "AND id = ANY(%s::text[])",
                    (workspace_id, wanted),
                ).fetchall()
            }
        return [(event_from_row(rows[i]), rows[i][-1]) for i in wanted if i in rows]

    # -- markdown import -------------------------------------------------------------
    def restore(
        self, memory: Memory, events: Sequence[tuple[Event, str | None]] = ()
    ) -> RestoreResult:
        now = ts_text(utcnow())
        ws = memory.workspace
        _refuse_nul(memory)
        for event, episode in events:
            if event.workspace != ws:
                raise InvalidInput("events", f"event {event.id} is not of workspace {ws}")
            _refuse_nul(event, "events.")
            if _has_nul(episode):
                raise InvalidInput("events.episode_id", "cannot hold a NUL (0x00) character")
        values = memory_row(memory, now)
        with self._write() as conn:
            events_inserted = self._executemany(
                conn,
                _RESTORE_EVENT,
                [(*event_row(e, admitted=True, now=now), episode) for e, episode in events],
            )
            if self._exec(conn, _INSERT_MEMORY, values).rowcount == 1:
                self._restore_sources(conn, memory)
                return RestoreResult(inserted=1, events_inserted=events_inserted)
            row = self._exec(
                conn, f"SELECT {_MEMORY_WITH_SOURCES} FROM memories m WHERE m.id = %s", (memory.id,)
            ).fetchone()
            if row is None:
                raise StoreError(f"memory {memory.id} was deleted while restoring it; retry")
            if row[1] != ws:
                raise InvalidInput("id", f"memory {memory.id} is stored in another workspace")
            stored = _whole(row)
            if stored == memory:
                return RestoreResult(unchanged=1, events_inserted=events_inserted)
            if stored.content != memory.content:
                # New text: the old vector no longer describes it.
                self._exec(conn, "DELETE FROM memory_vectors WHERE memory_id = %s", (memory.id,))
            self._exec(conn, _UPDATE_MEMORY, (*values[2:], memory.id))
            if stored.source_event_ids != memory.source_event_ids:
                self._exec(conn, "DELETE FROM memory_sources WHERE memory_id = %s", (memory.id,))
                self._restore_sources(conn, memory)
        return RestoreResult(updated=1, events_inserted=events_inserted)

    def _restore_sources(self, conn: Conn, memory: Memory) -> None:
        """Store a memory's sources in order; each must be an event in the journal or its
        archive (the only guard: migration 4 dropped the foreign key)."""
        wanted = unique(memory.source_event_ids)
        if not wanted:
            return
        found = {
            row[0]
            for row in self._exec(
                conn,
                "SELECT id FROM events WHERE id = ANY(%s::text[]) "
                "UNION ALL SELECT id FROM events_archive WHERE id = ANY(%s::text[])",
                (wanted, wanted),
            ).fetchall()
        }
        for event_id in wanted:
            if event_id not in found:
                raise InvalidInput(
                    "source_event_ids",
                    f"memory {memory.id} cites event {event_id}, which is not stored; "
                    "append the event in the same call or before",
                )
        self._executemany(
            conn,
            "INSERT INTO memory_sources (memory_id, event_id) VALUES (%s, %s) "
            "ON CONFLICT DO NOTHING",
            [(memory.id, event_id) for event_id in wanted],
        )

    def import_state(self, root: str) -> dict[str, ImportedFile]:
        if _has_nul(root):
            return {}
        with self._read() as conn:
            rows = self._exec(
                conn,
                "SELECT path, mtime_ns, size, sha256, workspace_id, memory_id FROM import_files "
                "WHERE root = %s",
                (root,),
            ).fetchall()
        return {r[0]: ImportedFile(r[0], int(r[1]), int(r[2]), r[3], r[4], r[5]) for r in rows}

    def save_import_state(
        self, root: str, files: Sequence[ImportedFile], removed: Sequence[str] = ()
    ) -> None:
        now = ts_text(utcnow())
        with self._write() as conn:
            self._executemany(
                conn,
                "INSERT INTO import_files (root, path, mtime_ns, size, sha256, workspace_id, "
                "memory_id, imported_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s) "
                "ON CONFLICT (root, path) DO UPDATE SET mtime_ns = EXCLUDED.mtime_ns, "
                "size = EXCLUDED.size, sha256 = EXCLUDED.sha256, "
                "workspace_id = EXCLUDED.workspace_id, memory_id = EXCLUDED.memory_id, "
                "imported_at = EXCLUDED.imported_at",
                [
                    (root, f.path, f.mtime_ns, f.size, f.sha256, f.workspace_id, f.memory_id, now)
                    for f in files
                ],
            )
            if removed:
                self._exec(
                    conn,
                    "DELETE FROM import_files WHERE root = %s AND path = ANY(%s::text[])",
                    (root, list(removed)),
                )

    def delete_memories(self, workspace_id: str, ids: Sequence[str]) -> int:
        wanted = [i for i in unique(ids) if not _has_nul(i)]
        if not wanted or _has_nul(workspace_id):
            return 0
        # Sources, vectors, edges and compaction records cascade; the tsvector is a column.
        with self._write() as conn:
            self._exec(
                conn,
                revive_sql("(SELECT unnest(%s::text[]))", "%s"),
                (ts_text(utcnow()), wanted, wanted),
            )
            return self._exec(
                conn,
                "DELETE FROM memories WHERE workspace_id = %s AND id = ANY(%s::text[])",
                (workspace_id, wanted),
            ).rowcount

    # -- forgetting ------------------------------------------------------------------
    def forget(self, spec: ForgetSpec, *, rekey: Callable[[Event], str]) -> ForgetCounts:
        ws = spec.workspace_id
        if not ws or not ws.strip():
            raise InvalidInput("workspace", "required: forgetting runs inside one workspace")
        if _has_nul(ws, spec.agent_id, spec.resource_id, spec.conversation_id, spec.memory_id):
            return ForgetCounts()  # nothing stored can match
        where = ["workspace_id = %s"]
        params: list[Any] = [ws]
        for column in ("agent_id", "resource_id", "conversation_id"):
            value = getattr(spec, column)
            if value is not None:
                where.append(f"{column} = %s")
                params.append(value)
        if spec.memory_id is not None:
            where.append("id = %s")
            params.append(spec.memory_id)
        if spec.before is not None:
            where.append("ts < %s")
            params.append(ts_text(spec.before))
        with self._write() as conn:
            # Writers of these tables wait until the forget commits (see the module
            # docstring); events first, as appends and archiving take them.
            self._exec(conn, "LOCK TABLE events, memories, events_archive IN EXCLUSIVE MODE")
            return self._forget_rows(conn, spec, " AND ".join(where), params, rekey)

    def _forget_rows(
        self,
        conn: Conn,
        spec: ForgetSpec,
        match: str,
        params: Sequence[Any],
        rekey: Callable[[Event], str],
    ) -> ForgetCounts:
        ws = spec.workspace_id
        for table in _FORGET_TABLES:
            self._exec(
                conn,
                f'CREATE TEMP TABLE {table} (id TEXT COLLATE "C" PRIMARY KEY) ON COMMIT DROP',
            )
        self._exec(
            conn,
            f"INSERT INTO forget_events SELECT id FROM events WHERE {match} ON CONFLICT DO NOTHING",
            params,
        )
        self._exec(
            conn,
            f"INSERT INTO forget_memories SELECT id FROM memories WHERE {match} "
            "ON CONFLICT DO NOTHING",
            params,
        )
        # A journal memory shares its event's id, and what was derived from a forgotten
        # event (an episode, an entry, a learning) goes with it; one round reaches what
        # is derived from those.
        for _ in range(2):
            self._exec(
                conn,
                "INSERT INTO forget_memories SELECT m.id FROM memories m "
                "JOIN forget_events f ON f.id = m.id WHERE m.workspace_id = %s "
                "ON CONFLICT DO NOTHING",
                (ws,),
            )
            self._exec(
                conn,
                "INSERT INTO forget_memories SELECT s.memory_id FROM memory_sources s "
                "JOIN forget_events f ON f.id = s.event_id "
                "JOIN memories m ON m.id = s.memory_id AND m.workspace_id = %s "
                "ON CONFLICT DO NOTHING",
                (ws,),
            )
            # A consolidated rule quotes its evidence: it goes with any of it.
            self._exec(
                conn,
                "INSERT INTO forget_memories SELECT r.src FROM memory_relations r "
                "JOIN forget_memories f ON f.id = r.dst "
                "JOIN memories m ON m.id = r.src AND m.workspace_id = %s "
                "WHERE r.relation = 'supports' ON CONFLICT DO NOTHING",
                (ws,),
            )
            self._exec(
                conn,
                "INSERT INTO forget_events SELECT e.id FROM events e "
                "JOIN forget_memories f ON f.id = e.id WHERE e.workspace_id = %s "
                "ON CONFLICT DO NOTHING",
                (ws,),
            )
        # The rest of a forgotten rule's evidence may be consolidated again.
        self._exec(
            conn,
            "UPDATE memories SET consolidated_at = NULL WHERE workspace_id = %s AND id IN "
            "(SELECT r.dst FROM memory_relations r JOIN forget_memories f ON f.id = r.src "
            f"WHERE r.relation = 'supports') AND id NOT IN {_FORGOTTEN_MEMORIES}",
            (ws,),
        )
        # Messages that stay but whose episode goes keep only their own keys.
        orphans = self._exec(
            conn,
            f"SELECT {EVENT_COLUMNS} FROM events WHERE workspace_id = %s AND type = 'message' "
            f"AND episode_id IN {_FORGOTTEN_MEMORIES} AND id NOT IN {_FORGOTTEN_EVENTS}",
            (ws,),
        ).fetchall()
        rekeyed = 0
        if orphans:
            rekeyed = self._exec(
                conn,
                "UPDATE memories m SET keys = o.keys, updated_at = %s "
                "FROM unnest(%s::text[], %s::text[]) AS o(id, keys) "
                "WHERE m.workspace_id = %s AND m.id = o.id "
                "AND NOT EXISTS (SELECT 1 FROM forget_memories f WHERE f.id = m.id)",
                (
                    ts_text(utcnow()),
                    [row[0] for row in orphans],
                    [rekey(event_from_row(row)) for row in orphans],
                    ws,
                ),
            ).rowcount
        vectors = self._count(
            conn, f"SELECT count(*) FROM memory_vectors WHERE memory_id IN {_FORGOTTEN_MEMORIES}"
        )
        relations = self._count(
            conn,
            f"SELECT count(*) FROM memory_relations WHERE src IN {_FORGOTTEN_MEMORIES} "
            f"OR dst IN {_FORGOTTEN_MEMORIES}",
        )
        history = self._count(
            conn, f"SELECT count(*) FROM memory_history WHERE memory_id IN {_FORGOTTEN_MEMORIES}"
        )
        # Archived journal rows carry the same scope columns (m004): the spec's own
        # filter reaches them, and so does anything forgotten by id.
        archived = self._exec(
            conn,
            f"DELETE FROM events_archive WHERE ({match}) OR (workspace_id = %s AND "
            f"(id IN {_FORGOTTEN_EVENTS} OR id IN {_FORGOTTEN_MEMORIES}))",
            (*params, ws),
        ).rowcount
        import_files = self._exec(
            conn, f"DELETE FROM import_files WHERE memory_id IN {_FORGOTTEN_MEMORIES}"
        ).rowcount
        extensions = self._forget_extensions(conn, spec)
        # The cache is keyed by the text's hash and shared by every workspace: an entry
        # goes when no remaining memory holds its text. Hashed as content_hash() does.
        self._exec(
            conn,
            "CREATE TEMP TABLE forget_contents ON COMMIT DROP AS SELECT content "
            f"FROM memories WHERE id IN {_FORGOTTEN_MEMORIES} UNION SELECT content "
            f"FROM memory_history WHERE memory_id IN {_FORGOTTEN_MEMORIES}",
        )
        self._exec(
            conn,
            f"DELETE FROM memory_sources WHERE memory_id IN {_FORGOTTEN_MEMORIES} "
            f"OR event_id IN {_FORGOTTEN_EVENTS}",
        )
        # Vectors, edges and compaction records cascade; the tsvector is a column.
        self._exec(conn, revive_sql(_FORGOTTEN_MEMORIES, "%s"), (ts_text(utcnow()),))
        memories = self._exec(
            conn, f"DELETE FROM memories WHERE id IN {_FORGOTTEN_MEMORIES}"
        ).rowcount
        events = self._exec(conn, f"DELETE FROM events WHERE id IN {_FORGOTTEN_EVENTS}").rowcount
        snapshots = 0
        if spec.whole_workspace:
            snapshots = self._exec(
                conn, "DELETE FROM memory_health_snapshots WHERE workspace_id = %s", (ws,)
            ).rowcount
        cache = self._exec(
            conn,
            "DELETE FROM embedding_cache WHERE content_hash IN ("
            " SELECT encode(sha256(convert_to(c.content, 'UTF8')), 'hex') FROM forget_contents c"
            " WHERE NOT EXISTS (SELECT 1 FROM memories m WHERE m.content = c.content))",
        ).rowcount
        return ForgetCounts(
            memories=memories,
            events=events,
            vectors=vectors,
            relations=relations,
            archived=archived,
            embedding_cache=cache,
            import_files=import_files,
            health_snapshots=snapshots,
            extensions=extensions,
            rekeyed=rekeyed,
            history=history,
        )

    def _forget_extensions(self, conn: Conn, spec: ForgetSpec) -> int:
        """Delete the reviews and nudges the forget reaches; returns how many.

        Pending and past reviews (m004) hold the recall's query and the memory ids it
        returned: a review goes when it names a forgotten memory or was made in the
        forgotten scope. Nudges are per agent."""
        ws = spec.workspace_id
        if spec.whole_workspace:
            review_where, review_params = "workspace_id = %s", [ws]
        else:
            clauses = [f"episodic_jsonb(memory_ids) ?| ARRAY{_FORGOTTEN_MEMORIES}"]
            review_params = [ws]
            for column in ("agent_id", "conversation_id"):
                if getattr(spec, column):
                    clauses.append(f"{column} = %s")
                    review_params.append(getattr(spec, column))
            if spec.before is not None and spec.age_only:
                clauses.append("recalled_at < %s")
                review_params.append(ts_text(spec.before))
            review_where = f"workspace_id = %s AND ({' OR '.join(clauses)})"
        removed = self._exec(
            conn, f"DELETE FROM memory_reviews WHERE {review_where}", review_params
        ).rowcount
        if spec.whole_workspace:
            removed += self._exec(
                conn, "DELETE FROM memory_nudges WHERE workspace_id = %s", (ws,)
            ).rowcount
        elif spec.agent_id is not None:
            removed += self._exec(
                conn,
                "DELETE FROM memory_nudges WHERE workspace_id = %s AND agent_id = %s",
                (ws, spec.agent_id),
            ).rowcount
        return removed

    # -- plumbing --------------------------------------------------------------------
    def _count(self, conn: Conn, sql: str, params: Sequence[Any] = ()) -> int:
        row = self._exec(conn, sql, params).fetchone()
        return int(row[0]) if row else 0
