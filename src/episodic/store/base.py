"""The ``Store`` protocol: everything the service needs from a database, as the union of
the role-sized protocols each caller names.

| protocol | module | callers |
|---|---|---|
| ``MemoryReader`` | ``episodic.store.writes`` | every area (memories by id) |
| ``WriteStore`` | ``episodic.store.writes`` | ingest, segmentation |
| ``SearchStore`` | ``episodic.store.search`` | the recall engine |
| ``VectorStore`` | ``episodic.store.vectors`` | the indexer, the embedding cache |
| ``UpkeepStore`` | ``episodic.store.upkeep`` | the upkeep jobs and their scheduler |
| ``ServiceStore`` | ``episodic.store.service`` | keys, browsing, forget, markdown |
| ``JournalStore`` | ``episodic.store.journal`` | keyword search of the journal |
| ``SupersessionStore`` | ``episodic.store.supersession`` | replacing a memory, its links |
| ``Store`` | here | the service, which composes them all, and ``doctor`` |

Both backends (``episodic.store.sqlite``, ``episodic.store.postgres``) implement every
protocol, one module per area with the same names; ``tests/store_contract.py`` runs the
same contract against each. Workspace isolation is the store's job: every read takes a
``ScopeFilter`` or a workspace id and never returns rows of another workspace.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

from episodic.store.integrity import IntegrityCheck
from episodic.store.journal import JournalHit, JournalStore
from episodic.store.search import SearchStore
from episodic.store.service import (
    ForgetCounts,
    ForgetSpec,
    ImportedFile,
    RestoreResult,
    ServiceStore,
)
from episodic.store.sql import CREW_SHARED_MIN_BASE_IMPORTANCE
from episodic.store.supersession import Supersession, SupersessionStore
from episodic.store.upkeep import (
    DECAY_FORMULAS,
    ArchivedEvent,
    ConsolidationBacklog,
    FsrsUpdate,
    HealthFacts,
    HealthSnapshot,
    Merge,
    PendingReview,
    ReviewOutcome,
    ReviewRequest,
    UpkeepStore,
)
from episodic.store.vectors import RELATIONS, PendingVector, Relation, Vector, VectorStore
from episodic.store.writes import (
    AppendResult,
    MemoryReader,
    PendingConversation,
    WriteStore,
    taken_ids,
)


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
    # When the memory waiting longest for its vector was stored (None: none waits).
    oldest_pending_at: datetime | None = None
    # The database's size on disk, where the backend can say (PostgreSQL); SQLite's is its
    # files' (episodic.metrics.sqlite_size).
    size_bytes: int | None = None


@runtime_checkable
class Store(
    WriteStore,
    SearchStore,
    VectorStore,
    UpkeepStore,
    ServiceStore,
    JournalStore,
    SupersessionStore,
    Protocol,
):
    """A memory database. Methods are synchronous and thread-compatible per instance.

    Beyond the areas: its lifecycle, and what ``episodic doctor`` reads (implemented by
    each backend's ``connection.py`` and ``integrity.py``)."""

    url: str

    def close(self) -> None: ...

    def schema_version(self) -> int: ...

    def stats(self, workspace_id: str | None = None) -> StoreStats: ...

    def meta(self) -> dict[str, Any]:
        """Backend facts for ``doctor`` (path, journal mode, sizes)."""
        ...

    def deep_check(self) -> list[IntegrityCheck]:
        """``episodic doctor --deep``: the engine's own checks, and whether the derived
        data (keyword index, vectors, has_vector, link tables) agrees with the journal
        and the memories; one ``IntegrityCheck`` per question. Reads only."""
        ...


__all__ = [
    "CREW_SHARED_MIN_BASE_IMPORTANCE",
    "DECAY_FORMULAS",
    "RELATIONS",
    "AppendResult",
    "ArchivedEvent",
    "ConsolidationBacklog",
    "ForgetCounts",
    "ForgetSpec",
    "FsrsUpdate",
    "HealthFacts",
    "HealthSnapshot",
    "ImportedFile",
    "JournalHit",
    "JournalStore",
    "MemoryReader",
    "Merge",
    "PendingConversation",
    "PendingReview",
    "PendingVector",
    "Relation",
    "RestoreResult",
    "ReviewOutcome",
    "ReviewRequest",
    "SearchStore",
    "ServiceStore",
    "Store",
    "StoreStats",
    "Supersession",
    "SupersessionStore",
    "UpkeepStore",
    "Vector",
    "VectorStore",
    "WriteStore",
    "taken_ids",
]
