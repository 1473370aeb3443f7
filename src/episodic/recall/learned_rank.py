"""The ranking's head ordered again by a fitted model (policy.learned_head).

The steps before this one each weigh one signal by a rule: the blend, the context, the
length price, the keeps. A linear model over what they leave (each candidate's cosine
and BM25 and their ranks, its place, its length, and how long memories fill the head)
weighs them together, the same way on every query and data set (``scoring/learned.py``
holds the model; ``benchmarks/bench_learned_rank.py`` fits it and reports its held-out
folds). It runs after the keep steps and before the same-subject order and one memory
per source, so a newer statement still goes above an older one among the hits.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from episodic.model import Candidate
from episodic.recall.policies import Leg, RecallPolicy
from episodic.recall.trace import Trace
from episodic.scoring.learned import MODEL, Legs, feature_rows, learned_order, model_scores

STAGE = "learned:head"


def learns(policy: RecallPolicy) -> bool:
    """Whether ``policy`` runs this step."""
    return policy.learned_head > 0


def learned_head(
    ranked: Sequence[tuple[str, float]],
    legs: Mapping[str, Sequence[Candidate]],
    policy: RecallPolicy,
    question: str,
    lengths: Callable[[Sequence[str]], Mapping[str, int]],
    trace: Trace | None = None,
) -> list[tuple[str, float]]:
    """``ranked`` with its first ``policy.learned_head`` in the model's order; each place
    keeps its score, so scores still fall. ``lengths(ids)`` reads the memories'
    lengths. Without a dense leg, or with fewer candidates than the head, nothing moves."""
    dense = legs.get(Leg.DENSE.value, [])
    # The model was fitted with both legs: without a dense leg (no embedder) its cosine
    # features would all read "not found", which it never saw.
    # It was fitted on heads of learned_head candidates, each place and the head's long
    # share read against a full one: a shorter ranking (a small workspace) keeps its order.
    if not learns(policy) or len(ranked) < policy.learned_head or not dense:
        return list(ranked)
    head = [i for i, _ in ranked[: policy.learned_head]]
    sparse = legs.get(Leg.SPARSE.value, [])
    seen = Legs(
        {c.memory_id: c.score for c in dense},
        {c.memory_id: c.rank for c in dense},
        {c.memory_id: c.score for c in sparse},
        {c.memory_id: c.rank for c in sparse},
    )
    chars = lengths(head)
    scores = model_scores(MODEL, feature_rows(head, chars, seen, question))
    order = learned_order(
        head,
        scores,
        chars,
        protect=policy.learned_protect,
        long_keep=policy.learned_long_keep,
    )
    out = [(i, s) for i, (_, s) in zip(order, ranked, strict=False)] + list(ranked[len(head) :])
    if trace is not None:
        # A second pass over a deeper head replaces the first one's stage.
        trace.stages.pop(STAGE, None)
        model = dict(zip(head, scores, strict=True))
        trace.add_stage(STAGE, out, {i: {"model": model[i]} for i in head})
    return out
