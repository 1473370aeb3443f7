"""The soft signal: among memories about the same subject recalled together, the newer
ranks first and the rendered block marks the older one as earlier (nothing hidden)."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from episodic import Episodic
from episodic.embed.local import MiniLMEmbedder
from episodic.model import Hit, Memory
from episodic.recall.policies import DEFAULT
from episodic.recall.render import hit_line, memory_line
from episodic.recall.supersede import Hits, changed_first_within
from episodic.scoring.supersede import newer_of, older_below_newer, same_subject
from episodic.store import open_store
from episodic.write.change_rules import change_kind
from episodic.write.questions import asks_for_now

T = datetime(2026, 3, 2, tzinfo=UTC)


def test_the_older_near_duplicate_is_named_earlier() -> None:
    ranked = [("old", 0.9), ("new", 0.8), ("other", 0.7)]
    similar = {"old": [("new", 0.9)], "new": [("old", 0.9)], "other": []}
    ts = {"old": T, "new": T + timedelta(days=3), "other": T + timedelta(days=9)}

    assert newer_of(ranked, similar, ts) == {"old": "new"}
    # A near-duplicate that is not ranked with it marks nothing.
    assert newer_of([("old", 0.9)], similar, ts) == {}


def test_the_block_marks_the_earlier_line() -> None:
    memory = Memory(id="old", workspace="w", ts=T, type="note", content="Ship with Falcon.")
    hit = Hit(memory=memory, score=0.5, age_seconds=86400.0, newer="new")

    assert "earlier than new" in hit_line(hit)
    assert "earlier than new" in memory_line(hit)
    assert "earlier" not in hit_line(Hit(memory=memory, score=0.5, age_seconds=1.0))
    assert hit.to_json()["newer"] == "new"


@pytest.mark.model
def test_recall_puts_the_newer_first_and_marks_the_older(tmp_path: Path) -> None:
    clock = [T]
    mem = Episodic(
        store=open_store(f"sqlite:///{tmp_path}/m.db"),
        embedder=MiniLMEmbedder(),
        clock=lambda: clock[0],
    )
    mem.remember(
        "Our team standup happens every morning at 9:30 in the small meeting room.",
        workspace="w",
        id="old",
    )
    clock[0] = T + timedelta(days=14)
    mem.remember(
        "Our team standup happens every morning at 10:15 in the small meeting room.",
        workspace="w",
        id="new",
    )
    mem.index_once()
    query = "when is the team standup"
    hits = mem.recall(query, workspace="w", mark=False).hits

    assert [h.id for h in hits][:2] == ["new", "old"]
    assert hits[1].newer == "new" and hits[0].newer is None
    assert "earlier than new" in mem.render(query, workspace="w")
    mem.close()


# -- which memories are about the same subject ------------------------------------------------
def unit(*xs: float) -> np.ndarray:
    v = np.array(xs, dtype=np.float32)
    return (v / np.linalg.norm(v)).astype(np.float32)


DAY = timedelta(days=1)


def test_same_subject_pairs_a_newer_memory_at_its_threshold() -> None:
    vectors = {"old": unit(1, 0), "new": unit(1, 1), "far": unit(0, 1)}  # cos 0.71, 0
    ts = {"old": T, "new": T + DAY, "far": T + 2 * DAY}
    records = dict.fromkeys(vectors, 0.7)
    none = {"old": None, "new": None, "far": None}

    pairs = same_subject(vectors, none, ts, records, {})
    assert pairs["old"] == [("new", pytest.approx(0.7071, abs=1e-3))]
    # The older is never the other's newer; the newer's own threshold decides.
    assert pairs["new"] == [("far", pytest.approx(0.7071, abs=1e-3))]
    assert same_subject(vectors, none, ts, {**records, "new": 0.75}, {})["old"] == []
    # 0 pairs nothing.
    assert not any(same_subject(vectors, none, ts, dict.fromkeys(vectors, 0.0), {}).values())


def test_turns_of_one_conversation_never_pair_turns_of_two_at_their_own_threshold() -> None:
    vectors = {"a": unit(1, 0), "b": unit(1, 0.1), "c": unit(1, 0.2)}
    ts = {"a": T, "b": T + DAY, "c": T + 2 * DAY}
    chat = {"a": "s1", "b": "s1", "c": "s2"}
    records = dict.fromkeys(vectors, 0.5)

    # Turns pair only at the turns' threshold, and never within one conversation.
    assert not any(same_subject(vectors, chat, ts, records, {}).values())
    pairs = same_subject(vectors, chat, ts, records, dict.fromkeys(vectors, 0.5))
    assert [i for i, _ in pairs["a"]] == ["c"] and [i for i, _ in pairs["b"]] == ["c"]


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("From now on send the weekly report to Maria.", "change"),
        ("Book my flights with KLM rather than Aer Lingus.", "change"),
        ("Priya handed on-call over to Marco.", "plain"),
        ("Should we move on-call escalations to Marco?", "guarded"),
        ("For this week, on-call escalations go to Marco.", "guarded"),
        ("While I'm away, water the fig tree every Wednesday.", "guarded"),
        ("Lena also has a work number, 0152 5550 9876.", "guarded"),
        # A request the sentence ends with does not make what it states a question.
        ("I've moved the call to 4 PM, can you remind me an hour before?", "plain"),
        ("The budget went up to $650, so how should I split it?", "plain"),
        ("Is it true that the call moved to 4 PM?", "guarded"),
        ("The call moved to 4 PM?", "guarded"),
        ("For this week the call is at 4 PM, can you remind me?", "guarded"),
    ],
)
def test_what_a_text_says_of_change(text: str, kind: str) -> None:
    assert change_kind(text) == kind


# -- through recall, with the real model ------------------------------------------------------
def remember_both(tmp_path: Path, old: str, new: str) -> Episodic:
    clock = [T]
    mem = Episodic(
        store=open_store(f"sqlite:///{tmp_path}/m.db"),
        embedder=MiniLMEmbedder(),
        clock=lambda: clock[0],
    )
    mem.remember(old, workspace="w", id="old")
    clock[0] = T + timedelta(days=14)
    mem.remember(new, workspace="w", id="new")
    mem.index_once()
    clock[0] = T + timedelta(days=15)
    return mem


@pytest.mark.model
def test_a_change_in_words_no_rule_knows_puts_the_newer_first(tmp_path: Path) -> None:
    # No change language the supersession rule reads, and the two are less alike than the
    # 0.80 `similar` links (cosine 0.75 with all-MiniLM-L6-v2): the older used to come
    # first. About the same subject, the newer now does, and the older is marked earlier.
    mem = remember_both(
        tmp_path,
        "The on-call escalation goes to Priya.",
        "Priya handed on-call over to Marco, so escalations go to Marco.",
    )
    hits = mem.recall("who gets on-call escalations", workspace="w", mark=False).hits

    assert [h.id for h in hits] == ["new", "old"]
    assert hits[1].newer == "new"
    assert mem.store.get_memory("w", "old").status.value == "active"  # nothing hidden
    mem.close()


@pytest.mark.model
@pytest.mark.parametrize(
    ("old", "new", "question"),
    [
        # A newer text that only asks does not state the subject's new state.
        (
            "The on-call escalation goes to Priya.",
            "Should on-call escalations go to Marco instead of Priya?",
            "who gets on-call escalations",
        ),
        # A reason stays true under the next instruction (the refund example).
        (
            "The refund for INV-20931 failed because the card ending 4242 had expired.",
            "Refund INV-20931 to the new card ending 1881.",
            "why did the refund for INV-20931 fail",
        ),
    ],
)
def test_a_question_or_an_instruction_after_a_reason_is_not_lifted(
    tmp_path: Path, old: str, new: str, question: str
) -> None:
    mem = remember_both(tmp_path, old, new)
    hits = mem.recall(question, workspace="w", mark=False).hits

    assert hits[0].id == "old", [(h.id, h.score) for h in hits]
    assert all(h.newer is None for h in hits)
    mem.close()


def test_only_memories_by_the_same_owner_pair() -> None:
    # A later turn of the other speaker is a reply, not the newer state of what the
    # first said; the same speaker's later turn in another session is.
    vectors = {"a": unit(1, 0), "b": unit(1, 0.1), "c": unit(1, 0.2)}
    ts = {"a": T, "b": T + DAY, "c": T + 2 * DAY}
    chat = {"a": "s1", "b": "s2", "c": "s3"}
    turns = dict.fromkeys(vectors, 0.5)
    owner = {"a": ("user", None, None), "b": ("assistant", None, None), "c": ("user", None, None)}

    pairs = same_subject(vectors, chat, ts, {}, turns, owner)
    assert [i for i, _ in pairs["a"]] == ["c"]
    assert pairs["b"] == []


# -- among the hits recall chose only --------------------------------------------------------
def test_the_older_moves_just_below_the_newer_and_no_hit_enters_or_leaves() -> None:
    ranked = [("old", 0.9), ("x", 0.8), ("y", 0.7), ("new", 0.6), ("z", 0.5)]
    ts = {"old": T, "x": T, "y": T, "new": T + DAY, "z": T}
    similar = {"old": [("new", 0.7)], "gone": [("old", 0.9)]}

    moved = older_below_newer(ranked, similar, ts)
    assert [i for i, _ in moved] == ["x", "y", "new", "old", "z"]
    # Scores still fall: the moved one takes the score of the one above it.
    assert [s for _, s in moved] == [0.8, 0.7, 0.6, 0.6, 0.5]
    # A newer one of lower base importance moves nothing (an info note restating an
    # error-level regression is not its new state).
    base = {"old": 1.0, "x": 1.0, "y": 1.0, "new": 0.5, "z": 1.0}
    assert older_below_newer(ranked, similar, ts, base) == ranked
    # Only a newer partner moves an older one.
    assert older_below_newer(ranked, {"new": [("old", 0.7)]}, ts) == ranked


def test_several_versions_end_newest_first() -> None:
    ranked = [("v1", 0.9), ("v2", 0.8), ("v3", 0.7)]
    ts = {"v1": T, "v2": T + DAY, "v3": T + 2 * DAY}
    similar = {"v1": [("v2", 0.8), ("v3", 0.8)], "v2": [("v3", 0.8)]}

    assert [i for i, _ in older_below_newer(ranked, similar, ts)] == ["v3", "v2", "v1"]


def remember_turns(tmp_path: Path, newer: str, speaker: str = "user") -> Episodic:
    """Turns of two conversations, a week apart each: a budget, a reply, an aside, then
    in a later conversation ``newer`` by ``speaker``."""
    clock = [T]
    mem = Episodic(
        store=open_store(f"sqlite:///{tmp_path}/m.db"),
        embedder=MiniLMEmbedder(),
        clock=lambda: clock[0],
    )
    turns = [
        ("old", "s1", "user", "My monthly grocery budget is $400 and I shop on Saturdays."),
        ("reply", "s1", "assistant", "A $400 grocery budget works well with seasonal produce."),
        ("aside", "s1", "user", "I also started running three times a week before work."),
        ("new", "s2", speaker, newer),
        ("visit", "s2", "user", "My sister is visiting next month and she is vegetarian."),
    ]
    for n, (memory_id, chat, who, text) in enumerate(turns):
        clock[0] = T + n * 7 * DAY
        mem.remember(text, workspace="w", id=memory_id, conversation=chat, agent=who)
    mem.index_once()
    return mem


RAISED = "I've raised my monthly grocery budget to $550, can you help me plan meals for it?"
# The order without the steps under test: ``default`` also lifts a restated value.
PLAIN = dataclasses.replace(DEFAULT, restated_words=0)
WITHIN = dataclasses.replace(PLAIN, subject_cosine_hits=0.6)


@pytest.mark.model
def test_a_newer_turn_goes_above_the_older_among_the_hits_only(tmp_path: Path) -> None:
    mem = remember_turns(tmp_path, RAISED)
    query = "what is my monthly grocery budget"

    def ids(k: int, policy: object) -> list[str]:
        hits = mem.recall(query, workspace="w", k=k, policy=policy, mark=False).hits  # type: ignore[arg-type]
        return [h.id for h in hits]

    hits = mem.recall(query, workspace="w", k=5, policy=WITHIN, mark=False).hits
    assert sorted(h.id for h in hits) == sorted(ids(5, PLAIN))  # the same five
    order = [h.id for h in hits]
    assert ids(5, PLAIN).index("old") < ids(5, PLAIN).index("new")  # as it was
    assert order.index("old") == order.index("new") + 1  # the older just below the newer
    assert hits[order.index("old")].newer == "new"
    # Where the newer turn is not among the hits it is never lifted into them: ask for
    # just the hits ranked above it (the older one among them).
    above = ids(5, PLAIN).index("new")
    first = ids(above, PLAIN)
    assert "old" in first and "new" not in first and ids(above, WITHIN) == first
    # A question in the past tense wants what was said then: nothing moves.
    past = "what was my monthly grocery budget"
    before = mem.recall(past, workspace="w", k=5, policy=PLAIN, mark=False).hits
    asked = mem.recall(past, workspace="w", k=5, policy=WITHIN, mark=False).hits
    assert [h.id for h in asked] == [h.id for h in before]
    assert all(h.newer is None for h in asked)
    mem.close()


@pytest.mark.parametrize(
    ("question", "now"),
    [
        ("What is my monthly grocery budget?", True),
        ("How many books am I aiming to read this winter?", True),
        ("What is the deadline for the first sprint?", True),  # an ordinal, not a time
        ("What was my monthly grocery budget?", False),
        ("When did Anna move to Lisbon?", False),
        ("Which courier did we use originally?", False),
        ("What did I want at first?", False),
        ("", False),
    ],
)
def test_which_questions_ask_for_the_current_state(question: str, now: bool) -> None:
    assert asks_for_now(question) is now


@pytest.mark.model
@pytest.mark.parametrize(
    ("newer", "speaker"),
    [
        # Only asking states no new value.
        ("Should I raise my monthly grocery budget to $550?", "user"),
        # Another speaker's later turn is not the newer state of what the user said.
        ("Your monthly grocery budget is now $550, so I planned meals for it.", "assistant"),
    ],
)
def test_among_the_hits_the_guards_hold(tmp_path: Path, newer: str, speaker: str) -> None:
    mem = remember_turns(tmp_path, newer, speaker)
    query = "what is my monthly grocery budget"
    within = mem.recall(query, workspace="w", k=5, policy=WITHIN, mark=False).hits
    default = mem.recall(query, workspace="w", k=5, policy=PLAIN, mark=False).hits

    order = [h.id for h in within]
    assert order.index("old") < order.index("new")
    assert order.index("old") == [h.id for h in default].index("old")
    assert next(h for h in within if h.id == "old").newer is None
    mem.close()


CORRECTED = "Also I was wrong earlier, my monthly grocery budget is $450, not $400."
STATES_CHANGES = dataclasses.replace(PLAIN, subject_cosine_changes=0.6)


@pytest.mark.model
def test_a_later_turn_that_states_a_change_goes_above_what_it_changes(tmp_path: Path) -> None:
    """A chat's later correction ("..., not $400") pairs with the earlier turn of another
    conversation under ``subject_cosine_changes``; a later turn that states the new value
    in other words does not, and without it (``default``: 0) neither does."""
    query = "what is my monthly grocery budget"
    mem = remember_turns(tmp_path, CORRECTED)

    def order(policy: object) -> list[str]:
        hits = mem.recall(query, workspace="w", k=5, policy=policy, mark=False).hits  # type: ignore[arg-type]
        return [h.id for h in hits]

    assert order(PLAIN).index("old") < order(PLAIN).index("new")
    changed = mem.recall(query, workspace="w", k=5, policy=STATES_CHANGES, mark=False).hits
    ids = [h.id for h in changed]
    assert ids.index("new") < ids.index("old")
    assert changed[ids.index("old")].newer == "new"
    mem.close()

    plain = remember_turns(tmp_path / "plain", "My monthly grocery budget is $450 these days.")
    hits = plain.recall(query, workspace="w", k=5, policy=STATES_CHANGES, mark=False).hits
    assert all(h.newer is None for h in hits)
    plain.close()


# -- a newer hit the supersession rule reads as changing an older one ----------------------------
OLD_TRIP = "I'm planning a two-week trip with my partner Tomas. We land in Tokyo on April 3."
MOVED = "Quick update: we now land in Tokyo on April 5 instead of April 3."


def trip_hits(**changes: object) -> Hits:
    """Two hits, the older one first: a message that says more than the change, and a
    later one that changes a sentence of it (``changes`` alter the newer memory)."""
    old = Memory(
        id="old",
        workspace="w",
        ts=T,
        type="message",
        content=OLD_TRIP,
        conversation="day-1",
        agent="planner",
        source_event_ids=("old",),
    )
    new = dataclasses.replace(
        Memory(
            id="new",
            workspace="w",
            ts=T + 7 * DAY,
            type="message",
            content=MOVED,
            conversation="day-2",
            agent="planner",
            source_event_ids=("new",),
        ),
        **changes,
    )
    return Hits(
        [("old", 0.9), ("new", 0.8)],
        {"old": old, "new": new},
        "when do we land in Tokyo",
        earlier={},
    )


def test_a_newer_hit_that_changes_a_sentence_of_an_older_goes_above_it() -> None:
    hits = trip_hits()

    assert [i for i, _ in changed_first_within(hits, True)] == ["new", "old"]
    assert hits.earlier == {"old": "new"}
    assert changed_first_within(trip_hits(), False) == [("old", 0.9), ("new", 0.8)]


@pytest.mark.parametrize(
    "changes",
    [
        {"conversation": "day-1"},  # two turns of one conversation
        {"agent": "someone-else"},  # another owner
        {"source_event_ids": ("old",)},  # made from the older one
        {"ts": T - DAY},  # not newer
        {"content": "The flight was cancelled because the airline failed, so book April 5."},
    ],
)
def test_the_guards_keep_a_pair_in_its_order(changes: dict[str, object]) -> None:
    hits = trip_hits(**changes)

    assert changed_first_within(hits, True) == hits.chosen
    assert hits.earlier == {}


def test_a_question_about_then_keeps_the_order() -> None:
    hits = dataclasses.replace(trip_hits(), question="when did we first plan to land")

    assert changed_first_within(hits, True) == hits.chosen
