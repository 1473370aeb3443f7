"""What is already remembered for a user, handed to the extractor as context.

Seed 004 passes the known ``<memory>`` (and profile) context to its extractor so that it
does not extract again what is already stored, and so that restatements are excluded;
that context is never a source. Here the known notes are the stored memories (entries and
learnings) of the episode's scope that are most like the episode: nearest by vector to
its messages, and best by BM25 for its title and summary, taken in turns.
"""

from __future__ import annotations

from collections.abc import Sequence

from episodic.model import ScopeFilter
from episodic.store.search import SearchStore
from episodic.store.vectors import Vector
from episodic.write.extract import KNOWN_SHOWN
from episodic.write.segment import centroid

# As many as the extraction prompt shows.
KNOWN_MAX = KNOWN_SHOWN


def known_notes(
    store: SearchStore,
    flt: ScopeFilter,
    text: str,
    vectors: Sequence[Vector | None] = (),
    limit: int = KNOWN_MAX,
) -> list[str]:
    """The contents of up to ``limit`` memories visible through ``flt`` most like an
    episode described by ``text`` whose messages have ``vectors`` (None: not embedded),
    the most alike first."""
    legs: list[list[str]] = []
    centre = centroid(vectors)
    if centre is not None:
        legs.append([c.memory_id for c in store.search_dense(flt, centre, limit)])
    if text.strip():
        legs.append([c.memory_id for c in store.search_sparse(flt, text, limit)])
    ids: list[str] = []
    for rank in range(max((len(leg) for leg in legs), default=0)):
        for leg in legs:
            if rank < len(leg) and leg[rank] not in ids:
                ids.append(leg[rank])
    ids = ids[:limit]
    found = {m.id: m.content for m in store.get_memories(flt.workspace_id, ids)}
    return [found[i] for i in ids if i in found]
