"""What the operator page's detail views show, gathered from the service: one memory in
full (scope, FSRS state, sources, relations, history) and a conversation's episodes
(messages, extracted entries, what extraction dropped and why)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from episodic.model import Memory, ScopeFilter
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
