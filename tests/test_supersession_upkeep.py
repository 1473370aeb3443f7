"""Upkeep treats superseded memories as history, on both backends: compaction never merges
one (nor merges the old fact into the new), consolidation cites only what is valid now,
health counts only the memories recall can return, decay and stage retirement leave
superseded rows as they are, forgetting a replacing memory by any selector gives the
old one back its validity and drops the link, and ``doctor --deep`` accepts superseded
rows while it flags a link that does not hold."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest

from conftest import raw_execute
from episodic import Episodic, Settings
from episodic.embed.fake import FakeEmbedder
from episodic.model import Memory, MemoryStatus, ScopeFilter
from episodic.upkeep.consolidate import CONSOLIDATED_TYPE, EXCLUDED_TYPES
from supersession_support import T0, WS, Clock

LATER = T0 + timedelta(days=21)
# Near-duplicates (token Jaccard above compaction's 0.8 and clustering's 0.5).
STANDUP = "The team standup is at 9am in room 4 every weekday morning for the whole crew"


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def mem(db_url: str, clock: Clock) -> Iterator[Episodic]:
    """Detection off: each test says what replaces what, so near-duplicates stay side by
    side until it does."""
    m = Episodic.open(db_url, embedder=None, settings=Settings(supersession="off"), clock=clock)
    yield m
    m.close()


def replace_later(mem: Episodic, clock: Clock, old: str, new: str, **scope: Any) -> None:
    """``old`` remembered at T0, ``new`` three weeks later replacing it by name."""
    clock.now = T0
    mem.remember(STANDUP, workspace=WS, id=old, **scope)
    clock.now = LATER
    mem.remember(STANDUP + " now", workspace=WS, id=new, **scope)
    mem.supersede(old, new, workspace=WS, reason="moved")


def status(mem: Episodic, memory_id: str) -> MemoryStatus:
    return mem.store.get_memory(WS, memory_id).status


def test_compaction_never_merges_a_superseded_memory(mem: Episodic, clock: Clock) -> None:
    replace_later(mem, clock, "old", "new", agent="a")
    # The same pair with nothing replaced (another agent, so not compared with the first)
    # does merge: the texts are near-duplicates.
    clock.now = T0
    mem.remember(STANDUP, workspace=WS, id="twin-1", agent="b")
    mem.remember(STANDUP + " now", workspace=WS, id="twin-2", agent="b")

    [result] = mem.compact(workspace=WS)
    assert result.detail["compacted"] == 1
    assert {status(mem, "twin-1"), status(mem, "twin-2")} == {
        MemoryStatus.ACTIVE,
        MemoryStatus.COMPACTED,
    }
    assert status(mem, "old") is MemoryStatus.SUPERSEDED
    assert status(mem, "new") is MemoryStatus.ACTIVE
    assert mem.store.get_memory(WS, "new").content == STANDUP + " now"
    assert mem.store.compacted_into(WS, ["old", "new"]) == {}


def test_compaction_never_merges_across_a_supersession(mem: Episodic, clock: Clock) -> None:
    # "new" replaced "old"; "restated" says what "new" says. Merging them would move the
    # replacing memory's time (a merge takes the newest) or fold it into another memory,
    # and "old" would then name a replacement that no longer stands as it did.
    replace_later(mem, clock, "old", "new")
    clock.now = LATER + timedelta(days=1)
    mem.remember(STANDUP + " again", workspace=WS, id="restated")
    before = mem.store.get_memory(WS, "new")

    [result] = mem.compact(workspace=WS)
    assert result.detail["compacted"] == 0
    assert mem.store.get_memory(WS, "new") == before
    assert status(mem, "restated") is MemoryStatus.ACTIVE
    [link] = mem.store.supersessions(WS, ["old"])
    assert link.new_id == "new"
    assert [
        h.id for h in mem.recall("standup room", workspace=WS, mark=False, as_of=LATER).hits
    ] == ["new"]


def test_consolidation_cites_only_memories_valid_now(mem: Episodic, clock: Clock) -> None:
    replace_later(mem, clock, "old", "new")
    mem.remember(STANDUP + " again", workspace=WS, id="third")
    # The backlog that triggers a run counts what is valid now only.
    assert mem.store.consolidation_backlog(WS, EXCLUDED_TYPES).unconsolidated == 2
    mem.consolidate(workspace=WS, refresh_health=False)

    [derived] = mem.store.list_memories(ScopeFilter(WS, types=(CONSOLIDATED_TYPE,)), 10)
    assert sorted(derived.payload["evidence_ids"]) == ["new", "third"]
    assert mem.store.get_memory(WS, "old").consolidated_at is None
    # The claim itself refuses a superseded member (one replaced after it was planned).
    stray = Memory(id="stray", workspace=WS, ts=LATER, type=CONSOLIDATED_TYPE, content="x")
    assert not mem.store.store_consolidation(WS, [stray], [], ["old"], LATER)


def test_health_counts_only_memories_valid_now(db_url: str, clock: Clock) -> None:
    settings = Settings(supersession="off")
    with Episodic.open(db_url, embedder=FakeEmbedder(dim=64), settings=settings, clock=clock) as m:
        m.remember(STANDUP, workspace=WS, id="old")
        clock.now = LATER
        m.remember(STANDUP + " now", workspace=WS, id="new")
        m.remember("Invoices go out on the first of the month.", workspace=WS, id="other")
        m.index_once()
        # The two near-duplicates are linked to each other, and only to each other.
        assert m.store.health_facts(WS, LATER)[None].linked == 2
        m.supersede("old", "new", workspace=WS)

        facts = m.store.health_facts(WS, LATER)[None]
        assert (facts.active, facts.vectored) == (2, 2)
        # An edge to a replaced memory reaches nothing recall's walk can return.
        assert facts.linked == 0
        # Coherence reads the vectors of the memories valid now only.
        assert m.store.vector_matrix(ScopeFilter(WS)).shape[0] == 2
        assert m.stats(WS).active_memories == 2


def test_decay_and_stage_retirement_leave_superseded_memories_alone(
    mem: Episodic, clock: Clock
) -> None:
    task = {"domain": "task", "phase": "design"}
    clock.now = T0
    mem.remember("Design reviews happen on Mondays.", workspace=WS, id="old", payload=task)
    mem.remember("Design reviews happen on Tuesdays.", workspace=WS, id="new", payload=task)
    mem.supersede("old", "new", workspace=WS)
    before = mem.store.get_memory(WS, "old")

    clock.now = T0 + timedelta(days=200)
    mem.decay(workspace=WS)
    assert mem.store.get_memory(WS, "new").importance < before.importance  # decay ran
    assert mem.store.get_memory(WS, "old") == before

    assert mem.retire_phase(WS, "design") == ["new"]
    after = mem.store.get_memory(WS, "old")
    assert after.status is MemoryStatus.SUPERSEDED and after.superseded_by == "new"


@pytest.mark.parametrize(
    "selector",
    [{"memory": "new"}, {"conversation": "c-new"}, {"agent": "helper"}, {"resource": "r-new"}],
)
def test_forgetting_the_replacing_memory_gives_the_old_one_back(
    mem: Episodic, selector: dict[str, str]
) -> None:
    mem.remember(STANDUP, workspace=WS, id="old", agent="planner", conversation="c-old")
    mem.remember(
        "The standup moved to 10am.",
        workspace=WS,
        id="new",
        agent="helper",
        conversation="c-new",
        resource="r-new",
    )
    mem.supersede("old", "new", workspace=WS)

    mem.forget(workspace=WS, **selector)
    old = mem.store.get_memory(WS, "old")
    assert (old.status, old.valid_to, old.superseded_by) == (MemoryStatus.ACTIVE, None, None)
    assert mem.store.supersessions(WS, ["old", "new"]) == []
    hits = mem.recall("standup room 4", workspace=WS, mark=False).hits
    assert [h.id for h in hits] == ["old"]


def test_forgetting_the_replaced_memory_drops_the_link_and_keeps_the_new(mem: Episodic) -> None:
    mem.remember(STANDUP, workspace=WS, id="old", conversation="c-old")
    mem.remember("The standup moved to 10am.", workspace=WS, id="new")
    mem.supersede("old", "new", workspace=WS)

    mem.forget(workspace=WS, conversation="c-old")
    assert mem.store.supersessions(WS, ["old", "new"]) == []
    assert status(mem, "new") is MemoryStatus.ACTIVE
    assert mem.doctor(deep=True).ok


def deep_findings(mem: Episodic) -> dict[str, tuple[str, int]]:
    return {
        c.name: (c.status, c.count)
        for c in mem.doctor(deep=True).checks
        if c.name.startswith("orphans.")
    }


def test_doctor_accepts_superseded_memories(mem: Episodic, clock: Clock) -> None:
    replace_later(mem, clock, "old", "new")
    assert deep_findings(mem)["orphans.supersessions"] == ("ok", 0)
    assert mem.doctor(deep=True).ok


# Damage planted with raw SQL (PostgreSQL: with foreign keys and triggers off).
DAMAGE = {
    "old memory made active again": "UPDATE memories SET status = 'active' WHERE id = 'old'",
    "link deleted": "DELETE FROM supersessions",
    "replacing memory deleted": "DELETE FROM memories WHERE id = 'new'",
}


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_doctor_flags_a_supersession_that_does_not_hold(
    mem: Episodic, clock: Clock, db_url: str, damage: str
) -> None:
    replace_later(mem, clock, "old", "new")
    off = "" if db_url.startswith("sqlite") else "SET session_replication_role = replica; "
    raw_execute(db_url, off + DAMAGE[damage])
    state, count = deep_findings(mem)["orphans.supersessions"]
    assert state == "error" and count >= 1
    assert not mem.doctor(deep=True).ok
