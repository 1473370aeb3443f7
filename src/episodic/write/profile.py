"""Seed 004's ``<user-profile>``: what the agent remembers about the user.

A stable preference ("I prefer email over phone calls") or a profile fact ("I'm
vegetarian") is not an episodic entry, and the extractor sets it aside (its drop reason
says which). It is kept here instead, as a memory of its own type, ``profile``: of the
user it is about (the resource) and the agent that heard it, quoting the message it came
from. The layer shows these in a ``<user-profile>`` block of their own, and the extractor
sees them as known context, so the same preference said again is not stored twice.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from datetime import datetime

from episodic.model import Event, Memory
from episodic.policy import PROFILE_TYPE
from episodic.write.extract import Dropped, content_hash

__all__ = ["PROFILE_TYPE", "profile_memories"]

# The reasons an extracted note is a profile memory rather than an entry.
PROFILE_REASONS = frozenset({"preference", "profile"})
PROFILE_BASE_IMPORTANCE = 0.5


def profile_memories(
    ws: str,
    episode_id: str,
    dropped: Sequence[Dropped],
    events: dict[str, Event],
    now: datetime,
) -> list[Memory]:
    """The profile memories among an episode's ``dropped`` notes, once per text."""
    made: dict[str, Memory] = {}
    for d in dropped:
        source = events.get(d.message_id)
        if d.reason not in PROFILE_REASONS or source is None or not d.content.strip():
            continue
        digest = content_hash(d.content)
        key = hashlib.sha256(f"{ws}\x1f{episode_id}\x1f{digest}".encode()).hexdigest()[:24]
        made.setdefault(
            digest,
            Memory(
                id="pro_" + key,
                workspace=ws,
                ts=source.ts,
                type=PROFILE_TYPE,
                content=d.content,
                payload={
                    "profile_kind": d.reason,
                    "source": "user_assertion",
                    "evidence": d.evidence,
                    "episode_id": episode_id,
                },
                conversation=source.conversation,
                crew=source.crew,
                agent=source.agent,
                resource=source.resource,
                base_importance=PROFILE_BASE_IMPORTANCE,
                importance=PROFILE_BASE_IMPORTANCE,
                source_event_ids=(source.id,),
                content_hash=digest,
                created_at=now,
            ),
        )
    return list(made.values())
