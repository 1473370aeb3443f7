"""Conversations through the service: messages in, episodes, entries and keys out, found
again by recall and listed by ``recent``."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from episodic import Episodic, InvalidInput, Settings
from episodic.store import open_store
from episodic.write.episodes import episode_json

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
def svc(clock: list[datetime]) -> Iterator[Episodic]:
    # No embedder: segmentation by the rules alone (the surprise channel is tested on its
    # own and with the real model below); recall is sparse-only.
    mem = Episodic(
        store=open_store("sqlite:///:memory:"),
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
    assert episode.conversation_id == "chat-1" and episode.agent_id == "companion"
    assert list(episode.source_event_ids) == ids

    # Offline extraction: the user's statements, each its own evidence.
    hits = svc.recall("support group", workspace="acme", types=("entry",), k=10).hits
    assert hits, "no entry was extracted from the user's statements"
    for hit in hits:
        body = hit.to_json()
        assert body["source"] == "user_assertion"
        assert body["evidence"] and body["evidence"] in body["summary"]
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
    assert role.value.field == "payload.role"
    with pytest.raises(InvalidInput) as conv:
        svc.add_event(
            {
                "workspace_id": "acme",
                "type": "message",
                "summary": "hi",
                "payload": {"role": "user"},
            }
        )
    assert conv.value.field == "conversation_id"
    report = svc.ingest(
        [
            {
                "workspace_id": "acme",
                "type": "message",
                "conversation_id": "c",
                "summary": "ok",
                "payload": {"role": "user"},
            },
            {
                "workspace_id": "acme",
                "type": "message",
                "conversation_id": "c",
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
