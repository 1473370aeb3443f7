"""The contract of ``WriteStore`` and ``MemoryReader``: append, read back, close episodes."""

from __future__ import annotations

from datetime import timedelta, timezone

import pytest

from episodic.errors import NotFound
from episodic.model import Event, Memory, ScopeFilter
from episodic.store.base import AppendResult, Store
from store_contract.helpers import (
    DIM,
    MODEL,
    T0,
    axis,
    event,
    memory_of,
    remember,
)


class WritesContract:
    """Events and memories in, and back out by id."""

    # -- append ------------------------------------------------------------------------------
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
            workspace="acme",
            ts=T0,
            type="peer.escalation",
            severity="warn",
            summary='he said "roll back" — now 🚀',
            payload={"state": "escalated", "n": [1, 2]},
            refs={"episodic": True, "priority": "pin"},
            crew="c",
            agent="a",
            resource="r",
            conversation="k",
        )
        store.append([e], [])
        assert store.get_events("acme", ["e1"]) == [e]
        assert store.get_events("orbit", ["e1"]) == []

    def test_memory_round_trip(self, store: Store) -> None:
        e = event(
            "e1",
            summary="naïve café 数据库 \"quoted\" 'single' \\ 👩‍👩‍👧",
            crew="c",
            agent="a",
            resource="r",
            conversation="k",
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
        e = Event(id="e1", workspace="acme", ts=plus_two, type="note", summary="x")
        remember(store, e)
        assert store.get_memory("acme", "e1").ts == T0
        assert store.get_events("acme", ["e1"])[0].ts == T0

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

    # -- reading -----------------------------------------------------------------------------
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

    def test_memory_ids_starting_match_the_start_case_for_case_in_one_workspace(
        self, store: Store
    ) -> None:
        remember(store, event("evt_ab12cd"), event("evt_ab12ef"), event("evt_AB12zz"))
        remember(store, event("evt_ab1%_x"), event("evtXab12"))
        remember(store, event("evt_ab12other", "orbit"))
        assert store.memory_ids_starting("acme", "evt_ab12", 10) == ["evt_ab12cd", "evt_ab12ef"]
        assert store.memory_ids_starting("acme", "evt_ab12", 1) == ["evt_ab12cd"]
        assert store.memory_ids_starting("acme", "evt_ab12e", 10) == ["evt_ab12ef"]
        # "_" and "%" are the id's own characters, not patterns.
        assert store.memory_ids_starting("acme", "evt_ab1%", 10) == ["evt_ab1%_x"]
        assert store.memory_ids_starting("acme", "evt%", 10) == []
        assert store.memory_ids_starting("orbit", "evt_ab12", 10) == ["evt_ab12other"]
        assert store.memory_ids_starting("nowhere", "evt_", 10) == []

    # -- conversations -----------------------------------------------------------------------
    def test_pending_messages_by_conversation_until_an_episode_takes_them(
        self, store: Store
    ) -> None:
        def message(id: str, conv: str, minutes: float, ws: str = "acme") -> Event:
            return event(
                id,
                ws,
                minutes=minutes,
                conversation=conv,
                type="message",
                payload={"role": "user"},
            )

        msgs = [message("m1", "c1", 0), message("m2", "c1", 1), message("m3", "c2", 0.5)]
        other = message("x1", "c1", -5, ws="beta")
        note = event("n1", conversation="c1")  # not a message: never pending
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
            workspace="acme",
            ts=T0,
            type="episode",
            content="a chat",
            conversation="c1",
            source_event_ids=("m1", "m2"),
        )
        entry = Memory(
            id="en1",
            workspace="acme",
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
        stolen = Memory(id="ep2", workspace="acme", ts=T0, type="episode", content="x")
        with pytest.raises(NotFound):
            store.close_episode(stolen, ["x1"], [], {})
        assert store.pending_messages("beta", "c1")[0].id == "x1"

    def test_known_hashes_in_scope(self, store: Store) -> None:
        a = event("a", agent="ag1")
        b = event("b", agent="ag2")
        c = event("c", "beta", agent="ag1")
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
