"""Newest first among near-duplicates, at read time (the pure rule is
``scoring/supersede.py``; this step fetches the rows and the `similar` edges it needs)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from episodic.model import Memory, ScopeFilter
from episodic.scoring.supersede import newer_of, newest_first
from episodic.store.search import SearchStore


def newest_similar_first(
    store: SearchStore,
    flt: ScopeFilter,
    ranked: list[tuple[str, float]],
    memories: dict[str, Memory],
    fetch: Callable[[Sequence[str]], None],
    depth: int,
    earlier: dict[str, str] | None = None,
) -> list[tuple[str, float]]:
    """The head of ``ranked`` with near-duplicates newest first (scoring/supersede.py);
    ``earlier``, when given, receives each id that has a newer near-duplicate in the head,
    with that newer id.

    Only memories outside conversations take part: a conversation's turns are utterances
    that reply to and repeat each other ("see you!"), not records of a state that a later
    one replaces; on LoCoMo, reordering them cost recall@1."""
    head, tail = ranked[:depth], ranked[depth:]
    fetch([i for i, _ in head])
    head = [(i, s) for i, s in head if i in memories]
    records = {i for i, _ in head if memories[i].conversation is None}
    if len(records) < 2:
        return ranked
    similar = {
        i: [(o, w) for o, w in others if o in records]
        for i, others in store.related(flt, sorted(records), "similar").items()
        if i in records
    }
    if not any(similar.values()):
        return ranked
    ts = {i: memories[i].ts for i, _ in head}
    if earlier is not None:
        earlier.update(newer_of(head, similar, ts))
    base = {i: memories[i].base_importance for i, _ in head}
    return newest_first(head, similar, ts, base) + tail
