"""The contract of ``SearchStore``: every leg a recall runs, and what it writes back."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import numpy as np
import pytest

from episodic.errors import InvalidInput, ModelMismatch, NotFound
from episodic.model import MemoryStatus, Scope, ScopeFilter
from episodic.store.base import Relation, Store
from store_contract.helpers import (
    DIM,
    MODEL,
    SCOPE_CASES,
    SCOPE_ROWS,
    T0,
    axis,
    dense_ids,
    event,
    memory_of,
    remember,
    sparse_ids,
    vec,
)


class SearchContract:
    """The dense, sparse and recent legs under every scope, neighbours, relations and references."""

    # -- scopes ------------------------------------------------------------------------------
    def _seed_scopes(self, store: Store) -> None:
        events, memories, vectors = [], [], []
        for i, (name, row) in enumerate(SCOPE_ROWS.items()):
            fields = {k: v for k, v in row.items() if k != "base"}
            e = event(name, summary=f"deploy incident {name}", minutes=i, **fields)
            events.append(e)
            memories.append(memory_of(e, base=row["base"]))
            vectors.append((name, vec(1.0, 0.1 * (i + 1))))
        store.append(events, memories)
        store.put_vectors(MODEL, DIM, vectors)

    @pytest.mark.parametrize(
        ("case", "flt", "expected"), SCOPE_CASES, ids=[c[0] for c in SCOPE_CASES]
    )
    def test_scope_rules_hold_on_both_legs(
        self, store: Store, case: str, flt: ScopeFilter, expected: set[str]
    ) -> None:
        self._seed_scopes(store)
        dense = dense_ids(store, flt, vec(1.0, 0.0))
        sparse = sparse_ids(store, flt, "deploy incident")
        assert set(dense) == expected, f"dense leg, {case}"
        assert set(sparse) == expected, f"sparse leg, {case}"
        assert len(dense) == len(set(dense)) and len(sparse) == len(set(sparse))

    @pytest.mark.parametrize(
        ("flt", "field"),
        [
            (ScopeFilter("acme", Scope.OWN), "agent"),
            (ScopeFilter("acme", Scope.OWN, crew_id="c1"), "agent"),
            (ScopeFilter("acme", Scope.CREW_SHARED, agent_id="a1"), "crew"),
            (ScopeFilter(""), "workspace"),
        ],
    )
    def test_a_scope_without_its_id_is_refused(
        self, store: Store, flt: ScopeFilter, field: str
    ) -> None:
        self._seed_scopes(store)
        with pytest.raises(InvalidInput) as dense:
            store.search_dense(flt, vec(1.0), 5)
        with pytest.raises(InvalidInput) as sparse:
            store.search_sparse(flt, "deploy", 5)
        assert dense.value.field == sparse.value.field == field

    def test_retired_and_compacted_memories_are_not_recalled(self, store: Store) -> None:
        events = [event(n, summary=f"deploy rollback {n}") for n in ("live", "old", "merged")]
        store.append(
            events,
            [
                memory_of(events[0]),
                memory_of(events[1], status=MemoryStatus.RETIRED),
                memory_of(events[2], status=MemoryStatus.COMPACTED),
            ],
        )
        assert [p.memory_id for p in store.pending_vectors(10)] == ["live"]
        store.put_vectors(
            MODEL, DIM, [("live", vec(0, 1)), ("old", vec(1, 0)), ("merged", vec(1, 0.01))]
        )
        assert dense_ids(store, ScopeFilter("acme"), vec(1, 0)) == ["live"]
        assert sparse_ids(store, ScopeFilter("acme"), "deploy rollback") == ["live"]
        assert store.stats().active_memories == 1
        assert store.get_memory("acme", "old").status is MemoryStatus.RETIRED

    def test_types_narrow_every_leg(self, store: Store) -> None:
        a, b = event("a", summary="deploy failed"), event("b", summary="deploy failed too")
        store.append([a, b], [memory_of(a), memory_of(b, type="episode")])
        store.put_vectors(MODEL, DIM, [("a", axis(0)), ("b", axis(0))])
        episodes = ScopeFilter("acme", types=("episode",))
        assert dense_ids(store, episodes, axis(0)) == ["b"]
        assert sparse_ids(store, episodes, "deploy") == ["b"]
        assert [c.memory_id for c in store.search_recent(episodes, 5)] == ["b"]
        nothing = ScopeFilter("acme", types=())
        assert (
            dense_ids(store, nothing, axis(0)) == [] and sparse_ids(store, nothing, "deploy") == []
        )

    # -- dense search ------------------------------------------------------------------------
    def test_dense_ranks_by_cosine_best_first(self, store: Store) -> None:
        remember(store, *[event(f"m{i}") for i in range(4)])
        store.put_vectors(
            MODEL,
            DIM,
            [
                ("m0", vec(0, 1)),
                ("m1", vec(1, 0)),
                ("m2", vec(1, 1)),
                ("m3", vec(-1, 0)),
            ],
        )
        got = store.search_dense(ScopeFilter("acme"), vec(1, 0), 3)
        assert [(c.memory_id, c.rank) for c in got] == [("m1", 1), ("m2", 2), ("m0", 3)]
        assert [c.score for c in got] == pytest.approx([1.0, 2**-0.5, 0.0], abs=1e-6)
        assert store.search_dense(ScopeFilter("acme"), vec(1, 0), 0) == []
        assert len(store.search_dense(ScopeFilter("acme"), vec(1, 0), 100)) == 4

    def test_dense_sees_this_stores_writes_at_once(self, store: Store) -> None:
        remember(store, event("m1"), event("m2"))
        flt = ScopeFilter("acme")
        assert store.search_dense(flt, axis(0), 5) == []
        store.put_vectors(MODEL, DIM, [("m1", axis(1))])
        assert dense_ids(store, flt, axis(0)) == ["m1"]
        store.put_vectors(MODEL, DIM, [("m2", axis(0))])
        assert dense_ids(store, flt, axis(0)) == ["m2", "m1"]
        # Re-embedding a memory replaces its vector rather than adding a second one.
        store.put_vectors(MODEL, DIM, [("m1", axis(0)), ("m2", axis(2))])
        assert dense_ids(store, flt, axis(0)) == ["m1", "m2"]
        assert store.stats().vectors == 2
        # New memories in the same workspace, vectors put after a search: still seen.
        remember(store, event("m3"))
        store.put_vectors(MODEL, DIM, [("m3", vec(1, 0.1))])
        assert dense_ids(store, flt, axis(0)) == ["m1", "m3", "m2"]

    def test_dense_top_k_matches_brute_force_under_every_filter(self, store: Store) -> None:
        rng = np.random.default_rng(11)
        n, batches = 1500, 4  # loaded in several steps, so the index grows incrementally
        vectors = rng.standard_normal((n, DIM)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        rows: list[dict[str, Any]] = [
            {
                "agent": f"a{rng.integers(4)}",
                "crew": f"c{rng.integers(2)}",
                "resource": f"r{rng.integers(3)}" if rng.random() < 0.5 else None,
                "base": float(rng.choice([0.5, 0.55, 0.6, 0.9])),
            }
            for _ in range(n)
        ]
        events = [
            event(f"m{i:04d}", **{k: v for k, v in row.items() if k != "base"})
            for i, row in enumerate(rows)
        ]
        memories = [memory_of(e, base=row["base"]) for e, row in zip(events, rows, strict=True)]
        step = n // batches
        query = vectors[0] + 0.5 * vectors[1]
        for start in range(0, n, step):
            store.append(events[start : start + step], memories[start : start + step])
            store.put_vectors(
                MODEL, DIM, [(events[i].id, vectors[i]) for i in range(start, min(n, start + step))]
            )
            store.search_dense(ScopeFilter("acme"), query, 1)

        def visible(row: dict[str, Any], flt: ScopeFilter) -> bool:
            own = row["agent"] == flt.agent_id
            shared = row["crew"] == flt.crew_id and row["base"] >= 0.55
            if flt.scope is Scope.OWN:
                ok = own
            elif flt.scope is Scope.CREW_SHARED:
                ok = (own or shared) if flt.agent_id else shared
            else:
                ok = flt.agent_id in (None, row["agent"])
                ok = ok and flt.crew_id in (None, row["crew"])
            return ok and flt.resource_id in (None, row["resource"])

        cosines = vectors @ (query / np.linalg.norm(query))
        for flt in (
            ScopeFilter("acme"),
            ScopeFilter("acme", Scope.OWN, agent_id="a1"),
            ScopeFilter("acme", Scope.CREW_SHARED, agent_id="a2", crew_id="c0"),
            ScopeFilter("acme", Scope.CREW_SHARED, crew_id="c1", resource_id="r2"),
            ScopeFilter("acme", agent_id="a3", crew_id="c1"),
        ):
            ok = [i for i in range(n) if visible(rows[i], flt)]
            best = sorted(ok, key=lambda i: -cosines[i])[:25]
            got = store.search_dense(flt, query, 25)
            assert [c.memory_id for c in got] == [events[i].id for i in best], flt
            assert [c.score for c in got] == pytest.approx([cosines[i] for i in best], abs=1e-5)

    def test_dense_query_of_another_dimension_is_a_model_mismatch(self, store: Store) -> None:
        remember(store, event("m1"))
        store.put_vectors(MODEL, DIM, [("m1", axis(0))])
        with pytest.raises(ModelMismatch):
            store.search_dense(ScopeFilter("acme"), np.ones(DIM * 2, np.float32), 5)

    # -- sparse search -----------------------------------------------------------------------
    def test_sparse_ranks_by_bm25_best_first(self, store: Store) -> None:
        remember(
            store,
            event("both", summary="checkout OOM after cache TTL change"),
            event("one", summary="checkout page redesign shipped"),
            event("none", summary="payment gateway flaky test"),
        )
        got = store.search_sparse(ScopeFilter("acme"), "checkout OOM", 10)
        assert [c.memory_id for c in got] == ["both", "one"]
        assert [c.rank for c in got] == [1, 2]
        assert got[0].score > got[1].score > 0
        assert len(store.search_sparse(ScopeFilter("acme"), "checkout", 1)) == 1
        assert store.search_sparse(ScopeFilter("acme"), "checkout", 0) == []

    def test_sparse_searches_the_payload_too(self, store: Store) -> None:
        e = event("m1", summary="keeper decision", payload={"reason": "quarantined artefact"})
        remember(store, e)
        assert sparse_ids(store, ScopeFilter("acme"), "quarantined") == ["m1"]

    @pytest.mark.parametrize(
        ("content", "query"),
        [
            ("rollout 🚀 went sideways 🔥", "🚀 rollout"),
            ('the keeper said "NEAR(deploy)" AND -x', '"NEAR(deploy)" AND -x'),
            ("it's O'Brien's runbook", "O'Brien's"),
            ("Zürich café outage", "zurich CAFE"),
            ("数据库错误 in 结算 service", "数据库错误"),
            ("column:value style text", "column:value"),
        ],
    )
    def test_sparse_copes_with_unicode_emoji_and_quotes(
        self, store: Store, content: str, query: str
    ) -> None:
        remember(store, event("m1", summary=content), event("m2", summary="unrelated words"))
        assert sparse_ids(store, ScopeFilter("acme"), query) == ["m1"]
        assert store.get_memory("acme", "m1").content == content

    @pytest.mark.parametrize(
        "query", ["", "   ", "!!!", '"', '""', "*", "-", ":", "()", "a b c", "🚀", "— … «»"]
    )
    def test_sparse_query_of_only_punctuation_returns_nothing(
        self, store: Store, query: str
    ) -> None:
        remember(store, event("m1", summary='a b c — … «» !!! 🚀 " * - : ()'))
        assert store.search_sparse(ScopeFilter("acme"), query, 10) == []

    def test_keys_are_searched_like_content(self, store: Store) -> None:
        e = event("m1", summary="we talked about the weekend")
        store.append([e], [memory_of(e, keys="pottery class Melanie")])
        assert sparse_ids(store, ScopeFilter("acme"), "pottery") == ["m1"]

    # -- recency and the conversation around a hit -------------------------------------------
    def test_search_recent_is_newest_first_within_scope(self, store: Store) -> None:
        remember(
            store,
            event("old", minutes=0, agent="a1"),
            event("new", minutes=30, agent="a2"),
            event("mid", minutes=10, agent="a1"),
            event("other-ws", "beta", minutes=60),
        )
        ids = [c.memory_id for c in store.search_recent(ScopeFilter("acme"), 10)]
        assert ids == ["new", "mid", "old"]
        own = store.search_recent(ScopeFilter("acme", scope=Scope.OWN, agent_id="a1"), 10)
        assert [c.memory_id for c in own] == ["mid", "old"]
        assert [c.rank for c in own] == [1, 2] and own[0].score > own[1].score
        assert [c.memory_id for c in store.search_recent(ScopeFilter("acme"), 1)] == ["new"]
        window = store.search_recent(
            ScopeFilter("acme"), 10, start=T0 + timedelta(minutes=5), end=T0 + timedelta(minutes=30)
        )
        assert [c.memory_id for c in window] == ["mid"]  # start inclusive, end exclusive
        assert store.search_recent(ScopeFilter("acme"), 10, types=["note"])[0].memory_id == "new"
        assert store.search_recent(ScopeFilter("acme"), 10, types=["institutional"]) == []
        assert store.search_recent(ScopeFilter("acme"), 10, types=[]) == []

    def test_memories_and_longest_are_the_rows_and_the_workspace_longest(
        self, store: Store
    ) -> None:
        remember(
            store,
            event("a", summary="short"),
            event("b", summary="x" * 3000),
            event("c", "orbit", summary="y" * 5000),
        )
        found, longest = store.memories_and_longest("acme", ["a", "c", "ghost", "a"])
        # Another workspace's memory is neither read nor measured.
        assert [m.id for m in found] == ["a"] and found[0].content == "short"
        assert longest == 3000 == store.longest("acme")
        assert store.memories_and_longest("acme", []) == ([], 3000)
        assert store.memories_and_longest("nobody", ["a"]) == ([], 0)

    def test_neighbours_are_adjacent_turns_of_the_same_conversation(self, store: Store) -> None:
        remember(
            store,
            *[event(f"t{i}", minutes=i, conversation="c1", agent=f"a{i % 2}") for i in range(6)],
            event("x0", minutes=2.5, conversation="c2"),
            event("solo", minutes=3),
            event("t9", "beta", minutes=3, conversation="c1"),
        )
        whole = ScopeFilter("acme")
        got = store.neighbours(whole, ["t3", "solo", "ghost"], 1)
        assert got == {"t3": [("t2", -1), ("t4", 1)]}
        assert store.neighbours(whole, ["t0"], 2) == {"t0": [("t1", 1), ("t2", 2)]}
        assert store.neighbours(whole, ["t3"], 2) == {
            "t3": [("t2", -1), ("t1", -2), ("t4", 1), ("t5", 2)]
        }
        own = ScopeFilter("acme", scope=Scope.OWN, agent_id="a1")
        assert store.neighbours(own, ["t3"], 1) == {"t3": [("t1", -1), ("t5", 1)]}
        assert store.neighbours(ScopeFilter("beta"), ["t3"], 1) == {}

    def test_neighbours_are_of_the_anchors_type(self, store: Store) -> None:
        turns = [event(f"t{i}", minutes=i, conversation="c1") for i in range(3)]
        ep = event("ep", minutes=1.5, conversation="c1")
        store.append([*turns, ep], [*(memory_of(t) for t in turns), memory_of(ep, type="episode")])
        assert store.neighbours(ScopeFilter("acme"), ["t1"], 1) == {"t1": [("t0", -1), ("t2", 1)]}

    def test_conversations_of_names_each_memorys_conversation_in_the_workspace(
        self, store: Store
    ) -> None:
        remember(
            store,
            event("t1", conversation="c1"),
            event("t2", conversation="c2"),
            event("solo"),
            event("other", "beta", conversation="c1"),
        )
        got = store.conversations_of("acme", ["t1", "t2", "solo", "other", "ghost", "t1"])
        assert got == {"t1": "c1", "t2": "c2", "solo": None}
        assert store.conversations_of("beta", ["t1", "other"]) == {"other": "c1"}
        assert store.conversations_of("acme", []) == {}

    # -- relations ---------------------------------------------------------------------------
    def test_relations_are_walked_both_ways_inside_the_workspace(self, store: Store) -> None:
        remember(store, event("old"), event("new"), event("mid"), event("x", "beta"))
        edges = [Relation("new", "old", "similar", 0.91), Relation("new", "mid", "similar", 0.85)]
        assert store.add_relations("acme", edges) == 2
        store.add_relations("acme", [Relation("new", "old", "similar", 0.95)])  # re-add updates
        got = store.related(ScopeFilter("acme"), ["new", "old", "ghost"])
        assert got == {"new": [("old", 0.95), ("mid", 0.85)], "old": [("new", 0.95)]}
        assert store.related(ScopeFilter("acme"), ["new"], "supports") == {}
        assert store.related(ScopeFilter("beta"), ["new"]) == {}
        with pytest.raises(NotFound):
            store.add_relations("acme", [Relation("new", "x", "similar", 0.9)])  # x is beta's
        with pytest.raises(NotFound):
            store.add_relations("beta", [Relation("x", "old", "similar", 0.9)])

    # -- references --------------------------------------------------------------------------
    def test_mark_referenced_bumps_and_stamps(self, store: Store) -> None:
        remember(store, event("m1"), event("m2"))
        later = T0 + timedelta(days=3)
        store.mark_referenced("acme", ["m1"], T0)
        store.mark_referenced("acme", ["m1", "ghost"], later)
        m1, m2 = store.get_memories("acme", ["m1", "m2"])
        assert (m1.reference_count, m1.last_referenced_at) == (2, later)
        assert (m2.reference_count, m2.last_referenced_at) == (0, None)
        store.mark_referenced("acme", [], later)
