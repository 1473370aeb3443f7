"""SqliteStore.search_sparse in its budgeted mode: stopwords, term planning, windows.

The corpora are small, so the tests shrink the store's budgets to make the planning and the
windows bite; the rules are the same at any size. "stopwords" mode (every match scored
exactly, stopwords left out) is the reference where the budgeted answer must be exact.
"""

from __future__ import annotations

from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest

from episodic.model import MemoryStatus, Scope, ScopeFilter
from episodic.scoring.fts import bm25_term_ceiling
from episodic.store import SqliteStore
from episodic.store import sqlite as sqlite_module
from store_contract import event, memory_of, remember, sparse_ids

ACME = ScopeFilter("acme")
OWN_A = ScopeFilter("acme", Scope.OWN, agent_id="a")


@pytest.fixture
def store() -> Iterator[SqliteStore]:
    s = SqliteStore(":memory:")
    yield s
    s.close()


def small_budgets(store: SqliteStore, *, rare: int = 3, window: int = 4, scan: int = 8) -> None:
    store.sparse_rare_budget = rare
    store.sparse_window = window
    store.sparse_scan = scan


def exact_ids(store: SqliteStore, flt: ScopeFilter, text: str, limit: int = 50) -> list[str]:
    store.sparse_mode = "stopwords"
    try:
        return sparse_ids(store, flt, text, limit)
    finally:
        store.sparse_mode = "budgeted"


def fill(store: SqliteStore, prefix: str, n: int, summary: str, **fields: Any) -> None:
    remember(
        store, *(event(f"{prefix}{i}", summary=summary.format(i=i), **fields) for i in range(n))
    )


class Traced:
    """The MATCH expressions a store ran, in order."""

    def __init__(self) -> None:
        self.matches: list[str] = []

    def __call__(self, sql: str, params: Any) -> None:
        if "MATCH" in sql:
            self.matches.extend(p for p in params if isinstance(p, str) and '"' in p)


# -- stopwords ---------------------------------------------------------------------------
def test_stopwords_do_not_rank(store: SqliteStore) -> None:
    remember(
        store,
        event("the", summary="the the the in the of the"),
        event("hit", summary="checkout deploy failed after a long retry storm in staging"),
    )
    assert sparse_ids(store, ACME, "the checkout") == ["hit"]
    store.sparse_mode = "seed"
    assert sparse_ids(store, ACME, "the checkout") == ["the", "hit"]


# -- term planning -------------------------------------------------------------------------
def test_a_rare_terms_memory_ranks_first_and_common_ones_fill(store: SqliteStore) -> None:
    fill(store, "d", 40, "deploy rollback note {i}")
    remember(store, event("rare", summary="deploy zebrafish"))
    small_budgets(store)
    got = sparse_ids(store, ACME, "deploy zebrafish", limit=5)
    assert got[0] == "rare" == exact_ids(store, ACME, "deploy zebrafish")[0]
    # "deploy" is in every memory, so it is dropped while "zebrafish" remains; the memories
    # it matches still fill the answer up to the limit.
    assert len(got) == 5 and len(set(got)) == 5


def test_a_query_of_only_common_words_still_finds_memories(store: SqliteStore) -> None:
    fill(store, "d", 30, "deploy rollback {i}")
    small_budgets(store)
    got = store.search_sparse(ACME, "deploy rollback", 5)
    assert len(got) == 5
    assert all(c.score > 0 for c in got)
    assert [c.rank for c in got] == [1, 2, 3, 4, 5]


def test_within_budget_the_answer_is_exact(store: SqliteStore) -> None:
    words = ["alpha", "beta", "gamma", "delta", "kappa", "omega", "sigma", "theta"]
    for i in range(60):
        text = " ".join(words[(i * k) % len(words)] for k in (1, 3, 5, 7)[: 1 + i % 4])
        remember(store, event(f"m{i:02d}", summary=f"{text} note{i}"))
    for query in ("alpha beta", "gamma delta kappa", "omega", "sigma the theta", "note7 alpha"):
        assert sparse_ids(store, ACME, query, 10) == exact_ids(store, ACME, query, 10), query


def test_rare_memories_outside_any_window_are_found(store: SqliteStore) -> None:
    remember(store, event("old", summary="zebrafish deploy canary"))
    fill(store, "d", 30, "deploy canary {i}")
    fill(store, "x", 60, "unrelated words {i}")
    small_budgets(store, window=3, scan=3)
    assert sparse_ids(store, ACME, "zebrafish deploy canary", 5)[0] == "old"


def test_when_no_memory_can_catch_up_only_rare_terms_are_searched(store: SqliteStore) -> None:
    # Short memories full of the rare word, with both common words: no memory without
    # "zeta" can reach the third of them, so neither window runs and the answer is exact.
    remember(store, *(event(f"z{i}", summary="zeta zeta alpha beta") for i in range(3)))
    fill(store, "a", 15, "alpha beta with a much longer tail of other words {i}")
    fill(store, "x", 80, "unrelated filler {i}")
    traced = Traced()
    store._tracer = traced
    small_budgets(store)
    got = store.search_sparse(ACME, "zeta alpha beta", 3)
    total = 3 + 15 + 80
    assert got[-1].score >= sum(bm25_term_ceiling(18, total) for _ in ("alpha", "beta"))
    assert [c.memory_id for c in got] == exact_ids(store, ACME, "zeta alpha beta", 3)
    assert not any(" AND " in m and "zeta" not in m for m in traced.matches)


def test_a_word_the_index_holds_matches_its_inflections_not_longer_words(
    store: SqliteStore,
) -> None:
    remember(
        store,
        event("cat", summary="the cat slept"),
        event("cats", summary="two cats played"),
        event("catalog", summary="catalog service restarted"),
    )
    assert sorted(sparse_ids(store, ACME, "cat", 5)) == ["cat", "cats"]
    assert sorted(exact_ids(store, ACME, "cat", 5)) == ["cat", "catalog", "cats"]  # seed rule


def test_a_word_the_index_lacks_is_searched_as_a_prefix(store: SqliteStore) -> None:
    remember(store, event("auth", summary="authentication failed for the billing api"))
    remember(store, event("other", summary="billing api latency"))
    assert sparse_ids(store, ACME, "auth", 5) == ["auth"]
    assert sparse_ids(store, ACME, "auth billing", 5)[0] == "auth"


def test_a_common_whole_word_is_searched_without_its_prefix(store: SqliteStore) -> None:
    fill(store, "d", 10, "deploy step {i}")
    fill(store, "x", 50, "unrelated filler {i}")
    remember(store, event("rare", summary="zebrafish"))
    traced = Traced()
    store._tracer = traced
    small_budgets(store)
    got = sparse_ids(store, ACME, "deploy zebrafish", 5)
    assert got[0] == "rare" and all(memory_id.startswith("d") for memory_id in got[1:])
    assert '"deploy"' in traced.matches  # the whole word, no star


def test_a_common_prefix_keeps_its_prefix(store: SqliteStore) -> None:
    # "kvx12" is no word of its own: searched whole, it would match nothing.
    fill(store, "k", 10, "kvx12a{i} step")
    fill(store, "x", 50, "unrelated filler {i}")
    remember(store, event("rare", summary="zebrafish"))
    small_budgets(store)
    got = sparse_ids(store, ACME, "kvx12 zebrafish", 5)
    assert got[0] == "rare" and len(got) == 5
    assert all(memory_id.startswith("k") for memory_id in got[1:])


def test_document_counts_a_few_seconds_old_never_hide_new_memories(
    store: SqliteStore,
) -> None:
    fill(store, "d", 30, "deploy rollback {i}")
    small_budgets(store)
    assert "fresh" not in sparse_ids(store, ACME, "zebrafish deploy", 5)  # counted: 0
    remember(store, event("fresh", summary="zebrafish"))
    assert sparse_ids(store, ACME, "zebrafish deploy", 5)[0] == "fresh"


# -- windows ---------------------------------------------------------------------------
def test_a_common_word_is_ranked_among_its_newest_matches(store: SqliteStore) -> None:
    fill(store, "d", 12, "deploy {i}")
    small_budgets(store, window=3, scan=100)
    got = sparse_ids(store, ACME, "deploy", 2)
    assert len(got) == 2 and set(got) <= {"d9", "d10", "d11"}


def test_retired_memories_take_no_place_in_a_window(store: SqliteStore) -> None:
    fill(store, "live", 3, "deploy {i}")
    events = [event(f"gone{i}", summary=f"deploy {i}") for i in range(5)]
    store.append(events, [memory_of(e, status=MemoryStatus.RETIRED) for e in events])
    small_budgets(store, window=2, scan=2)
    assert set(sparse_ids(store, ACME, "deploy", 5)) == {"live0", "live1", "live2"}


def test_an_own_scope_search_looks_further_back_when_it_found_too_little(
    store: SqliteStore,
) -> None:
    fill(store, "mine", 2, "deploy canary {i}", agent="a")
    fill(store, "peer", 40, "deploy canary {i}", agent="b")
    small_budgets(store, window=3, scan=4)
    assert set(sparse_ids(store, OWN_A, "deploy", 5)) == {"mine0", "mine1"}
    assert set(sparse_ids(store, OWN_A, "deploy canary", 5)) == {"mine0", "mine1"}


@pytest.mark.parametrize(
    "flt", [ACME, OWN_A, ScopeFilter("acme", Scope.CREW_SHARED, agent_id="a", crew_id="c")]
)
@pytest.mark.parametrize("query", ["deploy", "deploy incident", "zebrafish deploy incident"])
def test_another_workspaces_matches_do_not_crowd_this_ones_out(
    store: SqliteStore, flt: ScopeFilter, query: str
) -> None:
    # Acme's few matches are older than orbit's many, which fill every first window and
    # scan. Orbit's rows also change the table-wide statistics (so which terms are kept,
    # as they change bm25's idf for seed 000): the reference is the same search with
    # windows too wide to bite, on the same table.
    remember(
        store,
        event("a0", summary="deploy incident", agent="a", crew="c"),
        event("a1", summary="deploy incident in staging", agent="a"),
        event("a2", summary="deploy", agent="a", crew="c"),
        event("a3", summary="zebrafish incident", agent="a"),
        event("a4", summary="incident deploy deploy", agent="a", crew="c"),
    )
    alone = sparse_ids(store, flt, query, 10)
    assert alone == exact_ids(store, flt, query, 10)
    fill(store, "o", 200, "deploy incident {i}", ws="orbit", agent="a", crew="c")
    store._sparse_counts = None
    small_budgets(store, rare=2, window=3, scan=5)
    crowded = sparse_ids(store, flt, query, 10)
    store.sparse_window = store.sparse_scan = 1_000_000
    assert crowded == sparse_ids(store, flt, query, 10)
    assert set(crowded) == set(alone)  # every one of acme's matches, nothing of orbit's
    assert sparse_ids(store, ScopeFilter("orbit"), query, 10)[0].startswith("o")


def test_document_counts_are_cached_for_a_few_seconds(
    store: SqliteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    fill(store, "d", 30, "deploy rollback {i}")
    now = [1000.0]
    clock = SimpleNamespace(monotonic=lambda: now[0])
    monkeypatch.setattr("episodic.store.sqlite.sparse.time", clock)  # this module's clock only
    counted: list[Any] = []
    store._tracer = lambda sql, params: counted.extend(params) if "count(*)" in sql else None
    sparse_ids(store, ACME, "zebrafish deploy")
    assert '"zebrafish"*' in counted
    counted.clear()
    now[0] += sqlite_module.DOC_COUNT_TTL_S - 0.5
    sparse_ids(store, ACME, "zebrafish deploy")
    assert counted == []
    now[0] += 1.0
    sparse_ids(store, ACME, "zebrafish deploy")
    assert '"zebrafish"*' in counted


def test_a_window_scores_only_this_workspaces_rows(store: SqliteStore) -> None:
    # Orbit's matches are newer than acme's and far more: the window's scan counts them
    # (its bounds are the whole table's), but scoring reads acme's rowids alone.
    fill(store, "a", 6, "deploy incident {i}")
    fill(store, "o", 60, "deploy incident {i}", ws="orbit")
    small_budgets(store, rare=1, window=3, scan=5)
    first, last = store._execute(
        "SELECT min(seq), max(seq) FROM memories WHERE workspace_id = 'acme'"
    ).fetchone()
    windows: list[tuple[Any, ...]] = []
    store._tracer = lambda sql, params: windows.append(tuple(params)) if "bound" in sql else None
    got = sparse_ids(store, ACME, "deploy incident", 4)
    assert windows
    for params in windows:
        below, lowest = params[7], params[8]  # the scoring's rowid bounds
        assert lowest >= first and below <= last + 1
    assert got == ["a2", "a3", "a4", "a5"]  # acme's newest, as the window reads them


def test_the_weight_of_derived_keys_is_the_stores_to_set(store: SqliteStore) -> None:
    # benchmarks/bench_reask.py --keys-weight sweeps it on one database through this seam.
    remember(store, event("keyed", summary="a timetable note"), keys="ferry harbour")
    remember(store, event("said", summary="the ferry leaves the harbour at noon"))
    # Most memories hold neither word, so both weigh something (bm25's idf).
    fill(store, "other", 6, "the garden kettle number {i}")

    def keyed_score() -> float:
        found = {c.memory_id: c.score for c in store.search_sparse(ACME, "ferry harbour", 5)}
        return found["keyed"]

    assert store.keys_weight == 0.1  # BM25_KEYS_WEIGHT
    default = keyed_score()
    store.keys_weight = 1.0
    heavier = keyed_score()
    store.keys_weight = 0.0
    assert abs(keyed_score()) < 1e-6 < default < heavier


# -- the rare terms in one statement ----------------------------------------------------------
def rare_and_common(store: SqliteStore) -> None:
    """Memories of the rare word alone, with common words of the query, of common words
    alone, and others: the budget makes "zebrafish" rare and "deploy", "canary" common."""
    remember(store, event("rare", summary="zebrafish zebrafish"))
    remember(store, event("both", summary="zebrafish deploy canary"))
    remember(store, event("one", summary="zebrafish deploy and a long tail of other words"))
    fill(store, "c", 12, "deploy canary note {i} with a longer tail of other words")
    fill(store, "x", 80, "unrelated filler {i}")
    small_budgets(store, rare=3, window=50, scan=100)


def test_rare_terms_scored_in_one_statement_answer_as_two(store: SqliteStore) -> None:
    # One statement scores the rare word's memories with every kept word; the two it
    # replaces (the rare word alone, then with the common words) give the same memories,
    # each at its better score: the same answer, score for score.
    rare_and_common(store)
    traced = Traced()
    store._tracer = traced
    one = [(c.memory_id, c.score) for c in store.search_sparse(ACME, "zebrafish deploy canary", 6)]
    assert '"zebrafish" OR "deploy" OR "canary"' in traced.matches
    assert not any(") AND (" in m for m in traced.matches)
    store.sparse_one_pass_rows = 0
    traced.matches.clear()
    two = [(c.memory_id, c.score) for c in store.search_sparse(ACME, "zebrafish deploy canary", 6)]
    assert '("zebrafish") AND ("deploy" OR "canary")' in traced.matches
    assert one == two
    assert {"both", "one", "rare"} <= set(dict(one))


def test_a_wide_workspace_scores_its_rare_terms_in_two_statements(store: SqliteStore) -> None:
    # Past the bound, walking every match of the common words in the workspace's rows
    # would cost more than FTS5's AND skipping through them: the two statements run.
    rare_and_common(store)
    store.sparse_one_pass_rows = 10
    traced = Traced()
    store._tracer = traced
    got = store.search_sparse(ACME, "zebrafish deploy canary", 6)
    assert '("zebrafish") AND ("deploy" OR "canary")' in traced.matches
    ids = [c.memory_id for c in got]
    assert {"both", "one", "rare"} <= set(ids)
