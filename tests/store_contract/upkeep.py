"""The Store contract for upkeep: decay, reviews, consolidation, archive,
compaction, retirement, health, nudges and leases.

``StoreContract`` inherits it, so every backend bound to the store contract runs it too.
Written only against the ``Store`` protocol, with small hand-made data.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import date, timedelta

import numpy as np
import pytest

from episodic.errors import Forbidden, InvalidInput, NotFound
from episodic.model import Event, Memory, MemoryStatus, Scope, ScopeFilter
from episodic.scoring.decay import decayed_importance, prominence_importance
from episodic.store.base import (
    FsrsUpdate,
    HealthSnapshot,
    Merge,
    Relation,
    ReviewOutcome,
    ReviewRequest,
    Store,
)
from store_contract.helpers import DIM, MODEL, T0, event, memory_of, remember, vec

NOW = T0 + timedelta(days=400)


def aged(id: str, days: float, *, ws: str = "acme", **fields: object) -> Event:
    """An event ``days`` before NOW."""
    return event(id, ws, minutes=(NOW - T0 - timedelta(days=days)).total_seconds() / 60, **fields)


# (days old, reference_count): seed 000's ages and reference counts.
DECAY_CASES = [(d, r) for d in (1, 180, 365) for r in (0, 1, 7)]


class UpkeepContract:
    # -- decay -------------------------------------------------------------------------
    @pytest.mark.parametrize("formula", ["crewship", "prominence"])
    def test_decay_matches_the_scoring_formula_row_by_row(self, store: Store, formula: str) -> None:
        rows = []
        for i, (days, refs) in enumerate(DECAY_CASES):
            e = aged(f"m{i}", days)
            rows.append((e, days, refs))
            # Seed 000's count for crewship, seed 001's (payload) for prominence.
            uses = {"reinforcement_count": refs}
            store.append([e], [memory_of(e, base=0.7, reference_count=refs, payload=uses)])
        changed = store.decay_importance(NOW, formula=formula)
        assert changed == len(DECAY_CASES)
        got = {m.id: m.importance for m in store.get_memories("acme", [e.id for e, _, _ in rows])}
        for e, days, refs in rows:
            want = (
                decayed_importance(0.7, days, refs)
                if formula == "crewship"
                else prominence_importance(0.7, days, refs)
            )
            assert got[e.id] == pytest.approx(want, abs=1e-9), (days, refs)

    def test_decay_is_idempotent_for_the_same_now(self, store: Store) -> None:
        remember(store, aged("m1", 30), aged("m2", 90))
        assert store.decay_importance(NOW) == 2
        first = [m.importance for m in store.get_memories("acme", ["m1", "m2"])]
        assert store.decay_importance(NOW) == 0
        assert [m.importance for m in store.get_memories("acme", ["m1", "m2"])] == first

    def test_decay_leaves_inactive_rows_and_other_workspaces_alone(self, store: Store) -> None:
        a, r, b = aged("a", 90), aged("r", 90), aged("b", 90, ws="beta")
        store.append([a, r, b], [memory_of(a), memory_of(r, status=MemoryStatus.RETIRED)])
        store.append([], [memory_of(b)])
        assert store.decay_importance(NOW, workspace_id="acme") == 1
        assert store.get_memory("acme", "r").importance == 0.5
        assert store.get_memory("beta", "b").importance == 0.5
        with pytest.raises(InvalidInput, match="formula"):
            store.decay_importance(NOW, formula="linear")

    def test_decay_reads_reference_marks(self, store: Store) -> None:
        remember(store, aged("m1", 10))
        store.decay_importance(NOW)
        before = store.get_memory("acme", "m1").importance
        store.mark_referenced("acme", ["m1"], NOW)
        store.decay_importance(NOW)
        after = store.get_memory("acme", "m1").importance
        assert after == pytest.approx(before * (1 + 1 / 8))

    # -- reviews -------------------------------------------------------------------------
    def test_reviews_are_claimed_once_until_the_claim_expires(self, store: Store) -> None:
        first = store.add_review(
            ReviewRequest("acme", "deploy", ("m1", "m2"), T0, (0.9, None), agent_id="a1")
        )
        store.add_review(ReviewRequest("beta", "other", ("x",), T0))
        got = store.claim_reviews("job-1", T0, lease_s=60, limit=10, workspace_id="acme")
        assert [(p.id, p.request.memory_ids, p.request.cosines) for p in got] == [
            (first, ("m1", "m2"), (0.9, None))
        ]
        assert got[0].request.agent_id == "a1" and got[0].request.recalled_at == T0
        assert store.claim_reviews("job-2", T0, lease_s=60, limit=10, workspace_id="acme") == []
        later = T0 + timedelta(seconds=61)
        again = store.claim_reviews("job-2", later, lease_s=60, limit=10, workspace_id="acme")
        assert [p.id for p in again] == [first]
        # The first holder's claim has expired: it can no longer close the review.
        assert store.finish_reviews("job-1", [ReviewOutcome(first, "rated", {})], later) == 0
        assert store.finish_reviews("job-2", [ReviewOutcome(first, "rated", {})], later) == 1
        later2 = later + timedelta(hours=1)
        assert store.claim_reviews("job-3", later2, lease_s=60, limit=10, workspace_id="acme") == []

    def test_reviews_added_together_are_each_claimable(self, store: Store) -> None:
        store.add_reviews([])  # nothing to record is not an error
        store.add_reviews(
            [
                ReviewRequest("acme", "deploy", ("m1",), T0, (0.8,), agent_id="a1"),
                ReviewRequest("acme", "rollback", ("m2", "m3"), T0, (None, 0.5), crew_id="ops"),
                ReviewRequest("beta", "other", ("x",), T0, conversation_id="c9"),
            ]
        )
        got = store.claim_reviews("h", T0, lease_s=60, limit=10, workspace_id="acme")
        assert [p.request for p in got] == [
            ReviewRequest("acme", "deploy", ("m1",), T0, (0.8,), agent_id="a1"),
            ReviewRequest("acme", "rollback", ("m2", "m3"), T0, (None, 0.5), crew_id="ops"),
        ]
        beta = store.claim_reviews("h", T0, lease_s=60, limit=10, workspace_id="beta")
        assert [p.request.conversation_id for p in beta] == ["c9"]

    def test_claims_narrow_by_agent_and_conversation(self, store: Store) -> None:
        store.add_review(ReviewRequest("acme", "q", ("m1",), T0, agent_id="a1"))
        conv = store.add_review(ReviewRequest("acme", "q", ("m2",), T0, conversation_id="c1"))
        got = store.claim_reviews("h", T0, lease_s=9, limit=5, conversation_id="c1")
        assert [p.id for p in got] == [conv]
        assert len(store.claim_reviews("h", T0, lease_s=9, limit=5, agent_id="a1")) == 1

    def test_claims_by_conversation_or_age_and_released_claims(self, store: Store) -> None:
        old = store.add_review(ReviewRequest("acme", "q", ("m1",), T0))
        conv = store.add_review(
            ReviewRequest("acme", "q", ("m2",), T0 + timedelta(hours=2), conversation_id="c1")
        )
        got = store.claim_reviews("h", NOW, lease_s=60, limit=5, only_conversations=True)
        assert [p.id for p in got] == [conv]
        store.release_reviews("h", [conv])
        before = T0 + timedelta(hours=1)
        got = store.claim_reviews("h2", NOW, lease_s=60, limit=5, recalled_before=before)
        assert [p.id for p in got] == [old]
        # Released at once: another claimer takes it without waiting for the lease.
        assert [p.id for p in store.claim_reviews("h3", NOW, lease_s=60, limit=5)] == [conv]

    def test_a_session_end_reinforces_each_recalled_memory_once(self, store: Store) -> None:
        a, b, gone = event("a"), event("b"), event("gone")
        store.append(
            [a, b, gone],
            [
                memory_of(a, payload={"reinforcement_count": 4, "k": 1}),
                memory_of(b),
                memory_of(gone, status=MemoryStatus.RETIRED),
            ],
        )
        store.append([event("x", "beta")], [memory_of(event("x", "beta"))])
        for ids in (("a", "b"), ("a",), ("gone", "a")):
            store.add_review(ReviewRequest("acme", "q", ids, T0, conversation_id="s1"))
        store.add_review(ReviewRequest("acme", "q", ("b",), T0, conversation_id="s2"))
        store.add_review(
            ReviewRequest("acme", "q", ("b",), NOW + timedelta(seconds=1), conversation_id="s1")
        )  # after the end: next session
        store.add_review(ReviewRequest("beta", "q", ("x",), T0, conversation_id="s1"))
        assert store.reinforce_session("acme", "s1", NOW) == ["a", "b"]
        a2, b2 = store.get_memories("acme", ["a", "b"])
        day = NOW.date().isoformat()
        # Existing keys keep their place; the count goes on from the stored one.
        assert a2.payload == {"reinforcement_count": 5, "k": 1, "last_reinforced": day}
        assert b2.payload == {"reinforcement_count": 1, "last_reinforced": day}
        assert store.get_memory("acme", "gone").payload == {}  # retired: not reinforced
        assert store.get_memory("beta", "x").payload == {}  # another workspace's session
        assert store.reinforce_session("acme", "s1", NOW) == []  # counted once
        later = NOW + timedelta(days=1)
        assert store.reinforce_session("acme", "s1", later) == ["b"]
        assert store.get_memory("acme", "b").payload["reinforcement_count"] == 2

    def test_a_session_end_on_behalf_of_an_agent_counts_only_its_own_sessions(
        self, store: Store
    ) -> None:
        a, b = event("a"), event("b")
        store.append([a, b], [memory_of(a), memory_of(b)])
        mine = ReviewRequest("acme", "q", ("a",), T0, agent_id="ann", crew_id="ops")
        store.add_review(mine)
        store.add_review(ReviewRequest("acme", "q", ("b",), T0, agent_id="bob", crew_id="ops"))
        store.add_review(ReviewRequest("acme", "q", ("b",), T0, conversation_id="s0"))
        store.add_review(replace(mine, conversation_id="s1"))
        store.add_review(replace(mine, conversation_id="s2", memory_ids=("b",)))
        bob = ReviewRequest("acme", "q", ("b",), T0, agent_id="bob", conversation_id="s2")
        store.add_review(bob)
        # Bob's recall in s2: Ann may not end it, and nothing is counted or reinforced.
        assert not store.session_owned("acme", "s2", NOW, by_agent="ann")
        with pytest.raises(Forbidden, match="'s2'"):
            store.reinforce_session("acme", "s2", NOW, by_agent="ann")
        assert store.get_memory("acme", "b").payload == {}
        # A recall made as no agent is not Ann's either.
        assert not store.session_owned("acme", "s0", NOW, by_agent="ann")
        with pytest.raises(Forbidden):
            store.reinforce_session("acme", "s0", NOW, by_agent="ann")
        # Her own session ends; its crew's end too, and an end on behalf of anyone.
        assert store.session_owned("acme", "s1", NOW, by_agent="ann")
        assert store.session_owned("acme", "s2", NOW, by_crew="ops") is False  # bob: no crew
        assert store.session_owned("acme", "s2", NOW)
        assert store.reinforce_session("acme", "s1", NOW, by_agent="ann") == ["a"]
        assert store.reinforce_session("acme", "s2", NOW) == ["b"]  # nothing was counted
        # Once counted, bob's recall no longer stands in the way of the next session.
        assert store.session_owned("acme", "s2", NOW, by_agent="ann")

    def test_fsrs_updates_are_compare_and_set(self, store: Store) -> None:
        remember(store, event("m1"), event("m2"))
        day = T0 + timedelta(days=1)
        assert store.apply_reviews("acme", [FsrsUpdate("m1", 3.0, 5.0, day, None)]) == 1
        # A second job that read the memory before the first update loses the race.
        assert store.apply_reviews("acme", [FsrsUpdate("m1", 9.0, 1.0, day, None)]) == 0
        m1 = store.get_memory("acme", "m1")
        assert (m1.stability, m1.difficulty, m1.last_reviewed_at) == (3.0, 5.0, day)
        later = day + timedelta(days=2)
        assert store.apply_reviews("acme", [FsrsUpdate("m1", 7.0, 4.0, later, day)]) == 1
        assert store.apply_reviews("beta", [FsrsUpdate("m2", 7.0, 4.0, later, None)]) == 0

    def test_hit_cosines_come_from_recorded_recalls(self, store: Store) -> None:
        store.add_review(ReviewRequest("acme", "q", ("m1", "m2"), T0, (0.8, 0.6), crew_id="c1"))
        store.add_review(ReviewRequest("acme", "q", ("m3",), T0, (None,), crew_id="c1"))
        store.add_review(ReviewRequest("acme", "q", ("m4",), T0 - timedelta(days=40), (0.1,)))
        since = T0 - timedelta(days=30)
        assert store.hit_cosines(ScopeFilter("acme"), since) == [[0.8, 0.6]]
        assert store.hit_cosines(ScopeFilter("acme", crew_id="c2"), since) == []

    def test_conversation_messages_after_a_time(self, store: Store) -> None:
        def message(id: str, minutes: float) -> Event:
            return event(
                id, minutes=minutes, conversation="c1", type="message", payload={"role": "a"}
            )

        store.append([message("m1", 0), message("m2", 5), message("m3", 10)], [])
        got = store.conversation_messages("acme", "c1", after=T0 + timedelta(minutes=1), limit=5)
        assert [e.id for e in got] == ["m2", "m3"]
        assert store.conversation_messages("beta", "c1", after=T0, limit=5) == []

    # -- consolidation -------------------------------------------------------------------
    def test_scan_memories_pages_through_active_rows(self, store: Store) -> None:
        remember(store, *[event(f"m{i}", minutes=i) for i in range(5)])
        e = event("r")
        store.append([e], [memory_of(e, status=MemoryStatus.RETIRED)])
        page, cursor = store.scan_memories("acme", limit=3)
        assert [m.id for m in page] == ["m0", "m1", "m2"] and cursor
        rest, end = store.scan_memories("acme", cursor=cursor, limit=3)
        assert [m.id for m in rest] == ["m3", "m4"] and end == 0
        assert page[0].source_event_ids == ("m0",)
        newest, _ = store.scan_memories("acme", limit=2, newest_first=True)
        assert [m.id for m in newest] == ["m4", "m3"]

    def test_backlog_counts_unconsolidated_and_flashbulbs(self, store: Store) -> None:
        ep, flash, msg = event("ep"), event("flash"), event("msg", type="message")
        store.append(
            [ep, flash, msg],
            [
                memory_of(ep, type="episode", payload={"flashbulb": False}),
                memory_of(flash, type="episode", payload={"flashbulb": True}),
                memory_of(msg),
            ],
        )
        backlog = store.consolidation_backlog("acme", exclude_types=("message",))
        assert (backlog.unconsolidated, backlog.flashbulbs) == (2, 1)

    def test_unclustered_memories_leave_the_backlog_and_wait(self, store: Store) -> None:
        remember(store, event("a"), event("b"), event("c"), event("z", "beta"))

        def ids(looked_at: bool) -> list[str]:
            page, _ = store.scan_memories(
                "acme", limit=10, unconsolidated=True, unclustered=looked_at
            )
            return [m.id for m in page]

        assert store.consolidation_backlog("acme").unconsolidated == 3
        # Unknown ids and another workspace's memory are not marked.
        assert store.mark_unclustered("acme", ["a", "b", "nope", "z"], NOW) == 2
        assert store.consolidation_backlog("acme").unconsolidated == 1
        assert store.consolidation_backlog("beta").unconsolidated == 1
        assert (ids(True), ids(False)) == (["a", "b"], ["c"])
        # Still unconsolidated: a later run may take a waiting memory into a cluster,
        # which clears its mark; a consolidated memory is never marked.
        assert store.store_consolidation("acme", [], [], ["a", "c"], NOW)
        assert store.mark_unclustered("acme", ["a", "c"], NOW) == 0
        assert (ids(True), ids(False)) == (["b"], [])
        assert [m.id for m in store.scan_memories("acme", limit=10, unconsolidated=True)[0]] == [
            "b"
        ]

    def test_consolidation_is_stored_whole_and_claims_its_members(self, store: Store) -> None:
        remember(store, event("a"), event("b"), event("c"))
        rule = Memory(id="rule", workspace="acme", ts=T0, type="memory.consolidated",
                      content="when deploying, check the cache")  # fmt: skip
        edges = [Relation("rule", m, "supports", 1.0) for m in ("a", "b")]
        assert store.store_consolidation("acme", [rule], edges, ["a", "b"], NOW)
        assert store.related(ScopeFilter("acme"), ["rule"], "supports") == {
            "rule": [("a", 1.0), ("b", 1.0)]
        }
        assert store.get_memory("acme", "a").consolidated_at == NOW
        assert store.get_memory("acme", "c").consolidated_at is None
        # "b" is taken: a second consolidation naming it writes nothing at all.
        other = Memory(id="rule2", workspace="acme", ts=T0, type="x", content="y")
        assert not store.store_consolidation("acme", [other], [], ["b", "c"], NOW)
        assert store.get_memories("acme", ["rule2"]) == []
        assert store.get_memory("acme", "c").consolidated_at is None
        with pytest.raises(NotFound):
            store.store_consolidation(
                "acme", [other], [Relation("rule2", "zzz", "supports", 1.0)], ["c"], NOW
            )

    # -- archive -------------------------------------------------------------------------
    def test_archived_events_stay_citable_and_inspectable(self, store: Store) -> None:
        old = aged("old", 100, payload={"blob": "x" * 1000}, agent="a1")
        new = aged("new", 1)
        waiting = aged("wait", 100, type="message", conversation="c1", payload={"role": "u"})
        store.append([old, new, waiting], [memory_of(old)])
        moved = store.archive_events(NOW - timedelta(days=90), workspace_id="acme")
        assert moved == 1
        assert store.get_events("acme", ["old", "new", "wait"]) == [new, waiting]
        (arch,) = store.archived_events("acme", ["old", "new"])
        assert (arch.id, arch.agent_id, arch.summary, len(arch.payload)) == (
            "old",
            "a1",
            old.summary,
            400,
        )
        assert store.archived_events("beta", ["old"]) == []
        # The memory keeps its source, and a new memory may cite the archived event.
        assert store.get_memory("acme", "old").source_event_ids == ("old",)
        cite = Memory(id="rule", workspace="acme", ts=T0, type="x", content="y",
                      source_event_ids=("old",))  # fmt: skip
        assert store.append([], [cite]).memories_inserted == 1
        # Re-ingesting an archived event is a duplicate, not a second copy.
        assert store.append([old], []).events_duplicate == 1
        assert store.archive_events(NOW, workspace_id="acme") == 1  # only "new" is left to move

    # -- compaction ----------------------------------------------------------------------
    def test_compaction_merges_into_the_survivor(self, store: Store) -> None:
        a, b = event("a", summary="deploy failed: cache"), event("b", summary="deploy failed")
        store.append([a, b], [memory_of(a, base=0.8), memory_of(b, reference_count=2)])
        store.put_vectors(MODEL, DIM, [("a", vec(1, 0)), ("b", vec(1, 0.1))])
        merge = Merge(
            survivor_id="a",
            losers=(("b", 0.85),),
            content="deploy failed: cache (longer)",
            base_importance=0.8,
            importance=0.8,
            reference_count=2,
            last_referenced_at=NOW,
            ts=b.ts,
        )
        assert store.compact_memories("acme", [merge], NOW) == 1
        survivor, loser = store.get_memories("acme", ["a", "b"])
        assert (survivor.content, survivor.reference_count, survivor.status) == (
            "deploy failed: cache (longer)",
            2,
            MemoryStatus.ACTIVE,
        )
        assert survivor.source_event_ids == ("a", "b")
        assert loser.status is MemoryStatus.COMPACTED
        assert loser.payload["compacted_into"] == "a" and loser.content == "deploy failed"
        assert store.compacted_into("acme", ["a", "b"]) == {"b": "a"}
        # The survivor's text changed: its old vector is gone, the indexer re-embeds it.
        assert [p.memory_id for p in store.pending_vectors(5)] == ["a"]
        assert store.search_dense(ScopeFilter("acme"), vec(1, 0), 5) == []
        # A merge naming a memory no longer active is skipped.
        assert store.compact_memories("acme", [merge], NOW) == 0

    # -- retirement ----------------------------------------------------------------------
    def test_stage_retirement_retires_task_learnings_of_that_phase(self, store: Store) -> None:
        rows = {
            "task_p1": {"domain": "task", "phase": "p1"},
            "task_stage_p1": {"domain": "task", "stage": "p1"},
            "task_p2": {"domain": "task", "phase": "p2"},
            "team_p1": {"domain": "team", "phase": "p1"},
            "plain": {},
        }
        events = [event(i, payload=p) for i, p in rows.items()]
        store.append(events, [memory_of(e) for e in events])
        assert store.retire_phase("acme", "p1", NOW) == ["task_p1", "task_stage_p1"]
        retired = store.get_memory("acme", "task_p1")
        assert retired.status is MemoryStatus.RETIRED and retired.payload["status"] == "retired"
        assert store.get_memory("acme", "task_p2").status is MemoryStatus.ACTIVE
        assert store.retire_phase("beta", "p2", NOW) == []
        assert store.retire_phase("acme", "p1", NOW) == []

    # -- health --------------------------------------------------------------------------
    def test_health_facts_by_hand(self, store: Store) -> None:
        # Ages 10, 20, 30, 40, 50 days: median 30 (the crews: 15 and 35, the mean of their
        # two). Three have vectors; one of them an edge.
        events = [aged(f"m{d}", d, crew="c1" if d < 30 else "c2") for d in (10, 20, 30, 40)]
        remember(store, *events, aged("m50", 50))  # no crew
        store.put_vectors(MODEL, DIM, [("m10", vec(1)), ("m20", vec(0, 1)), ("m30", vec(1, 1))])
        store.add_relations("acme", [Relation("m40", "m10", "similar", 0.9)])
        found = store.health_facts("acme", NOW)
        assert list(found) == [None, "c1", "c2"]
        facts, crew = found[None], found["c1"]
        assert (facts.active, facts.vectored, facts.linked) == (5, 3, 1)
        assert facts.median_age_days == pytest.approx(30.0)
        assert (crew.active, crew.vectored, crew.linked, crew.median_age_days) == (
            2,
            2,
            1,
            pytest.approx(15.0),
        )
        c2 = found["c2"]
        assert (c2.active, c2.vectored, c2.median_age_days) == (2, 1, pytest.approx(35.0))
        empty = store.health_facts("beta", NOW)[None]
        assert (empty.active, empty.median_age_days) == (0, None)
        assert store.vector_matrix(ScopeFilter("acme", crew_id="c1")).shape == (2, DIM)
        assert store.vector_matrix(ScopeFilter("beta")).shape[0] == 0

    def test_health_snapshots_round_trip_newest_first(self, store: Store) -> None:
        def snap(day: int, crew: str | None, score: float) -> HealthSnapshot:
            return HealthSnapshot("acme", crew, date(2026, 3, day), 1, 2, 3, 4, 5, score)

        for s in (snap(1, None, 50), snap(2, None, 60), snap(2, "c1", 70)):
            store.put_health_snapshot(s)
        store.put_health_snapshot(snap(2, None, 65))  # the same day again replaces it
        assert [s.score for s in store.health_snapshots("acme", None, 10)] == [65, 50]
        assert store.health_snapshots("acme", "c1", 10) == [snap(2, "c1", 70)]
        assert store.health_snapshots("acme", None, 1)[0].snapshot_date == date(2026, 3, 2)

    # -- nudge ---------------------------------------------------------------------------
    def test_events_since_the_last_memory_update(self, store: Store) -> None:
        before = [event(f"b{i}", agent="a1", minutes=i) for i in range(3)]
        update = event("u", agent="a1", minutes=5, type="memory.updated")
        after = [event(f"x{i}", agent="a1", minutes=10 + i) for i in range(4)]
        theirs = [event("t", agent="a2", minutes=20)]
        store.append([*before, *after, *theirs], [])
        assert store.events_since_memory_update("acme", "a1", 60) == 7  # no update stored yet
        store.append([update], [])
        assert store.events_since_memory_update("acme", "a1", 60) == 4
        assert store.events_since_memory_update("acme", "a1", 2) == 2
        assert store.claim_nudge("acme", "a1", "s1", 61, NOW)
        assert not store.claim_nudge("acme", "a1", "s1", 70, NOW)
        assert store.claim_nudge("acme", "a1", "s2", 61, NOW)

    # -- leases --------------------------------------------------------------------------
    def test_a_lease_has_one_holder_until_it_expires(self, store: Store) -> None:
        assert store.acquire_lease("decay", "", "p1", T0, 60)
        assert not store.acquire_lease("decay", "", "p2", T0 + timedelta(seconds=30), 60)
        assert store.acquire_lease("decay", "acme", "p2", T0, 60)  # another scope
        assert store.acquire_lease("decay", "", "p1", T0 + timedelta(seconds=30), 60)  # renew
        assert store.acquire_lease("decay", "", "p2", T0 + timedelta(seconds=91), 60)
        store.release_lease("decay", "", "p1")  # not the holder any more: no effect
        assert not store.acquire_lease("decay", "", "p3", T0 + timedelta(seconds=92), 60)
        store.release_lease("decay", "", "p2")
        assert store.acquire_lease("decay", "", "p3", T0 + timedelta(seconds=92), 60)

    def test_last_run_is_the_last_successful_one(self, store: Store) -> None:
        assert store.last_run("health", "acme") is None
        store.record_run("health", "acme", "p1", T0, T0 + timedelta(seconds=1), "ok", {"n": 1})
        store.record_run("health", "acme", "p1", NOW, NOW, "error", {"error": "boom"})
        assert store.last_run("health", "acme") == T0 + timedelta(seconds=1)

    # -- relations -----------------------------------------------------------------------
    def test_dense_search_for_many_queries_at_once(self, store: Store) -> None:
        remember(store, *[event(f"m{i}", agent=f"a{i % 2}") for i in range(6)])
        rng = np.random.default_rng(3)
        store.put_vectors(MODEL, DIM, [(f"m{i}", rng.normal(size=DIM)) for i in range(6)])
        queries = rng.normal(size=(3, DIM)).astype(np.float32)
        for flt in (ScopeFilter("acme"), ScopeFilter("acme", Scope.OWN, agent_id="a1")):
            many = store.search_dense_many(flt, queries, 4)
            one = [store.search_dense(flt, q, 4) for q in queries]
            assert [[c.memory_id for c in r] for r in many] == [
                [c.memory_id for c in r] for r in one
            ]
            for r_many, r_one in zip(many, one, strict=True):
                assert [c.score for c in r_many] == pytest.approx([c.score for c in r_one])
        assert store.search_dense_many(ScopeFilter("beta"), queries, 4) == [[], [], []]
        assert store.workspaces() == ["acme"]
