"""The vocabulary: events, memories, queries and hits.

An *event* is one journal entry as an agent or its runtime wrote it. A *memory* is the
retrievable unit: an admitted journal event becomes one memory with the same id, and
some memories are made from several events (episodes, entries and learnings drawn from a
conversation, consolidated rules).
All times are timezone-aware UTC datetimes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, NamedTuple

SEVERITIES: tuple[str, ...] = ("debug", "info", "notice", "warn", "error")
# Other spellings a logger may use for one of SEVERITIES.
SEVERITY_ALIASES: dict[str, str] = {"warning": "warn"}


def severity_of(raw: str) -> str | None:
    """``raw`` as one of SEVERITIES (any case, or an alias such as ``warning``); None when
    it is none of them."""
    low = raw.strip().lower()
    low = SEVERITY_ALIASES.get(low, low)
    return low if low in SEVERITIES else None


def severity_choices() -> str:
    """What an error about a severity says it accepts."""
    aliases = ", ".join(f"{a} for {s}" for a, s in SEVERITY_ALIASES.items())
    return f"{'|'.join(SEVERITIES)} ({aliases})"


PRIORITIES: tuple[str, ...] = ("pin", "high", "permanent")


class Scope(StrEnum):
    """Which part of a workspace a recall may see (seed 000)."""

    OWN = "own"  # the agent's own past only; needs an agent
    CREW_SHARED = "crew_shared"  # own + high-value entries of the crew; needs a crew


class Role(StrEnum):
    AGENT = "agent"
    LEAD = "lead"
    ADMIN = "admin"


def scope_for_role(role: Role | str) -> Scope | None:
    """Seed 000's role mapping. An admin gets no scope: the whole workspace."""
    role = Role(role)
    if role is Role.AGENT:
        return Scope.OWN
    if role is Role.LEAD:
        return Scope.CREW_SHARED
    return None


class MemoryStatus(StrEnum):
    ACTIVE = "active"
    RETIRED = "retired"
    COMPACTED = "compacted"
    # Replaced by a newer memory of the same slot: kept (and exported) with its validity,
    # out of default recall, back in a recall ``as_of`` a time it was still true.
    SUPERSEDED = "superseded"


def score_json(score: float) -> float:
    """A score as JSON carries it: six decimals, but six significant digits below 0.001
    (the length prior can price a long memory's score down to 1e-6 and below, and six
    decimals would make such scores 0 and tie them)."""
    return round(score, 6) if abs(score) >= 1e-3 else float(f"{score:.6g}")


def utcnow() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True, slots=True)
class Event:
    """One journal entry. ``summary`` is the human-readable text; ``payload`` and
    ``refs`` are free JSON objects (``refs.episodic`` forces admission, ``refs.priority``
    floors importance)."""

    id: str
    workspace: str
    ts: datetime
    type: str
    severity: str = "info"
    summary: str = ""
    payload: Mapping[str, Any] = field(default_factory=dict)
    refs: Mapping[str, Any] = field(default_factory=dict)
    crew: str | None = None
    agent: str | None = None
    resource: str | None = None
    conversation: str | None = None


@dataclass(frozen=True, slots=True)
class Memory:
    """The retrievable unit. ``content`` is what is embedded and searched."""

    id: str
    workspace: str
    ts: datetime
    type: str
    content: str
    severity: str = "info"
    payload: Mapping[str, Any] = field(default_factory=dict)
    crew: str | None = None
    agent: str | None = None
    resource: str | None = None
    conversation: str | None = None
    base_importance: float = 0.5
    importance: float = 0.5
    reference_count: int = 0
    last_referenced_at: datetime | None = None
    status: MemoryStatus = MemoryStatus.ACTIVE
    source_event_ids: tuple[str, ...] = ()
    created_at: datetime | None = None
    # Derived search keys (key expansion): an episode's title and keyphrases, facts drawn
    # from the memory, speaker and date. Searched with the content, never shown as it.
    keys: str = ""
    # sha256 of the normalised content, for entries that dedupe by it (seed 004).
    content_hash: str | None = None
    # FSRS state (seed 003): stability in days, difficulty 1..10, time of the last review.
    stability: float | None = None
    difficulty: float | None = None
    last_reviewed_at: datetime | None = None
    # When consolidation last folded this memory into a rule or fact; None = not yet.
    consolidated_at: datetime | None = None
    # When what it says became true (None until stored: its ``ts``) and stopped being
    # true (None: still true); ``superseded_by`` is the memory that replaced it.
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    superseded_by: str | None = None

    @property
    def valid_since(self) -> datetime:
        return self.valid_from or self.ts


@dataclass(frozen=True, slots=True)
class ScopeFilter:
    """Who may be seen. The store applies it inside every query, so a caller can never
    reach another workspace. With ``scope`` None the whole workspace is visible
    (an operator's view), optionally narrowed by the agent/crew/resource ids given."""

    workspace_id: str
    scope: Scope | None = None
    agent_id: str | None = None
    crew_id: str | None = None
    resource_id: str | None = None
    conversation_id: str | None = None
    # Only memories of these types (None: every type).
    types: tuple[str, ...] | None = None
    # Only learnings of these learning types (``payload.learning_type``, seed 001's
    # declarative/procedural/directive/corrective; None: no such filter).
    learning_types: tuple[str, ...] | None = None
    # Never memories of these types (recall keeps institutional memories out of the
    # ranking: they are loaded apart, seed 001).
    exclude_types: tuple[str, ...] = ()
    # Recall legs also find superseded memories (an ``as_of`` recall, or one that shows
    # what was replaced); otherwise they see active memories only.
    superseded: bool = False


class Candidate(NamedTuple):
    """One row a retrieval leg found: memory id, the leg's own score, 1-based rank. A
    named tuple: a recall makes a few hundred, and a frozen dataclass's ``__init__`` cost
    about twice as much."""

    memory_id: str
    score: float
    rank: int
    # The characters [start, stop) of the memory's content its best passage spans, when
    # that was not its start (a long memory found by a later passage).
    passage: tuple[int, int] | None = None


@dataclass(frozen=True, slots=True)
class Hit:
    """One recalled memory with the score that ranked it."""

    memory: Memory
    score: float
    age_seconds: float
    cosine: float | None = None
    bm25_rank: int | None = None
    dense_rank: int | None = None
    via: str | None = None  # reached by walking a `similar` edge from this hit
    # The messages an episode was made from, when the recall's detail level shows them
    # (seed 003: the top-ranked key moments come with their details).
    details: tuple[Event, ...] = ()
    # The characters [start, stop) of a long memory's content that matched the query
    # (its best passage); None for a memory short enough to show whole.
    passage: tuple[int, int] | None = None
    # A newer memory about the same subject recalled with it (newest first): this
    # one is the earlier statement of the same subject.
    newer: str | None = None

    @property
    def id(self) -> str:
        return self.memory.id

    @property
    def shown(self) -> str:
        """What a reader is shown of the memory: its content, or for a long memory the
        passage that matched, marked with an ellipsis where the content goes on."""
        content = self.memory.content
        if self.passage is None:
            return content
        start, stop = self.passage
        head = "…" if start > 0 else ""
        tail = "…" if stop < len(content) else ""
        return f"{head}{content[start:stop]}{tail}"

    @property
    def moment(self) -> str | None:
        """Seed 003's label of a surprising episode: "flashbulb" (surprise >= 0.85),
        "key moment" (>= 0.7), or None."""
        return moment_of(self.memory)

    def to_json(self) -> dict[str, Any]:
        m = self.memory
        return {
            "id": m.id,
            "score": score_json(self.score),
            "cosine": None if self.cosine is None else round(self.cosine, 6),
            "content": m.content,
            "passage": None
            if self.passage is None
            else {
                "start": self.passage[0],
                "stop": self.passage[1],
                "text": m.content[self.passage[0] : self.passage[1]],
            },
            "type": m.type,
            "severity": m.severity,
            "workspace": m.workspace,
            "crew": m.crew,
            "agent": m.agent,
            "resource": m.resource,
            "conversation": m.conversation,
            "payload": dict(m.payload),
            "ts": m.ts.isoformat(),
            "age_seconds": round(self.age_seconds, 3),
            "newer": self.newer,
            # Extracted entries say where they come from and quote their evidence.
            "source": _text_or_none(m.payload.get("source")),
            "evidence": _text_or_none(m.payload.get("evidence")),
            "importance": round(m.importance, 6),
            "reference_count": m.reference_count,
            "via": self.via,
            "moment": self.moment,
            "details": [detail_json(e) for e in self.details],
            # Validity: a recall with include_superseded or as_of shows replaced memories.
            "status": m.status.value,
            "valid_from": m.valid_since.isoformat(),
            "valid_to": None if m.valid_to is None else m.valid_to.isoformat(),
            "superseded_by": m.superseded_by,
        }


def moment_of(m: Memory) -> str | None:
    """ "flashbulb", "key moment" or None, from the flags segmentation set on an episode."""
    if m.payload.get("flashbulb") is True:
        return "flashbulb"
    if m.payload.get("key_moment") is True:
        return "key moment"
    return None


def detail_json(e: Event) -> dict[str, Any]:
    """One message of an episode's details: who spoke, when, what was said."""
    name = e.payload.get("name")
    return {
        "id": e.id,
        "role": _text_or_none(e.payload.get("role")),
        "name": name if isinstance(name, str) and name.strip() else None,
        "ts": e.ts.isoformat(),
        "content": e.summary,
    }


@dataclass(frozen=True, slots=True)
class Query:
    """A recall request. ``workspace_id`` is required; ``scope`` own needs an agent and
    crew_shared needs a crew (seed 000).

    Who is asking is not what may be seen: ``agent_id`` and ``crew_id`` name the asker,
    whose team, project and workspace-wide memories seed 001's scope levels weigh; only
    ``scope`` (which an API key sets) limits what is seen to them. With no scope the whole
    workspace is searched, narrowed by the resource and conversation when given."""

    text: str
    workspace_id: str
    agent_id: str | None = None
    crew_id: str | None = None
    resource_id: str | None = None
    conversation_id: str | None = None
    scope: Scope | None = None
    k: int | None = None
    types: tuple[str, ...] | None = None  # only memories of these types
    learning_types: tuple[str, ...] | None = None  # only learnings of these learning types
    exclude_types: tuple[str, ...] = ()  # never memories of these types
    # Answer as memory stood at this time (what was valid then); None: now.
    as_of: datetime | None = None
    # Also the memories newer ones replaced, each with its validity.
    include_superseded: bool = False

    def __post_init__(self) -> None:
        from episodic.errors import InvalidInput

        if not self.workspace_id or not self.workspace_id.strip():
            raise InvalidInput("workspace", "required: recall always runs inside one workspace")
        if self.scope is not None:
            try:
                object.__setattr__(self, "scope", Scope(self.scope))
            except ValueError:
                raise InvalidInput(
                    "scope", f"unknown scope {self.scope!r}; use own or crew_shared"
                ) from None
        if self.types is not None:
            types = (self.types,) if isinstance(self.types, str) else tuple(self.types)
            if not types or not all(isinstance(t, str) and t.strip() for t in types):
                raise InvalidInput("types", "give at least one memory type, e.g. message")
            object.__setattr__(self, "types", types)
        if self.scope is Scope.OWN and not self.agent_id:
            raise InvalidInput("agent", "scope 'own' needs an agent (--agent)")
        if self.scope is Scope.CREW_SHARED and not self.crew_id:
            raise InvalidInput("crew", "scope 'crew_shared' needs a crew (--crew)")

    def scope_filter(self) -> ScopeFilter:
        """What may be seen: the asker's agent and crew narrow only under a scope."""
        return ScopeFilter(
            workspace_id=self.workspace_id,
            scope=self.scope,
            agent_id=self.agent_id if self.scope is not None else None,
            crew_id=self.crew_id if self.scope is not None else None,
            resource_id=self.resource_id,
            conversation_id=self.conversation_id,
            types=self.types,
            learning_types=self.learning_types,
            exclude_types=self.exclude_types,
            superseded=self.include_superseded or self.as_of is not None,
        )


def _text_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None
