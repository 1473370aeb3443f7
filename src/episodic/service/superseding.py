"""The service's supersession area: newer memories replacing older ones of the same slot.

Explicitly (``supersede``: an old memory and the new text or memory that replaces it),
and on write: every new memory but an episode is checked once for older memories it
replaces (``check_pending``; the indexer's sweep, ``index_once`` and ``segment`` run it,
so an embedded memory has its vector by then). The candidates are the memories of the
same agent, crew and resource, no newer than it, that keyword search (and, for the
LLM, vector search) finds for its text; then each is decided ``supersedes``,
``duplicate`` or ``unrelated`` by the configured LLM when there is one, else by the
offline rule (``episodic.write.supersession``). What is superseded stays stored, out of
default recall; ``recall(as_of=...)`` and ``include_superseded`` still reach it.

An episode is not checked itself (it holds more than one fact), and detection never
picks it as a candidate. When a message it was made from is superseded, though, the
episode goes with it (``SupersessionStore.supersede``): it still tells truly what was
said then, and ``as_of`` or ``include_superseded`` bring it back, but default recall
should answer with what is true now, not with an account of the old state.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

from episodic.errors import EpisodicError, InvalidInput, NotFound
from episodic.model import Memory, MemoryStatus, ScopeFilter
from episodic.policy import EPISODE_TYPE, LEARNING_TYPE, MESSAGE_TYPE
from episodic.service.context import Context
from episodic.service.operations import EXPLICIT, Operations
from episodic.store.supersession import Supersession, derived_reason
from episodic.tenancy import Principal
from episodic.write.text import content_words, cut_words

if TYPE_CHECKING:
    from episodic.write.supersession import Claim, Decision

log = logging.getLogger("episodic")

# Memories checked per call of ``check_pending`` (it loops until none are left).
CHECK_BATCH = 200
# Candidates each leg gives one new memory, and how many of them are decided.
CANDIDATE_POOL = 10
MAX_CANDIDATES = 8


@dataclass(frozen=True, slots=True)
class CheckReport:
    checked: int = 0
    superseded: int = 0


class Superseding:
    def __init__(self, ctx: Context, operations: Operations) -> None:
        self.ctx = ctx
        self.operations = operations

    # -- explicit ------------------------------------------------------------------------
    def supersede(
        self,
        old_id: str,
        new: str,
        *,
        workspace: str,
        reason: str | None = None,
        by: str = EXPLICIT,
    ) -> Memory:
        """Replace memory ``old_id`` with ``new``: the id of another memory of the
        workspace, or the text of a new one, remembered now as a note of the old
        memory's agent, crew and resource. The old memory stays stored as
        ``superseded`` (``valid_to`` = when the new one became true), out of default
        recall. Returns the memory that replaced it. ``InvalidInput`` when the old one
        is not active, or when one of the two is made from the other (never an entry or
        an episode over its own source, nor a message over what was made from it)."""
        old = self.operations.replaceable(workspace, old_id, "old_id")
        if not isinstance(new, str) or not new.strip():
            raise InvalidInput("new", "required: the replacing memory's id or text")
        found = self.operations.memories(ScopeFilter(workspace_id=workspace), [new])
        if not found:
            return self.operations.remember(
                new,
                workspace=workspace,
                agent=old.agent,
                crew=old.crew,
                resource=old.resource,
                importance=old.base_importance,
                replaces=old.id,
                reason=reason,
                by=by,
            )
        if found[0].id == old.id:
            raise InvalidInput("new", "a memory cannot replace itself")
        if found[0].valid_since < old.valid_since:
            raise InvalidInput("new", f"memory {new} is older than the one it would replace")
        if made_from(found[0], old) or made_from(old, found[0]):
            raise InvalidInput(
                "new", f"memory {new} and {old.id} are one made from the other: neither replaces it"
            )
        why = (reason or "").strip() or "replaced on request"
        self.operations.replace(old, found[0].id, by=by, reason=why)
        return found[0]

    def supersede_as(
        self, caller: Principal, old_id: str, new: str, *, reason: str | None = None
    ) -> Memory:
        """``supersede`` on behalf of an API key: who may edit the old memory may
        replace it; recorded as decided by the key."""
        self.operations.owned_by(caller, old_id, "supersede")
        return self.supersede(
            old_id,
            new,
            workspace=caller.workspace_id,
            reason=reason,
            by=f"{EXPLICIT}:{caller.key.id}",
        )

    def replaceable_as(self, caller: Principal, old_id: str) -> Memory:
        """The memory ``old_id`` if this API key may replace it (who may edit it:
        ``Forbidden`` otherwise) and it may be replaced (``InvalidInput`` naming
        ``replaces`` when it is not active): what a key's
        ``remember(replaces=...)`` checks first."""
        self.operations.owned_by(caller, old_id, "supersede")
        return self.operations.replaceable(caller.workspace_id, old_id)

    def supersessions(self, memory_id: str, *, workspace: str) -> list[Supersession]:
        """The links that name memory ``memory_id`` at either end (what replaced it,
        what it replaced), oldest decided first; ``NotFound`` when it is not a memory of
        the workspace."""
        return self._links(ScopeFilter(workspace_id=workspace), memory_id)

    def supersessions_as(self, caller: Principal, memory_id: str) -> list[Supersession]:
        """``supersessions`` of a memory the API key may see (``NotFound`` otherwise)."""
        return self._links(caller.reading(), memory_id)

    def _links(self, flt: ScopeFilter, memory_id: str) -> list[Supersession]:
        found = self.operations.memory(flt, memory_id)
        return self.ctx.store.supersessions(found.workspace, [found.id])

    # -- detection on write ------------------------------------------------------------
    def check_pending(self) -> CheckReport:
        """Check every memory written since the last check for older ones it replaces."""
        if self.ctx.settings.supersession == "off":
            return CheckReport()
        llm = self.ctx.models.llm
        embedder = self.ctx.models.embedder
        checked = superseded = 0
        while True:
            batch = self.ctx.store.pending_supersession(
                CHECK_BATCH, vectored_only=llm is not None and embedder is not None
            )
            if not batch:
                return CheckReport(checked, superseded)
            for memory in batch:
                try:
                    superseded += self._check(memory)
                except EpisodicError as exc:  # the memory stands; the next one is checked
                    log.warning("supersession check of %s failed: %s", memory.id, exc)
            self.ctx.store.mark_supersession_checked([m.id for m in batch])
            checked += len(batch)

    def check_memory(self, memory: Memory) -> int:
        """Check one memory now (a note just remembered), not waiting for the sweep;
        returns how many memories it replaced."""
        if self.ctx.settings.supersession == "off":
            return 0
        try:
            return self._check(memory)
        finally:
            self.ctx.store.mark_supersession_checked([memory.id])

    def _check(self, memory: Memory) -> int:
        if memory.status is not MemoryStatus.ACTIVE:
            return 0
        if self._inherit(memory):
            return 0
        if memory.type == EPISODE_TYPE:
            return 0
        replaced = self._correction(memory)
        candidates = self._candidates(memory)
        if not candidates:
            return replaced
        # The rules load with the first check, not with the service: a recall never needs them.
        from episodic.write.supersession import (
            blocked,
            decide_offline,
            decide_with_llm,
            partial_change,
        )

        new = _claim(memory)
        claims = [_claim(c) for c in candidates]
        llm = self.ctx.models.llm
        decisions: dict[str, Decision]
        if llm is not None:
            # A replacement a user undid is never made again (the store refuses it too):
            # the model is not asked about it.
            undone = self._reverted(memory)
            claims = [c for c in claims if c.id not in undone]
            if not claims:
                return replaced
            decisions = decide_with_llm(llm, new, claims)
        else:
            decisions = {c.id: decide_offline(new, c) for c in claims}
        for claim in claims:
            decision = decisions[claim.id]
            if decision.kind == "unrelated":
                self._link_partial(memory, claim, partial_change(new, claim, decision))
            if decision.kind != "supersedes":
                continue
            why_not = blocked(new, claim)  # a model's answer is held to the guards too
            if why_not is not None:
                log.info("not superseding %s by %s: %s", claim.id, memory.id, why_not)
                continue
            try:
                done = self.ctx.store.supersede(
                    memory.workspace,
                    claim.id,
                    memory.id,
                    decided_by=decision.decided_by,
                    reason=decision.reason,
                    at=self.ctx.clock(),
                )
            except NotFound:  # forgotten meanwhile
                continue
            replaced += done is not None
        return replaced

    def _link_partial(self, memory: Memory, old: Claim, change: Decision | None) -> None:
        """Record that ``memory`` changes part of ``old``, which says more and stays (a
        soft link recall orders by); nothing when the rule read no such change."""
        if change is None:
            return
        try:
            linked = self.ctx.store.link_partial_change(
                memory.workspace,
                old.id,
                memory.id,
                decided_by=change.decided_by,
                reason=change.reason,
                at=self.ctx.clock(),
            )
        except NotFound:  # forgotten meanwhile
            return
        if linked:
            log.info("%s changes part of %s (%s)", memory.id, old.id, change.decided_by)

    def _reverted(self, memory: Memory) -> set[str]:
        """The memories whose replacement by ``memory`` was undone (``restore``)."""
        links = self.ctx.store.supersessions(memory.workspace, [memory.id])
        return {s.old_id for s in links if s.new_id == memory.id and s.reverted_at is not None}

    def _inherit(self, memory: Memory) -> bool:
        """A memory made from one already superseded (an episode of messages segmented
        after the change came, an entry quoting a replaced message) is superseded with
        it, by the same newer memory, when that one is newer than it."""
        # A message or journal memory is its own source: nothing to read for it.
        made_from = [i for i in memory.source_event_ids if i != memory.id]
        if not made_from:
            return False
        sources = self.ctx.store.get_memories(memory.workspace, made_from)
        for source in sources:
            newer = source.superseded_by
            if source.status is not MemoryStatus.SUPERSEDED or newer is None or newer == memory.id:
                continue
            replacing = self.ctx.store.get_memories(memory.workspace, [newer])
            if not replacing or replacing[0].valid_since < memory.valid_since:
                continue
            # Made from the replacing memory too: it holds the current state as well.
            if {newer, *replacing[0].source_event_ids} & set(memory.source_event_ids):
                continue
            links = [
                s
                for s in self.ctx.store.supersessions(memory.workspace, [source.id])
                if s.old_id == source.id and s.new_id == newer
            ]
            decided_by = links[0].decided_by if links else "inherited"
            done = self.ctx.store.supersede(
                memory.workspace,
                memory.id,
                newer,
                decided_by=decided_by,
                reason=derived_reason(source.id, links[0].reason if links else "replaced"),
                at=self.ctx.clock(),
            )
            return done is not None
        return False

    def _correction(self, memory: Memory) -> int:
        """Seed 001's corrective learning (the user set the assistant right) supersedes
        what it corrects: the assistant's last message before the user's, when the two
        share a content word (a correction of something else replaces nothing)."""
        from episodic.write.supersession import blocked

        if memory.type != LEARNING_TYPE or memory.payload.get("learning_type") != "corrective":
            return 0
        if memory.conversation is None or not memory.source_event_ids:
            return 0
        flt = ScopeFilter(
            workspace_id=memory.workspace,
            conversation_id=memory.conversation,
            types=(MESSAGE_TYPE,),
        )
        before = self.ctx.store.search_recent(flt, CANDIDATE_POOL, end=memory.ts)
        said = self.ctx.store.get_memories(memory.workspace, [c.memory_id for c in before])
        previous = next((m for m in said if m.payload.get("role") == "assistant"), None)
        if previous is None or not set(content_words(previous.content)) & set(
            content_words(memory.content)
        ):
            return 0
        if blocked(_claim(memory), _claim(previous)) is not None:
            return 0
        done = self.ctx.store.supersede(
            memory.workspace,
            previous.id,
            memory.id,
            decided_by="explicit:corrective",
            reason="the user corrected what the assistant said",
            at=self.ctx.clock(),
        )
        return int(done is not None)

    def _candidates(self, memory: Memory) -> list[Memory]:
        """Older active memories of the same agent, crew and resource that keyword search
        (and vector search, when an LLM will read them) finds for ``memory``'s text."""
        from episodic.write.supersession import OFFLINE_MAX_CHARS, blocked

        store = self.ctx.store
        flt = ScopeFilter(
            workspace_id=memory.workspace,
            agent_id=memory.agent,
            crew_id=memory.crew,
            resource_id=memory.resource,
        )
        # The head of the text, as the offline rule reads it: a long memory's every word
        # as a search term would cost more than the decision.
        query = cut_words(memory.content, OFFLINE_MAX_CHARS)
        found = [c.memory_id for c in store.search_sparse(flt, query, CANDIDATE_POOL)]
        if self.ctx.models.llm is not None:
            vectors = store.get_vectors(memory.workspace, [memory.id])
            if memory.id in vectors:
                found += [
                    c.memory_id for c in store.search_dense(flt, vectors[memory.id], CANDIDATE_POOL)
                ]
        wanted = [i for i in dict.fromkeys(found) if i != memory.id]
        new = _claim(memory)
        return [
            m
            for m in store.get_memories(memory.workspace, wanted)
            if m.type != EPISODE_TYPE
            and m.status is MemoryStatus.ACTIVE
            and blocked(new, _claim(m)) is None
        ][:MAX_CANDIDATES]


def _claim(memory: Memory) -> Claim:
    from episodic.write.supersession import Claim

    # Search narrows only by the ids the new memory has: a memory of no agent must not
    # replace one agent's own, so the owner is compared in full (``blocked``).
    return Claim(
        memory.id,
        memory.content,
        memory.valid_since,
        owner=(memory.agent, memory.crew, memory.resource),
        sources=tuple(memory.source_event_ids),
    )


def made_from(memory: Memory, source: Memory) -> bool:
    """Whether ``memory`` was made from ``source`` (an episode recounting a message, an
    entry quoting it): it names ``source`` among the events it was made from."""
    return memory.id != source.id and source.id in memory.source_event_ids
