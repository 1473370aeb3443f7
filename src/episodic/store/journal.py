"""Keyword search of the journal itself: ``JournalStore``.

Recall searches memories, and only the events admission kept become memories. Seed 000
also searches its journal by keyword (``GET /api/v1/journal?q=``, over an FTS5 mirror of
every entry's summary and payload): output chunks, info-level decisions and everything
else admission refused are found there and nowhere else. The archive (compaction's sink,
payload cut to 400 characters) is searched too, and its rows say so.

Both backends rank by BM25 with the summary weighing ``BM25_CONTENT_WEIGHT`` and the
payload ``BM25_PAYLOAD_WEIGHT`` (``episodic.store.sparse``), over the query's terms as
``episodic.scoring.fts`` escapes them (English stopwords left out, words of 3+
characters matched as prefixes). SQLite: FTS5's bm25 over ``journal_fts`` (migration
6), whose statistics span the whole index. PostgreSQL: the same formula computed in SQL
over the generated ``tsv`` columns (``episodic.store.postgres.journal``), with the
statistics of the workspace's journal, as its memories' sparse leg does.

A journal is mostly high-volume chatter, where a word may be in a large share of the
rows: scoring every match would cost seconds per query at a million events. So, as the
memories' sparse leg does, the terms are sorted by how many rows they match
(``plan_terms``): every row in scope holding a rare term is ranked, wherever it is; of
the rows holding only common terms, the newest ``JOURNAL_WINDOW`` in scope (live, and
archived) are. Within those candidates the order is BM25's over every term.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from episodic.model import ScopeFilter

# Searches return at most this many events; more is a browse, not a search.
MAX_JOURNAL_HITS = 100
DEFAULT_JOURNAL_HITS = 20
# Of the rows holding only a query's common terms, this many newest in scope (of the live
# journal, and of the archive) are ranked; every row holding a rare term is. Each costs
# a bm25: ~1-2 us on SQLite, ~50 us on PostgreSQL (which reads and unnests its tsvector),
# where 2,000 a table made a one-word query ~250 ms at 100k events (bench_journal.py).
JOURNAL_WINDOW = 500
# What both backends read of a row found, in ``hit_from_row``'s order (then whether it is
# archived, and its score).
HIT_COLUMNS = ("id", "workspace_id", "ts", "type", "severity", "summary", "agent_id", "crew_id")


@dataclass(frozen=True, slots=True)
class JournalHit:
    """One journal row found by a search; ``score`` is its BM25 (higher is better)."""

    id: str
    workspace_id: str
    ts: datetime
    type: str
    severity: str
    summary: str
    agent_id: str | None
    crew_id: str | None
    archived: bool
    score: float

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "ts": self.ts.isoformat(),
            "type": self.type,
            "severity": self.severity,
            "agent": self.agent_id,
            "crew": self.crew_id,
            "summary": self.summary,
            "archived": self.archived,
            "score": round(self.score, 6),
        }


class JournalStore(Protocol):
    def search_journal(
        self, flt: ScopeFilter, text: str, *, since: datetime | None, limit: int
    ) -> list[JournalHit]:
        """Journal rows, live and archived, visible through ``flt`` whose summary or
        payload match ``text``, best first (ties: newest first). ``flt`` works as for
        memories (``episodic.store.sql.scope_where`` with ``journal=True``: crew_shared
        sees the agent's rows and every row of its crew); its ``types`` are event types.
        ``since`` keeps rows with ``ts >= since``. Raw user text goes in; escaping is the
        store's job, and text with no searchable word finds nothing."""
        ...


def hit_from_row(row: Sequence[Any]) -> JournalHit:
    """A row of ``HIT_COLUMNS``, then archived (bool or 0/1), then the score."""
    return JournalHit(
        id=row[0],
        workspace_id=row[1],
        ts=datetime.fromisoformat(row[2]),
        type=row[3],
        severity=row[4],
        summary=row[5],
        agent_id=row[6],
        crew_id=row[7],
        archived=bool(row[8]),
        score=float(row[9]),
    )
