"""The in-session memory nudge (seed 000).

When an agent has written ``NUDGE_THRESHOLD`` (60) or more journal events since its last
``memory.updated`` event, its next prompt may carry a short reminder to write down what
it keeps noticing. Once per session: the store records the sessions already nudged, so
an agent loop can call ``memory_nudge`` before every turn. A new ``memory.updated`` event
resets the count. The nudge is advice; agent loops are expected to leave it out of what
they record as the model's context.
"""

from __future__ import annotations

from datetime import datetime

from episodic.errors import InvalidInput
from episodic.store.upkeep import UpkeepStore

NUDGE_THRESHOLD = 60  # raised from 30 in seed 000: at 30 it fired on nearly every session
MEMORY_UPDATED = "memory.updated"

NUDGE_TEXT = (
    "Memory reminder: {count} new journal entries since your last memory update "
    "(a `memory.updated` event). If you keep seeing the same pattern, write it down in "
    "your own memory notes before this session ends; consolidation will not overwrite "
    "your own observations."
)


def memory_nudge(
    store: UpkeepStore,
    workspace: str,
    agent: str,
    session_id: str,
    now: datetime,
    *,
    threshold: int = NUDGE_THRESHOLD,
) -> str | None:
    """The reminder for this turn, or None (below the threshold, or already given in
    this session)."""
    for name, value in (("workspace", workspace), ("agent", agent), ("session_id", session_id)):
        if not value or not value.strip():
            raise InvalidInput(name, "required for the memory nudge")
    count = store.events_since_memory_update(workspace, agent, cap=10 * threshold)
    if count < threshold:
        return None
    if not store.claim_nudge(workspace, agent, session_id, count, now):
        return None
    shown = f"{count}+" if count >= 10 * threshold else str(count)
    return NUDGE_TEXT.format(count=shown)
