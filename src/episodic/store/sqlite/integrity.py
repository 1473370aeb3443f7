"""SqliteStore: what ``episodic doctor`` reads: ``stats``, ``meta`` and the deep check
(``episodic doctor --deep``; the checks both backends share are
``episodic.store.integrity``). SQLite's own checks:

- ``sqlite.integrity``: ``PRAGMA integrity_check`` (every page, every index entry).
- ``fts.integrity``: FTS5's own ``integrity-check`` command with rank 1, which also
  compares the index with its external content (``memories``). It is an INSERT, so it
  needs a read-write open and takes the write lock while it runs.
- ``fts.mirror``: which rows disagree, by name. The FTS5 index holds one document per
  memory (``memories_fts_docsize``); a row missing there is missing from keyword recall,
  an extra one points at nothing. For the text, the memories are tokenized again into a
  temporary contentless FTS5 table with the same tokenizer, and both indexes are read
  term by term (``fts5vocab``, one row per token instance): a memory whose tokens differ
  is indexed under text it no longer has.
- ``journal.mirror``: the journal's keyword index (``journal_fts``, migration 6) holds one
  document per live row (under its rowid) and per archived row (under minus its rowid):
  rows missing there cannot be found by ``episodic journal``, extra ones point at
  nothing. Counted by rowid only, which is cheap beside re-tokenizing a whole journal,
  and is what a lost trigger or renumbered rowids would show.
- ``vectors.shape``: byte length against ``dim``, one model per store, finite and unit
  length values.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from episodic.scoring.passages import PASSAGE_CHARS
from episodic.store.base import StoreStats
from episodic.store.dense import LE_FLOAT32
from episodic.store.integrity import (
    ERROR,
    FIX_REINDEX,
    MODELS_SQL,
    OK,
    UNIT_TOLERANCE,
    WARN,
    IntegrityCheck,
    model_problems,
    portable_checks,
    text_passages_check,
    verdict,
)
from episodic.store.migrations import FTS_TOKENIZER, TEXT_PASSAGE_SHIFT, current_version
from episodic.store.rows import parse_ts
from episodic.store.sqlite.connection import SqliteBase, map_errors

if TYPE_CHECKING:
    import numpy as np
else:
    from episodic.lazy import np

Execute = Callable[[str], sqlite3.Cursor]

# The columns memories_fts indexes (migration 3), in its order.
FTS_COLUMNS = ("content", "keys", "payload")
_SHADOW = "episodic_fts_check"
_VECTOR_PAGE = 2_000

FIX_FTS = (
    "rebuild the keyword index from the memories: sqlite3 DB "
    "\"INSERT INTO memories_fts (memories_fts) VALUES ('rebuild')\""
)
FIX_JOURNAL = (
    "rebuild the journal's keyword index from the journal and its archive: sqlite3 DB "
    "\"INSERT INTO journal_fts (journal_fts) VALUES ('rebuild')\""
)
FIX_FILE = (
    "the file is damaged: restore a backup, or salvage it with `sqlite3 DB .recover | "
    "sqlite3 NEW.db` and point --db at NEW.db; then run `episodic doctor --deep` again"
)


def file_check(execute: Execute) -> IntegrityCheck:
    messages = [str(row[0]) for row in execute("PRAGMA integrity_check")]
    if messages == ["ok"]:
        return IntegrityCheck("sqlite.integrity", OK, 0, "PRAGMA integrity_check: ok")
    shown = "; ".join(messages[:3]) + (" ..." if len(messages) > 3 else "")
    return IntegrityCheck(
        "sqlite.integrity", ERROR, len(messages), f"PRAGMA integrity_check: {shown}", FIX_FILE
    )


def fts_engine_check(execute: Execute, *, writable: bool) -> IntegrityCheck:
    if not writable:
        return IntegrityCheck(
            "fts.integrity",
            WARN,
            0,
            "FTS5's integrity-check was not run: the store is open read-only",
            "run `episodic doctor --deep` with a read-write --db",
        )
    try:
        execute("INSERT INTO memories_fts (memories_fts, rank) VALUES ('integrity-check', 1)")
    except sqlite3.DatabaseError as exc:
        return IntegrityCheck(
            "fts.integrity",
            ERROR,
            1,
            f"FTS5 integrity-check failed ({exc}): the keyword index does not match the memories",
            FIX_FTS,
        )
    return IntegrityCheck("fts.integrity", OK, 0, "FTS5 integrity-check: ok")


def mirror_check(execute: Execute) -> IntegrityCheck:
    def count(sql: str) -> int:
        return int(execute(sql).fetchone()[0])

    missing = count(
        "SELECT count(*) FROM memories m "
        "WHERE NOT EXISTS (SELECT 1 FROM memories_fts_docsize d WHERE d.id = m.seq)"
    )
    extra = count(
        "SELECT count(*) FROM memories_fts_docsize d "
        "WHERE NOT EXISTS (SELECT 1 FROM memories m WHERE m.seq = d.id)"
    )
    columns = ", ".join(FTS_COLUMNS)
    try:
        execute(
            f"CREATE VIRTUAL TABLE temp.{_SHADOW} USING fts5 ({columns}, content = '', "
            f"tokenize = '{FTS_TOKENIZER}')"
        )
        execute(
            f"INSERT INTO temp.{_SHADOW} (rowid, {columns}) SELECT seq, {columns} FROM memories"
        )
        vocab = "CREATE VIRTUAL TABLE temp.{} USING fts5vocab({}, instance)"
        execute(vocab.format(f"{_SHADOW}_i", f"temp, {_SHADOW}"))
        execute(vocab.format(f"{_SHADOW}_m", "main, memories_fts"))
        token = "term, doc, col, offset"
        differs = count(
            "SELECT count(*) FROM ("
            f"SELECT doc FROM (SELECT {token} FROM temp.{_SHADOW}_m "
            f"EXCEPT SELECT {token} FROM temp.{_SHADOW}_i) "
            f"UNION SELECT doc FROM (SELECT {token} FROM temp.{_SHADOW}_i "
            f"EXCEPT SELECT {token} FROM temp.{_SHADOW}_m)) AS changed "
            "WHERE doc IN (SELECT seq FROM memories) "
            "AND doc IN (SELECT id FROM memories_fts_docsize)"
        )
    finally:
        for table in (f"{_SHADOW}_m", f"{_SHADOW}_i", _SHADOW):
            execute(f"DROP TABLE IF EXISTS temp.{table}")
    return verdict(
        "fts.mirror",
        [
            (missing, "memories missing from the keyword index"),
            (extra, "keyword index rows with no memory"),
            (differs, "memories indexed under text they no longer have"),
        ],
        fix=FIX_FTS,
        clean="the keyword index holds every memory, with its current text",
    )


def journal_mirror_check(execute: Execute) -> IntegrityCheck:
    def count(sql: str) -> int:
        return int(execute(sql).fetchone()[0])

    indexed = "SELECT 1 FROM journal_fts_docsize d WHERE d.id = {}"
    missing = count(
        f"SELECT count(*) FROM events e WHERE NOT EXISTS ({indexed.format('e.rowid')})"
    ) + count(
        f"SELECT count(*) FROM events_archive a WHERE NOT EXISTS ({indexed.format('-a.rowid')})"
    )
    extra = count(
        "SELECT count(*) FROM journal_fts_docsize d WHERE CASE WHEN d.id > 0 "
        "THEN NOT EXISTS (SELECT 1 FROM events e WHERE e.rowid = d.id) "
        "ELSE NOT EXISTS (SELECT 1 FROM events_archive a WHERE a.rowid = -d.id) END"
    )
    return verdict(
        "journal.mirror",
        [
            (missing, "journal rows missing from the journal's keyword index"),
            (extra, "journal keyword index rows with no journal row"),
        ],
        fix=FIX_JOURNAL,
        clean="the journal's keyword index holds every live and archived journal row",
    )


def vector_shape_check(execute: Execute) -> IntegrityCheck:
    models: Sequence[tuple[str, int, int]] = [
        (str(m), int(d), int(n)) for m, d, n in execute(MODELS_SQL)
    ]
    wrong_size = bad_values = not_unit = 0
    cursor = execute("SELECT vector, dim FROM memory_vectors")
    while rows := cursor.fetchmany(_VECTOR_PAGE):
        size, values, unit = blob_problems([(bytes(b), int(d)) for b, d in rows])
        wrong_size, bad_values, not_unit = wrong_size + size, bad_values + values, not_unit + unit
    return verdict(
        "vectors.shape",
        [
            *model_problems(models),
            (wrong_size, "vectors whose byte length is not 4 x their dim"),
            (bad_values, "vectors holding NaN or infinity"),
            (not_unit, "vectors that are not unit length"),
        ],
        fix=FIX_REINDEX,
        clean="one model, every vector of its dimension, finite and unit length",
    )


def blob_problems(rows: Sequence[tuple[bytes, int]]) -> tuple[int, int, int]:
    """SQLite's vector blobs (little-endian float32) with their stated dim: how many have
    the wrong byte length, how many hold NaN/inf, how many are not unit length."""
    wrong_size = bad_values = not_unit = 0
    for blob, dim in rows:
        if len(blob) != 4 * int(dim) or dim <= 0:
            wrong_size += 1
            continue
        arr = np.frombuffer(blob, LE_FLOAT32)
        if not bool(np.isfinite(arr).all()):
            bad_values += 1
        elif abs(float(np.linalg.norm(arr.astype(np.float64))) - 1.0) > UNIT_TOLERANCE:
            not_unit += 1
    return wrong_size, bad_values, not_unit


def read_checks(execute: Execute) -> list[IntegrityCheck]:
    """Every check that only reads (run inside one read transaction)."""

    def count(sql: str) -> int:
        row: Any = execute(sql).fetchone()
        return int(row[0])

    return [
        file_check(execute),
        mirror_check(execute),
        journal_mirror_check(execute),
        vector_shape_check(execute),
        *portable_checks(count),
        text_passages_check(count(_TEXT_PASSAGES_MISSING), count(_TEXT_PASSAGES_STRAY)),
    ]


_SHIFT = TEXT_PASSAGE_SHIFT
_TEXT_PASSAGES_MISSING = (
    f"SELECT count(*) FROM memories m WHERE length(m.content) > {PASSAGE_CHARS} "
    "AND NOT EXISTS (SELECT 1 FROM passages_fts p "
    f"WHERE p.rowid >= m.seq << {_SHIFT} AND p.rowid < (m.seq + 1) << {_SHIFT})"
)
_TEXT_PASSAGES_STRAY = (
    "SELECT count(*) FROM passages_fts p WHERE NOT EXISTS (SELECT 1 FROM memories m "
    f"WHERE m.seq = p.rowid >> {_SHIFT} AND length(m.content) > {PASSAGE_CHARS} "
    "AND p.stop_char <= length(m.content))"
)


class IntegrityMixin(SqliteBase):
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
            oldest = self._execute(
                "SELECT created_at FROM memories WHERE has_vector = 0 AND status = 'active' "
                f"{both} ORDER BY seq LIMIT 1",
                params,
            ).fetchone()
        return StoreStats(
            events=int(events),
            memories=int(memories),
            active_memories=int(active),
            vectors=int(vectors),
            pending_vectors=int(pending),
            vector_model=None if model is None else model[0],
            vector_dim=None if model is None else model[1],
            schema_version=version,
            oldest_pending_at=None if oldest is None else parse_ts(oldest[0]),
        )

    def deep_check(self) -> list[IntegrityCheck]:
        def execute(sql: str) -> sqlite3.Cursor:
            return self._execute(sql)

        with self._read():
            # The keyword mirror's check builds temp tables, which a pooled reader, being
            # query-only, may not; its earlier setting comes back after.
            query_only = int(self._execute("PRAGMA query_only").fetchone()[0])
            self._execute("PRAGMA query_only = OFF")
            try:
                checks = read_checks(execute)
            finally:
                self._execute(f"PRAGMA query_only = {query_only}")
        if self.read_only:
            engine = fts_engine_check(execute, writable=False)
        else:
            # FTS5's check is an INSERT: a short write transaction of its own.
            with self._write():
                engine = fts_engine_check(execute, writable=True)
        return [checks[0], engine, *checks[1:]]

    def meta(self) -> dict[str, Any]:
        with self._lock, map_errors():
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
