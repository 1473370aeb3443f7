"""From journal events to memories: admission decides, base importance seeds the score."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime

from episodic.model import Event, Memory
from episodic.policy import MESSAGE_TYPE, admit, base_importance
from episodic.write.messages import message_keys, message_of, spoken_content

# An admitted event with an empty summary still needs searchable text.
_PAYLOAD_TEXT_CHARS = 400


def memory_content(event: Event) -> str:
    if event.summary.strip():
        return event.summary
    payload = json.dumps(event.payload, ensure_ascii=False, sort_keys=True)
    return f"{event.type}: {payload[:_PAYLOAD_TEXT_CHARS]}"


def memory_from_event(event: Event, now: datetime, *, keys: bool = True) -> Memory:
    """The memory an admitted event becomes; it shares the event's id so re-ingest is
    idempotent for both. ``keys`` False leaves out the derived search keys (key
    expansion off)."""
    priority = event.refs.get("priority")
    base = base_importance(
        event.type, event.severity, priority if isinstance(priority, str) else None
    )
    content, derived = memory_content(event), ""
    if event.type == MESSAGE_TYPE:
        message = message_of(event)
        content = spoken_content(message.role, message.text, message.name)
        derived = message_keys(message.name, message.role, message.ts) if keys else ""
    return Memory(
        id=event.id,
        workspace=event.workspace,
        ts=event.ts,
        type=event.type,
        content=content,
        keys=derived,
        severity=event.severity,
        payload=event.payload,
        crew=event.crew,
        agent=event.agent,
        resource=event.resource,
        conversation=event.conversation,
        base_importance=base,
        importance=base,
        source_event_ids=(event.id,),
        created_at=now,
    )


def admitted_memories(events: Sequence[Event], now: datetime, *, keys: bool = True) -> list[Memory]:
    return [
        memory_from_event(e, now, keys=keys)
        for e in events
        if admit(e.type, e.severity, e.payload, e.refs)
        # A message with no text (an assistant turn that only called tools) says nothing.
        and not (e.type == MESSAGE_TYPE and not e.summary.strip())
    ]
