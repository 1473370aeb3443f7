"""PostgreSQL plumbing shared by every part of ``PostgresStore``: the connection pools,
migrations, transactions, error mapping.

The store's methods live in mixins, one module per area, all built on ``PgBase``. Every
method takes a connection for one transaction (``_read`` from the read pool, ``_write``
from the write pool) and gives it back, so one store serves many threads, and several
processes share one database. Two pools, so that recalls holding every read connection
never make a write wait, and a burst of writes never starves recalls.
"""

from __future__ import annotations

import os
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from functools import partial
from types import TracebackType
from typing import Any, Self

import psycopg
import psycopg_pool
from pgvector.psycopg import register_vector

from episodic import metrics, tracing
from episodic.errors import StoreBusy, StoreError, StoreUnavailable
from episodic.store.migrations import (
    LATEST_VERSION,
    MIGRATIONS,
    TS_FORMAT,
    missing_versions,
    postgres_statements,
)
from episodic.store.search import search_reads
from episodic.store.urls import display_url, libpq_url

Tracer = Callable[[str, Sequence[Any]], None]
Conn = psycopg.Connection[tuple[Any, ...]]

# Batches of at least this many rows are staged with COPY (``WritesMixin._copy_insert``,
# ``VectorsMixin._copy_vectors``): a statement per row costs ~0.2 ms of parsing and round
# trip.
COPY_MIN_ROWS = 200
# Connections per store and role. Reads: the HTTP server's recall slots (4 per process,
# episodic.http.limits), each running its two legs side by side, plus the connection
# searches leave to the cheap reads beside them (``search_reads``: listing, getting,
# recent episodes, key lookups, health). Writes: request writes (each a short
# transaction), the indexer's claim and upkeep's current job. 15 per process in all, so
# a few workers stay well inside PostgreSQL's default max_connections of 100.
READ_POOL_DEFAULT = 9
WRITE_POOL_DEFAULT = 6


def pool_sizes(env: Mapping[str, str]) -> tuple[int, int]:
    """(read, write) pool sizes from the environment. ``EPISODIC_PG_READ_POOL`` and
    ``EPISODIC_PG_WRITE_POOL`` set one role each; ``EPISODIC_PG_POOL`` (what one pool for
    both used to be) is the total per store, split in two, the odd one to reads; each at
    least 1. A value that is not a whole number above 0 is an error naming it."""

    def read(name: str) -> int | None:
        raw = env.get(name, "").strip()
        if not raw:
            return None
        if not raw.isdigit() or int(raw) < 1:
            raise StoreError(f"{name} must be a whole number of connections above 0, got {raw!r}")
        return int(raw)

    total = read("EPISODIC_PG_POOL")
    reads, writes = split_pool(total) if total else (READ_POOL_DEFAULT, WRITE_POOL_DEFAULT)
    return read("EPISODIC_PG_READ_POOL") or reads, read("EPISODIC_PG_WRITE_POOL") or writes


def split_pool(total: int) -> tuple[int, int]:
    """(read, write) sizes for ``total`` connections: half each, the odd one to reads,
    at least one each."""
    return max(1, total - total // 2), max(1, total // 2)


# A connection that ended a transaction less than this long ago is lent again without the
# pool's check (a round trip to the server). Under load every read and write took one
# more round trip for it, each a wait for the server's process to be scheduled (8% of a
# recall worker's time under the 64-client load: benchmarks/README.md, "PostgreSQL under
# the mixed load"). A connection that just worked is the one least likely to have been
# dropped, and should it have been, the call fails as a call on a connection dropped
# mid-use does, and the pool replaces the connection.
FRESH_CONNECTION_S = 1.0
# How long a caller waits for a connection (and a new connection for the server) before
# the call fails with StoreUnavailable: fail fast, the HTTP layer answers 503.
CONNECT_TIMEOUT_S = 5.0
# Serialises migrations across processes (pg_advisory_xact_lock key).
_MIGRATE_LOCK = 0x6570_6D69  # "epmi"
# The first key of an indexer's claim on a row (pg_try_advisory_xact_lock(CLAIM_LOCK, seq)):
# two-key advisory locks never collide with the one-key locks above. See ClaimsMixin.
CLAIM_LOCK = 0x6570_636C  # "epcl"


def _has_nul(*values: Any) -> bool:
    """Whether a text value holds NUL, which PostgreSQL text cannot (SQLite's can): such a
    value matches no stored row, and a row holding one cannot be stored."""
    return any(isinstance(v, str) and "\x00" in v for v in values)


def pool_is_full(pool: psycopg_pool.ConnectionPool[Any]) -> bool:
    """Whether every connection the pool may hold is open and lent out: a wait for one
    that timed out then means too much work, not a server that is gone (whose
    connections the pool drops, and fails to replace)."""
    stats = pool.get_stats()
    return stats.get("pool_size", 0) >= stats.get("pool_max", 1) and not stats.get(
        "pool_available", 0
    )


@contextmanager
def map_errors(
    url: str, pool: psycopg_pool.ConnectionPool[Any] | None = None, role: str = "read"
) -> Iterator[None]:
    """Turn every psycopg failure into a ``StoreError`` that keeps the cause; a lost or
    unreachable server becomes ``StoreUnavailable``, a wait for a connection of a pool
    that is busy with other calls ``StoreBusy``, naming the pool (``role``)."""
    try:
        yield
    except psycopg_pool.PoolTimeout as exc:
        if pool is not None and pool_is_full(pool):
            raise StoreBusy(
                f"PostgreSQL at {display_url(url)} is busy: all {pool.max_size} connections "
                f"of this process's {role} pool stayed in use for {CONNECT_TIMEOUT_S:g} s; "
                f"retry shortly, or raise EPISODIC_PG_{role.upper()}_POOL (or "
                "EPISODIC_PG_POOL, both pools' total)"
            ) from exc
        raise StoreUnavailable(
            f"PostgreSQL at {display_url(url)} is unreachable ({str(exc).strip()}); "
            "check that the server runs and the URL is right"
        ) from exc
    except psycopg.OperationalError as exc:
        raise StoreUnavailable(
            f"PostgreSQL at {display_url(url)} is unreachable ({str(exc).strip()}); "
            "check that the server runs and the URL is right"
        ) from exc
    except psycopg.Error as exc:
        raise StoreError(f"postgresql: {str(exc).strip()}") from exc


def _migrate(conn: Conn) -> list[int]:
    """Apply every pending migration, each in its own transaction with its ledger row;
    an advisory lock keeps two processes from applying the same step."""
    applied: list[int] = []
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATE_LOCK,))
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations ("
            " version BIGINT PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
        )
    for version, name, _step in MIGRATIONS:
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATE_LOCK,))
            done = conn.execute(
                "SELECT 1 FROM schema_migrations WHERE version = %s", (version,)
            ).fetchone()
            if done:
                continue
            for statement in postgres_statements(version):
                conn.execute(statement)
            conn.execute(
                "INSERT INTO schema_migrations (version, name, applied_at) VALUES (%s, %s, %s)",
                (version, name, datetime.now(UTC).strftime(TS_FORMAT)),
            )
        applied.append(version)
    return applied


def current_version(conn: Conn) -> int:
    row = conn.execute("SELECT to_regclass('schema_migrations') IS NOT NULL").fetchone()
    if not row or not row[0]:
        return 0
    got = conn.execute("SELECT max(version) FROM schema_migrations").fetchone()
    return int(got[0] or 0) if got else 0


def has_schema(url: str) -> bool:
    """Whether the database ``url`` names holds an episodic schema; only reads."""
    with (
        map_errors(url),
        psycopg.connect(
            libpq_url(url), autocommit=True, connect_timeout=int(CONNECT_TIMEOUT_S)
        ) as conn,
    ):
        return current_version(conn) > 0


def _configure(conn: Conn, *, isolation: psycopg.IsolationLevel | None, read_only: bool) -> None:
    """A new pooled connection: the vector type, and what each transaction's BEGIN says."""
    conn.isolation_level = isolation  # set while no transaction is open
    conn.read_only = read_only or None
    register_vector(conn)


class _Worked:
    """When each pooled connection last ended a transaction without an error, so the
    pools' ``check`` can skip the round trip for one that worked a moment ago."""

    def __init__(self) -> None:
        self._at: weakref.WeakKeyDictionary[Conn, float] = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()

    def now(self, conn: Conn) -> None:
        with self._lock:
            self._at[conn] = time.monotonic()

    def check(self, conn: Conn) -> None:
        with self._lock:
            at = self._at.get(conn)
        if at is None or time.monotonic() - at >= FRESH_CONNECTION_S or conn.broken:
            psycopg_pool.ConnectionPool.check_connection(conn)


class PgBase:
    """Pool, migrations and transactions; the mixins add the ``Store`` methods."""

    def __init__(
        self,
        url: str,
        *,
        tracer: Tracer | None = None,
        read_only: bool = False,
        pool_max: int | None = None,
        read_pool: int | None = None,
        write_pool: int | None = None,
    ) -> None:
        """``pool_max`` is the connections of both pools together (split as
        ``split_pool`` does); ``read_pool`` and ``write_pool`` size one each; unset, they
        come from the environment (``pool_sizes``)."""
        self.url = url
        self.read_only = read_only
        self.in_memory = False
        self._conninfo = libpq_url(url)
        self._tracer = tracer
        self._closed = False
        self._lock = threading.Lock()
        self._worked = _Worked()
        # The connection of this thread's ``reading`` block, if it is in one.
        self._reading = threading.local()
        with map_errors(url):
            # Migrate (and create the vector extension) on a plain connection first: the
            # pool's connections register the vector type, which must exist by then.
            with psycopg.connect(
                self._conninfo, autocommit=True, connect_timeout=int(CONNECT_TIMEOUT_S)
            ) as conn:
                if read_only:
                    version = current_version(conn)
                    applied = (
                        [r[0] for r in conn.execute("SELECT version FROM schema_migrations")]
                        if version
                        else []
                    )
                    missing = missing_versions(applied)
                    if missing:
                        raise StoreError(
                            f"{display_url(url)} lacks schema step(s) "
                            f"{', '.join(map(str, missing))} of this episodic; open it once "
                            "read-write to migrate it"
                        )
                else:
                    _migrate(conn)
                    version = current_version(conn)
            if version > LATEST_VERSION:
                raise StoreError(
                    f"{display_url(url)} is at schema v{version}, newer than this episodic "
                    f"knows (v{LATEST_VERSION}); upgrade episodic"
                )
            reads, writes = split_pool(pool_max) if pool_max else pool_sizes(os.environ)
            self._read_pool = self._open_pool(read_pool or reads, "read")
            self._search_slots = threading.BoundedSemaphore(search_reads(self._read_pool.max_size))
            try:
                self._write_pool = self._open_pool(write_pool or writes, "write")
            except BaseException:
                self._read_pool.close()
                raise

    def _open_pool(self, size: int, role: str) -> psycopg_pool.ConnectionPool[Any]:
        # A read is one snapshot, read-only: said in the BEGIN each transaction starts
        # with, not in a statement of its own after it (a round trip per read).
        reads = role == "read"
        pool = psycopg_pool.ConnectionPool(
            self._conninfo,
            min_size=1,
            max_size=max(1, size),
            kwargs={"connect_timeout": int(CONNECT_TIMEOUT_S)},
            configure=partial(
                _configure,
                isolation=psycopg.IsolationLevel.REPEATABLE_READ if reads else None,
                read_only=reads or self.read_only,
            ),
            timeout=CONNECT_TIMEOUT_S,
            # A connection the server dropped is noticed and replaced before use, unless
            # it just worked (FRESH_CONNECTION_S). (Not the pool's ``reset`` hook to note
            # that: with one, the pool takes every connection back on a thread of its own,
            # and the next caller may wait for it.)
            check=self._worked.check,
            name=f"episodic-{role}",
            open=False,
        )
        pool.open(wait=True, timeout=CONNECT_TIMEOUT_S)
        return pool

    # -- plumbing --------------------------------------------------------------------
    def _check_open(self) -> None:
        if self._closed:
            raise StoreError(f"the store {display_url(self.url)} is closed; open a new one")

    def _exec(self, conn: Conn, sql: str, params: Sequence[Any] = ()) -> psycopg.Cursor[Any]:
        if self._tracer is not None:
            self._tracer(sql, params)
        if tracing.ACTIVE:
            with tracing.statement("postgresql", sql):
                return conn.execute(sql, params if params else None)
        return conn.execute(sql, params if params else None)

    def _executemany(self, conn: Conn, sql: str, rows: Sequence[Sequence[Any]]) -> int:
        """Run one statement per row, in order and pipelined; returns the rows changed in
        all (row by row keeps SQLite's semantics where two rows touch the same target)."""
        if self._tracer is not None:
            self._tracer(sql, rows)
        if not rows:
            return 0
        with conn.cursor() as cur, tracing.statement("postgresql", sql):
            cur.executemany(sql, rows)
            return max(cur.rowcount, 0)

    def _fetch(self, conn: Conn, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        """``_exec(...).fetchall()`` that never lets psycopg prepare the statement. A
        prepared statement may switch to a generic plan, made without the parameters'
        values; the search plans hinge on them (a tsquery term's frequency decides
        between walking the newest rows and the GIN index; a scope's size between
        index and exact scans), so each search is planned for its own values."""
        if self._tracer is not None:
            self._tracer(sql, params)
        if tracing.ACTIVE:
            with tracing.statement("postgresql", sql):
                return conn.execute(sql, params, prepare=False).fetchall()
        return conn.execute(sql, params, prepare=False).fetchall()

    def _bulk(self, rows: int) -> bool:
        """Whether a batch of ``rows`` is staged with COPY rather than sent row by row."""
        return rows >= COPY_MIN_ROWS

    # -- what one area asks of another (each implemented by the mixin named) ----------
    def _store_vectors(
        self, conn: Conn, model_id: str, dim: int, rows: Sequence[tuple[str, Any]]
    ) -> int:
        """Store vectors inside the caller's transaction (VectorsMixin implements it; the
        claims mixin needs it on the connection that holds its row locks)."""
        raise NotImplementedError

    def _stored_model(self, conn: Conn) -> tuple[str, int] | None:
        """(model, dim) of the stored vectors (VectorsMixin implements it)."""
        raise NotImplementedError

    def _column_dim(self, conn: Conn) -> int | None:
        """The dimension the vector column is typed with (VectorsMixin implements it)."""
        raise NotImplementedError

    def _insert_memories(self, conn: Conn, memories: Sequence[Any], now: str) -> int:
        """Insert memories and their sources inside the caller's transaction (WritesMixin
        implements it; upkeep's consolidation writes its rules on its own connection)."""
        raise NotImplementedError

    @property
    def parallel_reads(self) -> bool:
        # With fewer than two connections for searches, a recall's second leg would wait
        # for the first.
        return search_reads(self._read_pool.max_size) >= 2

    def legs_apart(self, workspace_id: str) -> bool:
        # Both legs wait on the server, not on this process: side by side whenever the
        # pool allows.
        return self.parallel_reads

    @contextmanager
    def _write(self) -> Iterator[Conn]:
        """One read-write transaction on a pooled connection."""
        self._check_open()
        pool = self._write_pool
        asked = time.perf_counter()
        with map_errors(self.url, pool, "write"), pool.connection() as conn:
            metrics.pool_wait("write", time.perf_counter() - asked)
            with conn.transaction():
                yield conn
            self._worked.now(conn)

    @contextmanager
    def _read(self, *, search: bool = False) -> Iterator[Conn]:
        """One read-only snapshot, so several statements see the same commit.
        ``search``: a recall's leg, which takes one of the connections searches may hold
        (``search_reads``), leaving the rest to lookups. Inside a ``reading`` block, that
        block's connection and snapshot."""
        self._check_open()
        current: Conn | None = getattr(self._reading, "conn", None)
        if current is not None:
            yield current
            return
        if search:
            if not metrics.waited_for("search", self._search_slots, CONNECT_TIMEOUT_S):
                raise StoreBusy(
                    f"PostgreSQL at {display_url(self.url)} is busy: the "
                    f"{search_reads(self._read_pool.max_size)} read connections of this "
                    f"process's searches stayed in use for {CONNECT_TIMEOUT_S:g} s; "
                    "retry shortly, or raise EPISODIC_PG_READ_POOL"
                )
            try:
                with self._read() as conn:
                    yield conn
            finally:
                self._search_slots.release()
            return
        pool = self._read_pool
        asked = time.perf_counter()
        # REPEATABLE READ, READ ONLY: the read pool's connections begin so (``_configure``).
        with map_errors(self.url, pool, "read"), pool.connection() as conn:
            metrics.pool_wait("read", time.perf_counter() - asked)
            with conn.transaction():
                yield conn
            self._worked.now(conn)

    @contextmanager
    def reading(self) -> Iterator[None]:
        """One snapshot and connection for this thread's reads in the block (a search's
        connection: the block stands for a recall's reads)."""
        if getattr(self._reading, "conn", None) is not None:
            yield
            return
        with self._read(search=True) as conn:
            self._reading.conn = conn
            try:
                yield
            finally:
                self._reading.conn = None

    # -- lifecycle -------------------------------------------------------------------
    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._read_pool.close()
            self._write_pool.close()

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
        return f"PostgresStore({display_url(self.url)!r})"

    def schema_version(self) -> int:
        self._check_open()
        with map_errors(self.url, self._read_pool), self._read_pool.connection() as conn:
            return current_version(conn)
