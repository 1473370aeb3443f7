"""A partial change, end to end on both backends: a newer memory that changes one sentence
of an older one which says more (the rule's ``says-more``) is linked on write instead of
replacing it; ``why`` lists the link at both ends, recall (``partly_changed``) ranks the
newer just above the older and marks the older earlier, ``restore`` undoes the link for
good, and forgetting either end forgets it. The guards hold on the offline and on the
model's path alike."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from typer.testing import CliRunner

from conftest import raw_execute
from episodic import Episodic, NotFound, Settings
from episodic.cli import app
from episodic.embed.fake import FakeEmbedder
from episodic.http import asgi
from episodic.llm.base import ScriptedLLM
from episodic.model import Hit, Memory, MemoryStatus, ScopeFilter
from episodic.recall.policies import DEFAULT, RecallPolicy
from episodic.recall.supersede import PARTLY_BRING_IN, PARTLY_ORDER, Hits, partly_changed_first
from episodic.service.decisions import CHANGES_PART_OF, PARTLY_CHANGED_BY
from episodic.store import open_store
from episodic.write.supersession import Claim, partial_change
from servers import call, serve
from supersession_support import T0, WS, Clock
from test_supersession import tell_the_trip

BOOKED = (
    "We booked the Fuji-ya Inn, a ryokan in Hakone with a private onsen. "
    "The Hakone ryokan is 240 euros a night."
)
CORRECTED = "Correction: the Hakone ryokan is 210 euros, not 240."
COST = "what does the Hakone ryokan cost"
TRIP = {"workspace": WS, "agent": "planner", "resource": "user:ines"}
ORDERED = DEFAULT  # partly_changed 1
OFF = dataclasses.replace(DEFAULT, partly_changed=0)
BROUGHT_IN = dataclasses.replace(DEFAULT, partly_changed=2)
ENV = {"EPISODIC_EMBEDDER": "none", "COLUMNS": "250"}


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def mem(db_url: str, clock: Clock) -> Iterator[Episodic]:
    m = Episodic.open(db_url, embedder=None, settings=Settings(), clock=clock)
    yield m
    m.close()


def tell_the_prices(mem: Episodic, clock: Clock, **owner: str) -> None:
    """Two more sessions of the trip chat, a week apart after the first two: the ryokan
    booked at 240 euros (h1), then the user's correction to 210 (h2)."""
    for week, (message_id, content) in ((2, ("h1", BOOKED)), (3, ("h2", CORRECTED))):
        clock.now = T0 + timedelta(days=7 * week)
        mem.add_messages(
            [{"id": message_id, "role": "user", "content": content}],
            conversation=f"day-{week + 1}",
            **{**TRIP, **owner},
        )
        mem.segment(flush=True, workspace=WS)


def hits(mem: Episodic, question: str, policy: RecallPolicy) -> list[Hit]:
    return mem.recall(question, workspace=WS, mark=False, policy=policy).hits


def place_of(found: list[Hit], message_id: str) -> int:
    """Where the hit standing for a message is: the message itself or what was made
    from it (its session's episode, an entry of it)."""
    return next(n for n, h in enumerate(found) if message_id in (h.id, *h.memory.source_event_ids))


def claim(memory_id: str, day: int, owner: str = "ines", sources: tuple[str, ...] = ()) -> Claim:
    text = CORRECTED if memory_id.startswith("new") else BOOKED
    return Claim(
        memory_id,
        text,
        T0 + timedelta(days=day),
        owner=("planner", None, owner),
        sources=sources or (memory_id,),
    )


# -- the decision (pure) ------------------------------------------------------------------
def test_the_rule_links_a_change_of_one_sentence_of_a_memory_that_says_more() -> None:
    change = partial_change(claim("new", 7), claim("old", 0))
    assert change is not None
    assert change.decided_by == "offline:says-more:not-but"
    assert "says more" in change.reason


def test_no_link_across_owners_from_an_older_memory_or_over_its_own_source() -> None:
    assert partial_change(claim("new", 7, owner="tomas"), claim("old", 0)) is None
    assert partial_change(claim("new", 0), claim("old", 7)) is None
    # An entry drawn from the older message, or from the same one, never changes it.
    assert partial_change(claim("new", 7, sources=("old",)), claim("old", 0)) is None
    assert (
        partial_change(claim("new", 7, sources=("m9",)), claim("old", 0, sources=("m9",))) is None
    )


def test_a_change_that_replaces_the_whole_older_memory_is_no_partial_change() -> None:
    whole = dataclasses.replace(claim("old", 0), content="The Hakone ryokan is 240 euros a night.")
    assert partial_change(claim("new", 7), whole) is None


# -- the recall step over given links (a store that holds only them) ---------------------
class Links:
    """The two reads the step makes: the hits' links, and a newer memory brought in."""

    def __init__(self, links: dict[str, list[str]], stored: list[Memory]) -> None:
        self.links, self.stored = links, {m.id: m for m in stored}

    def partly_changed_by(self, workspace_id: str, old_ids: Any) -> dict[str, list[str]]:
        return {k: v for k, v in self.links.items() if k in old_ids}

    def get_memories(self, workspace_id: str, ids: Any) -> list[Memory]:
        return [self.stored[i] for i in ids if i in self.stored]


def memory(memory_id: str, day: int, *sources: str, **fields: Any) -> Memory:
    return Memory(
        **{"type": "message", **fields},
        id=memory_id,
        workspace=WS,
        ts=T0 + timedelta(days=day),
        content=memory_id,
        source_event_ids=sources or (memory_id,),
    )


def step(
    chosen: list[str], stored: list[Memory], links: dict[str, list[str]], level: int, **flt: Any
) -> tuple[list[str], dict[str, str]]:
    by_id = {m.id: m for m in stored}
    earlier: dict[str, str] = {}
    hits = Hits(
        [(i, 1.0 - n / 10) for n, i in enumerate(chosen)],
        {i: by_id[i] for i in chosen},
        "what does the ryokan cost",
        Links(links, stored),  # type: ignore[arg-type]
        ScopeFilter(workspace_id=WS, **flt),
        earlier,
        k=len(chosen),
    )
    return [i for i, _ in partly_changed_first(hits, level)], earlier


def test_a_hit_made_from_the_older_too_is_never_its_newer_partner() -> None:
    # "ep" recounts a session that held both the booking and its correction.
    stored = [memory("h1", 0), memory("h2", 7), memory("ep", 7, "h1", "h2", type="episode")]
    order, earlier = step(["h1", "ep", "h2"], stored, {"h1": ["h2"]}, PARTLY_ORDER)
    assert order == ["h2", "h1", "ep"] and earlier == {"h1": "h2"}
    # Its own hit made from both stands for neither end.
    order, earlier = step(["ep", "h2"], stored, {"h1": ["h2"]}, PARTLY_ORDER)
    assert order == ["ep", "h2"] and earlier == {}


def test_an_episode_takes_its_messages_links_and_an_entry_drawn_from_one_does_not() -> None:
    # The entry kept a sentence of the booking that stays true (the inn, the onsen).
    stored = [
        memory("ent", 0, "h1", type="entry"),
        memory("ep", 0, "h1", type="episode"),
        memory("h2", 7),
    ]
    order, earlier = step(["ent", "ep", "h2"], stored, {"h1": ["h2"]}, PARTLY_ORDER)
    assert order == ["ent", "h2", "ep"] and earlier == {"ep": "h2"}


def test_only_an_active_newer_memory_the_recall_may_see_is_brought_in() -> None:
    stored = [memory("h1", 0, conversation="c1"), memory("x", 1, conversation="c1")]
    newer = memory("h2", 7, conversation="c2")
    order, _ = step(["h1", "x"], [*stored, newer], {"h1": ["h2"]}, PARTLY_BRING_IN)
    assert order == ["h2", "h1"]  # the last hit gives its place up
    assert step(["h1", "x"], [*stored, newer], {"h1": ["h2"]}, PARTLY_ORDER)[0] == ["h1", "x"]
    seen_in_c1 = step(
        ["h1", "x"], [*stored, newer], {"h1": ["h2"]}, PARTLY_BRING_IN, conversation_id="c1"
    )
    assert seen_in_c1[0] == ["h1", "x"]
    retired = dataclasses.replace(newer, status=MemoryStatus.RETIRED)
    assert step(["h1", "x"], [*stored, retired], {"h1": ["h2"]}, PARTLY_BRING_IN)[0] == [
        "h1",
        "x",
    ]


# -- on write, through recall and render, on both backends ---------------------------------
def test_the_corrected_price_is_linked_and_ranked_above_what_it_corrects(
    mem: Episodic, clock: Clock
) -> None:
    tell_the_trip(mem, clock)
    tell_the_prices(mem, clock)

    # The booking says more (the inn, the onsen): it stays, linked to the correction.
    assert mem.store.get_memory(WS, "h1").status is MemoryStatus.ACTIVE
    links = mem.store.partial_changes(WS, ["h1"])
    assert ("h1", "h2") in {(s.old_id, s.new_id) for s in links}
    assert {s.decided_by for s in links} == {"offline:says-more:not-but"}
    stored = {m.id: m for m in mem.store.get_memories(WS, [s.new_id for s in links])}
    for link in links:  # each newer end is newer, and none is made from the booking
        assert stored[link.new_id].ts > mem.store.get_memory(WS, "h1").ts
        assert "h1" not in stored[link.new_id].source_event_ids

    assert DEFAULT.partly_changed == PARTLY_ORDER
    before = hits(mem, COST, OFF)
    assert place_of(before, "h1") < place_of(before, "h2")  # the order without the links
    after = hits(mem, COST, ORDERED)
    assert sorted(h.id for h in after) == sorted(h.id for h in before)
    older, newer = place_of(after, "h1"), place_of(after, "h2")
    assert newer == older - 1
    assert after[older].newer == after[newer].id
    assert "earlier than" in mem.render(COST, workspace=WS, policy=ORDERED)
    assert "earlier than" not in mem.render(COST, workspace=WS, policy=OFF)
    # A question about what was said then wants the booking as it stood.
    assert all(
        h.newer is None for h in hits(mem, "what did the Hakone ryokan cost at first", ORDERED)
    )


def test_a_one_sentence_booking_that_names_the_inn_is_linked_not_replaced(
    mem: Episodic, clock: Clock
) -> None:
    """The inn's name and the price in one sentence: the correction of the price leaves
    the name true, so the booking stays and is linked, as when they were two sentences."""
    booked = "The Hakone ryokan is the Fuji-ya Inn, it has a private onsen and costs 240 euros."
    for week, (message_id, content) in ((0, ("h1", booked)), (1, ("h2", CORRECTED))):
        clock.now = T0 + timedelta(days=7 * week)
        mem.add_messages(
            [{"id": message_id, "role": "user", "content": content}],
            conversation=f"day-{week + 1}",
            **TRIP,
        )
        mem.segment(flush=True, workspace=WS)

    assert mem.store.get_memory(WS, "h1").status is MemoryStatus.ACTIVE
    links = mem.store.partial_changes(WS, ["h1"])
    assert ("h1", "h2") in {(s.old_id, s.new_id) for s in links}
    found = hits(mem, COST, ORDERED)
    assert place_of(found, "h2") < place_of(found, "h1")
    assert "Fuji-ya" in mem.render("which inn did we book in Hakone", workspace=WS)


def test_the_correction_is_brought_in_when_only_the_booking_is_found(
    mem: Episodic, clock: Clock
) -> None:
    tell_the_trip(mem, clock)
    tell_the_prices(mem, clock)
    question = "the Fuji-ya Inn private onsen: what is it now"
    # Keyword search finds the booking's session alone: the correction names no onsen.
    [booking] = mem.recall(question, workspace=WS, mark=False, k=2).hits
    assert "h1" in (booking.id, *booking.memory.source_event_ids)
    ordered = mem.recall(question, workspace=WS, mark=False, k=2, policy=ORDERED).hits
    assert [h.id for h in ordered] == [booking.id]  # level 1 only orders

    brought = mem.recall(question, workspace=WS, mark=False, k=2, policy=BROUGHT_IN).hits
    assert [h.memory.content for h in brought[:1]] == [CORRECTED]
    assert [(h.id, h.newer) for h in brought[1:]] == [(booking.id, brought[0].id)]
    # With one place, the correction takes it.
    [alone] = mem.recall(question, workspace=WS, mark=False, k=1, policy=BROUGHT_IN).hits
    assert alone.memory.content == CORRECTED


def test_restoring_the_booking_undoes_the_link_for_good(
    mem: Episodic, clock: Clock, db_url: str
) -> None:
    tell_the_trip(mem, clock)
    tell_the_prices(mem, clock)
    clock.now += timedelta(hours=1)
    assert mem.restore("h1", workspace=WS, by="ines").status is MemoryStatus.ACTIVE
    undone = [d for d in mem.decisions("h1", workspace=WS) if d.kind == PARTLY_CHANGED_BY]
    assert undone and all(d.reverted and d.reverted_by == "ines" for d in undone)
    assert all(h.newer is None for h in hits(mem, COST, ORDERED))

    # Checked again, as a fresh write would be: the pair is never linked again.
    raw_execute(db_url, "UPDATE memories SET supersession_pending = 1 WHERE id = 'h2'")
    mem.check_supersessions()
    assert all(s.reverted_at is not None for s in mem.store.partial_changes(WS, ["h1"]))
    assert all(h.newer is None for h in hits(mem, COST, ORDERED))


def test_forgetting_the_correction_forgets_the_link(mem: Episodic, clock: Clock) -> None:
    tell_the_trip(mem, clock)
    tell_the_prices(mem, clock)
    newer = {s.new_id for s in mem.store.partial_changes(WS, ["h1"])}
    for memory_id in sorted(newer):
        mem.forget(workspace=WS, memory=memory_id)
    assert mem.store.partial_changes(WS, ["h1"]) == []
    assert mem.store.partly_changed_by(WS, ["h1"]) == {}
    assert all(h.newer is None for h in hits(mem, COST, ORDERED))


def test_another_owners_correction_links_nothing(mem: Episodic, clock: Clock) -> None:
    tell_the_prices(mem, clock, resource="user:tomas")
    raw_owner = mem.store.get_memory(WS, "h2")
    assert raw_owner.resource == "user:tomas"
    mem.forget(workspace=WS, memory="h1")
    clock.now = T0
    mem.add_messages(
        [{"id": "h0", "role": "user", "content": BOOKED}], conversation="day-0", **TRIP
    )
    mem.segment(flush=True, workspace=WS)
    clock.now = T0 + timedelta(days=40)
    mem.add_messages(
        [{"id": "h3", "role": "user", "content": CORRECTED}],
        conversation="day-9",
        **{**TRIP, "resource": "user:tomas"},
    )
    mem.segment(flush=True, workspace=WS)
    assert mem.store.partial_changes(WS, ["h0"]) == []


def test_a_model_that_declines_to_replace_leaves_the_link_to_the_rule(
    db_url: str, clock: Clock
) -> None:
    declines = {"decisions": [{"ref": "1", "decision": "unrelated", "reason": "says more"}]}
    m = Episodic(
        store=open_store(db_url),
        embedder=FakeEmbedder(dim=64),
        llm=ScriptedLLM([declines] * 20),
        settings=Settings(),
        clock=clock,
    )
    try:
        for week, (memory_id, text) in ((0, ("h1", BOOKED)), (1, ("h2", CORRECTED))):
            clock.now = T0 + timedelta(days=7 * week)
            m.remember(text, workspace=WS, agent="planner", resource="user:ines", id=memory_id)
            m.index_once()
        [link] = m.store.partial_changes(WS, ["h1"])
        assert (link.old_id, link.new_id, link.decided_by) == (
            "h1",
            "h2",
            "offline:says-more:not-but",
        )
        assert m.store.get_memory(WS, "h1").status is MemoryStatus.ACTIVE
    finally:
        m.close()


def test_the_store_links_only_an_active_older_memory_of_the_workspace(
    mem: Episodic, clock: Clock
) -> None:
    tell_the_prices(mem, clock)
    link = {"decided_by": "offline:says-more:not-but", "reason": "r", "at": clock.now}
    assert not mem.store.link_partial_change(WS, "h1", "h2", **link)  # linked on write
    with pytest.raises(NotFound):
        mem.store.link_partial_change(WS, "h1", "nope", **link)
    with pytest.raises(NotFound):
        mem.store.link_partial_change("elsewhere", "h1", "h2", **link)
    mem.store.set_status(WS, "h1", MemoryStatus.RETIRED)
    mem.store.revert_partial_changes(WS, "h1", by="t", at=clock.now)
    raw_links = mem.store.partial_changes(WS, ["h1"])
    assert raw_links and all(s.reverted_at is not None for s in raw_links)
    clock.now += timedelta(days=1)
    mem.add_messages(
        [{"id": "h4", "role": "user", "content": CORRECTED}], conversation="day-5", **TRIP
    )
    assert not mem.store.link_partial_change(WS, "h1", "h4", **link)  # h1 is retired
    assert mem.store.partly_changed_by(WS, ["h1"]) == {}


# -- the interfaces ------------------------------------------------------------------------
def cli(db_url: str, *args: str) -> Any:
    return CliRunner().invoke(app, ["--db", db_url, *args], env=ENV)


def test_cli_why_lists_the_link_at_both_ends_and_restore_undoes_it(
    mem: Episodic, clock: Clock, db_url: str
) -> None:
    tell_the_prices(mem, clock)
    why = cli(db_url, "memory", "why", "h1", "-w", WS)
    assert why.exit_code == 0, why.output
    said = " ".join(why.stdout.split())
    assert "partly_changed_by h2 (offline:says-more:not-but" in said
    assert "reverted" not in said
    newer = json.loads(cli(db_url, "memory", "why", "h2", "-w", WS, "--json").stdout)
    assert (CHANGES_PART_OF, "h1") in [(d["kind"], d["other"]) for d in newer["decisions"]]

    restored = cli(db_url, "memory", "restore", "h1", "-w", WS, "--json")
    assert restored.exit_code == 0, restored.output
    assert json.loads(restored.stdout)["status"] == "active"
    after = json.loads(cli(db_url, "memory", "why", "h1", "-w", WS, "--json").stdout)
    [undone] = [d for d in after["decisions"] if d["other"] == "h2"]
    assert (undone["kind"], undone["reverted"], undone["reverted_by"]) == (
        PARTLY_CHANGED_BY,
        True,
        "cli",
    )
    # Nothing left to undo: the same clear error as for any active memory.
    again = cli(db_url, "memory", "restore", "h1", "-w", WS)
    assert again.exit_code != 0 and "not superseded" in " ".join(again.output.split())


def test_http_decisions_lists_the_link(mem: Episodic, clock: Clock) -> None:
    tell_the_prices(mem, clock)
    _, secret = mem.create_key(WS, role="admin")
    with serve(asgi(mem)) as base:
        seen = call(base, secret, "GET", "/v1/memories/h1/decisions")
        assert seen.status_code == 200, seen.text
        kinds = [(d["kind"], d["other"], d["reverted"]) for d in seen.json()["decisions"]]
        assert (PARTLY_CHANGED_BY, "h2", False) in kinds
        done = call(base, secret, "POST", "/v1/memories/h1/restore")
        assert done.status_code == 200, done.text
        after = call(base, secret, "GET", "/v1/memories/h1/decisions").json()["decisions"]
        assert (PARTLY_CHANGED_BY, "h2", True) in [
            (d["kind"], d["other"], d["reverted"]) for d in after
        ]
