"""PostgresStore: keyword search of the journal (``JournalStore``) over the generated
``tsv`` columns of ``events`` and ``events_archive`` (migration 6: summary weight A,
payload B) and their GIN indexes.

The query is SQLite's: ``fts_tokens`` without English stopwords, at most
``MAX_FTS_TERMS``, a token of 3+ characters matched as a prefix, each a quoted tsquery
lexeme (``_term``, shared with the memories' sparse leg: nothing a user types reaches
the tsquery parser unquoted, and a token with diacritics is also searched without them).
Ranking is the memories' sparse leg's bm25 in SQL (``BM25_OF_CANDIDATE``) with the
statistics of the workspace's journal, live and archived together: N and the average
length from ``_workspace_size`` of each table, each term's document count exactly up to
just past the rare budget, and past it estimated from the workspace's newest
``JOURNAL_COUNT_SAMPLE`` rows (a common term's idf is small and moves little).

Candidates, as on SQLite (``episodic.store.sqlite.journal``): every row in scope holding a
rare term, and the newest ``journal_window`` rows in scope of each table holding only
common ones; each is scored with every term of the query.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from episodic.model import ScopeFilter
from episodic.scoring.fts import MAX_FTS_TERMS, MIN_PREFIX_CHARS, bm25_idf, fts_tokens, plan_terms
from episodic.scoring.stopwords import without_stopwords
from episodic.store.journal import HIT_COLUMNS, JOURNAL_WINDOW, JournalHit, hit_from_row
from episodic.store.postgres.connection import Conn, _has_nul
from episodic.store.postgres.sparse import (
    BM25_OF_CANDIDATE,
    LEXEMES_CTE,
    SPARSE_MIN_SCORE,
    SparseMixin,
    _SparseCache,
    _term,
    _variants,
)
from episodic.store.rows import ts_text
from episodic.store.sparse import SPARSE_RARE_BUDGET
from episodic.store.sql import scope_where

# A term found in more rows than the rare budget is counted in this many of the
# workspace's newest live rows, and the count scaled to the workspace.
JOURNAL_COUNT_SAMPLE = 2000
_TABLES = ("events", "events_archive")
_COLUMNS = ", ".join(f"e.{c}" for c in HIT_COLUMNS)

# Each term's rows in the workspace, counted up to a cap: per table, a LIMIT over the GIN
# index. Parameters: per table the workspace and the cap, then the term queries.
_COUNT_SQL = (
    "SELECT ARRAY(SELECT "
    + " + ".join(
        f"(SELECT count(*) FROM (SELECT 1 FROM {t} WHERE workspace_id = %s"
        " AND tsv @@ to_tsquery('english', q.query) LIMIT %s) c)"
        for t in _TABLES
    )
    + " FROM unnest(%s::text[]) WITH ORDINALITY AS q(query, i) ORDER BY q.i)"
)
# Each term's matches among the workspace's newest live rows, and how many rows that was.
_SAMPLE_SQL = (
    "WITH s AS MATERIALIZED (SELECT tsv FROM events WHERE workspace_id = %s"
    " ORDER BY ts DESC LIMIT %s)"
    " SELECT (SELECT count(*) FROM s), ARRAY(SELECT (SELECT count(*) FROM s"
    " WHERE s.tsv @@ to_tsquery('english', q.query))"
    " FROM unnest(%s::text[]) WITH ORDINALITY AS q(query, i) ORDER BY q.i)"
)
# The candidates (``{found}``: a UNION of (id, archived) branches), then bm25 over them.
_SEARCH_SQL = (
    "WITH "
    + LEXEMES_CTE
    + ", p AS MATERIALIZED (SELECT %s::float8[] AS idf, greatest(%s::float8, 1) AS avgdl),"
    " found(id, archived) AS MATERIALIZED ({found}),"
    f" cand AS MATERIALIZED (SELECT {_COLUMNS}, false AS archived, e.tsv FROM events e"
    " WHERE e.id IN (SELECT id FROM found WHERE NOT archived)"
    f" UNION ALL SELECT {_COLUMNS}, true, e.tsv FROM events_archive e"
    " WHERE e.id IN (SELECT id FROM found WHERE archived))"
    " SELECT "
    + ", ".join(f"c.{c}" for c in HIT_COLUMNS)
    + ", c.archived, coalesce(s.score, "
    + repr(SPARSE_MIN_SCORE)
    + ") AS score FROM cand c CROSS JOIN p CROSS JOIN LATERAL ("
    + BM25_OF_CANDIDATE
    + ") AS s ORDER BY score DESC, c.ts DESC, c.id LIMIT %s"
)


class JournalMixin(SparseMixin):
    # Attributes, not constants, so that tests can shrink them.
    journal_rare_budget: int = SPARSE_RARE_BUDGET
    journal_window: int = JOURNAL_WINDOW
    _journal_cache: _SparseCache | None = None

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
        lexemes = [
            (i, variant, p)
            for i, (t, p) in enumerate(zip(tokens, prefix, strict=True), start=1)
            for variant in _variants(t)
        ]
        with self._read() as conn:
            total, avgdl = self._journal_size(conn, flt.workspace_id)
            counts = self._journal_counts(conn, flt.workspace_id, queries, total)
            # Never dropping a term (max_share 1); the total only has to bound the counts.
            plan = plan_terms(
                counts,
                total_rows=max(total, *counts),
                budget=self.journal_rare_budget,
                max_share=1.0,
            )
            found, found_args = self._journal_candidates(
                [queries[i] for i in plan.rare], [queries[i] for i in plan.common], where, params
            )
            args: list[Any] = [
                [x[0] for x in lexemes],
                [x[1] for x in lexemes],
                [x[2] for x in lexemes],
                [bm25_idf(n, total) for n in counts],
                avgdl,
                *found_args,
                limit,
            ]
            rows = self._fetch(conn, _SEARCH_SQL.format(found=found), args)
        return [hit_from_row(row) for row in rows]

    def _journal_candidates(
        self, rare: Sequence[str], common: Sequence[str], where: str, params: Sequence[Any]
    ) -> tuple[str, list[Any]]:
        """The UNION of (id, archived) branches, and its parameters: every row in scope
        holding a rare term; the newest ``journal_window`` in scope holding a common one."""
        branches: list[str] = []
        args: list[Any] = []
        for table, archived in zip(_TABLES, ("false", "true"), strict=True):
            select = (
                f"SELECT e.id, {archived} FROM {table} e"
                f" WHERE e.tsv @@ to_tsquery('english', %s) AND {where}"
            )
            if rare:
                branches.append(f"({select})")
                args += [" | ".join(rare), *params]
            if common:
                branches.append(f"({select} ORDER BY e.ts DESC LIMIT %s)")
                args += [" | ".join(common), *params, self.journal_window]
        return " UNION ".join(branches), args

    def _journal_size(self, conn: Conn, workspace_id: str) -> tuple[int, float]:
        """(rows of the workspace's journal, live and archived; their average length),
        cached a few seconds as the memories' sizes are."""
        cache = self._journal_cache
        if cache is None:
            cache = self._journal_cache = _SparseCache()
        now = time.monotonic()
        known = cache.workspace(workspace_id, now)
        if known is None:
            sizes = [self._workspace_size(conn, workspace_id, table) for table in _TABLES]
            total = sum(n for n, _ in sizes)
            avgdl = sum(n * length for n, length in sizes) / total if total else 0.0
            known = (total, avgdl)
            cache.put_workspace(workspace_id, known, now)
        return known

    def _journal_counts(
        self, conn: Conn, workspace_id: str, queries: Sequence[str], total: int
    ) -> list[int]:
        """How many of the workspace's journal rows each term matches: exact up to just
        past the rare budget (what sorts the terms), past it estimated from a sample."""
        cap = self.journal_rare_budget + 1
        ((counts,),) = self._fetch(
            conn, _COUNT_SQL, [workspace_id, cap, workspace_id, cap, list(queries)]
        )
        found = [int(n) for n in counts]
        capped = [i for i, n in enumerate(found) if n >= cap]
        if capped:
            ((sampled, hits),) = self._fetch(
                conn,
                _SAMPLE_SQL,
                [workspace_id, JOURNAL_COUNT_SAMPLE, [queries[i] for i in capped]],
            )
            for i, k in zip(capped, hits, strict=True):
                found[i] = max(found[i], round(int(k) * total / max(int(sampled), 1)))
        return found
