"""What was decided about a memory, by which rule or model, and undoing a supersession or
a retirement.

Every automatic decision that changes what recall can see is kept where it is made, and
``decisions`` (``episodic memory why``) reads them back as one record type, ``Decision``:

- admission: the journal row (``events``: type, severity, payload, refs, ``admitted``)
  holds everything seed 000's admission rule read, and ``policy.admission``, a pure
  function, names the rule that kept it; with it, the importance it started at and the
  ``refs.priority`` floor. What an episode, an entry, a learning or a consolidation was
  made by is in its payload (``described_by``, ``extracted_by``, ``consolidated_by``).
- dedupe: the entries an episode's extraction did not keep, each with its reason (a known
  hash, a near-duplicate of a stored memory, an exclusion), in the episode's payload.
- supersession: the ``supersessions`` links, at either end, with who decided (the offline
  rule's name, ``llm:<model>``, ``explicit``) and why, and whether it was reverted; the
  ``partial_changes`` links alike (a newer memory that changes part of an older one).
- merge: the memory a compacted one was merged into (``memory_compactions``).
- retirement: the phase whose end retired a memory (its payload), or an explicit retire.

``restore`` undoes a supersession: the memory is active again and the link is kept,
marked reverted, so detection never makes the same replacement again. Of an active
memory a newer one changed part of (``partial_changes``), it undoes those links the same
way: recall no longer ranks the newer above it nor marks it earlier. It undoes a
retirement too: the memory's payload records when and by whom, the retirement is listed
as reverted, and the end of its phase does not retire it again. And it undoes a merge by
compaction: the compacted memory is active again as it was (the memory it was merged into
keeps what it took, so recall may show both), the merge is listed as reverted, and
compaction never merges it again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from episodic.errors import InvalidInput
from episodic.model import Event, Memory, MemoryStatus, ScopeFilter
from episodic.policy import importance_reason
from episodic.service.context import Context
from episodic.service.operations import Operations
from episodic.store.supersession import Supersession
from episodic.tenancy import Principal
from episodic.upkeep.compact import UNMERGED_AT, UNMERGED_BY
from episodic.write.journal import event_admission

# The kinds of decision ``decisions`` lists, in the order they happen to a memory.
ADMITTED = "admitted"
IMPORTANCE = "importance"
NOT_KEPT = "not_kept"
SUPERSEDES = "supersedes"
SUPERSEDED = "superseded"
# A partial change (``partial_changes``): the newer memory changes one sentence of the
# older, which says more that stays true and so stays active.
CHANGES_PART_OF = "changes_part_of"
PARTLY_CHANGED_BY = "partly_changed_by"
MERGED = "merged"
RETIRED = "retired"
# What a restored retired memory's payload records: when and by whom it was restored.
RESTORED_AT = "restored_at"
RESTORED_BY = "restored_by"
KINDS = (
    ADMITTED,
    IMPORTANCE,
    NOT_KEPT,
    SUPERSEDES,
    SUPERSEDED,
    CHANGES_PART_OF,
    PARTLY_CHANGED_BY,
    MERGED,
    RETIRED,
)

# Who restored a memory from Python (the CLI says ``cli``, an API key its id).
PYTHON_RESTORER = "python"

# What made a derived memory, by the payload key that records it.
_MADE_BY = ("extracted_by", "consolidated_by", "described_by")


@dataclass(frozen=True, slots=True)
class Decision:
    """One decision about a memory: its ``kind`` (one of ``KINDS``), the rule or model
    that made it, why, the other memory or event involved, when, and, for a reverted
    one, when and by whom it was undone."""

    kind: str
    decided_by: str
    reason: str
    other: str | None = None
    at: datetime | None = None
    reverted_at: datetime | None = None
    reverted_by: str | None = None

    @property
    def reverted(self) -> bool:
        return self.reverted_at is not None

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "decided_by": self.decided_by,
            "reason": self.reason,
            "other": self.other,
            "at": None if self.at is None else self.at.isoformat(),
            "reverted": self.reverted,
            "reverted_at": None if self.reverted_at is None else self.reverted_at.isoformat(),
            "reverted_by": self.reverted_by,
        }


# -- reading the records (pure) ---------------------------------------------------------
def admission_decisions(memory: Memory, event: Event | None) -> list[Decision]:
    """How ``memory`` came to be and the importance it started at. ``event`` is the
    journal row of a memory made from one event (its own id), None otherwise."""
    if event is not None:
        decided = event_admission(event)
        rule = decided.rule if decided.admitted else "unknown"
        reason = decided.reason if decided.admitted else "admitted under an earlier rule"
        priority = event.refs.get("priority")
        return [
            Decision(ADMITTED, f"policy:{rule}", reason, event.id, memory.created_at),
            Decision(
                IMPORTANCE,
                "policy:importance",
                importance_reason(
                    event.type, event.severity, priority if isinstance(priority, str) else None
                ),
                at=memory.created_at,
            ),
        ]
    made_by = next((memory.payload[k] for k in _MADE_BY if memory.payload.get(k)), None)
    by = ", ".join(map(str, made_by)) if isinstance(made_by, list) else str(made_by or "")
    sources = [s for s in memory.source_event_ids if s != memory.id]
    if memory.id in memory.source_event_ids:
        # Its own journal row is archived: what admission read is no longer all there.
        reason = "its journal row is archived; the rule that admitted it cannot be read back"
        return [Decision(ADMITTED, "policy:unknown", reason, memory.id, memory.created_at)]
    reason = f"{memory.type} made from {len(sources)} source(s)"
    return [
        Decision(
            ADMITTED,
            by or "unknown",
            reason,
            sources[0] if sources else None,
            memory.created_at,
        ),
        Decision(
            IMPORTANCE,
            by or "unknown",
            f"base importance {memory.base_importance:.2f}",
            at=memory.created_at,
        ),
    ]


def dropped_decisions(memory: Memory) -> list[Decision]:
    """The entries ``memory`` (an episode) did not keep, each with its reason."""
    dropped = memory.payload.get("extraction_dropped")
    if not isinstance(dropped, list):
        return []
    out: list[Decision] = []
    for d in dropped:
        if not isinstance(d, Mapping):
            continue
        reason = str(d.get("reason") or "dropped")
        detail = str(d.get("detail") or "")
        out.append(
            Decision(
                NOT_KEPT,
                f"extraction:{reason}",
                f"an entry was not kept ({reason}{': ' + detail if detail else ''})",
                _memory_named(detail),
                memory.created_at,
            )
        )
    return out


def link_decisions(
    memory_id: str, links: Sequence[Supersession], *, partial: bool = False
) -> list[Decision]:
    """The supersessions naming ``memory_id``: what it replaced, what replaced it; with
    ``partial``, the partial changes: what it changed part of, what changed part of it."""
    newer, older = (CHANGES_PART_OF, PARTLY_CHANGED_BY) if partial else (SUPERSEDES, SUPERSEDED)
    out: list[Decision] = []
    for link in links:
        if link.new_id == memory_id:
            kind, other = newer, link.old_id
        elif link.old_id == memory_id:
            kind, other = older, link.new_id
        else:
            continue
        out.append(
            Decision(
                kind,
                link.decided_by,
                link.reason,
                other,
                link.decided_at,
                link.reverted_at,
                link.reverted_by,
            )
        )
    return out


def status_decisions(memory: Memory, merged_into: str | None) -> list[Decision]:
    """A merge by compaction, or a retirement, that took ``memory`` out of recall (and
    was undone, when it was restored)."""
    merge = Decision(
        MERGED,
        "upkeep:compact",
        "a near-duplicate (token Jaccard > 0.8) of a more important memory",
        merged_into or _text(memory.payload.get("compacted_into")),
    )
    if memory.status is MemoryStatus.COMPACTED:
        return [merge]
    unmerged = _text(memory.payload.get(UNMERGED_AT))
    if unmerged is not None:
        undone = replace(
            merge,
            reverted_at=_parse(unmerged),
            reverted_by=_text(memory.payload.get(UNMERGED_BY)),
        )
        return [undone, *_retirement(memory)]
    return _retirement(memory)


def _retirement(memory: Memory) -> list[Decision]:
    restored = _text(memory.payload.get(RESTORED_AT))
    if memory.status is not MemoryStatus.RETIRED and restored is None:
        return []
    # Restored (and not retired again since): the retirement stays listed, undone.
    undone: dict[str, Any] = {}
    if memory.status is not MemoryStatus.RETIRED:
        undone = {
            "reverted_at": _parse(restored),
            "reverted_by": _text(memory.payload.get(RESTORED_BY)),
        }
    phase = _text(memory.payload.get("phase")) or _text(memory.payload.get("stage"))
    retired_at = _text(memory.payload.get("retired_at"))
    if phase and retired_at:
        return [
            Decision(
                RETIRED,
                "upkeep:retire-phase",
                f"phase {phase} ended",
                at=_parse(retired_at),
                **undone,
            )
        ]
    return [Decision(RETIRED, "explicit", "retired on request", **undone)]


def _memory_named(detail: str) -> str | None:
    # A near-duplicate drop names the stored memory it matched: "cosine 0.912 with
    # memory <id>".
    _, marker, named = detail.partition("with memory ")
    return named.strip() or None if marker else None


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


def _parse(value: str | None) -> datetime | None:
    if value is None:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def _when(d: Decision) -> tuple[int, str]:
    return KINDS.index(d.kind), "" if d.at is None else d.at.isoformat()


# -- the area ----------------------------------------------------------------------------
class Decisions:
    def __init__(self, ctx: Context, operations: Operations) -> None:
        self.ctx = ctx
        self.operations = operations

    def decisions(self, memory_id: str, *, workspace: str) -> list[Decision]:
        """What was decided about memory ``memory_id`` and by what: the rule that admitted
        it and its importance, the entries it did not keep (an episode), what it
        replaced and what replaced it (reverted ones too), what it was merged into, the
        phase that retired it. ``NotFound`` when it is not a memory of the workspace."""
        return self._decisions(ScopeFilter(workspace_id=workspace), memory_id)

    def decisions_as(self, caller: Principal, memory_id: str) -> list[Decision]:
        """``decisions`` of a memory the API key may see (``NotFound`` otherwise)."""
        return self._decisions(caller.reading(), memory_id)

    def _decisions(self, flt: ScopeFilter, memory_id: str) -> list[Decision]:
        store = self.ctx.store
        memory = self.operations.memory(flt, memory_id)
        ws = memory.workspace
        events = store.get_events(ws, [memory.id]) if memory.id in memory.source_event_ids else []
        merged = store.compacted_into(ws, [memory.id]).get(memory.id)
        decisions = [
            *admission_decisions(memory, events[0] if events else None),
            *dropped_decisions(memory),
            *link_decisions(memory.id, store.supersessions(ws, [memory.id])),
            *link_decisions(memory.id, store.partial_changes(ws, [memory.id]), partial=True),
            *status_decisions(memory, merged),
        ]
        return sorted(decisions, key=_when)

    def restore(self, memory_id: str, *, workspace: str, by: str = PYTHON_RESTORER) -> Memory:
        """Undo the supersession, the retirement or the merge of memory ``memory_id``: it
        is active again. A superseded one loses its ``valid_to`` and ``superseded_by``,
        with what was superseded along with it (an episode or entry made from it), and the
        decision is kept, marked reverted, so detection never replaces it with the same
        memory again (an explicit ``supersede`` still can). A retired one keeps its
        payload with ``restored_at`` and ``restored_by`` added (the version before goes to
        its history), so the end of its phase never retires it again (an explicit
        ``retire`` still can). A compacted one gets ``unmerged_at`` and ``unmerged_by``
        instead of ``compacted_into``, and compaction never merges it again; the memory it
        was merged into keeps the text and counts it took. ``InvalidInput`` naming
        ``memory_id`` when it is none of these; ``NotFound`` when it is not a memory of
        the workspace."""
        if not isinstance(by, str) or not by.strip():
            raise InvalidInput("by", "name who restores it")
        found = self.operations.memory(ScopeFilter(workspace_id=workspace), memory_id)
        if found.status is MemoryStatus.RETIRED:
            return self._unretire(found, by)
        if found.status is MemoryStatus.COMPACTED:
            return self._unmerge(found, by)
        restored = self.ctx.store.revert_supersession(
            found.workspace, found.id, by=by, at=self.ctx.clock()
        )
        if restored is None:
            # An active memory a newer one changed part of: the link is undone, recall
            # no longer marks it earlier, and detection never links the pair again.
            if found.status is MemoryStatus.ACTIVE and self.ctx.store.revert_partial_changes(
                found.workspace, found.id, by=by, at=self.ctx.clock()
            ):
                return found
            raise InvalidInput(
                "memory_id",
                f"memory {memory_id} is {found.status.value}, not superseded, retired or "
                "compacted: only a superseded, retired or compacted memory, or one a newer "
                "memory changed part of, can be restored",
            )
        return self.ctx.store.get_memory(found.workspace, found.id)

    def _unretire(self, memory: Memory, by: str) -> Memory:
        at = self.ctx.clock()
        payload = {**memory.payload, RESTORED_AT: at.isoformat(), RESTORED_BY: by}
        if payload.get("status") == MemoryStatus.RETIRED.value:
            payload["status"] = MemoryStatus.ACTIVE.value  # what the phase's end wrote
        self.ctx.store.revise_memory(replace(memory, payload=payload), by=by, at=at)
        return self.ctx.store.set_status(memory.workspace, memory.id, MemoryStatus.ACTIVE)

    def _unmerge(self, memory: Memory, by: str) -> Memory:
        at = self.ctx.clock()
        payload = {**memory.payload, UNMERGED_AT: at.isoformat(), UNMERGED_BY: by}
        # Where it was merged stays in ``memory_compactions`` (``why`` lists it, undone).
        payload.pop("compacted_into", None)
        self.ctx.store.revise_memory(replace(memory, payload=payload), by=by, at=at)
        return self.ctx.store.set_status(memory.workspace, memory.id, MemoryStatus.ACTIVE)

    def restore_as(self, caller: Principal, memory_id: str) -> Memory:
        """``restore`` on behalf of an API key: who may supersede a memory may restore
        it; recorded as undone by the key's id."""
        self.operations.owned_by(caller, memory_id, "restore")
        return self.restore(memory_id, workspace=caller.workspace_id, by=caller.key.id)
