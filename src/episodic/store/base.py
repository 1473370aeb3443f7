"""The Store protocol: everything the service needs from a database.

Backends (SQLite today, PostgreSQL later) implement it; ``tests/store_contract.py`` runs
the same contract against each. Workspace isolation is the store's job: every read takes a
``ScopeFilter`` or a workspace id and never returns rows of another workspace.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from episodic.model import Candidate, Event, Memory, MemoryStatus, ScopeFilter
from episodic.store.integrity import IntegrityCheck
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
    items = [(e.workspace_id, e.id) for e in events] + [(m.workspace_id, m.id) for m in memories]
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


# -- upkeep (issue 5) --------------------------------------------------------------------
DECAY_FORMULAS = ("crewship", "prominence")


@dataclass(frozen=True, slots=True)
class ReviewRequest:
    """A recall waiting for its review (seed 003): the memories it returned, best first,
    with the dense cosine of each (None where the hit had no dense score)."""

    workspace_id: str
    query: str
    memory_ids: tuple[str, ...]
    recalled_at: datetime
    cosines: tuple[float | None, ...] = ()
    agent_id: str | None = None
    crew_id: str | None = None
    conversation_id: str | None = None


@dataclass(frozen=True, slots=True)
class PendingReview:
    """A ``ReviewRequest`` as stored, with its id; claimed by one review job at a time."""

    id: int
    request: ReviewRequest


@dataclass(frozen=True, slots=True)
class ReviewOutcome:
    """How a claimed review ended: ``rated`` (``ratings``: memory id -> again / hard /
    good / easy, or ``skipped`` for a memory reviewed less than a day before; ``rated_by``
    says what rated them) or ``expired`` (no output to rate it by came in time)."""

    review_id: int
    outcome: str
    ratings: Mapping[str, str] = field(default_factory=dict)
    rated_by: str = ""


@dataclass(frozen=True, slots=True)
class FsrsUpdate:
    """New FSRS state for one memory. Applied only while the memory's last review is
    still ``expected_last_review`` (a compare-and-set: two jobs never both apply)."""

    memory_id: str
    stability: float
    difficulty: float
    reviewed_at: datetime
    expected_last_review: datetime | None


@dataclass(frozen=True, slots=True)
class Merge:
    """Compaction of near-duplicate memories (seed 001): each of ``losers`` (id, Jaccard
    similarity) becomes ``compacted`` and points at ``survivor_id``, which takes the merged
    fields: the longest content, the highest importance, the summed reinforcement and the
    latest dates."""

    survivor_id: str
    losers: tuple[tuple[str, float], ...]
    content: str
    base_importance: float
    importance: float
    reference_count: int
    last_referenced_at: datetime | None
    ts: datetime


@dataclass(frozen=True, slots=True)
class ArchivedEvent:
    """A journal row moved to the archive (payload cut to 400 characters, as text)."""

    id: str
    workspace_id: str
    ts: datetime
    type: str
    severity: str
    summary: str
    payload: str
    archived_at: datetime
    agent_id: str | None = None
    crew_id: str | None = None
    resource_id: str | None = None
    conversation_id: str | None = None


@dataclass(frozen=True, slots=True)
class HealthFacts:
    """What the health score needs from SQL, for the active memories a filter sees:
    how many there are, how many have a vector, how many of those have a relations edge
    (either direction, any relation), and the median age in days (None when empty)."""

    active: int
    vectored: int
    linked: int
    median_age_days: float | None


@dataclass(frozen=True, slots=True)
class HealthSnapshot:
    """One row of ``memory_health_snapshots``; ``crew_id`` None is the workspace."""

    workspace_id: str
    crew_id: str | None
    snapshot_date: date
    freshness: float
    coverage: float
    coherence: float
    efficiency: float
    reachability: float
    score: float


@dataclass(frozen=True, slots=True)
class ConsolidationBacklog:
    """Active memories no consolidation has taken yet, and how many of them are
    flashbulb episodes (seed 003: a flashbulb triggers consolidation at once)."""

    unconsolidated: int
    flashbulbs: int


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
    extensions: int = 0  # reviews that named forgotten memories or scope, and nudges
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

        Idempotent: an event whose id already exists in the same workspace is skipped, and
        so is any memory whose id already exists there. Ids are unique across the store:
        when one is another workspace's, the whole call is refused with ``IdTaken``
        (nothing written) rather than skipped. Events with no memory in ``memories`` are
        marked as skipped by admission so no sweep ever looks at them again."""
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

    def index_pending(
        self,
        limit: int,
        model_id: str,
        dim: int,
        embed: Callable[[list[str]], Vector],
    ) -> list[tuple[PendingVector, Vector]]:
        """Embed (``embed(texts) -> float32[n, dim]``) and store vectors for up to
        ``limit`` pending memories, oldest first; returns what was indexed.

        A backend shared by several processes claims the rows first, so two workers never
        embed the same memory: PostgreSQL locks them (``FOR UPDATE SKIP LOCKED``) in one
        transaction that also stores the vectors; a worker killed mid-batch releases its
        rows with its connection. Whatever ``embed`` raises propagates, nothing stored."""
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

    # -- upkeep (issue 5) ------------------------------------------------------------
    # Each method is one short statement or transaction so a PostgreSQL twin is a
    # translation: claims and leases are compare-and-set updates (``FOR UPDATE SKIP
    # LOCKED`` there), never read-modify-write across transactions.
    def workspaces(self) -> list[str]:
        """Every workspace holding memories, sorted."""
        ...

    def search_dense_many(
        self,
        flt: ScopeFilter,
        queries: Vector,
        limit: int,
        min_score: float | None = None,
        exclude: Sequence[Sequence[str]] | None = None,
    ) -> list[list[Candidate]]:
        """``search_dense`` for each row of ``queries`` (n x dim) at once, exactly; with
        ``min_score`` only candidates whose cosine reaches it, and never the ids in
        ``exclude[i]`` for query i."""
        ...

    def decay_importance(
        self, now: datetime, *, formula: str = "crewship", workspace_id: str | None = None
    ) -> int:
        """Recompute ``importance`` of every active memory (of one workspace, or all) from
        ``base_importance``, age (``now - ts``) and ``reference_count`` with
        ``episodic.scoring.decay``'s formula (``crewship``: seed 000's
        ``decayed_importance``; ``prominence``: seed 001's ``prominence``), set-based.
        Idempotent for the same ``now``; returns how many rows changed."""
        ...

    def add_review(self, review: ReviewRequest) -> int:
        """Record a pending review (one insert); returns its id."""
        ...

    def claim_reviews(
        self,
        holder: str,
        now: datetime,
        *,
        lease_s: float,
        limit: int,
        workspace_id: str | None = None,
        agent_id: str | None = None,
        conversation_id: str | None = None,
        only_conversations: bool = False,
        recalled_before: datetime | None = None,
    ) -> list[PendingReview]:
        """Claim up to ``limit`` pending reviews nobody holds (or whose claim expired),
        oldest first, for ``lease_s`` seconds. Two claimers never get the same row.
        ``only_conversations`` keeps recalls made inside a conversation;
        ``recalled_before`` those made before that time."""
        ...

    def release_reviews(self, holder: str, ids: Sequence[int]) -> None:
        """Give back claims this holder will not finish now."""
        ...

    def finish_reviews(self, holder: str, outcomes: Sequence[ReviewOutcome], at: datetime) -> int:
        """Close reviews this holder claimed; returns how many were closed."""
        ...

    def apply_reviews(self, workspace_id: str, updates: Sequence[FsrsUpdate]) -> int:
        """Store new FSRS state (compare-and-set on ``last_reviewed_at``); returns how
        many memories were updated."""
        ...

    def conversation_messages(
        self, workspace_id: str, conversation_id: str, *, after: datetime, limit: int
    ) -> list[Event]:
        """Message events of a conversation with ``ts > after``, oldest first."""
        ...

    def hit_cosines(self, flt: ScopeFilter, since: datetime) -> list[list[float]]:
        """The dense cosines of the hits of each recall recorded since ``since`` in that
        workspace (and crew/agent when the filter names one); recalls without any are
        left out."""
        ...

    def scan_memories(
        self,
        workspace_id: str,
        *,
        cursor: int = 0,
        limit: int,
        unconsolidated: bool = False,
        exclude_types: Sequence[str] = (),
        newest_first: bool = False,
    ) -> tuple[list[Memory], int]:
        """Active memories of a workspace page by page: (page, next cursor; 0 at the end).
        ``unconsolidated`` keeps those with no ``consolidated_at``."""
        ...

    def consolidation_backlog(
        self, workspace_id: str, exclude_types: Sequence[str] = ()
    ) -> ConsolidationBacklog: ...

    def store_consolidation(
        self,
        workspace_id: str,
        derived: Sequence[Memory],
        edges: Sequence[Relation],
        members: Sequence[str],
        at: datetime,
    ) -> bool:
        """In one transaction: store the derived rules/facts, their ``supports`` edges,
        and set ``consolidated_at`` on ``members``. Refused (False, nothing written) when
        any member was consolidated meanwhile or is no longer active: the claim."""
        ...

    def archive_events(
        self, before: datetime, *, workspace_id: str | None = None, limit: int = 5000
    ) -> int:
        """Move up to ``limit`` journal rows older than ``before`` to ``events_archive``
        (payload cut to 400 characters). Messages still waiting for an episode stay.
        Memories citing an archived event keep citing it. Returns rows moved."""
        ...

    def archived_events(self, workspace_id: str, ids: Sequence[str]) -> list[ArchivedEvent]: ...

    def compact_memories(self, workspace_id: str, merges: Sequence[Merge], at: datetime) -> int:
        """Apply merges, each only while both memories are still active; the survivor
        also cites the losers' sources, and its vector is dropped when its content
        changed (the indexer embeds it again). Returns how many memories were compacted."""
        ...

    def compacted_into(self, workspace_id: str, ids: Sequence[str]) -> dict[str, str]:
        """For each compacted memory among ``ids``, the memory it was merged into."""
        ...

    def retire_phase(
        self, workspace_id: str, phase: str, at: datetime, *, domain: str = "task"
    ) -> list[str]:
        """Retire the active memories whose payload has ``domain`` and ``phase`` (or
        ``stage``) equal to those given; returns their ids."""
        ...

    def health_facts(self, workspace_id: str, now: datetime) -> dict[str | None, HealthFacts]:
        """In one pass over the workspace's active memories: the facts of the whole
        workspace (key None) and of each crew holding active memories (key: crew id)."""
        ...

    def vector_matrix(self, flt: ScopeFilter) -> Vector:
        """The vectors of the active memories ``flt`` sees, one row each (n x dim;
        0 x 0 when there are none)."""
        ...

    def put_health_snapshot(self, snapshot: HealthSnapshot) -> None:
        """Insert or replace the snapshot of that workspace, crew and day."""

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
    ) -> list[HealthSnapshot]:
        """The newest ``limit`` snapshots, newest first."""
        ...

    def events_since_memory_update(self, workspace_id: str, agent_id: str, cap: int) -> int:
        """The agent's journal events since its last ``memory.updated`` (all of them if it
        never wrote one), counted up to ``cap``."""
        ...

    def claim_nudge(
        self, workspace_id: str, agent_id: str, session_id: str, entries: int, at: datetime
    ) -> bool:
        """Record a nudge for this session; False when the session already had one."""
        ...

    def acquire_lease(self, job: str, scope: str, holder: str, now: datetime, ttl_s: float) -> bool:
        """Take (or renew) the lease of ``job`` on ``scope``; False while another holder
        has an unexpired one."""
        ...

    def release_lease(self, job: str, scope: str, holder: str) -> None: ...

    def lease_holder(self, job: str, scope: str) -> str | None:
        """Who holds the lease of ``(job, scope)`` now, expired or not; None if nobody."""
        ...

    def record_run(
        self,
        job: str,
        scope: str,
        holder: str,
        started_at: datetime,
        finished_at: datetime,
        status: str,
        detail: Mapping[str, Any],
    ) -> None: ...

    def last_run(self, job: str, scope: str) -> datetime | None:
        """When ``job`` last finished ``ok`` on ``scope``."""
        ...

    # -- integrity (issue 8) ---------------------------------------------------------
    def deep_check(self) -> list[IntegrityCheck]:
        """``episodic doctor --deep``: the engine's own checks, and whether the derived
        data (keyword index, vectors, has_vector, link tables) agrees with the journal
        and the memories; one ``IntegrityCheck`` per question. Reads only."""
        ...
