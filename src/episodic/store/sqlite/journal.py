"""SqliteStore: keyword search of the journal (``JournalStore``), FTS5's bm25 over
``journal_fts`` (migration 6), which indexes live rows under their rowid and archived
ones under minus theirs.

Each table is searched in its own half of the index (``rowid > 0`` or ``< 0``, which
FTS5 reads as a range of its doclists) with FTS5 as the outer loop; the scope, type and
time filters run on the joined row, and bm25 only for rows that pass them, as in the
memories' sparse leg. Every match in scope is scored: ~1-2 us a row.
"""

from __future__ import annotations

from datetime import datetime

from episodic.model import ScopeFilter
from episodic.scoring.fts import fts_or, fts_terms
from episodic.store.journal import HIT_COLUMNS, JournalHit, hit_from_row
from episodic.store.rows import ts_text
from episodic.store.sparse import BM25_CONTENT_WEIGHT, BM25_PAYLOAD_WEIGHT
from episodic.store.sql import scope_where
from episodic.store.sqlite.connection import SqliteBase

_COLUMNS = ", ".join(f"e.{c}" for c in HIT_COLUMNS)


def _half(table: str, *, archived: int, rowid: str, half: str) -> str:
    """One half of the index joined to its table; ``rowid`` is the table row's rowid in
    terms of the index's. ``{where}`` is left for the filter."""
    return (
        f"SELECT {_COLUMNS}, {archived} AS archived, bm25(journal_fts, ?, ?) AS score"
        f" FROM journal_fts CROSS JOIN {table} AS e ON e.rowid = {rowid}"
        f" WHERE journal_fts MATCH ? AND journal_fts.rowid {half} AND {{where}}"
    )


_SEARCH_SQL = (
    "SELECT * FROM ("
    + _half("events", archived=0, rowid="journal_fts.rowid", half="> 0")
    + " UNION ALL "
    + _half("events_archive", archived=1, rowid="-journal_fts.rowid", half="< 0")
    + ") ORDER BY score, ts DESC, id LIMIT ?"
)


class JournalMixin(SqliteBase):
    def search_journal(
        self, flt: ScopeFilter, text: str, *, since: datetime | None, limit: int
    ) -> list[JournalHit]:
        where, params = scope_where(flt, alias="e", journal=True)
        if since is not None:
            where += " AND e.ts >= ?"
            params.append(ts_text(since))
        match = fts_or(fts_terms(text, drop_stopwords=True))
        if match is None or limit <= 0:
            return []
        half = [BM25_CONTENT_WEIGHT, BM25_PAYLOAD_WEIGHT, match, *params]
        with self._read():
            rows = self._execute(_SEARCH_SQL.format(where=where), (*half, *half, limit)).fetchall()
        # FTS5's bm25 is negative, lower better; the hit's score is higher-better.
        return [hit_from_row((*row[:9], -float(row[9]))) for row in rows]
