"""Seed 000's read-time walk: the memories one `similar` edge away from each hit, after
the hits themselves."""

from __future__ import annotations

from datetime import datetime

from episodic.model import Hit, ScopeFilter
from episodic.recall.trace import Trace
from episodic.store.search import SearchStore


def walk_similar(
    store: SearchStore, flt: ScopeFilter, hits: list[Hit], now: datetime, trace: Trace | None
) -> list[Hit]:
    """One hop along `similar` edges: each hit's related memories not already recalled,
    scored parent score x edge weight, after the hits themselves."""
    related = store.related(flt, [h.id for h in hits], "similar")
    have = {h.id for h in hits}
    extra: dict[str, tuple[float, str]] = {}
    for h in hits:
        for other, weight in related.get(h.id, []):
            if other not in have and h.score * weight > extra.get(other, (0.0, ""))[0]:
                extra[other] = (h.score * weight, h.id)
    if not extra:
        return []
    found = {m.id: m for m in store.get_memories(flt.workspace_id, list(extra))}
    walked = sorted(
        (
            Hit(
                memory=found[i],
                score=score,
                age_seconds=max(0.0, (now - found[i].ts).total_seconds()),
                via=parent,
            )
            for i, (score, parent) in extra.items()
            if i in found
        ),
        key=lambda hit: hit.score,
        reverse=True,
    )[: len(hits)]
    if trace is not None:
        trace.add_stage("walk:similar", [(h.id, h.score) for h in walked])
    return walked
