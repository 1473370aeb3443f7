"""The default backend: one SQLite file (stdlib ``sqlite3``, WAL, FTS5).

One connection per store, shared by the indexer thread and request threads under a lock.
The dense leg scans an in-process numpy matrix per workspace (``episodic.store.dense``);
each search first asks SQLite, cheaply, whether anything changed since it last looked
(``PRAGMA data_version`` sees commits of other connections, ``total_changes`` this one's)
and then loads only the vectors written since, or the whole workspace again when rows were
deleted or changed in place (see ``episodic.store.migrations`` for the bookkeeping).
"""

from __future__ import annotations

import hashlib
import heapq
import json
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from types import TracebackType
from typing import Any, Literal
from urllib.parse import quote

import numpy as np

from episodic.errors import IdTaken, InvalidInput, ModelMismatch, NotFound, StoreError
from episodic.model import Candidate, Event, Memory, MemoryStatus, Role, ScopeFilter, utcnow
from episodic.scoring.decay import (
    DECAY_FLOOR,
    DECAY_HORIZON_DAYS,
    HALF_LIFE_DAYS,
    PROMINENCE_DECAY_FLOOR,
    REFERENCE_BOOST_DIVISOR,
)
from episodic.scoring.fts import bm25_term_ceiling, fts_terms, fts_whole_word, plan_terms
from episodic.store import sqlite_integrity
from episodic.store.base import (
    AppendResult,
    ArchivedEvent,
    ConsolidationBacklog,
    ForgetCounts,
    ForgetSpec,
    FsrsUpdate,
    HealthFacts,
    HealthSnapshot,
    ImportedFile,
    Merge,
    PendingConversation,
    PendingReview,
    PendingVector,
    Relation,
    RestoreResult,
    ReviewOutcome,
    ReviewRequest,
    StoreStats,
    Vector,
    taken_ids,
)
from episodic.store.dense import LE_FLOAT32, DenseIndex, DenseRows, unit_vector
from episodic.store.integrity import IntegrityCheck
from episodic.store.migrations import LATEST_VERSION, current_version, migrate
from episodic.store.sql import normalise_scope, scope_where
from episodic.tenancy import ApiKey

Tracer = Callable[[str, Sequence[Any]], None]

MEMORY_URL = "sqlite:///:memory:"
BUSY_TIMEOUT_MS = 5000
# Well under SQLite's bound-parameter limit, and keeps each statement's plan small.
_IN_CHUNK = 500

# A word in the summary says more than the same word somewhere in the JSON payload.
BM25_CONTENT_WEIGHT = 1.0
# Derived keys (key expansion: speaker, date, the episode's title and keyphrases, facts)
# count a tenth of what was said: they are the same words for every turn of an episode,
# a prior rather than evidence. On LoCoMo as conversations, default R@10 by this weight:
# 0.1 -> 0.767, 0.2 -> 0.757, 0.3 -> 0.747, 0.5 -> 0.728 (no keys: 0.758); BM25 alone
# gains at every weight (0.636 without keys, 0.654 at 0.1, 0.679 at 0.3).
BM25_KEYS_WEIGHT = 0.1
BM25_PAYLOAD_WEIGHT = 0.5

SparseMode = Literal["seed", "stopwords", "budgeted"]
# Budgeted sparse search (SqliteStore.search_sparse), tuned on benchmarks/bench_store.py at
# 100k memories, where bm25 plus the join to memories costs ~1-2 us per scored row.
# Rare terms: every memory they match is scored, as long as they match this many in all.
SPARSE_RARE_BUDGET = 1000
# Common terms: at most this many matches in scope are scored, the newest first...
SPARSE_WINDOW = 1000
# ...found among at most this many matches in the whole table (4x more each round while
# fewer than `limit` were found). An own-scope search finds ~1 match in 20 in scope and
# pays a join for each match it looks at; this keeps that near 3 ms.
SPARSE_SCAN = 6000
# ...and to begin with at most this many per result asked for: a search for 50 looks at
# 1,500 matches first, enough for an own scope holding 1 match in 20 (~1 us a match).
SPARSE_SCAN_PER_RESULT = 30
# Terms in more than this share of memories (idf < ln 4 = 1.4, against 5-10 for the
# words that identify an episode) are dropped while a rarer term remains.
SPARSE_MAX_SHARE = 0.2
# Document counts grow as memories arrive; a few seconds old they still sort terms right.
DOC_COUNT_TTL_S = 5.0
DOC_COUNT_CACHE_TERMS = 4096
# FTS5 rowids are 64-bit signed.
_MAX_ROWID = 2**63 - 1

_MEMORY_COLUMNS = (
    "id, workspace_id, crew_id, agent_id, resource_id, conversation_id, ts, type, severity, "
    "content, payload, base_importance, importance, reference_count, last_referenced_at, "
    "status, created_at, keys, content_hash, stability, difficulty, last_reviewed_at, "
    "consolidated_at"
)
_EVENT_COLUMNS = (
    "id, workspace_id, crew_id, agent_id, resource_id, conversation_id, ts, type, severity, "
    "summary, payload, refs"
)


# -- upkeep (issue 5) ---------------------------------------------------------------------
# Seed 000's archive keeps this much of an archived event's payload (as text).
ARCHIVE_PAYLOAD_CHARS = 400
# decay_importance rewrites at most this many rows per transaction.
DECAY_CHUNK_ROWS = 50_000
# ``episodic.scoring.decay``'s formulas in SQL (SQLite >= 3.35 math functions; PostgreSQL
# has the same ones, with ln(x)/ln(2) for log2). ?1 is `now`. Tests hold each equal to its
# Python twin.
_AGE_DAYS = "max(0.0, julianday(?1) - julianday(ts))"
_DECAY_SQL = {
    "crewship": (
        f"min(1.0, max(0.0, base_importance * max({DECAY_FLOOR}, 1.0 - {_AGE_DAYS} / "
        f"{float(DECAY_HORIZON_DAYS)}) * (1.0 + log2(max(reference_count, 0) + 1) / "
        f"{float(REFERENCE_BOOST_DIVISOR)})))"
    ),
    "prominence": (
        f"base_importance * max({PROMINENCE_DECAY_FLOOR}, exp(-ln(2.0) / "
        f"{float(HALF_LIFE_DAYS)} * {_AGE_DAYS})) * (1 + max(reference_count, 0))"
    ),
}


def _pending_review(row: Sequence[Any]) -> PendingReview:
    cosines = json.loads(row[7])
    return PendingReview(
        id=int(row[0]),
        request=ReviewRequest(
            workspace_id=row[1],
            agent_id=row[2],
            crew_id=row[3],
            conversation_id=row[4],
            query=row[5],
            memory_ids=tuple(json.loads(row[6])),
            cosines=tuple(None if c is None else float(c) for c in cosines),
            recalled_at=_parse_ts(row[8]),
        ),
    )


# -- URLs and values -------------------------------------------------------------------
def sqlite_target(path_or_url: str | os.PathLike[str]) -> str:
    """The file path (or ``:memory:``) a ``sqlite:///`` URL or plain path names.

    ``sqlite:///rel/path.db`` is relative, ``sqlite:////abs/path.db`` absolute."""
    raw = os.fspath(path_or_url)
    if "://" in raw:
        scheme, _, rest = raw.partition("://")
        if scheme.lower() != "sqlite":
            raise InvalidInput("db", f"not a sqlite URL: {raw!r}")
        if not rest.startswith("/"):
            raise InvalidInput(
                "db", f"{raw!r} names a host; use sqlite:///relative.db or sqlite:////abs.db"
            )
        raw = rest[1:]
    if not raw:
        raise InvalidInput("db", "no database path given; e.g. sqlite:///./.episodic/memory.db")
    if raw == ":memory:":
        return raw
    return str(Path(raw).expanduser())


def ts_text(dt: datetime) -> str:
    """A datetime as the fixed-width UTC text the schema sorts on (naive means UTC)."""
    dt = dt.replace(tzinfo=UTC) if dt.tzinfo is None else dt.astimezone(UTC)
    return dt.replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"


def _parse_ts(text: str) -> datetime:
    return datetime.fromisoformat(text)


def _opt_ts(text: str | None) -> datetime | None:
    return None if text is None else datetime.fromisoformat(text)


def _json(field: str, value: Mapping[str, Any]) -> str:
    try:
        return json.dumps(dict(value), ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError) as exc:
        raise InvalidInput(field, f"not JSON-serialisable: {exc}") from exc


def _chunks(items: Sequence[str]) -> Iterator[Sequence[str]]:
    for start in range(0, len(items), _IN_CHUNK):
        yield items[start : start + _IN_CHUNK]


def _unique(items: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(items))


def _placeholders(n: int) -> str:
    return ",".join("?" * n)


@contextmanager
def _map_errors() -> Iterator[None]:
    """Turn every sqlite3 failure into a ``StoreError`` that keeps the cause."""
    try:
        yield
    except sqlite3.Error as exc:
        message = str(exc)
        if "locked" in message or "busy" in message:
            message = (
                f"the database stayed locked by another writer for {BUSY_TIMEOUT_MS} ms "
                f"({message}); retry, or check for a stuck process"
            )
        elif "readonly" in message:
            message = f"the store is read-only ({message})"
        else:
            message = f"sqlite: {message}"
        raise StoreError(message) from exc


class SqliteStore:
    """A memory database in one SQLite file (or ``:memory:``). See ``Store`` for the
    contract; ``tracer(sql, params)`` sees every statement this store runs."""

    def __init__(
        self,
        path_or_url: str | os.PathLike[str],
        *,
        tracer: Tracer | None = None,
        read_only: bool = False,
    ) -> None:
        self.path = sqlite_target(path_or_url)
        self.in_memory = self.path == ":memory:"
        self.url = MEMORY_URL if self.in_memory else f"sqlite:///{Path(self.path).absolute()}"
        self.read_only = read_only
        self._tracer = tracer
        self._lock = threading.RLock()
        self._closed = False
        self._dense: dict[str, DenseIndex] = {}
        self._seen_stamp: tuple[int, int] = (-1, -1)
        self._epoch = 0
        with _map_errors():
            self._conn = self._connect()
            try:
                self._prepare()
            except BaseException:
                self._conn.close()
                raise

    def _connect(self) -> sqlite3.Connection:
        # isolation_level=None: transactions are explicit (see _write/_read).
        # check_same_thread=False: one connection serves every thread, under self._lock.
        timeout = BUSY_TIMEOUT_MS / 1000
        if self.in_memory:
            return sqlite3.connect(
                ":memory:", isolation_level=None, check_same_thread=False, timeout=timeout
            )
        if self.read_only:
            uri = f"file:{quote(str(Path(self.path).absolute()))}?mode=ro"
            return sqlite3.connect(
                uri, uri=True, isolation_level=None, check_same_thread=False, timeout=timeout
            )
        Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        return sqlite3.connect(
            self.path, isolation_level=None, check_same_thread=False, timeout=timeout
        )

    def _prepare(self) -> None:
        for pragma in (
            f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}",
            "PRAGMA foreign_keys = ON",
            "PRAGMA synchronous = NORMAL",
        ):
            self._execute(pragma)
        if self.read_only:
            version = current_version(self._conn)
            if version < LATEST_VERSION:
                raise StoreError(
                    f"{self.url} is at schema v{version}, this episodic needs v{LATEST_VERSION};"
                    " open it once read-write (`episodic init`) to migrate it"
                )
        else:
            self._execute("PRAGMA journal_mode = WAL")
            tracer = self._tracer
            if tracer is not None:
                # Migration steps run on the raw connection; show them to the tracer too.
                self._conn.set_trace_callback(lambda sql: tracer(sql, ()))
            try:
                migrate(self._conn)
            finally:
                self._conn.set_trace_callback(None)
            version = current_version(self._conn)
        if version > LATEST_VERSION:
            raise StoreError(
                f"{self.url} is at schema v{version}, newer than this episodic knows "
                f"(v{LATEST_VERSION}); upgrade episodic"
            )

    # -- plumbing --------------------------------------------------------------------
    def _execute(self, sql: str, params: Sequence[Any] = ()) -> sqlite3.Cursor:
        if self._tracer is not None:
            self._tracer(sql, params)
        return self._conn.execute(sql, params)

    def _executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> sqlite3.Cursor:
        if self._tracer is not None:
            self._tracer(sql, rows)
        return self._conn.executemany(sql, rows)

    def _check_open(self) -> None:
        if self._closed:
            raise StoreError(f"the store {self.url} is closed; open a new one")

    @contextmanager
    def _write(self) -> Iterator[None]:
        """One write transaction, taken up front so a busy writer is waited for here
        rather than failing halfway through."""
        with self._lock, _map_errors():
            self._check_open()
            self._execute("BEGIN IMMEDIATE")
            try:
                yield
                self._execute("COMMIT")
            except BaseException:
                if self._conn.in_transaction:
                    self._execute("ROLLBACK")
                raise

    @contextmanager
    def _read(self) -> Iterator[None]:
        """One read snapshot, so several statements see the same commit."""
        with self._lock, _map_errors():
            self._check_open()
            self._execute("BEGIN")
            try:
                yield
            finally:
                self._execute("COMMIT")

    # -- lifecycle -------------------------------------------------------------------
    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._dense.clear()
            with _map_errors():
                self._conn.close()

    def __enter__(self) -> SqliteStore:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"SqliteStore({self.url!r})"

    def schema_version(self) -> int:
        with self._lock, _map_errors():
            self._check_open()
            return current_version(self._conn)

    # -- writing ---------------------------------------------------------------------
    def append(self, events: Sequence[Event], memories: Sequence[Memory]) -> AppendResult:
        now = ts_text(utcnow())
        admitted: set[str] = set()
        for m in memories:
            admitted.add(m.id)
            admitted.update(m.source_event_ids)
        event_rows = [
            (
                e.id,
                e.workspace_id,
                e.crew_id,
                e.agent_id,
                e.resource_id,
                e.conversation_id,
                ts_text(e.ts),
                e.type,
                e.severity,
                e.summary,
                _json("payload", e.payload),
                _json("refs", e.refs),
                1 if e.id in admitted else 0,
                now,
            )
            for e in events
        ]
        with self._write():
            inserted = 0
            if event_rows:
                # An id already archived (upkeep compaction) counts as a duplicate too.
                inserted = self._executemany(
                    "INSERT OR IGNORE INTO events (id, workspace_id, crew_id, agent_id, "
                    "resource_id, conversation_id, ts, type, severity, summary, payload, refs, "
                    "admitted, created_at) SELECT ?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14 "
                    "WHERE NOT EXISTS (SELECT 1 FROM events_archive WHERE id = ?1)",
                    event_rows,
                ).rowcount
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
            for chunk in _chunks(_unique(ids)):
                marks = _placeholders(len(chunk))
                into += self._execute(
                    f"SELECT id, workspace_id FROM {table} WHERE id IN ({marks})", chunk
                ).fetchall()
        taken = taken_ids(events, memories, journal, stored)
        if taken:
            raise IdTaken(taken)

    def _insert_memories(self, memories: Sequence[Memory], now: str) -> int:
        """INSERT OR IGNORE the memories and their sources, inside the caller's write."""
        rows = [
            (
                m.id,
                m.workspace_id,
                m.crew_id,
                m.agent_id,
                m.resource_id,
                m.conversation_id,
                ts_text(m.ts),
                m.type,
                m.severity,
                m.content,
                _json("payload", m.payload),
                float(m.base_importance),
                float(m.importance),
                int(m.reference_count),
                None if m.last_referenced_at is None else ts_text(m.last_referenced_at),
                MemoryStatus(m.status).value,
                now if m.created_at is None else ts_text(m.created_at),
                now,
                m.keys,
                m.content_hash,
                m.stability,
                m.difficulty,
                None if m.last_reviewed_at is None else ts_text(m.last_reviewed_at),
                None if m.consolidated_at is None else ts_text(m.consolidated_at),
            )
            for m in memories
        ]
        if not rows:
            return 0
        inserted = int(
            self._executemany(
                "INSERT OR IGNORE INTO memories (id, workspace_id, crew_id, agent_id, "
                "resource_id, conversation_id, ts, type, severity, content, payload, "
                "base_importance, importance, reference_count, last_referenced_at, status, "
                "created_at, updated_at, keys, content_hash, stability, difficulty, "
                "last_reviewed_at, consolidated_at) "
                "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                rows,
            ).rowcount
        )
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
        wanted = _unique([event_id for _, event_id in source_rows])
        found: set[str] = set()
        for chunk in _chunks(wanted):
            marks = _placeholders(len(chunk))
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

    def mark_referenced(self, workspace_id: str, ids: Sequence[str], at: datetime) -> None:
        stamp, now = ts_text(at), ts_text(utcnow())
        rows = [(stamp, now, workspace_id, memory_id) for memory_id in _unique(ids)]
        if not rows:
            return
        with self._write():
            self._executemany(
                "UPDATE memories SET reference_count = reference_count + 1, "
                "last_referenced_at = ?, updated_at = ? WHERE +workspace_id = ? AND id = ?",
                rows,
            )

    # -- reading ---------------------------------------------------------------------
    def get_memories(self, workspace_id: str, ids: Sequence[str]) -> list[Memory]:
        wanted = _unique(ids)
        if not wanted:
            return []
        rows: dict[str, tuple[Any, ...]] = {}
        sources: dict[str, list[str]] = {}
        with self._read():
            for chunk in _chunks(wanted):
                for row in self._execute(
                    # "+workspace_id" keeps the planner on the id key: left to itself it
                    # walks the workspace index, every row of a large workspace.
                    f"SELECT {_MEMORY_COLUMNS} FROM memories WHERE +workspace_id = ? "
                    f"AND id IN ({_placeholders(len(chunk))})",
                    (workspace_id, *chunk),
                ):
                    rows[row[0]] = row
            for chunk in _chunks(list(rows)):
                for memory_id, event_id in self._execute(
                    "SELECT memory_id, event_id FROM memory_sources "
                    f"WHERE memory_id IN ({_placeholders(len(chunk))}) ORDER BY rowid",
                    chunk,
                ):
                    sources.setdefault(memory_id, []).append(event_id)
        return [
            _memory(rows[memory_id], sources.get(memory_id, ()))
            for memory_id in wanted
            if memory_id in rows
        ]

    def get_memory(self, workspace_id: str, memory_id: str) -> Memory:
        found = self.get_memories(workspace_id, [memory_id])
        if not found:
            raise NotFound(memory_id)
        return found[0]

    def get_events(self, workspace_id: str, ids: Sequence[str]) -> list[Event]:
        wanted = _unique(ids)
        rows: dict[str, tuple[Any, ...]] = {}
        with self._read():
            for chunk in _chunks(wanted):
                for row in self._execute(
                    f"SELECT {_EVENT_COLUMNS} FROM events WHERE +workspace_id = ? "
                    f"AND id IN ({_placeholders(len(chunk))})",
                    (workspace_id, *chunk),
                ):
                    rows[row[0]] = row
        return [_event(rows[event_id]) for event_id in wanted if event_id in rows]

    def stats(self, workspace_id: str | None = None) -> StoreStats:
        where, params = ("WHERE workspace_id = ?", (workspace_id,)) if workspace_id else ("", ())
        both = "AND workspace_id = ?" if workspace_id else ""
        with self._read():
            events = self._execute(f"SELECT count(*) FROM events {where}", params).fetchone()[0]
            memories, active = self._execute(
                "SELECT count(*), coalesce(sum(status = 'active'), 0) FROM memories " + where,
                params,
            ).fetchone()
            vectors = self._execute(
                f"SELECT count(*) FROM memory_vectors {where}", params
            ).fetchone()[0]
            pending = self._execute(
                "SELECT count(*) FROM memories WHERE has_vector = 0 AND status = 'active' " + both,
                params,
            ).fetchone()[0]
            model = self._stored_model()
            version = current_version(self._conn)
        return StoreStats(
            events=int(events),
            memories=int(memories),
            active_memories=int(active),
            vectors=int(vectors),
            pending_vectors=int(pending),
            vector_model=None if model is None else model[0],
            vector_dim=None if model is None else model[1],
            schema_version=version,
        )

    # -- vectors ---------------------------------------------------------------------
    def pending_vectors(self, limit: int) -> list[PendingVector]:
        """Active memories without a vector, in the order they were stored."""
        if limit <= 0:
            return []
        with self._read():
            rows = self._execute(
                "SELECT id, workspace_id, content FROM memories "
                "WHERE has_vector = 0 AND status = 'active' ORDER BY seq LIMIT ?",
                (limit,),
            ).fetchall()
        return [PendingVector(memory_id=r[0], workspace_id=r[1], content=r[2]) for r in rows]

    def index_pending(
        self,
        limit: int,
        model_id: str,
        dim: int,
        embed: Callable[[list[str]], Vector],
    ) -> list[tuple[PendingVector, Vector]]:
        # One writer per file: no claim needed, and embedding outside the write
        # transaction keeps ingest from waiting on the model.
        pending = self.pending_vectors(limit)
        if not pending:
            return []
        vectors = embed([p.content for p in pending])
        rows = [(p.memory_id, vectors[i]) for i, p in enumerate(pending)]
        self.put_vectors(model_id, dim, rows)
        return [(p, vectors[i]) for i, p in enumerate(pending)]

    def _stored_model(self) -> tuple[str, int] | None:
        row = self._execute("SELECT model, dim FROM memory_vectors LIMIT 1").fetchone()
        return None if row is None else (str(row[0]), int(row[1]))

    def vector_model(self) -> tuple[str, int] | None:
        with self._read():
            return self._stored_model()

    def put_vectors(self, model_id: str, dim: int, rows: Sequence[tuple[str, Vector]]) -> int:
        """Store vectors (normalised here if they are not unit length already) for
        memories by id; ids with no memory are skipped. ``BadEmbedding`` for a vector of
        the wrong length or with NaN/inf values, ``ModelMismatch`` when the store holds
        vectors of another model or dimension. Returns rows written."""
        if not model_id:
            raise InvalidInput("model_id", "required: vectors are only comparable per model")
        if dim <= 0:
            raise InvalidInput("dim", f"must be positive, got {dim}")
        indexed_at = ts_text(utcnow())
        params = [
            (
                unit_vector(vector, dim).astype(LE_FLOAT32).tobytes(),
                dim,
                model_id,
                indexed_at,
                memory_id,
            )
            for memory_id, vector in rows
        ]
        if not params:
            return 0
        with self._write():
            stored = self._stored_model()
            if stored is not None and stored != (model_id, dim):
                raise ModelMismatch(stored[0], stored[1], model_id, dim)
            # REPLACE of a re-embedded memory gets a fresh, higher seq: readers pick it up
            # incrementally and overwrite the old row in place.
            written = self._executemany(
                "INSERT OR REPLACE INTO memory_vectors "
                "(memory_id, workspace_id, vector, dim, model, indexed_at) "
                "SELECT id, workspace_id, ?, ?, ?, ? FROM memories WHERE id = ?",
                params,
            ).rowcount
        return int(written)

    def clear_vectors(self) -> int:
        with self._write():
            dropped = self._execute("DELETE FROM memory_vectors").rowcount
            self._dense.clear()
        return int(dropped)

    def cache_get(self, model_id: str, content_hashes: Sequence[str]) -> dict[str, Vector]:
        found: dict[str, Vector] = {}
        with self._read():
            for chunk in _chunks(_unique(content_hashes)):
                for content_hash, blob in self._execute(
                    "SELECT content_hash, vector FROM embedding_cache WHERE model = ? "
                    f"AND content_hash IN ({_placeholders(len(chunk))})",
                    (model_id, *chunk),
                ):
                    found[content_hash] = np.frombuffer(blob, LE_FLOAT32).astype(np.float32)
        return found

    def cache_put(self, model_id: str, items: Mapping[str, Vector]) -> None:
        created_at = ts_text(utcnow())
        rows = []
        for content_hash, vector in items.items():
            arr = np.asarray(vector, dtype=LE_FLOAT32).reshape(-1)
            rows.append((content_hash, model_id, int(arr.size), arr.tobytes(), created_at))
        if not rows:
            return
        with self._write():
            self._executemany(
                "INSERT OR REPLACE INTO embedding_cache "
                "(content_hash, model, dim, vector, created_at) VALUES (?, ?, ?, ?, ?)",
                rows,
            )

    # -- retrieval -------------------------------------------------------------------
    def search_recent(
        self,
        flt: ScopeFilter,
        limit: int,
        *,
        start: datetime | None = None,
        end: datetime | None = None,
        types: Sequence[str] | None = None,
    ) -> list[Candidate]:
        where, params = scope_where(flt, alias="m")
        if limit <= 0 or (types is not None and not types):
            return []
        bounds = ""
        if types is not None:
            bounds += f" AND m.type IN ({_placeholders(len(types))})"
            params.extend(types)
        if start is not None:
            bounds += " AND m.ts >= ?"
            params.append(ts_text(start))
        if end is not None:
            bounds += " AND m.ts < ?"
            params.append(ts_text(end))
        with self._read():
            rows = self._execute(
                f"SELECT m.id, m.ts FROM memories m WHERE m.status = 'active' AND {where}"
                f"{bounds} ORDER BY m.ts DESC, m.seq DESC LIMIT ?",
                (*params, limit),
            ).fetchall()
        return [
            Candidate(memory_id=memory_id, score=_parse_ts(ts).timestamp(), rank=rank)
            for rank, (memory_id, ts) in enumerate(rows, start=1)
        ]

    def neighbours(
        self, flt: ScopeFilter, ids: Sequence[str], radius: int
    ) -> dict[str, list[tuple[str, int]]]:
        if radius <= 0 or not ids:
            return {}
        wanted = _unique(ids)
        with self._read():
            anchors = self._execute(
                "SELECT id, conversation_id, ts, seq, type FROM memories WHERE +workspace_id = ? "
                f"AND id IN ({_placeholders(len(wanted))}) AND conversation_id IS NOT NULL",
                (flt.workspace_id, *wanted),
            ).fetchall()
            return {
                memory_id: [
                    *self._adjacent(flt, conversation, kind, ts, seq, radius, before=True),
                    *self._adjacent(flt, conversation, kind, ts, seq, radius, before=False),
                ]
                for memory_id, conversation, ts, seq, kind in anchors
            }

    def _adjacent(
        self,
        flt: ScopeFilter,
        conversation: str,
        kind: str,
        ts: str,
        seq: int,
        radius: int,
        *,
        before: bool,
    ) -> list[tuple[str, int]]:
        where, params = scope_where(flt, alias="m")
        op, order, sign = ("<", "DESC", -1) if before else (">", "ASC", 1)
        rows = self._execute(
            # "+m.status": walk the conversation's own index, not the workspace's timeline.
            # "+m.type": a turn's neighbours are the turns around it, not the episodes and
            # entries made from them.
            f"SELECT m.id FROM memories m WHERE {where} AND m.conversation_id = ? "
            f"AND +m.status = 'active' AND +m.type = ? AND (m.ts, m.seq) {op} (?, ?) "
            f"ORDER BY m.ts {order}, m.seq {order} LIMIT ?",
            (*params, conversation, kind, ts, seq, radius),
        ).fetchall()
        return [(row[0], sign * offset) for offset, row in enumerate(rows, start=1)]

    def conversations_of(self, workspace_id: str, ids: Sequence[str]) -> dict[str, str | None]:
        wanted = _unique(ids)
        found: dict[str, str | None] = {}
        with self._read():
            for start in range(0, len(wanted), _IN_CHUNK):
                chunk = wanted[start : start + _IN_CHUNK]
                found.update(
                    self._execute(
                        "SELECT id, conversation_id FROM memories WHERE +workspace_id = ? "
                        f"AND id IN ({_placeholders(len(chunk))})",
                        (workspace_id, *chunk),
                    ).fetchall()
                )
        return found

    def add_relations(self, workspace_id: str, edges: Sequence[Relation]) -> int:
        if not edges:
            return 0
        ends = _unique([e.src for e in edges] + [e.dst for e in edges])
        now = ts_text(utcnow())
        with self._write():
            known = {
                row[0]
                for chunk in _chunks(ends)
                for row in self._execute(
                    f"SELECT id FROM memories WHERE +workspace_id = ? "
                    f"AND id IN ({_placeholders(len(chunk))})",
                    (workspace_id, *chunk),
                )
            }
            for e in edges:
                for end in (e.src, e.dst):
                    if end not in known:
                        raise NotFound(end)
            return self._insert_edges(edges, now)

    def _insert_edges(self, edges: Sequence[Relation], now: str) -> int:
        """Upsert edges inside the caller's write (ends already checked by the caller)."""
        before = self._conn.total_changes
        self._executemany(
            "INSERT INTO memory_relations (src, dst, relation, weight, created_at) "
            "VALUES (?, ?, ?, ?, ?) ON CONFLICT (src, dst, relation) "
            "DO UPDATE SET weight = excluded.weight",
            [(e.src, e.dst, e.relation, float(e.weight), now) for e in edges],
        )
        return self._conn.total_changes - before

    def related(
        self, flt: ScopeFilter, ids: Sequence[str], relation: str = "similar"
    ) -> dict[str, list[tuple[str, float]]]:
        wanted = _unique(ids)
        if not wanted:
            return {}
        where, params = scope_where(flt, alias="m")
        marks = _placeholders(len(wanted))
        found: dict[str, list[tuple[str, float]]] = {}
        ws = flt.workspace_id
        with self._read():
            # Edges point from the newer memory to the older; both directions are related.
            # Both ends are joined to memories so neither can be another workspace's.
            rows = self._execute(
                f"SELECT r.src, r.dst, r.weight FROM memory_relations r "
                f"JOIN memories a ON a.id = r.src AND a.workspace_id = ? "
                f"JOIN memories m ON m.id = r.dst AND m.status = 'active' AND {where} "
                f"WHERE r.relation = ? AND r.src IN ({marks}) "
                f"UNION ALL SELECT r.dst, r.src, r.weight FROM memory_relations r "
                f"JOIN memories a ON a.id = r.dst AND a.workspace_id = ? "
                f"JOIN memories m ON m.id = r.src AND m.status = 'active' AND {where} "
                f"WHERE r.relation = ? AND r.dst IN ({marks}) ORDER BY 3 DESC",
                (ws, *params, relation, *wanted, ws, *params, relation, *wanted),
            ).fetchall()
        for start, other, weight in rows:
            found.setdefault(start, []).append((other, float(weight)))
        return found

    def search_dense(self, flt: ScopeFilter, query: Vector, limit: int) -> list[Candidate]:
        scope = normalise_scope(flt)
        if limit <= 0:
            return []
        with self._lock, _map_errors():
            self._check_open()
            index = self._fresh_index(flt.workspace_id)
            return index.search(flt, scope, query, limit)

    def _fresh_index(self, workspace_id: str) -> DenseIndex:
        """The workspace's dense index, brought up to date with every committed write.

        Costs one PRAGMA when nothing was written anywhere since the last search, plus two
        index lookups when something was; loads rows only when this workspace's vectors
        changed."""
        data_version = int(self._execute("PRAGMA data_version").fetchone()[0])
        stamp = (data_version, self._conn.total_changes)
        if stamp != self._seen_stamp:
            self._seen_stamp = stamp
            self._epoch += 1
        index = self._dense.get(workspace_id)
        if index is not None and index.epoch == self._epoch:
            return index

        self._execute("BEGIN")
        try:
            generation, max_seq = self._execute(
                "SELECT (SELECT generation FROM vector_generations WHERE workspace_id = ?), "
                "(SELECT max(seq) FROM memory_vectors WHERE workspace_id = ?)",
                (workspace_id, workspace_id),
            ).fetchone()
            generation, max_seq = int(generation or 0), int(max_seq or 0)
            if index is None or index.generation != generation or max_seq < index.max_seq:
                index = DenseIndex()
                index.upsert(self._dense_rows(workspace_id, after_seq=0))
            elif max_seq > index.max_seq:
                index.upsert(self._dense_rows(workspace_id, after_seq=index.max_seq))
        finally:
            self._execute("COMMIT")
        index.generation, index.max_seq, index.epoch = generation, max_seq, self._epoch
        self._dense[workspace_id] = index
        return index

    def _dense_rows(self, workspace_id: str, *, after_seq: int) -> DenseRows:
        return DenseRows.from_records(
            self._execute(
                "SELECT v.memory_id, v.vector, v.model, m.agent_id, m.crew_id, m.resource_id, "
                "m.conversation_id, m.base_importance, m.status, m.type "
                "FROM memory_vectors v JOIN memories m ON m.id = v.memory_id "
                "WHERE v.workspace_id = ? AND m.workspace_id = ? AND v.seq > ? "
                "ORDER BY v.seq",
                (workspace_id, workspace_id, after_seq),
            ).fetchall()
        )

    # The sparse leg's query path: "budgeted" (the default, see search_sparse);
    # "stopwords", seed 000's query without stopwords; "seed", seed 000's query as it was.
    # The other two stay selectable so a benchmark can compare the three on one database,
    # and so an operator can fall back without a release. The limits are attributes so
    # that tests can shrink them.
    sparse_mode: SparseMode = "budgeted"
    sparse_rare_budget: int = SPARSE_RARE_BUDGET
    sparse_window: int = SPARSE_WINDOW
    sparse_scan: int = SPARSE_SCAN
    _sparse_counts: _DocCounts | None = None

    def search_sparse(self, flt: ScopeFilter, text: str, limit: int) -> list[Candidate]:
        """BM25 over ``memories_fts``, best first.

        FTS5 computes bm25 for every row a MATCH finds, and one word found in most
        memories makes that most of the table while adding almost nothing to any score.
        Budgeted (the default) therefore:

        1. leaves English stopwords out of the query (``fts_terms``) and searches whole
           (stemmed) words, a prefix only for a word the index lacks (``_sparse_words``);
        2. looks up how many memories each term matches (cached for a few seconds) and
           sorts the terms with ``plan_terms``: rare ones, whose memories are all scored;
           common ones; and ones in so many memories that they are dropped (used only to
           fill a short answer);
        3. scores, with bm25 over the kept terms, every memory of a rare term (with the
           common terms it also holds), the newest memories holding all common terms and,
           only to fill a short answer, the newest holding any (``_sparse_window``). bm25
           is a sum over terms, so a memory's score from a query of some of the terms
           never exceeds its score from all of them; the best score per memory is kept.
           The common-term steps are skipped when no memory without a rare term can
           outscore the current ``limit``-th result (a term adds at most idf x (k1 + 1));
           the answer is then exactly BM25's top ``limit`` over the kept terms.

        Scope filters run in SQL on every row, and a window counts rows in scope. The scan
        that bounds a window counts every match, but widens until ``limit`` rows in scope
        were found or there are no more: another workspace's matches can narrow what is
        compared, never shorten this workspace's answer or enter it.
        """
        where, params = scope_where(flt, alias="m")
        terms = fts_terms(text, drop_stopwords=self.sparse_mode != "seed")
        if not terms or limit <= 0:
            return []
        hits = _SparseHits(limit)
        with self._read():
            if self.sparse_mode == "budgeted":
                self._sparse_budgeted(terms, where, params, hits)
            else:
                hits.add(self._sparse_all(" OR ".join(terms), where, params, limit))
        return [
            Candidate(memory_id=memory_id, score=score, rank=rank)
            for rank, (memory_id, score) in enumerate(hits.ranked(), start=1)
        ]

    def _sparse_budgeted(
        self, terms: Sequence[str], where: str, params: Sequence[Any], hits: _SparseHits
    ) -> None:
        # The rows FTS5 holds (one per memory): exact unless memories were deleted, and
        # then too high, which only keeps more terms and raises the ceilings below.
        total = int(self._execute("SELECT max(seq) FROM memories").fetchone()[0] or 0)
        # Past half the rows FTS5's idf is floored: counting further orders nothing.
        cap = total // 2 + 1
        terms = self._sparse_words(terms, cap)
        if len(terms) == 1:
            self._sparse_window(terms[0], where, params, hits)
            return
        counts = self._term_doc_counts(terms, cap)
        plan = plan_terms(
            counts, total_rows=total, budget=self.sparse_rare_budget, max_share=SPARSE_MAX_SHARE
        )
        rare = " OR ".join(terms[i] for i in plan.rare)
        common = [terms[i] for i in plan.common]
        if rare:
            hits.add(self._sparse_all(rare, where, params, hits.limit))
            if common:
                # Memories of a rare term that also hold common ones: scored with all of
                # them (no term twice, so bm25 sums each term once).
                match = f"({rare}) AND ({' OR '.join(common)})"
                hits.add(self._sparse_all(match, where, params, hits.limit))
        if common:
            ceilings = [bm25_term_ceiling(counts[i], total) for i in plan.common]
            all_complete = False
            if len(common) > 1 and hits.kth_score() < sum(ceilings):
                all_complete = self._sparse_window(" AND ".join(common), where, params, hits)
            # Memories holding only some of the common terms and none of the rare ones rank
            # below those holding all of them (or a rare one) unless much shorter: they
            # only fill a short answer. On the benchmark's queries this cost nothing in
            # quality and a window of ~5 ms whenever the answer was already full.
            reachable = sum(ceilings) - (min(ceilings) if all_complete else 0.0)
            if len(hits) < hits.limit and hits.kth_score() < reachable:
                self._sparse_window(" OR ".join(common), where, params, hits)
        if plan.dropped and len(hits) < hits.limit:
            dropped = [terms[i] for i in plan.dropped]
            self._sparse_window(" OR ".join(dropped), where, params, hits)

    def _sparse_all(
        self, match: str, where: str, params: Sequence[Any], limit: int
    ) -> list[tuple[str, int, float]]:
        """The best ``limit`` in-scope matches of ``match``, every match scored."""
        rows = self._execute(
            _SPARSE_ALL_SQL.format(where=where),
            (BM25_CONTENT_WEIGHT, BM25_KEYS_WEIGHT, BM25_PAYLOAD_WEIGHT, match, *params, limit),
        ).fetchall()
        return [(memory_id, seq, -score) for memory_id, seq, score in rows]

    def _sparse_window(
        self, match: str, where: str, params: Sequence[Any], hits: _SparseHits
    ) -> bool:
        """Score the newest in-scope matches of ``match`` (at most ``sparse_window`` of
        them, among the newest ``sparse_scan`` matches in the table, or 30 per result
        asked for if fewer, 4x more each round while fewer than ``hits.limit`` were
        found) into ``hits``. True when that was every in-scope match.

        Newest first because that is the order FTS5 reads a doclist in without sorting,
        and because among memories that share only common words, bm25 ranks by little
        more than their length, where an episodic memory has reason to prefer recent
        episodes."""
        window = max(self.sparse_window, hits.limit)
        below, scan, found = (
            _MAX_ROWID,
            min(self.sparse_scan, SPARSE_SCAN_PER_RESULT * hits.limit),
            0,
        )
        while True:
            rows = self._execute(
                _SPARSE_WINDOW_SQL.format(where=where),
                (
                    match,
                    below,
                    scan - 1,
                    BM25_CONTENT_WEIGHT,
                    BM25_KEYS_WEIGHT,
                    BM25_PAYLOAD_WEIGHT,
                    match,
                    below,
                    *params,
                    window,
                    hits.limit,
                ),
            ).fetchall()
            lowest, scored = int(rows[0][0]), int(rows[0][4] or 0)
            found_now = [(r[1], int(r[2]), -float(r[3])) for r in rows if r[1] is not None]
            hits.add(found_now)
            found += len(found_now)
            if lowest == 0:
                return scored < window
            if found >= hits.limit:
                return False
            below, scan = lowest, scan * 4

    def _sparse_words(self, terms: Sequence[str], cap: int) -> list[str]:
        """Each term as a whole word where the index holds that word, else as the prefix
        ``fts_term`` made of it.

        The index stores Porter stems, so the whole word already matches its inflections
        ("deploys", "deploying", "deployment" all stem to "deploy"); what a prefix adds is
        every longer word that starts the same way, and FTS5 merges all their doclists
        before it returns a row: "term1"* is 1,111 words in the benchmark's vocabulary and
        over 20 ms. On LoCoMo whole words and prefixes recall the same (R@10 0.731 vs
        0.729, benchmarks/README.md). A word the index does not hold is most likely typed
        in part ("auth", "kube"), and only then is the prefix worth its cost."""
        wholes = [fts_whole_word(term) for term in terms]
        prefixed = [whole for term, whole in zip(terms, wholes, strict=True) if whole != term]
        found = iter(self._term_doc_counts(prefixed, cap))
        words: list[str] = []
        for term, whole in zip(terms, wholes, strict=True):
            words.append(term if whole != term and next(found) == 0 else whole)
        # Two prefixes of words the index lacks may now be the same word: keep one.
        return list(dict.fromkeys(words))

    def _term_doc_counts(self, terms: Sequence[str], cap: int) -> list[int]:
        """How many memories each FTS term matches, up to ``cap``, counted by FTS5.

        A MATCH on the term alone is exact where an ``fts5vocab`` row lookup is not: the
        index holds Porter stems with diacritics removed, so a query word would first
        have to go through FTS5's tokenizer, and a prefix term spans many rows. The cost
        is the same (both walk the term's doclist); the cap bounds it for whole words,
        and a prefix term is counted only when its whole word does not already reach the
        cap, which spares FTS5 gathering the prefix's doclist (~2 ms for a word in 60% of
        100k memories). The cache lets common words, which recur across queries, be
        counted once every few seconds. Counts cover all workspaces, like the statistics
        bm25 itself uses."""
        cache = self._sparse_counts
        if cache is None:
            cache = self._sparse_counts = _DocCounts(DOC_COUNT_TTL_S, DOC_COUNT_CACHE_TERMS)
        now = time.monotonic()

        def count(term: str) -> int:
            known = cache.get(term, now)
            if known is not None:
                return known
            whole = fts_whole_word(term)
            if whole != term and count(whole) >= cap:
                found = cap  # a prefix matches all its whole word does, and more
            else:
                found = int(self._execute(_SPARSE_COUNT_SQL, (term, cap)).fetchone()[0])
            cache.put(term, found, now)
            return found

        return [count(term) for term in terms]

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
            PendingConversation(ws, conv, int(n), _parse_ts(oldest), _parse_ts(newest))
            for ws, conv, n, oldest, newest in rows
        ]

    def pending_messages(self, workspace_id: str, conversation_id: str) -> list[Event]:
        with self._read():
            rows = self._execute(
                f"SELECT {_EVENT_COLUMNS} FROM events INDEXED BY events_pending_messages "
                "WHERE workspace_id = ? AND conversation_id = ? AND type = 'message' "
                "AND episode_id IS NULL ORDER BY ts, rowid",
                (workspace_id, conversation_id),
            ).fetchall()
        return [_event(row) for row in rows]

    def get_vectors(self, workspace_id: str, memory_ids: Sequence[str]) -> dict[str, Vector]:
        found: dict[str, Vector] = {}
        with self._read():
            for chunk in _chunks(_unique(memory_ids)):
                for memory_id, blob in self._execute(
                    "SELECT memory_id, vector FROM memory_vectors WHERE workspace_id = ? "
                    f"AND memory_id IN ({_placeholders(len(chunk))})",
                    (workspace_id, *chunk),
                ):
                    found[memory_id] = np.frombuffer(blob, LE_FLOAT32).astype(np.float32)
        return found

    def close_episode(
        self,
        episode: Memory,
        message_ids: Sequence[str],
        derived: Sequence[Memory],
        keys: Mapping[str, str],
    ) -> bool:
        ws = episode.workspace_id
        for m in derived:
            if m.workspace_id != ws:
                raise InvalidInput(
                    "workspace_id", f"memory {m.id} is not of the episode's workspace {ws}"
                )
        now = ts_text(utcnow())
        with self._write():
            if self._execute("SELECT 1 FROM memories WHERE id = ?", (episode.id,)).fetchone():
                return False
            wanted = _unique(message_ids)
            found = {
                row[0]
                for chunk in _chunks(wanted)
                for row in self._execute(
                    "SELECT id FROM events WHERE +workspace_id = ? AND type = 'message' "
                    f"AND id IN ({_placeholders(len(chunk))})",
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

    def known_hashes(self, flt: ScopeFilter, hashes: Sequence[str]) -> set[str]:
        where, params = scope_where(flt, alias="m")
        found: set[str] = set()
        with self._read():
            for chunk in _chunks(_unique(hashes)):
                found.update(
                    row[0]
                    for row in self._execute(
                        "SELECT DISTINCT m.content_hash FROM memories m "
                        f"WHERE {where} AND m.status = 'active' "
                        f"AND m.content_hash IN ({_placeholders(len(chunk))})",
                        (*params, *chunk),
                    )
                )
        return found

    # -- upkeep (issue 5) ------------------------------------------------------------
    # Every method is one statement or one short transaction; claims and leases are
    # compare-and-set UPDATEs, which a PostgreSQL twin writes with FOR UPDATE SKIP LOCKED.
    def workspaces(self) -> list[str]:
        with self._read():
            rows = self._execute(
                "SELECT DISTINCT workspace_id FROM memories ORDER BY workspace_id"
            ).fetchall()
        return [str(r[0]) for r in rows]

    def search_dense_many(
        self,
        flt: ScopeFilter,
        queries: Vector,
        limit: int,
        min_score: float | None = None,
        exclude: Sequence[Sequence[str]] | None = None,
    ) -> list[list[Candidate]]:
        scope = normalise_scope(flt)
        with self._lock, _map_errors():
            self._check_open()
            index = self._fresh_index(flt.workspace_id)
            return index.search_many(flt, scope, queries, limit, min_score, exclude)

    def decay_importance(
        self, now: datetime, *, formula: str = "crewship", workspace_id: str | None = None
    ) -> int:
        if formula not in _DECAY_SQL:
            raise InvalidInput(
                "formula", f"unknown decay formula {formula!r}; use crewship or prominence"
            )
        expr = _DECAY_SQL[formula]
        where = "AND workspace_id = ?3" if workspace_id else ""
        sql = (
            f"UPDATE memories SET importance = {expr}, updated_at = ?2 "
            f"WHERE seq > ?4 AND seq <= ?5 AND status = 'active' {where} "
            f"AND importance IS NOT {expr}"
        )
        with self._read():
            low, high = self._execute("SELECT min(seq), max(seq) FROM memories").fetchone()
        if low is None:
            return 0
        stamp = ts_text(now)
        changed = 0
        # One transaction per chunk of rows: recalls (which write reference counts) wait
        # for one chunk at most, never for the whole table.
        for start in range(int(low) - 1, int(high), DECAY_CHUNK_ROWS):
            with self._write():
                params: list[Any] = [stamp, ts_text(utcnow()), workspace_id]
                params += [start, start + DECAY_CHUNK_ROWS]
                changed += self._execute(sql, params).rowcount
        return changed

    def add_review(self, review: ReviewRequest) -> int:
        with self._write():
            cursor = self._execute(
                "INSERT INTO memory_reviews (workspace_id, agent_id, crew_id, conversation_id, "
                "query, memory_ids, cosines, recalled_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    review.workspace_id,
                    review.agent_id,
                    review.crew_id,
                    review.conversation_id,
                    review.query,
                    json.dumps(list(review.memory_ids)),
                    json.dumps(list(review.cosines)),
                    ts_text(review.recalled_at),
                ),
            )
            return int(cursor.lastrowid or 0)

    def claim_reviews(
        self,
        holder: str,
        now: datetime,
        *,
        lease_s: float,
        limit: int,
        workspace_id: str | None = None,
        agent_id: str | None = None,
        conversation_id: str | None = None,
        only_conversations: bool = False,
        recalled_before: datetime | None = None,
    ) -> list[PendingReview]:
        if limit <= 0:
            return []
        narrow, params = "", []
        for column, value in (
            ("workspace_id", workspace_id),
            ("agent_id", agent_id),
            ("conversation_id", conversation_id),
        ):
            if value:
                narrow += f" AND {column} = ?"
                params.append(value)
        if only_conversations:
            narrow += " AND conversation_id IS NOT NULL"
        if recalled_before is not None:
            narrow += " AND recalled_at < ?"
            params.append(ts_text(recalled_before))
        stamp = ts_text(now)
        with self._write():
            rows = self._execute(
                "UPDATE memory_reviews SET claimed_by = ?, claimed_until = ? WHERE id IN ("
                " SELECT id FROM memory_reviews WHERE reviewed_at IS NULL"
                f" AND (claimed_until IS NULL OR claimed_until <= ?){narrow}"
                " ORDER BY id LIMIT ?) "
                "RETURNING id, workspace_id, agent_id, crew_id, conversation_id, query, "
                "memory_ids, cosines, recalled_at",
                (holder, ts_text(now + timedelta(seconds=lease_s)), stamp, *params, limit),
            ).fetchall()
        return sorted((_pending_review(row) for row in rows), key=lambda r: r.id)

    def release_reviews(self, holder: str, ids: Sequence[int]) -> None:
        if not ids:
            return
        with self._write():
            self._executemany(
                "UPDATE memory_reviews SET claimed_by = NULL, claimed_until = NULL "
                "WHERE id = ? AND claimed_by = ? AND reviewed_at IS NULL",
                [(int(i), holder) for i in ids],
            )

    def finish_reviews(self, holder: str, outcomes: Sequence[ReviewOutcome], at: datetime) -> int:
        if not outcomes:
            return 0
        stamp = ts_text(at)
        with self._write():
            before = self._conn.total_changes
            # claimed_until > at: a claim that lapsed may already be someone else's.
            self._executemany(
                "UPDATE memory_reviews SET reviewed_at = ?, outcome = ?, ratings = ?, "
                "claimed_until = NULL WHERE id = ? AND claimed_by = ? AND claimed_until > ? "
                "AND reviewed_at IS NULL",
                [
                    (
                        stamp,
                        o.outcome,
                        json.dumps({"rated_by": o.rated_by, "ratings": dict(o.ratings)}),
                        o.review_id,
                        holder,
                        stamp,
                    )
                    for o in outcomes
                ],
            )
            return self._conn.total_changes - before

    def apply_reviews(self, workspace_id: str, updates: Sequence[FsrsUpdate]) -> int:
        if not updates:
            return 0
        now = ts_text(utcnow())
        with self._write():
            before = self._conn.total_changes
            self._executemany(
                "UPDATE memories SET stability = ?, difficulty = ?, last_reviewed_at = ?, "
                "updated_at = ? WHERE +workspace_id = ? AND id = ? AND last_reviewed_at IS ?",
                [
                    (
                        float(u.stability),
                        float(u.difficulty),
                        ts_text(u.reviewed_at),
                        now,
                        workspace_id,
                        u.memory_id,
                        None if u.expected_last_review is None else ts_text(u.expected_last_review),
                    )
                    for u in updates
                ],
            )
            return self._conn.total_changes - before

    def conversation_messages(
        self, workspace_id: str, conversation_id: str, *, after: datetime, limit: int
    ) -> list[Event]:
        if limit <= 0:
            return []
        with self._read():
            rows = self._execute(
                f"SELECT {_EVENT_COLUMNS} FROM events INDEXED BY events_conversation_ts "
                "WHERE workspace_id = ? AND conversation_id = ? AND ts > ? AND type = 'message' "
                "ORDER BY ts, rowid LIMIT ?",
                (workspace_id, conversation_id, ts_text(after), limit),
            ).fetchall()
        return [_event(row) for row in rows]

    def hit_cosines(self, flt: ScopeFilter, since: datetime) -> list[list[float]]:
        narrow, params = "", []
        for column in ("agent_id", "crew_id"):
            value = getattr(flt, column)
            if value:
                narrow += f" AND {column} = ?"
                params.append(value)
        with self._read():
            rows = self._execute(
                "SELECT cosines FROM memory_reviews INDEXED BY memory_reviews_recalled "
                f"WHERE workspace_id = ? AND recalled_at >= ?{narrow} ORDER BY recalled_at",
                (flt.workspace_id, ts_text(since), *params),
            ).fetchall()
        out: list[list[float]] = []
        for (text,) in rows:
            values = [float(v) for v in json.loads(text) if isinstance(v, int | float)]
            if values:
                out.append(values)
        return out

    def scan_memories(
        self,
        workspace_id: str,
        *,
        cursor: int = 0,
        limit: int,
        unconsolidated: bool = False,
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
        if exclude_types:
            clauses.append(f"type NOT IN ({_placeholders(len(exclude_types))})")
            params.extend(exclude_types)
        order = "DESC" if newest_first else "ASC"
        with self._read():
            rows = self._execute(
                f"SELECT seq, {_MEMORY_COLUMNS} FROM memories WHERE {' AND '.join(clauses)} "
                f"ORDER BY seq {order} LIMIT ?",
                (*params, limit),
            ).fetchall()
            sources = self._sources_of([r[1] for r in rows])
        page = [_memory(row[1:], sources.get(row[1], ())) for row in rows]
        next_cursor = int(rows[-1][0]) if len(rows) == limit else 0
        return page, next_cursor

    def _sources_of(self, ids: Sequence[str]) -> dict[str, list[str]]:
        sources: dict[str, list[str]] = {}
        for chunk in _chunks(list(ids)):
            for memory_id, event_id in self._execute(
                "SELECT memory_id, event_id FROM memory_sources "
                f"WHERE memory_id IN ({_placeholders(len(chunk))}) ORDER BY rowid",
                chunk,
            ):
                sources.setdefault(memory_id, []).append(event_id)
        return sources

    def consolidation_backlog(
        self, workspace_id: str, exclude_types: Sequence[str] = ()
    ) -> ConsolidationBacklog:
        skip = f"AND type NOT IN ({_placeholders(len(exclude_types))})" if exclude_types else ""
        with self._read():
            count, flash = self._execute(
                "SELECT count(*), coalesce(sum(type = 'episode' "
                "AND json_extract(payload, '$.flashbulb') = 1), 0) "
                "FROM memories INDEXED BY memories_unconsolidated WHERE workspace_id = ? "
                f"AND consolidated_at IS NULL AND status = 'active' {skip}",
                (workspace_id, *exclude_types),
            ).fetchone()
        return ConsolidationBacklog(unconsolidated=int(count), flashbulbs=int(flash))

    def store_consolidation(
        self,
        workspace_id: str,
        derived: Sequence[Memory],
        edges: Sequence[Relation],
        members: Sequence[str],
        at: datetime,
    ) -> bool:
        for m in derived:
            if m.workspace_id != workspace_id:
                raise InvalidInput(
                    "workspace_id", f"memory {m.id} is not of the workspace {workspace_id}"
                )
        wanted = _unique(members)
        now = ts_text(utcnow())
        with self._write():
            open_members = sum(
                int(
                    self._execute(
                        "SELECT count(*) FROM memories WHERE +workspace_id = ? "
                        f"AND id IN ({_placeholders(len(chunk))}) AND status = 'active' "
                        "AND consolidated_at IS NULL",
                        (workspace_id, *chunk),
                    ).fetchone()[0]
                )
                for chunk in _chunks(wanted)
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
                "UPDATE memories SET consolidated_at = ?, updated_at = ? "
                "WHERE +workspace_id = ? AND id = ?",
                [(ts_text(at), now, workspace_id, memory_id) for memory_id in wanted],
            )
        return True

    def archive_events(
        self, before: datetime, *, workspace_id: str | None = None, limit: int = 5000
    ) -> int:
        if limit <= 0:
            return 0
        where, params = ("workspace_id = ? AND ", [workspace_id]) if workspace_id else ("", [])
        now = ts_text(utcnow())
        with self._write():
            ids = [
                row[0]
                for row in self._execute(
                    f"SELECT id FROM events WHERE {where}ts < ? "
                    "AND NOT (type = 'message' AND episode_id IS NULL) ORDER BY ts LIMIT ?",
                    (*params, ts_text(before), limit),
                )
            ]
            for chunk in _chunks(ids):
                marks = _placeholders(len(chunk))
                self._execute(
                    "INSERT OR IGNORE INTO events_archive (id, workspace_id, ts, type, severity, "
                    "summary, payload, archived_at, agent_id, crew_id, resource_id, "
                    "conversation_id) SELECT id, workspace_id, ts, type, severity, summary, "
                    f"substr(payload, 1, {ARCHIVE_PAYLOAD_CHARS}), ?, agent_id, crew_id, "
                    f"resource_id, conversation_id FROM events WHERE id IN ({marks})",
                    (now, *chunk),
                )
                self._execute(f"DELETE FROM events WHERE id IN ({marks})", chunk)
        return len(ids)

    def archived_events(self, workspace_id: str, ids: Sequence[str]) -> list[ArchivedEvent]:
        wanted = _unique(ids)
        rows: dict[str, tuple[Any, ...]] = {}
        with self._read():
            for chunk in _chunks(wanted):
                for row in self._execute(
                    "SELECT id, workspace_id, ts, type, severity, summary, payload, archived_at, "
                    "agent_id, crew_id, resource_id, conversation_id FROM events_archive "
                    f"WHERE workspace_id = ? AND id IN ({_placeholders(len(chunk))})",
                    (workspace_id, *chunk),
                ):
                    rows[row[0]] = row
        return [
            ArchivedEvent(
                id=r[0],
                workspace_id=r[1],
                ts=_parse_ts(r[2]),
                type=r[3],
                severity=r[4],
                summary=r[5],
                payload=r[6],
                archived_at=_parse_ts(r[7]),
                agent_id=r[8],
                crew_id=r[9],
                resource_id=r[10],
                conversation_id=r[11],
            )
            for event_id in wanted
            if (r := rows.get(event_id)) is not None
        ]

    def compact_memories(self, workspace_id: str, merges: Sequence[Merge], at: datetime) -> int:
        applied = 0
        stamp, now = ts_text(at), ts_text(utcnow())
        with self._write():
            for merge in merges:
                ids = _unique([merge.survivor_id, *(loser for loser, _ in merge.losers)])
                found = dict(
                    self._execute(
                        "SELECT id, content FROM memories WHERE +workspace_id = ? "
                        f"AND id IN ({_placeholders(len(ids))}) AND status = 'active'",
                        (workspace_id, *ids),
                    ).fetchall()
                )
                if len(found) != len(ids) or len(ids) < 2:
                    continue  # changed since it was planned: the next run looks again
                self._execute(
                    "UPDATE memories SET content = ?, base_importance = ?, importance = ?, "
                    "reference_count = ?, last_referenced_at = ?, ts = ?, updated_at = ? "
                    "WHERE id = ?",
                    (
                        merge.content,
                        float(merge.base_importance),
                        float(merge.importance),
                        int(merge.reference_count),
                        None
                        if merge.last_referenced_at is None
                        else ts_text(merge.last_referenced_at),
                        ts_text(merge.ts),
                        now,
                        merge.survivor_id,
                    ),
                )
                if found[merge.survivor_id] != merge.content:
                    # Its vector says what the old text said; the indexer embeds it again.
                    self._execute(
                        "DELETE FROM memory_vectors WHERE memory_id = ?", (merge.survivor_id,)
                    )
                for loser, similarity in merge.losers:
                    self._execute(
                        "UPDATE memories SET status = 'compacted', "
                        "payload = json_set(payload, '$.compacted_into', ?), updated_at = ? "
                        "WHERE id = ?",
                        (merge.survivor_id, now, loser),
                    )
                    self._execute(
                        "INSERT OR REPLACE INTO memory_compactions (memory_id, survivor_id, "
                        "workspace_id, similarity, compacted_at) VALUES (?, ?, ?, ?, ?)",
                        (loser, merge.survivor_id, workspace_id, float(similarity), stamp),
                    )
                    self._execute(
                        "INSERT OR IGNORE INTO memory_sources (memory_id, event_id) "
                        "SELECT ?, event_id FROM memory_sources WHERE memory_id = ? ORDER BY rowid",
                        (merge.survivor_id, loser),
                    )
                applied += len(merge.losers)
        return applied

    def compacted_into(self, workspace_id: str, ids: Sequence[str]) -> dict[str, str]:
        found: dict[str, str] = {}
        with self._read():
            for chunk in _chunks(_unique(ids)):
                found.update(
                    self._execute(
                        "SELECT memory_id, survivor_id FROM memory_compactions "
                        f"WHERE workspace_id = ? AND memory_id IN ({_placeholders(len(chunk))})",
                        (workspace_id, *chunk),
                    ).fetchall()
                )
        return found

    def retire_phase(
        self, workspace_id: str, phase: str, at: datetime, *, domain: str = "task"
    ) -> list[str]:
        stamp, now = ts_text(at), ts_text(utcnow())
        with self._write():
            rows = self._execute(
                "UPDATE memories SET status = 'retired', "
                "payload = json_set(payload, '$.status', 'retired', '$.retired_at', ?), "
                "updated_at = ? WHERE workspace_id = ? AND status = 'active' "
                "AND json_extract(payload, '$.domain') = ? "
                "AND (json_extract(payload, '$.phase') = ? "
                "OR json_extract(payload, '$.stage') = ?) RETURNING id",
                (stamp, now, workspace_id, domain, phase, phase),
            ).fetchall()
        return sorted(str(r[0]) for r in rows)

    def health_facts(self, workspace_id: str, now: datetime) -> dict[str | None, HealthFacts]:
        # One scan of the workspace's active rows; the edge probes run only for rows with
        # a vector. Medians come from the sorted times of each group.
        with self._read():
            rows = self._execute(
                "SELECT m.crew_id, m.ts, m.has_vector, m.has_vector = 1 AND ("
                "EXISTS (SELECT 1 FROM memory_relations r WHERE r.src = m.id) OR "
                "EXISTS (SELECT 1 FROM memory_relations r WHERE r.dst = m.id)) "
                "FROM memories m WHERE m.workspace_id = ? AND m.status = 'active'",
                (workspace_id,),
            ).fetchall()
        groups: dict[str | None, list[tuple[str, int, int]]] = {None: []}
        for crew, ts, vectored, linked in rows:
            groups[None].append((ts, vectored, linked))
            if crew is not None:
                groups.setdefault(crew, []).append((ts, vectored, linked))
        facts: dict[str | None, HealthFacts] = {}
        for crew in sorted(groups, key=lambda c: (c is not None, c or "")):
            group = groups[crew]
            median: float | None = None
            if group:
                times = sorted(ts for ts, _, _ in group)
                middle = times[(len(times) - 1) // 2 : len(times) // 2 + 1]
                ages = [(now - _parse_ts(t)).total_seconds() / 86_400.0 for t in middle]
                median = sum(ages) / len(ages)
            facts[crew] = HealthFacts(
                active=len(group),
                vectored=sum(v for _, v, _ in group),
                linked=sum(int(bool(link)) for _, _, link in group),
                median_age_days=median,
            )
        return facts

    def vector_matrix(self, flt: ScopeFilter) -> Vector:
        scope = normalise_scope(flt)
        with self._lock, _map_errors():
            self._check_open()
            return self._fresh_index(flt.workspace_id).visible_matrix(flt, scope)

    def put_health_snapshot(self, snapshot: HealthSnapshot) -> None:
        with self._write():
            self._execute(
                "INSERT OR REPLACE INTO memory_health_snapshots (workspace_id, crew_id, "
                "snapshot_date, freshness, coverage, coherence, efficiency, reachability, score) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    snapshot.workspace_id,
                    snapshot.crew_id or "",
                    snapshot.snapshot_date.isoformat(),
                    snapshot.freshness,
                    snapshot.coverage,
                    snapshot.coherence,
                    snapshot.efficiency,
                    snapshot.reachability,
                    snapshot.score,
                ),
            )

    def health_snapshots(
        self, workspace_id: str, crew_id: str | None, limit: int
    ) -> list[HealthSnapshot]:
        if limit <= 0:
            return []
        with self._read():
            rows = self._execute(
                "SELECT snapshot_date, freshness, coverage, coherence, efficiency, reachability, "
                "score FROM memory_health_snapshots WHERE workspace_id = ? AND crew_id = ? "
                "ORDER BY snapshot_date DESC LIMIT ?",
                (workspace_id, crew_id or "", limit),
            ).fetchall()
        return [
            HealthSnapshot(
                workspace_id=workspace_id,
                crew_id=crew_id or None,
                snapshot_date=date.fromisoformat(r[0]),
                freshness=float(r[1]),
                coverage=float(r[2]),
                coherence=float(r[3]),
                efficiency=float(r[4]),
                reachability=float(r[5]),
                score=float(r[6]),
            )
            for r in rows
        ]

    def events_since_memory_update(self, workspace_id: str, agent_id: str, cap: int) -> int:
        if cap <= 0:
            return 0
        with self._read():
            row = self._execute(
                "SELECT count(*) FROM (SELECT 1 FROM events WHERE workspace_id = ? "
                "AND agent_id = ? AND type != 'memory.updated' AND ts > coalesce(("
                " SELECT max(ts) FROM events INDEXED BY events_memory_updated"
                " WHERE workspace_id = ? AND agent_id = ? AND type = 'memory.updated'), '') "
                "ORDER BY ts DESC LIMIT ?)",
                (workspace_id, agent_id, workspace_id, agent_id, cap),
            ).fetchone()
        return int(row[0])

    def claim_nudge(
        self, workspace_id: str, agent_id: str, session_id: str, entries: int, at: datetime
    ) -> bool:
        with self._write():
            return (
                self._execute(
                    "INSERT OR IGNORE INTO memory_nudges (workspace_id, agent_id, session_id, "
                    "entries, nudged_at) VALUES (?, ?, ?, ?, ?)",
                    (workspace_id, agent_id, session_id, int(entries), ts_text(at)),
                ).rowcount
                == 1
            )

    def acquire_lease(self, job: str, scope: str, holder: str, now: datetime, ttl_s: float) -> bool:
        stamp = ts_text(now)
        with self._write():
            self._execute(
                "INSERT INTO upkeep_leases (job, scope, holder, acquired_at, expires_at) "
                "VALUES (?, ?, ?, ?, ?) ON CONFLICT (job, scope) DO UPDATE SET "
                "holder = excluded.holder, acquired_at = excluded.acquired_at, "
                "expires_at = excluded.expires_at "
                "WHERE upkeep_leases.expires_at <= excluded.acquired_at "
                "OR upkeep_leases.holder = excluded.holder",
                (job, scope, holder, stamp, ts_text(now + timedelta(seconds=ttl_s))),
            )
            row = self._execute(
                "SELECT holder FROM upkeep_leases WHERE job = ? AND scope = ?", (job, scope)
            ).fetchone()
        return row is not None and row[0] == holder

    def lease_holder(self, job: str, scope: str) -> str | None:
        with self._read():
            row = self._execute(
                "SELECT holder FROM upkeep_leases WHERE job = ? AND scope = ?", (job, scope)
            ).fetchone()
        return None if row is None else str(row[0])

    def release_lease(self, job: str, scope: str, holder: str) -> None:
        with self._write():
            self._execute(
                "DELETE FROM upkeep_leases WHERE job = ? AND scope = ? AND holder = ?",
                (job, scope, holder),
            )

    def record_run(
        self,
        job: str,
        scope: str,
        holder: str,
        started_at: datetime,
        finished_at: datetime,
        status: str,
        detail: Mapping[str, Any],
    ) -> None:
        with self._write():
            self._execute(
                "INSERT INTO upkeep_runs (job, scope, holder, started_at, finished_at, status, "
                "detail) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    job,
                    scope,
                    holder,
                    ts_text(started_at),
                    ts_text(finished_at),
                    status,
                    _json("detail", detail),
                ),
            )

    def last_run(self, job: str, scope: str) -> datetime | None:
        with self._read():
            row = self._execute(
                "SELECT max(finished_at) FROM upkeep_runs WHERE job = ? AND scope = ? "
                "AND status = 'ok'",
                (job, scope),
            ).fetchone()
        return _opt_ts(row[0])

    # -- diagnostics -----------------------------------------------------------------
    def deep_check(self) -> list[IntegrityCheck]:
        def execute(sql: str) -> sqlite3.Cursor:
            return self._execute(sql)

        with self._read():
            checks = sqlite_integrity.read_checks(execute)
        if self.read_only:
            engine = sqlite_integrity.fts_engine_check(execute, writable=False)
        else:
            # FTS5's check is an INSERT: a short write transaction of its own.
            with self._write():
                engine = sqlite_integrity.fts_engine_check(execute, writable=True)
        return [checks[0], engine, *checks[1:]]

    def meta(self) -> dict[str, Any]:
        with self._lock, _map_errors():
            self._check_open()

            def pragma(name: str) -> Any:
                return self._execute(f"PRAGMA {name}").fetchone()[0]

            facts: dict[str, Any] = {
                "backend": "sqlite",
                "url": self.url,
                "path": self.path,
                "read_only": self.read_only,
                "sqlite_version": sqlite3.sqlite_version,
                "schema_version": current_version(self._conn),
                "journal_mode": pragma("journal_mode"),
                "page_size": int(pragma("page_size")),
                "page_count": int(pragma("page_count")),
                "freelist_count": int(pragma("freelist_count")),
                "file_bytes": 0,
                "wal_bytes": 0,
            }
        if not self.in_memory:
            for key, suffix in (("file_bytes", ""), ("wal_bytes", "-wal")):
                try:
                    facts[key] = os.path.getsize(self.path + suffix)
                except OSError:
                    facts[key] = 0
        return facts

    # -- issue 6 (the service): keys, browsing, forgetting, markdown import ----------
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
                f"SELECT {_KEY_COLUMNS} FROM api_keys WHERE key_hash = ?", (key_hash,)
            ).fetchone()
        return None if row is None else _api_key(row)

    def api_keys(self, workspace_id: str | None = None) -> list[ApiKey]:
        where, params = ("WHERE workspace_id = ?", (workspace_id,)) if workspace_id else ("", ())
        with self._read():
            rows = self._execute(
                f"SELECT {_KEY_COLUMNS} FROM api_keys {where} ORDER BY created_at, id", params
            ).fetchall()
        return [_api_key(row) for row in rows]

    def revoke_api_key(self, key_id: str, at: datetime) -> ApiKey | None:
        with self._write():
            self._execute(
                "UPDATE api_keys SET revoked_at = coalesce(revoked_at, ?) WHERE id = ?",
                (ts_text(at), key_id),
            )
            row = self._execute(
                f"SELECT {_KEY_COLUMNS} FROM api_keys WHERE id = ?", (key_id,)
            ).fetchone()
        return None if row is None else _api_key(row)

    def list_memories(
        self,
        flt: ScopeFilter,
        limit: int,
        *,
        statuses: Sequence[MemoryStatus] | None = None,
        before: tuple[datetime, str] | None = None,
    ) -> list[Memory]:
        where, params = scope_where(flt, alias="m")
        if limit <= 0 or (statuses is not None and not statuses):
            return []
        extra = ""
        if statuses is not None:
            extra += f" AND m.status IN ({_placeholders(len(statuses))})"
            params.extend(MemoryStatus(s).value for s in statuses)
        if before is not None:
            stamp = ts_text(before[0])
            extra += " AND (m.ts < ? OR (m.ts = ? AND m.id < ?))"
            params += [stamp, stamp, before[1]]
        with self._read():
            ids = [
                row[0]
                for row in self._execute(
                    f"SELECT m.id FROM memories m WHERE {where}{extra} "
                    "ORDER BY m.ts DESC, m.id DESC LIMIT ?",
                    (*params, limit),
                )
            ]
        return self.get_memories(flt.workspace_id, ids)

    def set_status(self, workspace_id: str, memory_id: str, status: MemoryStatus) -> Memory:
        with self._write():
            changed = self._execute(
                "UPDATE memories SET status = ?, updated_at = ? WHERE +workspace_id = ? AND id = ?",
                (MemoryStatus(status).value, ts_text(utcnow()), workspace_id, memory_id),
            ).rowcount
        if not changed:
            raise NotFound(memory_id)
        return self.get_memory(workspace_id, memory_id)

    def events_with_episodes(
        self, workspace_id: str, ids: Sequence[str]
    ) -> list[tuple[Event, str | None]]:
        wanted = _unique(ids)
        rows: dict[str, tuple[Any, ...]] = {}
        with self._read():
            for chunk in _chunks(wanted):
                for row in self._execute(
                    f"SELECT {_EVENT_COLUMNS}, episode_id FROM events WHERE +workspace_id = ? "
                    f"AND id IN ({_placeholders(len(chunk))})",
                    (workspace_id, *chunk),
                ):
                    rows[row[0]] = row
        return [(_event(rows[i]), rows[i][-1]) for i in wanted if i in rows]

    def restore(
        self, memory: Memory, events: Sequence[tuple[Event, str | None]] = ()
    ) -> RestoreResult:
        now = ts_text(utcnow())
        ws = memory.workspace_id
        for event, _ in events:
            if event.workspace_id != ws:
                raise InvalidInput("events", f"event {event.id} is not of workspace {ws}")
        with self._write():
            events_inserted = 0
            if events:
                events_inserted = self._executemany(
                    "INSERT OR IGNORE INTO events (id, workspace_id, crew_id, agent_id, "
                    "resource_id, conversation_id, ts, type, severity, summary, payload, refs, "
                    "admitted, created_at, episode_id) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,1,?,?)",
                    [
                        (
                            e.id,
                            e.workspace_id,
                            e.crew_id,
                            e.agent_id,
                            e.resource_id,
                            e.conversation_id,
                            ts_text(e.ts),
                            e.type,
                            e.severity,
                            e.summary,
                            _json("payload", e.payload),
                            _json("refs", e.refs),
                            now,
                            episode,
                        )
                        for e, episode in events
                    ],
                ).rowcount
            row = self._execute(
                f"SELECT {_MEMORY_COLUMNS} FROM memories WHERE id = ?", (memory.id,)
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
            if _memory(row, sources) == memory:
                return RestoreResult(unchanged=1, events_inserted=events_inserted)
            if row[9] != memory.content:
                # New text: the old vector no longer describes it.
                self._execute("DELETE FROM memory_vectors WHERE memory_id = ?", (memory.id,))
            self._execute(
                "UPDATE memories SET crew_id = ?, agent_id = ?, resource_id = ?, "
                "conversation_id = ?, ts = ?, type = ?, severity = ?, content = ?, payload = ?, "
                "base_importance = ?, importance = ?, reference_count = ?, "
                "last_referenced_at = ?, status = ?, created_at = ?, updated_at = ?, keys = ?, "
                "content_hash = ?, stability = ?, difficulty = ?, last_reviewed_at = ?, "
                "consolidated_at = ? WHERE id = ?",
                (*_memory_row(memory, now)[2:], memory.id),
            )
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
            for chunk in _chunks(_unique(ids)):
                marks = _placeholders(len(chunk))
                self._execute(f"DELETE FROM memory_sources WHERE memory_id IN ({marks})", chunk)
                deleted += self._execute(
                    f"DELETE FROM memories WHERE +workspace_id = ? AND id IN ({marks})",
                    (workspace_id, *chunk),
                ).rowcount
        return deleted

    def forget(self, spec: ForgetSpec, *, rekey: Callable[[Event], str]) -> ForgetCounts:
        ws = spec.workspace_id
        if not ws or not ws.strip():
            raise InvalidInput("workspace_id", "required: forgetting runs inside one workspace")
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
        with self._lock, _map_errors():
            self._check_open()
            # Freed pages are zeroed, so the forgotten text does not linger in the file.
            self._execute("PRAGMA secure_delete = ON")
            try:
                with self._write():
                    counts = self._forget_rows(spec, match, params, rekey)
                self._dense.pop(ws, None)
                # Deleted FTS5 rows leave tombstones beside the old terms until segments
                # merge; merging now drops the terms themselves.
                with self._write():
                    self._execute("INSERT INTO memories_fts (memories_fts) VALUES ('optimize')")
                self._execute("PRAGMA wal_checkpoint(TRUNCATE)")
            finally:
                self._execute("PRAGMA secure_delete = OFF")
        return counts

    def _forget_rows(
        self, spec: ForgetSpec, match: str, params: Sequence[Any], rekey: Callable[[Event], str]
    ) -> ForgetCounts:
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
        # is derived from those.
        for _ in range(2):
            self._execute(
                "INSERT OR IGNORE INTO forget_memories SELECT m.id FROM memories m "
                "JOIN forget_events f ON f.id = m.id WHERE m.workspace_id = ?",
                (ws,),
            )
            self._execute(
                "INSERT OR IGNORE INTO forget_memories SELECT s.memory_id FROM memory_sources s "
                "JOIN forget_events f ON f.id = s.event_id "
                "JOIN memories m ON m.id = s.memory_id AND m.workspace_id = ?",
                (ws,),
            )
            # A consolidated rule quotes its evidence: it goes with any of it.
            self._execute(
                "INSERT OR IGNORE INTO forget_memories SELECT r.src FROM memory_relations r "
                "JOIN forget_memories f ON f.id = r.dst "
                "JOIN memories m ON m.id = r.src AND m.workspace_id = ? "
                "WHERE r.relation = 'supports'",
                (ws,),
            )
            self._execute(
                "INSERT OR IGNORE INTO forget_events SELECT e.id FROM events e "
                "JOIN forget_memories f ON f.id = e.id WHERE e.workspace_id = ?",
                (ws,),
            )
        # The rest of a forgotten rule's evidence may be consolidated again.
        self._execute(
            "UPDATE memories SET consolidated_at = NULL WHERE +workspace_id = ? AND id IN "
            "(SELECT r.dst FROM memory_relations r JOIN forget_memories f ON f.id = r.src "
            "WHERE r.relation = 'supports') AND id NOT IN (SELECT id FROM forget_memories)",
            (ws,),
        )
        contents = [
            row[0]
            for row in self._execute(
                "SELECT DISTINCT content FROM memories WHERE id IN (SELECT id FROM forget_memories)"
            )
        ]
        # Messages that stay but whose episode goes keep only their own keys.
        orphans = self._execute(
            f"SELECT {_EVENT_COLUMNS} FROM events WHERE workspace_id = ? AND type = 'message' "
            "AND episode_id IN (SELECT id FROM forget_memories) "
            "AND id NOT IN (SELECT id FROM forget_events)",
            (ws,),
        ).fetchall()
        now = ts_text(utcnow())
        rekeyed = 0
        if orphans:
            rekeyed = self._executemany(
                "UPDATE memories SET keys = ?, updated_at = ? WHERE +workspace_id = ? AND id = ? "
                "AND id NOT IN (SELECT id FROM forget_memories)",
                [(rekey(_event(row)), now, ws, row[0]) for row in orphans],
            ).rowcount
        in_memories = "(SELECT id FROM forget_memories)"
        vectors = self._execute(
            f"SELECT count(*) FROM memory_vectors WHERE memory_id IN {in_memories}"
        ).fetchone()[0]
        relations = self._execute(
            f"SELECT count(*) FROM memory_relations WHERE src IN {in_memories} "
            f"OR dst IN {in_memories}"
        ).fetchone()[0]
        # Archived journal rows carry the same scope columns (m004): the spec's own
        # filter reaches them, and so does anything forgotten by id.
        archived = self._execute(
            f"DELETE FROM events_archive WHERE ({match}) OR (workspace_id = ? AND "
            f"(id IN (SELECT id FROM forget_events) OR id IN {in_memories}))",
            (*params, ws),
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
        if spec.before is not None and _only_age(spec):
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
        memories = self._execute(f"DELETE FROM memories WHERE id IN {in_memories}").rowcount
        events = self._execute(
            "DELETE FROM events WHERE id IN (SELECT id FROM forget_events)"
        ).rowcount
        snapshots = 0
        if spec.whole_workspace:
            snapshots = self._execute(
                "DELETE FROM memory_health_snapshots WHERE workspace_id = ?", (ws,)
            ).rowcount
        cache = self._forget_cache_entries(contents)
        return ForgetCounts(
            memories=memories,
            events=events,
            vectors=int(vectors),
            relations=int(relations),
            archived=archived,
            embedding_cache=cache,
            import_files=import_files,
            health_snapshots=snapshots,
            extensions=extensions,
            rekeyed=rekeyed,
        )

    def _forget_cache_entries(self, contents: Sequence[str]) -> int:
        """Drop the cached embeddings of forgotten texts that no remaining memory (of any
        workspace: the cache is shared) still holds."""
        kept: set[str] = set()
        for chunk in _chunks(list(contents)):
            kept.update(
                row[0]
                for row in self._execute(
                    f"SELECT content FROM memories WHERE content IN ({_placeholders(len(chunk))})",
                    chunk,
                )
            )
        gone = [_sha256(text) for text in contents if text not in kept]
        dropped = 0
        for chunk in _chunks(gone):
            dropped += self._execute(
                f"DELETE FROM embedding_cache WHERE content_hash IN ({_placeholders(len(chunk))})",
                chunk,
            ).rowcount
        return dropped


def _memory(row: Sequence[Any], sources: Sequence[str]) -> Memory:
    return Memory(
        id=row[0],
        workspace_id=row[1],
        crew_id=row[2],
        agent_id=row[3],
        resource_id=row[4],
        conversation_id=row[5],
        ts=_parse_ts(row[6]),
        type=row[7],
        severity=row[8],
        content=row[9],
        payload=json.loads(row[10]),
        base_importance=float(row[11]),
        importance=float(row[12]),
        reference_count=int(row[13]),
        last_referenced_at=_opt_ts(row[14]),
        status=MemoryStatus(row[15]),
        source_event_ids=tuple(sources),
        created_at=_parse_ts(row[16]),
        keys=row[17],
        content_hash=row[18],
        stability=None if row[19] is None else float(row[19]),
        difficulty=None if row[20] is None else float(row[20]),
        last_reviewed_at=_opt_ts(row[21]),
        consolidated_at=_opt_ts(row[22]),
    )


def _event(row: Sequence[Any]) -> Event:
    return Event(
        id=row[0],
        workspace_id=row[1],
        crew_id=row[2],
        agent_id=row[3],
        resource_id=row[4],
        conversation_id=row[5],
        ts=_parse_ts(row[6]),
        type=row[7],
        severity=row[8],
        summary=row[9],
        payload=json.loads(row[10]),
        refs=json.loads(row[11]),
    )


# The scope check of a sparse search reads memories_sparse_scope (migration 2), which
# holds every column scope_where() and the status filter use, instead of the memories row;
# the id is read from memories only for the rows returned. "rowid + 0" keeps the join an
# equality lookup: on a plain column, SQLite carries the rowid bounds of the window over
# to m.seq and plans a range scan of the index for every match.
_SPARSE_SCOPED = (
    " FROM memories_fts CROSS JOIN memories AS m INDEXED BY memories_sparse_scope"
    " ON m.seq = memories_fts.rowid + 0"
)

# Every in-scope match scored, as seed 000's query did.
_SPARSE_ALL_SQL = (
    "SELECT mm.id, w.seq, w.score FROM ("
    " SELECT m.seq AS seq, bm25(memories_fts, ?, ?, ?) AS score"
    + _SPARSE_SCOPED
    + " WHERE memories_fts MATCH ? AND m.status = 'active' AND {where}"
    " ORDER BY score, m.seq LIMIT ?"
    ") AS w CROSS JOIN memories AS mm ON mm.seq = w.seq"
    " ORDER BY w.score, w.seq"
)

# The newest in-scope matches below a rowid. `bound` is the rowid of the scan-th newest
# match in the whole table (0 when there are fewer); FTS5 stays the outer loop, so it
# hands rows over newest first without a sort, and bm25 runs only for rows that pass the
# scope filter, up to the window. The one row of `bound` always comes back (with NULLs
# when nothing matched) so the caller learns how far the scan got; `scored` is how many
# rows the window took.
_SPARSE_WINDOW_SQL = (
    "WITH bound(lo) AS MATERIALIZED (SELECT coalesce((SELECT rowid FROM memories_fts"
    " WHERE memories_fts MATCH ? AND rowid < ? ORDER BY rowid DESC LIMIT 1 OFFSET ?), 0))"
    " SELECT b.lo, mm.id, w.seq, w.score, w.scored FROM bound AS b LEFT JOIN ("
    "  SELECT seq, score, count(*) OVER () AS scored FROM ("
    "   SELECT m.seq AS seq, bm25(memories_fts, ?, ?, ?) AS score"
    + _SPARSE_SCOPED
    + "   WHERE memories_fts MATCH ? AND memories_fts.rowid < ?"
    "    AND memories_fts.rowid >= (SELECT lo FROM bound)"
    "    AND m.status = 'active' AND {where}"
    "   ORDER BY memories_fts.rowid DESC LIMIT ?)"
    "  ORDER BY score, seq LIMIT ?) AS w LEFT JOIN memories AS mm ON mm.seq = w.seq"
    " ORDER BY w.score, w.seq"
)

_SPARSE_COUNT_SQL = (
    "SELECT count(*) FROM (SELECT 1 FROM memories_fts WHERE memories_fts MATCH ? LIMIT ?)"
)


class _SparseHits:
    """The best score found so far for each memory, over the queries of one search."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._best: dict[str, tuple[float, int]] = {}

    def __len__(self) -> int:
        return len(self._best)

    def add(self, rows: Iterable[tuple[str, int, float]]) -> None:
        for memory_id, seq, score in rows:
            known = self._best.get(memory_id)
            if known is None or score > known[0]:
                self._best[memory_id] = (score, seq)

    def kth_score(self) -> float:
        """The ``limit``-th best score so far; 0 while there are fewer."""
        if len(self._best) < self.limit:
            return 0.0
        return heapq.nlargest(self.limit, (score for score, _ in self._best.values()))[-1]

    def ranked(self) -> list[tuple[str, float]]:
        """Best first, ties by storage order (as seed 000's ``ORDER BY score, m.seq``)."""
        best = sorted(self._best.items(), key=lambda item: (-item[1][0], item[1][1]))
        return [(memory_id, score) for memory_id, (score, _) in best[: self.limit]]


class _DocCounts:
    """Term -> document count, each for ``ttl_s`` seconds; cleared whole when full (the
    entries that matter, common terms, come back on their next use)."""

    def __init__(self, ttl_s: float, max_terms: int) -> None:
        self._ttl_s = ttl_s
        self._max_terms = max_terms
        self._entries: dict[str, tuple[int, float]] = {}

    def get(self, term: str, now: float) -> int | None:
        entry = self._entries.get(term)
        if entry is None or entry[1] <= now:
            return None
        return entry[0]

    def put(self, term: str, count: int, now: float) -> None:
        if len(self._entries) >= self._max_terms:
            self._entries = {t: e for t, e in self._entries.items() if e[1] > now}
            if len(self._entries) >= self._max_terms:
                self._entries.clear()
        self._entries[term] = (count, now + self._ttl_s)


# -- issue 6 (the service) ---------------------------------------------------------------
_KEY_COLUMNS = "id, workspace_id, role, agent_id, crew_id, label, created_at, revoked_at"


# Tables of other features that point at memories and must forget with them: (table,
# column holding the memory id). Issue 5 adds ("pending_reviews", "memory_id") here.
def _api_key(row: Sequence[Any]) -> ApiKey:
    return ApiKey(
        id=row[0],
        workspace_id=row[1],
        role=Role(row[2]),
        agent_id=row[3],
        crew_id=row[4],
        label=row[5],
        created_at=_parse_ts(row[6]),
        revoked_at=_opt_ts(row[7]),
    )


def _only_age(spec: ForgetSpec) -> bool:
    """A retention forget: only ``before`` is given."""
    return (
        spec.agent_id is None
        and spec.resource_id is None
        and spec.conversation_id is None
        and spec.memory_id is None
    )


def _sha256(text: str) -> str:
    # The embedding cache's key (episodic.embed.cache.content_hash).
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _memory_row(m: Memory, now: str) -> tuple[Any, ...]:
    """(id, workspace_id, then every other column in ``restore``'s UPDATE order)."""
    return (
        m.id,
        m.workspace_id,
        m.crew_id,
        m.agent_id,
        m.resource_id,
        m.conversation_id,
        ts_text(m.ts),
        m.type,
        m.severity,
        m.content,
        _json("payload", m.payload),
        float(m.base_importance),
        float(m.importance),
        int(m.reference_count),
        None if m.last_referenced_at is None else ts_text(m.last_referenced_at),
        MemoryStatus(m.status).value,
        now if m.created_at is None else ts_text(m.created_at),
        now,
        m.keys,
        m.content_hash,
        m.stability,
        m.difficulty,
        None if m.last_reviewed_at is None else ts_text(m.last_reviewed_at),
        None if m.consolidated_at is None else ts_text(m.consolidated_at),
    )
