"""PostgresStore: keyword search of the journal (``JournalStore``) over the generated
``tsv`` columns of ``events`` and ``events_archive`` (migration 6: summary weight A,
payload B) and their GIN indexes.

The query is SQLite's: ``fts_tokens`` without English stopwords, at most
``MAX_FTS_TERMS``, a token of 3+ characters matched as a prefix, each a quoted tsquery
lexeme (``_term``, shared with the memories' sparse leg: nothing a user types reaches
the tsquery parser unquoted, and a token with diacritics is also searched without them).
Ranking is the memories' sparse leg's bm25 in SQL (``BM25_OF_CANDIDATE``), with the
statistics of the workspace's journal, live and archived together: N rows, each term's
document count, and the average length from a sample of ``LENGTH_SAMPLE`` rows of each
table. Every match in scope is scored (FTS5 on SQLite scores every match too), and the
counts read every match of each term in the workspace: the cost grows with the matches,
which a keyword search of the journal can afford where the recall hot path cannot.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from episodic.model import ScopeFilter
from episodic.scoring.fts import MAX_FTS_TERMS, MIN_PREFIX_CHARS, bm25_idf, fts_tokens
from episodic.scoring.stopwords import without_stopwords
from episodic.store.journal import HIT_COLUMNS, JournalHit, hit_from_row
from episodic.store.postgres.connection import Conn, PgBase, _has_nul
from episodic.store.postgres.sparse import (
    BM25_OF_CANDIDATE,
    LEXEMES_CTE,
    SPARSE_MIN_SCORE,
    _term,
    _variants,
)
from episodic.store.rows import ts_text
from episodic.store.sql import scope_where

# The average length (bm25's avglen) is taken over this many rows of each table.
LENGTH_SAMPLE = 1000
_TABLES = ("events", "events_archive")

# N, the average length, and each term's document count in the workspace's journal.
# Parameters: the workspace twice, then the workspace and the sample size twice, then per
# table the workspace, then the array of term queries.
_STATS_SQL = (
    "SELECT (SELECT count(*) FROM events WHERE workspace_id = %s)"
    " + (SELECT count(*) FROM events_archive WHERE workspace_id = %s),"
    " (SELECT avg(length(tsv)) FROM ("
    "  (SELECT tsv FROM events WHERE workspace_id = %s LIMIT %s) UNION ALL"
    "  (SELECT tsv FROM events_archive WHERE workspace_id = %s LIMIT %s)) s),"
    " ARRAY(SELECT (SELECT count(*) FROM events"
    "   WHERE workspace_id = %s AND tsv @@ to_tsquery('english', q.query))"
    "  + (SELECT count(*) FROM events_archive"
    "   WHERE workspace_id = %s AND tsv @@ to_tsquery('english', q.query))"
    "  FROM unnest(%s::text[]) WITH ORDINALITY AS q(query, i) ORDER BY q.i)"
)

_COLUMNS = ", ".join(f"e.{c}" for c in HIT_COLUMNS)
_HALF = (
    "SELECT " + _COLUMNS + ", {archived} AS archived, e.tsv FROM {table} e"
    " WHERE e.tsv @@ to_tsquery('english', %s) AND {where}"
)
_SEARCH_SQL = (
    "WITH "
    + LEXEMES_CTE
    + ", p AS MATERIALIZED (SELECT %s::float8[] AS idf, greatest(%s::float8, 1) AS avgdl),"
    " cand AS MATERIALIZED ("
    + _HALF.format(archived="false", table="events", where="{where}")
    + " UNION ALL "
    + _HALF.format(archived="true", table="events_archive", where="{where}")
    + ") SELECT "
    + ", ".join(f"c.{c}" for c in HIT_COLUMNS)
    + ", c.archived, coalesce(s.score, "
    + repr(SPARSE_MIN_SCORE)
    + ") AS score FROM cand c CROSS JOIN p CROSS JOIN LATERAL ("
    + BM25_OF_CANDIDATE
    + ") AS s ORDER BY score DESC, c.ts DESC, c.id LIMIT %s"
)


class JournalMixin(PgBase):
    def search_journal(
        self, flt: ScopeFilter, text: str, *, since: datetime | None, limit: int
    ) -> list[JournalHit]:
        where, params = scope_where(flt, alias="e", mark="%s", journal=True)
        if since is not None:
            where += " AND e.ts >= %s"
            params.append(ts_text(since))
        if _has_nul(*params):  # PostgreSQL text holds no NUL: nothing matches
            return []
        tokens = without_stopwords(fts_tokens(text))[:MAX_FTS_TERMS]
        if not tokens or limit <= 0:
            return []
        prefix = [len(t) >= MIN_PREFIX_CHARS for t in tokens]
        queries = [_term(t, prefix=p) for t, p in zip(tokens, prefix, strict=True)]
        match = " | ".join(queries)
        lexemes = [
            (i, variant, p)
            for i, (t, p) in enumerate(zip(tokens, prefix, strict=True), start=1)
            for variant in _variants(t)
        ]
        with self._read() as conn:
            total, avgdl, counts = self._journal_stats(conn, flt.workspace_id, queries)
            args: list[Any] = [
                [x[0] for x in lexemes],
                [x[1] for x in lexemes],
                [x[2] for x in lexemes],
                [bm25_idf(n, total) for n in counts],
                avgdl,
            ]
            for _ in _TABLES:
                args += [match, *params]
            rows = self._fetch(conn, _SEARCH_SQL.format(where=where), [*args, limit])
        return [hit_from_row(row) for row in rows]

    def _journal_stats(
        self, conn: Conn, workspace_id: str, queries: Sequence[str]
    ) -> tuple[int, float, list[int]]:
        """(rows in the workspace's journal, their average length in lexemes, how many
        of them each query term matches)."""
        sample = [workspace_id, LENGTH_SAMPLE]
        args = [workspace_id, workspace_id, *sample, *sample, workspace_id, workspace_id]
        ((total, avgdl, counts),) = self._fetch(conn, _STATS_SQL, [*args, list(queries)])
        return int(total), float(avgdl or 0.0), [int(n) for n in counts]
