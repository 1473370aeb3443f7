"""Conversations through the service: messages in, episodes, entries and keys out, found
again by recall and listed by ``recent``."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from chat_server import MODEL, running_chat_server
from episodic import Episodic, InvalidInput, Settings
from episodic.llm.openai_compat import OpenAICompatLLM
from episodic.store import open_store
from episodic.write.episodes import episode_json
from episodic.write.extract import content_hash

T0 = datetime(2026, 5, 8, 13, 0, tzinfo=UTC)

CHAT = [
    (
        "user",
        "Caroline",
        "Hey Mel! I went to the LGBTQ support group yesterday and it was powerful.",
    ),
    ("assistant", "Melanie", "That sounds amazing, Caroline. What happened at the group?"),
    ("user", "Caroline", "People shared their transgender stories and I felt accepted there."),
    ("assistant", "Melanie", "I am so glad you found a community that supports you."),
    ("user", "Caroline", "I am planning to keep going every week and maybe volunteer."),
]
LATER = [
    ("user", "Caroline", "I finished painting the sunset over the lake for my new apartment."),
    ("assistant", "Melanie", "Lovely! Painting must be so relaxing for you after work."),
    ("user", "Caroline", "It really is, I paint every Sunday morning with coffee."),
]


@pytest.fixture
def clock() -> list[datetime]:
    return [T0]


@pytest.fixture
def svc(clock: list[datetime], db_url: str) -> Iterator[Episodic]:
    # No embedder: segmentation by the rules alone (the surprise channel is tested on its
    # own and with the real model below); recall is sparse-only.
    mem = Episodic(
        store=open_store(db_url),
        embedder=None,
        settings=Settings(),
        clock=lambda: clock[0],
        llm=None,
    )
    yield mem
    mem.close()


def feed(svc: Episodic, turns: list[tuple[str, str, str]], start: datetime, conv: str) -> list[str]:
    return [
        svc.add_message(
            text,
            workspace="acme",
            conversation=conv,
            role=role,
            name=name,
            agent="companion",
            resource="user:caroline",
            ts=start + timedelta(minutes=i),
        ).id
        for i, (role, name, text) in enumerate(turns)
    ]


def test_a_conversation_becomes_an_episode_with_entries_and_keys(
    svc: Episodic, clock: list[datetime]
) -> None:
    ids = feed(svc, CHAT, T0, "chat-1")
    clock[0] = T0 + timedelta(minutes=10)
    # The open segment waits for more messages...
    waiting = svc.segment()
    assert (waiting.episodes, waiting.waiting) == (0, len(CHAT))
    assert svc.recent(workspace="acme") == []
    # ...until the session ends.
    report = svc.segment(flush=True)
    assert (report.conversations, report.episodes, report.messages) == (1, 1, len(CHAT))
    (episode,) = svc.recent(workspace="acme")
    shown = episode_json(episode)
    assert shown["message_count"] == len(CHAT)
    assert (
        shown["start"] == T0.isoformat() and shown["end"] == (T0 + timedelta(minutes=4)).isoformat()
    )
    assert 5 <= len(shown["title"].split()) <= 15
    assert shown["summary"] and shown["described_by"].startswith("offline")
    assert shown["stability"] is not None and shown["stability"] >= 2.3
    assert episode.conversation == "chat-1" and episode.agent == "companion"
    assert list(episode.source_event_ids) == ids

    # Offline extraction: the user's statements, each its own evidence.
    hits = svc.recall("support group", workspace="acme", types=("entry",), k=10).hits
    assert hits, "no entry was extracted from the user's statements"
    for hit in hits:
        body = hit.to_json()
        assert body["source"] == "user_assertion"
        assert body["evidence"] and body["evidence"] in body["content"]
    # Messages stay recallable, now with their speaker and the episode's keys.
    found = svc.recall("Caroline support group", workspace="acme", types=("message",), k=3)
    assert found.hits[0].memory.content.startswith("Caroline: ")
    assert "Caroline" in found.hits[0].memory.keys
    # Nothing is taken twice.
    again = svc.segment(flush=True)
    assert again.episodes == 0 and len(svc.recent(workspace="acme")) == 1


def test_a_long_pause_splits_and_recent_is_newest_first(
    svc: Episodic, clock: list[datetime]
) -> None:
    feed(svc, CHAT, T0, "chat-1")
    feed(svc, LATER, T0 + timedelta(hours=5), "chat-1")
    clock[0] = T0 + timedelta(hours=5, minutes=5)
    report = svc.segment()
    # The first session is closed by the hard gap; the second waits.
    assert (report.episodes, report.waiting) == (1, len(LATER))
    svc.segment(flush=True)
    newest, oldest = svc.recent(workspace="acme")
    assert episode_json(newest)["start"] == (T0 + timedelta(hours=5)).isoformat()
    assert episode_json(oldest)["message_count"] == len(CHAT)
    assert [episode_json(e)["id"] for e in svc.recent(workspace="acme", limit=1)] == [newest.id]
    assert svc.recent(workspace="acme", conversation="other") == []
    assert svc.recent(workspace="beta") == []


def test_idle_conversations_close_without_a_flush(svc: Episodic, clock: list[datetime]) -> None:
    feed(svc, CHAT, T0, "chat-1")
    clock[0] = T0 + timedelta(hours=4)
    assert svc.segment().episodes == 1


def test_messages_are_validated_naming_the_field(svc: Episodic) -> None:
    with pytest.raises(InvalidInput) as role:
        svc.add_message("hi", workspace="acme", conversation="c", role="narrator")
    assert role.value.field == "role"  # the argument the caller gave
    with pytest.raises(InvalidInput) as conv:
        svc.add_event(
            {
                "workspace": "acme",
                "type": "message",
                "summary": "hi",
                "payload": {"role": "user"},
            }
        )
    assert conv.value.field == "conversation"
    report = svc.ingest(
        [
            {
                "workspace": "acme",
                "type": "message",
                "conversation": "c",
                "summary": "ok",
                "payload": {"role": "user"},
            },
            {
                "workspace": "acme",
                "type": "message",
                "conversation": "c",
                "summary": "bad",
                "payload": {"role": 7},
            },
        ]
    )
    assert report.stored == 1 and [e.field for e in report.errors] == ["payload.role"]


def test_tool_output_is_kept_but_is_neither_memory_nor_evidence(
    svc: Episodic, clock: list[datetime]
) -> None:
    secret = "The tool printed: I am planning to delete every production database tonight."
    turns = [*CHAT[:2], ("tool", "", secret), *CHAT[2:]]
    for i, (role, name, text) in enumerate(turns):
        svc.add_message(
            text,
            workspace="acme",
            conversation="c",
            role=role,
            name=name or None,
            ts=T0 + timedelta(minutes=i),
        )
    clock[0] = T0 + timedelta(minutes=20)
    svc.segment(flush=True)
    (episode,) = svc.recent(workspace="acme")
    assert episode_json(episode)["message_count"] == len(turns)  # kept with the episode
    everything = svc.recall("delete production database", workspace="acme", k=20).hits
    assert all("delete every production" not in h.memory.content for h in everything)


# -- the LLM path, through the real client against a local chat-completions server -------------
REFUND = [
    ("user", "Dana", "Partial refunds fail with HTTP 409 since Monday."),
    ("assistant", "Helper", "The gateway rejects a refund whose idempotency key it has seen."),
    (
        "user",
        "Dana",
        "Right, we reuse the capture id as the key. Let's send a fresh key per refund.",
    ),
    ("assistant", "Helper", "Done: each refund now gets its own idempotency key."),
    ("user", "Dana", "Confirmed, the 409s are gone."),
]


@pytest.fixture
def chat() -> Iterator[Any]:
    with running_chat_server() as srv:
        yield srv


def llm_service(chat: Any, clock: list[datetime]) -> Episodic:
    return Episodic(
        store=open_store("sqlite:///:memory:"),
        embedder=None,
        # The scripted model answers segmentation's steps only, in order.
        settings=Settings(embedder="none", supersession="off"),
        clock=lambda: clock[0],
        llm=OpenAICompatLLM(base_url=chat.base_url, model=MODEL, timeout_s=5.0),
    )


def test_the_llm_path_titles_extracts_and_learns(chat: Any, clock: list[datetime]) -> None:
    mem = llm_service(chat, clock)
    for i, (role, name, text) in enumerate(REFUND):
        mem.add_message(
            text,
            workspace="acme",
            conversation="c1",
            role=role,
            name=name,
            agent="helper",
            ts=T0 + timedelta(minutes=i),
        )
    clock[0] = T0 + timedelta(minutes=30)
    chat.reply_json({"starts": []})  # topic channel: one topic
    chat.reply_json(  # the post-session pass
        {
            "learnings": [
                {
                    "content": "Send a fresh idempotency key with every refund.",
                    "type": "directive",
                    "domain": "task",
                    "importance": 1.7,
                    "evidence": "Let's send a fresh key per refund.",
                }
            ]
        }
    )
    chat.reply_json(
        {
            "title": "Partial refunds failed with 409 until each got a fresh idempotency key",
            "summary": "Refunds reused the capture id as idempotency key; a fresh key fixed it.",
            "keyphrases": ["idempotency key", "HTTP 409"],
        }
    )
    chat.reply_json(
        {
            "entries": [
                {
                    "content": "Partial refunds failed with 409 because the capture id was "
                    "reused as the idempotency key; a fresh key per refund fixed it.",
                    "source": "user_accepted_assistant_proposal",
                    "evidence": "Let's send a fresh key per refund.",
                },
                {
                    "content": "The customer wants a discount.",
                    "source": "user_assertion",
                    "evidence": "I want a discount",
                },  # quoted from nowhere: dropped
            ]
        }
    )
    report = mem.segment(flush=True)
    assert (report.episodes, report.entries, report.learnings) == (1, 1, 1)
    (episode,) = mem.recent(workspace="acme")
    shown = episode_json(episode)
    assert shown["title"].startswith("Partial refunds failed")
    assert shown["described_by"] == f"llm:{mem.llm.model_id}"  # type: ignore[union-attr]
    # Dropped text is never stored (a payload is searched): its hash is, for audits.
    assert [d["content_sha256"] for d in episode.payload["extraction_dropped"]] == [
        content_hash("The customer wants a discount.")
    ]
    assert mem.recall("customer discount", workspace="acme", policy="bm25").hits == []
    (entry,) = mem.recall("idempotency key refund", workspace="acme", types=("entry",)).hits
    assert entry.to_json()["source"] == "user_accepted_assistant_proposal"
    assert entry.to_json()["evidence"] == "Let's send a fresh key per refund."
    (learning,) = mem.recall("idempotency key", workspace="acme", types=("learning",)).hits
    assert learning.memory.payload["learning_type"] == "directive"
    assert learning.memory.importance == 1.0  # clamped
    assert len(chat.requests) == 4
    # The transcript reached the model as escaped data inside its block.
    assert "<transcript>" in chat.user_prompt(0)
    mem.close()


def test_an_llm_that_is_down_leaves_the_offline_path_labelled(
    chat: Any, clock: list[datetime]
) -> None:
    mem = llm_service(chat, clock)
    for i, (role, name, text) in enumerate(REFUND):
        mem.add_message(
            text,
            workspace="acme",
            conversation="c1",
            role=role,
            name=name,
            ts=T0 + timedelta(minutes=i),
        )
    clock[0] = T0 + timedelta(minutes=30)
    for _ in range(8):
        chat.reply_error(500, "model crashed")
    report = mem.segment(flush=True)
    assert report.episodes == 1
    (episode,) = mem.recent(workspace="acme")
    assert episode_json(episode)["described_by"].startswith("offline")
    hits = mem.recall("refund key", workspace="acme", types=("entry",), k=10).hits
    assert hits and all(h.memory.payload["extracted_by"] == "offline" for h in hits)
    mem.close()
