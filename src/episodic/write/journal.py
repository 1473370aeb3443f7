"""From journal events to memories: admission decides, base importance seeds the score."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from episodic.model import Event, Memory
from episodic.policy import MESSAGE_TYPE, Admission, admission, base_importance
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


def event_admission(event: Event) -> Admission:
    """Admission's decision on ``event`` (``policy.admission``), and a message with no
    text (an assistant turn that only called tools), which says nothing to remember."""
    decided = admission(event.type, event.severity, event.payload, event.refs)
    if decided.admitted and event.type == MESSAGE_TYPE and not event.summary.strip():
        return Admission(False, "empty-message", "a message with no text says nothing")
    return decided


def sort_events(
    events: Sequence[Event], now: datetime, *, keys: bool = True
) -> tuple[list[Memory], list[tuple[int, Admission]]]:
    """The memories the admitted ``events`` become, and the position of every other
    event with admission's decision on it."""
    memories: list[Memory] = []
    refused: list[tuple[int, Admission]] = []
    for n, event in enumerate(events):
        decided = event_admission(event)
        if decided.admitted:
            memories.append(memory_from_event(event, now, keys=keys))
        else:
            refused.append((n, decided))
    return memories, refused


def admitted_memories(events: Sequence[Event], now: datetime, *, keys: bool = True) -> list[Memory]:
    return sort_events(events, now, keys=keys)[0]


# The refused events an ingest report lists one by one; past this only their count by
# reason grows (a large journal is mostly refused telemetry).
NOT_ADMITTED_LISTED = 1000


@dataclass(frozen=True, slots=True)
class NotAdmitted:
    """An event stored in the journal but not kept as a memory: where it was in the
    input (line or index), what it was, and admission's rule, reason and fix."""

    line: int
    id: str
    type: str
    severity: str
    rule: str
    reason: str
    fix: str | None

    def to_json(self) -> dict[str, Any]:
        return {
            "line": self.line,
            "id": self.id,
            "type": self.type,
            "severity": self.severity,
            "rule": self.rule,
            "reason": self.reason,
            "fix": self.fix,
        }


@dataclass(frozen=True, slots=True)
class NotAdmittedCount:
    """How many events of one ingest one rule refused, for the same reason."""

    rule: str
    reason: str
    fix: str | None
    count: int

    def to_json(self) -> dict[str, Any]:
        return {"rule": self.rule, "reason": self.reason, "fix": self.fix, "count": self.count}


def count_by_reason(
    counts: list[NotAdmittedCount], decided: Admission, n: int = 1
) -> list[NotAdmittedCount]:
    """``counts`` with ``n`` more events refused as ``decided`` says (in first-seen order)."""
    for i, c in enumerate(counts):
        if (c.rule, c.reason, c.fix) == (decided.rule, decided.reason, decided.fix):
            counts[i] = NotAdmittedCount(c.rule, c.reason, c.fix, c.count + n)
            return counts
    counts.append(NotAdmittedCount(decided.rule, decided.reason, decided.fix, n))
    return counts
