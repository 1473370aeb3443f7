"""Recall: run the policy's legs, fuse, fetch the winners, mark them referenced.

The legs are store calls (the store enforces workspace isolation); fusion and re-ranking
are pure functions from ``episodic.scoring``.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from datetime import datetime

from episodic.embed.base import Embedder, Vector
from episodic.errors import EmbedderError
from episodic.model import Candidate, Hit, Query
from episodic.recall.policies import Fusion, Leg, RecallPolicy
from episodic.scoring.fusion import rrf
from episodic.scoring.topk import clamp_k, cosine_times_importance, dense_overfetch
from episodic.store.base import Store

log = logging.getLogger("episodic.recall")

MODE_VECTOR = "vector"
MODE_SPARSE_ONLY = "sparse-only"


@dataclass(frozen=True, slots=True)
class RecallResult:
    hits: list[Hit]
    mode: str  # "vector" or "sparse-only"
    policy: str
    legs: dict[str, list[Candidate]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


class QueryVectors:
    """A small LRU of query embeddings: agents repeat queries across turns, and the
    embedding is the most expensive step of a recall."""

    def __init__(self, embedder: Embedder, size: int = 256) -> None:
        self.embedder = embedder
        self.size = size
        self._cache: OrderedDict[str, Vector] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, text: str) -> Vector:
        with self._lock:
            hit = self._cache.get(text)
            if hit is not None:
                self._cache.move_to_end(text)
                return hit
        vector: Vector = self.embedder.embed_batch([text])[0]
        with self._lock:
            self._cache[text] = vector
            if len(self._cache) > self.size:
                self._cache.popitem(last=False)
        return vector


def run_recall(
    store: Store,
    vectors: QueryVectors | None,
    query: Query,
    policy: RecallPolicy,
    *,
    now: datetime,
    mark: bool = True,
) -> RecallResult:
    k = clamp_k(query.k)
    depth = dense_overfetch(k)
    flt = query.scope_filter()
    warnings: list[str] = []
    legs: dict[str, list[Candidate]] = {}
    text = query.text.strip()
    if not text:
        return RecallResult(
            [],
            MODE_VECTOR if vectors else MODE_SPARSE_ONLY,
            policy.name,
            warnings=["empty query: nothing to recall"],
        )

    mode = MODE_SPARSE_ONLY
    if Leg.DENSE in policy.legs and vectors is not None:
        try:
            qvec = vectors.get(text)
        except EmbedderError as exc:
            log.warning("query embedding failed, recalling sparse-only: %s", exc)
            warnings.append(f"embedder unavailable, sparse-only recall: {exc}")
        else:
            legs[Leg.DENSE.value] = [
                c for c in store.search_dense(flt, qvec, depth) if c.score >= policy.min_cosine
            ]
            mode = MODE_VECTOR
    elif Leg.DENSE in policy.legs:
        warnings.append("no embedder configured: sparse-only recall (see `episodic doctor`)")

    # A dense-only policy that lost its dense leg still answers from BM25, never empty.
    if Leg.SPARSE in policy.legs or Leg.DENSE.value not in legs:
        legs[Leg.SPARSE.value] = store.search_sparse(flt, text, depth)

    ranked = _fuse(store, query.workspace_id, legs, policy)[:k]
    ids = [memory_id for memory_id, _ in ranked]
    memories = {m.id: m for m in store.get_memories(query.workspace_id, ids)}
    cosines = {c.memory_id: c.score for c in legs.get(Leg.DENSE.value, [])}
    dense_rank = {c.memory_id: c.rank for c in legs.get(Leg.DENSE.value, [])}
    sparse_rank = {c.memory_id: c.rank for c in legs.get(Leg.SPARSE.value, [])}
    hits = [
        Hit(
            memory=memories[mid],
            score=score,
            age_seconds=max(0.0, (now - memories[mid].ts).total_seconds()),
            cosine=cosines.get(mid),
            dense_rank=dense_rank.get(mid),
            bm25_rank=sparse_rank.get(mid),
        )
        for mid, score in ranked
        if mid in memories
    ]
    if mark and hits:
        store.mark_referenced(query.workspace_id, [h.id for h in hits], now)
    return RecallResult(hits, mode, policy.name, legs, warnings)


def _fuse(
    store: Store, workspace_id: str, legs: dict[str, list[Candidate]], policy: RecallPolicy
) -> list[tuple[str, float]]:
    dense = legs.get(Leg.DENSE.value)
    if policy.fusion is Fusion.COSINE_X_IMPORTANCE and dense is not None:
        importance = {
            m.id: m.importance
            for m in store.get_memories(workspace_id, [c.memory_id for c in dense])
        }
        scored = [
            (c.memory_id, cosine_times_importance(c.score, importance[c.memory_id]))
            for c in dense
            if c.memory_id in importance
        ]
        return sorted(scored, key=lambda pair: pair[1], reverse=True)
    rankings = [[c.memory_id for c in leg] for leg in legs.values()]
    return rrf(rankings, k=policy.rrf_k)
