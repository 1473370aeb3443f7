"""What the operator page's detail views show, gathered from the service: one memory in
full (scope, FSRS state, sources, relations, history), a conversation's episodes
(messages, extracted entries, what extraction dropped and why), a recall's trace folded
by stage, and what each health metric means and how to raise it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from episodic.model import Memory, ScopeFilter
from episodic.recall.trace import WEIGHTLESS_NOTE, weightless
from episodic.scoring.health import RED_BELOW, WEIGHTS
from episodic.service import Episodic
from episodic.service.decisions import Decision
from episodic.service.editing import Version
from episodic.write.episodes import ENTRY_TYPE, EPISODE_TYPE, LEARNING_TYPE

# The edges a memory can have: near-duplicates, and the rules/facts a memory supports.
RELATIONS = ("similar", "supports")
# The most episodes (and extracted notes) one conversation page lists.
CONVERSATION_LIMIT = 200


@dataclass(frozen=True, slots=True)
class Related:
    relation: str
    memory_id: str
    weight: float
    content: str


@dataclass(frozen=True, slots=True)
class MemoryDetail:
    memory: Memory
    history: list[Version]
    related: list[Related]
    # The source events that are memories the caller can see (messages, admitted events),
    # by id; the other sources are listed by id only.
    sources: dict[str, Memory]
    # What was decided about it and by what (``Episodic.decisions``).
    decisions: list[Decision] = field(default_factory=list)


@dataclass(slots=True)
class EpisodeView:
    episode: Memory
    messages: list[Memory] = field(default_factory=list)
    notes: list[Memory] = field(default_factory=list)
    dropped: list[dict[str, Any]] = field(default_factory=list)


def memory_detail(mem: Episodic, flt: ScopeFilter, memory_id: str) -> MemoryDetail:
    """One memory ``flt`` can see, with its versions and its edges (``NotFound`` when it
    cannot see it)."""
    memory = mem.memory(flt, memory_id)
    history = mem.history(memory_id, workspace=flt.workspace_id)
    edges = [
        (relation, other, weight)
        for relation in RELATIONS
        for other, weight in mem.store.related(flt, [memory_id], relation).get(memory_id, [])
    ]
    labels = {m.id: m.content for m in mem.memories(flt, [other for _, other, _ in edges])}
    related = [
        Related(relation, other, weight, labels[other])
        for relation, other, weight in edges
        if other in labels
    ]
    sources = {
        m.id: m for m in mem.memories(flt, list(memory.source_event_ids)) if m.id != memory.id
    }
    decisions = mem.decisions(memory_id, workspace=flt.workspace_id)
    return MemoryDetail(memory, history, related, sources, decisions)


def conversation_episodes(mem: Episodic, flt: ScopeFilter) -> tuple[list[EpisodeView], bool]:
    """The episodes of ``flt``'s conversation, newest first, each with its messages in
    order, the entries and learnings extracted from it, and the drops it recorded; and
    whether that is all of them (False when only the newest ``CONVERSATION_LIMIT``
    episodes and notes were read)."""
    found = mem.list_memories(
        ScopeFilter(
            workspace_id=flt.workspace_id,
            scope=flt.scope,
            agent_id=flt.agent_id,
            crew_id=flt.crew_id,
            conversation_id=flt.conversation_id,
            types=(EPISODE_TYPE, ENTRY_TYPE, LEARNING_TYPE),
        ),
        limit=CONVERSATION_LIMIT,
    ).items
    views = {
        m.id: EpisodeView(m, dropped=_drops(m.payload.get("extraction_dropped")))
        for m in found
        if m.type == EPISODE_TYPE
    }
    for m in reversed(found):  # oldest first within an episode
        owner = views.get(str(m.payload.get("episode_id", "")))
        if m.type != EPISODE_TYPE and owner is not None:
            owner.notes.append(m)
    for view in views.values():
        view.messages = mem.memories(flt, list(view.episode.source_event_ids))
    return list(views.values()), len(found) < CONVERSATION_LIMIT


def _drops(value: object) -> list[dict[str, Any]]:
    # The payload is stored data: show only well-formed drop records.
    if not isinstance(value, list):
        return []
    return [d for d in value if isinstance(d, dict)]


# -- a recall's trace, folded ----------------------------------------------------------
# The most candidates one stage lists when opened (a leg may rank a hundred).
STAGE_ROWS = 60


@dataclass(frozen=True, slots=True)
class Ranked:
    memory_id: str
    rank: int
    score: float
    label: str
    kept: int | None  # the hit's place in the result, None when not kept
    # A keyword match too common to weigh anything: shown as a match, not as 0.000.
    weightless: bool = False

    @property
    def shown(self) -> str:
        return "matched, weight ~0" if self.weightless else f"{self.score:.3f}"


@dataclass(frozen=True, slots=True)
class StageView:
    name: str
    count: int
    rows: list[Ranked]  # the first STAGE_ROWS

    @property
    def more(self) -> int:
        return self.count - len(self.rows)

    @property
    def note(self) -> str | None:
        """Why some of its rows weigh ~0 though they matched, when some do."""
        return WEIGHTLESS_NOTE if any(r.weightless for r in self.rows) else None


@dataclass(frozen=True, slots=True)
class KeptRow:
    memory_id: str
    label: str
    kept: int
    ranks: list[tuple[str, int]]  # (stage, rank) for every stage that ranked it


@dataclass(frozen=True, slots=True)
class DroppedRow:
    memory_id: str
    label: str
    stage: str
    reason: str
    detail: str


@dataclass(frozen=True, slots=True)
class TraceView:
    kept: list[KeptRow]
    stages: list[StageView]
    dropped: list[DroppedRow]
    # (stage, reason, how many), most first: the dropped rows' summary.
    dropped_groups: list[tuple[str, str, int]]


def trace_view(
    stages: dict[str, list[tuple[str, int, float]]],
    dropped: list[tuple[str, str, str, str]],
    hit_ids: list[str],
    labels: dict[str, str],
) -> TraceView:
    """The recall page's trace, small enough to read on a phone: the kept hits with their
    rank at each stage, each stage's ranking (folded on the page, with its count) and the
    dropped candidates grouped by where and why. ``stages`` maps a stage to its
    ``(memory id, rank, score)`` rows; ``dropped`` holds ``(memory id, stage, reason,
    detail)``, the first drop of a memory being the one shown."""
    kept = {memory_id: i for i, memory_id in enumerate(hit_ids, start=1)}
    ranks: dict[str, list[tuple[str, int]]] = {}
    views: list[StageView] = []
    for name, rows in stages.items():
        for memory_id, rank, _ in rows:
            ranks.setdefault(memory_id, []).append((name, rank))
        shown = [
            Ranked(
                memory_id,
                rank,
                score,
                labels.get(memory_id, memory_id),
                kept.get(memory_id),
                weightless(name, score),
            )
            for memory_id, rank, score in rows[:STAGE_ROWS]
        ]
        views.append(StageView(name, len(rows), shown))
    first: dict[str, DroppedRow] = {}
    for memory_id, stage, reason, detail in dropped:
        if memory_id not in first and memory_id not in kept:
            label = labels.get(memory_id, memory_id)
            first[memory_id] = DroppedRow(memory_id, label, stage, reason, detail)
    groups: dict[tuple[str, str], int] = {}
    for row in first.values():
        groups[(row.stage, row.reason)] = groups.get((row.stage, row.reason), 0) + 1
    return TraceView(
        kept=[
            KeptRow(memory_id, labels.get(memory_id, memory_id), n, ranks.get(memory_id, []))
            for memory_id, n in kept.items()
        ],
        stages=views,
        dropped=list(first.values()),
        dropped_groups=[
            (stage, reason, n)
            for (stage, reason), n in sorted(groups.items(), key=lambda kv: (-kv[1], kv[0]))
        ],
    )


# -- what the health page says of each metric --------------------------------------------
@dataclass(frozen=True, slots=True)
class MetricHelp:
    name: str
    weight: float  # its share of the score, 0..1
    means: str
    fix: str


HEALTH_METRICS: tuple[MetricHelp, ...] = (
    MetricHelp(
        "freshness",
        WEIGHTS["freshness"],
        "How recent the memories are: their median age on a 180-day scale "
        "(a median of 45 days gives 75; 180 days or more gives 0).",
        "Most memories are old. Retire a finished phase's task memories "
        "(`episodic upkeep retire --phase P`), merge near-duplicates (`episodic upkeep "
        "compact`) or forget what is past keeping (`episodic forget --older-than DAYS`).",
    ),
    MetricHelp(
        "coverage",
        WEIGHTS["coverage"],
        "The share of memories the indexer has embedded; the rest are found by keywords only.",
        "Memories wait for their vectors. Keep the indexer running (`episodic serve` or "
        "`episodic index`) or run `episodic index --once`; `episodic doctor` says whether "
        "the embedder is down and how to fix it.",
    ),
    MetricHelp(
        "coherence",
        WEIGHTS["coherence"],
        "How much closer each memory is to its 5 nearest neighbours than to memories in "
        "general: clear themes score high, a scatter of unrelated notes low.",
        "The memory holds many unrelated one-off notes. Admit fewer events (only those "
        "worth remembering), and let consolidation gather related ones into rules "
        "(`episodic consolidate run`).",
    ),
    MetricHelp(
        "efficiency",
        WEIGHTS["efficiency"],
        "How well recalls match: the mean cosine of recalled hits over the last 30 days "
        "(before any recall, how close memories are to their nearest neighbours).",
        "Recalls find only loose matches: agents ask about what the memory does not hold. "
        "Run a few of their queries on the Recall page, read the trace, and write down "
        "what is missing (`episodic memory remember`).",
    ),
    MetricHelp(
        "reachability",
        WEIGHTS["reachability"],
        "The share of embedded memories linked to at least one other (a similar or "
        "supports edge); recall's walk follows the similar ones.",
        "Few memories have a related one. Links are made as the indexer embeds a memory "
        "(cosine 0.80 or more to the 3 most alike) and by consolidation: run `episodic "
        "index --once` and `episodic consolidate run`.",
    ),
)
# Below this a metric is weak and the page shows its fix first.
WEAK_BELOW = RED_BELOW
