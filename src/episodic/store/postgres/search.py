"""PostgresStore: the recall legs (dense, recent, neighbours), relations one edge away,
and what a recall writes back (``SearchStore``; see ``episodic.store.search``). The BM25
leg is ``episodic.store.postgres.sparse``.

Dense: pgvector's cosine distance ``<=>`` over the HNSW index ``memory_vectors_hnsw``
(created by the writes mixin with the first vectors; until then every search is an exact
scan). A candidate's score is the cosine, as on SQLite: the inner product of the
normalised query with the stored unit vector. pgvector 0.6 has no iterative index scans:
an HNSW scan yields at most ``hnsw.ef_search`` rows, nearest first, *before* the WHERE
clause, so a narrow scope (one agent of many, a small workspace among large ones) would
come back short. Each search therefore takes the index's ``ef_search`` nearest rows of
the whole table, keeps the ones the scope sees, and, in the same statement, falls back to
an exact scan of the scope's rows unless those fill the answer (or, with a score floor,
the index's farthest row is already below it; see ``_dense_sql``). On pgvector 0.8 the
scope is checked inside an iterative index scan instead, which goes on until it has found
``ef_search`` of the scope's rows, and the exact scan is left for scopes smaller than the
answer. ``hnsw.ef_search`` is set per transaction to twice the rows wanted (40 to 1000).
The distance the index is searched by is written as the existing index was built (on
``vector`` or on ``halfvec``; see ``episodic.store.postgres.pgvector``).
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import numpy as np
import psycopg

from episodic.errors import ModelMismatch, StoreError
from episodic.model import Candidate, Memory, ScopeFilter, utcnow
from episodic.store.dense import unit_vector
from episodic.store.passages import PASSAGE_DEPTH, PassageRow, merge_dense
from episodic.store.postgres.connection import Conn, _has_nul
from episodic.store.postgres.pgvector import (
    MAX_SCAN_TUPLES,
    SMALL_SCOPE_ROWS,
    HnswIndex,
    PgvectorMixin,
    distance_sql,
    has_iterative_scan,
)
from episodic.store.postgres.writes import _MEMORY_WITH_SOURCES
from episodic.store.rows import memory_from_row, parse_ts, review_row, ts_text, unique
from episodic.store.search import RankRow
from episodic.store.sql import REVIEW_INSERT_COLUMNS, live_where, scope_where
from episodic.store.upkeep import ReviewRequest
from episodic.store.vectors import Vector

REVIEW_VALUES = ", ".join(["%s"] * 8)
# hnsw.ef_search bounds: pgvector's default and its maximum.
EF_SEARCH_MIN = 40
EF_SEARCH_MAX = 1000
# An HNSW graph's recall at a given ef_search falls as the table grows (bench_postgres,
# recall@10 vs exact at ef 40: 1.00 at 10k; at 100k 0.97 on clustered vectors but 0.88 on
# vectors with real MiniLM embeddings' spectrum, which need ef 100 for 0.96; clustered at
# 1M: 0.66). The floor grows with the square root of the vectors stored past
# EF_SCALE_ROWS (100 at 100k, 200 from 400k on), up to EF_FLOOR_MAX; the table's size is
# the catalog's estimate, read again after EF_FLOOR_TTL_S.
EF_SCALE_ROWS = 16_000
EF_FLOOR_MAX = 200
EF_FLOOR_TTL_S = 60.0
# The index is asked for this many times the rows wanted (plus the ids excluded), so a
# scope that sees most of the table still fills its answer from the index alone.
EF_SEARCH_FACTOR = 2


def _is_dimension_error(exc: StoreError) -> bool:
    cause = exc.__cause__
    return isinstance(cause, psycopg.errors.DataException) and "dimensions" in str(cause)


class SearchMixin(PgvectorMixin):
    # None: scaled with the table (``ef_floor``); a number pins it (benchmarks sweep it).
    ef_search_floor: int | None = None
    # pgvector 0.8: a scope of at most this many rows is scanned exactly, not by the index.
    small_scope_rows: int = SMALL_SCOPE_ROWS
    _ef_floor_cache: tuple[int, float] | None = None

    # -- dense ------------------------------------------------------------------------
    def search_dense(self, flt: ScopeFilter, query: Vector, limit: int) -> list[Candidate]:
        where, params = live_where(flt, alias="m", mark="%s")
        if _has_nul(*params):  # PostgreSQL text holds no NUL: nothing matches
            return []
        if limit <= 0:
            return []
        q = np.asarray(query, dtype=np.float32).reshape(-1)
        unit = unit_vector(q)
        try:
            with self._read(search=True) as conn:
                # The passages first, by a statement of their own: the memories' own
                # vectors are then searched by the statement (and HNSW plan) as before,
                # whether or not the workspace has any passages.
                passages = self._search_passages(conn, where, params, flt.workspace_id, unit, limit)
                ef = _ef_search(limit, floor=self.ef_floor(conn))
                index, iterative = self._dense_plan(conn)
                sql, args = _dense_sql(
                    where,
                    params,
                    flt.workspace_id,
                    unit,
                    limit,
                    ef,
                    index=index,
                    iterative=iterative,
                    small_scope=self.small_scope_rows,
                )
                self._set_ef_search(conn, ef, iterative=iterative)
                rows = self._fetch(conn, sql, args)
        except StoreError as exc:
            if _is_dimension_error(exc):
                raise self._mismatch("the query's embedder", int(q.size)) from exc
            raise
        if passages:
            return merge_dense(((i, float(score)) for i, score, _seq in rows), passages, limit)
        return [
            Candidate(memory_id=memory_id, score=float(score), rank=rank)
            for rank, (memory_id, score, _seq) in enumerate(rows, start=1)
        ]

    def _search_passages(
        self,
        conn: Conn,
        where: str,
        params: Sequence[Any],
        workspace_id: str,
        unit: Vector,
        limit: int,
    ) -> list[PassageRow]:
        """The passages of long memories the filter sees closest to ``unit``: an exact
        scan of the workspace's passages (few: only long memories have any), apart from
        the search of memory_vectors, which keeps its HNSW index."""
        rows = self._fetch(
            conn,
            "SELECT p.memory_id, 0 - (p.vector <#> %s) AS score, p.start_char, p.stop_char "
            "FROM memory_passages p JOIN memories m ON m.id = p.memory_id "
            f"WHERE p.workspace_id = %s AND {where} "
            "ORDER BY p.vector <#> %s, p.memory_id, p.n LIMIT %s",
            [unit, workspace_id, *params, unit, limit * PASSAGE_DEPTH],
        )
        return [(str(m), float(s), int(a), int(b)) for m, s, a, b in rows]

    def search_dense_many(
        self,
        flt: ScopeFilter,
        queries: Vector,
        limit: int,
        min_score: float | None = None,
        exclude: Sequence[Sequence[str]] | None = None,
    ) -> list[list[Candidate]]:
        where, params = live_where(flt, alias="m", mark="%s")
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
        excluded = [unique(ids) for ids in exclude] if exclude is not None else [[]] * b
        try:
            with self._read(search=True) as conn:
                floor = self.ef_floor(conn)
                index, iterative = self._dense_plan(conn)
                # One statement per query, all sent before any answer is read.
                with conn.pipeline():
                    cursors = []
                    for i in range(b):
                        ef = _ef_search(limit, len(excluded[i]), floor=floor)
                        self._set_ef_search(conn, ef, iterative=iterative)
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
                            index=index,
                            iterative=iterative,
                            small_scope=self.small_scope_rows,
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

    def _dense_plan(self, conn: Conn) -> tuple[HnswIndex | None, bool]:
        """The HNSW index a dense search follows, and whether it scans it iteratively
        (pgvector 0.8 on, and an index to scan)."""
        index = self.hnsw_index(conn)
        return index, index is not None and has_iterative_scan(self.pgvector_version(conn))

    def _set_ef_search(self, conn: Conn, ef: int, *, iterative: bool = False) -> None:
        # Also no parallel workers: the exact fallback sits behind a one-time filter, and a
        # Gather below it would start its workers even when the filter skips the scan.
        sql = (
            "SELECT set_config('hnsw.ef_search', %s, true), "
            "set_config('max_parallel_workers_per_gather', '0', true)"
        )
        params: tuple[str, ...] = (str(ef),)
        if iterative:
            # relaxed_order: the rows come back nearly nearest first; they are sorted by
            # their exact scores afterwards anyway.
            sql += (
                ", set_config('hnsw.iterative_scan', 'relaxed_order', true)"
                ", set_config('hnsw.max_scan_tuples', %s, true)"
            )
            params += (str(MAX_SCAN_TUPLES),)
        self._exec(conn, sql, params)

    def _mismatch(self, current: str, current_dim: int) -> StoreError | ModelMismatch:
        """The ModelMismatch for a query of another dimension than the stored vectors."""
        with self._read() as conn:
            row = self._exec(conn, "SELECT model, dim FROM memory_vectors LIMIT 1").fetchone()
        if row is None:
            return StoreError("the query vector's dimension does not match the stored vectors")
        return ModelMismatch(str(row[0]), int(row[1]), current, current_dim)

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
        where, params = live_where(flt, alias="m", mark="%s")
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
                f"SELECT m.id, m.ts FROM memories m WHERE {where}"
                f"{bounds} ORDER BY m.ts DESC, m.seq DESC LIMIT %s",
                (*params, limit),
            )
        return [
            Candidate(memory_id=memory_id, score=parse_ts(ts).timestamp(), rank=rank)
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
        args = [flt.workspace_id, unique(ids), *params, radius, *params, radius]
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

    def longest(self, workspace_id: str) -> int:
        if _has_nul(workspace_id):
            return 0
        with self._read() as conn:
            row = self._exec(
                conn,
                "SELECT max(chars) FROM memory_lengths WHERE workspace_id = %s",
                (workspace_id,),
            ).fetchone()
        return int(row[0] or 0) if row else 0

    def memories_and_longest(
        self, workspace_id: str, ids: Sequence[str]
    ) -> tuple[list[Memory], int]:
        if _has_nul(workspace_id):
            return [], 0
        wanted = [i for i in unique(ids) if not _has_nul(i)]
        with self._read() as conn:
            # One statement, one round trip: the longest is a one-row table every row of
            # the memories asked for joins (none asked or found: that row alone).
            rows = self._exec(
                conn,
                f"SELECT l.longest, {_MEMORY_WITH_SOURCES} FROM (SELECT max(chars) AS longest "
                "FROM memory_lengths WHERE workspace_id = %s) AS l LEFT JOIN memories m "
                "ON m.workspace_id = %s AND m.id = ANY(%s)",
                (workspace_id, workspace_id, wanted),
            ).fetchall()
        longest = int(rows[0][0] or 0) if rows else 0
        found = {row[1]: memory_from_row(row[1:-1], row[-1]) for row in rows if row[1] is not None}
        return [found[i] for i in wanted if i in found], longest

    def rank_rows(self, workspace_id: str, ids: Sequence[str]) -> dict[str, RankRow]:
        wanted = [i for i in unique(ids) if not _has_nul(i)]
        if not wanted or _has_nul(workspace_id):
            return {}
        with self._read() as conn:
            rows = self._exec(
                conn,
                # The text stays in its TOAST table: the length is a row of memory_lengths.
                "SELECT m.id, m.importance, m.agent_id, m.crew_id, m.ts, l.chars "
                "FROM memories m LEFT JOIN memory_lengths l ON l.memory_id = m.id "
                "WHERE m.workspace_id = %s AND m.id = ANY(%s)",
                (workspace_id, wanted),
            ).fetchall()
        return {
            memory_id: RankRow(memory_id, importance, agent, crew, parse_ts(ts), chars)
            for memory_id, importance, agent, crew, ts, chars in rows
        }

    def texts_of(self, workspace_id: str, ids: Sequence[str]) -> dict[str, str]:
        return self._column_of(workspace_id, ids, "content")

    def conversations_of(self, workspace_id: str, ids: Sequence[str]) -> dict[str, str | None]:
        return self._column_of(workspace_id, ids, "conversation_id")

    def _column_of(self, workspace_id: str, ids: Sequence[str], column: str) -> dict[str, Any]:
        """One column of the memories of ``ids`` in the workspace, by id (``column`` is
        one of this class's own names, never a caller's)."""
        wanted = [i for i in unique(ids) if not _has_nul(i)]
        if not wanted or _has_nul(workspace_id):
            return {}
        with self._read() as conn:
            rows = self._exec(
                conn,
                f"SELECT id, {column} FROM memories WHERE workspace_id = %s AND id = ANY(%s)",
                (workspace_id, wanted),
            ).fetchall()
        return dict(rows)

    # -- the memory graph --------------------------------------------------------------
    def related(
        self, flt: ScopeFilter, ids: Sequence[str], relation: str = "similar"
    ) -> dict[str, list[tuple[str, float]]]:
        wanted = unique(ids)
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

    # -- what a recall writes back ---------------------------------------------------
    def mark_referenced(self, workspace_id: str, ids: Sequence[str], at: datetime) -> None:
        wanted = unique(ids)
        if not wanted:
            return
        with self._write() as conn:
            # The rows are locked in id order first: two recalls of overlapping memories
            # then always lock them in the same order and never deadlock.
            self._exec(
                conn,
                "WITH hit AS (SELECT seq FROM memories WHERE workspace_id = %s "
                "AND id = ANY(%s) ORDER BY id FOR NO KEY UPDATE) "
                "UPDATE memories m SET reference_count = m.reference_count + 1, "
                "last_referenced_at = %s, updated_at = %s FROM hit WHERE m.seq = hit.seq",
                (workspace_id, wanted, ts_text(at), ts_text(utcnow())),
            )

    def add_review(self, review: ReviewRequest) -> int:
        with self._write() as conn:
            row = self._exec(
                conn,
                f"INSERT INTO memory_reviews ({REVIEW_INSERT_COLUMNS}) VALUES ({REVIEW_VALUES}) "
                "RETURNING id",
                review_row(review),
            ).fetchone()
        return int(row[0]) if row else 0

    def add_reviews(self, reviews: Sequence[ReviewRequest]) -> None:
        if not reviews:
            return
        with self._write() as conn:
            self._executemany(
                conn,
                f"INSERT INTO memory_reviews ({REVIEW_INSERT_COLUMNS}) VALUES ({REVIEW_VALUES})",
                [review_row(r) for r in reviews],
            )


def ef_floor_for(rows: float) -> int:
    """The ef_search floor for a table of ``rows`` vectors (see ``EF_SCALE_ROWS``).

    >>> [ef_floor_for(n) for n in (0, 16_000, 50_000, 100_000, 400_000, 1_000_000)]
    [40, 40, 71, 100, 200, 200]
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
    index: HnswIndex | None = None,
    iterative: bool = False,
    small_scope: int = SMALL_SCOPE_ROWS,
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
    and when ``exact`` is set (a zero query vector has no direction to search by).

    ``near`` orders by the distance written as ``index`` is built (a halfvec index is only
    used for the same cast). With ``iterative`` (pgvector 0.8; the caller turned
    ``hnsw.iterative_scan`` on) the filter moves inside ``near``: the index scan goes on
    past ``ef`` rows until ``ef`` of the filter's rows are found (or it has visited
    ``hnsw.max_scan_tuples``), so a narrow scope is filled by the index. A scope of at
    most ``small_scope`` rows (counted first, up to one more) skips the index: its exact
    scan is cheaper. The exact scan is still the fallback when the index comes back
    short."""
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
    head = "WITH"
    head_args: list[Any] = []
    near = " SELECT v.memory_id, 0 - (v.vector <#> %s) AS score FROM memory_vectors v"
    near_args: list[Any] = [query]
    if iterative:
        # A scope of at most ``small_scope`` rows is scanned exactly at once: cheaper
        # than the rows the index would pass over to find them (all of
        # hnsw.max_scan_tuples when the scope holds fewer than asked for).
        head = (
            "WITH small AS MATERIALIZED (SELECT count(*) <= %s AS yes FROM"
            f" (SELECT 1 FROM memories m WHERE {where} LIMIT %s) s),"
        )
        head_args = [small_scope, *params, small_scope + 1]
        # The filter is a subquery per row, not a join or a column of memory_vectors:
        # the planner cannot turn it into a scan of the scope's rows and a sort, and the
        # index scan stays the way in. The score floor stays in ``hits``: inside the
        # scan it would send the index looking for rows that are not there.
        near += (
            " WHERE NOT (SELECT yes FROM small)"
            f" AND (SELECT {where} FROM memories m WHERE m.id = v.memory_id)"
        )
        near_args += [*params]
        if exclude:
            near += " AND NOT (v.memory_id = ANY(%s))"
            near_args.append(list(exclude))
    near += f" ORDER BY {distance_sql(index)} LIMIT %s"
    near_args += [query, ef]
    sql = (
        f"{head} near AS MATERIALIZED ({near}"
        "), hits AS MATERIALIZED ("
        " SELECT m.id, v.score, m.seq FROM near v JOIN memories m ON m.id = v.memory_id"
        f" WHERE {where}{near_extra}"
        " ORDER BY v.score DESC, m.seq LIMIT %s"
        "), complete AS MATERIALIZED (SELECT NOT %s"
        f" AND to_regclass('memory_vectors_hnsw') IS NOT NULL AND ({complete}) AS ok) "
        "SELECT id, score, seq FROM hits WHERE (SELECT ok FROM complete) "
        "UNION ALL ("
        " SELECT m.id, 0 - (v.vector <#> %s), m.seq"
        " FROM memory_vectors v JOIN memories m ON m.id = v.memory_id"
        " WHERE NOT (SELECT ok FROM complete) AND v.workspace_id = %s"
        f" AND {where}{exact_extra}"
        " ORDER BY v.vector <#> %s, m.seq LIMIT %s"
        ") ORDER BY 2 DESC, 3"
    )
    args: list[Any] = [*head_args, *near_args, *params, *near_params, limit]
    args += [exact, *complete_params]
    args += [query, workspace_id, *params, *exact_params, query, limit]
    return sql, args
