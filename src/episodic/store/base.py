"""The Store protocol: everything the service needs from a database.

Backends (SQLite today, PostgreSQL later) implement it; ``tests/store_contract.py`` runs
the same contract against each. Workspace isolation is the store's job: every read takes a
``ScopeFilter`` or a workspace id and never returns rows of another workspace.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from episodic.model import Candidate, Event, Memory, MemoryStatus, ScopeFilter
from episodic.tenancy import ApiKey

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


# -- issue 6 (the service) -------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class ForgetSpec:
    """What ``Store.forget`` removes: the workspace's data matching every filter given
    (all of it when none is), and whatever was derived from that."""

    workspace_id: str
    agent_id: str | None = None
    resource_id: str | None = None
    conversation_id: str | None = None
    memory_id: str | None = None
    before: datetime | None = None  # only what happened before this instant

    @property
    def whole_workspace(self) -> bool:
        return (
            self.agent_id is None
            and self.resource_id is None
            and self.conversation_id is None
            and self.memory_id is None
            and self.before is None
        )


@dataclass(frozen=True, slots=True)
class ForgetCounts:
    """Rows removed (or, for ``rekeyed``, cleaned) by one ``forget``, by kind."""

    memories: int = 0
    events: int = 0
    vectors: int = 0
    relations: int = 0
    archived: int = 0
    embedding_cache: int = 0
    import_files: int = 0
    health_snapshots: int = 0
    extensions: int = 0  # rows of other features' tables (issue 5's pending reviews)
    rekeyed: int = 0  # messages whose search keys came from a forgotten episode

    def to_json(self) -> dict[str, int]:
        return {name: getattr(self, name) for name in self.__slots__}


@dataclass(frozen=True, slots=True)
class ImportedFile:
    """One markdown file ``episodic import`` has read (seed 001's file_meta)."""

    path: str  # relative to the import root, with / separators
    mtime_ns: int
    size: int
    sha256: str
    workspace_id: str | None = None
    memory_id: str | None = None


@dataclass(frozen=True, slots=True)
class RestoreResult:
    inserted: int = 0
    updated: int = 0
    unchanged: int = 0
    events_inserted: int = 0


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

    # -- issue 6 (the service): keys, browsing, forgetting, markdown import ----------
    def add_api_key(self, key: ApiKey, key_hash: str) -> None:
        """Store a new key (only the hash of its secret)."""
        ...

    def api_key_by_hash(self, key_hash: str) -> ApiKey | None:
        """The key with that secret hash, revoked or not; None when unknown."""
        ...

    def api_keys(self, workspace_id: str | None = None) -> list[ApiKey]:
        """Every key (of one workspace), oldest first."""
        ...

    def revoke_api_key(self, key_id: str, at: datetime) -> ApiKey | None:
        """Mark a key revoked (once; a second revoke keeps the first time). None when
        there is no such key."""
        ...

    def list_memories(
        self,
        flt: ScopeFilter,
        limit: int,
        *,
        statuses: Sequence[MemoryStatus] | None = None,
        before: tuple[datetime, str] | None = None,
    ) -> list[Memory]:
        """Memories visible through ``flt`` (any status unless ``statuses``), newest
        first by (ts, id), only those strictly before the ``before`` (ts, id) cursor."""
        ...

    def set_status(self, workspace_id: str, memory_id: str, status: MemoryStatus) -> Memory:
        """Change a memory's status; ``NotFound`` for another workspace's id."""
        ...

    def workspaces(self) -> list[str]:
        """Every workspace that holds a memory, sorted."""
        ...

    def events_with_episodes(
        self, workspace_id: str, ids: Sequence[str]
    ) -> list[tuple[Event, str | None]]:
        """Events of the workspace with those ids, each with the episode that took it."""
        ...

    def restore(
        self, memory: Memory, events: Sequence[tuple[Event, str | None]] = ()
    ) -> RestoreResult:
        """Import one memory from its portable form, in one transaction: first the events
        it cites (each with its episode; ones already stored are kept as they are), then
        the memory, inserted or, when it exists in the same workspace, overwritten field
        by field. Changed content drops its vector, so the indexer embeds it again (the
        embedding cache answers for text it has seen). ``InvalidInput`` when the id is
        another workspace's or a cited event is missing."""
        ...

    def import_state(self, root: str) -> dict[str, ImportedFile]:
        """The files imported from ``root`` before, by relative path."""
        ...

    def save_import_state(
        self, root: str, files: Sequence[ImportedFile], removed: Sequence[str] = ()
    ) -> None:
        """Record files as imported (replacing their rows) and forget ``removed`` paths."""
        ...

    def delete_memories(self, workspace_id: str, ids: Sequence[str]) -> int:
        """Remove memories (their vectors, edges and search rows go with them), keeping
        the events they came from. For ``reindex --from``: memories no file holds."""
        ...

    def forget(self, spec: ForgetSpec, *, rekey: Callable[[Event], str]) -> ForgetCounts:
        """Remove, in one transaction, everything ``spec`` reaches: its events and
        memories, the memories derived from those events (episodes, entries,
        learnings), their vectors, search rows, edges and sources, archived copies,
        embedding-cache entries no remaining memory uses, import records, and the dense
        index's rows. Messages that lose their episode keep only the search keys
        ``rekey`` gives them (their own speaker and date)."""
        ...

    def health_snapshots(
        self, workspace_id: str, crew_id: str | None, limit: int
    ) -> list[dict[str, Any]]:
        """INTERIM (issue 5 replaces it): the newest ``memory_health_snapshots`` rows."""
        ...
