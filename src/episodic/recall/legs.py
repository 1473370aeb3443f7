"""The candidate legs of one recall: dense (the query's embedding, then its nearest
vectors), sparse (BM25, with pseudo-relevance feedback when the policy asks), recent, and
the time windows' own.

The sparse leg needs neither the query's embedding nor the dense leg's answer, so when the
store says it is worth it (``legs_apart``: it serves two reads at once, and the dense leg
is slow enough) it runs on a helper thread while this one embeds the query and searches
the vectors. Both are mostly work outside Python (the database, ONNX, numpy), so on two
cores a recall takes about the longer of the two instead of their sum: on PostgreSQL at a
million memories the sparse leg alone is ~100 ms and the scoped dense leg as much again.
In a SQLite workspace of a few thousand memories the dense leg takes well under a
millisecond, and handing the other leg over cost more than it saved: there the caller
runs both. The answer is the same either way; only the wall time differs. When every
helper is busy, the caller runs the sparse leg itself after the dense one, as it would
without helpers, so a busy server never waits on a helper."""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

from episodic import metrics, tracing
from episodic.embed.base import Embedder, Vector
from episodic.errors import EmbedderError
from episodic.model import Candidate, ScopeFilter
from episodic.priority import HEAVY_NICE, lower_priority
from episodic.recall.feedback import with_feedback
from episodic.recall.policies import Leg, RecallPolicy
from episodic.recall.trace import DROP_THRESHOLD, Trace
from episodic.store.passages import merge_sparse
from episodic.store.search import SearchStore

log = logging.getLogger("episodic.recall")

# Sparse legs running beside their recalls' dense legs, per process. As many as the
# server's recall slots (episodic.http.limits): more would only queue inside the store.
SPARSE_HELPERS = 4

_helpers: ThreadPoolExecutor | None = None
_helpers_lock = threading.Lock()


def _helper_pool() -> ThreadPoolExecutor:
    global _helpers
    with _helpers_lock:
        if _helpers is None:
            # Niced as recalls are (EPISODIC_NICE; nothing by default): a helper does a
            # recall's work.
            _helpers = ThreadPoolExecutor(
                SPARSE_HELPERS,
                thread_name_prefix="episodic-sparse",
                initializer=lower_priority,
                initargs=(HEAVY_NICE,),
            )
        return _helpers


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
        self.put(text, vector)
        return vector

    def put(self, text: str, vector: Vector) -> None:
        with self._lock:
            self._cache[text] = vector
            self._cache.move_to_end(text)
            if len(self._cache) > self.size:
                self._cache.popitem(last=False)


@dataclass(slots=True)
class Legs:
    """What the legs found, by leg name in the order fusion reads them (dense, sparse,
    recency), and the query's vector (None when the dense leg did not run)."""

    found: dict[str, list[Candidate]] = field(default_factory=dict)
    qvec: Vector | None = None


@dataclass(frozen=True, slots=True)
class LegQuery:
    """One recall's inputs to its legs: the scope, the texts the dense and sparse legs
    search (the question, and the key terms, time expressions taken out), and the pools."""

    flt: ScopeFilter
    workspace_id: str
    dense_text: str
    lexical: str
    pool: int
    k: int


def sparse_leg(
    store: SearchStore, q: LegQuery, policy: RecallPolicy, passages: bool = True
) -> list[Candidate]:
    """BM25 candidates, with the policy's pseudo-relevance feedback; with ``passages``, a
    long memory also by its best passage (``sparse_passage_weight``)."""
    with tracing.span("recall.sparse"):  # here: it may run on a helper thread
        pool = policy.sparse_pool_size(q.k)
        found = store.search_sparse(q.flt, q.lexical, pool)
        if passages and policy.sparse_passage_weight > 0:
            rows = store.search_sparse_passages(q.flt, q.lexical, pool)
            if rows:
                found = merge_sparse(found, rows, policy.sparse_passage_weight, pool)
        if policy.prf_terms > 0 and found:
            found = with_feedback(store, q.flt, q.workspace_id, q.lexical, found, policy, q.k)
    return found


def run_legs(
    store: SearchStore,
    vectors: QueryVectors | None,
    q: LegQuery,
    policy: RecallPolicy,
    trace: Trace | None,
    warnings: list[str],
) -> Legs:
    """The dense, sparse and recency legs of ``policy`` (the time leg is the caller's).
    A policy that loses its dense leg (no embedder, or it failed) still answers from
    BM25: degraded, never empty."""
    dense = Leg.DENSE in policy.legs
    early: Future[list[Candidate]] | None = None
    # The keyword leg reads long memories by their passages when no dense leg does: with
    # one, passages found nothing more on BEAM and cost a BEAM recall half its CPU again
    # (benchmarks/README.md); without one, words are all that finds a fact deep inside.
    if (
        Leg.SPARSE in policy.legs
        and dense
        and vectors is not None
        and store.legs_apart(q.workspace_id)
    ):
        early = _helper_pool().submit(tracing.in_context(sparse_leg), store, q, policy, False)
    legs = Legs()
    clock = time.perf_counter
    try:
        if dense and vectors is not None:
            started = clock()
            with tracing.span("recall.query_embedding"):
                legs.qvec = _query_vector(vectors, q.dense_text, warnings)
            metrics.recall_stage("query_embedding", clock() - started)
        elif dense:
            # Configured off, or configured but its model missing: the boot log said which.
            warnings.append("no embedder in use: sparse-only recall (see `episodic doctor`)")
        if legs.qvec is not None:
            started = clock()
            with tracing.span("recall.dense"):
                legs.found[Leg.DENSE.value] = _dense_leg(store, q, legs.qvec, policy, trace)
            metrics.recall_stage("dense", clock() - started)
    except BaseException:
        if early is not None and not early.cancel():
            early.exception()  # let the helper finish before the store may be closed
        raise
    if Leg.SPARSE in policy.legs or (
        Leg.DENSE.value not in legs.found and Leg.RECENCY not in policy.legs
    ):
        # Run beside the dense leg, the sparse leg's time here is what it kept the
        # recall waiting after the dense leg was done.
        started = clock()
        if early is not None and not early.cancel():
            legs.found[Leg.SPARSE.value] = early.result()
        else:
            alone = Leg.DENSE.value not in legs.found
            legs.found[Leg.SPARSE.value] = sparse_leg(store, q, policy, alone)
        metrics.recall_stage("sparse", clock() - started)
    if Leg.RECENCY in policy.legs:
        started = clock()
        with tracing.span("recall.recency"):
            legs.found[Leg.RECENCY.value] = store.search_recent(q.flt, q.pool)
        metrics.recall_stage("recency", clock() - started)
    return legs


def _query_vector(vectors: QueryVectors, text: str, warnings: list[str]) -> Vector | None:
    try:
        return vectors.get(text)
    except EmbedderError as exc:
        # The caller hears it in the result's warnings; the log hears of the outage once,
        # from the service (episodic.service.embedder_state).
        log.info("query embedding failed, recalling sparse-only: %s", exc)
        warnings.append(f"embedder unavailable, sparse-only recall: {exc}")
        return None


def _dense_leg(
    store: SearchStore, q: LegQuery, qvec: Vector, policy: RecallPolicy, trace: Trace | None
) -> list[Candidate]:
    found = store.search_dense(q.flt, qvec, q.pool)
    if trace is not None:
        for c in found:
            if c.score < policy.min_cosine:
                trace.drop(
                    c.memory_id,
                    Leg.DENSE.value,
                    DROP_THRESHOLD,
                    f"cosine {c.score:.3f} < {policy.min_cosine}",
                )
    return [c for c in found if c.score >= policy.min_cosine]
