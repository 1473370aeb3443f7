"""The contract of passages (``VectorStore.put_passages``): a long memory's later passages
are searched beside memories' own vectors; a memory scores by its best passage, once, with
where that passage lies; passages go with the memory's vector and with the memory."""

from __future__ import annotations

from episodic.model import Scope, ScopeFilter
from episodic.store.base import Store
from episodic.store.service import ForgetSpec
from store_contract.helpers import DIM, MODEL, axis, event, remember, vec

LONG = "x" * 3000


class PassagesContract:
    def test_a_memory_scores_by_its_best_passage(self, store: Store) -> None:
        remember(store, event("long", summary=LONG), event("short", summary="short"))
        store.put_vectors(MODEL, DIM, [("long", axis(0)), ("short", vec(0.6, 0.8))])
        # Its own vector points away from the query; its second passage points at it.
        assert store.put_passages(DIM, [("long", [(800, 1800, axis(2)), (1600, 2600, axis(1))])])
        found = store.search_dense(ScopeFilter("acme"), axis(1), 5)
        assert [(c.memory_id, c.rank) for c in found] == [("long", 1), ("short", 2)]
        assert found[0].score > 0.99 and found[0].passage == (1600, 2600)
        assert found[1].passage is None  # a memory's own vector did best
        # once per memory, however many of its passages come close
        near = store.search_dense(ScopeFilter("acme"), vec(0, 1, 1), 5)
        assert sorted(c.memory_id for c in near) == ["long", "short"]

    def test_the_own_vector_wins_when_it_is_closer(self, store: Store) -> None:
        remember(store, event("long", summary=LONG))
        store.put_vectors(MODEL, DIM, [("long", axis(0))])
        store.put_passages(DIM, [("long", [(800, 1800, axis(1))])])
        (hit,) = store.search_dense(ScopeFilter("acme"), axis(0), 5)
        assert hit.passage is None and hit.score > 0.99

    def test_passages_keep_the_scope_of_their_memory(self, store: Store) -> None:
        remember(store, event("mine", summary=LONG, agent="a"), event("other", agent="b"))
        store.put_vectors(MODEL, DIM, [("mine", axis(0)), ("other", axis(3))])
        store.put_passages(DIM, [("mine", [(800, 1800, axis(1))])])
        own_b = ScopeFilter("acme", Scope.OWN, agent_id="b")
        assert [c.memory_id for c in store.search_dense(own_b, axis(1), 5)] == ["other"]
        assert store.search_dense(ScopeFilter("orbit"), axis(1), 5) == []

    def test_passages_are_replaced_and_go_with_the_vector(self, store: Store) -> None:
        remember(store, event("long", summary=LONG))
        store.put_vectors(MODEL, DIM, [("long", axis(0))])
        store.put_passages(DIM, [("long", [(800, 1800, axis(1)), (1600, 2600, axis(2))])])
        store.search_dense(ScopeFilter("acme"), axis(1), 5)  # an index may be cached
        assert store.put_passages(DIM, [("long", [(800, 1800, axis(3))])]) == 1
        (hit,) = store.search_dense(ScopeFilter("acme"), axis(2), 5)
        assert hit.passage is None  # the old second passage is gone
        assert store.search_dense(ScopeFilter("acme"), axis(3), 5)[0].passage == (800, 1800)
        store.clear_vectors()
        store.put_vectors(MODEL, DIM, [("long", axis(0))])
        (hit,) = store.search_dense(ScopeFilter("acme"), axis(3), 5)
        assert hit.passage is None  # a reindex starts without the old passages

    def test_forgetting_the_memory_forgets_its_passages(self, store: Store) -> None:
        remember(store, event("long", summary=LONG), event("keep"))
        store.put_vectors(MODEL, DIM, [("long", axis(0)), ("keep", axis(2))])
        store.put_passages(DIM, [("long", [(800, 1800, axis(1))])])
        store.search_dense(ScopeFilter("acme"), axis(1), 5)
        store.forget(ForgetSpec("acme", memory_id="long"), rekey=lambda e: "")
        found = store.search_dense(ScopeFilter("acme"), axis(1), 5)
        assert [c.memory_id for c in found] == ["keep"]
        remember(store, event("again", summary=LONG))
        store.put_vectors(MODEL, DIM, [("again", axis(0))])
        store.put_passages(DIM, [("again", [(800, 1800, axis(1))])])
        store.forget(ForgetSpec("acme"), rekey=lambda e: "")
        assert store.search_dense(ScopeFilter("acme"), axis(1), 5) == []

    def test_unknown_memories_are_skipped(self, store: Store) -> None:
        assert store.put_passages(DIM, [("ghost", [(0, 10, axis(1))])]) == 0
