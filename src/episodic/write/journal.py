"""From journal events to memories: admission decides, base importance seeds the score."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime

from episodic.model import Event, Memory
from episodic.policy import admit, base_importance

# An admitted event with an empty summary still needs searchable text.
_PAYLOAD_TEXT_CHARS = 400


def memory_content(event: Event) -> str:
    if event.summary.strip():
        return event.summary
    payload = json.dumps(event.payload, ensure_ascii=False, sort_keys=True)
    return f"{event.type}: {payload[:_PAYLOAD_TEXT_CHARS]}"


def memory_from_event(event: Event, now: datetime) -> Memory:
    """The memory an admitted event becomes; it shares the event's id so re-ingest is
    idempotent for both."""
    priority = event.refs.get("priority")
    base = base_importance(
        event.type, event.severity, priority if isinstance(priority, str) else None
    )
    return Memory(
        id=event.id,
        workspace_id=event.workspace_id,
        ts=event.ts,
        type=event.type,
        content=memory_content(event),
        severity=event.severity,
        payload=event.payload,
        crew_id=event.crew_id,
        agent_id=event.agent_id,
        resource_id=event.resource_id,
        conversation_id=event.conversation_id,
        base_importance=base,
        importance=base,
        source_event_ids=(event.id,),
        created_at=now,
    )


def admitted_memories(events: Sequence[Event], now: datetime) -> list[Memory]:
    return [
        memory_from_event(e, now) for e in events if admit(e.type, e.severity, e.payload, e.refs)
    ]
