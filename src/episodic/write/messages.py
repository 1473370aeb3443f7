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

MESSAGE_TYPE = "message"
ROLES: tuple[str, ...] = ("user", "assistant", "tool", "system")
# What people said: these become memories and may be quoted as evidence. Tool output and
# system prompts are kept with the conversation but never used as evidence.
SPOKEN_ROLES: tuple[str, ...] = ("user", "assistant")


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
