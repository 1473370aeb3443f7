"""Among the hits recall returns, a newer one that states a changed value ("I've raised my
grocery budget to $550") goes just above the older one it restates, for a question asking
what something is now (recall/supersede.py: restated_first_within). Only the order of the
hits changes; nothing enters, leaves or is hidden."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta

import pytest

from episodic import Episodic
from episodic.embed.local import MiniLMEmbedder
from episodic.model import Memory
from episodic.recall.policies import DEFAULT
from episodic.recall.supersede import Hits, _may_share, restated_first_within
from episodic.write.questions import asks_for_current_value

T = datetime(2026, 3, 2, tzinfo=UTC)
WEEK = timedelta(days=7)
OLD = "My monthly grocery budget is $400 and I shop on Saturdays."
RAISED = "I've raised my monthly grocery budget to $550, can you help me plan meals for it?"
QUESTION = "What is my monthly grocery budget?"


def memory(memory_id: str, text: str, week: int, **fields: str) -> Memory:
    return Memory(
        id=memory_id,
        workspace="w",
        ts=T + week * WEEK,
        type="turn",
        content=text,
        agent=fields.get("agent", "user"),
        conversation=fields.get("conversation", f"s{week}"),
    )


def order(
    memories: list[Memory], question: str = QUESTION, shared: int = 3
) -> tuple[list[str], dict[str, str]]:
    """The ids in the order ``restated_first_within`` gives, the hits in the order given,
    and which ids it marks earlier."""
    chosen = [(m.id, 1.0 - n / 10) for n, m in enumerate(memories)]
    earlier: dict[str, str] = {}
    hits = Hits(chosen, {m.id: m for m in memories}, question, earlier=earlier)
    out = restated_first_within(hits, shared)
    return [i for i, _ in out], earlier


def hits(newer: str, **fields: str) -> list[Memory]:
    return [
        memory("old", OLD, 0),
        memory("aside", "I started running three times a week before work.", 1),
        memory("new", newer, 2, **fields),
    ]


def test_a_restated_value_goes_just_above_the_older_and_marks_it() -> None:
    ids, earlier = order(hits(RAISED))
    assert ids == ["new", "old", "aside"]  # the newer lifted, the rest keep their order
    assert earlier == {"old": "new"}


@pytest.mark.parametrize(
    ("newer", "question", "fields"),
    [
        # the newer text states no change: a plain restatement, a question, a plan
        ("My monthly grocery budget is $550 and I shop on Sundays.", QUESTION, {}),
        ("Should I raise my monthly grocery budget to $550?", QUESTION, {}),
        ("I'm planning to raise my monthly grocery budget to $550.", QUESTION, {}),
        # a question about the past, or one that asks for no value
        (RAISED, "What was my monthly grocery budget?", {}),
        (RAISED, "Can you remind me of my monthly grocery budget?", {}),
        # another speaker's later turn, and a turn of the same conversation
        (RAISED, QUESTION, {"agent": "assistant"}),
        (RAISED, QUESTION, {"conversation": "s0"}),
        # a change about another subject than the one asked about
        ("I've raised my monthly gym budget to $55.", QUESTION, {}),
    ],
)
def test_what_does_not_move(newer: str, question: str, fields: dict[str, str]) -> None:
    ids, earlier = order(hits(newer, **fields), question)
    assert ids == ["old", "aside", "new"]
    assert earlier == {}


def test_the_words_shared_are_counted_against_the_threshold() -> None:
    """ "monthly", "grocery", "budget": three words the question, the change and the older
    text share; asking for four moves nothing, and 0 is off."""
    assert order(hits(RAISED), shared=3)[0][0] == "new"
    assert order(hits(RAISED), shared=4)[0][0] == "old"
    assert order(hits(RAISED), shared=0)[0][0] == "old"


def test_only_an_older_one_is_passed() -> None:
    """A stated change written before the other memory does not go above it."""
    memories = [memory("old", OLD, 2), memory("new", RAISED, 0)]
    assert order(memories)[0] == ["old", "new"]


@pytest.mark.parametrize(
    ("question", "asks"),
    [
        ("What is my monthly grocery budget?", True),
        ("How many commits are merged now?", True),
        ("When is the standup?", True),
        ("What was my monthly grocery budget?", False),
        ("Can you list what I asked about budgets?", False),
        ("Have I ever missed a standup?", False),
        ("", False),
    ],
)
def test_which_questions_ask_what_something_is_now(question: str, asks: bool) -> None:
    assert asks_for_current_value(question) is asks


PLAIN = dataclasses.replace(DEFAULT, restated_words=0)


def remember_turns(db_url: str, newer: str) -> Episodic:
    """A budget, a reply, an aside, then in a later conversation ``newer`` and an aside,
    a week apart each, recalled with the real model."""
    clock = [T]
    mem = Episodic.open(db_url, embedder=MiniLMEmbedder(), clock=lambda: clock[0])
    turns = [
        ("old", "s1", "user", OLD),
        ("reply", "s1", "assistant", "A $400 grocery budget works well with seasonal produce."),
        ("aside", "s1", "user", "I also started running three times a week before work."),
        ("new", "s2", "user", newer),
        ("visit", "s2", "user", "My sister is visiting next month and she is vegetarian."),
    ]
    for n, (memory_id, chat, who, text) in enumerate(turns):
        clock[0] = T + n * WEEK
        mem.remember(text, workspace="w", id=memory_id, conversation=chat, agent=who)
    mem.index_once()
    return mem


@pytest.mark.model
def test_default_recall_puts_a_restated_value_above_the_older(db_url: str) -> None:
    mem = remember_turns(db_url, RAISED)
    plain = [h.id for h in mem.recall(QUESTION, workspace="w", k=5, policy=PLAIN, mark=False).hits]
    result = mem.recall(QUESTION, workspace="w", k=5, mark=False)
    order = [h.id for h in result.hits]

    assert plain.index("old") < plain.index("new")  # as recall ranks them without the step
    assert sorted(order) == sorted(plain)  # the same five
    assert order.index("new") == order.index("old") - 1  # just above the older
    assert next(h for h in result.hits if h.id == "old").newer == "new"
    block = mem.render(QUESTION, workspace="w", k=5)
    assert "earlier than new" in block
    mem.close()


@pytest.mark.model
def test_a_newer_similar_turn_that_states_no_change_stays(db_url: str) -> None:
    mem = remember_turns(db_url, "My monthly grocery budget covers fruit for the whole family.")
    plain = mem.recall(QUESTION, workspace="w", k=5, policy=PLAIN, mark=False).hits
    restated = mem.recall(QUESTION, workspace="w", k=5, mark=False).hits

    assert [h.id for h in restated] == [h.id for h in plain]
    assert all(h.newer is None for h in restated)
    mem.close()


def test_the_older_is_read_only_where_its_text_holds_the_words() -> None:
    """A stem is a prefix of its word, so a text that holds too few of the question's
    stems anywhere cannot share them once read; one written with a typographic
    apostrophe is looked at as its words read it."""
    asked = frozenset({"monthly", "grocery", "budget"})
    assert _may_share(OLD, asked, 3)
    assert not _may_share("My monthly gym fee is $40.", asked, 3)
    assert _may_share("I love rock\u2019n\u2019roll gigs", frozenset({"rock'n'roll"}), 1)
