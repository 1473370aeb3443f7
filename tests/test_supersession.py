"""Supersession end to end, on both backends: a newer memory replaces an older one of the
same slot (decided on write by the offline rule, or asked for by name), the replaced one
stays stored but leaves default recall, ``as_of`` answers as memory stood then,
``include_superseded`` shows both, the trace says what replaced what, and forgetting the
newer memory gives the older one back."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from episodic import Episodic, InvalidInput, Settings
from episodic.model import Hit, Memory, MemoryStatus, ScopeFilter
from episodic.recall.policies import DEFAULT, RecallPolicy

WS = "acme"
T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
OLD = "Always pay my subscriptions with card A."
NEW = "Card A expired. From now on pay my subscriptions with card B."
QUESTION = "which card pays my subscriptions"


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def mem(db_url: str, clock: Clock) -> Iterator[Episodic]:
    m = Episodic.open(db_url, embedder=None, settings=Settings(), clock=clock)
    yield m
    m.close()


def ids(mem: Episodic, **options: object) -> list[str]:
    return [h.id for h in mem.recall(QUESTION, workspace=WS, mark=False, **options).hits]


def test_a_later_change_replaces_the_old_fact_in_recall(mem: Episodic, clock: Clock) -> None:
    old = mem.remember(OLD, workspace=WS, agent="billing", id="card-a")
    clock.now = T0 + timedelta(days=21)
    new = mem.remember(NEW, workspace=WS, agent="billing", id="card-b")

    replaced = mem.store.get_memory(WS, old.id)
    assert replaced.status is MemoryStatus.SUPERSEDED
    assert replaced.superseded_by == new.id and replaced.valid_to == new.ts
    [link] = mem.store.supersessions(WS, [old.id])
    assert link.new_id == new.id and link.decided_by.startswith("offline:")

    assert ids(mem) == ["card-b"]
    assert set(ids(mem, include_superseded=True)) == {"card-a", "card-b"}
    # As memory stood two weeks in: card A, and nothing of the change to come.
    assert ids(mem, as_of=T0 + timedelta(days=14)) == ["card-a"]
    assert ids(mem, as_of=(T0 + timedelta(days=22)).isoformat()) == ["card-b"]

    trace = mem.recall(QUESTION, workspace=WS, mark=False, explain=True).trace
    assert trace is not None
    [drop] = [d for d in trace.dropped if d.memory_id == "card-a"]
    assert drop.reason == "superseded" and "card-b" in drop.detail and "offline:" in drop.detail


def test_detection_can_be_turned_off(db_url: str, clock: Clock) -> None:
    with Episodic.open(
        db_url, embedder=None, settings=Settings(supersession="off"), clock=clock
    ) as mem:
        mem.remember(OLD, workspace=WS, id="card-a")
        clock.now = T0 + timedelta(days=21)
        mem.remember(NEW, workspace=WS, id="card-b")
        assert set(ids(mem)) == {"card-a", "card-b"}
        assert mem.store.get_memory(WS, "card-a").status is MemoryStatus.ACTIVE


def test_look_alike_facts_of_another_slot_both_stay(mem: Episodic, clock: Clock) -> None:
    mem.remember("Pay the groceries with card A.", workspace=WS, id="groceries")
    clock.now = T0 + timedelta(days=3)
    mem.remember("From now on pay the subscriptions with card B.", workspace=WS, id="subs")
    assert mem.store.get_memory(WS, "groceries").status is MemoryStatus.ACTIVE


def test_an_explicit_replacement_by_text_and_forgetting_it(mem: Episodic, clock: Clock) -> None:
    mem.remember("The staging database is db-old.internal", workspace=WS, agent="ops", id="db")
    clock.now = T0 + timedelta(days=5)
    new = mem.supersede(
        "db", "The staging database is db-new.internal", workspace=WS, reason="migrated"
    )
    assert new.agent == "ops" and new.content.endswith("db-new.internal")
    old = mem.store.get_memory(WS, "db")
    assert old.status is MemoryStatus.SUPERSEDED and old.superseded_by == new.id
    [link] = mem.store.supersessions(WS, ["db"])
    assert (link.decided_by, link.reason) == ("explicit", "migrated")

    mem.forget(workspace=WS, memory=new.id)
    revived = mem.store.get_memory(WS, "db")
    assert revived.status is MemoryStatus.ACTIVE and revived.valid_to is None
    assert mem.store.supersessions(WS, ["db"]) == []


def test_an_explicit_replacement_by_id_and_its_errors(mem: Episodic, clock: Clock) -> None:
    mem.remember("the on-call phone is 555-0100", workspace=WS, id="phone-1")
    clock.now = T0 + timedelta(days=1)
    mem.remember("ops rota printed", workspace=WS, id="other")
    assert mem.supersede("phone-1", "other", workspace=WS, reason="moved").id == "other"
    [link] = mem.store.supersessions(WS, ["phone-1"])
    assert (link.decided_by, link.reason) == ("explicit", "moved")
    with pytest.raises(InvalidInput) as again:
        mem.supersede("phone-1", "a third text", workspace=WS)
    assert again.value.field == "old_id"
    with pytest.raises(InvalidInput) as itself:
        mem.supersede("other", "other", workspace=WS)
    assert itself.value.field == "new"
    with pytest.raises(InvalidInput) as bad:
        mem.recall(QUESTION, workspace=WS, as_of="last tuesday")
    assert bad.value.field == "as_of"
    with pytest.raises(InvalidInput) as flag:
        mem.recall(QUESTION, workspace=WS, include_superseded="yes")  # type: ignore[arg-type]
    assert flag.value.field == "include_superseded"


def test_remember_with_replaces(mem: Episodic, clock: Clock) -> None:
    mem.remember("deploys go through Jenkins", workspace=WS, id="ci-1")
    clock.now = T0 + timedelta(days=2)
    new = mem.remember("deploys go through GitHub Actions", workspace=WS, replaces="ci-1")
    assert mem.store.get_memory(WS, "ci-1").superseded_by == new.id
    with pytest.raises(InvalidInput) as gone:
        mem.remember("deploys go through Buildkite", workspace=WS, replaces="ci-1")
    assert gone.value.field == "replaces"


def test_a_corrective_learning_supersedes_what_the_assistant_said(
    mem: Episodic, clock: Clock
) -> None:
    mem.add_messages(
        [
            {"id": "u1", "role": "user", "content": "Please book me a train to Lyon on Friday."},
            {
                "id": "a1",
                "role": "assistant",
                "content": "I will book the 9am train to Lyon on Friday.",
            },
            {"id": "u2", "role": "user", "content": "No, book the 11am train to Lyon instead."},
        ],
        conversation="trip",
        workspace=WS,
        agent="travel",
    )
    clock.now = T0 + timedelta(hours=1)
    mem.segment(flush=True, workspace=WS)
    said = mem.store.get_memory(WS, "a1")
    assert said.status is MemoryStatus.SUPERSEDED
    [link] = mem.store.supersessions(WS, ["a1"])
    assert link.decided_by == "explicit:corrective"
    learning = mem.store.get_memory(WS, link.new_id)
    assert learning.type == "learning" and "11am" in learning.content
    # The user's own request stands: only what the assistant said was corrected.
    assert mem.store.get_memory(WS, "u1").status is MemoryStatus.ACTIVE


def test_the_episode_of_a_replaced_message_goes_with_it(mem: Episodic, clock: Clock) -> None:
    mem.add_messages(
        [
            {"id": "c1", "role": "user", "content": OLD},
            {"id": "c2", "role": "assistant", "content": "Noted."},
        ],
        conversation="day-1",
        workspace=WS,
        agent="billing",
    )
    clock.now = T0 + timedelta(hours=2)
    mem.segment(flush=True, workspace=WS)
    [episode] = [m for m in mem.recent(workspace=WS, conversation="day-1")]
    clock.now = T0 + timedelta(days=21)
    mem.add_messages(
        [{"id": "c3", "role": "user", "content": NEW}],
        conversation="day-22",
        workspace=WS,
        agent="billing",
    )
    clock.now = T0 + timedelta(days=21, hours=2)
    mem.segment(flush=True, workspace=WS)

    assert mem.store.get_memory(WS, "c1").superseded_by == "c3"
    replaced = mem.store.get_memory(WS, episode.id)
    assert replaced.status is MemoryStatus.SUPERSEDED and replaced.superseded_by == "c3"
    assert mem.store.get_memory(WS, "c2").status is MemoryStatus.ACTIVE  # not made from c1
    hits = mem.recall(QUESTION, workspace=WS, mark=False).hits
    assert not {h.id for h in hits} & {"c1", episode.id}
    # The change is there, as itself or as the episode made from it.
    assert any(h.id == "c3" or "c3" in h.memory.source_event_ids for h in hits)
    then = {
        h.id
        for h in mem.recall(QUESTION, workspace=WS, mark=False, as_of=T0 + timedelta(days=1)).hits
    }
    assert then & {"c1", episode.id} and "c3" not in then
    mem.forget(workspace=WS, memory="c3")
    assert mem.store.get_memory(WS, episode.id).status is MemoryStatus.ACTIVE


def test_an_episode_segmented_after_the_change_is_replaced_too(mem: Episodic, clock: Clock) -> None:
    mem.add_messages(
        [{"id": "d1", "role": "user", "content": OLD}], conversation="day-1", workspace=WS
    )
    clock.now = T0 + timedelta(days=21)
    mem.add_messages(
        [{"id": "d2", "role": "user", "content": NEW}], conversation="day-22", workspace=WS
    )
    mem.check_supersessions()
    assert mem.store.get_memory(WS, "d1").superseded_by == "d2"
    clock.now = T0 + timedelta(days=21, hours=2)
    mem.segment(flush=True, workspace=WS)  # both conversations become episodes only now

    def episode_of(conversation: str) -> Memory:
        flt = ScopeFilter(workspace_id=WS, conversation_id=conversation, types=("episode",))
        [episode] = mem.list_memories(flt).items
        return episode

    old_episode, new_episode = episode_of("day-1"), episode_of("day-22")
    assert mem.recent(workspace=WS, conversation="day-1") == []  # out of default views
    replaced = mem.store.get_memory(WS, old_episode.id)
    assert replaced.status is MemoryStatus.SUPERSEDED and replaced.superseded_by == "d2"
    assert mem.store.get_memory(WS, new_episode.id).status is MemoryStatus.ACTIVE


def test_a_note_cannot_replace_a_memory_newer_than_itself(mem: Episodic, clock: Clock) -> None:
    mem.remember("the launch is planned for May", workspace=WS, id="plan")
    clock.now = T0 - timedelta(days=1)  # a clock behind the stored memory
    with pytest.raises(InvalidInput) as early:
        mem.remember("the launch moved to June", workspace=WS, replaces="plan")
    assert early.value.field == "replaces"
    assert mem.store.get_memory(WS, "plan").status is MemoryStatus.ACTIVE
    assert [m.id for m in mem.list_memories(ScopeFilter(workspace_id=WS)).items] == ["plan"]


def test_an_episode_is_replaced_by_name_as_by_its_message_never_by_its_own_source(
    mem: Episodic, clock: Clock
) -> None:
    # Detection replaces an episode with a message it was made from; a user may replace it
    # by name the same way. Never one over its own source: the episode and the message
    # it recounts do not replace each other.
    mem.add_messages(
        [
            {"id": "c1", "role": "user", "content": OLD},
            {"id": "c2", "role": "assistant", "content": "Noted."},
        ],
        conversation="day-1",
        workspace=WS,
        agent="billing",
    )
    clock.now = T0 + timedelta(hours=2)
    mem.segment(flush=True, workspace=WS)
    [episode] = [m for m in mem.recent(workspace=WS, conversation="day-1")]

    with pytest.raises(InvalidInput) as made:
        mem.supersede("c1", episode.id, workspace=WS)
    assert made.value.field == "new"
    assert mem.store.get_memory(WS, "c1").status is MemoryStatus.ACTIVE

    clock.now = T0 + timedelta(days=21)
    newer = mem.supersede(episode.id, NEW, workspace=WS, reason="the card changed")
    replaced = mem.store.get_memory(WS, episode.id)
    assert replaced.status is MemoryStatus.SUPERSEDED and replaced.superseded_by == newer.id
    assert episode.id not in {h.id for h in mem.recall(QUESTION, workspace=WS, mark=False).hits}


PLANS = "I'm planning a two-week trip to Japan with my partner Tomas. We land in Tokyo on April 3."
FLIGHT_MOVED = (
    "Quick update: our flight changed, we now land in Tokyo on April 5 instead of April 3."
)


def tell_the_trip(mem: Episodic, clock: Clock) -> None:
    """Two sessions of a chat a week apart: the plans (m1), then the flight moved (m2),
    each segmented when it ends."""
    trip = {"workspace": WS, "agent": "planner", "resource": "user:ines"}
    for day, (message_id, content) in enumerate([("m1", PLANS), ("m2", FLIGHT_MOVED)]):
        clock.now = T0 + timedelta(days=7 * day)
        mem.add_messages(
            [{"id": message_id, "role": "user", "content": content}],
            conversation=f"day-{day + 1}",
            **trip,
        )
        mem.segment(flush=True, workspace=WS)


def test_a_changed_date_replaces_the_entry_and_leaves_the_message_that_says_more(
    mem: Episodic, clock: Clock
) -> None:
    tell_the_trip(mem, clock)

    landing = [
        m
        for m in mem.store.list_memories(ScopeFilter(workspace_id=WS), 50, statuses=None)
        if m.content == "We land in Tokyo on April 3."
    ]
    assert [m.status for m in landing] == [MemoryStatus.SUPERSEDED], landing
    [link] = mem.store.supersessions(WS, [landing[0].id])
    assert link.decided_by == "offline:instead-of"
    # The message also says who travels and for how long: it stays, and recall finds it.
    assert mem.store.get_memory(WS, "m1").status is MemoryStatus.ACTIVE
    hits = mem.recall("who comes on the two-week trip to Japan", workspace=WS, mark=False).hits
    assert any("partner Tomas" in h.memory.content for h in hits), hits
    landed = mem.recall("when do we land in Tokyo", workspace=WS, mark=False).hits
    assert landing[0].id not in [h.id for h in landed]
    assert any("April 5" in h.memory.content for h in landed)


def test_the_message_that_says_more_is_ordered_below_the_change_and_marked_earlier(
    mem: Episodic, clock: Clock
) -> None:
    tell_the_trip(mem, clock)
    ordered = dataclasses.replace(DEFAULT, changed_first=True)

    def hits(question: str, policy: RecallPolicy) -> list[Hit]:
        return mem.recall(question, workspace=WS, mark=False, policy=policy).hits

    now = hits("where and when do we land in Tokyo", ordered)
    ids = [h.id for h in now]
    newer = now[ids.index("m1")].newer
    assert newer is not None and ids.index(newer) < ids.index("m1")
    assert "April 5" in mem.store.get_memory(WS, newer).content
    assert "earlier than" in mem.render(
        "where and when do we land in Tokyo", workspace=WS, policy=ordered
    )
    # The same hits under `default`, and under a question about what was said then.
    assert sorted(ids) == sorted(h.id for h in hits("where and when do we land in Tokyo", DEFAULT))
    assert all(h.newer is None for h in hits("where did we first plan to land", ordered))
