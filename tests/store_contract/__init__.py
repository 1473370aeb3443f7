"""The Store contract, written only against the ``Store`` protocol and organised by the
protocol's areas: ``writes``, ``search``, ``vectors``, ``upkeep``, ``service``,
``journal`` and ``decisions`` (undoing a supersession), one module each.

A backend's test module binds it by subclassing ``StoreContract`` (as ``Test...``) and
supplying a ``store`` fixture that yields a fresh, empty store. Dense tests use small
hand-made unit vectors, so no embedding model is involved.
"""

from __future__ import annotations

from episodic.model import Scope, ScopeFilter
from episodic.store.base import Store
from store_contract.decisions import DecisionsContract
from store_contract.helpers import (
    DIM,
    MODEL,
    T0,
    axis,
    dense_ids,
    event,
    memory_of,
    remember,
    sparse_ids,
    vec,
)
from store_contract.journal import JournalContract
from store_contract.passages import PassagesContract
from store_contract.search import SearchContract
from store_contract.service import ServiceContract
from store_contract.upkeep import UpkeepContract
from store_contract.vectors import VectorsContract
from store_contract.writes import WritesContract


class StoreContract(
    WritesContract,
    SearchContract,
    VectorsContract,
    PassagesContract,
    UpkeepContract,
    ServiceContract,
    JournalContract,
    DecisionsContract,
):
    """Behaviour every Store backend must show. Needs a ``store`` fixture. Here: what
    spans the areas (workspace isolation on every read) and the store as a whole."""

    # -- workspace isolation ----------------------------------------------------------
    def test_another_workspace_is_invisible_to_every_read(self, store: Store) -> None:
        mine = event("mine", "acme", summary="checkout latency regression", agent="a")
        theirs = event(
            "theirs",
            "orbit",
            summary="checkout OOM in the orbit sandbox",
            agent="a",
            crew="c",
        )
        remember(store, mine, theirs, base=0.9)
        store.put_vectors(MODEL, DIM, [("mine", vec(0, 1)), ("theirs", vec(1, 0))])
        query = vec(1, 0)  # exactly the other workspace's vector
        for flt in (
            ScopeFilter("acme"),
            ScopeFilter("acme", agent_id="a"),
            ScopeFilter("acme", Scope.OWN, agent_id="a"),
            ScopeFilter("acme", Scope.CREW_SHARED, agent_id="a", crew_id="c"),
            ScopeFilter("acme", Scope.CREW_SHARED, crew_id="c"),
        ):
            assert "theirs" not in dense_ids(store, flt, query)
            assert "theirs" not in sparse_ids(store, flt, "checkout OOM orbit sandbox")
        assert dense_ids(store, ScopeFilter("acme"), query) == ["mine"]
        assert sparse_ids(store, ScopeFilter("acme"), "checkout OOM orbit sandbox") == ["mine"]
        assert store.get_memories("acme", ["theirs"]) == []
        assert store.get_events("acme", ["theirs"]) == []
        assert dense_ids(store, ScopeFilter("orbit"), query) == ["theirs"]

    def test_mark_referenced_ignores_another_workspaces_ids(self, store: Store) -> None:
        remember(store, event("theirs", "orbit"))
        store.mark_referenced("acme", ["theirs"], T0)
        assert store.get_memory("orbit", "theirs").reference_count == 0

    # -- the store as a whole ------------------------------------------------------------
    def test_stats_per_workspace(self, store: Store) -> None:
        remember(store, event("a1"), event("a2"))
        store.append([event("a3")], [])
        remember(store, event("o1", "orbit"))
        store.put_vectors(MODEL, DIM, [("a1", axis(0)), ("o1", axis(1))])
        acme = store.stats("acme")
        assert (acme.events, acme.memories, acme.vectors, acme.pending_vectors) == (3, 2, 1, 1)
        assert (acme.vector_model, acme.vector_dim) == (MODEL, DIM)
        whole = store.stats()
        assert (whole.events, whole.memories, whole.vectors, whole.pending_vectors) == (4, 3, 2, 1)
        assert whole.schema_version == store.schema_version() >= 1

    def test_meta_describes_the_backend(self, store: Store) -> None:
        meta = store.meta()
        assert "journal_mode" in meta and "path" in meta


__all__ = [
    "DIM",
    "MODEL",
    "T0",
    "StoreContract",
    "axis",
    "dense_ids",
    "event",
    "memory_of",
    "remember",
    "sparse_ids",
    "vec",
]
