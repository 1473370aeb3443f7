"""The service's operations on the store: ``ServiceStore``.

API keys (only the hash of a secret is stored), browsing memories and changing their
status, markdown import and restore (seed 001: files are the source of truth), and
forgetting a workspace's data with everything derived from it. Implemented by
``episodic.store.sqlite.service`` and ``episodic.store.postgres.service``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from episodic.model import Event, Memory, MemoryStatus, ScopeFilter
from episodic.store.writes import MemoryReader
from episodic.tenancy import ApiKey


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
    def age_only(self) -> bool:
        """A retention forget: only ``before`` is given."""
        return (
            self.agent_id is None
            and self.resource_id is None
            and self.conversation_id is None
            and self.memory_id is None
        )

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
    extensions: int = 0  # reviews that named forgotten memories or scope, and nudges
    rekeyed: int = 0  # messages whose search keys came from a forgotten episode
    history: int = 0  # earlier versions of forgotten memories

    def to_json(self) -> dict[str, int]:
        return {name: getattr(self, name) for name in self.__slots__}


@dataclass(frozen=True, slots=True)
class MemoryVersion:
    """A version of a memory that an edit replaced: what it said, and when and by whom
    (an API key's id, ``python`` or ``cli``) it was replaced."""

    content: str
    importance: float
    payload: Mapping[str, Any]
    replaced_at: datetime
    replaced_by: str


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


class ServiceStore(MemoryReader, Protocol):
    """Keys, browsing, restore and forget, for ``episodic.service``'s operations and
    ``episodic.portable``."""

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

    def add_ui_session(
        self, session_hash: str, key_hash: str, created_at: datetime, expires_at: datetime
    ) -> None:
        """Store a sign-in to the operator's page (hashes only), and delete the sign-ins
        that expired before ``created_at``."""
        ...

    def ui_session_key(self, session_hash: str, now: datetime) -> str | None:
        """The key hash a sign-in stands for; None when unknown or expired by ``now``."""
        ...

    def end_ui_session(self, session_hash: str) -> None:
        """Delete a sign-in (signing out); nothing when there is none."""
        ...

    def list_memories(
        self,
        flt: ScopeFilter,
        limit: int,
        *,
        statuses: Sequence[MemoryStatus] | None = None,
        before: tuple[datetime, str] | None = None,
        matching: str | None = None,
    ) -> list[Memory]:
        """Memories visible through ``flt`` (any status unless ``statuses``), newest
        first by (ts, id), only those strictly before the ``before`` (ts, id) cursor.
        ``matching`` keeps only memories whose indexed text (content, payload, keys)
        holds every word of it, as the sparse leg matches a word (stemmed; a long word
        also as a prefix; stopwords left out); text with no searchable word matches
        nothing."""
        ...

    def count_memories(
        self, flt: ScopeFilter, *, matching: str | None = None
    ) -> dict[tuple[str, str], int]:
        """How many memories visible through ``flt`` (and ``matching``, as in
        ``list_memories``) there are of each (type, status); absent pairs are zero."""
        ...

    def revise_memory(self, memory: Memory, *, by: str, at: datetime) -> bool:
        """Give the stored memory ``memory``'s content, content hash, importance (both
        base and current) and payload, in one transaction, keeping the version it
        replaces in its history. New content drops the vector (the indexer embeds it
        again; until then only the keyword legs find it) and the keyword index follows
        the row. False, with nothing written, when those fields are already the same;
        ``NotFound`` for another workspace's id."""
        ...

    def memory_history(self, workspace_id: str, memory_id: str) -> list[MemoryVersion]:
        """The versions edits replaced, newest first (none for another workspace's id)."""
        ...

    def set_status(self, workspace_id: str, memory_id: str, status: MemoryStatus) -> Memory:
        """Change a memory's status; ``NotFound`` for another workspace's id."""
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
