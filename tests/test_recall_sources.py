"""One memory per statement of a source: a message that says two things keeps both the
memories made of it, and only a memory another shown one says whole gives way."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from typing import Any

import pytest

from episodic import Episodic, Settings
from episodic.model import Memory
from episodic.recall.sources import one_per_source
from episodic.recall.trace import DROP_SAME_SOURCE, Trace
from episodic.store import open_store

T0 = datetime(2026, 5, 8, 13, 0, tzinfo=UTC)
PROJECT = "I'm building a small Flask app for my bakery's online orders."
HINTS = "Please always use type hints in any Python code you show me."


def memory(
    mid: str, kind: str, content: str, evidence: str | None = None, source: str = "msg-1"
) -> Memory:
    payload: dict[str, Any] = {} if evidence is None else {"evidence": evidence}
    return Memory(
        id=mid,
        workspace="w",
        ts=T0,
        type=kind,
        content=content,
        payload=payload,
        source_event_ids=(source,),
    )


def order(ranked: list[Memory], k: int = 5) -> tuple[list[str], Trace]:
    memories = {m.id: m for m in ranked}
    trace = Trace("default", "q", "q")

    def fetch(ids: Sequence[str]) -> None:
        pass

    scored = [(m.id, 1.0 - n / 10) for n, m in enumerate(ranked)]
    return [i for i, _ in one_per_source(scored, memories, fetch, k, trace)], trace


def test_a_learning_and_an_entry_of_one_message_that_say_different_things_both_stay() -> None:
    learning = memory("lrn", "learning", HINTS, HINTS)
    entry = memory("ent", "entry", PROJECT, PROJECT)
    kept, trace = order([learning, entry])
    assert kept == ["lrn", "ent"]
    assert not trace.dropped
    # The other way round too: the entry above does not hide the learning.
    kept, _ = order([entry, learning])
    assert kept == ["ent", "lrn"]


def test_an_entry_that_says_what_a_learning_says_takes_its_slot() -> None:
    learning = memory("lrn", "learning", HINTS, HINTS)
    entry = memory("ent", "entry", HINTS, HINTS)
    kept, trace = order([learning, memory("other", "message", "unrelated", source="msg-2"), entry])
    assert kept[:2] == ["ent", "other"]
    assert [(d.memory_id, d.reason) for d in trace.dropped] == [("lrn", DROP_SAME_SOURCE)]


def test_an_entry_takes_the_slot_of_a_message_it_quotes_whole() -> None:
    message = memory("msg", "message", "Dana: " + HINTS)
    entry = memory("ent", "entry", HINTS, HINTS)
    kept, trace = order([message, entry])
    assert kept == ["ent"]
    assert trace.dropped[0].memory_id == "msg"


def test_a_message_saying_more_than_its_entry_keeps_its_slot_and_the_entry_gives_way() -> None:
    message = memory("msg", "message", f"Sam: {PROJECT} {HINTS}")
    entry = memory("ent", "entry", PROJECT, PROJECT)
    kept, trace = order([message, entry])
    # The message says all the entry says; the entry would hide the type-hints request.
    assert kept == ["msg"]
    assert [(d.memory_id, d.detail) for d in trace.dropped] == [("ent", "says what msg says")]


@pytest.fixture
def svc(db_url: str) -> Iterator[Episodic]:
    mem = Episodic(store=open_store(db_url), embedder=None, settings=Settings(), llm=None)
    yield mem
    mem.close()


def test_a_users_instruction_stays_beside_what_else_the_message_said(svc: Episodic) -> None:
    chat = dict(workspace="me", conversation="c1", agent="coder", resource="user:sam")
    svc.add_message(f"{PROJECT} {HINTS}", role="user", name="Sam", **chat)
    svc.add_message("Great, here is a first route for the orders.", role="assistant", **chat)
    svc.segment(flush=True)
    hits = svc.recall("Python code for the online orders app", workspace="me", k=5).hits
    # Both statements of the message are found, by whichever memory carries each (the
    # episode's summary, which quotes the whole session, aside).
    said = [h.memory.content for h in hits if h.memory.type != "episode"]
    assert any(HINTS in text for text in said), said
    assert any(PROJECT in text for text in said), said


def test_a_message_gives_way_to_a_memory_made_of_it_that_ranks_above_it() -> None:
    learning = memory("lrn", "learning", HINTS, HINTS)
    message = memory("msg", "message", f"Sam: {PROJECT} {HINTS}")
    entry = memory("ent", "entry", PROJECT, PROJECT)
    kept, trace = order([learning, message, entry])
    # The message's other statement comes back by its own entry, not by the message again.
    assert kept == ["lrn", "ent"]
    assert [(d.memory_id, d.detail) for d in trace.dropped] == [("msg", "says what lrn says")]
