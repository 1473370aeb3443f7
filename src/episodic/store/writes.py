"""Writing the journal and memories, and reading them back: ``MemoryReader`` and
``WriteStore``.

Ingest appends events with the memories admitted from them; segmentation closes a
conversation's messages into an episode with what was derived from it. Every other area
reads memories back by id, so ``MemoryReader`` is the small protocol the others extend.
Implemented by ``episodic.store.sqlite.writes`` and ``episodic.store.postgres.writes``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from episodic.model import Event, Memory, ScopeFilter


@dataclass(frozen=True, slots=True)
class AppendResult:
    events_inserted: int
    events_duplicate: int
    memories_inserted: int


@dataclass(frozen=True, slots=True)
class WorkspaceCounts:
    """A workspace of the database, and how much it holds."""

    workspace: str
    memories: int
    events: int


@dataclass(frozen=True, slots=True)
class PendingConversation:
    """A conversation with messages not yet segmented into an episode."""

    workspace_id: str
    conversation_id: str
    messages: int
    oldest: datetime
    newest: datetime


def taken_ids(
    events: Sequence[Event],
    memories: Sequence[Memory],
    journal: Sequence[tuple[str, str]],
    stored: Sequence[tuple[str, str]],
) -> list[tuple[str, str]]:
    """The (workspace, id) items of an append whose id another workspace holds.
    ``journal`` and ``stored`` are the (id, workspace) rows of the journal (with its
    archive) and of ``memories`` for the batch's ids, read after the batch's own inserts,
    inside its transaction: of two workspaces sending one id in the same batch, the first
    holds it. Ids are unique across the store, so without this check such a write is
    skipped as a "duplicate" of another workspace's data; ``append`` refuses it with
    ``IdTaken`` instead.

    The journal decides first: a memory row may have been inserted by an item that is
    itself refused. Only when no event is refused are memories compared (a memory whose
    id another workspace's memory holds), so the caller's retry without the refused
    items sees true owners."""
    items = [(e.workspace, e.id) for e in events] + [(m.workspace, m.id) for m in memories]
    for rows in (journal, stored):
        holder = dict(rows)
        taken = {
            (workspace, item_id): None
            for workspace, item_id in items
            if holder.get(item_id, workspace) != workspace
        }
        if taken:
            return list(taken)
    return []


class MemoryReader(Protocol):
    """Memories and events by id. Every read runs inside one workspace: ids of another
    workspace are left out (or ``NotFound``), never returned."""

    def get_memories(self, workspace_id: str, ids: Sequence[str]) -> list[Memory]:
        """Memories of that workspace with those ids, in the order asked; unknown ids and
        ids of other workspaces are left out."""
        ...

    def get_memory(self, workspace_id: str, memory_id: str) -> Memory:
        """One memory; raises ``NotFound`` (also for another workspace's id)."""
        ...

    def get_events(self, workspace_id: str, ids: Sequence[str]) -> list[Event]: ...

    def memory_ids_starting(self, workspace_id: str, prefix: str, limit: int) -> list[str]:
        """Up to ``limit`` ids of that workspace's memories (any status) that start with
        ``prefix``, compared case for case, in code point order: what a shortened id
        given on the command line could mean."""
        ...

    def workspaces(self) -> list[str]:
        """Every workspace holding memories, sorted."""
        ...

    def workspace_counts(self) -> list[WorkspaceCounts]:
        """Every workspace holding memories or events, sorted, with how many of each
        (the live journal's events; archived ones are not counted)."""
        ...


class WriteStore(MemoryReader, Protocol):
    """What ingest and segmentation write: events, admitted memories, episodes."""

    def append(self, events: Sequence[Event], memories: Sequence[Memory]) -> AppendResult:
        """Store events and the memories admitted from them, in one transaction.

        Idempotent: an event whose id already exists in the same workspace is skipped, and
        so is any memory whose id already exists there. Ids are unique across the store:
        when one is another workspace's, the whole call is refused with ``IdTaken``
        (nothing written) rather than skipped. Events with no memory in ``memories`` are
        marked as skipped by admission so no sweep ever looks at them again."""
        ...

    def known_hashes(self, flt: ScopeFilter, hashes: Sequence[str]) -> set[str]:
        """Which of ``hashes`` are the ``content_hash`` of an active memory visible
        through ``flt`` (seed 004's dedupe against the same scope)."""
        ...

    def pending_conversations(
        self, limit: int, workspace_id: str | None = None
    ) -> list[PendingConversation]:
        """Conversations holding messages no episode has taken yet, the longest-waiting
        first (across workspaces unless one is given)."""
        ...

    def pending_messages(self, workspace_id: str, conversation_id: str) -> list[Event]:
        """That conversation's messages no episode has taken yet, in time order."""
        ...

    def close_episode(
        self,
        episode: Memory,
        message_ids: Sequence[str],
        derived: Sequence[Memory],
        keys: Mapping[str, str],
    ) -> bool:
        """In one transaction: store ``episode`` (citing its messages), mark those message
        events as taken by it, store the memories derived from it (entries, learnings,
        each citing its own events) and set the derived search keys of message memories
        (``keys``: memory id -> keys). Every id must belong to the episode's workspace.
        Idempotent: an episode already stored changes nothing and returns False."""
        ...
