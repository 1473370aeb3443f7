"""Conversations become episodes: the job that segments pending messages, describes each
finished episode, extracts source-backed entries and typed learnings from it, and stores
all of it in one transaction per episode.

Steps, per conversation with pending messages (``run``):

1. Load the pending messages and their vectors; spoken messages the indexer has not
   embedded yet are embedded here (and stored), so the surprise channel sees them.
2. Ask the LLM (when configured) where topics start; segment (``write.segment``).
3. For each closed segment: title, summary and keyphrases (``write.describe``), entries
   (``write.extract``) deduplicated by hash and by cosine against the batch and the same
   scope (``write.dedupe``), FSRS start values boosted by surprise, and the derived search
   keys of its messages (key expansion). At the end of a session (flush, or idle past the
   hard gap) the post-session pass adds typed learnings (``write.learnings``), each with
   the phase the session was in (``payload.phase`` of its messages, see ``_phases``),
   and the memories the session's recalls returned are reinforced once each (seed 001,
   ``Store.reinforce_session``).
4. ``Store.close_episode`` stores the episode, marks its messages and writes the entries,
   learnings and keys at once; a crash leaves the messages pending for the next run.

Every LLM step has an offline fallback, and what produced a text is recorded with it.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, Protocol

import numpy as np

from episodic import metrics
from episodic.embed.base import Embedder
from episodic.errors import EmbedderError, NotFound
from episodic.llm.base import LLM
from episodic.model import Event, Memory, Scope, ScopeFilter
from episodic.policy import ENTRY_TYPE, EPISODE_TYPE, LEARNING_TYPE
from episodic.scoring.retrievability import initial_difficulty, initial_stability
from episodic.store.search import SearchStore
from episodic.store.upkeep import ReinforcementStore
from episodic.store.vectors import Vector, VectorStore
from episodic.store.writes import WriteStore
from episodic.write.dedupe import drop_known_hashes, drop_similar
from episodic.write.describe import EpisodeText, describe_episode
from episodic.write.extract import REASONS, Dropped, Entry, content_hash, extract_entries
from episodic.write.indexer import link_indexed
from episodic.write.known import known_notes
from episodic.write.learnings import Learning, extract_learnings
from episodic.write.messages import Message, message_keys, message_of, spoken_content
from episodic.write.profile import PROFILE_TYPE, profile_memories
from episodic.write.segment import (
    FLASHBULB_SURPRISE,
    KEY_MOMENT_SURPRISE,
    Segment,
    centroid,
    segment,
)
from episodic.write.topics import topic_candidates, topic_starts

log = logging.getLogger("episodic.episodes")

# An episode is a generated summary of what happened: it starts where seed 000 starts a
# summary.generated entry (0.5 + 0.15).
EPISODE_BASE_IMPORTANCE = 0.65
ENTRY_BASE_IMPORTANCE = 0.5
# Conversations handled per run; the rest wait for the next one.
CONVERSATIONS_PER_RUN = 500
# The most messages of a session the post-session pass reads (its input is cut to the
# model's budget anyway, every message keeping its place).
SESSION_MESSAGES_MAX = 5000
# Before any message: the post-session pass reads a session from its start.
_START = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(slots=True)
class SegmentReport:
    """What one run did."""

    conversations: int = 0
    episodes: int = 0
    messages: int = 0
    entries: int = 0
    learnings: int = 0
    dropped: list[Dropped] = field(default_factory=list)
    waiting: int = 0  # messages left in open segments
    flashbulbs: int = 0  # new episodes surprising enough to be consolidated at once
    # New episodes, entries and learnings the embedder failed on: stored, found by
    # keywords, and embedded by the indexer's next sweep.
    unembedded: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "conversations": self.conversations,
            "episodes": self.episodes,
            "messages": self.messages,
            "entries": self.entries,
            "learnings": self.learnings,
            "dropped": [{"reason": d.reason, "content": d.content[:80]} for d in self.dropped],
            "waiting": self.waiting,
            "flashbulbs": self.flashbulbs,
            "unembedded": self.unembedded,
        }


class SessionMessages(Protocol):
    def conversation_messages(
        self, workspace_id: str, conversation_id: str, *, after: datetime, limit: int
    ) -> list[Event]: ...


class EpisodeStore(
    WriteStore, VectorStore, SearchStore, ReinforcementStore, SessionMessages, Protocol
):
    """What segmentation touches: the conversations' messages and the episodes closed
    from them, the messages' vectors, a dense search to dedupe new entries, the
    reinforcement a session's end writes, and the session's earlier messages its
    post-session pass reads."""


class EpisodeWriter:
    """Runs segmentation, description and extraction over pending conversations."""

    def __init__(
        self,
        store: EpisodeStore,
        *,
        embedder: Embedder | None,
        llm: LLM | None,
        clock: Callable[[], datetime],
        key_expansion: bool = True,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.llm = llm
        self.clock = clock
        # Off: messages keep no derived keys and episodes add none (measured on LoCoMo).
        self.key_expansion = key_expansion

    def run(
        self,
        *,
        flush: bool = False,
        workspace_id: str | None = None,
        conversation_id: str | None = None,
        outcome: str | None = None,
    ) -> SegmentReport:
        """``outcome``: how the run that wrote the conversation ended (seed 002), kept on
        each episode closed now."""
        report = SegmentReport()
        now = self.clock()
        for pending in self.store.pending_conversations(CONVERSATIONS_PER_RUN, workspace_id):
            if conversation_id is not None and pending.conversation_id != conversation_id:
                continue
            report.conversations += 1
            try:
                self._conversation(
                    pending.workspace_id, pending.conversation_id, now, flush, report, outcome
                )
            except NotFound as exc:
                # Its messages were forgotten while it was being written (the store will
                # not close an episode over messages that are gone): nothing is left to
                # segment, and the other conversations still are.
                log.info(
                    "conversation %s changed while it was segmented, skipped: %s",
                    pending.conversation_id,
                    exc,
                )
        return report

    # -- one conversation ------------------------------------------------------------
    def _conversation(
        self,
        ws: str,
        conversation: str,
        now: datetime,
        flush: bool,
        report: SegmentReport,
        outcome: str | None = None,
    ) -> None:
        events = self.store.pending_messages(ws, conversation)
        messages = [message_of(e) for e in events]
        vectors = self._vectors(ws, messages)
        candidates: list[int] = []
        topics: list[int] | None = []
        if self.llm is not None:
            # Seed 003's topic channel: the LLM judges only what the pre-filter found.
            candidates = topic_candidates(messages, vectors)
            topics = topic_starts(messages, self.llm, candidates)
        segments = segment(
            messages,
            vectors,
            now=now,
            flush=flush,
            topic_starts=topics or [],
            topic_checked=candidates if topics is not None else [],
            previous_centroid=self._previous_centroid(ws, conversation),
        )
        closed = [s for s in segments if s.closed]
        report.waiting += sum(len(s) for s in segments if not s.closed)
        if not closed:
            return
        ends_session = segments[-1].closed  # flushed, or idle past the hard gap
        learnings: list[Learning] = []
        by_id = {e.id: e for e in events}
        if ends_session:
            # Before the episodes are written: a crash in between may lose this session's
            # episodes for now (its messages stay pending), never its reinforcement.
            self.store.reinforce_session(ws, conversation, now)
            # The post-session pass (seed 001) sees the whole session at once: the
            # messages segmented before its end too, not only those closed now.
            pending = {e.id for e in events}
            earlier = [
                e
                for e in self.store.conversation_messages(
                    ws, conversation, after=_START, limit=SESSION_MESSAGES_MAX
                )
                if e.id not in pending
            ]
            by_id.update((e.id, e) for e in earlier)
            learned = [message_of(e) for e in earlier]
            learned += [m for s in closed for m in messages[s.start : s.end]]
            phases, last = _phases([by_id[m.id] for m in learned])
            learnings = [
                replace(ln, phase=phases.get(ln.message_id or "", last))
                for ln in extract_learnings(learned, self.llm)
            ]
        closed_ids = {m.id for s in closed for m in messages[s.start : s.end]}
        for seg in closed:
            ids = {m.id for m in messages[seg.start : seg.end]}
            own = [ln for ln in learnings if ln.message_id in ids]
            if seg is closed[-1]:
                # A learning that cites no message, or one of an episode closed before,
                # belongs to the session as a whole: to its last episode.
                own += [ln for ln in learnings if ln.message_id not in closed_ids]
            self._episode(ws, conversation, messages, vectors, seg, by_id, own, report, outcome)

    def _previous_centroid(self, ws: str, conversation: str) -> Vector | None:
        """The event model the conversation's last closed episode ended with (the
        centroid of its messages' vectors), so the next episode's surprise is measured
        against what came before it, not against nothing."""
        flt = ScopeFilter(workspace_id=ws, conversation_id=conversation)
        found = self.store.search_recent(flt, 1, types=(EPISODE_TYPE,))
        if not found:
            return None
        (last,) = self.store.get_memories(ws, [found[0].memory_id])
        return centroid(list(self.store.get_vectors(ws, last.source_event_ids).values()))

    def _vectors(self, ws: str, messages: Sequence[Message]) -> list[Vector | None]:
        """Each spoken message's vector: stored ones, the rest embedded now and stored."""
        spoken = [m for m in messages if m.spoken and m.text.strip()]
        found = self.store.get_vectors(ws, [m.id for m in spoken])
        missing = [m for m in spoken if m.id not in found]
        if missing and self.embedder is not None:
            texts = [spoken_content(m.role, m.text, m.name) for m in missing]
            try:
                fresh = self.embedder.embed_batch(texts)
            except EmbedderError as exc:
                log.info("segmentation runs without surprise for now: %s", exc)
            else:
                rows = [(m.id, fresh[i]) for i, m in enumerate(missing)]
                self.store.put_vectors(self.embedder.model_id, self.embedder.dim, rows)
                found.update((m.id, fresh[i]) for i, m in enumerate(missing))
        return [found.get(m.id) for m in messages]

    def _episode(
        self,
        ws: str,
        conversation: str,
        messages: Sequence[Message],
        vectors: Sequence[Vector | None],
        seg: Segment,
        events: dict[str, Event],
        learnings: Sequence[Learning],
        report: SegmentReport,
        outcome: str | None = None,
    ) -> None:
        part = list(messages[seg.start : seg.end])
        part_vectors = list(vectors[seg.start : seg.end])
        text = describe_episode(part, _matrix(part_vectors), self.llm)
        scope = _scope_of([events[m.id] for m in part])
        episode_id = "ep_" + _digest(ws, conversation, part[0].id)
        surprise = round(float(seg.surprise), 6)
        episode = Memory(
            id=episode_id,
            workspace=ws,
            ts=part[-1].ts,
            type=EPISODE_TYPE,
            content=f"{text.title} — {text.summary}",
            keys=" ".join(text.keyphrases) if self.key_expansion else "",
            payload={
                "title": text.title,
                "summary": text.summary,
                "keyphrases": list(text.keyphrases),
                "described_by": text.source,
                "start": part[0].ts.isoformat(),
                "end": part[-1].ts.isoformat(),
                "message_count": len(part),
                "surprise": surprise,
                "boundary": seg.reason,
                "key_moment": surprise >= KEY_MOMENT_SURPRISE,
                "flashbulb": surprise >= FLASHBULB_SURPRISE,
                **({"outcome": outcome} if outcome else {}),
            },
            conversation=conversation,
            crew=scope["crew"],
            agent=scope["agent"],
            resource=scope["resource"],
            base_importance=EPISODE_BASE_IMPORTANCE,
            importance=EPISODE_BASE_IMPORTANCE,
            source_event_ids=tuple(m.id for m in part),
            stability=initial_stability(surprise),
            difficulty=initial_difficulty(),
            created_at=self.clock(),
        )
        # Seed 004: what is already remembered for this agent and user is context for the
        # extractor (never a source), so that it is not extracted again.
        known = known_notes(
            self.store,
            ScopeFilter(
                workspace_id=ws,
                scope=Scope.OWN if scope["agent"] else None,
                agent_id=scope["agent"],
                resource_id=scope["resource"],
                types=(ENTRY_TYPE, LEARNING_TYPE, PROFILE_TYPE),
            ),
            f"{text.title} {text.summary}",
            part_vectors,
        )
        extraction = extract_entries(part, self.llm, known=known)
        dropped = list(extraction.dropped)
        entries, entry_vectors, more = self._dedupe(ws, extraction.entries, events)
        dropped += more
        metrics.entries_dropped([d.reason if d.reason in REASONS else "other" for d in dropped])
        entry_memories = [self._entry_memory(ws, episode_id, e, events) for e in entries]
        derived = list(entry_memories)
        derived += self._profile_memories(ws, episode_id, dropped, events)
        derived += [self._learning_memory(ws, episode_id, ln, events) for ln in learnings]
        episode = _with_drops(episode, dropped)
        facts: dict[str, list[str]] = {}
        for e in entries:
            facts.setdefault(e.message_id, []).append(e.content)
        keys = (
            {
                m.id: " ".join(
                    [
                        message_keys(m.name, m.role, m.ts),
                        text.title,
                        *text.keyphrases,
                        *(f for f in facts.get(m.id, []) if f not in m.text),
                    ]
                )
                for m in part
                if m.spoken and m.text.strip()
            }
            if self.key_expansion
            else {}
        )
        if not self.store.close_episode(episode, [m.id for m in part], derived, keys):
            return
        embedded = {
            m.id: v for m, v in zip(entry_memories, entry_vectors, strict=True) if v is not None
        }
        report.unembedded += self._embed_now(ws, [episode, *derived], embedded)
        report.episodes += 1
        report.flashbulbs += int(bool(episode.payload["flashbulb"]))
        report.messages += len(part)
        report.entries += len(entries)
        report.learnings += len(learnings)
        report.dropped += dropped

    def _embed_now(self, ws: str, made: Sequence[Memory], known: dict[str, Vector]) -> int:
        """Store the vectors of what an episode made (``known``: those dedupe already
        computed), so a dense recall finds them when the call returns rather than after
        the next sweep. Returns how many are left to the sweeper (the embedder failed)."""
        if self.embedder is None:
            return 0
        missing = [m for m in made if m.id not in known]
        rows = list(known.items())
        left = 0
        if missing:
            try:
                fresh = self.embedder.embed_batch([m.content for m in missing])
            except EmbedderError as exc:
                left = len(missing)
                log.warning("%d new memories wait for the indexer's next sweep: %s", left, exc)
            else:
                rows += [(m.id, fresh[i]) for i, m in enumerate(missing)]
        if rows:
            self.store.put_vectors(self.embedder.model_id, self.embedder.dim, rows)
            link_indexed(self.store, [(memory_id, ws, v) for memory_id, v in rows])
        return left

    def _dedupe(
        self, ws: str, entries: Sequence[Entry], events: dict[str, Event]
    ) -> tuple[list[Entry], list[Vector | None], list[Dropped]]:
        """Seed 004: exact hash first, then cosine >= 0.86 within the batch and against
        the entries already stored in the same scope (workspace, agent, resource). Returns
        the kept entries with their vectors (None without an embedder), and the drops."""
        if not entries:
            return [], [], []
        dropped: list[Dropped] = []
        kept: list[Entry] = list(entries)
        scopes = {_entry_scope(ws, events[e.message_id]) for e in kept}
        known: set[str] = set()
        for flt in scopes:
            mine = [e for e in kept if _entry_scope(ws, events[e.message_id]) == flt]
            known |= self.store.known_hashes(flt, [content_hash(e.content) for e in mine])
        kept, gone = drop_known_hashes(kept, known)
        dropped += gone
        if not kept or self.embedder is None:
            return kept, [None] * len(kept), dropped
        try:
            matrix = self.embedder.embed_batch([e.content for e in kept])
        except EmbedderError as exc:
            log.info("entry dedupe by similarity skipped (embedder): %s", exc)
            return kept, [None] * len(kept), dropped
        near: list[str] = []
        for i, e in enumerate(kept):
            flt = _entry_scope(ws, events[e.message_id])
            near += [c.memory_id for c in self.store.search_dense(flt, matrix[i], 1)]
        stored = self.store.get_vectors(ws, near)
        existing = (
            np.stack(list(stored.values())).astype(np.float32)
            if stored
            else np.zeros((0, matrix.shape[1]), np.float32)
        )
        texts = {m.id: m.content for m in self.store.get_memories(ws, list(stored))}
        indices, gone = drop_similar(
            kept,
            matrix,
            existing,
            existing_ids=list(stored),
            existing_texts=[texts.get(i, "") for i in stored],
        )
        return [kept[i] for i in indices], [matrix[i] for i in indices], dropped + list(gone)

    def _entry_memory(
        self, ws: str, episode_id: str, entry: Entry, events: dict[str, Event]
    ) -> Memory:
        source = events[entry.message_id]
        digest = content_hash(entry.content)
        return Memory(
            id="ent_" + _digest(ws, episode_id, digest),
            workspace=ws,
            ts=source.ts,
            type=ENTRY_TYPE,
            content=entry.content,
            payload={
                "source": entry.source,
                "evidence": entry.evidence,
                "extracted_by": entry.extractor,
                "episode_id": episode_id,
            },
            conversation=source.conversation,
            crew=source.crew,
            agent=source.agent,
            resource=source.resource,
            base_importance=ENTRY_BASE_IMPORTANCE,
            importance=ENTRY_BASE_IMPORTANCE,
            source_event_ids=(entry.message_id,),
            content_hash=digest,
            created_at=self.clock(),
        )

    def _profile_memories(
        self, ws: str, episode_id: str, dropped: Sequence[Dropped], events: dict[str, Event]
    ) -> list[Memory]:
        """The preferences and profile facts extraction set aside, as profile memories
        (``write.profile``), but those their scope already holds (same text)."""
        fresh: list[Memory] = []
        for m in profile_memories(ws, episode_id, dropped, events, self.clock()):
            flt = replace(_entry_scope(ws, events[m.source_event_ids[0]]), types=(PROFILE_TYPE,))
            if not self.store.known_hashes(flt, [m.content_hash or ""]):
                fresh.append(m)
        return fresh

    def _learning_memory(
        self, ws: str, episode_id: str, learning: Learning, events: dict[str, Event]
    ) -> Memory:
        source = events.get(learning.message_id or "")
        importance = min(1.0, max(0.0, learning.importance))
        return Memory(
            id="lrn_" + _digest(ws, episode_id, content_hash(learning.content)),
            workspace=ws,
            ts=source.ts if source is not None else self.clock(),
            type=LEARNING_TYPE,
            content=learning.content,
            payload={
                "learning_type": learning.type,
                "domain": learning.domain,
                **({"phase": learning.phase} if learning.phase else {}),
                "status": "active",
                "evidence": learning.evidence,
                "extracted_by": learning.extractor,
                "episode_id": episode_id,
            },
            conversation=None if source is None else source.conversation,
            crew=None if source is None else source.crew,
            agent=None if source is None else source.agent,
            resource=None if source is None else source.resource,
            base_importance=importance,
            importance=importance,
            source_event_ids=() if source is None else (source.id,),
            content_hash=content_hash(learning.content),
            created_at=self.clock(),
        )


def episode_json(m: Memory) -> dict[str, Any]:
    """An episode as interfaces show it (``episodic recent --json``, HTTP, MCP)."""
    p = m.payload
    surprise = p.get("surprise", 0.0)
    return {
        "id": m.id,
        "title": str(p.get("title", "")),
        "summary": str(p.get("summary", m.content)),
        "start": p.get("start"),
        "end": p.get("end", m.ts.isoformat()),
        "surprise": float(surprise) if isinstance(surprise, int | float) else 0.0,
        "message_count": int(p.get("message_count", len(m.source_event_ids))),
        "key_moment": bool(p.get("key_moment", False)),
        "flashbulb": bool(p.get("flashbulb", False)),
        "outcome": p["outcome"] if isinstance(p.get("outcome"), str) else None,
        "keyphrases": list(p.get("keyphrases", [])),
        "described_by": p.get("described_by"),
        "workspace": m.workspace,
        "conversation": m.conversation,
        "agent": m.agent,
        "resource": m.resource,
        "stability": m.stability,
        "difficulty": m.difficulty,
    }


def _digest(*parts: str) -> str:
    return hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()[:24]


def _matrix(vectors: Sequence[Vector | None]) -> Any:
    if all(v is None for v in vectors):
        return None
    dim = next(v for v in vectors if v is not None).shape[0]
    return np.stack([np.zeros(dim, np.float32) if v is None else v for v in vectors])


def _scope_of(events: Sequence[Event]) -> dict[str, str | None]:
    """The ids an episode is filed under: each the most common one among its messages
    (a user and an assistant share the conversation; the agent is the one that spoke)."""
    out: dict[str, str | None] = {}
    for name in ("agent", "crew", "resource"):
        counts: dict[str, int] = {}
        for e in events:
            value = getattr(e, name)
            if value:
                counts[value] = counts.get(value, 0) + 1
        out[name] = max(sorted(counts), key=lambda v: counts[v]) if counts else None
    return out


def _phases(events: Sequence[Event]) -> tuple[dict[str, str], str | None]:
    """The phase in force at each message of a session (the latest ``payload.phase``, or
    ``payload.stage``, stated at or before it) and the last one stated. A learning takes
    the phase of the message it quotes, or the last one when it quotes none or a message
    from before any phase was stated."""
    at: dict[str, str] = {}
    current: str | None = None
    for e in events:
        for key in ("phase", "stage"):
            value = e.payload.get(key)
            if isinstance(value, str) and value.strip():
                current = value.strip()
                break
        if current is not None:
            at[e.id] = current
    return at, current


def _entry_scope(ws: str, event: Event) -> ScopeFilter:
    return ScopeFilter(
        workspace_id=ws,
        agent_id=event.agent,
        resource_id=event.resource,
        types=(ENTRY_TYPE,),
    )


def _with_drops(episode: Memory, dropped: Sequence[Dropped]) -> Memory:
    if not dropped:
        return episode
    payload = dict(episode.payload)
    # What was dropped failed a check, and often came from a model: its text is logged,
    # never stored, since a payload is searched (a hijacked model could otherwise plant
    # search terms in the episode). Its hash still lets an audit match it to the log.
    for d in dropped:
        log.info("episode %s: dropped an entry (%s): %r", episode.id, d.reason, d.content[:200])
    payload["extraction_dropped"] = [
        {"reason": d.reason, "detail": d.detail, "content_sha256": content_hash(d.content)}
        for d in dropped
    ]
    return replace(episode, payload=payload)


__all__ = [
    "ENTRY_TYPE",
    "EPISODE_TYPE",
    "LEARNING_TYPE",
    "EpisodeText",
    "EpisodeWriter",
    "SegmentReport",
    "episode_json",
]
