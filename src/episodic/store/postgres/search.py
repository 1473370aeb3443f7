"""PostgresStore: the retrieval legs (dense, sparse, recent, neighbours), relations and
the recall log's cosines.

Dense: pgvector's cosine distance ``<=>`` over the HNSW index ``memory_vectors_hnsw``
(created by the writes mixin with the first vectors; until then every search is an exact
scan). A candidate's score is the cosine, as on SQLite: the inner product of the
normalised query with the stored unit vector. pgvector 0.6 has no iterative index scans:
an HNSW scan yields at most ``hnsw.ef_search`` rows, nearest first, *before* the WHERE
clause, so a narrow scope (one agent of many, a small workspace among large ones) would
come back short. Each search therefore takes the index's ``ef_search`` nearest rows of
the whole table, keeps the ones the scope sees, and, in the same statement, falls back to
an exact scan of the scope's rows unless those fill the answer (or, with a score floor,
the index's farthest row is already below it; see ``_dense_sql``). ``hnsw.ef_search`` is
set per transaction to twice the rows wanted (40 to 1000).

Sparse: the generated ``memories.tsv`` (english config; content weight A, payload B,
derived keys D) and its GIN index. The query is SQLite's: ``fts_tokens`` without English
stopwords (``without_stopwords``), at most ``MAX_FTS_TERMS``, OR-joined; like SQLite's
budgeted mode, a token of 3+ characters is searched as a whole (stemmed) word when the
workspace holds that word and as a prefix (``:*``) only when it does not (a word typed in
part). Each token becomes a quoted tsquery lexeme, so nothing a user types is read as
tsquery syntax. Ranking is FTS5's bm25 computed in SQL (``_SPARSE_SCORE_SQL``), with
SqliteStore's term plan (``plan_terms``, ``SPARSE_RARE_BUDGET``, ``SPARSE_MAX_SHARE``):
document counts per term in the workspace (capped at half of it, cached a few seconds)
give each term its idf and sort terms into rare (all matches scored), common (the newest
``sparse_term_window`` matches of each and of all together) and dropped (only to fill a
short answer); a one-term query ranks its newest window, as on SQLite.

How ranking still differs from SQLite's BM25:

- idf, N and the average length are per workspace (FTS5's are over the whole table), the
  average length from a sample of ``SPARSE_LENGTH_SAMPLE`` memories; a document's length
  is its number of distinct lexemes without stopwords (FTS5: every token);
- in a large workspace N and the counts of common terms are estimates (see
  ``_sparse_stats``): past 50k memories N is the planner's statistic, and a term
  matching more than 2,000 of more than 4,000 memories is counted in the newest 4,000;
- labels weigh occurrences (A 1.0, B 0.5, D 0.1) where FTS5 weighs columns, which for a
  term's weighted frequency is the same;
- stemming: PostgreSQL's english Snowball stemmer where FTS5 uses Porter (mostly the same
  stems; Snowball's "english" is Porter2), and PostgreSQL's english stopword list is
  applied to the query on top of NLTK's (the two lists nearly coincide);
- tokenising: the stored text keeps its diacritics (FTS5's unicode61 removes them), so
  "zurich" does not find "Zürich"; a query token is searched with and without its
  diacritics, so "café" does find "cafe". PostgreSQL's parser keeps URLs, host names,
  e-mail addresses, file paths and version numbers as single lexemes where FTS5 splits
  them into words;
- candidates: a common term's matches beyond its newest ``sparse_term_window`` in scope
  are not ranked unless they also hold a rarer term (SQLite: budgeted windows over the
  common terms' conjunction and disjunction).

Scores keep SQLite's direction: higher is better, every match scores above 0.
"""

from __future__ import annotations

import json
import math
import time
import unicodedata
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import numpy as np
import psycopg

from episodic.errors import ModelMismatch, NotFound, StoreError
from episodic.model import Candidate, ScopeFilter, utcnow
from episodic.scoring.fts import (
    BM25_K1,
    MAX_FTS_TERMS,
    MIN_PREFIX_CHARS,
    TermPlan,
    bm25_idf,
    fts_tokens,
    plan_terms,
)
from episodic.scoring.stopwords import without_stopwords
from episodic.store.base import Relation, Vector
from episodic.store.dense import unit_vector
from episodic.store.postgres.connection import Conn, PgBase, _has_nul
from episodic.store.sql import scope_where
from episodic.store.sqlite import (
    BM25_CONTENT_WEIGHT,
    BM25_KEYS_WEIGHT,
    BM25_PAYLOAD_WEIGHT,
    DOC_COUNT_CACHE_TERMS,
    DOC_COUNT_TTL_S,
    SPARSE_MAX_SHARE,
    SPARSE_RARE_BUDGET,
    _DocCounts,
    _parse_ts,
    _unique,
    ts_text,
)

# hnsw.ef_search bounds: pgvector's default and its maximum.
EF_SEARCH_MIN = 40
EF_SEARCH_MAX = 1000
# An HNSW graph's recall at a given ef_search falls as the table grows (on bench_postgres's
# clustered vectors, recall@10 at ef 40: 1.00 at 10k, 0.96 at 100k, 0.66 at 1M). The floor
# grows with the square root of the vectors stored past EF_SCALE_ROWS (40 at 100k, ~126
# at 1M), up to EF_FLOOR_MAX; the table's size is the catalog's estimate, read again
# after EF_FLOOR_TTL_S.
EF_SCALE_ROWS = 100_000
EF_FLOOR_MAX = 200
EF_FLOOR_TTL_S = 60.0
# The index is asked for this many times the rows wanted (plus the ids excluded), so a
# scope that sees most of the table still fills its answer from the index alone.
EF_SEARCH_FACTOR = 2

# Sparse candidates: each term contributes at most this many of its newest matches in
# scope (all of them when it has fewer: a rare term's old matches are the point of a
# keyword search)...
SPARSE_TERM_WINDOW = 1000
# ...and a long query shares this many among its terms, since each candidate costs a
# ts_rank over every term (~2-8 us a row, against ~1-2 for FTS5's bm25).
SPARSE_SCORED_ROWS = 3000
# FTS5's bm25 b (fts5_aux.c; k1 is BM25_K1).
BM25_B = 0.75
# The average document length (bm25's avglen) is taken over this many of the workspace's
# memories, any of them: reading every row's tsvector would cost a scan per few seconds.
SPARSE_LENGTH_SAMPLE = 1000
# Document counts in a workspace of more than SPARSE_COUNT_SAMPLE memories: exact up to
# SPARSE_EXACT_COUNT matches, beyond that estimated from the workspace's newest
# SPARSE_COUNT_SAMPLE memories. Counting is a heap visit per match (the workspace filter
# is not in the GIN index): a term in 3% of a million memories cost ~300 ms to count; the
# plan needs exact counts only up to the rare budget, and idf only roughly past it.
SPARSE_EXACT_COUNT = 2000
SPARSE_COUNT_SAMPLE = 4000
# A workspace's memories are counted exactly up to this many (bm25's N; see
# ``_workspace_size``).
SPARSE_EXACT_TOTAL = 50_000
# A term the sample holds this often (2,500+ matches in a million) is not counted at all:
# fewer than 1 in 100 terms of the rare budget's size (expected 4 hits) reach it.
SPARSE_SAMPLE_HITS = 10
# The score of a candidate none of whose lexemes bm25 could attribute to a query term
# (the tsquery matched it through a stemming corner case): still a match, so above 0.
SPARSE_MIN_SCORE = 1e-9


def _lexeme(token: str, *, prefix: bool) -> str:
    """One token as tsquery text: a quoted lexeme (quotes and backslashes escaped), with
    ``:*`` for a prefix match. ``to_tsquery('english', ...)`` stems it; no operator a
    user typed can reach the tsquery parser unquoted."""
    quoted = "'" + token.replace("\\", "\\\\").replace("'", "''") + "'"
    return quoted + ":*" if prefix else quoted


def _fold(token: str) -> str:
    """``token`` without the diacritics of the Combining Diacritical Marks block (é -> e,
    ü -> u), recomposed; other marks (Devanagari vowel signs, viramas) stay."""
    decomposed = unicodedata.normalize("NFD", token)
    kept = "".join(ch for ch in decomposed if not "\u0300" <= ch <= "\u036f")
    return unicodedata.normalize("NFC", kept)


def _term(token: str, *, prefix: bool) -> str:
    """One query token as tsquery text. A token with diacritics is also searched
    without them ("café" finds "cafe"), so the query works whether or not the stored
    text was folded (the english configuration does not fold diacritics; FTS5's
    unicode61 tokenizer does)."""
    variants = list(dict.fromkeys([token, _fold(token)]))
    lexemes = [_lexeme(v, prefix=prefix) for v in variants]
    return lexemes[0] if len(lexemes) == 1 else "(" + " | ".join(lexemes) + ")"


def _count_args(workspace_id: str, query: str) -> list[Any]:
    """The parameters of one document count (see ``_sparse_stats``), in the SQL's order:
    the sample's hit threshold, the workspace and tsquery of the exact count, the
    tsquery for the sample."""
    return [SPARSE_SAMPLE_HITS, workspace_id, query, query]


def _is_dimension_error(exc: StoreError) -> bool:
    cause = exc.__cause__
    return isinstance(cause, psycopg.errors.DataException) and "dimensions" in str(cause)


class SearchMixin(PgBase):
    # Attributes, not constants, so tests and benchmarks can shrink them.
    sparse_term_window: int = SPARSE_TERM_WINDOW
    sparse_scored_rows: int = SPARSE_SCORED_ROWS
    sparse_rare_budget: int = SPARSE_RARE_BUDGET
    sparse_exact_count: int = SPARSE_EXACT_COUNT
    sparse_count_sample: int = SPARSE_COUNT_SAMPLE
    # None: scaled with the table (``ef_floor``); a number pins it (benchmarks sweep it).
    ef_search_floor: int | None = None
    _sparse_counts: _SparseCache | None = None
    _ef_floor_cache: tuple[int, float] | None = None

    def _fetch(self, conn: Conn, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        """``_exec(...).fetchall()`` that never lets psycopg prepare the statement. A
        prepared statement may switch to a generic plan, made without the parameters'
        values; the search plans hinge on them (a tsquery term's frequency decides
        between walking the newest rows and the GIN index; a scope's size between
        index and exact scans), so each search is planned for its own values."""
        if self._tracer is not None:
            self._tracer(sql, params)
        return conn.execute(sql, params, prepare=False).fetchall()

    # -- dense ------------------------------------------------------------------------
    def search_dense(self, flt: ScopeFilter, query: Vector, limit: int) -> list[Candidate]:
        where, params = scope_where(flt, alias="m", mark="%s")
        if _has_nul(*params):  # PostgreSQL text holds no NUL: nothing matches
            return []
        if limit <= 0:
            return []
        q = np.asarray(query, dtype=np.float32).reshape(-1)
        unit = unit_vector(q)
        try:
            with self._read() as conn:
                ef = _ef_search(limit, floor=self.ef_floor(conn))
                sql, args = _dense_sql(where, params, flt.workspace_id, unit, limit, ef)
                self._set_ef_search(conn, ef)
                rows = self._fetch(conn, sql, args)
        except StoreError as exc:
            if _is_dimension_error(exc):
                raise self._mismatch("the query's embedder", int(q.size)) from exc
            raise
        return [
            Candidate(memory_id=memory_id, score=float(score), rank=rank)
            for rank, (memory_id, score, _seq) in enumerate(rows, start=1)
        ]

    def search_dense_many(
        self,
        flt: ScopeFilter,
        queries: Vector,
        limit: int,
        min_score: float | None = None,
        exclude: Sequence[Sequence[str]] | None = None,
    ) -> list[list[Candidate]]:
        where, params = scope_where(flt, alias="m", mark="%s")
        if _has_nul(*params):  # PostgreSQL text holds no NUL: nothing matches
            return [[] for _ in range(len(queries))]
        q = np.asarray(queries, dtype=np.float32)
        if q.ndim != 2:
            raise ModelMismatch("?", 0, "the queries", int(q.size))
        b = int(q.shape[0])
        if limit <= 0 or b == 0:
            return [[] for _ in range(b)]
        norms = np.linalg.norm(q, axis=1, keepdims=True).astype(np.float32)
        zero = norms[:, 0] == 0
        norms[zero] = 1.0
        q = np.ascontiguousarray(q / norms, dtype=np.float32)
        excluded = [_unique(ids) for ids in exclude] if exclude is not None else [[]] * b
        try:
            with self._read() as conn:
                floor = self.ef_floor(conn)
                # One statement per query, all sent before any answer is read.
                with conn.pipeline():
                    cursors = []
                    for i in range(b):
                        ef = _ef_search(limit, len(excluded[i]), floor=floor)
                        self._set_ef_search(conn, ef)
                        sql, args = _dense_sql(
                            where,
                            params,
                            flt.workspace_id,
                            q[i],
                            limit,
                            ef,
                            min_score=min_score,
                            exclude=excluded[i],
                            exact=bool(zero[i]),
                        )
                        if self._tracer is not None:
                            self._tracer(sql, args)
                        cursors.append(conn.execute(sql, args, prepare=False))
                found = [cur.fetchall() for cur in cursors]
        except StoreError as exc:
            if _is_dimension_error(exc):
                raise self._mismatch("the queries' embedder", int(q.shape[1])) from exc
            raise
        return [
            [
                Candidate(memory_id=memory_id, score=float(score), rank=rank)
                for rank, (memory_id, score, _seq) in enumerate(rows, start=1)
            ]
            for rows in found
        ]

    def ef_floor(self, conn: Conn) -> int:
        """The least ``hnsw.ef_search`` a dense search runs with: ``ef_search_floor`` if
        set, else scaled with the vectors stored (see ``EF_SCALE_ROWS``)."""
        if self.ef_search_floor is not None:
            return self.ef_search_floor
        now = time.monotonic()
        cached = self._ef_floor_cache
        if cached is not None and cached[1] > now:
            return cached[0]
        (rows,) = self._fetch(
            conn, "SELECT reltuples FROM pg_class WHERE oid = 'memory_vectors'::regclass", []
        )[0]
        floor = ef_floor_for(max(float(rows), 0.0))
        self._ef_floor_cache = (floor, now + EF_FLOOR_TTL_S)
        return floor

    def _set_ef_search(self, conn: Conn, ef: int) -> None:
        # Also no parallel workers: the exact fallback sits behind a one-time filter, and a
        # Gather below it would start its workers even when the filter skips the scan.
        self._exec(
            conn,
            "SELECT set_config('hnsw.ef_search', %s, true), "
            "set_config('max_parallel_workers_per_gather', '0', true)",
            (str(ef),),
        )

    def _mismatch(self, current: str, current_dim: int) -> StoreError | ModelMismatch:
        """The ModelMismatch for a query of another dimension than the stored vectors."""
        with self._read() as conn:
            row = self._exec(conn, "SELECT model, dim FROM memory_vectors LIMIT 1").fetchone()
        if row is None:
            return StoreError("the query vector's dimension does not match the stored vectors")
        return ModelMismatch(str(row[0]), int(row[1]), current, current_dim)

    # -- sparse -----------------------------------------------------------------------
    def search_sparse(self, flt: ScopeFilter, text: str, limit: int) -> list[Candidate]:
        where, params = scope_where(flt, alias="m", mark="%s")
        if _has_nul(*params):  # PostgreSQL text holds no NUL: nothing matches
            return []
        tokens = without_stopwords(fts_tokens(text))[:MAX_FTS_TERMS]
        if not tokens or limit <= 0:
            return []
        with self._read() as conn:
            total, avgdl, terms, counts = self._sparse_stats(conn, flt.workspace_id, tokens)
            if len(terms) == 1:
                # One term: as SQLite's window, its newest matches (bm25 over one term
                # orders them by little more than their length).
                plan = TermPlan(rare=(), common=(0,))
            else:
                plan = plan_terms(
                    counts,
                    total_rows=total,
                    budget=self.sparse_rare_budget,
                    max_share=SPARSE_MAX_SHARE,
                )
            sql, args = self._sparse_sql(where, params, terms, plan, limit)
            lexemes = [(i, v, t.prefix) for i, t in enumerate(terms, start=1) for v in t.variants]
            args += [[x[0] for x in lexemes], [x[1] for x in lexemes], [x[2] for x in lexemes]]
            args += [
                [bm25_idf(n, total) for n in counts],
                [i in plan.dropped for i in range(len(terms))],
                avgdl,
                limit,
            ]
            rows = self._fetch(conn, sql, args)
        return [
            Candidate(memory_id=memory_id, score=float(score), rank=rank)
            for rank, (memory_id, score) in enumerate(rows, start=1)
        ]

    def _sparse_sql(
        self,
        where: str,
        params: Sequence[Any],
        terms: Sequence[_Term],
        plan: TermPlan,
        limit: int,
    ) -> tuple[str, list[Any]]:
        """The scoring statement and the parameters of its candidates (the caller appends
        the rest: the lexeme arrays, idf, dropped, avgdl and limit): candidates, then
        bm25 over them (``_SPARSE_SCORE_SQL``).

        Candidates: every in-scope match of a rare term (their counts add up to at most
        ``sparse_rare_budget``), the newest ``window`` in-scope matches of each common
        term and of all common terms together, and, only while those are fewer than
        ``limit``, the newest matches of the dropped terms (scored with the dropped terms
        alone, as SQLite fills a short answer)."""
        branch = (
            "(SELECT m.seq FROM memories m WHERE m.tsv @@ to_tsquery('english', %s) "
            f"AND m.status = 'active' AND {where} ORDER BY m.seq DESC LIMIT %s)"
        )
        common = [terms[i].query for i in plan.common]
        window = max(
            limit, min(self.sparse_term_window, self.sparse_scored_rows // max(1, len(common)))
        )
        queries: list[tuple[str, int]] = []
        if plan.rare:
            queries.append((" | ".join(terms[i].query for i in plan.rare), self.sparse_rare_budget))
        queries += [(q, window) for q in common]
        if len(common) > 1:
            queries.append((" & ".join(common), window))
        args: list[Any] = []
        for query, cap in queries:
            args += [query, *params, cap]
        kept = (
            " UNION ".join([branch] * len(queries))
            if queries
            else "SELECT NULL::bigint WHERE false"
        )
        dropped = " | ".join(terms[i].query for i in plan.dropped)
        fill = "SELECT NULL::bigint WHERE false"
        if dropped:
            fill = (
                "SELECT m.seq FROM memories m WHERE (SELECT count(*) FROM kept) < %s "
                "AND m.tsv @@ to_tsquery('english', %s) "
                f"AND m.status = 'active' AND {where} ORDER BY m.seq DESC LIMIT %s"
            )
            args += [limit, dropped, *params, limit]
        sql = _SPARSE_SCORE_SQL.format(kept=kept, fill=fill)
        return sql, args

    def _sparse_stats(
        self, conn: Conn, workspace_id: str, tokens: Sequence[str]
    ) -> tuple[int, float, list[_Term], list[int]]:
        """(memories in the workspace, their average length in lexemes, the query's
        terms, how many memories of the workspace each term matches up to half of them).

        A token becomes its whole (stemmed) word when the workspace holds that word, else
        its prefix when it is long enough for one. As on SQLite
        (``SqliteStore._sparse_words``): stems already match a word's inflections, so a
        prefix adds only the longer words that start the same way ("art" -> "artifact",
        "article"), at the cost of merging all their posting lists; a word the workspace
        lacks was most likely typed in part ("auth", "kube"), and only then is the prefix
        worth it.

        Everything comes from one statement, and only what the cache (a few seconds,
        like SqliteStore's ``_DocCounts``) does not hold: each count is its own
        ``LIMIT`` over the GIN index, planned for its own word, and a prefix is counted
        only when its whole word matches nothing. Past half the workspace, idf is
        floored: counting further orders nothing. In a workspace of more than
        ``sparse_count_sample`` memories a count stops at ``sparse_exact_count`` (above
        the rare budget, so the plan's rare terms stay exact) and a term found that often
        is counted in the workspace's newest ``sparse_count_sample`` memories and scaled
        up: an estimate within a few tens of percent, which moves its idf by a fraction
        of a unit, for a few milliseconds instead of a heap visit per match. A term the
        sample holds ``SPARSE_SAMPLE_HITS`` times or more is not counted at all."""
        cache = self._sparse_cache()
        now = time.monotonic()
        known = cache.workspace(workspace_id, now)
        if known is None:
            known = self._workspace_size(conn, workspace_id)
            cache.put_workspace(workspace_id, known, now)
        keys = {t: f"{workspace_id}\x00{_term(t, prefix=False)}" for t in tokens}
        prefix_keys = {t: f"{workspace_id}\x00{_term(t, prefix=True)}" for t in tokens}
        whole = {t: cache.counts.get(keys[t], now) for t in tokens}
        prefixed: dict[str, int | None] = {}
        for t in tokens:
            if len(t) >= MIN_PREFIX_CHARS and whole[t] == 0:
                prefixed[t] = cache.counts.get(prefix_keys[t], now)
        missing = [t for t in tokens if whole[t] is None]
        missing += [t for t, n in prefixed.items() if n is None and whole[t] is not None]
        if missing:
            # In a workspace larger than the sample: a term the sample holds often is
            # estimated from it alone; any other is counted exactly up to the cap, and
            # estimated (never below the cap) if it reaches it.
            count = (
                "(SELECT least(n.n / 2 + 1, CASE WHEN h.k >= %s THEN h.k * n.n / n.sample "
                "ELSE (SELECT CASE WHEN c.k < n.cap OR n.n <= n.sample THEN c.k "
                "ELSE greatest(c.k, h.k * n.n / n.sample) END "
                "FROM (SELECT count(*) AS k FROM (SELECT 1 FROM memories "
                "WHERE workspace_id = %s AND tsv @@ to_tsquery('english', %s) "
                "LIMIT (SELECT cap FROM n)) c0) c) END) "
                "FROM n, (SELECT CASE WHEN n2.n > n2.sample THEN (SELECT count(*) FROM sample "
                "WHERE tsv @@ to_tsquery('english', %s)) ELSE 0 END AS k FROM n n2) h)"
            )
            stat = "SELECT %s::bigint AS n, %s::float8 AS avgdl"
            stat_args: list[Any] = list(known)
            cols: list[str] = []
            col_args: list[Any] = []
            for t in missing:
                if whole[t] is None and len(t) >= MIN_PREFIX_CHARS:
                    # The prefix's count only where the whole word matches nothing: a
                    # CASE runs its subquery only when taken.
                    cols.append(
                        f"(SELECT ARRAY[w, CASE WHEN w = 0 THEN {count} END] "
                        f"FROM (SELECT {count} AS w OFFSET 0) s)"
                    )
                    col_args += _count_args(workspace_id, _term(t, prefix=True))
                    col_args += _count_args(workspace_id, _term(t, prefix=False))
                elif whole[t] is None:
                    cols.append(f"ARRAY[{count}, NULL]")
                    col_args += _count_args(workspace_id, _term(t, prefix=False))
                else:
                    cols.append(f"ARRAY[NULL, {count}]")
                    col_args += _count_args(workspace_id, _term(t, prefix=True))
            # CTEs run only when read: the sample only in a workspace larger than it.
            sql = (
                f"WITH s AS MATERIALIZED ({stat}), n AS MATERIALIZED (SELECT s.n, s.avgdl, "
                "CASE WHEN s.n <= %s THEN s.n / 2 + 1 ELSE least(s.n / 2 + 1, %s) END AS cap, "
                "greatest(least(s.n, %s), 1) AS sample FROM s), "
                "sample AS MATERIALIZED (SELECT tsv FROM memories WHERE workspace_id = %s "
                "ORDER BY seq DESC LIMIT %s) SELECT n.n, n.avgdl"
            )
            sql += "".join(f", {c}" for c in cols) + " FROM n"
            exact = max(self.sparse_exact_count, self.sparse_rare_budget + 1)
            sample = self.sparse_count_sample
            sample_args = [sample, exact, sample, workspace_id, sample]
            row = self._fetch(conn, sql, [*stat_args, *sample_args, *col_args])[0]
            for t, pair in zip(missing, row[2:], strict=True):
                if pair[0] is not None:
                    whole[t] = int(pair[0])
                    cache.counts.put(keys[t], int(pair[0]), now)
                if pair[1] is not None:
                    prefixed[t] = int(pair[1])
                    cache.counts.put(prefix_keys[t], int(pair[1]), now)
        terms: dict[str, int] = {}
        found: list[_Term] = []
        for t in tokens:
            prefix = len(t) >= MIN_PREFIX_CHARS and whole[t] == 0
            query = _term(t, prefix=prefix)
            if query in terms:
                continue  # two prefixes may now be the same term: keep one
            n = prefixed.get(t) if prefix else whole[t]
            terms[query] = int(n or 0)
            found.append(_Term(query, _variants(t), prefix))
        return known[0], known[1], found, list(terms.values())

    def _workspace_size(self, conn: Conn, workspace_id: str) -> tuple[int, float]:
        """(memories in the workspace, their average length in lexemes, from a sample).
        Counted exactly up to ``SPARSE_EXACT_TOTAL``; past it the planner's estimate from
        the table's statistics (kept by autovacuum's ANALYZE), never below what was
        counted: counting a million rows' index entries took ~0.7 s, and idf hardly
        moves with N."""
        ((n, avgdl),) = self._fetch(
            conn,
            "SELECT (SELECT count(*) FROM (SELECT 1 FROM memories WHERE workspace_id = %s "
            "LIMIT %s) c), (SELECT avg(length(tsv)) FROM (SELECT tsv FROM memories "
            "WHERE workspace_id = %s LIMIT %s) s)",
            [workspace_id, SPARSE_EXACT_TOTAL, workspace_id, SPARSE_LENGTH_SAMPLE],
        )
        total = int(n)
        if total >= SPARSE_EXACT_TOTAL:
            ((plan,),) = self._fetch(
                conn,
                "EXPLAIN (FORMAT JSON) SELECT 1 FROM memories WHERE workspace_id = %s",
                [workspace_id],
            )
            plan = json.loads(plan) if isinstance(plan, str) else plan
            total = max(total, int(plan[0]["Plan"]["Plan Rows"]))
        return total, float(avgdl or 0.0)

    def _sparse_cache(self) -> _SparseCache:
        cache = self._sparse_counts
        if cache is None:
            cache = self._sparse_counts = _SparseCache()
        return cache

    # -- recency and conversations ------------------------------------------------------
    def search_recent(
        self,
        flt: ScopeFilter,
        limit: int,
        *,
        start: datetime | None = None,
        end: datetime | None = None,
        types: Sequence[str] | None = None,
    ) -> list[Candidate]:
        where, params = scope_where(flt, alias="m", mark="%s")
        if _has_nul(*params):  # PostgreSQL text holds no NUL: nothing matches
            return []
        if limit <= 0 or (types is not None and not types):
            return []
        bounds = ""
        if types is not None:
            bounds += " AND m.type = ANY(%s)"
            params.append(list(types))
        if start is not None:
            bounds += " AND m.ts >= %s"
            params.append(ts_text(start))
        if end is not None:
            bounds += " AND m.ts < %s"
            params.append(ts_text(end))
        with self._read() as conn:
            rows = self._fetch(
                conn,
                f"SELECT m.id, m.ts FROM memories m WHERE m.status = 'active' AND {where}"
                f"{bounds} ORDER BY m.ts DESC, m.seq DESC LIMIT %s",
                (*params, limit),
            )
        return [
            Candidate(memory_id=memory_id, score=_parse_ts(ts).timestamp(), rank=rank)
            for rank, (memory_id, ts) in enumerate(rows, start=1)
        ]

    def neighbours(
        self, flt: ScopeFilter, ids: Sequence[str], radius: int
    ) -> dict[str, list[tuple[str, int]]]:
        if radius <= 0 or not ids:
            return {}
        where, params = scope_where(flt, alias="m", mark="%s")
        if _has_nul(*params):  # PostgreSQL text holds no NUL: nothing matches
            return {}
        # A turn's neighbours are the turns of its type around it, not the episodes and
        # entries made from them; anchors are any memory of the workspace, neighbours only
        # active ones the filter sees. The LEFT JOIN keeps anchors without neighbours.
        side = (
            "(SELECT m.id, {sign} AS side, m.ts, m.seq FROM memories m WHERE {where} "
            "AND m.conversation_id = a.conversation_id AND m.status = 'active' "
            "AND m.type = a.type AND (m.ts, m.seq) {op} (a.ts, a.seq) "
            "ORDER BY m.ts {order}, m.seq {order} LIMIT %s)"
        )
        before = side.format(sign=-1, where=where, op="<", order="DESC")
        after = side.format(sign=1, where=where, op=">", order="ASC")
        sql = (
            "WITH a AS (SELECT id, conversation_id, ts, seq, type FROM memories "
            "WHERE workspace_id = %s AND id = ANY(%s) AND conversation_id IS NOT NULL) "
            "SELECT a.id, n.id, n.side, n.ts, n.seq FROM a "
            f"LEFT JOIN LATERAL ({before} UNION ALL {after}) AS n ON true"
        )
        args = [flt.workspace_id, _unique(ids), *params, radius, *params, radius]
        with self._read() as conn:
            rows = self._fetch(conn, sql, args)
        found: dict[str, list[tuple[str, int]]] = {}
        by_anchor: dict[str, list[tuple[int, str, int, str]]] = {}
        for anchor, other, side, ts, seq in rows:
            found.setdefault(anchor, [])
            if other is not None:
                by_anchor.setdefault(anchor, []).append((int(side), ts, int(seq), other))
        for anchor, near in by_anchor.items():
            for sign in (-1, 1):
                # Nearest first on each side: before in descending time, after ascending.
                ordered = sorted(
                    (n for n in near if n[0] == sign),
                    key=lambda n: (n[1], n[2]),
                    reverse=sign < 0,
                )
                found[anchor] += [(n[3], sign * k) for k, n in enumerate(ordered, start=1)]
        return found

    def conversations_of(self, workspace_id: str, ids: Sequence[str]) -> dict[str, str | None]:
        wanted = [i for i in _unique(ids) if not _has_nul(i)]
        if not wanted or _has_nul(workspace_id):
            return {}
        with self._read() as conn:
            rows = self._exec(
                conn,
                "SELECT id, conversation_id FROM memories WHERE workspace_id = %s AND id = ANY(%s)",
                (workspace_id, wanted),
            ).fetchall()
        return {memory_id: conversation for memory_id, conversation in rows}

    # -- relations --------------------------------------------------------------------
    def add_relations(self, workspace_id: str, edges: Sequence[Relation]) -> int:
        if not edges:
            return 0
        ends = _unique([e.src for e in edges] + [e.dst for e in edges])
        # One row per edge: an INSERT ... ON CONFLICT may not touch a row twice. The last
        # weight given wins, as it would edge by edge.
        weights = {(e.src, e.dst, e.relation): float(e.weight) for e in edges}
        with self._write() as conn:
            # KEY SHARE: a memory checked here cannot be deleted before its edges exist.
            known = {
                row[0]
                for row in self._exec(
                    conn,
                    "SELECT id FROM memories WHERE workspace_id = %s AND id = ANY(%s) "
                    "FOR KEY SHARE",
                    (workspace_id, ends),
                ).fetchall()
            }
            for e in edges:
                for end in (e.src, e.dst):
                    if end not in known:
                        raise NotFound(end)
            # In key order: two writers of overlapping edges lock them in the same order.
            keys = sorted(weights)
            cur = self._exec(
                conn,
                "INSERT INTO memory_relations (src, dst, relation, weight, created_at) "
                "SELECT e.src, e.dst, e.relation, e.weight, %s FROM unnest(%s::text[], "
                "%s::text[], %s::text[], %s::float8[]) AS e(src, dst, relation, weight) "
                "ON CONFLICT (src, dst, relation) DO UPDATE SET weight = excluded.weight",
                (
                    ts_text(utcnow()),
                    [k[0] for k in keys],
                    [k[1] for k in keys],
                    [k[2] for k in keys],
                    [weights[k] for k in keys],
                ),
            )
            return int(cur.rowcount)

    def related(
        self, flt: ScopeFilter, ids: Sequence[str], relation: str = "similar"
    ) -> dict[str, list[tuple[str, float]]]:
        wanted = _unique(ids)
        if not wanted:
            return {}
        where, params = scope_where(flt, alias="m", mark="%s")
        if _has_nul(*params):  # PostgreSQL text holds no NUL: nothing matches
            return {}
        ws = flt.workspace_id
        with self._read() as conn:
            # Edges point from the newer memory to the older; both directions are related.
            # Both ends are joined to memories so neither can be another workspace's.
            rows = self._exec(
                conn,
                "SELECT r.src, r.dst, r.weight FROM memory_relations r "
                "JOIN memories a ON a.id = r.src AND a.workspace_id = %s "
                f"JOIN memories m ON m.id = r.dst AND m.status = 'active' AND {where} "
                "WHERE r.relation = %s AND r.src = ANY(%s) "
                "UNION ALL SELECT r.dst, r.src, r.weight FROM memory_relations r "
                "JOIN memories a ON a.id = r.dst AND a.workspace_id = %s "
                f"JOIN memories m ON m.id = r.src AND m.status = 'active' AND {where} "
                "WHERE r.relation = %s AND r.dst = ANY(%s) ORDER BY 3 DESC, 1, 2",
                (ws, *params, relation, wanted, ws, *params, relation, wanted),
            ).fetchall()
        found: dict[str, list[tuple[str, float]]] = {}
        for start, other, weight in rows:
            found.setdefault(start, []).append((other, float(weight)))
        return found

    # -- the recall log -----------------------------------------------------------------
    def hit_cosines(self, flt: ScopeFilter, since: datetime) -> list[list[float]]:
        narrow, params = "", []
        for column in ("agent_id", "crew_id"):
            value = getattr(flt, column)
            if value:
                narrow += f" AND {column} = %s"
                params.append(value)
        with self._read() as conn:
            rows = self._exec(
                conn,
                "SELECT cosines FROM memory_reviews "
                f"WHERE workspace_id = %s AND recalled_at >= %s{narrow} ORDER BY recalled_at, id",
                (flt.workspace_id, ts_text(since), *params),
            ).fetchall()
        out: list[list[float]] = []
        for (text,) in rows:
            values = [float(v) for v in json.loads(text) if isinstance(v, int | float)]
            if values:
                out.append(values)
        return out


def ef_floor_for(rows: float) -> int:
    """The ef_search floor for a table of ``rows`` vectors (see ``EF_SCALE_ROWS``).

    >>> [ef_floor_for(n) for n in (0, 100_000, 400_000, 1_000_000, 10_000_000)]
    [40, 40, 80, 126, 200]
    """
    scaled = round(EF_SEARCH_MIN * math.sqrt(max(rows, 0.0) / EF_SCALE_ROWS))
    return min(EF_FLOOR_MAX, max(EF_SEARCH_MIN, scaled))


def _ef_search(limit: int, excluded: int = 0, *, floor: int = EF_SEARCH_MIN) -> int:
    return min(EF_SEARCH_MAX, max(floor, EF_SEARCH_FACTOR * limit + excluded))


def _dense_sql(
    where: str,
    params: Sequence[Any],
    workspace_id: str,
    query: Vector,
    limit: int,
    ef: int,
    *,
    min_score: float | None = None,
    exclude: Sequence[str] = (),
    exact: bool = False,
) -> tuple[str, list[Any]]:
    """One dense search as one statement: (sql, params).

    ``near``: the ``ef`` nearest vectors of the whole table (the HNSW index when it
    exists, else a sort; the caller set ``hnsw.ef_search`` to ``ef``). ``hits``: those
    the filter sees, best first. ``hits`` is the answer when it is complete: it holds
    ``limit`` rows, or, with ``min_score``, the farthest row in ``near`` already scores
    below it (every row the index did not return is farther still). A short ``hits``
    proves nothing more: the index may have spent its ``ef`` rows on other scopes, or
    on dead tuples a vacuum has not yet removed from the graph.

    Otherwise the second branch scans the filter's rows exactly. It orders by the inner
    product ``<#>``, which the cosine HNSW index cannot serve, so the planner has to
    score every visible row (found through the scope's b-tree indexes) rather than walk
    the HNSW graph again; a one-time filter runs it only when needed. When a scope
    holds fewer than ``limit`` rows, that scan is as small as the scope. Scores are
    inner products of unit vectors in both branches (= cosine), ties broken by memory
    order as SQLite breaks them by load order. The index is skipped (``near`` never
    runs) when it does not exist (no vectors yet, or more dimensions than HNSW takes)
    and when ``exact`` is set (a zero query vector has no direction to search by)."""
    near_extra, exact_extra = "", ""
    near_params: list[Any] = []
    exact_params: list[Any] = []
    if min_score is not None:
        near_extra += " AND v.score >= %s"
        near_params.append(float(min_score))
        exact_extra += " AND 0 - (v.vector <#> %s) >= %s"
        exact_params += [query, float(min_score)]
    if exclude:
        near_extra += " AND NOT (m.id = ANY(%s))"
        near_params.append(list(exclude))
        exact_extra += " AND NOT (m.id = ANY(%s))"
        exact_params.append(list(exclude))
    complete = "(SELECT count(*) FROM hits) >= %s"
    complete_params: list[Any] = [limit]
    if min_score is not None:
        # coalesce: an empty ``near`` has no farthest row and proves nothing.
        complete += " OR coalesce((SELECT min(score) FROM near) < %s, false)"
        complete_params.append(float(min_score))
    sql = (
        "WITH near AS MATERIALIZED ("
        " SELECT v.memory_id, 0 - (v.vector <#> %s) AS score FROM memory_vectors v"
        " ORDER BY v.vector <=> %s LIMIT %s"
        "), hits AS MATERIALIZED ("
        " SELECT m.id, v.score, m.seq FROM near v JOIN memories m ON m.id = v.memory_id"
        f" WHERE m.status = 'active' AND {where}{near_extra}"
        " ORDER BY v.score DESC, m.seq LIMIT %s"
        "), complete AS MATERIALIZED (SELECT NOT %s"
        f" AND to_regclass('memory_vectors_hnsw') IS NOT NULL AND ({complete}) AS ok) "
        "SELECT id, score, seq FROM hits WHERE (SELECT ok FROM complete) "
        "UNION ALL ("
        " SELECT m.id, 0 - (v.vector <#> %s), m.seq"
        " FROM memory_vectors v JOIN memories m ON m.id = v.memory_id"
        " WHERE NOT (SELECT ok FROM complete) AND v.workspace_id = %s"
        f" AND m.status = 'active' AND {where}{exact_extra}"
        " ORDER BY v.vector <#> %s, m.seq LIMIT %s"
        ") ORDER BY 2 DESC, 3"
    )
    args: list[Any] = [query, query, ef, *params, *near_params, limit]
    args += [exact, *complete_params]
    args += [query, workspace_id, *params, *exact_params, query, limit]
    return sql, args


class _Term:
    """One query term: its tsquery text, the words it stands for (a token with
    diacritics also without them) and whether they match as prefixes."""

    __slots__ = ("prefix", "query", "variants")

    def __init__(self, query: str, variants: list[str], prefix: bool) -> None:
        self.query = query
        self.variants = variants
        self.prefix = prefix


def _variants(token: str) -> list[str]:
    return list(dict.fromkeys([token, _fold(token)]))


class _SparseCache:
    """Document counts per (workspace, term) and each workspace's (memories, average
    length), each for ``DOC_COUNT_TTL_S`` seconds: counts grow as memories arrive, and a
    few seconds old they still weigh and sort terms right."""

    def __init__(self) -> None:
        self.counts = _DocCounts(DOC_COUNT_TTL_S, DOC_COUNT_CACHE_TERMS)
        self._workspaces: dict[str, tuple[int, float, float]] = {}

    def workspace(self, workspace_id: str, now: float) -> tuple[int, float] | None:
        entry = self._workspaces.get(workspace_id)
        if entry is None or entry[2] <= now:
            return None
        return entry[0], entry[1]

    def put_workspace(self, workspace_id: str, stats: tuple[int, float], now: float) -> None:
        if len(self._workspaces) >= DOC_COUNT_CACHE_TERMS:
            self._workspaces.clear()
        self._workspaces[workspace_id] = (stats[0], stats[1], now + DOC_COUNT_TTL_S)


# Per position, the weight of its label: content A, payload B, derived keys D (C unused),
# as FTS5 weighs its columns.
_LABEL_WEIGHT = (
    f"CASE w WHEN 'A' THEN {BM25_CONTENT_WEIGHT} WHEN 'B' THEN {BM25_PAYLOAD_WEIGHT} "
    f"WHEN 'D' THEN {BM25_KEYS_WEIGHT} ELSE 0 END"
)

# bm25 over the candidates, as FTS5 computes it: per term, f = the label-weighted count
# of its occurrences, score += idf x f x (k1 + 1) / (f + k1 x (1 - b + b x len / avglen)).
# A candidate found only through the dropped terms is scored with those alone, every
# other with the kept terms alone. The candidates' ids come from an array of seqs: joined
# to the union instead, the planner (which cannot estimate its size) may hash the whole
# table. ``fill`` is tested first: it is empty unless the kept terms found few rows.
_SPARSE_SCORE_SQL = (
    "WITH kept(seq) AS MATERIALIZED ({kept}), fill(seq) AS MATERIALIZED ({fill}), "
    "lex AS MATERIALIZED (SELECT DISTINCT q.term, q.prefix, l.lexeme "
    " FROM unnest(%s::int[], %s::text[], %s::bool[]) AS q(term, word, prefix)"
    " CROSS JOIN LATERAL unnest(to_tsvector('english', q.word)) AS l), "
    "p AS MATERIALIZED (SELECT %s::float8[] AS idf, %s::bool[] AS dropped,"
    " greatest(%s::float8, 1) AS avgdl), "
    "seqs AS MATERIALIZED (SELECT ARRAY(SELECT seq FROM kept) AS kept,"
    " ARRAY(SELECT seq FROM fill) AS fill,"
    " ARRAY(SELECT seq FROM kept UNION SELECT seq FROM fill) AS every), "
    "cand AS MATERIALIZED (SELECT m.id, m.seq, m.tsv,"
    " (m.seq = ANY((SELECT fill FROM seqs)::bigint[])"
    "  AND m.seq <> ALL((SELECT kept FROM seqs)::bigint[])) AS fill"
    " FROM memories m WHERE m.seq = ANY((SELECT every FROM seqs)::bigint[])) "
    "SELECT c.id, coalesce(s.score, " + repr(SPARSE_MIN_SCORE) + ") AS score "
    "FROM cand c CROSS JOIN p CROSS JOIN LATERAL ("
    f" SELECT sum(p.idf[t.term] * t.f * {BM25_K1 + 1}"
    f"  / (t.f + {BM25_K1} * (1 - {BM25_B} + {BM25_B} * length(c.tsv) / p.avgdl))) AS score"
    " FROM (SELECT x.term, sum(" + _LABEL_WEIGHT + ") AS f"
    "  FROM (SELECT DISTINCT lx.term, u.lexeme, u.weights FROM unnest(c.tsv) AS u"
    "   JOIN lex lx ON u.lexeme = lx.lexeme"
    "   OR (lx.prefix AND starts_with(u.lexeme, lx.lexeme))) AS x,"
    "  unnest(x.weights) AS w GROUP BY x.term) AS t"
    " WHERE p.dropped[t.term] = c.fill) AS s "
    "ORDER BY score DESC, c.seq LIMIT %s"
)
