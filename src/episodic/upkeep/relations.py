"""The relation graph (seed 000).

- ``similar``: when memories are indexed (the indexer's sweep and ``index_one``), each
  points at the top ``SIMILAR_TOP`` memories of its workspace that already had a vector,
  with cosine >= ``SIMILAR_MIN_COSINE``; weight = cosine. Edges go from the new memory to
  its predecessors; ``Store.related`` walks them both ways. Within one batch a memory
  only links to batch members indexed before it, so a pair is linked once.
- ``supports``: from a consolidated rule or fact to each of its evidence memories, weight
  1.0 (``upkeep.consolidate``).

Re-running either is idempotent: an edge is keyed by (src, dst, relation) and re-adding it
only refreshes its weight. The read-time one-hop walk along ``similar`` edges
(``recall(walk=1)``) is off by default and turned on per agent with
``Settings.memory_walk_depth`` (``EPISODIC_MEMORY_WALK_DEPTH=deployer=1``).

One batched dense search (``Store.search_dense_many``) serves a whole sweep: the
workspace's matrix is read once per batch rather than once per memory.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from episodic.model import ScopeFilter
from episodic.store.vectors import Relation, Vector, VectorStore

if TYPE_CHECKING:
    import numpy as np
else:
    from episodic.lazy import np

SIMILAR_MIN_COSINE = 0.80
SIMILAR_TOP = 3
SUPPORTS_WEIGHT = 1.0


def similar_edges(
    store: VectorStore, workspace_id: str, memory_ids: Sequence[str], vectors: Vector
) -> list[Relation]:
    """The ``similar`` edges of freshly indexed memories (rows of ``vectors``, in index
    order) to the memories of the workspace indexed before each of them."""
    if not memory_ids:
        return []
    ids = list(memory_ids)
    # Never itself, nor a batch member indexed after it: edges point to predecessors.
    found = store.search_dense_many(
        ScopeFilter(workspace_id),
        np.asarray(vectors, np.float32),
        SIMILAR_TOP,
        SIMILAR_MIN_COSINE,
        exclude=[ids[i:] for i in range(len(ids))],
    )
    return [
        Relation(memory_id, c.memory_id, "similar", round(c.score, 6))
        for memory_id, candidates in zip(ids, found, strict=True)
        for c in candidates
    ]


def link_similar(store: VectorStore, rows: Sequence[tuple[str, str, Vector]]) -> int:
    """Add ``similar`` edges for freshly indexed memories: ``rows`` of (memory id,
    workspace id, vector) in index order, any workspaces. Returns edges written."""
    by_workspace: dict[str, list[tuple[str, Vector]]] = {}
    for memory_id, workspace_id, vector in rows:
        by_workspace.setdefault(workspace_id, []).append((memory_id, vector))
    written = 0
    for workspace_id, items in by_workspace.items():
        ids = [memory_id for memory_id, _ in items]
        matrix = np.stack([np.asarray(v, np.float32) for _, v in items])
        edges = similar_edges(store, workspace_id, ids, matrix)
        if edges:
            written += store.add_relations(workspace_id, edges)
    return written


def supports_edges(rule_id: str, evidence_ids: Sequence[str]) -> list[Relation]:
    """A rule's ``supports`` edges, one per evidence memory (weight 1.0)."""
    return [
        Relation(rule_id, evidence, "supports", SUPPORTS_WEIGHT)
        for evidence in dict.fromkeys(evidence_ids)
    ]
