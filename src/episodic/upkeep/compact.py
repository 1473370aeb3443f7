"""Compaction and retirement: keep the journal and the memory lean without deleting
anything a user did not ask to delete.

**Archive** (seed 000): journal rows older than ``Settings.archive_after_days`` move from
``events`` to ``events_archive`` with the payload cut to 400 characters. Messages still
waiting for their episode stay. Memories made from an archived row keep citing it
(``memory_sources`` no longer has a foreign key to ``events``, migration 4) and
``Store.archived_events`` shows it.

**Merge** (seed 001): active memories whose ``[a-z0-9_]+`` token sets have Jaccard > 0.8
are near-duplicates. Only memories that look the same to every reader are compared: same
type, agent, crew and resource (merging across them would change who can see what), and
never chat messages (each is a turn of its conversation). Text outside those tokens
(other scripts) must agree too: the Jaccard of the Unicode word sets must also be > 0.8.
Each group merges into its most important member (ties: longer content, then newer),
which takes the longest content, the highest importance, the summed reinforcement
(reference counts) and the latest dates; the others get status ``compacted`` and a
pointer to it (``payload.compacted_into`` and ``memory_compactions``). They stay in the
database, out of every recall, until ``memory restore`` makes one active again (its
payload then records ``unmerged_at`` and ``unmerged_by``, and no later run merges it).
Nothing is merged across a supersession: a superseded memory is not active, and a memory
that replaced another is left as it is, since a merge would move its time (the newest of
the group) or fold it into another memory, and the memory it replaced would name a
replacement that no longer stands as it did.

**Stage retirement** (seed 001): when a phase of a project ends, the ``domain = task``
memories of that phase (payload ``phase`` or ``stage``) get status ``retired``; they stay
inspectable and are out of every recall policy and the dense index.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any, Protocol

from episodic.errors import InvalidInput
from episodic.model import Memory
from episodic.scoring.mmr import jaccard, tokens
from episodic.scoring.similarity import near_duplicates
from episodic.store.base import ArchivedEvent as ArchivedEvent
from episodic.store.supersession import Supersession
from episodic.store.upkeep import Merge, UpkeepStore
from episodic.write.messages import MESSAGE_TYPE

JOB = "compact"
MERGE_JACCARD = 0.8  # seed 001: merge when Jaccard > 0.8
ARCHIVE_AFTER_DAYS = 90.0
ARCHIVE_CHUNK = 5_000
SCAN_PAGE = 5_000
NOT_MERGED_TYPES = (MESSAGE_TYPE,)
TASK_DOMAIN = "task"
# What a compacted memory's payload records when a user restores it: when and by whom.
UNMERGED_AT = "unmerged_at"
UNMERGED_BY = "unmerged_by"

_UNICODE_WORD = re.compile(r"\w+")


class CompactionStore(UpkeepStore, Protocol):
    """What compaction reads and writes: the upkeep tables, and who replaced whom."""

    def supersessions(self, workspace_id: str, memory_ids: Sequence[str]) -> list[Supersession]:
        """The links with either end among ``memory_ids`` (as ``SearchStore``'s)."""
        ...


def archive(store: UpkeepStore, workspace: str, now: datetime, after_days: float) -> int:
    """Move the workspace's journal rows older than ``after_days`` to the archive."""
    if after_days <= 0:
        raise InvalidInput("archive_after_days", f"must be positive, got {after_days}")
    before = now - timedelta(days=after_days)
    moved = 0
    while True:
        step = store.archive_events(before, workspace_id=workspace, limit=ARCHIVE_CHUNK)
        moved += step
        if step < ARCHIVE_CHUNK:
            return moved


def plan_merges(memories: Sequence[Memory]) -> list[Merge]:
    """The merges compaction would apply to ``memories`` (pure: no store)."""
    groups: dict[tuple[str, str | None, str | None, str | None], list[Memory]] = {}
    for m in memories:
        # A merge a user undid (``memory restore``) is not made again.
        if m.type in NOT_MERGED_TYPES or m.payload.get(UNMERGED_AT) is not None:
            continue
        groups.setdefault((m.type, m.agent, m.crew, m.resource), []).append(m)
    merges: list[Merge] = []
    for members in groups.values():
        if len(members) >= 2:
            merges += _plan_group(members)
    return merges


def _plan_group(members: Sequence[Memory]) -> list[Merge]:
    ascii_sets = [tokens(m.content) for m in members]
    partners: dict[int, dict[int, float]] = {}
    for i, j, sim in near_duplicates(ascii_sets, MERGE_JACCARD):
        words_i = frozenset(_UNICODE_WORD.findall(members[i].content.lower()))
        words_j = frozenset(_UNICODE_WORD.findall(members[j].content.lower()))
        if jaccard(words_i, words_j) <= MERGE_JACCARD:
            continue
        partners.setdefault(i, {})[j] = sim
        partners.setdefault(j, {})[i] = sim
    if not partners:
        return []
    order = sorted(
        partners,
        key=lambda i: (
            -members[i].importance,
            -len(members[i].content),
            -members[i].ts.timestamp(),
            members[i].id,
        ),
    )
    taken: set[int] = set()
    merges: list[Merge] = []
    for survivor in order:
        if survivor in taken:
            continue
        losers = [j for j in partners[survivor] if j not in taken]
        if not losers:
            continue
        taken.add(survivor)
        taken.update(losers)
        merges.append(
            _merge(members[survivor], [(members[j], partners[survivor][j]) for j in losers])
        )
    return merges


def _merge(survivor: Memory, losers: Sequence[tuple[Memory, float]]) -> Merge:
    group = [survivor, *(m for m, _ in losers)]
    longest = max(group, key=lambda m: (len(m.content), m is survivor))
    referenced = [m.last_referenced_at for m in group if m.last_referenced_at is not None]
    return Merge(
        survivor_id=survivor.id,
        losers=tuple((m.id, round(sim, 6)) for m, sim in losers),
        content=longest.content,
        base_importance=max(m.base_importance for m in group),
        importance=max(m.importance for m in group),
        reference_count=sum(m.reference_count for m in group),
        last_referenced_at=max(referenced) if referenced else None,
        ts=max(m.ts for m in group),
    )


def merge_near_duplicates(store: CompactionStore, workspace: str, now: datetime) -> tuple[int, int]:
    """Plan and apply merges over the workspace's active memories but those that replaced
    another; returns (merges planned, memories compacted)."""
    memories: list[Memory] = []
    cursor = 0
    while True:
        page, cursor = store.scan_memories(
            workspace, cursor=cursor, limit=SCAN_PAGE, exclude_types=NOT_MERGED_TYPES
        )
        memories += page
        if not cursor:
            break
    replacing = {link.new_id for link in store.supersessions(workspace, [m.id for m in memories])}
    merges = plan_merges([m for m in memories if m.id not in replacing])
    return len(merges), store.compact_memories(workspace, merges, now)


def run_compaction(
    store: CompactionStore,
    workspace: str,
    now: datetime,
    *,
    archive_after_days: float = ARCHIVE_AFTER_DAYS,
) -> dict[str, Any]:
    archived = archive(store, workspace, now, archive_after_days)
    merges, compacted = merge_near_duplicates(store, workspace, now)
    return {
        "workspace": workspace,
        "archived_events": archived,
        "merges": merges,
        "compacted": compacted,
    }


def retire_phase(store: UpkeepStore, workspace: str, phase: str, now: datetime) -> list[str]:
    """Stage retirement: retire the task memories of ``phase``; returns their ids."""
    if not workspace or not workspace.strip():
        raise InvalidInput("workspace", "required: retirement runs inside one workspace")
    if not phase or not phase.strip():
        raise InvalidInput("phase", "name the phase (stage) that ended, e.g. --phase design")
    return store.retire_phase(workspace, phase.strip(), now, domain=TASK_DOMAIN)
