"""PostgresStore: the sparse leg, BM25 over ``memories.tsv`` (part of ``SearchStore``;
the tuning both backends share is ``episodic.store.sparse``).

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
import time
import unicodedata
from collections.abc import Sequence
from typing import Any

from episodic.model import Candidate, ScopeFilter
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
from episodic.store.passages import PassageRow
from episodic.store.postgres.connection import Conn, PgBase, _has_nul
from episodic.store.sparse import (
    BM25_CONTENT_WEIGHT,
    BM25_KEYS_WEIGHT,
    BM25_PAYLOAD_WEIGHT,
    DOC_COUNT_CACHE_TERMS,
    DOC_COUNT_TTL_S,
    SPARSE_MAX_SHARE,
    SPARSE_RARE_BUDGET,
    DocCounts,
)
from episodic.store.sql import live_where

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
    lexemes = [_lexeme(v, prefix=prefix) for v in _variants(token)]
    return lexemes[0] if len(lexemes) == 1 else "(" + " | ".join(lexemes) + ")"


def tsquery_all(text: str) -> str | None:
    """A tsquery matching what holds every searchable word of ``text`` (stopwords left
    out, a long word also as a prefix, as SQLite's ``fts_terms``); None for no word. The
    memory list's text filter."""
    tokens = without_stopwords(fts_tokens(text))[:MAX_FTS_TERMS]
    if not tokens:
        return None
    return " & ".join(_term(t, prefix=len(t) >= MIN_PREFIX_CHARS) for t in tokens)


def _count_args(workspace_id: str, query: str) -> list[Any]:
    """The parameters of one document count (see ``_sparse_stats``), in the SQL's order:
    the sample's hit threshold, the workspace and tsquery of the exact count, the
    tsquery for the sample."""
    return [SPARSE_SAMPLE_HITS, workspace_id, query, query]


class SparseMixin(PgBase):
    # Attributes, not constants, so tests and benchmarks can shrink them.
    sparse_term_window: int = SPARSE_TERM_WINDOW
    sparse_scored_rows: int = SPARSE_SCORED_ROWS
    sparse_rare_budget: int = SPARSE_RARE_BUDGET
    sparse_exact_count: int = SPARSE_EXACT_COUNT
    sparse_count_sample: int = SPARSE_COUNT_SAMPLE
    _sparse_counts: _SparseCache | None = None

    def forget_term_counts(self) -> None:
        """Drop the keyword search's cached document counts and workspace sizes
        (``_SparseCache``): the next recall counts afresh."""
        self._sparse_counts = None

    def search_sparse(self, flt: ScopeFilter, text: str, limit: int) -> list[Candidate]:
        where, params = live_where(flt, alias="m", mark="%s")
        if _has_nul(*params):  # PostgreSQL text holds no NUL: nothing matches
            return []
        tokens = without_stopwords(fts_tokens(text))[:MAX_FTS_TERMS]
        if not tokens or limit <= 0:
            return []
        with self._read(search=True) as conn:
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

    def search_sparse_passages(self, flt: ScopeFilter, text: str, limit: int) -> list[PassageRow]:
        """BM25 over the passages of long memories (``memory_text_passages``), each
        memory once at its best passage, best first: ``(memory id, score, start, stop)``.
        The query's terms and their plan are ``search_sparse``'s; the passages are scored
        as documents of their own collection, as SQLite's ``passages_fts`` is (N, the
        average length and each term's count over the workspace's passages), with every
        kept term, and the candidates are the passages holding a rare term (up to the rare
        budget), as on SQLite: a query of common words only reads none."""
        where, params = live_where(flt, alias="m", mark="%s")
        if _has_nul(*params):
            return []
        tokens = without_stopwords(fts_tokens(text))[:MAX_FTS_TERMS]
        if not tokens or limit <= 0:
            return []
        with self._read(search=True) as conn:
            size = self._passage_size(conn, flt.workspace_id)
            if size[0] == 0:
                return []  # no long memory in the workspace
            total, _, terms, counts = self._sparse_stats(conn, flt.workspace_id, tokens)
            plan = plan_terms(
                counts,
                total_rows=total,
                budget=self.sparse_rare_budget,
                max_share=SPARSE_MAX_SHARE,
            )
            if not plan.rare:
                return []  # common words only: the whole-text search ranks those
            branch = (
                "(SELECT p.memory_id, p.n FROM memory_text_passages p JOIN memories m"
                " ON m.id = p.memory_id WHERE p.tsv @@ to_tsquery('english', %s)"
                f" AND p.workspace_id = %s AND {where} ORDER BY m.seq DESC, p.n LIMIT %s)"
            )
            rare = " | ".join(terms[i].query for i in plan.rare)
            queries = [(rare, self.sparse_rare_budget)]
            args: list[Any] = []
            for query, cap in queries:
                args += [query, flt.workspace_id, *params, cap]
            lexemes = [(i, v, t.prefix) for i, t in enumerate(terms, start=1) for v in t.variants]
            args += [[x[0] for x in lexemes], [x[1] for x in lexemes], [x[2] for x in lexemes]]
            found = self._passage_counts(conn, flt.workspace_id, terms, size[0])
            args += [
                [bm25_idf(n, size[0]) for n in found],
                [i in plan.dropped for i in range(len(terms))],
                size[1],
                limit,
            ]
            sql = _PASSAGE_SCORE_SQL.format(kept=" UNION ".join([branch] * len(queries)))
            rows = self._fetch(conn, sql, args)
        return [(str(i), float(score), int(a), int(b)) for i, score, a, b in rows]

    def _passage_size(self, conn: Conn, workspace_id: str) -> tuple[int, float]:
        """(passages in the workspace, their average length in lexemes), as
        ``_workspace_size`` gives the memories', cached as long."""
        cache = self._sparse_cache()
        now = time.monotonic()
        key = f"{workspace_id}\x00passages"
        known = cache.workspace(key, now)
        if known is None:
            known = self._workspace_size(conn, workspace_id, "memory_text_passages")
            cache.put_workspace(key, known, now)
        return known

    def _passage_counts(
        self, conn: Conn, workspace_id: str, terms: Sequence[_Term], total: int
    ) -> list[int]:
        """How many of the workspace's passages each term matches, up to half of them
        (past that idf is floored), cached a few seconds as the memories' counts are."""
        cache = self._sparse_cache()
        now = time.monotonic()
        keys = [f"{workspace_id}\x00p\x00{t.query}" for t in terms]
        counts = [cache.counts.get(k, now) for k in keys]
        missing = [i for i, n in enumerate(counts) if n is None]
        if missing:
            cap = total // 2 + 1
            one = (
                "(SELECT count(*) FROM (SELECT 1 FROM memory_text_passages WHERE workspace_id"
                " = %s AND tsv @@ to_tsquery('english', %s) LIMIT %s) c)"
            )
            args: list[Any] = []
            for i in missing:
                args += [workspace_id, terms[i].query, cap]
            (row,) = self._fetch(conn, "SELECT " + ", ".join([one] * len(missing)), args)
            for i, n in zip(missing, row, strict=True):
                counts[i] = int(n)
                cache.counts.put(keys[i], int(n), now)
        return [int(n or 0) for n in counts]

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
            f"AND {where} ORDER BY m.seq DESC LIMIT %s)"
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
                f"AND {where} ORDER BY m.seq DESC LIMIT %s"
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
        like SqliteStore's ``DocCounts``) does not hold: each count is its own
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

    def _workspace_size(
        self, conn: Conn, workspace_id: str, table: str = "memories"
    ) -> tuple[int, float]:
        """(rows of ``table`` in the workspace, their average length in lexemes, from a
        sample). Counted exactly up to ``SPARSE_EXACT_TOTAL``; past it the planner's
        estimate from the table's statistics (kept by autovacuum's ANALYZE), never below
        what was counted: counting a million rows' index entries took ~0.7 s, and idf
        hardly moves with N. ``table`` is ours (memories, events, events_archive), never
        a caller's text."""
        ((n, avgdl),) = self._fetch(
            conn,
            f"SELECT (SELECT count(*) FROM (SELECT 1 FROM {table} WHERE workspace_id = %s "
            f"LIMIT %s) c), (SELECT avg(length(tsv)) FROM (SELECT tsv FROM {table} "
            "WHERE workspace_id = %s LIMIT %s) s)",
            [workspace_id, SPARSE_EXACT_TOTAL, workspace_id, SPARSE_LENGTH_SAMPLE],
        )
        total = int(n)
        if total >= SPARSE_EXACT_TOTAL:
            ((plan,),) = self._fetch(
                conn,
                f"EXPLAIN (FORMAT JSON) SELECT 1 FROM {table} WHERE workspace_id = %s",
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


class _Term:
    """One query term: its tsquery text, the words it stands for (a token with
    diacritics also without them) and whether they match as prefixes."""

    __slots__ = ("prefix", "query", "variants")

    def __init__(self, query: str, variants: list[str], prefix: bool) -> None:
        self.query = query
        self.variants = variants
        self.prefix = prefix


def _variants(token: str) -> list[str]:
    """The token, and without its diacritics when that differs and is not empty (a token
    of diacritics alone folds to nothing, and an empty lexeme is a tsquery syntax error)."""
    return [v for v in dict.fromkeys([token, _fold(token)]) if v]


class _SparseCache:
    """Document counts per (workspace, term) and each workspace's (memories, average
    length), each for ``DOC_COUNT_TTL_S`` seconds: counts grow as memories arrive, and a
    few seconds old they still weigh and sort terms right."""

    def __init__(self) -> None:
        self.counts = DocCounts(DOC_COUNT_TTL_S, DOC_COUNT_CACHE_TERMS)
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


# The query's lexemes, one row per (term number, lexeme, prefix or not), from three
# parameters: the arrays of term numbers (1-based), words and prefix flags. A word may
# stand for several lexemes, or none (a stopword).
LEXEMES_CTE = (
    "lex AS MATERIALIZED (SELECT DISTINCT q.term, q.prefix, l.lexeme "
    " FROM unnest(%s::int[], %s::text[], %s::bool[]) AS q(term, word, prefix)"
    " CROSS JOIN LATERAL unnest(to_tsvector('english', q.word)) AS l)"
)
# bm25 as FTS5 computes it, of a candidate ``c`` (its ``tsv``) against ``lex``, with
# ``p.idf`` (by term number) and ``p.avgdl``: per term, f = the label-weighted count of
# its occurrences, score += idf x f x (k1 + 1) / (f + k1 x (1 - b + b x len / avglen)).
# The body of a LATERAL subquery; the caller may add a WHERE on the term (``t.term``).
# Only the query's own lexemes are unnested: the candidate's tsvector less what is left
# of it once they are deleted (two C calls, where unnesting all of a memory's ~40 lexemes
# into rows cost 4x as much: the sparse leg at 1M went from 111 to 82 ms p50, with the
# same scores). A prefix term matches lexemes it cannot name, so with one the whole
# tsvector is unnested as before.
_QUERY_LEXEMES_OF_CANDIDATE = (
    "CASE WHEN (SELECT bool_or(prefix) FROM lex) THEN c.tsv ELSE ts_delete(c.tsv,"
    " tsvector_to_array(ts_delete(c.tsv, (SELECT array_agg(lexeme) FROM lex)))) END"
)
BM25_OF_CANDIDATE = (
    f" SELECT sum(p.idf[t.term] * t.f * {BM25_K1 + 1}"
    f"  / (t.f + {BM25_K1} * (1 - {BM25_B} + {BM25_B} * length(c.tsv) / p.avgdl))) AS score"
    " FROM (SELECT x.term, sum(" + _LABEL_WEIGHT + ") AS f"
    "  FROM (SELECT DISTINCT lx.term, u.lexeme, u.weights"
    "   FROM unnest(" + _QUERY_LEXEMES_OF_CANDIDATE + ") AS u"
    "   JOIN lex lx ON u.lexeme = lx.lexeme"
    "   OR (lx.prefix AND starts_with(u.lexeme, lx.lexeme))) AS x,"
    "  unnest(x.weights) AS w GROUP BY x.term) AS t"
)

# bm25 over the candidates (``BM25_OF_CANDIDATE``). A candidate found only through the
# dropped terms is scored with those alone, every other with the kept terms alone. The
# candidates' ids come from an array of seqs: joined to the union instead, the planner
# (which cannot estimate its size) may hash the whole table. ``fill`` is tested first: it
# is empty unless the kept terms found few rows.
_SPARSE_SCORE_SQL = (
    "WITH kept(seq) AS MATERIALIZED ({kept}), fill(seq) AS MATERIALIZED ({fill}), "
    + LEXEMES_CTE
    + ", "
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
    + BM25_OF_CANDIDATE
    + " WHERE p.dropped[t.term] = c.fill) AS s "
    "ORDER BY score DESC, c.seq LIMIT %s"
)

# bm25 of the kept terms' passages (``BM25_OF_CANDIDATE`` over each passage's tsvector,
# with the passages' idf and average length, the dropped terms left out), each memory at
# its best passage.
_PASSAGE_SCORE_SQL = (
    "WITH kept(memory_id, n) AS MATERIALIZED ({kept}), " + LEXEMES_CTE + ", "
    "p AS MATERIALIZED (SELECT %s::float8[] AS idf, %s::bool[] AS dropped,"
    " greatest(%s::float8, 1) AS avgdl), "
    "cand AS MATERIALIZED (SELECT t.memory_id AS id, t.start_char, t.stop_char, t.tsv,"
    " m.seq FROM kept k JOIN memory_text_passages t ON t.memory_id = k.memory_id"
    " AND t.n = k.n JOIN memories m ON m.id = t.memory_id), "
    "scored AS (SELECT DISTINCT ON (c.id) c.id, c.seq, c.start_char, c.stop_char,"
    " coalesce(s.score, " + repr(SPARSE_MIN_SCORE) + ") AS score "
    "FROM cand c CROSS JOIN p CROSS JOIN LATERAL ("
    + BM25_OF_CANDIDATE
    + " WHERE NOT p.dropped[t.term]) AS s ORDER BY c.id, score DESC, c.start_char) "
    "SELECT id, score, start_char, stop_char FROM scored ORDER BY score DESC, seq LIMIT %s"
)
