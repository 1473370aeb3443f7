"""The Store protocol: everything the service needs from a database.

Backends (SQLite today, PostgreSQL later) implement it; ``tests/store_contract.py`` runs
the same contract against each. Workspace isolation is the store's job: every read takes a
``ScopeFilter`` or a workspace id and never returns rows of another workspace.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from episodic.model import Candidate, Event, Memory, ScopeFilter

Vector = npt.NDArray[np.float32]

# A lead's crew_shared view: its own entries plus crew entries that carry a type,
# severity or priority bonus (base importance above a routine info entry's 0.5).
CREW_SHARED_MIN_BASE_IMPORTANCE = 0.55


@dataclass(frozen=True, slots=True)
class AppendResult:
    events_inserted: int
    events_duplicate: int
    memories_inserted: int


RELATIONS = ("similar", "supports", "contradicts")


@dataclass(frozen=True, slots=True)
class Relation:
    """An edge of the memory graph (seed 000): ``similar`` (weight = cosine) from a new
    memory to an older one, ``supports`` (weight 1.0) from a rule to its evidence."""

    src: str
    dst: str
    relation: str
    weight: float


@dataclass(frozen=True, slots=True)
class PendingVector:
    memory_id: str
    workspace_id: str
    content: str


@dataclass(frozen=True, slots=True)
class PendingConversation:
    """A conversation with messages not yet segmented into an episode."""

    workspace_id: str
    conversation_id: str
    messages: int
    oldest: datetime
    newest: datetime


@dataclass(frozen=True, slots=True)
class StoreStats:
    events: int
    memories: int
    active_memories: int
    vectors: int
    pending_vectors: int
    vector_model: str | None
    vector_dim: int | None
    schema_version: int


@runtime_checkable
class Store(Protocol):
    """A memory database. Methods are synchronous and thread-compatible per instance."""

    url: str

    def close(self) -> None: ...

    def schema_version(self) -> int: ...

    # -- writing -------------------------------------------------------------------
    def append(self, events: Sequence[Event], memories: Sequence[Memory]) -> AppendResult:
        """Store events and the memories admitted from them, in one transaction.

        Idempotent: an event whose id already exists is skipped, and so is any memory whose
        id already exists. Events with no memory in ``memories`` are marked as skipped by
        admission so no sweep ever looks at them again."""
        ...

    # -- reading -------------------------------------------------------------------
    def get_memories(self, workspace_id: str, ids: Sequence[str]) -> list[Memory]:
        """Memories of that workspace with those ids, in the order asked; unknown ids and
        ids of other workspaces are left out."""
        ...

    def get_memory(self, workspace_id: str, memory_id: str) -> Memory:
        """One memory; raises ``NotFound`` (also for another workspace's id)."""
        ...

    def get_events(self, workspace_id: str, ids: Sequence[str]) -> list[Event]: ...

    def stats(self, workspace_id: str | None = None) -> StoreStats: ...

    # -- vectors -------------------------------------------------------------------
    def pending_vectors(self, limit: int) -> list[PendingVector]:
        """Active memories that have no vector yet, oldest first, across workspaces."""
        ...

    def put_vectors(self, model_id: str, dim: int, rows: Sequence[tuple[str, Vector]]) -> int:
        """Store L2-normalised float32 vectors for memories. Raises ``ModelMismatch`` when
        the store already holds vectors of another model or dimension. Returns rows written."""
        ...

    def vector_model(self) -> tuple[str, int] | None:
        """(model id, dim) of the stored vectors, or None when there are none."""
        ...

    def clear_vectors(self) -> int:
        """Drop every stored vector (before a reindex). Returns how many were dropped."""
        ...

    def cache_get(self, model_id: str, content_hashes: Sequence[str]) -> dict[str, Vector]: ...

    def cache_put(self, model_id: str, items: Mapping[str, Vector]) -> None: ...

    # -- retrieval -----------------------------------------------------------------
    def search_dense(self, flt: ScopeFilter, query: Vector, limit: int) -> list[Candidate]:
        """Active memories visible through ``flt`` ranked by cosine to ``query`` (best first)."""
        ...

    def search_sparse(self, flt: ScopeFilter, text: str, limit: int) -> list[Candidate]:
        """Active memories visible through ``flt`` ranked by BM25 for ``text`` (best first,
        higher score = better). Raw user text goes in; escaping is the store's job."""
        ...

    def search_recent(
        self,
        flt: ScopeFilter,
        limit: int,
        *,
        start: datetime | None = None,
        end: datetime | None = None,
        types: Sequence[str] | None = None,
    ) -> list[Candidate]:
        """Active memories visible through ``flt``, newest first (score = POSIX time),
        optionally only those with ``start <= ts < end`` and of the given types."""
        ...

    def neighbours(
        self, flt: ScopeFilter, ids: Sequence[str], radius: int
    ) -> dict[str, list[tuple[str, int]]]:
        """For each id that belongs to a conversation: up to ``radius`` active memories of
        its type just before and just after it in the same conversation, visible through
        ``flt``, as (id, offset) with offset -1, -2 … before and +1, +2 … after."""
        ...

    def conversations_of(self, workspace_id: str, ids: Sequence[str]) -> dict[str, str | None]:
        """The conversation of each of ``ids`` that is a memory of the workspace (None for
        a memory outside any conversation); unknown ids are left out."""
        ...

    def add_relations(self, workspace_id: str, edges: Sequence[Relation]) -> int:
        """Insert edges between memories of that workspace (re-adding one updates its
        weight); raises ``NotFound`` if an end is not a memory of the workspace."""
        ...

    def related(
        self, flt: ScopeFilter, ids: Sequence[str], relation: str = "similar"
    ) -> dict[str, list[tuple[str, float]]]:
        """For each id, the active memories one edge away (either direction) that ``flt``
        can see, as (id, weight), heaviest first."""
        ...

    def mark_referenced(self, workspace_id: str, ids: Sequence[str], at: datetime) -> None:
        """reference_count + 1 and last_referenced_at = at, for each id of that workspace."""
        ...

    # -- conversations -------------------------------------------------------------
    def pending_conversations(
        self, limit: int, workspace_id: str | None = None
    ) -> list[PendingConversation]:
        """Conversations holding messages no episode has taken yet, the longest-waiting
        first (across workspaces unless one is given)."""
        ...

    def pending_messages(self, workspace_id: str, conversation_id: str) -> list[Event]:
        """That conversation's messages no episode has taken yet, in time order."""
        ...

    def get_vectors(self, workspace_id: str, memory_ids: Sequence[str]) -> dict[str, Vector]:
        """The stored vectors of those memories of the workspace (ids without one, or of
        another workspace, are left out)."""
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

    def known_hashes(self, flt: ScopeFilter, hashes: Sequence[str]) -> set[str]:
        """Which of ``hashes`` are the ``content_hash`` of an active memory visible
        through ``flt`` (seed 004's dedupe against the same scope)."""
        ...

    def meta(self) -> dict[str, Any]:
        """Backend facts for ``doctor`` (path, journal mode, sizes)."""
        ...
