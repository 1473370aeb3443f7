"""The store's part in supersession: replacing a memory with a newer one of the same slot,
and reading who replaced what (``SupersessionStore``, both backends' ``supersession.py``).

A superseded memory is never deleted: its status becomes ``superseded``, its
``valid_to`` the time the replacing memory became true, its ``superseded_by`` that
memory's id, and a ``supersessions`` row records who decided (``llm:<model>``,
``offline:<rule>``, ``explicit``) and why. Forgetting the replacing memory gives the old
one back its validity (``REVIVE_SQL``): a link whose newer end is gone replaces nothing."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from episodic.model import Memory
from episodic.store.rows import ts_text


@dataclass(frozen=True, slots=True)
class Supersession:
    """``new_id`` replaced ``old_id``: decided by whom, why, and when it was decided."""

    old_id: str
    new_id: str
    decided_by: str
    reason: str
    decided_at: datetime

    def to_json(self) -> dict[str, Any]:
        return {
            "old": self.old_id,
            "new": self.new_id,
            "decided_by": self.decided_by,
            "reason": self.reason,
            "decided_at": self.decided_at.isoformat(),
        }


class SupersessionStore(Protocol):
    def supersede(
        self,
        workspace_id: str,
        old_id: str,
        new_id: str,
        *,
        decided_by: str,
        reason: str,
        at: datetime,
    ) -> Memory | None:
        """Mark ``old_id`` superseded by ``new_id`` in one transaction: its status, its
        ``valid_to`` (when ``new_id`` became true) and its ``superseded_by``, and the
        link. The active memories made from ``old_id`` (an episode recounting a message,
        an entry quoting it) that are no newer than ``new_id`` go with it, each linked
        to ``new_id`` too. None, with nothing written, when ``old_id`` is not active
        (already superseded, retired or compacted: the first replacement stands).
        ``NotFound`` when either id is not a memory of the workspace."""
        ...

    def restore_supersessions(self, workspace_id: str, links: Sequence[Supersession]) -> int:
        """Write links read back from an export as they were (who decided, why, when),
        replacing a stored link of the same two memories; the memories' own fields
        (status, validity) are restored with them. ``InvalidInput`` on field
        ``supersedes`` when an end is not a memory of the workspace. Returns the links
        written."""
        ...

    def pending_supersession(self, limit: int, *, vectored_only: bool) -> list[Memory]:
        """Memories not yet checked for what they may replace, oldest written first
        (with ``vectored_only``, only those already embedded)."""
        ...

    def mark_supersession_checked(self, ids: Sequence[str]) -> None:
        """Take memories off the list ``pending_supersession`` reads."""
        ...


# -- SQL both backends run (``mark`` is the driver's placeholder) -------------------------
SUPERSESSION_COLUMNS = "old_id, new_id, decided_by, reason, decided_at"


def derived_sql(mark: str) -> str:
    """The active memories made from one memory (its id is their source event's), no
    newer than a time, and not made from the replacing memory too (an episode that holds
    the correction as well as what it corrected tells the current state): parameters
    ``(old_id, workspace, old_id, new_id, until, new_id, new_id)``."""
    return (
        "SELECT s.memory_id FROM memory_sources s JOIN memories m ON m.id = s.memory_id "
        f"WHERE s.event_id = {mark} AND m.workspace_id = {mark} AND m.status = 'active' "
        f"AND m.id NOT IN ({mark}, {mark}) AND m.ts <= {mark} "
        "AND NOT EXISTS (SELECT 1 FROM memory_sources n WHERE n.memory_id = m.id "
        f"AND (n.event_id = {mark} OR n.event_id IN "
        f"(SELECT event_id FROM memory_sources WHERE memory_id = {mark})))"
    )


def derived_reason(old_id: str, reason: str) -> str:
    return f"made from {old_id}, which it replaced: {reason}"


def restore_link_sql(mark: str) -> str:
    """Write one link as an export recorded it: parameters ``(workspace, old_id, new_id,
    decided_by, reason, decided_at)``."""
    values = ", ".join([mark] * 6)
    return (
        f"INSERT INTO supersessions (workspace_id, {SUPERSESSION_COLUMNS}) VALUES ({values}) "
        "ON CONFLICT (old_id, new_id) DO UPDATE SET decided_by = excluded.decided_by, "
        "reason = excluded.reason, decided_at = excluded.decided_at"
    )


def missing_end(links: Sequence[Supersession], stored: set[str]) -> str | None:
    """The first end of ``links`` that is not among the ``stored`` memory ids, if any."""
    for link in links:
        for memory_id in (link.old_id, link.new_id):
            if memory_id not in stored:
                return memory_id
    return None


def revive_sql(forgotten: str, mark: str) -> str:
    """Give back their validity to memories whose replacing memory is among ``forgotten``
    (a subquery of ids) while they are not: parameters ``(now,)``. The ``IS NOT NULL``
    lets both backends find them through ``memories_superseded_by`` (a partial index)."""
    return (
        f"UPDATE memories SET status = 'active', valid_to = NULL, superseded_by = NULL, "
        f"updated_at = {mark} WHERE status = 'superseded' AND superseded_by IS NOT NULL "
        f"AND superseded_by IN {forgotten} "
        f"AND id NOT IN {forgotten}"
    )


def link_row(workspace_id: str, link: Supersession) -> tuple[str, ...]:
    """``restore_link_sql``'s parameters for one link."""
    return (
        workspace_id,
        link.old_id,
        link.new_id,
        link.decided_by,
        link.reason,
        ts_text(link.decided_at),
    )
