"""PostgresStore's retrieval legs beyond the contract: the HNSW index under scopes it
cannot serve alone (pgvector 0.6 scans at most ``hnsw.ef_search`` rows before the WHERE
clause), batched dense search against SqliteStore's, how the sparse leg builds and ranks
its tsquery, and relation upserts."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict

from episodic.errors import ModelMismatch
from episodic.model import Candidate, Scope, ScopeFilter
from episodic.store import SqliteStore, Store
from episodic.store.base import Relation, Vector
from episodic.store.postgres import PostgresStore, sparse
from episodic.store.postgres.pgvector import distance_sql
from store_contract import DIM, MODEL, event, memory_of, remember, sparse_ids

ACME = ScopeFilter("acme")


@pytest.fixture
def store(pg_url: str) -> Iterator[PostgresStore]:
    s = PostgresStore(pg_url)
    yield s
    s.close()


@pytest.fixture
def indexed_store(pg_url: str) -> Iterator[PostgresStore]:
    """A store whose planner always takes the HNSW index for a nearest-first scan (with
    sequential scans off, as a large table would have it), so the index's ef_search
    limit is what the searches meet."""
    dbname = conninfo_to_dict(pg_url)["dbname"]
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(f'ALTER DATABASE "{dbname}" SET enable_seqscan = off')
    s = PostgresStore(pg_url)
    yield s
    s.close()


def unit_rows(n: int, seed: int) -> Vector:
    rows: Vector = np.random.default_rng(seed).standard_normal((n, DIM)).astype(np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    return rows


def seed_agents(store: Store, vectors: Vector, agents: list[str], ws: str = "acme") -> list[str]:
    ids = [f"{ws}-{i:05d}" for i in range(len(vectors))]
    events = [
        event(i, ws, agent=a, minutes=n) for n, (i, a) in enumerate(zip(ids, agents, strict=True))
    ]
    step = 500
    for start in range(0, len(ids), step):
        chunk = events[start : start + step]
        store.append(chunk, [memory_of(e) for e in chunk])
        rows = zip(ids[start : start + step], vectors[start : start + step], strict=True)
        store.put_vectors(MODEL, DIM, list(rows))
    return ids


def brute_force(
    vectors: Vector, ids: list[str], visible: list[bool], query: Vector, limit: int
) -> list[tuple[str, float]]:
    scores = vectors @ (query / np.linalg.norm(query))
    order = sorted((i for i in range(len(ids)) if visible[i]), key=lambda i: (-scores[i], i))
    return [(ids[i], float(scores[i])) for i in order[:limit]]


def pairs(found: list[Candidate]) -> list[tuple[str, float]]:
    return [(c.memory_id, c.score) for c in found]


def assert_same(got: list[tuple[str, float]], want: list[tuple[str, float]]) -> None:
    assert [i for i, _ in got] == [i for i, _ in want]
    assert [s for _, s in got] == pytest.approx([s for _, s in want], abs=1e-5)


# -- dense -------------------------------------------------------------------------------
def uses_hnsw(store: PostgresStore, query: Vector) -> bool:
    with store._read() as conn:
        # The distance as the index was built (on halfvec from pgvector 0.7).
        distance = distance_sql(store.hnsw_index(conn))
        plan = conn.execute(
            f"EXPLAIN SELECT v.memory_id FROM memory_vectors v ORDER BY {distance} LIMIT 40",
            (query,),
        ).fetchall()
    return any("memory_vectors_hnsw" in row[0] for row in plan)


def test_a_narrow_scope_is_answered_exactly_although_the_index_sees_few_of_its_rows(
    indexed_store: PostgresStore,
) -> None:
    n = 1500
    vectors = unit_rows(n, seed=5)
    # One agent holds 1 memory in 100: the ef_search (40) nearest rows of the whole
    # table hold about none of them.
    agents = ["rare" if i % 100 == 7 else f"a{i % 3}" for i in range(n)]
    ids = seed_agents(indexed_store, vectors, agents)
    small = unit_rows(12, seed=6)
    small_ids = seed_agents(indexed_store, small, ["b"] * 12, ws="tiny")
    query = vectors[3] + 0.3 * vectors[4]
    assert uses_hnsw(indexed_store, query), "the test needs the index in the plan"

    rare = ScopeFilter("acme", Scope.OWN, agent_id="rare")
    got = indexed_store.search_dense(rare, query, 10)
    assert_same(pairs(got), brute_force(vectors, ids, [a == "rare" for a in agents], query, 10))
    assert [c.rank for c in got] == list(range(1, 11))
    everything = indexed_store.search_dense(rare, query, 100)
    assert len(everything) == agents.count("rare")

    # A small workspace next to a large one: the same shortfall, the same exact answer.
    tiny = indexed_store.search_dense(ScopeFilter("tiny"), query, 5)
    assert_same(pairs(tiny), brute_force(small, small_ids, [True] * 12, query, 5))

    # The whole workspace fills its answer from the index (approximate, so compare sets
    # loosely: an HNSW graph this small finds the true neighbours).
    whole = indexed_store.search_dense(ACME, query, 10)
    want = brute_force(vectors, ids, [True] * n, query, 10)
    assert len({c.memory_id for c in whole} & {i for i, _ in want}) >= 9
    assert [c.score for c in whole] == sorted((c.score for c in whole), reverse=True)


def test_a_limit_beyond_ef_search_max_still_returns_everything_in_scope(
    indexed_store: PostgresStore,
) -> None:
    n = 1200
    vectors = unit_rows(n, seed=8)
    ids = seed_agents(indexed_store, vectors, ["a"] * n)
    query = vectors[0]
    got = indexed_store.search_dense(ACME, query, 1100)
    assert_same(pairs(got), brute_force(vectors, ids, [True] * n, query, 1100))


def test_many_queries_with_a_floor_and_exclusions_under_a_narrow_scope(
    indexed_store: PostgresStore,
) -> None:
    n = 1500
    vectors = unit_rows(n, seed=9)
    agents = ["rare" if i % 50 == 1 else "common" for i in range(n)]
    ids = seed_agents(indexed_store, vectors, agents)
    rare_rows = [i for i in range(n) if agents[i] == "rare"]
    # Queries close to rare memories: each has neighbours above the floor in scope.
    queries = np.stack([vectors[i] + 0.2 * vectors[i + 1] for i in rare_rows[:4]])
    exclude = [[ids[rare_rows[0]]], [], [ids[rare_rows[2]], ids[rare_rows[3]]], []]
    flt = ScopeFilter("acme", Scope.OWN, agent_id="rare")
    got = indexed_store.search_dense_many(flt, queries, 3, min_score=0.2, exclude=exclude)
    for j, found in enumerate(got):
        visible = [agents[i] == "rare" and ids[i] not in exclude[j] for i in range(n)]
        want = [(i, s) for i, s in brute_force(vectors, ids, visible, queries[j], 3) if s >= 0.2]
        assert_same(pairs(found), want)


@pytest.fixture
def both(store: PostgresStore) -> Iterator[tuple[PostgresStore, SqliteStore]]:
    lite = SqliteStore(":memory:")
    yield store, lite
    lite.close()


def test_dense_many_gives_what_sqlite_gives(both: tuple[PostgresStore, SqliteStore]) -> None:
    pg, lite = both
    n = 300
    vectors = unit_rows(n, seed=13)
    agents = [f"a{i % 4}" for i in range(n)]
    for s in (pg, lite):
        ids = seed_agents(s, vectors, agents)
    queries = unit_rows(5, seed=14) * 3.0  # not unit length: both normalise
    exclude = [ids[:40], [], ids[::2], [], ids[5:6]]
    for flt in (ACME, ScopeFilter("acme", Scope.OWN, agent_id="a2")):
        for min_score in (None, 0.3):
            args: dict[str, Any] = {"min_score": min_score, "exclude": exclude}
            got = pg.search_dense_many(flt, queries, 7, **args)
            want = lite.search_dense_many(flt, queries, 7, **args)
            for g, w in zip(got, want, strict=True):
                assert_same(pairs(g), pairs(w))
                assert [c.rank for c in g] == [c.rank for c in w]
    # A zero row has no direction: every row scores 0 (SQLite's tie order is arbitrary).
    zero = np.zeros((1, DIM), np.float32)
    assert [c.score for c in pg.search_dense_many(ACME, zero, 7)[0]] == [0.0] * 7
    assert pg.search_dense_many(ACME, zero, 7, min_score=0.3) == [[]]


def test_dense_many_of_another_dimension_is_a_model_mismatch(store: PostgresStore) -> None:
    remember(store, event("m1"))
    store.put_vectors(MODEL, DIM, [("m1", unit_rows(1, seed=1)[0])])
    with pytest.raises(ModelMismatch):
        store.search_dense_many(ACME, np.ones((2, DIM + 1), np.float32), 3)
    with pytest.raises(ModelMismatch):
        store.search_dense(ACME, np.ones(DIM - 1, np.float32), 3)


# -- sparse ------------------------------------------------------------------------------
def test_a_prefix_only_for_a_word_the_workspace_does_not_hold(store: PostgresStore) -> None:
    remember(
        store,
        event("running", summary="running late again"),
        event("runbook", summary="the runbook moved"),
        event("auth", summary="authentication outage"),
    )
    # "run" is a word here (the stem of "running"): no prefix, so no "runbook".
    assert sparse_ids(store, ACME, "run") == ["running"]
    # Nobody wrote "auth" or "runb": they were typed in part.
    assert sparse_ids(store, ACME, "auth") == ["auth"]
    assert sparse_ids(store, ACME, "runb") == ["runbook"]
    # Another workspace holding the whole word changes nothing here.
    remember(store, event("theirs", "beta", summary="auth token"))
    assert sparse_ids(store, ACME, "auth") == ["auth"]


def test_a_search_right_after_the_first_writes_of_an_empty_workspace(
    store: PostgresStore,
) -> None:
    # Found by the isolation state machine: the workspace's size is cached for a few
    # seconds, so a search of an empty workspace, then a write, then a search for other
    # words counted one match among zero memories, and idf's log failed ("math domain
    # error": a 500).
    assert sparse_ids(store, ACME, "anything at all") == []
    remember(store, event("e1", summary="the deploy failed yesterday"))
    assert sparse_ids(store, ACME, "what failed yesterday") == ["e1"]
    remember(store, event("e2", summary="it failed again"))
    assert set(sparse_ids(store, ACME, "failed")) <= {"e1", "e2"}


@pytest.mark.parametrize(
    "query",
    [
        "deploy & !rollback | x:*",
        "deploy' | 'rollback",
        "deploy\\' rollback",
        "(deploy <-> rollback)",
        "deploy:A rollback:*B",
        "'); DROP TABLE memories; --",
        "the of and",
    ],
)
def test_tsquery_syntax_in_user_text_is_just_words(store: PostgresStore, query: str) -> None:
    remember(store, event("m1", summary="deploy then rollback"), event("m2", summary="other"))
    got = sparse_ids(store, ACME, query)
    if "deploy" in query or "rollback" in query:
        assert got == ["m1"]
    else:
        assert got == []
    assert store.get_memory("acme", "m1").content == "deploy then rollback"


def test_a_query_word_with_diacritics_also_finds_it_without(store: PostgresStore) -> None:
    remember(
        store,
        event("plain", summary="the cafe opens at nine"),
        event("accented", summary="Zürich office moved"),
    )
    assert sparse_ids(store, ACME, "Café") == ["plain"]
    assert sparse_ids(store, ACME, "zürich") == ["accented"]
    assert sparse_ids(store, ACME, "zür") == ["accented"]  # a prefix, both ways


def test_a_word_of_only_diacritics_is_searched_without_an_empty_lexeme(
    store: PostgresStore,
) -> None:
    # Its folded form is "": an empty tsquery lexeme is a syntax error (found by the
    # sparse fuzz test with the query "\u0300\u0300").
    remember(store, event("m1", summary="deploy then rollback"))
    assert sparse_ids(store, ACME, "\u0300\u0300") == []
    assert sparse_ids(store, ACME, "deploy \u0300\u0301") == ["m1"]


def test_sparse_weighs_content_above_payload_above_keys(store: PostgresStore) -> None:
    a = event("content", summary="quarantine the artefact")
    b = event("payload", summary="a decision", payload={"why": "quarantine"})
    c = event("keys", summary="a decision too")
    store.append([a, b, c], [memory_of(a), memory_of(b), memory_of(c, keys="quarantine")])
    got = store.search_sparse(ACME, "quarantine", 10)
    assert [x.memory_id for x in got] == ["content", "payload", "keys"]
    assert got[0].score > got[1].score > got[2].score > 0


def test_scoring_only_the_query_lexemes_gives_the_whole_tsvectors_scores(
    store: PostgresStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    # bm25 unnests a candidate's tsvector less every lexeme the query lacks; unnesting
    # all of it (as before) must rank and score the same, labels, repeats, diacritic
    # variants and prefixes included.
    texts = [
        "deploy the deploy pipeline again after the deploy failed",
        "pipeline failed on the billing node, see runbook",
        "the café in zürich closed; billing moved",
        "runbooks for billing deploys and pipelines",
        "nothing in common here at all",
    ]
    events = [event(f"m{i}", summary=t, minutes=i) for i, t in enumerate(texts)]
    extra = event("keyed", summary="a decision", payload={"why": "deploy billing"}, minutes=9)
    store.append([*events, extra], [*map(memory_of, events), memory_of(extra, keys="pipeline")])
    queries = [
        "deploy pipeline",
        "billing failed deploy",
        "cafe zürich",
        "runb",
        "deploy runb",
        "pipelines deploys",
        "nothing",
        "deploy deploy deploy",
    ]
    restricted = {q: store.search_sparse(ACME, q, 10) for q in queries}
    whole = sparse._SPARSE_SCORE_SQL.replace(
        "unnest(" + sparse._QUERY_LEXEMES_OF_CANDIDATE + ")", "unnest(c.tsv)"
    )
    assert whole != sparse._SPARSE_SCORE_SQL
    monkeypatch.setattr(sparse, "_SPARSE_SCORE_SQL", whole)
    for q in queries:
        got = [(c.memory_id, round(c.score, 9)) for c in restricted[q]]
        assert got == [(c.memory_id, round(c.score, 9)) for c in store.search_sparse(ACME, q, 10)]
        assert got or q == "nothing"
    assert restricted["deploy pipeline"][0].memory_id == "m0"


def test_a_common_terms_old_match_is_found_through_a_rarer_term(store: PostgresStore) -> None:
    store.sparse_term_window = 5
    old = event("old", summary="deploy zebra crossing", minutes=0)
    recent = [event(f"r{i}", summary=f"deploy number {i}", minutes=10 + i) for i in range(20)]
    remember(store, old, *recent)
    got = sparse_ids(store, ACME, "deploy zebra", limit=3)
    assert got[0] == "old"
    # The common term alone ranks its newest window only.
    assert set(sparse_ids(store, ACME, "deploy", limit=3)) <= {f"r{i}" for i in range(15, 20)}


def test_sparse_respects_scope_and_status_in_every_window(store: PostgresStore) -> None:
    store.sparse_term_window = 2
    events = [event(f"m{i}", summary="deploy", agent=f"a{i % 2}", minutes=i) for i in range(9)]
    remember(store, *events)
    own = ScopeFilter("acme", Scope.OWN, agent_id="a0")
    assert set(sparse_ids(store, own, "deploy", limit=10)) == {f"m{i}" for i in range(0, 9, 2)}
    assert sparse_ids(store, ScopeFilter("beta"), "deploy") == []


# -- neighbours and relations ------------------------------------------------------------
def test_an_anchor_without_neighbours_maps_to_an_empty_list(store: PostgresStore) -> None:
    remember(store, event("t0", conversation="c1"), event("t1", conversation="c2"))
    assert store.neighbours(ACME, ["t0", "t1"], 2) == {"t0": [], "t1": []}
    assert store.neighbours(ACME, ["t0"], 0) == {}


def test_an_edge_given_twice_in_one_call_keeps_the_last_weight(store: PostgresStore) -> None:
    remember(store, event("a"), event("b"))
    edges = [Relation("a", "b", "similar", 0.8), Relation("a", "b", "similar", 0.9)]
    store.add_relations("acme", edges)
    assert store.related(ACME, ["a"]) == {"a": [("b", 0.9)]}
    assert store.related(ACME, ["b"]) == {"b": [("a", 0.9)]}


def test_a_rare_term_outweighs_a_common_one(store: PostgresStore) -> None:
    # ts_rank weighed both words alike; bm25's idf puts the memory with the rare word
    # first although the other holds the common word twice.
    rare = event("rare", summary="zebra meeting", minutes=0)
    common = event("common", summary="meeting meeting notes", minutes=1)
    filler = [event(f"f{i}", summary=f"meeting {i}", minutes=2 + i) for i in range(8)]
    remember(store, rare, common, *filler)
    assert sparse_ids(store, ACME, "meeting zebra", limit=2)[0] == "rare"


def test_a_term_in_most_memories_only_fills_a_short_answer(store: PostgresStore) -> None:
    store.sparse_rare_budget = 5  # below the terms' 12 matches: the plan applies
    many = [event(f"m{i}", summary=f"status update {i}", minutes=i) for i in range(10)]
    remember(store, *many, event("x", summary="status of the kraken", minutes=20))
    # "status" is in every memory: dropped while "kraken" remains, used only to fill.
    got = store.search_sparse(ACME, "status kraken", 3)
    assert got[0].memory_id == "x"
    assert len(got) == 3 and all(c.score > 0 for c in got)
    assert got[0].score > got[1].score


def test_counts_past_the_cap_are_estimated_from_the_newest_memories(
    store: PostgresStore,
) -> None:
    # 600 memories; "alpha" in every other one, "beta" in every tenth, "gamma" in 7 of
    # them. Counted exactly up to 40 matches, past that from the newest 100 memories.
    store.sparse_exact_count, store.sparse_count_sample = 40, 100
    store.sparse_rare_budget = 20
    rows = []
    for i in range(600):
        words = ["alpha"] if i % 2 == 0 else ["filler"]
        words += ["beta"] if i % 10 == 0 else []
        words += ["gamma"] if i in (3, 50, 120, 333, 400, 501, 599) else []
        rows.append(event(f"m{i:03d}", summary=" ".join(words), minutes=i))
    remember(store, *rows)
    with store._read() as conn:
        total, _, terms, counts = store._sparse_stats(conn, "acme", ["alpha", "beta", "gamma"])
    assert total == 600
    assert [t.query for t in terms] == ["'alpha'", "'beta'", "'gamma'"]
    # alpha: 50 of the newest 100 -> 300 (never past half the workspace plus one, where
    # idf is floored); beta: 10 of 100 -> 60 (exactly right here: the terms are spread
    # evenly); gamma: under the cap, counted exactly.
    assert counts == [300, 60, 7]
    # A small workspace is still counted exactly, whatever the terms' counts.
    store.sparse_count_sample = 1000
    store._sparse_counts = None
    with store._read() as conn:
        _, _, _, counts = store._sparse_stats(conn, "acme", ["alpha", "beta", "gamma"])
    assert counts == [300, 60, 7]
    # ...and a term past the cap in a workspace whose newest memories lack it is not
    # estimated below the cap it reached.
    store.sparse_count_sample = 100
    store._sparse_counts = None
    remember(store, *[event(f"n{i:03d}", summary="filler", minutes=700 + i) for i in range(100)])
    with store._read() as conn:
        _, _, _, counts = store._sparse_stats(conn, "acme", ["beta"])
    assert counts == [40]
    # Ranking still finds the rare term's every match.
    found = sparse_ids(store, ScopeFilter("acme"), "gamma beta", limit=7)
    assert sorted(found) == ["m003", "m050", "m120", "m333", "m400", "m501", "m599"]


def test_a_large_workspace_is_sized_from_the_planners_statistics(
    store: PostgresStore, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import episodic.store.postgres.sparse as sparse

    remember(store, *[event(f"m{i:03d}", summary=f"note {i}", minutes=i) for i in range(300)])
    remember(store, *[event(f"o{i:03d}", "other", summary="note", minutes=i) for i in range(50)])
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("ANALYZE memories")
    monkeypatch.setattr(sparse, "SPARSE_EXACT_TOTAL", 100)
    with store._read() as conn:
        big, avgdl = store._workspace_size(conn, "acme")
        small, _ = store._workspace_size(conn, "other")
    # Past 100 counted rows, the statistics' estimate (exact after ANALYZE of a small
    # table); under it, the exact count.
    assert (big, small) == (300, 50)
    assert avgdl == pytest.approx(2.0)


@pytest.mark.parametrize(
    ("rows", "floor"),
    [(0, 40), (16_000, 40), (50_000, 71), (100_000, 100), (400_000, 200), (10**7, 200)],
)
def test_the_ef_search_floor_grows_with_the_table(rows: int, floor: int) -> None:
    from episodic.store.postgres.search import ef_floor_for

    assert ef_floor_for(rows) == floor


def test_dense_searches_run_with_the_floor_for_the_tables_size(
    indexed_store: PostgresStore, pg_url: str
) -> None:
    seen: list[Any] = []
    indexed_store._tracer = lambda sql, params: seen.append((sql, params))
    query = unit_rows(1, 7)[0]
    indexed_store.search_dense(ScopeFilter("acme"), query, 5)
    assert ("40",) in [p for _, p in seen]
    # The catalog says a million vectors (as after ANALYZE of a large table): the floor
    # rises once the cached size expires; a pinned floor wins over both.
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("UPDATE pg_class SET reltuples = 1e6 WHERE oid = 'memory_vectors'::regclass")
    indexed_store._ef_floor_cache = None
    seen.clear()
    indexed_store.search_dense(ScopeFilter("acme"), query, 5)
    assert ("200",) in [p for _, p in seen]
    indexed_store.ef_search_floor = 64
    seen.clear()
    indexed_store.search_dense_many(ScopeFilter("acme"), unit_rows(2, 8), 5)
    assert [p for _, p in seen].count(("64",)) == 2
