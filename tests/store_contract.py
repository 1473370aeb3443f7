"""The Store contract, written only against the ``Store`` protocol.

A backend's test module binds it by subclassing ``StoreContract`` (as ``Test...``) and
supplying a ``store`` fixture that yields a fresh, empty store. Dense tests use small
hand-made unit vectors, so no embedding model is involved.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import numpy as np
import pytest

from episodic.errors import BadEmbedding, InvalidInput, ModelMismatch, NotFound
from episodic.model import Event, Memory, MemoryStatus, Scope, ScopeFilter
from episodic.store.base import AppendResult, Relation, Store, Vector

T0 = datetime(2026, 3, 1, 9, 30, 15, 123456, tzinfo=UTC)
MODEL = "unit-test-model"
DIM = 8


def vec(*components: float) -> Vector:
    """A unit vector in DIM dimensions from its leading components."""
    arr = np.zeros(DIM, dtype=np.float32)
    arr[: len(components)] = components
    out: Vector = (arr / np.linalg.norm(arr)).astype(np.float32)
    return out


def f32(values: Any) -> Vector:
    out: Vector = np.asarray(values, dtype=np.float32)
    return out


def axis(i: int) -> Vector:
    arr = np.zeros(DIM, dtype=np.float32)
    arr[i] = 1.0
    return arr


def event(
    id: str,
    ws: str = "acme",
    *,
    summary: str = "",
    minutes: float = 0.0,
    **fields: Any,
) -> Event:
    values: dict[str, Any] = {"type": "note", **fields}
    return Event(
        id=id,
        workspace_id=ws,
        ts=T0 + timedelta(minutes=minutes),
        summary=summary or f"event {id}",
        **values,
    )


def memory_of(e: Event, *, base: float = 0.5, **fields: Any) -> Memory:
    values: dict[str, Any] = {
        "id": e.id,
        "workspace_id": e.workspace_id,
        "ts": e.ts,
        "type": e.type,
        "content": e.summary,
        "severity": e.severity,
        "payload": e.payload,
        "crew_id": e.crew_id,
        "agent_id": e.agent_id,
        "resource_id": e.resource_id,
        "conversation_id": e.conversation_id,
        "base_importance": base,
        "importance": base,
        "source_event_ids": (e.id,),
        "created_at": T0,
    }
    values.update(fields)
    return Memory(**values)


def remember(store: Store, *events: Event, **memory_fields: Any) -> list[Memory]:
    """Append events, every one of them admitted as a memory."""
    memories = [memory_of(e, **memory_fields) for e in events]
    store.append(events, memories)
    return memories


def dense_ids(store: Store, flt: ScopeFilter, query: Vector, limit: int = 50) -> list[str]:
    return [c.memory_id for c in store.search_dense(flt, query, limit)]


def sparse_ids(store: Store, flt: ScopeFilter, text: str, limit: int = 50) -> list[str]:
    return [c.memory_id for c in store.search_sparse(flt, text, limit)]


# Who sees what under each scope rule. Every memory says "deploy incident" and has a
# vector near the query, so each leg returns exactly the visible set.
SCOPE_ROWS: dict[str, dict[str, Any]] = {
    "own": {"agent_id": "a1", "crew_id": "c1", "base": 0.5},
    "own_other_crew": {"agent_id": "a1", "crew_id": "c2", "base": 0.5},
    "own_resource": {
        "agent_id": "a1",
        "crew_id": "c1",
        "resource_id": "r1",
        "conversation_id": "k1",
        "base": 0.5,
    },
    "peer_routine": {"agent_id": "a2", "crew_id": "c1", "base": 0.5},
    "peer_at_bar": {"agent_id": "a2", "crew_id": "c1", "base": 0.55},
    "peer_escalation": {"agent_id": "a2", "crew_id": "c1", "base": 0.9, "resource_id": "r1"},
    "other_crew_escalation": {"agent_id": "a3", "crew_id": "c2", "base": 0.9},
    "no_agent_note": {"crew_id": "c1", "base": 0.7},
}
ALL = set(SCOPE_ROWS)

SCOPE_CASES: list[tuple[str, ScopeFilter, set[str]]] = [
    ("whole workspace", ScopeFilter("acme"), ALL),
    (
        "own",
        ScopeFilter("acme", Scope.OWN, agent_id="a1"),
        {"own", "own_other_crew", "own_resource"},
    ),
    (
        "own ignores the crew",
        ScopeFilter("acme", Scope.OWN, agent_id="a1", crew_id="c2"),
        {"own", "own_other_crew", "own_resource"},
    ),
    (
        "own narrowed by resource",
        ScopeFilter("acme", Scope.OWN, agent_id="a1", resource_id="r1"),
        {"own_resource"},
    ),
    (
        "crew_shared with agent",
        ScopeFilter("acme", Scope.CREW_SHARED, agent_id="a1", crew_id="c1"),
        {
            "own",
            "own_other_crew",
            "own_resource",
            "peer_at_bar",
            "peer_escalation",
            "no_agent_note",
        },
    ),
    (
        "crew_shared without agent",
        ScopeFilter("acme", Scope.CREW_SHARED, crew_id="c1"),
        {"peer_at_bar", "peer_escalation", "no_agent_note"},
    ),
    (
        "crew_shared narrowed by resource",
        ScopeFilter("acme", Scope.CREW_SHARED, agent_id="a1", crew_id="c1", resource_id="r1"),
        {"own_resource", "peer_escalation"},
    ),
    (
        "crew_shared narrowed by conversation",
        ScopeFilter("acme", Scope.CREW_SHARED, agent_id="a1", crew_id="c1", conversation_id="k1"),
        {"own_resource"},
    ),
    (
        "no scope, agent",
        ScopeFilter("acme", agent_id="a2"),
        {"peer_routine", "peer_at_bar", "peer_escalation"},
    ),
    (
        "no scope, crew",
        ScopeFilter("acme", crew_id="c2"),
        {"own_other_crew", "other_crew_escalation"},
    ),
    (
        "no scope, agent and crew",
        ScopeFilter("acme", agent_id="a1", crew_id="c2"),
        {"own_other_crew"},
    ),
    (
        "no scope, resource",
        ScopeFilter("acme", resource_id="r1"),
        {"own_resource", "peer_escalation"},
    ),
    ("no scope, conversation", ScopeFilter("acme", conversation_id="k1"), {"own_resource"}),
    ("unknown agent", ScopeFilter("acme", Scope.OWN, agent_id="nobody"), set()),
    ("unknown crew", ScopeFilter("acme", Scope.CREW_SHARED, crew_id="nobody"), set()),
    ("other workspace", ScopeFilter("orbit"), set()),
]


from upkeep_store_contract import UpkeepStoreContract  # noqa: E402  (it uses the helpers above)


class StoreContract(UpkeepStoreContract):
    """Behaviour every Store backend must show. Needs a ``store`` fixture. The upkeep
    part (issue 5) lives in ``upkeep_store_contract.py``."""

    # -- append ----------------------------------------------------------------------
    def test_append_counts_and_is_idempotent(self, store: Store) -> None:
        events = [event("e1"), event("e2"), event("e3")]
        memories = [memory_of(events[0]), memory_of(events[2])]
        assert store.append(events, memories) == AppendResult(3, 0, 2)
        assert store.append(events, memories) == AppendResult(0, 3, 0)
        stats = store.stats()
        assert (stats.events, stats.memories, stats.active_memories) == (3, 2, 2)
        assert [p.memory_id for p in store.pending_vectors(10)] == ["e1", "e3"]

    def test_duplicates_inside_one_batch_are_counted_once(self, store: Store) -> None:
        e = event("e1")
        assert store.append([e, e, event("e2")], [memory_of(e)]) == AppendResult(2, 1, 1)
        assert store.stats().events == 2

    def test_a_partly_new_batch_stores_only_the_new_part(self, store: Store) -> None:
        remember(store, event("e1"))
        result = store.append([event("e1"), event("e2")], [memory_of(event("e2"))])
        assert result == AppendResult(1, 1, 1)
        assert {m.id for m in store.get_memories("acme", ["e1", "e2"])} == {"e1", "e2"}

    def test_skipped_events_are_never_pending(self, store: Store) -> None:
        kept, skipped = event("kept"), event("skipped")
        store.append([kept, skipped], [memory_of(kept)])
        assert [p.memory_id for p in store.pending_vectors(10)] == ["kept"]
        store.put_vectors(MODEL, DIM, [("kept", axis(0))])
        assert store.pending_vectors(10) == []
        assert store.stats().pending_vectors == 0
        assert store.get_memories("acme", ["skipped"]) == []
        assert [e.id for e in store.get_events("acme", ["skipped"])] == ["skipped"]

    def test_events_round_trip(self, store: Store) -> None:
        e = Event(
            id="e1",
            workspace_id="acme",
            ts=T0,
            type="peer.escalation",
            severity="warn",
            summary='he said "roll back" — now 🚀',
            payload={"state": "escalated", "n": [1, 2]},
            refs={"episodic": True, "priority": "pin"},
            crew_id="c",
            agent_id="a",
            resource_id="r",
            conversation_id="k",
        )
        store.append([e], [])
        assert store.get_events("acme", ["e1"]) == [e]
        assert store.get_events("orbit", ["e1"]) == []

    def test_memory_round_trip(self, store: Store) -> None:
        e = event(
            "e1",
            summary="naïve café 数据库 \"quoted\" 'single' \\ 👩‍👩‍👧",
            crew_id="c",
            agent_id="a",
            resource_id="r",
            conversation_id="k",
            payload={"emoji": "🚀", "nested": {"x": None}},
        )
        m = memory_of(
            e,
            base=0.85,
            importance=0.7,
            reference_count=2,
            last_referenced_at=T0 + timedelta(hours=1),
        )
        store.append([e], [m])
        got = store.get_memory("acme", "e1")
        assert got == m
        assert got.ts.tzinfo is not None and got.ts == T0

    def test_times_in_other_offsets_come_back_as_the_same_instant(self, store: Store) -> None:
        plus_two = T0.astimezone(timezone(timedelta(hours=2)))
        e = Event(id="e1", workspace_id="acme", ts=plus_two, type="note", summary="x")
        remember(store, e)
        assert store.get_memory("acme", "e1").ts == T0
        assert store.get_events("acme", ["e1"])[0].ts == T0

    # -- reading ---------------------------------------------------------------------
    def test_get_memories_keeps_the_order_asked_and_drops_the_rest(self, store: Store) -> None:
        remember(store, event("a"), event("b"), event("c"))
        remember(store, event("x", "orbit"))
        got = store.get_memories("acme", ["c", "missing", "a", "x", "b", "a"])
        assert [m.id for m in got] == ["c", "a", "b"]
        assert store.get_memories("acme", []) == []

    def test_get_memory_of_another_workspace_is_not_found(self, store: Store) -> None:
        remember(store, event("secret", "orbit"))
        with pytest.raises(NotFound) as info:
            store.get_memory("acme", "secret")
        assert info.value.id == "secret"
        with pytest.raises(NotFound):
            store.get_memory("acme", "never-existed")
        assert store.get_memory("orbit", "secret").id == "secret"

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

    # -- workspace isolation ----------------------------------------------------------
    def test_another_workspace_is_invisible_to_every_read(self, store: Store) -> None:
        mine = event("mine", "acme", summary="checkout latency regression", agent_id="a")
        theirs = event(
            "theirs",
            "orbit",
            summary="checkout OOM in the orbit sandbox",
            agent_id="a",
            crew_id="c",
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

    # -- scopes ----------------------------------------------------------------------
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
            (ScopeFilter("acme", Scope.OWN), "agent_id"),
            (ScopeFilter("acme", Scope.OWN, crew_id="c1"), "agent_id"),
            (ScopeFilter("acme", Scope.CREW_SHARED, agent_id="a1"), "crew_id"),
            (ScopeFilter(""), "workspace_id"),
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

    # -- status ----------------------------------------------------------------------
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

    # -- vectors ---------------------------------------------------------------------
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

    # -- embedding cache -------------------------------------------------------------
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

    # -- dense search ----------------------------------------------------------------
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
                "agent_id": f"a{rng.integers(4)}",
                "crew_id": f"c{rng.integers(2)}",
                "resource_id": f"r{rng.integers(3)}" if rng.random() < 0.5 else None,
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
            own = row["agent_id"] == flt.agent_id
            shared = row["crew_id"] == flt.crew_id and row["base"] >= 0.55
            if flt.scope is Scope.OWN:
                ok = own
            elif flt.scope is Scope.CREW_SHARED:
                ok = (own or shared) if flt.agent_id else shared
            else:
                ok = flt.agent_id in (None, row["agent_id"])
                ok = ok and flt.crew_id in (None, row["crew_id"])
            return ok and flt.resource_id in (None, row["resource_id"])

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

    # -- sparse search ---------------------------------------------------------------
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

    # -- recency -----------------------------------------------------------------------
    def test_search_recent_is_newest_first_within_scope(self, store: Store) -> None:
        remember(
            store,
            event("old", minutes=0, agent_id="a1"),
            event("new", minutes=30, agent_id="a2"),
            event("mid", minutes=10, agent_id="a1"),
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

    def test_neighbours_are_adjacent_turns_of_the_same_conversation(self, store: Store) -> None:
        remember(
            store,
            *[
                event(f"t{i}", minutes=i, conversation_id="c1", agent_id=f"a{i % 2}")
                for i in range(6)
            ],
            event("x0", minutes=2.5, conversation_id="c2"),
            event("solo", minutes=3),
            event("t9", "beta", minutes=3, conversation_id="c1"),
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

    def test_conversations_of_names_each_memorys_conversation_in_the_workspace(
        self, store: Store
    ) -> None:
        remember(
            store,
            event("t1", conversation_id="c1"),
            event("t2", conversation_id="c2"),
            event("solo"),
            event("other", "beta", conversation_id="c1"),
        )
        got = store.conversations_of("acme", ["t1", "t2", "solo", "other", "ghost", "t1"])
        assert got == {"t1": "c1", "t2": "c2", "solo": None}
        assert store.conversations_of("beta", ["t1", "other"]) == {"other": "c1"}
        assert store.conversations_of("acme", []) == {}

    # -- relations ---------------------------------------------------------------------
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

    # -- references ------------------------------------------------------------------
    def test_mark_referenced_bumps_and_stamps(self, store: Store) -> None:
        remember(store, event("m1"), event("m2"))
        later = T0 + timedelta(days=3)
        store.mark_referenced("acme", ["m1"], T0)
        store.mark_referenced("acme", ["m1", "ghost"], later)
        m1, m2 = store.get_memories("acme", ["m1", "m2"])
        assert (m1.reference_count, m1.last_referenced_at) == (2, later)
        assert (m2.reference_count, m2.last_referenced_at) == (0, None)
        store.mark_referenced("acme", [], later)

    def test_meta_describes_the_backend(self, store: Store) -> None:
        meta = store.meta()
        assert "journal_mode" in meta and "path" in meta

    # -- conversations -----------------------------------------------------------------
    def test_memory_state_round_trips(self, store: Store) -> None:
        e = event("m1")
        store.append(
            [e],
            [
                memory_of(
                    e,
                    keys="Caroline 8 May 2023",
                    content_hash="abc",
                    stability=2.5,
                    difficulty=2.1,
                    last_reviewed_at=T0,
                    consolidated_at=T0 + timedelta(days=1),
                )
            ],
        )
        m = store.get_memory("acme", "m1")
        assert (m.keys, m.content_hash, m.stability, m.difficulty) == (
            "Caroline 8 May 2023",
            "abc",
            2.5,
            2.1,
        )
        assert (m.last_reviewed_at, m.consolidated_at) == (T0, T0 + timedelta(days=1))

    def test_keys_are_searched_like_content(self, store: Store) -> None:
        e = event("m1", summary="we talked about the weekend")
        store.append([e], [memory_of(e, keys="pottery class Melanie")])
        assert sparse_ids(store, ScopeFilter("acme"), "pottery") == ["m1"]

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

    def test_neighbours_are_of_the_anchors_type(self, store: Store) -> None:
        turns = [event(f"t{i}", minutes=i, conversation_id="c1") for i in range(3)]
        ep = event("ep", minutes=1.5, conversation_id="c1")
        store.append([*turns, ep], [*(memory_of(t) for t in turns), memory_of(ep, type="episode")])
        assert store.neighbours(ScopeFilter("acme"), ["t1"], 1) == {"t1": [("t0", -1), ("t2", 1)]}

    def test_pending_messages_by_conversation_until_an_episode_takes_them(
        self, store: Store
    ) -> None:
        def message(id: str, conv: str, minutes: float, ws: str = "acme") -> Event:
            return event(
                id,
                ws,
                minutes=minutes,
                conversation_id=conv,
                type="message",
                payload={"role": "user"},
            )

        msgs = [message("m1", "c1", 0), message("m2", "c1", 1), message("m3", "c2", 0.5)]
        other = message("x1", "c1", -5, ws="beta")
        note = event("n1", conversation_id="c1")  # not a message: never pending
        store.append([*msgs, other, note], [])
        got = store.pending_conversations(10)
        assert [(p.workspace_id, p.conversation_id, p.messages) for p in got] == [
            ("beta", "c1", 1),
            ("acme", "c1", 2),
            ("acme", "c2", 1),
        ]
        assert [p.conversation_id for p in store.pending_conversations(10, "acme")] == ["c1", "c2"]
        assert store.pending_conversations(0) == []
        assert [e.id for e in store.pending_messages("acme", "c1")] == ["m1", "m2"]
        assert store.pending_messages("acme", "nope") == []

        episode = Memory(
            id="ep1",
            workspace_id="acme",
            ts=T0,
            type="episode",
            content="a chat",
            conversation_id="c1",
            source_event_ids=("m1", "m2"),
        )
        entry = Memory(
            id="en1",
            workspace_id="acme",
            ts=T0,
            type="entry",
            content="a fact",
            source_event_ids=("m2",),
            content_hash="h1",
        )
        store.append([], [memory_of(msgs[0]), memory_of(msgs[1])])
        assert store.close_episode(episode, ["m1", "m2"], [entry], {"m1": "key words"})
        assert store.pending_messages("acme", "c1") == []
        assert [p.conversation_id for p in store.pending_conversations(10, "acme")] == ["c2"]
        assert store.get_memory("acme", "ep1").source_event_ids == ("m1", "m2")
        assert store.get_memory("acme", "en1").content_hash == "h1"
        assert store.get_memory("acme", "m1").keys == "key words"
        # Closing it again changes nothing.
        assert not store.close_episode(episode, ["m1", "m2"], [entry], {"m1": "other"})
        assert store.get_memory("acme", "m1").keys == "key words"
        # Another workspace's messages cannot be taken.
        stolen = Memory(id="ep2", workspace_id="acme", ts=T0, type="episode", content="x")
        with pytest.raises(NotFound):
            store.close_episode(stolen, ["x1"], [], {})
        assert store.pending_messages("beta", "c1")[0].id == "x1"

    def test_known_hashes_in_scope(self, store: Store) -> None:
        a = event("a", agent_id="ag1")
        b = event("b", agent_id="ag2")
        c = event("c", "beta", agent_id="ag1")
        store.append(
            [a, b, c],
            [
                memory_of(a, content_hash="h1"),
                memory_of(b, content_hash="h2"),
                memory_of(c, content_hash="h3"),
            ],
        )
        assert store.known_hashes(ScopeFilter("acme"), ["h1", "h2", "h3", "h4"]) == {"h1", "h2"}
        assert store.known_hashes(ScopeFilter("acme", agent_id="ag1"), ["h1", "h2"]) == {"h1"}
        assert store.known_hashes(ScopeFilter("beta"), ["h1", "h3"]) == {"h3"}

    def test_get_vectors_stays_in_the_workspace(self, store: Store) -> None:
        remember(store, event("m1"), event("m2"), event("x", "beta"))
        store.put_vectors(MODEL, DIM, [("m1", axis(0)), ("x", axis(1))])
        got = store.get_vectors("acme", ["m1", "m2", "x"])
        assert list(got) == ["m1"] and np.allclose(got["m1"], axis(0))

    # -- issue 6 (the service): listing, status, keys, restore, import state, forget ----
    def _seed_grid(self, store: Store) -> None:
        import itertools

        events, memories = [], []
        for n, (agent, crew, base, resource, kind) in enumerate(
            itertools.product(
                ("a1", "a2", None), ("c1", "c2", None), (0.5, 0.7), ("r1", None), ("note", "entry")
            )
        ):
            e = event(
                f"m{n:02d}",
                agent_id=agent,
                crew_id=crew,
                resource_id=resource,
                type=kind,
                minutes=n % 7,
            )
            events.append(e)
            memories.append(memory_of(e, base=base))
        store.append(events, memories)

    @pytest.mark.parametrize(
        "flt",
        [
            ScopeFilter("acme"),
            ScopeFilter("acme", scope=Scope.OWN, agent_id="a1"),
            ScopeFilter("acme", scope=Scope.CREW_SHARED, crew_id="c1"),
            ScopeFilter("acme", scope=Scope.CREW_SHARED, crew_id="c1", agent_id="a2"),
            ScopeFilter("acme", agent_id="a2", crew_id="c2"),
            ScopeFilter("acme", resource_id="r1", types=("entry",)),
            ScopeFilter("orbit"),
        ],
    )
    def test_list_memories_sees_what_the_scope_predicate_sees(
        self, store: Store, flt: ScopeFilter
    ) -> None:
        from episodic.store.sql import scope_allows

        self._seed_grid(store)
        everything = store.list_memories(ScopeFilter("acme"), 1000)
        assert len(everything) == 72
        by_store = {m.id for m in store.list_memories(flt, 1000)}
        assert by_store == {m.id for m in everything if scope_allows(flt, m)}

    def test_list_memories_pages_walk_everything_once_newest_first(self, store: Store) -> None:
        self._seed_grid(store)
        seen: list[Memory] = []
        before = None
        while True:
            page = store.list_memories(ScopeFilter("acme"), 10, before=before)
            seen += page
            if len(page) < 10:
                break
            before = (page[-1].ts, page[-1].id)
        keys = [(m.ts, m.id) for m in seen]
        assert len(set(keys)) == 72 and keys == sorted(keys, reverse=True)

    def test_set_status_and_the_status_filter(self, store: Store) -> None:
        remember(store, event("s1"), event("s2"), event("x", "orbit"))
        assert store.set_status("acme", "s1", MemoryStatus.RETIRED).status is MemoryStatus.RETIRED
        retired = store.list_memories(ScopeFilter("acme"), 10, statuses=[MemoryStatus.RETIRED])
        assert [m.id for m in retired] == ["s1"]
        with pytest.raises(NotFound):
            store.set_status("acme", "x", MemoryStatus.RETIRED)
        assert store.workspaces() == ["acme", "orbit"]

    def test_api_keys_are_found_by_hash_and_revoked_once(self, store: Store) -> None:
        from episodic.model import Role
        from episodic.tenancy import ApiKey, hash_secret, new_secret

        key_id, secret = new_secret()
        key = ApiKey(key_id, "acme", Role.LEAD, crew_id="c1", label="ci", created_at=T0)
        store.add_api_key(key, hash_secret(secret))
        assert store.api_key_by_hash(hash_secret(secret)) == key
        assert store.api_key_by_hash(hash_secret(secret + "x")) is None
        first = store.revoke_api_key(key_id, T0 + timedelta(days=1))
        again = store.revoke_api_key(key_id, T0 + timedelta(days=2))
        assert first is not None and again is not None
        assert first.revoked_at == again.revoked_at == T0 + timedelta(days=1)
        assert store.revoke_api_key("k_missing", T0) is None
        assert [k.id for k in store.api_keys("acme")] == [key_id] and store.api_keys("orbit") == []

    def test_restore_inserts_updates_and_drops_a_stale_vector(self, store: Store) -> None:
        from dataclasses import replace

        src = event("r-src", summary="the source")
        m = memory_of(event("r1", summary="first text"), source_event_ids=("r-src",))
        result = store.restore(m, [(src, "ep-9")])
        assert (result.inserted, result.events_inserted) == (1, 1)
        assert store.events_with_episodes("acme", ["r-src"])[0][1] == "ep-9"
        assert store.get_memory("acme", "r1") == m
        assert store.restore(m).unchanged == 1
        store.put_vectors(MODEL, DIM, [("r1", axis(0))])
        assert store.restore(replace(m, importance=0.9)).updated == 1
        assert store.stats("acme").vectors == 1  # same text: the vector stays
        edited = replace(m, content="second text", importance=0.9)
        assert store.restore(edited).updated == 1
        assert store.get_memory("acme", "r1") == edited
        assert store.stats("acme").vectors == 0  # new text: embedded again
        with pytest.raises(InvalidInput):
            store.restore(replace(m, workspace_id="orbit"))
        with pytest.raises(InvalidInput):
            store.restore(replace(m, source_event_ids=("missing",)))

    def test_import_state_round_trip(self, store: Store) -> None:
        from episodic.store.base import ImportedFile

        files = [ImportedFile("a/x.md", 1, 10, "h1", "acme", "x"), ImportedFile("y.md", 2, 5, "h2")]
        store.save_import_state("/root", files)
        assert store.import_state("/root") == {f.path: f for f in files}
        store.save_import_state("/root", [], removed=["y.md"])
        assert list(store.import_state("/root")) == ["a/x.md"] and store.import_state("/r2") == {}

    def test_forget_removes_rows_vectors_edges_and_derived_memories(self, store: Store) -> None:
        from episodic.store.base import ForgetSpec

        gone, kept, other = (
            event("f1", summary="zebra crossing", agent_id="ghost"),
            event("f2", agent_id="k"),
            event("f3", "orbit", agent_id="ghost"),
        )
        remember(store, gone, kept, other)
        derived = memory_of(event("d1"), id="d1", source_event_ids=("f1",), type="entry")
        store.append([event("d1")], [derived])
        store.put_vectors(MODEL, DIM, [("f1", axis(0)), ("f2", axis(1)), ("f3", axis(2))])
        store.add_relations("acme", [Relation("f1", "f2", "similar", 0.9)])
        assert dense_ids(store, ScopeFilter("acme"), axis(0))[0] == "f1"
        assert sparse_ids(store, ScopeFilter("acme"), "zebra crossing") == ["f1"]
        counts = store.forget(ForgetSpec("acme", agent_id="ghost"), rekey=lambda e: "")
        assert (counts.memories, counts.vectors, counts.relations) == (2, 1, 1)
        assert store.get_memories("acme", ["f1", "d1", "f2"]) == [store.get_memory("acme", "f2")]
        assert "f1" not in dense_ids(store, ScopeFilter("acme"), axis(0))
        assert sparse_ids(store, ScopeFilter("acme"), "zebra crossing") == []
        assert store.get_events("acme", ["f1"]) == []
        assert [m.id for m in store.list_memories(ScopeFilter("orbit"), 10)] == ["f3"]
        assert store.stats("orbit").vectors == 1
