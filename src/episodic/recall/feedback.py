"""Pseudo-relevance feedback for the BM25 leg: a second search for the words the best
matches share (``scoring/feedback.py`` picks them), added to the first search's scores."""

from __future__ import annotations

from episodic.model import Candidate, ScopeFilter
from episodic.recall.policies import RecallPolicy
from episodic.scoring.feedback import expansion_terms
from episodic.store.search import SearchStore


def with_feedback(
    store: SearchStore,
    flt: ScopeFilter,
    workspace_id: str,
    lexical: str,
    found: list[Candidate],
    policy: RecallPolicy,
    k: int,
) -> list[Candidate]:
    """The sparse leg with pseudo-relevance feedback: the words the best matches share
    search again, and their BM25 adds (times ``prf_weight``) to the first search's."""
    top = found[: policy.prf_docs]
    rows = {m.id: m for m in store.get_memories(workspace_id, [c.memory_id for c in top])}
    docs = [(rows[c.memory_id].content, c.score) for c in top if c.memory_id in rows]
    terms = expansion_terms(lexical, docs, policy.prf_terms)
    if not terms:
        return found
    extra = store.search_sparse(flt, " ".join(t for t, _ in terms), policy.sparse_pool_size(k))
    scores = {c.memory_id: c.score for c in found}
    for c in extra:
        scores[c.memory_id] = scores.get(c.memory_id, 0.0) + policy.prf_weight * c.score
    ranked = sorted(scores.items(), key=lambda pair: pair[1], reverse=True)
    return [Candidate(i, s, r) for r, (i, s) in enumerate(ranked, start=1)]
