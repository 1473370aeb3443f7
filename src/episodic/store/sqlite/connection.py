"""SQLite plumbing shared by every part of ``SqliteStore``: the connections, migrations,
transactions, error mapping.

A file database in WAL mode has one writer connection and a small pool of read
connections. ``_write`` holds the writer for one transaction under the write lock, so
writes are serialised as SQLite serialises them anyway; ``_read`` borrows a read
connection for one snapshot transaction, so recalls run their SQL in parallel with each
other and with a write (WAL readers see the last commit and never wait for a writer, and
``sqlite3`` releases the GIL while a statement steps). ``_execute`` runs on the
connection of the calling thread's transaction; a ``_read`` nested in a ``_write`` reads
on the writer, so it sees the write's own uncommitted rows. A ``:memory:`` database (each
connection would be a database of its own) and a file not in WAL mode (readers would
block the writer) keep one connection for everything, under the write lock.

The store's methods live in mixins, one module per area, all built on ``SqliteBase``, as
``episodic.store.postgres``'s are built on ``PgBase``.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import Any, Self
from urllib.parse import quote

from episodic import metrics, tracing
from episodic.errors import InvalidInput, StoreError
from episodic.model import Memory
from episodic.store.dense import DenseIndex
from episodic.store.migrations import (
    LATEST_VERSION,
    applied_versions,
    current_version,
    migrate,
    missing_versions,
)
from episodic.store.search import search_reads
from episodic.store.vectors import PendingVector, Relation, Vector

Tracer = Callable[[str, Sequence[Any]], None]

MEMORY_URL = "sqlite:///:memory:"
log = logging.getLogger("episodic.store")

BUSY_TIMEOUT_MS = 5000
# Emptying the WAL after a forget (``_truncate_wal``) waits for the readers of older
# snapshots, and while it waits no write may start. Each try waits at most this long, with
# writes let through between tries; only after WAL_TRUNCATE_TRIES_S of tries does one wait
# as long as any other statement would (BUSY_TIMEOUT_MS). Under the 64-client load, timed
# inside the server, a single blocking truncate held every write up for as long as 2.6 s.
WAL_TRUNCATE_TRY_MS = 20
WAL_TRUNCATE_TRIES_S = 10.0
# The longest a job of several write transactions waits, between two of them, for the
# writes already waiting to go first (``_let_writes_in``).
LET_WRITES_IN_S = 0.05
# Read connections per file store: enough for a few recalls at once on a small machine,
# each costing a file handle and its own page cache. Searches hold at most all but one
# (``search_reads``). Five (four for searches) made recalls faster and writes slower: the
# 64-client load over 600 s had writes at 397 / 2,379 ms (p50 / p95) with five against 83
# / 777 with four; more recalls at once take the CPU and the GIL from the writes.
DEFAULT_READERS = 4
READERS_ENV = "EPISODIC_SQLITE_READERS"
# Well under SQLite's bound-parameter limit, and keeps each statement's plan small.
IN_CHUNK = 500


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


def has_schema(path_or_url: str | os.PathLike[str]) -> bool:
    """Whether the file holds an episodic schema (``:memory:`` always does: it is made
    anew each time). Only reads: a missing file is not created. A file SQLite cannot read
    counts as present, so that opening it reports what is wrong with it."""
    target = sqlite_target(path_or_url)
    if target == ":memory:":
        return True
    path = Path(target)
    if not path.is_file():
        return False
    try:
        conn = sqlite3.connect(f"{path.absolute().as_uri()}?mode=ro", uri=True)
        try:
            return current_version(conn) > 0
        finally:
            conn.close()
    except sqlite3.DatabaseError:
        return True


def reader_count(raw: str | None) -> int:
    """How many read connections ``EPISODIC_SQLITE_READERS`` asks for (unset: the
    default; 0: one connection for everything)."""
    if raw is None or not raw.strip():
        return DEFAULT_READERS
    try:
        count = int(raw)
    except ValueError:
        count = -1
    if not 0 <= count <= 256:
        raise InvalidInput(READERS_ENV, f"expected a whole number from 0 to 256, got {raw!r}")
    return count


def chunks(items: Sequence[str]) -> Iterator[Sequence[str]]:
    for start in range(0, len(items), IN_CHUNK):
        yield items[start : start + IN_CHUNK]


def placeholders(n: int) -> str:
    return ",".join("?" * n)


@contextmanager
def map_errors() -> Iterator[None]:
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


class SqliteBase:
    """Connection, migrations and transactions; the mixins add the ``Store`` methods.
    ``tracer(sql, params)`` sees every statement the store runs."""

    def __init__(
        self,
        path_or_url: str | os.PathLike[str],
        *,
        tracer: Tracer | None = None,
        read_only: bool = False,
        readers: int | None = None,
    ) -> None:
        """``readers``: the most read connections open at once (default
        ``EPISODIC_SQLITE_READERS``, else 4); 0 keeps one connection for everything."""
        self.path = sqlite_target(path_or_url)
        self.in_memory = self.path == ":memory:"
        self.url = MEMORY_URL if self.in_memory else f"sqlite:///{Path(self.path).absolute()}"
        self.read_only = read_only
        self._tracer = tracer
        # The write lock: held for each write transaction, and by whatever uses the
        # writer connection outside one.
        self._lock = threading.RLock()
        # Forgets under way, which keep freed pages zeroed on the writer (service.py).
        self._zeroing_forgets = 0
        # Threads waiting for the write lock in _write: a job of several transactions
        # lets them in between its own (_let_writes_in), which the lock alone does not.
        self._writes_waiting = 0
        self._writes_waiting_lock = threading.Lock()
        self._closed = False
        # The connection of the calling thread's transaction (see _execute).
        self._local = threading.local()
        self._dense: dict[str, DenseIndex] = {}
        # One dense refresh at a time, so each reads a snapshot at least as new as the
        # last one did (see SearchMixin._fresh_index).
        self._dense_lock = threading.Lock()
        self._seen_stamps: dict[sqlite3.Connection, tuple[int, int]] = {}
        self._epoch = 0
        self._counts_lock = threading.Lock()
        wanted = reader_count(os.environ.get(READERS_ENV)) if readers is None else readers
        if wanted < 0:
            raise InvalidInput("readers", f"expected 0 or more read connections, got {wanted}")
        self._idle_readers: list[sqlite3.Connection] = []
        self._open_readers = 0
        self._pool_lock = threading.Lock()
        with map_errors():
            self._writer = self._connect()
            try:
                self._prepare()
                mode = str(self._writer.execute("PRAGMA journal_mode").fetchone()[0]).lower()
            except BaseException:
                self._writer.close()
                raise
        # Readers only pay off in WAL, where they neither wait for the writer nor block it.
        self._readers = wanted if mode == "wal" and not self.in_memory else 0
        self._reader_slots = threading.BoundedSemaphore(max(1, self._readers))
        self._search_slots = threading.BoundedSemaphore(search_reads(self._readers))

    def _connect(self) -> sqlite3.Connection:
        # isolation_level=None: transactions are explicit (see _write/_read).
        # check_same_thread=False: a connection serves one transaction at a time, on
        # whichever thread holds it (the writer under self._lock, a reader while borrowed).
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
            version = current_version(self._writer)
            missing = missing_versions(applied_versions(self._writer))
            if missing:
                raise StoreError(
                    f"{self.url} lacks schema step(s) {', '.join(map(str, missing))} of this "
                    "episodic; open it once read-write (`episodic init`) to migrate it"
                )
        else:
            self._execute("PRAGMA journal_mode = WAL")
            tracer = self._tracer
            if tracer is not None:
                # Migration steps run on the raw connection; show them to the tracer too.
                self._writer.set_trace_callback(lambda sql: tracer(sql, ()))
            try:
                migrate(self._writer)
            finally:
                self._writer.set_trace_callback(None)
            version = current_version(self._writer)
        if version > LATEST_VERSION:
            raise StoreError(
                f"{self.url} is at schema v{version}, newer than this episodic knows "
                f"(v{LATEST_VERSION}); upgrade episodic"
            )

    # -- plumbing --------------------------------------------------------------------
    @property
    def parallel_reads(self) -> bool:
        # With fewer than two connections for searches, a recall's second leg would wait
        # for the first.
        return search_reads(self._readers) >= 2

    @property
    def _conn(self) -> sqlite3.Connection:
        """The connection of the calling thread's transaction; outside one, the writer
        (whose callers hold ``self._lock``)."""
        current: sqlite3.Connection | None = getattr(self._local, "conn", None)
        return self._writer if current is None else current

    def _execute(self, sql: str, params: Sequence[Any] = ()) -> sqlite3.Cursor:
        if self._tracer is not None:
            self._tracer(sql, params)
        if tracing.ACTIVE:
            with tracing.statement("sqlite", sql):
                return self._conn.execute(sql, params)
        return self._conn.execute(sql, params)

    def _executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> sqlite3.Cursor:
        if self._tracer is not None:
            self._tracer(sql, rows)
        if tracing.ACTIVE:
            with tracing.statement("sqlite", sql):
                return self._conn.executemany(sql, rows)
        return self._conn.executemany(sql, rows)

    def _check_open(self) -> None:
        if self._closed:
            raise StoreError(f"the store {self.url} is closed; open a new one")

    @contextmanager
    def _on(self, conn: sqlite3.Connection) -> Iterator[None]:
        """Run this thread's statements on ``conn`` for the block."""
        outer = getattr(self._local, "conn", None)
        self._local.conn = conn
        try:
            yield
        finally:
            self._local.conn = outer

    @contextmanager
    def _write(self) -> Iterator[None]:
        """One write transaction, taken up front so a busy writer is waited for here
        rather than failing halfway through."""
        with self._writes_waiting_lock:
            self._writes_waiting += 1
        try:
            metrics.waited_for("write", self._lock)
        finally:
            with self._writes_waiting_lock:
                self._writes_waiting -= 1
        try:
            with self._transaction():
                yield
        finally:
            self._lock.release()

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        with map_errors(), self._on(self._writer):
            self._check_open()
            self._execute("BEGIN IMMEDIATE")
            try:
                yield
                self._execute("COMMIT")
            except BaseException:
                if self._writer.in_transaction:
                    self._execute("ROLLBACK")
                raise

    def _let_writes_in(self, limit_s: float = LET_WRITES_IN_S) -> None:
        """Wait (at most ``limit_s``) until no thread waits for the write lock: called by
        a job of several write transactions between two of them. Python's locks are not
        fair, and the job, taking the lock again at once, could win it back over a write
        that had waited for it all along. The caller holds no transaction."""
        deadline = time.monotonic() + limit_s
        while self._writes_waiting and time.monotonic() < deadline:
            time.sleep(0.0005)

    @contextmanager
    def _read(self, *, search: bool = False) -> Iterator[None]:
        """One read snapshot, so several statements see the same commit. Inside another
        transaction of this thread, that transaction's connection and snapshot (inside
        a write, the write's own rows). ``search``: a recall's leg, which takes one of
        the connections searches may hold (``search_reads``), leaving the rest to
        lookups."""
        if getattr(self._local, "conn", None) is not None:
            yield
            return
        if search and self._readers:
            self._check_open()
            metrics.waited_for("search", self._search_slots)
            try:
                with self._read():
                    yield
            finally:
                self._search_slots.release()
            return
        if not self._readers:
            with self._lock, map_errors(), self._on(self._writer):
                self._check_open()
                self._execute("BEGIN")
                try:
                    yield
                finally:
                    self._execute("COMMIT")
            return
        with map_errors():
            conn = self._borrow_reader()
            try:
                with self._on(conn):
                    self._execute("BEGIN")
                    try:
                        yield
                    finally:
                        self._execute("COMMIT")
            finally:
                self._return_reader(conn)

    def _borrow_reader(self) -> sqlite3.Connection:
        """A pooled read connection, opened on first need; waits while all are lent."""
        self._check_open()
        metrics.waited_for("read", self._reader_slots)
        try:
            with self._pool_lock:
                self._check_open()
                if self._idle_readers:
                    return self._idle_readers.pop()
                self._open_readers += 1
            try:
                return self._open_reader()
            except BaseException:
                with self._pool_lock:
                    self._open_readers -= 1
                raise
        except BaseException:
            self._reader_slots.release()
            raise

    def _open_reader(self) -> sqlite3.Connection:
        conn = self._connect()
        try:
            for pragma in (
                f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}",
                "PRAGMA foreign_keys = ON",
                # A reader that tried to write would take a lock the writer then waits on.
                "PRAGMA query_only = ON",
            ):
                conn.execute(pragma)
        except BaseException:
            conn.close()
            raise
        return conn

    def _return_reader(self, conn: sqlite3.Connection) -> None:
        """Back to the pool, or closed if the store was closed while it was lent."""
        with self._pool_lock:
            keep = not self._closed
            if keep:
                self._idle_readers.append(conn)
            else:
                self._open_readers -= 1
                self._seen_stamps.pop(conn, None)
        if not keep:
            conn.close()
        self._reader_slots.release()

    def _truncate_wal(self) -> None:
        """Copy every WAL frame into the database file and empty the WAL, so that no
        earlier version of a page (a forgotten text) is left in either file. Tries are
        short and writes run between them (see ``WAL_TRUNCATE_TRY_MS``); the last try
        waits as long as any other statement would, and past that the WAL is emptied by a
        later checkpoint (logged). The caller holds no transaction."""
        deadline = time.monotonic() + WAL_TRUNCATE_TRIES_S
        pause = 0.001
        while True:
            last = time.monotonic() >= deadline
            with self._lock, map_errors():
                self._check_open()
                if not last:
                    self._execute(f"PRAGMA busy_timeout = {WAL_TRUNCATE_TRY_MS}")
                try:
                    busy = int(self._execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0])
                finally:
                    if not last:
                        self._execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            if busy and last:
                # Deleted all the same; a later checkpoint (SQLite's own, or the next
                # forget's) empties the WAL.
                log.warning(
                    "%s: a reader kept the WAL from being emptied after a forget; the "
                    "forgotten rows are deleted, and their old pages leave the WAL at a "
                    "later checkpoint",
                    self.url,
                )
            if not busy or last:
                return
            time.sleep(pause)
            pause = min(pause * 2, 0.05)

    def open_connections(self) -> int:
        """How many SQLite connections this store holds open (the writer and readers)."""
        with self._pool_lock:
            return self._open_readers + (0 if self._closed else 1)

    # -- lifecycle -------------------------------------------------------------------
    def close(self) -> None:
        """Close the writer and the idle readers; a reader lent out is closed when its
        read ends."""
        with self._lock:
            with self._pool_lock:
                if self._closed:
                    return
                self._closed = True
                idle, self._idle_readers = self._idle_readers, []
                self._open_readers -= len(idle)
            self._dense.clear()
            self._seen_stamps.clear()
            with map_errors():
                for conn in idle:
                    conn.close()
                self._writer.close()

    def __enter__(self) -> Self:
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
        with self._lock, map_errors():
            self._check_open()
            return current_version(self._writer)

    # -- what one area asks of another (each implemented by the mixin named) ----------
    def get_memories(self, workspace_id: str, ids: Sequence[str]) -> list[Memory]:
        """WritesMixin implements it (the service reads back what it lists or changes)."""
        raise NotImplementedError

    def get_memory(self, workspace_id: str, memory_id: str) -> Memory:
        """WritesMixin implements it."""
        raise NotImplementedError

    def _insert_memories(self, memories: Sequence[Memory], now: str) -> int:
        """INSERT OR IGNORE memories and their sources inside the caller's write
        (WritesMixin implements it; consolidation and restore store memories too)."""
        raise NotImplementedError

    def _check_sources(self, source_rows: Sequence[tuple[str, str]]) -> None:
        """Refuse a source that is not a stored event (WritesMixin implements it)."""
        raise NotImplementedError

    def _sources_of(self, ids: Sequence[str]) -> dict[str, list[str]]:
        """Each memory's source events in citation order (WritesMixin implements it)."""
        raise NotImplementedError

    def _insert_edges(self, edges: Sequence[Relation], now: str) -> int:
        """Upsert edges inside the caller's write (VectorsMixin implements it;
        consolidation writes its rules' edges in its own transaction)."""
        raise NotImplementedError

    def pending_vectors(self, limit: int) -> list[PendingVector]:
        """VectorsMixin implements it (the indexer's claim reads it)."""
        raise NotImplementedError

    def put_vectors(self, model_id: str, dim: int, rows: Sequence[tuple[str, Vector]]) -> int:
        """VectorsMixin implements it (the indexer's claim stores through it)."""
        raise NotImplementedError

    def _stored_model(self) -> tuple[str, int] | None:
        """(model, dim) of the stored vectors (VectorsMixin implements it)."""
        raise NotImplementedError

    def _fresh_index(self, workspace_id: str) -> DenseIndex:
        """The workspace's in-process dense index, up to date (SearchMixin implements
        it; batched searches and the health job read it too)."""
        raise NotImplementedError
