"""Validity in time at recall: which candidates were true at the time asked about, and,
for the trace, which ones a newer memory replaced.

A memory is valid from ``valid_from`` (its ``ts`` unless said otherwise) until
``valid_to`` (open while nothing replaced it). A default recall sees only what is valid
now: the store leaves superseded memories out of every leg. A recall ``as_of`` T asks
the legs for superseded memories too and keeps those valid at T here, so a fact replaced
after T comes back and the one that replaced it does not. This is valid time (when what
a memory says was true), not when it was written down: an old fact imported today is
still true at T."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from episodic.model import Candidate, Memory, MemoryStatus, ScopeFilter
from episodic.recall.trace import DROP_SUPERSEDED, DROP_VALIDITY, Trace
from episodic.store.search import SearchStore
from episodic.store.vectors import Vector


def valid_at(m: Memory, at: datetime) -> bool:
    """Whether ``m`` was true at ``at``: from its ``valid_from`` (inclusive) to its
    ``valid_to`` (exclusive)."""
    return m.valid_since <= at and (m.valid_to is None or at < m.valid_to)


def validity_text(m: Memory) -> str:
    until = "now" if m.valid_to is None else m.valid_to.isoformat()
    return f"valid {m.valid_since.isoformat()} .. {until}"


def keep_valid(
    legs: dict[str, list[Candidate]],
    memories: dict[str, Memory],
    at: datetime,
    trace: Trace | None,
) -> dict[str, list[Candidate]]:
    """Each leg's candidates that were valid at ``at`` (``memories`` holds their rows),
    ranked again from 1 so rank fusion sees no gaps."""
    kept: dict[str, list[Candidate]] = {}
    for name, cands in legs.items():
        valid: list[Candidate] = []
        for c in cands:
            m = memories.get(c.memory_id)
            if m is not None and valid_at(m, at):
                valid.append(c._replace(rank=len(valid) + 1))
            elif m is not None and trace is not None:
                trace.drop(c.memory_id, f"leg:{name}", DROP_VALIDITY, f"{validity_text(m)}")
        kept[name] = valid
    return kept


def trace_superseded(
    store: SearchStore,
    trace: Trace,
    flt: ScopeFilter,
    qvec: Vector | None,
    lexical: str,
    legs: dict[str, list[Candidate]],
    pool: int,
) -> None:
    """Explain-only: what the same legs find when superseded memories are searched too,
    each with the memory that replaced it and who decided so."""
    seen = {c.memory_id for cands in legs.values() for c in cands}
    wider = replace(flt, superseded=True)
    found: list[str] = []
    if qvec is not None:
        found += [c.memory_id for c in store.search_dense(wider, qvec, pool)]
    found += [c.memory_id for c in store.search_sparse(wider, lexical, pool)]
    unseen = [i for i in dict.fromkeys(found) if i not in seen]
    if not unseen:
        return
    rows = store.get_memories(flt.workspace_id, unseen)
    superseded = [m for m in rows if m.status is MemoryStatus.SUPERSEDED]
    links = {
        (s.old_id, s.new_id): s
        for s in store.supersessions(flt.workspace_id, [m.id for m in superseded])
    }
    for m in superseded:
        link = links.get((m.id, m.superseded_by or ""))
        who = f" ({link.decided_by}: {link.reason})" if link is not None else ""
        trace.drop(m.id, "legs", DROP_SUPERSEDED, f"superseded by {m.superseded_by}{who}")
