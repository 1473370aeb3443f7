"""Chat messages: the unit conversations arrive in.

A message is an event of type ``message`` with a ``conversation_id``, its text in
``summary`` and ``payload.role`` one of ``ROLES`` (``payload.name`` optionally names the
speaker). Segmentation groups a conversation's messages into episodes; extraction and
episode descriptions read them as ``Message`` values, never as raw events.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from episodic.model import Event
from episodic.policy import MESSAGE_TYPE, SPOKEN_ROLES

ROLES: tuple[str, ...] = ("user", "assistant", "tool", "system")
# What people said (SPOKEN_ROLES) becomes memories and may be quoted as evidence. Tool
# output and system prompts are kept with the conversation but never used as evidence.
__all__ = [
    "MESSAGE_TYPE",
    "ROLES",
    "SPOKEN_ROLES",
    "Message",
    "message_keys",
    "message_of",
    "spoken_content",
    "transcript_json",
]


@dataclass(frozen=True, slots=True)
class Message:
    """One message of a conversation. ``id`` is the id of the event that carried it."""

    id: str
    role: str
    text: str
    ts: datetime
    name: str | None = None  # the speaker's name, when the producer gave one

    @property
    def spoken(self) -> bool:
        return self.role in SPOKEN_ROLES

    @property
    def speaker(self) -> str:
        return self.name or self.role


def transcript_json(messages: Sequence[Message]) -> str:
    """The role-labelled transcript as JSON lines (one object per message, numbered from
    0), the form prompts receive it in. Untrusted: put it in a ``data_block``."""
    return "\n".join(
        json.dumps(
            {"i": i, "role": m.role, **({"name": m.name} if m.name else {}), "text": m.text},
            ensure_ascii=False,
        )
        for i, m in enumerate(messages)
    )


def message_of(event: Event) -> Message:
    """The message a ``message`` event carries."""
    name = event.payload.get("name")
    return Message(
        id=event.id,
        role=str(event.payload.get("role", "user")),
        text=event.summary,
        ts=event.ts,
        name=name if isinstance(name, str) and name.strip() else None,
    )


def spoken_content(role: str, text: str, name: str | None) -> str:
    """A message memory's content: the text, after the speaker's name when one is known
    (questions name people: "what did Caroline say about ...")."""
    return f"{name}: {text}" if name else text


def message_keys(name: str | None, role: str, ts: datetime) -> str:
    """The search keys a message memory starts with: who spoke and when, in words a
    question uses ("Caroline", "user", "8 May 2023", "Monday")."""
    when = f"{ts.day} {ts:%B %Y} {ts:%A}"
    return " ".join(part for part in (name, role, when) if part)
