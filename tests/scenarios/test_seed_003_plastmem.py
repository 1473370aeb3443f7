"""Seed 003 (plast-mem) on the default path: an agent's conversations stream in over
several simulated days and become episodes.

Conversations come from the labelled segmentation fixture (``tests/fixtures``), each with
the messages that start a new episode. The story asserts what a user of seed 003 sees:
episodes close where the topic changes and not mid-topic; what a flushing ``segment``
(or ``episodic index --once --flush``) made is found by a dense-only recall when the call
returns; a pivot the next day is measured against the episode before it and is a key
moment, shown as one with its messages by ``recall``, ``render`` and MCP
``recall_memory``; segmentation runs the review job on what the agent recalled; the
plast-mem ranking's retrievability fades over the days and ``recent`` is newest first.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from story import SimClock, cli, http_client, mcp_call

from episodic import Episodic
from episodic.model import Memory, ScopeFilter
from episodic.upkeep.consolidate import EXCLUDED_TYPES
from episodic.write.segment import KEY_MOMENT_SURPRISE
from segmentation_fixture import Labelled, load_fixture

WS = "runtime"
AGENT = "helper"
FIXTURE = {c.id: c for c in load_fixture()}


def feed(
    mem: Episodic,
    clock: SimClock,
    conv: Labelled,
    conversation: str,
    part: slice = slice(None),
    post: Any = None,
) -> None:
    """The fixture conversation's messages (``part`` of them), from the clock's now on, as
    the runtime sends them: through the Python API, or ``post`` (an HTTP client) to
    ``POST /v1/messages``. The clock ends one minute after the last message."""
    indices = range(len(conv.messages))[part]
    shift = clock.now - conv.messages[indices[0]].ts
    for i in indices:
        m = conv.messages[i]
        args: dict[str, Any] = {
            "conversation": conversation,
            "role": m.role,
            "name": m.name,
            "agent": AGENT,
            "id": f"{conversation}-{i:03d}",
        }
        if post is None:
            mem.add_message(m.text, workspace=WS, ts=m.ts + shift, **args)
        else:
            body = {**args, "text": m.text, "ts": (m.ts + shift).isoformat()}
            r = post.post("/v1/messages", json={k: v for k, v in body.items() if v})
            assert r.status_code == 201, r.text
    clock.now = conv.messages[indices[-1]].ts + shift + timedelta(minutes=1)


def episodes(mem: Episodic, conversation: str) -> list[tuple[int, Memory]]:
    """The conversation's episodes as (index of the message that starts it, episode),
    in conversation order."""
    found = mem.recent(workspace=WS, conversation=conversation, limit=50)
    return sorted((int(e.source_event_ids[0].rsplit("-", 1)[1]), e) for e in found)


def starts_match_labels(mem: Episodic, conv: Labelled, conversation: str) -> list[Memory]:
    """Asserts one episode per labelled topic (no mid-topic split), each starting within
    one message of its labelled boundary; returns the episodes."""
    found = episodes(mem, conversation)
    starts = [s for s, _ in found[1:]]
    labels = sorted(conv.boundaries)
    assert len(starts) == len(labels), (starts, labels)
    assert all(abs(s - b) <= 1 for s, b in zip(starts, labels, strict=True)), (starts, labels)
    return [e for _, e in found]


def dense_top(mem: Episodic, query: str) -> str:
    """The id of the episode a dense-only recall ranks first for ``query``."""
    result = mem.recall(query, workspace=WS, policy="dense", types="episode", k=3, mark=False)
    assert result.mode == "vector" and result.hits
    return result.hits[0].id


def test_conversations_close_where_topics_change_and_are_found_by_vector_at_once(
    memory: Episodic, clock: SimClock, db_url: str
) -> None:
    # Day 1: a marathon plan, knee pain five hours later, then a birthday present.
    marathon = FIXTURE["marathon"]
    feed(memory, clock, marathon, "run-1")
    report = memory.segment(flush=True)
    assert report.episodes == 3 and report.unembedded == 0
    plan, knee, present = starts_match_labels(memory, marathon, "run-1")
    assert [e.payload["boundary"] for e in (knee, present)] == ["hard gap", "surprise"]
    # No sweep ran: the dense leg finds each episode by a paraphrase.
    assert dense_top(memory, "my knee hurts on the outer side after a long run") == knee.id
    assert dense_top(memory, "a gift idea for my girlfriend's 40th") == present.id
    assert dense_top(memory, "weekly training schedule to finish 42 km") == plan.id

    # Day 2: one long debugging session, many short turns and pauses, through HTTP; the
    # CLI's end-of-session flush closes it as one episode, searchable when it returns.
    clock.advance(days=1)
    leak = FIXTURE["node-leak"]
    with http_client(memory, WS) as client:
        feed(memory, clock, leak, "run-2", post=client)
    assert episodes(memory, "run-2") == []  # the session is open: nothing closed yet
    out = cli(db_url, "index", "--once", "--flush")
    assert f"1 episode from {len(leak.messages)} messages" in out.output
    (whole,) = starts_match_labels(memory, leak, "run-2")
    assert whole.payload["message_count"] == len(leak.messages)
    assert dense_top(memory, "the node process keeps using more and more RAM") == whole.id


def test_a_pivot_the_next_day_is_a_key_moment_recalled_with_its_messages_and_reviewed(
    memory: Episodic, clock: SimClock
) -> None:
    # Day 1: a dinner menu; the session ends with it.
    dinner = FIXTURE["dinner-then-cover-letter"]
    first = slice(None, min(dinner.boundaries))
    feed(memory, clock, dinner, "chat", first)
    assert memory.segment(flush=True).episodes == 1
    ((_, menu),) = episodes(memory, "chat")
    assert menu.payload["surprise"] == 0.0  # nothing came before it

    # Day 2, the same conversation in a new run: a cover letter. Its surprise is measured
    # against the dinner episode of the earlier run: a significant pivot, a key moment.
    clock.advance(days=1)
    feed(memory, clock, dinner, "chat", slice(min(dinner.boundaries), None))
    assert memory.segment(flush=True).episodes == 1
    (_, menu_again), (start, letter) = episodes(memory, "chat")
    assert menu_again.id == menu.id and start == min(dinner.boundaries)
    assert letter.payload["surprise"] >= KEY_MOMENT_SURPRISE
    assert letter.payload["key_moment"] is True

    # Recall shows the key moment with the messages it was made from; so do render and MCP.
    query = "how should I write my cover letter for the analyst job"
    opening = dinner.messages[start].text[:40]  # details show a message's beginning
    hits = memory.recall(query, workspace=WS, mark=False).hits
    top = next(h for h in hits if h.memory.type == "episode")
    assert top.id == letter.id and hits.index(top) < 2
    assert top.moment == "key moment"
    assert top.details[0].summary.startswith(opening)
    assert len(top.details) == letter.payload["message_count"]
    block = memory.render(query, workspace=WS, types="episode", mark=False)
    speaker = dinner.messages[start].name or "user"
    assert "[episode · key moment ·" in block and f"  > {speaker}: {opening}" in block
    shown = mcp_call(memory, "recall_memory", {"query": query}, workspace=WS)["memories"]
    (tool,) = [m for m in shown if m["id"] == letter.id]
    assert tool["moment"] == "key moment" and opening in tool["details"][0]

    # Day 3: the agent recalls the letter in a new conversation and uses it; the next
    # segmentation runs the review job on it (no scheduler tick in between).
    clock.advance(days=1)
    ask = "What did we say the opening of my cover letter should be?"
    memory.add_message(ask, workspace=WS, conversation="day3", agent=AGENT, ts=clock.now)
    clock.advance(minutes=1)
    recalled = memory.recall(ask, workspace=WS, types="episode", review_conversation="day3")
    assert letter.id in [h.id for h in recalled.hits]
    clock.advance(minutes=1)
    answer = "Lead with your Tableau dashboard: weekly reporting went from two days to two hours."
    memory.add_message(
        answer, workspace=WS, conversation="day3", role="assistant", agent=AGENT, ts=clock.now
    )
    clock.advance(minutes=1)
    flt = ScopeFilter(workspace_id=WS)
    before = memory.memory(flt, letter.id)
    assert before.last_reviewed_at is None
    assert memory.segment(flush=True, workspace=WS, conversation="day3").episodes == 1
    after = memory.memory(flt, letter.id)
    assert after.last_reviewed_at == clock.now
    assert (after.stability, after.difficulty) != (before.stability, before.difficulty)

    # Retrievability fades: a month on, the same recall under plast-mem's ranking scores
    # the dinner episode lower, though nothing else changed.
    def menu_score() -> float:
        result = memory.recall(
            "mushroom risotto for a dinner party",
            workspace=WS,
            policy="plastmem",
            types="episode",
            mark=False,
        )
        assert result.hits[0].id == menu.id
        return result.hits[0].score

    now_score = menu_score()
    clock.advance(days=30)
    assert menu_score() < 0.9 * now_score

    # recent: the newest episode first.
    newest = memory.recent(workspace=WS, limit=10)
    assert [e.id for e in newest][1:] == [letter.id, menu.id]
    assert [e.ts for e in newest] == sorted((e.ts for e in newest), reverse=True)


def test_a_flashbulb_is_consolidated_when_a_flush_creates_it(
    memory: Episodic, clock: SimClock
) -> None:
    """Seed 003: a flashbulb episode triggers consolidation when it is created. A flush
    (``segment(flush=True)``, as ``index --once --flush`` and a run's end do) that makes
    one consolidates it at once: no flashbulb is left waiting for the schedule."""
    lines = [
        ("user", "The nightly refund batch timed out at the payment gateway again."),
        ("assistant", "The gateway client opens only five connections, so refunds queue."),
        ("user", "Raising the gateway connection pool to twenty let the batch finish."),
    ]
    pivot = [
        ("user", "My grandmother's tomato plants in the garden got frost damage overnight."),
        ("assistant", "Cover the tomato seedlings with fleece when frost is forecast."),
        ("user", "She also planted basil and marigolds along the greenhouse wall."),
    ]
    made = []
    for part in (lines, pivot):
        for i, (role, text) in enumerate(part):
            memory.add_message(
                text,
                workspace=WS,
                conversation="talk",
                role=role,
                agent=AGENT,
                ts=(clock.now + timedelta(minutes=i)).isoformat(),
            )
        clock.advance(minutes=5)
        memory.segment(flush=True, workspace=WS, conversation="talk")
        made = memory.recent(workspace=WS, conversation="talk", limit=5)
        clock.advance(days=1)
    flashbulbs = [e for e in made if e.payload.get("flashbulb")]
    assert flashbulbs, [e.payload.get("surprise") for e in made]
    backlog = memory.store.consolidation_backlog(WS, EXCLUDED_TYPES)
    assert backlog.flashbulbs == 0
