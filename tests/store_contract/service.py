"""The contract of ``ServiceStore``: listing, status, keys, restore, import state, forget."""

from __future__ import annotations

from datetime import timedelta

import pytest

from episodic.errors import InvalidInput, NotFound
from episodic.model import Memory, MemoryStatus, Scope, ScopeFilter
from episodic.store.base import Relation, Store
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
)


class ServiceContract:
    """The service's operations on the store."""

    # -- listing and status ------------------------------------------------------------------
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
                agent=agent,
                crew=crew,
                resource=resource,
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

    def test_workspace_counts_name_every_workspace_with_memories_or_events(
        self, store: Store
    ) -> None:
        from episodic.store.writes import WorkspaceCounts

        assert store.workspace_counts() == []
        remember(store, event("c1"), event("c2"), event("o1", "orbit"))
        store.append([event("e1", "quiet")], [])  # an event no memory came from
        assert store.workspace_counts() == [
            WorkspaceCounts("acme", 2, 2),
            WorkspaceCounts("orbit", 1, 1),
            WorkspaceCounts("quiet", 0, 1),
        ]

    # -- keys --------------------------------------------------------------------------------
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

    def test_ui_sessions_expire_end_and_are_swept(self, store: Store) -> None:
        hour = timedelta(hours=1)
        store.add_ui_session("s-old", "key-a", T0, T0 + hour)
        store.add_ui_session("s-new", "key-b", T0 + 2 * hour, T0 + 5 * hour)
        assert store.ui_session_key("s-new", T0 + 3 * hour) == "key-b"
        assert store.ui_session_key("s-new", T0 + 5 * hour) is None  # expired at the mark
        assert store.ui_session_key("s-old", T0) is None  # swept by the later sign-in
        assert store.ui_session_key("s-unknown", T0) is None
        store.end_ui_session("s-new")
        store.end_ui_session("s-new")  # twice: nothing
        assert store.ui_session_key("s-new", T0 + 3 * hour) is None

    # -- markdown import ---------------------------------------------------------------------
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
            store.restore(replace(m, workspace="orbit"))
        with pytest.raises(InvalidInput):
            store.restore(replace(m, source_event_ids=("missing",)))

    def test_import_state_round_trip(self, store: Store) -> None:
        from episodic.store.base import ImportedFile

        files = [ImportedFile("a/x.md", 1, 10, "h1", "acme", "x"), ImportedFile("y.md", 2, 5, "h2")]
        store.save_import_state("/root", files)
        assert store.import_state("/root") == {f.path: f for f in files}
        store.save_import_state("/root", [], removed=["y.md"])
        assert list(store.import_state("/root")) == ["a/x.md"] and store.import_state("/r2") == {}

    # -- forget ------------------------------------------------------------------------------
    def test_forget_removes_rows_vectors_edges_and_derived_memories(self, store: Store) -> None:
        from episodic.store.base import ForgetSpec

        gone, kept, other = (
            event("f1", summary="zebra crossing", agent="ghost"),
            event("f2", agent="k"),
            event("f3", "orbit", agent="ghost"),
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
