"""What listing and showing memories takes and gives: page sizes, the longest keyword
query, a note's default type and the provenance values a cited note may carry; a page of
memories, and a memory as every interface shows it.

In a module of their own, over the vocabulary only, so an interface (the CLI's help, the
HTTP client) can name them without loading the service.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from episodic.model import Memory

# n8n's provenance values (seed 004) for a remembered note that cites its evidence.
SOURCES = ("user_assertion", "user_accepted_assistant_proposal", "verified_assistant_finding")
MAX_PAGE = 200
DEFAULT_PAGE = 50
MAX_Q_CHARS = 1000
REMEMBER_TYPE = "note"


@dataclass(frozen=True, slots=True)
class MemoryPage:
    items: list[Memory]
    next_cursor: str | None


def memory_json(m: Memory) -> dict[str, Any]:
    """A memory as interfaces show it: every field but its vector (vectors never leave)."""
    source = m.payload.get("source")
    evidence = m.payload.get("evidence")
    return {
        "id": m.id,
        "workspace": m.workspace,
        "crew": m.crew,
        "agent": m.agent,
        "resource": m.resource,
        "conversation": m.conversation,
        "ts": m.ts.isoformat(),
        "type": m.type,
        "severity": m.severity,
        "content": m.content,
        "payload": dict(m.payload),
        "source": source if isinstance(source, str) else None,
        "evidence": evidence if isinstance(evidence, str) else None,
        "importance": m.importance,
        "base_importance": m.base_importance,
        "reference_count": m.reference_count,
        "last_referenced_at": None
        if m.last_referenced_at is None
        else m.last_referenced_at.isoformat(),
        "status": m.status.value,
        "keys": m.keys,
        "source_event_ids": list(m.source_event_ids),
        "created_at": None if m.created_at is None else m.created_at.isoformat(),
        **validity_json(m),
    }


def validity_json(m: Memory) -> dict[str, Any]:
    """When what a memory says was true, and what replaced it (None: still true)."""
    return {
        "valid_from": m.valid_since.isoformat(),
        "valid_to": None if m.valid_to is None else m.valid_to.isoformat(),
        "superseded_by": m.superseded_by,
    }
