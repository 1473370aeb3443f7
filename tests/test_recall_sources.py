"""One memory per source, and the right one: an entry stands for its message, but a
learning that says something else than the entry keeps its slot."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from episodic.model import Memory
from episodic.recall.sources import one_per_source
from episodic.recall.trace import DROP_SAME_SOURCE, Trace

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


def test_a_learning_above_an_entry_that_says_something_else_keeps_its_slot() -> None:
    learning = memory("lrn", "learning", HINTS, HINTS)
    entry = memory("ent", "entry", PROJECT, PROJECT)
    kept, trace = order([learning, entry])
    # The user's instruction ranked first is not replaced by the message's other sentence.
    assert kept == ["lrn"]
    [dropped] = trace.dropped
    assert (dropped.memory_id, dropped.reason) == ("ent", DROP_SAME_SOURCE)
    # The trace does not claim the two say the same.
    assert dropped.detail == "made from the message lrn was made from, and ranked below it"


def test_an_entry_that_says_what_a_learning_says_takes_its_slot() -> None:
    learning = memory("lrn", "learning", HINTS, HINTS)
    entry = memory("ent", "entry", HINTS, HINTS)
    other = memory("other", "message", "unrelated", source="msg-2")
    kept, trace = order([learning, other, entry])
    assert kept == ["ent", "other"]
    assert [(d.memory_id, d.detail) for d in trace.dropped] == [("lrn", "ent stands for it")]


def test_an_entry_stands_for_its_message() -> None:
    message = memory("msg", "message", f"Sam: {PROJECT} {HINTS}")
    entry = memory("ent", "entry", PROJECT, PROJECT)
    kept, trace = order([message, entry])
    assert kept == ["ent"]
    assert [(d.memory_id, d.detail) for d in trace.dropped] == [("msg", "ent stands for it")]


def test_a_memory_below_one_that_says_it_whole_says_so() -> None:
    entry = memory("ent", "entry", HINTS, HINTS)
    learning = memory("lrn", "learning", HINTS, HINTS)
    message = memory("msg", "message", f"Sam: {PROJECT} {HINTS}")
    kept, trace = order([entry, learning, message])
    assert kept == ["ent"]
    assert [d.detail for d in trace.dropped] == ["says what ent says", "ent was made from it"]


def test_an_entry_takes_a_learnings_slot_by_most_of_its_words_not_by_a_part() -> None:
    learning = memory("lrn", "learning", HINTS, HINTS)
    # The same request quoted without its "Please": it says what the learning says.
    nearly = "Always use type hints in any Python code you show me."
    kept, _ = order([learning, memory("ent", "entry", nearly, nearly)])
    assert kept == ["ent"]
    # Half of it is not the same statement: the learning keeps its slot.
    half = "use type hints"
    kept, _ = order([learning, memory("ent", "entry", half, half)])
    assert kept == ["lrn"]
