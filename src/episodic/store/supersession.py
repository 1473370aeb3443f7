"""The store's part in supersession: replacing a memory with a newer one of the same slot,
and reading who replaced what (``SupersessionStore``, both backends' ``supersession.py``).

A superseded memory is never deleted: its status becomes ``superseded``, its
``valid_to`` the time the replacing memory became true, its ``superseded_by`` that
memory's id, and a ``supersessions`` row records who decided (``llm:<model>``,
``offline:<rule>``, ``explicit``) and why. Forgetting the replacing memory gives the old
one back its validity (``REVIVE_SQL``): a link whose newer end is gone replaces nothing.

A replacement can be undone (``revert_supersession``): the old memory is active again
and its link stays, marked ``reverted_at``/``reverted_by``. A reverted pair is never
superseded again by detection (``supersede`` refuses it); only an explicit request
(``overrule``) replaces the same memory with the same one again.

A partial change is softer: a newer memory changes one sentence of an older one that
says more that stays true (the rule's ``says-more``), so the older is not replaced. The
pair is kept in ``partial_changes``, a sibling of ``supersessions`` with the same
columns (``Supersession`` reads either): the older stays active, recall ranks the newer
just above it and marks it earlier. Undone (``revert_partial_changes``), the row stays
marked reverted and the pair is never linked again; it cascades with either memory."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from episodic.model import Memory
from episodic.store.rows import parse_ts, ts_text


@dataclass(frozen=True, slots=True)
class Supersession:
    """``new_id`` replaced ``old_id``: decided by whom, why, and when it was decided."""

    old_id: str
    new_id: str
    decided_by: str
    reason: str
    decided_at: datetime
    # Set when the replacement was undone: the old memory is active again.
    reverted_at: datetime | None = None
    reverted_by: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "old": self.old_id,
            "new": self.new_id,
            "decided_by": self.decided_by,
            "reason": self.reason,
            "decided_at": self.decided_at.isoformat(),
            "reverted_at": None if self.reverted_at is None else self.reverted_at.isoformat(),
            "reverted_by": self.reverted_by,
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
        overrule: bool = False,
    ) -> Memory | None:
        """Mark ``old_id`` superseded by ``new_id`` in one transaction: its status, its
        ``valid_to`` (when ``new_id`` became true) and its ``superseded_by``, and the
        link. The active memories made from ``old_id`` (an episode recounting a message,
        an entry quoting it) that are no newer than ``new_id`` go with it, each linked
        to ``new_id`` too. None, with nothing written, when ``old_id`` is not active
        (already superseded, retired or compacted: the first replacement stands), or
        when this replacement was made and reverted before (unless ``overrule``: an
        explicit request). ``NotFound`` when either id is not a memory of the
        workspace."""
        ...

    def revert_supersession(
        self, workspace_id: str, memory_id: str, *, by: str, at: datetime
    ) -> list[str] | None:
        """Undo the replacement of ``memory_id``: it is active again (status, no
        ``valid_to``, no ``superseded_by``), with the memories made from it that were
        superseded with it by the same memory, and their links are marked reverted.
        Returns the ids made active (``memory_id`` first); None, with nothing written,
        when the memory is not superseded. ``NotFound`` when it is not a memory of the
        workspace."""
        ...

    def restore_supersessions(self, workspace_id: str, links: Sequence[Supersession]) -> int:
        """Write links read back from an export as they were (who decided, why, when),
        replacing a stored link of the same two memories; the memories' own fields
        (status, validity) are restored with them. ``InvalidInput`` on field
        ``supersedes`` when an end is not a memory of the workspace. Returns the links
        written."""
        ...

    def link_partial_change(
        self,
        workspace_id: str,
        old_id: str,
        new_id: str,
        *,
        decided_by: str,
        reason: str,
        at: datetime,
    ) -> bool:
        """Record that ``new_id`` changes part of ``old_id``, which stays. False, with
        nothing written, when the pair is linked already or was linked and undone, or
        when ``old_id`` is not active. ``NotFound`` when either id is not a memory of the
        workspace."""
        ...

    def partial_changes(self, workspace_id: str, memory_ids: Sequence[str]) -> list[Supersession]:
        """The partial-change links (reverted ones too) that name any of ``memory_ids`` at
        either end, oldest decided first."""
        ...

    def partly_changed_by(self, workspace_id: str, old_ids: Sequence[str]) -> dict[str, list[str]]:
        """Each of ``old_ids`` with a live partial-change link, and the newer memories
        that changed it, newest decided first: one small read (recall asks it for its
        hits)."""
        ...

    def revert_partial_changes(
        self, workspace_id: str, old_id: str, *, by: str, at: datetime
    ) -> list[str]:
        """Undo every live partial change of ``old_id``: the links stay, marked reverted,
        and are never made again. Returns the newer ends undone ([] when none)."""
        ...

    def pending_supersession(self, limit: int, *, vectored_only: bool) -> list[Memory]:
        """Memories not yet checked for what they may replace, oldest written first
        (with ``vectored_only``, only those already embedded)."""
        ...

    def mark_supersession_checked(self, ids: Sequence[str]) -> None:
        """Take memories off the list ``pending_supersession`` reads."""
        ...


# -- SQL both backends run (``mark`` is the driver's placeholder) -------------------------
SUPERSESSION_COLUMNS = "old_id, new_id, decided_by, reason, decided_at, reverted_at, reverted_by"
# What ``supersede`` inserts (a new link is never reverted).
LINK_INSERT_COLUMNS = "workspace_id, old_id, new_id, decided_by, reason, decided_at"


def link_from_row(row: Sequence[Any]) -> Supersession:
    """A ``Supersession`` from a row of ``SUPERSESSION_COLUMNS``."""
    return Supersession(
        row[0],
        row[1],
        row[2],
        row[3],
        parse_ts(row[4]),
        None if row[5] is None else parse_ts(row[5]),
        row[6],
    )


def insert_link_sql(mark: str) -> str:
    """Write a new link; one of the same two memories (an explicit request after a
    revert) is decided anew: parameters ``(workspace, old_id, new_id, decided_by,
    reason, decided_at)``."""
    values = ", ".join([mark] * 6)
    return (
        f"INSERT INTO supersessions ({LINK_INSERT_COLUMNS}) VALUES ({values}) "
        "ON CONFLICT (old_id, new_id) DO UPDATE SET decided_by = excluded.decided_by, "
        "reason = excluded.reason, decided_at = excluded.decided_at, reverted_at = NULL, "
        "reverted_by = NULL"
    )


def reverted_sql(mark: str) -> str:
    """The older ends of the reverted links to one memory: parameters ``(new_id,)``."""
    return f"SELECT old_id FROM supersessions WHERE new_id = {mark} AND reverted_at IS NOT NULL"


def restored_with_sql(mark: str) -> str:
    """The memories made from one memory that the same memory superseded with it:
    parameters ``(memory_id, workspace, new_id, memory_id)``."""
    return (
        "SELECT m.id FROM memory_sources s JOIN memories m ON m.id = s.memory_id "
        f"WHERE s.event_id = {mark} AND m.workspace_id = {mark} AND m.status = 'superseded' "
        f"AND m.superseded_by = {mark} AND m.id <> {mark}"
    )


def mark_reverted_sql(mark: str, count: int) -> str:
    """Mark the links from ``count`` memories to one memory reverted: parameters
    ``(reverted_at, reverted_by, new_id, *old_ids)``."""
    marks = ", ".join([mark] * count)
    return (
        f"UPDATE supersessions SET reverted_at = {mark}, reverted_by = {mark} "
        f"WHERE new_id = {mark} AND old_id IN ({marks})"
    )


def reactivate_sql(mark: str, count: int) -> str:
    """Make ``count`` memories active again: parameters ``(updated_at, *ids)``."""
    marks = ", ".join([mark] * count)
    return (
        "UPDATE memories SET status = 'active', valid_to = NULL, superseded_by = NULL, "
        f"updated_at = {mark} WHERE status = 'superseded' AND id IN ({marks})"
    )


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


def insert_partial_sql(mark: str) -> str:
    """Link a partial change unless the pair was linked before (undone or not):
    parameters ``(workspace, old_id, new_id, decided_by, reason, decided_at)``."""
    values = ", ".join([mark] * 6)
    return (
        f"INSERT INTO partial_changes ({LINK_INSERT_COLUMNS}) VALUES ({values}) "
        "ON CONFLICT (old_id, new_id) DO NOTHING"
    )


def revert_partial_sql(mark: str) -> str:
    """Mark one memory's live partial changes reverted, returning their newer ends:
    parameters ``(reverted_at, reverted_by, workspace, old_id)``."""
    return (
        f"UPDATE partial_changes SET reverted_at = {mark}, reverted_by = {mark} "
        f"WHERE workspace_id = {mark} AND old_id = {mark} AND reverted_at IS NULL "
        "RETURNING new_id"
    )


def partly_by_sql(mark: str, count: int) -> str:
    """The live partial changes of ``count`` older memories: parameters ``(workspace,
    *old_ids)``; rows ``(old_id, new_id)``, newest decided first."""
    marks = ", ".join([mark] * count)
    return (
        "SELECT old_id, new_id FROM partial_changes WHERE workspace_id = "
        f"{mark} AND old_id IN ({marks}) AND reverted_at IS NULL "
        "ORDER BY decided_at DESC, new_id"
    )


def partly_by(rows: Sequence[Sequence[Any]]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for old_id, new_id in rows:
        out.setdefault(old_id, []).append(new_id)
    return out


def derived_reason(old_id: str, reason: str) -> str:
    return f"made from {old_id}, which it replaced: {reason}"


def restore_link_sql(mark: str) -> str:
    """Write one link as an export recorded it: parameters ``(workspace, old_id, new_id,
    decided_by, reason, decided_at, reverted_at, reverted_by)``."""
    values = ", ".join([mark] * 8)
    return (
        f"INSERT INTO supersessions (workspace_id, {SUPERSESSION_COLUMNS}) VALUES ({values}) "
        "ON CONFLICT (old_id, new_id) DO UPDATE SET decided_by = excluded.decided_by, "
        "reason = excluded.reason, decided_at = excluded.decided_at, "
        "reverted_at = excluded.reverted_at, reverted_by = excluded.reverted_by"
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


def link_row(workspace_id: str, link: Supersession) -> tuple[str | None, ...]:
    """``restore_link_sql``'s parameters for one link."""
    return (
        workspace_id,
        link.old_id,
        link.new_id,
        link.decided_by,
        link.reason,
        ts_text(link.decided_at),
        None if link.reverted_at is None else ts_text(link.reverted_at),
        link.reverted_by,
    )
