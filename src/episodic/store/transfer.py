"""Copy a whole memory from a SQLite file to a PostgreSQL database (`episodic migrate`).

The two schemas have the same tables and columns (see ``migrations.py``), so every table is
copied column by column by name, value for value: text stays text (times are the same
fixed-format UTC text), integers and floats keep their values, identity keys keep their
numbers. Vectors go from SQLite's little-endian float32 BLOBs to pgvector.

Resumable: each table is copied in primary-key order in batches, each batch committed on
its own with ``ON CONFLICT DO NOTHING``. A run interrupted anywhere (Ctrl-C, SIGKILL, a
lost connection) leaves every table holding a prefix of its rows in key order, so running
the same command again continues each table after the largest key the target holds. Text
keys compare bytewise on both sides (``COLLATE "C"`` here, ``BINARY`` in SQLite), so "after
the largest key" means the same rows on both.

Verified: at the end, per table, the row counts and a sha256 over every row in key order
(a canonical rendering of each value) must be equal on both sides.
"""

from __future__ import annotations

import hashlib
import sqlite3
import struct
from collections.abc import Iterable, Iterator, Sequence
from contextlib import closing, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import quote

import numpy as np
import psycopg
from pgvector.psycopg import register_vector
from psycopg.abc import Buffer
from psycopg.adapt import Dumper
from psycopg.pq import Format
from psycopg.types import TypeInfo

from episodic.errors import InvalidInput, StoreError
from episodic.store import _POSTGRES_SCHEMES
from episodic.store.deferred_indexes import (
    build_pending,
    defer_indexes,
    owns,
    pending_indexes,
    raise_build_memory,
    refuse_unfinished,
)
from episodic.store.dense import LE_FLOAT32
from episodic.store.migrations import (
    LATEST_VERSION,
    POSTGRES_ONLY_COLUMNS,
    applied_versions,
    current_version,
    missing_versions,
)
from episodic.store.postgres import PostgresStore
from episodic.store.postgres.connection import Conn, map_errors
from episodic.store.postgres.pgvector import index_sql, index_to_build, parse_version
from episodic.store.sqlite import sqlite_target
from episodic.store.urls import display_url, libpq_url

DEFAULT_BATCH = 2000
_MAX_INDEX_MEMORY_KB = 2 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class Table:
    """One copied table. ``key`` is the order rows are copied and checksummed in, by
    PostgreSQL column name (the primary key, or an identity column that keeps SQLite's
    rowid order); ``rowid_as`` names the PostgreSQL-only column that takes SQLite's rowid;
    ``identities`` are the identity columns whose sequences must move past the copy;
    ``paused_trigger`` is a trigger whose work the copied rows already hold."""

    name: str
    key: tuple[str, ...]
    identities: tuple[str, ...] = ()
    rowid_as: str | None = None
    paused_trigger: str | None = None


# Foreign-key order: memories before what references them. Not copied:
# - upkeep_leases: a lease is held by a running upkeep process on the old database, for
#   minutes; copied, it would make the new database's jobs wait for a holder that is gone.
# - vector_generations: SQLite's signal to reload its vector matrix (PostgreSQL uses HNSW).
# - ui_sessions: the page's sign-ins, hours long: sign in again on the new database.
# - schema_migrations: the target has its own, written by its migrations.
# - memories_fts, passages_fts, journal_fts: SQLite-only (PostgreSQL's are derived).
# - memory_lengths: derived; the target's triggers fill it as the memories arrive.
TABLES: tuple[Table, ...] = (
    Table("events", ("id",)),
    Table("events_archive", ("id",)),
    Table("memories", ("seq",), identities=("seq",)),
    # Sources are read in insertion order (SQLite's rowid, PostgreSQL's seq): the rowid
    # becomes seq, so a memory lists its sources in the same order on both.
    Table("memory_sources", ("seq",), identities=("seq",), rowid_as="seq"),
    # Its trigger sets memories.has_vector, which the memories arrived with; left on, it
    # would rewrite every vectored memory row once more (4x slower on 50k vectors).
    Table("memory_vectors", ("seq",), identities=("seq",), paused_trigger="memory_vectors_flag"),
    Table("memory_passages", ("memory_id", "n")),
    Table("memory_relations", ("src", "dst", "relation")),
    Table("memory_history", ("seq",), identities=("seq",)),
    Table("memory_compactions", ("memory_id",)),
    # Decisions between memories, undone ones too (an undone pair is never made again).
    Table("supersessions", ("old_id", "new_id")),
    Table("partial_changes", ("old_id", "new_id")),
    Table("embedding_cache", ("content_hash", "model")),
    Table("memory_health_snapshots", ("workspace_id", "crew_id", "snapshot_date")),
    Table("memory_reviews", ("id",), identities=("id",)),
    Table("memory_nudges", ("workspace_id", "agent_id", "session_id")),
    Table("upkeep_runs", ("id",), identities=("id",)),
    Table("api_keys", ("id",)),
    Table("import_files", ("root", "path")),
)


class Listener(Protocol):
    """What a progress display is told: a phase starts (``total`` rows, ``done`` of them
    already there; ``total`` None when unknown) and advances by some rows."""

    def start(self, label: str, total: int | None, done: int = 0) -> None: ...

    def advance(self, label: str, rows: int) -> None: ...


class Quiet:
    """A listener that shows nothing."""

    def start(self, label: str, total: int | None, done: int = 0) -> None:
        pass

    def advance(self, label: str, rows: int) -> None:
        pass


@dataclass(frozen=True, slots=True)
class TableReport:
    name: str
    source_rows: int
    target_rows: int
    copied: int
    source_sha256: str
    target_sha256: str

    @property
    def ok(self) -> bool:
        return self.source_rows == self.target_rows and self.source_sha256 == self.target_sha256

    def to_json(self) -> dict[str, Any]:
        fields = ("source_rows", "target_rows", "copied", "source_sha256", "target_sha256")
        return {"table": self.name, **{f: getattr(self, f) for f in fields}, "ok": self.ok}


@dataclass(frozen=True, slots=True)
class MigrateReport:
    source: str
    target: str
    tables: tuple[TableReport, ...]

    @property
    def ok(self) -> bool:
        return all(t.ok for t in self.tables)

    @property
    def mismatched(self) -> list[str]:
        return [t.name for t in self.tables if not t.ok]

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "target": self.target,
            "ok": self.ok,
            "tables": [t.to_json() for t in self.tables],
        }


# -- URLs ------------------------------------------------------------------------------
def source_path(url: str) -> Path:
    """The SQLite file ``--from`` names (``sqlite:///path.db`` or a plain path)."""
    raw = url.strip()
    if "://" in raw and raw.partition("://")[0].lower() != "sqlite":
        raise InvalidInput(
            "from", f"not a SQLite database: {display_url(raw)!r}; use sqlite:///path.db"
        )
    try:
        path = sqlite_target(raw)
    except InvalidInput as exc:
        raise InvalidInput("from", exc.message) from None
    if path == ":memory:":
        raise InvalidInput("from", "an in-memory database has nothing to copy; name a file")
    if not Path(path).is_file():
        raise InvalidInput("from", f"no such SQLite file: {path}")
    return Path(path)


def check_target(url: str) -> str:
    """``--to`` as given, once it is a PostgreSQL URL."""
    raw = url.strip()
    scheme, sep, _ = raw.partition("://")
    if not sep or scheme.lower() not in _POSTGRES_SCHEMES:
        raise InvalidInput(
            "to",
            f"not a PostgreSQL URL: {display_url(raw)!r}; "
            "use postgresql://user:password@host:5432/dbname",
        )
    return raw


# -- the copy ----------------------------------------------------------------------------
def migrate(
    source: str,
    target: str,
    *,
    batch: int = DEFAULT_BATCH,
    verify_only: bool = False,
    listener: Listener | None = None,
) -> MigrateReport:
    """Copy every table of the SQLite database ``source`` into the PostgreSQL database
    ``target`` (created and migrated first), then verify counts and checksums.

    Safe to run again after an interruption: it continues where the target stopped, and
    a finished copy copies nothing. ``verify_only`` only compares. ``StoreError`` when the
    source is not at the latest schema or the target holds other data; a report whose
    ``ok`` is False when the verification found a difference."""
    if batch < 1:
        raise InvalidInput("batch", f"must be at least 1, got {batch}")
    path = source_path(source)
    target = check_target(target)
    shown = listener or Quiet()
    with _source(path) as src, _target(target) as dst:
        # One read transaction over the whole run: every table is copied and verified
        # from the same snapshot, so a source still in use cannot tear the copy apart
        # (the sources of a memory the copy of memories did not see, say).
        src.execute("BEGIN")
        shapes = [_shape(src, dst, table) for table in TABLES]
        counts = {
            s.table.name: int(src.execute(f"SELECT count(*) FROM {s.table.name}").fetchone()[0])
            for s in shapes
        }
        copied: dict[str, int] = {}
        if verify_only:
            refuse_unfinished(dst)
        else:
            defer_indexes(dst, counts)
            for shape in shapes:
                if shape.table.name == "memory_vectors":
                    _type_vector_column(src, dst)
                copied[shape.table.name] = _copy_table(
                    src, dst, shape, counts[shape.table.name], batch, shown
                )
            # The b-tree and GIN indexes dropped before the copy (see ``deferred_indexes``).
            if pending := pending_indexes(dst):
                shown.start("build the other indexes", len(pending))
            for _built in build_pending(dst, pending):
                shown.advance("build the other indexes", 1)
            _index_vectors(src, dst, counts["memory_vectors"], shown)
            for shape in shapes:
                _move_identities(src, dst, shape.table)
        source_sums = {
            s.table.name: _sqlite_checksum(src, s, counts[s.table.name], batch, shown)
            for s in shapes
        }
        src.execute("COMMIT")
        target_sums = _pg_checksums(dst, shapes, batch, shown)
    reports = tuple(
        TableReport(
            s.table.name,
            counts[s.table.name],
            target_sums[s.table.name][0],
            copied.get(s.table.name, 0),
            source_sums[s.table.name],
            target_sums[s.table.name][1],
        )
        for s in shapes
    )
    return MigrateReport(str(path), display_url(target), reports)


@contextmanager
def _source(path: Path) -> Iterator[sqlite3.Connection]:
    """The source, read-only, at the latest schema; sqlite3 failures become
    ``StoreError``."""
    uri = f"file:{quote(str(path.absolute()))}?mode=ro"
    try:
        with closing(sqlite3.connect(uri, uri=True, isolation_level=None)) as conn:
            version = current_version(conn)
            if version > LATEST_VERSION:
                raise StoreError(
                    f"{path} is at schema v{version}, newer than this episodic knows "
                    f"(v{LATEST_VERSION}); upgrade episodic"
                )
            missing = missing_versions(applied_versions(conn))
            if missing:
                raise StoreError(
                    f"{path} lacks schema step(s) {', '.join(map(str, missing))} the copy "
                    "needs; open it once with this episodic to migrate it "
                    f"(episodic --db sqlite:///{path} init), then run the copy again"
                )
            yield conn
    except sqlite3.Error as exc:
        raise StoreError(f"sqlite: reading {path}: {exc}") from exc


@contextmanager
def _target(url: str) -> Iterator[Conn]:
    """The target, created and migrated by the store, on one plain autocommit
    connection; psycopg failures become ``StoreError``."""
    PostgresStore(url).close()
    with map_errors(url), psycopg.connect(libpq_url(url), autocommit=True) as conn:
        register_vector(conn)
        yield conn


@dataclass(frozen=True, slots=True)
class _Shape:
    """How one table is read and written: ``columns`` by PostgreSQL name, ``reads`` the
    SQLite expression of each, ``types`` each PostgreSQL type (for binary COPY),
    ``hashed`` the positions the checksum covers (every column but the copied rowid),
    ``keys`` the positions of the key."""

    table: Table
    columns: tuple[str, ...]
    reads: tuple[str, ...]
    types: tuple[str, ...]
    hashed: tuple[int, ...]
    keys: tuple[int, ...]

    def sqlite_list(self, positions: Sequence[int]) -> str:
        return ", ".join(self.reads[i] for i in positions)

    def pg_list(self, positions: Sequence[int]) -> str:
        # vector_send gives a vector's binary form (the float32 values, big-endian, after
        # a 4-byte header) for the checksum, independent of pgvector's Python loader.
        return ", ".join(
            f"vector_send({self.columns[i]})" if self.types[i] == "vector" else self.columns[i]
            for i in positions
        )

    def pg_values(self, row: Sequence[Any]) -> list[Any]:
        """A row read with ``pg_list(hashed)`` as SQLite holds it: vectors as
        little-endian float32 bytes."""
        return [
            np.frombuffer(v, ">f4", offset=4).astype(LE_FLOAT32).tobytes()
            if v is not None and self.types[i] == "vector"
            else v
            for i, v in zip(self.hashed, row, strict=True)
        ]


def _shape(src: sqlite3.Connection, dst: Conn, table: Table) -> _Shape:
    name = table.name
    lite = [str(r[1]) for r in src.execute(f"PRAGMA table_info({name})")]
    pg: dict[str, str] = dict(
        dst.execute(
            "SELECT column_name, udt_name FROM information_schema.columns "
            "WHERE table_schema = current_schema() AND table_name = %s "
            "AND is_generated = 'NEVER' ORDER BY ordinal_position",
            (name,),
        ).fetchall()
    )
    extra = {table.rowid_as} if table.rowid_as else set()
    pg_only = {c for t, c in POSTGRES_ONLY_COLUMNS if t == name}
    if set(pg) - set(lite) != extra or set(lite) - set(pg) or not extra <= pg_only:
        raise StoreError(
            f"{name}: the columns differ between the source ({', '.join(sorted(lite))}) and "
            f"the target ({', '.join(sorted(pg))}); are both at schema v{LATEST_VERSION}?"
        )
    columns = (*sorted(extra), *lite)
    reads = tuple("rowid" if c == table.rowid_as else c for c in columns)
    return _Shape(
        table=table,
        columns=columns,
        reads=reads,
        types=tuple(pg[c] for c in columns),
        hashed=tuple(i for i, c in enumerate(columns) if c != table.rowid_as),
        keys=tuple(columns.index(k) for k in table.key),
    )


def _copy_table(
    src: sqlite3.Connection, dst: Conn, shape: _Shape, total: int, batch: int, shown: Listener
) -> int:
    """Copy the rows after the target's largest key, one committed batch at a time;
    returns how many rows were inserted."""
    name = shape.table.name
    label = f"copy {name}"
    after = _resume_after(src, dst, shape)
    done = 0 if after is None else _count_upto(src, shape, after)
    shown.start(label, total, done)
    if done == total:
        return 0
    every = range(len(shape.columns))
    keys = shape.sqlite_list(shape.keys)
    marks = ", ".join("?" * len(shape.keys))
    select = f"SELECT {shape.sqlite_list(every)} FROM {name}"
    first = f"{select} ORDER BY {keys} LIMIT ?"
    following = f"{select} WHERE ({keys}) > ({marks}) ORDER BY {keys} LIMIT ?"
    columns = ", ".join(shape.columns)
    # Rows arrive by binary COPY into a temporary table emptied at each commit, then move
    # with INSERT ... ON CONFLICT DO NOTHING: COPY's speed, and a batch that overlaps rows
    # already there (a re-run from the start) inserts only the missing ones.
    stage = f"episodic_stage_{name}"
    dst.execute(
        f"CREATE TEMPORARY TABLE IF NOT EXISTS {stage} ON COMMIT DELETE ROWS AS "
        f"SELECT {columns} FROM {name} WITH NO DATA"
    )
    # Pausing a trigger takes the table's owner; anyone else copies with it running.
    pause = shape.table.paused_trigger is not None and owns(dst, name)
    dumper = _vector_dumper(dst)
    inserted = 0
    while True:
        if after is None:
            rows = src.execute(first, (batch,)).fetchall()
        else:
            rows = src.execute(following, (*after, batch)).fetchall()
        if not rows:
            return inserted
        with dst.transaction(), dst.cursor() as cur:
            cur.adapters.register_dumper(None, dumper)
            if pause:
                # Inside the batch's transaction: a crash or a rollback leaves it enabled.
                cur.execute(f"ALTER TABLE {name} DISABLE TRIGGER {shape.table.paused_trigger}")
            with cur.copy(f"COPY {stage} ({columns}) FROM STDIN (FORMAT BINARY)") as copy:
                copy.set_types(shape.types)
                for row in rows:
                    copy.write_row(row)
            cur.execute(
                f"INSERT INTO {name} ({columns}) SELECT {columns} FROM {stage} "
                "ON CONFLICT DO NOTHING"
            )
            inserted += max(cur.rowcount, 0)
            if pause:
                cur.execute(f"ALTER TABLE {name} ENABLE TRIGGER {shape.table.paused_trigger}")
        after = tuple(rows[-1][i] for i in shape.keys)
        shown.advance(label, len(rows))


def _resume_after(src: sqlite3.Connection, dst: Conn, shape: _Shape) -> tuple[Any, ...] | None:
    """The key to continue after: the target's largest, when the target holds exactly
    the source's rows up to it. None to start from the first row (an empty target, or
    one missing rows below its largest key: the source gained rows since the last run,
    which ``ON CONFLICT DO NOTHING`` fills in without duplicating the others).
    ``StoreError`` when the target holds rows the source does not."""
    name = shape.table.name
    keys = ", ".join(shape.table.key)
    desc = ", ".join(f"{k} DESC" for k in shape.table.key)
    last = dst.execute(f"SELECT {keys} FROM {name} ORDER BY {desc} LIMIT 1").fetchone()
    if last is None:
        return None
    have = _pg_count(dst, name)
    below = _count_upto(src, shape, last)
    theirs = dst.execute(
        f"SELECT {shape.pg_list(shape.hashed)} FROM {name} "
        f"WHERE ({keys}) = ({', '.join(['%s'] * len(last))})",
        last,
    ).fetchone()
    mine = src.execute(
        f"SELECT {shape.sqlite_list(shape.hashed)} FROM {name} "
        f"WHERE ({shape.sqlite_list(shape.keys)}) = ({', '.join('?' * len(last))})",
        last,
    ).fetchone()
    if (
        have > below
        or theirs is None
        or mine is None
        or _render(mine) != _render(shape.pg_values(theirs))
    ):
        raise StoreError(
            f"the target's table {name} holds rows the source does not have (or has "
            "different values for the same keys): it is not a copy of this source in "
            "progress; migrate into an empty database"
        )
    return tuple(last) if have == below else None


def _pg_count(dst: Conn, table: str) -> int:
    row = dst.execute(f"SELECT count(*) FROM {table}").fetchone()
    return int(row[0]) if row else 0


def _count_upto(src: sqlite3.Connection, shape: _Shape, key: Sequence[Any]) -> int:
    marks = ", ".join("?" * len(key))
    sql = (
        f"SELECT count(*) FROM {shape.table.name} "
        f"WHERE ({shape.sqlite_list(shape.keys)}) <= ({marks})"
    )
    return int(src.execute(sql, tuple(key)).fetchone()[0])


class _VectorDumper(Dumper):
    """A SQLite vector BLOB (little-endian float32) in pgvector's binary form: the
    dimension and a reserved word, then the values big-endian. Written straight from
    the bytes, without a detour through Python floats."""

    format = Format.BINARY

    def dump(self, obj: Any) -> Buffer:
        values = np.frombuffer(obj, LE_FLOAT32)
        return struct.pack(">HH", values.size, 0) + values.astype(">f4").tobytes()


def _vector_dumper(conn: Conn) -> type[Dumper]:
    info = TypeInfo.fetch(conn, "vector")
    if info is None:
        raise StoreError("the target has no pgvector extension (CREATE EXTENSION vector)")
    # Registered by oid only (class None): used where COPY's set_types says "vector".
    return type("VectorBlobDumper", (_VectorDumper,), {"oid": info.oid})


def _type_vector_column(src: sqlite3.Connection, dst: Conn) -> None:
    """Give memory_vectors.vector its dimension, as the store does on its first vectors.

    Done before the rows arrive: on an empty table it is a catalog change, on a full one
    a rewrite of every row."""
    dims = [int(r[0]) for r in src.execute("SELECT DISTINCT dim FROM memory_vectors")]
    if not dims:
        return
    if len(dims) > 1:
        raise StoreError(
            f"the source holds vectors of several dimensions ({dims}); run `episodic "
            "reindex` on it first so that one model made them all"
        )
    want = f"vector({dims[0]})"
    row = dst.execute(
        "SELECT format_type(atttypid, atttypmod) FROM pg_attribute "
        "WHERE attrelid = 'memory_vectors'::regclass AND attname = 'vector'"
    ).fetchone()
    if row is None or row[0] != want:
        dst.execute(f"ALTER TABLE memory_vectors ALTER COLUMN vector TYPE {want}")


def _index_vectors(src: sqlite3.Connection, dst: Conn, vectors: int, shown: Listener) -> None:
    """The HNSW index the store creates with its first vectors, built once after the
    bulk load: much faster than growing it row by row."""
    if vectors == 0:
        return
    dim = int(src.execute("SELECT max(dim) FROM memory_vectors").fetchone()[0])
    row = dst.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
    # The index the store builds with its first vectors (halfvec from pgvector 0.7).
    index = index_to_build(parse_version(str(row[0]) if row else "0"), dim)
    if index is None:  # as the store does: pgvector cannot index these; exact search
        return
    label = "index memory_vectors (hnsw)"
    shown.start(label, None)
    # The build is several times faster while the graph fits in maintenance_work_mem
    # (pgvector's advice); raise it for this session to the graph's size, never lower, at
    # most _MAX_INDEX_MEMORY_KB. Each element takes its vector and ~730 bytes more
    # (links and bookkeeping at pgvector's default m = 16): 100k halfvec(384) vectors
    # outgrew vectors x (768 + 500) bytes after 84,561 of them, and the build took 1.7x
    # as long as with room for all. 1,000 bytes leaves a margin.
    element = dim * (2 if index.form == "halfvec" else 4)
    raise_build_memory(dst, min(vectors * (element + 1000) // 1024, _MAX_INDEX_MEMORY_KB))
    # Built by the server's parallel maintenance workers (max_parallel_maintenance_workers,
    # 2 by default) beside this session while the graph fits in that memory.
    dst.execute(index_sql(index))
    shown.advance(label, vectors)


def _move_identities(src: sqlite3.Connection, dst: Conn, table: Table) -> None:
    """Move each identity sequence past the copied keys (the rows were inserted with
    their own values, which does not advance it), and past SQLite's AUTOINCREMENT
    high-water mark: a key used once, even by a deleted row, is not used again."""
    for column in table.identities:
        row = dst.execute(f"SELECT max({column}) FROM {table.name}").fetchone()
        top = int(row[0]) if row and row[0] is not None else 0
        if table.rowid_as is None:
            used = src.execute(
                "SELECT seq FROM sqlite_sequence WHERE name = ?", (table.name,)
            ).fetchone()
            top = max(top, int(used[0]) if used else 0)
        if top > 0:
            dst.execute(
                "SELECT setval(pg_get_serial_sequence(%s, %s), %s)", (table.name, column, top)
            )


# -- verification ------------------------------------------------------------------------
def _render(values: Iterable[Any]) -> bytes:
    """One row, canonically: each value tagged with its kind, text and bytes with their
    length, floats by repr (exact), NULL as its own marker."""
    parts: list[bytes] = []
    for v in values:
        if v is None:
            parts.append(b"N")
        elif isinstance(v, str):
            data = v.encode("utf-8")
            parts.append(b"s%d:%b" % (len(data), data))
        elif isinstance(v, bool):  # never stored; refuse rather than read it as an int
            raise StoreError(f"cannot checksum the boolean {v!r}")
        elif isinstance(v, int):
            parts.append(b"i%d" % v)
        elif isinstance(v, float):
            parts.append(b"f" + repr(v).encode("ascii"))
        elif isinstance(v, (bytes, memoryview)):
            data = bytes(v)
            parts.append(b"b%d:%b" % (len(data), data))
        else:
            raise StoreError(f"cannot checksum a value of type {type(v).__name__}")
    return b"|".join(parts) + b"\n"


def _sqlite_checksum(
    src: sqlite3.Connection, shape: _Shape, total: int, batch: int, shown: Listener
) -> str:
    label = f"check {shape.table.name} (source)"
    shown.start(label, total)
    digest = hashlib.sha256()
    cursor = src.execute(
        f"SELECT {shape.sqlite_list(shape.hashed)} FROM {shape.table.name} "
        f"ORDER BY {shape.sqlite_list(shape.keys)}"
    )
    while rows := cursor.fetchmany(batch):
        for row in rows:
            digest.update(_render(row))
        shown.advance(label, len(rows))
    return digest.hexdigest()


def _pg_checksums(
    dst: Conn, shapes: Sequence[_Shape], batch: int, shown: Listener
) -> dict[str, tuple[int, str]]:
    """Per table, the row count and checksum of the target, from one snapshot."""
    found: dict[str, tuple[int, str]] = {}
    with dst.transaction():
        dst.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        for shape in shapes:
            name = shape.table.name
            label = f"check {name} (target)"
            total = _pg_count(dst, name)
            shown.start(label, total)
            digest = hashlib.sha256()
            rows = 0
            # A server-side cursor in binary: the table streams without being held whole.
            with dst.cursor(name=f"episodic_check_{name}", binary=True) as cur:
                cur.itersize = batch
                cur.execute(
                    f"SELECT {shape.pg_list(shape.hashed)} FROM {name} "
                    f"ORDER BY {', '.join(shape.table.key)}"
                )
                while chunk := cur.fetchmany(batch):
                    for row in chunk:
                        digest.update(_render(shape.pg_values(row)))
                    rows += len(chunk)
                    shown.advance(label, len(chunk))
            found[name] = (rows, digest.hexdigest())
    return found
