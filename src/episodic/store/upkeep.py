"""Upkeep: ``UpkeepStore``, what the background jobs read and write.

Decay (seed 000 and 001's curves), FSRS reviews (seed 003), consolidation, compaction and
stage retirement, health snapshots and the memory nudge, and the leases and run log that
let several schedulers share the jobs. Each method is one short statement or transaction
so both backends run it safely beside recalls: claims and leases are compare-and-set
updates (``FOR UPDATE SKIP LOCKED`` on PostgreSQL), never read-modify-write across
transactions. Implemented by ``upkeep.py``, ``consolidation.py`` and ``reviews.py`` of each
backend.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any, Protocol

from episodic.model import Event, Memory, ScopeFilter
from episodic.store.vectors import Relation, Vector
from episodic.store.writes import MemoryReader

DECAY_FORMULAS = ("crewship", "prominence")
# Seed 000's archive keeps this much of an archived event's payload (as text).
ARCHIVE_PAYLOAD_CHARS = 400
# decay_importance rewrites at most this many rows per transaction.
DECAY_CHUNK_ROWS = 50_000


# Whether memory ``m`` is linked (health's reachability): an edge leads to a memory
# recall's walk can return, an active one. An edge to a superseded, retired or compacted
# memory reaches nothing.
LINKED_SQL = (
    "EXISTS (SELECT 1 FROM memory_relations r JOIN memories o ON o.id = r.dst "
    "AND o.status = 'active' WHERE r.src = m.id) OR "
    "EXISTS (SELECT 1 FROM memory_relations r JOIN memories o ON o.id = r.src "
    "AND o.status = 'active' WHERE r.dst = m.id)"
)


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
    """Active memories no consolidation has looked at yet (neither taken into a cluster
    nor left unclustered), and how many of them are flashbulb episodes (seed 003: a
    flashbulb triggers consolidation at once)."""

    unconsolidated: int
    flashbulbs: int


class ReinforcementStore(Protocol):
    """Seed 001's reinforcement: what the end of a session writes."""

    def reinforce_session(
        self,
        workspace_id: str,
        conversation_id: str,
        at: datetime,
        *,
        by_agent: str | None = None,
        by_crew: str | None = None,
    ) -> list[str]:
        """The end of a session (conversation): every active memory its recorded recalls
        returned (``ReviewRequest``s of that conversation, recalled up to ``at``, not yet
        counted) gets payload ``reinforcement_count`` + 1 and ``last_reinforced`` = the
        date of ``at`` (``YYYY-MM-DD``), once, however many recalls returned it; those
        recalls are then counted, so the next session starts afresh. One transaction;
        returns the ids reinforced, sorted.

        ``by_agent`` (else ``by_crew``) ends the session on behalf of that agent (crew):
        when one of those recalls was made as another agent (crew), or as none, nothing
        is written and ``Forbidden`` names the session. Only that agent's (crew's)
        recalls are counted, so one recorded while the end runs waits for its owner."""
        ...

    def session_owned(
        self,
        workspace_id: str,
        conversation_id: str,
        at: datetime,
        *,
        by_agent: str | None = None,
        by_crew: str | None = None,
    ) -> bool:
        """Whether ``reinforce_session`` with the same arguments would go ahead: no
        recall of the session recorded up to ``at`` and not yet counted was made as
        another agent (crew) than ``by_agent`` (``by_crew``), or as none. True when
        neither is given. Reads only: a caller checks before it writes anything else."""
        ...


class UpkeepStore(MemoryReader, ReinforcementStore, Protocol):
    """The upkeep jobs' reads and writes (``episodic.upkeep``)."""

    def decay_importance(
        self, now: datetime, *, formula: str = "crewship", workspace_id: str | None = None
    ) -> int:
        """Recompute ``importance`` of every active memory (of one workspace, or all) from
        ``base_importance``, age (``now - ts``) and use with ``episodic.scoring.decay``'s
        formula (``crewship``: seed 000's ``decayed_importance`` over ``reference_count``;
        ``prominence``: seed 001's ``prominence_importance`` over the payload's
        ``reinforcement_count``), set-based, always within [0, 1]. Idempotent for the
        same ``now``; returns how many rows changed."""
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
        unclustered: bool | None = None,
        exclude_types: Sequence[str] = (),
        newest_first: bool = False,
    ) -> tuple[list[Memory], int]:
        """Active memories of a workspace page by page: (page, next cursor; 0 at the end).
        ``unconsolidated`` keeps those with no ``consolidated_at``; ``unclustered`` True
        keeps those a consolidation left unclustered (``mark_unclustered``), False those
        it did not, None both."""
        ...

    def consolidation_backlog(
        self, workspace_id: str, exclude_types: Sequence[str] = ()
    ) -> ConsolidationBacklog:
        """What the consolidation trigger counts: the active memories, not of
        ``exclude_types``, with neither ``consolidated_at`` nor an unclustered mark."""
        ...

    def mark_unclustered(self, workspace_id: str, ids: Sequence[str], at: datetime) -> int:
        """Mark memories a consolidation looked at and found no cluster for: they leave
        the backlog (and stay unconsolidated, offered to later runs). Memories
        consolidated meanwhile are left alone; returns how many were marked."""
        ...

    def store_consolidation(
        self,
        workspace_id: str,
        derived: Sequence[Memory],
        edges: Sequence[Relation],
        members: Sequence[str],
        at: datetime,
    ) -> bool:
        """In one transaction: store the derived rules/facts, their ``supports`` edges,
        and set ``consolidated_at`` on ``members`` (clearing any unclustered mark).
        Refused (False, nothing written) when any member was consolidated meanwhile or is
        no longer active: the claim."""
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
        ``stage``) equal to those given, but those a user restored after a retirement
        (``restored_at`` in the payload); returns their ids."""
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
