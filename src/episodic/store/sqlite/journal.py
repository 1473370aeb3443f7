"""SqliteStore: keyword search of the journal (``JournalStore``), FTS5's bm25 over
``journal_fts`` (migration 6), which indexes live rows under their rowid and archived
ones under minus theirs.

A journal is mostly high-volume chatter, so a word can be in a large share of it, and
FTS5 computes bm25 for every row a MATCH reads (~1-2 us each). As the memories' sparse
leg does (``episodic.store.sqlite.sparse``), the query's terms are sorted by how many
rows each matches (``plan_terms``): every row holding a rare term is scored, with the
common terms it also holds (two MATCHes: the rare terms alone, and rare AND common; bm25
is a sum over terms, so the better of the two is the row's whole score); of the rows
holding only common terms, the newest ``journal_window`` in scope of each half of the
index are. So a rare word is always found wherever it is, and a query of common words
costs a bounded amount and ranks recent rows, which is what a journal is searched for.

Each half (``rowid > 0``: live, ``< 0``: archived, which FTS5 reads as a range of its
doclists) is read with FTS5 as the outer loop; the scope, type and time filters run on
the joined row, and bm25 only for rows that pass them.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from episodic.model import ScopeFilter
from episodic.scoring.fts import fts_terms, plan_terms
from episodic.store.journal import HIT_COLUMNS, JOURNAL_WINDOW, JournalHit, hit_from_row
from episodic.store.rows import ts_text
from episodic.store.sparse import BM25_CONTENT_WEIGHT, BM25_PAYLOAD_WEIGHT, SPARSE_RARE_BUDGET
from episodic.store.sql import scope_where
from episodic.store.sqlite.connection import SqliteBase

_COLUMNS = ", ".join(f"e.{c}" for c in HIT_COLUMNS)
_COUNT_SQL = "SELECT count(*) FROM (SELECT 1 FROM journal_fts WHERE journal_fts MATCH ? LIMIT ?)"


def _half(table: str, *, archived: int, rowid: str, half: str) -> str:
    """One half of the index joined to its table; ``rowid`` is the table row's rowid in
    terms of the index's. ``{where}`` is left for the filter."""
    return (
        f"SELECT {_COLUMNS}, {archived} AS archived, bm25(journal_fts, ?, ?) AS score"
        f" FROM journal_fts CROSS JOIN {table} AS e ON e.rowid = {rowid}"
        f" WHERE journal_fts MATCH ? AND journal_fts.rowid {half} AND {{where}}"
    )


_LIVE = _half("events", archived=0, rowid="journal_fts.rowid", half="> 0")
_ARCHIVED = _half("events_archive", archived=1, rowid="-journal_fts.rowid", half="< 0")
# Every match in scope scored; the best ``limit`` of both halves.
_ALL_SQL = f"SELECT * FROM ({_LIVE} UNION ALL {_ARCHIVED}) ORDER BY score, ts DESC, id LIMIT ?"
# The newest matches in scope of each half scored (FTS5 hands a doclist over in rowid
# order without sorting: live rows newest first by descending rowid, archived ones most
# recently archived first by ascending, since they are filed under minus their rowid).
_WINDOW_SQL = (
    f"SELECT * FROM ({_LIVE} ORDER BY journal_fts.rowid DESC LIMIT ?)"
    f" UNION ALL SELECT * FROM ({_ARCHIVED} ORDER BY journal_fts.rowid LIMIT ?)"
)


class JournalMixin(SqliteBase):
    # Attributes, not constants, so that tests can shrink them.
    journal_rare_budget: int = SPARSE_RARE_BUDGET
    journal_window: int = JOURNAL_WINDOW

    def search_journal(
        self, flt: ScopeFilter, text: str, *, since: datetime | None, limit: int
    ) -> list[JournalHit]:
        where, params = scope_where(flt, alias="e", journal=True)
        if since is not None:
            where += " AND e.ts >= ?"
            params.append(ts_text(since))
        terms = fts_terms(text, drop_stopwords=True)
        if not terms or limit <= 0:
            return []
        best: dict[str, tuple[Any, ...]] = {}
        with self._read():
            counts = [
                int(self._execute(_COUNT_SQL, (t, self.journal_rare_budget + 1)).fetchone()[0])
                for t in terms
            ]
            # Never dropping a term (max_share 1); the total only has to bound the counts.
            plan = plan_terms(
                counts, total_rows=sum(counts), budget=self.journal_rare_budget, max_share=1.0
            )
            rare = " OR ".join(terms[i] for i in plan.rare)
            common = " OR ".join(terms[i] for i in plan.common)
            searches: list[tuple[str, list[Any]]] = []
            for match in [rare, f"({rare}) AND ({common})" if rare and common else ""]:
                if match:
                    half = [BM25_CONTENT_WEIGHT, BM25_PAYLOAD_WEIGHT, match, *params]
                    searches.append((_ALL_SQL, [*half, *half, limit]))
            if common:
                half = [BM25_CONTENT_WEIGHT, BM25_PAYLOAD_WEIGHT, common, *params]
                window = self.journal_window
                searches.append((_WINDOW_SQL, [*half, window, *half, window]))
            for sql, args in searches:
                for row in self._execute(sql.format(where=where), args):
                    # FTS5's bm25 is negative, lower better; a hit's score is higher-better.
                    scored = (*row[:9], -float(row[9]))
                    known = best.get(scored[0])
                    if known is None or scored[9] > known[9]:
                        best[scored[0]] = scored
        hits = [hit_from_row(row) for row in best.values()]
        hits.sort(key=lambda h: (-h.score, -h.ts.timestamp(), h.id))
        return hits[:limit]
