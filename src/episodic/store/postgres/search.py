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
tsquery syntax. Each term contributes its newest matches in scope (all of them for a rare
term, at most ``sparse_term_window`` for a common one); the union is ranked with
``ts_rank`` over every term.

How ranking differs from SQLite's BM25 (FTS5 ``bm25`` with column weights content 1.0,
payload 0.5, keys 0.1):

- no IDF: ``ts_rank`` weighs every query term the same, so a word found in most memories
  counts as much as a rare one (BM25 weights a term by ln((N - n + 0.5) / (n + 0.5)));
  stopwords are left out as on SQLite, other common words are not;
- term frequency saturates differently: ``ts_rank`` adds, per term, its best occurrence's
  weight plus later occurrences' weights / i², scaled by 1/1.645, then averages over the
  query's terms (BM25: tf x (k1 + 1) / (tf + k1 x (1 - b + b x len / avglen)));
- length: ``ts_rank``'s normalisation 1 divides by 1 + ln(document length in words);
  BM25 normalises by the length relative to the average, per column;
- weights apply per occurrence by label (A 1.0, B 0.5, D 0.1, as ``{D, C, B, A}``), where
  FTS5 weights each column's whole BM25 term;
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
import unicodedata
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import numpy as np
import psycopg

from episodic.errors import ModelMismatch, NotFound, StoreError
from episodic.model import Candidate, ScopeFilter, utcnow
from episodic.scoring.fts import MAX_FTS_TERMS, MIN_PREFIX_CHARS, fts_tokens
from episodic.scoring.stopwords import without_stopwords
from episodic.store.base import Relation, Vector
from episodic.store.dense import unit_vector
from episodic.store.postgres.connection import Conn, PgBase
from episodic.store.sql import scope_where
from episodic.store.sqlite import (
    BM25_CONTENT_WEIGHT,
    BM25_KEYS_WEIGHT,
    BM25_PAYLOAD_WEIGHT,
    _parse_ts,
    _unique,
    ts_text,
)

# hnsw.ef_search bounds: pgvector's default and its maximum.
EF_SEARCH_MIN = 40
EF_SEARCH_MAX = 1000
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
# ts_rank's normalisation: 1 divides the rank by 1 + ln(document length), the nearest
# thing it has to BM25's length normalisation.
TS_RANK_NORMALISATION = 1
# ts_rank's weights array (a literal in the SQL) is ordered {D, C, B, A}; C is unused.
_TS_RANK_WEIGHTS = f"{{{BM25_KEYS_WEIGHT}, 0, {BM25_PAYLOAD_WEIGHT}, {BM25_CONTENT_WEIGHT}}}"


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


def _is_dimension_error(exc: StoreError) -> bool:
    cause = exc.__cause__
    return isinstance(cause, psycopg.errors.DataException) and "dimensions" in str(cause)


class SearchMixin(PgBase):
    # Attributes, not constants, so tests and benchmarks can shrink them.
    sparse_term_window: int = SPARSE_TERM_WINDOW
    sparse_scored_rows: int = SPARSE_SCORED_ROWS

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
        if limit <= 0:
            return []
        q = np.asarray(query, dtype=np.float32).reshape(-1)
        unit = unit_vector(q)
        ef = _ef_search(limit)
        sql, args = _dense_sql(where, params, flt.workspace_id, unit, limit, ef)
        try:
            with self._read() as conn:
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
                # One statement per query, all sent before any answer is read.
                with conn.pipeline():
                    cursors = []
                    for i in range(b):
                        ef = _ef_search(limit, len(excluded[i]))
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
        tokens = without_stopwords(fts_tokens(text))[:MAX_FTS_TERMS]
        if not tokens or limit <= 0:
            return []
        window = max(limit, min(self.sparse_term_window, self.sparse_scored_rows // len(tokens)))
        with self._read() as conn:
            terms = self._sparse_terms(conn, flt.workspace_id, tokens)
            branch = (
                "(SELECT m.seq FROM memories m WHERE m.tsv @@ to_tsquery('english', %s) "
                f"AND m.status = 'active' AND {where} ORDER BY m.seq DESC LIMIT %s)"
            )
            args: list[Any] = []
            for term in terms:
                args += [term, *params, window]
            # The ranked rows are looked up by seq from an array: joined to the union
            # instead, the planner (which cannot estimate the union's size) may hash the
            # whole table.
            sql = (
                f"WITH hits AS ({' UNION '.join([branch] * len(terms))}) "
                f"SELECT m.id, ts_rank('{_TS_RANK_WEIGHTS}'::real[], m.tsv, "
                f"to_tsquery('english', %s), {TS_RANK_NORMALISATION}) AS score "
                "FROM memories m WHERE m.seq = ANY(ARRAY(SELECT seq FROM hits)) "
                "ORDER BY score DESC, m.seq LIMIT %s"
            )
            args += [" | ".join(terms), limit]
            rows = self._fetch(conn, sql, args)
        return [
            Candidate(memory_id=memory_id, score=float(score), rank=rank)
            for rank, (memory_id, score) in enumerate(rows, start=1)
        ]

    def _sparse_terms(self, conn: Conn, workspace_id: str, tokens: Sequence[str]) -> list[str]:
        """Each token as tsquery text (``_term``): the whole word, or its prefix when the
        token is long enough for one and the workspace holds no memory with the whole
        word.

        As on SQLite (``SqliteStore._sparse_words``): stems already match a word's
        inflections, so a prefix adds only the longer words that start the same way
        ("art" -> "artifact", "article"), at the cost of merging all their posting
        lists; a word the workspace lacks was most likely typed in part ("auth",
        "kube"), and only then is the prefix worth it. One EXISTS per such token, each
        planned for its own word (GIN for a rare one, the first rows for a common one)."""
        candidates = [t for t in tokens if len(t) >= MIN_PREFIX_CHARS]
        held: dict[str, bool] = {}
        if candidates:
            probe = (
                "EXISTS (SELECT 1 FROM memories WHERE workspace_id = %s "
                "AND tsv @@ to_tsquery('english', %s))"
            )
            args: list[Any] = []
            for token in candidates:
                args += [workspace_id, _term(token, prefix=False)]
            row = self._fetch(conn, "SELECT " + ", ".join([probe] * len(candidates)), args)[0]
            held = dict(zip(candidates, (bool(v) for v in row), strict=True))
        terms = [
            _term(t, prefix=len(t) >= MIN_PREFIX_CHARS and not held.get(t, False)) for t in tokens
        ]
        # Two prefixes may now be the same term: keep one.
        return list(dict.fromkeys(terms))

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
        wanted = _unique(ids)
        if not wanted:
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


def _ef_search(limit: int, excluded: int = 0) -> int:
    return min(EF_SEARCH_MAX, max(EF_SEARCH_MIN, EF_SEARCH_FACTOR * limit + excluded))


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
