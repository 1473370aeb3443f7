"""The contract of ``VectorStore``: stored vectors of one model, and the embedding cache."""

from __future__ import annotations

import numpy as np
import pytest

from episodic.errors import BadEmbedding, ModelMismatch
from episodic.model import ScopeFilter
from episodic.store.base import Store, Vector
from store_contract.helpers import (
    DIM,
    MODEL,
    axis,
    dense_ids,
    event,
    f32,
    remember,
)


class VectorsContract:
    """Vectors in and out, one model and dimension per store; the cache by text hash."""

    # -- vectors -----------------------------------------------------------------------------
    def test_pending_vectors_shrink_as_vectors_are_put(self, store: Store) -> None:
        remember(store, *[event(f"m{i}", minutes=i) for i in range(5)])
        assert [p.memory_id for p in store.pending_vectors(3)] == ["m0", "m1", "m2"]
        pending = store.pending_vectors(10)
        assert [(p.workspace_id, p.content) for p in pending][:1] == [("acme", "event m0")]
        assert store.put_vectors(MODEL, DIM, [("m1", axis(1)), ("m3", axis(3))]) == 2
        assert [p.memory_id for p in store.pending_vectors(10)] == ["m0", "m2", "m4"]
        assert store.stats().pending_vectors == 3
        store.put_vectors(MODEL, DIM, [(f"m{i}", axis(i)) for i in (0, 2, 4)])
        assert store.pending_vectors(10) == []
        assert store.pending_vectors(0) == []

    def test_put_vectors_skips_unknown_memories(self, store: Store) -> None:
        remember(store, event("m1"))
        assert store.put_vectors(MODEL, DIM, [("m1", axis(0)), ("ghost", axis(1))]) == 1
        assert store.stats().vectors == 1

    def test_vectors_of_another_model_or_dim_are_refused(self, store: Store) -> None:
        remember(store, event("m1"), event("m2"))
        store.put_vectors(MODEL, DIM, [("m1", axis(0))])
        with pytest.raises(ModelMismatch) as info:
            store.put_vectors("other-model", DIM, [("m2", axis(1))])
        assert (info.value.stored, info.value.current) == (MODEL, "other-model")
        with pytest.raises(ModelMismatch) as info:
            store.put_vectors(MODEL, 4, [("m2", f32([0.5, 0.5, 0.5, 0.5]))])
        assert (info.value.stored_dim, info.value.current_dim) == (DIM, 4)
        assert store.vector_model() == (MODEL, DIM)
        assert [p.memory_id for p in store.pending_vectors(10)] == ["m2"]

    @pytest.mark.parametrize(
        "bad",
        [
            np.ones(DIM - 1, np.float32),
            np.zeros(DIM, np.float32),
            np.full(DIM, np.nan, np.float32),
            np.ones((2, DIM), np.float32),
        ],
        ids=["short", "zero", "nan", "matrix"],
    )
    def test_malformed_vectors_are_refused(self, store: Store, bad: Vector) -> None:
        remember(store, event("m1"))
        with pytest.raises(BadEmbedding):
            store.put_vectors(MODEL, DIM, [("m1", bad)])
        assert store.stats().vectors == 0

    def test_clear_vectors_makes_everything_pending_again(self, store: Store) -> None:
        remember(store, event("m1"), event("m2"))
        store.put_vectors(MODEL, DIM, [("m1", axis(0)), ("m2", axis(1))])
        assert dense_ids(store, ScopeFilter("acme"), axis(0)) == ["m1", "m2"]
        assert store.clear_vectors() == 2
        assert store.vector_model() is None
        assert [p.memory_id for p in store.pending_vectors(10)] == ["m1", "m2"]
        assert store.search_dense(ScopeFilter("acme"), axis(0), 5) == []
        # A cleared store takes a new model: this is the reindex path.
        store.put_vectors("new-model", 4, [("m2", np.array([0, 0, 0, 1], np.float32))])
        assert store.vector_model() == ("new-model", 4)
        hits = store.search_dense(ScopeFilter("acme"), np.array([0, 0, 0, 1], np.float32), 5)
        assert [c.memory_id for c in hits] == ["m2"]

    def test_unnormalised_vectors_are_stored_as_unit_vectors(self, store: Store) -> None:
        remember(store, event("m1"))
        store.put_vectors(MODEL, DIM, [("m1", axis(0) * 7.0)])
        (hit,) = store.search_dense(ScopeFilter("acme"), axis(0) * 0.5, 5)
        assert hit.score == pytest.approx(1.0, abs=1e-6)

    def test_get_vectors_stays_in_the_workspace(self, store: Store) -> None:
        remember(store, event("m1"), event("m2"), event("x", "beta"))
        store.put_vectors(MODEL, DIM, [("m1", axis(0)), ("x", axis(1))])
        got = store.get_vectors("acme", ["m1", "m2", "x"])
        assert list(got) == ["m1"] and np.allclose(got["m1"], axis(0))

    # -- embedding cache ---------------------------------------------------------------------
    def test_cache_round_trip_is_keyed_by_model(self, store: Store) -> None:
        v = f32(np.arange(DIM) / 10)
        store.cache_put(MODEL, {"h1": v, "h2": f32(v * 2)})
        got = store.cache_get(MODEL, ["h1", "h2", "unknown"])
        assert set(got) == {"h1", "h2"}
        assert got["h1"].dtype == np.float32
        np.testing.assert_array_equal(got["h2"], v * 2)
        assert store.cache_get("other-model", ["h1"]) == {}
        store.cache_put("other-model", {"h1": f32(v[:4])})
        np.testing.assert_array_equal(store.cache_get("other-model", ["h1"])["h1"], v[:4])
        np.testing.assert_array_equal(store.cache_get(MODEL, ["h1"])["h1"], v)
        assert store.cache_get(MODEL, []) == {}
